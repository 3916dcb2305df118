// SPDX-License-Identifier: Apache-2.0
// fp32 multiplier of the vector unit: y = a * b, round to nearest even, DAZ / FTZ.
// Combinational wrapper around tpu_fp_pkg::fp32_mul (docs/isa.md "Floating point").
`include "tpu_assert.svh"

module tpu_fp32_mul (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o
);

  assign y_o = tpu_fp_pkg::fp32_mul(a_i, b_i);

  `TPU_ASSERT_COMB(FpMulNaNCanonical,
                   !tpu_fp_pkg::fp32_is_nan(y_o[30:0]) || y_o == tpu_fp_pkg::Fp32QNaN)
  `TPU_ASSERT_COMB(FpMulNoSubnormal, y_o[30:23] != 8'd0 || y_o[22:0] == 23'd0)
  // The sign of a product that is not a NaN is the XOR of the operands' signs.
  `TPU_ASSERT_COMB(FpMulSign, y_o == tpu_fp_pkg::Fp32QNaN || y_o[31] == (a_i[31] ^ b_i[31]))

endmodule

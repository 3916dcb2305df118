// SPDX-License-Identifier: Apache-2.0
// fp32 adder: y = a + b, or a - b with sub_i (b's sign flipped; a NaN stays a NaN).
// Combinational wrapper around tpu_fp_pkg::fp32_add, the function the matrix unit's float mode
// calls, so the block test (tests/rtl/fp_units_test.cpp) checks the arithmetic the chip uses.
// docs/isa.md "Floating point" is the specification (DAZ, RNE, FTZ, canonical NaN).
`include "tpu_assert.svh"

module tpu_fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic        sub_i,
  output logic [31:0] y_o
);

  assign y_o = tpu_fp_pkg::fp32_add(a_i, {b_i[31] ^ sub_i, b_i[30:0]});

  // No NaN but the canonical one, no subnormal result.
  `TPU_ASSERT_COMB(FpAddNaNCanonical,
                   !tpu_fp_pkg::fp32_is_nan(y_o[30:0]) || y_o == tpu_fp_pkg::Fp32QNaN)
  `TPU_ASSERT_COMB(FpAddNoSubnormal, y_o[30:23] != 8'd0 || y_o[22:0] == 23'd0)

endmodule

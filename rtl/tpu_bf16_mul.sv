// SPDX-License-Identifier: Apache-2.0
// bf16 x bf16 -> fp32 multiplier of the matrix unit's float mode: the product is exact unless
// it flushes to zero (below 2^-126) or overflows (>= 2^128). Combinational wrapper around
// tpu_fp_pkg::bf16_mul, the function the PEs call (docs/isa.md "Floating point").
`include "tpu_assert.svh"

module tpu_bf16_mul (
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] p_o
);

  assign p_o = tpu_fp_pkg::bf16_mul(a_i, b_i);

  `TPU_ASSERT_COMB(Bf16MulNaNCanonical,
                   !tpu_fp_pkg::fp32_is_nan(p_o[30:0]) || p_o == tpu_fp_pkg::Fp32QNaN)
  // Exact: an 8 x 8-bit significand product has at most 16 significant bits.
  `TPU_ASSERT_COMB(Bf16MulExact, p_o[6:0] == 7'd0)
  `TPU_ASSERT_COMB(Bf16MulSign, p_o == tpu_fp_pkg::Fp32QNaN || p_o[31] == (a_i[15] ^ b_i[15]))

endmodule

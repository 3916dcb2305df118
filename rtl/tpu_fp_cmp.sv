// SPDX-License-Identifier: Apache-2.0
// fp32 comparisons, max and min (docs/isa.md `vector` flt / fle / feq / fmax / fmin): DAZ,
// -0 = +0 in comparisons and any NaN operand false; max / min return the canonical NaN for a
// NaN operand, order -0 below +0 and return the operand after DAZ. Combinational wrapper
// around the tpu_fp_pkg functions.
`include "tpu_assert.svh"

module tpu_fp_cmp (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic        lt_o,      // a < b
  output logic        le_o,      // a <= b
  output logic        eq_o,      // a = b
  output logic [31:0] max_o,
  output logic [31:0] min_o
);

  assign lt_o  = tpu_fp_pkg::fp32_lt(a_i, b_i);
  assign eq_o  = tpu_fp_pkg::fp32_eq(a_i, b_i);
  assign le_o  = lt_o || eq_o;
  assign max_o = tpu_fp_pkg::fp32_max(a_i, b_i);
  assign min_o = tpu_fp_pkg::fp32_min(a_i, b_i);

  `TPU_ASSERT_COMB(CmpNotBoth, !(lt_o && eq_o))
  `TPU_ASSERT_COMB(CmpMaxMinNaN,
                   (max_o == tpu_fp_pkg::Fp32QNaN) == (min_o == tpu_fp_pkg::Fp32QNaN))

endmodule

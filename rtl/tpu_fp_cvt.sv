// SPDX-License-Identifier: Apache-2.0
// Conversions of one 32-bit operand (docs/isa.md "Floating point", `vector` f2i / i2f / bf16,
// read_vmem / write_vmem bf16): fp32 -> bf16 (round to nearest even), bf16 -> fp32 (of the low
// half, exact), fp32 -> int32 (round to nearest even, saturating, NaN -> 0) and int32 -> fp32
// (round to nearest even). Combinational wrapper around the tpu_fp_pkg functions.
`include "tpu_assert.svh"

module tpu_fp_cvt (
  input  logic [31:0] x_i,
  output logic [15:0] bf16_o,    // fp32 x_i -> bf16
  output logic [31:0] widen_o,   // bf16 x_i[15:0] -> fp32
  output logic [31:0] f2i_o,     // fp32 x_i -> int32
  output logic [31:0] i2f_o      // int32 x_i -> fp32
);

  assign bf16_o  = tpu_fp_pkg::fp32_to_bf16(x_i);
  assign widen_o = tpu_fp_pkg::bf16_to_fp32(x_i[15:0]);
  assign f2i_o   = tpu_fp_pkg::fp32_to_int32(x_i);
  assign i2f_o   = tpu_fp_pkg::int32_to_fp32(x_i);

  `TPU_ASSERT_COMB(CvtBf16NaNCanonical,
                   bf16_o[14:7] != 8'hFF || bf16_o[6:0] == 7'd0 || bf16_o == tpu_fp_pkg::Bf16QNaN)
  // int32 -> fp32 is never a NaN, an infinity or a subnormal.
  `TPU_ASSERT_COMB(CvtI2fRange,
                   i2f_o[30:23] != 8'hFF && (i2f_o[30:23] != 8'd0 || i2f_o[22:0] == 23'd0))

endmodule

// SPDX-License-Identifier: Apache-2.0
// Requantizer for one column: int32 accumulator -> bias -> fixed-point scale -> zero point ->
// saturate -> function (identity, ReLU, clamp). Combinational wrapper around
// tpu_pkg::requantize, the function the activation unit calls, so the block test checks
// exactly the arithmetic the chip uses. docs/isa.md `activate` is the specification.
// The LUT function is applied by the caller; for func = LUT this block returns the
// saturated requantized value.
module tpu_requant (
  input  logic signed [31:0] acc_i,
  input  logic signed [31:0] bias_i,
  input  logic signed [31:0] mult_i,
  input  logic        [31:0] misc_i,      // {hi, lo, zp, 2'b0, shift}
  input  logic        [1:0]  func_i,
  input  logic               out_unsigned_i,
  output logic signed [8:0]  y_o          // in -128..127 or 0..255
);

  assign y_o = tpu_pkg::requantize(acc_i, bias_i, mult_i, misc_i, func_i, out_unsigned_i);

  // misc bits 7:6 are reserved and ignored (docs/isa.md).
  logic unused_misc;
  assign unused_misc = ^misc_i[7:6];

endmodule

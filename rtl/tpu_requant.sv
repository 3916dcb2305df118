// Requantizer for one column: int32 accumulator -> bias -> fixed-point scale -> zero point ->
// saturate -> function (identity, ReLU, clamp). Combinational. docs/isa.md `activate` is the
// specification; rounding is half away from zero.
// The LUT function is applied by the caller (tpu_act_unit) to `y_o`; for func = LUT this
// block returns the saturated requantized value.
module tpu_requant (
  input  logic signed [31:0] acc_i,
  input  logic signed [31:0] bias_i,
  input  logic signed [31:0] mult_i,
  input  logic        [31:0] misc_i,      // {hi, lo, zp, 2'b0, shift}
  input  logic        [1:0]  func_i,
  input  logic               out_unsigned_i,
  output logic signed [8:0]  y_o          // in -128..127 or 0..255
);
  import tpu_pkg::*;

  logic signed [32:0] sum;
  logic signed [31:0] x;
  logic signed [63:0] p, q, rounded, with_zp;
  logic        [63:0] rem, half;
  logic        [5:0]  shift;
  logic               up;
  logic signed [8:0]  zp, lo, hi, qmin, qmax, y_sat, y_lo;

  function automatic logic signed [8:0] as_out(logic [7:0] b, logic uns);
    return uns ? $signed({1'b0, b}) : $signed({b[7], b});
  endfunction

  // misc bits 7:6 are reserved and ignored (docs/isa.md).
  logic unused_misc;
  assign unused_misc = ^misc_i[7:6];

  always_comb begin
    // Explicit sign extension throughout: size casts do not extend signed values in every tool.
    sum   = $signed({acc_i[31], acc_i}) + $signed({bias_i[31], bias_i});
    if (sum > 33'sh0_7FFF_FFFF)       x = 32'sh7FFF_FFFF;
    else if (sum < -33'sh0_8000_0000) x = -32'sh8000_0000;
    else                              x = sum[31:0];
    p     = $signed({{32{x[31]}}, x}) * $signed({{32{mult_i[31]}}, mult_i});
    shift = misc_i[5:0];
    // Round half away from zero of p / 2^shift in 64 bits (|p| <= 2^62, so nothing overflows):
    // floor, then step up when the remainder is above half (or equal to it for p >= 0).
    q    = p >>> shift;
    rem  = 64'(p) & ((64'd1 << shift) - 64'd1);
    half = (shift == 6'd0) ? 64'd0 : (64'd1 << (shift - 6'd1));
    up   = (shift != 6'd0) && (p[63] ? (rem > half) : (rem >= half));
    rounded = q + {63'd0, up};
    zp      = as_out(misc_i[15:8], out_unsigned_i);
    lo      = as_out(misc_i[23:16], out_unsigned_i);
    hi      = as_out(misc_i[31:24], out_unsigned_i);
    qmin    = out_unsigned_i ? 9'sd0 : -9'sd128;
    qmax    = out_unsigned_i ? 9'sd255 : 9'sd127;
    with_zp = rounded + $signed({{55{zp[8]}}, zp});
    if (with_zp > $signed({{55{qmax[8]}}, qmax}))      y_sat = qmax;
    else if (with_zp < $signed({{55{qmin[8]}}, qmin})) y_sat = qmin;
    else                          y_sat = with_zp[8:0];
    y_lo = y_sat;
    unique case (func_i)
      FuncRelu:  y_o = (y_sat < zp) ? zp : y_sat;
      FuncClamp: begin
        // min(max(y, lo), hi), also when lo > hi.
        y_lo = (y_sat < lo) ? lo : y_sat;
        y_o  = (y_lo > hi) ? hi : y_lo;
      end
      FuncIdentity, FuncLut: y_o = y_sat;
      default:   y_o = y_sat;
    endcase
  end

endmodule

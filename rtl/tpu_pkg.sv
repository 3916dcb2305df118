// SPDX-License-Identifier: Apache-2.0
// Shared definitions of the tpu-rtl core: opcodes, error codes, instruction fields.
// docs/isa.md is the specification; field positions here must match it bit for bit.
package tpu_pkg;

  typedef enum logic [7:0] {
    OpNop         = 8'h00,
    OpReadHost    = 8'h01,
    OpReadWeights = 8'h02,
    OpMatmul      = 8'h03,
    OpActivate    = 8'h04,
    OpWriteHost   = 8'h05,
    OpSync        = 8'h06,
    OpHalt        = 8'h07
  } opcode_e;

  typedef enum logic [3:0] {
    ErrNone           = 4'd0,
    ErrOpcode         = 4'd1,
    ErrReserved       = 4'd2,
    ErrField          = 4'd3,
    ErrUbRange        = 4'd4,
    ErrAccRange       = 4'd5,
    ErrParamRange     = 4'd6,
    ErrAlign          = 4'd7,
    ErrHostRange      = 4'd8,
    ErrAxiRead        = 4'd9,
    ErrAxiWrite       = 4'd10,
    ErrCmdOverrun     = 4'd11,
    ErrNoWeights      = 4'd12,
    ErrWeightOverflow = 4'd13
  } err_e;

  // read_host destinations
  localparam logic [1:0] DestUb    = 2'd0;
  localparam logic [1:0] DestParam = 2'd1;
  localparam logic [1:0] DestLut   = 2'd2;

  // activate functions
  localparam logic [1:0] FuncIdentity = 2'd0;
  localparam logic [1:0] FuncRelu     = 2'd1;
  localparam logic [1:0] FuncClamp    = 2'd2;
  localparam logic [1:0] FuncLut      = 2'd3;

  // Rows of one quantization slot in the parameter memory: bias, mult, misc, 4 rows each.
  localparam int unsigned SlotRows = 12;

  // A closed interval of row (or byte) addresses an in-flight instruction touches.
  typedef struct packed {
    logic        valid;
    logic [32:0] lo;
    logic [32:0] hi;
  } range_t;

  // Everything the hazard scoreboard needs to know about an issued instruction.
  typedef struct packed {
    range_t ub_rd;
    range_t ub_wr;
    range_t acc_rd;
    range_t acc_wr;
    range_t host_rd;
    range_t host_wr;
    logic   param_rd;
    logic   param_wr;
  } footprint_t;

  // What the controller works out about an instruction when it enters the queue.
  typedef struct packed {
    logic [3:0] err;   // the first failing static check, codes 1-8
    footprint_t fp;
  } decoded_t;

  // The functions below take the structs as bit vectors and slice them by hand: Yosys 0.23
  // mis-elaborates struct-typed function arguments (member selects come out undefined).
  localparam int unsigned RangeW = 67;               // $bits(range_t)
  localparam int unsigned FpW    = 6 * RangeW + 2;   // $bits(footprint_t)
  // Bit offsets of the footprint_t members.
  localparam int unsigned FpUbRd   = 5 * RangeW + 2;
  localparam int unsigned FpUbWr   = 4 * RangeW + 2;
  localparam int unsigned FpAccRd  = 3 * RangeW + 2;
  localparam int unsigned FpAccWr  = 2 * RangeW + 2;
  localparam int unsigned FpHostRd = 1 * RangeW + 2;
  localparam int unsigned FpHostWr = 2;

  // range_t as bits: {valid, lo[32:0], hi[32:0]}.
  function automatic logic ranges_overlap(logic [RangeW-1:0] a, logic [RangeW-1:0] b);
    ranges_overlap = a[66] && b[66] && (a[65:33] <= b[32:0]) && (b[65:33] <= a[32:0]);
  endfunction

  // True when instruction `a` may not start while `b` is still in flight (RAW, WAR, WAW).
  function automatic logic footprints_conflict(logic [FpW-1:0] a, logic [FpW-1:0] b);
    logic [RangeW-1:0] a_ub_rd, a_ub_wr, a_acc_rd, a_acc_wr, a_host_rd, a_host_wr;
    logic [RangeW-1:0] b_ub_rd, b_ub_wr, b_acc_rd, b_acc_wr, b_host_rd, b_host_wr;
    a_ub_rd   = a[FpUbRd +: RangeW];   b_ub_rd   = b[FpUbRd +: RangeW];
    a_ub_wr   = a[FpUbWr +: RangeW];   b_ub_wr   = b[FpUbWr +: RangeW];
    a_acc_rd  = a[FpAccRd +: RangeW];  b_acc_rd  = b[FpAccRd +: RangeW];
    a_acc_wr  = a[FpAccWr +: RangeW];  b_acc_wr  = b[FpAccWr +: RangeW];
    a_host_rd = a[FpHostRd +: RangeW]; b_host_rd = b[FpHostRd +: RangeW];
    a_host_wr = a[FpHostWr +: RangeW]; b_host_wr = b[FpHostWr +: RangeW];
    // bit 1: param_rd, bit 0: param_wr
    footprints_conflict =
        ranges_overlap(a_ub_wr, b_ub_rd) || ranges_overlap(a_ub_wr, b_ub_wr) ||
        ranges_overlap(a_ub_rd, b_ub_wr) ||
        ranges_overlap(a_acc_wr, b_acc_rd) || ranges_overlap(a_acc_wr, b_acc_wr) ||
        ranges_overlap(a_acc_rd, b_acc_wr) ||
        ranges_overlap(a_host_wr, b_host_rd) || ranges_overlap(a_host_wr, b_host_wr) ||
        ranges_overlap(a_host_rd, b_host_wr) ||
        (a[0] && (b[1] || b[0])) || (a[1] && b[0]);
  endfunction

  // A valid range_t {valid, lo, hi} (as bits: Yosys 0.23 has no struct-valued functions).
  function automatic logic [66:0] make_range(logic [32:0] lo, logic [32:0] hi);
    make_range = {1'b1, lo, hi};
  endfunction

  // Reads a byte of a quantization slot's misc word in the output type (int8 or uint8).
  function automatic logic signed [8:0] as_out_type(logic [7:0] b, logic uns);
    as_out_type = uns ? $signed({1'b0, b}) : $signed({b[7], b});
  endfunction

  // One column of `activate` before the LUT (docs/isa.md): saturating bias add, exact 64-bit
  // scale, round half away from zero, zero point, saturation to the output type, then
  // identity / ReLU / clamp. For FuncLut the caller looks the result up in the LUT.
  // Explicit sign extension throughout: size casts do not extend signed values in every tool.
  function automatic logic signed [8:0] requantize(logic signed [31:0] acc,
                                                   logic signed [31:0] bias,
                                                   logic signed [31:0] mult,
                                                   logic [31:0] misc,
                                                   logic [1:0] func,
                                                   logic out_unsigned);
    logic signed [32:0] sum;
    logic signed [31:0] x;
    logic signed [63:0] p, q, rounded, with_zp;
    logic        [63:0] rem, half;
    logic        [5:0]  shift;
    logic               up;
    logic signed [8:0]  zp, lo, hi, qmin, qmax, y, y_lo;
    logic               unused_misc;

    unused_misc = ^misc[7:6];  // reserved, ignored (docs/isa.md)
    sum = $signed({acc[31], acc}) + $signed({bias[31], bias});
    if (sum > 33'sh0_7FFF_FFFF)       x = 32'sh7FFF_FFFF;
    else if (sum < -33'sh0_8000_0000) x = -32'sh8000_0000;
    else                              x = sum[31:0];
    p     = $signed({{32{x[31]}}, x}) * $signed({{32{mult[31]}}, mult});
    shift = misc[5:0];
    // p / 2^shift in 64 bits (|p| <= 2^62, so nothing overflows): floor, then step up when the
    // remainder is above half (or equal to it for p >= 0).
    q    = p >>> shift;
    rem  = 64'(p) & ((64'd1 << shift) - 64'd1);
    half = (shift == 6'd0) ? 64'd0 : (64'd1 << (shift - 6'd1));
    up   = (shift != 6'd0) && (p[63] ? (rem > half) : (rem >= half));
    rounded = q + {63'd0, up};
    zp   = as_out_type(misc[15:8], out_unsigned);
    lo   = as_out_type(misc[23:16], out_unsigned);
    hi   = as_out_type(misc[31:24], out_unsigned);
    qmin = out_unsigned ? 9'sd0 : -9'sd128;
    qmax = out_unsigned ? 9'sd255 : 9'sd127;
    with_zp = rounded + $signed({{55{zp[8]}}, zp});
    if (with_zp > $signed({{55{qmax[8]}}, qmax}))      y = qmax;
    else if (with_zp < $signed({{55{qmin[8]}}, qmin})) y = qmin;
    else                                               y = with_zp[8:0];
    // min(max(y, lo), hi) for clamp, also when lo > hi.
    y_lo = (y < lo) ? lo : y;
    unique case (func)
      FuncRelu:  requantize = (y < zp) ? zp : y;
      FuncClamp: requantize = (y_lo > hi) ? hi : y_lo;
      FuncIdentity, FuncLut: requantize = y;  // the LUT is applied by the caller
      default:   requantize = y;
    endcase
  endfunction

endpackage

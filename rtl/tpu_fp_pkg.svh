// SPDX-License-Identifier: Apache-2.0
// Floating-point arithmetic of the training chip (issue 30): fp32 (IEEE-754 binary32) and
// bf16 (the upper 16 bits of a binary32). docs/isa.md "Floating point" is the specification:
//   * subnormal operands read as a zero of the same sign (DAZ);
//   * round to nearest, ties to even, with an unbounded exponent; then a rounded magnitude
//     below 2^-126 becomes a zero of the result's sign (FTZ), one >= 2^128 an infinity;
//   * a NaN operand or an invalid operation (Inf - Inf, 0 x Inf) gives the canonical quiet
//     NaN 0x7FC00000 (bf16 0x7FC0);
//   * x + (-x) = +0, (-0) + (-0) = -0; a product's sign is the XOR of the operands' signs.
// Functions, so the systolic array can call them inside its loops; rtl/tpu_fp32_add.sv and
// its siblings are thin combinational wrappers, checked bit for bit by tests/rtl. Written for
// Yosys 0.23 as well (functions assign their name, no `return`).
//
// Included at the end of rtl/tpu_pkg.sv, so every tool that reads tpu_pkg.sv first (the
// package must precede its users) declares this package before any module uses it.
package tpu_fp_pkg;

  localparam logic [31:0] Fp32QNaN = 32'h7FC0_0000;  // the canonical quiet NaN
  localparam logic [15:0] Bf16QNaN = 16'h7FC0;
  localparam int unsigned ExpW     = 12;             // signed, unbounded biased exponent

  // The classifiers take the magnitude bits (30:0) of an fp32.
  function automatic logic fp32_is_nan(logic [30:0] x);
    fp32_is_nan = (x[30:23] == 8'hFF) && (x[22:0] != 23'd0);
  endfunction

  function automatic logic fp32_is_inf(logic [30:0] x);
    fp32_is_inf = (x[30:23] == 8'hFF) && (x[22:0] == 23'd0);
  endfunction

  // Zero after DAZ: exponent field 0 (a zero or a subnormal). Takes the exponent field.
  function automatic logic fp32_is_zero(logic [7:0] e);
    fp32_is_zero = e == 8'd0;
  endfunction

  // Index of the most significant set bit of a 32-bit word (0 when none is set).
  function automatic logic [4:0] msb_index(logic [31:0] x);
    msb_index = 5'd0;
    for (int i = 0; i < 32; i++) begin
      if (x[i]) msb_index = 5'(i);
    end
  endfunction

  // Rounds and packs a nonzero finite value: sign s, biased exponent e (unbounded, signed) of
  // the significand's leading one, significand m with the leading one at bit 26, the 24
  // significant bits in m[26:3], a guard bit m[2] and below it the round bit m[1] and a sticky
  // bit m[0] (the OR of everything further down). Ties to even, then FTZ or infinity.
  function automatic logic [31:0] fp32_round_pack(logic s, logic signed [ExpW-1:0] e,
                                                  logic [26:0] m);
    logic [24:0]          r;
    logic signed [ExpW-1:0] er;
    r  = {1'b0, m[26:3]} + 25'(m[2] && (m[1] || m[0] || m[3]));
    er = e;
    if (r[24]) begin  // carry out of the significand: 1.111..1 rounded up to 2.0
      r  = r >> 1;
      er = e + ExpW'(1);
    end
    if (er < ExpW'(1))        fp32_round_pack = {s, 31'd0};           // FTZ
    else if (er > ExpW'(254)) fp32_round_pack = {s, 8'hFF, 23'd0};    // overflow
    else                      fp32_round_pack = {s, er[7:0], r[22:0]};
  endfunction

  // a + b. The operand of smaller magnitude is aligned to the larger one with three extra bits
  // (guard, round, and a sticky bit OR-ed into the lowest position), then added or
  // subtracted; a difference is normalized left (only when the exponents differ by at most
  // one can it lose more than one leading bit, and then it is exact).
  function automatic logic [31:0] fp32_add(logic [31:0] a, logic [31:0] b);
    logic [31:0]          x;      // |x| >= |y|
    logic [30:0]          y;
    logic [7:0]           d;
    logic [26:0]          mx, my, ys, lost, diff;
    logic [27:0]          sum;
    logic [4:0]           top;
    logic [26:0]          m;
    logic signed [ExpW-1:0] e;
    if (fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0]) ||
        (fp32_is_inf(a[30:0]) && fp32_is_inf(b[30:0]) && a[31] != b[31])) begin
      fp32_add = Fp32QNaN;
    end else if (fp32_is_inf(a[30:0])) begin
      fp32_add = a;
    end else if (fp32_is_inf(b[30:0])) begin
      fp32_add = b;
    end else if (fp32_is_zero(a[30:23]) && fp32_is_zero(b[30:23])) begin
      fp32_add = {a[31] & b[31], 31'd0};
    end else if (fp32_is_zero(a[30:23])) begin
      fp32_add = b;
    end else if (fp32_is_zero(b[30:23])) begin
      fp32_add = a;
    end else begin
      if (b[30:0] > a[30:0]) begin
        x = b;
        y = a[30:0];
      end else begin
        x = a;
        y = b[30:0];
      end
      d  = x[30:23] - y[30:23];
      mx = {1'b1, x[22:0], 3'b000};
      my = {1'b1, y[22:0], 3'b000};
      if (d > 8'd26) begin
        ys = 27'd1;  // all of y is below the sticky position
      end else begin
        lost = my & ((27'd1 << d) - 27'd1);
        ys   = (my >> d) | 27'(lost != 27'd0);
      end
      e = ExpW'({4'b0, x[30:23]});
      m = 27'd0;
      if (a[31] == b[31]) begin
        sum = {1'b0, mx} + {1'b0, ys};
        if (sum[27]) begin
          m = {sum[27:2], sum[1] | sum[0]};
          e = e + ExpW'(1);
        end else begin
          m = sum[26:0];
        end
      end else begin
        diff = mx - ys;
        top  = msb_index({5'd0, diff});
        m    = diff << (5'd26 - top);
        e    = e - ExpW'(5'd26) + ExpW'(top);
      end
      if (a[31] != b[31] && mx == ys) fp32_add = 32'd0;  // x + (-x) = +0
      else                            fp32_add = fp32_round_pack(x[31], e, m);
    end
  endfunction

  // a * b, rounded to fp32.
  function automatic logic [31:0] fp32_mul(logic [31:0] a, logic [31:0] b);
    logic                 s;
    logic [47:0]          p;
    logic [26:0]          m;
    logic signed [ExpW-1:0] e;
    s = a[31] ^ b[31];
    if (fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0]) ||
        (fp32_is_inf(a[30:0]) && fp32_is_zero(b[30:23])) ||
        (fp32_is_zero(a[30:23]) && fp32_is_inf(b[30:0]))) begin
      fp32_mul = Fp32QNaN;
    end else if (fp32_is_inf(a[30:0]) || fp32_is_inf(b[30:0])) begin
      fp32_mul = {s, 8'hFF, 23'd0};
    end else if (fp32_is_zero(a[30:23]) || fp32_is_zero(b[30:23])) begin
      fp32_mul = {s, 31'd0};
    end else begin
      p = {24'd0, 1'b1, a[22:0]} * {24'd0, 1'b1, b[22:0]};  // in [2^46, 2^48)
      e = ExpW'({4'b0, a[30:23]}) + ExpW'({4'b0, b[30:23]}) - ExpW'(127);
      if (p[47]) begin
        m = {p[47:22], p[21:0] != 22'd0};
        e = e + ExpW'(1);
      end else begin
        m = {p[46:21], p[20:0] != 21'd0};
      end
      fp32_mul = fp32_round_pack(s, e, m);
    end
  endfunction

  // bf16 -> fp32: exact, append 16 zero bits; DAZ (a bf16 subnormal gives a zero of its
  // sign). A NaN keeps its pattern (isa.md: a move, not arithmetic).
  function automatic logic [31:0] bf16_to_fp32(logic [15:0] x);
    if (x[14:7] == 8'd0) bf16_to_fp32 = {x[15], 31'd0};
    else                 bf16_to_fp32 = {x, 16'd0};
  endfunction

  // a * b of two bf16, as fp32: the 8 x 8-bit significand product fits 16 bits, so the result
  // is exact unless it flushes to zero or overflows to infinity.
  function automatic logic [31:0] bf16_mul(logic [15:0] a, logic [15:0] b);
    logic                 s;
    logic [15:0]          p;
    logic [26:0]          m;
    logic signed [ExpW-1:0] e;
    logic                 a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
    s      = a[15] ^ b[15];
    a_nan  = a[14:7] == 8'hFF && a[6:0] != 7'd0;
    b_nan  = b[14:7] == 8'hFF && b[6:0] != 7'd0;
    a_inf  = a[14:7] == 8'hFF && a[6:0] == 7'd0;
    b_inf  = b[14:7] == 8'hFF && b[6:0] == 7'd0;
    a_zero = a[14:7] == 8'd0;
    b_zero = b[14:7] == 8'd0;
    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) begin
      bf16_mul = Fp32QNaN;
    end else if (a_inf || b_inf) begin
      bf16_mul = {s, 8'hFF, 23'd0};
    end else if (a_zero || b_zero) begin
      bf16_mul = {s, 31'd0};
    end else begin
      p = {8'd0, 1'b1, a[6:0]} * {8'd0, 1'b1, b[6:0]};  // in [2^14, 2^16)
      e = ExpW'({4'b0, a[14:7]}) + ExpW'({4'b0, b[14:7]}) - ExpW'(127);
      if (p[15]) begin
        m = {p, 11'd0};
        e = e + ExpW'(1);
      end else begin
        m = {p[14:0], 12'd0};
      end
      bf16_mul = fp32_round_pack(s, e, m);  // exact: nothing below m[11]
    end
  endfunction

  // fp32 -> bf16, round to nearest even on the upper 16 bits; a carry out of the largest
  // finite value gives infinity (the carry runs into the exponent field).
  function automatic logic [15:0] fp32_to_bf16(logic [31:0] x);
    if (fp32_is_nan(x[30:0])) begin
      fp32_to_bf16 = Bf16QNaN;
    end else if (fp32_is_zero(x[30:23])) begin
      fp32_to_bf16 = {x[31], 15'd0};
    end else begin
      fp32_to_bf16 = x[31:16] + 16'(x[15] && (x[14:0] != 15'd0 || x[16]));
    end
  endfunction

  // fp32 -> int32, round to nearest even, saturating to [-2^31, 2^31 - 1]; NaN gives 0.
  function automatic logic [31:0] fp32_to_int32(logic [31:0] x);
    logic [54:0] t;    // |x| * 2^24
    logic [31:0] n;    // |x| rounded, up to 2^31
    if (fp32_is_nan(x[30:0]) || x[30:23] < 8'd126) begin  // NaN, or |x| < 0.5 (DAZ zeros too)
      fp32_to_int32 = 32'd0;
    end else if (x[30:23] >= 8'd158) begin          // |x| >= 2^31, infinities
      fp32_to_int32 = x[31] ? 32'h8000_0000 : 32'h7FFF_FFFF;
    end else begin
      // |x| = 1.f * 2^(e-127), e in 126..157: |x| * 2^24 = {1, f} << (e - 126).
      t = {31'd0, 1'b1, x[22:0]} << (x[30:23] - 8'd126);
      n = {1'b0, t[54:24]} + 32'(t[23] && (t[22:0] != 23'd0 || t[24]));
      if (!x[31] && n[31]) fp32_to_int32 = 32'h7FFF_FFFF;  // rounded up to 2^31
      else                 fp32_to_int32 = x[31] ? 32'd0 - n : n;
    end
  endfunction

  // int32 -> fp32, round to nearest even.
  function automatic logic [31:0] int32_to_fp32(logic [31:0] v);
    logic [31:0] mag, norm;
    logic [4:0]  top;
    if (v == 32'd0) begin
      int32_to_fp32 = 32'd0;
    end else begin
      mag  = v[31] ? 32'd0 - v : v;  // 2^31 for -2^31
      top  = msb_index(mag);
      norm = mag << (5'd31 - top);
      int32_to_fp32 = fp32_round_pack(v[31], ExpW'({7'd0, top}) + ExpW'(127),
                                      {norm[31:6], norm[5:0] != 6'd0});
    end
  endfunction

  // The operand after DAZ: a subnormal becomes the zero of its sign.
  function automatic logic [31:0] fp32_daz(logic [31:0] x);
    fp32_daz = fp32_is_zero(x[30:23]) ? {x[31], 31'd0} : x;
  endfunction

  // An unsigned key ordered as the fp32 values are (-0 below +0), for a non-NaN operand after
  // DAZ: negative values reversed below 2^31, positive ones above.
  function automatic logic [31:0] fp32_key(logic [31:0] z);
    fp32_key = z[31] ? ~z : {1'b1, z[30:0]};
  endfunction

  // Comparisons: DAZ, -0 = +0, false with a NaN operand.
  function automatic logic fp32_lt(logic [31:0] a, logic [31:0] b);
    logic [31:0] ka, kb;
    ka = fp32_is_zero(a[30:23]) ? 32'h8000_0000 : fp32_key(a);
    kb = fp32_is_zero(b[30:23]) ? 32'h8000_0000 : fp32_key(b);
    fp32_lt = !fp32_is_nan(a[30:0]) && !fp32_is_nan(b[30:0]) && ka < kb;
  endfunction

  function automatic logic fp32_eq(logic [31:0] a, logic [31:0] b);
    fp32_eq = !fp32_is_nan(a[30:0]) && !fp32_is_nan(b[30:0]) &&
              (a == b || (fp32_is_zero(a[30:23]) && fp32_is_zero(b[30:23])));
  endfunction

  // max / min: a NaN operand gives the canonical NaN; -0 is below +0; the result is the
  // operand after DAZ.
  function automatic logic [31:0] fp32_max(logic [31:0] a, logic [31:0] b);
    logic [31:0] za, zb;
    za = fp32_daz(a);
    zb = fp32_daz(b);
    if (fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0])) fp32_max = Fp32QNaN;
    else if (fp32_key(za) >= fp32_key(zb))           fp32_max = za;
    else                                              fp32_max = zb;
  endfunction

  function automatic logic [31:0] fp32_min(logic [31:0] a, logic [31:0] b);
    logic [31:0] za, zb;
    za = fp32_daz(a);
    zb = fp32_daz(b);
    if (fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0])) fp32_min = Fp32QNaN;
    else if (fp32_key(za) <= fp32_key(zb))           fp32_min = za;
    else                                              fp32_min = zb;
  endfunction

  // ---- Commands of the matrix path's training instructions (issue 30; docs/isa.md).
  // load_weights (0x0A) to tpu_load_weights: isa.md's fields, range-checked by the decoder
  // (1 <= rows <= N, tiles >= 1, every row read < VmemRows).
  typedef struct packed {
    logic        transpose;    // push the transposed block
    logic [15:0] vmem_addr;    // first row of tile 0
    logic [15:0] row_stride;   // VMEM rows between the rows of one tile
    logic [15:0] tiles;        // tiles, >= 1
    logic [15:0] tile_stride;  // VMEM rows between the first rows of consecutive tiles
    logic [8:0]  rows;         // rows read per tile, 1 .. N (the others are +0)
  } lw_cmd_t;

  // matmul_bf16 (0x0B) travels to tpu_matmul_unit as a tpu_pkg::mm_cmd_t with the feeder's
  // cmd_bf16_i set: ub_addr = {8'd0, vmem_addr}, outer_stride = {8'd0, outer_stride},
  // a_unsigned = w_unsigned = 0; acc, switch_tile, acc_addr, inner, outer and inner_stride as
  // isa.md's fields (no struct of its own: the feeder walks the same row pattern).

endpackage

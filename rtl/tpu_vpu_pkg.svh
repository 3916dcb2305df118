// SPDX-License-Identifier: Apache-2.0
// The vector unit's command (issue 30): one decoded `vector` (0x0E) instruction, docs/isa.md
// "vector (0x0E) — vector unit", and the classes of its func values.
//
// vpu_cmd_t holds exactly the instruction's fields in their instruction order, most significant
// first, so it is bits 127:8 of the 128-bit instruction word: `tpu_vpu_pkg::vpu_cmd_t'(
// instr[127:8])`. The decoder range-checks it before it reaches rtl/tpu_vpu.sv (ERR_FIELD,
// ERR_VMEM_RANGE): inner, outer >= 1, func in the table, unary funcs with bmode 0 and b 0,
// align with bmode 3 and an immediate below N, every row touched below VmemRows.
//
// Included at the end of rtl/tpu_pkg.sv (after tpu_fp_pkg.svh), so every tool that reads
// tpu_pkg.sv first declares this package before any module uses it.
package tpu_vpu_pkg;

  // operand B modes (bmode 2, one fixed row, steps neither with A nor with D)
  localparam logic [1:0] BModeRowA   = 2'd0;  // a row on A's pattern
  localparam logic [1:0] BModeRowDst = 2'd1;  // a row on the destination's pattern
  localparam logic [1:0] BModeImm    = 2'd3;  // the immediate b in every lane

  // The func codes the unit itself tells apart (docs/isa.md's table; the element-wise ones are
  // rtl/tpu_vpu_lane.sv's).
  localparam logic [5:0] VF2I   = 6'h20, VI2F   = 6'h21, VBf16  = 6'h22;
  localparam logic [5:0] VLSum  = 6'h28, VLMax  = 6'h29, VLMin  = 6'h2A;
  localparam logic [5:0] VRSum  = 6'h30, VRMax  = 6'h31, VRMin  = 6'h32;
  localparam logic [5:0] VAlign = 6'h38;

  // One `vector` instruction: bits 127:8 of the instruction word, field for field.
  typedef struct packed {
    logic [31:0] b;                 // 127:96 B base row (bmode 0-2) or the immediate (bmode 3)
    logic [10:0] dst_outer_stride;  // 95:85
    logic [3:0]  dst_inner_stride;  // 84:81
    logic [10:0] a_outer_stride;    // 80:70
    logic [3:0]  a_inner_stride;    // 69:66
    logic [9:0]  outer;             // 65:56 outer count, >= 1
    logic [7:0]  inner;             // 55:48 inner count, >= 1
    logic [15:0] a;                 // 47:32 operand A base row
    logic [15:0] dst;               // 31:16 destination base row
    logic [1:0]  bmode;             // 15:14
    logic [5:0]  func;              // 13:8
  } vpu_cmd_t;

  // lsum, lmax, lmin: one result broadcast to every lane (a fixed tree across the lanes).
  function automatic logic vpu_is_lane_red(logic [5:0] f);
    vpu_is_lane_red = f == VLSum || f == VLMax || f == VLMin;
  endfunction

  // rsum, rmax, rmin: one destination row per line, seeded with B.
  function automatic logic vpu_is_row_red(logic [5:0] f);
    vpu_is_row_red = f == VRSum || f == VRMax || f == VRMin;
  endfunction

  // f2i, i2f, bf16 and the lane reductions: no operand B.
  function automatic logic vpu_is_unary(logic [5:0] f);
    vpu_is_unary = f == VF2I || f == VI2F || f == VBf16 || vpu_is_lane_red(f);
  endfunction

  function automatic logic vpu_is_align(logic [5:0] f);
    vpu_is_align = f == VAlign;
  endfunction

  // Operand B's row steps with A's strides (bmode 0), with the destination's (1), or not at all.
  function automatic logic vpu_b_steps_with_a(logic [1:0] bmode);
    vpu_b_steps_with_a = bmode == BModeRowA;
  endfunction

  function automatic logic vpu_b_steps_with_d(logic [1:0] bmode);
    vpu_b_steps_with_d = bmode == BModeRowDst;
  endfunction

  function automatic logic vpu_b_imm(logic [1:0] bmode);
    vpu_b_imm = bmode == BModeImm;
  endfunction

endpackage

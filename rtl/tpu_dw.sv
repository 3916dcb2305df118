// SPDX-License-Identifier: Apache-2.0
// Depthwise unit: executes dwconv (docs/isa.md "Depthwise configuration"), one instruction at
// a time, beside the MXU: tpu_core builds it when DwWidth > 0 (else 0x11 faults ERR_OPCODE);
// tests/rtl/dw_test.cpp drives it alone.
//
// The command is assumed checked (the decoder's static faults). The unit first reads the
// kh*kw tap rows and the zero-point row (UB rows w_addr .. w_addr + kh*kw), then walks the
// output in groups of up to P = DwWidth output lines. A group needs R = (P_g-1)*s + kh input
// lines; for each of the Wc = (Wo-1)*s + kw window columns it takes R positions, one per cycle:
// a UB read for a position inside the image (a - z is stored, 9 bits per lane), a zero for a
// padding position (no read). A completed column is shifted into a 3-column window; when the
// window holds a complete kernel for output column ox (column c >= kw-1, (c-kw+1) a multiple
// of s) the unit writes the group's P_g output pixels to ACC, one per cycle, while the next
// column streams in. Each pixel is the sum of its kh*kw products (9-bit x 9-bit) per lane in
// one adder tree, sign-extended to 32 bits; the ACC adds it to the row when acc is set.
//
// Ports: UB reads are requests (ub_re_o, ub_raddr_o) that a grant accepts (ub_rgnt_i), with
// the row on ub_rdata_i in the next cycle; a request waits, unchanged, for its grant. ACC
// writes (acc_we_o, acc_waddr_o, acc_wacc_o, acc_wdata_o) wait, unchanged, for acc_wgnt_i.
// With every request granted at once the unit is busy kh*kw + 1 + sum_g R_g * Wc cycles plus
// the cycle that accepts the command and at most P + 1 cycles for the last column's writes
// (isa.md "Cycle cost"). A column whose writes are still held back by the ACC port stops the
// walk (the column buffer is full) until they are done.
`include "tpu_assert.svh"

module tpu_dw #(
  parameter int unsigned N       = 16,
  parameter int unsigned DwWidth = 4    // P: output lines per pass, >= 1
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   clear_i,   // START or soft reset: drop the instruction
  input  logic                   cmd_valid_i,
  output logic                   cmd_ready_o,
  input  tpu_pkg::instr_dwconv_t cmd_i,
  // UB read port (one row per grant; data in the next cycle).
  output logic                   ub_re_o,
  output logic [23:0]            ub_raddr_o,
  input  logic                   ub_rgnt_i,
  input  logic [8*N-1:0]         ub_rdata_i,
  // ACC write port (acc_wacc_o: add to the row, else overwrite).
  output logic                   acc_we_o,
  output logic [15:0]            acc_waddr_o,
  output logic                   acc_wacc_o,
  output logic [32*N-1:0]        acc_wdata_o,
  input  logic                   acc_wgnt_i,
  output logic                   busy_o
);
  localparam int unsigned P     = DwWidth;
  localparam int unsigned Lines = 2 * P + 1;  // window lines: (P-1)*2 + 3
  localparam int unsigned LW    = $clog2(Lines + 1);
  localparam int unsigned PW    = $clog2(P + 1);
  localparam int unsigned ColW  = 9 * Lines * N;  // one window column: Lines rows of N lanes

  typedef enum logic [1:0] {SIdle, SWeights, SStream, SDrain} state_e;

  state_e                 state_q, state_d;
  tpu_pkg::instr_dwconv_t cmd_q, cmd_d;
  logic [12:0]            ho_q, ho_d, wo_q, wo_d, wc_q, wc_d;  // Ho, Wo, Wc
  // Weight rows: the next to request and its tap (ky, kx); the zero-point row after the taps.
  logic [3:0]             wt_q, wt_d;
  logic [1:0]             wky_q, wky_d, wkx_q, wkx_d;
  // The taps on a 3 x 3 grid aligned to the window: slot (ky, j), j = 3 - kw + kx, lane n in
  // bits [9*((3*ky + j)*N + n) +: 9]; slots outside the kernel hold 0. Zero points: 9 bits a lane.
  logic [81*N-1:0]        tap_q, tap_d;
  logic [9*N-1:0]         zp_q, zp_d;
  // The walk: first output line of the group, window column, line in the column.
  logic [12:0]            g_q, g_d;
  logic [13:0]            col_q, col_d;
  logic [LW-1:0]          row_q, row_d;
  // The read (or padding position) of the previous cycle, whose row is handled now.
  logic                   rsp_q, rsp_d, rsp_w_q, rsp_w_d, rsp_pad_q, rsp_pad_d;
  logic                   rsp_last_q, rsp_last_d, rsp_zp_q, rsp_zp_d;
  logic [3:0]             rsp_slot_q, rsp_slot_d;  // weight row: its grid slot 3*ky + j
  logic [LW-1:0]          rsp_row_q, rsp_row_d;
  logic [13:0]            rsp_col_q, rsp_col_d;
  logic [12:0]            rsp_g_q, rsp_g_d;
  logic [PW-1:0]          rsp_pg_q, rsp_pg_d;
  // The column being filled (row r, lane n in [9*(r*N + n) +: 9]); full: complete but not yet
  // shifted (writes held back), with the meta data of its response.
  logic [ColW-1:0]        colbuf_q, colbuf_d;
  logic                   full_q, full_d;
  logic [13:0]            fm_col_q, fm_col_d;
  logic [12:0]            fm_g_q, fm_g_d;
  logic [PW-1:0]          fm_pg_q, fm_pg_d;
  // The window: column j in [j*ColW +: ColW], column 2 the newest.
  logic [3*ColW-1:0]      win_q, win_d;
  // Writes of the group's pixels of one output column.
  logic                   em_q, em_d;
  logic [PW-1:0]          em_p_q, em_p_d, em_pg_q, em_pg_d;
  logic [12:0]            em_g_q, em_g_d, em_ox_q, em_ox_d;

  // ---- the walk's position
  logic [1:0]         s;        // stride 1 or 2
  logic [3:0]         taps;     // kh*kw
  logic [PW-1:0]      pg;       // P_g = min(P, Ho - g)
  logic [LW-1:0]      rg;       // R_g = (P_g-1)*s + kh
  logic signed [15:0] y, x;
  logic               inimg, last_row, last_col, last_group;
  logic [23:0]        addr;  // (the decoder checked that it is < UbRows)
  always_comb begin
    s          = cmd_q.stride2 ? 2'd2 : 2'd1;
    taps       = 4'(cmd_q.kernel_h * cmd_q.kernel_w);
    pg         = (32'(ho_q) - 32'(g_q) >= P) ? PW'(P) : PW'(ho_q - g_q);
    rg         = LW'((32'(pg) - 1) * 32'(s) + 32'(cmd_q.kernel_h));
    y          = 16'(32'(g_q) * 32'(s)) - 16'(cmd_q.pad_top) + 16'(row_q);
    x          = 16'(col_q) - 16'(cmd_q.pad_left);
    inimg      = y >= 0 && y < $signed({4'd0, cmd_q.height}) && x >= 0 &&
                 x < $signed({4'd0, cmd_q.width});
    addr       = 24'(32'(cmd_q.ub_addr) + 32'(y) * 32'(cmd_q.ub_stride) + 32'(x));
    last_row   = row_q == rg - 1'b1;
    last_col   = col_q == 14'(wc_q) - 14'd1;
    last_group = 32'(g_q) + P >= 32'(ho_q);
  end

  // ---- one output pixel: lane sums over the window lines em_p_q*s .. +2 (taps outside the
  // kernel are 0 on the grid, so all nine products are added)
  logic [LW-1:0]     base;
  logic [81*N-1:0]   sel;  // slot 3*ky + j: window column j, line base + ky (as tap_q)
  logic [32*N-1:0]   mac;
  always_comb begin
    base = LW'(32'(em_p_q) * 32'(s));
    for (int unsigned ky = 0; ky < 3; ky++) begin
      for (int unsigned j = 0; j < 3; j++) begin
        sel[9*N*(3*ky + j) +: 9*N] = '0;
        for (int unsigned r = 0; r < Lines; r++) begin
          if (32'(base) + ky == r) sel[9*N*(3*ky + j) +: 9*N] = win_q[j*ColW + 9*r*N +: 9*N];
        end
      end
    end
    for (int unsigned n = 0; n < N; n++) begin
      logic signed [21:0] sum;
      sum = '0;
      for (int unsigned ky = 0; ky < 3; ky++) begin
        for (int unsigned j = 0; j < 3; j++) begin
          sum = sum + 22'($signed(sel[9*((3*ky + j)*N + n) +: 9]) *
                          $signed(tap_q[9*((3*ky + j)*N + n) +: 9]));
        end
      end
      mac[32*n +: 32] = 32'(sum);
    end
  end

  assign cmd_ready_o = state_q == SIdle;
  assign busy_o      = state_q != SIdle;
  assign acc_we_o    = em_q;
  assign acc_waddr_o = 16'(32'(cmd_q.acc_addr) + (32'(em_g_q) + 32'(em_p_q)) * 32'(wo_q) +
                           32'(em_ox_q));
  assign acc_wacc_o  = cmd_q.acc;
  assign acc_wdata_o = mac;

  // This cycle's response row (a - z per lane, 0 for padding; or a weight row as 9-bit lanes)
  // and the completed column.
  logic [9*N-1:0]  val, wrow, zrow;
  logic [ColW-1:0] column;
  logic            em_last, can_shift, stall, shift, yields;
  logic [13:0]     sh_col;
  logic [12:0]     sh_g;
  logic [PW-1:0]   sh_pg;
  always_comb begin
    for (int unsigned n = 0; n < N; n++) begin
      logic signed [9:0] a;
      a = cmd_q.a_unsigned ? $signed({2'b00, ub_rdata_i[8*n +: 8]})
                           : 10'($signed(ub_rdata_i[8*n +: 8]));
      val[9*n +: 9]  = rsp_pad_q ? 9'd0 : 9'(a - 10'($signed(zp_q[9*n +: 9])));
      wrow[9*n +: 9] = cmd_q.w_unsigned ? {1'b0, ub_rdata_i[8*n +: 8]}
                                        : {ub_rdata_i[8*n + 7], ub_rdata_i[8*n +: 8]};
      zrow[9*n +: 9] = cmd_q.a_unsigned ? {1'b0, ub_rdata_i[8*n +: 8]}
                                        : {ub_rdata_i[8*n + 7], ub_rdata_i[8*n +: 8]};
    end
    column = colbuf_q;
    for (int unsigned r = 0; r < Lines; r++) begin
      if (rsp_q && !rsp_w_q && 32'(rsp_row_q) == r) column[9*r*N +: 9*N] = val;
    end
    em_last   = em_q && acc_wgnt_i && em_p_q == em_pg_q - 1'b1;
    can_shift = !em_q || em_last;
    stall     = !can_shift && (full_q || (rsp_q && !rsp_w_q && rsp_last_q));
    shift     = can_shift && (full_q || (rsp_q && !rsp_w_q && rsp_last_q));
    sh_col    = full_q ? fm_col_q : rsp_col_q;
    sh_g      = full_q ? fm_g_q : rsp_g_q;
    sh_pg     = full_q ? fm_pg_q : rsp_pg_q;
    yields    = 32'(sh_col) + 1 >= 32'(cmd_q.kernel_w) &&
                (!cmd_q.stride2 || ((sh_col + 14'd1 - 14'(cmd_q.kernel_w)) & 14'd1) == 14'd0);
  end

  // ---- next state
  always_comb begin
    state_d = state_q;
    cmd_d = cmd_q;
    ho_d = ho_q;
    wo_d = wo_q;
    wc_d = wc_q;
    wt_d = wt_q;
    wky_d = wky_q;
    wkx_d = wkx_q;
    tap_d = tap_q;
    zp_d = zp_q;
    g_d = g_q;
    col_d = col_q;
    row_d = row_q;
    rsp_d = 1'b0;
    rsp_w_d = 1'b0;
    rsp_pad_d = 1'b0;
    rsp_last_d = 1'b0;
    rsp_zp_d = wt_q == taps;
    rsp_slot_d = 4'(3 * 32'(wky_q) + 3 - 32'(cmd_q.kernel_w) + 32'(wkx_q));
    rsp_row_d = row_q;
    rsp_col_d = col_q;
    rsp_g_d = g_q;
    rsp_pg_d = pg;
    colbuf_d = colbuf_q;
    full_d = full_q;
    fm_col_d = fm_col_q;
    fm_g_d = fm_g_q;
    fm_pg_d = fm_pg_q;
    win_d = win_q;
    em_d = em_q;
    em_p_d = em_p_q;
    em_pg_d = em_pg_q;
    em_g_d = em_g_q;
    em_ox_d = em_ox_q;
    ub_re_o = 1'b0;
    ub_raddr_o = '0;

    // Issue: the weight rows, then the walk.
    unique case (state_q)
      SIdle: begin
        if (cmd_valid_i) begin
          cmd_d = cmd_i;
          ho_d = 13'(((13'(cmd_i.height) + 13'(cmd_i.pad_top) + 13'(cmd_i.pad_bottom) -
                       13'(cmd_i.kernel_h)) >> cmd_i.stride2) + 13'd1);
          wo_d = 13'(((13'(cmd_i.width) + 13'(cmd_i.pad_left) + 13'(cmd_i.pad_right) -
                       13'(cmd_i.kernel_w)) >> cmd_i.stride2) + 13'd1);
          wc_d = ((wo_d - 13'd1) << cmd_i.stride2) + 13'(cmd_i.kernel_w);
          wt_d = '0;
          wky_d = '0;
          wkx_d = '0;
          tap_d = '0;  // grid slots outside the kernel stay 0
          state_d = SWeights;
        end
      end
      SWeights: begin
        ub_re_o = 1'b1;
        ub_raddr_o = cmd_q.w_addr + 24'(wt_q);
        if (ub_rgnt_i) begin
          rsp_d = 1'b1;
          rsp_w_d = 1'b1;
          wt_d = wt_q + 4'd1;
          wkx_d = wkx_q + 2'd1;
          if (wkx_q == cmd_q.kernel_w - 2'd1) begin
            wkx_d = '0;
            wky_d = wky_q + 2'd1;
          end
          if (wt_q == taps) begin
            g_d = '0;
            col_d = '0;
            row_d = '0;
            state_d = SStream;
          end
        end
      end
      SStream: begin
        ub_re_o = inimg && !stall;
        ub_raddr_o = addr;
        if (!stall && (!inimg || ub_rgnt_i)) begin
          rsp_d = 1'b1;
          rsp_pad_d = !inimg;
          rsp_last_d = last_row;
          row_d = row_q + 1'b1;
          if (last_row) begin
            row_d = '0;
            col_d = col_q + 14'd1;
            if (last_col) begin
              col_d = '0;
              g_d = g_q + 13'(P);
              if (last_group) state_d = SDrain;
            end
          end
        end
      end
      default: begin  // SDrain: the last column's response and writes
        if (!rsp_q && !full_q && !em_q) state_d = SIdle;
      end
    endcase

    // The previous cycle's row.
    if (rsp_q && rsp_w_q) begin
      if (rsp_zp_q) begin
        zp_d = zrow;
      end else begin
        for (int unsigned t = 0; t < 9; t++) begin
          if (32'(rsp_slot_q) == t) tap_d[9*N*t +: 9*N] = wrow;
        end
      end
    end
    if (rsp_q && !rsp_w_q) begin
      colbuf_d = column;
      if (rsp_last_q && !can_shift) begin
        full_d = 1'b1;
        fm_col_d = rsp_col_q;
        fm_g_d = rsp_g_q;
        fm_pg_d = rsp_pg_q;
      end
    end

    // Writes: the next pixel of the group once the ACC port took this one.
    if (em_q && acc_wgnt_i) begin
      em_p_d = em_p_q + 1'b1;
      if (em_last) em_d = 1'b0;
    end
    // A completed column enters the window; a complete kernel starts the group's writes.
    if (shift) begin
      win_d[ColW-1:0] = win_q[2*ColW-1:ColW];
      win_d[2*ColW-1:ColW] = win_q[3*ColW-1:2*ColW];
      win_d[3*ColW-1:2*ColW] = column;
      full_d = 1'b0;
      if (yields) begin
        em_d = 1'b1;
        em_p_d = '0;
        em_pg_d = sh_pg;
        em_g_d = sh_g;
        em_ox_d = 13'((sh_col + 14'd1 - 14'(cmd_q.kernel_w)) >> cmd_q.stride2);
      end
    end
    if (clear_i) begin
      state_d = SIdle;
      rsp_d   = 1'b0;
      full_d  = 1'b0;
      em_d    = 1'b0;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= SIdle;
      rsp_q <= 1'b0;
      full_q <= 1'b0;
      em_q <= 1'b0;
    end else begin
      state_q <= state_d;
      rsp_q <= rsp_d;
      full_q <= full_d;
      em_q <= em_d;
    end
  end

  // Data and counters: meaningful only while the control above says so (no reset needed).
  always_ff @(posedge clk_i) begin
    cmd_q <= cmd_d;
    ho_q <= ho_d;
    wo_q <= wo_d;
    wc_q <= wc_d;
    wt_q <= wt_d;
    wky_q <= wky_d;
    wkx_q <= wkx_d;
    tap_q <= tap_d;
    zp_q <= zp_d;
    g_q <= g_d;
    col_q <= col_d;
    row_q <= row_d;
    rsp_w_q <= rsp_w_d;
    rsp_pad_q <= rsp_pad_d;
    rsp_last_q <= rsp_last_d;
    rsp_zp_q <= rsp_zp_d;
    rsp_slot_q <= rsp_slot_d;
    rsp_row_q <= rsp_row_d;
    rsp_col_q <= rsp_col_d;
    rsp_g_q <= rsp_g_d;
    rsp_pg_q <= rsp_pg_d;
    colbuf_q <= colbuf_d;
    fm_col_q <= fm_col_d;
    fm_g_q <= fm_g_d;
    fm_pg_q <= fm_pg_d;
    win_q <= win_d;
    em_p_q <= em_p_d;
    em_pg_q <= em_pg_d;
    em_g_q <= em_g_d;
    em_ox_q <= em_ox_d;
  end

  // ---- assertions
  `TPU_ASSERT_INIT(DwWidthLegal, DwWidth >= 1 && DwWidth <= 64)
  `TPU_ASSERT_HOLD(UbReadHeld, ub_re_o, ub_rgnt_i, ub_raddr_o)
  `TPU_ASSERT_HOLD(AccWriteHeld, acc_we_o, acc_wgnt_i, {acc_waddr_o, acc_wacc_o, acc_wdata_o})
  // A full column is shifted before another row arrives; a response never meets a full one.
  `TPU_ASSERT_NEVER(ColumnOverrun, rsp_q && !rsp_w_q && full_q)
  // Commands are legal (the decoder's checks): kernel 1..3, pads below the kernel.
  `TPU_ASSERT_IMPLIES(CmdKernel, cmd_valid_i && cmd_ready_o,
                      cmd_i.kernel_h != 2'd0 && cmd_i.kernel_w != 2'd0 &&
                      cmd_i.pad_top < cmd_i.kernel_h && cmd_i.pad_bottom < cmd_i.kernel_h &&
                      cmd_i.pad_left < cmd_i.kernel_w && cmd_i.pad_right < cmd_i.kernel_w)
  `TPU_ASSERT_IMPLIES(WritesInOrder, em_q, em_p_q < em_pg_q)
endmodule

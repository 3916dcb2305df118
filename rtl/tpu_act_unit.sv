// SPDX-License-Identifier: Apache-2.0
// Activation unit: accumulator rows -> bias, requantize, function, max-pool -> UB rows.
//
// Reads one accumulator row per cycle in pooling-window order (the accumulator SRAM's read
// register is stage 1), then requantizes all N columns, applies the LUT if asked, and keeps
// the running maximum of the window; the last row of a window writes one UB row. The UB write
// port is shared with the DMA in, which comes first: a refused UB write holds the whole
// pipeline (no accumulator read, stage 1 keeps its row on the SRAM's output). Windows run over the
// image padded by pad_top/left/bottom/right: a tap in the padding still takes its cycle but
// reads no pixel and is left out of the maximum (ONNX MaxPool's -inf padding). Also owns the
// quantization parameter memory (QpSlots x {bias, mult, misc} x N int32) and the 256-byte LUT,
// written row by row by read_host. A raw activate writes each row's saturate(acc + bias) as
// int32: it reads the row in four cycles and writes one quarter (N bytes) in each.
`include "tpu_assert.svh"

module tpu_act_unit #(
  parameter int unsigned N       = 16,
  parameter int unsigned UbRows  = 8192,
  parameter int unsigned AccRows = 2048,
  parameter int unsigned QpSlots = 16
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        clear_i,
  // Command from the controller: taken when the unit is idle.
  input  logic                        cmd_valid_i,
  output logic                        cmd_ready_o,
  input  tpu_pkg::act_cmd_t           cmd_i,
  // Accumulator read port (synchronous: the row read in cycle t is on acc_rdata_i from t+1
  // until the next read).
  output logic                        acc_re_o,
  output logic [$clog2(AccRows)-1:0]  acc_raddr_o,
  input  logic [32*N-1:0]             acc_rdata_i,  // column c in [32c +: 32]
  // UB write port (held until granted).
  output logic                        ub_we_o,
  output logic [$clog2(UbRows)-1:0]   ub_waddr_o,
  output logic [8*N-1:0]              ub_wdata_o,
  input  logic                        ub_wgnt_i,
  // Parameter / LUT row writes from read_host.
  input  logic                        prm_we_i,
  input  logic [$clog2(QpSlots*12)-1:0] prm_row_i,
  input  logic                        lut_we_i,
  input  logic [7:0]                  lut_row_i,
  input  logic [8*N-1:0]              wdata_i,
  // Status.
  output logic                        busy_o,
  output logic                        reading_o
);

  localparam int unsigned AccW  = $clog2(AccRows);
  localparam int unsigned UbW   = $clog2(UbRows);
  localparam int unsigned SlotW = (QpSlots > 1) ? $clog2(QpSlots) : 1;
  localparam int unsigned Words = N / 4;  // int32 words per N-byte row

  logic [8*256-1:0] lut_q;  // entry i in [8i +: 8]

  // The activate being run.
  logic                busy_q, busy_d;
  tpu_pkg::act_cmd_t   cmd_q, cmd_d;
  logic [11:0] oy_q, oy_d, ox_q, ox_d;  // output pixel (window) being read
  logic [11:0] py_q, py_d, px_q, px_d;  // its top-left pixel in the padded image: o * stride
  logic [3:0]  dy_q, dy_d, dx_q, dx_d;  // the tap in the window
  logic [1:0]  quarter_q, quarter_d;    // raw: the quarter of the row written in this read

  // Stage 1: one accumulator row (on acc_rdata_i) and where it goes.
  logic               s1_valid_q, s1_valid_d;
  logic               s1_first_q, s1_first_d, s1_last_q, s1_last_d, s1_tap_q, s1_tap_d;
  logic [UbW-1:0]     s1_ub_addr_q, s1_ub_addr_d;
  logic [1:0]         s1_quarter_q, s1_quarter_d;
  // Stage 2: the running window maximum (column c in [9c +: 9]) and the UB write.
  logic [9*N-1:0]     pool_q, pool_d;
  logic               pool_have_q, pool_have_d;  // the window has had a pixel (not only padding)
  logic               ub_we_q, ub_we_d;
  logic [UbW-1:0]     ub_waddr_q, ub_waddr_d;
  logic [8*N-1:0]     ub_wdata_q, ub_wdata_d;

  logic win_first, win_last, all_last, row_last, col_last, start, tap_in, stall, step;
  logic signed [13:0] tap_y, tap_x;  // the tap in image coordinates (negative: in the padding)
  logic [31:0] acc_row, ub_row;

  // ---- parameter and LUT memories ----
  // A parameter row of the host image (N bytes = N/4 little-endian int32) is one quarter of a
  // memory row: host row r of the slot area is slot r / 12, vector (r % 12) / 4, quarter r % 4.
  // prm_row_i is below QpSlots * 12 (checked by the controller): constant divisions of a few
  // bits.
  logic [$clog2(QpSlots*3)-1:0] prm_vec;
  logic [1:0]                   prm_part;
  assign prm_vec  = ($clog2(QpSlots*3))'(prm_row_i >> 2);
  assign prm_part = prm_row_i[1:0];

  // Three tpu_sram (bias, mult, misc), one word of N int32 (column c in [32c +: 32]) per slot,
  // a host row written with the byte enables of its quarter. They are read once, when an
  // activate starts, and hold the slot's words on their outputs while it runs: a read_host
  // into the parameter memory and an activate never overlap (the controller orders them,
  // assertion ActPrmStable), and a row written in the start cycle is read through.
  localparam int unsigned PrmDepth = (QpSlots > 1) ? QpSlots : 2;
  logic [32*N-1:0] prm_rdata [3];
  logic [SlotW-1:0] prm_slot, slot_d;
  logic [1:0]       prm_kind;
  logic [4*N-1:0]   prm_wbe;
  logic             prm_re;
  assign prm_slot = SlotW'(32'(prm_vec) / 3);
  assign prm_kind = 2'(32'(prm_vec) % 3);
  assign prm_wbe  = (4*N)'({N{1'b1}}) << (N * 32'(prm_part));
  assign slot_d   = SlotW'(cmd_d.slot);
  assign prm_re   = start;
  for (genvar k = 0; k < 3; k++) begin : g_prm
    tpu_sram #(.Depth(PrmDepth), .Width(32 * N), .ByteEn(1'b1), .WriteFirst(1'b1)) u_mem (
      .clk_i,
      .we_i(prm_we_i && prm_kind == 2'(k)), .waddr_i(prm_slot), .wdata_i({4{wdata_i}}),
      .wbe_i(prm_wbe),
      .re_i(prm_re), .raddr_i(slot_d), .rdata_o(prm_rdata[k])
    );
  end
  // The LUT: written by the host before use, no reset (like any RAM).
  always_ff @(posedge clk_i) begin
    if (lut_we_i) lut_q[8*N*lut_row_i +: 8*N] <= wdata_i;
  end

  // ---- address generation ----
  assign win_first = (dy_q == '0) && (dx_q == '0);
  assign win_last  = (dy_q == cmd_q.pool_k - 1'b1) && (dx_q == cmd_q.pool_k - 1'b1);
  // The last window of a row (column) is the one after which another would not fit: no
  // division by the stride is needed to know the output size.
  assign col_last  = 14'(px_q) + 14'(cmd_q.pool_s) + 14'(cmd_q.pool_k) >
                     14'(cmd_q.width) + 14'(cmd_q.pad_left) + 14'(cmd_q.pad_right);
  assign row_last  = 14'(py_q) + 14'(cmd_q.pool_s) + 14'(cmd_q.pool_k) >
                     14'(cmd_q.height) + 14'(cmd_q.pad_top) + 14'(cmd_q.pad_bottom);
  assign all_last  = win_last && row_last && col_last;
  assign tap_y     = $signed(14'(py_q) + 14'(dy_q) - 14'(cmd_q.pad_top));
  assign tap_x     = $signed(14'(px_q) + 14'(dx_q) - 14'(cmd_q.pad_left));
  assign tap_in    = !tap_y[13] && !tap_x[13] && tap_y < $signed(14'(cmd_q.height)) &&
                     tap_x < $signed(14'(cmd_q.width));
  // A tap in the padding reads the region's first row (inside its footprint) and is ignored.
  assign acc_row   = 32'(cmd_q.acc_addr) +
                     (tap_in ? 32'(tap_y[12:0]) * 32'(cmd_q.width) + 32'(tap_x[12:0]) : 32'd0);
  // A raw pixel's quarters go to four consecutive UB rows.
  assign ub_row    = 32'(cmd_q.ub_addr) + 32'(oy_q) * 32'(cmd_q.ub_stride) +
                     (cmd_q.raw ? {18'd0, ox_q, quarter_q} : 32'(ox_q));
  // The window position moves on with every read; in raw mode after the row's fourth quarter.
  assign step      = !cmd_q.raw || (quarter_q == 2'd3);
  // A UB write waiting for the port holds everything; otherwise one row is read per cycle.
  assign stall       = ub_we_q && !ub_wgnt_i;
  assign acc_re_o    = busy_q && !stall;
  assign acc_raddr_o = AccW'(acc_row);
  assign cmd_ready_o = !busy_q && !s1_valid_q && !ub_we_q;
  assign start       = cmd_valid_i && cmd_ready_o;
  assign busy_o    = busy_q || s1_valid_q || ub_we_q;
  assign reading_o = acc_re_o;  // cycles a row is read (not those held by a waiting write)

  always_comb begin
    busy_d       = busy_q;
    cmd_d        = cmd_q;
    oy_d         = oy_q;
    ox_d         = ox_q;
    py_d         = py_q;
    px_d         = px_q;
    dy_d         = dy_q;
    dx_d         = dx_q;
    quarter_d    = quarter_q;
    s1_valid_d   = stall ? s1_valid_q : acc_re_o;
    s1_first_d   = s1_first_q;
    s1_last_d    = s1_last_q;
    s1_tap_d     = s1_tap_q;
    s1_ub_addr_d = s1_ub_addr_q;
    s1_quarter_d = s1_quarter_q;
    if (start) begin
      busy_d = 1'b1;
      cmd_d  = cmd_i;
      oy_d   = '0;
      ox_d   = '0;
      py_d   = '0;
      px_d   = '0;
      dy_d   = '0;
      dx_d   = '0;
      quarter_d = '0;
    end else if (acc_re_o) begin
      // Only while reading: an idle unit keeps its stage-1 registers, so the requantizers'
      // inputs do not change and simulation does not re-evaluate them.
      s1_first_d   = win_first;
      s1_last_d    = win_last;
      s1_tap_d     = tap_in;
      s1_ub_addr_d = UbW'(ub_row);
      s1_quarter_d = quarter_q;
      quarter_d    = step ? 2'd0 : quarter_q + 1'b1;
      if (step && all_last) busy_d = 1'b0;
      // raw: the same row again for its next quarter until the fourth (step)
      if (step && dx_q != cmd_q.pool_k - 1'b1) begin
        dx_d = dx_q + 1'b1;
      end else if (step) begin
        dx_d = '0;
        if (dy_q != cmd_q.pool_k - 1'b1) begin
          dy_d = dy_q + 1'b1;
        end else begin
          dy_d = '0;
          if (!col_last) begin
            ox_d = ox_q + 1'b1;
            px_d = px_q + 12'(cmd_q.pool_s);
          end else begin
            ox_d = '0;
            px_d = '0;
            oy_d = oy_q + 1'b1;
            py_d = py_q + 12'(cmd_q.pool_s);
          end
        end
      end
    end
    if (clear_i) begin
      busy_d     = 1'b0;
      s1_valid_d = 1'b0;
    end
  end

  // ---- stage 2: requantize, LUT, pool, write (registered UB write) ----
  // A row moves on from stage 1 unless the UB write ahead of it waits. The N requantizers are
  // computed only in a cycle that takes a row, so an idle unit costs a simulator one branch.
  logic [32*N-1:0] bias, mult, misc;
  assign bias = prm_rdata[0];
  assign mult = prm_rdata[1];
  assign misc = prm_rdata[2];
  always_comb begin
    logic              have;
    logic signed [8:0] r, y, v, p;
    logic [7:0]        l;
    {have, r, y, v, p, l} = '0;
    pool_d      = pool_q;
    pool_have_d = pool_have_q;
    ub_waddr_d  = ub_waddr_q;
    ub_wdata_d  = ub_wdata_q;
    ub_we_d     = stall ? ub_we_q : (s1_valid_q && s1_last_q);
    if (s1_valid_q && !stall) begin
      have = !s1_first_q && pool_have_q;
      for (int c = 0; c < 32'(N); c++) begin
        r = tpu_pkg::requantize(acc_rdata_i[32*c +: 32], bias[32*c +: 32], mult[32*c +: 32],
                                misc[32*c +: 32], cmd_q.func, cmd_q.out_unsigned);
        l = lut_q[8*r[7:0] +: 8];
        if (cmd_q.func == tpu_pkg::FuncLut) begin
          y = cmd_q.out_unsigned ? $signed({1'b0, l}) : $signed({l[7], l});
        end else begin
          y = r;
        end
        p = pool_q[9*c +: 9];
        v = (s1_tap_q && (!have || y > p)) ? y : p;
        pool_d[9*c +: 9]     = v;
        ub_wdata_d[8*c +: 8] = v[7:0];
      end
      if (cmd_q.raw) begin
        // Quarter q of the row's N int32 (little-endian, column order): columns q*N/4 ..
        for (int c = 0; c < 32'(Words); c++) begin
          ub_wdata_d[32*c +: 32] = tpu_pkg::add_bias(
              acc_rdata_i[32*(32'(Words)*32'(s1_quarter_q) + c) +: 32],
              bias[32*(32'(Words)*32'(s1_quarter_q) + c) +: 32]);
        end
      end
      pool_have_d = have || s1_tap_q;
      ub_waddr_d  = s1_ub_addr_q;
    end
    if (clear_i) ub_we_d = 1'b0;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q     <= 1'b0;
      s1_valid_q <= 1'b0;
      ub_we_q    <= 1'b0;
    end else begin
      busy_q     <= busy_d;
      s1_valid_q <= s1_valid_d;
      ub_we_q    <= ub_we_d;
    end
  end

  // Command fields, positions and data: no reset (used only while valid). An idle unit holds
  // them (every _d equals its _q then): the enable gates the unit's clock, and a simulator
  // skips the copies.
  logic regs_en;
  assign regs_en = start || busy_q || s1_valid_q;
  always_ff @(posedge clk_i) begin
    if (regs_en) begin
      cmd_q        <= cmd_d;
      oy_q         <= oy_d;
      ox_q         <= ox_d;
      py_q         <= py_d;
      px_q         <= px_d;
      dy_q         <= dy_d;
      dx_q         <= dx_d;
      quarter_q    <= quarter_d;
      s1_first_q   <= s1_first_d;
      s1_last_q    <= s1_last_d;
      s1_tap_q     <= s1_tap_d;
      s1_ub_addr_q <= s1_ub_addr_d;
      s1_quarter_q <= s1_quarter_d;
      pool_q       <= pool_d;
      pool_have_q  <= pool_have_d;
      ub_waddr_q   <= ub_waddr_d;
      ub_wdata_q   <= ub_wdata_d;
    end
  end

  assign ub_we_o    = ub_we_q;
  assign ub_waddr_o = ub_waddr_q;
  assign ub_wdata_o = ub_wdata_q;

  // The row ranges and the slot were checked by the decoder: the high address bits of a legal
  // activate are zero, and so are the slot's above QpSlots.
  logic unused_bits;
  assign unused_bits = ^{cmd_d.slot >> SlotW, acc_row[31:AccW], ub_row[31:UbW]};

  // The slot an activate reads is not written while it runs.
  `TPU_ASSERT_IMPLIES(ActPrmStable, prm_we_i, !(busy_q || s1_valid_q || ub_we_q))
  // Window counters stay inside the pooling window.
  `TPU_ASSERT_IMPLIES(ActWindowBound, busy_q, dx_q < cmd_q.pool_k && dy_q < cmd_q.pool_k)
  `TPU_ASSERT_IMPLIES(ActAccRowBound, busy_q, acc_row < AccRows)
  // Pads below the window (checked at decode): every window holds at least one pixel.
  `TPU_ASSERT_IMPLIES(ActWindowHasPixel, s1_valid_q && s1_last_q,
                      s1_tap_q || (!s1_first_q && pool_have_q))
  `TPU_ASSERT_IMPLIES(ActUbRowBound, busy_q, ub_row < UbRows)
  // A raw activate has no pooling (checked at decode): every row is a whole window.
  `TPU_ASSERT_IMPLIES(ActRawNoPool, busy_q && cmd_q.raw,
                      cmd_q.pool_k == 4'd1 && cmd_q.pool_s == 4'd1)

endmodule

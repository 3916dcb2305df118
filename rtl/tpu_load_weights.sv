// SPDX-License-Identifier: Apache-2.0
// load_weights (docs/isa.md, opcode 0x0A): VMEM rows -> bf16 weight tiles -> the weight FIFO
// (tpu_weight_loader's bf16 push port), training configuration only.
//
// Each tile is N slots k = 0 .. N-1: slot k < rows reads VMEM row
// vmem_addr + t*tile_stride + k*row_stride through the VMEM read port (a denied read is
// retried), slot k >= rows is a row of +0 (no read). The row arrives in the cycle after its
// granted read, is rounded lane by lane to bf16 (tpu_fp_pkg::fp32_to_bf16) and written into
// line k of an N x N bf16 tile buffer. Once all N lines are written the tile drains into the
// FIFO, one tile row per cycle while the FIFO has room (space_i): tile row k is buffer line k
// read across (W = B) or along the other direction (transpose, W[k][n] = B[n][k]).
//
// Overlap without a second buffer: the next tile writes its line k in the direction the
// draining tile reads, so its slot k may be issued as soon as the draining tile has pushed its
// row k (in that cycle or before); line k is then overwritten only after it was read. Writes
// go along rows or columns of the buffer by the tile's write direction, which flips after
// every transposed tile (write direction of tile t+1 = read direction of tile t). A stream of
// tiles therefore pushes one row per cycle with VMEM reads granted: tile t+1 fills while tile
// t drains. A tile's first row enters the FIFO N cycles after its first read at best (the
// drain reads the buffer with the write of the cycle, its last line, forwarded).
//
// One command is filled at a time (the next is taken once the previous one's last slot is
// issued and the fill is idle); tiles drain in order, and done_o pulses when the last row of a
// command's last tile enters the FIFO (the controller retires load_weights then).
`include "tpu_assert.svh"

module tpu_load_weights #(
  parameter int unsigned N = 16
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  clear_i,      // drop everything (START / soft reset / abort)
  // Command (decoded, range-checked load_weights).
  input  logic                  cmd_valid_i,
  output logic                  cmd_ready_o,
  input  tpu_fp_pkg::lw_cmd_t   cmd_i,
  // VMEM read port (docs: rtl_interfaces, the read happens when re && rgnt; data next cycle).
  output logic                  vm_re_o,
  output logic [15:0]           vm_raddr_o,
  input  logic                  vm_rgnt_i,
  input  logic [32*N-1:0]       vm_rdata_i,
  // Weight FIFO (tpu_weight_loader fpush_i / fpush_row_i; space_i = its free_rows_o != 0).
  output logic                  push_o,
  output logic [16*N-1:0]       push_row_o,   // bf16 W[k][n] in [16n +: 16], rows k in order
  input  logic                  space_i,
  // Status.
  output logic                  done_o,       // a command's last row is pushed this cycle
  output logic                  busy_o,
  output logic                  idle_o
);
  localparam int unsigned KW = (N > 1) ? $clog2(N) : 1;

  // ---------------- fill: slots of the current tile ----------------
  logic          f_busy_q, f_busy_d;     // a command is being filled
  logic          f_tr_q, f_tr_d;         // its transpose flag
  logic [15:0]   f_rstride_q, f_rstride_d, f_tstride_q, f_tstride_d;
  logic [8:0]    f_rows_q, f_rows_d;
  logic [15:0]   f_tiles_q, f_tiles_d;   // tiles left, the current one included
  logic [15:0]   f_base_q, f_base_d;     // first VMEM row of the current tile
  logic [15:0]   f_addr_q, f_addr_d;     // VMEM row of slot f_k_q
  logic [KW-1:0] f_k_q, f_k_d;           // slot issued next
  logic          wdir_q, wdir_d;         // write direction of the filling tile (0 rows, 1 cols)

  // ---------------- s1: the slot issued in the previous cycle, written now ----------------
  logic          s1_valid_q, s1_valid_d;
  logic          s1_read_q, s1_read_d;   // VMEM data (else a row of +0)
  logic          s1_last_q, s1_last_d;   // the last slot of its tile
  logic          s1_dir_q, s1_dir_d;
  logic [KW-1:0] s1_k_q, s1_k_d;

  // ---------------- drain: the tile whose slots are all issued ----------------
  logic          d_valid_q, d_valid_d;
  logic          d_rdir_q, d_rdir_d;     // read direction (write direction ^ transpose)
  logic          d_end_q, d_end_d;       // the last tile of its command
  logic [KW-1:0] d_cnt_q, d_cnt_d;       // rows pushed

  // The tile buffer: element (i, j) in [16*(N*i + j) +: 16]; line k along rows is (k, *),
  // along columns (*, k).
  logic [16*N*N-1:0] tb_q;
  logic [16*N-1:0]   line;               // the row written by s1 (rounded, or +0)

  logic slot_free, slot_is_read, issue, issue_last, tile_end, start, d_last;

  // Slot f_k_q's buffer line is free once the drain has pushed its row f_k_q (or does now).
  assign d_last       = push_o && d_cnt_q == KW'(N - 1);
  assign slot_free    = !d_valid_q || d_cnt_q > f_k_q || (d_cnt_q == f_k_q && push_o);
  assign slot_is_read = {{(9 - KW){1'b0}}, f_k_q} < f_rows_q;
  assign vm_re_o      = f_busy_q && slot_free && slot_is_read;
  assign vm_raddr_o   = f_addr_q;
  assign issue        = f_busy_q && slot_free && (!slot_is_read || vm_rgnt_i);
  assign tile_end     = f_k_q == KW'(N - 1);
  assign issue_last   = issue && tile_end;
  assign cmd_ready_o  = !f_busy_q;
  assign start        = cmd_valid_i && cmd_ready_o;

  // The drain reads the buffer's next state, so it may push row 0 in the cycle its tile's last
  // slot is written (a write of the next tile never changes a line it has still to read).
  assign push_o = d_valid_q && space_i;
  assign done_o = d_last && d_end_q;
  assign busy_o = f_busy_q || s1_valid_q || d_valid_q;
  assign idle_o = !busy_o;

  always_comb begin
    line = '0;
    if (s1_valid_q && s1_read_q) begin  // (only then: the read bus changes every cycle)
      for (int j = 0; j < 32'(N); j++) begin
        line[16*j +: 16] = tpu_fp_pkg::fp32_to_bf16(vm_rdata_i[32*j +: 32]);
      end
    end
  end

  // Tile row d_cnt_q: line d_cnt_q of the buffer in the read direction, as it is after this
  // cycle's write (an element s1 writes now comes from `line`: only the draining tile's own
  // last line, when transposed, crosses the line read). Element j of the line is (ie, je).
  // Evaluated only while a tile drains (a simulation-speed measure: it is idle most cycles).
  always_comb begin
    logic [KW-1:0] ie, je;
    ie         = '0;
    je         = '0;
    push_row_o = '0;
    if (d_valid_q) begin
      for (int j = 0; j < 32'(N); j++) begin
        ie = d_rdir_q ? KW'(j) : d_cnt_q;
        je = d_rdir_q ? d_cnt_q : KW'(j);
        if (s1_valid_q && (s1_dir_q ? je == s1_k_q : ie == s1_k_q)) begin
          push_row_o[16*j +: 16] = line[16*(s1_dir_q ? 32'(ie) : 32'(je)) +: 16];
        end else begin
          push_row_o[16*j +: 16] = tb_q[16*(32'(N)*32'(ie) + 32'(je)) +: 16];
        end
      end
    end
  end

  // The write of s1: line s1_k_q along rows (element (k, j) = lane j) or columns ((i, k) =
  // lane i). Only in the cycles s1 holds a slot. Data only, no reset: every tile issues all N
  // slots (slots >= rows write +0), so each line the drain reads was written for its tile.
  always_ff @(posedge clk_i) begin
    if (s1_valid_q) begin
      for (int i = 0; i < 32'(N); i++) begin
        for (int j = 0; j < 32'(N); j++) begin
          if (!s1_dir_q && KW'(i) == s1_k_q) tb_q[16*(32'(N)*i + j) +: 16] <= line[16*j +: 16];
          if (s1_dir_q && KW'(j) == s1_k_q)  tb_q[16*(32'(N)*i + j) +: 16] <= line[16*i +: 16];
        end
      end
    end
  end

  always_comb begin
    f_busy_d    = f_busy_q;
    f_tr_d      = f_tr_q;
    f_rstride_d = f_rstride_q;
    f_tstride_d = f_tstride_q;
    f_rows_d    = f_rows_q;
    f_tiles_d   = f_tiles_q;
    f_base_d    = f_base_q;
    f_addr_d    = f_addr_q;
    f_k_d       = f_k_q;
    wdir_d      = wdir_q;
    s1_valid_d  = issue;
    s1_read_d   = slot_is_read;
    s1_last_d   = tile_end;
    s1_dir_d    = wdir_q;
    s1_k_d      = f_k_q;
    d_valid_d   = d_valid_q;
    d_rdir_d    = d_rdir_q;
    d_end_d     = d_end_q;
    d_cnt_d     = d_cnt_q;
    if (clear_i) begin
      f_busy_d   = 1'b0;
      s1_valid_d = 1'b0;
      d_valid_d  = 1'b0;
      d_cnt_d    = '0;
      wdir_d     = 1'b0;
    end else begin
      // Drain: count pushed rows; the tile leaves with its last row.
      if (push_o) d_cnt_d = d_cnt_q + 1'b1;
      if (d_last) d_valid_d = 1'b0;
      // Fill: next slot; at a tile's end hand the tile to the drain (whose previous tile has
      // just pushed its last row: slot N-1 waited for it) and flip the write direction.
      if (issue) begin
        f_k_d    = f_k_q + 1'b1;
        f_addr_d = f_addr_q + f_rstride_q;
        if (tile_end) begin
          d_valid_d = 1'b1;
          d_cnt_d   = '0;
          d_rdir_d  = wdir_q ^ f_tr_q;
          d_end_d   = f_tiles_q == 16'd1;
          wdir_d    = wdir_q ^ f_tr_q;
          f_k_d     = '0;
          f_tiles_d = f_tiles_q - 1'b1;
          f_base_d  = f_base_q + f_tstride_q;
          f_addr_d  = f_base_q + f_tstride_q;
          if (f_tiles_q == 16'd1) f_busy_d = 1'b0;
        end
      end
      if (start) begin
        f_busy_d    = 1'b1;
        f_tr_d      = cmd_i.transpose;
        f_rstride_d = cmd_i.row_stride;
        f_tstride_d = cmd_i.tile_stride;
        f_rows_d    = cmd_i.rows;
        f_tiles_d   = cmd_i.tiles;
        f_base_d    = cmd_i.vmem_addr;
        f_addr_d    = cmd_i.vmem_addr;
        f_k_d       = '0;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_busy_q   <= 1'b0;
      s1_valid_q <= 1'b0;
      d_valid_q  <= 1'b0;
      d_cnt_q    <= '0;
      wdir_q     <= 1'b0;
    end else begin
      f_busy_q   <= f_busy_d;
      s1_valid_q <= s1_valid_d;
      d_valid_q  <= d_valid_d;
      d_cnt_q    <= d_cnt_d;
      wdir_q     <= wdir_d;
    end
  end

  // Data only, no reset: the command's fields and the fill position (read only while f_busy_q),
  // s1's slot (only with s1_valid_q) and the drain's tile (only with d_valid_q).
  always_ff @(posedge clk_i) begin
    f_tr_q      <= f_tr_d;
    f_rstride_q <= f_rstride_d;
    f_tstride_q <= f_tstride_d;
    f_rows_q    <= f_rows_d;
    f_tiles_q   <= f_tiles_d;
    f_base_q    <= f_base_d;
    f_addr_q    <= f_addr_d;
    f_k_q       <= f_k_d;
    s1_read_q   <= s1_read_d;
    s1_last_q   <= s1_last_d;
    s1_dir_q    <= s1_dir_d;
    s1_k_q      <= s1_k_d;
    d_rdir_q    <= d_rdir_d;
    d_end_q     <= d_end_d;
  end

  `TPU_ASSERT_INIT(LwParams, N >= 2 && N <= 256)
  // A legal command: 1 <= rows <= N and at least one tile (the decoder's ERR_FIELD).
  `TPU_ASSERT_IMPLIES(LwCmdLegal, start,
                      cmd_i.tiles != '0 && cmd_i.rows != '0 && 32'(cmd_i.rows) <= N)
  // The fill never overtakes the drain: a tile is handed over only when the drain is free.
  `TPU_ASSERT_IMPLIES(LwHandOver, issue_last, !d_valid_q || d_last)
  // The slot s1 writes is never a line the drain has still to read.
  // (s1 holding a tile's last slot: the drain is that tile's own and reads it forwarded.)
  `TPU_ASSERT_IMPLIES(LwNoOverwrite, s1_valid_q && !s1_last_q && d_valid_q, d_cnt_q > s1_k_q)
  `TPU_ASSERT_NEVER(LwPushNoSpace, push_o && !space_i)
`ifndef SYNTHESIS
  // Commands taken and not yet done: at most two (one draining its last tile while the next one
  // fills), none exactly when the unit is idle; each command's done_o pulses once.
  logic [1:0] cmds_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni)      cmds_q <= '0;
    else if (clear_i) cmds_q <= '0;
    else              cmds_q <= cmds_q + 2'(start) - 2'(done_o);
  end
  `TPU_ASSERT(LwInFlight, cmds_q <= 2'd2 && (cmds_q == '0) == !busy_o)
  `TPU_ASSERT_IMPLIES(LwDoneTaken, done_o, cmds_q != '0)
`endif

endmodule

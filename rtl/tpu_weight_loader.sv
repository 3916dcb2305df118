// SPDX-License-Identifier: Apache-2.0
// Weight FIFO and the loader that moves tiles from it into the MXU's double buffer.
//
// The weight DMA pushes tile rows (host order, row 0 first). Once a whole tile is in the
// FIFO, the loader shifts it into the MXU shift registers (bottom row first, N cycles), then
// commits it into a free buffer. A buffer is free when it is neither loaded nor active and the
// last row that used it was fed at least N cycles ago (the MXU's commit rule). The matmul
// feeder switches to the oldest loaded buffer with `switch_i`.
// The FIFO is a tpu_sram (synchronous, write-first read): every cycle it reads the row the
// shifter will send in the next one, so the MXU sees the same rows in the same cycles as with
// a combinational read (a tile may start shifting the cycle after its last row was pushed).
//
// Float (the training configuration, issue 30): bf16 tiles from tpu_load_weights enter the
// same FIFO through fpush_i, in program order with the int8 rows of push_i (the controller
// never lets both push in one cycle). A FIFO row is then 16*N + 1 bits, {bf16, 16N data bits}
// (an int8 row in the low 8N bits), and every tile keeps its type through the shift registers
// and the buffers: an int8 tile shifts and commits into tpu_mxu (w_shift_o, w_commit_o), a
// bf16 tile into tpu_mxu_fp (wf_shift_o, wf_commit_o). Both arrays share the buffer states,
// the commit rule and w_buf_o. (The results would not change if both arrays took every tile:
// an array's buffer is read only by rows of its type, which always follow a commit of that
// type into it; the gating keeps the idle array still, for power and simulation speed.) Without Float the FIFO is 8N bits wide and every output is as
// it always was (fpush_i is ignored, the wf_* outputs and the types are 0).
`include "tpu_assert.svh"

module tpu_weight_loader #(
  parameter int unsigned N          = 16,
  parameter int unsigned WFifoTiles = 4,
  parameter bit          Float      = 1'b0   // bf16 tiles (training configuration)
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       clear_i,          // drop every tile (START / soft reset)
  // Row push from the weight DMA.
  input  logic       push_i,
  input  logic [8*N-1:0] push_row_i,
  output logic [$clog2(WFifoTiles*N+1)-1:0] free_rows_o,
  // bf16 row push from tpu_load_weights (Float only).
  input  logic       fpush_i,
  input  logic [16*N-1:0] fpush_row_i,
  // To the MXU.
  output logic       w_shift_o,
  output logic [8*N-1:0] w_row_o,
  output logic       w_commit_o,
  output logic       w_buf_o,
  // To the bf16 MXU (Float only; w_buf_o is shared).
  output logic       wf_shift_o,
  output logic [16*N-1:0] wf_row_o,
  output logic       wf_commit_o,
  // To the matmul feeder.
  output logic       active_buf_o,
  output logic       next_valid_o,
  output logic       next_buf_o,
  input  logic       switch_i,         // a row tagged next_buf_o is fed this cycle
  input  logic       use_i,            // a row is fed this cycle ...
  input  logic       use_buf_i,        // ... tagged with this buffer
  output logic       active_bf16_o,    // the active buffer holds a bf16 tile (Float only)
  output logic       next_bf16_o,      // the next_buf_o tile is a bf16 tile (Float only)
  output logic       idle_o,           // nothing in the FIFO, shifter or pending commit
  output logic       tile_pending_o    // a complete tile is in the FIFO, shifter or commit
);
  localparam int unsigned FifoRows = WFifoTiles * N;
  localparam int unsigned RowIdxW  = $clog2(FifoRows);
  localparam int unsigned CntW     = $clog2(FifoRows + 1);
  localparam int unsigned ShW      = $clog2(N);
  localparam int unsigned RowW     = Float ? 16 * N + 1 : 8 * N;  // FIFO row

  typedef enum logic [1:0] {BufEmpty, BufLoaded, BufActive} buf_state_e;

  logic [RowIdxW-1:0] wr_row_q;      // next row written
  logic [RowIdxW-1:0] rd_base_q;     // first row of the oldest tile
  logic [CntW-1:0]    used_rows_q;   // rows held, including the tile being shifted
  logic [CntW-1:0]    full_rows_q;   // rows of complete tiles not yet started
  logic               sh_active_q;   // shifting a tile into the MXU
  logic [ShW-1:0]     sh_cnt_q;
  logic               wsh_full_q;    // a complete tile waits in the shift registers
  buf_state_e         state_q [2];
  logic [ShW-1:0]     drain_q [2];   // cycles until a buffer's last user has passed
  logic               older_q;       // when both buffers are loaded: the one loaded first

  logic       commit_ok;
  logic       commit_buf;
  logic       start_shift;
  logic       shift_done;
  logic [RowIdxW-1:0] rd_base_d, rd_row_next;
  logic [ShW-1:0]     sh_row_next;

  function automatic logic [RowIdxW-1:0] wrap_add(logic [RowIdxW-1:0] a, int unsigned b);
    int unsigned s;
    s = 32'(a) + b;
    if (s >= FifoRows) s -= FifoRows;
    wrap_add = RowIdxW'(s);
  endfunction

  // A free buffer for the tile in the shift registers; buffer 0 first.
  always_comb begin
    commit_buf = 1'b0;
    commit_ok  = 1'b0;
    if (wsh_full_q) begin
      if (state_q[0] == BufEmpty && drain_q[0] == '0) begin
        commit_ok  = 1'b1;
        commit_buf = 1'b0;
      end else if (state_q[1] == BufEmpty && drain_q[1] == '0) begin
        commit_ok  = 1'b1;
        commit_buf = 1'b1;
      end
    end
  end

  // A tile shifts in N consecutive cycles, the first one being the cycle it starts (which may
  // be the cycle the previous tile commits: the MXU commits before it shifts), so tiles can
  // follow each other every N cycles.
  logic [ShW-1:0] sh_row;  // shift step of this cycle
  assign start_shift = !sh_active_q && (!wsh_full_q || commit_ok) && (full_rows_q != '0);
  assign sh_row      = start_shift ? '0 : sh_cnt_q;
  assign shift_done  = (start_shift || sh_active_q) && (sh_row == ShW'(N - 1));

  // The type of the tile being shifted (its rows' bit) and of the one in the shift registers.
  logic shifting, row_bf16, wsh_bf16;
  assign shifting    = start_shift || sh_active_q;
  assign w_shift_o   = shifting && !row_bf16;
  assign w_commit_o  = commit_ok && !wsh_bf16;
  assign wf_shift_o  = shifting && row_bf16;
  assign wf_commit_o = commit_ok && wsh_bf16;
  assign w_buf_o     = commit_buf;

  // The tile base (rd_base_q's next state) and the shift step of the next cycle.
  always_comb begin
    rd_base_d   = rd_base_q;
    sh_row_next = '0;
    if (clear_i) begin
      rd_base_d = '0;
    end else if (shift_done) begin
      rd_base_d = wrap_add(rd_base_q, N);
    end else if (start_shift || sh_active_q) begin
      sh_row_next = sh_row + 1'b1;
    end
  end
  assign rd_row_next = wrap_add(rd_base_d, N - 1 - 32'(sh_row_next));

  logic            push;
  logic [RowW-1:0] fifo_wdata, fifo_rdata;
  tpu_sram #(.Depth(FifoRows), .Width(RowW), .ByteEn(1'b0), .WriteFirst(1'b1)) u_fifo (
    .clk_i,
    .we_i(push), .waddr_i(wr_row_q), .wdata_i(fifo_wdata), .wbe_i('1),
    .re_i(1'b1), .raddr_i(rd_row_next), .rdata_o(fifo_rdata)
  );

  if (Float) begin : g_float
    // Tile types: of the tile in the shift registers and of each buffer's tile.
    logic wsh_bf16_q, wsh_bf16_d;
    logic [1:0] buf_bf16_q, buf_bf16_d;
    assign push       = push_i || fpush_i;
    assign fifo_wdata = fpush_i ? {1'b1, fpush_row_i} : {1'b0, {(8 * N){1'b0}}, push_row_i};
    assign row_bf16   = fifo_rdata[16*N];
    assign w_row_o    = fifo_rdata[8*N-1:0];
    assign wf_row_o   = fifo_rdata[16*N-1:0];
    assign wsh_bf16   = wsh_bf16_q;
    always_comb begin
      wsh_bf16_d = shifting ? row_bf16 : wsh_bf16_q;
      buf_bf16_d = buf_bf16_q;
      if (commit_ok) buf_bf16_d[commit_buf] = wsh_bf16_q;
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        wsh_bf16_q <= 1'b0;
        buf_bf16_q <= '0;
      end else begin
        wsh_bf16_q <= wsh_bf16_d;
        buf_bf16_q <= buf_bf16_d;
      end
    end
    assign active_bf16_o = buf_bf16_q[active_buf_o];
    assign next_bf16_o   = buf_bf16_q[next_buf_o];
    // One push port at a time (the controller orders read_weights and load_weights).
    `TPU_ASSERT_NEVER(WPushBoth, push_i && fpush_i)
  end else begin : g_int8
    logic unused_fpush;
    assign unused_fpush  = ^{fpush_i, fpush_row_i};
    assign push          = push_i;
    assign fifo_wdata    = push_row_i;
    assign row_bf16      = 1'b0;
    assign w_row_o       = fifo_rdata;
    assign wf_row_o      = '0;
    assign wsh_bf16      = 1'b0;
    assign active_bf16_o = 1'b0;
    assign next_bf16_o   = 1'b0;
  end

  always_comb begin
    next_valid_o = 1'b0;
    next_buf_o   = 1'b0;
    if (state_q[0] == BufLoaded && state_q[1] == BufLoaded) begin
      next_valid_o = 1'b1;
      next_buf_o   = older_q;
    end else if (state_q[0] == BufLoaded) begin
      next_valid_o = 1'b1;
      next_buf_o   = 1'b0;
    end else if (state_q[1] == BufLoaded) begin
      next_valid_o = 1'b1;
      next_buf_o   = 1'b1;
    end
  end
  assign active_buf_o   = (state_q[1] == BufActive);
  assign free_rows_o    = CntW'(FifoRows) - used_rows_q;
  assign idle_o         = (used_rows_q == '0) && !sh_active_q && !wsh_full_q;
  assign tile_pending_o = (full_rows_q != '0) || sh_active_q || wsh_full_q;

  // Next state. clear_i empties the FIFO, shifter and buffers like a reset.
  logic [RowIdxW-1:0] wr_row_d;
  logic [CntW-1:0]    used_rows_d, full_rows_d;
  logic               sh_active_d, wsh_full_d, older_d;
  logic [ShW-1:0]     sh_cnt_d;
  buf_state_e         state0_d, state1_d;
  logic [2*ShW-1:0]   drain_d;   // buffer b in [ShW*b +: ShW]

  always_comb begin
    wr_row_d    = wr_row_q;
    used_rows_d = used_rows_q;
    full_rows_d = full_rows_q;
    sh_active_d = sh_active_q;
    sh_cnt_d    = sh_cnt_q;
    wsh_full_d  = wsh_full_q;
    older_d     = older_q;
    state0_d    = state_q[0];
    state1_d    = state_q[1];
    for (int b = 0; b < 2; b++) drain_d[ShW*b +: ShW] = drain_q[b];
    if (clear_i) begin
      wr_row_d    = '0;
      used_rows_d = '0;
      full_rows_d = '0;
      sh_active_d = 1'b0;
      sh_cnt_d    = '0;
      wsh_full_d  = 1'b0;
      older_d     = 1'b0;
      state0_d    = BufEmpty;
      state1_d    = BufEmpty;
      drain_d     = '0;
    end else begin
      // FIFO write side: count rows; a tile becomes available when its last row lands.
      if (push) begin
        wr_row_d    = wrap_add(wr_row_q, 1);
        used_rows_d = used_rows_d + 1'b1;
      end
      if (push && wrap_add(wr_row_q, 1) % RowIdxW'(N) == '0) begin
        full_rows_d = full_rows_d + CntW'(N);
      end

      // Shifter.
      if (start_shift) full_rows_d = full_rows_d - CntW'(N);
      if (shift_done) begin
        sh_active_d = 1'b0;
        wsh_full_d  = 1'b1;
        used_rows_d = used_rows_d - CntW'(N);
      end else if (start_shift || sh_active_q) begin
        sh_active_d = 1'b1;
        sh_cnt_d    = sh_row + 1'b1;
      end
      if (commit_ok && !shift_done) wsh_full_d = 1'b0;

      // Buffers: drain counters, switch, commit.
      for (int b = 0; b < 2; b++) begin
        if (use_i && use_buf_i == 1'(b)) drain_d[ShW*b +: ShW] = ShW'(N - 1);
        else if (drain_q[b] != '0)       drain_d[ShW*b +: ShW] = drain_q[b] - 1'b1;
      end
      if (switch_i) begin
        if (state_q[0] == BufActive) state0_d = BufEmpty;
        if (state_q[1] == BufActive) state1_d = BufEmpty;
        if (next_buf_o) state1_d = BufActive;
        else            state0_d = BufActive;
      end
      if (commit_ok) begin
        if (commit_buf) state1_d = BufLoaded;
        else            state0_d = BufLoaded;
        // The other buffer, if loaded, was loaded first.
        older_d = !commit_buf;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_row_q    <= '0;
      rd_base_q   <= '0;
      used_rows_q <= '0;
      full_rows_q <= '0;
      sh_active_q <= 1'b0;
      sh_cnt_q    <= '0;
      wsh_full_q  <= 1'b0;
      state_q[0]  <= BufEmpty;
      state_q[1]  <= BufEmpty;
      drain_q[0]  <= '0;
      drain_q[1]  <= '0;
      older_q     <= 1'b0;
    end else begin
      wr_row_q    <= wr_row_d;
      rd_base_q   <= rd_base_d;
      used_rows_q <= used_rows_d;
      full_rows_q <= full_rows_d;
      sh_active_q <= sh_active_d;
      sh_cnt_q    <= sh_cnt_d;
      wsh_full_q  <= wsh_full_d;
      state_q[0]  <= state0_d;
      state_q[1]  <= state1_d;
      for (int b = 0; b < 2; b++) drain_q[b] <= drain_d[ShW*b +: ShW];
      older_q     <= older_d;
    end
  end

  // FIFO bounds: never pushed when full, counts within the FIFO, buffer states legal.
  `TPU_ASSERT_NEVER(WFifoOverflow, push && used_rows_q == CntW'(FifoRows))
  `TPU_ASSERT(WFifoUsedBound, used_rows_q <= CntW'(FifoRows) && full_rows_q <= used_rows_q)
`ifndef SYNTHESIS
  // The row read in the previous cycle is the row shifted in this one (bottom tile row first:
  // the first row shifted in ends up in the last array row).
  logic [RowIdxW-1:0] rd_row, rd_row_q;
  assign rd_row = wrap_add(rd_base_q, N - 1 - 32'(sh_row));
  always_ff @(posedge clk_i) rd_row_q <= rd_row_next;
  `TPU_ASSERT_IMPLIES(WFifoPrefetch, w_shift_o, rd_row_q == rd_row)
  buf_state_e st0, st1;  // (Verilator 5.006 cannot select unpacked arrays in properties)
  assign st0 = state_q[0];
  assign st1 = state_q[1];
  `TPU_ASSERT(WBufStateLegal, st0 != 2'd3 && st1 != 2'd3)
  `TPU_ASSERT_NEVER(WBothActive, st0 == BufActive && st1 == BufActive)
  `TPU_ASSERT_IMPLIES(WCommitFree, commit_ok, (commit_buf ? st1 : st0) == BufEmpty)
`endif
  `TPU_ASSERT_IMPLIES(WSwitchHasTile, switch_i, next_valid_o)

endmodule

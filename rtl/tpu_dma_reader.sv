// SPDX-License-Identifier: Apache-2.0
// DMA reader: host memory -> rows of RowBytes bytes, through one AXI4 read client.
//
// Splits a transfer of `rows` rows starting at `addr` into INCR bursts of at most MaxBurst beats
// that never cross a 4 KiB boundary, one burst outstanding. Beats are gathered into rows (a
// row may span bursts). A burst is only requested when the sink has room for all of it
// (`space_rows_i`, rows the sink can still take), so the read channel is never held up by a
// full sink. The first beat answered with an error ends the transfer: one row flagged
// `row_err_o` (at the index of the row it belonged to) is emitted instead of data, the rest
// of the burst is drained and dropped.
`include "tpu_assert.svh"

module tpu_dma_reader #(
  parameter int unsigned RowBytes  = 16,
  parameter int unsigned BeatBytes = 16,
  parameter int unsigned MaxBurst  = 256, // beats; AXI4 INCR allows up to 256
  parameter int unsigned MaxBursts = 2,    // bursts in flight at once (hides memory latency)
  // 1: a new transfer may start as soon as the current one has requested all its bursts, while
  // their beats still arrive (rows keep their order; for sinks that only append, such as the
  // weight FIFO). 0: a transfer starts when the previous one has completely arrived.
  parameter bit          Overlap   = 1'b0,
  // The most rows one transfer can carry (cmd_i.rows never exceeds it): sizes the row and beat
  // counters, so a DMA that only moves a few rows (the weight DMA) has no unreachable bits.
  parameter int unsigned MaxRows   = 32'h00FF_FFFF
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       clear_i,
  // Command: one transfer per handshake. Ready while idle, and (Overlap) once the running
  // transfer has requested all its bursts.
  input  logic                       cmd_valid_i,
  output logic                       cmd_ready_o,
  input  tpu_pkg::dma_rd_cmd_t       cmd_i,
  input  logic [23:0]                space_rows_i,
  // AXI4 read client.
  output logic                       ar_valid_o,
  output logic [31:0]                ar_addr_o,
  output logic [7:0]                 ar_len_o,
  input  logic                       ar_ready_i,
  input  logic                       r_valid_i,
  input  logic [8*BeatBytes-1:0]     r_data_i,
  input  logic [1:0]                 r_resp_i,
  input  logic                       r_last_i,
  // Rows out.
  output logic                       row_valid_o,
  output logic [8*RowBytes-1:0]      row_data_o,
  output logic [23:0]                row_idx_o,
  output logic                       row_err_o,
  output logic                       row_err_prev_o,  // the failing beat belongs to the
                                                      // previous (overlapped) transfer
  // Status.
  output logic                       busy_o,
  output logic                       active_o   // a burst is outstanding
);
  localparam int unsigned BeatsPerRow = RowBytes / BeatBytes;
  localparam int unsigned BprW        = (BeatsPerRow > 1) ? $clog2(BeatsPerRow) : 1;
  localparam int unsigned RowW        = $clog2(MaxRows + 1);
  localparam int unsigned BeatW       = $clog2(MaxRows * BeatsPerRow + 1);
  // Beats requested and not yet received: at most MaxBursts bursts of MaxBurst beats.
  localparam int unsigned OwedW       = $clog2(MaxBursts * MaxBurst + 1);
  localparam int unsigned PendW       = $clog2(MaxBursts * MaxBurst + 2 * BeatsPerRow + 1);

  logic        busy_q, err_q, ar_pending_q;
  logic [$clog2(MaxBursts+1)-1:0] bursts_q;  // bursts requested whose last beat is still due
  logic        in_burst;
  logic [31:0] next_addr_q;
  logic [BeatW-1:0] beats_left_q;  // beats not yet requested
  logic [OwedW-1:0] beats_owed_q;  // beats requested, not yet received
  logic [RowW-1:0]  row_q;         // index of the row being gathered
  logic [BprW-1:0] beat_in_row_q;
  logic [8*RowBytes-1:0] gather_q;
  logic        row_valid_q, row_err_q, row_err_prev_q;
  logic [$clog2(MaxBursts+1)-1:0] prev_bursts_q;  // bursts of the previous transfer still due
  logic [RowW-1:0] row_idx_q;
  logic [8:0]  burst_beats;    // the burst that would be requested now
  logic [8:0]  burst_q;        // the burst requested (AR payload must hold while waiting)
  logic [12:0] to_4k;          // beats to the next 4 KiB boundary (at most 4096)
  logic        start;          // a command is taken this cycle

  assign start = cmd_valid_i && cmd_ready_o;

  // Room in the sink, in beats: its free rows less everything owed, the beats of the row
  // being gathered and the row on the output this cycle (the sink counts it from the next
  // cycle on). A burst is cut to fit, so a small sink (the instruction queue) still fills.
  logic [PendW-1:0] pending_beats;
  logic [31:0]      free_beats;
  logic             room;
  assign pending_beats = PendW'(beats_owed_q) + PendW'(beat_in_row_q) +
                         (row_valid_q ? PendW'(BeatsPerRow) : PendW'(0));
  assign free_beats    = (32'(space_rows_i) * BeatsPerRow > 32'(pending_beats))
                         ? 32'(space_rows_i) * BeatsPerRow - 32'(pending_beats) : 32'd0;

  always_comb begin
    to_4k = 13'((32'd4096 - {20'd0, next_addr_q[11:0]}) / BeatBytes);
    burst_beats = 9'(MaxBurst);
    if (32'(beats_left_q) < 32'(burst_beats)) burst_beats = 9'(beats_left_q);
    if (32'(to_4k) < 32'(burst_beats))        burst_beats = 9'(to_4k);
    if (free_beats < 32'(burst_beats))   burst_beats = 9'(free_beats);
  end
  assign room = (burst_beats != '0);

  assign ar_valid_o = ar_pending_q;
  assign ar_addr_o  = next_addr_q;
  assign ar_len_o   = 8'(burst_q - 1'b1);
  assign busy_o     = busy_q;
  assign in_burst   = (bursts_q != '0);
  assign active_o   = ar_pending_q || in_burst;
  assign row_valid_o = row_valid_q;
  assign row_err_o   = row_err_q;
  assign row_err_prev_o = row_err_prev_q;
  // At most two transfers in flight: an overlapped start waits until no older one is left.
  assign cmd_ready_o = !busy_q ||
                       (Overlap && beats_left_q == '0 && !ar_pending_q && !err_q && !clear_i &&
                        prev_bursts_q == '0);
  assign row_idx_o   = 24'(row_idx_q);
  assign row_data_o  = gather_q;

  // Events of this cycle.
  logic clr_idle;   // clear_i with nothing outstanding on the bus: drop the transfer
  logic ar_fire;    // the AR request is taken
  logic beat_in;    // a read beat arrives ...
  logic last_in;    // ... the last of its burst
  logic beat_err;   // a beat of the running transfer answered with an error
  logic beat_ok;    // a beat of the running transfer gathered into the row
  logic row_done;   // ... completing it
  logic request;    // request the next burst (there is room for it)
  assign clr_idle = clear_i && !in_burst && !ar_pending_q;
  assign ar_fire  = ar_pending_q && ar_ready_i;
  assign beat_in  = in_burst && r_valid_i;
  assign last_in  = beat_in && r_last_i;
  assign beat_err = beat_in && !err_q && !clear_i && r_resp_i != 2'b00;
  assign beat_ok  = beat_in && !err_q && !clear_i && r_resp_i == 2'b00;
  assign row_done = beat_ok && 32'(beat_in_row_q) == BeatsPerRow - 1;
  assign request  = busy_q && !err_q && !clear_i && !ar_pending_q &&
                    bursts_q != ($clog2(MaxBursts+1))'(MaxBursts) && beats_left_q != '0 && room;

  logic        busy_d, err_d, ar_pending_d, row_valid_d, row_err_d, row_err_prev_d;
  logic [$clog2(MaxBursts+1)-1:0] bursts_d, prev_bursts_d;
  logic [31:0]      next_addr_d;
  logic [BeatW-1:0] beats_left_d;
  logic [OwedW-1:0] beats_owed_d;
  logic [RowW-1:0]  row_d, row_idx_d;
  logic [BprW-1:0]  beat_in_row_d;
  logic [8:0]       burst_d;
  logic [8*RowBytes-1:0] gather_d;

  always_comb begin
    busy_d         = busy_q;
    err_d          = err_q;
    ar_pending_d   = ar_pending_q;
    bursts_d       = bursts_q;
    prev_bursts_d  = prev_bursts_q;
    row_valid_d    = row_valid_q;
    row_err_d      = row_err_q;
    row_err_prev_d = row_err_prev_q;
    next_addr_d    = next_addr_q;
    beats_left_d   = beats_left_q;
    beats_owed_d   = beats_owed_q;
    row_d          = row_q;
    beat_in_row_d  = beat_in_row_q;
    burst_d        = burst_q;
    gather_d       = gather_q;
    row_idx_d      = row_idx_q;
    if (clr_idle) begin
      busy_d        = 1'b0;
      err_d         = 1'b0;
      prev_bursts_d = '0;
      row_valid_d   = 1'b0;
      row_err_d     = 1'b0;
      beats_owed_d  = '0;
    end else begin
      // A command loads the transfer; finished once every beat has arrived, or after an error
      // once the burst drained.
      if (start) begin
        busy_d = 1'b1;
      end else if (busy_q && !ar_pending_q && !in_burst && (err_q || beats_left_q == '0)) begin
        busy_d = 1'b0;
      end
      if (beat_err)   err_d = 1'b1;
      else if (start) err_d = 1'b0;
      // Bursts of an overlapped previous transfer arrive first (in order).
      if (start && busy_q) begin
        prev_bursts_d = bursts_q - ($clog2(MaxBursts+1))'(last_in);
      end else if (last_in && prev_bursts_q != '0) begin
        prev_bursts_d = prev_bursts_q - 1'b1;
      end
      // Request the next burst when there is room for it; the address and the beats left move
      // on when the request is taken.
      if (ar_fire)      ar_pending_d = 1'b0;
      else if (request) ar_pending_d = 1'b1;
      if (request) burst_d = burst_beats;
      if (ar_fire) begin
        next_addr_d  = next_addr_q + 32'(burst_q) * BeatBytes;
        beats_left_d = beats_left_q - BeatW'(burst_q);
      end else if (start) begin
        next_addr_d  = cmd_i.addr;
        beats_left_d = BeatW'(32'(cmd_i.rows) * BeatsPerRow);
      end
      bursts_d = bursts_q + ($clog2(MaxBursts+1))'(ar_fire) - ($clog2(MaxBursts+1))'(last_in);
      if (ar_fire || beat_in) begin
        beats_owed_d = beats_owed_q + (ar_fire ? OwedW'(burst_q) : OwedW'(0)) - OwedW'(beat_in);
      end else if (start && !busy_q) begin
        beats_owed_d = '0;
      end
      // Beats are gathered into rows; the first error ends the transfer with one flagged row.
      row_valid_d    = beat_err || row_done;
      row_err_d      = beat_err;
      // Every burst in flight at an overlapped start belongs to the earlier transfer.
      row_err_prev_d = beat_err && ((prev_bursts_q != '0) || (start && busy_q));
      if (beat_err || row_done) row_idx_d = row_q;
      if (row_done)   row_d = row_q + 1'b1;
      else if (start) row_d = '0;
      if (beat_ok) begin
        for (int b = 0; b < 32'(BeatsPerRow); b++) begin
          if (32'(beat_in_row_q) == b) gather_d[8*BeatBytes*b +: 8*BeatBytes] = r_data_i;
        end
        beat_in_row_d = row_done ? '0 : beat_in_row_q + 1'b1;
      end else if (start && !busy_q) begin
        beat_in_row_d = '0;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q         <= 1'b0;
      err_q          <= 1'b0;
      ar_pending_q   <= 1'b0;
      bursts_q       <= '0;
      prev_bursts_q  <= '0;
      row_valid_q    <= 1'b0;
      row_err_q      <= 1'b0;
      row_err_prev_q <= 1'b0;
      next_addr_q    <= '0;
      beats_left_q   <= '0;
      beats_owed_q   <= '0;
      row_q          <= '0;
      beat_in_row_q  <= '0;
      burst_q        <= '0;
    end else begin
      busy_q         <= busy_d;
      err_q          <= err_d;
      ar_pending_q   <= ar_pending_d;
      bursts_q       <= bursts_d;
      prev_bursts_q  <= prev_bursts_d;
      row_valid_q    <= row_valid_d;
      row_err_q      <= row_err_d;
      row_err_prev_q <= row_err_prev_d;
      next_addr_q    <= next_addr_d;
      beats_left_q   <= beats_left_d;
      beats_owed_q   <= beats_owed_d;
      row_q          <= row_d;
      beat_in_row_q  <= beat_in_row_d;
      burst_q        <= burst_d;
    end
  end

  // Data only, not reset: the row being gathered and its index are read only with row_valid_o.
  always_ff @(posedge clk_i) begin
    gather_q  <= gather_d;
    row_idx_q <= row_idx_d;
  end

  `TPU_ASSERT_HOLD(DmaRdArHold, ar_valid_o, ar_ready_i, {ar_addr_o, ar_len_o})
  `TPU_ASSERT(DmaRdBurstsBound, 32'(bursts_q) <= MaxBursts)
  `TPU_ASSERT_IMPLIES(DmaRdBurstLen, ar_valid_o, burst_q != '0 && 32'(burst_q) <= MaxBurst)
  // Every beat received was requested.
  `TPU_ASSERT_NEVER(DmaRdUnrequestedBeat, in_burst && r_valid_i && beats_owed_q == '0)

endmodule

// SPDX-License-Identifier: Apache-2.0
// DMA writer: UB rows -> host memory through the AXI4 write channels.
//
// Splits `rows` N-byte rows into INCR bursts of at most MaxBurst beats that never cross a 4 KiB
// boundary: AW, then the W beats (read straight from the UB row being sent), then B; one
// burst at a time. An error response ends the transfer after that burst.
// The UB read is synchronous: in every cycle followed by a W cycle the writer reads the row
// of the next cycle's beat (its UB read port has priority, so the read is never refused).
`include "tpu_assert.svh"

module tpu_dma_writer #(
  parameter int unsigned N         = 16,
  parameter int unsigned UbRows    = 8192,
  parameter int unsigned BeatBytes = 16,
  parameter int unsigned MaxBurst  = 256  // beats; AXI4 INCR allows up to 256
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,
  // Command: one write_host per handshake, ready while idle.
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_pkg::dma_wr_cmd_t      cmd_i,
  // UB read port (synchronous, never refused).
  output logic                      ub_re_o,
  output logic [$clog2(UbRows)-1:0] ub_raddr_o,
  input  logic [8*N-1:0]            ub_rdata_i,
  // AXI4 write channels.
  output logic [31:0]               aw_addr_o,
  output logic [7:0]                aw_len_o,
  output logic                      aw_valid_o,
  input  logic                      aw_ready_i,
  output logic [8*BeatBytes-1:0]    w_data_o,
  output logic                      w_last_o,
  output logic                      w_valid_o,
  input  logic                      w_ready_i,
  input  logic [1:0]                b_resp_i,
  input  logic                      b_valid_i,
  output logic                      b_ready_o,
  // Status.
  output logic                      busy_o,
  output logic                      active_o,
  output logic                      err_o      // with !busy_o: the last transfer failed
);
  localparam int unsigned BeatsPerRow = N / BeatBytes;
  localparam int unsigned BprW        = (BeatsPerRow > 1) ? $clog2(BeatsPerRow) : 1;
  localparam int unsigned UbW         = $clog2(UbRows);

  typedef enum logic [1:0] {WIdle, WAddr, WData, WResp} state_e;
  state_e          state_q, state_d;
  logic            busy_q, busy_d, err_q, err_d;
  logic [31:0]     next_addr_q, next_addr_d;    // host address of the next burst
  logic [31:0]     beats_left_q, beats_left_d;  // beats not yet in a burst
  logic [8:0]      burst_beats, burst_q, burst_d, sent_q, sent_d;
  logic [UbW-1:0]  ub_row_q, ub_row_d;          // UB row of the beat sent next
  logic [BprW-1:0] beat_in_row_q, beat_in_row_d;
  logic [31:0] to_4k;
  logic        start;   // a command is taken this cycle

  assign cmd_ready_o = !busy_q;
  assign start       = cmd_valid_i && cmd_ready_o;

  always_comb begin
    to_4k = (32'd4096 - {20'd0, next_addr_q[11:0]}) / BeatBytes;
    burst_beats = 9'(MaxBurst);
    if (beats_left_q < 32'(burst_beats)) burst_beats = 9'(beats_left_q);
    if (to_4k < 32'(burst_beats))        burst_beats = 9'(to_4k);
  end

  assign aw_valid_o = (state_q == WAddr);
  assign aw_addr_o  = next_addr_q;
  assign aw_len_o   = 8'(burst_beats - 1'b1);
  assign w_valid_o  = (state_q == WData);
  assign w_last_o   = (sent_q == burst_q - 1'b1);
  assign b_ready_o  = (state_q == WResp);
  // The row of the beat sent in the next cycle, read whenever the next cycle is a W cycle.
  assign ub_re_o    = (state_q == WAddr && aw_ready_i) ||
                      (state_q == WData && !(w_ready_i && w_last_o));
  assign ub_raddr_o = (state_q == WData && w_ready_i && 32'(beat_in_row_q) == BeatsPerRow - 1) ?
                      ub_row_q + 1'b1 : ub_row_q;
  // Zero outside W cycles: the UB read register it comes from also serves the matmul feeder,
  // whose reads would otherwise toggle the bus (and a simulator's output pins) every cycle.
  assign w_data_o = w_valid_o ? ub_rdata_i[8*BeatBytes*beat_in_row_q +: 8*BeatBytes] : '0;
  assign busy_o   = busy_q;
  assign active_o = (state_q != WIdle);
  assign err_o    = err_q;

  always_comb begin
    state_d       = state_q;
    busy_d        = busy_q;
    err_d         = err_q;
    next_addr_d   = next_addr_q;
    beats_left_d  = beats_left_q;
    burst_d       = burst_q;
    sent_d        = sent_q;
    ub_row_d      = ub_row_q;
    beat_in_row_d = beat_in_row_q;
    unique case (state_q)
      WIdle: begin
        if (start) begin
          busy_d        = 1'b1;
          err_d         = 1'b0;
          next_addr_d   = cmd_i.host_addr;
          beats_left_d  = 32'(cmd_i.rows) * BeatsPerRow;
          ub_row_d      = UbW'(cmd_i.ub_addr);
          beat_in_row_d = '0;
        end else if (busy_q) begin
          if (beats_left_q == '0 || err_q || clear_i) busy_d = 1'b0;
          else state_d = WAddr;
        end
      end
      WAddr: if (aw_ready_i) begin
        state_d      = WData;
        burst_d      = burst_beats;
        sent_d       = '0;
        next_addr_d  = next_addr_q + 32'(burst_beats) * BeatBytes;
        beats_left_d = beats_left_q - 32'(burst_beats);
      end
      WData: if (w_ready_i) begin
        sent_d = sent_q + 1'b1;
        if (32'(beat_in_row_q) == BeatsPerRow - 1) begin
          beat_in_row_d = '0;
          ub_row_d      = ub_row_q + 1'b1;
        end else begin
          beat_in_row_d = beat_in_row_q + 1'b1;
        end
        if (w_last_o) state_d = WResp;
      end
      WResp: if (b_valid_i) begin
        state_d = WIdle;
        if (b_resp_i != 2'b00) err_d = 1'b1;
      end
      default: state_d = WIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= WIdle;
      busy_q  <= 1'b0;
      err_q   <= 1'b0;
    end else begin
      state_q <= state_d;
      busy_q  <= busy_d;
      err_q   <= err_d;
    end
  end

  // The transfer's position: no reset (used only while busy).
  always_ff @(posedge clk_i) begin
    next_addr_q   <= next_addr_d;
    beats_left_q  <= beats_left_d;
    burst_q       <= burst_d;
    sent_q        <= sent_d;
    ub_row_q      <= ub_row_d;
    beat_in_row_q <= beat_in_row_d;
  end

  // A legal write_host's UB rows are below UbRows (checked by the decoder): the high bits of
  // the UB address are zero.
  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.ub_addr >> UbW, cmd_i.vmem, cmd_i.bf16, cmd_i.stride};  // (the
  // write_vmem fields: tpu_vmem_dma_out cuts a write_vmem into plain transfers)

  `TPU_ASSERT_IMPLIES(DmaWrStartIdle, start, state_q == WIdle)
  `TPU_ASSERT_IMPLIES(DmaWrBurstLen, aw_valid_o, burst_beats != '0 && 32'(burst_beats) <= MaxBurst)
  `TPU_ASSERT_IMPLIES(DmaWrSentBound, state_q == WData, sent_q < burst_q)

endmodule

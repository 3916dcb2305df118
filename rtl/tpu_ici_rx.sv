// SPDX-License-Identifier: Apache-2.0
// Receive engine of one inter-chip link (issue 31, docs/isa.md "ici_recv"): one ici_recv at a
// time. Posts the receive on rx_want_o (its row count while it waits for the message's first
// beat, 0 otherwise: the rendezvous, which the link carries back to the sender) and raises
// rx_ready_o while it has rows to receive and room for the next beat. The first beat's header
// (rx_rows_i) must equal its rows, else the beat is consumed but not taken, nothing is written
// and the engine stops with size_err_o (ERR_ICI_SIZE; the sender has faulted on the same
// mismatch when it sent that beat). BPR = 32N / IciWidth beats make a row (beat k = bits
// [IciWidth*k +: IciWidth]); a complete row waits in wrow_o (wreq_o, its VMEM row on waddr_o)
// until rtl/tpu_ici.sv's shared writer takes it (wtake_i: copied, or read-added-written with
// the local row), and the engine is busy until the writer reports its last row written
// (wdone_i).
`include "tpu_assert.svh"

module tpu_ici_rx #(
  parameter int unsigned N        = 16,
  parameter int unsigned IciWidth = 128
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                clear_i,
  input  logic                start_i,    // take an ici_recv (only while idle)
  input  logic [15:0]         vmem_i,
  input  logic [23:0]         rows_i,
  input  logic [1:0]          reduce_i,
  output logic                busy_o,
  // In stream.
  input  logic                rx_valid_i,
  input  logic                rx_first_i,
  input  logic [23:0]         rx_rows_i,
  input  logic [IciWidth-1:0] rx_data_i,
  output logic                rx_ready_o,
  output logic [23:0]         rx_want_o,
  output logic                size_err_o,
  // To the shared writer.
  output logic                wreq_o,
  output logic [15:0]         waddr_o,
  output logic [1:0]          reduce_o,
  output logic [32*N-1:0]     wrow_o,
  input  logic                wtake_i,    // the writer took wrow_o
  input  logic                wdone_i     // one of this engine's rows was written
);
  localparam int unsigned Bpr = 32 * N / IciWidth;
  localparam int unsigned BW  = Bpr > 1 ? $clog2(Bpr) : 1;

  logic              busy_q, busy_d;
  logic [15:0]       vmem_q, vmem_d;
  logic [23:0]       rows_q, rows_d;
  logic [1:0]        reduce_q, reduce_d;
  logic [23:0]       rcv_left_q, rcv_left_d;  // rows still to receive
  logic [23:0]       wr_left_q, wr_left_d;    // rows not yet written
  logic [15:0]       wcnt_q, wcnt_d;          // rows handed to the writer
  logic [BW-1:0]     beat_q, beat_d;
  logic              first_q, first_d;
  logic [32*N-1:0]   asm_q, asm_d;            // the row being received
  logic              wfull_q, wfull_d;
  logic [32*N-1:0]   wrow_q, wrow_d;

  logic fire, mismatch, taken, last_beat;
  logic [32*N-1:0] row_in;
  assign last_beat  = 32'(beat_q) == Bpr - 1;
  assign busy_o     = busy_q;
  // Room for a row's last beat: the waiting row is free, or the writer takes it in this cycle.
  assign rx_ready_o = busy_q && rcv_left_q != '0 && (!last_beat || !wfull_q || wtake_i);
  assign rx_want_o  = (busy_q && first_q) ? rows_q : '0;
  assign fire       = rx_valid_i && rx_ready_o;
  assign mismatch   = fire && first_q && rx_rows_i != rows_q;
  assign taken      = fire && !mismatch;
  assign size_err_o = mismatch && !clear_i;
  assign wreq_o     = wfull_q;
  assign waddr_o    = vmem_q + wcnt_q;
  assign reduce_o   = reduce_q;
  assign wrow_o     = wrow_q;

  always_comb begin
    row_in = asm_q;
    row_in[IciWidth*32'(beat_q) +: IciWidth] = rx_data_i;
  end

  always_comb begin
    busy_d     = busy_q;
    vmem_d     = vmem_q;
    rows_d     = rows_q;
    reduce_d   = reduce_q;
    rcv_left_d = rcv_left_q;
    wr_left_d  = wr_left_q;
    wcnt_d     = wcnt_q;
    beat_d     = beat_q;
    first_d    = first_q;
    asm_d      = asm_q;
    wfull_d    = wfull_q;
    wrow_d     = wrow_q;
    if (clear_i) begin
      busy_d  = 1'b0;
      wfull_d = 1'b0;
    end else if (start_i) begin
      busy_d     = 1'b1;
      vmem_d     = vmem_i;
      rows_d     = rows_i;
      reduce_d   = reduce_i;
      rcv_left_d = rows_i;
      wr_left_d  = rows_i;
      wcnt_d     = '0;
      beat_d     = '0;
      first_d    = 1'b1;
      wfull_d    = 1'b0;
    end else if (busy_q) begin
      if (wtake_i) begin
        wfull_d = 1'b0;
        wcnt_d  = wcnt_q + 16'd1;
      end
      if (wdone_i) begin
        wr_left_d = wr_left_q - 24'd1;
        if (wr_left_q == 24'd1) busy_d = 1'b0;
      end
      if (mismatch) begin
        busy_d = 1'b0;
      end else if (taken) begin
        first_d = 1'b0;
        asm_d   = row_in;
        if (last_beat) begin
          beat_d     = '0;
          wrow_d     = row_in;
          wfull_d    = 1'b1;
          rcv_left_d = rcv_left_q - 24'd1;
        end else begin
          beat_d = beat_q + BW'(1);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q  <= 1'b0;
      wfull_q <= 1'b0;
    end else begin
      busy_q  <= busy_d;
      wfull_q <= wfull_d;
    end
  end
  // Data only, no reset: the receive's fields, counts and row being assembled, read only while
  // busy_q (the assembled row with wfull_q).
  always_ff @(posedge clk_i) begin
    vmem_q     <= vmem_d;
    rows_q     <= rows_d;
    reduce_q   <= reduce_d;
    rcv_left_q <= rcv_left_d;
    wr_left_q  <= wr_left_d;
    wcnt_q     <= wcnt_d;
    beat_q     <= beat_d;
    first_q    <= first_d;
    asm_q      <= asm_d;
    wrow_q     <= wrow_d;
  end

  `TPU_ASSERT_IMPLIES(IciRxStartIdle, start_i, !busy_q)
  `TPU_ASSERT_IMPLIES(IciRxStartRows, start_i, rows_i != '0 && reduce_i != 2'd3)
  // A message starts with its first beat, and no first beat comes inside one.
  `TPU_ASSERT_IMPLIES(IciRxFraming, fire, rx_first_i == first_q)
  `TPU_ASSERT_IMPLIES(IciRxTakeFull, wtake_i, wfull_q && busy_q)
  `TPU_ASSERT_IMPLIES(IciRxDoneBusy, wdone_i, busy_q && wr_left_q != '0)
  // Rows are written in order: never more written than handed over.
  `TPU_ASSERT_IMPLIES(IciRxCount, busy_q, 32'(wr_left_q) + 32'(wcnt_q) >= 32'(rows_q))

endmodule

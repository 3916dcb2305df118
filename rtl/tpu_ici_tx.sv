// SPDX-License-Identifier: Apache-2.0
// Send engine of one inter-chip link (issue 31, docs/isa.md "ici_send"): one ici_send at a
// time. Reads rows vmem .. vmem + rows - 1 through rtl/tpu_ici.sv's shared VMEM read client
// (rd_req_o / rd_addr_o, granted by rd_gnt_i in the same cycle; the row is on rd_data_i in the
// cycle after the grant) into a buffer of two rows (three at one beat per row), and streams
// each row on the link's out stream as BPR = 32N / IciWidth beats, beat k = bits
// [IciWidth*k +: IciWidth]. The first beat carries the message header on the side band
// (tx_first_o, tx_rows_o); if the posted receive's row count (tx_want_i) differs at its
// handshake, the engine stops with size_err_o (ERR_ICI_SIZE; the link still delivers that
// header beat, so the receiver faults too). The buffer keeps the stream going while the next
// row is read: one beat per cycle while the link is ready.
`include "tpu_assert.svh"

module tpu_ici_tx #(
  parameter int unsigned N        = 16,
  parameter int unsigned IciWidth = 128
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                clear_i,    // drop the instruction (a run stopping)
  input  logic                start_i,    // take an ici_send (only while idle)
  input  logic [15:0]         vmem_i,
  input  logic [23:0]         rows_i,
  output logic                busy_o,
  // Shared VMEM read client.
  output logic                rd_req_o,
  output logic [15:0]         rd_addr_o,
  input  logic                rd_gnt_i,
  input  logic [32*N-1:0]     rd_data_i,
  // Out stream.
  output logic                tx_valid_o,
  output logic                tx_first_o,
  output logic [23:0]         tx_rows_o,
  output logic [IciWidth-1:0] tx_data_o,
  input  logic                tx_ready_i,
  input  logic [23:0]         tx_want_i,
  output logic                size_err_o
);
  localparam int unsigned Bpr = 32 * N / IciWidth;        // beats per row
  localparam int unsigned BW  = Bpr > 1 ? $clog2(Bpr) : 1;
  // Rows buffered: two cover a VMEM read's round trip while a row takes >= 2 beats; one beat
  // per row needs a third.
  localparam int unsigned Depth = Bpr > 1 ? 2 : 3;

  logic              busy_q, busy_d;
  logic [15:0]       addr_q, addr_d;       // next row to read
  logic [23:0]       rd_left_q, rd_left_d; // rows still to read
  logic [23:0]       tx_left_q, tx_left_d; // rows still to send
  logic [23:0]       rows_q, rows_d;
  logic [BW-1:0]     beat_q, beat_d;
  logic              first_q, first_d;
  logic              pend_q, pend_d;       // a granted read's row arrives this cycle
  logic [1:0]        head_q, head_d;       // buffer slot of the row being sent
  logic [1:0]        cnt_q, cnt_d;         // rows in the buffer
  logic [32*N*Depth-1:0] buf_q, buf_d;     // slot s in [32Ns +: 32N]

  logic fire, mismatch, taken, last_beat;
  logic [1:0] slot_in, head_next;
  assign slot_in    = 2'((32'(head_q) + 32'(cnt_q)) % Depth);  // where an arriving row goes
  assign head_next  = 2'((32'(head_q) + 1) % Depth);
  assign busy_o     = busy_q;
  assign rd_req_o   = busy_q && rd_left_q != '0 && (32'(cnt_q) + 32'(pend_q)) < Depth && !clear_i;
  assign rd_addr_o  = addr_q;
  assign tx_valid_o = busy_q && cnt_q != '0;
  assign tx_first_o = first_q;
  assign tx_rows_o  = rows_q;
  assign tx_data_o  = buf_q[32*N*32'(head_q) + IciWidth*32'(beat_q) +: IciWidth];

  assign fire       = tx_valid_o && tx_ready_i;
  assign mismatch   = fire && first_q && tx_want_i != rows_q;
  assign taken      = fire && !mismatch;
  assign last_beat  = 32'(beat_q) == Bpr - 1;
  assign size_err_o = mismatch && !clear_i;

  always_comb begin
    busy_d    = busy_q;
    addr_d    = addr_q;
    rd_left_d = rd_left_q;
    tx_left_d = tx_left_q;
    rows_d    = rows_q;
    beat_d    = beat_q;
    first_d   = first_q;
    pend_d    = 1'b0;
    head_d    = head_q;
    cnt_d     = cnt_q;
    buf_d     = buf_q;
    if (clear_i) begin
      busy_d = 1'b0;
    end else if (start_i) begin
      busy_d    = 1'b1;
      addr_d    = vmem_i;
      rd_left_d = rows_i;
      tx_left_d = rows_i;
      rows_d    = rows_i;
      beat_d    = '0;
      first_d   = 1'b1;
      head_d    = '0;
      cnt_d     = '0;
    end else if (busy_q) begin
      if (rd_req_o && rd_gnt_i) begin
        pend_d    = 1'b1;
        addr_d    = addr_q + 16'd1;
        rd_left_d = rd_left_q - 24'd1;
      end
      if (pend_q) buf_d[32*N*32'(slot_in) +: 32*N] = rd_data_i;
      cnt_d = cnt_q + {1'b0, pend_q};
      if (mismatch) begin
        busy_d = 1'b0;
      end else if (taken) begin
        first_d = 1'b0;
        if (last_beat) begin
          beat_d    = '0;
          head_d    = head_next;
          cnt_d     = cnt_q + {1'b0, pend_q} - 2'd1;
          tx_left_d = tx_left_q - 24'd1;
          if (tx_left_q == 24'd1) busy_d = 1'b0;
        end else begin
          beat_d = beat_q + BW'(1);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      pend_q <= 1'b0;
    end else begin
      busy_q <= busy_d;
      pend_q <= pend_d;
    end
  end
  // Data only, no reset: the send's fields, counts and row buffer, read only while busy_q (the
  // buffer's rows as cnt_q and pend_q count them).
  always_ff @(posedge clk_i) begin
    addr_q    <= addr_d;
    rd_left_q <= rd_left_d;
    tx_left_q <= tx_left_d;
    rows_q    <= rows_d;
    beat_q    <= beat_d;
    first_q   <= first_d;
    head_q    <= head_d;
    cnt_q     <= cnt_d;
    buf_q     <= buf_d;
  end

  `TPU_ASSERT_INIT(IciTxWidth, IciWidth >= 32 && (IciWidth & (IciWidth - 1)) == 0 &&
                               IciWidth <= 32 * N)
  `TPU_ASSERT_IMPLIES(IciTxStartIdle, start_i, !busy_q)
  `TPU_ASSERT_IMPLIES(IciTxStartRows, start_i, rows_i != '0)
  `TPU_ASSERT(IciTxBuffer, 32'(cnt_q) + 32'(pend_q) <= Depth && 32'(head_q) < Depth)
  `TPU_ASSERT_IMPLIES(IciTxSentAll, busy_q, 32'(cnt_q) + 32'(pend_q) + 32'(rd_left_q) ==
                                            32'(tx_left_q))
  // Valid holds with its beat until taken (a clear drops it: the chip's run stopped).
  `TPU_ASSERT_HOLD_IF(IciTxHold, tx_valid_o && !clear_i, tx_ready_i,
                      {tx_first_o, tx_rows_o, tx_data_o}, !clear_i)

endmodule

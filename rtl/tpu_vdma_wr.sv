// SPDX-License-Identifier: Apache-2.0
// write_vmem over the VMEM port (docs/architecture.md "The VMEM port"): VMEM rows -> host memory
// through an AXI4 write master of one fp32 VMEM row (4N bytes) per beat.
//
// VMEM rows are read one per cycle through this unit's read client (first priority on its
// read port: never refused; the data arrives the cycle after), turned into host rows (4N bytes,
// or 2N with bf16: each lane rounded with tpu_fp_pkg::fp32_to_bf16) and appended to a FIFO of
// 8-byte granules four beats deep. tpu_vdma_walk cuts the transfer into beat-aligned bursts
// twice: for AW (up to MaxOut bursts whose response is still due) and for W, which sends a
// burst only after its AW was latched. Each W beat carries the transfer's bytes of that beat
// with their strobes (a row may start at any 16-byte boundary; the other bytes are not
// written), so a contiguous fp32 transfer moves one row per cycle at any alignment. A response
// with an error ends the transfer: no further AW, the W beats of the bursts already addressed
// are still sent, and err_o is set once every response arrived (busy_o low) until the next
// command. clear_i likewise stops it without an error.
`include "tpu_assert.svh"

module tpu_vdma_wr #(
  parameter int unsigned N        = 16,
  parameter int unsigned MaxBurst = 256,
  parameter int unsigned MaxOut   = 16   // bursts whose write response is due
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              clear_i,
  input  logic              cmd_valid_i,
  output logic              cmd_ready_o,
  input  logic [31:0]       cmd_addr_i,
  input  logic [23:0]       cmd_rows_i,
  input  logic [31:0]       cmd_stride_i,
  input  logic              cmd_bf16_i,
  input  logic [15:0]       cmd_vaddr_i,
  // VMEM read client.
  output logic              vm_re_o,
  output logic [15:0]       vm_raddr_o,
  input  logic              vm_rgnt_i,
  input  logic [32*N-1:0]   vm_rdata_i,
  // AXI4 write master (INCR, size = the beat, one ID).
  output logic [31:0]       aw_addr_o,
  output logic [7:0]        aw_len_o,
  output logic              aw_valid_o,
  input  logic              aw_ready_i,
  output logic [32*N-1:0]   w_data_o,
  output logic [4*N-1:0]    w_strb_o,
  output logic              w_last_o,
  output logic              w_valid_o,
  input  logic              w_ready_i,
  input  logic [1:0]        b_resp_i,
  input  logic              b_valid_i,
  output logic              b_ready_o,
  output logic              busy_o,
  output logic              active_o,   // an AW, W beat or response is pending
  output logic [31:0]       bytes_o,    // bytes written by this cycle's W beat (strobed)
  output logic              err_o       // with !busy_o: the last transfer failed
);
  localparam int unsigned Beat  = 4 * N;
  localparam int unsigned BeatG = N / 2;
  // Four beats: a row is read while the FIFO has room for it next to the row still arriving
  // (no look at this cycle's W beat), and a row starting inside a beat leaves up to a beat
  // less 16 bytes behind each W beat; three beats stall every other row then.
  localparam int unsigned CapG  = 4 * BeatG;
  localparam int unsigned CntW  = $clog2(CapG + 1);
  localparam int unsigned OutW  = $clog2(MaxOut + 1);

  logic             busy_q, busy_d, stop_q, stop_d, err_q, err_d, bf16_q, bf16_d;
  logic             aw_q, aw_d, rd_q, rd_d;
  logic [31:0]      aw_addr_q, aw_addr_d;
  logic [7:0]       aw_len_q, aw_len_d;
  logic [OutW-1:0]  bout_q, bout_d;     // bursts latched for AW whose response is due
  logic [OutW-1:0]  wq_q, wq_d;         // bursts latched for AW whose W beats are not all sent
  logic [8:0]       bidx_q, bidx_d;     // beat of the current W burst
  logic [23:0]      rd_left_q, rd_left_d;
  logic [15:0]      vaddr_q, vaddr_d;
  logic [64*CapG-1:0] fifo_q, fifo_d, fifo_s;  // CapG groups of 64 bits
  logic [CntW-1:0]  cnt_q, cnt_d, cnt_s;

  logic        start, a_valid, a_next, d_valid, d_next;
  logic [31:0] a_addr, a_lo, a_hi, d_addr, d_lo, d_hi;
  logic [8:0]  a_beats, d_beats;
  logic [CntW-1:0] row_g, need_g, lo_g;
  logic        w_fire, b_fire, burst_end;
  logic [31:0] lo_b, hi_b, src;
  logic [16*N-1:0] row_bf16;

  assign start       = cmd_valid_i && cmd_ready_o;
  assign cmd_ready_o = !busy_q;
  assign row_g       = bf16_q ? CntW'(N / 4) : CntW'(BeatG);

  tpu_vdma_walk #(.BeatBytes(Beat), .MaxBurst(MaxBurst)) u_walk_aw (
    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),
    .stride_i(cmd_stride_i), .row_bytes_i(cmd_bf16_i ? 32'(2 * N) : 32'(4 * N)),
    .next_i(a_next), .valid_o(a_valid), .addr_o(a_addr), .beats_o(a_beats), .lo_o(a_lo),
    .hi_o(a_hi)
  );
  tpu_vdma_walk #(.BeatBytes(Beat), .MaxBurst(MaxBurst)) u_walk_w (
    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),
    .stride_i(cmd_stride_i), .row_bytes_i(cmd_bf16_i ? 32'(2 * N) : 32'(4 * N)),
    .next_i(d_next), .valid_o(d_valid), .addr_o(d_addr), .beats_o(d_beats), .lo_o(d_lo),
    .hi_o(d_hi)
  );

  // AW: the next burst is latched while fewer than MaxOut responses are due.
  assign a_next     = busy_q && !aw_q && a_valid && !stop_q && !clear_i &&
                      32'(bout_q) < MaxOut;
  assign aw_valid_o = aw_q;
  assign aw_addr_o  = aw_addr_q;
  assign aw_len_o   = aw_len_q;

  // W: the bytes [lo_b, hi_b) of the beat, from the FIFO's head.
  assign burst_end = 32'(bidx_q) == 32'(d_beats) - 1;
  assign lo_b      = bidx_q == '0 ? d_lo : 32'd0;
  assign hi_b      = burst_end ? d_hi : 32'(Beat);
  assign lo_g      = CntW'(lo_b >> 3);
  assign need_g    = CntW'((hi_b - lo_b) >> 3);
  assign w_valid_o = busy_q && wq_q != '0 && cnt_q >= need_g;
  assign w_last_o  = burst_end;
  assign w_fire    = w_valid_o && w_ready_i;
  assign d_next    = w_fire && burst_end;
  always_comb begin
    w_data_o = '0;
    w_strb_o = '0;
    for (int q = 0; q < 32'(BeatG); q++) begin
      if (32'(q) >= 32'(lo_g) && 32'(q) < 32'(lo_g) + 32'(need_g)) begin
        w_data_o[64*q +: 64] = fifo_q[64*((32'(q) - 32'(lo_g)) % CapG) +: 64];
        w_strb_o[8*q +: 8]   = 8'hFF;
      end
    end
  end

  assign b_ready_o = busy_q && bout_q != '0;
  assign b_fire    = b_valid_i && b_ready_o;

  // VMEM: the next row is read while the FIFO has room for it and the row still arriving.
  assign vm_re_o    = busy_q && rd_left_q != '0 &&
                      32'(cnt_q) + (rd_q ? 32'(row_g) : 32'd0) + 32'(row_g) <= CapG;
  assign vm_raddr_o = vaddr_q;
  always_comb begin
    for (int l = 0; l < 32'(N); l++) begin
      row_bf16[16*l +: 16] = tpu_fp_pkg::fp32_to_bf16(vm_rdata_i[32*l +: 32]);
    end
  end

  always_comb begin
    src = '0;
    for (int p = 0; p < 32'(CapG); p++) begin
      fifo_s[64*(p) +: 64] = fifo_q[64*(p) +: 64];
      if (w_fire) begin
        fifo_s[64*(p) +: 64] = (32'(p) + 32'(need_g) < CapG) ? fifo_q[64*((32'(p) + 32'(need_g)) % CapG) +: 64] : 64'd0;
      end
    end
    cnt_s  = w_fire ? cnt_q - need_g : cnt_q;
    fifo_d = fifo_s;
    cnt_d  = cnt_s;
    if (rd_q) begin
      for (int p = 0; p < 32'(CapG); p++) begin
        src = 32'(p) - 32'(cnt_s);
        if (32'(p) >= 32'(cnt_s) && src < 32'(row_g)) begin
          fifo_d[64*(p) +: 64] = bf16_q ? row_bf16[64*(src % (N / 4)) +: 64]
                             : vm_rdata_i[64*(src % BeatG) +: 64];
        end
      end
      cnt_d = cnt_s + row_g;
    end
    if (start) cnt_d = '0;
  end

  always_comb begin
    busy_d    = busy_q;
    stop_d    = stop_q;
    err_d     = err_q;
    bf16_d    = bf16_q;
    aw_d      = aw_q;
    aw_addr_d = aw_addr_q;
    aw_len_d  = aw_len_q;
    bout_d    = bout_q;
    wq_d      = wq_q;
    bidx_d    = bidx_q;
    rd_d      = vm_re_o;
    rd_left_d = rd_left_q;
    vaddr_d   = vaddr_q;
    if (start) begin
      busy_d    = 1'b1;
      stop_d    = 1'b0;
      err_d     = 1'b0;
      bf16_d    = cmd_bf16_i;
      bidx_d    = '0;
      rd_left_d = cmd_rows_i;
      vaddr_d   = cmd_vaddr_i;
    end else if (busy_q) begin
      if (clear_i) stop_d = 1'b1;
      if (b_fire && b_resp_i != 2'b00) begin
        stop_d = 1'b1;
        err_d  = 1'b1;
      end
      if (a_next) begin
        aw_d      = 1'b1;
        aw_addr_d = a_addr;
        aw_len_d  = 8'(a_beats - 9'd1);
      end else if (aw_q && aw_ready_i) begin
        aw_d = 1'b0;
      end
      bout_d = bout_q + OutW'(a_next) - OutW'(b_fire);
      wq_d   = wq_q + OutW'(a_next) - OutW'(d_next);
      if (w_fire) bidx_d = burst_end ? 9'd0 : bidx_q + 9'd1;
      if (vm_re_o) begin
        rd_left_d = rd_left_q - 24'd1;
        vaddr_d   = vaddr_q + 16'd1;
      end
      // Done once nothing is pending and every burst went out (or the transfer stopped).
      if (!aw_q && !a_next && bout_d == '0 && wq_d == '0 && (stop_d || !a_valid)) busy_d = 1'b0;
    end
  end

  assign busy_o   = busy_q;
  assign active_o = aw_q || bout_q != '0;
  assign err_o    = err_q;
  assign bytes_o  = w_fire ? hi_b - lo_b : 32'd0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      stop_q <= 1'b0;
      err_q  <= 1'b0;
      aw_q   <= 1'b0;
      rd_q   <= 1'b0;
      bout_q <= '0;
      wq_q   <= '0;
      cnt_q  <= '0;
    end else begin
      busy_q <= busy_d;
      stop_q <= stop_d;
      err_q  <= err_d;
      aw_q   <= aw_d;
      rd_q   <= rd_d;
      bout_q <= bout_d;
      wq_q   <= wq_d;
      cnt_q  <= cnt_d;
    end
  end
  // Data only, no reset: the transfer's fields and position, read only while busy_q; the burst's
  // address and length only with aw_q, the FIFO's beats only as cnt_q and wq_q count them.
  always_ff @(posedge clk_i) begin
    bf16_q    <= bf16_d;
    aw_addr_q <= aw_addr_d;
    aw_len_q  <= aw_len_d;
    bidx_q    <= bidx_d;
    rd_left_q <= rd_left_d;
    vaddr_q   <= vaddr_d;
    fifo_q    <= fifo_d;
  end

  logic unused_walk;
  assign unused_walk = ^{a_lo, a_hi, d_addr, d_valid};

  // The VMEM read is never refused (first priority on its read port).
  `TPU_ASSERT_IMPLIES(VdmaWrReadGranted, vm_re_o, vm_rgnt_i)
  `TPU_ASSERT_HOLD(VdmaWrAwHold, aw_valid_o, aw_ready_i, {aw_addr_o, aw_len_o})
  `TPU_ASSERT_HOLD(VdmaWrWHold, w_valid_o, w_ready_i, {w_data_o, w_strb_o, w_last_o})
  // W beats only for addressed bursts, each within the walker's transfer.
  `TPU_ASSERT_IMPLIES(VdmaWrWOwed, w_valid_o, d_valid && wq_q != '0)
  `TPU_ASSERT_NEVER(VdmaWrOrphanB, b_valid_i && b_ready_o && bout_q == '0)
  `TPU_ASSERT_IMPLIES(VdmaWrFifo, rd_q, 32'(cnt_s) + 32'(row_g) <= CapG)
  `TPU_ASSERT_INIT(VdmaWrN, N >= 4 && N <= 256 && (N & (N - 1)) == 0)

endmodule

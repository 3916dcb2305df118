// SPDX-License-Identifier: Apache-2.0
// read_vmem over the VMEM port (docs/architecture.md "The VMEM port"): host memory -> VMEM rows
// through an AXI4 read master of one fp32 VMEM row (4N bytes) per beat.
//
// tpu_vdma_walk cuts the transfer into beat-aligned bursts (AR side); a second walker follows
// the R beats to know which bytes of each beat belong to the transfer (a row may start at any
// 16-byte boundary, strided rows are separate segments). Those bytes are appended to a FIFO of
// 8-byte granules two beats deep; whenever it holds a whole host row (4N bytes, or 2N with
// bf16: widened to fp32 with DAZ, tpu_fp_pkg::bf16_to_fp32) the row is written to VMEM (this
// unit's write client has the write port's first priority: never denied). So a contiguous
// fp32 transfer moves one row per cycle at any alignment, bf16 one row per cycle on half the
// beats. Up to MaxOut bursts are outstanding; RREADY is low only while the FIFO could not take
// a whole beat. The first beat answered with an error ends the transfer: err_o pulses, no
// further burst is requested, the beats still owed are drained and dropped (the rows of the
// failing burst are not written). clear_i likewise stops it without reporting. busy_o stays
// high until every requested beat has arrived.
`include "tpu_assert.svh"

module tpu_vdma_rd #(
  parameter int unsigned N        = 16,
  parameter int unsigned MaxBurst = 256,
  parameter int unsigned MaxOut   = 16   // bursts outstanding at once
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              clear_i,
  // Command: taken while idle (cmd_ready_o).
  input  logic              cmd_valid_i,
  output logic              cmd_ready_o,
  input  logic [31:0]       cmd_addr_i,
  input  logic [23:0]       cmd_rows_i,
  input  logic [31:0]       cmd_stride_i,
  input  logic              cmd_bf16_i,
  input  logic [15:0]       cmd_vaddr_i,
  // AXI4 read master (INCR, size = the beat, one ID).
  output logic [31:0]       ar_addr_o,
  output logic [7:0]        ar_len_o,
  output logic              ar_valid_o,
  input  logic              ar_ready_i,
  input  logic [32*N-1:0]   r_data_i,
  input  logic [1:0]        r_resp_i,
  input  logic              r_last_i,
  input  logic              r_valid_i,
  output logic              r_ready_o,
  // VMEM write client.
  output logic              vm_w_we_o,
  output logic [15:0]       vm_w_waddr_o,
  output logic [32*N-1:0]   vm_w_wdata_o,
  input  logic              vm_w_wgnt_i,
  output logic              busy_o,
  output logic              active_o,   // an AR is pending or a burst outstanding
  output logic [31:0]       bytes_o,    // bytes of the transfer in this cycle's beat
  output logic              err_o       // pulse: a beat of the running transfer failed
);
  localparam int unsigned Beat  = 4 * N;       // bytes per beat = one fp32 VMEM row
  localparam int unsigned BeatG = N / 2;       // 8-byte granules per beat
  localparam int unsigned CapG  = 2 * BeatG;   // FIFO depth in granules
  localparam int unsigned CntW  = $clog2(CapG + 1);
  localparam int unsigned OutW  = $clog2(MaxOut + 1);

  logic             busy_q, busy_d, stop_q, stop_d, bf16_q, bf16_d, err_pulse_q, err_pulse_d;
  logic             ar_q, ar_d;
  logic [31:0]      ar_addr_q, ar_addr_d;
  logic [7:0]       ar_len_q, ar_len_d;
  logic [OutW-1:0]  out_q, out_d;        // bursts latched for AR and not yet fully received
  logic [8:0]       bidx_q, bidx_d;      // beat of the oldest burst received next
  logic [23:0]      rows_left_q, rows_left_d;
  logic [15:0]      vaddr_q, vaddr_d;
  logic [64*CapG-1:0] fifo_q, fifo_d, fifo_s;  // CapG groups of 64 bits
  logic [CntW-1:0]  cnt_q, cnt_d, cnt_s;

  logic        start, a_valid, a_next, d_valid, d_next;
  logic [31:0] a_addr, a_lo, a_hi, d_addr, d_lo, d_hi;
  logic [8:0]  a_beats, d_beats;
  logic [CntW-1:0] row_g;     // granules per host row
  logic        pop, r_fire, beat_ok, beat_bad, burst_end;
  logic [31:0] lo_b, hi_b;    // bytes of this beat that belong to the transfer
  logic [31:0] src;           // the beat's granule for a FIFO position

  assign start   = cmd_valid_i && cmd_ready_o;
  assign row_g   = bf16_q ? CntW'(N / 4) : CntW'(BeatG);
  assign cmd_ready_o = !busy_q;

  tpu_vdma_walk #(.BeatBytes(Beat), .MaxBurst(MaxBurst)) u_walk_ar (
    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),
    .stride_i(cmd_stride_i), .row_bytes_i(cmd_bf16_i ? 32'(2 * N) : 32'(4 * N)),
    .next_i(a_next), .valid_o(a_valid), .addr_o(a_addr), .beats_o(a_beats), .lo_o(a_lo),
    .hi_o(a_hi)
  );
  tpu_vdma_walk #(.BeatBytes(Beat), .MaxBurst(MaxBurst)) u_walk_r (
    .clk_i, .rst_ni, .start_i(start), .addr_i(cmd_addr_i), .rows_i(cmd_rows_i),
    .stride_i(cmd_stride_i), .row_bytes_i(cmd_bf16_i ? 32'(2 * N) : 32'(4 * N)),
    .next_i(d_next), .valid_o(d_valid), .addr_o(d_addr), .beats_o(d_beats), .lo_o(d_lo),
    .hi_o(d_hi)
  );

  // AR: the next burst is latched while fewer than MaxOut are outstanding.
  assign a_next     = busy_q && !ar_q && a_valid && !stop_q && !clear_i &&
                      32'(out_q) < MaxOut;
  assign ar_valid_o = ar_q;
  assign ar_addr_o  = ar_addr_q;
  assign ar_len_o   = ar_len_q;

  // R: a whole row leaves the FIFO each cycle it holds one; a beat is taken when the FIFO can
  // hold it after this cycle's row (always while stopping: the beat is dropped).
  assign pop       = busy_q && !stop_q && cnt_q >= row_g;
  assign cnt_s     = pop ? cnt_q - row_g : cnt_q;
  assign r_ready_o = busy_q && out_q != '0 && (stop_q || 32'(cnt_s) + BeatG <= CapG);
  assign r_fire    = r_valid_i && r_ready_o;
  assign beat_ok   = r_fire && !stop_q && !clear_i && r_resp_i == 2'b00;
  assign beat_bad  = r_fire && !stop_q && !clear_i && r_resp_i != 2'b00;
  assign burst_end = r_fire && 32'(bidx_q) == 32'(d_beats) - 1;
  assign d_next    = burst_end;
  assign lo_b      = bidx_q == '0 ? d_lo : 32'd0;
  assign hi_b      = burst_end ? d_hi : 32'(Beat);

  always_comb begin
    src = '0;
    for (int p = 0; p < 32'(CapG); p++) begin
      fifo_s[64*(p) +: 64] = fifo_q[64*(p) +: 64];
      if (pop) begin
        if (bf16_q) fifo_s[64*(p) +: 64] = (p + N / 4 < CapG) ? fifo_q[64*((p + N / 4) % CapG) +: 64] : 64'd0;
        else        fifo_s[64*(p) +: 64] = (p + BeatG < CapG) ? fifo_q[64*((p + BeatG) % CapG) +: 64] : 64'd0;
      end
    end
    fifo_d = fifo_s;
    cnt_d  = cnt_s;
    if (beat_ok) begin
      // Granules [lo_b/8, hi_b/8) of the beat go to positions cnt_s on.
      for (int p = 0; p < 32'(CapG); p++) begin
        src = 32'(p) - 32'(cnt_s) + (lo_b >> 3);
        if (32'(p) >= 32'(cnt_s) && src < (hi_b >> 3)) fifo_d[64*(p) +: 64] = r_data_i[64*(src % BeatG) +: 64];
      end
      cnt_d = cnt_s + CntW'((hi_b - lo_b) >> 3);
    end
    if (stop_q || clear_i) cnt_d = '0;
  end

  always_comb begin
    busy_d      = busy_q;
    stop_d      = stop_q;
    bf16_d      = bf16_q;
    ar_d        = ar_q;
    ar_addr_d   = ar_addr_q;
    ar_len_d    = ar_len_q;
    out_d       = out_q;
    bidx_d      = bidx_q;
    rows_left_d = rows_left_q;
    vaddr_d     = vaddr_q;
    err_pulse_d = beat_bad;
    if (start) begin
      busy_d      = 1'b1;
      stop_d      = 1'b0;
      bf16_d      = cmd_bf16_i;
      bidx_d      = '0;
      rows_left_d = cmd_rows_i;
      vaddr_d     = cmd_vaddr_i;
    end else if (busy_q) begin
      if (beat_bad || clear_i) stop_d = 1'b1;
      if (a_next) begin
        ar_d      = 1'b1;
        ar_addr_d = a_addr;
        ar_len_d  = 8'(a_beats - 9'd1);
      end else if (ar_q && ar_ready_i) begin
        ar_d = 1'b0;
      end
      out_d = out_q + OutW'(a_next) - OutW'(burst_end);
      if (r_fire) bidx_d = burst_end ? 9'd0 : bidx_q + 9'd1;
      if (pop) begin
        rows_left_d = rows_left_q - 24'd1;
        vaddr_d     = vaddr_q + 16'd1;
      end
      // Done once every row is written, or (stopped) once nothing is owed on the bus.
      if ((pop && rows_left_q == 24'd1) || (stop_q && !ar_q && out_q == '0)) busy_d = 1'b0;
    end
  end

  // The row leaving the FIFO: fp32 as it is, bf16 widened.
  always_comb begin
    vm_w_wdata_o = fifo_q[64*BeatG-1:0];
    if (bf16_q) begin
      for (int l = 0; l < 32'(N); l++) begin
        vm_w_wdata_o[32*l +: 32] = tpu_fp_pkg::bf16_to_fp32(fifo_q[64*(l / 4) + 16*(l % 4) +: 16]);
      end
    end
  end
  assign vm_w_we_o    = pop;
  assign vm_w_waddr_o = vaddr_q;
  assign busy_o       = busy_q;
  assign active_o     = ar_q || out_q != '0;
  assign err_o        = err_pulse_q;
  assign bytes_o      = beat_ok ? hi_b - lo_b : 32'd0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q      <= 1'b0;
      stop_q      <= 1'b0;
      ar_q        <= 1'b0;
      out_q       <= '0;
      cnt_q       <= '0;
      err_pulse_q <= 1'b0;
    end else begin
      busy_q      <= busy_d;
      stop_q      <= stop_d;
      ar_q        <= ar_d;
      out_q       <= out_d;
      cnt_q       <= cnt_d;
      err_pulse_q <= err_pulse_d;
    end
  end
  // Data only, no reset: the transfer's fields and position, read only while busy_q; the burst's
  // address and length only with ar_q, the FIFO's granules only as cnt_q counts them.
  always_ff @(posedge clk_i) begin
    bf16_q      <= bf16_d;
    ar_addr_q   <= ar_addr_d;
    ar_len_q    <= ar_len_d;
    bidx_q      <= bidx_d;
    rows_left_q <= rows_left_d;
    vaddr_q     <= vaddr_d;
    fifo_q      <= fifo_d;
  end

  logic unused_walk;
  assign unused_walk = ^{a_lo, a_hi, d_addr, d_valid};

  // The VMEM write is never denied (first priority on the write port).
  `TPU_ASSERT_IMPLIES(VdmaRdWriteGranted, vm_w_we_o, vm_w_wgnt_i)
  `TPU_ASSERT_HOLD(VdmaRdArHold, ar_valid_o, ar_ready_i, {ar_addr_o, ar_len_o})
  // Every beat belongs to a requested burst, and RLAST marks the walker's last beat.
  `TPU_ASSERT_NEVER(VdmaRdOrphanBeat, r_fire && (out_q == '0 || !d_valid))
  `TPU_ASSERT_IMPLIES(VdmaRdLast, r_fire && !stop_q, r_last_i == burst_end)
  `TPU_ASSERT_IMPLIES(VdmaRdFifo, beat_ok, 32'(cnt_s) + ((hi_b - lo_b) >> 3) <= CapG)
  `TPU_ASSERT_IMPLIES(VdmaRdOut, busy_q, 32'(out_q) <= MaxOut)
  `TPU_ASSERT_INIT(VdmaRdN, N >= 4 && N <= 256 && (N & (N - 1)) == 0)

endmodule

// SPDX-License-Identifier: Apache-2.0
// Controller: instruction queue, decoder with the static checks of docs/isa.md, hazard
// scoreboard and in-order issue to the concurrent units.
//
// An instruction leaves the queue when its unit can take it and it conflicts with no
// instruction still in flight in another unit (bounding UB / ACC / host ranges, see
// tpu_pkg::footprints_conflict). Matmuls are tracked until their last row has been written
// to the accumulators; matmuls do not wait for each other because the MXU pipeline keeps
// their accumulator writes in order. A fault found at decode stops issue; units already
// running finish, then the run ends with the error latched.
//
// Trace side band (observation only, like Ibex's RVFI; docs/architecture.md "Trace port"):
// trace_issue_o pulses in the cycle an instruction leaves the queue for its unit, with
// trace_unit_o and trace_pc_o (its index in the program). trace_done_o[u] pulses in the first
// cycle in which the oldest unfinished instruction of unit u is finished (each unit finishes
// its instructions in issue order):
//   read_host, activate, write_host: the unit reports idle again (busy falls; for read_host
//     and activate the cycle after their last row was written, for write_host the second
//     cycle after its last write response);
//   read_weights: the cycle after its last row entered the weight FIFO (two may be in flight);
//   matmul: the cycle after its last row was written to the accumulators (several in flight).
// nop and sync (unit TraceControl) take no time and have no done pulse. After an AXI error
// or a soft reset the done pulses of abandoned instructions may be missing.
`include "tpu_assert.svh"

module tpu_ctrl #(
  parameter int unsigned N          = 16,
  parameter int unsigned UbRows     = 8192,
  parameter int unsigned AccRows    = 2048,
  parameter int unsigned WFifoTiles = 4,
  parameter int unsigned QpSlots    = 16,
  parameter int unsigned Windows    = 8,
  parameter int unsigned IqDepth    = 8,
  parameter int unsigned MmDepth    = 4
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // From the registers.
  input  logic         start_i,
  input  logic         soft_reset_i,
  input  logic [31:0]  cmd_addr_i,
  input  logic [31:0]  cmd_count_i,
  input  logic [32*Windows-1:0] win_base_i,  // window i in [32i +: 32]
  input  logic [32*Windows-1:0] win_size_i,
  output logic         busy_o,
  output logic         done_o,
  output logic         error_o,
  output logic [3:0]   err_code_o,
  output logic [31:0]  err_pc_o,
  output logic [31:0]  pc_o,
  output logic         clear_o,        // START or soft reset: units drop their state
  // Instruction fetch (a tpu_dma_reader with 16-byte rows).
  output logic         fetch_start_o,
  output logic [31:0]  fetch_addr_o,
  output logic [23:0]  fetch_rows_o,
  output logic [23:0]  fetch_space_o,
  output logic         fetch_stop_o,
  input  logic         fetch_busy_i,
  input  logic         fetch_active_i,
  input  logic         fetch_valid_i,
  input  logic [127:0] fetch_instr_i,
  input  logic         fetch_err_i,
  // Unit issue: one start pulse per unit, all units see the same instruction word.
  output logic [127:0] instr_o,
  output logic         dmain_start_o,
  input  logic         dmain_busy_i,
  input  logic         dmain_err_i,    // pulse: the running read_host failed
  output logic         wdma_start_o,
  input  logic         wdma_busy_i,
  input  logic         wdma_accept_i,  // can take the next read_weights (may overlap)
  input  logic         wdma_err_i,
  input  logic         wdma_err_prev_i, // ... and it belongs to the overlapped earlier one
  input  logic         wdma_row_i,     // a weight row entered the FIFO (trace only)
  output logic         mxu_start_o,
  input  logic         mxu_ready_i,
  input  logic         mxu_retire_i,   // last row of the oldest matmul reached the ACC
  input  logic         mxu_starved_i,  // the feeder waits for a tile that can no longer come
  output logic         mxu_abort_o,    // drop that matmul (only once an error is latched)
  output logic         act_start_o,
  input  logic         act_ready_i,
  input  logic         act_busy_i,
  output logic         dmaout_start_o,
  input  logic         dmaout_busy_i,
  input  logic         dmaout_err_i,   // with !dmaout_busy_i: the write_host failed
  input  logic         dma_active_i,   // any DMA burst outstanding (drain before stopping)
  output logic         input_stall_o,
  output logic         retire_o,
  // Trace side band (see above).
  output logic         trace_issue_o,
  output logic [2:0]   trace_unit_o,
  output logic [31:0]  trace_pc_o,
  output logic [4:0]   trace_done_o
);

  localparam int unsigned LutRows = 256 / N;
  localparam int unsigned MmW     = $clog2(MmDepth + 1);
  localparam int unsigned IqW     = $clog2(IqDepth);

  // trace_unit_o values; also the bit of trace_done_o of units 0-4.
  localparam logic [2:0] TraceReadHost    = 3'd0;
  localparam logic [2:0] TraceReadWeights = 3'd1;
  localparam logic [2:0] TraceMatmul      = 3'd2;
  localparam logic [2:0] TraceActivate    = 3'd3;
  localparam logic [2:0] TraceWriteHost   = 3'd4;
  localparam logic [2:0] TraceControl     = 3'd5;  // nop, sync

  // ---------------- run state ----------------
  logic        run_q;        // between START and done/error
  logic        flush_q;      // soft reset: waiting for outstanding bursts and the MXU
  logic [15:0] flush_cnt_q;
  logic        stop_q;       // an error is latched; waiting for units to finish
  logic        fetch_stop_q; // halt reached: stop prefetching
  logic [3:0]  err_code_q;
  logic [31:0] err_pc_q;
  logic [31:0] pc_q;         // index of the instruction at the queue head
  logic [31:0] credit_q;     // weight tiles pushed by issued read_weights, not yet switched to
  logic        switched_q;   // some matmul made a tile active in this run
  logic [63:0] cmd_lo_q, cmd_hi_q;  // the command buffer's bytes [lo, hi), latched at START

  // ---------------- instruction queue ----------------
  logic [127:0] iq_q     [IqDepth];
  logic [3:0]   iq_err_q [IqDepth];  // static check result, or ErrAxiRead for a failed fetch
  tpu_pkg::footprint_t   iq_fp_q  [IqDepth];
  logic [IqW-1:0] iq_rd_q, iq_wr_q;
  logic [IqW:0]   iq_cnt_q;
  logic           pop;
  logic [127:0]   head;
  logic           head_valid;

  assign head       = iq_q[iq_rd_q];
  assign head_valid = (iq_cnt_q != '0);

  // ---------------- decode ----------------
  logic [7:0]  op;
  logic [3:0]  static_err;
  tpu_pkg::footprint_t  fp;

  // Unsigned widening helpers for range arithmetic (all in 64 bits, no wrap).
  function automatic logic [63:0] u64(logic [31:0] v);
    u64 = {32'd0, v};
  endfunction

  // True when [lo, lo + len) lies hit an enabled window, or no window is enabled.
  function automatic logic in_windows(logic [63:0] lo, logic [63:0] len);
    logic any_on, hit;
    any_on = 1'b0;
    hit = 1'b0;
    for (int i = 0; i < 32'(Windows); i++) begin
      if (win_size_i[32*i +: 32] != '0) begin
        any_on = 1'b1;
        if (lo >= u64(win_base_i[32*i +: 32]) &&
            lo + len <= u64(win_base_i[32*i +: 32]) + u64(win_size_i[32*i +: 32])) begin
          hit = 1'b1;
        end
      end
    end
    in_windows = !any_on || hit;
  endfunction

  // x / d for the pooling output size (x <= 4095 + 7 + 7 - 1 = 4108: the padded span, 1 <= d <=
  // 15) without a divider: a multiply by m = ceil(2^16 / d) and a shift, exact for every such x
  // (not for every 13-bit x; checked exhaustively by
  // tests/driver/isa_test.cpp PoolingDivisionByReciprocalIsExact, same table; docs/isa.md).
  function automatic logic [12:0] div_stride(logic [12:0] x, logic [3:0] d);
    logic [16:0] m;
    unique case (d)
      4'd1:    m = 17'd65536;
      4'd2:    m = 17'd32768;
      4'd3:    m = 17'd21846;
      4'd4:    m = 17'd16384;
      4'd5:    m = 17'd13108;
      4'd6:    m = 17'd10923;
      4'd7:    m = 17'd9363;
      4'd8:    m = 17'd8192;
      4'd9:    m = 17'd7282;
      4'd10:   m = 17'd6554;
      4'd11:   m = 17'd5958;
      4'd12:   m = 17'd5462;
      4'd13:   m = 17'd5042;
      4'd14:   m = 17'd4682;
      4'd15:   m = 17'd4370;
      default: m = 17'd0;  // d = 0 is ERR_FIELD before this is used
    endcase
    div_stride = 13'((30'(x) * 30'(m)) >> 16);
  endfunction

  // What the controller needs to know about an instruction, worked out once when it enters the
  // queue (the checks below are wide arithmetic: doing them once per instruction instead of
  // every cycle matters for simulation speed). Only the weight-tile checks depend on the
  // state at issue time and stay at the head of the queue.
  tpu_pkg::decoded_t dec;
  always_comb begin : decode
    logic [127:0] instr;
    logic [7:0]  opc;
    logic [63:0] rows, host, bytes, last_ub, last_acc, inner, outer, h, w, pk, ps, ho, wo, hp, wp;
    logic [2:0]  pad_t, pad_l, pad_b, pad_r;
    logic [63:0] local_last;
    logic [1:0]  dest;
    logic        reserved_bad, field_bad, ub_bad, acc_bad, prm_bad, align_bad, host_bad;

    instr  = fetch_instr_i;
    opc    = instr[7:0];
    dec    = '0;
    reserved_bad = 1'b0;
    field_bad    = 1'b0;
    ub_bad       = 1'b0;
    acc_bad      = 1'b0;
    prm_bad      = 1'b0;
    align_bad    = 1'b0;
    host_bad     = 1'b0;
    dest         = instr[9:8];
    rows  = u64({8'd0, instr[63:40]});
    host  = u64(instr[95:64]);
    bytes = '0;
    last_ub = '0; last_acc = '0; inner = '0; outer = '0; h = '0; w = '0; pk = '0; ps = '0;
    ho = '0; wo = '0; hp = '0; wp = '0; local_last = '0;
    {pad_r, pad_b, pad_l, pad_t} = instr[127:116];

    unique case (opc)
      tpu_pkg::OpNop, tpu_pkg::OpSync, tpu_pkg::OpHalt: reserved_bad = (instr[127:8] != '0);
      tpu_pkg::OpReadHost, tpu_pkg::OpWriteHost: begin
        reserved_bad = (opc == tpu_pkg::OpReadHost) ? (instr[15:10] != '0 || instr[127:96] != '0)
                                          : (instr[15:8] != '0 || instr[127:96] != '0);
        if (opc == tpu_pkg::OpWriteHost) dest = tpu_pkg::DestUb;
        field_bad  = (rows == '0) || (dest == 2'd3);
        local_last = u64({8'd0, instr[39:16]}) + rows - 1;
        if (dest == tpu_pkg::DestUb) ub_bad = local_last >= 64'(UbRows);
        else if (dest == tpu_pkg::DestParam) prm_bad = local_last >= 64'(QpSlots * tpu_pkg::SlotRows);
        else prm_bad = local_last >= 64'(LutRows);
        bytes = rows * N;
        if (opc == tpu_pkg::OpReadHost) begin
          if (dest == tpu_pkg::DestUb) dec.fp.ub_wr = tpu_pkg::make_range(33'(instr[39:16]), 33'(local_last));
          else                dec.fp.param_wr = 1'b1;
          dec.fp.host_rd = tpu_pkg::make_range(33'(host), 33'(host + bytes - 1));
        end else begin
          dec.fp.ub_rd   = tpu_pkg::make_range(33'(instr[39:16]), 33'(local_last));
          dec.fp.host_wr = tpu_pkg::make_range(33'(host), 33'(host + bytes - 1));
        end
      end
      tpu_pkg::OpReadWeights: begin
        reserved_bad = instr[39:8] != '0 || instr[127:96] != '0;
        field_bad    = (rows == '0);
        bytes        = rows * N * N;
        dec.fp.host_rd   = tpu_pkg::make_range(33'(host), 33'(host + bytes - 1));
      end
      tpu_pkg::OpMatmul: begin
        reserved_bad = instr[15:12] != '0 || instr[127:112] != '0;
        inner   = u64({20'd0, instr[67:56]});
        outer   = u64({20'd0, instr[79:68]});
        field_bad = (inner == '0) || (outer == '0);
        last_ub  = u64({8'd0, instr[39:16]}) + (outer - 1) * u64({8'd0, instr[111:88]}) +
                   (inner - 1) * u64({24'd0, instr[87:80]});
        last_acc = u64({16'd0, instr[55:40]}) + inner * outer - 1;
        ub_bad   = last_ub >= 64'(UbRows);
        acc_bad  = last_acc >= 64'(AccRows);
        dec.fp.ub_rd  = tpu_pkg::make_range(33'(instr[39:16]), 33'(last_ub));
        dec.fp.acc_wr = tpu_pkg::make_range(33'(instr[55:40]), 33'(last_acc));
        if (instr[8]) dec.fp.acc_rd = dec.fp.acc_wr;
      end
      tpu_pkg::OpActivate: begin
        reserved_bad = instr[15:11] != '0;
        w  = u64({20'd0, instr[67:56]});
        h  = u64({20'd0, instr[79:68]});
        pk = u64({28'd0, instr[83:80]});
        ps = u64({28'd0, instr[87:84]});
        // The max-pool padding: each pad below the window; the window inside the padded image.
        hp = h + u64(32'(pad_t)) + u64(32'(pad_b));
        wp = w + u64(32'(pad_l)) + u64(32'(pad_r));
        field_bad = (w == '0) || (h == '0) || (pk == '0) || (ps == '0) ||
                    (u64(32'(pad_t)) >= pk) || (u64(32'(pad_l)) >= pk) ||
                    (u64(32'(pad_b)) >= pk) || (u64(32'(pad_r)) >= pk) ||
                    (pk > wp) || (pk > hp);
        if (!field_bad) begin
          ho = u64({19'd0, div_stride(13'(hp - pk), 4'(ps))}) + 1;
          wo = u64({19'd0, div_stride(13'(wp - pk), 4'(ps))}) + 1;
        end
        last_ub  = u64({8'd0, instr[55:32]}) + (ho - 1) * u64({8'd0, instr[111:88]}) + wo - 1;
        last_acc = u64({16'd0, instr[31:16]}) + h * w - 1;
        ub_bad   = last_ub >= 64'(UbRows);
        acc_bad  = last_acc >= 64'(AccRows);
        prm_bad  = u64({28'd0, instr[115:112]}) >= 64'(QpSlots);
        dec.fp.acc_rd   = tpu_pkg::make_range(33'(instr[31:16]), 33'(last_acc));
        dec.fp.ub_wr    = tpu_pkg::make_range(33'(instr[55:32]), 33'(last_ub));
        dec.fp.param_rd = 1'b1;
      end
      default: ;
    endcase

    if (opc == tpu_pkg::OpReadHost || opc == tpu_pkg::OpWriteHost || opc == tpu_pkg::OpReadWeights) begin
      align_bad = host[3:0] != '0;
      host_bad  = (host + bytes > 64'h1_0000_0000) || !in_windows(host, bytes);
      // A write_host may not write into its own command buffer (docs/isa.md): the chip
      // prefetches instructions, so whether such a write would change a fetched instruction
      // would depend on timing.
      if (opc == tpu_pkg::OpWriteHost && host < cmd_hi_q && cmd_lo_q < host + bytes) begin
        host_bad = 1'b1;
      end
    end

    // The first failing check in code order wins.
    dec.err = tpu_pkg::ErrNone;
    if (opc > tpu_pkg::OpHalt)       dec.err = tpu_pkg::ErrOpcode;
    else if (reserved_bad) dec.err = tpu_pkg::ErrReserved;
    else if (field_bad)    dec.err = tpu_pkg::ErrField;
    else if (ub_bad)       dec.err = tpu_pkg::ErrUbRange;
    else if (acc_bad)      dec.err = tpu_pkg::ErrAccRange;
    else if (prm_bad)      dec.err = tpu_pkg::ErrParamRange;
    else if (align_bad)    dec.err = tpu_pkg::ErrAlign;
    else if (host_bad)     dec.err = tpu_pkg::ErrHostRange;
  end

  // The head of the queue: its decoded form and the checks that depend on earlier issues.
  always_comb begin
    op = head[7:0];
    fp = iq_fp_q[iq_rd_q];
    static_err = iq_err_q[iq_rd_q];
    if (static_err == tpu_pkg::ErrNone) begin
      if (op == tpu_pkg::OpReadWeights && 64'(credit_q) + {40'd0, head[63:40]} > 64'(WFifoTiles) + 64'd2)
        static_err = tpu_pkg::ErrWeightOverflow;
      else if (op == tpu_pkg::OpMatmul && (head[11] ? (credit_q == '0) : !switched_q))
        static_err = tpu_pkg::ErrNoWeights;
    end
  end

  // ---------------- in-flight footprints ----------------
  tpu_pkg::footprint_t fp_dmain_q, fp_wdma_q, fp_wdma_prev_q, fp_act_q, fp_dmaout_q;
  tpu_pkg::footprint_t mm_fp_q [MmDepth];
  logic [MmW-1:0] mm_cnt_q;
  logic [$clog2(MmDepth)-1:0] mm_rd_q, mm_wr_q;
  logic [31:0] pc_dmain_q, pc_wdma_q, pc_wdma_prev_q, pc_dmaout_q;
  logic dmaout_was_busy_q;

  logic all_idle, unit_ready, issue, can_decide;
  logic hazard;
  always_comb begin
    hazard = 1'b0;
    // Only worth working out for an instruction that could otherwise issue now (the compares
    // are wide; skipping them while the head waits for its unit speeds up simulation).
    if (can_decide && unit_ready) begin
      if (dmain_busy_i  && tpu_pkg::footprints_conflict(fp, fp_dmain_q))  hazard = 1'b1;
      if (wdma_busy_i   && tpu_pkg::footprints_conflict(fp, fp_wdma_q))   hazard = 1'b1;
      if (wdma_busy_i   && tpu_pkg::footprints_conflict(fp, fp_wdma_prev_q)) hazard = 1'b1;
      if (act_busy_i    && tpu_pkg::footprints_conflict(fp, fp_act_q))    hazard = 1'b1;
      if (dmaout_busy_i && tpu_pkg::footprints_conflict(fp, fp_dmaout_q)) hazard = 1'b1;
      // Matmuls never wait for matmuls: the MXU pipeline keeps their ACC writes in order.
      if (op != tpu_pkg::OpMatmul) begin
        for (int i = 0; i < 32'(MmDepth); i++) begin
          if (MmW'(i) < mm_cnt_q &&
              tpu_pkg::footprints_conflict(fp, mm_fp_q[($clog2(MmDepth))'((32'(mm_rd_q) + i) % MmDepth)])) begin
            hazard = 1'b1;
          end
        end
      end
    end
  end

  assign all_idle = !dmain_busy_i && !wdma_busy_i && !act_busy_i && !dmaout_busy_i &&
                    mxu_ready_i && (mm_cnt_q == '0) && !dma_active_i;

  always_comb begin
    unique case (op)
      tpu_pkg::OpReadHost:    unit_ready = !dmain_busy_i;
      tpu_pkg::OpReadWeights: unit_ready = wdma_accept_i;
      tpu_pkg::OpMatmul:      unit_ready = mxu_ready_i && (mm_cnt_q != MmW'(MmDepth));
      tpu_pkg::OpActivate:    unit_ready = act_ready_i;
      tpu_pkg::OpWriteHost:   unit_ready = !dmaout_busy_i;
      tpu_pkg::OpSync:        unit_ready = all_idle;
      default:       unit_ready = 1'b1;
    endcase
  end

  assign can_decide = run_q && !stop_q && !fetch_stop_q && head_valid;
  assign issue      = can_decide && static_err == tpu_pkg::ErrNone && op != tpu_pkg::OpHalt &&
                      unit_ready && !hazard;
  assign pop        = issue;

  assign instr_o        = head;
  assign dmain_start_o  = issue && op == tpu_pkg::OpReadHost;
  assign wdma_start_o   = issue && op == tpu_pkg::OpReadWeights;
  assign mxu_start_o    = issue && op == tpu_pkg::OpMatmul;
  assign act_start_o    = issue && op == tpu_pkg::OpActivate;
  assign dmaout_start_o = issue && op == tpu_pkg::OpWriteHost;
  assign input_stall_o  = can_decide && op == tpu_pkg::OpMatmul && unit_ready && hazard;
  // After a read_weights failed (AXI error), a matmul issued with `switch` may wait for a tile
  // that will never be complete. Once the run is stopping, drop it, or the run never ends.
  assign mxu_abort_o    = stop_q && mxu_starved_i;

  assign busy_o       = run_q || flush_q;
  assign err_code_o   = err_code_q;
  assign err_pc_o     = err_pc_q;
  assign pc_o         = pc_q;
  assign clear_o      = start_i || soft_reset_i || flush_q;

  // Fetch.
  assign fetch_addr_o  = cmd_addr_i;
  assign fetch_rows_o  = 24'(cmd_count_i);
  assign fetch_space_o = 24'(IqDepth) - 24'(iq_cnt_q);
  assign fetch_stop_o  = stop_q || fetch_stop_q || soft_reset_i || !run_q;

  // ---------------- trace side band ----------------
  logic        tr_dmain_busy_q, tr_act_busy_q;  // write_host: dmaout_was_busy_q
  logic        tr_mm_done_q, tr_wdma_done_q, tr_wdma_done_d;
  // Rows still to arrive of the read_weights in flight: [0] the older, [1] the newer.
  // An issued read_weights brings at most WFifoTiles + 2 tiles (more is ERR_WEIGHT_OVERFLOW).
  localparam int unsigned TrRowsW = $clog2((WFifoTiles + 2) * N + 1);
  logic [TrRowsW-1:0] tr_wrows0_q, tr_wrows1_q, tr_wrows0_d, tr_wrows1_d;
  logic [1:0]  tr_wcnt_q, tr_wcnt_d;

  always_comb begin
    unique case (op)
      tpu_pkg::OpReadHost:    trace_unit_o = TraceReadHost;
      tpu_pkg::OpReadWeights: trace_unit_o = TraceReadWeights;
      tpu_pkg::OpMatmul:      trace_unit_o = TraceMatmul;
      tpu_pkg::OpActivate:    trace_unit_o = TraceActivate;
      tpu_pkg::OpWriteHost:   trace_unit_o = TraceWriteHost;
      default:       trace_unit_o = TraceControl;
    endcase
  end
  assign trace_issue_o = issue;
  assign trace_pc_o    = pc_q;

  // Weight rows arrive in order: a row belongs to the older read_weights in flight. The weight
  // DMA takes a third read_weights only once all beats of the oldest have arrived, so its last
  // row is pushed in that cycle at the latest (counted first below): two entries suffice.
  always_comb begin
    tr_wrows0_d    = tr_wrows0_q;
    tr_wrows1_d    = tr_wrows1_q;
    tr_wcnt_d      = tr_wcnt_q;
    tr_wdma_done_d = 1'b0;
    if (wdma_row_i && tr_wcnt_d != '0) begin
      tr_wrows0_d = tr_wrows0_d - 1'b1;
      if (tr_wrows0_d == '0) begin
        tr_wdma_done_d = 1'b1;
        tr_wrows0_d = tr_wrows1_d;
        tr_wcnt_d     = tr_wcnt_d - 1'b1;
      end
    end
    if (wdma_start_o) begin
      if (tr_wcnt_d == '0) tr_wrows0_d = TrRowsW'(head[63:40]) * TrRowsW'(N);
      else                 tr_wrows1_d = TrRowsW'(head[63:40]) * TrRowsW'(N);
      if (tr_wcnt_d != 2'd2) tr_wcnt_d = tr_wcnt_d + 1'b1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      tr_dmain_busy_q  <= 1'b0;
      tr_act_busy_q    <= 1'b0;
      tr_mm_done_q     <= 1'b0;
      tr_wdma_done_q   <= 1'b0;
      tr_wrows0_q      <= '0;
      tr_wrows1_q      <= '0;
      tr_wcnt_q        <= '0;
    end else begin
      tr_dmain_busy_q  <= dmain_busy_i;
      tr_act_busy_q    <= act_busy_i;
      tr_mm_done_q     <= mxu_retire_i && mm_cnt_q != '0;
      tr_wdma_done_q   <= tr_wdma_done_d && !clear_o;
      tr_wrows0_q      <= tr_wrows0_d;
      tr_wrows1_q      <= tr_wrows1_d;
      tr_wcnt_q        <= clear_o ? '0 : tr_wcnt_d;
    end
  end

  assign trace_done_o[TraceReadHost]    = tr_dmain_busy_q && !dmain_busy_i;
  assign trace_done_o[TraceReadWeights] = tr_wdma_done_q;
  assign trace_done_o[TraceMatmul]      = tr_mm_done_q;
  assign trace_done_o[TraceActivate]    = tr_act_busy_q && !act_busy_i;
  assign trace_done_o[TraceWriteHost]   = dmaout_was_busy_q && !dmaout_busy_i;

  // ---------------- sequential ----------------
  logic [3:0]  new_err;
  logic [31:0] new_err_pc;
  logic        unit_err;
  assign unit_err = dmain_err_i || wdma_err_i || (dmaout_was_busy_q && !dmaout_busy_i && dmaout_err_i);
  always_comb begin
    new_err    = tpu_pkg::ErrNone;
    new_err_pc = '0;
    // Unit errors first: they belong to instructions older than the head.
    if (dmain_err_i) begin
      new_err = tpu_pkg::ErrAxiRead; new_err_pc = pc_dmain_q;
    end else if (wdma_err_i) begin
      new_err = tpu_pkg::ErrAxiRead; new_err_pc = wdma_err_prev_i ? pc_wdma_prev_q : pc_wdma_q;
    end else if (dmaout_was_busy_q && !dmaout_busy_i && dmaout_err_i) begin
      new_err = tpu_pkg::ErrAxiWrite; new_err_pc = pc_dmaout_q;
    end else if (can_decide && static_err != tpu_pkg::ErrNone) begin
      new_err = static_err; new_err_pc = pc_q;
    end else if (run_q && !stop_q && !fetch_stop_q && !head_valid && !fetch_busy_i &&
                 !fetch_start_o) begin
      new_err = tpu_pkg::ErrCmdOverrun; new_err_pc = pc_q;
    end
  end

  // The run ends once everything issued has finished; a unit error reported in this very
  // cycle is latched first and ends the run in the next cycle instead.
  logic finish;
  assign finish   = run_q && (stop_q || fetch_stop_q) && all_idle && !fetch_active_i &&
                    !fetch_busy_i && (stop_q || new_err == tpu_pkg::ErrNone);
  // Retired: every issued instruction, and the halt when the run ends on it.
  assign retire_o = issue || (finish && !stop_q);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      run_q        <= 1'b0;
      flush_q      <= 1'b0;
      flush_cnt_q  <= '0;
      stop_q       <= 1'b0;
      fetch_stop_q <= 1'b0;
      err_code_q   <= '0;
      err_pc_q     <= '0;
      pc_q         <= '0;
      credit_q     <= '0;
      switched_q   <= 1'b0;
      cmd_lo_q     <= '0;
      cmd_hi_q     <= '0;
      iq_rd_q      <= '0;
      iq_wr_q      <= '0;
      iq_cnt_q     <= '0;
      mm_cnt_q     <= '0;
      mm_rd_q      <= '0;
      mm_wr_q      <= '0;
      done_o       <= 1'b0;
      error_o      <= 1'b0;
      fetch_start_o <= 1'b0;
      dmaout_was_busy_q <= 1'b0;
    end else begin
      done_o        <= 1'b0;
      error_o       <= 1'b0;
      fetch_start_o <= 1'b0;
      dmaout_was_busy_q <= dmaout_busy_i;

      if (flush_q) begin
        // Bursts already on the bus complete (and are dropped); rows in the MXU land.
        if (flush_cnt_q != '0) flush_cnt_q <= flush_cnt_q - 1'b1;
        else if (!dma_active_i && !fetch_active_i) flush_q <= 1'b0;
      end
      if (soft_reset_i) begin
        flush_q      <= 1'b1;
        flush_cnt_q  <= 16'(4 * N);
        run_q        <= 1'b0;
        stop_q       <= 1'b0;
        fetch_stop_q <= 1'b0;
        iq_rd_q      <= '0;
        iq_wr_q      <= '0;
        iq_cnt_q     <= '0;
        mm_cnt_q     <= '0;
        mm_rd_q      <= '0;
        mm_wr_q      <= '0;
        err_code_q   <= '0;
        err_pc_q     <= '0;
      end else if (start_i && !run_q && !flush_q) begin
        pc_q         <= '0;
        credit_q     <= '0;
        switched_q   <= 1'b0;
        cmd_lo_q     <= u64(cmd_addr_i);
        cmd_hi_q     <= u64(cmd_addr_i) + u64(cmd_count_i) * 16;
        iq_rd_q      <= '0;
        iq_wr_q      <= '0;
        iq_cnt_q     <= '0;
        mm_cnt_q     <= '0;
        mm_rd_q      <= '0;
        mm_wr_q      <= '0;
        err_code_q   <= '0;
        err_pc_q     <= '0;
        fetch_stop_q <= 1'b0;
        // The command buffer must lie inside the DMA windows and the 32-bit space.
        if (in_windows(u64(cmd_addr_i), u64(cmd_count_i) * 16) &&
            (u64(cmd_addr_i) + u64(cmd_count_i) * 16 <= 64'h1_0000_0000)) begin
          run_q         <= 1'b1;
          stop_q        <= 1'b0;
          fetch_start_o <= 1'b1;
        end else begin
          // The command buffer itself is outside the DMA windows: nothing is fetched.
          error_o    <= 1'b1;
          err_code_q <= tpu_pkg::ErrHostRange;
          err_pc_q   <= '0;
        end
      end else if (run_q) begin
        // Instruction queue.
        if (fetch_valid_i && !stop_q) begin
          iq_q[iq_wr_q]     <= fetch_instr_i;
          iq_err_q[iq_wr_q] <= fetch_err_i ? tpu_pkg::ErrAxiRead : dec.err;
          iq_fp_q[iq_wr_q]  <= dec.fp;
          iq_wr_q       <= IqW'((32'(iq_wr_q) + 1) % IqDepth);
        end
        if (pop) iq_rd_q <= IqW'((32'(iq_rd_q) + 1) % IqDepth);
        iq_cnt_q <= iq_cnt_q + (IqW+1)'(fetch_valid_i && !stop_q) - (IqW+1)'(pop);

        // Matmul tracking.
        if (mxu_start_o) begin
          mm_fp_q[mm_wr_q] <= fp;
          mm_wr_q <= ($clog2(MmDepth))'((32'(mm_wr_q) + 1) % MmDepth);
        end
        if (mxu_retire_i && mm_cnt_q != '0) begin
          mm_rd_q <= ($clog2(MmDepth))'((32'(mm_rd_q) + 1) % MmDepth);
        end
        // A matmul dropped by mxu_abort_o never retires: forget it (it is the newest one;
        // nothing is issued once an error is latched).
        mm_cnt_q <= mm_cnt_q + MmW'(mxu_start_o) - MmW'(mxu_retire_i && mm_cnt_q != '0)
                    - MmW'(mxu_abort_o);

        // Other units.
        if (dmain_start_o)  begin fp_dmain_q  <= fp; pc_dmain_q  <= pc_q; end
        if (wdma_start_o) begin
          // The previous read_weights may still be receiving (overlapped): keep its footprint
          // (only while the weight DMA is busy) and its index for error reports.
          fp_wdma_prev_q <= wdma_busy_i ? fp_wdma_q : '0;
          pc_wdma_prev_q <= pc_wdma_q;
          fp_wdma_q      <= fp;
          pc_wdma_q      <= pc_q;
        end
        if (act_start_o)    fp_act_q <= fp;
        if (dmaout_start_o) begin fp_dmaout_q <= fp; pc_dmaout_q <= pc_q; end

        // Weight tile accounting (see the static checks).
        if (wdma_start_o) credit_q <= credit_q + 32'(head[63:40]);
        if (mxu_start_o && head[11]) begin
          credit_q   <= credit_q - 1'b1;
          switched_q <= 1'b1;
        end

        if (issue) pc_q <= pc_q + 1'b1;

        // Errors: stop issuing, let issued work finish. An AXI error of an instruction issued
        // earlier can arrive after a later instruction's fault was latched: the fault that
        // comes first in program order is the one reported.
        if ((!stop_q && new_err != tpu_pkg::ErrNone) || (stop_q && unit_err && new_err_pc < err_pc_q)) begin
          stop_q     <= 1'b1;
          err_code_q <= new_err;
          err_pc_q   <= new_err_pc;
        end
        // Halt: stop prefetching, wait for everything, done.
        if (can_decide && static_err == tpu_pkg::ErrNone && op == tpu_pkg::OpHalt &&
            new_err == tpu_pkg::ErrNone) begin
          fetch_stop_q <= 1'b1;
        end
        if (finish) begin
          run_q <= 1'b0;
          if (stop_q) error_o <= 1'b1;
          else        done_o  <= 1'b1;
        end
      end
    end
  end


  // ---------------- assertions ----------------
  // A unit is given an instruction only when it can take it, one unit per cycle.
  `TPU_ASSERT_IMPLIES(CtrlDmaInReady, dmain_start_o, !dmain_busy_i)
  `TPU_ASSERT_IMPLIES(CtrlWdmaReady, wdma_start_o, wdma_accept_i)
  `TPU_ASSERT_IMPLIES(CtrlMxuReady, mxu_start_o, mxu_ready_i && mm_cnt_q != MmW'(MmDepth))
  `TPU_ASSERT_IMPLIES(CtrlActReady, act_start_o, act_ready_i)
  `TPU_ASSERT_IMPLIES(CtrlDmaOutReady, dmaout_start_o, !dmaout_busy_i)
  `TPU_ASSERT(CtrlOneIssue, $onehot0({dmain_start_o, wdma_start_o, mxu_start_o, act_start_o,
                                       dmaout_start_o}))
  // Counter bounds: the instruction queue and the in-flight matmul table never overflow.
  `TPU_ASSERT(CtrlIqBound, 32'(iq_cnt_q) <= IqDepth)
  `TPU_ASSERT_NEVER(CtrlIqOverflow, run_q && fetch_valid_i && !stop_q && 32'(iq_cnt_q) == IqDepth)
  `TPU_ASSERT(CtrlMmBound, 32'(mm_cnt_q) <= MmDepth)
  `TPU_ASSERT_NEVER(CtrlMmOverflow, mxu_start_o && !mxu_retire_i && 32'(mm_cnt_q) == MmDepth)
  `TPU_ASSERT_NEVER(CtrlMmUnderflow, mxu_retire_i && mm_cnt_q == '0 && run_q && !flush_q)
  `TPU_ASSERT(CtrlWeightCredit, credit_q <= 32'(WFifoTiles) + 2)
  // Run states: a flush is not a run; nothing is issued outside a run or after an error.
  `TPU_ASSERT_NEVER(CtrlRunAndFlush, run_q && flush_q)
  `TPU_ASSERT_IMPLIES(CtrlIssueInRun, issue, run_q && !stop_q && !fetch_stop_q)
  `TPU_ASSERT_NEVER(CtrlDoneAndError, done_o && error_o)

endmodule

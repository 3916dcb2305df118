// SPDX-License-Identifier: Apache-2.0
// Controller: instruction queue, hazard scoreboard and in-order issue to the concurrent units.
//
// Every fetched instruction goes through the decoder (tpu_decoder: unit, unit command, static
// checks of docs/isa.md, footprint) once, into the instruction queue (a tpu_fifo of
// tpu_pkg::decoded_t). The head of the queue is offered to its unit as a typed command over a
// valid/ready handshake (<unit>_cmd_valid_o / _cmd_ready_i / _cmd_o, the same for every unit):
// valid once no fault and no hazard holds it back, issued in the cycle the unit is ready.
// Valid stays up and the command stable until the unit takes it, unless the run stops (an
// error or a soft reset).
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
//   matmul: the cycle after its last row was written to the accumulators (several in flight);
//   load_weights (training chip): the cycle after its last row entered the weight FIFO (two
//   may be in flight: one draining its last tile, the next one reading VMEM);
//   move (acc_to_vmem, transpose), vector (training chip): the unit reports idle again (one
//   instruction at a time each).
// nop and sync (unit UnitControl) take no time and have no done pulse. After an AXI error
// or a soft reset the done pulses of abandoned instructions may be missing.
//
// Pod configuration (IciLinks > 0): ici_send / ici_recv go to the link unit (rtl/tpu_ici.sv)
// when the addressed engine is idle (ici_cmd_ready_i); each engine's VMEM rows (a send reads
// them, a receive writes them) take part in the hazards like a unit in flight, `sync` and
// `halt` wait for the engines, the unit's errors (ERR_ICI_SIZE / ERR_ICI_DEADLOCK, with the
// instruction's index) join the oldest-first choice of the AXI errors, and once the run stops
// the unit is cleared (a faulting chip abandons its link instructions, docs/isa.md). Link
// instructions have no trace_done_o bit (trace_unit_o is UnitIci at their issue).
`include "tpu_assert.svh"

module tpu_ctrl #(
  parameter int unsigned N          = 16,
  parameter int unsigned UbRows     = 8192,
  parameter int unsigned AccRows    = 2048,
  parameter int unsigned WFifoTiles = 4,
  parameter int unsigned QpSlots    = 16,
  parameter int unsigned VmemRows   = 0,   // 0: the int8 chip (no move unit)
  parameter int unsigned IciLinks   = 0,   // 0: no link unit (the pod configuration's links)
  parameter int unsigned DwWidth    = 0,   // 0: no depthwise unit (dwconv faults ERR_OPCODE)
  parameter int unsigned WeightAlign = 16,  // read_weights' host_addr alignment (tpu_decoder)
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
  input  logic [32*tpu_pkg::DmaWindows-1:0] win_base_i,  // window i in [32i +: 32]
  input  logic [32*tpu_pkg::DmaWindows-1:0] win_size_i,
  output logic         busy_o,
  output logic         done_o,
  output logic         error_o,
  output logic [4:0]   err_code_o,
  output logic [31:0]  err_pc_o,
  output logic [31:0]  pc_o,
  output logic         clear_o,        // START or soft reset: units drop their state
  // Instruction fetch (a tpu_dma_reader with 16-byte rows): the command buffer, at START.
  output logic                  fetch_cmd_valid_o,
  input  logic                  fetch_cmd_ready_i,
  output tpu_pkg::dma_rd_cmd_t  fetch_cmd_o,
  output logic [23:0]  fetch_space_o,
  output logic         fetch_stop_o,
  input  logic         fetch_busy_i,
  input  logic         fetch_active_i,
  input  logic         fetch_valid_i,
  input  tpu_pkg::instr_t fetch_instr_i,
  input  logic         fetch_err_i,
  // read_host: DMA in.
  output logic                  dmain_cmd_valid_o,
  input  logic                  dmain_cmd_ready_i,
  output tpu_pkg::dma_in_cmd_t  dmain_cmd_o,
  input  logic         dmain_busy_i,
  input  logic         dmain_err_i,    // pulse: the running read_host failed
  // read_weights: weight DMA (may overlap the previous one).
  output logic                  wdma_cmd_valid_o,
  input  logic                  wdma_cmd_ready_i,
  output tpu_pkg::wdma_cmd_t    wdma_cmd_o,
  input  logic         wdma_busy_i,
  input  logic         wdma_err_i,
  input  logic         wdma_err_prev_i, // ... and it belongs to the overlapped earlier one
  input  logic         wdma_row_i,     // a weight row entered the FIFO (trace only)
  // matmul: the MXU feeder.
  output logic                  mm_cmd_valid_o,
  input  logic                  mm_cmd_ready_i,
  output tpu_pkg::mm_cmd_t      mm_cmd_o,
  output logic                  mm_cmd_bf16_o,  // it is a matmul_bf16 (training chip)
  input  logic         mxu_retire_i,   // last row of the oldest matmul reached the ACC
  input  logic         mxu_starved_i,  // the feeder waits for a tile that can no longer come
  output logic         mxu_abort_o,    // drop that matmul (only once an error is latched)
  // activate: the activation unit.
  output logic                  act_cmd_valid_o,
  input  logic                  act_cmd_ready_i,
  output tpu_pkg::act_cmd_t     act_cmd_o,
  input  logic         act_busy_i,
  // write_host: DMA out.
  output logic                  dmaout_cmd_valid_o,
  input  logic                  dmaout_cmd_ready_i,
  output tpu_pkg::dma_wr_cmd_t  dmaout_cmd_o,
  input  logic         dmaout_busy_i,
  input  logic         dmaout_err_i,   // with !dmaout_busy_i: the write_host failed
  // acc_to_vmem, transpose: the VMEM move unit (training chip; tied off when VmemRows = 0).
  // It reads the accumulators through the activation unit's port: the two never run together.
  output logic                  move_cmd_valid_o,
  input  logic                  move_cmd_ready_i,
  output tpu_pkg::move_cmd_t    move_cmd_o,
  input  logic         move_busy_i,
  // vector: the vector unit (training chip; tied off when VmemRows = 0).
  output logic                  vec_cmd_valid_o,
  input  logic                  vec_cmd_ready_i,
  output tpu_vpu_pkg::vpu_cmd_t vec_cmd_o,
  input  logic         vec_busy_i,
  // load_weights: VMEM -> bf16 weight tiles (training chip; tied off when VmemRows = 0). The
  // next one is offered while the previous one drains its last tile (the unit takes it once the
  // previous one's VMEM reads are all issued: lw_cmd_ready_i); never while the weight DMA still
  // pushes rows, nor a read_weights while a load_weights runs.
  output logic                  lw_cmd_valid_o,
  input  logic                  lw_cmd_ready_i,
  output tpu_fp_pkg::lw_cmd_t   lw_cmd_o,
  input  logic         lw_busy_i,
  input  logic         lw_done_i,     // a load_weights' last row enters the weight FIFO
  // dwconv: the depthwise unit (depthwise configuration; tied off when DwWidth = 0). One at a
  // time: offered only while the unit is idle.
  output logic                  dw_cmd_valid_o,
  input  logic                  dw_cmd_ready_i,
  output tpu_pkg::instr_dwconv_t dw_cmd_o,
  input  logic         dw_busy_i,
  // ici_send, ici_recv: the link unit (pod configuration; tied off when IciLinks = 0).
  input  logic [15:0]           ici_link_up_i,   // bit l: link l is connected
  output logic                  ici_cmd_valid_o,
  input  logic                  ici_cmd_ready_i,
  output tpu_ici_pkg::ici_cmd_t ici_cmd_o,
  output logic [31:0]           ici_cmd_pc_o,    // the instruction's index
  input  logic [(IciLinks > 0 ? IciLinks : 1)-1:0] ici_tx_busy_i,
  input  logic [(IciLinks > 0 ? IciLinks : 1)-1:0] ici_rx_busy_i,
  input  logic                  ici_err_i,       // a link instruction faulted
  input  logic [4:0]            ici_err_code_i,
  input  logic [31:0]           ici_err_pc_i,
  output logic                  ici_clear_o,     // drop every link instruction
  output logic                  ici_wait_o,      // only link engines busy, nothing issues
  input  logic         dma_active_i,   // any DMA burst outstanding (drain before stopping)
  output logic         input_stall_o,
  output logic         retire_o,
  // Trace side band (see above).
  output logic         trace_issue_o,
  output logic [3:0]   trace_unit_o,
  output logic [31:0]  trace_pc_o,
  output logic [8:0]   trace_done_o
);

  localparam int unsigned MmW     = $clog2(MmDepth + 1);
  localparam int unsigned FpW     = tpu_pkg::FpW;
  localparam int unsigned DecW    = tpu_pkg::DecW;
  localparam int unsigned CmdW    = tpu_pkg::CmdW;
  // The training chip. The int8 chip keeps no training payload: its instruction queue and
  // matmul table store a decoded_t without the VMEM ranges of the footprint and without the
  // command bits only `vector` uses (above the widest int8 command), and no training unit is
  // ever offered a command (the decoder never names one there).
  localparam bit          Train   = VmemRows != 0;
  localparam int unsigned VmW     = 2 * tpu_pkg::RangeW;           // fp.vmem_rd, fp.vmem_wr
  localparam int unsigned IqFpW   = Train ? FpW : FpW - VmW;       // a footprint as stored
  // The depthwise configuration: a dwconv command is all of CmdW (instruction bits 127:8).
  localparam bit          Dw      = DwWidth != 0;
  localparam int unsigned IqCmdW  = (Train || Dw) ? CmdW : tpu_pkg::ActCmdW;  // as stored
  // The pod configuration. Without links no error code above 15 arises: 4 bits are stored.
  localparam bit          Ici     = IciLinks != 0;
  localparam int unsigned IL      = Ici ? IciLinks : 1;
  localparam int unsigned ErrW    = tpu_pkg::ErrW;
  localparam int unsigned IqErrW  = Ici ? ErrW : ErrW - 1;
  localparam int unsigned FpHiW   = FpW - VmW - 2;                 // fp above the VMEM ranges
  localparam int unsigned IqW     = 6 + IqErrW + IqFpW + IqCmdW;

  // ---------------- run state ----------------
  logic        run_q, run_d;            // between START and done/error
  logic        flush_q, flush_d;        // soft reset: waiting for outstanding bursts and the MXU
  logic [15:0] flush_cnt_q, flush_cnt_d;
  logic        stop_q, stop_d;          // an error is latched; waiting for units to finish
  logic        fetch_stop_q, fetch_stop_d;  // halt reached: stop prefetching
  logic [IqErrW-1:0] err_code_q, err_code_d;  // (4 bits without links: codes <= 15)
  logic [31:0] err_pc_q, err_pc_d;
  logic [31:0] pc_q, pc_d;              // index of the instruction at the queue head
  logic [31:0] credit_q, credit_d;      // weight tiles pushed by issued read_weights, not yet
                                        // switched to
  logic        switched_q, switched_d;  // some matmul made a tile active in this run
  logic [63:0] cmd_lo_q, cmd_lo_d, cmd_hi_q, cmd_hi_d;  // the command buffer's bytes [lo, hi)
  logic        done_q, done_d, error_q, error_d;
  logic        fetch_start_q, fetch_start_d;
  logic        dmaout_was_busy_q, dmaout_was_busy_d;
  logic        start_go;   // START accepted this cycle (a new run, or its immediate error)
  logic        cmd_buf_ok; // the command buffer lies inside the DMA windows and 2^32

  assign start_go   = start_i && !run_q && !flush_q && !soft_reset_i;
  assign cmd_buf_ok = tpu_pkg::in_windows({32'd0, cmd_addr_i}, {32'd0, cmd_count_i} * 16,
                                          win_base_i, win_size_i) &&
                      ({32'd0, cmd_addr_i} + {32'd0, cmd_count_i} * 16 <= 64'h1_0000_0000);

  // ---------------- decode + instruction queue ----------------
  tpu_pkg::decoded_t dec, iq_in, head;
  logic              iq_flush, iq_push, iq_pop, iq_full, iq_empty;
  logic [$clog2(IqDepth+1)-1:0] iq_usage;
  logic [IqDepth*IqW-1:0]       unused_iq_slots;
  logic [IqDepth-1:0]           unused_iq_slot_valid;
  logic                         head_valid;

  tpu_decoder #(.N(N), .UbRows(UbRows), .AccRows(AccRows), .QpSlots(QpSlots),
                .VmemRows(VmemRows), .IciLinks(IciLinks), .DwWidth(DwWidth),
                .WeightAlign(WeightAlign)) u_decoder (
    .valid_i(fetch_valid_i), .instr_i(fetch_instr_i), .win_base_i, .win_size_i, .cmd_lo_i(cmd_lo_q),
    .cmd_hi_i(cmd_hi_q), .ici_link_up_i, .dec_o(dec)
  );

  always_comb begin
    iq_in = dec;
    if (fetch_err_i) iq_in.err = tpu_pkg::ErrAxiRead;  // the fetch of this word failed
  end
  assign iq_flush = soft_reset_i || start_go;
  assign iq_push  = run_q && fetch_valid_i && !stop_q;

  logic [IqW-1:0] iq_in_w, head_w;
  tpu_fifo #(.Width(IqW), .Depth(IqDepth)) u_iq (
    .clk_i, .rst_ni, .flush_i(iq_flush), .full_o(iq_full), .empty_o(iq_empty),
    .usage_o(iq_usage), .push_i(iq_push), .data_i(iq_in_w), .pop_i(iq_pop), .data_o(head_w),
    .slots_o(unused_iq_slots), .slot_valid_o(unused_iq_slot_valid)
  );
  // decoded_t as bits: {unit, is_sync, is_halt, err, fp, cmd}; fp ends {vmem_rd, vmem_wr,
  // param_rd, param_wr}. The int8 chip stores it without the VMEM ranges and the top of cmd
  // (zero there), a chip without links without the top bit of err (zero there).
  logic [DecW-1:0]     in_bits;
  logic [5:0]          in_ush, head_ush;
  logic [ErrW-1:0]     in_err;
  logic [IqErrW-1:0]   head_err_w;
  logic [FpHiW-1:0]    in_fph, head_fph;
  logic [VmW-1:0]      in_vm, head_vm;
  logic [1:0]          in_prm, head_prm;
  logic [CmdW-1:0]     in_cmd;
  logic [IqCmdW-1:0]   head_cmd;
  logic                unused_iq_in;
  assign in_bits = iq_in;
  assign {in_ush, in_err, in_fph, in_vm, in_prm, in_cmd} = in_bits;
  if (Train) begin : g_iq_train
    assign iq_in_w = {in_ush, in_err[IqErrW-1:0], in_fph, in_vm, in_prm, in_cmd[IqCmdW-1:0]};
    assign {head_ush, head_err_w, head_fph, head_vm, head_prm, head_cmd} = head_w;
  end else begin : g_iq_int8
    assign iq_in_w = {in_ush, in_err[IqErrW-1:0], in_fph, in_prm, in_cmd[IqCmdW-1:0]};
    assign {head_ush, head_err_w, head_fph, head_prm, head_cmd} = head_w;
    assign head_vm = '0;
  end
  assign head = {head_ush, ErrW'(head_err_w), head_fph, head_vm, head_prm, CmdW'(head_cmd)};
  assign unused_iq_in = ^{in_err, in_vm, in_cmd};
  assign head_valid = !iq_empty;

  // The checks of the head that depend on the instructions issued before it.
  tpu_pkg::err_e head_err;
  tpu_fp_pkg::lw_cmd_t lw_head;
  logic weight_type_err;   // training chip: the matmul at the head would use a tile of the
                           // other type (tpu_weight_types, below)
  assign lw_head = head.cmd.lw.cmd;
  always_comb begin
    head_err = head.err;
    if (head_err == tpu_pkg::ErrNone) begin
      if (head.unit == tpu_pkg::UnitReadWeights &&
          64'(credit_q) + {40'd0, head.cmd.wdma.cmd.tiles} > 64'(WFifoTiles) + 64'd2) begin
        head_err = tpu_pkg::ErrWeightOverflow;
      end else if (Train && head.unit == tpu_pkg::UnitLoadWeights &&
                   64'(credit_q) + 64'(lw_head.tiles) > 64'(WFifoTiles) + 64'd2) begin
        head_err = tpu_pkg::ErrWeightOverflow;
      end else if (head.unit == tpu_pkg::UnitMatmul &&
                   (head.cmd.mm.cmd.switch_tile ? (credit_q == '0) : !switched_q)) begin
        head_err = tpu_pkg::ErrNoWeights;
      end else if (head.unit == tpu_pkg::UnitMatmul && weight_type_err) begin
        head_err = tpu_pkg::ErrWeightType;
      end
    end
  end

  // ERR_WEIGHT_TYPE (training chip): the types of the waiting tiles in program order.
  if (VmemRows != 0) begin : g_types
    tpu_weight_types #(.WFifoTiles(WFifoTiles)) u_types (
      .clk_i, .rst_ni, .clear_i(iq_flush),
      .push_i(run_q && (wdma_fire || lw_fire)), .push_bf16_i(lw_fire),
      .push_tiles_i(lw_fire ? 24'(lw_head.tiles) : head.cmd.wdma.cmd.tiles),
      .pop_i(run_q && mm_fire && head.cmd.mm.cmd.switch_tile),
      .mm_bf16_i(head.cmd.mm.bf16), .mm_switch_i(head.cmd.mm.cmd.switch_tile),
      .type_err_o(weight_type_err)
    );
  end else begin : g_no_types
    assign weight_type_err = 1'b0;
  end

  // ---------------- in-flight footprints ----------------
  tpu_pkg::footprint_t fp_dmain_q, fp_dmain_d, fp_wdma_q, fp_wdma_d;
  tpu_pkg::footprint_t fp_wdma_prev_q, fp_wdma_prev_d, fp_act_q, fp_act_d;
  tpu_pkg::footprint_t fp_dmaout_q, fp_dmaout_d, fp_move_q, fp_move_d, fp_vec_q, fp_vec_d;
  tpu_pkg::footprint_t fp_lw_q, fp_lw_d, fp_dw_q, fp_dw_d;
  logic [31:0] pc_dmain_q, pc_dmain_d, pc_wdma_q, pc_wdma_d, pc_wdma_prev_q, pc_wdma_prev_d;
  logic [31:0] pc_dmaout_q, pc_dmaout_d;

  // Matmuls in flight (issued, last row not yet in the ACC), oldest first. A matmul dropped by
  // mxu_abort_o (only after an error, when nothing issues any more) never retires: it stays in
  // the table, counted out by mm_aborted_q, until the next START.
  logic                  mm_flush, mm_push, mm_pop, mm_full, mm_empty;
  logic [MmW-1:0]        mm_usage, mm_cnt;
  logic [IqFpW-1:0]      mm_in, unused_mm_head;
  logic [MmDepth*IqFpW-1:0] mm_slots_w;
  logic [MmDepth*FpW-1:0] mm_slots;
  logic [MmDepth-1:0]    mm_slot_valid;
  logic                  mm_aborted_q, mm_aborted_d;

  tpu_fifo #(.Width(IqFpW), .Depth(MmDepth), .Peek(1'b1)) u_mm_table (
    .clk_i, .rst_ni, .flush_i(mm_flush), .full_o(mm_full), .empty_o(mm_empty),
    .usage_o(mm_usage), .push_i(mm_push), .data_i(mm_in), .pop_i(mm_pop),
    .data_o(unused_mm_head), .slots_o(mm_slots_w), .slot_valid_o(mm_slot_valid)
  );
  // The int8 chip's footprints are stored without their (zero) VMEM ranges, as in the queue.
  if (Train) begin : g_mm_train
    assign mm_in    = head.fp;
    assign mm_slots = mm_slots_w;
  end else begin : g_mm_int8
    logic [FpW-1:0] head_fp;
    logic [VmW-1:0] unused_vm;
    assign head_fp   = head.fp;
    assign mm_in     = {head_fp[FpW-1:VmW+2], head_fp[1:0]};
    assign unused_vm = head_fp[VmW+1:2];
    for (genvar i = 0; i < MmDepth; i++) begin : g_slot
      assign mm_slots[FpW*i +: FpW] = {mm_slots_w[IqFpW*i+2 +: IqFpW-2], {VmW{1'b0}},
                                       mm_slots_w[IqFpW*i +: 2]};
    end
  end
  assign mm_cnt = mm_usage - MmW'(mm_aborted_q);

  // ---------------- issue ----------------
  logic can_decide, head_go, unit_ready, issue, all_idle, hazard;
  logic dmain_fire, wdma_fire, mm_fire, act_fire, dmaout_fire, move_fire, vec_fire, lw_fire;
  logic dw_fire;
  logic ici_fire, ici_busy, ici_hazard, ici_err;

  assign can_decide = run_q && !stop_q && !fetch_stop_q && head_valid;

  // The head conflicts with an instruction still in flight in another unit. The conflicts
  // with each footprint in flight are worked out in the first cycle an instruction is at the
  // head (head_new_q) and kept while it waits (conf_*_q): neither the head nor a footprint in
  // flight changes before the head issues or the queue is flushed, and a slot of the matmul
  // table is only rewritten by an issue. (Wide compares once per instruction instead of every
  // cycle: simulation speed. Whether the unit in flight is still busy is applied every cycle.)
  logic               head_new_q, head_new_d;
  logic [8:0]         conf_unit_q, conf_unit_d;  // dmain, wdma, wdma_prev, act, dmaout, move,
                                                 // vector, load_weights, dwconv
  logic [MmDepth-1:0] conf_mm_q, conf_mm_d;      // per slot of the matmul table
  always_comb begin
    conf_unit_d = conf_unit_q;
    conf_mm_d   = conf_mm_q;
    if (head_new_q) begin
      conf_unit_d[0] = tpu_pkg::footprints_conflict(head.fp, fp_dmain_q);
      conf_unit_d[1] = tpu_pkg::footprints_conflict(head.fp, fp_wdma_q);
      conf_unit_d[2] = tpu_pkg::footprints_conflict(head.fp, fp_wdma_prev_q);
      conf_unit_d[3] = tpu_pkg::footprints_conflict(head.fp, fp_act_q);
      conf_unit_d[4] = tpu_pkg::footprints_conflict(head.fp, fp_dmaout_q);
      conf_unit_d[5] = VmemRows != 0 && tpu_pkg::footprints_conflict(head.fp, fp_move_q);
      conf_unit_d[6] = VmemRows != 0 && tpu_pkg::footprints_conflict(head.fp, fp_vec_q);
      conf_unit_d[7] = VmemRows != 0 && tpu_pkg::footprints_conflict(head.fp, fp_lw_q);
      conf_unit_d[8] = Dw && tpu_pkg::footprints_conflict(head.fp, fp_dw_q);
      for (int i = 0; i < 32'(MmDepth); i++) begin
        conf_mm_d[i] = tpu_pkg::footprints_conflict(head.fp, mm_slots[FpW*i +: FpW]);
      end
    end
  end
  assign head_new_d = iq_pop || iq_flush || (iq_push && iq_empty);

  // The link engines in flight (pod configuration): the VMEM rows of each engine's
  // instruction, a send's as rows read, a receive's as rows written (a reduce's reads are the
  // same rows); their conflicts with the head worked out once per head like the others.
  // The head's link command, zero without links. Declared at module level: Yosys 0.23 does not
  // find the members of a struct-typed variable declared inside a generate block
  // (docs/synthesis.md "What Yosys 0.23 reads"). Only link and recv are used (g_ici).
  tpu_ici_pkg::ici_cmd_t hc;
  logic                  unused_hc;
  assign hc        = Ici ? head.cmd.ici.cmd : '0;
  assign unused_hc = ^hc;
  assign ici_busy = Ici && (ici_tx_busy_i != '0 || ici_rx_busy_i != '0);
  if (Ici) begin : g_ici
    logic [tpu_pkg::RangeW*IL-1:0] tx_rng_q, tx_rng_d, rx_rng_q, rx_rng_d;
    logic [IL-1:0]                 conf_tx_q, conf_tx_d, conf_rx_q, conf_rx_d;
    always_comb begin
      logic [FpW-1:0] f;
      f         = '0;
      conf_tx_d = conf_tx_q;
      conf_rx_d = conf_rx_q;
      if (head_new_q) begin
        for (int l = 0; l < 32'(IL); l++) begin
          f = '0;
          f[tpu_pkg::FpVmemRd +: tpu_pkg::RangeW] = tx_rng_q[tpu_pkg::RangeW*l +: tpu_pkg::RangeW];
          conf_tx_d[l] = tpu_pkg::footprints_conflict(head.fp, f);
          f = '0;
          f[tpu_pkg::FpVmemWr +: tpu_pkg::RangeW] = rx_rng_q[tpu_pkg::RangeW*l +: tpu_pkg::RangeW];
          conf_rx_d[l] = tpu_pkg::footprints_conflict(head.fp, f);
        end
      end
    end
    always_comb begin
      tx_rng_d = tx_rng_q;
      rx_rng_d = rx_rng_q;
      for (int l = 0; l < 32'(IL); l++) begin
        if (ici_fire && 32'(hc.link) == l) begin
          if (hc.recv) rx_rng_d[tpu_pkg::RangeW*l +: tpu_pkg::RangeW] = head.fp.vmem_wr;
          else         tx_rng_d[tpu_pkg::RangeW*l +: tpu_pkg::RangeW] = head.fp.vmem_rd;
        end
      end
    end
    assign ici_hazard = ((ici_tx_busy_i & conf_tx_d) | (ici_rx_busy_i & conf_rx_d)) != '0;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        conf_tx_q <= '0;
        conf_rx_q <= '0;
      end else begin
        conf_tx_q <= conf_tx_d;
        conf_rx_q <= conf_rx_d;
      end
    end
    // Data only, no reset: the VMEM ranges of the link instructions in flight, latched as each
    // issues; a conflict with one counts only while its link is busy (ici_hazard).
    always_ff @(posedge clk_i) begin
      tx_rng_q <= tx_rng_d;
      rx_rng_q <= rx_rng_d;
    end
  end else begin : g_no_ici
    assign ici_hazard = 1'b0;
  end

  always_comb begin
    hazard = 1'b0;
    if (can_decide) begin
      hazard = (dmain_busy_i && conf_unit_d[0]) || (wdma_busy_i && conf_unit_d[1]) ||
               (wdma_busy_i && conf_unit_d[2]) || (act_busy_i && conf_unit_d[3]) ||
               (dmaout_busy_i && conf_unit_d[4]) || (move_busy_i && conf_unit_d[5]) ||
               (vec_busy_i && conf_unit_d[6]) || (lw_busy_i && conf_unit_d[7]) ||
               (Dw && dw_busy_i && conf_unit_d[8]) || ici_hazard;
      // Matmuls never wait for matmuls: the MXU pipeline keeps their ACC writes in order.
      if (head.unit != tpu_pkg::UnitMatmul && (mm_slot_valid & conf_mm_d) != '0) hazard = 1'b1;
    end
  end

  logic others_idle;  // every unit but the link unit
  assign others_idle = !dmain_busy_i && !wdma_busy_i && !act_busy_i && !dmaout_busy_i &&
                       !move_busy_i && !vec_busy_i && !lw_busy_i && !(Dw && dw_busy_i) &&
                       mm_cmd_ready_i && (mm_cnt == '0) && !dma_active_i;
  assign all_idle = others_idle && !ici_busy;

  // The head may go to its unit: no fault, not the halt, no hazard. Nor in the cycle the link
  // unit reports a fault: its faulting engine is idle from that cycle on, and an instruction
  // held back by that engine's rows must not slip out before the run stops.
  assign head_go = can_decide && head_err == tpu_pkg::ErrNone && !head.is_halt && !hazard &&
                   !ici_err;

  // One handshake per unit; the matmul also needs room in the in-flight table.
  assign dmain_cmd_valid_o  = head_go && head.unit == tpu_pkg::UnitReadHost;
  // The weight FIFO takes the rows of one of read_weights / load_weights at a time.
  assign wdma_cmd_valid_o   = head_go && head.unit == tpu_pkg::UnitReadWeights && !lw_busy_i;
  assign mm_cmd_valid_o     = head_go && head.unit == tpu_pkg::UnitMatmul && !mm_full;
  // The activation unit and the move unit share the accumulators' read port.
  assign act_cmd_valid_o    = head_go && head.unit == tpu_pkg::UnitActivate && !move_busy_i;
  assign dmaout_cmd_valid_o = head_go && head.unit == tpu_pkg::UnitWriteHost;
  assign move_cmd_valid_o   = Train && head_go && head.unit == tpu_pkg::UnitMove && !act_busy_i;
  assign vec_cmd_valid_o    = Train && head_go && head.unit == tpu_pkg::UnitVector;
  assign lw_cmd_valid_o     = Train && head_go && head.unit == tpu_pkg::UnitLoadWeights &&
                              !wdma_busy_i;
  assign ici_cmd_valid_o    = Ici && head_go && head.unit == tpu_pkg::UnitIci;
  assign dw_cmd_valid_o     = Dw && head_go && head.unit == tpu_pkg::UnitDw;
  assign dw_cmd_o           = {head.cmd.dw.cmd, tpu_pkg::OpDwconv};
  assign ici_cmd_o          = head.cmd.ici.cmd;
  assign ici_cmd_pc_o       = pc_q;
  assign dmain_cmd_o  = head.cmd.dma_in.cmd;
  assign wdma_cmd_o   = head.cmd.wdma.cmd;
  assign mm_cmd_o     = head.cmd.mm.cmd;
  assign act_cmd_o    = head.cmd.act.cmd;
  assign dmaout_cmd_o = head.cmd.dma_out.cmd;
  assign move_cmd_o   = head.cmd.move.cmd;
  assign vec_cmd_o    = head.cmd.vec.cmd;
  assign lw_cmd_o     = lw_head;
  assign mm_cmd_bf16_o = head.cmd.mm.bf16;
  assign dmain_fire  = dmain_cmd_valid_o && dmain_cmd_ready_i;
  assign wdma_fire   = wdma_cmd_valid_o && wdma_cmd_ready_i;
  assign mm_fire     = mm_cmd_valid_o && mm_cmd_ready_i;
  assign act_fire    = act_cmd_valid_o && act_cmd_ready_i;
  assign dmaout_fire = dmaout_cmd_valid_o && dmaout_cmd_ready_i;
  assign move_fire   = move_cmd_valid_o && move_cmd_ready_i;
  assign vec_fire    = vec_cmd_valid_o && vec_cmd_ready_i;
  assign lw_fire     = lw_cmd_valid_o && lw_cmd_ready_i;
  assign ici_fire    = ici_cmd_valid_o && ici_cmd_ready_i;
  assign dw_fire     = dw_cmd_valid_o && dw_cmd_ready_i;

  // Whether the head's unit can take it now (nop: always; sync: once everything is idle).
  always_comb begin
    unique case (head.unit)
      tpu_pkg::UnitReadHost:    unit_ready = dmain_cmd_ready_i;
      tpu_pkg::UnitReadWeights: unit_ready = wdma_cmd_ready_i && !lw_busy_i;
      tpu_pkg::UnitMatmul:      unit_ready = mm_cmd_ready_i && !mm_full;
      tpu_pkg::UnitActivate:    unit_ready = act_cmd_ready_i && !move_busy_i;
      tpu_pkg::UnitWriteHost:   unit_ready = dmaout_cmd_ready_i;
      tpu_pkg::UnitMove:        unit_ready = move_cmd_ready_i && !act_busy_i;
      tpu_pkg::UnitVector:      unit_ready = vec_cmd_ready_i;
      tpu_pkg::UnitLoadWeights: unit_ready = lw_cmd_ready_i && !wdma_busy_i;
      default:                  unit_ready = !head.is_sync || all_idle;
    endcase
    // (Outside the case: without links the chip's issue logic stays what it was.)
    if (Ici && head.unit == tpu_pkg::UnitIci) unit_ready = ici_cmd_ready_i;
    if (Dw && head.unit == tpu_pkg::UnitDw) unit_ready = dw_cmd_ready_i;
  end

  assign issue  = head_go && unit_ready;
  assign iq_pop = issue;

  assign mm_flush = iq_flush;
  assign mm_push  = run_q && mm_fire;
  assign mm_pop   = run_q && mxu_retire_i && mm_cnt != '0;

  assign input_stall_o = can_decide && head.unit == tpu_pkg::UnitMatmul && unit_ready && hazard;
  // After a read_weights failed (AXI error), a matmul issued with `switch` may wait for a tile
  // that will never be complete. Once the run is stopping, drop it, or the run never ends.
  assign mxu_abort_o   = stop_q && mxu_starved_i;

  assign busy_o       = run_q || flush_q;
  assign done_o       = done_q;
  assign error_o      = error_q;
  assign err_code_o   = ErrW'(err_code_q);
  assign err_pc_o     = err_pc_q;
  assign pc_o         = pc_q;
  assign clear_o      = start_i || soft_reset_i || flush_q;
  // A stopping run abandons its link instructions (a partner may never come).
  assign ici_clear_o  = clear_o || stop_q;
  // Waiting on a link: only link engines busy and nothing issued (sim/ici_fabric.h).
  assign ici_wait_o   = run_q && !stop_q && ici_busy && others_idle && !issue &&
                        !fetch_active_i;
  // Fetch.
  assign fetch_cmd_valid_o = fetch_start_q;
  assign fetch_cmd_o.addr  = cmd_addr_i;
  assign fetch_cmd_o.rows  = 24'(cmd_count_i);
  assign fetch_space_o     = 24'(IqDepth) - 24'(iq_usage);
  assign fetch_stop_o      = stop_q || fetch_stop_q || soft_reset_i || !run_q;

  // ---------------- trace side band ----------------
  logic        tr_dmain_busy_q, tr_dmain_busy_d, tr_act_busy_q, tr_act_busy_d;
  // Training chip: the move unit and the vector unit (one instruction at a time each: offered
  // only while idle) finish when they report idle again; load_weights with its done pulse.
  logic        tr_move_busy_q, tr_move_busy_d, tr_vec_busy_q, tr_vec_busy_d;
  logic        tr_lw_done_q, tr_lw_done_d;
  logic        tr_mm_done_q, tr_mm_done_d, tr_wdma_done_q, tr_wdma_done_d, tr_wdma_last;
  // Rows still to arrive of the read_weights in flight: [0] the older, [1] the newer.
  // An issued read_weights brings at most WFifoTiles + 2 tiles (more is ERR_WEIGHT_OVERFLOW).
  localparam int unsigned TrRowsW = $clog2((WFifoTiles + 2) * N + 1);
  logic [TrRowsW-1:0] tr_wrows0_q, tr_wrows1_q, tr_wrows0_d, tr_wrows1_d;
  logic [1:0]  tr_wcnt_q, tr_wcnt_d;

  // The unit code is tpu_pkg::unit_e (the training chip's move unit, vector unit and
  // load_weights included).
  assign trace_unit_o  = head.unit;
  assign trace_issue_o = issue;
  assign trace_pc_o    = pc_q;

  // Weight rows arrive in order: a row belongs to the older read_weights in flight. The weight
  // DMA takes a third read_weights only once all beats of the oldest have arrived, so its last
  // row is pushed in that cycle at the latest (counted first below): two entries suffice.
  always_comb begin
    logic [1:0] wcnt;
    tr_wrows0_d  = tr_wrows0_q;
    tr_wrows1_d  = tr_wrows1_q;
    wcnt         = tr_wcnt_q;
    tr_wdma_last = 1'b0;
    if (wdma_row_i && wcnt != '0) begin
      tr_wrows0_d = tr_wrows0_d - 1'b1;
      if (tr_wrows0_d == '0) begin
        tr_wdma_last = 1'b1;
        tr_wrows0_d  = tr_wrows1_d;
        wcnt         = wcnt - 1'b1;
      end
    end
    if (wdma_fire) begin
      if (wcnt == '0) tr_wrows0_d = TrRowsW'(head.cmd.wdma.cmd.tiles) * TrRowsW'(N);
      else            tr_wrows1_d = TrRowsW'(head.cmd.wdma.cmd.tiles) * TrRowsW'(N);
      if (wcnt != 2'd2) wcnt = wcnt + 1'b1;
    end
    tr_wcnt_d       = clear_o ? '0 : wcnt;
    tr_wdma_done_d  = tr_wdma_last && !clear_o;
    tr_dmain_busy_d = dmain_busy_i;
    tr_act_busy_d   = act_busy_i;
    tr_move_busy_d  = move_busy_i;
    tr_vec_busy_d   = vec_busy_i;
    tr_lw_done_d    = lw_done_i && !clear_o;
    tr_mm_done_d    = mxu_retire_i && mm_cnt != '0;
  end

  assign trace_done_o[tpu_pkg::UnitReadHost]    = tr_dmain_busy_q && !dmain_busy_i;
  assign trace_done_o[tpu_pkg::UnitReadWeights] = tr_wdma_done_q;
  assign trace_done_o[tpu_pkg::UnitMatmul]      = tr_mm_done_q;
  assign trace_done_o[tpu_pkg::UnitActivate]    = tr_act_busy_q && !act_busy_i;
  assign trace_done_o[tpu_pkg::UnitWriteHost]   = dmaout_was_busy_q && !dmaout_busy_i;
  assign trace_done_o[tpu_pkg::UnitControl]     = 1'b0;  // nop, sync: no duration
  assign trace_done_o[tpu_pkg::UnitMove]        = tr_move_busy_q && !move_busy_i;
  assign trace_done_o[tpu_pkg::UnitVector]      = tr_vec_busy_q && !vec_busy_i;
  assign trace_done_o[tpu_pkg::UnitLoadWeights] = tr_lw_done_q;

  // ---------------- errors and the end of a run ----------------
  logic [ErrW-1:0] new_err;
  logic [31:0] new_err_pc;
  logic        unit_err, dmaout_err, unit_err_wdma_older, unit_err_dmaout_older;
  logic        axi_err, ici_err_older;
  logic [31:0] wdma_err_pc;
  assign dmaout_err  = dmaout_was_busy_q && !dmaout_busy_i && dmaout_err_i;
  assign axi_err     = dmain_err_i || wdma_err_i || dmaout_err;
  assign ici_err     = Ici && ici_err_i;
  assign unit_err    = axi_err || ici_err;
  assign wdma_err_pc = wdma_err_prev_i ? pc_wdma_prev_q : pc_wdma_q;
  // Several units may report an AXI error in the same cycle (e.g. an older write_host's write
  // response and a younger read_host's or read_weights' read response): the oldest one in
  // program order is the fault (docs/isa.md "Errors"), whatever the unit.
  assign unit_err_wdma_older   = wdma_err_i && (!dmain_err_i || wdma_err_pc < pc_dmain_q);
  assign unit_err_dmaout_older = dmaout_err &&
                                 (!dmain_err_i || pc_dmaout_q < pc_dmain_q) &&
                                 (!wdma_err_i || pc_dmaout_q < wdma_err_pc);
  // The link unit's error (its oldest faulting instruction) against the AXI errors.
  assign ici_err_older = ici_err && (!dmain_err_i || ici_err_pc_i < pc_dmain_q) &&
                         (!wdma_err_i || ici_err_pc_i < wdma_err_pc) &&
                         (!dmaout_err || ici_err_pc_i < pc_dmaout_q);
  always_comb begin
    new_err    = tpu_pkg::ErrNone;
    new_err_pc = '0;
    // Unit errors first: they belong to instructions older than the head.
    if (unit_err_dmaout_older) begin
      new_err = tpu_pkg::ErrAxiWrite; new_err_pc = pc_dmaout_q;
    end else if (unit_err_wdma_older) begin
      new_err = tpu_pkg::ErrAxiRead; new_err_pc = wdma_err_pc;
    end else if (dmain_err_i) begin
      new_err = tpu_pkg::ErrAxiRead; new_err_pc = pc_dmain_q;
    end else if (can_decide && head_err != tpu_pkg::ErrNone) begin
      new_err = head_err; new_err_pc = pc_q;
    end else if (run_q && !stop_q && !fetch_stop_q && !head_valid && !fetch_busy_i &&
                 !fetch_start_q) begin
      new_err = tpu_pkg::ErrCmdOverrun; new_err_pc = pc_q;
    end
    // The link unit's fault when it is the oldest (older than the AXI errors, and any unit
    // error comes before the head's).
    if (ici_err_older) begin
      new_err = ErrW'(ici_err_code_i); new_err_pc = ici_err_pc_i;
    end
  end

  // The run ends once everything issued has finished; a unit error reported in this very
  // cycle is latched first and ends the run in the next cycle instead.
  logic finish;
  assign finish   = run_q && (stop_q || fetch_stop_q) && all_idle && !fetch_active_i &&
                    !fetch_busy_i && (stop_q || new_err == tpu_pkg::ErrNone);
  // Retired: every issued instruction, and the halt when the run ends on it.
  assign retire_o = issue || (finish && !stop_q);

  // ---------------- next state ----------------
  always_comb begin
    run_d             = run_q;
    flush_d           = flush_q;
    flush_cnt_d       = flush_cnt_q;
    stop_d            = stop_q;
    fetch_stop_d      = fetch_stop_q;
    err_code_d        = err_code_q;
    err_pc_d          = err_pc_q;
    pc_d              = pc_q;
    credit_d          = credit_q;
    switched_d        = switched_q;
    cmd_lo_d          = cmd_lo_q;
    cmd_hi_d          = cmd_hi_q;
    mm_aborted_d      = mm_aborted_q;
    fp_dmain_d        = fp_dmain_q;
    pc_dmain_d        = pc_dmain_q;
    fp_wdma_d         = fp_wdma_q;
    pc_wdma_d         = pc_wdma_q;
    fp_wdma_prev_d    = fp_wdma_prev_q;
    pc_wdma_prev_d    = pc_wdma_prev_q;
    fp_act_d          = fp_act_q;
    fp_dmaout_d       = fp_dmaout_q;
    fp_move_d         = fp_move_q;
    fp_vec_d          = fp_vec_q;
    fp_lw_d           = fp_lw_q;
    fp_dw_d           = fp_dw_q;
    pc_dmaout_d       = pc_dmaout_q;
    done_d            = 1'b0;
    error_d           = 1'b0;
    fetch_start_d     = 1'b0;
    dmaout_was_busy_d = dmaout_busy_i;

    if (flush_q) begin
      // Bursts already on the bus complete (and are dropped); rows in the MXU land.
      if (flush_cnt_q != '0) flush_cnt_d = flush_cnt_q - 1'b1;
      else if (!dma_active_i && !fetch_active_i) flush_d = 1'b0;
    end
    if (soft_reset_i) begin
      // (The instruction queue and the matmul table are flushed.)
      flush_d      = 1'b1;
      flush_cnt_d  = 16'(4 * N);
      run_d        = 1'b0;
      stop_d       = 1'b0;
      fetch_stop_d = 1'b0;
      mm_aborted_d = 1'b0;
      err_code_d   = '0;
      err_pc_d     = '0;
    end else if (start_go) begin
      pc_d         = '0;
      credit_d     = '0;
      switched_d   = 1'b0;
      cmd_lo_d     = {32'd0, cmd_addr_i};
      cmd_hi_d     = {32'd0, cmd_addr_i} + {32'd0, cmd_count_i} * 16;
      mm_aborted_d = 1'b0;
      err_code_d   = '0;
      err_pc_d     = '0;
      fetch_stop_d = 1'b0;
      if (cmd_buf_ok) begin
        run_d         = 1'b1;
        stop_d        = 1'b0;
        fetch_start_d = 1'b1;
      end else begin
        // The command buffer itself is outside the DMA windows: nothing is fetched.
        error_d    = 1'b1;
        err_code_d = IqErrW'(tpu_pkg::ErrHostRange);
        err_pc_d   = '0;
      end
    end else if (run_q) begin
      if (mxu_abort_o) mm_aborted_d = 1'b1;

      // Footprints of the instructions in flight in the other units.
      if (dmain_fire) begin
        fp_dmain_d = head.fp;
        pc_dmain_d = pc_q;
      end
      if (wdma_fire) begin
        // The previous read_weights may still be receiving (overlapped): keep its footprint
        // (only while the weight DMA is busy) and its index for error reports.
        fp_wdma_prev_d = wdma_busy_i ? fp_wdma_q : '0;
        pc_wdma_prev_d = pc_wdma_q;
        fp_wdma_d      = head.fp;
        pc_wdma_d      = pc_q;
      end
      if (act_fire) fp_act_d = head.fp;
      if (move_fire) fp_move_d = head.fp;
      if (vec_fire) fp_vec_d = head.fp;
      if (lw_fire) fp_lw_d = head.fp;
      if (dw_fire) fp_dw_d = head.fp;
      if (dmaout_fire) begin
        fp_dmaout_d = head.fp;
        pc_dmaout_d = pc_q;
      end

      // Weight tile accounting (see the checks of the head).
      if (wdma_fire) credit_d = credit_q + 32'(head.cmd.wdma.cmd.tiles);
      if (lw_fire)   credit_d = credit_q + 32'(lw_head.tiles);
      if (mm_fire && head.cmd.mm.cmd.switch_tile) begin
        credit_d   = credit_q - 1'b1;
        switched_d = 1'b1;
      end

      if (issue) pc_d = pc_q + 1'b1;

      // Errors: stop issuing, let issued work finish. An AXI error of an instruction issued
      // earlier can arrive after a later instruction's fault was latched: the fault that
      // comes first in program order is the one reported.
      if ((!stop_q && new_err != tpu_pkg::ErrNone) ||
          (stop_q && unit_err && new_err_pc < err_pc_q)) begin
        stop_d     = 1'b1;
        err_code_d = IqErrW'(new_err);
        err_pc_d   = new_err_pc;
      end
      // Halt: stop prefetching, wait for everything, done.
      if (can_decide && head_err == tpu_pkg::ErrNone && head.is_halt &&
          new_err == tpu_pkg::ErrNone) begin
        fetch_stop_d = 1'b1;
      end
      if (finish) begin
        run_d = 1'b0;
        if (stop_q) error_d = 1'b1;
        else        done_d  = 1'b1;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      run_q             <= 1'b0;
      flush_q           <= 1'b0;
      flush_cnt_q       <= '0;
      stop_q            <= 1'b0;
      fetch_stop_q      <= 1'b0;
      err_code_q        <= '0;
      err_pc_q          <= '0;
      pc_q              <= '0;
      credit_q          <= '0;
      switched_q        <= 1'b0;
      cmd_lo_q          <= '0;
      cmd_hi_q          <= '0;
      mm_aborted_q      <= 1'b0;
      done_q            <= 1'b0;
      error_q           <= 1'b0;
      fetch_start_q     <= 1'b0;
      dmaout_was_busy_q <= 1'b0;
      tr_dmain_busy_q   <= 1'b0;
      tr_act_busy_q     <= 1'b0;
      tr_move_busy_q    <= 1'b0;
      tr_vec_busy_q     <= 1'b0;
      tr_lw_done_q      <= 1'b0;
      tr_mm_done_q      <= 1'b0;
      tr_wdma_done_q    <= 1'b0;
      tr_wrows0_q       <= '0;
      tr_wrows1_q       <= '0;
      tr_wcnt_q         <= '0;
      head_new_q        <= 1'b0;
      conf_unit_q       <= '0;
      conf_mm_q         <= '0;
    end else begin
      run_q             <= run_d;
      flush_q           <= flush_d;
      flush_cnt_q       <= flush_cnt_d;
      stop_q            <= stop_d;
      fetch_stop_q      <= fetch_stop_d;
      err_code_q        <= err_code_d;
      err_pc_q          <= err_pc_d;
      pc_q              <= pc_d;
      credit_q          <= credit_d;
      switched_q        <= switched_d;
      cmd_lo_q          <= cmd_lo_d;
      cmd_hi_q          <= cmd_hi_d;
      mm_aborted_q      <= mm_aborted_d;
      done_q            <= done_d;
      error_q           <= error_d;
      fetch_start_q     <= fetch_start_d;
      dmaout_was_busy_q <= dmaout_was_busy_d;
      tr_dmain_busy_q   <= tr_dmain_busy_d;
      tr_act_busy_q     <= tr_act_busy_d;
      tr_move_busy_q    <= tr_move_busy_d;
      tr_vec_busy_q     <= tr_vec_busy_d;
      tr_lw_done_q      <= tr_lw_done_d;
      tr_mm_done_q      <= tr_mm_done_d;
      tr_wdma_done_q    <= tr_wdma_done_d;
      tr_wrows0_q       <= tr_wrows0_d;
      tr_wrows1_q       <= tr_wrows1_d;
      tr_wcnt_q         <= tr_wcnt_d;
      head_new_q        <= head_new_d;
      conf_unit_q       <= conf_unit_d;
      conf_mm_q         <= conf_mm_d;
    end
  end

  // Footprints and indices of the instructions in flight: data, no reset (read only while
  // their unit is busy).
  always_ff @(posedge clk_i) begin
    fp_dmain_q     <= fp_dmain_d;
    pc_dmain_q     <= pc_dmain_d;
    fp_wdma_q      <= fp_wdma_d;
    pc_wdma_q      <= pc_wdma_d;
    fp_wdma_prev_q <= fp_wdma_prev_d;
    pc_wdma_prev_q <= pc_wdma_prev_d;
    fp_act_q       <= fp_act_d;
    fp_dmaout_q    <= fp_dmaout_d;
    fp_move_q      <= fp_move_d;
    fp_vec_q       <= fp_vec_d;
    fp_lw_q        <= fp_lw_d;
    fp_dw_q        <= fp_dw_d;
    pc_dmaout_q    <= pc_dmaout_d;
  end

  // The queue's full flag and every slot are not needed: the fetch asks for no more rows than
  // there is room for (fetch_space_o), and only the head is issued.
  logic unused_ctrl;
  assign unused_ctrl = ^{iq_full, unused_iq_slots, unused_iq_slot_valid, unused_mm_head,
                         mm_empty, ici_link_up_i, ici_err_code_i, ici_fire};

  // ---------------- assertions ----------------
  // A command goes to a unit only when it can take it, one unit per cycle; DMA in and out
  // take one instruction at a time.
  `TPU_ASSERT_IMPLIES(CtrlDmaInReady, dmain_fire, !dmain_busy_i)
  `TPU_ASSERT_IMPLIES(CtrlDmaOutReady, dmaout_fire, !dmaout_busy_i)
  `TPU_ASSERT_IMPLIES(CtrlFetchReady, fetch_cmd_valid_o, fetch_cmd_ready_i)
  `TPU_ASSERT(CtrlOneValid, $onehot0({dmain_cmd_valid_o, wdma_cmd_valid_o, mm_cmd_valid_o,
                                       act_cmd_valid_o, dmaout_cmd_valid_o, move_cmd_valid_o,
                                       vec_cmd_valid_o, lw_cmd_valid_o, ici_cmd_valid_o,
                                       dw_cmd_valid_o}))
  `TPU_ASSERT_HOLD_IF(CtrlLwHold, lw_cmd_valid_o, lw_cmd_ready_i,
                      lw_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_NEVER(CtrlLwAndWdma, lw_busy_i && wdma_busy_i)
  `TPU_ASSERT_HOLD_IF(CtrlVecHold, vec_cmd_valid_o, vec_cmd_ready_i,
                      vec_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_HOLD_IF(CtrlMoveHold, move_cmd_valid_o, move_cmd_ready_i,
                      move_cmd_o, run_q && !stop_q && !ici_err)
  // The accumulators' read port: never the activation unit and the move unit at once.
  `TPU_ASSERT_NEVER(CtrlAccPortShared, act_busy_i && move_busy_i)
  `TPU_ASSERT_IMPLIES(CtrlNoMoveInt8, VmemRows == 0, !move_busy_i && !move_cmd_valid_o &&
                                                     !vec_busy_i && !vec_cmd_valid_o &&
                                                     !lw_busy_i && !lw_cmd_valid_o)
  // The handshakes: once a command is offered and not taken, it stays offered and unchanged in
  // the next cycle, unless the run stops there (error latched, soft reset) or the link unit
  // reports a fault in that cycle (head_go withdraws every offer then; the error is latched at
  // its end, so the run stops there too).
  `TPU_ASSERT_HOLD_IF(CtrlDmaInHold, dmain_cmd_valid_o, dmain_cmd_ready_i,
                      dmain_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_HOLD_IF(CtrlWdmaHold, wdma_cmd_valid_o, wdma_cmd_ready_i,
                      wdma_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_HOLD_IF(CtrlMmHold, mm_cmd_valid_o, mm_cmd_ready_i,
                      mm_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_HOLD_IF(CtrlActHold, act_cmd_valid_o, act_cmd_ready_i,
                      act_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_HOLD_IF(CtrlDmaOutHold, dmaout_cmd_valid_o, dmaout_cmd_ready_i,
                      dmaout_cmd_o, run_q && !stop_q && !ici_err)
  // The in-flight matmul table never overflows or underflows: a matmul is offered only while
  // the table has room (issue 15's mutant: without that, this and FifoOverflow fire).
  `TPU_ASSERT_NEVER(CtrlMmOverflow, mm_push && mm_full)
  `TPU_ASSERT_NEVER(CtrlMmUnderflow, mxu_retire_i && mm_cnt == '0 && run_q && !flush_q)
  `TPU_ASSERT_NEVER(CtrlMmTwoAborts, mxu_abort_o && mm_aborted_q)
  `TPU_ASSERT(CtrlWeightCredit, credit_q <= 32'(WFifoTiles) + 2)
  // Of the AXI errors reported in one cycle, the oldest instruction's is the one taken.
  `TPU_ASSERT_IMPLIES(CtrlUnitErrOldest, unit_err,
                      (!dmain_err_i || new_err_pc <= pc_dmain_q) &&
                      (!wdma_err_i || new_err_pc <= wdma_err_pc) &&
                      (!dmaout_err || new_err_pc <= pc_dmaout_q) &&
                      (!ici_err || new_err_pc <= ici_err_pc_i))
  // Link instructions only on a chip with links; a link command is held like the others.
  `TPU_ASSERT_IMPLIES(CtrlNoIci, IciLinks == 0, !ici_cmd_valid_o && !ici_busy && !ici_err)
  // dwconv only on a chip with the depthwise unit, one at a time, held like the others.
  `TPU_ASSERT_IMPLIES(CtrlNoDw, DwWidth == 0, !dw_cmd_valid_o && !dw_busy_i)
  `TPU_ASSERT_IMPLIES(CtrlDwReady, dw_fire, !dw_busy_i)
  `TPU_ASSERT_HOLD_IF(CtrlDwHold, dw_cmd_valid_o, dw_cmd_ready_i,
                      dw_cmd_o, run_q && !stop_q && !ici_err)
  `TPU_ASSERT_HOLD_IF(CtrlIciHold, ici_cmd_valid_o, ici_cmd_ready_i,
                      ici_cmd_o, run_q && !stop_q && !ici_err)
  // Run states: a flush is not a run; nothing is issued outside a run or after an error.
  `TPU_ASSERT_NEVER(CtrlRunAndFlush, run_q && flush_q)
  `TPU_ASSERT_IMPLIES(CtrlIssueInRun, issue, run_q && !stop_q && !fetch_stop_q)
  `TPU_ASSERT_NEVER(CtrlDoneAndError, done_o && error_o)

endmodule

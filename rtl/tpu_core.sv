// SPDX-License-Identifier: Apache-2.0
// tpu-rtl: one TPU-v1-style inference core. Block diagram and data flow: docs/architecture.md;
// instruction set: docs/isa.md.
`include "tpu_assert.svh"

module tpu_core #(
  parameter int unsigned N            = 16,
  parameter int unsigned UbRows       = 8192,
  parameter int unsigned AccRows      = 2048,
  parameter int unsigned WFifoTiles   = 4,
  parameter int unsigned QpSlots      = 16,
  parameter int unsigned AxiDataWidth = (8 * N < 128) ? 8 * N : 128,
  parameter int unsigned AxiMaxBurst  = 256,  // beats per INCR burst (1..256)
  // The training configuration (docs/isa.md "Training configuration"): VMEM rows, a power of
  // two up to 2^16. 0 = the int8 chip: no float hardware, opcodes 0x08-0x0E fault ERR_OPCODE.
  parameter int unsigned VmemRows     = 0,
  // Element rows the vector unit moves per cycle (VMEM banks; 1, 2, 4 or 8; docs/isa.md
  // "Bandwidth and what the design assumes": 8 x 16 lanes at N = 16 keeps the vector unit
  // below the MXU's rows in a training step, 4 x 4 at N = 4; 1 above N = 16, where no training
  // build exists). Only with VmemRows != 0.
  parameter int unsigned VpuRows      = N <= 4 ? 4 : N <= 16 ? 8 : 1,
  // The VMEM port's data width (docs/architecture.md "The VMEM port"): one fp32 VMEM row per
  // beat on the training chip; the int8 chip ties the port off (32 bits, never driven).
  parameter int unsigned VaxiDataWidth = (VmemRows != 0) ? 32 * N : 32,
  // The weight port (docs/isa.md "The weight port", issue 33): read_weights' own AXI4 read
  // master m_waxi_* with beats of WaxiDataWidth bits (a power of two, 128 .. 8N). 0 = none:
  // read_weights shares m_axi_* as it always did, m_waxi_* are 32-bit pins tied off.
  parameter int unsigned WaxiDataWidth = 0,
  // The pod configuration (docs/isa.md "Inter-chip links"): links (0 = none: opcodes 0x0F-0x10
  // fault ERR_OPCODE, nothing of the link unit is built; > 0 needs VmemRows > 0) and the bits
  // per beat of each link stream (a divisor of 32N, a multiple of 8).
  parameter int unsigned IciLinks     = 0,
  parameter int unsigned IciWidth     = 128,
  // The depthwise configuration (docs/isa.md "Depthwise configuration"): the depthwise unit's
  // output lines per pass (rtl/tpu_dw.sv). 0 = no unit: opcode 0x11 faults ERR_OPCODE and
  // nothing of the unit is built.
  parameter int unsigned DwWidth      = 0
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // AXI4-Lite slave: control/status registers (12-bit byte address, 32-bit data)
  input  logic [11:0]               s_axil_awaddr_i,
  input  logic                      s_axil_awvalid_i,
  output logic                      s_axil_awready_o,
  input  logic [31:0]               s_axil_wdata_i,
  input  logic [3:0]                s_axil_wstrb_i,
  input  logic                      s_axil_wvalid_i,
  output logic                      s_axil_wready_o,
  output logic [1:0]                s_axil_bresp_o,
  output logic                      s_axil_bvalid_o,
  input  logic                      s_axil_bready_i,
  input  logic [11:0]               s_axil_araddr_i,
  input  logic                      s_axil_arvalid_i,
  output logic                      s_axil_arready_o,
  output logic [31:0]               s_axil_rdata_o,
  output logic [1:0]                s_axil_rresp_o,
  output logic                      s_axil_rvalid_o,
  input  logic                      s_axil_rready_i,
  // AXI4 master: DMA to host memory (INCR bursts, no IDs)
  output logic [31:0]               m_axi_araddr_o,
  output logic [7:0]                m_axi_arlen_o,
  output logic [2:0]                m_axi_arsize_o,
  output logic [1:0]                m_axi_arburst_o,
  output logic                      m_axi_arvalid_o,
  input  logic                      m_axi_arready_i,
  input  logic [AxiDataWidth-1:0]   m_axi_rdata_i,
  input  logic [1:0]                m_axi_rresp_i,
  input  logic                      m_axi_rlast_i,
  input  logic                      m_axi_rvalid_i,
  output logic                      m_axi_rready_o,
  output logic [31:0]               m_axi_awaddr_o,
  output logic [7:0]                m_axi_awlen_o,
  output logic [2:0]                m_axi_awsize_o,
  output logic [1:0]                m_axi_awburst_o,
  output logic                      m_axi_awvalid_o,
  input  logic                      m_axi_awready_i,
  output logic [AxiDataWidth-1:0]   m_axi_wdata_o,
  output logic [AxiDataWidth/8-1:0] m_axi_wstrb_o,
  output logic                      m_axi_wlast_o,
  output logic                      m_axi_wvalid_o,
  input  logic                      m_axi_wready_i,
  input  logic [1:0]                m_axi_bresp_i,
  input  logic                      m_axi_bvalid_i,
  output logic                      m_axi_bready_o,
  // AXI4 master: the VMEM port (read_vmem / write_vmem only; INCR bursts, no IDs, beat-aligned
  // addresses, write strobes for rows that start inside a beat). Idle on the int8 chip.
  output logic [31:0]                m_vaxi_araddr_o,
  output logic [7:0]                 m_vaxi_arlen_o,
  output logic [2:0]                 m_vaxi_arsize_o,
  output logic [1:0]                 m_vaxi_arburst_o,
  output logic                       m_vaxi_arvalid_o,
  input  logic                       m_vaxi_arready_i,
  input  logic [VaxiDataWidth-1:0]   m_vaxi_rdata_i,
  input  logic [1:0]                 m_vaxi_rresp_i,
  input  logic                       m_vaxi_rlast_i,
  input  logic                       m_vaxi_rvalid_i,
  output logic                       m_vaxi_rready_o,
  output logic [31:0]                m_vaxi_awaddr_o,
  output logic [7:0]                 m_vaxi_awlen_o,
  output logic [2:0]                 m_vaxi_awsize_o,
  output logic [1:0]                 m_vaxi_awburst_o,
  output logic                       m_vaxi_awvalid_o,
  input  logic                       m_vaxi_awready_i,
  output logic [VaxiDataWidth-1:0]   m_vaxi_wdata_o,
  output logic [VaxiDataWidth/8-1:0] m_vaxi_wstrb_o,
  output logic                       m_vaxi_wlast_o,
  output logic                       m_vaxi_wvalid_o,
  input  logic                       m_vaxi_wready_i,
  input  logic [1:0]                 m_vaxi_bresp_i,
  input  logic                       m_vaxi_bvalid_i,
  output logic                       m_vaxi_bready_o,
  // AXI4 master, read only: the weight port (read_weights only; INCR bursts, no IDs,
  // beat-aligned addresses). Tied off when WaxiDataWidth = 0.
  output logic [31:0]                m_waxi_araddr_o,
  output logic [7:0]                 m_waxi_arlen_o,
  output logic [2:0]                 m_waxi_arsize_o,
  output logic [1:0]                 m_waxi_arburst_o,
  output logic                       m_waxi_arvalid_o,
  input  logic                       m_waxi_arready_i,
  input  logic [(WaxiDataWidth != 0 ? WaxiDataWidth : 32)-1:0] m_waxi_rdata_i,
  input  logic [1:0]                 m_waxi_rresp_i,
  input  logic                       m_waxi_rlast_i,
  input  logic                       m_waxi_rvalid_i,
  output logic                       m_waxi_rready_o,
  // Interrupt: OR of IRQ_STATUS & IRQ_ENABLE
  output logic                      irq_o,
  // Trace side band, observation only (docs/architecture.md "Trace port"; tpu_ctrl):
  output logic                      trace_run_o,    // STATUS.BUSY: the cycles CYCLES counts
  output logic                      trace_issue_o,  // an instruction is issued this cycle,
  output logic [3:0]                trace_unit_o,   //   to this unit (0 read_host, 1 read_weights,
                                                    //   2 matmul, 3 activate, 4 write_host,
                                                    //   5 nop/sync, 6 move, 7 vector, 8 load_weights)
  output logic [31:0]               trace_pc_o,     //   and this is its index in the program
  output logic [8:0]                trace_done_o,   // per unit: its oldest instruction finished
  // Inter-chip links (IciLinks > 0; one unused pin of each when IciLinks = 0, tie inputs to 0):
  // link l in bit l / [24l +: 24] / [IciWidth*l +: IciWidth] (docs/architecture.md).
  input  logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_link_up_i,  // fixed by the pod
  input  logic                                               ici_deadlock_i, // the pod's rule
  output logic                                               ici_wait_o,     // waiting on a link
  output logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_tx_valid_o,
  output logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_tx_first_o,
  output logic [24*(IciLinks > 0 ? IciLinks : 1)-1:0]         ici_tx_rows_o,
  output logic [IciWidth*(IciLinks > 0 ? IciLinks : 1)-1:0]   ici_tx_data_o,
  input  logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_tx_ready_i,
  input  logic [24*(IciLinks > 0 ? IciLinks : 1)-1:0]         ici_tx_want_i,
  input  logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_rx_valid_i,
  input  logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_rx_first_i,
  input  logic [24*(IciLinks > 0 ? IciLinks : 1)-1:0]         ici_rx_rows_i,
  input  logic [IciWidth*(IciLinks > 0 ? IciLinks : 1)-1:0]   ici_rx_data_i,
  output logic [(IciLinks > 0 ? IciLinks : 1)-1:0]            ici_rx_ready_o,
  output logic [24*(IciLinks > 0 ? IciLinks : 1)-1:0]         ici_rx_want_o
);


  localparam int unsigned BeatBytes = AxiDataWidth / 8;
  localparam int unsigned VBeatBytes = VaxiDataWidth / 8;
  localparam int unsigned WBeatBytes = WaxiDataWidth != 0 ? WaxiDataWidth / 8 : 4;
  localparam int unsigned TagW      = 18;
  localparam int unsigned Windows   = tpu_pkg::DmaWindows;
  localparam int unsigned Counters  = 10;
  localparam int unsigned UbW       = $clog2(UbRows);
  localparam int unsigned AccW      = $clog2(AccRows);
  localparam int unsigned PrmW      = $clog2(QpSlots * tpu_pkg::SlotRows);

  // ---------------- registers ----------------
  logic        start, soft_reset, clear;
  logic [31:0] cmd_addr, cmd_count, pc;
  logic [32*Windows-1:0] win_base, win_size;
  logic        busy, done, error;
  logic [4:0]  err_code;
  logic [31:0] err_pc;
  logic [32*Counters-1:0] count_inc;
  // The link unit (the ICI block below): the links up (bit l), the controller's command and
  // the unit's VMEM clients (served in g_train).
  localparam int unsigned IciL = IciLinks > 0 ? IciLinks : 1;
  logic [15:0]            ici_link_up;
  logic                   ici_cmd_valid, ici_cmd_ready, ici_clear, ici_err;
  tpu_ici_pkg::ici_cmd_t  ici_cmd;
  logic [31:0]            ici_cmd_pc, ici_err_pc;
  logic [4:0]             ici_err_code;
  logic [IciL-1:0]        ici_tx_busy, ici_rx_busy;
  logic                   ici_vm_r_re, ici_vm_r_rgnt, ici_vm_q_re, ici_vm_q_rgnt;
  logic                   ici_vm_w_we, ici_vm_w_wgnt;
  logic [15:0]            ici_vm_r_raddr, ici_vm_q_raddr, ici_vm_w_waddr;
  logic [32*N-1:0]        ici_vm_r_rdata, ici_vm_q_rdata, ici_vm_w_wdata;

  tpu_regs #(
    .N(N), .UbRows(UbRows), .AccRows(AccRows), .WFifoTiles(WFifoTiles), .QpSlots(QpSlots),
    .AxiDataWidth(AxiDataWidth), .VmemRows(VmemRows), .IciLinks(IciLinks), .DwWidth(DwWidth),
    .Counters(Counters), .Windows(Windows)
  ) u_regs (
    .clk_i, .rst_ni,
    .awaddr_i(s_axil_awaddr_i), .awvalid_i(s_axil_awvalid_i), .awready_o(s_axil_awready_o),
    .wdata_i(s_axil_wdata_i), .wstrb_i(s_axil_wstrb_i), .wvalid_i(s_axil_wvalid_i),
    .wready_o(s_axil_wready_o), .bresp_o(s_axil_bresp_o), .bvalid_o(s_axil_bvalid_o),
    .bready_i(s_axil_bready_i), .araddr_i(s_axil_araddr_i), .arvalid_i(s_axil_arvalid_i),
    .arready_o(s_axil_arready_o), .rdata_o(s_axil_rdata_o), .rresp_o(s_axil_rresp_o),
    .rvalid_o(s_axil_rvalid_o), .rready_i(s_axil_rready_i),
    .start_o(start), .soft_reset_o(soft_reset), .cmd_addr_o(cmd_addr), .cmd_count_o(cmd_count),
    .win_base_o(win_base), .win_size_o(win_size), .irq_o,
    .busy_i(busy), .done_i(done), .error_i(error), .err_code_i(err_code),
    .err_pc_i(err_pc), .ici_link_up_i(ici_link_up),
    .pc_i(pc), .count_inc_i(count_inc)
  );

  // ---------------- AXI read clients: 0 fetch, 1 weights, 2 DMA in ----------------
  logic [2:0]  c_ar_valid, c_ar_ready, c_r_valid;
  logic [95:0] c_ar_addr;
  logic [23:0] c_ar_len;

  tpu_axi_rd_arb #(.Clients(3)) u_rd_arb (
    .clk_i, .rst_ni,
    .c_ar_valid_i(c_ar_valid), .c_ar_addr_i(c_ar_addr), .c_ar_len_i(c_ar_len),
    .c_ar_ready_o(c_ar_ready), .c_r_valid_o(c_r_valid),
    .m_ar_addr_o(m_axi_araddr_o), .m_ar_len_o(m_axi_arlen_o), .m_ar_valid_o(m_axi_arvalid_o),
    .m_ar_ready_i(m_axi_arready_i), .m_r_valid_i(m_axi_rvalid_i), .m_r_last_i(m_axi_rlast_i),
    .m_r_ready_o(m_axi_rready_o)
  );
  assign m_axi_arsize_o  = 3'($clog2(BeatBytes));
  assign m_axi_arburst_o = 2'b01;  // INCR

  // ---------------- controller + instruction fetch ----------------
  logic         fetch_stop, fetch_busy, fetch_active, fetch_valid, fetch_err;
  logic         fetch_cmd_valid, fetch_cmd_ready;
  tpu_pkg::dma_rd_cmd_t fetch_cmd;
  logic [23:0]  fetch_space, fetch_idx;
  logic [127:0] fetch_instr;
  // Unit commands (valid / ready / command) from the controller.
  logic                 dmain_cmd_valid, dmain_cmd_ready;
  tpu_pkg::dma_in_cmd_t dmain_cmd;
  logic                 wdma_cmd_valid, wdma_cmd_ready;
  tpu_pkg::wdma_cmd_t   wdma_cmd;
  logic                 mm_cmd_valid, mm_cmd_ready;
  tpu_pkg::mm_cmd_t     mm_cmd;
  logic                 act_cmd_valid, act_cmd_ready;
  tpu_pkg::act_cmd_t    act_cmd;
  logic                 dmaout_cmd_valid, dmaout_cmd_ready;
  tpu_pkg::dma_wr_cmd_t dmaout_cmd;
  logic                 move_cmd_valid, move_cmd_ready, move_busy;
  tpu_pkg::move_cmd_t   move_cmd;
  logic                 vec_cmd_valid, vec_cmd_ready, vec_busy;
  tpu_vpu_pkg::vpu_cmd_t vec_cmd;
  logic                 lw_cmd_valid, lw_cmd_ready;
  tpu_fp_pkg::lw_cmd_t  lw_cmd;
  logic                   dw_cmd_valid, dw_cmd_ready, dw_busy;
  tpu_pkg::instr_dwconv_t dw_cmd;
  logic dmain_busy, dmain_err;
  // The VMEM port's units (g_train): read_vmem's failing beat, traffic for the counters.
  logic vdma_rd_err, vdma_rd_active, vdma_wr_active;
  logic [31:0] vdma_rd_bytes, vdma_wr_bytes;
  logic wdma_busy, wdma_err, wdma_err_prev, wdma_push;
  logic unused_fetch_err_prev, unused_dmain_err_prev;
  logic mxu_retire, mxu_starved, mxu_abort;
  logic act_busy, act_reading;
  logic dmaout_busy, dmaout_err, dmaout_active;
  logic dmain_active, wdma_active;
  logic input_stall, retire;

  tpu_dma_reader #(.RowBytes(16), .BeatBytes(BeatBytes), .MaxBurst(AxiMaxBurst)) u_fetch (
    .clk_i, .rst_ni, .clear_i(fetch_stop),
    .cmd_valid_i(fetch_cmd_valid), .cmd_ready_o(fetch_cmd_ready), .cmd_i(fetch_cmd),
    .space_rows_i(fetch_space),
    .ar_valid_o(c_ar_valid[0]), .ar_addr_o(c_ar_addr[31:0]), .ar_len_o(c_ar_len[7:0]),
    .ar_ready_i(c_ar_ready[0]), .r_valid_i(c_r_valid[0]), .r_data_i(m_axi_rdata_i),
    .r_resp_i(m_axi_rresp_i), .r_last_i(m_axi_rlast_i),
    .row_valid_o(fetch_valid), .row_data_o(fetch_instr), .row_idx_o(fetch_idx),
    .row_err_o(fetch_err), .row_err_prev_o(unused_fetch_err_prev), .busy_o(fetch_busy),
    .active_o(fetch_active)
  );

  tpu_ctrl #(
    .N(N), .UbRows(UbRows), .AccRows(AccRows), .WFifoTiles(WFifoTiles), .QpSlots(QpSlots),
    .VmemRows(VmemRows), .IciLinks(IciLinks), .DwWidth(DwWidth),
    .WeightAlign(WaxiDataWidth > 128 ? WaxiDataWidth / 8 : 16)
  ) u_ctrl (
    .clk_i, .rst_ni,
    .start_i(start), .soft_reset_i(soft_reset), .cmd_addr_i(cmd_addr), .cmd_count_i(cmd_count),
    .win_base_i(win_base), .win_size_i(win_size),
    .busy_o(busy), .done_o(done), .error_o(error), .err_code_o(err_code), .err_pc_o(err_pc),
    .pc_o(pc), .clear_o(clear),
    .fetch_cmd_valid_o(fetch_cmd_valid), .fetch_cmd_ready_i(fetch_cmd_ready),
    .fetch_cmd_o(fetch_cmd),
    .fetch_space_o(fetch_space), .fetch_stop_o(fetch_stop), .fetch_busy_i(fetch_busy),
    .fetch_active_i(fetch_active), .fetch_valid_i(fetch_valid), .fetch_instr_i(fetch_instr),
    .fetch_err_i(fetch_err),
    .dmain_cmd_valid_o(dmain_cmd_valid), .dmain_cmd_ready_i(dmain_cmd_ready),
    .dmain_cmd_o(dmain_cmd), .dmain_busy_i(dmain_busy), .dmain_err_i(dmain_err),
    .wdma_cmd_valid_o(wdma_cmd_valid), .wdma_cmd_ready_i(wdma_cmd_ready),
    .wdma_cmd_o(wdma_cmd), .wdma_busy_i(wdma_busy), .wdma_err_i(wdma_err),
    .wdma_err_prev_i(wdma_err_prev), .wdma_row_i(wdma_push),
    .mm_cmd_valid_o(mm_cmd_valid), .mm_cmd_ready_i(mm_cmd_ready), .mm_cmd_o(mm_cmd),
    .mm_cmd_bf16_o(mm_cmd_bf16),
    .mxu_retire_i(mxu_retire), .mxu_starved_i(mxu_starved), .mxu_abort_o(mxu_abort),
    .act_cmd_valid_o(act_cmd_valid), .act_cmd_ready_i(act_cmd_ready), .act_cmd_o(act_cmd),
    .act_busy_i(act_busy),
    .dmaout_cmd_valid_o(dmaout_cmd_valid), .dmaout_cmd_ready_i(dmaout_cmd_ready),
    .dmaout_cmd_o(dmaout_cmd), .dmaout_busy_i(dmaout_busy), .dmaout_err_i(dmaout_err),
    .move_cmd_valid_o(move_cmd_valid), .move_cmd_ready_i(move_cmd_ready),
    .move_cmd_o(move_cmd), .move_busy_i(move_busy),
    .vec_cmd_valid_o(vec_cmd_valid), .vec_cmd_ready_i(vec_cmd_ready),
    .vec_cmd_o(vec_cmd), .vec_busy_i(vec_busy),
    .lw_cmd_valid_o(lw_cmd_valid), .lw_cmd_ready_i(lw_cmd_ready), .lw_cmd_o(lw_cmd),
    .lw_busy_i(lw_busy), .lw_done_i(lw_done),
    .dw_cmd_valid_o(dw_cmd_valid), .dw_cmd_ready_i(dw_cmd_ready), .dw_cmd_o(dw_cmd),
    .dw_busy_i(dw_busy),
    .ici_link_up_i(ici_link_up), .ici_cmd_valid_o(ici_cmd_valid), .ici_cmd_ready_i(ici_cmd_ready),
    .ici_cmd_o(ici_cmd), .ici_cmd_pc_o(ici_cmd_pc), .ici_tx_busy_i(ici_tx_busy),
    .ici_rx_busy_i(ici_rx_busy), .ici_err_i(ici_err), .ici_err_code_i(ici_err_code),
    .ici_err_pc_i(ici_err_pc), .ici_clear_o(ici_clear), .ici_wait_o,
    .dma_active_i(dmain_active || wdma_active || dmaout_active || vdma_rd_active ||
                  vdma_wr_active),
    .input_stall_o(input_stall), .retire_o(retire),
    .trace_issue_o, .trace_unit_o, .trace_pc_o, .trace_done_o
  );
  assign trace_run_o = busy;

  // ---------------- DMA in: read_host -> UB / parameters / LUT ----------------
  // The DMA-in unit: a tpu_dma_reader and where its rows go, latched when it takes a command.
  logic [1:0]   dmain_dest_q, dmain_dest_d;
  logic [23:0]  dmain_local_q, dmain_local_d;
  logic         dmain_row_valid, dmain_row_err;
  logic [8*N-1:0] dmain_row;
  logic [23:0]  dmain_row_idx;
  logic [23:0]  dmain_dst;

  always_comb begin
    dmain_dest_d  = dmain_dest_q;
    dmain_local_d = dmain_local_q;
    if (dmain_cmd_valid && dmain_cmd_ready) begin
      dmain_dest_d  = dmain_cmd.dest;
      dmain_local_d = dmain_cmd.local_addr;
    end
  end
  // Data only, no reset: where the rows go, latched with the command, read only with the
  // reader's rows.
  always_ff @(posedge clk_i) begin
    dmain_dest_q  <= dmain_dest_d;
    dmain_local_q <= dmain_local_d;
  end

  // The reader's commands: the controller's (int8 chip), or those of the training chip's
  // DMA-in front (tpu_vmem_dma_in, below), which also runs read_vmem.
  logic                 rd_in_cmd_valid, rd_in_cmd_ready, rd_in_busy;
  tpu_pkg::dma_rd_cmd_t rd_in_cmd;

  tpu_dma_reader #(.RowBytes(N), .BeatBytes(BeatBytes), .MaxBurst(AxiMaxBurst)) u_dma_in (
    .clk_i, .rst_ni, .clear_i(clear),
    .cmd_valid_i(rd_in_cmd_valid), .cmd_ready_o(rd_in_cmd_ready), .cmd_i(rd_in_cmd),
    .space_rows_i(24'hFF_FFFF),
    .ar_valid_o(c_ar_valid[2]), .ar_addr_o(c_ar_addr[95:64]), .ar_len_o(c_ar_len[23:16]),
    .ar_ready_i(c_ar_ready[2]), .r_valid_i(c_r_valid[2]), .r_data_i(m_axi_rdata_i),
    .r_resp_i(m_axi_rresp_i), .r_last_i(m_axi_rlast_i),
    .row_valid_o(dmain_row_valid), .row_data_o(dmain_row), .row_idx_o(dmain_row_idx),
    .row_err_o(dmain_row_err), .row_err_prev_o(unused_dmain_err_prev), .busy_o(rd_in_busy),
    .active_o(dmain_active)
  );
  assign dmain_err = (dmain_row_valid && dmain_row_err) || vdma_rd_err;
  assign dmain_dst = dmain_local_q + dmain_row_idx;

  logic dmain_ub_we, prm_we, lut_we;
  assign dmain_ub_we = dmain_row_valid && !dmain_row_err && dmain_dest_q == tpu_pkg::DestUb;
  assign prm_we      = dmain_row_valid && !dmain_row_err && dmain_dest_q == tpu_pkg::DestParam;
  assign lut_we      = dmain_row_valid && !dmain_row_err && dmain_dest_q == tpu_pkg::DestLut;

  // ---------------- weight DMA, weight FIFO, loader ----------------
  logic       wdma_row_valid, wdma_row_err;
  logic [8*N-1:0] wdma_row;
  logic [23:0] wdma_row_idx;
  logic [$clog2(WFifoTiles*N+1)-1:0] wfifo_free;
  logic       w_shift, w_commit, w_buf;
  logic [8*N-1:0] w_row;
  logic       active_buf, next_valid, next_buf, mm_switch, wl_idle, wl_tile_pending;

  // The weight DMA overlaps consecutive read_weights: the next one starts requesting while the
  // previous one's last beats are still arriving (the FIFO only appends).
  // An issued read_weights brings at most WFifoTiles + 2 tiles (more is ERR_WEIGHT_OVERFLOW).
  // Its AXI read client: client 1 of the device-memory port, or the weight port of its own.
  logic        wdma_ar_valid, wdma_ar_ready, wdma_r_valid;
  logic [31:0] wdma_ar_addr;
  logic [7:0]  wdma_ar_len;
  logic [31:0] wport_rd_bytes;  // weight-port bytes received this cycle (DMA_RD_BYTES)
  // The weight DMA reads through the device-memory port's client 1 (WaxiDataWidth = 0) or
  // through the weight port m_waxi_* (docs/isa.md "The weight port"); one reader either way.
  localparam int unsigned WDmaBeatBytes = WaxiDataWidth == 0 ? BeatBytes : WBeatBytes;
  logic [8*WDmaBeatBytes-1:0] wdma_r_data;
  logic [1:0]                 wdma_r_resp;
  logic                       wdma_r_last;
  if (WaxiDataWidth == 0) begin : g_wdma_shared
    assign c_ar_valid[1]       = wdma_ar_valid;
    assign c_ar_addr[63:32]    = wdma_ar_addr;
    assign c_ar_len[15:8]      = wdma_ar_len;
    assign wdma_ar_ready       = c_ar_ready[1];
    assign wdma_r_valid        = c_r_valid[1];
    assign wdma_r_data         = m_axi_rdata_i;
    assign wdma_r_resp         = m_axi_rresp_i;
    assign wdma_r_last         = m_axi_rlast_i;
    assign m_waxi_araddr_o  = '0;
    assign m_waxi_arlen_o   = '0;
    assign m_waxi_arsize_o  = '0;
    assign m_waxi_arburst_o = '0;
    assign m_waxi_arvalid_o = 1'b0;
    assign m_waxi_rready_o  = 1'b0;
    assign wport_rd_bytes   = '0;
    logic unused_waxi;
    assign unused_waxi = ^{m_waxi_arready_i, m_waxi_rdata_i, m_waxi_rresp_i, m_waxi_rlast_i,
                           m_waxi_rvalid_i};
  end else begin : g_wdma_port
    // The device-memory port's client 1 never requests; the weight port has one client.
    assign c_ar_valid[1]    = 1'b0;
    assign c_ar_addr[63:32] = '0;
    assign c_ar_len[15:8]   = '0;
    logic unused_c_r_valid;
    assign unused_c_r_valid = ^{c_ar_ready[1], c_r_valid[1]};
    assign m_waxi_arvalid_o = wdma_ar_valid;
    assign m_waxi_araddr_o  = wdma_ar_addr;
    assign m_waxi_arlen_o   = wdma_ar_len;
    assign m_waxi_arsize_o  = 3'($clog2(WBeatBytes));
    assign m_waxi_arburst_o = 2'b01;  // INCR
    assign wdma_ar_ready    = m_waxi_arready_i;
    assign wdma_r_valid     = m_waxi_rvalid_i;
    assign wdma_r_data      = m_waxi_rdata_i;
    assign wdma_r_resp      = m_waxi_rresp_i;
    assign wdma_r_last      = m_waxi_rlast_i;
    assign m_waxi_rready_o  = 1'b1;   // the reader only requests bursts the FIFO has room for
    assign wport_rd_bytes   = m_waxi_rvalid_i ? 32'(WBeatBytes) : 32'd0;
  end
  tpu_dma_reader #(.RowBytes(N), .BeatBytes(WDmaBeatBytes), .MaxBurst(AxiMaxBurst),
                   .Overlap(1'b1), .MaxRows((WFifoTiles + 2) * N)) u_dma_weights (
    .clk_i, .rst_ni, .clear_i(clear),
    .cmd_valid_i(wdma_cmd_valid), .cmd_ready_o(wdma_cmd_ready), .cmd_i(wdma_cmd.dma),
    .space_rows_i(24'(wfifo_free)),
    .ar_valid_o(wdma_ar_valid), .ar_addr_o(wdma_ar_addr), .ar_len_o(wdma_ar_len),
    .ar_ready_i(wdma_ar_ready), .r_valid_i(wdma_r_valid), .r_data_i(wdma_r_data),
    .r_resp_i(wdma_r_resp), .r_last_i(wdma_r_last),
    .row_valid_o(wdma_row_valid), .row_data_o(wdma_row), .row_idx_o(wdma_row_idx),
    .row_err_o(wdma_row_err), .row_err_prev_o(wdma_err_prev), .busy_o(wdma_busy),
    .active_o(wdma_active)
  );
  assign wdma_err  = wdma_row_valid && wdma_row_err;
  assign wdma_push = wdma_row_valid && !wdma_row_err;

  logic mxu_valid, mxu_wbuf, mxu_wuns;
  // The training chip's bf16 matrix path (driven in g_train below; 0 on the int8 chip):
  // load_weights' tile rows into the weight FIFO, the bf16 tiles out of it, the bf16 rows fed.
  logic            lw_push, lw_busy, lw_done, wf_shift, wf_commit, active_bf16, next_bf16, mxf_valid;
  logic [16*N-1:0] lw_row, wf_row, mxf_data;

  tpu_weight_loader #(.N(N), .WFifoTiles(WFifoTiles), .Float(VmemRows != 0)) u_weights (
    .clk_i, .rst_ni, .clear_i(clear),
    .push_i(wdma_push), .push_row_i(wdma_row), .free_rows_o(wfifo_free),
    .fpush_i(lw_push), .fpush_row_i(lw_row),
    .w_shift_o(w_shift), .w_row_o(w_row), .w_commit_o(w_commit), .w_buf_o(w_buf),
    .wf_shift_o(wf_shift), .wf_row_o(wf_row), .wf_commit_o(wf_commit),
    .active_buf_o(active_buf), .next_valid_o(next_valid),
    .next_buf_o(next_buf), .switch_i(mm_switch), .use_i(mxu_valid || mxf_valid),
    .use_buf_i(mxu_wbuf), .active_bf16_o(active_bf16), .next_bf16_o(next_bf16),
    .idle_o(wl_idle), .tile_pending_o(wl_tile_pending)
  );

  // ---------------- MXU ----------------
  logic               mm_ub_re, mm_ub_rgnt;
  logic [UbW-1:0]     mm_ub_raddr;
  logic [8*N-1:0]     mm_ub_rdata;
  logic [9*N-1:0]     mxu_data;
  logic [TagW-1:0]    mxu_tag, out_tag;
  logic               out_valid, pre_valid, mm_weight_stall;
  logic [TagW-1:0]    pre_tag;
  logic [32*N-1:0]    out_sum;
  logic               mm_cmd_bf16;
  // The feeder's VMEM read client (matmul_bf16; g_train).
  logic               mm_vm_re, mm_vm_rgnt;
  logic [15:0]        mm_vm_raddr;
  logic [32*N-1:0]    mm_vm_rdata;
  // The two arrays' results: the int8 array's, and the bf16 array's (g_train; 0 on the int8
  // chip). One feeder and the same latency: never both in one cycle.
  logic               i_out_valid, i_pre_valid, f_out_valid, f_pre_valid;
  logic [TagW-1:0]    i_out_tag, i_pre_tag, f_out_tag, f_pre_tag;
  logic [32*N-1:0]    i_out_sum, f_out_sum;

  tpu_matmul_unit #(.N(N), .UbRows(UbRows), .TagW(TagW), .Float(VmemRows != 0)) u_matmul (
    .clk_i, .rst_ni, .clear_i(clear || mxu_abort),
    .cmd_valid_i(mm_cmd_valid), .cmd_ready_o(mm_cmd_ready), .cmd_i(mm_cmd),
    .cmd_bf16_i(mm_cmd_bf16),
    .ub_re_o(mm_ub_re), .ub_raddr_o(mm_ub_raddr), .ub_rgnt_i(mm_ub_rgnt),
    .ub_rdata_i(mm_ub_rdata),
    .vm_re_o(mm_vm_re), .vm_raddr_o(mm_vm_raddr), .vm_rgnt_i(mm_vm_rgnt),
    .vm_rdata_i(mm_vm_rdata),
    .active_buf_i(active_buf), .next_valid_i(next_valid), .next_buf_i(next_buf),
    .switch_o(mm_switch), .active_bf16_i(active_bf16), .next_bf16_i(next_bf16),
    .mxu_valid_o(mxu_valid), .mxu_data_o(mxu_data),
    .mxu_wbuf_o(mxu_wbuf), .mxu_wuns_o(mxu_wuns), .mxu_tag_o(mxu_tag),
    .mxf_valid_o(mxf_valid), .mxf_data_o(mxf_data),
    .weight_stall_o(mm_weight_stall)
  );

  tpu_mxu #(.N(N), .TagW(TagW)) u_mxu (
    .clk_i, .rst_ni,
    .in_valid_i(mxu_valid), .in_data_i(mxu_data), .in_wbuf_i(mxu_wbuf), .in_wuns_i(mxu_wuns),
    .in_tag_i(mxu_tag),
    .w_shift_i(w_shift), .w_row_i(w_row), .w_commit_i(w_commit), .w_buf_i(w_buf),
    .out_valid_o(i_out_valid), .out_sum_o(i_out_sum), .out_tag_o(i_out_tag),
    .pre_valid_o(i_pre_valid), .pre_tag_o(i_pre_tag)
  );
  assign out_valid = i_out_valid || f_out_valid;
  assign out_tag   = f_out_valid ? f_out_tag : i_out_tag;
  assign out_sum   = f_out_valid ? f_out_sum : i_out_sum;
  assign pre_valid = i_pre_valid || f_pre_valid;
  assign pre_tag   = f_pre_valid ? f_pre_tag : i_pre_tag;
  assign mxu_retire = out_valid && out_tag[17];
  // The feeder waits for a tile while the weight DMA is idle and no complete tile is on its
  // way: only possible after a read_weights failed (see tpu_ctrl mxu_abort_o).
  assign mxu_starved = mm_weight_stall && !wdma_busy && !lw_busy && !wl_tile_pending;

  // ---------------- accumulators ----------------
  logic               act_acc_re;
  logic [AccW-1:0]    act_acc_raddr;
  logic [32*N-1:0]    act_acc_rdata;
  // The activation unit's read port, shared with the training chip's move unit (acc_to_vmem;
  // the controller never runs both at once).
  logic               acc_re;
  logic [AccW-1:0]    acc_raddr;
  // The accumulators' second read port (copy 0): the move unit's second row of a pair.
  logic               acc2_re, acc2_gnt;
  logic [AccW-1:0]    acc2_raddr;
  logic [32*N-1:0]    acc2_rdata;

  // The depthwise unit's ACC writes (g_dw; beside the MXU's, tpu_accumulators).
  logic               dw_acc_we, dw_acc_acc, dw_acc_wgnt, dw_acc_pend;
  logic [AccW-1:0]    dw_acc_waddr;
  logic [32*N-1:0]    dw_acc_wdata;

  tpu_accumulators #(.N(N), .AccRows(AccRows), .Float(VmemRows != 0), .Dw(DwWidth != 0)) u_acc (
    .clk_i, .rst_ni,
    .pre_valid_i(pre_valid), .pre_accumulate_i(pre_tag[16]), .pre_addr_i(AccW'(pre_tag[15:0])),
    .we_i(out_valid), .accumulate_i(out_tag[16]), .fp_i(f_out_valid),
    .waddr_i(AccW'(out_tag[15:0])),
    .wdata_i(out_sum),
    .dw_we_i(dw_acc_we), .dw_acc_i(dw_acc_acc), .dw_waddr_i(dw_acc_waddr),
    .dw_wdata_i(dw_acc_wdata), .dw_wgnt_o(dw_acc_wgnt), .dw_pend_o(dw_acc_pend),
    .re_i(acc_re), .raddr_i(acc_raddr), .rdata_o(act_acc_rdata),
    .re2_i(acc2_re), .raddr2_i(acc2_raddr), .gnt2_o(acc2_gnt), .rdata2_o(acc2_rdata)
  );

  // ---------------- activation unit ----------------
  logic           act_ub_we, act_ub_wgnt;
  logic [UbW-1:0] act_ub_waddr;
  logic [8*N-1:0] act_ub_wdata;

  tpu_act_unit #(.N(N), .UbRows(UbRows), .AccRows(AccRows), .QpSlots(QpSlots)) u_act (
    .clk_i, .rst_ni, .clear_i(clear),
    .cmd_valid_i(act_cmd_valid), .cmd_ready_o(act_cmd_ready), .cmd_i(act_cmd),
    .acc_re_o(act_acc_re), .acc_raddr_o(act_acc_raddr), .acc_rdata_i(act_acc_rdata),
    .ub_we_o(act_ub_we), .ub_waddr_o(act_ub_waddr), .ub_wdata_o(act_ub_wdata),
    .ub_wgnt_i(act_ub_wgnt),
    .prm_we_i(prm_we), .prm_row_i(PrmW'(dmain_dst)), .lut_we_i(lut_we),
    .lut_row_i(8'(dmain_dst)), .wdata_i(dmain_row),
    .busy_o(act_busy), .reading_o(act_reading)
  );

  // ---------------- DMA out: write_host ----------------
  logic           dmaout_ub_re;
  logic [UbW-1:0] dmaout_ub_raddr;
  logic [8*N-1:0] dmaout_ub_rdata;

  // The writer's commands and reads: the controller's and the UB (int8 chip), or through the
  // training chip's DMA-out front (tpu_vmem_dma_out, below), which also runs write_vmem.
  logic                 wr_cmd_valid, wr_cmd_ready, wr_busy, wr_err, wr_re;
  tpu_pkg::dma_wr_cmd_t wr_cmd;
  logic [UbW-1:0]       wr_raddr;
  logic [8*N-1:0]       wr_rdata;

  tpu_dma_writer #(.N(N), .UbRows(UbRows), .BeatBytes(BeatBytes), .MaxBurst(AxiMaxBurst)) u_dma_out (
    .clk_i, .rst_ni, .clear_i(clear),
    .cmd_valid_i(wr_cmd_valid), .cmd_ready_o(wr_cmd_ready), .cmd_i(wr_cmd),
    .ub_re_o(wr_re), .ub_raddr_o(wr_raddr), .ub_rdata_i(wr_rdata),
    .aw_addr_o(m_axi_awaddr_o), .aw_len_o(m_axi_awlen_o), .aw_valid_o(m_axi_awvalid_o),
    .aw_ready_i(m_axi_awready_i), .w_data_o(m_axi_wdata_o), .w_last_o(m_axi_wlast_o),
    .w_valid_o(m_axi_wvalid_o), .w_ready_i(m_axi_wready_i), .b_resp_i(m_axi_bresp_i),
    .b_valid_i(m_axi_bvalid_i), .b_ready_o(m_axi_bready_o),
    .busy_o(wr_busy), .active_o(dmaout_active), .err_o(wr_err)
  );
  assign m_axi_awsize_o  = 3'($clog2(BeatBytes));
  assign m_axi_awburst_o = 2'b01;  // INCR
  assign m_axi_wstrb_o   = '1;

  // ---------------- unified buffer ----------------
  // Two banks: DMA in writes before the activation unit, DMA out reads before the feeder.
  // Read port 1: the matmul feeder. Read port 2 (g_dw only, Rd2): the depthwise unit's own.
  logic           ub_re1, ub_rgnt1, ub_re2;
  logic [UbW-1:0] ub_raddr1, ub_raddr2;
  logic [8*N-1:0] ub_rdata2;
  tpu_unified_buffer #(.N(N), .UbRows(UbRows), .Rd2(DwWidth != 0)) u_ub (
    .clk_i,
    .we0_i(dmain_ub_we), .waddr0_i(UbW'(dmain_dst)), .wdata0_i(dmain_row),
    .we1_i(act_ub_we), .waddr1_i(act_ub_waddr), .wdata1_i(act_ub_wdata), .wgnt1_o(act_ub_wgnt),
    .re0_i(dmaout_ub_re), .raddr0_i(dmaout_ub_raddr), .rdata0_o(dmaout_ub_rdata),
    .re1_i(ub_re1), .raddr1_i(ub_raddr1), .rgnt1_o(ub_rgnt1), .rdata1_o(mm_ub_rdata),
    .re2_i(ub_re2), .raddr2_i(ub_raddr2), .rdata2_o(ub_rdata2)
  );

  // ---------------- depthwise unit (depthwise configuration, rtl/tpu_dw.sv) ----------------
  if (DwWidth > 0) begin : g_dw
    // UB reads: the unit has read port 2 to itself (every request granted at once), so it
    // reads in the same cycles as the feeder (port 1) and the DMA out (port 0). ACC writes: the
    // accumulators' second write port (tpu_accumulators, Dw), beside the MXU's result port.
    logic        dw_ub_re, dw_ub_rgnt, dw_unit_busy, dw_acc_wacc;
    logic [23:0] dw_ub_raddr;
    logic [15:0] dw_acc_waddr16;
    assign ub_re1     = mm_ub_re;
    assign ub_raddr1  = mm_ub_raddr;
    assign mm_ub_rgnt = ub_rgnt1;
    assign ub_re2     = dw_ub_re;
    assign ub_raddr2  = UbW'(dw_ub_raddr);
    assign dw_ub_rgnt = 1'b1;
    tpu_dw #(.N(N), .DwWidth(DwWidth)) u_dw (
      .clk_i, .rst_ni, .clear_i(clear),
      .cmd_valid_i(dw_cmd_valid), .cmd_ready_o(dw_cmd_ready), .cmd_i(dw_cmd),
      .ub_re_o(dw_ub_re), .ub_raddr_o(dw_ub_raddr), .ub_rgnt_i(dw_ub_rgnt),
      .ub_rdata_i(ub_rdata2),
      .acc_we_o(dw_acc_we), .acc_waddr_o(dw_acc_waddr16), .acc_wacc_o(dw_acc_wacc),
      .acc_wdata_o(dw_acc_wdata), .acc_wgnt_i(dw_acc_wgnt),
      .busy_o(dw_unit_busy)
    );
    assign dw_acc_acc   = dw_acc_wacc;
    assign dw_acc_waddr = AccW'(dw_acc_waddr16);
    // Busy until its last row is in the accumulators (the write a cycle after its grant).
    assign dw_busy = dw_unit_busy || dw_acc_pend;
    logic unused_dw_addr;
    assign unused_dw_addr = ^{dw_ub_raddr, dw_acc_waddr16};
  end else begin : g_no_dw
    assign ub_re1       = mm_ub_re;
    assign ub_raddr1    = mm_ub_raddr;
    assign mm_ub_rgnt   = ub_rgnt1;
    assign ub_re2       = 1'b0;
    assign ub_raddr2    = '0;
    assign dw_cmd_ready = 1'b0;
    assign dw_busy      = 1'b0;
    assign dw_acc_we    = 1'b0;
    assign dw_acc_acc   = 1'b0;
    assign dw_acc_waddr = '0;
    assign dw_acc_wdata = '0;
    logic unused_no_dw;
    assign unused_no_dw = ^{dw_cmd_valid, dw_cmd, dw_acc_wgnt, dw_acc_pend, ub_rdata2};
  end

  // ---------------- training chip: VMEM and its units ----------------
  if (VmemRows != 0) begin : g_train
    // VMEM clients. Read: 0 DMA out (write_vmem; port 0, first: never refused), 1 the move
    // unit (transpose; port 1), 2 the matmul feeder (matmul_bf16; port 1), 3 load_weights
    // (port 0), then the vector unit's wide A (port 0) and B (port 1). Write: 0 DMA in
    // (read_vmem; first: never refused), 1 the move unit, (2 the link unit's writer,) then the
    // move unit's second (acc_to_vmem's pairs), then the vector unit's wide write.
    // With links (the ICI block): read client 4 the send engines (port 0), 5 the reduces'
    // local rows (port 1); write client 2 the link unit's writer.
    localparam int unsigned RdClients = IciLinks > 0 ? 6 : 4;
    localparam int unsigned WrClients = IciLinks > 0 ? 4 : 3;
    localparam int unsigned Mv2       = WrClients - 1;  // the move unit's second write client
    localparam logic [RdClients-1:0] RdPorts = RdClients'(6'b10_0110);
    logic [RdClients-1:0]        vm_re, vm_rgnt;
    logic [16*RdClients-1:0]     vm_raddr;
    logic [32*N*RdClients-1:0]   vm_rdata;
    logic [WrClients-1:0]        vm_we, vm_wgnt;
    logic [16*WrClients-1:0]     vm_waddr;
    logic [32*N*WrClients-1:0]   vm_wdata;
    // The vector unit's wide ports, bank-indexed (rtl/tpu_vmem.sv).
    logic [VpuRows-1:0]          vpu_a_re, vpu_b_re, vpu_we;
    logic [16*VpuRows-1:0]       vpu_a_raddr, vpu_b_raddr, vpu_waddr;
    logic [32*N*VpuRows-1:0]     vpu_a_rdata, vpu_b_rdata, vpu_wdata;
    logic [VpuRows-1:0]          vpu_a_rgnt, vpu_b_rgnt, vpu_wgnt;  // per bank
    logic                        dmain_vm_busy, move_acc_re, vec_idle;
    logic [AccW-1:0]             move_acc_raddr;

    tpu_vmem #(.N(N), .VmemRows(VmemRows), .VpuRows(VpuRows), .RdClients(RdClients),
               .WrClients(WrClients), .RdPort(RdPorts)) u_vmem (
      .clk_i, .rst_ni,
      .re_i(vm_re), .raddr_i(vm_raddr), .rgnt_o(vm_rgnt), .rdata_o(vm_rdata),
      .we_i(vm_we), .waddr_i(vm_waddr), .wdata_i(vm_wdata), .wgnt_o(vm_wgnt),
      .va_re_i(vpu_a_re), .va_raddr_i(vpu_a_raddr), .va_rgnt_o(vpu_a_rgnt),
      .va_rdata_o(vpu_a_rdata),
      .vb_re_i(vpu_b_re), .vb_raddr_i(vpu_b_raddr), .vb_rgnt_o(vpu_b_rgnt),
      .vb_rdata_o(vpu_b_rdata),
      .vw_we_i(vpu_we), .vw_waddr_i(vpu_waddr), .vw_wdata_i(vpu_wdata), .vw_wgnt_o(vpu_wgnt)
    );

    // read_vmem / write_vmem on the VMEM port m_vaxi_*; read_host / write_host as on the int8
    // chip (the writer reads the UB directly).
    tpu_vmem_dma_in #(.N(N), .MaxBurst(AxiMaxBurst)) u_vmem_dma_in (
      .clk_i, .rst_ni, .clear_i(clear),
      .cmd_valid_i(dmain_cmd_valid), .cmd_ready_o(dmain_cmd_ready), .cmd_i(dmain_cmd),
      .rd_cmd_valid_o(rd_in_cmd_valid), .rd_cmd_ready_i(rd_in_cmd_ready), .rd_cmd_o(rd_in_cmd),
      .rd_busy_i(rd_in_busy),
      .ar_addr_o(m_vaxi_araddr_o), .ar_len_o(m_vaxi_arlen_o), .ar_valid_o(m_vaxi_arvalid_o),
      .ar_ready_i(m_vaxi_arready_i), .r_data_i(m_vaxi_rdata_i), .r_resp_i(m_vaxi_rresp_i),
      .r_last_i(m_vaxi_rlast_i), .r_valid_i(m_vaxi_rvalid_i), .r_ready_o(m_vaxi_rready_o),
      .vm_w_we_o(vm_we[0]), .vm_w_waddr_o(vm_waddr[0 +: 16]), .vm_w_wdata_o(vm_wdata[0 +: 32*N]),
      .vm_w_wgnt_i(vm_wgnt[0]),
      .busy_o(dmain_vm_busy), .active_o(vdma_rd_active), .err_o(vdma_rd_err),
      .bytes_o(vdma_rd_bytes)
    );
    assign dmain_busy = rd_in_busy || dmain_vm_busy;

    tpu_vmem_dma_out #(.N(N), .MaxBurst(AxiMaxBurst)) u_vmem_dma_out (
      .clk_i, .rst_ni, .clear_i(clear),
      .cmd_valid_i(dmaout_cmd_valid), .cmd_ready_o(dmaout_cmd_ready), .cmd_i(dmaout_cmd),
      .wr_cmd_valid_o(wr_cmd_valid), .wr_cmd_ready_i(wr_cmd_ready), .wr_cmd_o(wr_cmd),
      .wr_busy_i(wr_busy), .wr_err_i(wr_err),
      .aw_addr_o(m_vaxi_awaddr_o), .aw_len_o(m_vaxi_awlen_o), .aw_valid_o(m_vaxi_awvalid_o),
      .aw_ready_i(m_vaxi_awready_i), .w_data_o(m_vaxi_wdata_o), .w_strb_o(m_vaxi_wstrb_o),
      .w_last_o(m_vaxi_wlast_o), .w_valid_o(m_vaxi_wvalid_o), .w_ready_i(m_vaxi_wready_i),
      .b_resp_i(m_vaxi_bresp_i), .b_valid_i(m_vaxi_bvalid_i), .b_ready_o(m_vaxi_bready_o),
      .vm_re_o(vm_re[0]), .vm_raddr_o(vm_raddr[0 +: 16]), .vm_rgnt_i(vm_rgnt[0]),
      .vm_rdata_i(vm_rdata[0 +: 32*N]),
      .busy_o(dmaout_busy), .active_o(vdma_wr_active), .err_o(dmaout_err),
      .bytes_o(vdma_wr_bytes)
    );
    assign dmaout_ub_re     = wr_re;
    assign dmaout_ub_raddr  = wr_raddr;
    assign wr_rdata         = dmaout_ub_rdata;
    assign m_vaxi_arsize_o  = 3'($clog2(VBeatBytes));
    assign m_vaxi_arburst_o = 2'b01;  // INCR
    assign m_vaxi_awsize_o  = 3'($clog2(VBeatBytes));
    assign m_vaxi_awburst_o = 2'b01;  // INCR

    tpu_vmem_move #(.N(N), .AccRows(AccRows)) u_move (
      .clk_i, .rst_ni, .clear_i(clear),
      .cmd_valid_i(move_cmd_valid), .cmd_ready_o(move_cmd_ready), .cmd_i(move_cmd),
      .acc_re_o(move_acc_re), .acc_raddr_o(move_acc_raddr), .acc_rdata_i(act_acc_rdata),
      .acc2_re_o(acc2_re), .acc2_raddr_o(acc2_raddr), .acc2_gnt_i(acc2_gnt),
      .acc2_rdata_i(acc2_rdata),
      .vm_re_o(vm_re[1]), .vm_raddr_o(vm_raddr[16 +: 16]), .vm_rgnt_i(vm_rgnt[1]),
      .vm_rdata_i(vm_rdata[32*N +: 32*N]),
      .vm_w_we_o(vm_we[1]), .vm_w_waddr_o(vm_waddr[16 +: 16]), .vm_w_wdata_o(vm_wdata[32*N +: 32*N]),
      .vm_w_wgnt_i(vm_wgnt[1]),
      .vm_w2_we_o(vm_we[Mv2]), .vm_w2_waddr_o(vm_waddr[16*Mv2 +: 16]),
      .vm_w2_wdata_o(vm_wdata[32*N*Mv2 +: 32*N]), .vm_w2_wgnt_i(vm_wgnt[Mv2]),
      .busy_o(move_busy)
    );
    tpu_vpu #(.N(N), .VpuRows(VpuRows)) u_vpu (
      .clk_i, .rst_ni, .clear_i(clear),
      .cmd_valid_i(vec_cmd_valid), .cmd_ready_o(vec_cmd_ready), .cmd_i(vec_cmd),
      .busy_o(vec_busy), .idle_o(vec_idle),
      .vm_a_re_o(vpu_a_re), .vm_a_raddr_o(vpu_a_raddr), .vm_a_rgnt_i(vpu_a_rgnt),
      .vm_a_rdata_i(vpu_a_rdata),
      .vm_b_re_o(vpu_b_re), .vm_b_raddr_o(vpu_b_raddr), .vm_b_rgnt_i(vpu_b_rgnt),
      .vm_b_rdata_i(vpu_b_rdata),
      .vm_w_we_o(vpu_we), .vm_w_waddr_o(vpu_waddr), .vm_w_wdata_o(vpu_wdata),
      .vm_w_wgnt_i(vpu_wgnt)
    );
    logic unused_vec_idle;
    assign unused_vec_idle = vec_idle;

    // The bf16 matrix path: matmul_bf16's VMEM reads, load_weights, the bf16 array.
    assign vm_re[2]              = mm_vm_re;
    assign vm_raddr[32 +: 16]    = mm_vm_raddr;
    assign mm_vm_rgnt            = vm_rgnt[2];
    assign mm_vm_rdata           = vm_rdata[64*N +: 32*N];

    logic lw_idle;
    tpu_load_weights #(.N(N)) u_load_weights (
      .clk_i, .rst_ni, .clear_i(clear),
      .cmd_valid_i(lw_cmd_valid), .cmd_ready_o(lw_cmd_ready), .cmd_i(lw_cmd),
      .vm_re_o(vm_re[3]), .vm_raddr_o(vm_raddr[48 +: 16]), .vm_rgnt_i(vm_rgnt[3]),
      .vm_rdata_i(vm_rdata[96*N +: 32*N]),
      .push_o(lw_push), .push_row_o(lw_row), .space_i(wfifo_free != '0),
      .done_o(lw_done), .busy_o(lw_busy), .idle_o(lw_idle)
    );
    logic unused_lw;
    assign unused_lw = lw_idle;

    tpu_mxu_fp #(.N(N), .TagW(TagW)) u_mxu_fp (
      .clk_i, .rst_ni,
      .in_valid_i(mxf_valid), .in_data_i(mxf_data), .in_wbuf_i(mxu_wbuf), .in_tag_i(mxu_tag),
      .w_shift_i(wf_shift), .w_row_i(wf_row), .w_commit_i(wf_commit), .w_buf_i(w_buf),
      .out_valid_o(f_out_valid), .out_sum_o(f_out_sum), .out_tag_o(f_out_tag),
      .pre_valid_o(f_pre_valid), .pre_tag_o(f_pre_tag)
    );
    `TPU_ASSERT_NEVER(CoreOneResult, i_out_valid && f_out_valid)
    `TPU_ASSERT_NEVER(CoreOneWeightPush, wdma_push && lw_push)
    `TPU_ASSERT_IMPLIES(CoreVecIdle, !vec_busy, vec_idle)

    assign acc_re    = act_acc_re || move_acc_re;
    assign acc_raddr = move_busy ? move_acc_raddr : act_acc_raddr;
    `TPU_ASSERT_NEVER(CoreAccPortShared, act_acc_re && move_acc_re)

    if (IciLinks > 0) begin : g_ici_vm
      assign vm_re[4]                = ici_vm_r_re;
      assign vm_raddr[64 +: 16]      = ici_vm_r_raddr;
      assign ici_vm_r_rgnt           = vm_rgnt[4];
      assign ici_vm_r_rdata          = vm_rdata[128*N +: 32*N];
      assign vm_re[5]                = ici_vm_q_re;
      assign vm_raddr[80 +: 16]      = ici_vm_q_raddr;
      assign ici_vm_q_rgnt           = vm_rgnt[5];
      assign ici_vm_q_rdata          = vm_rdata[160*N +: 32*N];
      assign vm_we[2]                = ici_vm_w_we;
      assign vm_waddr[32 +: 16]      = ici_vm_w_waddr;
      assign vm_wdata[64*N +: 32*N]  = ici_vm_w_wdata;
      assign ici_vm_w_wgnt           = vm_wgnt[2];
    end else begin : g_no_ici_vm
      assign ici_vm_r_rgnt  = 1'b0;
      assign ici_vm_r_rdata = '0;
      assign ici_vm_q_rgnt  = 1'b0;
      assign ici_vm_q_rdata = '0;
      assign ici_vm_w_wgnt  = 1'b0;
    end
  end else begin : g_int8
    assign ici_vm_r_rgnt    = 1'b0;
    assign ici_vm_r_rdata   = '0;
    assign ici_vm_q_rgnt    = 1'b0;
    assign ici_vm_q_rdata   = '0;
    assign ici_vm_w_wgnt    = 1'b0;
    assign rd_in_cmd_valid  = dmain_cmd_valid;
    assign dmain_cmd_ready  = rd_in_cmd_ready;
    assign rd_in_cmd        = dmain_cmd.dma;
    assign dmain_busy       = rd_in_busy;
    assign wr_cmd_valid     = dmaout_cmd_valid;
    assign dmaout_cmd_ready = wr_cmd_ready;
    assign wr_cmd           = dmaout_cmd;
    assign dmaout_busy      = wr_busy;
    assign dmaout_err       = wr_err;
    assign dmaout_ub_re     = wr_re;
    assign dmaout_ub_raddr  = wr_raddr;
    assign wr_rdata         = dmaout_ub_rdata;
    assign move_cmd_ready   = 1'b0;
    assign move_busy        = 1'b0;
    assign vec_cmd_ready    = 1'b0;
    assign vec_busy         = 1'b0;
    assign lw_cmd_ready     = 1'b0;
    assign lw_busy          = 1'b0;
    assign lw_done          = 1'b0;
    assign lw_push          = 1'b0;
    assign lw_row           = '0;
    assign mm_vm_rgnt       = 1'b0;
    assign mm_vm_rdata      = '0;
    assign f_out_valid      = 1'b0;
    assign f_out_tag        = '0;
    assign f_out_sum        = '0;
    assign f_pre_valid      = 1'b0;
    assign f_pre_tag        = '0;
    assign acc_re           = act_acc_re;
    assign acc_raddr        = act_acc_raddr;
    assign acc2_re          = 1'b0;
    assign acc2_raddr       = '0;
    // No VMEM port: its outputs are tied off, its inputs unused.
    assign vdma_rd_err      = 1'b0;
    assign vdma_rd_active   = 1'b0;
    assign vdma_wr_active   = 1'b0;
    assign vdma_rd_bytes    = '0;
    assign vdma_wr_bytes    = '0;
    assign m_vaxi_araddr_o  = '0;
    assign m_vaxi_arlen_o   = '0;
    assign m_vaxi_arsize_o  = '0;
    assign m_vaxi_arburst_o = '0;
    assign m_vaxi_arvalid_o = 1'b0;
    assign m_vaxi_rready_o  = 1'b0;
    assign m_vaxi_awaddr_o  = '0;
    assign m_vaxi_awlen_o   = '0;
    assign m_vaxi_awsize_o  = '0;
    assign m_vaxi_awburst_o = '0;
    assign m_vaxi_awvalid_o = 1'b0;
    assign m_vaxi_wdata_o   = '0;
    assign m_vaxi_wstrb_o   = '0;
    assign m_vaxi_wlast_o   = 1'b0;
    assign m_vaxi_wvalid_o  = 1'b0;
    assign m_vaxi_bready_o  = 1'b0;
    logic unused_vaxi;
    assign unused_vaxi = ^{m_vaxi_arready_i, m_vaxi_rdata_i, m_vaxi_rresp_i, m_vaxi_rlast_i,
                           m_vaxi_rvalid_i, m_vaxi_awready_i, m_vaxi_wready_i, m_vaxi_bresp_i,
                           m_vaxi_bvalid_i};
    // The int8 chip's commands never carry the training fields.
    logic unused_train;
    assign unused_train = ^{dmain_cmd.vmem, dmain_cmd.bf16, dmain_cmd.stride,
                            dmaout_cmd.vmem, dmaout_cmd.bf16, dmaout_cmd.stride, move_cmd,
                            move_cmd_valid, vec_cmd, vec_cmd_valid, lw_cmd, lw_cmd_valid,
                            mm_cmd_bf16, mm_vm_re, mm_vm_raddr, wf_shift, wf_commit, wf_row,
                            active_bf16, next_bf16, mxf_valid, mxf_data, acc2_gnt, acc2_rdata};
  end

  // ---------------- inter-chip links (pod configuration, rtl/tpu_ici.sv) ----------------
  if (IciLinks > 0) begin : g_ici
    logic ici_busy;  // (the controller looks at each engine)
    logic unused_ici_busy;
    assign unused_ici_busy = ici_busy;
    assign ici_link_up = 16'(ici_link_up_i);
    tpu_ici #(.N(N), .IciLinks(IciLinks), .IciWidth(IciWidth)) u_ici (
      .clk_i, .rst_ni, .clear_i(ici_clear),
      .cmd_valid_i(ici_cmd_valid), .cmd_ready_o(ici_cmd_ready), .cmd_i(ici_cmd),
      .cmd_pc_i(ici_cmd_pc), .tx_busy_o(ici_tx_busy), .rx_busy_o(ici_rx_busy), .busy_o(ici_busy),
      .deadlock_i(ici_deadlock_i),
      .err_o(ici_err), .err_code_o(ici_err_code), .err_pc_o(ici_err_pc),
      .vm_r_re_o(ici_vm_r_re), .vm_r_raddr_o(ici_vm_r_raddr), .vm_r_rgnt_i(ici_vm_r_rgnt),
      .vm_r_rdata_i(ici_vm_r_rdata),
      .vm_q_re_o(ici_vm_q_re), .vm_q_raddr_o(ici_vm_q_raddr), .vm_q_rgnt_i(ici_vm_q_rgnt),
      .vm_q_rdata_i(ici_vm_q_rdata),
      .vm_w_we_o(ici_vm_w_we), .vm_w_waddr_o(ici_vm_w_waddr), .vm_w_wdata_o(ici_vm_w_wdata),
      .vm_w_wgnt_i(ici_vm_w_wgnt),
      .tx_valid_o(ici_tx_valid_o), .tx_first_o(ici_tx_first_o), .tx_rows_o(ici_tx_rows_o),
      .tx_data_o(ici_tx_data_o), .tx_ready_i(ici_tx_ready_i), .tx_want_i(ici_tx_want_i),
      .rx_valid_i(ici_rx_valid_i), .rx_first_i(ici_rx_first_i), .rx_rows_i(ici_rx_rows_i),
      .rx_data_i(ici_rx_data_i), .rx_ready_o(ici_rx_ready_o), .rx_want_o(ici_rx_want_o)
    );
  end else begin : g_no_ici
    // No link unit: the links are never up, no link instruction issues (ERR_OPCODE).
    assign ici_link_up    = '0;
    assign ici_cmd_ready  = 1'b0;
    assign ici_tx_busy    = '0;
    assign ici_rx_busy    = '0;
    assign ici_err        = 1'b0;
    assign ici_err_code   = '0;
    assign ici_err_pc     = '0;
    assign ici_vm_r_re    = 1'b0;
    assign ici_vm_r_raddr = '0;
    assign ici_vm_q_re    = 1'b0;
    assign ici_vm_q_raddr = '0;
    assign ici_vm_w_we    = 1'b0;
    assign ici_vm_w_waddr = '0;
    assign ici_vm_w_wdata = '0;
    assign ici_tx_valid_o = '0;
    assign ici_tx_first_o = '0;
    assign ici_tx_rows_o  = '0;
    assign ici_tx_data_o  = '0;
    assign ici_rx_ready_o = '0;
    assign ici_rx_want_o  = '0;
    logic unused_ici;
    assign unused_ici = ^{ici_link_up_i, ici_deadlock_i, ici_tx_ready_i, ici_tx_want_i,
                          ici_rx_valid_i, ici_rx_first_i, ici_rx_rows_i, ici_rx_data_i,
                          ici_cmd_valid, ici_cmd, ici_cmd_pc, ici_clear, ici_vm_r_rgnt,
                          ici_vm_r_rdata, ici_vm_q_rgnt, ici_vm_q_rdata, ici_vm_w_wgnt,
                          ici_vm_r_re, ici_vm_r_raddr, ici_vm_q_re, ici_vm_q_raddr, ici_vm_w_we,
                          ici_vm_w_waddr, ici_vm_w_wdata};
  end

  // ---------------- performance counters (docs/architecture.md) ----------------
  assign count_inc[0 +: 32] = 32'd1;
  assign count_inc[32 +: 32] = 32'(mxu_valid || mxf_valid);
  assign count_inc[64 +: 32] = (mxu_valid || mxf_valid) ? 32'(N * N) : 32'd0;
  assign count_inc[96 +: 32] = 32'(mm_weight_stall);
  assign count_inc[128 +: 32] = 32'(input_stall);
  assign count_inc[160 +: 32] = 32'(fetch_active || dmain_active || wdma_active || dmaout_active ||
                                   vdma_rd_active || vdma_wr_active);
  // Bytes of every beat on m_axi_*, and the bytes of read_vmem / write_vmem rows a beat of the
  // VMEM port carries (its other bytes are dropped or not strobed).
  assign count_inc[192 +: 32] = ((m_axi_rvalid_i && m_axi_rready_o) ? 32'(BeatBytes) : 32'd0) +
                                vdma_rd_bytes + wport_rd_bytes;
  assign count_inc[224 +: 32] = ((m_axi_wvalid_o && m_axi_wready_i) ? 32'(BeatBytes) : 32'd0) +
                                vdma_wr_bytes;
  assign count_inc[256 +: 32] = 32'(retire);
  assign count_inc[288 +: 32] = 32'(act_reading);

  // Row indices and the high bits of legal addresses are only partly used.
  logic unused_core;
  assign unused_core = ^{fetch_idx, wdma_row_idx, wl_idle, dmain_dst, wdma_cmd.tiles,
                         pre_tag[17]};

  // ---------------- parameter legality (docs/architecture.md) ----------------
  `TPU_ASSERT_INIT(ParamN, N >= 4 && N <= 256 && (N & (N - 1)) == 0)
  `TPU_ASSERT_INIT(ParamAxiWidth, (AxiDataWidth == 32 || AxiDataWidth == 64 ||
                                   AxiDataWidth == 128) && (8 * N) % AxiDataWidth == 0)
  `TPU_ASSERT_INIT(ParamAxiBurst, AxiMaxBurst >= 1 && AxiMaxBurst <= 256)
  `TPU_ASSERT_INIT(ParamVaxiWidth, VaxiDataWidth == ((VmemRows != 0) ? 32 * N : 32))
  `TPU_ASSERT_INIT(ParamWaxiWidth, WaxiDataWidth == 0 ||
                   (WaxiDataWidth >= 128 && WaxiDataWidth <= 8 * N &&
                    (WaxiDataWidth & (WaxiDataWidth - 1)) == 0))
  `TPU_ASSERT_INIT(ParamUbRows, UbRows >= 4 && UbRows <= (1 << 24) && (UbRows & (UbRows - 1)) == 0)
  `TPU_ASSERT_INIT(ParamAccRows, AccRows >= 2 && AccRows <= (1 << 16) &&
                                 (AccRows & (AccRows - 1)) == 0)
  `TPU_ASSERT_INIT(ParamQpSlots, QpSlots >= 1 && QpSlots <= 16)
  `TPU_ASSERT_INIT(ParamWFifoTiles, WFifoTiles >= 1)
  `TPU_ASSERT_INIT(ParamVmemRows, VmemRows == 0 || (VmemRows >= 2 && VmemRows <= (1 << 16) &&
                                                    (VmemRows & (VmemRows - 1)) == 0))
  `TPU_ASSERT_INIT(ParamIciLinks, IciLinks == 0 || (IciLinks <= 16 && VmemRows != 0 &&
                                  IciWidth % 8 == 0 && (32 * N) % IciWidth == 0))

  // ---------------- AXI master: valid held and payload stable until ready ----------------
  `TPU_ASSERT_HOLD(AxiArHold, m_axi_arvalid_o, m_axi_arready_i, {m_axi_araddr_o, m_axi_arlen_o})
  `TPU_ASSERT_HOLD(AxiAwHold, m_axi_awvalid_o, m_axi_awready_i, {m_axi_awaddr_o, m_axi_awlen_o})
  `TPU_ASSERT_HOLD(AxiWHold, m_axi_wvalid_o, m_axi_wready_i, {m_axi_wdata_o, m_axi_wlast_o})
  `TPU_ASSERT_HOLD(VaxiArHold, m_vaxi_arvalid_o, m_vaxi_arready_i, {m_vaxi_araddr_o, m_vaxi_arlen_o})
  `TPU_ASSERT_HOLD(VaxiAwHold, m_vaxi_awvalid_o, m_vaxi_awready_i, {m_vaxi_awaddr_o, m_vaxi_awlen_o})
  `TPU_ASSERT_HOLD(VaxiWHold, m_vaxi_wvalid_o, m_vaxi_wready_i,
                   {m_vaxi_wdata_o, m_vaxi_wstrb_o, m_vaxi_wlast_o})
  `TPU_ASSERT_HOLD(WaxiArHold, m_waxi_arvalid_o, m_waxi_arready_i,
                   {m_waxi_araddr_o, m_waxi_arlen_o})
  // AXI4-Lite slave responses likewise.
  `TPU_ASSERT_HOLD(AxilBHold, s_axil_bvalid_o, s_axil_bready_i, s_axil_bresp_o)
  `TPU_ASSERT_HOLD(AxilRHold, s_axil_rvalid_o, s_axil_rready_i, {s_axil_rdata_o, s_axil_rresp_o})
  // A 4 KiB boundary is never crossed by a burst.
  `TPU_ASSERT_IMPLIES(AxiAr4k, m_axi_arvalid_o,
                      {20'd0, m_axi_araddr_o[11:0]} + (32'(m_axi_arlen_o) + 1) * BeatBytes <= 4096)
  `TPU_ASSERT_IMPLIES(AxiAw4k, m_axi_awvalid_o,
                      {20'd0, m_axi_awaddr_o[11:0]} + (32'(m_axi_awlen_o) + 1) * BeatBytes <= 4096)
  `TPU_ASSERT_IMPLIES(VaxiAr4k, m_vaxi_arvalid_o,
                      {20'd0, m_vaxi_araddr_o[11:0]} + (32'(m_vaxi_arlen_o) + 1) * VBeatBytes <= 4096)
  `TPU_ASSERT_IMPLIES(VaxiAw4k, m_vaxi_awvalid_o,
                      {20'd0, m_vaxi_awaddr_o[11:0]} + (32'(m_vaxi_awlen_o) + 1) * VBeatBytes <= 4096)
  `TPU_ASSERT_IMPLIES(WaxiAr4k, m_waxi_arvalid_o,
                      {20'd0, m_waxi_araddr_o[11:0]} + (32'(m_waxi_arlen_o) + 1) * WBeatBytes <= 4096)
  // The weight port's bursts start on a beat (read_weights' host_addr is beat-aligned there).
  `TPU_ASSERT_IMPLIES(WaxiArAlign, m_waxi_arvalid_o, 32'(m_waxi_araddr_o) % WBeatBytes == 0)
  // The VMEM port's bursts start on a beat.
  `TPU_ASSERT_IMPLIES(VaxiArAlign, m_vaxi_arvalid_o, 32'(m_vaxi_araddr_o) % VBeatBytes == 0)
  `TPU_ASSERT_IMPLIES(VaxiAwAlign, m_vaxi_awvalid_o, 32'(m_vaxi_awaddr_o) % VBeatBytes == 0)

endmodule

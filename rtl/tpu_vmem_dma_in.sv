// SPDX-License-Identifier: Apache-2.0
// DMA in of the training chip: read_host through the DMA-in unit's tpu_dma_reader (rows of N
// bytes on the device-memory port m_axi_*), read_vmem (docs/isa.md) through tpu_vdma_rd on the
// VMEM port m_vaxi_* (one fp32 VMEM row, 4N bytes, per beat; docs/architecture.md "The VMEM
// port").
//
// One DMA-in instruction at a time, as on the int8 chip: a command is taken only while both
// the reader and tpu_vdma_rd are idle. read_vmem's rows are written through this unit's VMEM
// write client, which has the write port's first priority (never denied). A failing beat of a
// read_vmem pulses err_o (the controller's DMA-in error, ERR_AXI_READ).
`include "tpu_assert.svh"

module tpu_vmem_dma_in #(
  parameter int unsigned N        = 16,
  parameter int unsigned MaxBurst = 256
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,
  // From the controller: read_host or read_vmem.
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_pkg::dma_in_cmd_t      cmd_i,
  // To the reader (read_host).
  output logic                      rd_cmd_valid_o,
  input  logic                      rd_cmd_ready_i,
  output tpu_pkg::dma_rd_cmd_t      rd_cmd_o,
  input  logic                      rd_busy_i,
  // The VMEM port's read channels (read_vmem).
  output logic [31:0]               ar_addr_o,
  output logic [7:0]                ar_len_o,
  output logic                      ar_valid_o,
  input  logic                      ar_ready_i,
  input  logic [32*N-1:0]           r_data_i,
  input  logic [1:0]                r_resp_i,
  input  logic                      r_last_i,
  input  logic                      r_valid_i,
  output logic                      r_ready_o,
  // VMEM write client.
  output logic                      vm_w_we_o,
  output logic [15:0]               vm_w_waddr_o,
  output logic [32*N-1:0]           vm_w_wdata_o,
  input  logic                      vm_w_wgnt_i,
  // A read_vmem is running; active_o: its bursts are on the bus; err_o: pulse, it failed.
  output logic                      busy_o,
  output logic                      active_o,
  output logic                      err_o,
  output logic [31:0]               bytes_o     // read_vmem bytes received this cycle
);
  logic vm_ready, vm_valid;

  assign vm_valid       = cmd_valid_i && cmd_i.vmem && !rd_busy_i;
  assign rd_cmd_valid_o = cmd_valid_i && !cmd_i.vmem && !rd_busy_i && !busy_o;
  assign rd_cmd_o       = cmd_i.dma;
  assign cmd_ready_o    = !rd_busy_i && (cmd_i.vmem ? vm_ready : (rd_cmd_ready_i && !busy_o));

  tpu_vdma_rd #(.N(N), .MaxBurst(MaxBurst)) u_vdma_rd (
    .clk_i, .rst_ni, .clear_i,
    .cmd_valid_i(vm_valid), .cmd_ready_o(vm_ready), .cmd_addr_i(cmd_i.dma.addr),
    .cmd_rows_i(cmd_i.dma.rows), .cmd_stride_i(cmd_i.stride), .cmd_bf16_i(cmd_i.bf16),
    .cmd_vaddr_i(cmd_i.local_addr[15:0]),
    .ar_addr_o, .ar_len_o, .ar_valid_o, .ar_ready_i, .r_data_i, .r_resp_i, .r_last_i,
    .r_valid_i, .r_ready_o,
    .vm_w_we_o, .vm_w_waddr_o, .vm_w_wdata_o, .vm_w_wgnt_i,
    .busy_o, .active_o, .err_o, .bytes_o
  );

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.dest, cmd_i.local_addr[23:16]};

  `TPU_ASSERT_INIT(VmDmaInN, N >= 4 && N % 2 == 0)

endmodule

// SPDX-License-Identifier: Apache-2.0
// DMA out of the training chip: write_host through the DMA-out unit's tpu_dma_writer (UB rows
// on the device-memory port m_axi_*), write_vmem (docs/isa.md) through tpu_vdma_wr on the VMEM
// port m_vaxi_* (one fp32 VMEM row, 4N bytes, per beat; docs/architecture.md "The VMEM port").
//
// One DMA-out instruction at a time: a command is taken only while both the writer and
// tpu_vdma_wr are idle. The writer's UB read port goes straight to the UB. write_vmem reads
// VMEM through this unit's read client, which has its read port's first priority (never
// refused). err_o (read with !busy_o) is the error of the last instruction, whichever path
// ran it.
`include "tpu_assert.svh"

module tpu_vmem_dma_out #(
  parameter int unsigned N        = 16,
  parameter int unsigned MaxBurst = 256
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,
  // From the controller: write_host or write_vmem.
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_pkg::dma_wr_cmd_t      cmd_i,
  // To the writer (write_host).
  output logic                      wr_cmd_valid_o,
  input  logic                      wr_cmd_ready_i,
  output tpu_pkg::dma_wr_cmd_t      wr_cmd_o,
  input  logic                      wr_busy_i,
  input  logic                      wr_err_i,
  // The VMEM port's write channels (write_vmem).
  output logic [31:0]               aw_addr_o,
  output logic [7:0]                aw_len_o,
  output logic                      aw_valid_o,
  input  logic                      aw_ready_i,
  output logic [32*N-1:0]           w_data_o,
  output logic [4*N-1:0]            w_strb_o,
  output logic                      w_last_o,
  output logic                      w_valid_o,
  input  logic                      w_ready_i,
  input  logic [1:0]                b_resp_i,
  input  logic                      b_valid_i,
  output logic                      b_ready_o,
  // VMEM read client.
  output logic                      vm_re_o,
  output logic [15:0]               vm_raddr_o,
  input  logic                      vm_rgnt_i,
  input  logic [32*N-1:0]           vm_rdata_i,
  output logic                      busy_o,
  output logic                      active_o,   // write_vmem traffic on the VMEM port
  output logic [31:0]               bytes_o,    // write_vmem bytes sent this cycle
  output logic                      err_o
);
  logic vm_valid, vm_ready, vm_busy, vm_err, last_vm_q, last_vm_d;

  assign vm_valid       = cmd_valid_i && cmd_i.vmem && !wr_busy_i;
  assign wr_cmd_valid_o = cmd_valid_i && !cmd_i.vmem && !vm_busy;
  assign wr_cmd_o       = cmd_i;
  assign cmd_ready_o    = cmd_i.vmem ? (vm_ready && !wr_busy_i) : (wr_cmd_ready_i && !vm_busy);

  tpu_vdma_wr #(.N(N), .MaxBurst(MaxBurst)) u_vdma_wr (
    .clk_i, .rst_ni, .clear_i,
    .cmd_valid_i(vm_valid), .cmd_ready_o(vm_ready), .cmd_addr_i(cmd_i.host_addr),
    .cmd_rows_i(cmd_i.rows), .cmd_stride_i(cmd_i.stride), .cmd_bf16_i(cmd_i.bf16),
    .cmd_vaddr_i(cmd_i.ub_addr[15:0]),
    .vm_re_o, .vm_raddr_o, .vm_rgnt_i, .vm_rdata_i,
    .aw_addr_o, .aw_len_o, .aw_valid_o, .aw_ready_i, .w_data_o, .w_strb_o, .w_last_o,
    .w_valid_o, .w_ready_i, .b_resp_i, .b_valid_i, .b_ready_o,
    .busy_o(vm_busy), .active_o, .bytes_o, .err_o(vm_err)
  );

  // Which path ran the last instruction (its error is the one reported).
  assign last_vm_d = (cmd_valid_i && cmd_ready_o) ? cmd_i.vmem : last_vm_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) last_vm_q <= 1'b0;
    else         last_vm_q <= last_vm_d;
  end

  assign busy_o = vm_busy || wr_busy_i;
  assign err_o  = last_vm_q ? vm_err : wr_err_i;

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.ub_addr[23:16]};

  `TPU_ASSERT_NEVER(VmDmaOutOneAtATime, vm_busy && wr_busy_i)
  `TPU_ASSERT_INIT(VmDmaOutN, N >= 4 && N % 2 == 0)

endmodule

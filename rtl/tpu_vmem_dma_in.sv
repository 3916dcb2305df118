// SPDX-License-Identifier: Apache-2.0
// DMA in of the training chip: the front of the DMA-in unit's tpu_dma_reader (rows of N bytes)
// that also runs read_vmem (docs/isa.md) into VMEM.
//
// read_host commands pass through to the reader, one at a time (taken only while the reader
// is idle, as the int8 chip's reader does). A read_vmem reads VMEM rows of R = 4N bytes (2N
// with bf16), i.e. K = 4 (2) reader rows each: one reader transfer of rows * K reader rows when
// the rows are contiguous (host_stride 0 or R), else one transfer of K reader rows per VMEM
// row at host_addr + i * host_stride (the reader overlaps consecutive transfers). The reader
// rows are gathered into a VMEM row (bf16: each 16-bit lane widened to fp32 with DAZ,
// tpu_fp_pkg::bf16_to_fp32) and written through this unit's VMEM write client, which has the
// write port's first priority (never denied). The first failing beat ends the read_vmem: the
// rows before it have been written, the reader reports the error (row_err) to the controller.
`include "tpu_assert.svh"

module tpu_vmem_dma_in #(
  parameter int unsigned N = 16
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,
  // From the controller: read_host or read_vmem.
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_pkg::dma_in_cmd_t      cmd_i,
  // To the reader (rows of N bytes).
  output logic                      rd_cmd_valid_o,
  input  logic                      rd_cmd_ready_i,
  output tpu_pkg::dma_rd_cmd_t      rd_cmd_o,
  input  logic                      rd_busy_i,
  input  logic                      row_valid_i,
  input  logic                      row_err_i,
  input  logic [8*N-1:0]            row_data_i,
  // VMEM write client.
  output logic                      vm_w_we_o,
  output logic [15:0]               vm_w_waddr_o,
  output logic [32*N-1:0]           vm_w_wdata_o,
  input  logic                      vm_w_wgnt_i,
  // A read_vmem is running (its reader rows are this unit's, not UB / PARAM / LUT rows).
  output logic                      busy_o
);
  localparam int unsigned Half = N / 2;  // bf16 lanes in a reader row

  logic        active_q, active_d;       // a read_vmem is running
  logic        bf16_q, bf16_d;
  logic        strided_q, strided_d;     // one reader transfer per VMEM row
  logic [31:0] stride_q, stride_d;       // host bytes between VMEM rows (strided)
  logic [31:0] next_host_q, next_host_d; // host address of the next transfer
  logic [23:0] to_issue_q, to_issue_d;   // VMEM rows whose transfer is not yet issued
  logic [23:0] to_write_q, to_write_d;   // VMEM rows not yet written
  logic [15:0] vaddr_q, vaddr_d;         // VMEM row written next
  logic [1:0]  part_q, part_d;           // reader rows of that VMEM row gathered so far
  logic [32*N-1:0] gather_q, gather_d;

  logic vm_start, rd_fire, row_in, row_last;
  logic [2:0] k;                          // reader rows per VMEM row

  assign k        = bf16_q ? 3'd2 : 3'd4;
  assign vm_start = cmd_valid_i && cmd_i.vmem && !active_q && !rd_busy_i;
  assign rd_fire  = rd_cmd_valid_o && rd_cmd_ready_i;
  assign row_in   = active_q && row_valid_i && !row_err_i && !clear_i;
  assign row_last = row_in && 3'(part_q) == k - 3'd1;

  // read_host: straight to the reader while it is idle. read_vmem: taken at once (the unit's
  // own transfers follow).
  assign cmd_ready_o = !active_q && !rd_busy_i && (cmd_i.vmem || rd_cmd_ready_i);
  always_comb begin
    rd_cmd_valid_o = 1'b0;
    rd_cmd_o       = cmd_i.dma;
    if (active_q) begin
      rd_cmd_valid_o = to_issue_q != '0 && !clear_i;
      rd_cmd_o.addr  = next_host_q;
      rd_cmd_o.rows  = strided_q ? 24'(k) : 24'(32'(to_issue_q) * 32'(k));
    end else begin
      rd_cmd_valid_o = cmd_valid_i && !cmd_i.vmem && !rd_busy_i;
    end
  end

  always_comb begin
    active_d    = active_q;
    bf16_d      = bf16_q;
    strided_d   = strided_q;
    stride_d    = stride_q;
    next_host_d = next_host_q;
    to_issue_d  = to_issue_q;
    to_write_d  = to_write_q;
    vaddr_d     = vaddr_q;
    part_d      = part_q;
    gather_d    = gather_q;
    if (clear_i || (active_q && row_valid_i && row_err_i)) begin
      active_d = 1'b0;
    end else if (vm_start) begin
      active_d    = 1'b1;
      bf16_d      = cmd_i.bf16;
      // Contiguous: host_stride 0 or the row size.
      strided_d   = cmd_i.stride != '0 && cmd_i.stride != (cmd_i.bf16 ? 32'(2 * N) : 32'(4 * N));
      stride_d    = cmd_i.stride;
      next_host_d = cmd_i.dma.addr;
      to_issue_d  = cmd_i.dma.rows;
      to_write_d  = cmd_i.dma.rows;
      vaddr_d     = cmd_i.local_addr[15:0];
      part_d      = '0;
    end else if (active_q) begin
      if (rd_fire) begin
        if (strided_q) begin
          to_issue_d  = to_issue_q - 24'd1;
          next_host_d = next_host_q + stride_q;
        end else begin
          to_issue_d = '0;
        end
      end
      if (row_in) begin
        if (bf16_q) begin
          for (int l = 0; l < 32'(Half); l++) begin
            if (part_q[0]) begin
              gather_d[32*(Half+l) +: 32] = tpu_fp_pkg::bf16_to_fp32(row_data_i[16*l +: 16]);
            end else begin
              gather_d[32*l +: 32] = tpu_fp_pkg::bf16_to_fp32(row_data_i[16*l +: 16]);
            end
          end
        end else begin
          for (int p = 0; p < 4; p++) begin
            if (32'(part_q) == p) gather_d[8*N*p +: 8*N] = row_data_i;
          end
        end
        part_d = row_last ? 2'd0 : part_q + 2'd1;
      end
      if (row_last) begin
        vaddr_d    = vaddr_q + 16'd1;
        to_write_d = to_write_q - 24'd1;
        if (to_write_q == 24'd1) active_d = 1'b0;
      end
    end
  end

  // The completed row is written in the cycle its last part arrives.
  assign vm_w_we_o    = row_last;
  assign vm_w_waddr_o = vaddr_q;
  assign vm_w_wdata_o = gather_d;
  assign busy_o       = active_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      active_q <= 1'b0;
    end else begin
      active_q <= active_d;
    end
  end
  // The transfer's state: data, read only while active.
  always_ff @(posedge clk_i) begin
    bf16_q      <= bf16_d;
    strided_q   <= strided_d;
    stride_q    <= stride_d;
    next_host_q <= next_host_d;
    to_issue_q  <= to_issue_d;
    to_write_q  <= to_write_d;
    vaddr_q     <= vaddr_d;
    part_q      <= part_d;
    gather_q    <= gather_d;
  end

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.dest, cmd_i.local_addr[23:16]};

  // The write client has the write port's first priority.
  `TPU_ASSERT_IMPLIES(VmDmaInWriteGranted, vm_w_we_o, vm_w_wgnt_i)
  // Reader rows come only for a transfer of this unit while it runs a read_vmem.
  `TPU_ASSERT_IMPLIES(VmDmaInRowsOwed, row_in, to_write_q != '0)
  `TPU_ASSERT_INIT(VmDmaInN, N >= 4 && N % 2 == 0)

endmodule

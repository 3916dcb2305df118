// SPDX-License-Identifier: Apache-2.0
// DMA out of the training chip: the front of the DMA-out unit's tpu_dma_writer that also runs
// write_vmem (docs/isa.md) from VMEM.
//
// write_host commands pass through to the writer, whose UB read port goes to the UB. A
// write_vmem is cut into writer transfers ("chunks"): the writer sends rows of N bytes, read
// through its UB port, which this unit serves from VMEM instead: writer row s of a chunk is
// part s % K of VMEM row chunk_base + s / K, K = 4 (fp32 lanes, bit for bit) or 2 (bf16: each
// lane rounded with tpu_fp_pkg::fp32_to_bf16, two bytes per lane). Contiguous rows (host_stride
// 0 or the row size) go in chunks of up to UbRows / 4 VMEM rows (the writer's row counter is
// as wide as a UB address), strided rows one VMEM row per chunk. The writer's read is
// synchronous and never refused: this unit's VMEM read client has its read port's first
// priority. A chunk that fails (AXI error) ends the write_vmem; its error is reported as the
// writer's (err_o with !busy_o).
`include "tpu_assert.svh"

module tpu_vmem_dma_out #(
  parameter int unsigned N      = 16,
  parameter int unsigned UbRows = 8192
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,
  // From the controller: write_host or write_vmem.
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_pkg::dma_wr_cmd_t      cmd_i,
  // To the writer.
  output logic                      wr_cmd_valid_o,
  input  logic                      wr_cmd_ready_i,
  output tpu_pkg::dma_wr_cmd_t      wr_cmd_o,
  input  logic                      wr_busy_i,
  input  logic                      wr_err_i,
  // The writer's read port (rows of N bytes) ...
  input  logic                      wr_re_i,
  input  logic [$clog2(UbRows)-1:0] wr_raddr_i,
  output logic [8*N-1:0]            wr_rdata_o,
  // ... served by the UB (write_host) ...
  output logic                      ub_re_o,
  output logic [$clog2(UbRows)-1:0] ub_raddr_o,
  input  logic [8*N-1:0]            ub_rdata_i,
  // ... or by VMEM (write_vmem): this unit's read client.
  output logic                      vm_re_o,
  output logic [15:0]               vm_raddr_o,
  input  logic                      vm_rgnt_i,
  input  logic [32*N-1:0]           vm_rdata_i,
  output logic                      busy_o,
  output logic                      err_o
);
  localparam int unsigned Half  = N / 2;
  localparam int unsigned Chunk = (UbRows / 4 > 1) ? UbRows / 4 : 1;  // VMEM rows per chunk

  logic        active_q, active_d;      // a write_vmem is running
  logic        issued_q, issued_d;      // a chunk was given to the writer
  logic        bf16_q, bf16_d;
  logic        strided_q, strided_d;
  logic [31:0] stride_q, stride_d;
  logic [31:0] next_host_q, next_host_d;
  logic [23:0] rows_left_q, rows_left_d;  // VMEM rows not yet in a chunk
  logic [15:0] base_q, base_d;            // first VMEM row of the current chunk
  logic [15:0] next_base_q, next_base_d;  // ... of the next chunk
  logic [1:0]  part_q, part_d;            // part of the VMEM row read last
  logic [23:0] chunk_rows;
  logic        vm_start, wr_fire, chunk_done;

  assign vm_start   = cmd_valid_i && cmd_i.vmem && !active_q && !wr_busy_i;
  assign wr_fire    = wr_cmd_valid_o && wr_cmd_ready_i;
  // The writer is idle again after a chunk of this write_vmem.
  assign chunk_done = active_q && issued_q && wr_cmd_ready_i && !wr_busy_i;
  assign chunk_rows = strided_q ? 24'd1 :
                      (rows_left_q > 24'(Chunk) ? 24'(Chunk) : rows_left_q);

  assign cmd_ready_o = !active_q && !wr_busy_i && (cmd_i.vmem || wr_cmd_ready_i);
  always_comb begin
    wr_cmd_o       = cmd_i;
    wr_cmd_valid_o = 1'b0;
    if (active_q) begin
      wr_cmd_o           = '0;
      wr_cmd_o.host_addr = next_host_q;
      wr_cmd_o.ub_addr   = '0;
      wr_cmd_o.rows      = 24'(32'(chunk_rows) * (bf16_q ? 32'd2 : 32'd4));
      wr_cmd_valid_o     = !clear_i && rows_left_q != '0 && (!issued_q || chunk_done) &&
                           !(chunk_done && wr_err_i);
    end else begin
      wr_cmd_valid_o = cmd_valid_i && !cmd_i.vmem && !wr_busy_i;
    end
  end

  // The writer's reads: UB rows for write_host, VMEM rows for write_vmem.
  logic [31:0] sub;   // the writer's row index within the chunk
  assign sub        = 32'(wr_raddr_i);
  assign ub_re_o    = wr_re_i && !active_q;
  assign ub_raddr_o = wr_raddr_i;
  assign vm_re_o    = wr_re_i && active_q;
  assign vm_raddr_o = base_q + 16'(bf16_q ? (sub >> 1) : (sub >> 2));

  always_comb begin
    wr_rdata_o = ub_rdata_i;
    if (active_q) begin
      if (bf16_q) begin
        for (int l = 0; l < 32'(Half); l++) begin
          wr_rdata_o[16*l +: 16] = tpu_fp_pkg::fp32_to_bf16(
              part_q[0] ? vm_rdata_i[32*(Half+l) +: 32] : vm_rdata_i[32*l +: 32]);
        end
      end else begin
        wr_rdata_o = vm_rdata_i[8*N*part_q +: 8*N];
      end
    end
  end

  always_comb begin
    active_d    = active_q;
    issued_d    = issued_q;
    bf16_d      = bf16_q;
    strided_d   = strided_q;
    stride_d    = stride_q;
    next_host_d = next_host_q;
    rows_left_d = rows_left_q;
    base_d      = base_q;
    next_base_d = next_base_q;
    part_d      = part_q;
    if (vm_re_o) part_d = bf16_q ? {1'b0, wr_raddr_i[0]} : wr_raddr_i[1:0];
    if (clear_i) begin
      active_d = 1'b0;
    end else if (vm_start) begin
      active_d    = 1'b1;
      issued_d    = 1'b0;
      bf16_d      = cmd_i.bf16;
      strided_d   = cmd_i.stride != '0 && cmd_i.stride != (cmd_i.bf16 ? 32'(2 * N) : 32'(4 * N));
      stride_d    = cmd_i.stride;
      next_host_d = cmd_i.host_addr;
      rows_left_d = cmd_i.rows;
      next_base_d = cmd_i.ub_addr[15:0];
    end else if (active_q) begin
      if (wr_fire) begin
        issued_d    = 1'b1;
        base_d      = next_base_q;
        next_base_d = next_base_q + 16'(chunk_rows);
        rows_left_d = rows_left_q - chunk_rows;
        next_host_d = next_host_q + (strided_q ? stride_q :
                                     32'(chunk_rows) * (bf16_q ? 32'(2 * N) : 32'(4 * N)));
      end else if (chunk_done && (wr_err_i || rows_left_q == '0)) begin
        active_d = 1'b0;   // the last chunk is sent, or a chunk failed
      end
    end
  end

  assign busy_o = active_q || wr_busy_i;
  assign err_o  = wr_err_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      active_q <= 1'b0;
      issued_q <= 1'b0;
    end else begin
      active_q <= active_d;
      issued_q <= issued_d;
    end
  end
  always_ff @(posedge clk_i) begin
    bf16_q      <= bf16_d;
    strided_q   <= strided_d;
    stride_q    <= stride_d;
    next_host_q <= next_host_d;
    rows_left_q <= rows_left_d;
    base_q      <= base_d;
    next_base_q <= next_base_d;
    part_q      <= part_d;
  end

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.ub_addr[23:16], sub[31:16]};

  // The writer's reads are never refused.
  `TPU_ASSERT_IMPLIES(VmDmaOutReadGranted, vm_re_o, vm_rgnt_i)
  `TPU_ASSERT_IMPLIES(VmDmaOutChunk, wr_fire && active_q, chunk_rows != '0)
  `TPU_ASSERT_INIT(VmDmaOutN, N >= 4 && N % 2 == 0)

endmodule

// SPDX-License-Identifier: Apache-2.0
// Vector memory (training chip, docs/isa.md "Vector memory (VMEM)"): VmemRows rows of N 32-bit
// lanes, two read ports and one write port, built from two tpu_sram copies written together
// (as tpu_accumulators), and the arbiter that serves the units' client ports.
//
// Client ports (the convention of every VMEM client, docs/architecture.md): a read client i
// raises re, presents raddr and is granted (rgnt) in the same cycle; the row is on its rdata in
// the cycle after a granted read (only then). A write client raises we with waddr / wdata and
// the row is written at the clock edge when it is granted; a denied client holds its request.
// Read client i uses read port RdPort[i] (0: copy 0, 1: copy 1); on each port, and on the
// write port, the lowest-numbered requesting client wins (fixed priority: client 0 of a port
// is never denied, which the DMA units rely on). A read granted in the cycle a write of the
// same row is granted returns the new row (write-first, both copies).
`include "tpu_assert.svh"

module tpu_vmem #(
  parameter int unsigned N         = 16,
  parameter int unsigned VmemRows  = 8192,
  parameter int unsigned RdClients = 2,
  parameter int unsigned WrClients = 2,
  parameter logic [RdClients-1:0] RdPort = '0   // bit i: the read port of read client i
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  // Read clients: client i in bit i / [16i +: 16].
  input  logic [RdClients-1:0]          re_i,
  input  logic [16*RdClients-1:0]       raddr_i,
  output logic [RdClients-1:0]          rgnt_o,
  output logic [32*N*RdClients-1:0]     rdata_o,   // client i in [32Ni +: 32N]
  // Write clients.
  input  logic [WrClients-1:0]          we_i,
  input  logic [16*WrClients-1:0]       waddr_i,
  input  logic [32*N*WrClients-1:0]     wdata_i,
  output logic [WrClients-1:0]          wgnt_o
);
  localparam int unsigned VmW = $clog2(VmemRows);

  logic [1:0]      port_re;
  logic [2*VmW-1:0] port_raddr;
  logic [64*N-1:0] port_rdata;
  logic            we;
  logic [VmW-1:0]  waddr;
  logic [32*N-1:0] wdata;

  // Read ports: fixed priority among the clients of each port.
  always_comb begin
    port_re    = '0;
    port_raddr = '0;
    rgnt_o     = '0;
    for (int i = 0; i < 32'(RdClients); i++) begin
      if (re_i[i] && !port_re[RdPort[i]]) begin
        port_re[RdPort[i]]               = 1'b1;
        port_raddr[VmW*RdPort[i] +: VmW] = raddr_i[16*i +: VmW];
        rgnt_o[i]                        = 1'b1;
      end
    end
  end
  always_comb begin
    for (int i = 0; i < 32'(RdClients); i++) begin
      rdata_o[32*N*i +: 32*N] = port_rdata[32*N*RdPort[i] +: 32*N];
    end
  end

  // Write port: fixed priority.
  always_comb begin
    we     = 1'b0;
    waddr  = '0;
    wdata  = '0;
    wgnt_o = '0;
    for (int i = 0; i < 32'(WrClients); i++) begin
      if (we_i[i] && !we) begin
        we        = 1'b1;
        waddr     = waddr_i[16*i +: VmW];
        wdata     = wdata_i[32*N*i +: 32*N];
        wgnt_o[i] = 1'b1;
      end
    end
  end

  for (genvar p = 0; p < 2; p++) begin : g_copy
    tpu_sram #(.Depth(VmemRows), .Width(32 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem (
      .clk_i,
      .we_i(we), .waddr_i(waddr), .wdata_i(wdata), .wbe_i('1),
      .re_i(port_re[p]), .raddr_i(port_raddr[VmW*p +: VmW]), .rdata_o(port_rdata[32*N*p +: 32*N])
    );
  end

  // Legal addresses are below VmemRows (the decoder's ERR_VMEM_RANGE), a power of two.
  logic unused_addr;
  always_comb begin
    unused_addr = 1'b0;
    for (int i = 0; i < 32'(RdClients); i++) unused_addr ^= ^(raddr_i[16*i +: 16] >> VmW);
    for (int i = 0; i < 32'(WrClients); i++) unused_addr ^= ^(waddr_i[16*i +: 16] >> VmW);
  end

  `TPU_ASSERT_INIT(VmemRowsPow2, VmemRows >= 2 && VmemRows <= (1 << 16) &&
                                 (VmemRows & (VmemRows - 1)) == 0)
  `TPU_ASSERT(VmemOneWrite, $onehot0(wgnt_o))
  // Only requesting clients are granted; a granted read or write is in range.
  `TPU_ASSERT(VmemGrantRead, (rgnt_o & ~re_i) == '0)
  `TPU_ASSERT(VmemGrantWrite, (wgnt_o & ~we_i) == '0)
  `TPU_ASSERT_IMPLIES(VmemWriteRange, we, 32'(waddr) < VmemRows)

endmodule

// SPDX-License-Identifier: Apache-2.0
// Unified buffer: UbRows x N bytes of activations in two banks (even and odd rows), each one
// tpu_sram (one write port, one synchronous read port). A row is a flat vector, byte c in bits
// [8c +: 8] (ports are flat vectors throughout the RTL: Yosys 0.23 reads no unpacked-array
// ports and no multi-dimensional packed ones).
//
// Two writers and two readers share the banks' ports by fixed priority, per bank:
//   * writes: the DMA in (port 0) always, the activation unit (port 1) unless the DMA in writes
//     the same bank in that cycle (wgnt1_o; the activation unit holds its row until granted);
//   * reads: the DMA out (port 0) always, the matmul feeder (port 1) unless the DMA out reads
//     the same bank (rgnt1_o; the feeder inserts a bubble).
// The data of a read in cycle t is on rdata0_o / rdata1_o in cycle t+1 (only then: the bank's
// read register serves both ports, so it changes when the other port reads that bank; a
// reader that must hold a row reads it again). Both streams that cannot wait (DMA in, DMA out) walk consecutive rows, so
// they take each bank every other cycle and leave the other one to the unit that can.
// Rd2 (the depthwise configuration, rtl/tpu_dw.sv): a third read port (re2_i, raddr2_i,
// rdata2_o) for the depthwise unit, never refused: each bank is two tpu_sram copies written
// together (as the accumulators' two copies make their 2R1W memory), the second read only by
// port 2, so the unit reads in the same cycles as the feeder and the DMA out. Its data is on
// rdata2_o in the cycle after the read and stays there until its next read. Without Rd2 the
// port is tied off (rdata2_o = 0) and nothing of it is built.
// The SRAMs are write-first, so a reader that presents in cycle t the row it uses in cycle t+1
// sees what a combinational read in cycle t+1 would see. The controller's hazard tracking
// guarantees the ports never touch the same row in conflicting ways.
module tpu_unified_buffer #(
  parameter int unsigned N      = 16,
  parameter int unsigned UbRows = 8192,
  parameter bit          Rd2    = 1'b0   // read port 2 (the depthwise unit's)
) (
  input  logic                      clk_i,
  input  logic                      we0_i,
  input  logic [$clog2(UbRows)-1:0] waddr0_i,
  input  logic [8*N-1:0]            wdata0_i,
  input  logic                      we1_i,
  input  logic [$clog2(UbRows)-1:0] waddr1_i,
  input  logic [8*N-1:0]            wdata1_i,
  output logic                      wgnt1_o,
  input  logic                      re0_i,
  input  logic [$clog2(UbRows)-1:0] raddr0_i,
  output logic [8*N-1:0]            rdata0_o,
  input  logic                      re1_i,
  input  logic [$clog2(UbRows)-1:0] raddr1_i,
  output logic                      rgnt1_o,
  output logic [8*N-1:0]            rdata1_o,
  input  logic                      re2_i,
  input  logic [$clog2(UbRows)-1:0] raddr2_i,
  output logic [8*N-1:0]            rdata2_o
);
  localparam int unsigned AW = $clog2(UbRows);

  logic [8*N-1:0] bank_rdata [2];
  // The bank each read port read last: data only, not reset (it selects the read data, which
  // is used only in the cycle after a read).
  logic           rsel0_q, rsel0_d, rsel1_q, rsel1_d;

  assign wgnt1_o = !(we0_i && waddr0_i[0] == waddr1_i[0]);
  assign rgnt1_o = !(re0_i && raddr0_i[0] == raddr1_i[0]);

  for (genvar b = 0; b < 2; b++) begin : g_bank
    logic w0, w1, r0, r1;
    assign w0 = we0_i && waddr0_i[0] == 1'(b);
    assign w1 = we1_i && waddr1_i[0] == 1'(b) && wgnt1_o;
    assign r0 = re0_i && raddr0_i[0] == 1'(b);
    assign r1 = re1_i && raddr1_i[0] == 1'(b) && rgnt1_o;
    tpu_sram #(.Depth(UbRows / 2), .Width(8 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem (
      .clk_i,
      .we_i(w0 || w1), .waddr_i(w0 ? waddr0_i[AW-1:1] : waddr1_i[AW-1:1]),
      .wdata_i(w0 ? wdata0_i : wdata1_i), .wbe_i('1),
      .re_i(r0 || r1), .raddr_i(r0 ? raddr0_i[AW-1:1] : raddr1_i[AW-1:1]),
      .rdata_o(bank_rdata[b])
    );
  end

  if (Rd2) begin : g_rd2
    // The second copy of each bank, read only by port 2; rsel2 as rsel0/rsel1.
    logic [8*N-1:0] bank2_rdata [2];
    logic           rsel2_q, rsel2_d;
    for (genvar b = 0; b < 2; b++) begin : g_bank2
      logic w0, w1, r2;
      assign w0 = we0_i && waddr0_i[0] == 1'(b);
      assign w1 = we1_i && waddr1_i[0] == 1'(b) && wgnt1_o;
      assign r2 = re2_i && raddr2_i[0] == 1'(b);
      tpu_sram #(.Depth(UbRows / 2), .Width(8 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem2 (
        .clk_i,
        .we_i(w0 || w1), .waddr_i(w0 ? waddr0_i[AW-1:1] : waddr1_i[AW-1:1]),
        .wdata_i(w0 ? wdata0_i : wdata1_i), .wbe_i('1),
        .re_i(r2), .raddr_i(raddr2_i[AW-1:1]),
        .rdata_o(bank2_rdata[b])
      );
    end
    assign rsel2_d = re2_i ? raddr2_i[0] : rsel2_q;
    always_ff @(posedge clk_i) rsel2_q <= rsel2_d;
    assign rdata2_o = bank2_rdata[rsel2_q];
  end else begin : g_no_rd2
    logic unused_rd2;
    assign unused_rd2 = ^{re2_i, raddr2_i};
    assign rdata2_o   = '0;
  end

  assign rsel0_d = re0_i ? raddr0_i[0] : rsel0_q;
  assign rsel1_d = (re1_i && rgnt1_o) ? raddr1_i[0] : rsel1_q;
  always_ff @(posedge clk_i) begin
    rsel0_q <= rsel0_d;
    rsel1_q <= rsel1_d;
  end
  assign rdata0_o = bank_rdata[rsel0_q];
  assign rdata1_o = bank_rdata[rsel1_q];

endmodule

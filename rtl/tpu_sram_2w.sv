// SPDX-License-Identifier: Apache-2.0
// Synchronous SRAM with two write ports and one read port: tpu_sram (same registered read,
// same read-during-write rule) with a second write port. Only the accumulators of the
// depthwise configuration use it (rtl/tpu_accumulators.sv, Dw): the MXU's result port and the
// depthwise unit's write port write in the same cycle, on different rows (asserted; the
// controller's row-range hazards keep the two writers apart).
//
// Read-during-write of the same address: with WriteFirst = 1 the read returns the data being
// written by whichever port writes that address, as tpu_sram; with WriteFirst = 0 the old word.
//
// Written so that Yosys infers one memory ($mem_v2 with one synchronous read port and two
// write ports); no reset, like the SRAM macros it stands for. The two ports never write one
// address in the same cycle (asserted by the accumulators, which have the reset).
`include "tpu_assert.svh"

module tpu_sram_2w #(
  parameter int          Depth      = 256,
  parameter int          Width      = 32,
  parameter bit          WriteFirst = 1'b0
) (
  input  logic                       clk_i,
  input  logic                       we_i,
  input  logic [$clog2(Depth)-1:0]   waddr_i,
  input  logic [Width-1:0]           wdata_i,
  input  logic                       we2_i,
  input  logic [$clog2(Depth)-1:0]   waddr2_i,
  input  logic [Width-1:0]           wdata2_i,
  input  logic                       re_i,
  input  logic [$clog2(Depth)-1:0]   raddr_i,
  output logic [Width-1:0]           rdata_o
);
  // verilator tracing_off
  logic [Width-1:0] mem_q [Depth];
  // verilator tracing_on
  logic [Width-1:0] rdata_q;

  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[waddr_i] <= wdata_i;
    if (we2_i) mem_q[waddr2_i] <= wdata2_i;
  end
  always_ff @(posedge clk_i) begin
    if (re_i) begin
      if (WriteFirst && we2_i && waddr2_i == raddr_i)     rdata_q <= wdata2_i;
      else if (WriteFirst && we_i && waddr_i == raddr_i) rdata_q <= wdata_i;
      else                                              rdata_q <= mem_q[raddr_i];
    end
  end
  assign rdata_o = rdata_q;

  `TPU_ASSERT_INIT(Sram2wDepth, Depth >= 2)

endmodule

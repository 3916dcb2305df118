// SPDX-License-Identifier: Apache-2.0
// Unified buffer: UbRows x N bytes of activations. A row is a flat vector, byte c in bits
// [8c +: 8] (ports are flat vectors throughout the RTL: Yosys 0.23 reads no unpacked-array
// ports and no multi-dimensional packed ones).
// Two write ports (DMA in, activation unit) and two combinational read ports (matmul feeder,
// DMA out). The controller's hazard tracking guarantees the ports never touch the same row
// in conflicting ways, so no port priority is needed beyond a fixed one.
module tpu_unified_buffer #(
  parameter int unsigned N      = 16,
  parameter int unsigned UbRows = 8192
) (
  input  logic                      clk_i,
  input  logic                      we0_i,
  input  logic [$clog2(UbRows)-1:0] waddr0_i,
  input  logic [8*N-1:0]            wdata0_i,
  input  logic                      we1_i,
  input  logic [$clog2(UbRows)-1:0] waddr1_i,
  input  logic [8*N-1:0]            wdata1_i,
  input  logic [$clog2(UbRows)-1:0] raddr0_i,
  output logic [8*N-1:0]            rdata0_o,
  input  logic [$clog2(UbRows)-1:0] raddr1_i,
  output logic [8*N-1:0]            rdata1_o
);
  logic [8*N-1:0] mem_q [UbRows];

  always_ff @(posedge clk_i) begin
    if (we0_i) mem_q[waddr0_i] <= wdata0_i;
    if (we1_i) mem_q[waddr1_i] <= wdata1_i;
  end

  assign rdata0_o = mem_q[raddr0_i];
  assign rdata1_o = mem_q[raddr1_i];

endmodule

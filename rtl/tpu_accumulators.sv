// SPDX-License-Identifier: Apache-2.0
// Accumulator memory: AccRows x N x int32.
// The MXU result port writes one row per cycle, overwriting or adding to the stored row
// (read-modify-write in one cycle, wrapping 32-bit adds). The activation unit reads through
// a combinational port.
module tpu_accumulators #(
  parameter int unsigned N       = 16,
  parameter int unsigned AccRows = 2048
) (
  input  logic                       clk_i,
  input  logic                       we_i,
  input  logic                       accumulate_i,
  input  logic [$clog2(AccRows)-1:0] waddr_i,
  input  logic [32*N-1:0]            wdata_i,   // column c in bits [32c +: 32]
  input  logic [$clog2(AccRows)-1:0] raddr_i,
  output logic [32*N-1:0]            rdata_o
);
  logic [32*N-1:0] mem_q [AccRows];

  always_ff @(posedge clk_i) begin
    if (we_i) begin
      logic [32*N-1:0] old, row;
      old = accumulate_i ? mem_q[waddr_i] : '0;
      for (int c = 0; c < 32'(N); c++) begin
        row[32*c +: 32] = old[32*c +: 32] + wdata_i[32*c +: 32];
      end
      mem_q[waddr_i] <= row;
    end
  end

  assign rdata_o = mem_q[raddr_i];

endmodule

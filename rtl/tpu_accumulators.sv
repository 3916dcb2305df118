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
  input  logic signed [31:0]         wdata_i [N],
  input  logic [$clog2(AccRows)-1:0] raddr_i,
  output logic signed [31:0]         rdata_o [N]
);
  logic signed [31:0] mem_q [AccRows][N];

  always_ff @(posedge clk_i) begin
    if (we_i) begin
      logic signed [31:0] row [N];
      for (int c = 0; c < int'(N); c++) begin
        row[c] = (accumulate_i ? mem_q[waddr_i][c] : 32'sd0) + wdata_i[c];
      end
      mem_q[waddr_i] <= row;
    end
  end

  assign rdata_o = mem_q[raddr_i];

endmodule

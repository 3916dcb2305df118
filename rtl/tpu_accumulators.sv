// SPDX-License-Identifier: Apache-2.0
// Accumulator memory: AccRows x N x int32 in two tpu_sram copies (one write port and one
// synchronous read port each), written together.
//
// The MXU result port writes one row per cycle, overwriting or adding to the stored row
// (wrapping 32-bit adds). For an accumulating row the MXU announces the row one cycle ahead
// (pre_*), so the old row is read from copy 0 in that cycle and added when the result
// arrives. Two accumulating rows to the same address in consecutive cycles are handled by the
// SRAM's write-first read.
// The activation unit reads copy 1; its data is on rdata_o in the cycle after the read.
//
// Why two copies: the accumulate read and the activation unit's read both run at one row per
// cycle and overlap (a layer's matmuls accumulate while the previous batch is activated).
// Sharing one read port, the activation unit lost every cycle an accumulating row came out
// (the bundled CNN took 10 % more cycles per image); two 1R1W copies are the 2R1W memory.
//
// Float (the training configuration, issue 30): a row from the bf16 array (fp_i) holds fp32
// sums; accumulating it adds lane by lane with tpu_fp_pkg::fp32_add, ACC = add(ACC, s) as
// docs/isa.md (matmul_bf16) prescribes, and overwriting stores s exactly. Int8 rows add as
// before. Without Float fp_i is ignored.
`include "tpu_assert.svh"

module tpu_accumulators #(
  parameter int unsigned N       = 16,
  parameter int unsigned AccRows = 2048,
  parameter bit          Float   = 1'b0    // fp32 accumulation (training configuration)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  // MXU result port, the cycle before the row arrives.
  input  logic                       pre_valid_i,
  input  logic                       pre_accumulate_i,
  input  logic [$clog2(AccRows)-1:0] pre_addr_i,
  // MXU result port.
  input  logic                       we_i,
  input  logic                       accumulate_i,
  input  logic                       fp_i,      // the row is fp32 (from tpu_mxu_fp; Float only)
  input  logic [$clog2(AccRows)-1:0] waddr_i,
  input  logic [32*N-1:0]            wdata_i,   // column c in bits [32c +: 32]
  // Activation unit read port.
  input  logic                       re_i,
  input  logic [$clog2(AccRows)-1:0] raddr_i,
  output logic [32*N-1:0]            rdata_o
);
  localparam int unsigned AccW = $clog2(AccRows);

  logic            rmw_re;
  logic [32*N-1:0] row, old;

  assign rmw_re = pre_valid_i && pre_accumulate_i;

  logic fp;
  if (Float) begin : g_float
    assign fp = fp_i;
  end else begin : g_int8
    logic unused_fp;
    assign unused_fp = fp_i;
    assign fp        = 1'b0;
  end

  always_comb begin
    row = wdata_i;
    if (we_i && accumulate_i) begin  // the adds only for an accumulating row (simulation cost)
      if (fp) begin
        for (int c = 0; c < 32'(N); c++) begin
          row[32*c +: 32] = tpu_fp_pkg::fp32_add(old[32*c +: 32], wdata_i[32*c +: 32]);
        end
      end else begin
        for (int c = 0; c < 32'(N); c++) row[32*c +: 32] = old[32*c +: 32] + wdata_i[32*c +: 32];
      end
    end
  end

  tpu_sram #(.Depth(AccRows), .Width(32 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem_rmw (
    .clk_i,
    .we_i, .waddr_i, .wdata_i(row), .wbe_i('1),
    .re_i(rmw_re), .raddr_i(pre_addr_i), .rdata_o(old)
  );
  tpu_sram #(.Depth(AccRows), .Width(32 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem_act (
    .clk_i,
    .we_i, .waddr_i, .wdata_i(row), .wbe_i('1),
    .re_i, .raddr_i, .rdata_o
  );

`ifndef SYNTHESIS
  // An accumulating row finds its old row read in the cycle before.
  logic            rmw_q;
  logic [AccW-1:0] rmw_addr_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rmw_q <= 1'b0;
    else         rmw_q <= rmw_re;
  end
  always_ff @(posedge clk_i) rmw_addr_q <= pre_addr_i;
  `TPU_ASSERT_IMPLIES(AccRmwRead, we_i && accumulate_i, rmw_q && rmw_addr_q == waddr_i)
`endif

endmodule

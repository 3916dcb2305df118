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
// Copy 0's read port serves a second reader (re2_i: the training chip's move unit, the second
// row of each acc_to_vmem pair) in every cycle it reads no old row: granted (gnt2_o, same
// cycle) unless the MXU pre-reads an accumulating row (or, Dw, the depthwise unit's
// accumulating write is granted); the row is on rdata2_o in the next cycle only (a later
// old-row read replaces it). No row is accumulated in the cycle after a grant (no pre-read in
// the grant cycle), so the old-row path never sees the second reader's row.
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
//
// Dw (the depthwise configuration): the depthwise unit (tpu_dw) has a write port of its own,
// a second write port of both copies (tpu_sram_2w), so it writes in the same cycles as the
// MXU's result port, on other rows (the controller's row-range hazards keep the MXU and the
// unit off each other's rows; asserted below). A write request (dw_we_i, held until
// dw_wgnt_o) is granted at once unless it accumulates (dw_acc_i) in a cycle the MXU reads an
// accumulating row (pre_valid_i && pre_accumulate_i): copy 0's one read port fetches the old
// row of one of them. In the grant cycle an accumulating request's old row is read from copy
// 0, in the next cycle the row is written (dw_pend_o) with the same wrapping int32 add as an
// int8 MXU row. Without Dw the ports are ignored (dw_wgnt_o = 0) and both copies are tpu_sram.
`include "tpu_assert.svh"

module tpu_accumulators #(
  parameter int unsigned N       = 16,
  parameter int unsigned AccRows = 2048,
  parameter bit          Float   = 1'b0,   // fp32 accumulation (training configuration)
  parameter bit          Dw      = 1'b0    // the depthwise unit's write port
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
  // The depthwise unit's write port (Dw only): held until granted, written a cycle later.
  input  logic                       dw_we_i,
  input  logic                       dw_acc_i,
  input  logic [$clog2(AccRows)-1:0] dw_waddr_i,
  input  logic [32*N-1:0]            dw_wdata_i,
  output logic                       dw_wgnt_o,
  output logic                       dw_pend_o,  // a granted write not yet in the memory
  // Activation unit read port.
  input  logic                       re_i,
  input  logic [$clog2(AccRows)-1:0] raddr_i,
  output logic [32*N-1:0]            rdata_o,
  // Second read port (copy 0), granted when copy 0 reads no old row.
  input  logic                       re2_i,
  input  logic [$clog2(AccRows)-1:0] raddr2_i,
  output logic                       gnt2_o,
  output logic [32*N-1:0]            rdata2_o
);
  localparam int unsigned AccW = $clog2(AccRows);

  // The memories' write and accumulate-read ports: the MXU's, or (Dw) the depthwise unit's.
  logic                 m_we, m_acc, m_fp, m_rre;
  logic [AccW-1:0]      m_waddr, m_raddr;
  logic [32*N-1:0]      m_wdata;
  logic [32*N-1:0]      row, old;

  logic fp;
  if (Float) begin : g_float
    assign fp = fp_i;
  end else begin : g_int8
    logic unused_fp;
    assign unused_fp = fp_i;
    assign fp        = 1'b0;
  end

  if (Dw) begin : g_dw
    logic            dw_q, dw_d, dw_acc_q;
    logic [AccW-1:0] dw_addr_q;
    logic [32*N-1:0] dw_data_q, dw_row;
    assign dw_wgnt_o = !(dw_acc_i && pre_valid_i && pre_accumulate_i);
    assign dw_pend_o = dw_q;
    assign dw_d      = dw_we_i && dw_wgnt_o;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) dw_q <= 1'b0;
      else         dw_q <= dw_d;
    end
    // Data only, no reset: used only with dw_q.
    always_ff @(posedge clk_i) begin
      if (dw_d) begin
        dw_acc_q  <= dw_acc_i;
        dw_addr_q <= dw_waddr_i;
        dw_data_q <= dw_wdata_i;
      end
    end
    assign m_we    = we_i;
    assign m_acc   = accumulate_i;
    assign m_fp    = fp;
    assign m_waddr = waddr_i;
    assign m_wdata = wdata_i;
    assign gnt2_o  = re2_i && !(pre_valid_i && pre_accumulate_i) && !(dw_d && dw_acc_i);
    assign m_rre   = (pre_valid_i && pre_accumulate_i) || (dw_d && dw_acc_i) || gnt2_o;
    assign m_raddr = (pre_valid_i && pre_accumulate_i) ? pre_addr_i :
                     (dw_d && dw_acc_i)                ? dw_waddr_i : raddr2_i;
    // The unit's row: old holds its old row when it accumulates (the grant gave it the read).
    always_comb begin
      dw_row = dw_data_q;
      if (dw_q && dw_acc_q) begin
        for (int c = 0; c < 32'(N); c++) begin
          dw_row[32*c +: 32] = old[32*c +: 32] + dw_data_q[32*c +: 32];
        end
      end
    end
    tpu_sram_2w #(.Depth(AccRows), .Width(32 * N), .WriteFirst(1'b1)) u_mem_rmw (
      .clk_i,
      .we_i(m_we), .waddr_i(m_waddr), .wdata_i(row),
      .we2_i(dw_q), .waddr2_i(dw_addr_q), .wdata2_i(dw_row),
      .re_i(m_rre), .raddr_i(m_raddr), .rdata_o(old)
    );
    tpu_sram_2w #(.Depth(AccRows), .Width(32 * N), .WriteFirst(1'b1)) u_mem_act (
      .clk_i,
      .we_i(m_we), .waddr_i(m_waddr), .wdata_i(row),
      .we2_i(dw_q), .waddr2_i(dw_addr_q), .wdata2_i(dw_row),
      .re_i, .raddr_i, .rdata_o
    );
`ifndef SYNTHESIS
    // The two writers never write one row in a cycle (the row-range hazards: the MXU and the
    // depthwise unit never share ACC rows), and old serves one of them: never an accumulating
    // MXU row beside an accumulating depthwise row.
    `TPU_ASSERT_NEVER(AccDwMxuSameRow, dw_q && we_i && waddr_i == dw_addr_q)
    `TPU_ASSERT_NEVER(AccDwMxuOneOldRow, dw_q && dw_acc_q && we_i && accumulate_i)
`endif
  end else begin : g_no_dw
    assign dw_wgnt_o = 1'b0;
    assign dw_pend_o = 1'b0;
    logic unused_dw;
    assign unused_dw = ^{dw_we_i, dw_acc_i, dw_waddr_i, dw_wdata_i};
    assign m_we    = we_i;
    assign m_acc   = accumulate_i;
    assign m_fp    = fp;
    assign m_waddr = waddr_i;
    assign m_wdata = wdata_i;
    assign gnt2_o  = re2_i && !(pre_valid_i && pre_accumulate_i);
    assign m_rre   = (pre_valid_i && pre_accumulate_i) || gnt2_o;
    assign m_raddr = (pre_valid_i && pre_accumulate_i) ? pre_addr_i : raddr2_i;
    tpu_sram #(.Depth(AccRows), .Width(32 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem_rmw (
      .clk_i,
      .we_i(m_we), .waddr_i(m_waddr), .wdata_i(row), .wbe_i('1),
      .re_i(m_rre), .raddr_i(m_raddr), .rdata_o(old)
    );
    tpu_sram #(.Depth(AccRows), .Width(32 * N), .ByteEn(1'b0), .WriteFirst(1'b1)) u_mem_act (
      .clk_i,
      .we_i(m_we), .waddr_i(m_waddr), .wdata_i(row), .wbe_i('1),
      .re_i, .raddr_i, .rdata_o
    );
  end

  assign rdata2_o = old;

  always_comb begin
    row = m_wdata;
    if (m_we && m_acc) begin  // the adds only for an accumulating row (simulation cost)
      if (m_fp) begin
        for (int c = 0; c < 32'(N); c++) begin
          row[32*c +: 32] = tpu_fp_pkg::fp32_add(old[32*c +: 32], m_wdata[32*c +: 32]);
        end
      end else begin
        for (int c = 0; c < 32'(N); c++) row[32*c +: 32] = old[32*c +: 32] + m_wdata[32*c +: 32];
      end
    end
  end

`ifndef SYNTHESIS
  // An accumulating row finds its old row read in the cycle before (not the second reader's).
  logic            rmw_q, rd2_q;
  logic [AccW-1:0] rmw_addr_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rmw_q <= 1'b0;
      rd2_q <= 1'b0;
    end else begin
      rmw_q <= m_rre;
      rd2_q <= gnt2_o;
    end
  end
  always_ff @(posedge clk_i) rmw_addr_q <= m_raddr;
  `TPU_ASSERT_IMPLIES(AccRmwRead, m_we && m_acc, rmw_q && !rd2_q && rmw_addr_q == m_waddr)
`endif

endmodule

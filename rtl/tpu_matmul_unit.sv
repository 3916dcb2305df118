// SPDX-License-Identifier: Apache-2.0
// Matmul feeder: walks a matmul's 2-D UB address pattern, one row per cycle, into the MXU.
//
// It accepts the next matmul in the same cycle it feeds the last row of the current one, so
// back-to-back matmuls whose weights are loaded leave no bubble in the array. A matmul with
// `switch` waits (weight stall) until the loader has a tile ready, then tags its first row
// with the new buffer.
//
// Float (the training configuration, issue 30): a command with cmd_bf16_i is a matmul_bf16
// (its fields in the mm_cmd_t as tpu_fp_pkg describes). It walks the same row pattern over
// VMEM through the VMEM read port (same timing: read in cycle t, fed in t+1, a denied read is
// a bubble), rounds each fp32 lane to bf16 (tpu_fp_pkg::fp32_to_bf16) and feeds tpu_mxu_fp
// (mxf_valid_o, mxf_data_o) instead of tpu_mxu; wbuf and tag are shared, so int8 and bf16
// matmuls follow each other in program order through the one weight double buffer, and their
// results leave the two arrays (same latency) in feed order. Without Float the unit is the
// int8 feeder it always was (the bf16 inputs are ignored, the VMEM port and mxf_* are 0).
`include "tpu_assert.svh"

module tpu_matmul_unit #(
  parameter int unsigned N       = 16,
  parameter int unsigned UbRows  = 8192,
  parameter int unsigned TagW    = 18,
  parameter bit          Float   = 1'b0    // matmul_bf16 (training configuration)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       clear_i,
  // Command from the controller: taken while idle or in the cycle the last row is fed.
  input  logic                       cmd_valid_i,
  output logic                       cmd_ready_o,
  input  tpu_pkg::mm_cmd_t           cmd_i,
  input  logic                       cmd_bf16_i,    // it is a matmul_bf16 (Float only)
  // UB read port (synchronous: the row read in cycle t is fed in cycle t+1; the read can be
  // refused, then the feeder inserts a bubble).
  output logic                       ub_re_o,
  output logic [$clog2(UbRows)-1:0]  ub_raddr_o,
  input  logic                       ub_rgnt_i,
  input  logic [8*N-1:0]             ub_rdata_i,
  // VMEM read port (Float only; same convention: data in the cycle after a granted read).
  output logic                       vm_re_o,
  output logic [15:0]                vm_raddr_o,
  input  logic                       vm_rgnt_i,
  input  logic [32*N-1:0]            vm_rdata_i,
  // Weight loader.
  input  logic                       active_buf_i,
  input  logic                       next_valid_i,
  input  logic                       next_buf_i,
  output logic                       switch_o,
  input  logic                       active_bf16_i, // tile types (Float only, assertions)
  input  logic                       next_bf16_i,
  // MXU row input.
  output logic                       mxu_valid_o,
  output logic [9*N-1:0]             mxu_data_o,    // element k in [9k +: 9]
  output logic                       mxu_wbuf_o,
  output logic                       mxu_wuns_o,
  output logic [TagW-1:0]            mxu_tag_o,     // {last, accumulate, acc row}
  // bf16 MXU row input (Float only; mxu_wbuf_o and mxu_tag_o are shared).
  output logic                       mxf_valid_o,
  output logic [16*N-1:0]            mxf_data_o,    // bf16 element k in [16k +: 16]
  // Status.
  output logic                       weight_stall_o
);
  localparam int unsigned UbW  = $clog2(UbRows);
  localparam int unsigned AccW = 16;
  // Row addresses: UB rows, and with Float also 16-bit VMEM rows (exact in the wider width:
  // the rows of a legal command only grow from its first to its last, which is in range).
  localparam int unsigned AW   = (Float && UbW < 16) ? 16 : UbW;

  logic             busy_q, busy_d;
  logic             switch_q, switch_d;     // the next row is the first of a `switch` matmul
  tpu_pkg::mm_cmd_t cmd_q, cmd_d;           // the matmul being fed
  logic [AW-1:0]    line_q, line_d;         // UB (VMEM) row of the current line start
  logic [AW-1:0]    addr_q, addr_d;         // UB (VMEM) row fed next
  logic [11:0]      i_q, i_d, o_q, o_d;     // inner / outer position of that row
  logic [AccW-1:0]  acc_row_q, acc_row_d;   // its accumulator row
  logic             rd_ok_q, rd_ok_d;       // ub_rdata_i holds row addr_q (its read was granted)
  logic             bf16_q, bf16_d;         // the matmul being fed is a matmul_bf16

  logic feed, last, start, rd, rd_bf16;
  logic bf16, cmd_bf16, vm_ok;              // bf16_q, cmd_bf16_i, a granted VMEM read (Float)

  // UB rows of a legal matmul are below UbRows (checked by the decoder): the high bits of its
  // UB address and outer stride are zero.
  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.ub_addr >> AW, cmd_q.ub_addr, cmd_q.acc_addr, cmd_q.switch_tile,
                        cmd_q.outer_stride >> AW};

  assign weight_stall_o = busy_q && switch_q && !next_valid_i;
  assign feed           = busy_q && !weight_stall_o && rd_ok_q;
  assign last           = feed && (i_q == cmd_q.inner - 1'b1) && (o_q == cmd_q.outer - 1'b1);
  assign cmd_ready_o    = !busy_q || last;
  assign start          = cmd_valid_i && cmd_ready_o;

  // Read, in every cycle the feeder is busy in the next one, the row it feeds then (from VMEM
  // for a matmul_bf16: the new command's type in the cycle it starts).
  assign rd          = start || (busy_q && !last);
  assign rd_bf16     = start ? cmd_bf16 : bf16;
  assign ub_re_o     = rd && !rd_bf16;
  assign ub_raddr_o  = addr_d[UbW-1:0];
  assign mxu_valid_o = feed && !bf16;
  assign mxu_wbuf_o  = switch_q ? next_buf_i : active_buf_i;
  assign mxu_wuns_o  = cmd_q.w_unsigned;
  assign switch_o    = feed && switch_q;
  assign mxu_tag_o   = TagW'({last, cmd_q.acc, acc_row_q});
  always_comb begin
    for (int k = 0; k < 32'(N); k++) begin
      mxu_data_o[9*k +: 9] = {!cmd_q.a_unsigned && ub_rdata_i[8*k+7], ub_rdata_i[8*k +: 8]};
    end
  end

  if (Float) begin : g_float
    assign bf16        = bf16_q;
    assign cmd_bf16    = cmd_bf16_i;
    assign vm_ok       = vm_re_o && vm_rgnt_i;
    assign vm_re_o     = rd && rd_bf16;
    assign vm_raddr_o  = addr_d[15:0];
    assign mxf_valid_o = feed && bf16_q;
    always_comb begin
      for (int k = 0; k < 32'(N); k++) begin
        mxf_data_o[16*k +: 16] = tpu_fp_pkg::fp32_to_bf16(vm_rdata_i[32*k +: 32]);
      end
    end
    if (AW > 16) begin : g_wide
      logic unused_addr;
      assign unused_addr = ^addr_d[AW-1:16];
    end
    // The tile a row uses has the command's type (the decoder's ERR_WEIGHT_TYPE check).
    `TPU_ASSERT_IMPLIES(MmWeightType, feed, (switch_q ? next_bf16_i : active_bf16_i) == bf16_q)
  end else begin : g_int8
    logic unused_float;
    assign unused_float = ^{cmd_bf16_i, vm_rgnt_i, vm_rdata_i, active_bf16_i, next_bf16_i, bf16_q};
    assign bf16         = 1'b0;
    assign cmd_bf16     = 1'b0;
    assign vm_ok        = 1'b0;
    assign vm_re_o      = 1'b0;
    assign vm_raddr_o   = '0;
    assign mxf_valid_o  = 1'b0;
    assign mxf_data_o   = '0;
  end

  always_comb begin
    busy_d    = busy_q;
    switch_d  = switch_q;
    cmd_d     = cmd_q;
    line_d    = line_q;
    addr_d    = addr_q;
    i_d       = i_q;
    o_d       = o_q;
    acc_row_d = acc_row_q;
    bf16_d    = bf16_q;
    rd_ok_d   = (ub_re_o && ub_rgnt_i) || vm_ok;
    if (clear_i) begin
      busy_d   = 1'b0;
      switch_d = 1'b0;
      rd_ok_d  = 1'b0;
    end else begin
      if (start) begin
        busy_d    = 1'b1;
        cmd_d     = cmd_i;
        switch_d  = cmd_i.switch_tile;
        bf16_d    = cmd_bf16;
        line_d    = AW'(cmd_i.ub_addr);
        addr_d    = AW'(cmd_i.ub_addr);
        acc_row_d = cmd_i.acc_addr;
        i_d       = '0;
        o_d       = '0;
      end else if (last) begin
        busy_d = 1'b0;
      end
      if (feed && !start) begin
        switch_d  = 1'b0;
        acc_row_d = acc_row_q + 1'b1;
        if (i_q == cmd_q.inner - 1'b1) begin
          i_d    = '0;
          o_d    = o_q + 1'b1;
          line_d = line_q + AW'(cmd_q.outer_stride);
          addr_d = line_q + AW'(cmd_q.outer_stride);
        end else begin
          i_d    = i_q + 1'b1;
          addr_d = addr_q + AW'(cmd_q.inner_stride);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q   <= 1'b0;
      switch_q <= 1'b0;
      rd_ok_q  <= 1'b0;
    end else begin
      busy_q   <= busy_d;
      switch_q <= switch_d;
      rd_ok_q  <= rd_ok_d;
    end
  end

  // The matmul's fields and position: no reset (used only while busy).
  always_ff @(posedge clk_i) begin
    cmd_q     <= cmd_d;
    line_q    <= line_d;
    bf16_q    <= bf16_d;
    addr_q    <= addr_d;
    i_q       <= i_d;
    o_q       <= o_d;
    acc_row_q <= acc_row_d;
  end

  `TPU_ASSERT_IMPLIES(MmSwitchHasTile, switch_o, next_valid_i)

endmodule

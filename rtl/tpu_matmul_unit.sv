// SPDX-License-Identifier: Apache-2.0
// Matmul feeder: walks a matmul's 2-D UB address pattern, one row per cycle, into the MXU.
//
// It accepts the next matmul in the same cycle it feeds the last row of the current one, so
// back-to-back matmuls whose weights are loaded leave no bubble in the array. A matmul with
// `switch` waits (weight stall) until the loader has a tile ready, then tags its first row
// with the new buffer.
`include "tpu_assert.svh"

module tpu_matmul_unit #(
  parameter int unsigned N       = 16,
  parameter int unsigned UbRows  = 8192,
  parameter int unsigned TagW    = 18
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       clear_i,
  // Command from the controller: taken while idle or in the cycle the last row is fed.
  input  logic                       cmd_valid_i,
  output logic                       cmd_ready_o,
  input  tpu_pkg::mm_cmd_t           cmd_i,
  // UB read port (synchronous: the row read in cycle t is fed in cycle t+1; the read can be
  // refused, then the feeder inserts a bubble).
  output logic                       ub_re_o,
  output logic [$clog2(UbRows)-1:0]  ub_raddr_o,
  input  logic                       ub_rgnt_i,
  input  logic [8*N-1:0]             ub_rdata_i,
  // Weight loader.
  input  logic                       active_buf_i,
  input  logic                       next_valid_i,
  input  logic                       next_buf_i,
  output logic                       switch_o,
  // MXU row input.
  output logic                       mxu_valid_o,
  output logic [9*N-1:0]             mxu_data_o,    // element k in [9k +: 9]
  output logic                       mxu_wbuf_o,
  output logic                       mxu_wuns_o,
  output logic [TagW-1:0]            mxu_tag_o,     // {last, accumulate, acc row}
  // Status.
  output logic                       weight_stall_o
);
  localparam int unsigned UbW  = $clog2(UbRows);
  localparam int unsigned AccW = 16;

  logic             busy_q, busy_d;
  logic             switch_q, switch_d;     // the next row is the first of a `switch` matmul
  tpu_pkg::mm_cmd_t cmd_q, cmd_d;           // the matmul being fed
  logic [UbW-1:0]   line_q, line_d;         // UB row of the current line start
  logic [UbW-1:0]   addr_q, addr_d;         // UB row fed next
  logic [11:0]      i_q, i_d, o_q, o_d;     // inner / outer position of that row
  logic [AccW-1:0]  acc_row_q, acc_row_d;   // its accumulator row
  logic             rd_ok_q, rd_ok_d;       // ub_rdata_i holds row addr_q (its read was granted)

  logic feed, last, start;

  // UB rows of a legal matmul are below UbRows (checked by the decoder): the high bits of its
  // UB address and outer stride are zero.
  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.ub_addr >> UbW, cmd_q.ub_addr, cmd_q.acc_addr, cmd_q.switch_tile,
                        cmd_q.outer_stride >> UbW};

  assign weight_stall_o = busy_q && switch_q && !next_valid_i;
  assign feed           = busy_q && !weight_stall_o && rd_ok_q;
  assign last           = feed && (i_q == cmd_q.inner - 1'b1) && (o_q == cmd_q.outer - 1'b1);
  assign cmd_ready_o    = !busy_q || last;
  assign start          = cmd_valid_i && cmd_ready_o;

  // Read, in every cycle the feeder is busy in the next one, the row it feeds then.
  assign ub_re_o     = start || (busy_q && !last);
  assign ub_raddr_o  = addr_d;
  assign mxu_valid_o = feed;
  assign mxu_wbuf_o  = switch_q ? next_buf_i : active_buf_i;
  assign mxu_wuns_o  = cmd_q.w_unsigned;
  assign switch_o    = feed && switch_q;
  assign mxu_tag_o   = TagW'({last, cmd_q.acc, acc_row_q});
  always_comb begin
    for (int k = 0; k < 32'(N); k++) begin
      mxu_data_o[9*k +: 9] = {!cmd_q.a_unsigned && ub_rdata_i[8*k+7], ub_rdata_i[8*k +: 8]};
    end
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
    rd_ok_d   = ub_re_o && ub_rgnt_i;
    if (clear_i) begin
      busy_d   = 1'b0;
      switch_d = 1'b0;
      rd_ok_d  = 1'b0;
    end else begin
      if (start) begin
        busy_d    = 1'b1;
        cmd_d     = cmd_i;
        switch_d  = cmd_i.switch_tile;
        line_d    = UbW'(cmd_i.ub_addr);
        addr_d    = UbW'(cmd_i.ub_addr);
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
          line_d = line_q + UbW'(cmd_q.outer_stride);
          addr_d = line_q + UbW'(cmd_q.outer_stride);
        end else begin
          i_d    = i_q + 1'b1;
          addr_d = addr_q + UbW'(cmd_q.inner_stride);
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
    addr_q    <= addr_d;
    i_q       <= i_d;
    o_q       <= o_d;
    acc_row_q <= acc_row_d;
  end

  `TPU_ASSERT_IMPLIES(MmSwitchHasTile, switch_o, next_valid_i)

endmodule

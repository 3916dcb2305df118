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
  // UB read port (combinational read).
  output logic [$clog2(UbRows)-1:0]  ub_raddr_o,
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

  logic            busy_q;
  logic            acc_q, a_uns_q, w_uns_q, switch_q;
  logic [UbW-1:0]  line_q;       // UB row of the current line start
  logic [UbW-1:0]  addr_q;       // UB row fed next
  logic [7:0]      inner_stride_q;
  logic [UbW-1:0]  outer_stride_q;
  logic [11:0]     inner_q, outer_q;
  logic [11:0]     i_q, o_q;
  logic [AccW-1:0] acc_row_q;

  logic feed, last, start;

  // UB rows of a legal matmul are below UbRows (checked by the decoder): the high bits of its
  // UB address and outer stride are zero.
  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.ub_addr >> UbW, cmd_i.outer_stride >> UbW};

  assign weight_stall_o = busy_q && switch_q && !next_valid_i;
  assign feed           = busy_q && !weight_stall_o;
  assign last           = feed && (i_q == inner_q - 1'b1) && (o_q == outer_q - 1'b1);
  assign cmd_ready_o    = !busy_q || last;
  assign start          = cmd_valid_i && cmd_ready_o;

  assign ub_raddr_o  = addr_q;
  assign mxu_valid_o = feed;
  assign mxu_wbuf_o  = switch_q ? next_buf_i : active_buf_i;
  assign mxu_wuns_o  = w_uns_q;
  assign switch_o    = feed && switch_q;
  assign mxu_tag_o   = TagW'({last, acc_q, acc_row_q});
  always_comb begin
    for (int k = 0; k < 32'(N); k++) begin
      mxu_data_o[9*k +: 9] = {!a_uns_q && ub_rdata_i[8*k+7], ub_rdata_i[8*k +: 8]};
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      switch_q <= 1'b0;
    end else if (clear_i) begin
      busy_q <= 1'b0;
      switch_q <= 1'b0;
    end else begin
      if (start) begin
        busy_q         <= 1'b1;
        acc_q          <= cmd_i.acc;
        a_uns_q        <= cmd_i.a_unsigned;
        w_uns_q        <= cmd_i.w_unsigned;
        switch_q       <= cmd_i.switch_tile;
        line_q         <= UbW'(cmd_i.ub_addr);
        addr_q         <= UbW'(cmd_i.ub_addr);
        acc_row_q      <= cmd_i.acc_addr;
        inner_q        <= cmd_i.inner;
        outer_q        <= cmd_i.outer;
        inner_stride_q <= cmd_i.inner_stride;
        outer_stride_q <= UbW'(cmd_i.outer_stride);
        i_q            <= '0;
        o_q            <= '0;
      end else if (last) begin
        busy_q <= 1'b0;
      end
      if (feed && !start) begin
        switch_q  <= 1'b0;
        acc_row_q <= acc_row_q + 1'b1;
        if (i_q == inner_q - 1'b1) begin
          i_q    <= '0;
          o_q    <= o_q + 1'b1;
          line_q <= line_q + UbW'(outer_stride_q);
          addr_q <= line_q + UbW'(outer_stride_q);
        end else begin
          i_q    <= i_q + 1'b1;
          addr_q <= addr_q + UbW'(inner_stride_q);
        end
      end
    end
  end

  `TPU_ASSERT_IMPLIES(MmSwitchHasTile, switch_o, next_valid_i)

endmodule

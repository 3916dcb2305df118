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
  // Issue from the controller.
  input  logic                       start_i,
  output logic                       ready_o,
  input  logic [127:0]               instr_i,
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

  logic feed, last;

  // Opcode and reserved fields were checked by the controller; strides beyond the UB size
  // cannot occur in a legal instruction.
  logic unused_instr;
  assign unused_instr = ^{instr_i[127:112], instr_i[15:12], instr_i[7:0], instr_i[111:88]};

  assign weight_stall_o = busy_q && switch_q && !next_valid_i;
  assign feed           = busy_q && !weight_stall_o;
  assign last           = feed && (i_q == inner_q - 1'b1) && (o_q == outer_q - 1'b1);
  assign ready_o        = !busy_q || last;

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
      if (start_i) begin
        busy_q         <= 1'b1;
        acc_q          <= instr_i[8];
        a_uns_q        <= instr_i[9];
        w_uns_q        <= instr_i[10];
        switch_q       <= instr_i[11];
        line_q         <= UbW'(instr_i[39:16]);
        addr_q         <= UbW'(instr_i[39:16]);
        acc_row_q      <= instr_i[55:40];
        inner_q        <= instr_i[67:56];
        outer_q        <= instr_i[79:68];
        inner_stride_q <= instr_i[87:80];
        outer_stride_q <= UbW'(instr_i[111:88]);
        i_q            <= '0;
        o_q            <= '0;
      end else if (last) begin
        busy_q <= 1'b0;
      end
      if (feed && !start_i) begin
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

  `TPU_ASSERT_IMPLIES(MmStartReady, start_i, ready_o)
  `TPU_ASSERT_IMPLIES(MmSwitchHasTile, switch_o, next_valid_i)

endmodule

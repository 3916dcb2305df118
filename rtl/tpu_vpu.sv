// SPDX-License-Identifier: Apache-2.0
// The vector unit (issue 30): executes one decoded `vector` (0x0E) instruction, docs/isa.md
// "vector (0x0E) — vector unit", over VMEM through two read ports (A, B) and one write port in
// the VMEM client convention (grants may be denied in any cycle, read data the cycle after a
// granted read, write-first memory).
//
// Pipeline, one element row (o, i) per cycle when the ports are granted:
//   R  the row walker: requests the row's operand reads (A(o,i) on port A; on port B the row
//      B(o,i) for bmode 0-2, or A(o,i) + 1 for align with s > 0; the row reductions read B only
//      at i = 0). The two ports may be granted in different cycles: a port granted early has
//      its row captured (cap*_q) when the data arrives. The row leaves R in the cycle its last
//      read is granted.
//   X  the cycle after: the data of the reads granted in R's last cycle come straight from the
//      ports, the others from the capture registers; N lanes (rtl/tpu_vpu_lane.sv) compute
//      f(A, B), a lane shift align; the row reductions fold the row into the running value s_q
//      (seeded with B at i = 0) and only the line's last row is written (to D(o,0)); the lane
//      reductions compute the first level of their fixed tree.
//   T  lane reductions only: log2(N) - 1 tree stages, one level each (so no path has more than
//      one fp32 adder); the last one's value goes to every lane.
//   W  a queue of log2(N) + 2 entries of {destination row, data} writing in order through the
//      write port.
// "As if one row at a time in (o, i) order": R does not request a row that is the destination
// of a row still in X, T or W (compared with every one of them), so a later read sees every
// earlier write; a write can only follow its own row's reads, so later writes never overtake
// earlier reads. R requests reads only when the queue will have room for the row's result
// even if nothing is written meanwhile, so X and T never stall; with log2(N) + 2 entries that
// still allows one row per cycle. A row that reads an earlier row's destination waits for that
// write: 3 cycles per row for a chain of such rows (2 + log2(N) for lane reductions).
// A new command is taken when the unit is idle (busy_o low): the controller orders
// instructions by their VMEM row ranges (docs/isa.md "Ordering").
`include "tpu_assert.svh"

module tpu_vpu #(
  parameter int unsigned N = 16  // lanes; a power of two >= 4
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,      // soft reset: drop the instruction in flight

  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_vpu_pkg::vpu_cmd_t     cmd_i,
  output logic                      busy_o,       // an instruction is in flight
  output logic                      idle_o,

  // VMEM read port A
  output logic                      vm_a_re_o,
  output logic [15:0]               vm_a_raddr_o,
  input  logic                      vm_a_rgnt_i,
  input  logic [32*N-1:0]           vm_a_rdata_i,
  // VMEM read port B
  output logic                      vm_b_re_o,
  output logic [15:0]               vm_b_raddr_o,
  input  logic                      vm_b_rgnt_i,
  input  logic [32*N-1:0]           vm_b_rdata_i,
  // VMEM write port
  output logic                      vm_w_we_o,
  output logic [15:0]               vm_w_waddr_o,
  output logic [32*N-1:0]           vm_w_wdata_o,
  input  logic                      vm_w_wgnt_i
);

  localparam int unsigned LW     = $clog2(N);  // tree levels; bits of the align shift
  localparam int unsigned RowW   = 32 * N;
  localparam int unsigned TS     = LW - 1;     // tree stages after X (lane reductions)
  localparam int unsigned WDepth = LW + 2;     // write queue entries: one row per cycle
  localparam int unsigned PtrW   = $clog2(WDepth);
  localparam int unsigned CntW   = $clog2(WDepth + 1);

  // ---------------- command and row walker (R) ----------------
  // The command less its base rows (those start the walker's row registers).
  typedef struct packed {
    logic [31:0] b;
    logic [10:0] dst_outer_stride;
    logic [3:0]  dst_inner_stride;
    logic [10:0] a_outer_stride;
    logic [3:0]  a_inner_stride;
    logic [9:0]  outer;
    logic [7:0]  inner;
    logic [1:0]  bmode;
    logic [5:0]  func;
  } cfg_t;
  cfg_t        cmd_q;
  logic        active_q;                       // R has element rows left to issue
  logic [9:0]  o_q;
  logic [7:0]  i_q;
  logic [15:0] a_line_q, a_cur_q, b_line_q, b_cur_q, d_line_q, d_cur_q;
  logic        a_got_q, b_got_q;               // the row's read on that port was granted

  logic        is_rowred, is_unary, is_align, is_lanered, b_imm;
  logic        need_b, row_wr, last_i, last_o;
  logic [15:0] addr_b, row_dst;
  logic [10:0] b_inner_step, b_outer_step;

  assign is_rowred = tpu_vpu_pkg::vpu_is_row_red(cmd_q.func);
  assign is_unary  = tpu_vpu_pkg::vpu_is_unary(cmd_q.func);
  assign is_align  = tpu_vpu_pkg::vpu_is_align(cmd_q.func);
  assign is_lanered = tpu_vpu_pkg::vpu_is_lane_red(cmd_q.func);
  assign b_imm     = tpu_vpu_pkg::vpu_b_imm(cmd_q.bmode);
  assign last_i    = i_q == cmd_q.inner - 8'd1;
  assign last_o    = o_q == cmd_q.outer - 10'd1;
  // Port B: the B row, or A's next row for align with s > 0 (align has bmode 3).
  assign need_b    = is_align ? cmd_q.b[LW-1:0] != '0
                              : !b_imm && !is_unary && (!is_rowred || i_q == 8'd0);
  assign addr_b    = is_align ? a_cur_q + 16'd1 : b_cur_q;
  assign row_wr    = !is_rowred || last_i;     // the row reductions write once per line
  assign row_dst   = is_rowred ? d_line_q : d_cur_q;

  always_comb begin
    b_inner_step = '0;
    b_outer_step = '0;
    if (tpu_vpu_pkg::vpu_b_steps_with_a(cmd_q.bmode)) begin
      b_inner_step = 11'(cmd_q.a_inner_stride);
      b_outer_step = cmd_q.a_outer_stride;
    end else if (tpu_vpu_pkg::vpu_b_steps_with_d(cmd_q.bmode)) begin
      b_inner_step = 11'(cmd_q.dst_inner_stride);
      b_outer_step = cmd_q.dst_outer_stride;
    end
  end

  // ---------------- write queue (W) and the rows in flight ----------------
  logic [WDepth-1:0]            w_vld_q;
  logic [16*WDepth-1:0]         w_dst_q;   // slot k in [16k +: 16] (flat: Yosys 0.23)
  logic [RowW*WDepth-1:0]       w_data_q;  // slot k in [RowW*k +: RowW]
  logic [PtrW-1:0]              w_rd_q, w_wr_q;
  logic [CntW-1:0]              w_cnt;

  logic        x_valid_q, x_wr_q, x_first_q;   // X: the row whose reads completed last cycle
  logic [15:0] x_dst_q;
  logic [TS-1:0]      t_valid_q;               // lane-reduction rows in the tree stages
  logic [16*TS-1:0]   t_dst_q;                 // stage s - 1 in [16(s-1) +: 16]

  always_comb begin
    w_cnt = '0;
    for (int unsigned k = 0; k < WDepth; k++) w_cnt = w_cnt + CntW'(w_vld_q[k]);
  end

  // A read must wait for the writes of the earlier rows to the same VMEM row.
  function automatic logic pending_write(logic [15:0] row, logic x_valid, logic x_wr,
                                         logic [15:0] x_dst, logic [WDepth-1:0] vld,
                                         logic [16*WDepth-1:0] dst, logic [TS-1:0] t_vld,
                                         logic [16*TS-1:0] t_dst);
    pending_write = x_valid && x_wr && x_dst == row;
    for (int unsigned k = 0; k < TS; k++) begin
      if (t_vld[k] && t_dst[16*k +: 16] == row) pending_write = 1'b1;
    end
    for (int unsigned k = 0; k < WDepth; k++) begin
      if (vld[k] && dst[16*k +: 16] == row) pending_write = 1'b1;
    end
  endfunction

  logic hit_a, hit_b, room, a_done, b_done, row_go;
  assign hit_a  = pending_write(a_cur_q, x_valid_q, x_wr_q, x_dst_q, w_vld_q, w_dst_q,
                                t_valid_q, t_dst_q);
  assign hit_b  = pending_write(addr_b, x_valid_q, x_wr_q, x_dst_q, w_vld_q, w_dst_q,
                                t_valid_q, t_dst_q);
  // The row's result enters the queue two cycles after its last grant (a lane reduction's TS
  // cycles later): room for it even if no queued row is written meanwhile.
  logic [CntW:0] in_flight;
  always_comb begin
    in_flight = (CntW+1)'(w_cnt) + (CntW+1)'(x_valid_q && x_wr_q);
    for (int unsigned k = 0; k < TS; k++) in_flight = in_flight + (CntW+1)'(t_valid_q[k]);
  end
  assign room   = !row_wr || 32'(in_flight) < WDepth;

  assign vm_a_re_o    = active_q && !a_got_q && !hit_a && room;
  assign vm_a_raddr_o = a_cur_q;
  assign vm_b_re_o    = active_q && need_b && !b_got_q && !hit_b && room;
  assign vm_b_raddr_o = addr_b;

  assign a_done = a_got_q || (vm_a_re_o && vm_a_rgnt_i);
  assign b_done = !need_b || b_got_q || (vm_b_re_o && vm_b_rgnt_i);
  assign row_go = active_q && a_done && b_done;

  assign busy_o      = active_q || x_valid_q || t_valid_q != '0 || w_vld_q != '0;
  assign idle_o      = !busy_o;
  assign cmd_ready_o = !busy_o;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cmd_q    <= '0;
      active_q <= 1'b0;
      o_q      <= '0;
      i_q      <= '0;
      a_line_q <= '0;
      a_cur_q  <= '0;
      b_line_q <= '0;
      b_cur_q  <= '0;
      d_line_q <= '0;
      d_cur_q  <= '0;
      a_got_q  <= 1'b0;
      b_got_q  <= 1'b0;
    end else if (clear_i) begin
      active_q <= 1'b0;
      a_got_q  <= 1'b0;
      b_got_q  <= 1'b0;
    end else if (cmd_valid_i && cmd_ready_o) begin
      cmd_q.b                <= cmd_i.b;
      cmd_q.dst_outer_stride <= cmd_i.dst_outer_stride;
      cmd_q.dst_inner_stride <= cmd_i.dst_inner_stride;
      cmd_q.a_outer_stride   <= cmd_i.a_outer_stride;
      cmd_q.a_inner_stride   <= cmd_i.a_inner_stride;
      cmd_q.outer            <= cmd_i.outer;
      cmd_q.inner            <= cmd_i.inner;
      cmd_q.bmode            <= cmd_i.bmode;
      cmd_q.func             <= cmd_i.func;
      active_q <= 1'b1;
      o_q      <= '0;
      i_q      <= '0;
      a_line_q <= cmd_i.a;
      a_cur_q  <= cmd_i.a;
      b_line_q <= cmd_i.b[15:0];
      b_cur_q  <= cmd_i.b[15:0];
      d_line_q <= cmd_i.dst;
      d_cur_q  <= cmd_i.dst;
    end else if (row_go) begin
      a_got_q <= 1'b0;
      b_got_q <= 1'b0;
      if (!last_i) begin
        i_q     <= i_q + 8'd1;
        a_cur_q <= a_cur_q + 16'(cmd_q.a_inner_stride);
        b_cur_q <= b_cur_q + 16'(b_inner_step);
        d_cur_q <= d_cur_q + 16'(cmd_q.dst_inner_stride);
      end else begin
        i_q      <= '0;
        o_q      <= o_q + 10'd1;
        a_line_q <= a_line_q + 16'(cmd_q.a_outer_stride);
        a_cur_q  <= a_line_q + 16'(cmd_q.a_outer_stride);
        b_line_q <= b_line_q + 16'(b_outer_step);
        b_cur_q  <= b_line_q + 16'(b_outer_step);
        d_line_q <= d_line_q + 16'(cmd_q.dst_outer_stride);
        d_cur_q  <= d_line_q + 16'(cmd_q.dst_outer_stride);
        if (last_o) active_q <= 1'b0;
      end
    end else begin
      if (vm_a_re_o && vm_a_rgnt_i) a_got_q <= 1'b1;
      if (vm_b_re_o && vm_b_rgnt_i) b_got_q <= 1'b1;
    end
  end

  // ---------------- operands: the ports' data, or captured ----------------
  logic            a_rv_q, b_rv_q;        // the port's data is valid this cycle
  logic            a_cv_q, b_cv_q;        // the capture register holds the X row's operand
  logic [RowW-1:0] cap_a_q, cap_b_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      a_rv_q <= 1'b0;
      b_rv_q <= 1'b0;
      a_cv_q <= 1'b0;
      b_cv_q <= 1'b0;
    end else if (clear_i) begin
      a_rv_q <= 1'b0;
      b_rv_q <= 1'b0;
      a_cv_q <= 1'b0;
      b_cv_q <= 1'b0;
    end else begin
      a_rv_q <= vm_a_re_o && vm_a_rgnt_i;
      b_rv_q <= vm_b_re_o && vm_b_rgnt_i;
      // Data of a row still waiting for its other port: captured until X consumes it.
      if (a_rv_q && !x_valid_q) a_cv_q <= 1'b1;
      else if (x_valid_q)       a_cv_q <= 1'b0;
      if (b_rv_q && !x_valid_q) b_cv_q <= 1'b1;
      else if (x_valid_q)       b_cv_q <= 1'b0;
    end
  end

  always_ff @(posedge clk_i) begin
    if (a_rv_q) cap_a_q <= vm_a_rdata_i;
    if (b_rv_q) cap_b_q <= vm_b_rdata_i;
  end

  // ---------------- X: compute ----------------
  logic            x_red_q;                // the X row belongs to a row reduction
  logic [RowW-1:0] op_a, port_b, op_b, lane_b, lane_y, tree_y, align_y, x_y, s_q;
  logic [N-1:0]    func_ok;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      x_valid_q <= 1'b0;
      x_wr_q    <= 1'b0;
      x_first_q <= 1'b0;
      x_red_q   <= 1'b0;
      x_dst_q   <= '0;
    end else if (clear_i) begin
      x_valid_q <= 1'b0;
    end else begin
      x_valid_q <= row_go;
      if (row_go) begin
        x_wr_q    <= row_wr;
        x_first_q <= i_q == 8'd0;
        x_red_q   <= is_rowred;
        x_dst_q   <= row_dst;
      end
    end
  end

  assign op_a   = a_rv_q ? vm_a_rdata_i : cap_a_q;
  assign port_b = b_rv_q ? vm_b_rdata_i : cap_b_q;
  assign op_b   = (b_imm && !is_align) ? {N{cmd_q.b}} : port_b;
  // Row reductions: s = op(s, A(o,i)), s = B at the line's first row.
  assign lane_b = (x_red_q && !x_first_q) ? s_q : op_b;

  for (genvar j = 0; j < N; j++) begin : g_lane
    tpu_vpu_lane u_lane (
      .func_i   (cmd_q.func),
      .a_i      (op_a[32*j +: 32]),
      .b_i      (lane_b[32*j +: 32]),
      .y_o      (lane_y[32*j +: 32]),
      .func_ok_o(func_ok[j])
    );
  end

  // Lane reductions: for h = N/2 .. 1, x[j] = op(x[j], x[j + h]) for j < h; x[0] to every lane.
  function automatic logic [31:0] red_op(logic [5:0] f, logic [31:0] x, logic [31:0] y);
    if (f == tpu_vpu_pkg::VLSum)      red_op = tpu_fp_pkg::fp32_add(x, y);
    else if (f == tpu_vpu_pkg::VLMax) red_op = tpu_fp_pkg::fp32_max(x, y);
    else                 red_op = tpu_fp_pkg::fp32_min(x, y);
  endfunction

  // The lane reductions' tree, one level per cycle: X computes level 1 (N/2 values) from A,
  // tree stage s (1 .. TS) holds level s (N >> s values, lanes N - 2(N >> s) on of t_data_q)
  // and computes level s + 1; the last stage's result (level LW) goes to every lane.
  function automatic int unsigned t_off(int unsigned s);
    t_off = N - 2 * (N >> s);
  endfunction

  logic [32*(N-2)-1:0] t_data_q, t_data_d;
  logic [31:0]         tree_res;
  always_comb begin
    t_data_d = '0;
    for (int unsigned j = 0; j < N / 2; j++) begin
      t_data_d[32*j +: 32] = red_op(cmd_q.func, op_a[32*j +: 32], op_a[32*(j + N/2) +: 32]);
    end
    for (int unsigned s = 2; s <= TS; s++) begin
      for (int unsigned j = 0; j < N / 4; j++) begin
        if (j < (N >> s)) begin
          t_data_d[32*(t_off(s) + j) +: 32] =
              red_op(cmd_q.func, t_data_q[32*(t_off(s - 1) + j) +: 32],
                     t_data_q[32*(t_off(s - 1) + j + (N >> s)) +: 32]);
        end
      end
    end
    tree_res = red_op(cmd_q.func, t_data_q[32*t_off(TS) +: 32],
                      t_data_q[32*(t_off(TS) + 1) +: 32]);
  end
  assign tree_y = {N{tree_res}};

  always_ff @(posedge clk_i) begin
    t_data_q <= t_data_d;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      t_valid_q <= '0;
      t_dst_q   <= '0;
    end else if (clear_i) begin
      t_valid_q <= '0;
    end else begin
      t_valid_q <= TS'({t_valid_q, x_valid_q && is_lanered});
      t_dst_q   <= (16*TS)'({t_dst_q, x_dst_q});
    end
  end

  // align: D[j] = A[j + s] for j + s < N, else (A + 1)[j + s - N].
  assign align_y = RowW'({port_b, op_a} >> {cmd_q.b[LW-1:0], 5'd0});

  always_comb begin
    if (is_lanered)                  x_y = tree_y;
    else if (is_align)               x_y = align_y;
    else                             x_y = lane_y;
  end

  always_ff @(posedge clk_i) begin
    if (x_valid_q && x_red_q) s_q <= lane_y;
  end

  // ---------------- W: the write queue ----------------
  logic w_push, w_pop;
  logic [15:0] w_push_dst;
  assign w_push     = is_lanered ? t_valid_q[TS-1] : x_valid_q && x_wr_q;
  assign w_push_dst = is_lanered ? t_dst_q[16*(TS-1) +: 16] : x_dst_q;
  assign w_pop  = vm_w_we_o && vm_w_wgnt_i;

  function automatic logic [PtrW-1:0] ptr_next(logic [PtrW-1:0] p);
    ptr_next = (p == PtrW'(WDepth - 1)) ? '0 : p + PtrW'(1);
  endfunction

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_vld_q <= '0;
      w_rd_q  <= '0;
      w_wr_q  <= '0;
      w_dst_q <= '0;
    end else if (clear_i) begin
      w_vld_q <= '0;
      w_rd_q  <= '0;
      w_wr_q  <= '0;
    end else begin
      if (w_pop) begin
        w_vld_q[w_rd_q] <= 1'b0;
        w_rd_q          <= ptr_next(w_rd_q);
      end
      if (w_push) begin
        w_vld_q[w_wr_q] <= 1'b1;
        w_dst_q[16*w_wr_q +: 16] <= w_push_dst;
        w_wr_q          <= ptr_next(w_wr_q);
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (w_push) w_data_q[RowW*w_wr_q +: RowW] <= x_y;
  end

  assign vm_w_we_o    = w_vld_q[w_rd_q];
  assign vm_w_waddr_o = w_dst_q[16*w_rd_q +: 16];
  assign vm_w_wdata_o = w_data_q[RowW*w_rd_q +: RowW];

  // ---------------- assertions ----------------
  `TPU_ASSERT_INIT(VpuParams, N >= 4 && (N & (N - 1)) == 0)
  // The decoder's range checks (docs/isa.md `vector` faults) hold for every command taken.
  `TPU_ASSERT_IMPLIES(VpuCmdCounts, cmd_valid_i && cmd_ready_o,
                      cmd_i.inner != '0 && cmd_i.outer != '0)
  `TPU_ASSERT_IMPLIES(VpuCmdUnary,
                      cmd_valid_i && cmd_ready_o && tpu_vpu_pkg::vpu_is_unary(cmd_i.func),
                      cmd_i.bmode == 2'd0 && cmd_i.b == '0)
  `TPU_ASSERT_IMPLIES(VpuCmdAlign,
                      cmd_valid_i && cmd_ready_o && tpu_vpu_pkg::vpu_is_align(cmd_i.func),
                      tpu_vpu_pkg::vpu_b_imm(cmd_i.bmode) && cmd_i.b < 32'(N))
  `TPU_ASSERT_IMPLIES(VpuFuncOk, x_valid_q, &func_ok)
  // (Whether an offered command is held is the controller's property: it withdraws it when a
  // run stops, and the unit acts only on cmd_valid_i && cmd_ready_o.)
  // VMEM requests only for an instruction in flight; a denied write holds its request (until
  // a clear drops it).
  `TPU_ASSERT_IMPLIES(VpuReqBusy, vm_a_re_o || vm_b_re_o || vm_w_we_o, busy_o)
  `TPU_ASSERT_HOLD_IF(VpuWriteHold, vm_w_we_o && !clear_i, vm_w_wgnt_i,
                     {vm_w_waddr_o, vm_w_wdata_o}, !clear_i)
  // X has every operand it reads: from a port this cycle or captured earlier.
  `TPU_ASSERT_IMPLIES(VpuOperandA, x_valid_q, a_rv_q != a_cv_q)
  `TPU_ASSERT_IMPLIES(VpuOperandB, x_valid_q && !a_rv_q, b_rv_q)
  `TPU_ASSERT_NEVER(VpuCaptureLost, (a_rv_q && a_cv_q) || (b_rv_q && b_cv_q))
  `TPU_ASSERT_NEVER(VpuQueueOverflow, w_push && w_vld_q[w_wr_q] && !(w_pop && w_rd_q == w_wr_q))
  // No request reads a row an earlier row of the instruction has yet to write.
  `TPU_ASSERT_NEVER(VpuReadAfterWrite, (vm_a_re_o && hit_a) || (vm_b_re_o && hit_b))

endmodule

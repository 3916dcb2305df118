// SPDX-License-Identifier: Apache-2.0
// The vector unit (issue 30): executes one decoded `vector` (0x0E) instruction, docs/isa.md
// "vector (0x0E) — vector unit", over VMEM through two wide read ports (A, B) and one wide
// write port (rtl/tpu_vmem.sv: VpuRows banks interleaved by row, bank-indexed requests and
// grants; any of a port's requested banks may be denied in any cycle; read data the cycle after
// a granted read; write-first memory).
//
// It moves a group of up to VpuRows element rows per cycle: the element rows (o, i) that follow
// the walker's position in (o, i) order, as many as
//   * the instruction has left (a group may span lines; a row reduction's stays in its line);
//   * hit distinct banks on each port: two rows of a group read on one port are in different
//     banks or are the same row (read once, e.g. bmode 2's fixed row); the rows a group writes
//     are in different banks;
//   * do not read a row an earlier row of the group writes, and do not read a row an earlier
//     group has yet to write (below).
// The group is the longest prefix of the VpuRows rows that qualifies (at least the first row):
// contiguous tensors (inner strides 1, lines one after the other) go VpuRows rows per cycle.
//
// Pipeline, one group per cycle when the ports are granted:
//   R  the row walker: requests the group's operand reads (the A rows on port A; on port B the
//      B rows for bmode 0-2, or the A rows + 1 for align with s > 0; the row reductions read B
//      only at i = 0). The two ports, and the banks of a port, may be granted in different
//      cycles: a bank granted early has its row captured (cap*_q, bank by bank) when the data
//      arrives, only the banks still missing are requested again, and the group is fixed from
//      its first grant. The group leaves R in the cycle its last read is granted.
//   X  the cycle after: the data of the reads granted in R's last cycle come straight from the
//      ports, the others from the capture registers; VpuRows x N lanes (rtl/tpu_vpu_lane.sv)
//      compute f(A, B), a lane shift align; the row reductions fold the group's rows into the
//      running value s_q in (o, i) order, one after the other (s = B at i = 0, then
//      s = op(s, A(o,i)): VpuRows fp32 operations in series, the documented order), and only
//      the line's last row is written (to D(o,0)); the lane reductions compute the first level
//      of their fixed tree, one tree per row of the group.
//   T  lane reductions only: log2(N) - 1 tree stages, one level each (so no path has more than
//      one fp32 adder); the last one's value goes to every lane.
//   W  a queue of log2(N) + 2 groups {rows by bank, data} writing in order through the write
//      port; the head group's rows are written bank by bank as granted (a granted bank leaves
//      it), and the group leaves the queue when its last row is written.
// "As if one row at a time in (o, i) order": R does not request a row that is the destination
// of a row still in X, T or W (compared with every one of them), nor groups a row with an
// earlier row of the group that writes what it reads, so a later read sees every earlier write;
// the reads of a group precede its writes, and a write can only follow its own group's reads,
// so later writes never overtake earlier reads. R requests reads only when the queue will have
// room for the group's result even if nothing is written meanwhile, so X and T never stall;
// with log2(N) + 2 entries that still allows one group per cycle. A row that reads an earlier
// row's destination waits for that write: 3 cycles per row for a chain of such rows
// (2 + log2(N) for lane reductions).
// A new command is taken when the unit is idle (busy_o low): the controller orders
// instructions by their VMEM row ranges (docs/isa.md "Ordering").
`include "tpu_assert.svh"

module tpu_vpu #(
  parameter int unsigned N       = 16,  // lanes; a power of two >= 4
  parameter int unsigned VpuRows = 1    // element rows per cycle (VMEM banks): 1, 2, 4 or 8
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      clear_i,      // soft reset: drop the instruction in flight

  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  tpu_vpu_pkg::vpu_cmd_t     cmd_i,
  output logic                      busy_o,       // an instruction is in flight
  output logic                      idle_o,

  // VMEM read port A, bank-indexed: bank k's request in bit k, its row in [16k +: 16]
  output logic [VpuRows-1:0]        vm_a_re_o,
  output logic [16*VpuRows-1:0]     vm_a_raddr_o,
  input  logic [VpuRows-1:0]        vm_a_rgnt_i,  // by bank
  input  logic [32*N*VpuRows-1:0]   vm_a_rdata_i,
  // VMEM read port B
  output logic [VpuRows-1:0]        vm_b_re_o,
  output logic [16*VpuRows-1:0]     vm_b_raddr_o,
  input  logic [VpuRows-1:0]        vm_b_rgnt_i,
  input  logic [32*N*VpuRows-1:0]   vm_b_rdata_i,
  // VMEM write port
  output logic [VpuRows-1:0]        vm_w_we_o,
  output logic [16*VpuRows-1:0]     vm_w_waddr_o,
  output logic [32*N*VpuRows-1:0]   vm_w_wdata_o,
  input  logic [VpuRows-1:0]        vm_w_wgnt_i
);

  localparam int unsigned S      = VpuRows;
  localparam int unsigned LW     = $clog2(N);  // tree levels; bits of the align shift
  localparam int unsigned RowW   = 32 * N;
  localparam int unsigned TS     = LW - 1;     // tree stages after X (lane reductions)
  localparam int unsigned WDepth = LW + 2;     // write queue entries: one group per cycle
  localparam int unsigned PtrW   = $clog2(WDepth);
  localparam int unsigned CntW   = $clog2(WDepth + 1);
  localparam int unsigned BankW  = S > 1 ? $clog2(S) : 1;
  localparam int unsigned GW     = $clog2(S + 1);  // a group's row count

  function automatic logic [BankW-1:0] bank_of(logic [15:0] row);
    bank_of = S > 1 ? BankW'(row & 16'(S - 1)) : '0;
  endfunction

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
  logic [S-1:0] a_got_q, b_got_q;              // the group's banks granted so far, by port
  logic [S-1:0] grp_q;                         // the group, fixed from its first grant

  logic        is_rowred, is_unary, is_align, is_lanered, b_imm, need_b_ew;
  logic [10:0] b_inner_step, b_outer_step;

  assign is_rowred  = tpu_vpu_pkg::vpu_is_row_red(cmd_q.func);
  assign is_unary   = tpu_vpu_pkg::vpu_is_unary(cmd_q.func);
  assign is_align   = tpu_vpu_pkg::vpu_is_align(cmd_q.func);
  assign is_lanered = tpu_vpu_pkg::vpu_is_lane_red(cmd_q.func);
  assign b_imm      = tpu_vpu_pkg::vpu_b_imm(cmd_q.bmode);
  // Port B: the B row, or A's next row for align with s > 0 (align has bmode 3); the row
  // reductions only at i = 0.
  assign need_b_ew  = is_align ? cmd_q.b[LW-1:0] != '0 : !b_imm && !is_unary;

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

  // The walker's position and the S that follow it (k = 0 .. S; slot k in [W*k +: W]).
  logic [11*(S+1)-1:0] st_o;
  logic [8*(S+1)-1:0]  st_i;
  logic [16*(S+1)-1:0] st_al, st_ac, st_bl, st_bc, st_dl, st_dc;
  always_comb begin
    st_o  = '0;
    st_i  = '0;
    st_al = '0;
    st_ac = '0;
    st_bl = '0;
    st_bc = '0;
    st_dl = '0;
    st_dc = '0;
    st_o[10:0]  = 11'(o_q);
    st_i[7:0]   = i_q;
    st_al[15:0] = a_line_q;
    st_ac[15:0] = a_cur_q;
    st_bl[15:0] = b_line_q;
    st_bc[15:0] = b_cur_q;
    st_dl[15:0] = d_line_q;
    st_dc[15:0] = d_cur_q;
    for (int unsigned k = 0; k < S; k++) begin
      if (st_i[8*k +: 8] != cmd_q.inner - 8'd1) begin
        st_o[11*(k+1) +: 11] = st_o[11*k +: 11];
        st_i[8*(k+1) +: 8]   = st_i[8*k +: 8] + 8'd1;
        st_al[16*(k+1) +: 16] = st_al[16*k +: 16];
        st_bl[16*(k+1) +: 16] = st_bl[16*k +: 16];
        st_dl[16*(k+1) +: 16] = st_dl[16*k +: 16];
        st_ac[16*(k+1) +: 16] = st_ac[16*k +: 16] + 16'(cmd_q.a_inner_stride);
        st_bc[16*(k+1) +: 16] = st_bc[16*k +: 16] + 16'(b_inner_step);
        st_dc[16*(k+1) +: 16] = st_dc[16*k +: 16] + 16'(cmd_q.dst_inner_stride);
      end else begin
        st_o[11*(k+1) +: 11] = st_o[11*k +: 11] + 11'd1;
        st_i[8*(k+1) +: 8]   = '0;
        st_al[16*(k+1) +: 16] = st_al[16*k +: 16] + 16'(cmd_q.a_outer_stride);
        st_bl[16*(k+1) +: 16] = st_bl[16*k +: 16] + 16'(b_outer_step);
        st_dl[16*(k+1) +: 16] = st_dl[16*k +: 16] + 16'(cmd_q.dst_outer_stride);
        st_ac[16*(k+1) +: 16] = st_al[16*k +: 16] + 16'(cmd_q.a_outer_stride);
        st_bc[16*(k+1) +: 16] = st_bl[16*k +: 16] + 16'(b_outer_step);
        st_dc[16*(k+1) +: 16] = st_dl[16*k +: 16] + 16'(cmd_q.dst_outer_stride);
      end
    end
  end

  // Slot k's rows and needs.
  logic [16*S-1:0] sa, sb, sd;
  logic [S-1:0]    s_valid, s_needb, s_wr, s_first;
  always_comb begin
    for (int unsigned k = 0; k < S; k++) begin
      sa[16*k +: 16] = st_ac[16*k +: 16];
      sb[16*k +: 16] = is_align ? st_ac[16*k +: 16] + 16'd1 : st_bc[16*k +: 16];
      sd[16*k +: 16] = is_rowred ? st_dl[16*k +: 16] : st_dc[16*k +: 16];
      s_first[k]     = st_i[8*k +: 8] == 8'd0;
      // A row reduction's group stays in the line of its first row.
      s_valid[k]     = is_rowred ? st_o[11*k +: 11] == st_o[10:0]
                                 : st_o[11*k +: 11] < 11'(cmd_q.outer);
      s_needb[k]     = is_rowred ? !b_imm && s_first[k] : need_b_ew;
      s_wr[k]        = !is_rowred || st_i[8*k +: 8] == cmd_q.inner - 8'd1;
    end
  end

  // ---------------- write queue (W) and the rows in flight ----------------
  logic [WDepth-1:0]            w_vld_q;
  logic [S*WDepth-1:0]          w_we_q;    // entry e, bank k: bit S*e + k
  logic [16*S*WDepth-1:0]       w_dst_q;   // entry e, bank k: [16(S*e + k) +: 16]
  logic [RowW*S*WDepth-1:0]     w_data_q;  // entry e, bank k: [RowW(S*e + k) +: RowW]
  logic [PtrW-1:0]              w_rd_q, w_wr_q;
  logic [CntW-1:0]              w_cnt;

  logic            x_valid_q, x_first_q, x_red_q, x_any_wr_q;  // X: the group read last cycle
  logic [S-1:0]    x_mask_q, x_wr_q;                           // its rows; those that write
  logic [16*S-1:0] x_dst_q;
  logic [TS-1:0]      t_valid_q;               // lane-reduction groups in the tree stages
  logic [S*TS-1:0]    t_wr_q;                  // stage s - 1, slot k: bit S(s-1) + k
  logic [16*S*TS-1:0] t_dst_q;

  always_comb begin
    w_cnt = '0;
    for (int unsigned k = 0; k < WDepth; k++) w_cnt = w_cnt + CntW'(w_vld_q[k]);
  end

  // A read must wait for the writes of the earlier groups to the same VMEM row (the queue holds
  // a row in its bank's place: one compare per entry).
  function automatic logic pending_write(logic [15:0] row, logic x_valid, logic [S-1:0] x_wr,
                                         logic [16*S-1:0] x_dst, logic [WDepth-1:0] vld,
                                         logic [S*WDepth-1:0] we, logic [16*S*WDepth-1:0] dst,
                                         logic [TS-1:0] t_vld, logic [S*TS-1:0] t_wr,
                                         logic [16*S*TS-1:0] t_dst);
    logic [BankW-1:0] bk;
    bk = bank_of(row);
    pending_write = 1'b0;
    for (int unsigned k = 0; k < S; k++) begin
      if (x_valid && x_wr[k] && x_dst[16*k +: 16] == row) pending_write = 1'b1;
      for (int unsigned s = 0; s < TS; s++) begin
        if (t_vld[s] && t_wr[S*s + k] && t_dst[16*(S*s + k) +: 16] == row) pending_write = 1'b1;
      end
    end
    for (int unsigned e = 0; e < WDepth; e++) begin
      if (vld[e] && we[S*e + 32'(bk)] && dst[16*(S*e + 32'(bk)) +: 16] == row) begin
        pending_write = 1'b1;
      end
    end
  endfunction

  logic [S-1:0] hit_a, hit_b;
  always_comb begin
    hit_a = '0;
    hit_b = '0;
    for (int unsigned k = 0; k < S; k++) begin
      if (active_q) begin  // (else nothing to compare: a simulator skips the compares)
        hit_a[k] = pending_write(sa[16*k +: 16], x_valid_q, x_wr_q, x_dst_q, w_vld_q, w_we_q,
                                 w_dst_q, t_valid_q, t_wr_q, t_dst_q);
        hit_b[k] = pending_write(sb[16*k +: 16], x_valid_q, x_wr_q, x_dst_q, w_vld_q, w_we_q,
                                 w_dst_q, t_valid_q, t_wr_q, t_dst_q);
      end
    end
  end

  // The group: the longest prefix of rows that qualify (the first row always; its hits only
  // hold back its port's request).
  logic [S-1:0] grp_now, grp, slot_ok;
  always_comb begin
    slot_ok    = '0;
    slot_ok[0] = 1'b1;
    for (int unsigned k = 1; k < S; k++) begin
      if (active_q) begin
        slot_ok[k] = s_valid[k] && !hit_a[k] && !(s_needb[k] && hit_b[k]);
        for (int unsigned j = 0; j < k; j++) begin
          if (bank_of(sa[16*k +: 16]) == bank_of(sa[16*j +: 16]) &&
              sa[16*k +: 16] != sa[16*j +: 16]) slot_ok[k] = 1'b0;
          if (s_needb[k] && s_needb[j] && bank_of(sb[16*k +: 16]) == bank_of(sb[16*j +: 16]) &&
              sb[16*k +: 16] != sb[16*j +: 16]) slot_ok[k] = 1'b0;
          if (s_wr[k] && s_wr[j] && bank_of(sd[16*k +: 16]) == bank_of(sd[16*j +: 16]))
            slot_ok[k] = 1'b0;
          if (s_wr[j] && (sa[16*k +: 16] == sd[16*j +: 16] ||
                          (s_needb[k] && sb[16*k +: 16] == sd[16*j +: 16]))) slot_ok[k] = 1'b0;
        end
      end
    end
    grp_now = '0;
    grp_now[0] = 1'b1;
    for (int unsigned k = 1; k < S; k++) grp_now[k] = grp_now[k-1] && slot_ok[k];
  end
  assign grp = (a_got_q != '0 || b_got_q != '0) ? grp_q : grp_now;

  logic [GW-1:0] grp_n;   // rows in the group
  logic          grp_wr, grp_needb;
  always_comb begin
    grp_n     = '0;
    grp_wr    = 1'b0;
    grp_needb = 1'b0;
    for (int unsigned k = 0; k < S; k++) begin
      grp_n     = grp_n + GW'(grp[k]);
      grp_wr    = grp_wr || (grp[k] && s_wr[k]);
      grp_needb = grp_needb || (grp[k] && s_needb[k]);
    end
  end

  // The group's result enters the queue two cycles after its last grant (a lane reduction's TS
  // cycles later): room for it even if no queued group is written meanwhile.
  logic [CntW:0] in_flight;
  logic          room, a_req, b_req, a_done, b_done, row_go;
  always_comb begin
    in_flight = (CntW+1)'(w_cnt) + (CntW+1)'(x_valid_q && x_any_wr_q);
    for (int unsigned k = 0; k < TS; k++) in_flight = in_flight + (CntW+1)'(t_valid_q[k]);
  end
  assign room  = !grp_wr || 32'(in_flight) < WDepth;
  assign a_req = active_q && !hit_a[0] && room;
  assign b_req = active_q && grp_needb && !hit_b[0] && room;

  // The group's reads by bank on each port (a row several slots read is one request); only the
  // banks not granted yet are requested.
  logic [S-1:0] a_need, b_need, a_gnt, b_gnt;
  always_comb begin
    a_need       = '0;
    b_need       = '0;
    vm_a_raddr_o = '0;
    vm_b_raddr_o = '0;
    for (int unsigned k = 0; k < S; k++) begin
      if (grp[k]) begin
        a_need[bank_of(sa[16*k +: 16])] = 1'b1;
        if (a_req) vm_a_raddr_o[16*32'(bank_of(sa[16*k +: 16])) +: 16] = sa[16*k +: 16];
      end
      if (grp[k] && s_needb[k]) begin
        b_need[bank_of(sb[16*k +: 16])] = 1'b1;
        if (b_req) vm_b_raddr_o[16*32'(bank_of(sb[16*k +: 16])) +: 16] = sb[16*k +: 16];
      end
    end
  end
  assign vm_a_re_o = a_req ? a_need & ~a_got_q : '0;
  assign vm_b_re_o = b_req ? b_need & ~b_got_q : '0;
  assign a_gnt     = vm_a_re_o & vm_a_rgnt_i;
  assign b_gnt     = vm_b_re_o & vm_b_rgnt_i;

  assign a_done = (a_need & ~(a_got_q | a_gnt)) == '0;
  assign b_done = (b_need & ~(b_got_q | b_gnt)) == '0;
  assign row_go = active_q && a_done && b_done;

  assign busy_o      = active_q || x_valid_q || t_valid_q != '0 || w_vld_q != '0;
  assign idle_o      = !busy_o;
  assign cmd_ready_o = !busy_o;

  // The walker's next position: the row after the group.
  logic [9:0]  nx_o;
  logic [7:0]  nx_i;
  logic [15:0] nx_al, nx_ac, nx_bl, nx_bc, nx_dl, nx_dc;
  logic        nx_end;
  always_comb begin
    nx_o   = '0;
    nx_i   = '0;
    nx_al  = '0;
    nx_ac  = '0;
    nx_bl  = '0;
    nx_bc  = '0;
    nx_dl  = '0;
    nx_dc  = '0;
    nx_end = 1'b0;
    for (int unsigned k = 1; k <= S; k++) begin
      if (32'(grp_n) == k) begin
        nx_o   = st_o[11*k +: 10];
        nx_i   = st_i[8*k +: 8];
        nx_al  = st_al[16*k +: 16];
        nx_ac  = st_ac[16*k +: 16];
        nx_bl  = st_bl[16*k +: 16];
        nx_bc  = st_bc[16*k +: 16];
        nx_dl  = st_dl[16*k +: 16];
        nx_dc  = st_dc[16*k +: 16];
        nx_end = st_o[11*k +: 11] == 11'(cmd_q.outer);
      end
    end
  end

  // The walker's registers: a new command, the next group, or the grants of a group in R.
  cfg_t         cmd_d;
  logic         active_d;
  logic [9:0]   o_d;
  logic [7:0]   i_d;
  logic [15:0]  a_line_d, a_cur_d, b_line_d, b_cur_d, d_line_d, d_cur_d;
  logic [S-1:0] a_got_d, b_got_d, grp_d;
  always_comb begin
    cmd_d    = cmd_q;
    active_d = active_q;
    o_d      = o_q;
    i_d      = i_q;
    a_line_d = a_line_q;
    a_cur_d  = a_cur_q;
    b_line_d = b_line_q;
    b_cur_d  = b_cur_q;
    d_line_d = d_line_q;
    d_cur_d  = d_cur_q;
    a_got_d  = a_got_q;
    b_got_d  = b_got_q;
    grp_d    = grp_q;
    if (clear_i) begin
      active_d = 1'b0;
      a_got_d  = '0;
      b_got_d  = '0;
    end else if (cmd_valid_i && cmd_ready_o) begin
      cmd_d.b                = cmd_i.b;
      cmd_d.dst_outer_stride = cmd_i.dst_outer_stride;
      cmd_d.dst_inner_stride = cmd_i.dst_inner_stride;
      cmd_d.a_outer_stride   = cmd_i.a_outer_stride;
      cmd_d.a_inner_stride   = cmd_i.a_inner_stride;
      cmd_d.outer            = cmd_i.outer;
      cmd_d.inner            = cmd_i.inner;
      cmd_d.bmode            = cmd_i.bmode;
      cmd_d.func             = cmd_i.func;
      active_d = 1'b1;
      o_d      = '0;
      i_d      = '0;
      a_line_d = cmd_i.a;
      a_cur_d  = cmd_i.a;
      b_line_d = cmd_i.b[15:0];
      b_cur_d  = cmd_i.b[15:0];
      d_line_d = cmd_i.dst;
      d_cur_d  = cmd_i.dst;
    end else if (row_go) begin
      a_got_d  = '0;
      b_got_d  = '0;
      o_d      = nx_o;
      i_d      = nx_i;
      a_line_d = nx_al;
      a_cur_d  = nx_ac;
      b_line_d = nx_bl;
      b_cur_d  = nx_bc;
      d_line_d = nx_dl;
      d_cur_d  = nx_dc;
      if (nx_end) active_d = 1'b0;
    end else begin
      a_got_d = a_got_q | a_gnt;
      b_got_d = b_got_q | b_gnt;
      if (a_got_q == '0 && b_got_q == '0) grp_d = grp_now;
    end
  end

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
      a_got_q  <= '0;
      b_got_q  <= '0;
      grp_q    <= '0;
    end else begin
      cmd_q    <= cmd_d;
      active_q <= active_d;
      o_q      <= o_d;
      i_q      <= i_d;
      a_line_q <= a_line_d;
      a_cur_q  <= a_cur_d;
      b_line_q <= b_line_d;
      b_cur_q  <= b_cur_d;
      d_line_q <= d_line_d;
      d_cur_q  <= d_cur_d;
      a_got_q  <= a_got_d;
      b_got_q  <= b_got_d;
      grp_q    <= grp_d;
    end
  end

  // ---------------- operands: the ports' data, or captured ----------------
  logic [S-1:0]        a_rv_q, b_rv_q;        // the bank's data is on the port this cycle
  logic [S-1:0]        a_cv_q, b_cv_q;        // the bank's capture register holds X's row
  logic [RowW*S-1:0]   cap_a_q, cap_b_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      a_rv_q <= '0;
      b_rv_q <= '0;
      a_cv_q <= '0;
      b_cv_q <= '0;
    end else if (clear_i) begin
      a_rv_q <= '0;
      b_rv_q <= '0;
      a_cv_q <= '0;
      b_cv_q <= '0;
    end else begin
      a_rv_q <= a_gnt;
      b_rv_q <= b_gnt;
      // Rows of a group still waiting for other banks or the other port: captured until X
      // consumes them.
      a_cv_q <= x_valid_q ? '0 : a_cv_q | a_rv_q;
      b_cv_q <= x_valid_q ? '0 : b_cv_q | b_rv_q;
    end
  end

  // Data only, no reset needed: X takes a bank's captured row as an operand only where a_cv_q /
  // b_cv_q says it was captured (assertions VpuOperandA / VpuOperandB); the other banks' values
  // reach only slots outside X's group (results never written) or an operand the function
  // does not use.
  always_ff @(posedge clk_i) begin
    for (int unsigned k = 0; k < S; k++) begin
      if (a_rv_q[k]) cap_a_q[RowW*k +: RowW] <= vm_a_rdata_i[RowW*k +: RowW];
      if (b_rv_q[k]) cap_b_q[RowW*k +: RowW] <= vm_b_rdata_i[RowW*k +: RowW];
    end
  end

  // ---------------- X: compute ----------------
  logic [BankW*S-1:0] x_asel_q, x_bsel_q;     // slot k's operand banks
  logic [S-1:0]       x_aneed_q, x_bneed_q;   // the banks X reads (assertions)
  logic [RowW*S-1:0]  bank_a, bank_b, op_a, port_b, op_b, x_y;
  // The lanes' operand B and result, split per slot for the row reductions' chain; lane_r is
  // the result again, read by variable slot.
  logic [RowW*S-1:0]  lane_b /* verilator split_var */, lane_y /* verilator split_var */;
  logic [RowW*S-1:0]  lane_r;
  logic [RowW-1:0]    s_q, fold;
  logic [N*S-1:0]     func_ok;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      x_valid_q  <= 1'b0;
      x_first_q  <= 1'b0;
      x_red_q    <= 1'b0;
      x_any_wr_q <= 1'b0;
      x_mask_q   <= '0;
      x_wr_q     <= '0;
      x_dst_q    <= '0;
      x_asel_q   <= '0;
      x_bsel_q   <= '0;
      x_aneed_q  <= '0;
      x_bneed_q  <= '0;
    end else if (clear_i) begin
      x_valid_q <= 1'b0;
    end else begin
      x_valid_q <= row_go;
      if (row_go) begin
        x_first_q  <= s_first[0];
        x_red_q    <= is_rowred;
        x_any_wr_q <= grp_wr;
        x_mask_q   <= grp;
        // A row reduction writes its fold once, in slot 0's place, to D(o,0).
        x_wr_q     <= is_rowred ? S'(grp_wr) : grp;
        x_dst_q    <= sd;
        x_aneed_q  <= a_need;
        x_bneed_q  <= grp_needb ? b_need : '0;
        for (int unsigned k = 0; k < S; k++) begin
          x_asel_q[BankW*k +: BankW] <= bank_of(sa[16*k +: 16]);
          x_bsel_q[BankW*k +: BankW] <= bank_of(sb[16*k +: 16]);
        end
      end
    end
  end

  always_comb begin
    for (int unsigned k = 0; k < S; k++) begin
      bank_a[RowW*k +: RowW] = a_rv_q[k] ? vm_a_rdata_i[RowW*k +: RowW] : cap_a_q[RowW*k +: RowW];
      bank_b[RowW*k +: RowW] = b_rv_q[k] ? vm_b_rdata_i[RowW*k +: RowW] : cap_b_q[RowW*k +: RowW];
    end
    for (int unsigned k = 0; k < S; k++) begin
      op_a[RowW*k +: RowW]   = bank_a[RowW*32'(x_asel_q[BankW*k +: BankW]) +: RowW];
      port_b[RowW*k +: RowW] = bank_b[RowW*32'(x_bsel_q[BankW*k +: BankW]) +: RowW];
      op_b[RowW*k +: RowW]   = (b_imm && !is_align) ? {N{cmd_q.b}} : port_b[RowW*k +: RowW];
    end
  end

  // Operand B of the lanes; the row reductions chain the group's rows: slot 0 folds into s
  // (B at the line's first row), slot k into slot k - 1's result.
  for (genvar k = 0; k < S; k++) begin : g_slot
    if (k == 0) begin : g_first
      assign lane_b[0 +: RowW] = (x_red_q && !x_first_q) ? s_q : op_b[0 +: RowW];
    end else begin : g_chain
      assign lane_b[RowW*k +: RowW] = x_red_q ? lane_y[RowW*(k-1) +: RowW]
                                              : op_b[RowW*k +: RowW];
    end
    assign lane_r[RowW*k +: RowW] = lane_y[RowW*k +: RowW];
    // A slot without a row this cycle gives its lanes align (y = a: no arithmetic), so that
    // a simulator does not evaluate idle fp units; its result is not used.
    logic [5:0] lane_func;
    assign lane_func = x_valid_q && x_mask_q[k] ? cmd_q.func : tpu_vpu_pkg::VAlign;
    for (genvar j = 0; j < N; j++) begin : g_lane
      tpu_vpu_lane u_lane (
        .func_i   (lane_func),
        .a_i      (op_a[RowW*k + 32*j +: 32]),
        .b_i      (lane_b[RowW*k + 32*j +: 32]),
        .y_o      (lane_y[RowW*k + 32*j +: 32]),
        .func_ok_o(func_ok[N*k + j])
      );
    end
  end

  // The fold: the result of the group's last row.
  always_comb begin
    fold = lane_r[0 +: RowW];
    for (int unsigned k = 1; k < S; k++) begin
      if (x_mask_q[k]) fold = lane_r[RowW*k +: RowW];
    end
  end

  // Lane reductions: for h = N/2 .. 1, x[j] = op(x[j], x[j + h]) for j < h; x[0] to every lane.
  function automatic logic [31:0] red_op(logic [5:0] f, logic [31:0] x, logic [31:0] y);
    if (f == tpu_vpu_pkg::VLSum)      red_op = tpu_fp_pkg::fp32_add(x, y);
    else if (f == tpu_vpu_pkg::VLMax) red_op = tpu_fp_pkg::fp32_max(x, y);
    else                 red_op = tpu_fp_pkg::fp32_min(x, y);
  endfunction

  // The lane reductions' trees (one per slot), one level per cycle: X computes level 1 (N/2
  // values) from A, tree stage s (1 .. TS) holds level s (N >> s values, lanes N - 2(N >> s)
  // on of the slot's part of t_data_q) and computes level s + 1; the last stage's result
  // (level LW) goes to every lane.
  function automatic int unsigned t_off(int unsigned s);
    t_off = N - 2 * (N >> s);
  endfunction
  localparam int unsigned TW = 32 * (N - 2);  // one slot's tree registers

  logic [TW*S-1:0]   t_data_q, t_data_d;
  logic [RowW*S-1:0] tree_y;
  // (Computed only for a lane reduction's rows in flight: a simulator skips the trees
  // otherwise; the registers then hold values nobody reads.)
  always_comb begin
    t_data_d = t_data_q;
    tree_y   = '0;
    for (int unsigned k = 0; k < S; k++) begin
      for (int unsigned j = 0; j < N / 2; j++) begin
        if (x_valid_q && is_lanered) begin
          t_data_d[TW*k + 32*j +: 32] = red_op(cmd_q.func, op_a[RowW*k + 32*j +: 32],
                                               op_a[RowW*k + 32*(j + N/2) +: 32]);
        end
      end
      for (int unsigned s = 2; s <= TS; s++) begin
        for (int unsigned j = 0; j < N / 4; j++) begin
          if (t_valid_q[s - 2] && j < (N >> s)) begin
            t_data_d[TW*k + 32*(t_off(s) + j) +: 32] =
                red_op(cmd_q.func, t_data_q[TW*k + 32*(t_off(s - 1) + j) +: 32],
                       t_data_q[TW*k + 32*(t_off(s - 1) + j + (N >> s)) +: 32]);
          end
        end
      end
      if (t_valid_q[TS-1]) begin
        tree_y[RowW*k +: RowW] = {N{red_op(cmd_q.func, t_data_q[TW*k + 32*t_off(TS) +: 32],
                                           t_data_q[TW*k + 32*(t_off(TS) + 1) +: 32])}};
      end
    end
  end

  // Data only, no reset needed (read only in the stages t_valid_q marks).
  always_ff @(posedge clk_i) begin
    t_data_q <= t_data_d;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      t_valid_q <= '0;
      t_wr_q    <= '0;
      t_dst_q   <= '0;
    end else if (clear_i) begin
      t_valid_q <= '0;
    end else begin
      t_valid_q <= TS'({t_valid_q, x_valid_q && is_lanered});
      t_wr_q    <= (S*TS)'({t_wr_q, x_wr_q});
      t_dst_q   <= (16*S*TS)'({t_dst_q, x_dst_q});
    end
  end

  // align: D[j] = A[j + s] for j + s < N, else (A + 1)[j + s - N].
  always_comb begin
    for (int unsigned k = 0; k < S; k++) begin
      if (is_lanered) begin
        x_y[RowW*k +: RowW] = tree_y[RowW*k +: RowW];
      end else if (is_align) begin
        x_y[RowW*k +: RowW] = RowW'({port_b[RowW*k +: RowW], op_a[RowW*k +: RowW]} >>
                                    {cmd_q.b[LW-1:0], 5'd0});
      end else if (k == 0 && x_red_q) begin
        x_y[RowW*k +: RowW] = fold;
      end else begin
        x_y[RowW*k +: RowW] = lane_r[RowW*k +: RowW];
      end
    end
  end

  // Data only, no reset needed (read only after a row reduction's first group wrote it).
  always_ff @(posedge clk_i) begin
    if (x_valid_q && x_red_q) s_q <= fold;
  end

  // ---------------- W: the write queue ----------------
  logic              w_push, w_pop;
  logic [S-1:0]      w_gnt;        // the head group's banks written this cycle
  logic [S-1:0]      w_push_wr;    // by slot
  logic [16*S-1:0]   w_push_dst;   // by slot
  logic [S-1:0]      push_we;      // by bank
  logic [16*S-1:0]   push_dst;
  logic [RowW*S-1:0] push_data;
  assign w_push     = is_lanered ? t_valid_q[TS-1] : x_valid_q && x_any_wr_q;
  assign w_push_wr  = is_lanered ? t_wr_q[S*(TS-1) +: S] : x_wr_q;
  assign w_push_dst = is_lanered ? t_dst_q[16*S*(TS-1) +: 16*S] : x_dst_q;
  assign w_gnt      = vm_w_we_o & vm_w_wgnt_i;
  assign w_pop      = vm_w_we_o != '0 && w_gnt == vm_w_we_o;

  // The group's rows into their banks' places.
  always_comb begin
    push_we   = '0;
    push_dst  = '0;
    push_data = '0;
    for (int unsigned k = 0; k < S; k++) begin
      if (w_push_wr[k]) begin
        push_we[bank_of(w_push_dst[16*k +: 16])] = 1'b1;
        push_dst[16*32'(bank_of(w_push_dst[16*k +: 16])) +: 16]     = w_push_dst[16*k +: 16];
        push_data[RowW*32'(bank_of(w_push_dst[16*k +: 16])) +: RowW] = x_y[RowW*k +: RowW];
      end
    end
  end

  function automatic logic [PtrW-1:0] ptr_next(logic [PtrW-1:0] p);
    ptr_next = (p == PtrW'(WDepth - 1)) ? '0 : p + PtrW'(1);
  endfunction

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_vld_q <= '0;
      w_rd_q  <= '0;
      w_wr_q  <= '0;
      w_we_q  <= '0;
      w_dst_q <= '0;
    end else if (clear_i) begin
      w_vld_q <= '0;
      w_rd_q  <= '0;
      w_wr_q  <= '0;
    end else begin
      if (w_pop) begin
        w_vld_q[w_rd_q] <= 1'b0;
        w_rd_q          <= ptr_next(w_rd_q);
      end else if (w_gnt != '0) begin
        w_we_q[S*w_rd_q +: S] <= w_we_q[S*w_rd_q +: S] & ~w_gnt;  // the rows still to write
      end
      if (w_push) begin
        w_vld_q[w_wr_q] <= 1'b1;
        w_we_q[S*w_wr_q +: S]            <= push_we;
        w_dst_q[16*S*w_wr_q +: 16*S]     <= push_dst;
        w_wr_q          <= ptr_next(w_wr_q);
      end
    end
  end

  // Data only, no reset needed (read only for the banks w_we_q marks).
  always_ff @(posedge clk_i) begin
    if (w_push) w_data_q[RowW*S*w_wr_q +: RowW*S] <= push_data;
  end

  assign vm_w_we_o    = w_vld_q[w_rd_q] ? w_we_q[S*w_rd_q +: S] : '0;
  assign vm_w_waddr_o = w_dst_q[16*S*w_rd_q +: 16*S];
  assign vm_w_wdata_o = w_data_q[RowW*S*w_rd_q +: RowW*S];

  // ---------------- assertions ----------------
  `TPU_ASSERT_INIT(VpuParams, N >= 4 && (N & (N - 1)) == 0 &&
                              S >= 1 && S <= 8 && (S & (S - 1)) == 0)
  // The decoder's range checks (docs/isa.md `vector` faults) hold for every command taken.
  `TPU_ASSERT_IMPLIES(VpuCmdCounts, cmd_valid_i && cmd_ready_o,
                      cmd_i.inner != '0 && cmd_i.outer != '0)
  `TPU_ASSERT_IMPLIES(VpuCmdUnary,
                      cmd_valid_i && cmd_ready_o && tpu_vpu_pkg::vpu_is_unary(cmd_i.func),
                      cmd_i.bmode == 2'd0 && cmd_i.b == '0)
  `TPU_ASSERT_IMPLIES(VpuCmdAlign,
                      cmd_valid_i && cmd_ready_o && tpu_vpu_pkg::vpu_is_align(cmd_i.func),
                      tpu_vpu_pkg::vpu_b_imm(cmd_i.bmode) && cmd_i.b < 32'(N))
  `TPU_ASSERT(VpuFuncOk, &func_ok)
  // (Whether an offered command is held is the controller's property: it withdraws it when a
  // run stops, and the unit acts only on cmd_valid_i && cmd_ready_o.)
  // VMEM requests only for an instruction in flight; a denied write holds its request bank by
  // bank (a denied bank's row and data stay until that bank is granted or a clear drops it).
  `TPU_ASSERT_IMPLIES(VpuReqBusy, vm_a_re_o != '0 || vm_b_re_o != '0 || vm_w_we_o != '0, busy_o)
  for (genvar k = 0; k < S; k++) begin : g_whold
    `TPU_ASSERT_HOLD_IF(VpuWriteHold, vm_w_we_o[k] && !clear_i, vm_w_wgnt_i[k],
                       {vm_w_waddr_o[16*k +: 16], vm_w_wdata_o[RowW*k +: RowW]}, !clear_i)
  end
  // A read request asks only for banks of the group not granted yet, and the group does not
  // change once a bank of it is granted.
  `TPU_ASSERT_NEVER(VpuRegrant, (vm_a_re_o & a_got_q) != '0 || (vm_b_re_o & b_got_q) != '0)
  `TPU_ASSERT_IMPLIES(VpuGroupFixed, a_got_q != '0 || b_got_q != '0, grp == grp_q)
  // X has every operand row it reads, each exactly once: from a port this cycle or captured
  // earlier.
  `TPU_ASSERT_IMPLIES(VpuOperandA, x_valid_q, (a_rv_q | a_cv_q) == x_aneed_q)
  `TPU_ASSERT_IMPLIES(VpuOperandB, x_valid_q, (b_rv_q | b_cv_q) == x_bneed_q)
  `TPU_ASSERT_NEVER(VpuCaptureLost, (a_rv_q & a_cv_q) != '0 || (b_rv_q & b_cv_q) != '0)
  `TPU_ASSERT_NEVER(VpuQueueOverflow, w_push && w_vld_q[w_wr_q] && !(w_pop && w_rd_q == w_wr_q))
  // A group is a prefix of the rows after the walker's position, at least one row, and no
  // group row reads a row an earlier group has yet to write.
  `TPU_ASSERT_IMPLIES(VpuGroupPrefix, active_q, grp[0] && (grp & (grp + S'(1))) == '0)
  `TPU_ASSERT_NEVER(VpuReadAfterWrite, (a_req && (grp & hit_a) != '0) ||
                                       (b_req && (grp & s_needb & hit_b) != '0))
  // A queued group writes at least one row.
  `TPU_ASSERT_NEVER(VpuEmptyPush, w_push && w_push_wr == '0)

endmodule

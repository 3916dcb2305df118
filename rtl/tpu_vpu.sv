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
//   R  the row walker forms the group C at its position and requests its operand reads (the A
//      rows on port A; on port B the B rows for bmode 0-2, or the A rows + 1 for align with
//      s > 0; the row reductions read B only at i = 0). The two ports, and the banks of a port,
//      may be granted in different cycles: C is fixed with its first grant; when it has all
//      its reads in that cycle and no older group waits, it goes to X, else it goes to one of
//      two slots (the walker moves on either way) and asks again, cycle by cycle, for the banks
//      still missing only. Two groups at most wait in the slots; in a bank of a port the older
//      group's request goes first, then the younger's (or C's, beside one older group), so the
//      next group reads the banks another client leaves while the older one waits for its last
//      banks. Each slot captures its rows bank by bank (cap*_q) when the data arrives. X takes
//      the older group in the cycle after its last read is granted.
//   X  the cycle after: the data of the reads granted in R's last cycle come straight from the
//      ports, the others from the group's capture registers; VpuRows x N lanes
//      (rtl/tpu_vpu_lane.sv) compute f(A, B), a lane shift align; the row reductions fold the
//      group's rows into the running value s_q in (o, i) order, one after the other (s = B at
//      i = 0, then s = op(s, A(o,i)): VpuRows fp32 operations in series, the documented order),
//      and only the line's last row is written (to D(o,0)); the lane reductions compute the
//      first level of their fixed tree, one tree per row of the group.
//   T  lane reductions only: log2(N) - 1 tree stages, one level each (so no path has more than
//      one fp32 adder); the last one's value goes to every lane.
//   W  a queue of log2(N) + 3 groups {rows by bank, data} entered in order; each bank writes
//      the oldest queued row it holds when granted (two writes of one VMEM row are in one bank,
//      so they stay in order), and the head group leaves the queue once its last row is
//      written.
// "As if one row at a time in (o, i) order": R does not request a row that is the destination
// of a row still in the slots, X, T or W (compared with every one of them), nor groups a row
// with an earlier row of the group that writes what it reads, so a later read sees every
// earlier write; the reads of a group precede its writes, and a write can only follow its own
// group's reads (groups enter X in order), so later writes never overtake earlier reads. C
// requests reads only when the queue will have room for its result and that of every group in
// the slots, X and T even if nothing is written meanwhile, so X and T never stall; with
// log2(N) + 3 entries that still allows one group per cycle. A row that reads an earlier row's
// destination waits for that write (C asks for nothing while its first row does): 3 cycles per
// row for a chain of such rows (2 + log2(N) for lane reductions).
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
  localparam int unsigned WDepth = LW + 3;     // write queue entries: one group per cycle
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

  // ---------------- write queue (W), the groups in R, and the rows in flight ----------------
  logic [WDepth-1:0]            w_vld_q;
  logic [S*WDepth-1:0]          w_we_q;    // entry e, bank k: bit S*e + k
  logic [16*S*WDepth-1:0]       w_dst_q;   // entry e, bank k: [16(S*e + k) +: 16]
  logic [RowW*S*WDepth-1:0]     w_data_q;  // entry e, bank k: [RowW(S*e + k) +: RowW]
  logic [PtrW-1:0]              w_rd_q, w_wr_q;
  logic [CntW-1:0]              w_cnt;

  logic            x_valid_q, x_first_q, x_red_q, x_any_wr_q;  // X: the group read last cycle
  logic            x_slot_q;                                   // its capture slot
  logic [S-1:0]    x_mask_q, x_wr_q;                           // its rows; those that write
  logic [16*S-1:0] x_dst_q;
  logic [TS-1:0]      t_valid_q;               // lane-reduction groups in the tree stages
  logic [S*TS-1:0]    t_wr_q;                  // stage s - 1, slot k: bit S(s-1) + k
  logic [16*S*TS-1:0] t_dst_q;

  // The groups fixed in R (a grant taken, reads still missing, or complete and waiting for an
  // older group to leave R), in two slots (slot p's fields at [W*p +: W]); old_q is the older
  // one (the only one when one is valid). Each slot has its own capture registers.
  logic [1:0]                 sl_vld_q;
  logic                       old_q;
  logic [2*S-1:0]             sl_aneed_q, sl_bneed_q;    // banks read, by bank
  logic [2*S-1:0]             sl_agot_q, sl_bgot_q;      // banks granted so far
  logic [2*16*S-1:0]          sl_arow_q, sl_brow_q;      // the row of each bank read
  logic [1:0]                 sl_first_q, sl_any_wr_q;
  logic [2*S-1:0]             sl_mask_q, sl_wr_q;        // by slot of the group, as x_*
  logic [2*16*S-1:0]          sl_dst_q;
  logic [2*BankW*S-1:0]       sl_asel_q, sl_bsel_q;

  always_comb begin
    w_cnt = '0;
    for (int unsigned k = 0; k < WDepth; k++) w_cnt = w_cnt + CntW'(w_vld_q[k]);
  end

  // A read must wait for the writes of the earlier groups to the same VMEM row: the groups in
  // R, X and T (by slot of the group) and the queue (a row in its bank's place: one compare per
  // entry).
  function automatic logic pending_write(logic [15:0] row, logic [1:0] sl_vld,
                                         logic [2*S-1:0] sl_wr, logic [2*16*S-1:0] sl_dst,
                                         logic x_valid, logic [S-1:0] x_wr,
                                         logic [16*S-1:0] x_dst, logic [WDepth-1:0] vld,
                                         logic [S*WDepth-1:0] we, logic [16*S*WDepth-1:0] dst,
                                         logic [TS-1:0] t_vld, logic [S*TS-1:0] t_wr,
                                         logic [16*S*TS-1:0] t_dst);
    logic [BankW-1:0] bk;
    bk = bank_of(row);
    pending_write = 1'b0;
    for (int unsigned k = 0; k < S; k++) begin
      for (int unsigned p = 0; p < 2; p++) begin
        if (sl_vld[p] && sl_wr[S*p + k] && sl_dst[16*(S*p + k) +: 16] == row) begin
          pending_write = 1'b1;
        end
      end
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
        hit_a[k] = pending_write(sa[16*k +: 16], sl_vld_q, sl_wr_q, sl_dst_q, x_valid_q, x_wr_q,
                                 x_dst_q, w_vld_q, w_we_q, w_dst_q, t_valid_q, t_wr_q, t_dst_q);
        hit_b[k] = pending_write(sb[16*k +: 16], sl_vld_q, sl_wr_q, sl_dst_q, x_valid_q, x_wr_q,
                                 x_dst_q, w_vld_q, w_we_q, w_dst_q, t_valid_q, t_wr_q, t_dst_q);
      end
    end
  end

  // The walker's group C: the longest prefix of rows that qualify (the first row always; its
  // hits hold back the group's requests).
  logic [S-1:0] grp, slot_ok;
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
    grp    = '0;
    grp[0] = 1'b1;
    for (int unsigned k = 1; k < S; k++) grp[k] = grp[k-1] && slot_ok[k];
  end

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

  // C's reads by bank on each port (a row several rows of the group read is one request), and
  // what X needs of it.
  logic [S-1:0]       c_aneed, c_bneed, c_wr;
  logic [16*S-1:0]    c_arow, c_brow;
  logic [BankW*S-1:0] c_asel, c_bsel;
  always_comb begin
    c_aneed = '0;
    c_bneed = '0;
    c_arow  = '0;
    c_brow  = '0;
    for (int unsigned k = 0; k < S; k++) begin
      c_asel[BankW*k +: BankW] = bank_of(sa[16*k +: 16]);
      c_bsel[BankW*k +: BankW] = bank_of(sb[16*k +: 16]);
      if (grp[k]) begin
        c_aneed[bank_of(sa[16*k +: 16])] = 1'b1;
        c_arow[16*32'(bank_of(sa[16*k +: 16])) +: 16] = sa[16*k +: 16];
      end
      if (grp[k] && s_needb[k]) begin
        c_bneed[bank_of(sb[16*k +: 16])] = 1'b1;
        c_brow[16*32'(bank_of(sb[16*k +: 16])) +: 16] = sb[16*k +: 16];
      end
    end
    // A row reduction writes its fold once, in slot 0's place, to D(o,0).
    c_wr = is_rowred ? S'(grp_wr) : grp;
  end

  // Every group in R, X and T that writes has its queue entry kept for it, so X and T never
  // stall: C asks for reads only when the queue has room for its result too.
  logic [CntW+1:0] in_flight;
  logic            room, c_req;
  logic            po, py, c_slot;        // the older slot, the younger, C's slot
  logic            o_vld, y_vld;
  always_comb begin
    in_flight = (CntW+2)'(w_cnt) + (CntW+2)'(x_valid_q && x_any_wr_q);
    for (int unsigned k = 0; k < TS; k++) in_flight = in_flight + (CntW+2)'(t_valid_q[k]);
    for (int unsigned p = 0; p < 2; p++) begin
      in_flight = in_flight + (CntW+2)'(sl_vld_q[p] && sl_any_wr_q[p]);
    end
  end
  assign po     = old_q;
  assign py     = !old_q;
  assign o_vld  = sl_vld_q[po];
  assign y_vld  = sl_vld_q[py];
  assign c_slot = o_vld ? py : po;
  assign room   = !grp_wr || 32'(in_flight) < WDepth;
  assign c_req  = active_q && !y_vld && room && !hit_a[0] && !(s_needb[0] && hit_b[0]);

  // The requests, bank by bank: the older group's missing banks first, then the younger's, then
  // C's (two groups at most, so C asks only beside one older group).
  logic [S-1:0] o_ra, o_rb, y_ra, y_rb, c_ra, c_rb;
  logic [S-1:0] a_gnt, b_gnt, o_ga, o_gb, y_ga, y_gb, c_ga, c_gb;
  always_comb begin
    o_ra = o_vld ? sl_aneed_q[S*po +: S] & ~sl_agot_q[S*po +: S] : '0;
    o_rb = o_vld ? sl_bneed_q[S*po +: S] & ~sl_bgot_q[S*po +: S] : '0;
    y_ra = y_vld ? sl_aneed_q[S*py +: S] & ~sl_agot_q[S*py +: S] & ~o_ra : '0;
    y_rb = y_vld ? sl_bneed_q[S*py +: S] & ~sl_bgot_q[S*py +: S] & ~o_rb : '0;
    c_ra = c_req ? c_aneed & ~o_ra : '0;
    c_rb = c_req ? c_bneed & ~o_rb : '0;
    vm_a_raddr_o = '0;
    vm_b_raddr_o = '0;
    for (int unsigned k = 0; k < S; k++) begin
      if (o_ra[k])      vm_a_raddr_o[16*k +: 16] = sl_arow_q[16*(S*32'(po) + k) +: 16];
      else if (y_ra[k]) vm_a_raddr_o[16*k +: 16] = sl_arow_q[16*(S*32'(py) + k) +: 16];
      else if (c_ra[k]) vm_a_raddr_o[16*k +: 16] = c_arow[16*k +: 16];
      if (o_rb[k])      vm_b_raddr_o[16*k +: 16] = sl_brow_q[16*(S*32'(po) + k) +: 16];
      else if (y_rb[k]) vm_b_raddr_o[16*k +: 16] = sl_brow_q[16*(S*32'(py) + k) +: 16];
      else if (c_rb[k]) vm_b_raddr_o[16*k +: 16] = c_brow[16*k +: 16];
    end
  end
  assign vm_a_re_o = o_ra | y_ra | c_ra;
  assign vm_b_re_o = o_rb | y_rb | c_rb;
  assign a_gnt     = vm_a_re_o & vm_a_rgnt_i;
  assign b_gnt     = vm_b_re_o & vm_b_rgnt_i;
  assign o_ga      = a_gnt & o_ra;
  assign o_gb      = b_gnt & o_rb;
  assign y_ga      = a_gnt & y_ra;
  assign y_gb      = b_gnt & y_rb;
  assign c_ga      = a_gnt & c_ra;
  assign c_gb      = b_gnt & c_rb;

  // X takes the older group once it has every read, or C straight from the walker when R holds
  // no group; C otherwise goes to a slot with its first grant (the walker moves on).
  logic o_done, c_done, x_go_o, x_go_c, c_take;
  assign o_done = o_vld &&
                  (sl_aneed_q[S*po +: S] & ~(sl_agot_q[S*po +: S] | o_ga)) == '0 &&
                  (sl_bneed_q[S*po +: S] & ~(sl_bgot_q[S*po +: S] | o_gb)) == '0;
  assign c_done = c_req && (c_aneed & ~c_ga) == '0 && (c_bneed & ~c_gb) == '0;
  assign x_go_o = o_done;
  assign x_go_c = !o_vld && c_done;
  assign c_take = c_ga != '0 || c_gb != '0;

  assign busy_o      = active_q || sl_vld_q != '0 || x_valid_q || t_valid_q != '0 ||
                       w_vld_q != '0;
  assign idle_o      = !busy_o;
  assign cmd_ready_o = !busy_o;

  // The slots: C enters its slot, the older group leaves for X, grants accumulate.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      sl_vld_q    <= '0;
      old_q       <= 1'b0;
      sl_aneed_q  <= '0;
      sl_bneed_q  <= '0;
      sl_agot_q   <= '0;
      sl_bgot_q   <= '0;
      sl_arow_q   <= '0;
      sl_brow_q   <= '0;
      sl_first_q  <= '0;
      sl_any_wr_q <= '0;
      sl_mask_q   <= '0;
      sl_wr_q     <= '0;
      sl_dst_q    <= '0;
      sl_asel_q   <= '0;
      sl_bsel_q   <= '0;
    end else if (clear_i) begin
      sl_vld_q <= '0;
    end else begin
      if (x_go_o) begin
        sl_vld_q[po] <= 1'b0;
        old_q        <= py;
      end else if (o_vld) begin
        sl_agot_q[S*po +: S] <= sl_agot_q[S*po +: S] | o_ga;
        sl_bgot_q[S*po +: S] <= sl_bgot_q[S*po +: S] | o_gb;
      end
      if (y_vld) begin
        sl_agot_q[S*py +: S] <= sl_agot_q[S*py +: S] | y_ga;
        sl_bgot_q[S*py +: S] <= sl_bgot_q[S*py +: S] | y_gb;
      end
      if (c_take && !x_go_c) begin
        sl_vld_q[c_slot]                      <= 1'b1;
        sl_aneed_q[S*c_slot +: S]             <= c_aneed;
        sl_bneed_q[S*c_slot +: S]             <= c_bneed;
        sl_agot_q[S*c_slot +: S]              <= c_ga;
        sl_bgot_q[S*c_slot +: S]              <= c_gb;
        sl_arow_q[16*S*c_slot +: 16*S]        <= c_arow;
        sl_brow_q[16*S*c_slot +: 16*S]        <= c_brow;
        sl_first_q[c_slot]                    <= s_first[0];
        sl_any_wr_q[c_slot]                   <= grp_wr;
        sl_mask_q[S*c_slot +: S]              <= grp;
        sl_wr_q[S*c_slot +: S]                <= c_wr;
        sl_dst_q[16*S*c_slot +: 16*S]         <= sd;
        sl_asel_q[BankW*S*c_slot +: BankW*S]  <= c_asel;
        sl_bsel_q[BankW*S*c_slot +: BankW*S]  <= c_bsel;
      end
    end
  end

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

  // The walker's registers: a new command, or the next group once C has taken a grant.
  cfg_t         cmd_d;
  logic         active_d;
  logic [9:0]   o_d;
  logic [7:0]   i_d;
  logic [15:0]  a_line_d, a_cur_d, b_line_d, b_cur_d, d_line_d, d_cur_d;
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
    if (clear_i) begin
      active_d = 1'b0;
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
    end else if (c_take) begin
      o_d      = nx_o;
      i_d      = nx_i;
      a_line_d = nx_al;
      a_cur_d  = nx_ac;
      b_line_d = nx_bl;
      b_cur_d  = nx_bc;
      d_line_d = nx_dl;
      d_cur_d  = nx_dc;
      if (nx_end) active_d = 1'b0;
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
    end
  end

  // ---------------- operands: the ports' data, or captured (per slot) ----------------
  logic [2*S-1:0]      a_rv_q, b_rv_q;        // slot p, bank k: the data is on the port now
  logic [2*S-1:0]      a_cv_q, b_cv_q;        // slot p, bank k: captured
  logic [2*RowW*S-1:0] cap_a_q, cap_b_q;
  logic [2*S-1:0]      a_slot_gnt, b_slot_gnt;  // this cycle's grants by slot
  always_comb begin
    a_slot_gnt = '0;
    b_slot_gnt = '0;
    a_slot_gnt[S*po +: S] = o_ga;
    b_slot_gnt[S*po +: S] = o_gb;
    a_slot_gnt[S*py +: S] = y_ga;
    b_slot_gnt[S*py +: S] = y_gb;
    a_slot_gnt[S*c_slot +: S] = a_slot_gnt[S*c_slot +: S] | c_ga;
    b_slot_gnt[S*c_slot +: S] = b_slot_gnt[S*c_slot +: S] | c_gb;
  end

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
      a_rv_q <= a_slot_gnt;
      b_rv_q <= b_slot_gnt;
      // Rows of a group still waiting for other banks, the other port or an older group:
      // captured until X consumes them.
      for (int unsigned p = 0; p < 2; p++) begin
        if (x_valid_q && 32'(x_slot_q) == p) begin
          a_cv_q[S*p +: S] <= '0;
          b_cv_q[S*p +: S] <= '0;
        end else begin
          a_cv_q[S*p +: S] <= a_cv_q[S*p +: S] | a_rv_q[S*p +: S];
          b_cv_q[S*p +: S] <= b_cv_q[S*p +: S] | b_rv_q[S*p +: S];
        end
      end
    end
  end

  // Data only, no reset needed: X takes a bank's captured row as an operand only where a_cv_q /
  // b_cv_q says it was captured (assertions VpuOperandA / VpuOperandB); the other banks' values
  // reach only slots outside X's group (results never written) or an operand the function
  // does not use.
  always_ff @(posedge clk_i) begin
    for (int unsigned p = 0; p < 2; p++) begin
      for (int unsigned k = 0; k < S; k++) begin
        if (a_rv_q[S*p + k]) cap_a_q[RowW*(S*p + k) +: RowW] <= vm_a_rdata_i[RowW*k +: RowW];
        if (b_rv_q[S*p + k]) cap_b_q[RowW*(S*p + k) +: RowW] <= vm_b_rdata_i[RowW*k +: RowW];
      end
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
      x_slot_q   <= 1'b0;
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
      x_valid_q <= x_go_o || x_go_c;
      x_red_q   <= is_rowred;
      if (x_go_o) begin
        x_slot_q   <= po;
        x_first_q  <= sl_first_q[po];
        x_any_wr_q <= sl_any_wr_q[po];
        x_mask_q   <= sl_mask_q[S*po +: S];
        x_wr_q     <= sl_wr_q[S*po +: S];
        x_dst_q    <= sl_dst_q[16*S*po +: 16*S];
        x_aneed_q  <= sl_aneed_q[S*po +: S];
        x_bneed_q  <= sl_bneed_q[S*po +: S];
        x_asel_q   <= sl_asel_q[BankW*S*po +: BankW*S];
        x_bsel_q   <= sl_bsel_q[BankW*S*po +: BankW*S];
      end else if (x_go_c) begin
        x_slot_q   <= c_slot;
        x_first_q  <= s_first[0];
        x_any_wr_q <= grp_wr;
        x_mask_q   <= grp;
        x_wr_q     <= c_wr;
        x_dst_q    <= sd;
        x_aneed_q  <= c_aneed;
        x_bneed_q  <= c_bneed;
        x_asel_q   <= c_asel;
        x_bsel_q   <= c_bsel;
      end
    end
  end

  // X's group's slot: which banks are on the ports now, and its capture registers.
  logic [S-1:0]      x_rv_a, x_rv_b;
  logic [RowW*S-1:0] x_cap_a, x_cap_b;
  assign x_rv_a  = a_rv_q[S*x_slot_q +: S];
  assign x_rv_b  = b_rv_q[S*x_slot_q +: S];
  assign x_cap_a = cap_a_q[RowW*S*x_slot_q +: RowW*S];
  assign x_cap_b = cap_b_q[RowW*S*x_slot_q +: RowW*S];

  always_comb begin
    for (int unsigned k = 0; k < S; k++) begin
      bank_a[RowW*k +: RowW] = x_rv_a[k] ? vm_a_rdata_i[RowW*k +: RowW] : x_cap_a[RowW*k +: RowW];
      bank_b[RowW*k +: RowW] = x_rv_b[k] ? vm_b_rdata_i[RowW*k +: RowW] : x_cap_b[RowW*k +: RowW];
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
  // Groups enter in order; each bank writes the oldest queued row it holds (rows of one VMEM
  // row are in one bank, so writes to a row stay in order), so a bank another client holds
  // delays only its own rows, not the next groups' rows in the other banks. The head group
  // leaves the queue once its last row is written.
  logic              w_push, w_pop;
  logic [S-1:0]      w_gnt;        // the banks written this cycle
  logic [S-1:0]      w_head_left;  // the head group's banks still to write after this cycle
  logic [PtrW*S-1:0] w_sel;        // bank k writes entry w_sel[PtrW*k +: PtrW]
  logic [S-1:0]      w_push_wr;    // by slot
  logic [16*S-1:0]   w_push_dst;   // by slot
  logic [S-1:0]      push_we;      // by bank
  logic [16*S-1:0]   push_dst;
  logic [RowW*S-1:0] push_data;
  assign w_push     = is_lanered ? t_valid_q[TS-1] : x_valid_q && x_any_wr_q;
  assign w_push_wr  = is_lanered ? t_wr_q[S*(TS-1) +: S] : x_wr_q;
  assign w_push_dst = is_lanered ? t_dst_q[16*S*(TS-1) +: 16*S] : x_dst_q;

  function automatic logic [PtrW-1:0] ptr_add(logic [PtrW-1:0] p, int unsigned d);
    ptr_add = PtrW'((32'(p) + d) % WDepth);
  endfunction

  // Bank k's oldest entry with its row still to write (entries from the head on).
  always_comb begin
    w_sel     = '0;
    vm_w_we_o = '0;
    for (int unsigned k = 0; k < S; k++) begin
      for (int unsigned d = WDepth; d > 0; d--) begin  // entry d - 1 from the head
        if (w_vld_q[ptr_add(w_rd_q, d - 1)] && w_we_q[S*32'(ptr_add(w_rd_q, d - 1)) + k]) begin
          w_sel[PtrW*k +: PtrW] = ptr_add(w_rd_q, d - 1);
          vm_w_we_o[k]          = 1'b1;
        end
      end
    end
  end
  always_comb begin
    for (int unsigned k = 0; k < S; k++) begin
      vm_w_waddr_o[16*k +: 16]     = w_dst_q[16*(S*32'(w_sel[PtrW*k +: PtrW]) + k) +: 16];
      vm_w_wdata_o[RowW*k +: RowW] = w_data_q[RowW*(S*32'(w_sel[PtrW*k +: PtrW]) + k) +: RowW];
    end
  end
  assign w_gnt = vm_w_we_o & vm_w_wgnt_i;
  always_comb begin
    w_head_left = w_we_q[S*w_rd_q +: S];
    for (int unsigned k = 0; k < S; k++) begin
      if (w_gnt[k] && w_sel[PtrW*k +: PtrW] == w_rd_q) w_head_left[k] = 1'b0;
    end
  end
  assign w_pop = w_vld_q[w_rd_q] && w_head_left == '0;

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
      for (int unsigned k = 0; k < S; k++) begin
        if (w_gnt[k]) w_we_q[S*32'(w_sel[PtrW*k +: PtrW]) + k] <= 1'b0;  // written
      end
      if (w_pop) begin
        w_vld_q[w_rd_q] <= 1'b0;
        w_rd_q          <= ptr_add(w_rd_q, 1);
      end
      if (w_push) begin
        w_vld_q[w_wr_q] <= 1'b1;
        w_we_q[S*w_wr_q +: S]            <= push_we;
        w_dst_q[16*S*w_wr_q +: 16*S]     <= push_dst;
        w_wr_q          <= ptr_add(w_wr_q, 1);
      end
    end
  end

  // Data only, no reset needed (read only for the banks w_we_q marks).
  always_ff @(posedge clk_i) begin
    if (w_push) w_data_q[RowW*S*w_wr_q +: RowW*S] <= push_data;
  end

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
  // A read request asks only for banks of a group not granted yet, each bank of a port for one
  // group (the older first), and C asks only while a slot is free.
  `TPU_ASSERT_NEVER(VpuRegrant,
                    (o_ra & sl_agot_q[S*po +: S]) != '0 || (o_rb & sl_bgot_q[S*po +: S]) != '0 ||
                    (y_ra & sl_agot_q[S*py +: S]) != '0 || (y_rb & sl_bgot_q[S*py +: S]) != '0)
  `TPU_ASSERT_NEVER(VpuBankTwice, (o_ra & (y_ra | c_ra)) != '0 || (y_ra & c_ra) != '0 ||
                                  (o_rb & (y_rb | c_rb)) != '0 || (y_rb & c_rb) != '0)
  `TPU_ASSERT_NEVER(VpuSlotsFull, c_req && sl_vld_q == 2'b11)
  // The one valid slot is the older one; X takes the older group only.
  `TPU_ASSERT_NEVER(VpuSlotAge, y_vld && !o_vld)
  `TPU_ASSERT_NEVER(VpuSlotOrder, x_go_c && o_vld)
  // X has every operand row it reads, each exactly once: from a port this cycle or captured
  // earlier, in its group's slot.
  `TPU_ASSERT_IMPLIES(VpuOperandA, x_valid_q, (x_rv_a | a_cv_q[S*x_slot_q +: S]) == x_aneed_q)
  `TPU_ASSERT_IMPLIES(VpuOperandB, x_valid_q, (x_rv_b | b_cv_q[S*x_slot_q +: S]) == x_bneed_q)
  `TPU_ASSERT_NEVER(VpuCaptureLost, (a_rv_q & a_cv_q) != '0 || (b_rv_q & b_cv_q) != '0)
  `TPU_ASSERT_NEVER(VpuQueueOverflow, w_push && w_vld_q[w_wr_q] && !(w_pop && w_rd_q == w_wr_q))
  // A group is a prefix of the rows after the walker's position, at least one row, and no
  // group row reads a row an earlier group has yet to write.
  `TPU_ASSERT_IMPLIES(VpuGroupPrefix, active_q, grp[0] && (grp & (grp + S'(1))) == '0)
  `TPU_ASSERT_NEVER(VpuReadAfterWrite, c_req && ((grp & hit_a) != '0 ||
                                                 (grp & s_needb & hit_b) != '0))
  // A queued group writes at least one row.
  `TPU_ASSERT_NEVER(VpuEmptyPush, w_push && w_push_wr == '0)

endmodule

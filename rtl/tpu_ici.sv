// SPDX-License-Identifier: Apache-2.0
// Inter-chip link unit (issue 31, docs/isa.md "Inter-chip links"): IciLinks links, each a send
// engine (rtl/tpu_ici_tx.sv, its out stream) and a receive engine (rtl/tpu_ici_rx.sv, its in
// stream), one instruction each; sends and receives on different links, and the send and the
// receive of one link, run concurrently. The controller issues ici_send / ici_recv through one
// command handshake (cmd_ready_o: the addressed engine is idle) and tracks each engine's VMEM
// rows through tx_busy_o / rx_busy_o (docs/isa.md "Ordering of the link instructions").
//
// VMEM: two read clients and one write client, the convention of every VMEM client: vm_r_
// for the send engines (round robin), vm_q_ for the reduces' local rows, vm_w_ for the shared
// writer (so a chip sending and reducing at one row per cycle each has the read bandwidth;
// put the two read clients on different VMEM read ports). The shared writer takes complete received rows from the receive engines (round
// robin) through a two-entry write queue: a copy goes straight in; a reduce reads the local
// row (D, the first operand) and puts add(D, m) in, lane by lane (fp32 add of tpu_fp_pkg, or
// wrapping int32), in the cycle after. One row per cycle, reduced or not, while the write port
// grants: one writer serves every link.
//
// Errors (registered, one cycle after the cause): ERR_ICI_SIZE when a first beat meets a
// posted receive of another size (the sender) or a header differs from the receive's rows
// (the receiver), ERR_ICI_DEADLOCK on every busy
// engine when the pod says so (deadlock_i). err_pc_o is the program index of the oldest (lowest
// index) faulting instruction. The faulting engines stop; the others run on until clear_i (the
// controller clears the unit when the run stops: a faulting chip abandons its link
// instructions).
`include "tpu_assert.svh"

module tpu_ici #(
  parameter int unsigned N        = 16,
  parameter int unsigned IciLinks = 2,
  parameter int unsigned IciWidth = 128
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  input  logic                         clear_i,
  input  logic                         cmd_valid_i,
  output logic                         cmd_ready_o,
  input  tpu_ici_pkg::ici_cmd_t        cmd_i,
  input  logic [31:0]                  cmd_pc_i,     // the instruction's program index
  output logic [IciLinks-1:0]          tx_busy_o,
  output logic [IciLinks-1:0]          rx_busy_o,
  output logic                         busy_o,
  input  logic                         deadlock_i,   // the pod found a deadlock
  output logic                         err_o,
  output logic [4:0]                   err_code_o,
  output logic [31:0]                  err_pc_o,
  // VMEM read client.
  output logic                         vm_r_re_o,
  output logic [15:0]                  vm_r_raddr_o,
  input  logic                         vm_r_rgnt_i,
  input  logic [32*N-1:0]              vm_r_rdata_i,
  // VMEM read client of the reduces (the local rows).
  output logic                         vm_q_re_o,
  output logic [15:0]                  vm_q_raddr_o,
  input  logic                         vm_q_rgnt_i,
  input  logic [32*N-1:0]              vm_q_rdata_i,
  // VMEM write client.
  output logic                         vm_w_we_o,
  output logic [15:0]                  vm_w_waddr_o,
  output logic [32*N-1:0]              vm_w_wdata_o,
  input  logic                         vm_w_wgnt_i,
  // Links: link l in bit l / [24l +: 24] / [IciWidth*l +: IciWidth].
  output logic [IciLinks-1:0]          tx_valid_o,
  output logic [IciLinks-1:0]          tx_first_o,
  output logic [24*IciLinks-1:0]       tx_rows_o,
  output logic [IciWidth*IciLinks-1:0] tx_data_o,
  input  logic [IciLinks-1:0]          tx_ready_i,
  input  logic [24*IciLinks-1:0]       tx_want_i,
  input  logic [IciLinks-1:0]          rx_valid_i,
  input  logic [IciLinks-1:0]          rx_first_i,
  input  logic [24*IciLinks-1:0]       rx_rows_i,
  input  logic [IciWidth*IciLinks-1:0] rx_data_i,
  output logic [IciLinks-1:0]          rx_ready_o,
  output logic [24*IciLinks-1:0]       rx_want_o
);
  localparam int unsigned L  = IciLinks;
  localparam int unsigned LW = L > 1 ? $clog2(L) : 1;
  localparam logic [4:0] ErrIciSize     = 5'd17;
  localparam logic [4:0] ErrIciDeadlock = 5'd18;

  // ---------------- command ----------------
  logic [L-1:0] tx_start, rx_start;
  logic [3:0]   cmd_link;
  assign cmd_link    = cmd_i.link;
  assign cmd_ready_o = cmd_i.recv ? !rx_busy_o[LW'(cmd_link)] : !tx_busy_o[LW'(cmd_link)];
  assign busy_o      = (tx_busy_o | rx_busy_o) != '0;

  logic [32*L-1:0] tx_pc_q, rx_pc_q;
  always_comb begin
    for (int l = 0; l < 32'(L); l++) begin
      tx_start[l] = cmd_valid_i && cmd_ready_o && !cmd_i.recv && 32'(cmd_link) == l && !clear_i;
      rx_start[l] = cmd_valid_i && cmd_ready_o && cmd_i.recv && 32'(cmd_link) == l && !clear_i;
    end
  end
  // Data only, no reset: each engine's instruction index, latched as it starts, read only while
  // that engine is busy (its errors).
  always_ff @(posedge clk_i) begin
    for (int l = 0; l < 32'(L); l++) begin
      if (tx_start[l]) tx_pc_q[32*l +: 32] <= cmd_pc_i;
      if (rx_start[l]) rx_pc_q[32*l +: 32] <= cmd_pc_i;
    end
  end

  // ---------------- engines ----------------
  logic [L-1:0]      tx_rd_req, tx_rd_gnt, tx_size_err, rx_size_err;
  logic [16*L-1:0]   tx_rd_addr;
  logic [L-1:0]      rx_wreq, rx_wtake, rx_wdone;
  logic [16*L-1:0]   rx_waddr;
  logic [2*L-1:0]    rx_reduce;
  logic [32*N*L-1:0] rx_wrow;

  for (genvar l = 0; l < L; l++) begin : g_link
    tpu_ici_tx #(.N(N), .IciWidth(IciWidth)) u_tx (
      .clk_i, .rst_ni, .clear_i,
      .start_i(tx_start[l]), .vmem_i(cmd_i.vmem), .rows_i(cmd_i.rows), .busy_o(tx_busy_o[l]),
      .rd_req_o(tx_rd_req[l]), .rd_addr_o(tx_rd_addr[16*l +: 16]), .rd_gnt_i(tx_rd_gnt[l]),
      .rd_data_i(vm_r_rdata_i),
      .tx_valid_o(tx_valid_o[l]), .tx_first_o(tx_first_o[l]), .tx_rows_o(tx_rows_o[24*l +: 24]),
      .tx_data_o(tx_data_o[IciWidth*l +: IciWidth]), .tx_ready_i(tx_ready_i[l]),
      .tx_want_i(tx_want_i[24*l +: 24]), .size_err_o(tx_size_err[l])
    );
    tpu_ici_rx #(.N(N), .IciWidth(IciWidth)) u_rx (
      .clk_i, .rst_ni, .clear_i,
      .start_i(rx_start[l]), .vmem_i(cmd_i.vmem), .rows_i(cmd_i.rows), .reduce_i(cmd_i.reduce),
      .busy_o(rx_busy_o[l]),
      .rx_valid_i(rx_valid_i[l]), .rx_first_i(rx_first_i[l]), .rx_rows_i(rx_rows_i[24*l +: 24]),
      .rx_data_i(rx_data_i[IciWidth*l +: IciWidth]), .rx_ready_o(rx_ready_o[l]),
      .rx_want_o(rx_want_o[24*l +: 24]), .size_err_o(rx_size_err[l]),
      .wreq_o(rx_wreq[l]), .waddr_o(rx_waddr[16*l +: 16]), .reduce_o(rx_reduce[2*l +: 2]),
      .wrow_o(rx_wrow[32*N*l +: 32*N]), .wtake_i(rx_wtake[l]), .wdone_i(rx_wdone[l])
    );
  end

  // ---------------- shared writer ----------------
  // A two-entry write queue (head = entry 0) in front of the write client. A row is taken
  // from its receive engine when it enters the writer: a copy straight into the queue; a
  // reduce when its local-row read is granted (the received row moves into red_row_q), its
  // sum entering the queue in the next cycle. A row enters only if the queue will have room
  // for it (the reduce result one cycle later): one row per cycle with the write port granted.
  localparam int unsigned WqDepth = 2;
  logic [WqDepth-1:0]          wq_valid_q, wq_valid_d;
  logic [16*WqDepth-1:0]       wq_addr_q, wq_addr_d;
  logic [32*N*WqDepth-1:0]     wq_data_q, wq_data_d;
  logic [LW*WqDepth-1:0]       wq_eng_q, wq_eng_d;
  logic                        red_pend_q, red_pend_d;  // a reduce read's local row arrives now
  logic [LW-1:0]               red_eng_q, red_eng_d;
  logic [15:0]                 red_addr_q, red_addr_d;
  logic [1:0]                  red_op_q, red_op_d;
  logic [32*N-1:0]             red_row_q, red_row_d;    // the received row being reduced
  logic [LW-1:0]               wrr_q, wrr_d;            // round-robin start (receive engines)
  logic                        w_pop, w_room, w_sel_any, red_req, red_gnt, copy_push;
  logic [LW-1:0]               w_sel;
  logic [1:0]                  w_used;
  logic [32*N-1:0]             red_sum;

  // Entries after this cycle's pop, counting the reduce result landing now.
  assign w_pop  = wq_valid_q[0] && vm_w_wgnt_i;
  assign w_used = 2'(wq_valid_q[0]) + 2'(wq_valid_q[1]) - 2'(w_pop) + 2'(red_pend_q);
  assign w_room = 32'(w_used) < WqDepth && !clear_i;

  // The next receive engine with a complete row, from wrr_q on.
  always_comb begin
    logic [LW-1:0] e;
    w_sel_any = 1'b0;
    w_sel     = '0;
    for (int k = 0; k < 32'(L); k++) begin
      e = LW'((32'(wrr_q) + 32'(k)) % L);
      if (!w_sel_any && rx_wreq[e]) begin
        w_sel_any = 1'b1;
        w_sel     = e;
      end
    end
  end

  assign red_req   = w_room && w_sel_any && rx_reduce[2*w_sel +: 2] != tpu_ici_pkg::ReduceCopy;
  assign red_gnt   = red_req && vm_q_rgnt_i;
  assign vm_q_re_o    = red_req;
  assign vm_q_raddr_o = rx_waddr[16*w_sel +: 16];
  assign copy_push = w_room && w_sel_any && rx_reduce[2*w_sel +: 2] == tpu_ici_pkg::ReduceCopy;

  // D = add(D, m): the local row (read) is the first operand.
  always_comb begin
    for (int j = 0; j < 32'(N); j++) begin
      if (red_op_q == tpu_ici_pkg::ReduceFadd) begin
        red_sum[32*j +: 32] = tpu_fp_pkg::fp32_add(vm_q_rdata_i[32*j +: 32],
                                                   red_row_q[32*j +: 32]);
      end else begin
        red_sum[32*j +: 32] = vm_q_rdata_i[32*j +: 32] + red_row_q[32*j +: 32];
      end
    end
  end

  always_comb begin
    logic            push;
    logic [15:0]     push_addr;
    logic [32*N-1:0] push_data;
    logic [LW-1:0]   push_eng;
    logic            slot;     // the queue entry a row enters
    wq_valid_d = wq_valid_q;
    wq_addr_d  = wq_addr_q;
    wq_data_d  = wq_data_q;
    wq_eng_d   = wq_eng_q;
    red_pend_d = 1'b0;
    red_eng_d  = red_eng_q;
    red_addr_d = red_addr_q;
    red_op_d   = red_op_q;
    red_row_d  = red_row_q;
    wrr_d      = wrr_q;
    rx_wtake   = '0;
    rx_wdone   = '0;
    push       = 1'b0;
    slot       = 1'b0;
    push_addr  = red_addr_q;
    push_data  = red_sum;
    push_eng   = red_eng_q;
    if (w_pop) begin
      rx_wdone[wq_eng_q[0 +: LW]] = 1'b1;
      wq_valid_d = {1'b0, wq_valid_q[1]};
      wq_addr_d  = {16'd0, wq_addr_q[16 +: 16]};
      wq_data_d  = {{(32*N){1'b0}}, wq_data_q[32*N +: 32*N]};
      wq_eng_d   = {{LW{1'b0}}, wq_eng_q[LW +: LW]};
    end
    // At most one row enters per cycle: the reduce result, else a copy.
    if (red_pend_q) begin
      push = 1'b1;
    end else if (copy_push) begin
      push      = 1'b1;
      push_addr = rx_waddr[16*w_sel +: 16];
      push_data = rx_wrow[32*N*w_sel +: 32*N];
      push_eng  = w_sel;
      rx_wtake[w_sel] = 1'b1;
      wrr_d     = LW'((32'(w_sel) + 1) % L);
    end
    if (red_gnt) begin
      red_pend_d      = 1'b1;
      red_eng_d       = w_sel;
      red_addr_d      = rx_waddr[16*w_sel +: 16];
      red_op_d        = rx_reduce[2*w_sel +: 2];
      red_row_d       = rx_wrow[32*N*w_sel +: 32*N];
      rx_wtake[w_sel] = 1'b1;
      wrr_d           = LW'((32'(w_sel) + 1) % L);
    end
    if (push) begin
      slot = wq_valid_d[0];
      wq_valid_d[slot]             = 1'b1;
      wq_addr_d[16*32'(slot) +: 16]     = push_addr;
      wq_data_d[32*N*32'(slot) +: 32*N] = push_data;
      wq_eng_d[LW*32'(slot) +: LW]      = push_eng;
    end
    if (clear_i) begin
      wq_valid_d = '0;
      red_pend_d = 1'b0;
      rx_wdone   = '0;
      rx_wtake   = '0;
    end
  end

  assign vm_w_we_o    = wq_valid_q[0];
  assign vm_w_waddr_o = wq_addr_q[0 +: 16];
  assign vm_w_wdata_o = wq_data_q[0 +: 32*N];

  // ---------------- send engines' read client ----------------
  // Round robin from trr_q on.
  logic [LW-1:0] trr_q, trr_d;
  logic          tx_sel_any;
  logic [LW-1:0] tx_sel;
  always_comb begin
    logic [LW-1:0] e;
    tx_sel_any = 1'b0;
    tx_sel     = '0;
    for (int k = 0; k < 32'(L); k++) begin
      e = LW'((32'(trr_q) + 32'(k)) % L);
      if (!tx_sel_any && tx_rd_req[e]) begin
        tx_sel_any = 1'b1;
        tx_sel     = LW'(e);
      end
    end
  end
  always_comb begin
    vm_r_re_o    = tx_sel_any;
    vm_r_raddr_o = tx_rd_addr[16*tx_sel +: 16];
    tx_rd_gnt    = '0;
    trr_d        = trr_q;
    if (tx_sel_any && vm_r_rgnt_i) begin
      tx_rd_gnt[tx_sel] = 1'b1;
      trr_d             = LW'((32'(tx_sel) + 1) % L);
    end
  end

  // ---------------- errors ----------------
  logic            err_q, err_d;
  logic [4:0]      err_code_q, err_code_d;
  logic [31:0]     err_pc_q, err_pc_d;
  always_comb begin
    err_d      = 1'b0;
    err_code_d = ErrIciSize;
    err_pc_d   = '1;
    for (int l = 0; l < 32'(L); l++) begin
      if ((tx_size_err[l] || (deadlock_i && tx_busy_o[l])) && tx_pc_q[32*l +: 32] <= err_pc_d) begin
        err_d      = 1'b1;
        err_pc_d   = tx_pc_q[32*l +: 32];
        err_code_d = tx_size_err[l] ? ErrIciSize : ErrIciDeadlock;
      end
      if ((rx_size_err[l] || (deadlock_i && rx_busy_o[l])) && rx_pc_q[32*l +: 32] <= err_pc_d) begin
        err_d      = 1'b1;
        err_pc_d   = rx_pc_q[32*l +: 32];
        err_code_d = rx_size_err[l] ? ErrIciSize : ErrIciDeadlock;
      end
    end
    if (clear_i) err_d = 1'b0;
  end
  assign err_o      = err_q;
  assign err_code_o = err_code_q;
  assign err_pc_o   = err_pc_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wq_valid_q <= '0;
      red_pend_q <= 1'b0;
      err_q      <= 1'b0;
      wrr_q      <= '0;
      trr_q      <= '0;
    end else begin
      wq_valid_q <= wq_valid_d;
      red_pend_q <= red_pend_d;
      err_q      <= err_d;
      wrr_q      <= wrr_d;
      trr_q      <= trr_d;
    end
  end
  // Data only, no reset: the queued write (read only with wq_valid_q), the pending reduction
  // (with red_pend_q) and the error's code and index (with err_q).
  always_ff @(posedge clk_i) begin
    wq_addr_q  <= wq_addr_d;
    wq_data_q  <= wq_data_d;
    wq_eng_q   <= wq_eng_d;
    red_eng_q  <= red_eng_d;
    red_addr_q <= red_addr_d;
    red_op_q   <= red_op_d;
    red_row_q  <= red_row_d;
    err_code_q <= err_code_d;
    err_pc_q   <= err_pc_d;
  end

  logic unused_link;
  assign unused_link = ^(cmd_link >> LW);

  `TPU_ASSERT_INIT(IciLinksRange, IciLinks >= 1 && IciLinks <= 16)
  `TPU_ASSERT_IMPLIES(IciCmdLink, cmd_valid_i, 32'(cmd_link) < L)
  `TPU_ASSERT_IMPLIES(IciCmdSend, cmd_valid_i && !cmd_i.recv, cmd_i.reduce == 2'd0)
  // The reduce result always finds room in the write queue.
  `TPU_ASSERT_IMPLIES(IciReduceSlot, red_pend_q && !clear_i, !wq_valid_q[1] || w_pop)
  `TPU_ASSERT_NEVER(IciQueueOrder, wq_valid_q[1] && !wq_valid_q[0])
  `TPU_ASSERT(IciOneTake, $onehot0(rx_wtake))
  `TPU_ASSERT_HOLD_IF(IciWriteHold, vm_w_we_o && !clear_i, vm_w_wgnt_i,
                      {vm_w_waddr_o, vm_w_wdata_o}, !clear_i)

endmodule

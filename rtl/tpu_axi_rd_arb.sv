// SPDX-License-Identifier: Apache-2.0
// AXI4 read-channel arbiter: several read clients share the master's AR/R channels.
//
// AR: fixed priority (client 0 first); the choice is held from ARVALID until ARREADY so the
// address never changes while it waits. Up to MaxOutstanding bursts may be in flight; all use
// one ID, so the memory returns them in order and a FIFO of owners (tpu_fifo) routes the R
// beats to the client whose burst is oldest (popped at RLAST).
`include "tpu_assert.svh"

module tpu_axi_rd_arb #(
  parameter int unsigned Clients        = 3,
  parameter int unsigned MaxOutstanding = 4
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // Clients.
  // Client i: bit i, or bits [32i +: 32] / [8i +: 8].
  input  logic [Clients-1:0]    c_ar_valid_i,
  input  logic [32*Clients-1:0] c_ar_addr_i,
  input  logic [8*Clients-1:0]  c_ar_len_i,
  output logic [Clients-1:0]    c_ar_ready_o,
  output logic [Clients-1:0]    c_r_valid_o,
  // Master.
  output logic [31:0] m_ar_addr_o,
  output logic [7:0]  m_ar_len_o,
  output logic        m_ar_valid_o,
  input  logic        m_ar_ready_i,
  input  logic        m_r_valid_i,
  input  logic        m_r_last_i,
  output logic        m_r_ready_o
);
  localparam int unsigned IdxW = (Clients > 1) ? $clog2(Clients) : 1;

  logic            ar_lock_q, ar_lock_d;    // a client's AR is being presented
  logic [IdxW-1:0] ar_owner_q, ar_owner_d;
  logic [IdxW-1:0] pick;
  logic            any;
  logic [IdxW-1:0] r_owner;                 // owner of the oldest burst in flight
  logic            ar_fire, r_done, full, empty;
  logic [$clog2(MaxOutstanding+1)-1:0]      unused_usage;
  logic [MaxOutstanding*IdxW-1:0]           unused_slots;
  logic [MaxOutstanding-1:0]                unused_slot_valid;

  always_comb begin
    any  = 1'b0;
    pick = '0;
    for (int i = 32'(Clients) - 1; i >= 0; i--) begin
      if (c_ar_valid_i[i]) begin
        any  = 1'b1;
        pick = IdxW'(i);
      end
    end
  end

  // Owners of the bursts in flight, oldest first.
  tpu_fifo #(.Width(IdxW), .Depth(MaxOutstanding)) u_owners (
    .clk_i, .rst_ni, .flush_i(1'b0), .full_o(full), .empty_o(empty), .usage_o(unused_usage),
    .push_i(ar_fire), .data_i(ar_owner_q), .pop_i(r_done), .data_o(r_owner),
    .slots_o(unused_slots), .slot_valid_o(unused_slot_valid)
  );

  assign m_ar_valid_o = ar_lock_q;
  assign m_ar_addr_o  = c_ar_addr_i[32*ar_owner_q +: 32];
  assign m_ar_len_o   = c_ar_len_i[8*ar_owner_q +: 8];
  assign ar_fire      = m_ar_valid_o && m_ar_ready_i;
  assign m_r_ready_o  = !empty;
  assign r_done       = m_r_ready_o && m_r_valid_i && m_r_last_i;

  always_comb begin
    for (int i = 0; i < 32'(Clients); i++) begin
      c_ar_ready_o[i] = ar_fire && (ar_owner_q == IdxW'(i));
      c_r_valid_o[i]  = m_r_ready_o && m_r_valid_i && (r_owner == IdxW'(i));
    end
  end

  // A new AR is only taken on when its burst has a place in the owner FIFO.
  always_comb begin
    ar_lock_d  = ar_lock_q;
    ar_owner_d = ar_owner_q;
    if (!ar_lock_q) begin
      if (any && !full) begin
        ar_lock_d  = 1'b1;
        ar_owner_d = pick;
      end
    end else if (ar_fire) begin
      ar_lock_d = 1'b0;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ar_lock_q  <= 1'b0;
      ar_owner_q <= '0;
    end else begin
      ar_lock_q  <= ar_lock_d;
      ar_owner_q <= ar_owner_d;
    end
  end

  logic unused_arb;
  assign unused_arb = ^{unused_usage, unused_slots, unused_slot_valid};

  // The owner FIFO (tpu_fifo: FifoOverflow, FifoUnderflow) never overflows: an AR is locked
  // only while it has room; an R beat always has an owner.
  `TPU_ASSERT_NEVER(ArbOverflow, ar_fire && full)
  `TPU_ASSERT_NEVER(ArbOrphanBeat, m_r_valid_i && empty)
  `TPU_ASSERT_IMPLIES(ArbOwnerLegal, ar_lock_q, 32'(ar_owner_q) < Clients)
  // The AR payload is the owner's: it must hold it while ARVALID waits for ARREADY.
  `TPU_ASSERT_HOLD(ArbArHold, m_ar_valid_o, m_ar_ready_i, {m_ar_addr_o, m_ar_len_o})

endmodule

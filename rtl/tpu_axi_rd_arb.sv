// SPDX-License-Identifier: Apache-2.0
// AXI4 read-channel arbiter: several read clients share the master's AR/R channels.
//
// AR: fixed priority (client 0 first); the choice is held from ARVALID until ARREADY so the
// address never changes while it waits. Up to MaxOutstanding bursts may be in flight; all use
// one ID, so the memory returns them in order and a FIFO of owners routes the R beats to the
// client whose burst is oldest (popped at RLAST).
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
  localparam int unsigned QW   = (MaxOutstanding > 1) ? $clog2(MaxOutstanding) : 1;

  logic            ar_lock_q;               // a client's AR is being presented
  logic [IdxW-1:0] ar_owner_q;
  logic [IdxW-1:0] pick;
  logic            any;
  logic [IdxW-1:0] owners_q [MaxOutstanding];  // owners of the bursts in flight, oldest first
  logic [QW-1:0]   rd_q, wr_q;
  logic [QW:0]     cnt_q;
  logic            ar_fire, r_done, full;

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

  assign full         = (cnt_q == (QW+1)'(MaxOutstanding));
  assign m_ar_valid_o = ar_lock_q;
  assign m_ar_addr_o  = c_ar_addr_i[32*ar_owner_q +: 32];
  assign m_ar_len_o   = c_ar_len_i[8*ar_owner_q +: 8];
  assign ar_fire      = m_ar_valid_o && m_ar_ready_i;
  assign m_r_ready_o  = (cnt_q != '0);
  assign r_done       = m_r_ready_o && m_r_valid_i && m_r_last_i;

  always_comb begin
    for (int i = 0; i < 32'(Clients); i++) begin
      c_ar_ready_o[i] = ar_fire && (ar_owner_q == IdxW'(i));
      c_r_valid_o[i]  = m_r_ready_o && m_r_valid_i && (owners_q[rd_q] == IdxW'(i));
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ar_lock_q  <= 1'b0;
      ar_owner_q <= '0;
      rd_q       <= '0;
      wr_q       <= '0;
      cnt_q      <= '0;
    end else begin
      // A new AR is only taken on when its burst has a place in the owner FIFO.
      if (!ar_lock_q) begin
        if (any && !full) begin
          ar_lock_q  <= 1'b1;
          ar_owner_q <= pick;
        end
      end else if (ar_fire) begin
        ar_lock_q <= 1'b0;
      end
      if (ar_fire) begin
        owners_q[wr_q] <= ar_owner_q;
        wr_q <= QW'((32'(wr_q) + 1) % MaxOutstanding);
      end
      if (r_done) rd_q <= QW'((32'(rd_q) + 1) % MaxOutstanding);
      cnt_q <= cnt_q + (QW+1)'(ar_fire) - (QW+1)'(r_done);
    end
  end

  // The owner FIFO neither overflows nor underflows; an R beat always has an owner.
  `TPU_ASSERT(ArbCountBound, cnt_q <= (QW+1)'(MaxOutstanding))
  `TPU_ASSERT_NEVER(ArbOverflow, ar_fire && full && !r_done)
  `TPU_ASSERT_NEVER(ArbOrphanBeat, m_r_valid_i && cnt_q == '0)
  `TPU_ASSERT_IMPLIES(ArbOwnerLegal, ar_lock_q, 32'(ar_owner_q) < Clients)
  // The AR payload is the owner's: it must hold it while ARVALID waits for ARREADY.
  `TPU_ASSERT_HOLD(ArbArHold, m_ar_valid_o, m_ar_ready_i, {m_ar_addr_o, m_ar_len_o})

endmodule

// SPDX-License-Identifier: Apache-2.0
// The types of the weight tiles in program order, for the decoder's ERR_WEIGHT_TYPE check
// (docs/isa.md "Errors", code 15; training configuration only).
//
// isa.md makes ERR_WEIGHT_TYPE a static check: it depends only on earlier instructions and is
// decided before the instruction issues, so it cannot wait for the weight loader (which runs
// behind the controller). This block replays the FIFO's order at issue time: every issued
// read_weights (int8) or load_weights (bf16) appends its tiles' type, every issued matmul or
// matmul_bf16 with switch takes the oldest one as the active tile's type. type_err_o tells
// whether the matmul (or matmul_bf16) at the controller's head would use a tile of the other
// type: with switch the oldest waiting tile, else the active one. It is meaningful only when
// that tile exists (else the controller reports ERR_NO_WEIGHTS, which comes first), and like
// the controller's tile credit it counts at most WFifoTiles + 2 waiting tiles (more is
// ERR_WEIGHT_OVERFLOW, decided before the push).
`include "tpu_assert.svh"

module tpu_weight_types #(
  parameter int unsigned WFifoTiles = 4
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        clear_i,        // START / soft reset: no tiles
  // Issue events (at most one per cycle: one instruction issues at a time).
  input  logic        push_i,         // a read_weights or load_weights issues
  input  logic        push_bf16_i,    // ... a load_weights
  input  logic [23:0] push_tiles_i,   // its tiles (waiting + tiles <= WFifoTiles + 2)
  input  logic        pop_i,          // a matmul or matmul_bf16 with switch issues
  // The check of the instruction at the head.
  input  logic        mm_bf16_i,      // it is a matmul_bf16 (else a matmul)
  input  logic        mm_switch_i,    // with switch
  output logic        type_err_o      // it would use a tile of the other type
);
  localparam int unsigned Cap  = WFifoTiles + 2;
  localparam int unsigned CntW = $clog2(Cap + 1);

  logic [Cap-1:0]  q_q, q_d;          // bit i: the (i+1)-th oldest waiting tile is bf16
  logic [CntW-1:0] cnt_q, cnt_d;      // waiting tiles
  logic            active_q, active_d;

  assign type_err_o = (mm_switch_i ? q_q[0] : active_q) != mm_bf16_i;

  always_comb begin
    logic [CntW-1:0] base;
    q_d      = q_q;
    cnt_d    = cnt_q;
    base     = cnt_q;
    active_d = active_q;
    if (clear_i) begin
      cnt_d = '0;
    end else begin
      if (pop_i) begin
        active_d = q_q[0];
        q_d      = q_q >> 1;
        cnt_d    = cnt_q - 1'b1;
      end
      base = cnt_d;  // after a pop (never in the same cycle as a push)
      if (push_i) begin
        for (int i = 0; i < 32'(Cap); i++) begin
          if (i >= 32'(base) && 32'(i) < 32'(base) + 32'(push_tiles_i)) q_d[i] = push_bf16_i;
        end
        cnt_d = CntW'(32'(base) + 32'(push_tiles_i));
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      q_q      <= '0;
      cnt_q    <= '0;
      active_q <= 1'b0;
    end else begin
      q_q      <= q_d;
      cnt_q    <= cnt_d;
      active_q <= active_d;
    end
  end

  `TPU_ASSERT_NEVER(WtPopEmpty, pop_i && !clear_i && cnt_q == '0)
  `TPU_ASSERT_NEVER(WtOverflow, push_i && !clear_i &&
                                32'(cnt_q) - 32'(pop_i) + 32'(push_tiles_i) > Cap)
  `TPU_ASSERT_NEVER(WtPushPop, push_i && pop_i)

endmodule

// SPDX-License-Identifier: Apache-2.0
// The FIFO of the core (after PULP common_cells' fifo_v3): Depth entries of Width bits, a
// first-word-fall-through read (data_o is the oldest entry while !empty_o), flush, full /
// empty and the number of entries held.
//
// The entry type is a width, not a `parameter type`: Yosys 0.23 cannot parse type parameters
// (docs/synthesis.md), so instances pass the width of their tpu_pkg type (a struct assigns to
// and from a vector of its width). The storage is a plain vector array for the same reason:
// Yosys 0.23 mis-elaborates unpacked arrays of a packed struct type.
//
// push_i when full and pop_i when empty are errors (assertions), also with a pop / push in the
// same cycle: callers check full_o / empty_o. flush_i empties the FIFO; push_i and pop_i are
// ignored in that cycle. With Peek, slots_o / slot_valid_o show every entry (in storage order,
// not age order) to a scoreboard that checks all of them (the controller's in-flight matmul
// table); without, they are zero (and cost nothing in simulation).
`include "tpu_assert.svh"

module tpu_fifo #(
  parameter int unsigned Width = 8,
  parameter int unsigned Depth = 4,    // >= 2
  parameter bit          Peek  = 1'b0  // drive slots_o / slot_valid_o
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  input  logic                         flush_i,
  output logic                         full_o,
  output logic                         empty_o,
  output logic [$clog2(Depth+1)-1:0]   usage_o,
  input  logic                         push_i,
  input  logic [Width-1:0]             data_i,
  input  logic                         pop_i,
  output logic [Width-1:0]             data_o,
  output logic [Depth*Width-1:0]       slots_o,       // slot j in [Width*j +: Width]
  output logic [Depth-1:0]             slot_valid_o
);
  localparam int unsigned PtrW = $clog2(Depth);
  localparam int unsigned CntW = $clog2(Depth + 1);

  logic [Width-1:0] mem_q [Depth];
  logic [PtrW-1:0]  rd_q, rd_d, wr_q, wr_d;
  logic [CntW-1:0]  cnt_q, cnt_d;
  logic             do_push, do_pop;

  function automatic logic [PtrW-1:0] next_ptr(logic [PtrW-1:0] p);
    next_ptr = (32'(p) == Depth - 1) ? '0 : p + 1'b1;
  endfunction

  assign full_o  = (cnt_q == CntW'(Depth));
  assign empty_o = (cnt_q == '0);
  assign usage_o = cnt_q;
  assign data_o  = mem_q[rd_q];
  assign do_push = push_i && !flush_i;
  assign do_pop  = pop_i && !flush_i;

  always_comb begin
    rd_d  = rd_q;
    wr_d  = wr_q;
    cnt_d = cnt_q;
    if (flush_i) begin
      rd_d  = '0;
      wr_d  = '0;
      cnt_d = '0;
    end else begin
      if (do_push) wr_d = next_ptr(wr_q);
      if (do_pop)  rd_d = next_ptr(rd_q);
      cnt_d = cnt_q + CntW'(do_push) - CntW'(do_pop);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_q  <= '0;
      wr_q  <= '0;
      cnt_q <= '0;
    end else begin
      rd_q  <= rd_d;
      wr_q  <= wr_d;
      cnt_q <= cnt_d;
    end
  end

  // The storage: a memory written at the write pointer (no reset, like any RAM).
  always_ff @(posedge clk_i) begin
    if (do_push) mem_q[wr_q] <= data_i;
  end

  // Slot j holds an entry when it lies within cnt_q slots from the read pointer.
  if (Peek) begin : g_peek
    always_comb begin
      for (int j = 0; j < 32'(Depth); j++) begin
        logic [31:0] age;
        age = (j >= 32'(rd_q)) ? j - 32'(rd_q) : j + Depth - 32'(rd_q);
        slots_o[Width*j +: Width] = mem_q[j];
        slot_valid_o[j] = age < 32'(cnt_q);
      end
    end
  end else begin : g_no_peek
    assign slots_o      = '0;
    assign slot_valid_o = '0;
  end

  `TPU_ASSERT_INIT(FifoDepth, Depth >= 2 && Width >= 1)
  `TPU_ASSERT_NEVER(FifoOverflow, push_i && full_o && !flush_i)
  `TPU_ASSERT_NEVER(FifoUnderflow, pop_i && empty_o && !flush_i)
  `TPU_ASSERT(FifoUsageBound, 32'(cnt_q) <= Depth)

endmodule

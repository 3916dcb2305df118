// SPDX-License-Identifier: Apache-2.0
// VMEM move unit of the training chip: acc_to_vmem and transpose (docs/isa.md), one
// instruction at a time.
//
// acc_to_vmem: ACC row src + i is written unchanged to VMEM row dst + i, two rows per cycle.
// Row i is read through the accumulators' activation-unit port (which the controller never
// gives to both units at once) and row i + 1 beside it through their second read port (copy
// 0's, acc2: refused in a cycle the MXU reads an accumulating row there, then the pair is one
// row); the next pair is read in the cycle the pair before is written. The two rows go through
// the unit's two VMEM write clients (rows dst + i and dst + i + 1: different banks), each granted
// on its own; a denied write holds. Row i's data stays on the activation port (no other read
// of it meanwhile); row i + 1's is on acc2 only in the cycle after its read (the MXU may read
// copy 0 again), so it is kept in the transpose buffer's row 0 (unused by acc_to_vmem) until
// written.
// transpose: block b reads its N source rows S[i] = VMEM[src + b * src_stride + i *
// src_row_stride] (this unit's VMEM read client, which may be denied) into an N x N buffer and,
// once all N have arrived, writes the transposed rows j = 0 .. N-1 to VMEM[dst + b * dst_stride
// + j]. The blocks are pipelined through the one buffer: while block b writes its rows, block
// b + 1 reads its own into the buffer slots block b has already written out, so a block takes
// about N + 3 cycles instead of 2N + 1. The slots alternate: a block stored by columns (source
// row i in column i, as block 0) is written out by rows, and the next one is stored by rows
// (source row i in row i, which is free once transposed row i of the block before was
// written) and written out by columns. Source row i of block b + 1 is requested only after
// transposed row i of block b was written, and not at all while block b writes when its source
// rows [first, last] meet block b's destination rows (then it waits for them, as if the blocks
// ran one after the other): the result is that of the blocks in order, and a block may still be
// transposed in place.
`include "tpu_assert.svh"

module tpu_vmem_move #(
  parameter int unsigned N       = 16,
  parameter int unsigned AccRows = 2048
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       clear_i,
  input  logic                       cmd_valid_i,
  output logic                       cmd_ready_o,
  input  tpu_pkg::move_cmd_t         cmd_i,
  // Accumulator read port (synchronous: the row is on acc_rdata_i in the next cycle).
  output logic                       acc_re_o,
  output logic [$clog2(AccRows)-1:0] acc_raddr_o,
  input  logic [32*N-1:0]            acc_rdata_i,
  // Accumulator second read port (copy 0; acc2_gnt_i in the cycle of the request; the row is
  // on acc2_rdata_i in the next cycle only).
  output logic                       acc2_re_o,
  output logic [$clog2(AccRows)-1:0] acc2_raddr_o,
  input  logic                       acc2_gnt_i,
  input  logic [32*N-1:0]            acc2_rdata_i,
  // VMEM read client.
  output logic                       vm_re_o,
  output logic [15:0]                vm_raddr_o,
  input  logic                       vm_rgnt_i,
  input  logic [32*N-1:0]            vm_rdata_i,
  // VMEM write client.
  output logic                       vm_w_we_o,
  output logic [15:0]                vm_w_waddr_o,
  output logic [32*N-1:0]            vm_w_wdata_o,
  input  logic                       vm_w_wgnt_i,
  // Second VMEM write client (acc_to_vmem's second row of a pair).
  output logic                       vm_w2_we_o,
  output logic [15:0]                vm_w2_waddr_o,
  output logic [32*N-1:0]            vm_w2_wdata_o,
  input  logic                       vm_w2_wgnt_i,
  output logic                       busy_o
);
  localparam int unsigned AccW = $clog2(AccRows);
  localparam int unsigned IW   = $clog2(N);

  typedef enum logic [1:0] {MIdle, MAcc, MXpose} state_e;
  state_e          state_q, state_d;
  logic            transp_q, transp_d;
  logic [23:0]     left_q, left_d;         // acc_to_vmem: rows to read; transpose: blocks
                                           // after the one being read
  logic [15:0]     src_q, src_d;           // next ACC row / the block being read: first source row
  logic [15:0]     dst_q, dst_d;           // next VMEM row written / the block being read: first
                                           // destination row
  logic [15:0]     src_stride_q, src_stride_d, dst_stride_q, dst_stride_d;
  logic [15:0]     row_stride_q, row_stride_d;
  logic            pend_q, pend_d;         // acc_to_vmem: a row is on acc_rdata_i to be written
                                           // to dst_q
  logic            pend2_q, pend2_d;       // ... and its pair's second row, to dst_q + 1
  logic            fresh2_q, fresh2_d;     // ... which is on acc2_rdata_i (else in buf_q row 0)
  logic            two_q, two_d;           // the pair being written has two rows
  // transpose, read side: the block being read
  logic            rd_busy_q, rd_busy_d;   // a block is being read
  logic            rd_rows_q, rd_rows_d;   // ... stored by rows (else by columns)
  logic            ovl_q, ovl_d;           // ... its source rows meet the writing block's rows
  logic [IW:0]     rd_cnt_q, rd_cnt_d;     // source rows requested
  logic [IW:0]     got_cnt_q, got_cnt_d;   // ... arrived
  logic            got_q, got_d;           // a granted read's row arrives this cycle
  logic [IW-1:0]   got_idx_q, got_idx_d;   // ... it is source row got_idx_q
  logic [15:0]     rd_addr_q, rd_addr_d;   // next source row
  // transpose, write side: the block being written
  logic            wr_busy_q, wr_busy_d;   // a block is being written
  logic            wr_cols_q, wr_cols_d;   // ... its rows are the buffer's columns
  logic [IW:0]     wr_cnt_q, wr_cnt_d;     // rows of the block written
  logic [15:0]     wr_dst_q, wr_dst_d;     // its first destination row
  logic [32*N*N-1:0] buf_q, buf_d;         // element (r, c) in [32(Nr + c) +: 32]
  logic [32*N-1:0] wr_row;                 // transposed row wr_cnt_q of the writing block
  logic            may_read;               // the next source row's slot is free
  logic [31:0]     next_src, next_last;    // the next block's first / last source row

  logic start, acc_read, acc_write, acc_done, acc2_take;
  logic [32*N-1:0] row2;                   // the pair's second row
  assign start       = cmd_valid_i && cmd_ready_o;
  assign cmd_ready_o = state_q == MIdle;
  assign busy_o      = state_q != MIdle;

  // acc_to_vmem: write the pending pair; read the next pair in the cycle the pending rows are
  // all written (or none is pending).
  assign acc_write = state_q == MAcc && pend_q;
  assign acc_done  = (!pend_q || vm_w_wgnt_i) && (!pend2_q || vm_w2_wgnt_i);
  assign acc_read  = state_q == MAcc && left_q != '0 && acc_done && !clear_i;
  assign acc_re_o     = acc_read;
  assign acc_raddr_o  = AccW'(src_q);
  assign acc2_re_o    = acc_read && left_q != 24'd1;
  assign acc2_raddr_o = AccW'(src_q + 16'd1);
  assign acc2_take    = acc2_re_o && acc2_gnt_i;
  assign row2         = fresh2_q ? acc2_rdata_i : buf_q[0 +: 32*N];
  assign vm_w2_we_o    = state_q == MAcc && pend2_q;
  assign vm_w2_waddr_o = dst_q + 16'd1;
  assign vm_w2_wdata_o = row2;

  // Source row rd_cnt_q may be read when no block is being written, or when the writing
  // block has written its row rd_cnt_q already (the slot it goes to) and its rows do not meet
  // this block's source rows.
  assign may_read   = !wr_busy_q || (!ovl_q && rd_cnt_q < wr_cnt_q);
  assign vm_re_o    = state_q == MXpose && rd_busy_q && !rd_cnt_q[IW] && may_read && !clear_i;
  assign vm_raddr_o = rd_addr_q;

  always_comb begin
    wr_row = buf_q[32*N*wr_cnt_q[IW-1:0] +: 32*N];
    if (wr_cols_q) begin
      for (int i = 0; i < 32'(N); i++) begin
        wr_row[32*i +: 32] = buf_q[32*(N*i + 32'(wr_cnt_q[IW-1:0])) +: 32];
      end
    end
  end
  assign next_src  = 32'(src_q) + 32'(src_stride_q);
  assign next_last = next_src + (N - 1) * 32'(row_stride_q);

  always_comb begin
    vm_w_we_o    = 1'b0;
    vm_w_waddr_o = dst_q;
    vm_w_wdata_o = acc_rdata_i;
    if (acc_write) begin
      vm_w_we_o = 1'b1;
    end else if (state_q == MXpose && wr_busy_q) begin
      vm_w_we_o    = 1'b1;
      vm_w_waddr_o = wr_dst_q + 16'(wr_cnt_q);
      vm_w_wdata_o = wr_row;
    end
  end

  always_comb begin
    state_d      = state_q;
    transp_d     = transp_q;
    left_d       = left_q;
    src_d        = src_q;
    dst_d        = dst_q;
    src_stride_d = src_stride_q;
    dst_stride_d = dst_stride_q;
    row_stride_d = row_stride_q;
    pend_d       = pend_q;
    pend2_d      = pend2_q;
    fresh2_d     = 1'b0;
    two_d        = two_q;
    rd_busy_d    = rd_busy_q;
    rd_rows_d    = rd_rows_q;
    ovl_d        = ovl_q;
    rd_cnt_d     = rd_cnt_q;
    got_cnt_d    = got_cnt_q;
    got_d        = 1'b0;
    got_idx_d    = got_idx_q;
    rd_addr_d    = rd_addr_q;
    wr_busy_d    = wr_busy_q;
    wr_cols_d    = wr_cols_q;
    wr_cnt_d     = wr_cnt_q;
    wr_dst_d     = wr_dst_q;
    buf_d        = buf_q;
    if (clear_i) begin
      state_d   = MIdle;
      pend_d    = 1'b0;
      pend2_d   = 1'b0;
      rd_busy_d = 1'b0;
      wr_busy_d = 1'b0;
    end else begin
      unique case (state_q)
        MIdle: if (start) begin
          transp_d     = cmd_i.transpose;
          left_d       = cmd_i.transpose ? cmd_i.count - 24'd1 : cmd_i.count;
          src_d        = cmd_i.src;
          dst_d        = cmd_i.dst;
          src_stride_d = cmd_i.src_stride;
          dst_stride_d = cmd_i.dst_stride;
          row_stride_d = cmd_i.src_row_stride;
          pend_d       = 1'b0;
          pend2_d      = 1'b0;
          rd_busy_d    = cmd_i.transpose;
          rd_rows_d    = 1'b0;               // block 0 by columns
          ovl_d        = 1'b0;
          rd_cnt_d     = '0;
          got_cnt_d    = '0;
          wr_busy_d    = 1'b0;
          rd_addr_d    = cmd_i.src;
          state_d      = cmd_i.transpose ? MXpose : MAcc;
        end
        MAcc: begin
          if (acc_write && vm_w_wgnt_i) pend_d = 1'b0;
          if (vm_w2_we_o && vm_w2_wgnt_i) pend2_d = 1'b0;
          // The second row waits in buf_q row 0 once it has left acc2_rdata_i.
          if (fresh2_q) buf_d[0 +: 32*N] = acc2_rdata_i;
          if ((pend_q || pend2_q) && acc_done) dst_d = dst_q + (two_q ? 16'd2 : 16'd1);
          if (acc_read) begin
            pend_d   = 1'b1;
            pend2_d  = acc2_take;
            fresh2_d = acc2_take;
            two_d    = acc2_take;
            src_d    = src_q + (acc2_take ? 16'd2 : 16'd1);
            left_d   = left_q - (acc2_take ? 24'd2 : 24'd1);
          end
          if (left_q == '0 && acc_done) state_d = MIdle;
        end
        MXpose: begin
          // Read side: request, then store the arriving row in its slot.
          if (vm_re_o && vm_rgnt_i) begin
            got_d     = 1'b1;
            got_idx_d = rd_cnt_q[IW-1:0];
            rd_cnt_d  = rd_cnt_q + 1'b1;
            rd_addr_d = rd_addr_q + row_stride_q;
          end
          if (got_q) begin
            if (rd_rows_q) begin  // source row i is buffer row i
              buf_d[32*N*got_idx_q +: 32*N] = vm_rdata_i;
            end else begin        // source row i is buffer column i
              for (int r = 0; r < 32'(N); r++) begin
                buf_d[32*(N*r + 32'(got_idx_q)) +: 32] = vm_rdata_i[32*r +: 32];
              end
            end
            got_cnt_d = got_cnt_q + 1'b1;
          end
          // Write side.
          if (wr_busy_q && vm_w_wgnt_i) begin
            wr_cnt_d = wr_cnt_q + 1'b1;
            if (wr_cnt_q == (IW+1)'(N - 1)) wr_busy_d = 1'b0;
          end
          // A block whose N rows are stored goes to the write side once it is free; the next
          // block starts reading, in the other orientation.
          if (rd_busy_q && got_cnt_q == (IW+1)'(N) && !wr_busy_q) begin
            wr_busy_d = 1'b1;
            wr_cnt_d  = '0;
            wr_cols_d = rd_rows_q;
            wr_dst_d  = dst_q;
            rd_busy_d = left_q != '0;
            rd_rows_d = !rd_rows_q;
            rd_cnt_d  = '0;
            got_cnt_d = '0;
            left_d    = left_q - 24'd1;
            src_d     = src_q + src_stride_q;
            dst_d     = dst_q + dst_stride_q;
            rd_addr_d = src_q + src_stride_q;
            ovl_d     = next_src <= 32'(dst_q) + (N - 1) && next_last >= 32'(dst_q);
          end
          if (!rd_busy_q && !wr_busy_q) state_d = MIdle;
        end
        default: state_d = MIdle;
      endcase
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= MIdle;
      pend_q    <= 1'b0;
      pend2_q   <= 1'b0;
      fresh2_q  <= 1'b0;
      got_q     <= 1'b0;
      rd_busy_q <= 1'b0;
      wr_busy_q <= 1'b0;
    end else begin
      state_q   <= state_d;
      pend_q    <= pend_d;
      pend2_q   <= pend2_d;
      fresh2_q  <= fresh2_d;
      got_q     <= got_d;
      rd_busy_q <= rd_busy_d;
      wr_busy_q <= wr_busy_d;
    end
  end
  // Data only, no reset: the instruction's fields and position, written when a command is
  // taken (MIdle) and read only while busy (state_q != MIdle; the addresses leave on the ports
  // only with acc_re_o / vm_re_o / vm_w_we_o); got_idx_q only with got_q; the read side's
  // fields only with rd_busy_q, the write side's only with wr_busy_q. A buffer slot is read
  // (wr_row) only after the row of the block being written was stored into it; row 0 by
  // acc_to_vmem (row2) only after acc2_rdata_i was stored into it. two_q only with a pending
  // row (set with it).
  // transp_q is not read (the state says which instruction runs).
  always_ff @(posedge clk_i) begin
    transp_q     <= transp_d;
    two_q        <= two_d;
    left_q       <= left_d;
    src_q        <= src_d;
    dst_q        <= dst_d;
    src_stride_q <= src_stride_d;
    dst_stride_q <= dst_stride_d;
    row_stride_q <= row_stride_d;
    rd_rows_q    <= rd_rows_d;
    ovl_q        <= ovl_d;
    rd_cnt_q     <= rd_cnt_d;
    got_cnt_q    <= got_cnt_d;
    got_idx_q    <= got_idx_d;
    rd_addr_q    <= rd_addr_d;
    wr_cols_q    <= wr_cols_d;
    wr_cnt_q     <= wr_cnt_d;
    wr_dst_q     <= wr_dst_d;
    buf_q        <= buf_d;
  end

  logic unused_move;
  assign unused_move = ^{transp_q, src_q >> AccW};

  `TPU_ASSERT_IMPLIES(MoveAccOneRow, acc_read, (!pend_q || vm_w_wgnt_i) && (!pend2_q || vm_w2_wgnt_i))
  // A pair's second row only beside its first, and only while rows are left for it.
  `TPU_ASSERT_IMPLIES(MoveAccPair, acc2_re_o, acc_re_o && left_q >= 24'd2)
  `TPU_ASSERT_IMPLIES(MoveAccSecondRow, pend2_q, state_q == MAcc)
  `TPU_ASSERT_IMPLIES(MoveReadBound, vm_re_o, 32'(rd_cnt_q) < N)
  `TPU_ASSERT_IMPLIES(MoveWriteBound, state_q == MXpose && wr_busy_q, 32'(wr_cnt_q) < N)
  // A source row arriving while a block is written goes to a slot that block has written out
  // (never one it has yet to write), and never while the two blocks' rows meet.
  `TPU_ASSERT_IMPLIES(MoveSlotFree, got_q && wr_busy_q, !ovl_q && 32'(got_idx_q) < 32'(wr_cnt_q))
  `TPU_ASSERT_INIT(MoveN, N >= 4 && (N & (N - 1)) == 0)

endmodule

// SPDX-License-Identifier: Apache-2.0
// VMEM move unit of the training chip: acc_to_vmem and transpose (docs/isa.md), one
// instruction at a time.
//
// acc_to_vmem: ACC row src + i is read (the accumulators' activation-unit port, which the
// controller never gives to both units at once) and written unchanged to VMEM row dst + i. The
// ACC read of row i + 1 is issued in the cycle row i is written (one row per cycle while the
// VMEM write port grants); a denied write holds, and so does the ACC read data (no other read
// of that port meanwhile).
// transpose: block b reads its N source rows S[i] = VMEM[src + b * src_stride + i *
// src_row_stride] (this unit's VMEM read client, which may be denied), storing row i as column
// i of an N x N buffer, and only once all N have arrived writes the buffer's rows j = 0 .. N-1
// to VMEM[dst + b * dst_stride + j] (so a block may be transposed in place), then goes on to
// the next block.
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
  output logic                       busy_o
);
  localparam int unsigned AccW = $clog2(AccRows);
  localparam int unsigned IW   = $clog2(N);

  typedef enum logic [1:0] {MIdle, MAcc, MRead, MWrite} state_e;
  state_e          state_q, state_d;
  logic            transp_q, transp_d;
  logic [23:0]     left_q, left_d;         // acc_to_vmem: rows to read; transpose: blocks
  logic [15:0]     src_q, src_d;           // next ACC row / this block's first source row
  logic [15:0]     dst_q, dst_d;           // next VMEM row written / this block's first
  logic [15:0]     src_stride_q, src_stride_d, dst_stride_q, dst_stride_d;
  logic [15:0]     row_stride_q, row_stride_d;
  logic            pend_q, pend_d;         // acc_to_vmem: a row is on acc_rdata_i to be written
  logic [IW:0]     rd_cnt_q, rd_cnt_d;     // transpose: source rows requested
  logic [IW:0]     got_cnt_q, got_cnt_d;   // ... arrived
  logic            got_q, got_d;           // a granted read's row arrives this cycle
  logic [IW-1:0]   got_idx_q, got_idx_d;   // ... it is source row got_idx_q
  logic [IW:0]     wr_cnt_q, wr_cnt_d;     // transpose: rows of the block written
  logic [15:0]     rd_addr_q, rd_addr_d;   // next source row
  logic [32*N*N-1:0] buf_q, buf_d;         // row j of the transposed block in [32Nj +: 32N]

  logic start, acc_read, acc_write;
  assign start       = cmd_valid_i && cmd_ready_o;
  assign cmd_ready_o = state_q == MIdle;
  assign busy_o      = state_q != MIdle;

  // acc_to_vmem: write the pending row; read the next while (or once) nothing is pending.
  assign acc_write = state_q == MAcc && pend_q;
  assign acc_read  = state_q == MAcc && left_q != '0 && (!pend_q || vm_w_wgnt_i) && !clear_i;
  assign acc_re_o    = acc_read;
  assign acc_raddr_o = AccW'(src_q);

  assign vm_re_o    = state_q == MRead && !rd_cnt_q[IW] && !clear_i;
  assign vm_raddr_o = rd_addr_q;

  always_comb begin
    vm_w_we_o    = 1'b0;
    vm_w_waddr_o = dst_q;
    vm_w_wdata_o = acc_rdata_i;
    if (acc_write) begin
      vm_w_we_o = 1'b1;
    end else if (state_q == MWrite) begin
      vm_w_we_o    = 1'b1;
      vm_w_waddr_o = dst_q + 16'(wr_cnt_q);
      vm_w_wdata_o = buf_q[32*N*wr_cnt_q[IW-1:0] +: 32*N];
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
    rd_cnt_d     = rd_cnt_q;
    got_cnt_d    = got_cnt_q;
    got_d        = 1'b0;
    got_idx_d    = got_idx_q;
    wr_cnt_d     = wr_cnt_q;
    rd_addr_d    = rd_addr_q;
    buf_d        = buf_q;
    if (clear_i) begin
      state_d = MIdle;
      pend_d  = 1'b0;
    end else begin
      unique case (state_q)
        MIdle: if (start) begin
          transp_d     = cmd_i.transpose;
          left_d       = cmd_i.count;
          src_d        = cmd_i.src;
          dst_d        = cmd_i.dst;
          src_stride_d = cmd_i.src_stride;
          dst_stride_d = cmd_i.dst_stride;
          row_stride_d = cmd_i.src_row_stride;
          pend_d       = 1'b0;
          rd_cnt_d     = '0;
          got_cnt_d    = '0;
          wr_cnt_d     = '0;
          rd_addr_d    = cmd_i.src;
          state_d      = cmd_i.transpose ? MRead : MAcc;
        end
        MAcc: begin
          if (acc_write && vm_w_wgnt_i) begin
            pend_d = 1'b0;
            dst_d  = dst_q + 16'd1;
          end
          if (acc_read) begin
            pend_d = 1'b1;
            src_d  = src_q + 16'd1;
            left_d = left_q - 24'd1;
          end
          if (left_q == '0 && (!pend_q || vm_w_wgnt_i)) state_d = MIdle;
        end
        MRead: begin
          if (vm_re_o && vm_rgnt_i) begin
            got_d     = 1'b1;
            got_idx_d = rd_cnt_q[IW-1:0];
            rd_cnt_d  = rd_cnt_q + 1'b1;
            rd_addr_d = rd_addr_q + row_stride_q;
          end
          if (got_q) begin
            // Source row i is column i of the transposed block.
            for (int j = 0; j < 32'(N); j++) begin
              buf_d[32*N*j + 32*got_idx_q +: 32] = vm_rdata_i[32*j +: 32];
            end
            got_cnt_d = got_cnt_q + 1'b1;
            if (got_cnt_q == (IW+1)'(N - 1)) begin
              state_d  = MWrite;
              wr_cnt_d = '0;
            end
          end
        end
        MWrite: begin
          if (vm_w_wgnt_i) begin
            wr_cnt_d = wr_cnt_q + 1'b1;
            if (wr_cnt_q == (IW+1)'(N - 1)) begin
              // The next block.
              left_d    = left_q - 24'd1;
              src_d     = src_q + src_stride_q;
              dst_d     = dst_q + dst_stride_q;
              rd_addr_d = src_q + src_stride_q;
              rd_cnt_d  = '0;
              got_cnt_d = '0;
              state_d   = (left_q == 24'd1) ? MIdle : MRead;
            end
          end
        end
        default: state_d = MIdle;
      endcase
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= MIdle;
      pend_q  <= 1'b0;
      got_q   <= 1'b0;
    end else begin
      state_q <= state_d;
      pend_q  <= pend_d;
      got_q   <= got_d;
    end
  end
  // Data only, no reset: the instruction's fields and position, written when a command is
  // taken (MIdle) and read only while busy (state_q != MIdle; the addresses leave on the ports
  // only with acc_re_o / vm_re_o / vm_w_we_o); got_idx_q only with got_q. buf_q is read only in
  // MWrite, after all N source rows of the block were written into it as its N columns.
  // transp_q is not read (the state says which instruction runs).
  always_ff @(posedge clk_i) begin
    transp_q     <= transp_d;
    left_q       <= left_d;
    src_q        <= src_d;
    dst_q        <= dst_d;
    src_stride_q <= src_stride_d;
    dst_stride_q <= dst_stride_d;
    row_stride_q <= row_stride_d;
    rd_cnt_q     <= rd_cnt_d;
    got_cnt_q    <= got_cnt_d;
    got_idx_q    <= got_idx_d;
    wr_cnt_q     <= wr_cnt_d;
    rd_addr_q    <= rd_addr_d;
    buf_q        <= buf_d;
  end

  logic unused_move;
  assign unused_move = ^{transp_q, src_q >> AccW};

  `TPU_ASSERT_IMPLIES(MoveAccOneRow, acc_read, !pend_q || vm_w_wgnt_i)
  `TPU_ASSERT_IMPLIES(MoveReadBound, vm_re_o, 32'(rd_cnt_q) < N)
  `TPU_ASSERT_IMPLIES(MoveWriteBound, state_q == MWrite, 32'(wr_cnt_q) < N)
  `TPU_ASSERT_NEVER(MoveRowsWhileWriting, state_q == MWrite && got_q)
  `TPU_ASSERT_INIT(MoveN, N >= 4 && (N & (N - 1)) == 0)

endmodule

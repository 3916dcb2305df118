// SPDX-License-Identifier: Apache-2.0
// Test wrapper of mxu_path_test.cpp: the matrix path of the training chip (issue 30) wired as
// tpu_core wires it, without the controller, memories and DMA (the test drives those):
//   VMEM read port A -> tpu_load_weights -> (bf16 push) -+
//   weight-DMA rows (int8 push) -------------------------+-> tpu_weight_loader (Float)
//   tpu_weight_loader -> tpu_mxu (int8 tiles) / tpu_mxu_fp (bf16 tiles)
//   UB port, VMEM read port B -> tpu_matmul_unit (Float) -> tpu_mxu / tpu_mxu_fp
//   tpu_mxu / tpu_mxu_fp -> tpu_accumulators (Float) -> ACC read port
// and tpu_weight_types, the decoder's ERR_WEIGHT_TYPE check, driven at issue by the test.
// Commands come as fields (zero-extended where the struct is wider).
`include "tpu_assert.svh"

module tpu_mxu_path #(
  parameter int unsigned N          = 16,
  parameter int unsigned UbRows     = 256,
  parameter int unsigned AccRows    = 128,
  parameter int unsigned WFifoTiles = 4
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       clear_i,
  // load_weights
  input  logic                       lw_valid_i,
  output logic                       lw_ready_o,
  input  logic                       lw_transpose_i,
  input  logic [15:0]                lw_vmem_addr_i,
  input  logic [15:0]                lw_row_stride_i,
  input  logic [15:0]                lw_tiles_i,
  input  logic [15:0]                lw_tile_stride_i,
  input  logic [8:0]                 lw_rows_i,
  output logic                       lw_done_o,
  output logic                       lw_busy_o,
  output logic                       lw_re_o,
  output logic [15:0]                lw_raddr_o,
  input  logic                       lw_rgnt_i,
  input  logic [32*N-1:0]            lw_rdata_i,
  // The weight DMA's rows (read_weights)
  input  logic                       wdma_push_i,
  input  logic [8*N-1:0]             wdma_row_i,
  output logic [31:0]                free_rows_o,
  // matmul / matmul_bf16
  input  logic                       mm_valid_i,
  output logic                       mm_ready_o,
  input  logic                       mm_bf16_i,
  input  logic                       mm_acc_i,
  input  logic                       mm_a_unsigned_i,
  input  logic                       mm_w_unsigned_i,
  input  logic                       mm_switch_i,
  input  logic [23:0]                mm_addr_i,
  input  logic [15:0]                mm_acc_addr_i,
  input  logic [11:0]                mm_inner_i,
  input  logic [11:0]                mm_outer_i,
  input  logic [7:0]                 mm_inner_stride_i,
  input  logic [23:0]                mm_outer_stride_i,
  output logic                       ub_re_o,
  output logic [$clog2(UbRows)-1:0]  ub_raddr_o,
  input  logic                       ub_rgnt_i,
  input  logic [8*N-1:0]             ub_rdata_i,
  output logic                       mv_re_o,
  output logic [15:0]                mv_raddr_o,
  input  logic                       mv_rgnt_i,
  input  logic [32*N-1:0]            mv_rdata_i,
  output logic                       retire_o,       // a matmul's last row is written
  output logic                       weight_stall_o,
  output logic                       wl_idle_o,
  // tpu_weight_types
  input  logic                       wt_push_i,
  input  logic                       wt_push_bf16_i,
  input  logic [23:0]                wt_push_tiles_i,
  input  logic                       wt_pop_i,
  input  logic                       wt_mm_bf16_i,
  input  logic                       wt_mm_switch_i,
  output logic                       wt_type_err_o,
  // ACC read port (the activation unit's)
  input  logic                       acc_re_i,
  input  logic [$clog2(AccRows)-1:0] acc_raddr_i,
  output logic [32*N-1:0]            acc_rdata_o
);
  localparam int unsigned TagW = 18;
  localparam int unsigned AccW = $clog2(AccRows);

  tpu_fp_pkg::lw_cmd_t lw_cmd;
  assign lw_cmd = '{transpose: lw_transpose_i, vmem_addr: lw_vmem_addr_i,
                    row_stride: lw_row_stride_i, tiles: lw_tiles_i,
                    tile_stride: lw_tile_stride_i, rows: lw_rows_i};

  logic                 lw_push;
  logic [16*N-1:0]      lw_row;
  logic [$clog2(WFifoTiles*N+1)-1:0] wfifo_free;
  logic                 lw_idle;

  tpu_load_weights #(.N(N)) u_lw (
    .clk_i, .rst_ni, .clear_i,
    .cmd_valid_i(lw_valid_i), .cmd_ready_o(lw_ready_o), .cmd_i(lw_cmd),
    .vm_re_o(lw_re_o), .vm_raddr_o(lw_raddr_o), .vm_rgnt_i(lw_rgnt_i), .vm_rdata_i(lw_rdata_i),
    .push_o(lw_push), .push_row_o(lw_row), .space_i(wfifo_free != '0),
    .done_o(lw_done_o), .busy_o(lw_busy_o), .idle_o(lw_idle)
  );
  assign free_rows_o = 32'(wfifo_free);

  logic            w_shift, w_commit, w_buf, wf_shift, wf_commit;
  logic [8*N-1:0]  w_row;
  logic [16*N-1:0] wf_row;
  logic            active_buf, next_valid, next_buf, mm_switch, tile_pending;
  logic            active_bf16, next_bf16;
  logic            mxu_valid, mxf_valid, mxu_wbuf, mxu_wuns;
  logic [9*N-1:0]  mxu_data;
  logic [16*N-1:0] mxf_data;
  logic [TagW-1:0] mxu_tag;

  tpu_weight_loader #(.N(N), .WFifoTiles(WFifoTiles), .Float(1'b1)) u_weights (
    .clk_i, .rst_ni, .clear_i,
    .push_i(wdma_push_i), .push_row_i(wdma_row_i), .free_rows_o(wfifo_free),
    .fpush_i(lw_push), .fpush_row_i(lw_row),
    .w_shift_o(w_shift), .w_row_o(w_row), .w_commit_o(w_commit), .w_buf_o(w_buf),
    .wf_shift_o(wf_shift), .wf_row_o(wf_row), .wf_commit_o(wf_commit),
    .active_buf_o(active_buf), .next_valid_o(next_valid), .next_buf_o(next_buf),
    .switch_i(mm_switch), .use_i(mxu_valid || mxf_valid), .use_buf_i(mxu_wbuf),
    .active_bf16_o(active_bf16), .next_bf16_o(next_bf16),
    .idle_o(wl_idle_o), .tile_pending_o(tile_pending)
  );

  tpu_pkg::mm_cmd_t mm_cmd;
  always_comb begin
    mm_cmd              = '0;
    mm_cmd.acc          = mm_acc_i;
    mm_cmd.a_unsigned   = mm_a_unsigned_i;
    mm_cmd.w_unsigned   = mm_w_unsigned_i;
    mm_cmd.switch_tile  = mm_switch_i;
    mm_cmd.ub_addr      = mm_addr_i;
    mm_cmd.acc_addr     = mm_acc_addr_i;
    mm_cmd.inner        = mm_inner_i;
    mm_cmd.outer        = mm_outer_i;
    mm_cmd.inner_stride = mm_inner_stride_i;
    mm_cmd.outer_stride = mm_outer_stride_i;
  end

  tpu_matmul_unit #(.N(N), .UbRows(UbRows), .TagW(TagW), .Float(1'b1)) u_matmul (
    .clk_i, .rst_ni, .clear_i,
    .cmd_valid_i(mm_valid_i), .cmd_ready_o(mm_ready_o), .cmd_i(mm_cmd), .cmd_bf16_i(mm_bf16_i),
    .ub_re_o, .ub_raddr_o, .ub_rgnt_i, .ub_rdata_i,
    .vm_re_o(mv_re_o), .vm_raddr_o(mv_raddr_o), .vm_rgnt_i(mv_rgnt_i), .vm_rdata_i(mv_rdata_i),
    .active_buf_i(active_buf), .next_valid_i(next_valid), .next_buf_i(next_buf),
    .switch_o(mm_switch), .active_bf16_i(active_bf16), .next_bf16_i(next_bf16),
    .mxu_valid_o(mxu_valid), .mxu_data_o(mxu_data), .mxu_wbuf_o(mxu_wbuf), .mxu_wuns_o(mxu_wuns),
    .mxu_tag_o(mxu_tag), .mxf_valid_o(mxf_valid), .mxf_data_o(mxf_data),
    .weight_stall_o
  );

  logic            i_out_valid, i_pre_valid, f_out_valid, f_pre_valid;
  logic [TagW-1:0] i_out_tag, i_pre_tag, f_out_tag, f_pre_tag;
  logic [32*N-1:0] i_out_sum, f_out_sum;

  tpu_mxu #(.N(N), .TagW(TagW)) u_mxu (
    .clk_i, .rst_ni,
    .in_valid_i(mxu_valid), .in_data_i(mxu_data), .in_wbuf_i(mxu_wbuf), .in_wuns_i(mxu_wuns),
    .in_tag_i(mxu_tag),
    .w_shift_i(w_shift), .w_row_i(w_row), .w_commit_i(w_commit), .w_buf_i(w_buf),
    .out_valid_o(i_out_valid), .out_sum_o(i_out_sum), .out_tag_o(i_out_tag),
    .pre_valid_o(i_pre_valid), .pre_tag_o(i_pre_tag)
  );

  tpu_mxu_fp #(.N(N), .TagW(TagW)) u_mxu_fp (
    .clk_i, .rst_ni,
    .in_valid_i(mxf_valid), .in_data_i(mxf_data), .in_wbuf_i(mxu_wbuf), .in_tag_i(mxu_tag),
    .w_shift_i(wf_shift), .w_row_i(wf_row), .w_commit_i(wf_commit), .w_buf_i(w_buf),
    .out_valid_o(f_out_valid), .out_sum_o(f_out_sum), .out_tag_o(f_out_tag),
    .pre_valid_o(f_pre_valid), .pre_tag_o(f_pre_tag)
  );

  // The two arrays have the same latency and one feeder: at most one result row per cycle.
  logic            out_valid, pre_valid;
  logic [TagW-1:0] out_tag, pre_tag;
  logic [32*N-1:0] out_sum;
  assign out_valid = i_out_valid || f_out_valid;
  assign out_tag   = f_out_valid ? f_out_tag : i_out_tag;
  assign out_sum   = f_out_valid ? f_out_sum : i_out_sum;
  assign pre_valid = i_pre_valid || f_pre_valid;
  assign pre_tag   = f_pre_valid ? f_pre_tag : i_pre_tag;
  assign retire_o  = out_valid && out_tag[17];

  logic dw_wgnt, dw_pend;  // always 0: no depthwise unit
  logic            acc_gnt2;
  logic [32*N-1:0] acc_rdata2;
  tpu_accumulators #(.N(N), .AccRows(AccRows), .Float(1'b1)) u_acc (
    .clk_i, .rst_ni,
    .pre_valid_i(pre_valid), .pre_accumulate_i(pre_tag[16]), .pre_addr_i(AccW'(pre_tag[15:0])),
    .we_i(out_valid), .accumulate_i(out_tag[16]), .fp_i(f_out_valid),
    .waddr_i(AccW'(out_tag[15:0])), .wdata_i(out_sum),
    .dw_we_i(1'b0), .dw_acc_i(1'b0), .dw_waddr_i('0), .dw_wdata_i('0),  // no depthwise unit
    .dw_wgnt_o(dw_wgnt), .dw_pend_o(dw_pend),
    .re_i(acc_re_i), .raddr_i(acc_raddr_i), .rdata_o(acc_rdata_o),
    .re2_i(1'b0), .raddr2_i('0), .gnt2_o(acc_gnt2), .rdata2_o(acc_rdata2)  // no second reader
  );

  tpu_weight_types #(.WFifoTiles(WFifoTiles)) u_types (
    .clk_i, .rst_ni, .clear_i,
    .push_i(wt_push_i), .push_bf16_i(wt_push_bf16_i), .push_tiles_i(wt_push_tiles_i),
    .pop_i(wt_pop_i), .mm_bf16_i(wt_mm_bf16_i), .mm_switch_i(wt_mm_switch_i),
    .type_err_o(wt_type_err_o)
  );

  logic unused;
  assign unused = ^{lw_idle, tile_pending, dw_wgnt, dw_pend, acc_gnt2, acc_rdata2, pre_tag[17],
                    out_tag[15:0] >> AccW, pre_tag[15:0] >> AccW};

  `TPU_ASSERT_NEVER(PathOneResult, i_out_valid && f_out_valid)
  `TPU_ASSERT_NEVER(PathOnePush, wdma_push_i && lw_push)

endmodule

// SPDX-License-Identifier: Apache-2.0
// Test wrapper of instr_layout_test.cpp: one instruction word seen through the formats of
// tpu_pkg::instr_t, field by field, and through tpu_decoder (unit, fault, unit command).
// The training formats (issue 30) likewise, and a second decoder as the training chip's
// (VmemRows = 8192). Fields come out zero-extended to 32 bits; `<format>_rsvd_o` is the word with every named
// field of the format (and the opcode) cleared, so only its reserved bits are left, in place.
module tpu_instr_layout (
  input  logic [127:0] word_i,
  // read_host / write_host
  output logic [31:0]  host_dest_o,
  output logic [31:0]  host_local_addr_o,
  output logic [31:0]  host_rows_o,
  output logic [31:0]  host_host_addr_o,
  output logic [127:0] host_rsvd_o,
  // read_weights
  output logic [31:0]  weights_tiles_o,
  output logic [31:0]  weights_host_addr_o,
  output logic [127:0] weights_rsvd_o,
  // matmul
  output logic [31:0]  matmul_acc_o,
  output logic [31:0]  matmul_a_unsigned_o,
  output logic [31:0]  matmul_w_unsigned_o,
  output logic [31:0]  matmul_switch_o,
  output logic [31:0]  matmul_ub_addr_o,
  output logic [31:0]  matmul_acc_addr_o,
  output logic [31:0]  matmul_inner_o,
  output logic [31:0]  matmul_outer_o,
  output logic [31:0]  matmul_inner_stride_o,
  output logic [31:0]  matmul_outer_stride_o,
  output logic [127:0] matmul_rsvd_o,
  // activate
  output logic [31:0]  activate_func_o,
  output logic [31:0]  activate_out_unsigned_o,
  output logic [31:0]  activate_raw_o,
  output logic [31:0]  activate_acc_addr_o,
  output logic [31:0]  activate_ub_addr_o,
  output logic [31:0]  activate_width_o,
  output logic [31:0]  activate_height_o,
  output logic [31:0]  activate_pool_k_o,
  output logic [31:0]  activate_pool_s_o,
  output logic [31:0]  activate_ub_stride_o,
  output logic [31:0]  activate_slot_o,
  output logic [31:0]  activate_pad_top_o,
  output logic [31:0]  activate_pad_left_o,
  output logic [31:0]  activate_pad_bottom_o,
  output logic [31:0]  activate_pad_right_o,
  output logic [127:0] activate_rsvd_o,
  // nop / sync / halt, and the opcode of every format
  output logic [31:0]  opcode_o,
  output logic [127:0] plain_rsvd_o,
  // The decoder (N = 16, default sizes, no DMA window, no command buffer).
  output logic [31:0]  dec_unit_o,
  output logic [31:0]  dec_is_sync_o,
  output logic [31:0]  dec_is_halt_o,
  output logic [31:0]  dec_err_o,
  output logic [31:0]  dmain_dest_o,
  output logic [31:0]  dmain_local_addr_o,
  output logic [31:0]  dmain_addr_o,
  output logic [31:0]  dmain_rows_o,
  output logic [31:0]  wdma_tiles_o,
  output logic [31:0]  wdma_addr_o,
  output logic [31:0]  wdma_rows_o,
  output logic [31:0]  dmaout_host_addr_o,
  output logic [31:0]  dmaout_ub_addr_o,
  output logic [31:0]  dmaout_rows_o,
  output logic [31:0]  mm_acc_o,
  output logic [31:0]  mm_a_unsigned_o,
  output logic [31:0]  mm_w_unsigned_o,
  output logic [31:0]  mm_switch_o,
  output logic [31:0]  mm_ub_addr_o,
  output logic [31:0]  mm_acc_addr_o,
  output logic [31:0]  mm_inner_o,
  output logic [31:0]  mm_outer_o,
  output logic [31:0]  mm_inner_stride_o,
  output logic [31:0]  mm_outer_stride_o,
  output logic [31:0]  act_func_o,
  output logic [31:0]  act_out_unsigned_o,
  output logic [31:0]  act_raw_o,
  output logic [31:0]  act_acc_addr_o,
  output logic [31:0]  act_ub_addr_o,
  output logic [31:0]  act_width_o,
  output logic [31:0]  act_height_o,
  output logic [31:0]  act_pool_k_o,
  output logic [31:0]  act_pool_s_o,
  output logic [31:0]  act_ub_stride_o,
  output logic [31:0]  act_slot_o,
  output logic [31:0]  act_pad_top_o,
  output logic [31:0]  act_pad_left_o,
  output logic [31:0]  act_pad_bottom_o,
  output logic [31:0]  act_pad_right_o,
  // vmem_dma
  output logic [31:0]  vdma_bf16_o,
  output logic [31:0]  vdma_vmem_addr_o,
  output logic [31:0]  vdma_rows_o,
  output logic [31:0]  vdma_host_addr_o,
  output logic [31:0]  vdma_host_stride_o,
  output logic [127:0] vdma_rsvd_o,
  // load_weights
  output logic [31:0]  lw_transpose_o,
  output logic [31:0]  lw_vmem_addr_o,
  output logic [31:0]  lw_row_stride_o,
  output logic [31:0]  lw_tiles_o,
  output logic [31:0]  lw_tile_stride_o,
  output logic [31:0]  lw_rows_o,
  output logic [127:0] lw_rsvd_o,
  // matmul_bf16
  output logic [31:0]  mmb_acc_o,
  output logic [31:0]  mmb_switch_o,
  output logic [31:0]  mmb_vmem_addr_o,
  output logic [31:0]  mmb_acc_addr_o,
  output logic [31:0]  mmb_inner_o,
  output logic [31:0]  mmb_outer_o,
  output logic [31:0]  mmb_inner_stride_o,
  output logic [31:0]  mmb_outer_stride_o,
  output logic [127:0] mmb_rsvd_o,
  // acc_to_vmem
  output logic [31:0]  atv_acc_addr_o,
  output logic [31:0]  atv_vmem_addr_o,
  output logic [31:0]  atv_rows_o,
  output logic [127:0] atv_rsvd_o,
  // transpose
  output logic [31:0]  tr_src_o,
  output logic [31:0]  tr_dst_o,
  output logic [31:0]  tr_blocks_o,
  output logic [31:0]  tr_src_stride_o,
  output logic [31:0]  tr_dst_stride_o,
  output logic [31:0]  tr_src_row_stride_o,
  output logic [127:0] tr_rsvd_o,
  // vec
  output logic [31:0]  vec_func_o,
  output logic [31:0]  vec_bmode_o,
  output logic [31:0]  vec_dst_o,
  output logic [31:0]  vec_a_o,
  output logic [31:0]  vec_inner_o,
  output logic [31:0]  vec_outer_o,
  output logic [31:0]  vec_a_inner_stride_o,
  output logic [31:0]  vec_a_outer_stride_o,
  output logic [31:0]  vec_dst_inner_stride_o,
  output logic [31:0]  vec_dst_outer_stride_o,
  output logic [31:0]  vec_b_o,
  output logic [127:0] vec_rsvd_o,
  // The training chip's decoder (N = 16, VmemRows = 8192, default sizes, no DMA window).
  output logic [31:0]  t_unit_o,
  output logic [31:0]  t_err_o,
  output logic [31:0]  t_mm_bf16_o,
  output logic [31:0]  t_dmain_vmem_o,
  output logic [31:0]  t_dmain_bf16_o,
  output logic [31:0]  t_dmain_stride_o,
  output logic [31:0]  t_dmain_local_addr_o,
  output logic [31:0]  t_dmain_addr_o,
  output logic [31:0]  t_dmain_rows_o,
  output logic [31:0]  t_dmaout_vmem_o,
  output logic [31:0]  t_dmaout_bf16_o,
  output logic [31:0]  t_dmaout_stride_o,
  output logic [31:0]  t_dmaout_host_addr_o,
  output logic [31:0]  t_dmaout_ub_addr_o,
  output logic [31:0]  t_dmaout_rows_o,
  output logic [31:0]  t_move_transpose_o,
  output logic [31:0]  t_move_src_o,
  output logic [31:0]  t_move_dst_o,
  output logic [31:0]  t_move_count_o,
  output logic [31:0]  t_move_src_stride_o,
  output logic [31:0]  t_move_dst_stride_o,
  output logic [31:0]  t_move_src_row_stride_o,
  output logic [31:0]  t_lw_transpose_o,
  output logic [31:0]  t_lw_vmem_addr_o,
  output logic [31:0]  t_lw_row_stride_o,
  output logic [31:0]  t_lw_tiles_o,
  output logic [31:0]  t_lw_tile_stride_o,
  output logic [31:0]  t_lw_rows_o,
  output logic [31:0]  t_mm_acc_o,
  output logic [31:0]  t_mm_a_unsigned_o,
  output logic [31:0]  t_mm_w_unsigned_o,
  output logic [31:0]  t_mm_switch_o,
  output logic [31:0]  t_mm_ub_addr_o,
  output logic [31:0]  t_mm_acc_addr_o,
  output logic [31:0]  t_mm_inner_o,
  output logic [31:0]  t_mm_outer_o,
  output logic [31:0]  t_mm_inner_stride_o,
  output logic [31:0]  t_mm_outer_stride_o,
  output logic [127:0] t_vec_cmd_o    // the vector unit's command, zero-extended
);
  tpu_pkg::instr_t   w;
  tpu_pkg::decoded_t dec;
  assign w = word_i;

  assign host_dest_o       = 32'(w.host.dest);
  assign host_local_addr_o = 32'(w.host.local_addr);
  assign host_rows_o       = 32'(w.host.rows);
  assign host_host_addr_o  = 32'(w.host.host_addr);
  always_comb begin
    tpu_pkg::instr_host_t r;
    r            = w.host;
    r.opcode     = '0;
    r.dest       = '0;
    r.local_addr = '0;
    r.rows       = '0;
    r.host_addr  = '0;
    host_rsvd_o  = r;
  end

  assign weights_tiles_o     = 32'(w.weights.tiles);
  assign weights_host_addr_o = 32'(w.weights.host_addr);
  always_comb begin
    tpu_pkg::instr_weights_t r;
    r              = w.weights;
    r.opcode       = '0;
    r.tiles        = '0;
    r.host_addr    = '0;
    weights_rsvd_o = r;
  end

  assign matmul_acc_o          = 32'(w.matmul.acc);
  assign matmul_a_unsigned_o   = 32'(w.matmul.a_unsigned);
  assign matmul_w_unsigned_o   = 32'(w.matmul.w_unsigned);
  assign matmul_switch_o       = 32'(w.matmul.switch_tile);
  assign matmul_ub_addr_o      = 32'(w.matmul.ub_addr);
  assign matmul_acc_addr_o     = 32'(w.matmul.acc_addr);
  assign matmul_inner_o        = 32'(w.matmul.inner);
  assign matmul_outer_o        = 32'(w.matmul.outer);
  assign matmul_inner_stride_o = 32'(w.matmul.inner_stride);
  assign matmul_outer_stride_o = 32'(w.matmul.outer_stride);
  always_comb begin
    tpu_pkg::instr_matmul_t r;
    r              = w.matmul;
    r.opcode       = '0;
    r.acc          = '0;
    r.a_unsigned   = '0;
    r.w_unsigned   = '0;
    r.switch_tile  = '0;
    r.ub_addr      = '0;
    r.acc_addr     = '0;
    r.inner        = '0;
    r.outer        = '0;
    r.inner_stride = '0;
    r.outer_stride = '0;
    matmul_rsvd_o  = r;
  end

  assign activate_func_o         = 32'(w.activate.func);
  assign activate_out_unsigned_o = 32'(w.activate.out_unsigned);
  assign activate_raw_o          = 32'(w.activate.raw);
  assign activate_acc_addr_o     = 32'(w.activate.acc_addr);
  assign activate_ub_addr_o      = 32'(w.activate.ub_addr);
  assign activate_width_o        = 32'(w.activate.width);
  assign activate_height_o       = 32'(w.activate.height);
  assign activate_pool_k_o       = 32'(w.activate.pool_k);
  assign activate_pool_s_o       = 32'(w.activate.pool_s);
  assign activate_ub_stride_o    = 32'(w.activate.ub_stride);
  assign activate_slot_o         = 32'(w.activate.slot);
  assign activate_pad_top_o      = 32'(w.activate.pad_top);
  assign activate_pad_left_o     = 32'(w.activate.pad_left);
  assign activate_pad_bottom_o   = 32'(w.activate.pad_bottom);
  assign activate_pad_right_o    = 32'(w.activate.pad_right);
  always_comb begin
    tpu_pkg::instr_activate_t r;
    r                = w.activate;
    r.opcode         = '0;
    r.func           = '0;
    r.out_unsigned   = '0;
    r.raw            = '0;
    r.acc_addr       = '0;
    r.ub_addr        = '0;
    r.width          = '0;
    r.height         = '0;
    r.pool_k         = '0;
    r.pool_s         = '0;
    r.ub_stride      = '0;
    r.pad_top        = '0;
    r.pad_left       = '0;
    r.pad_bottom     = '0;
    r.pad_right      = '0;
    r.slot           = '0;
    activate_rsvd_o  = r;
  end

  assign opcode_o = 32'(w.plain.opcode);
  always_comb begin
    tpu_pkg::instr_plain_t r;
    r            = w.plain;
    r.opcode     = '0;
    plain_rsvd_o = r;
  end

  tpu_decoder u_decoder (
    .valid_i(1'b1), .instr_i(w), .win_base_i('0), .win_size_i('0), .cmd_lo_i('0), .cmd_hi_i('0),
    .dec_o(dec)
  );

  tpu_pkg::dma_in_cmd_t dmain;
  tpu_pkg::wdma_cmd_t   wdma;
  tpu_pkg::dma_wr_cmd_t dmaout;
  tpu_pkg::mm_cmd_t     mm;
  tpu_pkg::act_cmd_t    act;
  assign dmain  = dec.cmd.dma_in.cmd;
  assign wdma   = dec.cmd.wdma.cmd;
  assign dmaout = dec.cmd.dma_out.cmd;
  assign mm     = dec.cmd.mm.cmd;
  assign act    = dec.cmd.act.cmd;

  assign dec_unit_o    = 32'(dec.unit);
  assign dec_is_sync_o = 32'(dec.is_sync);
  assign dec_is_halt_o = 32'(dec.is_halt);
  assign dec_err_o     = 32'(dec.err);

  assign dmain_dest_o       = 32'(dmain.dest);
  assign dmain_local_addr_o = 32'(dmain.local_addr);
  assign dmain_addr_o       = dmain.dma.addr;
  assign dmain_rows_o       = 32'(dmain.dma.rows);
  assign wdma_tiles_o       = 32'(wdma.tiles);
  assign wdma_addr_o        = wdma.dma.addr;
  assign wdma_rows_o        = 32'(wdma.dma.rows);
  assign dmaout_host_addr_o = dmaout.host_addr;
  assign dmaout_ub_addr_o   = 32'(dmaout.ub_addr);
  assign dmaout_rows_o      = 32'(dmaout.rows);
  assign mm_acc_o           = 32'(mm.acc);
  assign mm_a_unsigned_o    = 32'(mm.a_unsigned);
  assign mm_w_unsigned_o    = 32'(mm.w_unsigned);
  assign mm_switch_o        = 32'(mm.switch_tile);
  assign mm_ub_addr_o       = 32'(mm.ub_addr);
  assign mm_acc_addr_o      = 32'(mm.acc_addr);
  assign mm_inner_o         = 32'(mm.inner);
  assign mm_outer_o         = 32'(mm.outer);
  assign mm_inner_stride_o  = 32'(mm.inner_stride);
  assign mm_outer_stride_o  = 32'(mm.outer_stride);
  assign act_func_o         = 32'(act.func);
  assign act_out_unsigned_o = 32'(act.out_unsigned);
  assign act_raw_o          = 32'(act.raw);
  assign act_acc_addr_o     = 32'(act.acc_addr);
  assign act_ub_addr_o      = 32'(act.ub_addr);
  assign act_width_o        = 32'(act.width);
  assign act_height_o       = 32'(act.height);
  assign act_pool_k_o       = 32'(act.pool_k);
  assign act_pool_s_o       = 32'(act.pool_s);
  assign act_ub_stride_o    = 32'(act.ub_stride);
  assign act_slot_o         = 32'(act.slot);
  assign act_pad_top_o      = 32'(act.pad_top);
  assign act_pad_left_o     = 32'(act.pad_left);
  assign act_pad_bottom_o   = 32'(act.pad_bottom);
  assign act_pad_right_o    = 32'(act.pad_right);

  assign vdma_bf16_o = 32'(w.vmem_dma.bf16);
  assign vdma_vmem_addr_o = 32'(w.vmem_dma.vmem_addr);
  assign vdma_rows_o = 32'(w.vmem_dma.rows);
  assign vdma_host_addr_o = 32'(w.vmem_dma.host_addr);
  assign vdma_host_stride_o = 32'(w.vmem_dma.host_stride);
  always_comb begin
    tpu_pkg::instr_vmem_dma_t r;
    r = w.vmem_dma;
    r.opcode = '0;
    r.bf16 = '0;
    r.vmem_addr = '0;
    r.rows = '0;
    r.host_addr = '0;
    r.host_stride = '0;
    vdma_rsvd_o = r;
  end

  assign lw_transpose_o = 32'(w.load_weights.transpose);
  assign lw_vmem_addr_o = 32'(w.load_weights.vmem_addr);
  assign lw_row_stride_o = 32'(w.load_weights.row_stride);
  assign lw_tiles_o = 32'(w.load_weights.tiles);
  assign lw_tile_stride_o = 32'(w.load_weights.tile_stride);
  assign lw_rows_o = 32'(w.load_weights.rows);
  always_comb begin
    tpu_pkg::instr_load_weights_t r;
    r = w.load_weights;
    r.opcode = '0;
    r.transpose = '0;
    r.vmem_addr = '0;
    r.row_stride = '0;
    r.tiles = '0;
    r.tile_stride = '0;
    r.rows = '0;
    lw_rsvd_o = r;
  end

  assign mmb_acc_o = 32'(w.matmul_bf16.acc);
  assign mmb_switch_o = 32'(w.matmul_bf16.switch_tile);
  assign mmb_vmem_addr_o = 32'(w.matmul_bf16.vmem_addr);
  assign mmb_acc_addr_o = 32'(w.matmul_bf16.acc_addr);
  assign mmb_inner_o = 32'(w.matmul_bf16.inner);
  assign mmb_outer_o = 32'(w.matmul_bf16.outer);
  assign mmb_inner_stride_o = 32'(w.matmul_bf16.inner_stride);
  assign mmb_outer_stride_o = 32'(w.matmul_bf16.outer_stride);
  always_comb begin
    tpu_pkg::instr_matmul_bf16_t r;
    r = w.matmul_bf16;
    r.opcode = '0;
    r.acc = '0;
    r.switch_tile = '0;
    r.vmem_addr = '0;
    r.acc_addr = '0;
    r.inner = '0;
    r.outer = '0;
    r.inner_stride = '0;
    r.outer_stride = '0;
    mmb_rsvd_o = r;
  end

  assign atv_acc_addr_o = 32'(w.acc_to_vmem.acc_addr);
  assign atv_vmem_addr_o = 32'(w.acc_to_vmem.vmem_addr);
  assign atv_rows_o = 32'(w.acc_to_vmem.rows);
  always_comb begin
    tpu_pkg::instr_acc_to_vmem_t r;
    r = w.acc_to_vmem;
    r.opcode = '0;
    r.acc_addr = '0;
    r.vmem_addr = '0;
    r.rows = '0;
    atv_rsvd_o = r;
  end

  assign tr_src_o = 32'(w.transpose.src);
  assign tr_dst_o = 32'(w.transpose.dst);
  assign tr_blocks_o = 32'(w.transpose.blocks);
  assign tr_src_stride_o = 32'(w.transpose.src_stride);
  assign tr_dst_stride_o = 32'(w.transpose.dst_stride);
  assign tr_src_row_stride_o = 32'(w.transpose.src_row_stride);
  always_comb begin
    tpu_pkg::instr_transpose_t r;
    r = w.transpose;
    r.opcode = '0;
    r.src = '0;
    r.dst = '0;
    r.blocks = '0;
    r.src_stride = '0;
    r.dst_stride = '0;
    r.src_row_stride = '0;
    tr_rsvd_o = r;
  end

  assign vec_func_o = 32'(w.vec.func);
  assign vec_bmode_o = 32'(w.vec.bmode);
  assign vec_dst_o = 32'(w.vec.dst);
  assign vec_a_o = 32'(w.vec.a);
  assign vec_inner_o = 32'(w.vec.inner);
  assign vec_outer_o = 32'(w.vec.outer);
  assign vec_a_inner_stride_o = 32'(w.vec.a_inner_stride);
  assign vec_a_outer_stride_o = 32'(w.vec.a_outer_stride);
  assign vec_dst_inner_stride_o = 32'(w.vec.dst_inner_stride);
  assign vec_dst_outer_stride_o = 32'(w.vec.dst_outer_stride);
  assign vec_b_o = 32'(w.vec.b);
  always_comb begin
    tpu_pkg::instr_vector_t r;
    r = w.vec;
    r.opcode = '0;
    r.func = '0;
    r.bmode = '0;
    r.dst = '0;
    r.a = '0;
    r.inner = '0;
    r.outer = '0;
    r.a_inner_stride = '0;
    r.a_outer_stride = '0;
    r.dst_inner_stride = '0;
    r.dst_outer_stride = '0;
    r.b = '0;
    vec_rsvd_o = r;
  end

  // The training chip's decoder.
  tpu_pkg::decoded_t   tdec;
  tpu_pkg::dma_in_cmd_t tdmain;
  tpu_pkg::dma_wr_cmd_t tdmaout;
  tpu_pkg::move_cmd_t  tmove;
  tpu_fp_pkg::lw_cmd_t tlw;
  tpu_pkg::mm_cmd_t    tmm;
  tpu_decoder #(.VmemRows(8192)) u_train_decoder (
    .valid_i(1'b1), .instr_i(w), .win_base_i('0), .win_size_i('0), .cmd_lo_i('0), .cmd_hi_i('0),
    .dec_o(tdec)
  );
  assign tdmain  = tdec.cmd.dma_in.cmd;
  assign tdmaout = tdec.cmd.dma_out.cmd;
  assign tmove   = tdec.cmd.move.cmd;
  assign tlw     = tdec.cmd.lw.cmd;
  assign tmm     = tdec.cmd.mm.cmd;
  assign t_unit_o    = 32'(tdec.unit);
  assign t_err_o     = 32'(tdec.err);
  assign t_mm_bf16_o = 32'(tdec.cmd.mm.bf16);
  assign t_vec_cmd_o = 128'(tdec.cmd.vec.cmd);
  assign t_dmain_vmem_o = 32'(tdmain.vmem);
  assign t_dmain_bf16_o = 32'(tdmain.bf16);
  assign t_dmain_stride_o = 32'(tdmain.stride);
  assign t_dmain_local_addr_o = 32'(tdmain.local_addr);
  assign t_dmain_addr_o = 32'(tdmain.dma.addr);
  assign t_dmain_rows_o = 32'(tdmain.dma.rows);
  assign t_dmaout_vmem_o = 32'(tdmaout.vmem);
  assign t_dmaout_bf16_o = 32'(tdmaout.bf16);
  assign t_dmaout_stride_o = 32'(tdmaout.stride);
  assign t_dmaout_host_addr_o = 32'(tdmaout.host_addr);
  assign t_dmaout_ub_addr_o = 32'(tdmaout.ub_addr);
  assign t_dmaout_rows_o = 32'(tdmaout.rows);
  assign t_move_transpose_o = 32'(tmove.transpose);
  assign t_move_src_o = 32'(tmove.src);
  assign t_move_dst_o = 32'(tmove.dst);
  assign t_move_count_o = 32'(tmove.count);
  assign t_move_src_stride_o = 32'(tmove.src_stride);
  assign t_move_dst_stride_o = 32'(tmove.dst_stride);
  assign t_move_src_row_stride_o = 32'(tmove.src_row_stride);
  assign t_lw_transpose_o = 32'(tlw.transpose);
  assign t_lw_vmem_addr_o = 32'(tlw.vmem_addr);
  assign t_lw_row_stride_o = 32'(tlw.row_stride);
  assign t_lw_tiles_o = 32'(tlw.tiles);
  assign t_lw_tile_stride_o = 32'(tlw.tile_stride);
  assign t_lw_rows_o = 32'(tlw.rows);
  assign t_mm_acc_o = 32'(tmm.acc);
  assign t_mm_a_unsigned_o = 32'(tmm.a_unsigned);
  assign t_mm_w_unsigned_o = 32'(tmm.w_unsigned);
  assign t_mm_switch_o = 32'(tmm.switch_tile);
  assign t_mm_ub_addr_o = 32'(tmm.ub_addr);
  assign t_mm_acc_addr_o = 32'(tmm.acc_addr);
  assign t_mm_inner_o = 32'(tmm.inner);
  assign t_mm_outer_o = 32'(tmm.outer);
  assign t_mm_inner_stride_o = 32'(tmm.inner_stride);
  assign t_mm_outer_stride_o = 32'(tmm.outer_stride);

  logic unused_tdec;
  assign unused_tdec = ^{tdec.fp, tdec.is_sync, tdec.is_halt};

  logic unused_dec;
  assign unused_dec = ^dec.fp;

endmodule

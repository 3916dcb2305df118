// SPDX-License-Identifier: Apache-2.0
// Test wrapper of instr_layout_test.cpp: one instruction word seen through the formats of
// tpu_pkg::instr_t, field by field, and through tpu_decoder (unit, fault, unit command).
// Fields come out zero-extended to 32 bits; `<format>_rsvd_o` is the word with every named
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
  output logic [31:0]  act_pad_right_o
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

  logic unused_dec;
  assign unused_dec = ^dec.fp;

endmodule

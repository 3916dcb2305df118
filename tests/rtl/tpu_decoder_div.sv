// SPDX-License-Identifier: Apache-2.0
// Test wrapper of decoder_div_test.cpp: tpu_decoder (N = 16, default sizes, no DMA window, no
// command buffer) with the parts of its output that the pooling division decides: the fault
// code and the UB rows an activate writes (its footprint, {lo, hi}). An activate's last UB row
// is ub_addr + (Ho - 1) * ub_stride + Wo - 1, where Ho and Wo come from div_stride, the
// decoder's reciprocal table.
module tpu_decoder_div (
  input  logic [127:0] word_i,
  output logic [31:0]  err_o,
  output logic [63:0]  ub_wr_lo_o,
  output logic [63:0]  ub_wr_hi_o,
  output logic [31:0]  ub_wr_valid_o
);
  tpu_pkg::instr_t   w;
  tpu_pkg::decoded_t dec;
  assign w = word_i;

  tpu_decoder u_decoder (
    .valid_i(1'b1), .instr_i(w), .win_base_i('0), .win_size_i('0), .cmd_lo_i('0), .cmd_hi_i('0),
    .dec_o(dec)
  );

  logic [tpu_pkg::RangeW-1:0] ub_wr;
  assign ub_wr         = dec.fp.ub_wr;
  assign err_o         = 32'(dec.err);
  assign ub_wr_valid_o = 32'(ub_wr[66]);
  assign ub_wr_lo_o    = 64'(ub_wr[65:33]);
  assign ub_wr_hi_o    = 64'(ub_wr[32:0]);

  logic unused_dec;
  assign unused_dec = ^{dec.unit, dec.is_sync, dec.is_halt, dec.cmd, dec.fp.ub_rd, dec.fp.acc_rd,
                        dec.fp.acc_wr, dec.fp.host_rd, dec.fp.host_wr, dec.fp.param_rd,
                        dec.fp.param_wr};
endmodule

// SPDX-License-Identifier: Apache-2.0
// Test wrapper of mxu_product_test.cpp: both spellings of the int8 MXU PE's product
// (rtl/tpu_mxu_product.svh), the one Verilator simulates and the one Yosys synthesizes, side
// by side on the same lane and weight word.
`include "tpu_mxu_product.svh"

module tpu_mxu_product (
  input  logic [10:0] lane_i,  // {9-bit operand, weight buffer, weights unsigned}
  input  logic [15:0] w_i,     // {buffer 1, buffer 0}
  output logic [31:0] sim_o,
  output logic [31:0] syn_o
);
  assign sim_o = `TPU_MXU_PRODUCT_SIM(lane_i, w_i);
  assign syn_o = `TPU_MXU_PRODUCT_SYN(lane_i, w_i);
endmodule

// SPDX-License-Identifier: Apache-2.0
// The product of one int8 MXU PE (rtl/tpu_mxu.sv), 32 bits: lane `l` ({9-bit operand, buffer,
// unsigned}) times the weight in the PE's buffer word `w` ({buffer 1, buffer 0}, a byte each)
// that the lane selects, read as a 9-bit signed value: its top bit a sign unless the lane says
// unsigned. Two spellings of the same arithmetic, one for each tool:
//   * TPU_MXU_PRODUCT_SIM (Verilator): the weight as a 32-bit word built with selects, an
//     unsigned 32-bit multiply; g++ turns a row of PEs into vector code (docs/performance.md
//     "N = 256": the signed spelling below runs bench_mxu N = 16 at 0.44x);
//   * TPU_MXU_PRODUCT_SYN (Yosys, `SYNTHESIS`): both operands 9-bit signed, sign-extended, so
//     that Yosys narrows the multiplier to 9 x 9 (the 32-bit word above is a mux to it, not a
//     sign extension: a 9 x 32 multiplier per PE, twice the cells of tpu_mxu at N = 4;
//     docs/synthesis.md).
// tests/rtl/mxu_product_test.cpp checks them against each other and against a C++ reference
// for every lane and selected weight byte.
`ifndef TPU_MXU_PRODUCT_SVH
`define TPU_MXU_PRODUCT_SVH

`define TPU_MXU_PRODUCT_SIM(l, w) \
  (32'($signed(l[10:2])) * (!l[0] && (l[1] ? w[15] : w[7]) \
                            ? {24'hffffff, (l[1] ? w[15:8] : w[7:0])} \
                            : {24'h000000, (l[1] ? w[15:8] : w[7:0])}))

`define TPU_MXU_PRODUCT_SYN(l, w) \
  (32'($signed(l[10:2])) \
   * 32'($signed({!l[0] && (l[1] ? w[15] : w[7]), (l[1] ? w[15:8] : w[7:0])})))

`endif  // TPU_MXU_PRODUCT_SVH

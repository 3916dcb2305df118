// SPDX-License-Identifier: Apache-2.0
// Assertion macros of the tpu-rtl RTL, in the spirit of lowRISC's prim_assert.sv.
//
// Every module that checks something includes this header and uses only these macros, so the
// assertions can be switched as a whole: Verilated test builds run with `--assert` (CMake
// option TPU_SIM_ASSERT, on by default) and stop at the first failure with the assertion's
// name; synthesis (`SYNTHESIS`, defined by scripts/synth.sh and by Yosys itself) compiles them
// out. Clock and reset are the module's clk_i / rst_ni; properties are not checked in reset.
//
//   `TPU_ASSERT(Name, prop)         prop holds in every clock cycle out of reset
//   `TPU_ASSERT_NEVER(Name, prop)   prop never holds
//   `TPU_ASSERT_IMPLIES(Name, a, b) a |-> b in the same cycle
//   `TPU_ASSERT_HOLD(Name, valid, ready, payload)
//                                   a valid/ready handshake: once valid is up without ready,
//                                   valid stays up and payload stays stable in the next cycle
//   `TPU_ASSERT_INIT(Name, prop)    prop holds at time 0 (parameter legality)
`ifndef TPU_ASSERT_SVH
`define TPU_ASSERT_SVH

`ifdef SYNTHESIS
  `define TPU_ASSERT(__name, __prop)
  `define TPU_ASSERT_NEVER(__name, __prop)
  `define TPU_ASSERT_IMPLIES(__name, __a, __b)
  `define TPU_ASSERT_HOLD(__name, __valid, __ready, __payload)
  `define TPU_ASSERT_INIT(__name, __prop)
`else
  `define TPU_ASSERT(__name, __prop) \
    __name: assert property (@(posedge clk_i) disable iff (!rst_ni) (__prop)) \
      else $error("[TPU_ASSERT] %m: %s failed", `"__name`");
  `define TPU_ASSERT_NEVER(__name, __prop) `TPU_ASSERT(__name, !(__prop))
  `define TPU_ASSERT_IMPLIES(__name, __a, __b) `TPU_ASSERT(__name, !(__a) || (__b))
  `define TPU_ASSERT_HOLD(__name, __valid, __ready, __payload) \
    __name: assert property (@(posedge clk_i) disable iff (!rst_ni) \
                             ((__valid) && !(__ready)) |=> ((__valid) && $stable(__payload))) \
      else $error("[TPU_ASSERT] %m: %s failed", `"__name`");
  `define TPU_ASSERT_INIT(__name, __prop) \
    initial begin : __name \
      assert (__prop) else $fatal(1, "[TPU_ASSERT] %m: %s failed", `"__name`"); \
    end
`endif

`endif  // TPU_ASSERT_SVH

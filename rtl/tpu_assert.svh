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
//   `TPU_ASSERT_HOLD_IF(Name, valid, ready, payload, check)
//                                   the same, checked only in the cycles check holds (the
//                                   handshake may be dropped when it does not: a run stopping)
//   `TPU_ASSERT_INIT(Name, prop)    prop holds at time 0 (parameter legality)
//   `TPU_ASSERT_COMB(Name, prop)    prop holds whenever a combinational block's inputs change
//                                   (blocks without a clock: the floating-point units)
`ifndef TPU_ASSERT_SVH
`define TPU_ASSERT_SVH

`ifdef SYNTHESIS
  `define TPU_ASSERT(__name, __prop)
  `define TPU_ASSERT_NEVER(__name, __prop)
  `define TPU_ASSERT_IMPLIES(__name, __a, __b)
  `define TPU_ASSERT_HOLD(__name, __valid, __ready, __payload)
  `define TPU_ASSERT_HOLD_IF(__name, __valid, __ready, __payload, __check)
  `define TPU_ASSERT_INIT(__name, __prop)
  `define TPU_ASSERT_COMB(__name, __prop)
`else
  // Immediate assertions in clocked blocks, not `assert property`: Verilator 5.006 copies every
  // signal a concurrent assertion reads into a sampled shadow each cycle. A clocked block reads
  // the pre-edge values all the same, and costs only the check itself. The checking code is
  // kept out of line and toggle coverage (as a concurrent assertion is): the macros switch
  // coverage back on after themselves, so use them only where it is on. The checking blocks are
  // also sensitive to rst_ni's falling edge (and check nothing then), so rst_ni is only ever an
  // asynchronous reset to Verilator's lint (no SYNCASYNCNET waiver).
  `define TPU_ASSERT(__name, __prop) \
    /*verilator coverage_off*/ \
    always_ff @(posedge clk_i or negedge rst_ni) begin : __name \
      if (rst_ni) begin \
        assert (__prop) else $error("[TPU_ASSERT] %m: %s failed", `"__name`"); \
      end \
    end \
    /*verilator coverage_on*/
  `define TPU_ASSERT_NEVER(__name, __prop) `TPU_ASSERT(__name, !(__prop))
  `define TPU_ASSERT_IMPLIES(__name, __a, __b) `TPU_ASSERT(__name, !(__a) || (__b))
  // The payload is copied only in the cycles it must then hold (valid without ready).
  `define TPU_ASSERT_HOLD(__name, __valid, __ready, __payload) \
    `TPU_ASSERT_HOLD_IF(__name, __valid, __ready, __payload, 1'b1)
  `define TPU_ASSERT_HOLD_IF(__name, __valid, __ready, __payload, __check) \
    /*verilator coverage_off*/ \
    if (1) begin : __name \
      logic                        stall_q; \
      logic [$bits(__payload)-1:0] payload_q; \
      always_ff @(posedge clk_i or negedge rst_ni) begin \
        if (!rst_ni) stall_q <= 1'b0; \
        else         stall_q <= (__valid) && !(__ready); \
      end \
      always_ff @(posedge clk_i) begin \
        if ((__valid) && !(__ready)) payload_q <= (__payload); \
      end \
      always_ff @(posedge clk_i or negedge rst_ni) begin \
        if (rst_ni && stall_q && (__check)) begin \
          assert ((__valid) && (__payload) == payload_q) \
            else $error("[TPU_ASSERT] %m: %s failed", `"__name`"); \
        end \
      end \
    end \
    /*verilator coverage_on*/
  `define TPU_ASSERT_INIT(__name, __prop) \
    initial begin : __name \
      assert (__prop) else $fatal(1, "[TPU_ASSERT] %m: %s failed", `"__name`"); \
    end
  `define TPU_ASSERT_COMB(__name, __prop) \
    /*verilator coverage_off*/ \
    always_comb begin : __name \
      assert (__prop) else $error("[TPU_ASSERT] %m: %s failed", `"__name`"); \
    end \
    /*verilator coverage_on*/
`endif

`endif  // TPU_ASSERT_SVH

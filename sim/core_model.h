// SPDX-License-Identifier: Apache-2.0
// CoreModel: the Verilated tpu_core (Verilator's C++ model, class Vtpu_core) as a SystemC module
// with tpu_core's pins, evaluated once per clock cycle instead of at every pin change.
//
// Verilator's own SystemC wrapper (--sc) evaluates the model whenever the clock or any input
// changes: twice per cycle here (the rising edge, then the falling clock together with the new
// inputs the bridge and the host drive after the edge), reading every input port and writing
// every output port each time. This module knows what tpu_core's pins are (rtl/tpu_core.sv):
//   - Every output is a function of the flops only, except s_axil_awready_o, s_axil_wready_o
//     and s_axil_arready_o, which also depend on s_axil_*valid_i (tpu_regs accepts a request in
//     the cycle it arrives). So between edges only a change of an s_axil_* input needs an
//     evaluation; the m_axi_* / m_vaxi_* / m_waxi_* inputs the bridges drive after an edge are
//     sampled at the next edge, where the model first settles with them (clock low) and then
//     takes the edge. Every value a clocked process samples on a rising edge is the same as
//     with Verilator's wrapper.
//   - An output port is written only when its value changed.
// While a VCD file is being written (set_every_change(true)), it evaluates on every change of
// the clock or an input, exactly as Verilator's wrapper does, so the dump shows the same values
// at the same times (and, as any VCD of a Verilated C++ model, the pins once more at the top).
//
// Run-ahead (set_run_ahead): at a rising edge whose outputs did not change, the owner may allow
// the model to evaluate the next edges at once, with the same inputs, because nothing else in
// the testbench would act on them (every other process asleep until an output of the core
// changes, nobody watching the trace port). The model then goes on edge by edge, without the
// SystemC kernel in between, until an output other than the trace port changes or the
// allowance ends. The outputs of that last edge are written at its time, in the delta they would
// have been written in without run-ahead, if any of them changed (the trace port included, so
// it is up to date for whoever watches it next), so every process sees the same values at the
// same times. The clock skips the edges evaluated ahead (evaluated_until(), outputs_pending()).
// A pure speed measure: the model's per-cycle code runs back to back instead of interleaved
// with the kernel's (at N = 16 the two do not fit the instruction cache together).
//
// tests/verif/eval_modes_test.cpp runs random programs (random memory timing and backpressure)
// both ways and compares every instruction's issue and finish cycle, counters and memory, and
// the same programs with run-ahead on and off (outcome, every counter, cycles, memory).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <systemc>

#include "pin_types.h"

class Vtpu_core;
class VerilatedVcdC;

#ifndef TPU_SIM_N
#error "TPU_SIM_N must be defined (the tpu_sim_n<N> CMake target does it)"
#endif

namespace tpu::sim {

struct CoreModelOutputs;

// The RTL's default AxiDataWidth = min(8N, 128), unless the build chose another width
// (TPU_SIM_AXI_WIDTH).
#ifdef TPU_SIM_AXI_WIDTH
constexpr unsigned kAxiWidth = TPU_SIM_AXI_WIDTH;
#else
constexpr unsigned kAxiWidth = (8 * TPU_SIM_N < 128) ? 8 * TPU_SIM_N : 128;
#endif

// tpu_core's pins other than clk_i and rst_ni: X(name, width). Inputs that only the register
// host drives (AXI4-Lite) are listed apart: a change of one of them is evaluated at once.
#define TPU_CORE_AXIL_INPUTS(X) \
  X(s_axil_awaddr_i, 12)        \
  X(s_axil_awvalid_i, 1)        \
  X(s_axil_wdata_i, 32)         \
  X(s_axil_wstrb_i, 4)          \
  X(s_axil_wvalid_i, 1)         \
  X(s_axil_bready_i, 1)         \
  X(s_axil_araddr_i, 12)        \
  X(s_axil_arvalid_i, 1)        \
  X(s_axil_rready_i, 1)
// The VMEM port's data width (tpu_core VaxiDataWidth): one fp32 VMEM row (32N bits) on the
// training chip, 32 (tied off) on the int8 chip.
#ifndef TPU_SIM_VMEM_ROWS
#error "TPU_SIM_VMEM_ROWS must be defined (the tpu_sim_n<N> CMake target does it)"
#endif
constexpr unsigned kVaxiWidth = TPU_SIM_VMEM_ROWS != 0 ? 32 * TPU_SIM_N : 32;
// The weight port's data width (tpu_core WaxiDataWidth, docs/isa.md "The weight port"): the
// build's TPU_SIM_WAXI_WIDTH, 0 = no weight port (32-bit pins, tied off).
#ifndef TPU_SIM_WAXI_WIDTH
#define TPU_SIM_WAXI_WIDTH 0
#endif
constexpr unsigned kWaxiWidth = TPU_SIM_WAXI_WIDTH != 0 ? TPU_SIM_WAXI_WIDTH : 32;

#define TPU_CORE_AXI_INPUTS(X)  \
  X(m_waxi_arready_i, 1)        \
  X(m_waxi_rdata_i, kWaxiWidth) \
  X(m_waxi_rresp_i, 2)          \
  X(m_waxi_rlast_i, 1)          \
  X(m_waxi_rvalid_i, 1)         \
  X(m_vaxi_arready_i, 1)        \
  X(m_vaxi_rdata_i, kVaxiWidth) \
  X(m_vaxi_rresp_i, 2)          \
  X(m_vaxi_rlast_i, 1)          \
  X(m_vaxi_rvalid_i, 1)         \
  X(m_vaxi_awready_i, 1)        \
  X(m_vaxi_wready_i, 1)         \
  X(m_vaxi_bresp_i, 2)          \
  X(m_vaxi_bvalid_i, 1)         \
  X(m_axi_arready_i, 1)         \
  X(m_axi_rdata_i, kAxiWidth)   \
  X(m_axi_rresp_i, 2)           \
  X(m_axi_rlast_i, 1)           \
  X(m_axi_rvalid_i, 1)          \
  X(m_axi_awready_i, 1)         \
  X(m_axi_wready_i, 1)          \
  X(m_axi_bresp_i, 2)           \
  X(m_axi_bvalid_i, 1)
#define TPU_CORE_OUTPUTS(X) TPU_CORE_PIN_OUTPUTS(X) TPU_CORE_TRACE_OUTPUTS(X)
// The outputs but the trace port.
#define TPU_CORE_PIN_OUTPUTS(X)     \
  X(s_axil_awready_o, 1)            \
  X(s_axil_wready_o, 1)             \
  X(s_axil_bresp_o, 2)              \
  X(s_axil_bvalid_o, 1)             \
  X(s_axil_arready_o, 1)            \
  X(s_axil_rdata_o, 32)             \
  X(s_axil_rresp_o, 2)              \
  X(s_axil_rvalid_o, 1)             \
  X(m_axi_araddr_o, 32)             \
  X(m_axi_arlen_o, 8)               \
  X(m_axi_arsize_o, 3)              \
  X(m_axi_arburst_o, 2)             \
  X(m_axi_arvalid_o, 1)             \
  X(m_axi_rready_o, 1)              \
  X(m_axi_awaddr_o, 32)             \
  X(m_axi_awlen_o, 8)               \
  X(m_axi_awsize_o, 3)              \
  X(m_axi_awburst_o, 2)             \
  X(m_axi_awvalid_o, 1)             \
  X(m_axi_wdata_o, kAxiWidth)       \
  X(m_axi_wstrb_o, kAxiWidth / 8)   \
  X(m_axi_wlast_o, 1)               \
  X(m_axi_wvalid_o, 1)              \
  X(m_axi_bready_o, 1)              \
  X(m_vaxi_araddr_o, 32)            \
  X(m_vaxi_arlen_o, 8)              \
  X(m_vaxi_arsize_o, 3)             \
  X(m_vaxi_arburst_o, 2)            \
  X(m_vaxi_arvalid_o, 1)            \
  X(m_vaxi_rready_o, 1)             \
  X(m_vaxi_awaddr_o, 32)            \
  X(m_vaxi_awlen_o, 8)              \
  X(m_vaxi_awsize_o, 3)             \
  X(m_vaxi_awburst_o, 2)            \
  X(m_vaxi_awvalid_o, 1)            \
  X(m_vaxi_wdata_o, kVaxiWidth)     \
  X(m_vaxi_wstrb_o, kVaxiWidth / 8) \
  X(m_vaxi_wlast_o, 1)              \
  X(m_vaxi_wvalid_o, 1)             \
  X(m_vaxi_bready_o, 1)             \
  X(m_waxi_araddr_o, 32)            \
  X(m_waxi_arlen_o, 8)              \
  X(m_waxi_arsize_o, 3)             \
  X(m_waxi_arburst_o, 2)            \
  X(m_waxi_arvalid_o, 1)            \
  X(m_waxi_rready_o, 1)             \
  X(irq_o, 1)
// The trace port (observation only: the instruction trace, a VCD).
#define TPU_CORE_TRACE_OUTPUTS(X) \
  X(trace_run_o, 1)               \
  X(trace_issue_o, 1)             \
  X(trace_unit_o, 4)              \
  X(trace_pc_o, 32)               \
  X(trace_done_o, 9)

class CoreModel : public sc_core::sc_module {
 public:
#define TPU_CORE_DECLARE_IN(name, w) sc_core::sc_in<PinType_t<w>> name{#name};
#define TPU_CORE_DECLARE_OUT(name, w) sc_core::sc_out<PinType_t<w>> name{#name};
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  TPU_CORE_AXIL_INPUTS(TPU_CORE_DECLARE_IN)
  TPU_CORE_AXI_INPUTS(TPU_CORE_DECLARE_IN)
  TPU_CORE_OUTPUTS(TPU_CORE_DECLARE_OUT)
#undef TPU_CORE_DECLARE_IN
#undef TPU_CORE_DECLARE_OUT

  SC_HAS_PROCESS(CoreModel);
  explicit CoreModel(sc_core::sc_module_name name);
  ~CoreModel() override;

  // Evaluate on every change of the clock or an input (Verilator's --sc behaviour), or once per
  // rising edge plus on AXI4-Lite input changes (the default). Takes effect from the next event.
  void set_every_change(bool on) { every_change_ = on; }

  // Run-ahead (see above): at a rising edge whose outputs did not change, allowed() says how
  // many of the next edges, `period` apart, the model may evaluate at once (0: none). Never
  // while evaluating on every change.
  void set_run_ahead(std::function<uint64_t()> allowed, const sc_core::sc_time& period) {
    run_ahead_allowed_ = std::move(allowed);
    period_ = period;
  }
  // The time of the last rising edge the model has evaluated ahead (once run-ahead was used),
  // and whether that edge changed outputs that are still to be written at its time.
  const sc_core::sc_time& evaluated_until() const { return evaluated_until_; }
  bool outputs_pending() const { return outputs_pending_; }
  uint64_t edges_run_ahead() const { return edges_run_ahead_; }  // since construction

  // Attach a VCD file (VerilatedVcdSc) to the model; see Vtpu_core::trace().
  void trace(VerilatedVcdC* vcd, int levels);
  // Run the model's final blocks.
  void final();

 private:
  void end_of_elaboration() override;
  void evaluate();
  void read_inputs();
  bool outputs_changed(bool trace_port) const;  // against the last written
  bool write_outputs();                         // true if an output changed
  void run_ahead(uint64_t edges);

  std::unique_ptr<Vtpu_core> model_;
  std::unique_ptr<CoreModelOutputs> last_;  // the output values last written to the ports
  bool every_change_ = false;
  bool outputs_written_ = false;         // false until the first evaluation wrote every output
  sc_core::sc_event_or_list on_change_;  // any change of the clock or an input
  std::function<uint64_t()> run_ahead_allowed_;
  sc_core::sc_time period_;
  sc_core::sc_time evaluated_until_;  // see evaluated_until()
  bool outputs_pending_ = false;
  uint64_t edges_run_ahead_ = 0;
};

}  // namespace tpu::sim

// SPDX-License-Identifier: Apache-2.0
#include "core_model.h"

#include <stdexcept>
#include <type_traits>

// verilated_funcs.h calls sc_time_stamp() unqualified once <systemc> has been included.
using sc_core::sc_time_stamp;

#include "Vtpu_core.h"
#include "verilated.h"

namespace tpu::sim {

namespace {

// The C++ model's type for a port (Vtpu_core's members are references into its root).
template <class Ref>
using ModelType = std::remove_reference_t<Ref>;

// The type Verilator gives a port of W bits in its C++ model.
template <unsigned W>
using VerilatedType = std::conditional_t<
    (W <= 8), CData,
    std::conditional_t<
        (W <= 16), SData,
        std::conditional_t<(W <= 32), IData,
                           std::conditional_t<(W <= 64), QData, VlWide<(W + 31) / 32>>>>>;

// The widths in core_model.h's pin lists against the Verilated tpu_core (a mismatch: the RTL's
// ports changed, or TPU_SIM_AXI_WIDTH is not the model's AxiDataWidth).
#define TPU_CORE_CHECK_WIDTH(name, w)                                                         \
  static_assert(                                                                              \
      std::is_same_v<ModelType<decltype(std::declval<Vtpu_core&>().name)>, VerilatedType<w>>, \
      "tpu_core port " #name                                                                  \
      ": the Verilated model's type does not match the "                                      \
      "width in core_model.h");
TPU_CORE_AXIL_INPUTS(TPU_CORE_CHECK_WIDTH)
TPU_CORE_AXI_INPUTS(TPU_CORE_CHECK_WIDTH)
TPU_CORE_OUTPUTS(TPU_CORE_CHECK_WIDTH)
#undef TPU_CORE_CHECK_WIDTH

template <unsigned W>
constexpr uint64_t low_mask() {
  return W >= 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1;
}

// Pin value -> model port, upper bits cleared as Verilator's wrapper does (VL_ASSIGN_*S*).
template <unsigned W, class M>
void to_model(const PinType_t<W>& v, M& m) {
  if constexpr (W == 1) {
    m = v;
  } else if constexpr (W <= 64) {
    m = static_cast<M>(v & low_mask<W>());
  } else {
    constexpr unsigned kWords = (W + 31) / 32;
    for (unsigned i = 0; i < kWords; ++i)
      m[i] = static_cast<uint32_t>(v.get_word(static_cast<int>(i)));
    if constexpr (W % 32 != 0) m[kWords - 1] &= static_cast<uint32_t>(low_mask<W % 32>());
  }
}

// Model port -> pin value.
template <unsigned W, class M>
PinType_t<W> from_model(const M& m) {
  if constexpr (W == 1) {
    return m != 0;
  } else if constexpr (W <= 64) {
    return static_cast<PinType_t<W>>(m);
  } else {
    PinType_t<W> v;
    for (unsigned i = 0; i < (W + 31) / 32; ++i) v.set_word(static_cast<int>(i), m[i]);
    return v;
  }
}

}  // namespace

// The output values last written to the ports, in the model's types.
struct CoreModelOutputs {
#define TPU_CORE_DECLARE_LAST(name, w) ModelType<decltype(std::declval<Vtpu_core&>().name)> name{};
  TPU_CORE_OUTPUTS(TPU_CORE_DECLARE_LAST)
#undef TPU_CORE_DECLARE_LAST
};

CoreModel::CoreModel(sc_core::sc_module_name name)
    : sc_core::sc_module(name),
      model_(std::make_unique<Vtpu_core>(this->name())),
      last_(std::make_unique<CoreModelOutputs>()) {
  // Statically: rising clock edges, reset and the AXI4-Lite inputs (core_model.h). Runs once at
  // initialization too. While every_change_ is set, next_trigger() widens that to any change.
  SC_METHOD(evaluate);
  sensitive << clk_i.pos() << rst_ni;
#define TPU_CORE_SENSITIVE(name, w) sensitive << name;
  TPU_CORE_AXIL_INPUTS(TPU_CORE_SENSITIVE)
#undef TPU_CORE_SENSITIVE
}

CoreModel::~CoreModel() = default;

void CoreModel::end_of_elaboration() {
  on_change_ = clk_i.value_changed_event() | rst_ni.value_changed_event();
#define TPU_CORE_ADD_CHANGE(name, w) on_change_ |= name.value_changed_event();
  TPU_CORE_AXIL_INPUTS(TPU_CORE_ADD_CHANGE)
  TPU_CORE_AXI_INPUTS(TPU_CORE_ADD_CHANGE)
#undef TPU_CORE_ADD_CHANGE
}

void CoreModel::read_inputs() {
  Vtpu_core& m = *model_;
  m.rst_ni = rst_ni.read();
#define TPU_CORE_READ(name, w) to_model<w>(name.read(), m.name);
  TPU_CORE_AXIL_INPUTS(TPU_CORE_READ)
  TPU_CORE_AXI_INPUTS(TPU_CORE_READ)
#undef TPU_CORE_READ
}

bool CoreModel::outputs_changed(bool trace_port) const {
  const Vtpu_core& m = *model_;
  const CoreModelOutputs& last = *last_;
  bool changed = false;
#define TPU_CORE_COMPARE(name, w) changed |= m.name != last.name;
  TPU_CORE_PIN_OUTPUTS(TPU_CORE_COMPARE)
  if (trace_port) TPU_CORE_TRACE_OUTPUTS(TPU_CORE_COMPARE)
#undef TPU_CORE_COMPARE
  return changed;
}

bool CoreModel::write_outputs() {
  const Vtpu_core& m = *model_;
  CoreModelOutputs& last = *last_;
  bool changed = false;
#define TPU_CORE_WRITE(name, w)                   \
  if (!outputs_written_ || m.name != last.name) { \
    last.name = m.name;                           \
    name.write(from_model<w>(m.name));            \
    changed = true;                               \
  }
  TPU_CORE_OUTPUTS(TPU_CORE_WRITE)
#undef TPU_CORE_WRITE
  outputs_written_ = true;
  return changed;
}

void CoreModel::run_ahead(uint64_t edges) {
  // The inputs stay as read_inputs() left them: whoever drives them is asleep until an output
  // changes. Each edge as at the clock: settle with the clock low, then the rising edge.
  Vtpu_core& m = *model_;
  sc_core::sc_time t = sc_core::sc_time_stamp();
  for (uint64_t k = 0; k < edges; ++k) {
    t += period_;
    m.contextp()->time(t.value());
    m.clk_i = 0;
    m.eval();
    m.clk_i = 1;
    m.eval();
    ++edges_run_ahead_;
    if (outputs_changed(false)) break;
  }
  // Written when the clock rises at t (evaluate()).
  outputs_pending_ = outputs_changed(true);
  evaluated_until_ = t;
}

void CoreModel::evaluate() {
  Vtpu_core& m = *model_;
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (clk_i.posedge() && now <= evaluated_until_) {
    // An edge the model already evaluated ahead: the clock rises here only to have its outputs
    // written, in the delta they would have been written in without run-ahead.
    if (outputs_pending_ && now == evaluated_until_) {
      write_outputs();
      outputs_pending_ = false;
    }
    return;
  }
  m.contextp()->time(now.value());
  read_inputs();
  const bool clk = clk_i.read();
  if (clk_i.posedge() && m.clk_i) {
    // A rising edge while the model's clock is still high (it was not evaluated at the fall):
    // settle with the clock low and the inputs driven since the last edge first.
    m.clk_i = 0;
    m.eval();
  }
  m.clk_i = clk;
  m.eval();
  const bool changed = write_outputs();
  if (every_change_) {
    next_trigger(on_change_);  // else the static sensitivity
  } else if (!changed && clk_i.posedge() && run_ahead_allowed_) {
    if (const uint64_t edges = run_ahead_allowed_()) run_ahead(edges);
  }
}

void CoreModel::trace(VerilatedVcdC* vcd, int levels) {
#ifdef TPU_SIM_NO_TRACE
  (void)vcd;
  (void)levels;
  throw std::logic_error("CoreModel::trace: the model was Verilated without --trace");
#else
  model_->trace(vcd, levels);
#endif
}

void CoreModel::final() { model_->final(); }

}  // namespace tpu::sim

// SPDX-License-Identifier: Apache-2.0
// tpu::sim::Chip — the C++ handle on one Verilated tpu_core inside its SystemC testbench.
//
// Everything above the pins (driver, tests, CLI) goes through this class:
//   host CPU  --read_reg/write_reg-->  AxiLiteMaster  --s_axil_*-->  tpu_core
//   tpu_core  --m_axi_*-->  Axi4ToTlmBridge  --TLM b_transport-->  HostMemoryModel (regions)
//   tpu_core  --m_vaxi_*-->  Axi4ToTlmBridge  -->  HostMemoryPort (own timing)  -->  the same
//             (the VMEM port, docs/architecture.md; idle on the int8 chip)
//
// SystemC elaborates once per process, so a process may construct exactly one Chip; a second
// construction (even after the first was destroyed) throws std::logic_error. Use reset() to
// start over in place; host memory contents survive reset() (it is the host's DRAM).
//
// Time: one clock of 1 ns; cycle() counts rising edges since the start of simulation.
// Simulated time only advances inside Chip calls (reset, register access, run, step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "axi_types.h"
#include "host_memory_model.h"
#include "registers.h"
#include "trace.h"

namespace tpu::sim {

struct ChipConfig {
  // Host memory timing (see host_memory_model.h).
  uint32_t mem_latency_cycles = 10;
  uint32_t mem_bytes_per_cycle = 16;  // 0 = unlimited
  // The VMEM port's own timing on the same memory (HBM's role): 0 bytes per cycle = its full
  // width, one beat (4N bytes) per cycle.
  uint32_t vmem_port_latency_cycles = 10;
  uint32_t vmem_port_bytes_per_cycle = 0;
  // The weight port's own timing on the same memory (device DRAM's role, docs/isa.md "The
  // weight port"; only on a chip built with one): 0 bytes per cycle = one beat per cycle.
  uint32_t weight_port_latency_cycles = 10;
  uint32_t weight_port_bytes_per_cycle = 0;
  // Random AXI backpressure on every port, probability per cycle and channel, in [0, 1).
  double backpressure = 0.0;
  uint64_t seed = 1;
  // Waveform: empty = off (no tracing cost at all). Dumps while from <= cycle() < to.
  std::string vcd_file;
  uint64_t vcd_from_cycle = 0;
  uint64_t vcd_to_cycle = std::numeric_limits<uint64_t>::max();
  int trace_depth = 99;  // hierarchy levels traced
  // A register access without response after this many cycles throws RegisterTimeout.
  uint64_t reg_timeout_cycles = 2000;
  // run() polls STATUS this often when irq_o cannot announce completion (IRQ_ENABLE != 0b11
  // or an interrupt already pending when run() starts).
  uint64_t status_poll_cycles = 256;
  // Evaluate the Verilated core at every change of its clock or inputs, as Verilator's own
  // SystemC wrapper does, instead of once per cycle (sim/core_model.h). Same pins, same cycles,
  // slower; for checking the once-per-cycle evaluation (tests/verif/eval_modes_test.cpp).
  bool eval_every_change = false;
  // Let the core model evaluate the next clock edges at once, without the SystemC kernel in
  // between, while nothing else in the testbench acts on them (sim/core_model.h "Run-ahead").
  // Same pins, same cycles; off only to check it (tests/verif/eval_modes_test.cpp).
  bool run_ahead = true;
};

enum class StopReason {
  kDone,        // STATUS.done
  kError,       // STATUS.error (err_code / err_pc filled in)
  kIrq,         // irq_o rose but STATUS shows neither done nor error
  kCycleLimit,  // max_cycles elapsed first
};
const char* to_string(StopReason reason);

struct RunResult {
  StopReason reason = StopReason::kCycleLimit;
  uint64_t cycles = 0;    // cycles from the call until the stop condition was seen
  uint32_t status = 0;    // STATUS read after stopping (not read on kCycleLimit: 0)
  uint32_t err_code = 0;  // ERR_CODE, only read when reason == kError
  uint32_t err_pc = 0;    // ERR_PC, only read when reason == kError
};

// The 64-bit performance counters, in register order (architecture.md).
struct Counters {
  uint64_t cycles = 0, mxu_busy = 0, mxu_macs = 0, weight_stall = 0, input_stall = 0;
  uint64_t dma_busy = 0, dma_rd_bytes = 0, dma_wr_bytes = 0, instr_retired = 0, act_busy = 0;
};

// The read-only identification/parameter registers.
struct Params {
  uint32_t id = 0, n = 0, ub_rows = 0, acc_rows = 0, wfifo_tiles = 0, qp_slots = 0, axi_width = 0;
  uint32_t vmem_rows = 0;    // 0 = int8 chip (no float hardware; PARAM_VMEM_ROWS not read then)
  uint32_t ici_links = 0;    // 0 = no links (PARAM_ICI_LINKS not read then)
  uint32_t ici_link_up = 0;  // ICI_LINK_UP (bit l: link l connected; 0 for a chip alone)
  uint32_t dw_width = 0;     // 0 = no depthwise unit (PARAM_DW_WIDTH not read then)
};

struct Status {
  bool busy = false, done = false, error = false;
  uint32_t err_code = 0, err_pc = 0, pc = 0;
};

// Result of a register access that did not throw on an error response.
struct RegAccess {
  uint32_t data = 0;  // read data (0 for writes)
  uint32_t resp = 0;  // AXI RRESP/BRESP: 0 OKAY, 2 SLVERR, 3 DECERR
};

// The slave answered a register access with a non-OKAY response.
class RegisterError : public std::runtime_error {
 public:
  RegisterError(const std::string& what, uint32_t reg_addr, uint32_t axi_resp)
      : std::runtime_error(what), addr(reg_addr), resp(axi_resp) {}
  uint32_t addr;  // register address
  uint32_t resp;  // AXI response code (2 SLVERR, 3 DECERR)
};
// The slave did not complete a register access within ChipConfig::reg_timeout_cycles.
class RegisterTimeout : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The chip broke the AXI4 protocol on its master port (message lists every violation).
class ProtocolError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Chip {
 public:
  explicit Chip(const ChipConfig& config = {});
  ~Chip();
  Chip(const Chip&) = delete;
  Chip& operator=(const Chip&) = delete;

  // True once a Chip has been constructed in this process (a second one would throw).
  static bool constructed();
  // The N and AXI data width this library was Verilated for.
  static unsigned compiled_n();
  static unsigned compiled_axi_width();
  // The VMEM port's data width: 32N on the training chip, 32 (tied off) on the int8 chip.
  static unsigned compiled_vmem_axi_width();
  // The weight port's data width (tpu_core WaxiDataWidth): 0 when the chip has none.
  static unsigned compiled_weight_axi_width();
  // VmemRows of the Verilated core: 0 for the int8 chip (tpu_sim_n<N>), else the training
  // chip's (tpu_sim_train_n<N>).
  static unsigned compiled_vmem_rows();
  // IciLinks of the Verilated tpu_core (tpu_sim_pod_n<N>; 0 for the other chips).
  static unsigned compiled_ici_links();
  // DwWidth of the Verilated tpu_core (tpu_sim_dw_n<N>; 0 for the other chips: no depthwise unit).
  static unsigned compiled_dw_width();
  // False when the model was Verilated without --trace (-DTPU_SIM_TRACE=OFF): no VCD then.
  static bool compiled_with_vcd();

  // Pull rst_ni low for `cycles` cycles, then run 2 cycles out of reset. Also drops anything
  // in flight in the testbench bridges. Host memory is kept.
  void reset(unsigned cycles = 8);

  // Host register access over AXI4-Lite (takes simulated cycles). read_reg/write_reg throw
  // RegisterError on SLVERR/DECERR; all four throw RegisterTimeout if the chip never answers
  // and std::invalid_argument for an address outside the 12-bit register space.
  uint32_t read_reg(uint32_t addr);
  void write_reg(uint32_t addr, uint32_t value);
  RegAccess try_read_reg(uint32_t addr);
  // strb: the AXI4-Lite write strobe (byte lanes); the register block takes only 0xF.
  RegAccess try_write_reg(uint32_t addr, uint32_t value, uint32_t strb = 0xF);

  // Host memory (no simulated time). Accesses outside regions throw std::out_of_range.
  HostMemoryModel& memory();
  void add_region(uint64_t base, uint64_t size, const std::string& name);
  void write_mem(uint64_t addr, const void* src, size_t len);
  void write_mem(uint64_t addr, const std::vector<uint8_t>& bytes);
  void read_mem(uint64_t addr, void* dst, size_t len);
  std::vector<uint8_t> read_mem(uint64_t addr, size_t len);
  void inject_error(uint64_t base, uint64_t size);  // bus accesses there answer SLVERR
  void clear_injected_errors();

  // Change testbench behaviour between runs.
  void set_backpressure(double probability, uint64_t seed);
  void set_memory_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle);
  // The VMEM port's (bytes_per_cycle 0: one beat per cycle).
  void set_vmem_port_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle);
  // The weight port's (bytes_per_cycle 0: one beat per cycle).
  void set_weight_port_timing(uint32_t latency_cycles, uint32_t bytes_per_cycle);

  // Acknowledge stale interrupts (IRQ_STATUS <- 0b11), then CMD_ADDR, CMD_COUNT, CTRL.START.
  void start(uint32_t cmd_addr, uint32_t count);
  // Run until STATUS.done, STATUS.error, a rising irq_o or max_cycles; never throws on the
  // limit (reason kCycleLimit). Throws ProtocolError if the chip broke AXI on its master port.
  // With IRQ_ENABLE = 0b11 and no interrupt pending at the call, the end is seen the cycle
  // irq_o rises; otherwise STATUS is polled every ChipConfig::status_poll_cycles, so
  // RunResult::cycles may overshoot by up to that much (the CYCLES counter is exact).
  RunResult run(uint64_t max_cycles);
  // Advance exactly `cycles` cycles, ignoring every stop condition.
  void step(uint64_t cycles);

  Counters counters();  // reads all 10 counters (low then high word)
  uint64_t counter(unsigned index);
  Params params();
  Status status();
  bool irq() const;                                // current level of irq_o
  const AxiBridgeStats& axi_stats() const;         // traffic on m_axi_* since construction
  const AxiBridgeStats& vmem_axi_stats() const;    // ... on m_vaxi_* (the VMEM port)
  const AxiBridgeStats& weight_axi_stats() const;  // ... on m_waxi_* (the weight port)
  uint64_t cycle() const;                          // rising clock edges since simulation start
  uint64_t edges_run_ahead() const;  // of those, the ones the core model evaluated ahead

  // Instruction trace (sim/trace.h) from tpu_core's trace port: off by default, and then it
  // costs nothing. While on, each run's issued instructions are recorded with the cycles they
  // were issued and finished; a new run (STATUS.BUSY rising) replaces the previous run's
  // events. Switch it on between runs (a run already going is recorded from its next START).
  void set_instruction_trace(bool on);
  bool instruction_trace() const;
  // The last (or current) traced run's events, in issue order.
  const std::vector<TraceEvent>& trace_events() const;
  // The number of cycles trace_run_o (STATUS.BUSY) was set in the last (or current) traced run:
  // what the CYCLES counter must count (docs/architecture.md "Trace port").
  uint64_t trace_run_cycles() const;
  static constexpr uint64_t kClockPeriodPs = 1000;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpu::sim

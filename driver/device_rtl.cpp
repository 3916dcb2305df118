// SPDX-License-Identifier: Apache-2.0
#include "device_rtl.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "chip.h"
#include "device_model.h"
#include "registers.h"

namespace tpu {

namespace {

static_assert(int(ExecUnit::ReadHost) == int(sim::TraceUnit::kReadHost) &&
                  int(ExecUnit::ReadWeights) == int(sim::TraceUnit::kReadWeights) &&
                  int(ExecUnit::Matmul) == int(sim::TraceUnit::kMatmul) &&
                  int(ExecUnit::Activate) == int(sim::TraceUnit::kActivate) &&
                  int(ExecUnit::WriteHost) == int(sim::TraceUnit::kWriteHost) &&
                  int(ExecUnit::Control) == int(sim::TraceUnit::kControl) &&
                  int(ExecUnit::Move) == int(sim::TraceUnit::kMove) &&
                  int(ExecUnit::Vector) == int(sim::TraceUnit::kVector) &&
                  int(ExecUnit::LoadWeights) == int(sim::TraceUnit::kLoadWeights) &&
                  kNumExecUnits == sim::kTraceUnits,
              "ExecUnit must number the units as the chip's trace port does");

// The ISA's DMA windows are the chip's WIN_BASE_i / WIN_SIZE_i registers (docs/registers.csv).
static_assert(kNumDmaWindows == int(sim::reg::kNumWinBase) &&
              kNumDmaWindows == int(sim::reg::kNumWinSize));

std::vector<InstrEvent> to_timeline(const std::vector<sim::TraceEvent>& events) {
  std::vector<InstrEvent> out;
  out.reserve(events.size());
  for (const sim::TraceEvent& t : events) {
    InstrEvent e;
    e.pc = t.pc;
    e.unit = static_cast<ExecUnit>(t.unit);
    e.start = t.issue;
    e.end = t.done;
    e.complete = t.complete;
    out.push_back(e);
  }
  return out;
}

}  // namespace

struct RtlDevice::Impl {
  std::unique_ptr<sim::Chip> chip;
  std::optional<DmaWindows> programmed;  // what the WIN_* registers hold, if known
};

RtlDevice::RtlDevice(const RtlOptions& o) : impl_(std::make_unique<Impl>()) {
  if (sim::Chip::constructed()) {
    throw DeviceError(
        "rtl: a chip was already built in this process (SystemC elaborates once per process); "
        "reuse that RtlDevice");
  }
  if (!(o.backpressure >= 0.0 && o.backpressure < 1.0)) {
    throw DeviceError("rtl: backpressure must be in [0, 1), got " + std::to_string(o.backpressure));
  }
  if (o.vcd_from > o.vcd_to) throw DeviceError("rtl: VCD window starts after it ends");
  sim::ChipConfig cfg;
  cfg.mem_latency_cycles = o.mem_latency_cycles;
  cfg.mem_bytes_per_cycle = o.mem_bytes_per_cycle;
  cfg.weight_port_latency_cycles = o.weight_port_latency_cycles;
  cfg.weight_port_bytes_per_cycle = o.weight_port_bytes_per_cycle;
  cfg.backpressure = o.backpressure;
  cfg.seed = o.seed;
  cfg.vcd_file = o.vcd_file;
  cfg.vcd_from_cycle = o.vcd_from;
  cfg.vcd_to_cycle = o.vcd_to;
  cfg.trace_depth = o.trace_depth;
  try {
    impl_->chip = std::make_unique<sim::Chip>(cfg);
  } catch (const std::exception& e) {
    throw DeviceError(std::string("rtl: cannot build the chip: ") + e.what());
  }
  sim::Chip& chip = *impl_->chip;
  chip.add_region(0, uint64_t{1} << 32, "host");  // sparse: pages appear when written
  const sim::Params p = chip.params();
  if (p.id != sim::reg::kIdValue) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "rtl: ID register reads 0x%08" PRIx32 ", expected 0x%08" PRIx32,
                  p.id, sim::reg::kIdValue);
    throw DeviceError(buf);
  }
  ChipParams cp;
  cp.N = p.n;
  cp.ub_rows = p.ub_rows;
  cp.acc_rows = p.acc_rows;
  cp.wfifo_tiles = p.wfifo_tiles;
  cp.qp_slots = p.qp_slots;
  cp.axi_width = p.axi_width;
  cp.vmem_rows = p.vmem_rows;
  if (cp.vmem_rows != 0) {
    cp.training_ops = kRtlTrainingOps;
    cp.vmem_port_bytes = sim::Chip::compiled_vmem_axi_width() / 8;  // one beat per cycle
  }
  cp.weight_port_bytes = sim::Chip::compiled_weight_axi_width() / 8;  // 0: no weight port
  cp.ici_links = p.ici_links;  // the pod chip (alone: its links are down, ERR_ICI_LINK)
  cp.dw_width = p.dw_width;    // the depthwise chip (tpu_sim_dw_n<N>); 0: no unit
  try {
    cp.validate();
  } catch (const std::exception& e) {
    throw DeviceError(std::string("rtl: the chip reports invalid parameters: ") + e.what());
  }
  set_params(cp);
}

RtlDevice::~RtlDevice() = default;

unsigned RtlDevice::compiled_n() { return sim::Chip::compiled_n(); }
unsigned RtlDevice::compiled_vmem_rows() { return sim::Chip::compiled_vmem_rows(); }

ChipParams RtlDevice::compiled_params() {
  ChipParams p = ChipParams::with_n(compiled_n());
#ifdef TPU_SIM_UB_ROWS
  p.ub_rows = TPU_SIM_UB_ROWS;
#endif
#ifdef TPU_SIM_ACC_ROWS
  p.acc_rows = TPU_SIM_ACC_ROWS;
#endif
  p.vmem_rows = compiled_vmem_rows();
  if (p.vmem_rows != 0) {
    p.training_ops = kRtlTrainingOps;
    p.vmem_port_bytes = sim::Chip::compiled_vmem_axi_width() / 8;
  }
  p.weight_port_bytes = sim::Chip::compiled_weight_axi_width() / 8;
  p.ici_links = sim::Chip::compiled_ici_links();
  p.dw_width = sim::Chip::compiled_dw_width();
  return p;
}
bool RtlDevice::compiled_with_vcd() { return sim::Chip::compiled_with_vcd(); }

uint64_t RtlDevice::simulated_cycles() const { return impl_->chip->cycle(); }

void RtlDevice::set_backpressure(double probability, uint64_t seed) {
  if (!(probability >= 0.0 && probability < 1.0)) {
    throw DeviceError("rtl: backpressure must be in [0, 1), got " + std::to_string(probability));
  }
  impl_->chip->set_backpressure(probability, seed);
}

void RtlDevice::inject_bus_error(uint64_t base, uint64_t size) {
  if (size == 0 || base + size > (uint64_t{1} << 32) || base + size < base)
    throw DeviceError(
        "rtl: inject_bus_error: the range must be non-empty and within the 32-bit "
        "host address space");
  impl_->chip->inject_error(base, size);
}

void RtlDevice::clear_bus_errors() { impl_->chip->clear_injected_errors(); }

void RtlDevice::mem_write(uint32_t addr, const void* src, size_t len) {
  impl_->chip->write_mem(addr, src, len);
}

void RtlDevice::mem_read(uint32_t addr, void* dst, size_t len) {
  impl_->chip->read_mem(addr, dst, len);
}

Device::RawRun RtlDevice::run_raw(uint32_t cmd_addr, uint32_t count, const DmaWindows& windows,
                                  uint64_t max_cycles) {
  sim::Chip& chip = *impl_->chip;
  for (int i = 0; i < kNumDmaWindows; ++i) {
    const DmaWindow& w = windows[static_cast<size_t>(i)];
    if (impl_->programmed && (*impl_->programmed)[static_cast<size_t>(i)].base == w.base &&
        (*impl_->programmed)[static_cast<size_t>(i)].size == w.size) {
      continue;
    }
    chip.write_reg(sim::reg::win_base(static_cast<unsigned>(i)), w.base);
    chip.write_reg(sim::reg::win_size(static_cast<unsigned>(i)), w.size);
  }
  impl_->programmed = windows;

  chip.start(cmd_addr, count);
  const uint64_t start_cycle = chip.cycle();
  // The CYCLES counter starts as chip.start() returns, and the host sees the end (irq_o) a
  // cycle after the last counted one (measured: chip.run's cycles = CYCLES + 1): the chip runs
  // kLimitSlack cycles beyond max_cycles and the counter decides, so that a run that halts
  // within max_cycles counted cycles is done, and one that does not is a timeout.
  constexpr uint64_t kLimitSlack = 8;
  const uint64_t run_limit =
      max_cycles > UINT64_MAX - kLimitSlack ? UINT64_MAX : max_cycles + kLimitSlack;
  const sim::RunResult r = chip.run(run_limit);
  RawRun out;
  switch (r.reason) {
    case sim::StopReason::kDone:
      break;
    case sim::StopReason::kError:
      out.status = RunOutcome::Status::Error;
      out.error = static_cast<ErrorCode>(r.err_code);
      out.pc = r.err_pc;
      break;
    case sim::StopReason::kCycleLimit:
      out.status = RunOutcome::Status::Timeout;
      break;
    case sim::StopReason::kIrq:
      throw DeviceError("rtl: the chip raised an interrupt without STATUS.done or STATUS.error");
  }
  if (out.status == RunOutcome::Status::Timeout) {
    // Stop the run before reading the counters (they count while BUSY, and reading all ten
    // takes many cycles): one consistent snapshot. SOFT_RESET keeps the counters.
    chip.write_reg(sim::reg::kCtrl, sim::reg::kCtrlSoftReset);
    constexpr int kMaxStatusPolls = 1000;  // in-flight AXI transactions complete first
    for (int polls = 0; polls < kMaxStatusPolls; ++polls) {
      if (!(chip.read_reg(sim::reg::kStatus) & sim::reg::kStatusBusy)) break;
    }
  }
  const sim::Counters c = chip.counters();
  PerfCounters& pc = out.stats.counters;
  pc.cycles = c.cycles;
  pc.mxu_busy = c.mxu_busy;
  pc.mxu_macs = c.mxu_macs;
  pc.weight_stall = c.weight_stall;
  pc.input_stall = c.input_stall;
  pc.dma_busy = c.dma_busy;
  pc.dma_rd_bytes = c.dma_rd_bytes;
  pc.dma_wr_bytes = c.dma_wr_bytes;
  pc.instr_retired = c.instr_retired;
  pc.act_busy = c.act_busy;
  out.stats.cycles = c.cycles;
  out.stats.cycles_estimated = false;
  out.stats.start_cycle = start_cycle;
  if (out.status != RunOutcome::Status::Timeout && c.cycles > max_cycles) {
    // Halted or faulted, but later than the limit (inside the slack): a timeout.
    out.status = RunOutcome::Status::Timeout;
    out.error = ErrorCode::ERR_NONE;
    out.pc = 0;
  }
  // The counter reads above took many cycles: the trace has seen the run end.
  if (chip.instruction_trace()) out.timeline = to_timeline(chip.trace_events());
  if (out.status == RunOutcome::Status::Timeout) {
    // Registers return to reset values, the chip is ready for the next run.
    chip.reset();
    impl_->programmed.reset();
  }
  return out;
}

void RtlDevice::set_timeline_recording(bool on) { impl_->chip->set_instruction_trace(on); }

std::unique_ptr<Device> open_device(std::string_view backend, const RtlOptions& rtl) {
  if (backend == "rtl") return std::make_unique<RtlDevice>(rtl);
  if (backend == "model") {
    // The chip this build Verilates (its memory sizes too: TPU_SIM_UB_ROWS, TPU_SIM_ACC_ROWS).
    return std::make_unique<ModelDevice>(RtlDevice::compiled_params());
  }
  throw DeviceError("unknown backend '" + std::string(backend) + "' (expected rtl or model)");
}

}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
// Device: one interface to a tpu-rtl chip, two backends.
//
//   "rtl"   (device_rtl.h, library tpu_device_rtl_n<N>): the Verilated chip in its SystemC
//           testbench; cycle-accurate, exact performance counters. One per process.
//   "model" (device_model.h, in tpu_driver): the golden functional model of docs/isa.md;
//           bit-exact architectural results, no timing (cycles are an estimate, flagged).
//
// Host memory is a 32-bit byte address space. The host registers buffers in it (at an address
// of its choice, or allocated by the device); only registered buffers can be read or written
// from the host side, and they become the chip's DMA windows (docs/architecture.md,
// WIN_BASE_i / WIN_SIZE_i), so a DMA outside them faults with ERR_HOST_RANGE on both backends.
// The chip has 8 windows: one holds the command buffer, and buffers that touch or overlap
// are merged, so any number of alloc()ed buffers (packed back to back) costs one window. A DMA
// that spans two touching buffers is therefore allowed; ProgramBuilder::set_host_ranges checks
// each access against the individual buffers.
//
// Address map used by the device itself:
//   kArenaBase .. kArenaEnd   alloc() places buffers here, packed, 64-byte aligned
//   kCmdBase .. kCmdEnd       the command buffer run() writes the program to
// register_buffer() accepts any other range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "isa.h"

namespace tpu {

// A registered range of host memory.
struct HostBuffer {
  uint32_t addr = 0;
  uint32_t size = 0;
  std::string name;
  uint64_t end() const { return uint64_t{addr} + size; }
  bool contains(uint64_t a, uint64_t len) const { return a >= addr && a + len <= end(); }
};

// The chip's 64-bit performance counters (docs/architecture.md, COUNTER_0..9).
struct PerfCounters {
  uint64_t cycles = 0;
  uint64_t mxu_busy = 0;
  uint64_t mxu_macs = 0;
  uint64_t weight_stall = 0;
  uint64_t input_stall = 0;
  uint64_t dma_busy = 0;
  uint64_t dma_rd_bytes = 0;
  uint64_t dma_wr_bytes = 0;
  uint64_t instr_retired = 0;
  uint64_t act_busy = 0;

  static constexpr int kCount = 10;
  static const char* name(int i);  // "cycles", "mxu_busy", ... as in architecture.md
  uint64_t get(int i) const;
  void set(int i, uint64_t v);
};

// What a run cost.
struct RunStats {
  uint64_t cycles = 0;            // rtl: the CYCLES counter (START to done); model: estimate
  bool cycles_estimated = false;  // true on the model backend (see device_model.h)
  PerfCounters counters;          // rtl: all exact; model: see ModelDevice
  uint64_t instructions = 0;      // program length
  double wall_seconds = 0;        // host time spent in run()
  // rtl: the simulated cycle, counted from simulation start as RtlOptions::vcd_from / vcd_to
  // (and tpusim's --vcd-window) count, at which the host's START write completed and the run
  // began; the run occupies about [start_cycle, start_cycle + cycles). model: 0 (no timing).
  uint64_t start_cycle = 0;
};

// The unit an instruction occupies (numbered as the chip's trace port, docs/architecture.md
// "Trace port"). nop and sync run on no unit: Control, with no duration.
// Move (acc_to_vmem, transpose), Vector and LoadWeights: the training chip's units. read_vmem
// runs on ReadHost, write_vmem on WriteHost, matmul_bf16 on Matmul.
enum class ExecUnit : uint8_t {
  ReadHost,
  ReadWeights,
  Matmul,
  Activate,
  WriteHost,
  Control,
  Move,
  Vector,
  LoadWeights
};
constexpr int kNumExecUnits = 9;
// "read_host", ..., "write_host", "control", "move", "vector", "load_weights"
std::string_view unit_name(ExecUnit u);

// One issued instruction of a run's timeline (Device::timeline). It occupied its unit during
// cycles [start, end), counted from the run's first cycle (the first the CYCLES counter counts):
// issued to the unit in cycle `start`, finished from cycle `end` on (exact definitions per unit
// in docs/architecture.md "Trace port"). Units finish their instructions in issue order; the
// MXU and the weight DMA can hold more than one at a time, so their events may overlap.
struct InstrEvent {
  uint32_t pc = 0;  // index in the program
  ExecUnit unit = ExecUnit::Control;
  Opcode opcode = Opcode::Nop;
  uint64_t start = 0, end = 0;
  bool complete = true;  // false: abandoned when the run stopped (fault, timeout); end = the stop
};

// How a run ended, for callers that want to handle faults without exceptions.
struct RunOutcome {
  enum class Status { Done, Error, Timeout };
  Status status = Status::Done;
  ErrorCode error = ErrorCode::ERR_NONE;  // when status == Error
  uint32_t pc = 0;                        // ERR_PC, when status == Error
  std::string message;                    // one line, when status != Done
  // One snapshot of the counters at the stop: cycles == counters.cycles on rtl (a timeout
  // stops the chip with SOFT_RESET first, so cycles may exceed max_cycles by a few).
  RunStats stats;
  bool done() const { return status == Status::Done; }
};
const char* to_string(RunOutcome::Status s);  // "done", "error", "timeout"

// Base of the errors Device reports (misuse of buffers, a broken backend, ...).
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // The run's statistics up to where it stopped (cycles and counters of a chip that faulted or
  // timed out), when the error comes from a run.
  const RunStats* stats() const { return stats_ ? &*stats_ : nullptr; }
  void set_stats(const RunStats& s) { stats_ = s; }

 private:
  std::optional<RunStats> stats_;
};

// The chip stopped with STATUS.error. what() is one line:
//   "ERR_UB_RANGE at instruction 3 (read_host ub=8191 rows=2 host=0x00010000): read_host: ..."
class ChipError : public DeviceError {
 public:
  ChipError(ErrorCode code, uint32_t pc, const std::string& what)
      : DeviceError(what), code_(code), pc_(pc) {}
  ErrorCode code() const { return code_; }
  uint32_t pc() const { return pc_; }

 private:
  ErrorCode code_;
  uint32_t pc_;
};

// The run did not finish within max_cycles (a hang, or a limit set too low): its CYCLES counter
// passed max_cycles. A run that halts within max_cycles counted cycles is done. The device has
// been reset and can run again.
class TimeoutError : public DeviceError {
 public:
  TimeoutError(uint64_t max_cycles, const std::string& what)
      : DeviceError(what), max_cycles_(max_cycles) {}
  uint64_t max_cycles() const { return max_cycles_; }

 private:
  uint64_t max_cycles_;
};

class Device {
 public:
  static constexpr uint32_t kArenaBase = 0x8000'0000u;
  static constexpr uint32_t kArenaEnd = 0xF000'0000u;
  static constexpr uint32_t kCmdBase = 0xF000'0000u;
  static constexpr uint32_t kCmdEnd = 0xF100'0000u;  // 16 MiB: 1M instructions
  static constexpr uint64_t kDefaultMaxCycles = 10'000'000;

  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual std::string_view backend() const = 0;  // "rtl" or "model"
  const ChipParams& params() const { return params_; }

  // ---- host buffers
  // Registers [addr, addr + size) under `name`. Throws DeviceError if size is 0, the range
  // leaves the 32-bit space, overlaps another buffer or the device's command area. The
  // contents are whatever host memory holds there (zero unless written before).
  HostBuffer register_buffer(uint32_t addr, uint32_t size, std::string name);
  // Places a new zero-filled buffer in the arena (align: power of two, >= 16).
  HostBuffer alloc(uint32_t size, std::string name, uint32_t align = 64);
  // Unregisters the buffer starting at `addr` (its bytes stay in host memory).
  void release(uint32_t addr);
  void release(const HostBuffer& b) { release(b.addr); }
  void release_all();
  const std::vector<HostBuffer>& buffers() const { return buffers_; }
  // The windows the next run() will program, command buffer of `instructions` included.
  // Throws DeviceError if the buffers need more windows than the chip has.
  DmaWindows dma_windows(size_t instructions) const;

  // ---- host side access to registered buffers; throws DeviceError outside them.
  void write(uint32_t addr, const void* src, size_t len);
  void write(uint32_t addr, const std::vector<uint8_t>& bytes) {
    write(addr, bytes.data(), bytes.size());
  }
  void read(uint32_t addr, void* dst, size_t len);
  std::vector<uint8_t> read(uint32_t addr, size_t len);
  void fill(uint32_t addr, size_t len, uint8_t value);

  // ---- running
  // Writes the program to the command buffer, programs the DMA windows, rings the doorbell
  // and waits for halt. Throws ChipError if the chip faults, TimeoutError after max_cycles.
  RunStats run(const std::vector<Instruction>& program, uint64_t max_cycles = kDefaultMaxCycles);
  // The same, reporting faults and timeouts in the outcome instead of throwing.
  RunOutcome try_run(const std::vector<Instruction>& program,
                     uint64_t max_cycles = kDefaultMaxCycles);

  // ---- instruction timeline
  // Whether this backend can record when each instruction ran: rtl yes (the chip's trace port,
  // cycle-accurate), model no (it has no timing).
  virtual bool has_timeline() const { return false; }
  // Records the timeline of the following runs (off by default; costs some simulation time).
  // Throws DeviceError when switching on a backend without timeline.
  void record_timeline(bool on);
  bool recording_timeline() const { return record_timeline_; }
  // The last run's timeline while recording: one event per issued instruction, in issue order
  // (the final halt is not issued, so it has none). Each run() / try_run() replaces it.
  const std::vector<InstrEvent>& timeline() const { return timeline_; }

 protected:
  Device() = default;
  void set_params(const ChipParams& p) { params_ = p; }

  // Backend hooks. Host memory addresses are already checked.
  virtual void mem_write(uint32_t addr, const void* src, size_t len) = 0;
  virtual void mem_read(uint32_t addr, void* dst, size_t len) = 0;
  struct RawRun {
    RunOutcome::Status status = RunOutcome::Status::Done;
    ErrorCode error = ErrorCode::ERR_NONE;
    uint32_t pc = 0;
    std::string detail;  // backend's own explanation, used when the host cannot explain
    RunStats stats;      // cycles, cycles_estimated, counters
    std::vector<InstrEvent> timeline;  // while recording (opcode is filled in by Device)
  };
  // Switch timeline recording on or off (only called with `on` when has_timeline()).
  virtual void set_timeline_recording(bool /*on*/) {}
  // Program the windows, run `count` instructions at cmd_addr. Must not throw for chip
  // faults or timeouts (report them in RawRun); after a timeout leave the chip reusable.
  virtual RawRun run_raw(uint32_t cmd_addr, uint32_t count, const DmaWindows& windows,
                         uint64_t max_cycles) = 0;

 private:
  const HostBuffer* find_containing(uint64_t addr, uint64_t len) const;
  void check_access(const char* what, uint32_t addr, size_t len) const;
  std::string explain(const std::vector<Instruction>& program, const RawRun& r,
                      const DmaWindows& windows) const;

  ChipParams params_;
  std::vector<HostBuffer> buffers_;  // sorted by address
  uint32_t arena_next_ = kArenaBase;
  bool record_timeline_ = false;
  std::vector<InstrEvent> timeline_;
};

// Writes a program's instructions one per line ("  3: matmul ub=0 ..."), for messages.
std::string listing(const std::vector<Instruction>& program);

// Host buffers allocated for one operation and released whatever happens (also when the
// operation throws); release errors in the destructor are ignored.
class ScopedBuffers {
 public:
  explicit ScopedBuffers(Device& dev) : dev_(dev) {}
  ScopedBuffers(const ScopedBuffers&) = delete;
  ScopedBuffers& operator=(const ScopedBuffers&) = delete;
  ~ScopedBuffers() {
    for (const HostBuffer& hb : list_) {
      try {
        dev_.release(hb);
      } catch (...) {
      }
    }
  }
  const HostBuffer& add(uint64_t size, const char* name) {
    list_.push_back(dev_.alloc(static_cast<uint32_t>(size), name));
    return list_.back();
  }
  const std::vector<HostBuffer>& list() const { return list_; }

 private:
  Device& dev_;
  std::vector<HostBuffer> list_;
};

}  // namespace tpu

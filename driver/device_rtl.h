// SPDX-License-Identifier: Apache-2.0
// The "rtl" backend: Device over the Verilated tpu_core in its SystemC testbench
// (sim/chip.h, tpu::sim::Chip). Cycle-accurate: RunStats::cycles is the chip's CYCLES counter
// and every performance counter is read from the chip.
//
// This header is N-agnostic, but each library tpu_device_rtl_n<N> implements it for the chip
// Verilated with MXU size N, and an executable links exactly one of them. SystemC elaborates
// once per process, so a process can construct ONE RtlDevice, ever (a second one throws
// DeviceError); use separate processes for independent chips (gtest_discover_tests does).
//
// Host memory is the testbench's sparse memory model mapped over the whole 32-bit space; the
// DMA windows (device.h) decide what the chip may touch.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "device.h"

namespace tpu {

struct RtlOptions {
  // Waveform dump (off when empty), of cycles [vcd_from, vcd_to) since simulation start.
  std::string vcd_file;
  uint64_t vcd_from = 0;
  uint64_t vcd_to = std::numeric_limits<uint64_t>::max();
  int trace_depth = 99;
  // Host memory timing and random AXI backpressure (sim/chip.h ChipConfig).
  uint32_t mem_latency_cycles = 10;
  uint32_t mem_bytes_per_cycle = 16;
  // The weight port's own timing (a chip built with one, docs/isa.md "The weight port"):
  // 0 bytes per cycle = one beat per cycle.
  uint32_t weight_port_latency_cycles = 10;
  uint32_t weight_port_bytes_per_cycle = 0;
  double backpressure = 0.0;
  uint64_t seed = 1;
};

class RtlDevice : public Device {
 public:
  // Builds and resets the chip, reads its parameters. Throws DeviceError if a chip already
  // exists in this process or the options are invalid.
  explicit RtlDevice(const RtlOptions& options = {});
  ~RtlDevice() override;

  std::string_view backend() const override { return "rtl"; }
  // The MXU size this library was Verilated for.
  static unsigned compiled_n();
  // VmemRows of that chip: 0 for the int8 chip (tpu_device_rtl_n<N>), else the training chip's
  // (tpu_device_rtl_train_n<N>).
  static unsigned compiled_vmem_rows();
  // The parameters of the chip this library was Verilated for, as RtlDevice::params() reports
  // them (with the memory sizes of the build and, for a training chip, the training opcodes
  // its RTL executes: kRtlTrainingOps).
  static ChipParams compiled_params();
  // The training opcodes the RTL executes (ChipParams::training_ops; rtl/tpu_pkg.sv
  // TrainOpsRtl): all seven.
  static constexpr uint8_t kRtlTrainingOps = 0x7F;
  // False when the chip was built without VCD tracing (-DTPU_SIM_TRACE=OFF).
  static bool compiled_with_vcd();
  // Cycles simulated since the process started (for simulation-speed figures).
  uint64_t simulated_cycles() const;
  void set_backpressure(double probability, uint64_t seed);
  // Fault injection (tests of the error paths above the chip: a training fit, the Python
  // API): host memory answers the chip's AXI accesses that touch [base, base + size) with
  // SLVERR from the next run on, so the instruction faults with ERR_AXI_READ / ERR_AXI_WRITE
  // (docs/isa.md "Errors"); the host's own reads and writes are unaffected. Throws DeviceError
  // if size is 0 or the range passes 2^32.
  void inject_bus_error(uint64_t base, uint64_t size);
  void clear_bus_errors();  // every injected range
  // The instruction timeline comes from the chip's trace port (sim/trace.h), cycle-accurate.
  bool has_timeline() const override { return true; }

 protected:
  void set_timeline_recording(bool on) override;
  void mem_write(uint32_t addr, const void* src, size_t len) override;
  void mem_read(uint32_t addr, void* dst, size_t len) override;
  RawRun run_raw(uint32_t cmd_addr, uint32_t count, const DmaWindows& windows,
                 uint64_t max_cycles) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Opens a device by backend name: "rtl" (an RtlDevice with `rtl` options) or "model" (a
// ModelDevice with the parameters of the chip this library was built for,
// RtlDevice::compiled_params()). Throws DeviceError for another name.
std::unique_ptr<Device> open_device(std::string_view backend, const RtlOptions& rtl = {});

}  // namespace tpu

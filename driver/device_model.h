// SPDX-License-Identifier: Apache-2.0
// The "model" backend: Device over the golden functional model (golden_model.h), written
// from docs/isa.md independently of the RTL and bit-exact with it on every architectural
// result (UB, accumulators, host memory, error code and pc).
//
// The model has no timing. RunStats::cycles_estimated is true and `cycles` is this estimate:
//
//     cycles = max(dma, mxu, act, vpu, dw) + 2*N + 16
//     dma = max((bytes read, 16 per fetched instruction included, + bytes written) / (AXI bytes
//               / 2), read_vmem + write_vmem bytes / ChipParams::vmem_port_bytes,
//               read_weights bytes / ChipParams::weight_port_bytes)
//           (with a VMEM port, read_vmem / write_vmem bytes count only there: one beat of 4N
//           bytes per cycle, docs/architecture.md "The VMEM port"; with a weight port,
//           read_weights bytes likewise: one beat per cycle, isa.md "The weight port")
//     mxu = matmul rows fed,   act = accumulator rows read by activate
//     vpu = VMEM rows the training instructions walk (isa.md "Training configuration": one
//           per cycle): vector element rows / VpuRows (the vector unit's rows per cycle, 4 at
//           N = 4, 8 at N = 16: isa.md "Bandwidth and what the design assumes"), N per
//           transposed block and per loaded bf16 tile, acc_to_vmem rows (0 for int8 programs)
//     dw  = the depthwise unit's busy cycles, DwConv::unit_cycles(ChipParams::dw_width) per
//           dwconv (isa.md "Depthwise configuration", "Cycle cost"; 0 without the unit)
//
// i.e. the busiest unit plus the pipeline fill. DMA moves about half an AXI beat per cycle on
// the simulated chip (one burst in flight, memory latency 10), hence AXI bytes / 2. It ignores
// dependencies between units, so it is usually below the chip's count (e.g. 65.6k against
// 71k cycles for tpusim matmul --m 256 --k 256 --n 256 at N = 16).
// Counters that are exact (equal to the chip's for a run that halts): mxu_busy, mxu_macs,
// dma_wr_bytes, instr_retired. dma_rd_bytes omits the chip's instruction prefetch, act_busy
// counts Ho*Wo*pool_k^2 reads; weight_stall, input_stall and dma_busy are 0.
// max_cycles does not apply: the model cannot hang. It has no instruction timeline
// (has_timeline() is false, record_timeline(true) throws DeviceError).
//
// Host memory is sparse (4 KiB pages on first write), so any buffer placement costs nothing.
#pragma once

#include <memory>

#include "device.h"

namespace tpu {

class ModelDevice : public Device {
 public:
  // Throws std::invalid_argument for invalid params.
  explicit ModelDevice(const ChipParams& params = ChipParams{});
  ~ModelDevice() override;

  std::string_view backend() const override { return "model"; }

 protected:
  void mem_write(uint32_t addr, const void* src, size_t len) override;
  void mem_read(uint32_t addr, void* dst, size_t len) override;
  RawRun run_raw(uint32_t cmd_addr, uint32_t count, const DmaWindows& windows,
                 uint64_t max_cycles) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpu

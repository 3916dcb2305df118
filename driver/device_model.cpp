// SPDX-License-Identifier: Apache-2.0
#include "device_model.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "golden_model.h"
#include "host_memory.h"

namespace tpu {

namespace {

// The whole 32-bit space, zero until written, stored in 4 KiB pages allocated on first write.
class SparseMemory : public HostMemory {
 public:
  bool read(uint64_t addr, size_t len, uint8_t* dst) override {
    if (addr + len > kSpace) return false;
    while (len > 0) {
      const uint64_t off = addr % kPage;
      const size_t n = std::min<uint64_t>(len, kPage - off);
      auto it = pages_.find(addr / kPage);
      if (it == pages_.end()) {
        std::memset(dst, 0, n);
      } else {
        std::memcpy(dst, it->second.get() + off, n);
      }
      addr += n;
      dst += n;
      len -= n;
    }
    return true;
  }
  bool write(uint64_t addr, size_t len, const uint8_t* src) override {
    if (addr + len > kSpace) return false;
    while (len > 0) {
      const uint64_t off = addr % kPage;
      const size_t n = std::min<uint64_t>(len, kPage - off);
      auto& page = pages_[addr / kPage];
      if (!page) {
        page = std::make_unique<uint8_t[]>(kPage);
        std::memset(page.get(), 0, kPage);
      }
      std::memcpy(page.get() + off, src, n);
      addr += n;
      src += n;
      len -= n;
    }
    return true;
  }

 private:
  static constexpr uint64_t kPage = 4096;
  static constexpr uint64_t kSpace = uint64_t{1} << 32;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

// Element rows the training chip's vector unit moves per cycle on contiguous tensors:
// rtl/tpu_core.sv's VpuRows default (4 at N = 4, 8 at N = 16, 1 above).
uint64_t vector_rows_per_cycle(uint32_t n) { return n <= 4 ? 4 : n <= 16 ? 8 : 1; }

}  // namespace

struct ModelDevice::Impl {
  SparseMemory memory;
  GoldenModel model;
  explicit Impl(const ChipParams& p) : model(memory, p) {}
};

ModelDevice::ModelDevice(const ChipParams& params) : impl_(std::make_unique<Impl>(params)) {
  set_params(impl_->model.params());
}

ModelDevice::~ModelDevice() = default;

void ModelDevice::mem_write(uint32_t addr, const void* src, size_t len) {
  impl_->memory.write(addr, len, static_cast<const uint8_t*>(src));
}

void ModelDevice::mem_read(uint32_t addr, void* dst, size_t len) {
  impl_->memory.read(addr, len, static_cast<uint8_t*>(dst));
}

Device::RawRun ModelDevice::run_raw(uint32_t cmd_addr, uint32_t count, const DmaWindows& windows,
                                    uint64_t /*max_cycles: the model cannot hang*/) {
  GoldenModel& m = impl_->model;
  m.set_dma_windows(windows);
  const tpu::RunResult r = m.run(cmd_addr, count);

  RawRun out;
  if (!r.done()) {
    out.status = RunOutcome::Status::Error;
    out.error = r.error;
    out.pc = r.err_pc;
    out.detail = r.message;
  }
  // Counters and the cycle estimate (device_model.h) from the instructions that completed.
  const ChipParams& p = params();
  PerfCounters& c = out.stats.counters;
  c.instr_retired = r.retired;
  uint64_t act_rows = 0;
  uint64_t vpu_rows = 0;        // VMEM rows walked by the training instructions
  uint64_t vmem_dma_bytes = 0;  // read_vmem / write_vmem bytes (the VMEM port's)
  uint64_t weight_bytes = 0;    // read_weights bytes (the weight port's, if the chip has one)
  uint64_t dw_cycles = 0;       // the depthwise unit's busy cycles (isa.md "Cycle cost")
  for (uint64_t i = 0; i < r.retired; ++i) {
    InstrBytes word;
    impl_->memory.read(uint64_t{cmd_addr} + i * kInstrBytes, kInstrBytes, word.data());
    const DecodeResult d = decode(word);
    c.dma_rd_bytes += kInstrBytes;
    if (const auto* rh = std::get_if<ReadHost>(&d.instr)) {
      c.dma_rd_bytes += uint64_t{rh->rows} * p.N;
    } else if (const auto* rw = std::get_if<ReadWeights>(&d.instr)) {
      c.dma_rd_bytes += uint64_t{rw->tiles} * p.tile_bytes();
      weight_bytes += uint64_t{rw->tiles} * p.tile_bytes();
    } else if (const auto* wh = std::get_if<WriteHost>(&d.instr)) {
      c.dma_wr_bytes += uint64_t{wh->rows} * p.N;
    } else if (const auto* mm = std::get_if<Matmul>(&d.instr)) {
      c.mxu_busy += uint64_t{mm->inner} * mm->outer;
    } else if (const auto* a = std::get_if<Activate>(&d.instr)) {
      act_rows += a->unit_cycles();
    } else if (const auto* rv = std::get_if<ReadVmem>(&d.instr)) {
      c.dma_rd_bytes += uint64_t{rv->rows} * rv->row_bytes(p.N);
      vmem_dma_bytes += uint64_t{rv->rows} * rv->row_bytes(p.N);
    } else if (const auto* wv = std::get_if<WriteVmem>(&d.instr)) {
      c.dma_wr_bytes += uint64_t{wv->rows} * wv->row_bytes(p.N);
      vmem_dma_bytes += uint64_t{wv->rows} * wv->row_bytes(p.N);
    } else if (const auto* mb = std::get_if<MatmulBf16>(&d.instr)) {
      c.mxu_busy += uint64_t{mb->inner} * mb->outer;
    } else if (const auto* v = std::get_if<Vector>(&d.instr)) {
      const uint64_t per_cycle = vector_rows_per_cycle(p.N);
      vpu_rows += (uint64_t{v->inner} * v->outer + per_cycle - 1) / per_cycle;
    } else if (const auto* t = std::get_if<Transpose>(&d.instr)) {
      vpu_rows += uint64_t{t->blocks} * p.N;
    } else if (const auto* lw = std::get_if<LoadWeights>(&d.instr)) {
      vpu_rows += uint64_t{lw->tiles} * p.N;
    } else if (const auto* av = std::get_if<AccToVmem>(&d.instr)) {
      vpu_rows += av->rows;
    } else if (const auto* dw = std::get_if<DwConv>(&d.instr)) {
      dw_cycles += dw->unit_cycles(p.dw_width);
    }
  }
  c.mxu_macs = c.mxu_busy * p.N * p.N;
  c.act_busy = act_rows;
  const uint64_t rate = std::max<uint64_t>(1, p.axi_width / 16);  // bytes per cycle, see header
  const bool vmem_port = p.vmem_port_bytes != 0;
  const bool weight_port = p.weight_port_bytes != 0;
  const uint64_t port_bytes = c.dma_rd_bytes + c.dma_wr_bytes - (vmem_port ? vmem_dma_bytes : 0) -
                              (weight_port ? weight_bytes : 0);
  const uint64_t vmem_dma =
      vmem_port ? (vmem_dma_bytes + p.vmem_port_bytes - 1) / p.vmem_port_bytes : 0;
  const uint64_t weight_dma =
      weight_port ? (weight_bytes + p.weight_port_bytes - 1) / p.weight_port_bytes : 0;
  const uint64_t dma = std::max({(port_bytes + rate - 1) / rate, vmem_dma, weight_dma});
  c.cycles = std::max({dma, c.mxu_busy, act_rows, vpu_rows, dw_cycles}) + 2 * p.N + 16;
  out.stats.cycles = c.cycles;
  out.stats.cycles_estimated = true;
  return out;
}

}  // namespace tpu

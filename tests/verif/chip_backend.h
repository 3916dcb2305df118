// SPDX-License-Identifier: Apache-2.0
// The Verilated chip (tpu::sim::Chip) behind the verif::Backend interface. Header-only: it is
// compiled into each per-N executable, which links exactly one tpu_sim_n<N>.
#pragma once

#include <cstdint>
#include <vector>

#include "chip.h"
#include "random_program.h"
#include "registers.h"

namespace tpu::verif {

class ChipBackend : public Backend {
 public:
  // Constructs the process's only Chip and maps the shared host memory layout.
  explicit ChipBackend(const sim::ChipConfig& config = {}) : chip_(config) {
    chip_.add_region(kCmdBase, kCmdSize, "cmd");
    chip_.add_region(kDataBase, kDataSize, "data");
    chip_.add_region(kOutBase, kOutSize, "out");
    chip_.add_region(kSpareBase, kSpareSize, "spare");
    chip_.add_region(kDumpBase, kDumpSize, "dump");
    chip_.add_region(kDumpVmemBase, kDumpVmemSize, "dump_vmem");
    chip_.reset();
  }
  const char* name() const override { return "chip"; }
  // Maps more host memory (both backends must map the same).
  void add_region(uint32_t base, uint32_t size) { chip_.add_region(base, size, "extra"); }
  sim::Chip& chip() { return chip_; }
  // A run that does not end within this many cycles counts as a hang.
  uint64_t max_cycles = 5'000'000;

  Outcome run(const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& memory,
              const RunConfig& config, const std::vector<Instruction>& program) override {
    chip_.clear_injected_errors();
    zero(kDataBase, kDataSize);
    zero(kOutBase, kOutSize);
    zero(kSpareBase, kSpareSize);
    zero(kDumpBase, kDumpSize);
    if (config.vmem_dump) zero(kDumpVmemBase, kDumpVmemSize);
    if (config.high_region && !high_mapped_) {  // mapped at the first long-mix case only
      chip_.add_region(kHighBase, kHighSize, "high");
      high_mapped_ = true;
    }
    if (config.high_region) zero(kHighBase, kHighSize);
    for (const auto& [addr, bytes] : memory) chip_.write_mem(addr, bytes);
    chip_.write_mem(kCmdBase, encode_program(program));
    chip_.set_memory_timing(config.mem_latency, config.mem_bytes_per_cycle);
    chip_.set_backpressure(config.backpressure, config.backpressure_seed);
    for (int i = 0; i < kNumDmaWindows; ++i) {
      const DmaWindow& w = config.windows[size_t(i)];
      if (w.size == 0 && windows_[size_t(i)].size == 0) continue;  // already disabled
      chip_.write_reg(sim::reg::win_base(unsigned(i)), w.base);
      chip_.write_reg(sim::reg::win_size(unsigned(i)), w.size);
    }
    windows_ = config.windows;
    for (const auto& r : config.slverr) chip_.inject_error(r.base, r.size);
    chip_.start(kCmdBase, uint32_t(program.size()));
    const sim::RunResult r = chip_.run(max_cycles);
    Outcome o;
    if (r.reason == sim::StopReason::kCycleLimit || r.reason == sim::StopReason::kIrq) {
      o.hung = true;
      chip_.reset();
      windows_ = DmaWindows{};
      for (auto& w : windows_) w.size = 1;  // unknown after reset: rewrite them next run
    } else {
      o.done = r.reason == sim::StopReason::kDone;
      o.err_code = o.done ? 0 : r.err_code;
      o.err_pc = o.done ? 0 : r.err_pc;
      o.retired = chip_.counter(8);  // INSTR_RETIRED
      const sim::Counters k = chip_.counters();
      o.counters.valid = true;
      o.counters.mxu_busy = k.mxu_busy;
      o.counters.mxu_macs = k.mxu_macs;
      o.counters.act_busy = k.act_busy;
      o.counters.dma_rd_bytes = k.dma_rd_bytes;
      o.counters.dma_wr_bytes = k.dma_wr_bytes;
    }
    chip_.clear_injected_errors();
    o.data = chip_.read_mem(kDataBase, kDataSize);
    o.out = chip_.read_mem(kOutBase, kOutSize);
    o.dump = chip_.read_mem(kDumpBase, kDumpSize);
    if (config.vmem_dump) o.vmem = chip_.read_mem(kDumpVmemBase, kDumpVmemSize);
    if (config.high_region) o.high = chip_.read_mem(kHighBase, kHighSize);
    return o;
  }

 private:
  void zero(uint32_t base, uint32_t size) {
    if (zeros_.size() < size) zeros_.assign(size, 0);
    chip_.write_mem(base, zeros_.data(), size);
  }
  sim::Chip chip_;
  DmaWindows windows_{};
  bool high_mapped_ = false;  // kHigh (RunConfig::high_region)
  std::vector<uint8_t> zeros_;
};

}  // namespace tpu::verif

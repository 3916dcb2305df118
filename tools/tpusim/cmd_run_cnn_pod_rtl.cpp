// SPDX-License-Identifier: Apache-2.0
// `tpusim run-cnn --chips P --backend rtl`: the RTL pod (sim/pod_rtl.h, tpu_pod_rtl_n<N>) as
// run-cnn's InferencePod, linked into tpusim_train_n<N> (tools/tpusim/CMakeLists.txt). Each
// chip's device memory is the pod's host memory of that chip; the programs are placed after the
// mapped data. Cycles are the RTL's (START to the last chip's halt).
#include "cmd_run_cnn_pod_rtl.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "pod_rtl.h"

namespace {

constexpr uint64_t kCodeBytes = uint64_t{16} << 20;  // the programs' area after the data
constexpr uint64_t kPageBytes = 4096;
constexpr uint64_t kDefaultCycleLimit = uint64_t{1} << 32;

class RtlInferencePod : public tpu::cnn::InferencePod {
 public:
  RtlInferencePod(const tpu::PodTopology& topo, const tpu::LinkTiming& timing)
      : topo_(topo), timing_(timing), params_(tpu::sim::PodRtl::params()) {
    if (topo.links_needed() > params_.ici_links)
      throw std::invalid_argument(
          "the topology " + topo.name() + " needs " + std::to_string(topo.links_needed()) +
          " links per chip; the RTL pod's chips have " + std::to_string(params_.ici_links));
    if (timing.latency == 0)
      throw std::invalid_argument("the RTL pod's link latency must be >= 1 cycle");
  }
  const tpu::PodTopology& topology() const override { return topo_; }
  const tpu::ChipParams& params() const override { return params_; }
  std::string backend() const override { return "rtl"; }
  bool cycles_estimated() const override { return false; }

  void map(uint32_t base, uint32_t bytes) override {
    base_ = base;
    bytes_ = (uint64_t{bytes} + kPageBytes - 1) / kPageBytes * kPageBytes;
    rtl_ = std::make_unique<tpu::sim::PodRtl>(topo_, timing_.latency, bytes_ + kCodeBytes, base);
  }
  void load(uint32_t chip, uint32_t addr, const std::vector<uint8_t>& bytes) override {
    std::memcpy(host(chip, addr, bytes.size()), bytes.data(), bytes.size());
  }
  std::vector<uint8_t> dump(uint32_t chip, uint32_t addr, size_t bytes) override {
    const uint8_t* p = host(chip, addr, bytes);
    return std::vector<uint8_t>(p, p + bytes);
  }

  Run run(const std::vector<std::vector<tpu::Instruction>>& programs, uint64_t max_cycles,
          const std::string& what) override {
    if (!rtl_) throw std::logic_error("the RTL pod: map() before run()");
    const auto t0 = std::chrono::steady_clock::now();
    const tpu::sim::PodRtlResult res =
        rtl_->run(programs, max_cycles ? max_cycles : kDefaultCycleLimit, uint32_t(base_ + bytes_));
    Run r;
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string in = "the RTL pod, in the " + what + " programs: ";
    if (res.status != tpu::sim::PodRtlStatus::Stopped) throw std::runtime_error(in + res.message);
    for (uint32_t c = 0; c < res.chips.size(); ++c) {
      const tpu::sim::PodRtlChipOutcome& o = res.chips[c];
      if (!o.done)
        throw std::runtime_error(
            in + "chip " + std::to_string(c) + " faulted " +
            std::string(tpu::error_name(static_cast<tpu::ErrorCode>(o.err_code))) +
            " at instruction " + std::to_string(o.err_pc) + " (cycle " + std::to_string(o.cycles) +
            ")");
      r.chip_cycles.push_back(o.cycles);
    }
    r.cycles = res.cycles;
    r.link_bytes = res.link_beats * (tpu::sim::PodRtl::ici_width_bits() / 8);
    return r;
  }

 private:
  uint8_t* host(uint32_t chip, uint64_t addr, size_t bytes) {
    if (!rtl_) throw std::logic_error("the RTL pod: map() first");
    if (addr < base_ || addr - base_ + bytes > bytes_)
      throw std::out_of_range("the RTL pod: " + std::to_string(bytes) + " bytes at " +
                              std::to_string(addr) + " are outside the mapped device memory");
    return rtl_->memory(chip).data() + (addr - base_);
  }

  tpu::PodTopology topo_;
  tpu::LinkTiming timing_;
  tpu::ChipParams params_;
  std::unique_ptr<tpu::sim::PodRtl> rtl_;
  uint64_t base_ = 0, bytes_ = 0;
};

std::unique_ptr<tpu::cnn::InferencePod> make(const tpu::PodTopology& topo,
                                             const tpu::LinkTiming& timing) {
  return std::make_unique<RtlInferencePod>(topo, timing);
}

const tpusim::RunCnnPodRtl kPod{&tpu::sim::PodRtl::params, tpu::sim::PodRtl::ici_width_bits() / 8,
                                &make};

[[maybe_unused]] const bool registered = (tpusim::run_cnn_pod_rtl() = &kPod, true);

}  // namespace

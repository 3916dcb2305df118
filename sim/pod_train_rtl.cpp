// SPDX-License-Identifier: Apache-2.0
// The RTL pod as a PodTrainer's pod, checked against the golden pod (sim/pod_train_rtl.h).
#include "pod_train_rtl.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "pod_rtl.h"

namespace tpu::sim {
namespace {

constexpr uint64_t kCodeBytes = uint64_t{16} << 20;  // the programs' area after the data
constexpr uint64_t kPageBytes = 4096;
constexpr uint64_t kMinCycleLimit = 1000000;  // + 8x the golden estimate
constexpr uint64_t kCycleLimitFactor = 8;
constexpr uint64_t kNoGoldenCycleLimit = uint64_t{1} << 40;  // the fabric still ends deadlocks

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

class RtlPod : public train::PodBackend {
 public:
  RtlPod(const ChipParams& chip, const PodTopology& topo, const LinkTiming& timing, bool golden,
         std::shared_ptr<PodTrainRtlCheck> check, std::shared_ptr<PodTransport> transport)
      : topo_(topo), timing_(timing), check_(std::move(check)), transport_(std::move(transport)) {
    check_pod_rtl_fits(chip, topo, timing);
    if (golden) golden_ = std::make_unique<PodModel>(topo, chip, timing);
    check_->golden = golden;
  }

  void map(uint32_t base, uint32_t bytes) override {
    base_ = base;
    bytes_ = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    rtl_ = transport_ ? std::make_unique<PodRtl>(topo_, timing_.latency, transport_,
                                                 bytes_ + kCodeBytes, base)
                      : std::make_unique<PodRtl>(topo_, timing_.latency, bytes_ + kCodeBytes, base);
    if (!golden_) return;
    for (uint32_t r = 0; r < topo_.chips(); ++r) {
      golden_->memory(r).add_region(base, bytes_);
      golden_->chip(r).set_dma_window(0, base, bytes_);
    }
  }

  void load(uint32_t chip, uint32_t addr, const std::vector<uint8_t>& bytes) override {
    uint8_t* p = host(chip, addr, bytes.size(), "load");
    if (p != nullptr) std::memcpy(p, bytes.data(), bytes.size());
    if (golden_) golden_->memory(chip).load(addr, bytes);
  }

  std::vector<uint8_t> dump(uint32_t chip, uint32_t addr, size_t bytes) override {
    const uint8_t* p = host(chip, addr, bytes, "dump");
    std::vector<uint8_t> out =
        p != nullptr ? std::vector<uint8_t>(p, p + bytes) : std::vector<uint8_t>();
    if (transport_) {  // from the rank that simulates the chip, to every rank
      const std::vector<std::string> from = transport_->exchange(std::vector<std::string>(
          transport_->ranks(), p != nullptr ? std::string(out.begin(), out.end()) : std::string()));
      const std::string& theirs = from.at(pod_rank_of(chip, topo_.chips(), transport_->ranks()));
      if (theirs.size() != bytes) throw std::runtime_error("the RTL pod: a short read from a rank");
      out.assign(theirs.begin(), theirs.end());
    }
    if (golden_) {
      compare(chip, addr, out, golden_->memory(chip).dump(addr, bytes),
              "a read of " + std::to_string(bytes) + " bytes");
    }
    return out;
  }

  train::PodRunFigures run(const std::vector<std::vector<Instruction>>& programs,
                           const char* what) override {
    if (!rtl_) throw std::logic_error("the RTL pod: map() before run()");
    ++check_->runs;
    std::optional<PodResult> g;
    if (golden_) {
      g = golden_->run(programs);
      check_->golden_cycles += g->cycles;
      if (check_->step > 0 && std::string(what) != "forward") {
        if (check_->golden_step_cycles.size() < check_->step)
          check_->golden_step_cycles.resize(check_->step, 0);
        check_->golden_step_cycles[check_->step - 1] += g->cycles;
      }
    }
    const uint64_t limit =
        g ? std::max(kMinCycleLimit, kCycleLimitFactor * g->cycles) : kNoGoldenCycleLimit;
    const auto t0 = std::chrono::steady_clock::now();
    const PodRtlResult res = rtl_->run(programs, limit, code_addr());
    check_->sim_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_->rtl_cycles += res.cycles;
    check_outcome(res, g ? &*g : nullptr, what);
    if (golden_) {
      for (uint32_t r = 0; r < topo_.chips(); ++r) {
        if (!rtl_->local(r)) continue;  // its rank compares it
        compare(r, base_, rtl_->memory(r), golden_->memory(r).dump(base_, bytes_),
                std::string("the device memory after the ") + what + " program");
      }
      if (transport_) share_mismatch();
    }
    train::PodRunFigures f;
    f.cycles = res.cycles;
    f.link_busy_cycles = res.link_beats;  // a beat is one cycle of one link direction
    f.link_bytes = res.link_beats * (PodRtl::ici_width_bits() / 8);
    return f;
  }

 private:
  uint32_t code_addr() const { return static_cast<uint32_t>(base_ + bytes_); }

  uint8_t* host(uint32_t chip, uint64_t addr, size_t bytes, const char* what) {
    if (!rtl_) throw std::logic_error("the RTL pod: map() first");
    if (addr < base_ || addr - base_ + bytes > bytes_) {
      throw std::out_of_range(std::string("the RTL pod: ") + what + " of " + std::to_string(bytes) +
                              " bytes at " + hex(addr) + " outside the mapped device memory");
    }
    if (!rtl_->local(chip)) return nullptr;  // another rank simulates it
    return rtl_->memory(chip).data() + (addr - base_);
  }

  // Faults, the cycle limit, a chip leaving its memory: named errors; an outcome that differs
  // from the golden pod's too.
  void check_outcome(const PodRtlResult& res, const PodResult* g, const char* what) {
    const std::string in = std::string(" in the ") + what + " program";
    if (res.status != PodRtlStatus::Stopped)
      throw std::runtime_error("the RTL pod" + in + ": " + res.message);
    for (uint32_t r = 0; r < res.chips.size(); ++r) {
      const PodRtlChipOutcome& c = res.chips[r];
      if (c.done && (!g || g->chips[r].done())) continue;
      std::string msg = "the RTL pod" + in + ": chip " + std::to_string(r);
      if (!c.done) {
        msg += " faulted " + std::string(error_name(static_cast<ErrorCode>(c.err_code))) +
               " at instruction " + std::to_string(c.err_pc) + " (cycle " +
               std::to_string(c.cycles) + ")";
      } else {
        msg += " halted";
      }
      if (g) {
        msg += "; the golden pod's chip " + std::to_string(r) + ": " +
               (g->chips[r].done() ? "halted" : g->chips[r].message);
        if (check_->matches && c.done != g->chips[r].done()) mismatch(msg);
      }
      throw std::runtime_error(msg);
    }
  }

  void compare(uint32_t chip, uint64_t addr, const std::vector<uint8_t>& rtl,
               const std::vector<uint8_t>& golden, const std::string& what) {
    if (!check_->matches) return;  // the first difference is the one reported
    const size_t n = std::min(rtl.size(), golden.size());
    const auto at =
        std::mismatch(rtl.begin(), rtl.begin() + static_cast<std::ptrdiff_t>(n), golden.begin());
    if (at.first == rtl.begin() + static_cast<std::ptrdiff_t>(n)) return;
    const size_t i = static_cast<size_t>(at.first - rtl.begin());
    mismatch("chip " + std::to_string(chip) + ", " + what + ": byte at " + hex(addr + i) + " is " +
             hex(rtl[i]) + " on the RTL pod, " + hex(golden[i]) + " on the golden pod");
  }

  // Distributed: the first rank's difference (if any) becomes every rank's.
  void share_mismatch() {
    const std::string mine = check_->matches ? std::string() : check_->mismatch;
    const std::vector<std::string> from =
        transport_->exchange(std::vector<std::string>(transport_->ranks(), mine));
    if (!check_->matches) return;
    for (const std::string& m : from) {
      if (m.empty()) continue;
      mismatch(m);
      return;
    }
  }

  void mismatch(const std::string& what) {
    check_->matches = false;
    check_->mismatch_step = check_->step;
    check_->mismatch = what;
  }

  PodTopology topo_;
  LinkTiming timing_;
  std::shared_ptr<PodTrainRtlCheck> check_;
  std::shared_ptr<PodTransport> transport_;  // null: the whole pod in this process
  std::unique_ptr<PodModel> golden_;
  std::unique_ptr<PodRtl> rtl_;
  uint32_t base_ = 0, bytes_ = 0;
};

}  // namespace

void check_pod_rtl_fits(const ChipParams& chip, const PodTopology& topo, const LinkTiming& timing) {
  const ChipParams p = PodRtl::params();
  const std::string built = " (the RTL pod's chip is built with N = " + std::to_string(p.N) +
                            ", VmemRows " + std::to_string(p.vmem_rows) + ", UbRows " +
                            std::to_string(p.ub_rows) + ", AccRows " + std::to_string(p.acc_rows) +
                            ", IciLinks " + std::to_string(p.ici_links) + ")";
  auto field = [&](const char* name, uint64_t want, uint64_t have) {
    if (want != have)
      throw std::invalid_argument(std::string("the chip's ") + name + " is " +
                                  std::to_string(want) + ", not the RTL pod's " +
                                  std::to_string(have) + built);
  };
  field("N", chip.N, p.N);
  field("VMEM rows", chip.vmem_rows, p.vmem_rows);
  field("unified-buffer rows", chip.ub_rows, p.ub_rows);
  field("accumulator rows", chip.acc_rows, p.acc_rows);
  if (topo.links_needed() > p.ici_links || chip.ici_links > p.ici_links)
    throw std::invalid_argument("the topology " + topo.name() + " needs " +
                                std::to_string(topo.links_needed()) + " links per chip" + built);
  const uint32_t bpc = PodRtl::ici_width_bits() / 8;
  if (timing.bytes_per_cycle != bpc)
    throw std::invalid_argument("the RTL pod's links are " + std::to_string(bpc) +
                                " bytes per cycle (IciWidth " +
                                std::to_string(PodRtl::ici_width_bits()) + ", built in), not " +
                                std::to_string(timing.bytes_per_cycle));
  if (timing.latency == 0)
    throw std::invalid_argument("the RTL pod's link latency must be >= 1 cycle");
}

train::PodBackendMaker pod_rtl_backend(bool golden, std::shared_ptr<PodTrainRtlCheck> check) {
  return pod_rtl_backend(golden, std::move(check), nullptr);
}

train::PodBackendMaker pod_rtl_backend(bool golden, std::shared_ptr<PodTrainRtlCheck> check,
                                       std::shared_ptr<PodTransport> transport) {
  return
      [golden, check, transport](const ChipParams& chip, const PodTopology& topo,
                                 const LinkTiming& timing) -> std::unique_ptr<train::PodBackend> {
        return std::make_unique<RtlPod>(chip, topo, timing, golden, check, transport);
      };
}

}  // namespace tpu::sim

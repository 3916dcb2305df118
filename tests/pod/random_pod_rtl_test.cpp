// SPDX-License-Identifier: Apache-2.0
// Random multi-chip link programs on the RTL pod (sim/pod_rtl.h, N = 4) against the pod of
// golden models (issue 31): rings of 2, 3 and 4 chips and the torus 2x2, random link latency.
// Each program is a random global order of transfers on connected links (each chip's program
// is its part of that order, so the pod never deadlocks by itself: the oldest unfinished
// transfer can always start), each transfer 1..8 rows from random VMEM rows, copied or reduced
// (fp32 / int32 add) into random rows, with VMEM-port DMA (read_vmem / write_vmem of random rows),
// vector instructions, transposes and sync mixed in, so the link instructions meet the chip's
// row hazards against every VMEM client. A quarter of the
// programs inject a fault: one chip syncs (its link instructions done) and then faults (a DMA
// outside its host window), and its neighbours end with ERR_ICI_DEADLOCK. Compared bit for bit:
// every chip's outcome (done, or ERR_CODE and ERR_PC), the host bytes it wrote and its final VMEM.
// The RTL's assertions are on in every program (a firing assertion stops the process).
//
// TPU_POD_RANDOM_COUNT (programs per topology, default 75: 300 in all) and
// TPU_POD_RANDOM_FIRST (first seed) set the run; the `slow` test runs more.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "pod_rtl_harness.h"

namespace {

using namespace pod_rtl_test;  // NOLINT(build/namespaces)

constexpr uint32_t kRows = 64;      // VMEM rows the programs use
constexpr uint32_t kMaxMsg = 8;     // rows per message
constexpr uint32_t kRowBytes = 16;  // 4 N

uint32_t env_count(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

uint32_t rnd(std::mt19937& rng, uint32_t n) { return static_cast<uint32_t>(rng() % n); }

// Now and then a local instruction on a chip: VMEM-port DMA of random rows, a sync, an
// element-wise vector instruction (fp32 / int32 / bitwise; in place or into rows apart from its
// operands) or an N x N transpose.
void local_op(tpu::ProgramBuilder& b, std::mt19937& rng) {
  const uint32_t rows = 1 + rnd(rng, 16);
  const uint32_t row = rnd(rng, kRows - rows + 1);
  static const tpu::VecFunc kFuncs[] = {tpu::VecFunc::FAdd, tpu::VecFunc::FMul, tpu::VecFunc::FMax,
                                        tpu::VecFunc::IAdd, tpu::VecFunc::Xor,  tpu::VecFunc::FLt};
  const uint32_t n = chip_params().N;
  switch (rnd(rng, 5)) {
    case 0:
      b.read_vmem(row, rows, kData + kRowBytes * rnd(rng, kRows - rows + 1));
      break;
    case 1:
      b.write_vmem(row, rows, kOut + kRowBytes * (kRows + rnd(rng, 2 * kRows)));
      break;
    case 2: {  // a in [0, 20), b in [22, 42), dst = a or in [44, 64)
      const uint32_t r = 1 + rnd(rng, 8);
      const uint32_t a = rnd(rng, 20 - r + 1), bb = 22 + rnd(rng, 20 - r + 1);
      const uint32_t dst = rnd(rng, 2) == 0 ? a : 44 + rnd(rng, 20 - r + 1);
      b.vop(kFuncs[rnd(rng, 6)], dst, a, bb, r);
      break;
    }
    case 3: {  // one N x N block from the lower half to the upper half, or back
      const uint32_t lo = n * rnd(rng, kRows / 2 / n), hi = kRows / 2 + n * rnd(rng, kRows / 2 / n);
      if (rnd(rng, 2) == 0) {
        b.transpose(lo, hi, 1);
      } else {
        b.transpose(hi, lo, 1);
      }
      break;
    }
    default:
      b.sync();
      break;
  }
}

struct Case {
  std::vector<std::vector<tpu::Instruction>> programs;
  std::vector<std::vector<uint8_t>> data;
  uint32_t latency = 1;
  bool fault = false;
};

Case random_case(const tpu::PodTopology& topo, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.latency = 1 + rnd(rng, 24);
  const uint32_t chips = topo.chips();
  std::vector<tpu::ProgramBuilder> b(chips, tpu::ProgramBuilder(chip_params()));
  for (uint32_t r = 0; r < chips; ++r) {
    c.data.push_back(random_rows(rng, kRows));
    b[r].read_vmem(0, kRows, kData);
  }
  c.fault = rnd(rng, 4) == 0;
  const uint32_t faulty = rnd(rng, chips);
  const uint32_t transfers = 6 + rnd(rng, 24);
  const uint32_t fault_at = rnd(rng, transfers);
  const tpu::IciReduce kReduce[] = {tpu::IciReduce::None, tpu::IciReduce::FAdd,
                                    tpu::IciReduce::IAdd};
  for (uint32_t t = 0; t < transfers; ++t) {
    if (c.fault && t == fault_at) {
      // sync: the chip's link instructions are done; then a DMA outside the window faults.
      b[faulty].sync().read_vmem(0, 1, 4 * kMemSize);
    }
    uint32_t src = 0, link = 0;
    std::optional<tpu::PodTopology::End> dst;
    do {
      src = rnd(rng, chips);
      link = rnd(rng, topo.links_needed());
      dst = topo.peer(src, link);
    } while (!dst);
    const uint32_t rows = 1 + rnd(rng, kMaxMsg);
    b[src].ici_send(link, rnd(rng, kRows - rows + 1), rows);
    b[dst->chip].ici_recv(dst->link, rnd(rng, kRows - rows + 1), rows, kReduce[rnd(rng, 3)]);
    if (rnd(rng, 4) == 0) local_op(b[rnd(rng, chips)], rng);
  }
  for (uint32_t r = 0; r < chips; ++r) {
    b[r].write_vmem(0, kRows, kOut);
    c.programs.push_back(b[r].finish());
  }
  return c;
}

// Runs `count` random programs on the topology from seed `first`; reports how many ran clean
// (every chip halted) and how many with the injected fault.
void run_random(const tpu::PodTopology& topo, uint32_t first) {
  const uint32_t count = env_count("TPU_POD_RANDOM_COUNT", 75);
  first += env_count("TPU_POD_RANDOM_FIRST", 0);
  uint32_t clean = 0, faulted = 0;
  for (uint32_t s = first; s < first + count && !::testing::Test::HasFailure(); ++s) {
    const Case c = random_case(topo, s);
    const std::string what = topo.name() + " " + std::to_string(topo.chips()) + " chips, seed " +
                             std::to_string(s) + ", latency " + std::to_string(c.latency);
    if (std::getenv("TPU_POD_VERBOSE") != nullptr) {
      std::printf("%s%s\n", what.c_str(), c.fault ? ", fault injected" : "");
      for (uint32_t r = 0; r < topo.chips(); ++r) {
        for (size_t i = 0; i < c.programs[r].size(); ++i) {
          std::printf("  chip %u %3zu: %s\n", r, i, tpu::disassemble(c.programs[r][i]).c_str());
        }
      }
    }
    // The RTL's assertions are on in every program, injected faults included.
    const tpu::sim::PodRtlResult res = run_both(topo, c.latency, c.programs, c.data, what, kRows);
    if (res.ok()) {
      ++clean;
    } else {
      ++faulted;
      EXPECT_TRUE(c.fault) << what << ": a chip faulted without an injected fault";
    }
  }
  std::printf("%s (%u chips): %u programs, %u clean, %u with an injected fault\n",
              topo.name().c_str(), topo.chips(), clean + faulted, clean, faulted);
}

TEST(RandomPodRtl, Ring2) { run_random(tpu::PodTopology::ring(2), 1000); }
TEST(RandomPodRtl, Ring3) { run_random(tpu::PodTopology::ring(3), 2000); }
TEST(RandomPodRtl, Ring4) { run_random(tpu::PodTopology::ring(4), 3000); }
TEST(RandomPodRtl, Torus2x2) { run_random(tpu::PodTopology::torus(2, 2), 4000); }

}  // namespace

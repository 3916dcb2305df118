// SPDX-License-Identifier: Apache-2.0
// Whole Verilated chips joined by links (issue 31) through the RTL pod library
// (sim/pod_rtl.h: tpu_core with IciLinks = 4, N = 4, VmemRows = 32768, IciWidth = 128, several
// instances in one process, each with its own host memory on m_axi / m_vaxi, links joined by
// sim/ici_fabric.h with latency, the deadlock rule driving ici_deadlock_i). Every program is a
// whole chip program (read_vmem, link instructions, write_vmem, halt) fetched over AXI; the
// outcome (done or error code and index) and the host bytes the chips wrote are compared with
// the pod of golden models (driver/pod.h) bit for bit. This checks the link unit's wiring in
// the chip: the decoder, the controller's issue and hazards (a write_vmem of the rows a receive
// writes waits for it), the VMEM clients, the errors. Label pod.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pod.h"
#include "pod_rtl.h"
#include "program.h"

namespace {

constexpr uint32_t kMemSize = 64 * 1024;  // host memory of each chip, from address 0
constexpr uint32_t kData = 0x1000;        // input rows
constexpr uint32_t kOut = 0x6000;         // rows written back
constexpr uint32_t kOutSize = 0x4000;
constexpr uint64_t kCycleLimit = 200000;

// Register offsets (docs/registers.csv).
constexpr uint32_t kParamIciLinks = 0x038, kIciLinkUp = 0x03C;

using tpu::sim::PodRtl;

tpu::ChipParams chip_params() { return PodRtl::params(); }
const uint32_t N = chip_params().N;

// Random fp32 bit patterns with corner values mixed in.
std::vector<uint8_t> random_rows(std::mt19937& rng, uint32_t rows) {
  static const uint32_t kCorners[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                      0x7FC00001u, 0x00000001u, 0x7F7FFFFFu, 0x3F800000u};
  std::vector<uint8_t> bytes(size_t{rows} * 4 * N);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t v = static_cast<uint32_t>(rng());
    if (rng() % 8 == 0)
      v = kCorners[rng() % 8];
    else if (rng() % 2 == 0)
      v = (v & 0x807FFFFFu) | (uint32_t(120 + rng() % 16) << 23);
    std::memcpy(&bytes[i], &v, 4);
  }
  return bytes;
}

// Runs the programs on the Verilated pod and on the pod of golden models (same host images)
// and compares the outcome of every chip and its output bytes. Returns the RTL's result.
tpu::sim::PodRtlResult run_both(const tpu::PodTopology& topo, uint32_t latency,
                                const std::vector<std::vector<tpu::Instruction>>& programs,
                                const std::vector<std::vector<uint8_t>>& data,
                                const std::string& what) {
  const uint32_t chips = topo.chips();
  PodRtl rtl(topo, latency, kMemSize);
  tpu::LinkTiming timing;
  timing.bytes_per_cycle = PodRtl::ici_width_bits() / 8;
  timing.latency = latency;
  tpu::PodModel model(topo, chip_params(), timing);
  for (uint32_t r = 0; r < chips; ++r) {
    uint32_t up = 0;
    for (uint32_t l = 0; l < chip_params().ici_links; ++l) up |= topo.peer(r, l) ? 1u << l : 0u;
    EXPECT_EQ(rtl.read_reg(r, kParamIciLinks), chip_params().ici_links);
    EXPECT_EQ(rtl.read_reg(r, kIciLinkUp), up);
    std::memcpy(&rtl.memory(r)[kData], data[r].data(), data[r].size());
    model.memory(r).add_region(0, kMemSize);
    model.memory(r).load(kData, data[r]);
    model.chip(r).set_dma_window(0, 0, kMemSize);
  }
  const tpu::sim::PodRtlResult res = rtl.run(programs, kCycleLimit);
  EXPECT_EQ(res.status, tpu::sim::PodRtlStatus::Stopped) << what << ": " << res.message;
  const tpu::PodResult gold = model.run(programs);
  for (uint32_t r = 0; r < chips; ++r) {
    const tpu::sim::PodRtlChipOutcome& o = res.chips[r];
    const tpu::RunResult& g = gold.chips[r];
    EXPECT_EQ(o.done, g.done()) << what << ": chip " << r << ": golden " << g.message
                                << "; chip ERR_CODE " << o.err_code << " ERR_PC " << o.err_pc
                                << " after " << o.cycles << " cycles";
    if (!g.done()) {
      EXPECT_EQ(o.err_code, static_cast<uint32_t>(g.error))
          << what << ": chip " << r << ": " << g.message;
      EXPECT_EQ(o.err_pc, g.err_pc) << what << ": chip " << r;
    }
    const std::vector<uint8_t> want = model.memory(r).dump(kOut, kOutSize);
    const std::vector<uint8_t> got(rtl.memory(r).begin() + kOut,
                                   rtl.memory(r).begin() + kOut + kOutSize);
    size_t first = 0;
    while (first < want.size() && want[first] == got[first]) ++first;
    EXPECT_TRUE(want == got) << what << ": chip " << r << ": output bytes differ from byte "
                             << first << " (model " << int(first < want.size() ? want[first] : 0)
                             << ", chip " << int(first < got.size() ? got[first] : 0) << ")";
  }
  return res;
}

tpu::sim::PodRtlResult run_both(uint32_t chips, uint32_t latency,
                                const std::vector<std::vector<tpu::Instruction>>& programs,
                                const std::vector<std::vector<uint8_t>>& data,
                                const std::string& what) {
  return run_both(tpu::PodTopology::ring(chips), latency, programs, data, what);
}

// One step of a ring all-reduce on every chip: send my rows to +x, receive -x's rows and
// reduce them into a copy of mine (or copy), then write the result back.
std::vector<tpu::Instruction> ring_step(uint32_t rows, tpu::IciReduce reduce, uint32_t messages) {
  tpu::ProgramBuilder b(chip_params());
  b.read_vmem(0, rows * messages, kData);
  b.read_vmem(128, rows * messages, kData);
  for (uint32_t k = 0; k < messages; ++k) {
    b.ici_send(0, k * rows, rows);
    b.ici_recv(1, 128 + k * rows, rows, reduce);
  }
  b.write_vmem(128, rows * messages, kOut);
  return b.finish();
}

TEST(CorePod, RingOfTwoFaddAllReduceStep) {
  std::mt19937 rng(1);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 16), random_rows(rng, 16)};
  run_both(2, 7, {ring_step(16, tpu::IciReduce::FAdd, 1), ring_step(16, tpu::IciReduce::FAdd, 1)},
           data, "fadd ring 2");
}

TEST(CorePod, RingOfThreeIaddAndCopyInFifoOrder) {
  std::mt19937 rng(2);
  std::vector<std::vector<uint8_t>> data;
  for (int r = 0; r < 3; ++r) data.push_back(random_rows(rng, 30));
  std::vector<std::vector<tpu::Instruction>> iadd, copy;
  for (int r = 0; r < 3; ++r) {
    iadd.push_back(ring_step(10, tpu::IciReduce::IAdd, 3));
    copy.push_back(ring_step(5, tpu::IciReduce::None, 6));
  }
  run_both(3, 3, iadd, data, "iadd ring 3");
  run_both(3, 20, copy, data, "copy ring 3");
}

TEST(CorePod, SizeMismatchFaultsBothEnds) {
  std::mt19937 rng(3);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 8), random_rows(rng, 8)};
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 8, kData).ici_send(0, 0, 4).write_vmem(0, 8, kOut);
  b.read_vmem(0, 8, kData).ici_recv(1, 0, 5).write_vmem(0, 8, kOut);
  run_both(2, 5, {a.finish(), b.finish()}, data, "size mismatch");
}

TEST(CorePod, ReceiveWithNothingSentIsADeadlock) {
  std::mt19937 rng(4);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 4), random_rows(rng, 4)};
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 4, kData).ici_recv(1, 0, 4).write_vmem(0, 4, kOut);
  b.read_vmem(0, 4, kData).ici_recv(1, 8, 2).write_vmem(0, 4, kOut);
  run_both(2, 4, {a.finish(), b.finish()}, data, "deadlock");
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The RTL pod against the pod of golden models (tests/pod core_pod_test and
// random_pod_rtl_test): the same programs and host images on sim/pod_rtl.h's pod of Verilated
// chips and on driver/pod.h's PodModel, every chip's outcome (done, or ERR_CODE and ERR_PC),
// the host bytes it wrote and (optionally) its final VMEM and accumulators compared bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pod.h"
#include "pod_rtl.h"
#include "program.h"

namespace pod_rtl_test {

inline constexpr uint32_t kMemSize = 64 * 1024;  // host memory of each chip, from address 0
inline constexpr uint32_t kData = 0x1000;        // input rows
inline constexpr uint32_t kOut = 0x6000;         // rows written back
inline constexpr uint32_t kOutSize = 0x4000;
inline constexpr uint32_t kVmemDump = 0xC000;  // staging of the final VMEM
inline constexpr uint64_t kCycleLimit = 200000;

// Register offsets (docs/registers.csv).
inline constexpr uint32_t kParamIciLinks = 0x038, kIciLinkUp = 0x03C;

using tpu::sim::PodRtl;

inline tpu::ChipParams chip_params() { return PodRtl::params(); }
inline const uint32_t N = chip_params().N;

// Random fp32 bit patterns with corner values mixed in.
inline std::vector<uint8_t> random_rows(std::mt19937& rng, uint32_t rows) {
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

// Accumulator rows to compare after a run: [first, first + rows).
struct AccRows {
  uint32_t first = 0, rows = 0;
};
inline constexpr uint32_t kAccScratch = 8192;  // VMEM rows the ACC dump passes through

// The RTL chips' accumulator rows `acc` (a run of acc_to_vmem into VMEM rows from kAccScratch
// on every chip, then dump_vmem) against the golden chips' (GoldenModel::acc_row).
inline void compare_acc(PodRtl& rtl, tpu::PodModel& model, const AccRows& acc,
                        const std::string& what) {
  const uint32_t chips = rtl.chips();
  std::vector<std::vector<tpu::Instruction>> dump(chips);
  for (auto& p : dump) {
    tpu::ProgramBuilder b(chip_params());
    b.acc_to_vmem(acc.first, kAccScratch, acc.rows);
    p = b.finish();
  }
  const tpu::sim::PodRtlResult res = rtl.run(dump, kCycleLimit);
  ASSERT_TRUE(res.ok()) << what << ": the ACC dump did not halt: " << res.message;
  const std::vector<std::vector<uint32_t>> lanes = rtl.dump_vmem(kAccScratch, acc.rows, kVmemDump);
  for (uint32_t r = 0; r < chips; ++r) {
    for (uint32_t i = 0; i < acc.rows; ++i) {
      const std::vector<int32_t> want = model.chip(r).acc_row(acc.first + i);
      for (uint32_t j = 0; j < N; ++j) {
        const uint32_t got = lanes[r][size_t{i} * N + j];
        if (static_cast<uint32_t>(want[j]) != got) {
          ADD_FAILURE() << what << ": chip " << r << " ACC row " << acc.first + i << " lane " << j
                        << ": RTL 0x" << std::hex << got << ", golden 0x"
                        << static_cast<uint32_t>(want[j]);
          return;
        }
      }
    }
  }
}

// Runs the programs on the Verilated pod and on the pod of golden models (same host images)
// and compares the outcome of every chip and its output bytes [kOut, kOut + kOutSize), and
// with vmem_rows > 0 its VMEM rows [vmem_base, vmem_base + vmem_rows) afterwards (at most
// (kMemSize - kVmemDump) / 4N rows), and with acc.rows > 0 those accumulator rows. Returns the
// RTL's result. assertions = false switches the RTL's assertions off.
inline tpu::sim::PodRtlResult run_both(const tpu::PodTopology& topo, uint32_t latency,
                                       const std::vector<std::vector<tpu::Instruction>>& programs,
                                       const std::vector<std::vector<uint8_t>>& data,
                                       const std::string& what, uint32_t vmem_rows,
                                       bool assertions = true, AccRows acc = {},
                                       uint32_t vmem_base = 0) {
  const uint32_t chips = topo.chips();
  PodRtl rtl(topo, latency, kMemSize);
  rtl.set_assertions(assertions);
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
  if (res.status != tpu::sim::PodRtlStatus::Stopped) return res;
  // The final VMEM (after a fault too: the dump is a new run of every chip).
  if (vmem_rows > 0) {
    const std::vector<std::vector<uint32_t>> vmem = rtl.dump_vmem(vmem_base, vmem_rows, kVmemDump);
    for (uint32_t r = 0; r < chips; ++r) {
      const std::vector<uint32_t> want = model.chip(r).vmem_rows(vmem_base, vmem_rows);
      for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] != vmem[r][i]) {
          ADD_FAILURE() << what << ": chip " << r << " VMEM row " << vmem_base + i / N << " lane "
                        << i % N << ": RTL 0x" << std::hex << vmem[r][i] << ", golden 0x"
                        << want[i];
          break;
        }
      }
    }
  }
  if (acc.rows > 0) compare_acc(rtl, model, acc, what);
  return res;
}

inline tpu::sim::PodRtlResult run_both(uint32_t chips, uint32_t latency,
                                       const std::vector<std::vector<tpu::Instruction>>& programs,
                                       const std::vector<std::vector<uint8_t>>& data,
                                       const std::string& what, uint32_t vmem_rows = 0) {
  return run_both(tpu::PodTopology::ring(chips), latency, programs, data, what, vmem_rows);
}

}  // namespace pod_rtl_test

// SPDX-License-Identifier: Apache-2.0
// The 2-D reduce-scatter and all-gather (driver/collectives.h) on a torus 2x2 of whole
// Verilated chips (sim/pod_rtl.h, 4 links each) against the pod of golden models
// (pod_rtl_harness.h: every chip's outcome, output bytes and final VMEM bit for bit) and against
// the host references (reference_reduce_scatter / reference_all_gather): fp32 with corner
// values (zeros, infinities, NaNs, subnormals, the largest finite) and int32, even and uneven
// blocks, fewer rows than chips, several latencies. Labels pod, rtl.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives.h"
#include "pod_rtl_harness.h"

namespace {

using namespace pod_rtl_test;  // NOLINT(build/namespaces)

// Chip r's program: its rows in over the VMEM port, the collective (without its halt), the
// rows out.
std::vector<tpu::Instruction> wrapped(const std::vector<tpu::Instruction>& collective,
                                      uint32_t rows) {
  tpu::ProgramBuilder b(chip_params());
  b.read_vmem(0, rows, kData);
  for (size_t i = 0; i + 1 < collective.size(); ++i) b.append(collective[i]);
  b.write_vmem(0, rows, kOut);
  return b.finish();
}

void run_case(tpu::CollectiveKind kind, tpu::CollectiveDtype dtype, uint32_t rows, uint32_t latency,
              uint32_t seed) {
  const tpu::PodTopology topo = tpu::PodTopology::torus(2, 2);
  const std::string what =
      std::string(kind == tpu::CollectiveKind::ReduceScatter ? "reduce-scatter" : "all-gather") +
      " " + std::string(tpu::dtype_name(dtype)) + " rows " + std::to_string(rows) + " latency " +
      std::to_string(latency);
  std::mt19937 rng(seed);
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::vector<uint32_t>> lanes;
  std::vector<std::vector<tpu::Instruction>> programs;
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    data.push_back(random_rows(rng, rows));
    lanes.emplace_back(size_t{rows} * N);
    std::memcpy(lanes.back().data(), data.back().data(), data.back().size());
    programs.push_back(
        wrapped(kind == tpu::CollectiveKind::ReduceScatter
                    ? tpu::reduce_scatter_program(topo, chip_params(), r, 0, rows, dtype)
                    : tpu::all_gather_program(topo, chip_params(), r, 0, rows),
                rows));
  }
  const tpu::sim::PodRtlResult res = run_both(topo, latency, programs, data, what, rows);
  ASSERT_TRUE(res.ok()) << what << ": " << res.message;
  EXPECT_GT(res.link_beats, 0u) << what;
  // The RTL pod's output rows against the host reference (reduce-scatter: the chip's block).
  const std::vector<uint32_t> want = kind == tpu::CollectiveKind::ReduceScatter
                                         ? tpu::reference_reduce_scatter(topo, N, lanes, dtype)
                                         : tpu::reference_all_gather(topo, N, lanes);
  PodRtl rtl(topo, latency, kMemSize);
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    std::memcpy(&rtl.memory(r)[kData], data[r].data(), data[r].size());
  }
  ASSERT_TRUE(rtl.run(programs, kCycleLimit).ok()) << what;
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    std::vector<uint32_t> got(want.size());
    std::memcpy(got.data(), &rtl.memory(r)[kOut], 4 * got.size());
    const tpu::Chunk blk = kind == tpu::CollectiveKind::ReduceScatter
                               ? tpu::scatter_block(topo, rows, r)
                               : tpu::Chunk{0, rows};
    for (size_t e = size_t{blk.first} * N; e < size_t{blk.first + blk.count} * N; ++e) {
      ASSERT_EQ(got[e], want[e]) << what << ": chip " << r << " element " << e;
    }
  }
}

TEST(TorusCollectivesRtl, ReduceScatterMatchesGoldenAndReference) {
  uint32_t seed = 31;
  for (uint32_t rows : {13u, 16u, 3u}) {
    for (auto dtype : {tpu::CollectiveDtype::Fp32, tpu::CollectiveDtype::Int32}) {
      run_case(tpu::CollectiveKind::ReduceScatter, dtype, rows, 1 + seed % 11, seed);
      ++seed;
    }
  }
}

TEST(TorusCollectivesRtl, AllGatherMatchesGoldenAndReference) {
  uint32_t seed = 131;
  for (uint32_t rows : {13u, 16u, 3u}) {
    run_case(tpu::CollectiveKind::AllGather, tpu::CollectiveDtype::Int32, rows, 1 + seed % 11,
             seed);
    ++seed;
  }
}

}  // namespace

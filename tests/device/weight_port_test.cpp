// SPDX-License-Identifier: Apache-2.0
// The weight port (docs/isa.md "The weight port"): the int8 chip built with N = 32 and a
// 256-bit weight port (tpu_sim_wport_n32, WaxiDataWidth = 256), where read_weights runs on
// m_waxi_* and nothing else does.
//   - tiled matmuls through the Device API land the same weights: every output equals the C++
//     reference (reference_matmul / reference_matmul_int32), with and without backpressure and
//     with a weight port slower than its beat;
//   - the weights cross the weight port only: its bridge carries every read_weights byte, the
//     device-memory port none of them;
//   - faults: an error response on the weight port faults read_weights with ERR_AXI_READ at its
//     pc; a host_addr that is 16-byte but not beat aligned faults ERR_ALIGN before any read, as
//     the golden model (isa.cpp's static checks) says.
//
// One chip per process: every test runs in its own process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chip.h"
#include "device_model.h"
#include "device_rtl.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"
#include "random_matmul.h"
#include "tiled_ops.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;
constexpr uint32_t kBeat = TPU_SIM_WAXI_WIDTH / 8;
static_assert(kBeat > 16, "the test chip's beat must need more than the 16-byte alignment");

TEST(WeightPort, ParamsReportThePort) {
  const ChipParams p = RtlDevice::compiled_params();
  EXPECT_EQ(p.N, N);
  EXPECT_EQ(p.weight_port_bytes, kBeat);
  EXPECT_EQ(p.weight_align(), kBeat);
  EXPECT_NO_THROW(p.validate());
  RtlDevice dev;
  EXPECT_EQ(dev.params(), p);
  EXPECT_EQ(sim::Chip::compiled_weight_axi_width(), 8 * kBeat);
}

void run_random_matmuls(Device& dev, uint32_t seed, int cases) {
  std::mt19937 rng(seed);
  for (int i = 0; i < cases; ++i) {
    const tpu_test::MatmulCase c = (i % 2 == 0)
                                       ? tpu_test::random_case(rng, 90, 3 * N + 5, 3 * N + 5)
                                       : tpu_test::random_raw_case(rng, 90, 3 * N + 5, 3 * N + 5);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.describe());
    MatmulRun r;
    ASSERT_NO_THROW(r = run_matmul(dev, c.spec, c.a, c.w, 4'000'000));
    if (c.spec.raw) {
      EXPECT_EQ(r.out32, reference_matmul_int32(c.spec, c.a, c.w)) << r.plan.describe();
    } else {
      EXPECT_EQ(r.out, reference_matmul(c.spec, c.a, c.w)) << r.plan.describe();
    }
    EXPECT_EQ(r.stats.counters.mxu_macs, uint64_t(r.plan.kt) * r.plan.nt * c.spec.m * N * N);
  }
}

TEST(WeightPort, MatmulsMatchTheReference) {
  RtlDevice dev;
  run_random_matmuls(dev, 3300, 6);
}

TEST(WeightPort, MatmulsMatchTheReferenceUnderBackpressure) {
  RtlDevice dev;
  dev.set_backpressure(0.3, 77);
  run_random_matmuls(dev, 3301, 4);
}

TEST(WeightPort, MatmulsMatchTheReferenceOnASlowPort) {
  RtlOptions o;
  o.weight_port_bytes_per_cycle = 5;  // a 32-byte beat every 6.4 cycles
  o.weight_port_latency_cycles = 40;
  RtlDevice dev(o);
  run_random_matmuls(dev, 3302, 3);
}

// The same matmul on the model backend with this chip's parameters: same outputs (the model
// is the independent reference of every architectural result).
TEST(WeightPort, ModelBackendAgrees) {
  ModelDevice dev(RtlDevice::compiled_params());
  run_random_matmuls(dev, 3300, 6);
}

// ---- sim::Chip level: which port carries the weights, and the faults ----

constexpr uint32_t kCmdBase = 0x1000;
constexpr uint32_t kWeights = 0x20000;  // a multiple of every beat
constexpr uint32_t kTile = N * N;

std::vector<uint8_t> program_bytes(const std::vector<Instruction>& program) {
  std::vector<uint8_t> bytes;
  for (const Instruction& in : program) {
    const InstrBytes b = encode(in);
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  return bytes;
}

class WeightPortChip : public ::testing::Test {
 protected:
  void SetUp() override {
    chip = std::make_unique<sim::Chip>();
    chip->add_region(kCmdBase, 0x1000, "commands");
    chip->add_region(kWeights, 8 * kTile, "weights");
    std::vector<uint8_t> w(8 * kTile);
    for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t(i * 7 + 3);
    chip->write_mem(kWeights, w);
  }
  sim::RunResult run(const std::vector<Instruction>& program) {
    chip->write_mem(kCmdBase, program_bytes(program));
    chip->start(kCmdBase, uint32_t(program.size()));
    return chip->run(1'000'000);
  }
  std::unique_ptr<sim::Chip> chip;
};

// Three tiles, made active one after another: every tile byte crosses m_waxi_*, none m_axi_*
// (which carries the 16-byte instructions only).
TEST_F(WeightPortChip, WeightsCrossTheWeightPortOnly) {
  Matmul mm;
  mm.switch_weights = true;
  const sim::RunResult r = run({ReadWeights{3, kWeights}, mm, mm, mm, Halt{}});
  ASSERT_EQ(r.reason, sim::StopReason::kDone) << sim::to_string(r.reason);
  EXPECT_EQ(chip->weight_axi_stats().read_beats, 3u * kTile / kBeat);
  EXPECT_EQ(chip->weight_axi_stats().error_responses, 0u);
  // The device-memory port read instructions only: fewer bytes than one tile.
  EXPECT_LT(chip->axi_stats().read_beats * (sim::Chip::compiled_axi_width() / 8), kTile);
  // DMA_RD_BYTES counts the weight port's bytes too.
  EXPECT_GE(chip->counters().dma_rd_bytes, 3u * kTile);
}

// An error response for a beat of the second tile: ERR_AXI_READ at the read_weights' pc.
TEST_F(WeightPortChip, ErrorResponseFaultsAxiRead) {
  chip->inject_error(kWeights + kTile + 3 * kBeat, 1);
  Matmul mm;
  mm.switch_weights = true;
  const sim::RunResult r = run({Nop{}, ReadWeights{2, kWeights}, mm, mm, Halt{}});
  ASSERT_EQ(r.reason, sim::StopReason::kError) << sim::to_string(r.reason);
  EXPECT_EQ(r.err_code, uint32_t(ErrorCode::ERR_AXI_READ));
  EXPECT_EQ(r.err_pc, 1u);
  EXPECT_GE(chip->weight_axi_stats().error_responses, 1u);
}

// host_addr 16-byte aligned but not on a beat: ERR_ALIGN before anything is read, on the chip
// and in the golden model.
TEST_F(WeightPortChip, UnalignedHostAddrFaultsAlign) {
  const std::vector<Instruction> program = {Nop{}, ReadWeights{1, kWeights + 16}, Halt{}};
  const sim::RunResult r = run(program);
  ASSERT_EQ(r.reason, sim::StopReason::kError) << sim::to_string(r.reason);
  EXPECT_EQ(r.err_code, uint32_t(ErrorCode::ERR_ALIGN));
  EXPECT_EQ(r.err_pc, 1u);
  EXPECT_EQ(chip->weight_axi_stats().read_bursts, 0u);

  // The golden model with this chip's parameters, on a copy of the same memory.
  class Flat : public HostMemory {
   public:
    std::vector<uint8_t> bytes = std::vector<uint8_t>(0x40000);
    bool read(uint64_t a, size_t n, uint8_t* d) override {
      if (a + n > bytes.size()) return false;
      std::copy(bytes.begin() + long(a), bytes.begin() + long(a + n), d);
      return true;
    }
    bool write(uint64_t a, size_t n, const uint8_t* s) override {
      if (a + n > bytes.size()) return false;
      std::copy(s, s + n, bytes.begin() + long(a));
      return true;
    }
  } mem;
  const std::vector<uint8_t> prog = program_bytes(program);
  mem.write(kCmdBase, prog.size(), prog.data());
  GoldenModel golden(mem, RtlDevice::compiled_params());
  const RunResult g = golden.run(kCmdBase, uint32_t(program.size()));
  EXPECT_EQ(g.error, ErrorCode::ERR_ALIGN);
  EXPECT_EQ(g.err_pc, 1u);
  // On a beat it is fine for both.
  EXPECT_EQ(ChipParams::with_n(N).weight_align(), 16u);
}

}  // namespace

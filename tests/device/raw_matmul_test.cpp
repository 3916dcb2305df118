// SPDX-License-Identifier: Apache-2.0
// The raw int32 matmul of the driver's matmul API (MatmulSpec::raw, isa.md `activate raw`) on
// both backends for the chip built with N = TPU_SIM_N: every int32 equal to the C++ triple
// loop (reference_matmul_int32), including biases that saturate, and rtl == model on the
// counters the model computes exactly.
//
// One chip per process: every TEST_P instance runs in its own process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <climits>
#include <memory>
#include <random>
#include <string>

#include "device_model.h"
#include "device_rtl.h"
#include "random_matmul.h"
#include "tiled_ops.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;

class RawMatmulTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "rtl") {
      dev = std::make_unique<RtlDevice>();
    } else {
      dev = std::make_unique<ModelDevice>(ChipParams::with_n(N));
    }
  }
  std::unique_ptr<Device> dev;
};

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }
INSTANTIATE_TEST_SUITE_P(Backends, RawMatmulTest, ::testing::Values("rtl", "model"), backend_name);

// Odd shapes (one and several column blocks and K tiles), both signednesses, biases.
TEST_P(RawMatmulTest, RandomShapesMatchTheInt32Reference) {
  std::mt19937 rng(500 + N);
  for (int i = 0; i < 10; ++i) {
    const tpu_test::MatmulCase c =
        tpu_test::random_raw_case(rng, N == 4 ? 60 : 120, 3 * N + 5, 3 * N + 5);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.describe());
    MatmulRun r;
    ASSERT_NO_THROW(r = run_matmul(*dev, c.spec, c.a, c.w, 2'000'000));
    const std::vector<int32_t> ref = reference_matmul_int32(c.spec, c.a, c.w);
    ASSERT_EQ(r.out32.size(), ref.size());
    for (size_t j = 0; j < ref.size(); ++j) {
      ASSERT_EQ(r.out32[j], ref[j])
          << "row " << j / c.spec.n << " column " << j % c.spec.n << "; " << r.plan.describe();
    }
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(r.stats.counters.mxu_macs, uint64_t(r.plan.kt) * r.plan.nt * c.spec.m * N * N);
  }
}

// A hand-made case: out = a . w + bias with known int32 values, saturating both ways.
TEST_P(RawMatmulTest, KnownValuesAndSaturation) {
  MatmulSpec s;
  s.m = 2;
  s.k = 3;
  s.n = 4;
  s.raw = true;
  s.bias = {1000, -7, INT32_MAX - 10, INT32_MIN + 1000};
  const std::vector<uint8_t> a = {1, 2, 3, uint8_t(-128), 127, 100};  // 2 x 3
  // 3 x 4: columns (1,1,1), (-1,0,2), (127,127,127), (-128,-128,-128)
  const std::vector<uint8_t> w = {1, uint8_t(-1), 127, uint8_t(-128),  //
                                  1, 0,           127, uint8_t(-128),  //
                                  1, 2,           127, uint8_t(-128)};
  const MatmulRun r = run_matmul(*dev, s, a, w);
  // Row 0: sums 6, 5, 762, -768; row 1: sums 99, 328, 12573, -12672.
  EXPECT_EQ(r.out32, (std::vector<int32_t>{1006, -2, INT32_MAX, INT32_MIN + 232,  //
                                           1099, 321, INT32_MAX, INT32_MIN}));
}

// The same raw jobs on both backends in one process: same results, same counters.
TEST(RawRtlVsModel, SameResultsAndCounters) {
  RtlDevice rtl;
  ModelDevice model(ChipParams::with_n(N));
  std::mt19937 rng(900 + N);
  for (int i = 0; i < 4; ++i) {
    const tpu_test::MatmulCase c = tpu_test::random_raw_case(rng, 2 * N + 20, 3 * N, 3 * N);
    SCOPED_TRACE(c.describe());
    const MatmulRun a = run_matmul(rtl, c.spec, c.a, c.w, 1'000'000);
    const MatmulRun b = run_matmul(model, c.spec, c.a, c.w);
    EXPECT_EQ(a.out32, b.out32);
    EXPECT_EQ(a.stats.counters.act_busy, b.stats.counters.act_busy);
    EXPECT_EQ(a.stats.counters.dma_wr_bytes, b.stats.counters.dma_wr_bytes);
    EXPECT_EQ(a.stats.counters.dma_wr_bytes, uint64_t(c.spec.m) * a.plan.nt * N * 4);
  }
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Tiled matmul (tiled_ops.h) without RTL: layouts, the reference, the planner, and random
// matmuls on the golden model, also on deliberately tiny chips so that every tiling path
// (M chunks, single-buffered UB, one ACC region, quantization slot reloads with one and two
// banks, a one-tile weight FIFO) runs. tests/device runs the same on the rtl backend.
#include "tiled_ops.h"

#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <string>

#include "device_model.h"
#include "random_matmul.h"

namespace {

using namespace tpu;

TEST(TiledLayout, PackRowsPadsWithZeros) {
  const std::vector<uint8_t> a = {1, 2, 3, 4, 5, 6};  // 2 x 3
  const auto p = pack_rows(a, 2, 3, 4);
  EXPECT_EQ(p, (std::vector<uint8_t>{1, 2, 3, 0, 4, 5, 6, 0}));
  EXPECT_EQ(unpack_rows(p, 2, 3, 4), a);
  EXPECT_THROW(pack_rows(a, 3, 3, 4), std::invalid_argument);
}

TEST(TiledLayout, PackWeightsInConsumptionOrder) {
  // 5 x 6 weights, T = 4: kt = 2, nt = 2, tiles (t,j) = (0,0) (1,0) (0,1) (1,1).
  std::vector<uint8_t> w(30);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t(i + 1);
  const auto p = pack_weights(w, 5, 6, 4);
  ASSERT_EQ(p.size(), 4u * 16u);
  auto at = [&](int tile, int k, int n) {
    return p[size_t(tile) * 16 + size_t(k) * 4 + size_t(n)];
  };
  EXPECT_EQ(at(0, 0, 0), w[0]);          // W[0][0]
  EXPECT_EQ(at(0, 3, 3), w[3 * 6 + 3]);  // W[3][3]
  EXPECT_EQ(at(1, 0, 2), w[4 * 6 + 2]);  // tile (t=1, j=0) row 0 = W[4]
  EXPECT_EQ(at(1, 1, 0), 0);             // W[5] does not exist
  EXPECT_EQ(at(2, 2, 1), w[2 * 6 + 5]);  // tile (t=0, j=1) column 1 = W[.][5]
  EXPECT_EQ(at(2, 2, 2), 0);             // column 6 does not exist
  EXPECT_EQ(at(3, 0, 1), w[4 * 6 + 5]);
}

TEST(TiledLayout, QuantImages) {
  MatmulSpec s;
  s.n = 10;
  EXPECT_EQ(quant_images(s, 4), 1u);
  s.shift = {3};
  s.mult = {5};
  EXPECT_EQ(quant_images(s, 4), 1u);
  auto q = pack_quant(s, 4);
  ASSERT_EQ(q.size(), 48u);
  EXPECT_EQ(q[16 + 12], 5);  // mult of column 3
  EXPECT_EQ(q[32 + 8], 3);   // misc (shift) of column 2
  s.bias.assign(10, 0);
  s.bias[9] = -2;
  EXPECT_EQ(quant_images(s, 4), 3u);
  q = pack_quant(s, 4);
  ASSERT_EQ(q.size(), 3u * 48u);
  EXPECT_EQ(q[2 * 48 + 4], 0xFE);    // image 2, bias of its column 1 (= column 9)
  EXPECT_EQ(q[2 * 48 + 16 + 8], 0);  // column 10 does not exist: mult 0
}

// A hand-checked case of the output stage: rounding ties away from zero, saturation, zero
// point, ReLU, clamp, LUT.
TEST(TiledReference, OutputStage) {
  MatmulSpec s;
  s.m = 1;
  s.k = 1;
  s.n = 4;
  const std::vector<uint8_t> a = {5};
  const std::vector<uint8_t> w = {1, uint8_t(-1), 100, uint8_t(-100)};  // sums 5, -5, 500, -500
  s.shift = {1};  // 2.5 -> 3, -2.5 -> -3, 250 -> 127, -250 -> -128
  EXPECT_EQ(reference_matmul(s, a, w), (std::vector<uint8_t>{3, uint8_t(-3), 127, uint8_t(-128)}));
  s.zero_point = 10;
  s.func = ActFunc::Relu;  // max(y, zp)
  EXPECT_EQ(reference_matmul(s, a, w), (std::vector<uint8_t>{13, 10, 127, 10}));
  s.func = ActFunc::Clamp;
  s.clamp_lo = 12;
  s.clamp_hi = 20;
  EXPECT_EQ(reference_matmul(s, a, w), (std::vector<uint8_t>{13, 12, 20, 12}));
  s.func = ActFunc::Lut;
  s.lut.assign(256, 0);
  s.lut[13] = 200;
  EXPECT_EQ(reference_matmul(s, a, w), (std::vector<uint8_t>{200, 0, 0, 0}));
  s.func = ActFunc::Identity;
  s.zero_point = 0;
  s.out_unsigned = true;
  s.bias = {0, 10, 0, 0};
  EXPECT_EQ(reference_matmul(s, a, w), (std::vector<uint8_t>{3, 3, 250, 0}));
  s.bias = {INT32_MAX, 0, 0, 0};  // the bias add saturates
  s.shift = {31};
  EXPECT_EQ(reference_matmul(s, a, w)[0], 1);
}

TEST(TiledPlan, RampChunksForLargeM) {
  const ChipParams p = ChipParams::with_n(16);
  MatmulSpec s;
  s.m = s.k = s.n = 256;
  MatmulPlan plan = plan_matmul(p, s);
  EXPECT_EQ(plan.kt, 16u);
  EXPECT_EQ(plan.nt, 16u);
  EXPECT_EQ(plan.chunk_sizes, (std::vector<uint32_t>{64, 128, 64}));
  EXPECT_TRUE(plan.double_buffered_ub);
  EXPECT_LE(plan.ub_rows_used, p.ub_rows);
  EXPECT_EQ(plan.quant_images, 1u);
  EXPECT_FALSE(plan.reload_quant);
  s.m = 100;
  plan = plan_matmul(p, s);
  EXPECT_EQ(plan.chunk_sizes, (std::vector<uint32_t>{100}));
  EXPECT_FALSE(plan.double_buffered_ub);
  MatmulResources r;
  r.max_chunk_rows = 30;
  r.edge_chunk_rows = 10;
  plan = plan_matmul(p, s, r);
  EXPECT_EQ(plan.chunk_sizes, (std::vector<uint32_t>{10, 27, 27, 26, 10}));
  EXPECT_NE(plan.describe().find("5 chunks of rows [10 27 27 26 10]"), std::string::npos)
      << plan.describe();
}

TEST(TiledPlan, RespectsResourcesAndRejectsWhatCannotFit) {
  const ChipParams p = ChipParams::with_n(4);
  MatmulSpec s;
  s.m = 50;
  s.k = 30;
  s.n = 20;
  MatmulResources r;
  r.ub_base = 100;
  r.ub_rows = 120;
  r.acc_base = 7;
  r.acc_rows = 40;
  r.first_slot = 3;
  r.slots = 2;
  s.bias.assign(20, 1);
  s.bias[0] = 2;  // per-column parameters: 5 images, 2 slots
  const MatmulPlan plan = plan_matmul(p, s, r);
  EXPECT_LE(plan.ub_rows_used, 120u);
  EXPECT_GE(plan.ub_a[0], 100u);
  EXPECT_GE(plan.acc[0], 7u);
  EXPECT_LE(plan.acc[1] + plan.chunk_rows, 47u);
  EXPECT_TRUE(plan.reload_quant);
  EXPECT_EQ(plan.slot_banks, 2u);
  EXPECT_EQ(plan.slot_batch, 1u);
  r.ub_rows = 12;  // one row of A and output needs kt + nt = 8 + 5 = 13
  EXPECT_THROW(plan_matmul(p, s, r), std::invalid_argument);
  r.ub_rows = 0;
  r.ub_base = 9000;
  EXPECT_THROW(plan_matmul(p, s, r), std::invalid_argument);
  s.m = 0;
  EXPECT_THROW(plan_matmul(p, s), std::invalid_argument);
}

TEST(TiledSpec, Validation) {
  MatmulSpec s;
  s.n = 3;
  s.bias = {1, 2};
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s.bias.clear();
  s.shift = {64};
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s.shift = {1};
  s.zero_point = 200;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s.out_unsigned = true;
  EXPECT_NO_THROW(s.validate());
  s.func = ActFunc::Lut;
  EXPECT_THROW(s.validate(), std::invalid_argument);
}

void run_cases(const ChipParams& params, int count, uint32_t max_m, uint32_t max_k, uint32_t max_n,
               unsigned seed, const MatmulResources& res = {}) {
  ModelDevice dev(params);
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    const tpu_test::MatmulCase c = tpu_test::random_case(rng, max_m, max_k, max_n);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.describe());
    MatmulRun r;
    ASSERT_NO_THROW(r = run_matmul(dev, c.spec, c.a, c.w, Device::kDefaultMaxCycles, res));
    ASSERT_EQ(r.out, reference_matmul(c.spec, c.a, c.w)) << r.plan.describe();
    EXPECT_EQ(r.stats.counters.mxu_busy, uint64_t(r.plan.kt) * r.plan.nt * c.spec.m);
    EXPECT_TRUE(dev.buffers().empty()) << "run_matmul releases its buffers";
  }
}

TEST(TiledModel, RandomShapesN4) { run_cases(ChipParams::with_n(4), 40, 70, 40, 40, 1); }
TEST(TiledModel, RandomShapesN16) { run_cases(ChipParams::with_n(16), 25, 300, 100, 100, 2); }

// Small UB / ACC / slots / FIFO: chunks, single buffering, slot reloads in 1 and 2 banks.
TEST(TiledModel, TinyChips) {
  ChipParams p = ChipParams::with_n(4);
  p.ub_rows = 256;
  p.acc_rows = 16;
  p.qp_slots = 3;  // reloaded in 2 banks of 1 slot
  p.wfifo_tiles = 1;
  run_cases(p, 25, 40, 24, 30, 3);  // double-buffered chunks of 4 or 8 rows
  p.ub_rows = 40;                   // kt + nt up to 10: single-buffered chunks of 4 rows
  p.acc_rows = 6;                   // one ACC region (two of 3 rows cannot hold an aligned chunk)
  p.qp_slots = 1;                   // one slot: reloaded before every block
  run_cases(p, 25, 12, 20, 20, 4);
}

TEST(TiledPlan, ChunksKeepHostAddressesAligned) {
  ChipParams p = ChipParams::with_n(4);
  MatmulSpec s;
  s.m = 37;
  s.k = 4;  // rows of 4 bytes: chunks of multiples of 4 rows
  s.n = 8;  // output rows of 8 bytes
  MatmulResources r;
  r.max_chunk_rows = 7;
  const MatmulPlan plan = plan_matmul(p, s, r);
  uint32_t start = 0;
  for (size_t i = 0; i < plan.chunk_sizes.size(); ++i) {
    EXPECT_EQ(start * 4 % 16, 0u) << plan.describe();
    EXPECT_LE(plan.chunk_sizes[i], 7u);
    start += plan.chunk_sizes[i];
  }
  EXPECT_EQ(start, 37u);
  p.ub_rows = 4;  // 2 UB rows per row, chunks must hold 4 rows
  EXPECT_THROW(plan_matmul(p, s, r), std::invalid_argument);
}

TEST(TiledModel, ChosenResourcesAndLookahead) {
  MatmulResources r;
  r.ub_base = 1000;
  r.ub_rows = 300;
  r.acc_base = 100;
  r.acc_rows = 50;
  r.first_slot = 10;
  r.slots = 4;
  r.weight_lookahead = 1;
  r.max_chunk_rows = 17;
  run_cases(ChipParams::with_n(4), 15, 90, 50, 60, 5, r);
}

TEST(TiledModel, EmitRefusesPendingTilesAndOtherN) {
  ModelDevice dev(ChipParams::with_n(4));
  MatmulSpec s;
  const MatmulPlan plan = plan_matmul(dev.params(), s);
  ProgramBuilder b(dev.params());
  b.read_weights(1, 0);
  EXPECT_THROW(emit_matmul(b, s, plan, {}), std::invalid_argument);
  ProgramBuilder b16(ChipParams::with_n(16));
  EXPECT_THROW(emit_matmul(b16, s, plan, {}), std::invalid_argument);
  EXPECT_THROW(run_matmul(dev, s, {1, 2}, {1}), std::invalid_argument);
}

// ---- raw int32 output (isa.md `activate raw`)

// Hand-checked: the biased sums leave as int32, the bias add saturates, the sum wraps.
TEST(TiledReference, RawInt32) {
  MatmulSpec s;
  s.m = 1;
  s.k = 1;
  s.n = 4;
  s.raw = true;
  const std::vector<uint8_t> a = {5};
  const std::vector<uint8_t> w = {1, uint8_t(-1), 100, uint8_t(-100)};  // sums 5, -5, 500, -500
  EXPECT_EQ(reference_matmul_int32(s, a, w), (std::vector<int32_t>{5, -5, 500, -500}));
  s.bias = {7, 0, INT32_MAX - 100, INT32_MIN + 100};
  EXPECT_EQ(reference_matmul_int32(s, a, w), (std::vector<int32_t>{12, -5, INT32_MAX, INT32_MIN}));
  EXPECT_THROW(reference_matmul(s, a, w), std::invalid_argument);  // its output is not bytes
  // 33100 products of 255 * 255 = 2,152,327,500 > 2^31 - 1: wraps to 2,152,327,500 - 2^32.
  MatmulSpec big;
  big.k = 33100;
  big.raw = big.a_unsigned = big.w_unsigned = true;
  const std::vector<uint8_t> ones(33100, 255);
  EXPECT_EQ(reference_matmul_int32(big, ones, ones), (std::vector<int32_t>{-2142639796}));
}

TEST(TiledSpec, RawValidation) {
  MatmulSpec s;
  s.n = 3;
  s.raw = true;
  s.bias = {1, 2, 3};
  EXPECT_NO_THROW(s.validate());
  auto message = [](const MatmulSpec& bad) {
    try {
      bad.validate();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  MatmulSpec t = s;
  t.func = ActFunc::Relu;
  EXPECT_EQ(message(t), "matmul spec: raw (int32 output) with func = relu (expected identity)");
  t = s;
  t.out_unsigned = true;
  EXPECT_EQ(message(t),
            "matmul spec: raw (int32 output) with out_unsigned (expected a signed output)");
  t = s;
  t.zero_point = 3;
  EXPECT_EQ(message(t), "matmul spec: raw (int32 output) with zero_point = 3 (expected 0)");
  t = s;
  t.shift = {2};
  EXPECT_NE(message(t).find("with 0 mult and 1 shift values (expected none"), std::string::npos)
      << message(t);
  t = s;
  t.mult = {2};
  EXPECT_THROW(plan_matmul(ChipParams::with_n(4), t), std::invalid_argument);
}

// Four UB rows per output element: a row of A and its output take kt + 4 nt UB rows, and the
// chunks keep 16-byte aligned host addresses for int32 rows too.
TEST(TiledPlan, RawOutputRows) {
  ChipParams p = ChipParams::with_n(4);
  MatmulSpec s;
  s.m = 37;
  s.k = 4;
  s.n = 8;
  s.raw = true;
  MatmulPlan plan = plan_matmul(p, s);
  EXPECT_EQ(plan.ub_rows_used, 37u * (1 + 4 * 2)) << plan.describe();
  p.ub_rows = 9 * 4 - 1;  // a 4-row aligned chunk needs 36 rows (kt = 1 + 4 * nt = 8)
  EXPECT_THROW(plan_matmul(p, s), std::invalid_argument);
  p.ub_rows = 9 * 4;
  plan = plan_matmul(p, s);
  ASSERT_EQ(plan.chunk_sizes.size(), 10u) << plan.describe();  // 9 x 4 rows + 1
  for (size_t i = 0; i + 1 < plan.chunk_sizes.size(); ++i)
    EXPECT_EQ(plan.chunk_sizes[i], 4u) << plan.describe();
}

void run_raw_cases(const ChipParams& params, int count, uint32_t max_m, uint32_t max_k,
                   uint32_t max_n, unsigned seed, const MatmulResources& res = {}) {
  ModelDevice dev(params);
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    const tpu_test::MatmulCase c = tpu_test::random_raw_case(rng, max_m, max_k, max_n);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.describe());
    MatmulRun r;
    ASSERT_NO_THROW(r = run_matmul(dev, c.spec, c.a, c.w, Device::kDefaultMaxCycles, res));
    ASSERT_EQ(r.out32, reference_matmul_int32(c.spec, c.a, c.w)) << r.plan.describe();
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(r.stats.counters.mxu_busy, uint64_t(r.plan.kt) * r.plan.nt * c.spec.m);
    EXPECT_TRUE(dev.buffers().empty()) << "run_matmul releases its buffers";
  }
}

TEST(TiledModel, RawRandomShapes) {
  run_raw_cases(ChipParams::with_n(4), 30, 70, 40, 40, 11);
  run_raw_cases(ChipParams::with_n(16), 15, 300, 100, 100, 12);
  ChipParams p = ChipParams::with_n(4);  // chunks, single-buffered UB, one ACC region
  p.ub_rows = 120;
  p.acc_rows = 6;
  p.qp_slots = 1;
  p.wfifo_tiles = 1;
  run_raw_cases(p, 20, 30, 20, 20, 13);
}

// The accumulators wrap at 32 bits on the chip as in the reference.
TEST(TiledModel, RawSumWraps) {
  ModelDevice dev(ChipParams::with_n(16));
  MatmulSpec s;
  s.k = 33100;
  s.raw = s.a_unsigned = s.w_unsigned = true;
  const std::vector<uint8_t> ones(33100, 255);
  const MatmulRun r = run_matmul(dev, s, ones, ones);
  EXPECT_EQ(r.out32, (std::vector<int32_t>{-2142639796}));
}

}  // namespace

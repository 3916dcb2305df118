// SPDX-License-Identifier: Apache-2.0
// The float32 matmul on the bf16 matrix unit (float_matmul.h) without RTL: the planner, the
// layouts, the errors, and matmuls on the golden model bit for bit against the independent
// reference of tests/support/float_matmul_ref.h (docs/isa.md's numerics), also on deliberately
// small chips so that every tiling path (row chunks, W streamed through VMEM, K cut into pieces)
// runs. tests/device/float_matmul_rtl_test.cpp runs the same on the rtl training chip.
#include "float_matmul.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "device_model.h"
#include "float_matmul_ref.h"

namespace {

using namespace tpu;
using tpu_test::f32_bits;
using tpu_test::f32_of;

std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> b;
  for (float f : v) b.push_back(f32_bits(f));
  return b;
}

// A training chip whose VMEM and ACC are small enough to force streaming and row chunks.
ChipParams small_chip(uint32_t n, uint32_t vmem_rows, uint32_t acc_rows) {
  ChipParams p = ChipParams::training(n);
  p.vmem_rows = vmem_rows;
  p.acc_rows = acc_rows;
  p.validate();
  return p;
}

void expect_reference(Device& dev, uint32_t m, uint32_t k, uint32_t n, FloatTransfer t,
                      uint32_t seed, uint32_t special = 0) {
  std::mt19937 rng(seed);
  const auto a = tpu_test::random_floats(rng, size_t{m} * k, special);
  const auto w = tpu_test::random_floats(rng, size_t{k} * n, special);
  const FloatMatmulRun r = run_float_matmul(dev, a, w, m, k, n, t);
  const uint32_t tile = dev.params().N;
  ASSERT_EQ(r.out.size(), size_t{m} * n);
  EXPECT_EQ(bits(r.out), bits(tpu_test::reference_float_matmul(a, w, m, k, n, tile)))
      << m << "x" << k << "x" << n << " N=" << tile << " " << r.plan.describe();
  EXPECT_EQ(r.useful_macs, uint64_t{m} * k * n);
  EXPECT_GT(r.stats.cycles, 0u);
  EXPECT_DOUBLE_EQ(r.mxu_utilization,
                   double(r.useful_macs) / (double(r.stats.cycles) * tile * tile));
  EXPECT_TRUE(dev.buffers().empty());  // released
}

TEST(FloatMatmulReference, FollowsIsaNumerics) {
  using tpu_test::bf16_round;
  EXPECT_EQ(f32_bits(bf16_round(f32_of(0x3F808000u))), 0x3F800000u);  // tie -> even (down)
  EXPECT_EQ(f32_bits(bf16_round(f32_of(0x3F818000u))), 0x3F820000u);  // tie -> even (up)
  EXPECT_EQ(f32_bits(bf16_round(f32_of(0x7F7FFFFFu))), 0x7F800000u);  // carry -> infinity
  EXPECT_EQ(f32_bits(bf16_round(f32_of(0x807FFFFFu))), 0x80000000u);  // DAZ keeps the sign
  EXPECT_EQ(f32_bits(bf16_round(f32_of(0xFFC00001u))), 0x7FC00000u);  // canonical NaN
  // FTZ after rounding with an unbounded exponent: 2^-126 - 2^-150 is exact in 24 bits (a zero),
  // although float's subnormal rounding would round it up to 2^-126.
  EXPECT_EQ(f32_bits(tpu_test::finish(0x1p-126 - 0x1p-150)), 0u);
  EXPECT_EQ(f32_bits(tpu_test::finish(-(0x1p-126 - 0x1p-152))), 0x80800000u);  // rounds up: kept
  EXPECT_EQ(f32_bits(tpu_test::mul(f32_of(0x20000000u), f32_of(0x9F800000u))), 0x80000000u);
  EXPECT_EQ(f32_bits(tpu_test::add(-0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(f32_bits(tpu_test::add(1.0f, -1.0f)), 0u);
  EXPECT_EQ(f32_bits(tpu_test::mul(0.0f, f32_of(0x7F800000u))), 0x7FC00000u);
  // The summation order shows in the bits (so the comparisons below can fail): tiles of 4 and
  // of 16 give other results on wide-range data.
  std::mt19937 rng(5);
  const auto a = tpu_test::random_floats(rng, 20 * 70), w = tpu_test::random_floats(rng, 70 * 20);
  EXPECT_NE(bits(tpu_test::reference_float_matmul(a, w, 20, 70, 20, 4)),
            bits(tpu_test::reference_float_matmul(a, w, 20, 70, 20, 16)));
}

TEST(FloatMatmulPlan, ResidentOrStreamed) {
  const FloatMatmulPlan big = plan_float_matmul(ChipParams::training(16), 100, 70, 40);
  EXPECT_EQ(big.tile, 16u);
  EXPECT_EQ(big.kt, 5u);
  EXPECT_EQ(big.nt, 3u);
  EXPECT_TRUE(big.w_resident);
  EXPECT_EQ(big.group, big.kt);
  EXPECT_EQ(big.chunk_sizes, std::vector<uint32_t>{100});
  EXPECT_EQ(big.describe(),
            "bf16 tile 16: 5 K tiles x 3 column blocks, 1 row chunks of <= 100, W resident in "
            "VMEM (5 K tiles per piece)");
  // VMEM 64 rows, N = 4: W (kt * nt * 4 = 25 * 3 * 4 rows) does not fit in half of it.
  const FloatMatmulPlan s = plan_float_matmul(small_chip(4, 64, 8), 10, 100, 12);
  EXPECT_FALSE(s.w_resident);
  EXPECT_EQ(s.group, 4u);  // VmemRows / 4 / N
  EXPECT_EQ(s.groups, 7u);
  // Rows per chunk: min(ACC 8 / 2, (64 - 32 W rows) / (2 * 4 + 2)) = 3: 4 chunks.
  EXPECT_EQ(s.chunk_sizes, (std::vector<uint32_t>{3, 3, 2, 2}));
  const FloatMatmulPlan h =
      plan_float_matmul(ChipParams::training(16), 3, 3, 3, FloatTransfer::Bfloat16);
  EXPECT_EQ(h.in_bytes(), 2u);
  EXPECT_NE(h.describe().find(", bf16 transfer"), std::string::npos);
}

TEST(FloatMatmulLayout, PackAndHostImage) {
  // 3 x 5 A with N = 4 in one chunk: 2 K tiles of 3 rows, tile-major, +0 padding.
  const FloatMatmulPlan pl = plan_float_matmul(ChipParams::training(4), 3, 5, 6);
  std::vector<float> a(15), w(30);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i + 1);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(100 + i);
  const auto pa = pack_float_a(a, 3, 5, pl);
  ASSERT_EQ(pa.size(), 3u * 2 * 4);
  EXPECT_EQ(std::vector<float>(pa.begin(), pa.begin() + 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(std::vector<float>(pa.begin() + 12, pa.begin() + 16), (std::vector<float>{5, 0, 0, 0}));
  const auto pw = pack_float_w(w, 5, 6, pl);  // panel j: kt*T rows of T lanes
  ASSERT_EQ(pw.size(), 2u * 2 * 4 * 4);
  EXPECT_EQ(pw[0], 100.0f);
  EXPECT_EQ(pw[4 * 4], 124.0f);      // panel 0, row 4 = w[4][0]
  EXPECT_EQ(pw[5 * 4], 0.0f);        // K padding
  EXPECT_EQ(pw[8 * 4 + 1], 105.0f);  // panel 1, row 0, lane 1 = w[0][5]
  EXPECT_EQ(pw[8 * 4 + 2], 0.0f);    // column padding
  FloatMatmulPlan b = pl;
  b.transfer = FloatTransfer::Bfloat16;
  const auto img = float_host_image({f32_of(0x3F818000u), f32_of(0x7F800001u)}, b);
  EXPECT_EQ(img, (std::vector<uint8_t>{0x82, 0x3F, 0xC0, 0x7F}));
  EXPECT_EQ(float_host_image({1.0f}, pl), (std::vector<uint8_t>{0, 0, 0x80, 0x3F}));
}

TEST(FloatMatmulModel, RandomShapesMatchReference) {
  ModelDevice dev(ChipParams::training(16));
  const uint32_t shapes[][3] = {{1, 1, 1}, {37, 50, 23}, {16, 16, 16}, {5, 100, 40}, {64, 33, 70}};
  uint32_t seed = 1;
  for (const auto& s : shapes)
    for (FloatTransfer t : {FloatTransfer::Float32, FloatTransfer::Bfloat16})
      expect_reference(dev, s[0], s[1], s[2], t, seed++);
}

TEST(FloatMatmulModel, SpecialValuesMatchReference) {
  ModelDevice dev(ChipParams::training(16));
  expect_reference(dev, 20, 40, 24, FloatTransfer::Float32, 7, 24);
  expect_reference(dev, 20, 40, 24, FloatTransfer::Bfloat16, 8, 24);
  ModelDevice four(ChipParams::training(4));
  expect_reference(four, 9, 13, 7, FloatTransfer::Float32, 9, 24);
}

TEST(FloatMatmulModel, EveryTilingPathMatchesReference) {
  // Streamed W in pieces of 4 K tiles, several row chunks, N = 4 and N = 8.
  ModelDevice small(small_chip(4, 64, 8));
  expect_reference(small, 10, 100, 12, FloatTransfer::Float32, 11);
  expect_reference(small, 1, 3, 1, FloatTransfer::Float32, 12);
  ModelDevice eight(small_chip(8, 256, 6));
  const FloatMatmulPlan p = plan_float_matmul(eight.params(), 30, 70, 33);
  EXPECT_FALSE(p.w_resident);
  EXPECT_GT(p.chunk_sizes.size(), 1u);
  expect_reference(eight, 30, 70, 33, FloatTransfer::Float32, 13);
  expect_reference(eight, 30, 70, 33, FloatTransfer::Bfloat16, 14);
}

TEST(FloatMatmulModel, TransfersGiveTheSameBits) {
  ModelDevice dev(ChipParams::training(16));
  std::mt19937 rng(21);
  const auto a = tpu_test::random_floats(rng, 40 * 50, 8),
             w = tpu_test::random_floats(rng, 50 * 30, 8);
  const auto f = run_float_matmul(dev, a, w, 40, 50, 30, FloatTransfer::Float32);
  const auto h = run_float_matmul(dev, a, w, 40, 50, 30, FloatTransfer::Bfloat16);
  EXPECT_EQ(bits(f.out), bits(h.out));
  EXPECT_EQ(f.instructions, h.instructions);
}

TEST(FloatMatmulErrors, ClearMessages) {
  ModelDevice int8(ChipParams::with_n(16));
  const std::vector<float> one = {1.0f};
  try {
    run_float_matmul(int8, one, one, 1, 1, 1);
    FAIL() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("this model Device is the int8 chip (VmemRows = 0"),
              std::string::npos)
        << e.what();
  }
  ModelDevice dev(ChipParams::training(16));
  EXPECT_THROW(run_float_matmul(dev, {}, one, 0, 1, 1), std::invalid_argument);
  EXPECT_THROW(run_float_matmul(dev, one, one, 1, 2, 1), std::invalid_argument);  // 1 != k
  EXPECT_THROW(run_float_matmul(dev, {1, 2}, one, 1, 2, 1), std::invalid_argument);
  ModelDevice four(ChipParams::training(4));
  try {
    run_float_matmul(four, one, one, 1, 1, 1, FloatTransfer::Bfloat16);
    FAIL() << "no invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs N >= 8"), std::string::npos) << e.what();
  }
  // W pieces of 2 * 1 * 4 rows leave no room for 2 * (1 + 1) rows of A and output.
  EXPECT_THROW(plan_float_matmul(small_chip(4, 8, 8), 1, 40, 40), std::invalid_argument);
}

}  // namespace

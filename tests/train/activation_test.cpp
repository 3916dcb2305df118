// SPDX-License-Identifier: Apache-2.0
// ReLU and softmax cross-entropy on the golden model against the host reference bit for bit,
// and the reference against double-precision math within a stated tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include "rig.h"

namespace tpu::train::test {
namespace {

class Activation : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Activation, ::testing::Values(4u, 16u));

TEST_P(Activation, ReluForwardAndBackward) {
  Rig rig(GetParam());
  const uint32_t m = 2 * rig.n() + 1, c = rig.n() + 3;
  ref::Mat x = random_mat(m, c, 1.0f, 11);
  const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7FC00000u, 0xFF800000u,
                              0x7F800000u, 0x00000001u, 0x80000001u};  // ±0, NaN, ±inf, ±subnormal
  for (size_t i = 0; i < 7; ++i) x.v[i * 3] = special[i];
  const ref::Mat dy = random_mat(m, c, 1.0f, 12);
  VMat vx = rig.arena().matrix(m, c), vy = rig.arena().matrix(m, c);
  VMat vdy = rig.arena().matrix(m, c), vdx = rig.arena().matrix(m, c);
  const uint32_t scratch = rig.arena().rows(vx.span(rig.n()));
  rig.put(vx, x.v);
  rig.put(vdy, dy.v);
  relu_forward(rig.pb(), vx, vy);
  relu_backward(rig.pb(), vx, vdy, vdx, scratch);
  rig.want(vy);
  rig.want(vdx);
  rig.run();
  expect_bits(rig.got(vy), ref::relu(x).v, "Y");
  expect_bits(rig.got(vdx), ref::relu_backward(x, dy).v, "dX");
}

struct CeCase {
  ref::Mat logits;
  std::vector<int32_t> labels;
};

CeCase random_case(uint32_t m, uint32_t classes, uint32_t seed) {
  CeCase k{random_mat(m, classes, 4.0f, seed), std::vector<int32_t>(m)};
  std::mt19937 rng(seed);
  for (int32_t& l : k.labels) l = static_cast<int32_t>(rng() % classes);
  return k;
}

// Runs softmax_cross_entropy; returns {loss lanes, dlogits image (padding included)}.
std::pair<std::vector<uint32_t>, std::vector<uint32_t>> run_ce(Rig& rig, const CeCase& k,
                                                               VMat* dl_out) {
  const uint32_t n = rig.n(), m = k.logits.rows, classes = k.logits.cols;
  SoftmaxCe ce;
  ce.logits = rig.arena().matrix(m, classes);
  ce.dlogits = rig.arena().matrix(m, classes);
  ce.labels = rig.arena().rows((m + n - 1) / n);
  ce.pad_row = rig.arena().rows(1);
  ce.loss = rig.arena().rows(1);
  ce.scratch = rig.arena().rows(softmax_ce_scratch_rows(m, n));
  rig.put(ce.logits, k.logits.v);
  std::vector<uint32_t> labels((m + n - 1) / n * n, 0);
  for (uint32_t i = 0; i < m; ++i) labels[i] = static_cast<uint32_t>(k.labels[i]);
  rig.put_rows(ce.labels, labels);
  std::vector<uint32_t> pad;
  for (float f : pad_row_lanes(classes, n)) pad.push_back(ref::bits(f));
  rig.put_rows(ce.pad_row, pad);
  softmax_cross_entropy(rig.pb(), ce);
  const VMat loss{ce.loss, 1, n, 1};
  rig.want(loss);
  rig.want(ce.dlogits);
  rig.run();
  *dl_out = ce.dlogits;
  return {rig.got_image(loss), rig.got_image(ce.dlogits)};
}

TEST_P(Activation, SoftmaxCrossEntropyMatchesReferenceBitForBit) {
  Rig rig(GetParam());
  const uint32_t n = rig.n(), classes = std::min(10u, n - 1);
  const CeCase k = random_case(2 * n + 3, classes, 21);
  VMat dl;
  const auto [loss, image] = run_ce(rig, k, &dl);
  const ref::SoftmaxCeResult want = ref::softmax_cross_entropy(k.logits, k.labels, n);
  for (uint32_t lane = 0; lane < n; ++lane) EXPECT_EQ(loss[lane], want.loss) << lane;
  std::vector<float> f(image.size());
  std::memcpy(f.data(), image.data(), image.size() * 4);
  std::vector<uint32_t> got(dl.rows * dl.cols);
  const std::vector<float> values = unpack(dl, n, f);
  std::memcpy(got.data(), values.data(), got.size() * 4);
  expect_bits(got, want.dlogits.v, "dlogits");
  for (uint32_t r = 0; r < dl.rows; ++r) {  // padding lanes are +0.0 (they meet W^T's zeros)
    for (uint32_t j = classes; j < n; ++j) EXPECT_EQ(image[r * n + j], 0u) << r << "," << j;
  }
}

// Equal logits: loss = log(C), dlogits = (1/C - onehot) / M, within the function bounds.
TEST_P(Activation, SoftmaxCrossEntropyOfEqualLogits) {
  Rig rig(GetParam());
  const uint32_t n = rig.n(), classes = n - 1, m = n + 1;
  CeCase k{ref::zeros(m, classes), std::vector<int32_t>(m, 0)};
  for (uint32_t i = 0; i < m; ++i) k.labels[i] = static_cast<int32_t>(i % classes);
  VMat dl;
  const auto [loss, image] = run_ce(rig, k, &dl);
  EXPECT_NEAR(ref::value(loss[0]), std::log(static_cast<double>(classes)),
              4e-7 * std::log(static_cast<double>(classes)));
  EXPECT_EQ(loss[0], ref::softmax_cross_entropy(k.logits, k.labels, n).loss);
}

// The kernel does not check labels (the host validates a dataset before training): a label in
// [C, N) picks a padding lane, documented as a loss of +inf (docs/training.md).
TEST_P(Activation, LabelInPaddingLanesGivesInfiniteLoss) {
  Rig rig(GetParam());
  const uint32_t n = rig.n(), classes = n - 1;
  CeCase k = random_case(n + 1, classes, 23);
  k.labels[1] = static_cast<int32_t>(classes);
  VMat dl;
  const auto [loss, image] = run_ce(rig, k, &dl);
  EXPECT_EQ(loss[0], 0x7F800000u);
}

// The reference (so the chip) against double precision: relative error of the mean loss
// <= 1e-5, absolute error of every dlogit <= 1e-6 / M (the functions' few-ulp errors and the
// fp32 sums; logits in [-4, 4]).
TEST_P(Activation, SoftmaxReferenceIsCloseToExactMath) {
  const uint32_t n = GetParam(), classes = std::min(10u, n - 1), m = 4 * n;
  const CeCase k = random_case(m, classes, 22);
  const ref::SoftmaxCeResult r = ref::softmax_cross_entropy(k.logits, k.labels, n);
  double loss = 0;
  for (uint32_t i = 0; i < m; ++i) {
    double mx = -1e30, sum = 0;
    for (uint32_t j = 0; j < classes; ++j) mx = std::max(mx, double{ref::value(k.logits.at(i, j))});
    for (uint32_t j = 0; j < classes; ++j) sum += std::exp(ref::value(k.logits.at(i, j)) - mx);
    loss += std::log(sum) - (ref::value(k.logits.at(i, k.labels[i])) - mx);
    for (uint32_t j = 0; j < classes; ++j) {
      const double p = std::exp(ref::value(k.logits.at(i, j)) - mx) / sum;
      const double d = (p - (static_cast<int32_t>(j) == k.labels[i] ? 1 : 0)) / m;
      EXPECT_NEAR(ref::value(r.dlogits.at(i, j)), d, 1e-6 / m) << i << "," << j;
    }
  }
  EXPECT_NEAR(ref::value(r.loss), loss / m, 1e-5 * loss / m);
}

}  // namespace
}  // namespace tpu::train::test

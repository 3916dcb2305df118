// SPDX-License-Identifier: Apache-2.0
// End to end: SGD training steps of a 2-layer MLP (Dense - ReLU - Dense - softmax CE) on a
// synthetic batch, every step one program on the golden model, parameters kept in host memory
// between steps. Each step's loss and updated parameters equal the host reference's bit for
// bit, and the loss decreases.
#include "mlp.h"

#include <gtest/gtest.h>

#include "rig.h"

namespace tpu::train::test {
namespace {

// The reference training step on unpadded row-major tensors; returns the step's loss.
struct RefMlp {
  ref::Mat w1, w2;
  std::vector<uint32_t> b1, b2;

  uint32_t step(const ref::Mat& x, const std::vector<int32_t>& labels, uint32_t n, float lr) {
    const ref::Mat z1 = ref::add_row(ref::matmul_tiled(x, w1, n), b1);
    const ref::Mat h1 = ref::relu(z1);
    const ref::Mat z2 = ref::add_row(ref::matmul_tiled(h1, w2, n), b2);
    const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(z2, labels, n);
    const ref::Mat dw2 = ref::matmul_tiled(ref::transposed(h1), ce.dlogits, n);
    const std::vector<uint32_t> db2 = ref::column_sums(ce.dlogits);
    const ref::Mat dh1 = ref::matmul_tiled(ce.dlogits, ref::transposed(w2), n);
    const ref::Mat dz1 = ref::relu_backward(z1, dh1);
    const ref::Mat dw1 = ref::matmul_tiled(ref::transposed(x), dz1, n);
    const std::vector<uint32_t> db1 = ref::column_sums(dz1);
    const ref::Sgd h{lr, 0.0f, 0.0f};
    std::vector<uint32_t> none;
    ref::sgd(h, w1.v, dw1.v, none);
    ref::sgd(h, b1, db1, none);
    ref::sgd(h, w2.v, dw2.v, none);
    ref::sgd(h, b2, db2, none);
    return ce.loss;
  }
};

// Labels from a random linear teacher, so the batch is learnable.
std::vector<int32_t> teacher_labels(const ref::Mat& x, uint32_t classes, uint32_t seed) {
  const ref::Mat t = random_mat(x.cols, classes, 1.0f, seed);
  std::vector<int32_t> labels(x.rows);
  for (uint32_t r = 0; r < x.rows; ++r) {
    double best = -1e30;
    for (uint32_t c = 0; c < classes; ++c) {
      double s = 0;
      for (uint32_t k = 0; k < x.cols; ++k)
        s += double{ref::value(x.at(r, k))} * ref::value(t.at(k, c));
      if (s > best) {
        best = s;
        labels[r] = static_cast<int32_t>(c);
      }
    }
  }
  return labels;
}

class Mlp : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Mlp, ::testing::Values(4u, 16u));

TEST_P(Mlp, SgdStepsMatchReferenceAndLossDecreases) {
  Rig rig(GetParam());
  const uint32_t n = rig.n();
  const MlpShape shape{2 * n + 2, n + 3, n + 5, std::min(10u, n - 1)};
  const float lr = 0.5f;
  const int steps = 8;
  const MlpPlan plan = plan_mlp(shape, rig.arena());
  const ref::Mat x = random_mat(shape.batch, shape.inputs, 1.0f, 91);
  const std::vector<int32_t> labels = teacher_labels(x, shape.classes, 92);
  RefMlp r{random_mat(shape.inputs, shape.hidden, 0.5f, 93),
           random_mat(shape.hidden, shape.classes, 0.5f, 94),
           std::vector<uint32_t>(shape.hidden, 0), std::vector<uint32_t>(shape.classes, 0)};
  MlpHost host;
  host.x = rig.host(plan.x, x.v);
  std::vector<uint32_t> label_lanes((shape.batch + n - 1) / n * n, 0);
  for (uint32_t i = 0; i < shape.batch; ++i) label_lanes[i] = static_cast<uint32_t>(labels[i]);
  host.labels = rig.host_rows(label_lanes);
  std::vector<uint32_t> pad;
  for (float f : pad_row_lanes(shape.classes, n)) pad.push_back(ref::bits(f));
  host.pad_row = rig.host_rows(pad);
  host.w1 = rig.host(plan.w1, r.w1.v);
  host.b1 = rig.host(plan.b1, r.b1);
  host.w2 = rig.host(plan.w2, r.w2.v);
  host.b2 = rig.host(plan.b2, r.b2);
  host.loss = rig.host_rows(std::vector<uint32_t>(n, 0));
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    rig.new_program();
    emit_mlp_sgd_step(rig.pb(), plan, host, SgdParams{lr, 0.0f, 0.0f});
    rig.run();
    const uint32_t want = r.step(x, labels, n, lr);
    uint32_t loss = 0;
    rig.dev().read(host.loss, &loss, 4);
    ASSERT_EQ(loss, want) << "step " << step << ": chip " << ref::value(loss) << ", reference "
                          << ref::value(want);
    losses.push_back(ref::value(loss));
    for (const auto& [m, addr, values] :
         {std::tuple{plan.w1, host.w1, r.w1.v}, std::tuple{plan.w2, host.w2, r.w2.v},
          std::tuple{plan.b1, host.b1, r.b1}, std::tuple{plan.b2, host.b2, r.b2}}) {
      std::vector<float> image(size_t{m.span(n)} * n);
      rig.dev().read(addr, image.data(), image.size() * 4);
      const std::vector<float> got = unpack(m, n, image);
      std::vector<uint32_t> bits(got.size());
      std::memcpy(bits.data(), got.data(), bits.size() * 4);
      ASSERT_EQ(bits, values) << "step " << step;
    }
  }
  for (int step = 1; step < steps; ++step) EXPECT_LT(losses[step], losses[step - 1]) << step;
  EXPECT_LT(losses.back(), 0.7f * losses.front());
}

}  // namespace
}  // namespace tpu::train::test

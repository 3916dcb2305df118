// SPDX-License-Identifier: Apache-2.0
// End to end: SGD and Adam training steps of a 2-layer MLP (Dense - ReLU - Dense - softmax CE) on a
// synthetic batch, every step one program on the golden model, parameters kept in host memory
// (and Adam's moments and state) between steps. Each step's loss and updated parameters equal the
// host reference's bit for bit, and the loss decreases.
#include "mlp.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "rig.h"

namespace tpu::train::test {
namespace {

// The reference training step on unpadded row-major tensors; returns the step's loss.
struct RefMlp {
  ref::Mat w1, w2;
  std::vector<uint32_t> b1, b2;
  std::array<std::vector<uint32_t>, 4> m, v;  // Adam's moments of w1, b1, w2, b2
  ref::Adam adam;

  std::array<std::vector<uint32_t>*, 4> params() { return {&w1.v, &b1, &w2.v, &b2}; }

  // Forward and backward; returns the loss and the gradients of w1, b1, w2, b2.
  uint32_t grads(const ref::Mat& x, const std::vector<int32_t>& labels, uint32_t n,
                 std::array<std::vector<uint32_t>, 4>& g) {
    const ref::Mat z1 = ref::add_row(ref::matmul_tiled(x, w1, n), b1);
    const ref::Mat h1 = ref::relu(z1);
    const ref::Mat z2 = ref::add_row(ref::matmul_tiled(h1, w2, n), b2);
    const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(z2, labels, n);
    g[2] = ref::matmul_tiled(ref::transposed(h1), ce.dlogits, n).v;
    g[3] = ref::column_sums(ce.dlogits);
    const ref::Mat dh1 = ref::matmul_tiled(ce.dlogits, ref::transposed(w2), n);
    const ref::Mat dz1 = ref::relu_backward(z1, dh1);
    g[0] = ref::matmul_tiled(ref::transposed(x), dz1, n).v;
    g[1] = ref::column_sums(dz1);
    return ce.loss;
  }

  uint32_t sgd_step(const ref::Mat& x, const std::vector<int32_t>& labels, uint32_t n, float lr) {
    std::array<std::vector<uint32_t>, 4> g;
    const uint32_t loss = grads(x, labels, n, g);
    std::vector<uint32_t> none;
    for (size_t i = 0; i < 4; ++i) ref::sgd(ref::Sgd{lr, 0.0f, 0.0f}, *params()[i], g[i], none);
    return loss;
  }

  uint32_t adam_step(const ref::Mat& x, const std::vector<int32_t>& labels, uint32_t n) {
    std::array<std::vector<uint32_t>, 4> g;
    const uint32_t loss = grads(x, labels, n, g);
    uint32_t update_scale = 0, eps_term = 0;
    ref::adam_begin_step(adam, update_scale, eps_term);
    for (size_t i = 0; i < 4; ++i) {
      if (m[i].empty()) m[i] = v[i] = std::vector<uint32_t>(g[i].size(), 0);
      ref::adam_update(adam, update_scale, eps_term, *params()[i], g[i], m[i], v[i]);
    }
    return loss;
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

std::vector<uint32_t> read_mat(Rig& rig, const VMat& m, uint32_t addr) {
  std::vector<float> image(size_t{m.span(rig.n())} * rig.n());
  rig.dev().read(addr, image.data(), image.size() * 4);
  const std::vector<float> got = unpack(m, rig.n(), image);
  std::vector<uint32_t> bits(got.size());
  std::memcpy(bits.data(), got.data(), bits.size() * 4);
  return bits;
}

// A synthetic problem, its plan and host buffers, and the reference with the same weights.
struct Problem {
  MlpShape shape;
  MlpPlan plan;
  ref::Mat x;
  std::vector<int32_t> labels;
  RefMlp r;
  MlpHost host;

  explicit Problem(Rig& rig) {
    const uint32_t n = rig.n();
    shape = MlpShape{2 * n + 2, n + 3, n + 5, std::min(10u, n - 1)};
    plan = plan_mlp(shape, rig.arena());
    x = random_mat(shape.batch, shape.inputs, 1.0f, 91);
    labels = teacher_labels(x, shape.classes, 92);
    r.w1 = random_mat(shape.inputs, shape.hidden, 0.5f, 93);
    r.w2 = random_mat(shape.hidden, shape.classes, 0.5f, 94);
    r.b1.assign(shape.hidden, 0);
    r.b2.assign(shape.classes, 0);
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
    for (size_t i = 0; i < 4; ++i) {
      const std::vector<uint32_t> zero(size_t{plan.m[i].rows} * plan.m[i].cols, 0);
      host.m[i] = rig.host(plan.m[i], zero);
      host.v[i] = rig.host(plan.v[i], zero);
    }
    std::vector<uint32_t> state(AdamState::kRows * n, 0);
    for (uint32_t j = 0; j < 2 * n; ++j) state[j] = ref::bits(1.0f);
    host.adam_state = rig.host_rows(state);
  }

  // The chip's loss of the last step; every parameter must equal the reference's.
  float check(Rig& rig, uint32_t want, int step) {
    uint32_t loss = 0;
    rig.dev().read(host.loss, &loss, 4);
    EXPECT_EQ(loss, want) << "step " << step << ": chip " << ref::value(loss) << ", reference "
                          << ref::value(want);
    const std::array<const VMat*, 4> vm = {&plan.w1, &plan.b1, &plan.w2, &plan.b2};
    const std::array<uint32_t, 4> addr = {host.w1, host.b1, host.w2, host.b2};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(read_mat(rig, *vm[i], addr[i]), *r.params()[i]) << "step " << step << " #" << i;
    }
    return ref::value(loss);
  }
};

void expect_decreasing(const std::vector<float>& losses, float factor) {
  for (size_t step = 1; step < losses.size(); ++step) {
    EXPECT_LT(losses[step], losses[step - 1]) << step;
  }
  EXPECT_LT(losses.back(), factor * losses.front());
}

class Mlp : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Mlp, ::testing::Values(4u, 16u));

TEST_P(Mlp, SgdStepsMatchReferenceAndLossDecreases) {
  Rig rig(GetParam());
  Problem p(rig);
  const float lr = 0.5f;
  std::vector<float> losses;
  for (int step = 0; step < 8; ++step) {
    rig.new_program();
    emit_mlp_sgd_step(rig.pb(), p.plan, p.host, SgdParams{lr, 0.0f, 0.0f});
    rig.run();
    losses.push_back(p.check(rig, p.r.sgd_step(p.x, p.labels, rig.n(), lr), step));
    if (HasFailure()) return;
  }
  expect_decreasing(losses, 0.7f);
}

TEST_P(Mlp, AdamStepsMatchReferenceAndLossDecreases) {
  Rig rig(GetParam());
  Problem p(rig);
  const AdamParams h{0.05f, 0.9f, 0.999f, 1e-7f, 0.0f};
  p.r.adam = ref::Adam{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay};
  std::vector<float> losses;
  for (int step = 0; step < 8; ++step) {
    rig.new_program();
    emit_mlp_adam_step(rig.pb(), p.plan, p.host, h);
    rig.run();
    losses.push_back(p.check(rig, p.r.adam_step(p.x, p.labels, rig.n()), step));
    if (HasFailure()) return;
  }
  for (size_t i = 0; i < 4; ++i) {  // the moments streamed back equal the reference's too
    EXPECT_EQ(read_mat(rig, p.plan.m[i], p.host.m[i]), p.r.m[i]) << i;
    EXPECT_EQ(read_mat(rig, p.plan.v[i], p.host.v[i]), p.r.v[i]) << i;
  }
  expect_decreasing(losses, 0.7f);
}

}  // namespace
}  // namespace tpu::train::test

// SPDX-License-Identifier: Apache-2.0
// The Keras example's architecture in miniature, composed from the kernels on the chip:
// Conv 3x3 (cin 1) -> MaxPool 2 -> ReLU -> Flatten -> Dense -> softmax cross-entropy, backward
// and SGD, 3 steps in one program; every step's loss and the final parameters equal the host
// reference composed from reference.h, bit for bit, and the loss decreases.
#include <gtest/gtest.h>

#include <cstdio>

#include "rig.h"

namespace tpu::train::test {
namespace {

class CnnStep : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, CnnStep, ::testing::Values(4u, 16u));

constexpr uint32_t kH = 6, kC = 4, kClasses = 3, kSteps = 3;
constexpr float kLr = 0.5f;

void expect_bits(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: chip 0x" << std::hex << got[i] << ", reference 0x"
                    << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

// The reference model: conv W (OIHW) and bias, Dense W in the chip's feature order and bias.
struct RefModel {
  ref::Tensor wc;
  std::vector<uint32_t> bc;
  ref::Mat wd;
  std::vector<uint32_t> bd;
};

std::vector<uint32_t> as_bits(const std::vector<float>& f) {
  std::vector<uint32_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i) b[i] = ref::bits(f[i]);
  return b;
}
std::vector<float> as_floats(const std::vector<uint32_t>& b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i) f[i] = ref::value(b[i]);
  return f;
}
// Chip feature order of the Flatten (docs/training.md): ((c/n)*hw + p)*n + c%n.
uint32_t feature(uint32_t c, uint32_t p, uint32_t hw, uint32_t n) {
  return ((c / n) * hw + p) * n + c % n;
}

// One SGD step of the reference; returns the loss.
uint32_t ref_step(RefModel& m, const ref::Tensor& x, const std::vector<int32_t>& labels,
                  uint32_t n) {
  const ref::Window conv{3, 3, 1, 1, 0, 0, 0, 0}, pool{2, 2, 2, 2, 0, 0, 0, 0};
  const ref::Tensor y1 = ref::conv2d(x, m.wc, m.bc, conv, 1, n);
  const ref::MaxPoolResult p = ref::maxpool(y1, pool);
  ref::Tensor a = p.y;
  for (uint32_t& v : a.v) v = ref::fmax(v, 0u);  // ReLU
  const uint32_t hw = a.h * a.w, feats = round_up(kC, n) * hw;
  ref::Mat xf = ref::zeros(x.b, feats);
  for (uint32_t b = 0; b < x.b; ++b)
    for (uint32_t c = 0; c < kC; ++c)
      for (uint32_t q = 0; q < hw; ++q)
        xf.at(b, feature(c, q, hw, n)) = a.at(b, c, q / a.w, q % a.w);
  const ref::Mat z = ref::add_row(ref::matmul_tiled(xf, m.wd, n), m.bd);
  const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(z, labels, n);
  const ref::Mat dwd = ref::matmul_tiled(ref::transposed(xf), ce.dlogits, n);
  const std::vector<uint32_t> dbd = ref::column_sums(ce.dlogits);
  const ref::Mat dxf = ref::matmul_tiled(ce.dlogits, ref::transposed(m.wd), n);
  ref::Tensor da = ref::tensor(x.b, kC, a.h, a.w);  // dX of the Dense, unflattened
  for (uint32_t b = 0; b < x.b; ++b)
    for (uint32_t c = 0; c < kC; ++c)
      for (uint32_t q = 0; q < hw; ++q)
        da.at(b, c, q / a.w, q % a.w) = dxf.at(b, feature(c, q, hw, n));
  const uint32_t count = static_cast<uint32_t>(da.v.size());
  da.v = ref::relu_backward(ref::Mat{1, count, p.y.v}, ref::Mat{1, count, da.v}).v;
  const ref::Tensor dy1 = ref::maxpool_dx(p.argmax, da, pool, y1.h, y1.w);
  const ref::Tensor dwc = ref::conv2d_dw(x, dy1, conv, 1, n);
  std::vector<uint32_t> dbc(kC, 0x80000000u);  // rows (y, x, b) in order from -0
  for (uint32_t q = 0; q < y1.h * y1.w; ++q)
    for (uint32_t b = 0; b < x.b; ++b)
      for (uint32_t c = 0; c < kC; ++c) dbc[c] = ref::add(dbc[c], dy1.at(b, c, q / y1.w, q % y1.w));
  std::vector<uint32_t> none;
  const ref::Sgd h{kLr, 0.0f, 0.0f};
  ref::sgd(h, m.wc.v, dwc.v, none);
  ref::sgd(h, m.bc, dbc, none);
  ref::sgd(h, m.wd.v, dwd.v, none);
  ref::sgd(h, m.bd, dbd, none);
  return ce.loss;
}

TEST_P(CnnStep, ThreeSgdStepsMatchReference) {
  const uint32_t n = GetParam();
  Rig rig(n, 16384);
  ConvGeom g;
  g.batch = n;
  g.cout = kC;
  g.h = g.w = kH;
  g.kh = g.kw = 3;
  PoolGeom pg;
  pg.batch = n;
  pg.c = kC;
  pg.h = pg.w = g.ho();
  const uint32_t hw = pg.ho() * pg.wo();
  // Data: random images, labels b mod 3 (a fixed batch the steps fit).
  ref::Tensor x = ref::tensor(n, 1, kH, kH);
  x.v = random_values(x.v.size(), 1.0f, 201);
  std::vector<int32_t> labels(n);
  for (uint32_t b = 0; b < n; ++b) labels[b] = static_cast<int32_t>(b % kClasses);
  RefModel m{ref::tensor(kC, 1, 3, 3), random_values(kC, 0.1f, 203), ref::zeros(1, 1),
             random_values(kClasses, 0.1f, 205)};
  m.wc.v = random_values(m.wc.v.size(), 0.5f, 202);
  m.wd = random_mat(round_up(kC, n) * hw, kClasses, 0.5f, 204);
  for (uint32_t f = 0; f < m.wd.rows; ++f)  // rows of padding channels stay +0
    if (f % n >= kC)
      for (uint32_t o = 0; o < kClasses; ++o) m.wd.at(f, o) = 0u;

  VmemArena& ar = rig.arena();
  VMat vx = conv_input_matrix(ar, g), wc = ar.matrix(g.weight_rows(n), kC);
  VMat bc = ar.row_vector(kC), y1 = ar.matrix(g.ho() * g.wo() * n, kC);
  VMat pooled = ar.matrix(hw * n, kC), am = ar.matrix(hw * n, kC), act = ar.matrix(hw * n, kC);
  const VMat flat = flatten_view(act, hw, n, n);
  VMat wd = ar.matrix(flat.cols, kClasses), bd = ar.row_vector(kClasses);
  VMat z = ar.matrix(n, kClasses), dz = ar.matrix(n, kClasses);
  VMat dwd = ar.matrix(flat.cols, kClasses), dbd = ar.row_vector(kClasses);
  VMat dact = ar.matrix(hw * n, kC), dpool = ar.matrix(hw * n, kC);
  VMat dy1 = ar.matrix(y1.rows, kC), dwc = ar.matrix(wc.rows, kC), dbc = ar.row_vector(kC);
  const uint32_t conv_scratch = ar.rows(conv_scratch_rows(g, rig.dev().params(), 0));
  const uint32_t pool_scratch = ar.rows(pool_scratch_rows(pg, n));
  const uint32_t xt = ar.rows(flat.span(n)), relu_scratch = ar.rows(act.span(n));
  const uint32_t sgd_scratch = ar.rows(2 * wd.span(n));
  SoftmaxCe ce;
  ce.logits = z;
  ce.dlogits = dz;
  ce.labels = ar.rows(1);
  ce.pad_row = ar.rows(1);
  ce.loss = ar.rows(kSteps);
  ce.scratch = ar.rows(softmax_ce_scratch_rows(n, n));
  const uint32_t loss0 = ce.loss;

  rig.put(vx, as_bits(conv_input_values(g, n, as_floats(x.v))));
  rig.put(wc, as_bits(conv_weight_values(g, n, as_floats(m.wc.v))));
  rig.put(bc, m.bc);
  rig.put(wd, m.wd.v);
  rig.put(bd, m.bd);
  std::vector<uint32_t> lab(n);
  for (uint32_t b = 0; b < n; ++b) lab[b] = static_cast<uint32_t>(labels[b]);
  rig.put_rows(ce.labels, lab);
  rig.put_rows(ce.pad_row, as_bits(pad_row_lanes(kClasses, n)));
  const SgdParams sgd{kLr, 0.0f, 0.0f};
  ProgramBuilder& pb = rig.pb();
  for (uint32_t step = 0; step < kSteps; ++step) {
    ce.loss = loss0 + step;
    conv2d_forward(pb, g, vx, wc, &bc, y1, conv_scratch, 0);
    maxpool_forward(pb, pg, y1, pooled, am, pool_scratch);
    relu_forward(pb, pooled, act);
    dense_forward(pb, flat, wd, &bd, z, 0);
    softmax_cross_entropy(pb, ce);
    dense_backward_weights(pb, flat, dz, dwd, xt, 0);
    bias_grad(pb, dz, dbd);
    dense_backward_input(pb, dz, wd, flatten_view(dact, hw, n, n), 0);
    relu_backward(pb, pooled, dact, dpool, relu_scratch);
    maxpool_backward(pb, pg, am, dpool, dy1, pool_scratch);
    conv2d_backward_weights(pb, g, vx, dy1, dwc, conv_scratch, 0);
    bias_grad(pb, dy1, dbc);
    sgd_update(pb, sgd, wc.base, dwc.base, 0, wc.span(n), sgd_scratch);
    sgd_update(pb, sgd, bc.base, dbc.base, 0, bc.span(n), sgd_scratch);
    sgd_update(pb, sgd, wd.base, dwd.base, 0, wd.span(n), sgd_scratch);
    sgd_update(pb, sgd, bd.base, dbd.base, 0, bd.span(n), sgd_scratch);
  }
  const VMat losses{loss0, kSteps, n, kSteps};
  rig.want(losses);
  for (const VMat v : {wc, bc, wd, bd}) rig.want(v);
  rig.run();

  const std::vector<uint32_t> got_loss = rig.got_image(losses);
  float first = 0, last = 0;
  for (uint32_t step = 0; step < kSteps; ++step) {
    const uint32_t want = ref_step(m, x, labels, n);
    EXPECT_EQ(got_loss[step * n], want)
        << "step " << step << ": chip " << ref::value(got_loss[step * n]) << ", reference "
        << ref::value(want);
    (step == 0 ? first : last) = ref::value(want);
  }
  EXPECT_LT(last, first);
  std::printf("N = %u: loss per step %.4f ... %.4f\n", n, first, last);
  expect_bits(as_bits(conv_weight_oihw(g, n, as_floats(rig.got(wc)))), m.wc.v, "conv W");
  expect_bits(rig.got(bc), m.bc, "conv bias");
  expect_bits(rig.got(wd), m.wd.v, "dense W");
  expect_bits(rig.got(bd), m.bd, "dense bias");
}

}  // namespace
}  // namespace tpu::train::test

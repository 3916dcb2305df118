// SPDX-License-Identifier: Apache-2.0
// Optimizer updates on the golden model, several steps with the parameters and optimizer state
// streamed from and back to host memory every step, against the host reference bit for bit;
// the reference against the double-precision formulas within a stated tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "rig.h"

namespace tpu::train::test {
namespace {

constexpr uint32_t kRows = 37;  // flat tensor rows (not a multiple of anything in particular)
constexpr int kSteps = 3;

class Optimizer : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Optimizer, ::testing::Values(4u, 16u));

// A flat tensor of kRows VMEM rows with a host buffer it streams from / to.
struct Flat {
  VMat m;
  uint32_t addr = 0;
};

Flat flat(Rig& rig, const std::vector<uint32_t>& values, uint32_t rows = kRows) {
  Flat f;
  f.m = VMat{rig.arena().rows(rows), rows, rig.n(), rows};
  f.addr = rig.host(f.m, values);
  return f;
}

std::vector<uint32_t> read(Rig& rig, const Flat& f) {
  std::vector<uint32_t> v(size_t{f.m.rows} * rig.n());
  rig.dev().read(f.addr, v.data(), v.size() * 4);
  return v;
}

void sgd_steps(uint32_t n, const SgdParams& h) {
  Rig rig(n);
  const size_t count = size_t{kRows} * n;
  std::vector<uint32_t> p = random_values(count, 1.0f, 31), vel(count, 0);
  Flat fp = flat(rig, p), fv = flat(rig, vel), fg = flat(rig, std::vector<uint32_t>(count, 0));
  const uint32_t scratch = rig.arena().rows(2 * kRows);
  const ref::Sgd rh{h.lr, h.momentum, h.weight_decay};
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<uint32_t> g = random_values(count, 0.5f, 40 + step);
    rig.dev().write(fg.addr, g.data(), g.size() * 4);  // a new gradient (the backward pass's)
    rig.new_program();
    for (const Flat* f : {&fp, &fv, &fg}) load(rig.pb(), f->m, f->addr);
    sgd_update(rig.pb(), h, fp.m.base, fg.m.base, fv.m.base, kRows, scratch);
    store(rig.pb(), fp.m, fp.addr);
    store(rig.pb(), fv.m, fv.addr);
    rig.run();
    ref::sgd(rh, p, g, vel);
    ASSERT_EQ(read(rig, fp), p) << "step " << step;
    if (h.momentum != 0.0f) {
      ASSERT_EQ(read(rig, fv), vel) << "step " << step;
    }
  }
}

TEST_P(Optimizer, Sgd) { sgd_steps(GetParam(), SgdParams{0.05f, 0.0f, 0.0f}); }
TEST_P(Optimizer, SgdMomentumWeightDecay) { sgd_steps(GetParam(), SgdParams{0.05f, 0.9f, 1e-2f}); }

// `rows` rows per tensor; `special` puts +-inf and NaN gradients in a few lanes (v, and so the
// denominator's Newton steps, then +inf / NaN: chip and reference must agree bit for bit).
// The moments are compared as the chip keeps them (scaled: m / (1 - beta1), v / (1 - beta2)).
// `split`: the moment decays by adam_decay_moments first, then adam_update(..., decayed).
void adam_steps(uint32_t n, const AdamParams& h, uint32_t rows = kRows, bool special = false,
                bool split = false) {
  Rig rig(n);
  const size_t count = size_t{rows} * n;
  std::vector<uint32_t> p = random_values(count, 1.0f, 51), m(count, 0), v(count, 0);
  Flat fp = flat(rig, p, rows), fm = flat(rig, m, rows), fv = flat(rig, v, rows);
  Flat fg = flat(rig, std::vector<uint32_t>(count, 0), rows);
  // beta1^0 = beta2^0 = 1.0 in every lane (set once, before training).
  const AdamState s{rig.arena().rows(AdamState::kRows)};
  std::vector<uint32_t> state(AdamState::kRows * n, 0);
  for (uint32_t j = 0; j < 2 * n; ++j) state[j] = ref::bits(1.0f);
  const VMat sm{s.first, AdamState::kRows, n, AdamState::kRows};
  const uint32_t state_addr = rig.host(sm, state);
  const uint32_t scratch = rig.arena().rows(6 * rows);
  ref::Adam rh{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay};
  for (int step = 0; step < kSteps; ++step) {
    std::vector<uint32_t> g = random_values(count, 0.5f, 60 + step);
    g[step] = 0;  // a zero gradient: v stays 0 at first, sqrt(0) = +0
    if (special) {
      g[count - 1] = 0x7F800000u;  // +inf
      g[count - 2] = 0xFF800000u;  // -inf
      g[count - 3] = 0x7FC00000u;  // NaN
    }
    rig.dev().write(fg.addr, g.data(), g.size() * 4);
    rig.new_program();
    for (const Flat* f : {&fp, &fm, &fv, &fg}) load(rig.pb(), f->m, f->addr);
    load(rig.pb(), sm, state_addr);
    adam_begin_step(rig.pb(), h, s, scratch);
    if (split) adam_decay_moments(rig.pb(), h, fm.m.base, fv.m.base, rows);
    adam_update(rig.pb(), h, s, fp.m.base, fg.m.base, fm.m.base, fv.m.base, rows, scratch, split);
    for (const Flat* f : {&fp, &fm, &fv}) store(rig.pb(), f->m, f->addr);
    store(rig.pb(), sm, state_addr);
    rig.run();
    uint32_t update_scale = 0, eps_term = 0;
    ref::adam_begin_step(rh, update_scale, eps_term);
    ref::adam_update(rh, update_scale, eps_term, p, g, m, v);
    ASSERT_EQ(read(rig, fp), p) << "step " << step;
    ASSERT_EQ(read(rig, fm), m) << "step " << step;
    ASSERT_EQ(read(rig, fv), v) << "step " << step;
    std::vector<uint32_t> got_state(state.size());
    rig.dev().read(state_addr, got_state.data(), got_state.size() * 4);
    EXPECT_EQ(got_state[0], rh.beta1_pow);
    EXPECT_EQ(got_state[2 * n], update_scale);
    EXPECT_EQ(got_state[3 * n], eps_term);
  }
}

TEST_P(Optimizer, AdamWithBiasCorrection) { adam_steps(GetParam(), AdamParams{}); }
// 288 rows (2 lines of 144: one instruction per pass) with infinite and NaN gradients.
TEST_P(Optimizer, AdamEvenLinesAndSpecialGradients) {
  adam_steps(GetParam(), AdamParams{}, 288, true);
}
TEST_P(Optimizer, AdamMomentDecaysAhead) {
  adam_steps(GetParam(), AdamParams{1e-2f, 0.8f, 0.99f, 1e-6f, 1e-2f}, kRows, false, true);
}
TEST_P(Optimizer, AdamWeightDecay) {
  adam_steps(GetParam(), AdamParams{1e-2f, 0.8f, 0.99f, 1e-6f, 1e-2f});
}

// The reference's Adam against the formula in double precision (PyTorch's Adam: step size
// lr / (1 - b1^t), denominator sqrt(v) / sqrt(1 - b2^t) + eps; textbook moments, not the
// chip's scaled ones): after 5 steps every parameter within 1e-4 * lr * t of the double result
// (the Newton steps' few ulps and fp32 state).
TEST(OptimizerReference, AdamIsCloseToDoubleFormula) {
  const size_t count = 256;
  std::vector<uint32_t> p = random_values(count, 1.0f, 71), m(count, 0), v(count, 0);
  std::vector<double> dp, dm(count, 0), dv(count, 0);
  for (uint32_t b : p) dp.push_back(ref::value(b));
  ref::Adam h{1e-3f, 0.9f, 0.999f, 1e-7f, 0.0f};
  const int steps = 5;
  for (int t = 1; t <= steps; ++t) {
    const std::vector<uint32_t> g = random_values(count, 0.5f, 80 + t);
    uint32_t update_scale = 0, eps_term = 0;
    ref::adam_begin_step(h, update_scale, eps_term);
    ref::adam_update(h, update_scale, eps_term, p, g, m, v);
    const double b1 = h.beta1, b2 = h.beta2;
    for (size_t i = 0; i < count; ++i) {
      const double gi = ref::value(g[i]);
      dm[i] = b1 * dm[i] + (1 - b1) * gi;
      dv[i] = b2 * dv[i] + (1 - b2) * gi * gi;
      const double denom = std::sqrt(dv[i]) / std::sqrt(1 - std::pow(b2, t)) + h.eps;
      dp[i] -= h.lr / (1 - std::pow(b1, t)) * dm[i] / denom;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    EXPECT_NEAR(ref::value(p[i]), dp[i], 1e-4 * h.lr * steps) << i;
  }
}

// One step from zero moments over gradients spanning 2^-60 .. 2^60 (and 0): the update equals
// the textbook lr * g / (|g| + eps) (m_hat = g, v_hat = g^2 at t = 1) within 14 ulp of fp32
// (in units of 2^-24 relative, the bounds added up: d = 2^13 sqrt(v) + eps_term 4 (the scaled
// sqrt 2, eps_term 3.5 from vsqrt 2.5, C_e and its product 1, the add 0.5), its reciprocal 2,
// m * r * scale 1, the scale 6.5 (vrcp 2.5, vsqrt 2.5, C_u and two products 1.5); the measured
// maxima are in docs/training.md "The Adam update").
TEST(OptimizerReference, AdamFirstStepWithinUlpsOfTextbook) {
  const ref::Adam h0{1e-3f, 0.9f, 0.999f, 1e-7f, 0.0f};
  std::vector<uint32_t> g;
  for (int e = -60; e <= 60; ++e)
    for (float f : {1.0f, 1.37f, -1.9999f, 1.5f}) g.push_back(ref::bits(std::ldexp(f, e)));
  g.push_back(0);
  ref::Adam h = h0;
  std::vector<uint32_t> p(g.size(), 0), m(g.size(), 0), v(g.size(), 0);
  uint32_t update_scale = 0, eps_term = 0;
  ref::adam_begin_step(h, update_scale, eps_term);
  ref::adam_update(h, update_scale, eps_term, p, g, m, v);
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double gi = ref::value(g[i]);
    const double want = -double{h0.lr} * gi / (std::fabs(gi) + double{h0.eps});
    if (want == 0) {
      EXPECT_EQ(ref::value(p[i]), 0.0f) << i;
      continue;
    }
    worst = std::max(worst, std::fabs(ref::value(p[i]) - want) / std::fabs(want));
  }
  EXPECT_LE(worst, 14.0 * std::ldexp(1.0, -24));
  EXPECT_GT(worst, 0.0);  // not a copy of the formula: the sequences' rounding shows
}

// 33 vector passes (31 after adam_decay_moments): each one instruction on 288 rows.
TEST(OptimizerPasses, AdamUpdateIs33Passes) {
  for (bool decayed : {false, true}) {
    Rig rig(16);
    ProgramBuilder& pb = rig.pb();
    const uint32_t rows = 288;
    adam_update(pb, AdamParams{}, AdamState{0}, 8, 8 + rows, 8 + 2 * rows, 8 + 3 * rows, rows,
                8 + 4 * rows, decayed);
    EXPECT_EQ(pb.size(), decayed ? 31u : 33u);
  }
}

// Hyper-parameters whose folded constants leave the normal fp32 range are named errors.
TEST(OptimizerErrors, AdamConstantsOutOfRange) {
  Rig rig(4);
  ProgramBuilder& pb = rig.pb();
  for (const AdamParams& h : {AdamParams{1e38f, 0.9f, 0.999f, 1e-7f, 0.0f},
                              AdamParams{1e-3f, 0.9f, 0.999f, 1e-44f, 0.0f}}) {
    try {
      adam_begin_step(pb, h, AdamState{0}, 4);
      FAIL() << "no error for lr " << h.lr << " eps " << h.eps;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("adam: 2^13 * lr"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(pb.size(), 0u);
}

}  // namespace
}  // namespace tpu::train::test

// SPDX-License-Identifier: Apache-2.0
// Optimizer updates on the vector unit: SGD (momentum, weight decay) and Adam with bias
// correction computed on the chip.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "detail.h"
#include "kernels.h"

namespace tpu::train {

namespace {

constexpr uint32_t kMaxInner = 255, kMaxOuter = 1023, kMinEvenInner = 32;

// One pass f over `rows` contiguous rows: one `vector` instruction when the rows split into
// equal lines of at least kMinEvenInner (inner <= 255, outer <= 1023; 672 = 3 x 224), else
// ProgramBuilder's split (lines of 255 and a remainder). Same rows, same order: the same bits.
void pass(ProgramBuilder& pb, VecFunc f, uint32_t dst, uint32_t a, BMode bmode, uint32_t b,
          uint32_t rows) {
  uint32_t inner = std::min(rows, kMaxInner);
  while (inner >= kMinEvenInner && (rows % inner != 0 || rows / inner > kMaxOuter)) --inner;
  if (inner < kMinEvenInner || rows == 0) {
    if (bmode == BMode::Imm) {
      pb.vop_imm(f, dst, a, b, rows);
    } else if (bmode == BMode::Fixed) {
      pb.vop_row(f, dst, a, b, rows);
    } else {
      pb.vop(f, dst, a, b, rows);
    }
    return;
  }
  Vector v;
  v.func = static_cast<uint8_t>(f);
  v.bmode = bmode;
  v.dst = static_cast<uint16_t>(dst);
  v.a = static_cast<uint16_t>(a);
  v.inner = static_cast<uint8_t>(inner);
  v.outer = static_cast<uint16_t>(rows / inner);
  v.a_inner_stride = 1;
  v.a_outer_stride = static_cast<uint16_t>(inner);
  v.dst_inner_stride = 1;
  v.dst_outer_stride = static_cast<uint16_t>(inner);
  v.b = b;
  pb.vector(v);
}
void pass_imm(ProgramBuilder& pb, VecFunc f, uint32_t dst, uint32_t a, uint32_t imm_bits,
              uint32_t rows) {
  pass(pb, f, dst, a, BMode::Imm, imm_bits, rows);
}
void pass_rows(ProgramBuilder& pb, VecFunc f, uint32_t dst, uint32_t a, uint32_t b, uint32_t rows) {
  pass(pb, f, dst, a, BMode::RowA, b, rows);
}

// g' = g + wd * p into `out` (or `grad` itself when wd = 0); returns the row of g'.
uint32_t decayed_grad(ProgramBuilder& pb, float wd, uint32_t param, uint32_t grad, uint32_t rows,
                      uint32_t out) {
  if (wd == 0.0f) return grad;
  pb.vop_imm(VecFunc::FMul, out, param, imm(wd), rows);
  pb.vop(VecFunc::FAdd, out, grad, out, rows);
  return out;
}

}  // namespace

void sgd_update(ProgramBuilder& pb, const SgdParams& h, uint32_t param, uint32_t grad,
                uint32_t velocity, uint32_t rows, uint32_t scratch) {
  const uint32_t t = scratch + rows;
  uint32_t g = decayed_grad(pb, h.weight_decay, param, grad, rows, scratch);
  if (h.momentum != 0.0f) {
    pb.vop_imm(VecFunc::FMul, velocity, velocity, imm(h.momentum), rows);
    pb.vop(VecFunc::FAdd, velocity, velocity, g, rows);
    g = velocity;
  }
  pb.vop_imm(VecFunc::FMul, t, g, imm(h.lr), rows);
  pb.vop(VecFunc::FSub, param, param, t, rows);
}

AdamConstants adam_constants(const AdamParams& h) {
  const double c1 = 1.0 - static_cast<double>(h.beta1), c2 = 1.0 - static_cast<double>(h.beta2);
  const double scale = std::ldexp(1.0, kAdamSqrtScaleLog2);
  AdamConstants k;
  k.update = static_cast<float>(scale * h.lr * c1 / std::sqrt(c2));
  k.eps = static_cast<float>(scale * h.eps / std::sqrt(c2));
  auto normal = [](float f) { return std::isfinite(f) && f >= FLT_MIN; };
  if (!normal(k.update) || !normal(k.eps)) {
    char what[200];
    std::snprintf(what, sizeof what,
                  "2^13 * lr * (1 - beta1) / sqrt(1 - beta2) = %g and 2^13 * eps / sqrt(1 - "
                  "beta2) = %g must be normal finite fp32 values (lr, eps or beta2 out of range)",
                  static_cast<double>(k.update), static_cast<double>(k.eps));
    detail::require(false, "adam", what);
  }
  return k;
}

void adam_begin_step(ProgramBuilder& pb, const AdamParams& h, const AdamState& s,
                     uint32_t scratch) {
  const AdamConstants k = adam_constants(h);
  pb.vop_imm(VecFunc::FMul, s.beta1_pow(), s.beta1_pow(), imm(h.beta1), 1);
  pb.vop_imm(VecFunc::FMul, s.beta2_pow(), s.beta2_pow(), imm(h.beta2), 1);
  pb.vop_imm(VecFunc::FSubR, s.update_scale(), s.beta1_pow(), detail::kOne, 1);  // 1 - b1^t
  pb.vrcp(s.update_scale(), s.update_scale(), 1, scratch);
  pb.vop_imm(VecFunc::FSubR, s.eps_term(), s.beta2_pow(), detail::kOne, 1);  // 1 - b2^t
  pb.vsqrt(s.eps_term(), s.eps_term(), 1, scratch);
  pb.vop(VecFunc::FMul, s.update_scale(), s.update_scale(), s.eps_term(), 1);
  pb.vop_imm(VecFunc::FMul, s.update_scale(), s.update_scale(), imm(k.update), 1);
  pb.vop_imm(VecFunc::FMul, s.eps_term(), s.eps_term(), imm(k.eps), 1);
}

void adam_decay_moments(ProgramBuilder& pb, const AdamParams& h, uint32_t m, uint32_t v,
                        uint32_t rows) {
  pass_imm(pb, VecFunc::FMul, m, m, imm(h.beta1), rows);
  pass_imm(pb, VecFunc::FMul, v, v, imm(h.beta2), rows);
}

namespace {

// The fp32 patterns of the Newton steps' constants (docs/training.md "The Adam update").
constexpr uint32_t kRsqrtMagic = 0x5F3759DFu, kRcpMagic = 0x7EF311C3u;
constexpr uint32_t kThree = 0x40400000u, kTwelve = 0x41400000u, k768 = 0x44400000u;
constexpr uint32_t kTwo = 0x40000000u;
constexpr int kRcpNewtonSteps = 3;

// d = 2^13 * sqrt(v) + eps_term into `d` (Y and E scratch tensors; v is not written):
// y0 = RSQRT_MAGIC - bits(v)/2, two Newton steps y <- y (3c^2 - v y^2) for y = c / sqrt(v)
// (c = 1, then 2: the constants 3 and 12 carry the exact powers of two), then the coupled
// step s = (v y)(768 - v y^2) = 2^13 sqrt(v) for c = 16. v = +0 gives s = +0 (y stays finite).
void scaled_sqrt_plus_eps(ProgramBuilder& pb, uint32_t d, uint32_t v, uint32_t y, uint32_t e,
                          uint32_t eps_row, uint32_t rows) {
  pass_imm(pb, VecFunc::Shr, y, v, 1, rows);
  pass_imm(pb, VecFunc::ISubR, y, y, kRsqrtMagic, rows);
  for (uint32_t c3 : {kThree, kTwelve}) {
    pass_rows(pb, VecFunc::FMul, e, v, y, rows);
    pass_rows(pb, VecFunc::FMul, e, e, y, rows);
    pass_imm(pb, VecFunc::FSubR, e, e, c3, rows);
    pass_rows(pb, VecFunc::FMul, y, y, e, rows);
  }
  pass_rows(pb, VecFunc::FMul, d, v, y, rows);
  pass_rows(pb, VecFunc::FMul, e, d, y, rows);
  pass_imm(pb, VecFunc::FSubR, e, e, k768, rows);
  pass_rows(pb, VecFunc::FMul, d, d, e, rows);
  pass(pb, VecFunc::FAdd, d, d, BMode::Fixed, eps_row, rows);
}

}  // namespace

void adam_update(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t param,
                 uint32_t grad, uint32_t m, uint32_t v, uint32_t rows, uint32_t scratch,
                 bool decayed) {
  const uint32_t y = scratch + rows, e = scratch + 2 * rows, d = scratch + 3 * rows;
  const uint32_t g = decayed_grad(pb, h.weight_decay, param, grad, rows, scratch);
  if (!decayed) adam_decay_moments(pb, h, m, v, rows);
  pass_rows(pb, VecFunc::FAdd, m, m, g, rows);  // m' = b1 m' + g
  pass_rows(pb, VecFunc::FMul, e, g, g, rows);
  pass_rows(pb, VecFunc::FAdd, v, v, e, rows);  // v' = b2 v' + g^2
  scaled_sqrt_plus_eps(pb, d, v, y, e, s.eps_term(), rows);
  pass_imm(pb, VecFunc::ISubR, y, d, kRcpMagic, rows);  // y ~ 1 / d, then Newton
  for (int i = 0; i < kRcpNewtonSteps; ++i) {
    pass_rows(pb, VecFunc::FMul, e, d, y, rows);
    pass_imm(pb, VecFunc::FSubR, e, e, kTwo, rows);
    pass_rows(pb, VecFunc::FMul, y, y, e, rows);
  }
  pass_rows(pb, VecFunc::FMul, e, m, y, rows);
  pass(pb, VecFunc::FMul, e, e, BMode::Fixed, s.update_scale(), rows);
  pass_rows(pb, VecFunc::FSub, param, param, e, rows);
}

}  // namespace tpu::train

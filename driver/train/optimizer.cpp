// SPDX-License-Identifier: Apache-2.0
// Optimizer updates on the vector unit: SGD (momentum, weight decay) and Adam with bias
// correction computed on the chip.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "detail.h"
#include "fp_sequences.h"
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

bool is_step(const SeqStep& s, VecFunc f, SeqTensor dst, SeqTensor a, uint32_t imm_bits) {
  return s.func == f && s.dst == dst && s.a == a && s.b_is_imm && s.imm == imm_bits;
}

// isa.md's vsqrt / vrcp steps for adam_update, rewritten where every bit stays the same:
// xor(a, ~0) then iadd(that, c) is isubr(a, c - 1) (two's complement: ~a + c = (c - 1) - a);
// rcp's input is positive (sqrt(v) * r2 + eps with eps > 0), +inf or the canonical NaN
// 0x7FC00000, all with the sign bit clear, so its sign and magnitude masks are dropped (the
// magnitude is the input, the sign +0, and or-ing it back the identity): 18 steps -> 14,
// sqrt 23 -> 22.
std::vector<SeqStep> adam_steps(FpFunction f) {
  std::vector<SeqStep> in = fp_sequence(f).steps, out;
  if (f == FpFunction::Rcp) {
    if (in.size() < 3 || !is_step(in[0], VecFunc::And, SeqTensor::S0, SeqTensor::X, 0x80000000u) ||
        !is_step(in[1], VecFunc::And, SeqTensor::S1, SeqTensor::X, 0x7FFFFFFFu) ||
        in.back().func != VecFunc::Or || in.back().b != SeqTensor::S0 ||
        in[in.size() - 2].dst != in.back().a) {
      throw std::logic_error("adam_update: the vrcp sequence is not the one isa.md describes");
    }
    const SeqTensor y = in.back().dst;
    in.pop_back();
    in.back().dst = y;  // y += correction writes the result
    in.erase(in.begin(), in.begin() + 2);
    for (SeqStep& s : in) {  // |x| is x
      if (s.a == SeqTensor::S1) s.a = SeqTensor::X;
      if (!s.b_is_imm && s.b == SeqTensor::S1) s.b = SeqTensor::X;
    }
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const SeqStep& s = in[i];
    if (i + 1 < in.size() && is_step(s, VecFunc::Xor, s.dst, s.a, 0xFFFFFFFFu) &&
        is_step(in[i + 1], VecFunc::IAdd, s.dst, s.dst, in[i + 1].imm)) {
      out.push_back(SeqStep{VecFunc::ISubR, s.dst, s.a, true, SeqTensor::X, in[i + 1].imm - 1});
      ++i;
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// The steps on `rows` rows: X = src, Y = dst, S_k = scratch + k * rows.
void run_steps(ProgramBuilder& pb, const std::vector<SeqStep>& steps, uint32_t dst, uint32_t src,
               uint32_t rows, uint32_t scratch) {
  auto base = [&](SeqTensor t) -> uint32_t {
    if (t == SeqTensor::X) return src;
    if (t == SeqTensor::Y) return dst;
    return scratch + (static_cast<uint32_t>(t) - static_cast<uint32_t>(SeqTensor::S0)) * rows;
  };
  for (const SeqStep& s : steps) {
    if (is_unary_vec_func(static_cast<uint8_t>(s.func))) {
      pass(pb, s.func, base(s.dst), base(s.a), BMode::RowA, 0, rows);
    } else if (s.b_is_imm) {
      pass_imm(pb, s.func, base(s.dst), base(s.a), s.imm, rows);
    } else {
      pass_rows(pb, s.func, base(s.dst), base(s.a), base(s.b), rows);
    }
  }
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

void adam_begin_step(ProgramBuilder& pb, const AdamParams& h, const AdamState& s,
                     uint32_t scratch) {
  pb.vop_imm(VecFunc::FMul, s.beta1_pow(), s.beta1_pow(), imm(h.beta1), 1);
  pb.vop_imm(VecFunc::FMul, s.beta2_pow(), s.beta2_pow(), imm(h.beta2), 1);
  pb.vop_imm(VecFunc::FSubR, s.step_size(), s.beta1_pow(), detail::kOne, 1);  // 1 - b1^t
  pb.vrcp(s.step_size(), s.step_size(), 1, scratch);
  pb.vop_imm(VecFunc::FMul, s.step_size(), s.step_size(), imm(h.lr), 1);
  pb.vop_imm(VecFunc::FSubR, s.rsqrt_bc2(), s.beta2_pow(), detail::kOne, 1);  // 1 - b2^t
  pb.vrsqrt(s.rsqrt_bc2(), s.rsqrt_bc2(), 1, scratch);
}

void adam_decay_moments(ProgramBuilder& pb, const AdamParams& h, uint32_t m, uint32_t v,
                        uint32_t rows) {
  pass_imm(pb, VecFunc::FMul, m, m, imm(h.beta1), rows);
  pass_imm(pb, VecFunc::FMul, v, v, imm(h.beta2), rows);
}

void adam_update(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t param,
                 uint32_t grad, uint32_t m, uint32_t v, uint32_t rows, uint32_t scratch,
                 bool decayed) {
  const uint32_t t = scratch + rows, fn = scratch + 2 * rows;
  const uint32_t g = decayed_grad(pb, h.weight_decay, param, grad, rows, scratch);
  if (!decayed) pass_imm(pb, VecFunc::FMul, m, m, imm(h.beta1), rows);
  pass_imm(pb, VecFunc::FMul, t, g, imm(1.0f - h.beta1), rows);
  pass_rows(pb, VecFunc::FAdd, m, m, t, rows);
  if (!decayed) pass_imm(pb, VecFunc::FMul, v, v, imm(h.beta2), rows);
  pass_rows(pb, VecFunc::FMul, t, g, g, rows);
  pass_imm(pb, VecFunc::FMul, t, t, imm(1.0f - h.beta2), rows);
  pass_rows(pb, VecFunc::FAdd, v, v, t, rows);
  static const std::vector<SeqStep> kSqrt = adam_steps(FpFunction::Sqrt);
  static const std::vector<SeqStep> kRcp = adam_steps(FpFunction::Rcp);
  run_steps(pb, kSqrt, t, v, rows, fn);                              // sqrt(v)
  pass(pb, VecFunc::FMul, t, t, BMode::Fixed, s.rsqrt_bc2(), rows);  // sqrt(v_hat)
  pass_imm(pb, VecFunc::FAdd, t, t, imm(h.eps), rows);
  run_steps(pb, kRcp, t, t, rows, fn);
  pass_rows(pb, VecFunc::FMul, t, m, t, rows);
  pass(pb, VecFunc::FMul, t, t, BMode::Fixed, s.step_size(), rows);
  pass_rows(pb, VecFunc::FSub, param, param, t, rows);
}

}  // namespace tpu::train

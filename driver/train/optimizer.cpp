// SPDX-License-Identifier: Apache-2.0
// Optimizer updates on the vector unit: SGD (momentum, weight decay) and Adam with bias
// correction computed on the chip.
#include "detail.h"
#include "kernels.h"

namespace tpu::train {

namespace {

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

void adam_update(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t param,
                 uint32_t grad, uint32_t m, uint32_t v, uint32_t rows, uint32_t scratch) {
  const uint32_t t = scratch + rows, fn = scratch + 2 * rows;
  const uint32_t g = decayed_grad(pb, h.weight_decay, param, grad, rows, scratch);
  pb.vop_imm(VecFunc::FMul, m, m, imm(h.beta1), rows);
  pb.vop_imm(VecFunc::FMul, t, g, imm(1.0f - h.beta1), rows);
  pb.vop(VecFunc::FAdd, m, m, t, rows);
  pb.vop_imm(VecFunc::FMul, v, v, imm(h.beta2), rows);
  pb.vop(VecFunc::FMul, t, g, g, rows);
  pb.vop_imm(VecFunc::FMul, t, t, imm(1.0f - h.beta2), rows);
  pb.vop(VecFunc::FAdd, v, v, t, rows);
  pb.vsqrt(t, v, rows, fn);
  pb.vop_row(VecFunc::FMul, t, t, s.rsqrt_bc2(), rows);  // sqrt(v_hat)
  pb.vop_imm(VecFunc::FAdd, t, t, imm(h.eps), rows);
  pb.vrcp(t, t, rows, fn);
  pb.vop(VecFunc::FMul, t, m, t, rows);
  pb.vop_row(VecFunc::FMul, t, t, s.step_size(), rows);
  pb.vop(VecFunc::FSub, param, param, t, rows);
}

}  // namespace tpu::train

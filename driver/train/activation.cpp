// SPDX-License-Identifier: Apache-2.0
// ReLU forward / backward and softmax cross-entropy on the vector unit.
#include <limits>

#include "detail.h"
#include "kernels.h"

namespace tpu::train {

using detail::require;

void relu_forward(ProgramBuilder& pb, const VMat& x, const VMat& y) {
  const uint32_t n = pb.params().N;
  require(x.rows == y.rows && x.cols == y.cols && x.pitch == y.pitch, "relu_forward",
          "X and Y must have the same shape and pitch");
  pb.vop_imm(VecFunc::FMax, y.base, x.base, 0u, x.span(n));
}

void relu_backward(ProgramBuilder& pb, const VMat& x, const VMat& dy, const VMat& dx,
                   uint32_t scratch) {
  const uint32_t n = pb.params().N;
  require(x.rows == dy.rows && x.cols == dy.cols && x.pitch == dy.pitch && dx.rows == x.rows &&
              dx.cols == x.cols && dx.pitch == x.pitch,
          "relu_backward", "X, dY and dX must have the same shape and pitch");
  pb.vop_imm(VecFunc::FLe, scratch, x.base, 0u, x.span(n));  // mask: x <= 0 (NaN: false)
  pb.vop(VecFunc::AndN, dx.base, dy.base, scratch, x.span(n));
}

namespace {

// Scratch tensors of softmax_cross_entropy, as offsets in units of M rows (then R rows).
enum Slot : uint32_t { kS, kMax, kExp, kSum, kLog, kPick, kRcp, kFn, kSlots = kFn + 4 };

uint32_t label_rows(uint32_t m, uint32_t n) { return (m + n - 1) / n; }

// OH rows m < M: lane c = (label[m] == c) as a mask; OHT (R rows) is scratch.
void one_hot(ProgramBuilder& pb, uint32_t labels, uint32_t m, uint32_t oht, uint32_t oh) {
  const uint32_t n = pb.params().N;
  const uint32_t mt = label_rows(m, n);
  for (uint32_t c = 0; c < n; ++c) {  // OHT row mt*N + c, lane j: label[mt*N + j] == c
    Vector v;
    v.func = static_cast<uint8_t>(VecFunc::IEq);
    v.bmode = BMode::Imm;
    v.dst = static_cast<uint16_t>(oht + c);
    v.a = static_cast<uint16_t>(labels);
    v.inner = 1;
    v.outer = static_cast<uint16_t>(mt);
    v.a_outer_stride = 1;
    v.dst_outer_stride = static_cast<uint16_t>(n);
    v.b = c;
    pb.vector(v);
  }
  pb.transpose(oht, oh, mt);
}

}  // namespace

uint32_t softmax_ce_scratch_rows(uint32_t m, uint32_t n) {
  return kSlots * m + 2 * label_rows(m, n) * n;
}

std::vector<float> pad_row_lanes(uint32_t classes, uint32_t n) {
  std::vector<float> row(n, -std::numeric_limits<float>::infinity());
  for (uint32_t c = 0; c < classes && c < n; ++c) row[c] = 0.0f;
  return row;
}

void softmax_cross_entropy(ProgramBuilder& pb, const SoftmaxCe& k) {
  const uint32_t n = pb.params().N;
  const uint32_t m = k.logits.rows;
  require(
      k.logits.cols >= 1 && k.logits.cols <= n, "softmax_cross_entropy",
      "classes = " + std::to_string(k.logits.cols) + " (allowed 1..N = " + std::to_string(n) + ")");
  require(k.dlogits.rows == m && k.dlogits.cols == k.logits.cols, "softmax_cross_entropy",
          "dlogits must have the logits' shape");
  auto slot = [&](uint32_t s) { return k.scratch + s * m; };
  const uint32_t oht = slot(kSlots), oh = oht + label_rows(m, n) * n;
  const uint32_t inv_m = imm(1.0f / static_cast<float>(k.mean_over != 0 ? k.mean_over : m));
  const uint32_t s = slot(kS), e = slot(kExp), sum = slot(kSum), lg = slot(kLog);
  pb.vop_row(VecFunc::FAdd, s, k.logits.base, k.pad_row, m);  // padding lanes -> -inf
  pb.vop_unary(VecFunc::LMax, slot(kMax), s, m);
  pb.vop(VecFunc::FSub, s, s, slot(kMax), m);  // z - max(z)
  pb.vexp(e, s, m, slot(kFn));
  pb.vop_unary(VecFunc::LSum, sum, e, m);
  pb.vlog(lg, sum, m, slot(kFn));
  one_hot(pb, k.labels, m, oht, oh);
  pb.vop(VecFunc::And, slot(kPick), s, oh, m);  // z[label] - max, +0 elsewhere
  pb.vop_unary(VecFunc::LSum, slot(kPick), slot(kPick), m);
  pb.vop(VecFunc::FSub, lg, lg, slot(kPick), m);  // per example: log(sum) - (z[label] - max)
  detail::row_sum(pb, k.loss, lg, m, 1, 0);
  pb.vop_imm(VecFunc::FMul, k.loss, k.loss, inv_m, 1);
  pb.vrcp(slot(kRcp), sum, m, slot(kFn));
  pb.vop(VecFunc::FMul, e, e, slot(kRcp), m);  // softmax
  pb.vop_imm(VecFunc::And, oh, oh, detail::kOne, m);
  pb.vop(VecFunc::FSub, e, e, oh, m);
  pb.vop_imm(VecFunc::FMul, k.dlogits.base, e, inv_m, m);
}

}  // namespace tpu::train

// SPDX-License-Identifier: Apache-2.0
#include "mlp.h"

#include <algorithm>

#include "detail.h"

namespace tpu::train {

MlpPlan plan_mlp(const MlpShape& s, VmemArena& a) {
  const uint32_t n = a.n();
  detail::require(s.batch > 0 && s.inputs > 0 && s.hidden > 0 && s.classes > 0 && s.classes <= n,
                  "plan_mlp", "every dimension must be >= 1 and classes <= N");
  MlpPlan p;
  p.shape = s;
  p.x = a.matrix(s.batch, s.inputs);
  p.w1 = a.matrix(s.inputs, s.hidden);
  p.b1 = a.row_vector(s.hidden);
  p.z1 = a.matrix(s.batch, s.hidden);
  p.h1 = a.matrix(s.batch, s.hidden);
  p.w2 = a.matrix(s.hidden, s.classes);
  p.b2 = a.row_vector(s.classes);
  p.z2 = a.matrix(s.batch, s.classes);
  p.dz2 = a.matrix(s.batch, s.classes);
  p.dw2 = a.matrix(s.hidden, s.classes);
  p.db2 = a.row_vector(s.classes);
  p.dh1 = a.matrix(s.batch, s.hidden);
  p.dz1 = a.matrix(s.batch, s.hidden);
  p.dw1 = a.matrix(s.inputs, s.hidden);
  p.db1 = a.row_vector(s.hidden);
  p.labels = a.rows((s.batch + n - 1) / n);
  p.pad_row = a.rows(1);
  p.loss = a.rows(1);
  // Scratch shared by the kernels, one at a time: the largest need.
  const uint32_t need = std::max({softmax_ce_scratch_rows(s.batch, n), p.x.span(n), p.h1.span(n),
                                  2 * p.w1.span(n), 2 * p.w2.span(n)});
  p.scratch = a.rows(need);
  return p;
}

namespace {

void forward(ProgramBuilder& pb, const MlpPlan& p) {
  dense_forward(pb, p.x, p.w1, &p.b1, p.z1, 0);
  relu_forward(pb, p.z1, p.h1);
  dense_forward(pb, p.h1, p.w2, &p.b2, p.z2, 0);
  SoftmaxCe ce;
  ce.logits = p.z2;
  ce.labels = p.labels;
  ce.pad_row = p.pad_row;
  ce.dlogits = p.dz2;
  ce.loss = p.loss;
  ce.scratch = p.scratch;
  softmax_cross_entropy(pb, ce);
}

void backward(ProgramBuilder& pb, const MlpPlan& p) {
  dense_backward_weights(pb, p.h1, p.dz2, p.dw2, p.scratch, 0);
  bias_grad(pb, p.dz2, p.db2);
  dense_backward_input(pb, p.dz2, p.w2, p.dh1, 0);
  relu_backward(pb, p.z1, p.dh1, p.dz1, p.scratch);
  dense_backward_weights(pb, p.x, p.dz1, p.dw1, p.scratch, 0);
  bias_grad(pb, p.dz1, p.db1);
}

void update(ProgramBuilder& pb, const VMat& param, const VMat& grad, const SgdParams& h,
            uint32_t scratch) {
  const uint32_t rows = param.span(pb.params().N);
  sgd_update(pb, h, param.base, grad.base, 0, rows, scratch);
}

}  // namespace

void emit_mlp_sgd_step(ProgramBuilder& pb, const MlpPlan& p, const MlpHost& host,
                       const SgdParams& h) {
  detail::require(h.momentum == 0.0f, "emit_mlp_sgd_step",
                  "momentum needs velocity tensors, which this step does not plan");
  load(pb, p.x, host.x);
  pb.read_vmem(p.labels, (p.shape.batch + pb.params().N - 1) / pb.params().N, host.labels);
  pb.read_vmem(p.pad_row, 1, host.pad_row);
  load(pb, p.w1, host.w1);
  load(pb, p.b1, host.b1);
  load(pb, p.w2, host.w2);
  load(pb, p.b2, host.b2);
  forward(pb, p);
  backward(pb, p);
  update(pb, p.w1, p.dw1, h, p.scratch);
  update(pb, p.b1, p.db1, h, p.scratch);
  update(pb, p.w2, p.dw2, h, p.scratch);
  update(pb, p.b2, p.db2, h, p.scratch);
  store(pb, p.w1, host.w1);
  store(pb, p.b1, host.b1);
  store(pb, p.w2, host.w2);
  store(pb, p.b2, host.b2);
  pb.write_vmem(p.loss, 1, host.loss);
}

}  // namespace tpu::train

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
  p.m = {a.matrix(s.inputs, s.hidden), a.row_vector(s.hidden), a.matrix(s.hidden, s.classes),
         a.row_vector(s.classes)};
  p.v = {a.matrix(s.inputs, s.hidden), a.row_vector(s.hidden), a.matrix(s.hidden, s.classes),
         a.row_vector(s.classes)};
  p.adam.first = a.rows(AdamState::kRows);
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

// The trainable tensors in a fixed order: w1, b1, w2, b2.
std::array<const VMat*, 4> params(const MlpPlan& p) { return {&p.w1, &p.b1, &p.w2, &p.b2}; }
std::array<const VMat*, 4> grads(const MlpPlan& p) { return {&p.dw1, &p.db1, &p.dw2, &p.db2}; }
std::array<uint32_t, 4> param_addrs(const MlpHost& h) { return {h.w1, h.b1, h.w2, h.b2}; }

// Streams the batch, labels, constants and parameters in; forward; backward.
void begin_step(ProgramBuilder& pb, const MlpPlan& p, const MlpHost& host) {
  load(pb, p.x, host.x);
  pb.read_vmem(p.labels, (p.shape.batch + pb.params().N - 1) / pb.params().N, host.labels);
  pb.read_vmem(p.pad_row, 1, host.pad_row);
  for (size_t i = 0; i < 4; ++i) load(pb, *params(p)[i], param_addrs(host)[i]);
  forward(pb, p);
  backward(pb, p);
}

// Streams the updated parameters and the loss out.
void end_step(ProgramBuilder& pb, const MlpPlan& p, const MlpHost& host) {
  for (size_t i = 0; i < 4; ++i) store(pb, *params(p)[i], param_addrs(host)[i]);
  pb.write_vmem(p.loss, 1, host.loss);
}

}  // namespace

void emit_mlp_sgd_step(ProgramBuilder& pb, const MlpPlan& p, const MlpHost& host,
                       const SgdParams& h) {
  detail::require(h.momentum == 0.0f, "emit_mlp_sgd_step",
                  "momentum needs velocity tensors, which this step does not plan");
  begin_step(pb, p, host);
  for (size_t i = 0; i < 4; ++i) {
    sgd_update(pb, h, params(p)[i]->base, grads(p)[i]->base, 0, params(p)[i]->span(pb.params().N),
               p.scratch);
  }
  end_step(pb, p, host);
}

void emit_mlp_adam_step(ProgramBuilder& pb, const MlpPlan& p, const MlpHost& host,
                        const AdamParams& h) {
  const uint32_t n = pb.params().N;
  for (size_t i = 0; i < 4; ++i) {
    load(pb, p.m[i], host.m[i]);
    load(pb, p.v[i], host.v[i]);
  }
  pb.read_vmem(p.adam.first, AdamState::kRows, host.adam_state);
  begin_step(pb, p, host);
  adam_begin_step(pb, h, p.adam, p.scratch);
  for (size_t i = 0; i < 4; ++i) {
    adam_update(pb, h, p.adam, params(p)[i]->base, grads(p)[i]->base, p.m[i].base, p.v[i].base,
                params(p)[i]->span(n), p.scratch);
  }
  end_step(pb, p, host);
  for (size_t i = 0; i < 4; ++i) {
    store(pb, p.m[i], host.m[i]);
    store(pb, p.v[i], host.v[i]);
  }
  pb.write_vmem(p.adam.first, AdamState::kRows, host.adam_state);
}

}  // namespace tpu::train

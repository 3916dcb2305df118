// SPDX-License-Identifier: Apache-2.0
// Training kernels: each appends to a ProgramBuilder the instructions of one layer's forward,
// backward or update on tensors placed in VMEM (layout.h). docs/training.md describes what
// each emits and the order of every fp32 operation (the host reference in tests/train
// reproduces it bit for bit from docs/isa.md).
//
// Every kernel checks its shapes and throws std::invalid_argument naming the kernel and the
// mismatch; the ProgramBuilder checks every instruction against the chip (ProgramError).
#pragma once

#include <cstdint>

#include "layout.h"

namespace tpu::train {

// ---- Dense / Gemm (dense.cpp). `acc` is the first of the ACC rows the kernel may use
// (rows, or K for dense_backward_weights; at most AccRows - acc).
// Y = X . W (+ bias): X rows x K, W K x Nout, Y rows x Nout; bias a row_vector or nullptr.
// Uses ACC rows [acc, acc + NT * rows) (NT = Nout's column blocks).
void dense_forward(ProgramBuilder& pb, const VMat& x, const VMat& w, const VMat* bias,
                   const VMat& y, uint32_t acc);
// The same in pieces, for a layer streamed through VMEM in chunks of K (each a multiple of N
// but the last): ACC rows acc + nt*rows (+)= X_c . W_c for each chunk c in order
// (`accumulate` false for the first), then dense_forward_finish moves ACC to Y and adds the
// bias. The result is bit-identical to dense_forward on the whole X and W.
void dense_forward_partial(ProgramBuilder& pb, const VMat& x, const VMat& w, uint32_t acc,
                           bool accumulate);
void dense_forward_finish(ProgramBuilder& pb, uint32_t acc, const VMat* bias, const VMat& y);
// dX = dY . W^T (W through load_weights transpose).
void dense_backward_input(ProgramBuilder& pb, const VMat& dy, const VMat& w, const VMat& dx,
                          uint32_t acc);
// dW = X^T . dY (X^T by the transpose unit into `xt`: x.span(N) scratch rows).
void dense_backward_weights(ProgramBuilder& pb, const VMat& x, const VMat& dy, const VMat& dw,
                            uint32_t xt, uint32_t acc);
// db = sum over rows of dY (per lane, rows in order, seeded with -0.0): a row_vector.
void bias_grad(ProgramBuilder& pb, const VMat& dy, const VMat& db);

// ---- ReLU and softmax cross-entropy (activation.cpp).
// Y = max(X, +0) over the whole span (padding stays +0).
void relu_forward(ProgramBuilder& pb, const VMat& x, const VMat& y);
// dX = X > 0 ? dY : +0 (X the forward input); `scratch`: x.span(N) rows.
void relu_backward(ProgramBuilder& pb, const VMat& x, const VMat& dy, const VMat& dx,
                   uint32_t scratch);

// Softmax cross-entropy with integer labels, mean over the batch.
struct SoftmaxCe {
  VMat logits;           // rows = batch M, cols = classes C <= N
  uint32_t labels = 0;   // ceil(M / N) rows of int32 labels, N per row (label m: row m/N, lane m%N)
  uint32_t pad_row = 0;  // constant row: +0.0 in lanes < C, -inf in the others (pad_row_lanes)
  VMat dlogits;          // M x C: (softmax - onehot) / M
  uint32_t loss = 0;     // one row: the mean loss in every lane
  uint32_t scratch = 0;  // softmax_ce_scratch_rows(M, N) rows
};
uint32_t softmax_ce_scratch_rows(uint32_t m, uint32_t n);
std::vector<float> pad_row_lanes(uint32_t classes, uint32_t n);
void softmax_cross_entropy(ProgramBuilder& pb, const SoftmaxCe& k);

// ---- optimizer updates over flat fp32 tensors of `rows` VMEM rows (optimizer.cpp).
// Hyper-parameters are fp32 immediates fixed before training starts.
struct SgdParams {
  float lr = 0.01f;
  float momentum = 0.0f;      // 0: plain SGD (no velocity tensor)
  float weight_decay = 0.0f;  // L2 added to the gradient: g + wd * p
};
// p -= lr * g' (g' = g + wd*p); with momentum v = mu*v + g', p -= lr * v (PyTorch's SGD).
// `velocity` is ignored without momentum. `scratch`: 2 * rows rows.
void sgd_update(ProgramBuilder& pb, const SgdParams& h, uint32_t param, uint32_t grad,
                uint32_t velocity, uint32_t rows, uint32_t scratch);

struct AdamParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-7f;
  float weight_decay = 0.0f;  // L2 added to the gradient (PyTorch Adam's weight_decay)
};
// Four rows of Adam's per-step state: beta1^t, beta2^t (set to 1.0 before the first step),
// and the rows adam_begin_step derives from them.
struct AdamState {
  uint32_t first = 0;
  uint32_t beta1_pow() const { return first; }
  uint32_t beta2_pow() const { return first + 1; }
  uint32_t step_size() const { return first + 2; }  // lr / (1 - beta1^t)
  uint32_t rsqrt_bc2() const { return first + 3; }  // 1 / sqrt(1 - beta2^t)
  static constexpr uint32_t kRows = 4;
};
// Once per step, before the adam_update calls: t += 1 and the bias corrections, on the chip.
// `scratch`: 4 rows.
void adam_begin_step(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t scratch);
// m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
// p -= step_size * m * rcp(sqrt(v) * rsqrt_bc2 + eps). `scratch`: 6 * rows rows.
void adam_update(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t param,
                 uint32_t grad, uint32_t m, uint32_t v, uint32_t rows, uint32_t scratch);

// The fp32 bit pattern of f (an immediate).
uint32_t imm(float f);

}  // namespace tpu::train

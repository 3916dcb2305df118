// SPDX-License-Identifier: Apache-2.0
// One SGD training step of a 2-layer MLP (Dense - ReLU - Dense - softmax cross-entropy), composed
// from the kernels: what the training compiler's backend will emit for such a model. The batch,
// the labels and the parameters live in host memory (standing in for HBM); the step streams
// them into VMEM, runs forward, backward and the update on the chip, and streams the updated
// parameters and the loss back. The host computes nothing.
#pragma once

#include <array>
#include <cstdint>

#include "kernels.h"

namespace tpu::train {

struct MlpShape {
  uint32_t batch = 0, inputs = 0, hidden = 0, classes = 0;  // classes <= N
};

// Host byte addresses of the step's tensors, each in its VMat's packed image (layout.h).
struct MlpHost {
  uint32_t x = 0;                           // batch x inputs
  uint32_t labels = 0;                      // ceil(batch / N) rows of N int32 labels
  uint32_t pad_row = 0;                     // pad_row_lanes(classes, N), one row (a constant)
  uint32_t w1 = 0, b1 = 0, w2 = 0, b2 = 0;  // read and written back every step
  uint32_t loss = 0;                        // one row out: the batch's mean loss in every lane
  // Adam only: the moments of w1, b1, w2, b2 (zeros before the first step) and the
  // AdamState rows (beta1^0 = beta2^0 = 1.0 in every lane before the first step).
  std::array<uint32_t, 4> m{}, v{};
  uint32_t adam_state = 0;
};

// Where every tensor of the step lives in VMEM.
struct MlpPlan {
  MlpShape shape;
  VMat x, w1, b1, z1, h1, w2, b2, z2;      // forward
  VMat dz2, dw2, db2, dh1, dz1, dw1, db1;  // backward
  std::array<VMat, 4> m, v;                // Adam's moments of w1, b1, w2, b2
  AdamState adam;
  uint32_t labels = 0, pad_row = 0, loss = 0, scratch = 0;
};
MlpPlan plan_mlp(const MlpShape& shape, VmemArena& arena);

void emit_mlp_sgd_step(ProgramBuilder& pb, const MlpPlan& plan, const MlpHost& host,
                       const SgdParams& h);
// The same step with Adam (bias correction on the chip); the moments and the AdamState rows
// stream from and back to host memory with the parameters.
void emit_mlp_adam_step(ProgramBuilder& pb, const MlpPlan& plan, const MlpHost& host,
                        const AdamParams& h);

}  // namespace tpu::train

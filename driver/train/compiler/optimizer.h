// SPDX-License-Identifier: Apache-2.0
// Pass 3 of the training compiler: the optimizer update. Appends to a differentiated graph
// (append_backward) one update node per trainable parameter (Phase::Update) over its fp32
// master copy and gradient, and the optimizer's state tensors: SGD's velocity (momentum != 0),
// Adam's moments m and v and its four state rows, advanced once per step by an AdamBegin node
// (bias correction on the chip). The hyper-parameters become immediates at emission (emit.h).
#pragma once

#include "compiler/graph.h"
#include "trainer.h"

namespace tpu::train::compiler {

// Throws std::invalid_argument if the graph has no gradients yet or a parameter has none, or
// for hyper-parameters the update cannot use (lr <= 0 or not finite, momentum / beta outside
// [0, 1), eps <= 0, weight decay < 0).
void append_update(Graph& g, const TrainOptions& opt);

}  // namespace tpu::train::compiler

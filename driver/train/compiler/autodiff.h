// SPDX-License-Identifier: Apache-2.0
// Pass 2 of the training compiler: automatic differentiation. Appends to a graph of forward
// nodes (import_onnx) the loss, softmax cross-entropy of the logits on integer labels (mean
// over the batch; Phase::Loss), and the backward pass (Phase::Backward): for each forward node
// in reverse order, the gradients of its inputs and weights. A tensor read by several nodes
// (fan-out) gets the sum of its readers' gradients, added in the order they were computed
// (AddGrad nodes); the graph input gets no gradient.
#pragma once

#include "compiler/graph.h"

namespace tpu::train::compiler {

// Throws std::invalid_argument if the graph already has a loss, or if a forward node's output
// does not reach the loss (its weights would get no gradient), naming the node.
void append_backward(Graph& g);

}  // namespace tpu::train::compiler

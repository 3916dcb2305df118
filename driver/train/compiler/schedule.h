// SPDX-License-Identifier: Apache-2.0
// Pass 5 of the training compiler: scheduling. The order in which the nodes run in each of
// the two programs a training graph compiles to: the step (forward, loss, backward in reverse
// layer order with each gradient's sums before its first reader, then the updates; the graph
// order the passes built) and the forward pass alone (logits for inference). schedule() checks
// that every node reads only tensors that are in device memory before it runs: the batch and
// the labels (placed by the host), weights, optimizer state and constants (placed at init), or
// tensors an earlier node of the same program wrote.
#pragma once

#include <vector>

#include "compiler/graph.h"

namespace tpu::train::compiler {

struct Schedule {
  std::vector<int> step;     // node ids of one training step
  std::vector<int> forward;  // node ids of the forward pass (the logits)
};

// Throws std::logic_error ("internal: ...") naming the node that would read an unwritten tensor.
Schedule schedule(const Graph& g);
// The check schedule() makes, for an order another pass changed (`program` names it).
void check_order(const Graph& g, const std::vector<int>& order, const char* program);

}  // namespace tpu::train::compiler

// SPDX-License-Identifier: Apache-2.0
// Data-parallel training on a pod (issue 31, docs/training.md "Data-parallel training on a
// pod"): the pass that makes one chip's training graph a pod's. Every chip of the pod runs the
// same graph on its slice of batch / P examples of the global batch; the gradients are summed
// over the chips between the backward pass and the optimizer update, so every chip applies the
// same update to the same weights.
//
// insert_gradient_allreduce runs after append_backward and before append_update. It
//  * makes the loss the mean over the GLOBAL batch (Graph::loss_batch): SoftmaxCe divides the
//    chip's loss and dlogits by B, not by B / P, so the chips' gradients sum to the gradient
//    of the global batch's mean loss, and their losses to that mean;
//  * appends one AllReduce node per parameter gradient (in parameter order) and one for the
//    loss row, each summing its tensor in place over the pod through the inter-chip links.
// An AllReduce reads its tensor, so fuse_dense_update leaves that gradient's DenseGradW and
// update apart (dW must reach device memory to be summed).
//
// emit_all_reduce is its emission: the tensor's device-memory rows, in pieces of at most
// VmemRows rows, read into VMEM from row 0, all-reduced there (the collectives of
// collectives.h: ring, or torus reduce-scatter x / all-reduce y / all-gather x; their chained
// summation order is docs/pod.md "Summation order"), written back. VMEM holds nothing else
// between nodes (schedule.h), so the whole of it is the node's.
#pragma once

#include <cstdint>

#include "compiler/graph.h"
#include "pod.h"
#include "program.h"

namespace tpu::train::compiler {

// Returns the number of AllReduce nodes inserted (0 for a pod of one chip, which only sets
// loss_batch). Throws std::invalid_argument if the graph has no loss yet or already has update
// nodes, or if global_batch is not the graph's batch times the pod's chips.
int insert_gradient_allreduce(Graph& g, const PodTopology& pod, uint32_t global_batch);

// The all-reduce of `rows` device-memory rows (4N bytes each) at `addr` for chip `chip` of
// `pod`, through VMEM rows [0, VmemRows).
void emit_all_reduce(ProgramBuilder& b, const PodTopology& pod, uint32_t chip, uint32_t addr,
                     uint32_t rows);

}  // namespace tpu::train::compiler

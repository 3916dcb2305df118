// SPDX-License-Identifier: Apache-2.0
#include "compiler/allreduce.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "collectives.h"

namespace tpu::train::compiler {

namespace {

// The forward node reading parameter tensor p (its layer).
int layer_of_param(const Graph& g, int p) {
  for (const Node& n : g.nodes)
    if (n.phase == Phase::Forward)
      for (int in : n.in)
        if (in == p) return n.layer;
  return -1;
}

// The all-reduce of VMEM rows [base, base + rows) (collectives.h's all_reduce_program, into
// an open builder).
void all_reduce_rows(ProgramBuilder& b, const PodTopology& pod, uint32_t chip, uint32_t base,
                     uint32_t rows) {
  const RingPosition xr = x_ring(pod, chip);
  const RingPosition yr = y_ring(pod, chip);
  if (xr.size > 1) ring_reduce_scatter(b, xr, base, rows, CollectiveDtype::Fp32, 1);
  const Chunk mine = chunk_of(rows, xr.size, (xr.index + 1) % xr.size);
  if (yr.size > 1 && mine.count > 0) {
    ring_reduce_scatter(b, yr, base + mine.first, mine.count, CollectiveDtype::Fp32, 1);
    ring_all_gather(b, yr, base + mine.first, mine.count, 1);
  }
  if (xr.size > 1) ring_all_gather(b, xr, base, rows, 1);
}

}  // namespace

int insert_gradient_allreduce(Graph& g, const PodTopology& pod, uint32_t global_batch) {
  if (g.loss < 0) {
    throw std::invalid_argument(
        "insert_gradient_allreduce: the graph has no loss (run append_backward first)");
  }
  for (const Node& n : g.nodes) {
    if (n.phase == Phase::Update) {
      throw std::invalid_argument(
          "insert_gradient_allreduce: the graph already has its update (run the pass before "
          "append_update)");
    }
  }
  const uint32_t chips = pod.chips();
  if (chips == 0 || uint64_t{g.batch} * chips != global_batch) {
    throw std::invalid_argument("insert_gradient_allreduce: the global batch " +
                                std::to_string(global_batch) + " is not the chip's batch " +
                                std::to_string(g.batch) + " times the pod's " +
                                std::to_string(chips) + " chips");
  }
  g.pod = pod;
  g.loss_batch = global_batch;
  if (chips == 1) return 0;
  int added = 0;
  for (const Param& p : g.params) {
    if (p.grad < 0) {
      throw std::invalid_argument("insert_gradient_allreduce: parameter '" + p.initializer +
                                  "' has no gradient");
    }
    const int layer = layer_of_param(g, p.tensor);
    const Node& l = g.nodes[static_cast<size_t>(layer)];
    g.add_node(
        make_node(Op::AllReduce, l.name, l.onnx_op, Phase::Backward, layer, {p.grad}, {p.grad}));
    ++added;
  }
  g.add_node(make_node(Op::AllReduce, "loss", "", Phase::Loss, -1, {g.loss}, {g.loss}));
  return added + 1;
}

void emit_all_reduce(ProgramBuilder& b, const PodTopology& pod, uint32_t chip, uint32_t addr,
                     uint32_t rows) {
  if (pod.chips() <= 1) return;
  const uint32_t n = b.params().N, cap = b.params().vmem_rows;
  for (uint32_t r0 = 0; r0 < rows; r0 += cap) {
    const uint32_t count = std::min(cap, rows - r0);
    const uint32_t at = addr + r0 * 4 * n;
    b.read_vmem(0, count, at);
    all_reduce_rows(b, pod, chip, 0, count);
    b.write_vmem(0, count, at);
  }
}

}  // namespace tpu::train::compiler

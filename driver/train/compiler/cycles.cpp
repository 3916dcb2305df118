// SPDX-License-Identifier: Apache-2.0
// Per-layer cycles of a step (emit.h: instruction_work, layer_cycles).
#include <type_traits>

#include "compiler/emit.h"

namespace tpu::train::compiler {

uint64_t instruction_work(const Instruction& instr, const ChipParams& chip) {
  const uint64_t n = chip.N;
  const uint64_t dma_bytes_per_cycle = std::max<uint64_t>(1, chip.axi_width / 16);
  return std::visit(
      [&](const auto& in) -> uint64_t {
        using T = std::decay_t<decltype(in)>;
        if constexpr (std::is_same_v<T, ReadVmem> || std::is_same_v<T, WriteVmem>) {
          return (uint64_t{in.rows} * in.row_bytes(chip.N) + dma_bytes_per_cycle - 1) /
                 dma_bytes_per_cycle;
        } else if constexpr (std::is_same_v<T, MatmulBf16>) {
          return uint64_t{in.inner} * in.outer;
        } else if constexpr (std::is_same_v<T, LoadWeights>) {
          return n * in.tiles;
        } else if constexpr (std::is_same_v<T, Transpose>) {
          return n * in.blocks;
        } else if constexpr (std::is_same_v<T, AccToVmem>) {
          return in.rows;
        } else if constexpr (std::is_same_v<T, Vector>) {
          return uint64_t{in.inner} * in.outer;
        } else {
          return 1;
        }
      },
      instr);
}

std::vector<LayerCycles> layer_cycles(const Graph& g, const Emitted& step, const ChipParams& chip,
                                      uint64_t total) {
  std::vector<LayerCycles> r;
  std::vector<int> row_of_layer(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.phase != Phase::Forward || n.layer != static_cast<int>(i))
      continue;  // (a ConvPad: its Conv's)
    row_of_layer[static_cast<size_t>(n.layer)] = static_cast<int>(r.size());
    r.push_back(LayerCycles{n.name, n.onnx_op, 0, 0, 0});
  }
  const int loss_row = static_cast<int>(r.size());
  r.push_back(LayerCycles{"loss", "SoftmaxCrossEntropy", 0, 0, 0});
  const int adam_row = static_cast<int>(r.size());
  if (g.adam_state >= 0) r.push_back(LayerCycles{"adam", "Adam", 0, 0, 0});
  std::vector<uint64_t> work(step.ranges.size(), 0);
  uint64_t sum = 0;
  for (size_t i = 0; i < step.ranges.size(); ++i) {
    for (size_t k = step.ranges[i].begin; k < step.ranges[i].end; ++k)
      work[i] += instruction_work(step.program[k], chip);
    sum += work[i];
  }
  uint64_t given = 0;
  for (size_t i = 0; i < step.ranges.size(); ++i) {
    const Node& n = g.nodes[static_cast<size_t>(step.ranges[i].node)];
    // The last range takes the rounding (and the final halt), so the parts add up to total.
    const uint64_t c = i + 1 == step.ranges.size()
                           ? total - given
                           : (sum == 0 ? 0
                                       : static_cast<uint64_t>(static_cast<double>(total) *
                                                               static_cast<double>(work[i]) /
                                                               static_cast<double>(sum)));
    given += c;
    const int row = n.op == Op::SoftmaxCe   ? loss_row
                    : n.op == Op::AdamBegin ? adam_row
                                            : row_of_layer[static_cast<size_t>(n.layer)];
    LayerCycles& l = r[static_cast<size_t>(row)];
    (n.phase == Phase::Forward || n.phase == Phase::Loss ? l.forward
     : n.phase == Phase::Backward                        ? l.backward
                                                         : l.update) += c;
  }
  return r;
}

}  // namespace tpu::train::compiler

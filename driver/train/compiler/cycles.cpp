// SPDX-License-Identifier: Apache-2.0
// Per-layer cycles of a step (emit.h: instruction_work, layer_cycles).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "compiler/emit.h"
#include "kernels.h"

namespace tpu::train::compiler {

uint64_t instruction_work(const Instruction& instr, const ChipParams& chip) {
  const uint64_t n = chip.N;
  // The VMEM port moves a row per cycle; without one, read_vmem / write_vmem share the AXI
  // port at about half a beat per cycle.
  // DMA bytes at half an AXI beat per cycle, also with the VMEM port (one row per cycle): the
  // emitter's interleave spreads the DMAs further apart with it, and the Keras step on the RTL
  // was faster so (962,052 cycles against 1,028,073 at the port's row per cycle).
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

namespace {

// The layers' rows (forward nodes in order, then "loss" and, with Adam, "adam") and, per node,
// the row its cycles go to.
struct LayerRows {
  std::vector<LayerCycles> rows;
  std::vector<int> of_node;
};

LayerRows layer_rows(const Graph& g) {
  LayerRows r;
  std::vector<int> row_of_layer(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.phase != Phase::Forward || n.layer != static_cast<int>(i))
      continue;  // (a ConvPad: its Conv's)
    row_of_layer[static_cast<size_t>(n.layer)] = static_cast<int>(r.rows.size());
    r.rows.push_back(LayerCycles{n.name, n.onnx_op, 0, 0, 0});
  }
  const int loss_row = static_cast<int>(r.rows.size());
  r.rows.push_back(LayerCycles{"loss", "SoftmaxCrossEntropy", 0, 0, 0});
  const int adam_row = static_cast<int>(r.rows.size());
  if (g.adam_state >= 0) r.rows.push_back(LayerCycles{"adam", "Adam", 0, 0, 0});
  for (const Node& n : g.nodes) {
    r.of_node.push_back(n.op == Op::SoftmaxCe   ? loss_row
                        : n.op == Op::AdamBegin ? adam_row
                        : n.layer >= 0          ? row_of_layer[static_cast<size_t>(n.layer)]
                                                : -1);
  }
  return r;
}

uint64_t& phase_of(LayerCycles& l, const Node& n) {
  return n.phase == Phase::Forward || n.phase == Phase::Loss ? l.forward
         : n.phase == Phase::Backward                        ? l.backward
                                                             : l.update;
}

}  // namespace

std::vector<LayerCycles> layer_cycles(const Graph& g, const Emitted& step, const ChipParams& chip,
                                      uint64_t total) {
  LayerRows r = layer_rows(g);
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
    const int row = r.of_node[static_cast<size_t>(step.ranges[i].node)];
    if (row >= 0) phase_of(r.rows[static_cast<size_t>(row)], n) += c;
  }
  add_bounds(g, step, chip, r.rows);
  return r.rows;
}

std::vector<LayerCycles> layer_cycles(const Graph& g, const Emitted& step, const ChipParams& chip,
                                      const std::vector<InstrEvent>& timeline) {
  LayerRows r = layer_rows(g);
  // The issue cycle of each instruction (the timeline has one event per issued instruction).
  std::vector<uint64_t> issue(step.program.size() + 1, UINT64_MAX);
  uint64_t last = 0;
  for (const InstrEvent& e : timeline) {
    if (e.pc < issue.size()) issue[e.pc] = std::min(issue[e.pc], e.start);
    last = std::max(last, e.end);
  }
  // A node's start: the issue of its first instruction (or of a later one if that has none).
  auto start_of = [&](size_t pc) {
    for (; pc < step.program.size(); ++pc)
      if (issue[pc] != UINT64_MAX) return issue[pc];
    return last;
  };
  for (size_t i = 0; i < step.ranges.size(); ++i) {
    const uint64_t s = start_of(step.ranges[i].begin);
    const uint64_t e = i + 1 < step.ranges.size() ? start_of(step.ranges[i + 1].begin) : last;
    const int row = r.of_node[static_cast<size_t>(step.ranges[i].node)];
    if (row >= 0)
      phase_of(r.rows[static_cast<size_t>(row)],
               g.nodes[static_cast<size_t>(step.ranges[i].node)]) += e > s ? e - s : 0;
  }
  for (LayerCycles& l : r.rows) l.measured = true;
  add_bounds(g, step, chip, r.rows);
  return r.rows;
}

uint64_t scale_sim_ws_cycles(uint64_t m, uint64_t k, uint64_t c, uint32_t n) {
  if (m == 0 || k == 0 || c == 0) return 0;
  const uint64_t folds = ((k + n - 1) / n) * ((c + n - 1) / n);
  return folds * (2 * uint64_t{n} + n + m - 2);
}

namespace {

// Conv dW as conv2d_backward_weights orients it for a call with geometry cv (kernels.h
// conv_dw_orientation): dY stationary, M = the patch rows (taps x cin) streamed per tile of N
// positions x N output channels; X stationary, M = the output channels (dY^T rows, whole
// blocks) streamed per tile of N positions x N taps (cin = 1) or channels of a tap. (The
// step's bound counts conv dW's folds as emitted: emitted_fold_cycles.)
std::vector<MatmulShape> conv_dw_matmuls(const ConvGeom& cv, uint32_t n) {
  const uint64_t outs = uint64_t{cv.ho()} * cv.wo() * cv.batch;
  if (n != 0 && conv_dw_orientation(cv, n) == ConvDwOrient::XStationary)
    return {{round_up(cv.cout, n), outs, uint64_t{cv.taps()} * cv.cin_stride(n)}};
  return {{uint64_t{cv.taps()} * cv.cin, outs, cv.cout}};
}

}  // namespace

std::vector<MatmulShape> node_matmuls(const Graph& g, const Node& nd) {
  auto cols = [&](int t) { return uint64_t{g.tensors[static_cast<size_t>(t)].cols}; };
  const uint64_t b = g.batch;
  const ConvGeom& cv = nd.conv;
  const uint64_t outs = uint64_t{cv.ho()} * cv.wo() * cv.batch, taps = uint64_t{cv.taps()} * cv.cin;
  switch (nd.op) {
    case Op::Dense:
      return {{b, cols(nd.in[0]), cols(nd.out[0])}};
    case Op::DenseGradX:
      return {{b, cols(nd.in[0]), cols(nd.out[0])}};
    case Op::DenseGradW:
    case Op::DenseUpdate:
      return {{cols(nd.in[0]), b, cols(nd.in[1])}};
    case Op::Conv:
    case Op::ConvPool:
      return {{outs, taps, cv.cout}};
    case Op::ConvGradW: {  // emitted one output block per call (dY stationary wins there)
      if (g.chip_n == 0) return conv_dw_matmuls(cv, 0);
      std::vector<MatmulShape> m;
      for (uint32_t c0 = 0; c0 < cv.cout; c0 += g.chip_n) {
        ConvGeom block = cv;
        block.cout = std::min(g.chip_n, cv.cout - c0);
        m.push_back(conv_dw_matmuls(block, g.chip_n)[0]);
      }
      return m;
    }
    case Op::ConvPoolGrad:  // emitted with all the output blocks of a group per call
      return conv_dw_matmuls(cv, g.chip_n);
    case Op::ConvGradX:
      return {{uint64_t{cv.h} * cv.w * cv.batch, uint64_t{cv.taps()} * cv.cout, cv.cin}};
    default:
      return {};
  }
}

namespace {

// SCALE-Sim's weight-stationary cycles of the folds a range of the program runs: a fold is a
// matmul_bf16 with `switch` (a new tile) and the ones after it up to the next switch, 3N - 2
// cycles plus its streamed rows. Conv dW's orientation (kernels.h conv_dw_orientation) and the
// output blocks per call are the emitter's; this counts them as emitted.
uint64_t emitted_fold_cycles(const Emitted& step, const Emitted::Range& range, uint32_t n) {
  uint64_t cycles = 0;
  for (size_t k = range.begin; k < range.end; ++k) {
    if (const auto* mm = std::get_if<MatmulBf16>(&step.program[k])) {
      if (mm->switch_weights) cycles += 3 * uint64_t{n} - 2;
      cycles += uint64_t{mm->inner} * mm->outer;
    }
  }
  return cycles;
}

}  // namespace

uint32_t port_bytes_per_cycle(const ChipParams& chip) {
  return std::max(1u, chip.vmem_dma_bytes_per_cycle());
}

void add_bounds(const Graph& g, const Emitted& step, const ChipParams& chip,
                std::vector<LayerCycles>& layers) {
  const LayerRows r = layer_rows(g);
  std::vector<uint64_t> dma_bytes(layers.size(), 0);
  std::vector<bool> counted(g.nodes.size(), false);  // a node's matmuls once (overlap.h: runs)
  for (const Emitted::Range& range : step.ranges) {
    const int row = r.of_node[static_cast<size_t>(range.node)];
    if (row < 0) continue;
    LayerCycles& l = layers[static_cast<size_t>(row)];
    const Node& nd = g.nodes[static_cast<size_t>(range.node)];
    const bool first = !counted[static_cast<size_t>(range.node)];
    counted[static_cast<size_t>(range.node)] = true;
    if (nd.op == Op::ConvGradW || nd.op == Op::ConvPoolGrad) {
      l.bound_mxu += emitted_fold_cycles(step, range, chip.N);  // as the compiler oriented it
    } else if (first) {
      for (const MatmulShape& m : node_matmuls(g, nd))
        l.bound_mxu += scale_sim_ws_cycles(m.m, m.k, m.c, chip.N);
    }
    for (size_t k = range.begin; k < range.end; ++k) {
      std::visit(
          [&](const auto& in) {
            using T = std::decay_t<decltype(in)>;
            if constexpr (std::is_same_v<T, ReadVmem> || std::is_same_v<T, WriteVmem>)
              dma_bytes[static_cast<size_t>(row)] += uint64_t{in.rows} * in.row_bytes(chip.N);
          },
          step.program[k]);
    }
  }
  const uint64_t port = port_bytes_per_cycle(chip);
  for (size_t i = 0; i < layers.size(); ++i) {
    layers[i].bound_dma = (dma_bytes[i] + port - 1) / port;
    layers[i].bound = std::max(layers[i].bound_mxu, layers[i].bound_dma);
  }
}

}  // namespace tpu::train::compiler

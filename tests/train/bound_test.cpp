// SPDX-License-Identifier: Apache-2.0
// Per-layer cycles from a timeline and the analytical bound (driver/train/compiler/cycles.cpp).
#include <gtest/gtest.h>

#include "compiler/autodiff.h"
#include "compiler/emit.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "compiler/schedule.h"
#include "train_models.h"

namespace tpu::train::test {
namespace {

using namespace compiler;

// SCALE-Sim weight stationary: folds x (2N + N + M - 2).
TEST(TrainBound, ScaleSimWeightStationary) {
  EXPECT_EQ(scale_sim_ws_cycles(32, 16, 16, 16), 1u * (48 + 32 - 2));
  EXPECT_EQ(scale_sim_ws_cycles(32, 17, 10, 16), 2u * (48 + 32 - 2));  // K needs two folds
  EXPECT_EQ(scale_sim_ws_cycles(9, 21632, 64, 16), 1352u * 4 * (48 + 9 - 2));
  EXPECT_EQ(scale_sim_ws_cycles(0, 5, 5, 4), 0u);
  ChipParams chip = ChipParams::training(16);
  EXPECT_EQ(port_bytes_per_cycle(chip), chip.vmem_dma_bytes_per_cycle());
}

// Conv dW counted as the kernel orients it (kernels.h conv_dw_orientation): the Keras conv
// (9 taps, cin 1, 64 outputs, batch 32, N = 16) keeps dY stationary: 4 x 1352 folds of 9
// patch rows; an unfused ConvGradW (one block per call) the same, block by block. The step's
// bound counts the folds as emitted (a matmul_bf16 with switch opens one): equal here.
TEST(TrainBound, ConvDwAsTheKernelOrientsIt) {
  Graph g;
  g.chip_n = 16;
  Node nd;
  nd.conv.batch = 32;
  nd.conv.cout = 64;
  nd.conv.h = nd.conv.w = 28;
  nd.conv.kh = nd.conv.kw = 3;
  nd.op = Op::ConvPoolGrad;
  std::vector<MatmulShape> m = node_matmuls(g, nd);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].m, 9u);
  EXPECT_EQ(m[0].k, 26u * 26 * 32);
  EXPECT_EQ(m[0].c, 64u);
  EXPECT_EQ(scale_sim_ws_cycles(m[0].m, m[0].k, m[0].c, 16), 4u * 1352 * (48 + 9 - 2));
  nd.op = Op::ConvGradW;
  m = node_matmuls(g, nd);
  ASSERT_EQ(m.size(), 4u);
  uint64_t cycles = 0;
  for (const MatmulShape& s : m) {
    EXPECT_EQ(s.m, 9u);
    EXPECT_EQ(s.c, 16u);
    cycles += scale_sim_ws_cycles(s.m, s.k, s.c, 16);
  }
  EXPECT_EQ(cycles, 4u * 1352 * (48 + 9 - 2));
}

struct Compiled {
  Graph g;
  ChipParams chip = ChipParams::training(4);
  Placement p;
  Emitted step;
};

Compiled compile_mlp() {
  Compiled c;
  c.g = import_onnx(mlp_onnx(MlpSpec{}), 8, 4);
  append_backward(c.g);
  append_update(c.g, TrainOptions{});
  fuse_dense_update(c.g);
  c.p = place(c.g, c.chip);
  c.step = emit(c.g, c.p, schedule(c.g).step, TrainOptions{}, c.chip, Device::kArenaBase);
  return c;
}

// The matmuls of the MLP's nodes (batch 8, 9 inputs, 7 hidden, 3 classes) and the bound of
// each layer: its matmuls' cycles, its DMA bytes at the port, the larger.
TEST(TrainBound, LayersOfTheMlp) {
  const Compiled c = compile_mlp();
  uint64_t fc1_mxu = 0;
  for (const Node& nd : c.g.nodes) {
    const std::vector<MatmulShape> m = node_matmuls(c.g, nd);
    if (nd.op == Op::Dense && nd.name == "fc1") {
      ASSERT_EQ(m.size(), 1u);
      EXPECT_EQ(m[0].m, 8u);
      EXPECT_EQ(m[0].k, 9u);
      EXPECT_EQ(m[0].c, 7u);
    }
    if (nd.op == Op::DenseUpdate && nd.layer >= 0 && c.g.nodes[size_t(nd.layer)].name == "fc1") {
      ASSERT_EQ(m.size(), 1u);  // dW = X^T . dY: 9 x 8 by 8 x 7
      EXPECT_EQ(m[0].m, 9u);
      EXPECT_EQ(m[0].k, 8u);
      EXPECT_EQ(m[0].c, 7u);
    }
    if (nd.op == Op::Relu) EXPECT_TRUE(m.empty());
    if (nd.layer >= 0 && c.g.nodes[size_t(nd.layer)].name == "fc1")
      for (const MatmulShape& s : m) fc1_mxu += scale_sim_ws_cycles(s.m, s.k, s.c, 4);
  }
  const std::vector<LayerCycles> l = layer_cycles(c.g, c.step, c.chip, 1000);
  ASSERT_EQ(l[0].name, "fc1");
  EXPECT_EQ(l[0].bound_mxu, fc1_mxu);
  EXPECT_GT(l[0].bound_dma, 0u);
  EXPECT_EQ(l[0].bound, std::max(l[0].bound_mxu, l[0].bound_dma));
  EXPECT_FALSE(l[0].measured);
}

// From a timeline: each node's cycles run from its first instruction's issue to the next
// node's; they add up to the timeline's span.
TEST(TrainBound, MeasuredFromTheTimeline) {
  const Compiled c = compile_mlp();
  std::vector<InstrEvent> tl;
  for (size_t pc = 0; pc + 1 < c.step.program.size(); ++pc) {  // 3 cycles per instruction
    InstrEvent e;
    e.pc = static_cast<uint32_t>(pc);
    e.start = 3 * pc;
    e.end = 3 * pc + 5;
    tl.push_back(e);
  }
  const std::vector<LayerCycles> l = layer_cycles(c.g, c.step, c.chip, tl);
  uint64_t sum = 0;
  for (const LayerCycles& x : l) {
    EXPECT_TRUE(x.measured);
    sum += x.forward + x.backward + x.update;
  }
  EXPECT_EQ(sum, tl.back().end - tl.front().start);
  // fc1's forward: its Dense node's instructions, 3 cycles each.
  for (const Emitted::Range& r : c.step.ranges) {
    const Node& nd = c.g.nodes[size_t(r.node)];
    if (nd.op == Op::Dense && nd.name == "fc1") EXPECT_EQ(l[0].forward, 3 * (r.end - r.begin));
  }
}

}  // namespace
}  // namespace tpu::train::test

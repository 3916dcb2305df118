// SPDX-License-Identifier: Apache-2.0
// The residency pass (driver/train/compiler/residency.h): which tensors stay in VMEM across
// steps, that the node layouts keep clear of them, that the step program moves none of them
// through DMA, and that training with them resident gives the same bits as streaming them.
#include "compiler/residency.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <variant>

#include "compiler/autodiff.h"
#include "compiler/emit.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "compiler/schedule.h"
#include "device_model.h"
#include "train_models.h"
#include "trainer.h"

namespace tpu::train::test {
namespace {

using namespace compiler;

Graph compiled(const MlpSpec& s, uint32_t batch, const TrainOptions& o, const ChipParams& chip) {
  Graph g = import_onnx(mlp_onnx(s), batch, chip.N);
  append_backward(g);
  append_update(g, o);
  fuse_conv_pool(g, chip);
  fuse_dense_update(g);
  return g;
}

const MlpSpec kWide{1, 12, 12, 7, 3, true, true, 5};  // K = 144, hidden 7: two column blocks

// Weights before their moments (a weight is read by more nodes per step), smaller first among
// equals; every candidate is a weight, an optimizer state, Adam's rows or the pad row.
TEST(TrainResidency, CandidatesByReuseThenSize) {
  const ChipParams chip = ChipParams::training(4);
  const Graph g = compiled(kWide, 8, TrainOptions{}, chip);
  const Placement p = place(g, chip);
  const std::vector<int> c = residency_candidates(g, p);
  ASSERT_FALSE(c.empty());
  std::vector<uint32_t> reuse(g.tensors.size(), 0);
  for (const Node& nd : g.nodes)
    for (int t : nd.in) ++reuse[static_cast<size_t>(t)];
  for (size_t i = 0; i < c.size(); ++i) {
    const TensorKind k = g.tensors[static_cast<size_t>(c[i])].kind;
    EXPECT_TRUE(k == TensorKind::Weight || k == TensorKind::OptState ||
                k == TensorKind::AdamState || k == TensorKind::Constant)
        << g.tensors[static_cast<size_t>(c[i])].name;
    if (i == 0) continue;
    const size_t a = static_cast<size_t>(c[i - 1]), b = static_cast<size_t>(c[i]);
    EXPECT_TRUE(reuse[a] > reuse[b] || (reuse[a] == reuse[b] && p.homes[a].rows <= p.homes[b].rows))
        << i;
  }
  for (const Param& q : g.params) {  // each weight before its own moments
    const auto pos = [&](int t) { return std::find(c.begin(), c.end(), t) - c.begin(); };
    for (int s : q.state) EXPECT_LT(pos(q.tensor), pos(s)) << q.initializer;
  }
}

// Resident copies: disjoint, at the top of VMEM, within kResidentShare; every node's layout
// below them; the step and forward programs DMA none of their homes.
TEST(TrainResidency, LayoutsBelowAndNoDmaOfResidentHomes) {
  for (uint32_t vmem : {32768u, 1200u, 700u}) {
    ChipParams chip = ChipParams::training(4);
    chip.vmem_rows = vmem;
    const Graph g = compiled(kWide, 8, TrainOptions{}, chip);
    Placement p = place(g, chip);
    place_resident(g, p, chip);
    ASSERT_GT(p.resident_rows, 0u) << vmem;
    EXPECT_LE(p.resident_rows, vmem * kResidentShare) << vmem;
    std::vector<std::pair<uint32_t, uint32_t>> spans;  // resident rows
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      if (p.resident(static_cast<int>(t)) < 0) continue;
      const uint32_t r0 = static_cast<uint32_t>(p.resident(static_cast<int>(t)));
      EXPECT_GE(r0, vmem - p.resident_rows);
      EXPECT_LE(r0 + p.homes[t].rows, vmem);
      for (const auto& [a, b] : spans) EXPECT_TRUE(r0 + p.homes[t].rows <= a || r0 >= b);
      spans.emplace_back(r0, r0 + p.homes[t].rows);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i)
      EXPECT_LE(node_layout(g, p, static_cast<int>(i), p.chunk[i], chip).end, p.work_rows(chip));
    const Schedule s = schedule(g);
    const uint32_t base = Device::kArenaBase;
    for (const auto& order : {s.step, s.forward}) {
      const Emitted e = emit(g, p, order, TrainOptions{}, chip, base);
      for (const Instruction& in : e.program) {
        const VmemDma* d = nullptr;
        if (const auto* r = std::get_if<ReadVmem>(&in)) d = r;
        if (const auto* w = std::get_if<WriteVmem>(&in)) d = w;
        if (d == nullptr) continue;
        const uint64_t addr = d->host_addr, end = addr + uint64_t{d->rows} * d->step(4);
        for (size_t t = 0; t < g.tensors.size(); ++t) {
          if (p.resident(static_cast<int>(t)) < 0) continue;
          const uint32_t h0 = base + p.homes[t].addr, h1 = h0 + p.homes[t].rows * 16;
          EXPECT_TRUE(end <= h0 || addr >= h1)
              << vmem << ": a DMA of resident " << g.tensors[t].name;
        }
      }
    }
  }
}

// A pod's gradient all-reduce uses all of VMEM: nothing stays resident there.
TEST(TrainResidency, NoneOnAPod) {
  const ChipParams chip = ChipParams::training(4);
  Graph g = compiled(kWide, 8, TrainOptions{}, chip);
  g.pod = PodTopology::ring(2);
  Placement p = place(g, chip);
  place_resident(g, p, chip);
  EXPECT_EQ(p.resident_rows, 0u);
  for (size_t t = 0; t < g.tensors.size(); ++t) EXPECT_LT(p.resident(static_cast<int>(t)), 0);
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Training with residency equals streaming bit for bit (loss every step, final weights), with
// VMEM sizes that make the Dense nodes chunk over K with a resident weight of two column
// blocks (so the update runs block by block), for Adam and SGD with momentum.
TEST(TrainResidency, SameBitsAsStreaming) {
  bool chunked_resident = false;
  for (Optimizer opt : {Optimizer::Adam, Optimizer::Sgd}) {
    for (uint32_t vmem : {32768u, 1200u, 700u}) {
      ChipParams chip = ChipParams::training(4);
      chip.vmem_rows = vmem;
      TrainOptions o;
      o.optimizer = opt;
      o.lr = opt == Optimizer::Adam ? 0.01f : 0.1f;
      o.momentum = opt == Optimizer::Sgd ? 0.9f : 0.0f;
      o.batch = 8;
      {
        const Graph g = compiled(kWide, 8, o, chip);
        Placement p = place(g, chip);
        place_resident(g, p, chip);
        for (size_t i = 0; i < g.nodes.size(); ++i) {
          const Node& nd = g.nodes[i];
          if ((nd.op == Op::Dense || nd.op == Op::DenseUpdate) && p.chunk[i] != 0 &&
              p.chunk[i] * 4 < g.tensors[static_cast<size_t>(nd.in[0])].cols &&
              p.resident(nd.in[nd.op == Op::Dense ? 1 : 2]) >= 0)
            chunked_resident = true;
        }
      }
      std::vector<std::vector<uint32_t>> losses(2);
      std::vector<std::map<std::string, std::vector<float>>> weights(2);
      for (int r = 0; r < 2; ++r) {
        o.resident = r == 0;
        Trainer t(mlp_onnx(kWide), o, chip);
        ModelDevice dev(chip);
        t.init(dev);
        for (uint32_t step = 0; step < 3; ++step) {
          const std::vector<float> x = uniform(8 * kWide.inputs(), 1.0f, 100 + step);
          std::vector<int32_t> y(8);
          for (uint32_t i = 0; i < 8; ++i) y[i] = static_cast<int32_t>((i + step) % 3);
          losses[r].push_back(bits(t.step(dev, x.data(), y.data()).loss));
        }
        weights[r] = t.weights(dev);
      }
      EXPECT_EQ(losses[0], losses[1]) << vmem;
      ASSERT_EQ(weights[0].size(), weights[1].size());
      for (const auto& [name, w] : weights[0]) {
        const std::vector<float>& s = weights[1].at(name);
        ASSERT_EQ(w.size(), s.size());
        EXPECT_EQ(std::memcmp(w.data(), s.data(), w.size() * 4), 0) << name << " " << vmem;
      }
    }
  }
  EXPECT_TRUE(chunked_resident);
}

}  // namespace
}  // namespace tpu::train::test

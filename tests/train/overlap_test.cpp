// SPDX-License-Identifier: Apache-2.0
// An optimizer update beside a backward node (driver/train/compiler/overlap.h) and the merge
// of their instructions (interleave.h merge_beside): dependent pairs never reordered, weight-
// FIFO uses kept whole, the Keras example's DenseUpdate paired with its ConvPoolGrad in rows
// of its own, and training with the overlap the same bits as without.
#include "compiler/overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <variant>

#include "compiler/autodiff.h"
#include "compiler/emit.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/interleave.h"
#include "compiler/optimizer.h"
#include "compiler/residency.h"
#include "device_model.h"
#include "train_models.h"
#include "trainer.h"

namespace tpu::train::test {
namespace {

using namespace compiler;
using cnn::OnnxAttr;

Vector vec(uint16_t dst, uint16_t a, uint8_t rows) {
  Vector v;
  v.dst = dst;
  v.a = a;
  v.bmode = BMode::Imm;
  v.inner = rows;
  v.a_inner_stride = 1;
  v.dst_inner_stride = 1;
  return v;
}
LoadWeights load(uint16_t row, uint16_t tiles) {
  LoadWeights lw;
  lw.vmem_addr = row;
  lw.tiles = tiles;
  lw.tile_stride = 16;
  lw.rows = 16;
  return lw;
}
MatmulBf16 matmul(uint16_t row, uint16_t acc, bool sw) {
  MatmulBf16 mm;
  mm.vmem_addr = row;
  mm.acc_addr = acc;
  mm.inner = 64;
  mm.switch_weights = sw;
  return mm;
}

// Main: two weight loads with their matmuls (the MXU busy, the vector unit idle), then a
// vector pass writing rows 100..109. Side: a vector pass reading rows 100..109 (it depends on
// main's pass) and one on rows 500.. (independent).
std::vector<Instruction> main_stream() {
  return {load(0, 4),          matmul(64, 0, true), matmul(64, 0, true), matmul(64, 0, true),
          matmul(64, 0, true), load(0, 4),          matmul(64, 0, true), matmul(64, 0, true),
          matmul(64, 0, true), matmul(64, 0, true), vec(100, 200, 10)};
}
size_t position(const std::vector<Merged>& m, bool side, size_t index) {
  for (size_t k = 0; k < m.size(); ++k)
    if (m[k].side == side && m[k].index == index) return k;
  return m.size();
}

TEST(TrainOverlap, MergeKeepsEachOrderAndEveryInstruction) {
  const ChipParams chip = ChipParams::training(16);
  const std::vector<Instruction> main = main_stream();
  const std::vector<Instruction> side = {vec(500, 600, 20), vec(520, 620, 20), vec(540, 640, 20)};
  const std::vector<Merged> m = merge_beside(main, side, chip);
  ASSERT_EQ(m.size(), main.size() + side.size());
  size_t next[2] = {0, 0};
  for (const Merged& x : m) EXPECT_EQ(x.index, next[x.side]++);
  EXPECT_EQ(next[0], main.size());
  EXPECT_EQ(next[1], side.size());
  // the independent passes run beside the matmuls, not after main's last instruction
  EXPECT_LT(position(m, true, 0), position(m, false, main.size() - 1));
}

// The side's pass reading rows main's last pass writes stays after it, where an independent
// pass in its place goes ahead (the test fails if the merge reorders the dependent pair).
TEST(TrainOverlap, DependentPairNeverReordered) {
  const ChipParams chip = ChipParams::training(16);
  const std::vector<Instruction> main = main_stream();
  const std::vector<Merged> free = merge_beside(main, {vec(700, 500, 10)}, chip);
  EXPECT_LT(position(free, true, 0), position(free, false, main.size() - 1));
  const std::vector<Merged> dep = merge_beside(main, {vec(700, 100, 10)}, chip);
  EXPECT_GT(position(dep, true, 0), position(dep, false, main.size() - 1));
  // write after read: side writing rows main's pass reads (200..209)
  const std::vector<Merged> war = merge_beside(main, {vec(205, 900, 1)}, chip);
  EXPECT_GT(position(war, true, 0), position(war, false, main.size() - 1));
  // ACC: a side acc_to_vmem reading ACC rows main's matmuls write
  AccToVmem mv;
  mv.acc_addr = 10;
  mv.vmem_addr = 800;
  mv.rows = 4;
  const std::vector<Merged> acc = merge_beside(main, {mv}, chip);
  EXPECT_GT(position(acc, true, 0), position(acc, false, 9));
  EXPECT_FALSE(rows_disjoint(main[9], mv, 16));
  EXPECT_TRUE(rows_disjoint(main[10], vec(700, 500, 10), 16));
}

// A side weight load and the matmuls that take its tiles go in as a whole, never between a
// main load and the matmuls taking its tiles.
TEST(TrainOverlap, WeightFifoUsesStayWhole) {
  const ChipParams chip = ChipParams::training(16);
  const std::vector<Instruction> main = main_stream();
  const std::vector<Instruction> side = {load(1000, 2), matmul(1100, 1024, true),
                                         matmul(1100, 1040, true)};
  const std::vector<Merged> m = merge_beside(main, side, chip);
  const size_t s0 = position(m, true, 0);
  EXPECT_EQ(position(m, true, 1), s0 + 1);
  EXPECT_EQ(position(m, true, 2), s0 + 2);
  int pending = 0;  // main tiles pushed and not yet made active, where the side use starts
  for (size_t k = 0; k < s0; ++k) {
    if (m[k].side) continue;
    if (const auto* lw = std::get_if<LoadWeights>(&main[m[k].index])) pending += lw->tiles;
    if (std::holds_alternative<MatmulBf16>(main[m[k].index])) --pending;
  }
  EXPECT_EQ(pending, 0);
}

TEST(TrainOverlap, NodesConflictOnSharedWrittenTensors) {
  Graph g;
  for (int t = 0; t < 4; ++t) g.tensors.push_back(Tensor{});
  const Node a = make_node(Op::Relu, "a", "", Phase::Forward, -1, {0}, {1});
  const Node b = make_node(Op::Relu, "b", "", Phase::Forward, -1, {1}, {2});
  const Node c = make_node(Op::Relu, "c", "", Phase::Forward, -1, {0}, {3});
  const Node d = make_node(Op::Relu, "d", "", Phase::Forward, -1, {3}, {0});
  EXPECT_TRUE(nodes_conflict(g, a, b));  // b reads what a writes
  EXPECT_TRUE(nodes_conflict(g, b, a));
  EXPECT_FALSE(nodes_conflict(g, a, c));  // both only read tensor 0
  EXPECT_TRUE(nodes_conflict(g, a, d));   // d writes what a reads
}

// The Keras example's shape (Conv 1 -> channels 3x3, MaxPool 2, Relu, Flatten, Dense classes),
// with `hidden` > 0 a Dense hidden -> Relu before the last Dense (two DenseUpdates).
std::string keras_like(int64_t hw, int64_t channels, int64_t classes, int64_t hidden = 0) {
  cnn::OnnxGraph g("keras_like");
  const int64_t pooled = (hw - 2) / 2, features = channels * pooled * pooled;
  g.input("input", {-1, 1, hw, hw});
  g.init_float("conv.W", {channels, 1, 3, 3}, uniform(static_cast<size_t>(channels * 9), 0.5f, 1));
  g.init_float("conv.b", {channels}, uniform(static_cast<size_t>(channels), 0.1f, 2));
  const int64_t in = hidden > 0 ? hidden : features;
  g.init_float("dense.W", {classes, in}, uniform(static_cast<size_t>(classes * in), 0.05f, 3));
  g.init_float("dense.b", {classes}, uniform(static_cast<size_t>(classes), 0.1f, 4));
  g.node("Conv", {"input", "conv.W", "conv.b"}, {"c"}, {OnnxAttr::Ints("kernel_shape", {3, 3})},
         "conv");
  g.node("MaxPool", {"c"}, {"p"},
         {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
  g.node("Relu", {"p"}, {"r"}, {}, "relu");
  g.node("Flatten", {"r"}, {"f"}, {}, "flatten");
  if (hidden > 0) {
    g.init_float("h.W", {hidden, features},
                 uniform(static_cast<size_t>(hidden * features), 0.05f, 5));
    g.init_float("h.b", {hidden}, uniform(static_cast<size_t>(hidden), 0.1f, 6));
    g.node("Gemm", {"f", "h.W", "h.b"}, {"hy"}, {OnnxAttr::Int("transB", 1)}, "hidden");
    g.node("Relu", {"hy"}, {"hr"}, {}, "hidden_relu");
  }
  g.node("Gemm", {hidden > 0 ? "hr" : "f", "dense.W", "dense.b"}, {"logits"},
         {OnnxAttr::Int("transB", 1)}, "dense");
  g.output("logits", {-1, classes});
  return g.serialize();
}

// A model compiled through overlap_updates on the training chip of size n at `batch` (with or
// without the DenseGradX leading the merged stream); `before` is the step's order before it.
struct Compiled {
  Graph g;
  Placement p;
  Schedule s;
  std::vector<int> before;
  std::vector<Overlap> pairs;
};
Compiled compile_overlap(const std::string& model, uint32_t batch, uint32_t n, bool lead = true) {
  const ChipParams chip = ChipParams::training(n);
  TrainOptions o;
  o.batch = batch;
  Compiled c;
  c.g = import_onnx(model, batch, chip.N);
  append_backward(c.g);
  append_update(c.g, o);
  fuse_conv_pool(c.g, chip);
  fuse_dense_update(c.g);
  c.p = place(c.g, chip);
  place_resident(c.g, c.p, chip);
  c.s = schedule(c.g);
  c.before = c.s.step;
  c.pairs = overlap_updates(c.g, c.p, c.s, chip, true, lead);
  return c;
}
// The Keras example at N = 16, batch 32.
Compiled keras_compiled(bool lead) { return compile_overlap(keras_like(28, 64, 10), 32, 16, lead); }

// The Keras example at N = 16, batch 32, on the training chip: DenseUpdate beside ConvPoolGrad
// (AdamBegin ahead of them, the conv's updates after), its layout above the backward node's,
// its dW in the upper half of ACC, its first moment no longer resident (it would not fit
// beside them); in the step program every side instruction placed ahead of a main one shares
// no row with it, and no main weight-FIFO instruction sits inside a side FIFO use.
TEST(TrainOverlap, KerasDenseUpdateBesideConvBackward) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled c = keras_compiled(true);
  const Graph& g = c.g;
  const Placement& p = c.p;
  const Schedule& s = c.s;
  const std::vector<int>& before = c.before;
  const std::vector<Overlap>& pairs = c.pairs;
  ASSERT_EQ(pairs.size(), 1u);
  const Node& mn = g.nodes[static_cast<size_t>(pairs[0].main)];
  const Node& sn = g.nodes[static_cast<size_t>(pairs[0].side)];
  EXPECT_EQ(mn.op, Op::ConvPoolGrad);
  EXPECT_EQ(sn.op, Op::DenseUpdate);
  EXPECT_EQ(p.beside_of(pairs[0].side), pairs[0].main);
  ASSERT_EQ(s.step.size(), before.size());
  size_t mi = 0;
  while (s.step[mi] != pairs[0].main) ++mi;
  EXPECT_EQ(s.step[mi + 1], pairs[0].side);
  for (size_t k = 0; k < s.step.size(); ++k) {
    const Op op = g.nodes[static_cast<size_t>(s.step[k])].op;
    if (op == Op::AdamBegin) {
      EXPECT_LT(k, mi);
    }
    if (op == Op::AdamUpdate) {
      EXPECT_GT(k, mi + 1);
    }
  }
  const NodeLayout lm =
      node_layout(g, p, pairs[0].main, p.chunk[static_cast<size_t>(pairs[0].main)], chip);
  const NodeLayout ls =
      node_layout(g, p, pairs[0].side, p.chunk[static_cast<size_t>(pairs[0].side)], chip);
  EXPECT_GE(p.vmem_lo_of(pairs[0].side), lm.end);
  for (size_t i = 0; i < ls.in.size(); ++i) {
    if (p.resident(sn.in[i]) < 0) {
      EXPECT_GE(ls.in[i], lm.end) << i;
    }
  }
  EXPECT_EQ(p.acc_lo_of(pairs[0].side), chip.acc_rows / 2);
  EXPECT_LT(p.resident(sn.in[3]), 0);  // m streams now
  EXPECT_GE(p.resident(sn.in[2]), 0);  // W stays
  EXPECT_GE(2 * p.chunk[static_cast<size_t>(pairs[0].side)], 42u);

  const Emitted e = emit(g, p, s.step, TrainOptions{}, chip, Device::kArenaBase);
  std::vector<size_t> mains, sides;  // program positions, in each node's order
  for (const Emitted::Range& r : e.ranges) {
    for (size_t k = r.begin; k < r.end; ++k) {
      if (r.node == pairs[0].main) mains.push_back(k);
      if (r.node == pairs[0].side) sides.push_back(k);
    }
  }
  ASSERT_FALSE(sides.empty());
  EXPECT_LT(sides.front(), mains.back());  // they do run beside each other
  size_t jumped = 0;
  for (size_t sp : sides) {
    for (auto it = std::upper_bound(mains.begin(), mains.end(), sp); it != mains.end(); ++it) {
      ++jumped;
      ASSERT_TRUE(rows_disjoint(e.program[sp], e.program[*it], chip.N)) << sp << " " << *it;
    }
  }
  EXPECT_GT(jumped, 0u);
  // weight FIFO: between a side load and the side matmul taking its last tile, no main
  // load or matmul
  int pending = 0;
  for (size_t k = mains.front(); k < e.program.size(); ++k) {
    const bool is_side = std::binary_search(sides.begin(), sides.end(), k);
    const bool fifo = std::holds_alternative<LoadWeights>(e.program[k]) ||
                      std::holds_alternative<MatmulBf16>(e.program[k]);
    if (is_side) {
      if (const auto* lw = std::get_if<LoadWeights>(&e.program[k])) pending += lw->tiles;
      const auto* mm = std::get_if<MatmulBf16>(&e.program[k]);
      if (mm != nullptr && mm->switch_weights) --pending;
    } else if (fifo) {
      ASSERT_EQ(pending, 0) << k;
    }
  }
}

// TrainOptions::dense_tile_groups: in the Keras step the Dense's and the DenseGradX's weight
// tiles (676 each, one per 32-row matmul) come 4 per load_weights (on: ceil(blocks / 4) loads
// per K-chunk, all of 4 tiles but a chunk's last; off: 676 of one tile), every tile a matmul
// of the node switches to.
TEST(TrainOverlap, KerasDenseTilesFourPerLoad) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled c = keras_compiled(true);
  for (const bool groups : {true, false}) {
    TrainOptions o;
    o.dense_tile_groups = groups;
    const Emitted e = emit(c.g, c.p, c.s.step, o, chip, Device::kArenaBase);
    for (const Op op : {Op::Dense, Op::DenseGradX}) {
      size_t loads = 0, tiles = 0, switches = 0, fours = 0, chunks = 0, want = 0;
      for (size_t id = 0; id < c.g.nodes.size(); ++id) {
        if (c.g.nodes[id].op != op) continue;
        const uint32_t kb = c.p.chunk[id];  // K-blocks per chunk
        ASSERT_GT(kb, 0u);
        for (uint32_t b = 0; b < 676; b += kb, ++chunks) want += (std::min(kb, 676 - b) + 3) / 4;
      }
      for (const Emitted::Range& r : e.ranges) {
        if (c.g.nodes[static_cast<size_t>(r.node)].op != op) continue;
        for (size_t k = r.begin; k < r.end; ++k) {
          if (const auto* lw = std::get_if<LoadWeights>(&e.program[k])) {
            ++loads;
            tiles += lw->tiles;
            fours += lw->tiles == 4;
          }
          if (const auto* mm = std::get_if<MatmulBf16>(&e.program[k])) {
            switches += mm->switch_weights;
          }
        }
      }
      EXPECT_EQ(tiles, 676u) << groups << " " << op_name(op);
      EXPECT_EQ(switches, 676u) << groups << " " << op_name(op);
      EXPECT_EQ(loads, groups ? want : 676u) << op_name(op);
      EXPECT_GE(fours, groups ? loads - chunks : 0u) << op_name(op);
      EXPECT_LT(want, 676u / 3);
    }
  }
}

// TrainOptions::dense_x_in_vmem (overlap.h place_x_in_vmem): in the Keras step the Dense
// right after the ConvPool gets K chunks of Y's column blocks (169 blocks of 32 rows) in rows
// above the ConvPool's layout; the ConvPool copies column blocks 0 and 1 (`or` passes per pooled
// band and block, 13 x 2, 416 rows each) into the Dense's two X sets, filling each once, and
// the Dense reads only chunks 2 and 3 back (without: all 4 of its chunks, no copy).
TEST(TrainOverlap, KerasDenseXInVmem) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled c = keras_compiled(true);
  Placement p = c.p;
  const std::vector<int> kept = place_x_in_vmem(c.g, p, c.s.step, chip);
  ASSERT_EQ(kept.size(), 1u);
  const int d = kept[0], conv = p.x_kept_of(d);
  ASSERT_GE(conv, 0);
  EXPECT_EQ(c.g.nodes[static_cast<size_t>(conv)].op, Op::ConvPool);
  EXPECT_EQ(p.x_kept_of(conv), d);
  EXPECT_EQ(c.p.x_kept_of(d), -1);
  EXPECT_EQ(p.chunk[static_cast<size_t>(d)], 169u);
  EXPECT_GE(p.vmem_lo_of(d),
            node_layout(c.g, p, conv, p.chunk[static_cast<size_t>(conv)], chip).end);
  const NodeLayout L = node_layout(c.g, p, d, p.chunk[static_cast<size_t>(d)], chip);
  ASSERT_EQ(L.in_step.at(0), 5408u);
  for (const bool on : {true, false}) {
    const Placement& q = on ? p : c.p;
    const Emitted e = emit(c.g, q, c.s.step, TrainOptions{}, chip, Device::kArenaBase);
    size_t reads = 0, copies = 0, copied = 0;
    for (const Emitted::Range& r : e.ranges) {
      for (size_t k = r.begin; k < r.end; ++k) {
        if (r.node == d && std::holds_alternative<ReadVmem>(e.program[k])) ++reads;
        const auto* v = std::get_if<Vector>(&e.program[k]);
        if (r.node != conv || v == nullptr || v->dst < L.in[0] || v->dst >= L.in[0] + 2 * 5408)
          continue;
        ++copies;
        EXPECT_EQ(v->func, static_cast<uint8_t>(VecFunc::Or));
        EXPECT_EQ(v->b, 0u);
        copied += uint32_t{v->inner} * v->outer;
      }
    }
    const uint32_t kb = c.p.chunk[static_cast<size_t>(d)];
    EXPECT_EQ(reads, on ? 2u : (676u + kb - 1) / kb) << on;
    EXPECT_EQ(copies, on ? 2u * 26 : 0u) << on;  // 416 rows: two passes (inner <= 255)
    EXPECT_EQ(copied, on ? 2u * 5408 : 0u) << on;
  }
  // the small models of SameBitsWithAndWithout keep their Dense's X too (so it compares)
  for (const int64_t hidden : {int64_t{0}, int64_t{6}}) {
    Compiled m = compile_overlap(keras_like(12, 8, 4, hidden), 8, 4);
    EXPECT_EQ(place_x_in_vmem(m.g, m.p, m.s.step, ChipParams::training(4)).size(), 1u) << hidden;
  }
}

// TrainOptions::update_reads_in_adam (interleave.h update_read_anchors): in the Keras step
// each DenseUpdate chunk but the last reads the next chunk's m and v (W is resident) after its
// dW acc_to_vmem, beside its Adam passes (after at least one of the chunk's passes);
// without the option every read of the chunk comes before that acc_to_vmem (right after the
// dW matmuls).
TEST(TrainOverlap, KerasUpdateReadsBesideAdam) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled c = keras_compiled(true);
  for (const bool on : {true, false}) {
    TrainOptions o;
    o.update_reads_in_adam = on;
    const Emitted e = emit(c.g, c.p, c.s.step, o, chip, Device::kArenaBase);
    // the DenseUpdate's instructions in program order (it runs beside the ConvPoolGrad)
    std::vector<Instruction> u;
    for (const Emitted::Range& r : e.ranges) {
      if (c.g.nodes[static_cast<size_t>(r.node)].op != Op::DenseUpdate) continue;
      for (size_t k = r.begin; k < r.end; ++k) u.push_back(e.program[k]);
    }
    ASSERT_FALSE(u.empty());
    size_t chunks = 0, late = 0, early = 0, passes_since_move = 0;
    bool moved = false;
    for (const Instruction& i : u) {
      if (std::holds_alternative<AccToVmem>(i)) {
        ++chunks;
        moved = true;
        passes_since_move = 0;
      } else if (std::holds_alternative<Transpose>(i)) {
        moved = false;
      } else if (std::holds_alternative<Vector>(i)) {
        ++passes_since_move;
      } else if (std::holds_alternative<ReadVmem>(i) && chunks > 0) {
        if (moved && passes_since_move > 0) {
          ++late;
        } else {
          ++early;
        }
      }
    }
    ASSERT_GT(chunks, 2u);
    // chunk c < last reads chunk c + 1's X, m and v (W is resident); chunk 0's reads before
    // the first acc_to_vmem are not counted, its state reads with the option are
    EXPECT_EQ(late, on ? 2 * (chunks - 1) : 0u) << on;
    EXPECT_EQ(early, on ? chunks - 2 : 3 * (chunks - 2)) << on;
  }
}

// TrainOptions::conv_line_pairs (emit.cpp conv_by_lines): the ConvPool's conv builds one
// im2col per two output lines, so in the Keras step (13 bands of two conv lines, 4 column
// blocks) it transposes 13 times instead of 26, and every one of its 104 matmuls takes a
// 12-row tile (W with 3 rows of +0 under it, or below them) where it took W's 9 rows; the
// second line's tiles come from the copy of W shifted down 3 rows.
size_t conv_pool_count(const Compiled& c, const Emitted& e,
                       bool (*what)(const Instruction&, uint32_t), uint32_t arg) {
  size_t count = 0;
  for (const Emitted::Range& r : e.ranges) {
    if (c.g.nodes[static_cast<size_t>(r.node)].op != Op::ConvPool) continue;
    for (size_t k = r.begin; k < r.end; ++k) count += what(e.program[k], arg);
  }
  return count;
}
bool is_transpose(const Instruction& i, uint32_t) { return std::holds_alternative<Transpose>(i); }
bool loads_rows(const Instruction& i, uint32_t rows) {
  const auto* lw = std::get_if<LoadWeights>(&i);
  return lw != nullptr && lw->rows == rows;
}
TEST(TrainOverlap, KerasConvLinePairs) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled c = keras_compiled(true);
  for (const bool on : {true, false}) {
    TrainOptions o;
    o.conv_line_pairs = on;
    const Emitted e = emit(c.g, c.p, c.s.step, o, chip, Device::kArenaBase);
    EXPECT_EQ(conv_pool_count(c, e, is_transpose, 0), on ? 13u : 26u) << on;
    EXPECT_EQ(conv_pool_count(c, e, loads_rows, 12), on ? 104u : 0u) << on;
    EXPECT_EQ(conv_pool_count(c, e, loads_rows, 9), on ? 0u : 104u) << on;
  }
  // the N = 16 models of SameBitsWithAndWithoutLinePairs pair their lines too (so it compares)
  for (const auto& [hw, channels] : {std::pair<int64_t, int64_t>{12, 8}, {16, 20}}) {
    const Compiled m = compile_overlap(keras_like(hw, channels, 4), 16, 16);
    const Emitted on = emit(m.g, m.p, m.s.step, TrainOptions{}, chip, Device::kArenaBase);
    TrainOptions o;
    o.conv_line_pairs = false;
    const Emitted off = emit(m.g, m.p, m.s.step, o, chip, Device::kArenaBase);
    EXPECT_GT(conv_pool_count(m, on, loads_rows, 12), 0u) << hw;
    EXPECT_EQ(conv_pool_count(m, on, loads_rows, 9), 0u) << hw;
    EXPECT_EQ(2 * conv_pool_count(m, on, is_transpose, 0), conv_pool_count(m, off, is_transpose, 0))
        << hw;
  }
}

size_t step_position(const Schedule& s, int node) {
  return static_cast<size_t>(std::find(s.step.begin(), s.step.end(), node) - s.step.begin());
}

// The Dense's dX (DenseGradX) leads the merged stream: right before the ConvPoolGrad in the
// step (AdamBegin ahead of it), its ACC below the DenseUpdate's dW, its layout below the
// update's VMEM rows. In the step program the update starts beside it: its writes of the
// resident W come after every weight load of the DenseGradX reading those rows (and some
// before the DenseGradX's last instruction: the order is row by row, not node by node), and
// every side instruction placed ahead of a lead or main instruction shares no row with it.
TEST(TrainOverlap, KerasDenseGradXLeadsTheMergedStream) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled none = keras_compiled(false);
  ASSERT_EQ(none.pairs.size(), 1u);
  EXPECT_EQ(none.pairs[0].lead, -1);
  EXPECT_EQ(none.p.lead_of(none.pairs[0].main), -1);

  const Compiled c = keras_compiled(true);
  ASSERT_EQ(c.pairs.size(), 1u);
  const Overlap o = c.pairs[0];
  ASSERT_GE(o.lead, 0);
  const Node& ln = c.g.nodes[static_cast<size_t>(o.lead)];
  const Node& sn = c.g.nodes[static_cast<size_t>(o.side)];
  EXPECT_EQ(ln.op, Op::DenseGradX);
  EXPECT_EQ(c.p.lead_of(o.main), o.lead);
  const size_t li = step_position(c.s, o.lead);
  EXPECT_EQ(step_position(c.s, o.main), li + 1);
  EXPECT_EQ(step_position(c.s, o.side), li + 2);
  for (size_t k = 0; k < c.s.step.size(); ++k) {
    if (c.g.nodes[static_cast<size_t>(c.s.step[k])].op == Op::AdamBegin) {
      EXPECT_LT(k, li);
    }
  }
  const uint32_t acc_hi = c.p.acc_hi_of(o.lead, chip);
  EXPECT_EQ(acc_hi, c.p.acc_lo_of(o.side));
  EXPECT_EQ(acc_hi, chip.acc_rows / 2);
  const NodeLayout ll = node_layout(c.g, c.p, o.lead, c.p.chunk[static_cast<size_t>(o.lead)], chip);
  EXPECT_LE(ll.end, c.p.vmem_lo_of(o.side));
  const int w = ln.in[1];  // the Dense weight: resident, read by the lead, updated by the side
  ASSERT_EQ(sn.in[2], w);
  ASSERT_GE(c.p.resident(w), 0);

  const Emitted e = emit(c.g, c.p, c.s.step, TrainOptions{}, chip, Device::kArenaBase);
  std::vector<int> owner(e.program.size(), -1);
  for (const Emitted::Range& r : e.ranges)
    for (size_t k = r.begin; k < r.end; ++k) owner[k] = r.node;
  const uint64_t w0 = static_cast<uint64_t>(c.p.resident(w));
  const uint64_t w1 = w0 + c.p.homes[static_cast<size_t>(w)].rows;  // one past W's rows
  size_t lead_last = 0, side_first = e.program.size(), w_writes_early = 0;
  std::vector<size_t> leads, sides;
  for (size_t k = 0; k < e.program.size(); ++k) {
    if (owner[k] == o.lead) {
      leads.push_back(k);
      lead_last = k;
      if (const auto* mm = std::get_if<MatmulBf16>(&e.program[k])) {
        EXPECT_LE(uint64_t{mm->acc_addr} + uint64_t{mm->inner} * mm->outer, acc_hi) << k;
      }
    }
    if (owner[k] == o.side) {
      sides.push_back(k);
      side_first = std::min(side_first, k);
      if (const auto* mm = std::get_if<MatmulBf16>(&e.program[k])) {
        EXPECT_GE(mm->acc_addr, acc_hi) << k;
      }
    }
  }
  ASSERT_FALSE(leads.empty());
  ASSERT_FALSE(sides.empty());
  EXPECT_LT(side_first, lead_last);  // the update starts beside the DenseGradX
  for (size_t sp : sides) {
    const auto* v = std::get_if<Vector>(&e.program[sp]);
    if (v == nullptr) continue;
    const uint64_t d0 = v->dst, d1 = v->dst_row(v->outer - 1u, v->inner - 1u);
    if (d1 < w0 || d0 >= w1) continue;  // not a write of W
    if (sp < lead_last) ++w_writes_early;
    for (size_t lp : leads) {  // every lead load of these rows comes first
      const auto* lw = std::get_if<LoadWeights>(&e.program[lp]);
      if (lw != nullptr && lw->vmem_addr <= d1 && d0 <= lw->last_row()) {
        ASSERT_LT(lp, sp) << "W rows " << d0 << ".." << d1;
      }
    }
  }
  EXPECT_GT(w_writes_early, 0u);
  // every side instruction ahead of a lead or main instruction shares no row with it
  size_t jumped = 0;
  for (size_t sp : sides) {
    for (size_t k = sp + 1; k < e.program.size(); ++k) {
      if (owner[k] != o.lead && owner[k] != o.main) continue;
      ++jumped;
      ASSERT_TRUE(rows_disjoint(e.program[sp], e.program[k], chip.N)) << sp << " " << k;
    }
  }
  EXPECT_GT(jumped, 0u);
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Training with the overlap equals training without it bit for bit (every step's loss, the
// final weights) on the golden model, in Keras-shaped models small enough to run fast (with a
// hidden Dense: two DenseUpdates, the one after the ConvPoolGrad beside it).
// Three programs: the DenseGradX leading the merged stream, the pair alone, no overlap.
// A fourth: the first with one weight tile per load_weights (dense_tile_groups false); a
// fifth: the first with the Dense's X read back from device memory (dense_x_in_vmem false); a
// sixth: the first with the update's reads right after its dW matmuls (update_reads_in_adam
// false); a seventh: the first with one im2col per conv output line (conv_line_pairs false;
// at N = 4 the 3x3 kernel's taps span K-tiles and no lines pair: see the N = 16 test below);
// an eighth: the first with the ConvPool's list schedule in its former tie order
// (im2col_build_first false).
void same_bits(const std::string& model, uint32_t n = 4, uint32_t pixels = 144,
               uint32_t batch = 8) {
  const ChipParams chip = ChipParams::training(n);
  constexpr int kRuns = 8;
  std::vector<std::vector<uint32_t>> losses(kRuns);
  std::vector<std::map<std::string, std::vector<float>>> weights(kRuns);
  for (int r = 0; r < kRuns; ++r) {
    TrainOptions o;
    o.batch = batch;
    o.lr = 0.01f;
    o.overlap = r < 2 || r >= 3;
    o.overlap_lead = r == 0 || r >= 3;
    o.dense_tile_groups = r != 3;
    o.dense_x_in_vmem = r != 4;
    o.update_reads_in_adam = r != 5;
    o.conv_line_pairs = r != 6;
    o.im2col_build_first = r != 7;
    Trainer t(model, o, chip);
    ModelDevice dev(chip);
    t.init(dev);
    for (uint32_t step = 0; step < 3; ++step) {
      const std::vector<float> x = uniform(batch * pixels, 1.0f, 200 + step);
      std::vector<int32_t> y(batch);
      for (uint32_t i = 0; i < batch; ++i) y[i] = static_cast<int32_t>((i * 3 + step) % 4);
      losses[r].push_back(bits(t.step(dev, x.data(), y.data()).loss));
    }
    weights[r] = t.weights(dev);
  }
  for (int r = 1; r < kRuns; ++r) {
    EXPECT_EQ(losses[0], losses[static_cast<size_t>(r)]) << r;
    for (const auto& [name, w] : weights[0]) {
      const std::vector<float>& s = weights[static_cast<size_t>(r)].at(name);
      ASSERT_EQ(w.size(), s.size());
      EXPECT_EQ(std::memcmp(w.data(), s.data(), w.size() * 4), 0) << name << " " << r;
    }
  }
}
TEST(TrainOverlap, SameBitsWithAndWithout) {
  same_bits(keras_like(12, 8, 4));
  same_bits(keras_like(12, 8, 4, 6));
}
// At N = 16 the 3x3 conv's lines pair (KerasConvLinePairs checks that this model's do): the
// same losses and weights with one im2col per two lines as with one per line (inputs of both
// signs, so the lanes multiplied by +0 give zeros of both signs).
TEST(TrainOverlap, SameBitsWithAndWithoutLinePairs) {
  same_bits(keras_like(12, 8, 4), 16, 144, 16);
  same_bits(keras_like(16, 20, 4), 16, 256, 16);
}

// The small models pair (so the test above compares overlapped and serial programs): one
// DenseUpdate beside the ConvPoolGrad, also where there are two, with the DenseGradX right
// before the ConvPoolGrad leading them.
std::vector<Overlap> small_pairs(int64_t hidden) {
  return compile_overlap(keras_like(12, 8, 4, hidden), 8, 4).pairs;
}
// The Keras shape at batch 16 (tests/train_io's RtlConvDenseMergedStreamBitExact runs it on
// the RTL against the golden model) gets the DenseGradX as its lead too, its chunk made smaller
// (the whole dX would reach past the update's rows).
TEST(TrainOverlap, KerasBatch16HasALead) {
  const ChipParams chip = ChipParams::training(16);
  const Compiled c = compile_overlap(keras_like(28, 64, 10), 16, 16);
  const Graph& g = c.g;
  const Placement& p = c.p;
  const std::vector<Overlap>& pairs = c.pairs;
  ASSERT_EQ(pairs.size(), 1u);
  ASSERT_GE(pairs[0].lead, 0);
  EXPECT_EQ(g.nodes[static_cast<size_t>(pairs[0].lead)].op, Op::DenseGradX);
  const uint32_t blocks = (k_of(g, g.nodes[static_cast<size_t>(pairs[0].lead)]) + 15) / 16;
  EXPECT_LT(p.chunk[static_cast<size_t>(pairs[0].lead)], blocks);
  EXPECT_LE(node_layout(g, p, pairs[0].lead, p.chunk[static_cast<size_t>(pairs[0].lead)], chip).end,
            p.vmem_lo_of(pairs[0].side));
}
TEST(TrainOverlap, SmallModelsPairOnce) {
  for (int64_t hidden : {0, 6}) {
    const std::vector<Overlap> pairs = small_pairs(hidden);
    ASSERT_EQ(pairs.size(), 1u) << hidden;
    EXPECT_GE(pairs[0].lead, 0) << hidden;
  }
}

}  // namespace
}  // namespace tpu::train::test

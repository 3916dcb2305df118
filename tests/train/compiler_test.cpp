// SPDX-License-Identifier: Apache-2.0
// The training compiler's passes one at a time (driver/train/compiler/): import, autodiff,
// optimizer, placement, schedule, emission, on small graphs.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <stdexcept>

#include "compiler/autodiff.h"
#include "compiler/emit.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "compiler/schedule.h"
#include "device_model.h"
#include "kernels.h"
#include "train_models.h"

namespace tpu::train::test {
namespace {

using namespace compiler;
using cnn::OnnxAttr;

// The message of the std::invalid_argument f throws ("" if none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

Graph full(const MlpSpec& s, uint32_t batch, const TrainOptions& o) {
  Graph g = import_onnx(mlp_onnx(s), batch, 4);
  append_backward(g);
  append_update(g, o);
  return g;
}

// ---- import

TEST(TrainImport, MlpThroughTheConverterTable) {
  MlpSpec s;
  const Graph g = import_onnx(mlp_onnx(s), 10, 4);
  EXPECT_EQ(g.dump(),
            "fwd Dense fc1 [Gemm] x(10x9), fc1.W(9x7), fc1.b(1x7) -> z1(10x7)\n"
            "fwd Relu relu1 [Relu] z1(10x7) -> h1(10x7)\n"
            "fwd Dense fc3 [MatMul+Add] h1(10x7), fc3.W(7x3), fc3.b(1x3) -> logits(10x3)\n");
  EXPECT_EQ(g.classes, 3u);
  EXPECT_EQ(g.input_c * g.input_h * g.input_w, 9u);
  ASSERT_EQ(g.params.size(), 4u);
  EXPECT_TRUE(g.params[0].transposed);   // Gemm transB = 1: ONNX holds [7, 9]
  EXPECT_FALSE(g.params[2].transposed);  // MatMul: [7, 3]
  EXPECT_EQ(g.params[0].initial, mlp_weights(s).w1);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.logits)].name, "logits");  // the Softmax's input
}

TEST(TrainImport, ResidualAdd) {
  MlpSpec s;
  s.residual = true;
  const Graph g = import_onnx(mlp_onnx(s), 4, 4);
  EXPECT_NE(g.dump().find("fwd Add residual [Add] h1(4x7), h2(4x7) -> r(4x7)\n"), std::string::npos)
      << g.dump();
  EXPECT_EQ(g.params.size(), 6u);
}

std::string with_node(const std::string& op, const std::string& name) {
  cnn::OnnxGraph g("bad");
  g.input("x", {1, 4});
  g.init_float("W", {4, 3}, std::vector<float>(12, 0.1f));
  g.node("MatMul", {"x", "W"}, {"y"}, {}, "fc");
  g.node(op, {"y"}, {"z"}, {}, name);
  g.output("z", {1, 3});
  return g.serialize();
}

TEST(TrainImport, UnsupportedOpsNameNodeAndOp) {
  const std::string bn =
      error_of([] { import_onnx(with_node("BatchNormalization", "bn1"), 2, 4); });
  EXPECT_NE(bn.find("node 'bn1' (BatchNormalization): not supported for training; supported: "),
            std::string::npos)
      << bn;
  EXPECT_NE(bn.find("Gemm"), std::string::npos) << bn;
  const std::string sig = error_of([] { import_onnx(with_node("Sigmoid", "act"), 2, 4); });
  EXPECT_NE(sig.find("node 'act' (Sigmoid)"), std::string::npos) << sig;
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(with_node("Tanh", "t")));
  m.mutable_graph()->mutable_node(1)->clear_name();
  const std::string unnamed = error_of([&] { import_onnx(m, 2, 4); });
  EXPECT_NE(unnamed.find("node '#1 (output 'z')' (Tanh)"), std::string::npos) << unnamed;
}

TEST(TrainImport, ModelWithoutTrainableWeightIsAnError) {
  cnn::OnnxGraph g("noweights");
  g.input("x", {1, 4});
  g.node("Flatten", {"x"}, {"f"}, {}, "flatten");
  g.node("Relu", {"f"}, {"y"}, {}, "relu");
  g.output("y", {1, 4});
  EXPECT_NE(error_of([&] { import_onnx(g.serialize(), 2, 4); }).find("no trainable weight"),
            std::string::npos);
}

TEST(TrainImport, GemmOptionsAndInitializersChecked) {
  cnn::OnnxGraph g("transA");
  g.input("x", {1, 4});
  g.init_float("W", {4, 3}, std::vector<float>(12, 0.1f));
  g.node("Gemm", {"x", "W"}, {"y"}, {OnnxAttr::Int("transA", 1)}, "g");
  g.output("y", {1, 3});
  EXPECT_NE(error_of([&] { import_onnx(g.serialize(), 2, 4); }).find("node 'g' (Gemm): transA"),
            std::string::npos);
  cnn::OnnxGraph h("int");
  h.input("x", {1, 4});
  h.init_int8("W", {4, 3}, std::vector<int8_t>(12, 1));
  h.node("MatMul", {"x", "W"}, {"y"}, {}, "mm");
  h.output("y", {1, 3});
  EXPECT_NE(error_of([&] { import_onnx(h.serialize(), 2, 4); }).find("'W' is not float32"),
            std::string::npos);
  cnn::OnnxGraph k("shape");
  k.input("x", {1, 5});
  k.init_float("W", {4, 3}, std::vector<float>(12, 0.1f));
  k.node("MatMul", {"x", "W"}, {"y"}, {}, "mm");
  k.output("y", {1, 3});
  EXPECT_NE(error_of([&] { import_onnx(k.serialize(), 2, 4); }).find("4 inputs, the data 5"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              import_onnx(std::string("/nonexistent/model.onnx"), 2, 4);
            }).find("cannot open"),
            std::string::npos);
}

TEST(TrainImport, ImageMustBeFlattenedBeforeGemm) {
  cnn::OnnxGraph g("img");
  g.input("x", {1, 1, 2, 2});
  g.init_float("W", {4, 3}, std::vector<float>(12, 0.1f));
  g.node("MatMul", {"x", "W"}, {"y"}, {}, "mm");
  g.output("y", {1, 3});
  EXPECT_NE(error_of([&] { import_onnx(g.serialize(), 2, 4); }).find("Flatten it first"),
            std::string::npos);
}

// ---- autodiff

TEST(TrainAutodiff, BackwardOfTheMlp) {
  Graph g = import_onnx(mlp_onnx(MlpSpec{}), 10, 4);
  append_backward(g);
  EXPECT_EQ(g.dump(),
            "fwd Dense fc1 [Gemm] x(10x9), fc1.W(9x7), fc1.b(1x7) -> z1(10x7)\n"
            "fwd Relu relu1 [Relu] z1(10x7) -> h1(10x7)\n"
            "fwd Dense fc3 [MatMul+Add] h1(10x7), fc3.W(7x3), fc3.b(1x3) -> logits(10x3)\n"
            "loss SoftmaxCe loss logits(10x3), labels(10x1), softmax pad row(1x3) -> "
            "d(logits)(10x3), loss(1x1)\n"
            "bwd DenseGradW fc3 [MatMul+Add] h1(10x7), d(logits)(10x3) -> d(fc3.W)(7x3)\n"
            "bwd BiasGrad fc3 [MatMul+Add] d(logits)(10x3) -> d(fc3.b)(1x3)\n"
            "bwd DenseGradX fc3 [MatMul+Add] d(logits)(10x3), fc3.W(7x3) -> d(h1)(10x7)\n"
            "bwd ReluGrad relu1 [Relu] z1(10x7), d(h1)(10x7) -> d(z1)(10x7)\n"
            "bwd DenseGradW fc1 [Gemm] x(10x9), d(z1)(10x7) -> d(fc1.W)(9x7)\n"
            "bwd BiasGrad fc1 [Gemm] d(z1)(10x7) -> d(fc1.b)(1x7)\n");  // no dX of the input
  EXPECT_NE(error_of([&] { append_backward(g); }).find("has a loss already"), std::string::npos);
}

TEST(TrainAutodiff, FanOutGradientsAreSummed) {
  MlpSpec s;
  s.residual = true;
  Graph g = import_onnx(mlp_onnx(s), 4, 4);
  append_backward(g);
  const std::string d = g.dump();
  // h1 is read by fc2 and the residual Add: d(r) (the Add passes dY on) + fc2's dX, in that order.
  EXPECT_NE(d.find("bwd DenseGradX fc2 [Gemm] d(z2)(4x7), fc2.W(7x7) -> d(h1)#2(4x7)\n"
                   "bwd AddGrad sum d(h1) d(r)(4x7), d(h1)#2(4x7) -> d(h1)+2(4x7)\n"
                   "bwd ReluGrad relu1 [Relu] z1(4x7), d(h1)+2(4x7) -> d(z1)(4x7)\n"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("bwd ReluGrad relu2 [Relu] z2(4x7), d(r)(4x7) -> d(z2)(4x7)\n"),
            std::string::npos)
      << d;
}

TEST(TrainAutodiff, DeadBranchIsAnError) {
  cnn::OnnxGraph g("dead");
  g.input("x", {1, 4});
  g.init_float("W", {4, 3}, std::vector<float>(12, 0.1f));
  g.init_float("V", {4, 3}, std::vector<float>(12, 0.1f));
  g.node("MatMul", {"x", "W"}, {"y"}, {}, "used");
  g.node("MatMul", {"x", "V"}, {"unused"}, {}, "dead");
  g.output("y", {1, 3});
  Graph t = import_onnx(g.serialize(), 2, 4);
  EXPECT_NE(error_of([&] {
              append_backward(t);
            }).find("node 'dead' (MatMul): its output does not reach the loss"),
            std::string::npos);
}

// ---- optimizer

TEST(TrainOptimizer, AdamStateAndUpdates) {
  const Graph g = full(MlpSpec{}, 10, TrainOptions{});
  const std::string d = g.dump();
  EXPECT_NE(
      d.find("upd AdamBegin adam adam state(4x1) -> adam state(4x1)\n"
             "upd AdamUpdate fc1 [Gemm] fc1.W(9x7), d(fc1.W)(9x7), m(fc1.W)(9x7), v(fc1.W)(9x7), "
             "adam state(4x1) -> fc1.W(9x7), m(fc1.W)(9x7), v(fc1.W)(9x7)\n"),
      std::string::npos)
      << d;
  int updates = 0;
  for (const Node& n : g.nodes) updates += n.op == Op::AdamUpdate;
  EXPECT_EQ(updates, 4);
}

TEST(TrainOptimizer, SgdWithAndWithoutMomentum) {
  TrainOptions o;
  o.optimizer = Optimizer::Sgd;
  o.lr = 0.1f;
  Graph plain = full(MlpSpec{}, 4, o);
  EXPECT_NE(
      plain.dump().find("upd SgdUpdate fc3 [MatMul+Add] fc3.b(1x3), d(fc3.b)(1x3) -> fc3.b(1x3)\n"),
      std::string::npos);
  o.momentum = 0.9f;
  Graph mom = full(MlpSpec{}, 4, o);
  EXPECT_NE(mom.dump().find("upd SgdUpdate fc3 [MatMul+Add] fc3.b(1x3), d(fc3.b)(1x3), "
                            "velocity(fc3.b)(1x3) -> fc3.b(1x3), velocity(fc3.b)(1x3)\n"),
            std::string::npos)
      << mom.dump();
}

TEST(TrainOptimizer, BadHyperParameters) {
  Graph g = import_onnx(mlp_onnx(MlpSpec{}), 4, 4);
  append_backward(g);
  TrainOptions o;
  o.lr = 0.0f;
  EXPECT_NE(error_of([&] { append_update(g, o); }).find("learning rate"), std::string::npos);
  o = TrainOptions{};
  o.beta2 = 1.0f;
  EXPECT_NE(error_of([&] { append_update(g, o); }).find("betas"), std::string::npos);
  Graph fwd = import_onnx(mlp_onnx(MlpSpec{}), 4, 4);
  EXPECT_NE(error_of([&] { append_update(fwd, TrainOptions{}); }).find("no loss"),
            std::string::npos);
}

// ---- placement

TEST(TrainPlacement, HomesAreDisjointAndWholeNodesFit) {
  const Graph g = full(MlpSpec{}, 10, TrainOptions{});
  const ChipParams chip = ChipParams::training(4);
  const Placement p = place(g, chip);
  ASSERT_EQ(p.homes.size(), g.tensors.size());
  for (size_t i = 1; i < p.homes.size(); ++i) {
    EXPECT_GE(p.homes[i].addr, p.homes[i - 1].addr + p.homes[i - 1].rows * 4 * 4) << i;
    EXPECT_EQ(p.homes[i].addr % 64, 0u);
  }
  EXPECT_EQ(p.homes[static_cast<size_t>(g.labels)].rows, 3u);  // ceil(10 / 4) rows of labels
  EXPECT_EQ(p.homes[static_cast<size_t>(g.input)].geom.pitch, 12u);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const uint32_t k = k_of(g, g.nodes[i]);
    if (k != 0) {
      EXPECT_EQ(p.chunk[i], (k + 3) / 4) << g.nodes[i].name;  // one chunk
    }
    const uint32_t flat = flat_rows_of(g, p, g.nodes[i]);
    if (flat != 0) {
      EXPECT_EQ(p.chunk[i], flat) << g.nodes[i].name;
    }
  }
}

// The Keras example's Dense: 64 x 13 x 13 = 10816 inputs, 10 classes, batch 32, N = 16: its
// input alone is 21,632 VMEM rows: on a chip of 8,192 (the training chip's VMEM before it grew
// to ChipParams::kTrainingVmemRows = 32,768) the Dense and its gradients run in K-chunks.
TEST(TrainPlacement, KerasDenseStreamsInKChunks) {
  cnn::OnnxGraph m("keras_dense");
  m.input("x", {-1, 64, 13, 13});
  m.init_float("W", {10816, 10}, std::vector<float>(108160, 0.01f));
  m.init_float("b", {10}, std::vector<float>(10, 0.0f));
  m.node("Flatten", {"x"}, {"f"}, {}, "flatten");
  m.node("Gemm", {"f", "W", "b"}, {"y"}, {}, "dense");
  m.output("y", {-1, 10});
  Graph g = import_onnx(m.serialize(), 32, 16);
  append_backward(g);
  append_update(g, TrainOptions{});
  ChipParams chip = ChipParams::training(16);
  chip.vmem_rows = 8192;  // whatever the training chip's default: a chip where X does not fit
  const Placement p = place(g, chip);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const int id = static_cast<int>(i);
    if (n.op == Op::Dense || n.op == Op::DenseGradW) {
      EXPECT_LT(p.chunk[i], 676u) << op_name(n.op);  // 676 blocks of K
      EXPECT_GE(p.chunk[i], 48u) << op_name(n.op);
      EXPECT_EQ(p.depth[i], 2u) << op_name(n.op);  // double-buffered chunks
      EXPECT_LE(node_layout(g, p, id, p.chunk[i], chip).end, chip.vmem_rows);
      EXPECT_THROW(node_layout(g, p, id, p.chunk[i] + 1, chip), std::invalid_argument);
    }
    if (n.op == Op::AdamUpdate && n.name == "dense" &&
        g.tensors[static_cast<size_t>(n.in[0])].rows > 1) {
      EXPECT_LT(p.chunk[i], 10816u);  // the weight's 10,816 rows in chunks
    }
  }
  // The program builds (every DMA inside device memory, every instruction checked).
  const Schedule s = schedule(g);
  const Emitted e = emit(g, p, s.step, TrainOptions{}, chip, Device::kArenaBase);
  EXPECT_GT(e.program.size(), 100u);
}

TEST(TrainPlacement, TooManyClassesIsAnError) {
  MlpSpec s;
  s.classes = 5;
  const Graph g = full(s, 4, TrainOptions{});
  EXPECT_NE(error_of([&] { place(g, ChipParams::training(4)); }).find("5 classes exceed N = 4"),
            std::string::npos);
  EXPECT_NE(error_of([&] { place(g, ChipParams::with_n(16)); }).find("no VMEM"), std::string::npos);
}

// ---- schedule

TEST(TrainSchedule, StepAndForwardOrder) {
  const Graph g = full(MlpSpec{}, 4, TrainOptions{});
  const Schedule s = schedule(g);
  EXPECT_EQ(s.step.size(), g.nodes.size());
  EXPECT_EQ(s.forward, (std::vector<int>{0, 1, 2}));
  Graph broken = g;
  std::swap(broken.nodes[0], broken.nodes[1]);  // Relu before the Dense computing its input
  try {
    schedule(broken);
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'relu1' (Relu) reads 'z1' before it is written"),
              std::string::npos)
        << e.what();
  }
}

// ---- emission

// A Dense that fits VMEM: its operands in, the kernel (its weight tiles kDenseTileGroup per
// load, TrainOptions::dense_tile_groups), its result out, nothing else.
TEST(TrainEmit, DenseIsLoadKernelStore) {
  const Graph g = full(MlpSpec{}, 10, TrainOptions{});
  const ChipParams chip = ChipParams::training(4);
  const Placement p = place(g, chip);
  const uint32_t base = Device::kArenaBase;
  const Emitted e = emit(g, p, {0}, TrainOptions{}, chip, base);
  const NodeLayout L = node_layout(g, p, 0, p.chunk[0], chip);
  ProgramBuilder pb(chip);
  auto at = [&](int t, uint32_t row) {
    VMat m = p.homes[static_cast<size_t>(t)].geom;
    m.base = row;
    return m;
  };
  auto addr = [&](int t) { return base + p.homes[static_cast<size_t>(t)].addr; };
  const Node& n = g.nodes[0];
  pb.read_vmem(L.in[0], p.homes[static_cast<size_t>(n.in[0])].rows, addr(n.in[0]));
  const VMat w = at(n.in[1], L.in[1]);
  for (uint32_t nt = 0; nt < w.blocks(4); ++nt)
    pb.read_vmem(w.block(nt), w.pitch, addr(n.in[1]) + nt * w.pitch * 16);
  dense_forward_partial(pb, at(n.in[0], L.in[0]), w, 0, false, kDenseTileGroup);
  pb.read_vmem(L.in[2], p.homes[static_cast<size_t>(n.in[2])].rows, addr(n.in[2]));
  const VMat b = at(n.in[2], L.in[2]);
  dense_forward_finish(pb, 0, &b, at(n.out[0], L.out[0]));
  pb.write_vmem(L.out[0], p.homes[static_cast<size_t>(n.out[0])].rows, addr(n.out[0]));
  EXPECT_EQ(e.program, pb.finish());
  ASSERT_EQ(e.ranges.size(), 1u);
  EXPECT_EQ(e.ranges[0].end, e.program.size() - 1);  // then halt
}

TEST(TrainEmit, LayerCyclesAddUpToTheTotal) {
  const Graph g = full(MlpSpec{}, 10, TrainOptions{});
  const ChipParams chip = ChipParams::training(4);
  const Placement p = place(g, chip);
  const Emitted e = emit(g, p, schedule(g).step, TrainOptions{}, chip, Device::kArenaBase);
  const std::vector<LayerCycles> l = layer_cycles(g, e, chip, 12345);
  ASSERT_EQ(l.size(), 5u);  // fc1, relu1, fc3, loss, adam
  EXPECT_EQ(l[0].name, "fc1");
  EXPECT_EQ(l[3].name, "loss");
  uint64_t sum = 0;
  for (const LayerCycles& c : l) sum += c.forward + c.backward + c.update;
  EXPECT_EQ(sum, 12345u);
  EXPECT_GT(l[0].update, 0u);
  EXPECT_GT(l[2].backward, 0u);
  EXPECT_EQ(l[1].update, 0u);  // a ReLU has no weights
}

}  // namespace
}  // namespace tpu::train::test

namespace tpu::train::test {
namespace {

std::string conv_model(const std::vector<OnnxAttr>& attrs, int64_t cin = 1, int64_t pad = 0) {
  cnn::OnnxGraph g("conv");
  const int64_t features = 2 * (4 + 2 * pad) * (4 + 2 * pad);
  g.input("x", {1, cin, 6, 6});
  g.init_float("W", {2, cin, 3, 3}, std::vector<float>(size_t(18 * cin), 0.1f));
  g.init_float("D", {features, 3}, std::vector<float>(size_t(features * 3), 0.1f));
  g.node("Conv", {"x", "W"}, {"c"}, attrs, "conv");
  g.node("Flatten", {"c"}, {"f"}, {}, "flatten");
  g.node("MatMul", {"f", "D"}, {"y"}, {}, "fc");
  g.output("y", {1, 3});
  return g.serialize();
}

TEST(TrainImport, ConvAndPoolAttributesChecked) {
  const OnnxAttr k3 = OnnxAttr::Ints("kernel_shape", {3, 3});
  EXPECT_NE(error_of([&] {
              import_onnx(conv_model({k3, OnnxAttr::Int("group", 2)}), 4, 4);
            }).find("node 'conv' (Conv): group must be 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              import_onnx(conv_model({k3, OnnxAttr::Ints("dilations", {2, 2})}), 4, 4);
            }).find("dilations"),
            std::string::npos);
  const Graph g = import_onnx(conv_model({k3}), 4, 4);
  ASSERT_TRUE(g.input_conv.has_value());
  EXPECT_EQ(g.dump(),
            "fwd Conv conv [Conv] x(" + std::to_string(g.input_conv->input_rows(4)) +
                "x4), W(9x2) -> c(64x2)\n"  // cin = 1: taps in the lanes; 4x4 outputs x batch 4
                "fwd Dense fc [MatMul] f(4x64), D(64x3) -> y(4x3)\n");  // the flatten view
  // batch x H x W of the flattened image must be a multiple of N.
  const OnnxAttr pad1 = OnnxAttr::Ints("pads", {1, 1, 1, 1});
  EXPECT_NE(error_of([&] {
              import_onnx(conv_model({k3, pad1}, 1, 1), 2, 16);
            }).find("node 'flatten' (Flatten): batch x H x W = 72 must be a multiple of N = 16"),
            std::string::npos);
  // The conv's weight gradient needs a batch that is a multiple of N.
  Graph odd = import_onnx(conv_model({k3}), 2, 4);
  append_backward(odd);
  append_update(odd, TrainOptions{});
  EXPECT_NE(error_of([&] {
              place(odd, ChipParams::training(4));
            }).find("node 'conv' (ConvGradW): the batch (2) must be a multiple of N = 4"),
            std::string::npos);
}

TEST(TrainAutodiff, ConvNetBackward) {
  const OnnxAttr k3 = OnnxAttr::Ints("kernel_shape", {3, 3});
  Graph g = import_onnx(conv_model({k3, OnnxAttr::Ints("pads", {1, 1, 1, 1})}, 2, 1), 4, 4);
  append_backward(g);
  const std::string d = g.dump();
  // cin = 2 on the graph input: placed with its border, no ConvPad, no dX of the input.
  EXPECT_EQ(d.find("ConvPad"), std::string::npos) << d;
  EXPECT_EQ(d.find("ConvGradX"), std::string::npos) << d;
  EXPECT_NE(d.find("bwd ConvGradW conv [Conv] x(256x2), d(c)(144x2) -> d(W)(36x2)\n"),
            std::string::npos)
      << d;
}

// conv (1 -> 5 channels, 3x3 on 6x6, bias) -> MaxPool (2x2 stride 2, or 3x3 stride 1 pads 1)
// [-> Relu] -> Flatten -> Gemm.
std::string conv_pool_model(bool relu, bool tiling_pool = true) {
  cnn::OnnxGraph g("convpool");
  g.input("x", {-1, 1, 6, 6});
  g.init_float("W", {5, 1, 3, 3}, std::vector<float>(45, 0.1f));
  g.init_float("b", {5}, std::vector<float>(5, 0.1f));
  const int64_t features = tiling_pool ? 5 * 2 * 2 : 5 * 4 * 4;
  g.init_float("D", {3, features}, std::vector<float>(size_t(3 * features), 0.1f));
  g.node("Conv", {"x", "W", "b"}, {"c"}, {OnnxAttr::Ints("kernel_shape", {3, 3})}, "conv");
  if (tiling_pool) {
    g.node("MaxPool", {"c"}, {"p"},
           {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
  } else {
    g.node("MaxPool", {"c"}, {"p"},
           {OnnxAttr::Ints("kernel_shape", {3, 3}), OnnxAttr::Ints("pads", {1, 1, 1, 1})}, "pool");
  }
  if (relu) g.node("Relu", {"p"}, {"r"}, {}, "relu");
  g.node("Flatten", {relu ? "r" : "p"}, {"f"}, {}, "flatten");
  g.node("Gemm", {"f", "D"}, {"y"}, {OnnxAttr::Int("transB", 1)}, "fc");
  g.output("y", {-1, 3});
  return g.serialize();
}

Graph conv_pool_graph(bool relu, bool tiling_pool = true) {
  Graph g = import_onnx(conv_pool_model(relu, tiling_pool), 8, 4);
  append_backward(g);
  append_update(g, TrainOptions{});
  return g;
}

// Every node's layer is a forward node that is its own layer.
void expect_layers_valid(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.layer < 0) continue;
    ASSERT_LT(static_cast<size_t>(n.layer), g.nodes.size()) << n.name;
    const Node& l = g.nodes[static_cast<size_t>(n.layer)];
    EXPECT_EQ(l.phase, Phase::Forward) << n.name;
    EXPECT_EQ(l.layer, n.layer) << n.name;
  }
}

TEST(TrainFuse, ConvPoolReluBecomeTwoNodes) {
  Graph g = conv_pool_graph(true);
  const Graph before = g;
  EXPECT_EQ(fuse_conv_pool(g), 1);
  const std::string d = g.dump();
  // The conv output (4x4 x batch 8 x 5 channels) appears nowhere: the fused node writes the
  // relu's output and the argmax; its gradient reads the input, argmax, Y and dY.
  EXPECT_NE(d.find("fwd ConvPool conv [Conv+MaxPool+Relu] x(101x4), W(9x5), b(1x5) -> r(32x5), "
                   "argmax(p)(32x5)\n"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("bwd ConvPoolGrad conv [Conv+MaxPool+Relu] x(101x4), argmax(p)(32x5), r(32x5), "
                   "d(r)(32x5) -> d(W)(9x5), d(b)(1x5)\n"),
            std::string::npos)
      << d;
  for (const char* gone : {"fwd MaxPool", "fwd Relu", "ReluGrad", "MaxPoolGrad", "ConvGradW",
                           "BiasGrad conv", "fwd Conv conv"})
    EXPECT_EQ(d.find(gone), std::string::npos) << gone << "\n" << d;
  EXPECT_EQ(g.nodes.size(), before.nodes.size() - 5);
  expect_layers_valid(g);
  for (const Node& n : g.nodes)
    if (n.op == Op::ConvPool || n.op == Op::ConvPoolGrad) {
      EXPECT_TRUE(n.relu);
    }
  // The conv output, the pooled tensor and their gradients get no device memory.
  const ChipParams chip = ChipParams::training(4);
  const Placement pf = place(g, chip), pu = place(before, chip);
  EXPECT_LT(pf.device_bytes, pu.device_bytes);
  const Schedule s = schedule(g);
  const Emitted e = emit(g, pf, s.step, TrainOptions{}, chip, Device::kArenaBase);
  EXPECT_GT(e.program.size(), 50u);
  const std::vector<LayerCycles> l = layer_cycles(g, e, chip, 1000);
  ASSERT_EQ(l.size(), 4u);  // conv (+ pool + relu), fc, loss, adam
  EXPECT_EQ(l[0].op, "Conv+MaxPool+Relu");
  EXPECT_GT(l[0].forward, 0u);
  EXPECT_GT(l[0].backward, 0u);
}

TEST(TrainFuse, WithoutReluAndWhatDoesNotFuse) {
  Graph g = conv_pool_graph(false);
  EXPECT_EQ(fuse_conv_pool(g), 1);
  EXPECT_NE(g.dump().find("fwd ConvPool conv [Conv+MaxPool] x(101x4), W(9x5), b(1x5) -> p(32x5), "
                          "argmax(p)(32x5)\n"),
            std::string::npos)
      << g.dump();
  expect_layers_valid(g);
  // Overlapping windows (3x3 stride 1 pads 1): the pool does not tile the conv output.
  Graph o = conv_pool_graph(true, false);
  const std::string od = o.dump();
  EXPECT_EQ(fuse_conv_pool(o), 0);
  EXPECT_EQ(o.dump(), od);
  // A conv without a pool after it stays.
  const OnnxAttr k3 = OnnxAttr::Ints("kernel_shape", {3, 3});
  Graph c = import_onnx(conv_model({k3}), 4, 4);
  append_backward(c);
  EXPECT_EQ(fuse_conv_pool(c), 0);
}

// Double-buffered fused bands (depth 2): the next band's reads and the previous band's writes
// are spread over this band's compute (the chip issues in order: DMA back to back would stall
// the compute behind it); the same instructions as without double buffering, in another order.
TEST(TrainFuse, DoubleBufferedBandsSpreadTheirDma) {
  Graph g = conv_pool_graph(true);
  ASSERT_EQ(fuse_conv_pool(g), 1);
  const ChipParams chip = ChipParams::training(4);
  Placement p = place(g, chip);
  const Schedule s = schedule(g);
  size_t fwd = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op == Op::ConvPool) fwd = i;
    if (g.nodes[i].op == Op::ConvPool || g.nodes[i].op == Op::ConvPoolGrad) {
      EXPECT_EQ(p.depth[i], 2u) << op_name(g.nodes[i].op);
    }
  }
  p.chunk[fwd] = 1;  // one pooled line per band: two bands
  const Emitted e2 = emit(g, p, s.step, TrainOptions{}, chip, Device::kArenaBase);
  p.depth[fwd] = 1;
  const Emitted e1 = emit(g, p, s.step, TrainOptions{}, chip, Device::kArenaBase);
  auto range = [&](const Emitted& e) {
    for (const Emitted::Range& r : e.ranges)
      if (r.node == static_cast<int>(fwd)) return r;
    return Emitted::Range{};
  };
  const Emitted::Range r2 = range(e2), r1 = range(e1);
  EXPECT_EQ(r2.end - r2.begin, r1.end - r1.begin);
  // Depth 2: band 1's input is read while band 0's matmuls stream, and some write_vmem is
  // followed directly by compute (depth 1: every write is followed by DMA or ends the node).
  auto is_mm = [](const Instruction& i) { return std::holds_alternative<MatmulBf16>(i); };
  auto is_dma = [](const Instruction& i) {
    return std::holds_alternative<ReadVmem>(i) || std::holds_alternative<WriteVmem>(i);
  };
  auto spread = [&](const Emitted& e, const Emitted::Range& r) {
    size_t n = 0;
    for (size_t k = r.begin; k + 1 < r.end; ++k)
      n += std::holds_alternative<WriteVmem>(e.program[k]) && !is_dma(e.program[k + 1]) ? 1 : 0;
    return n;
  };
  EXPECT_GE(spread(e2, r2), 1u);
  EXPECT_EQ(spread(e1, r1), 0u);
  size_t reads = 0, k = r2.begin;
  for (; k < r2.end && !is_mm(e2.program[k]); ++k)
    reads += std::holds_alternative<ReadVmem>(e2.program[k]) ? 1 : 0;
  EXPECT_GE(reads, 3u);  // W, b, band 0's input lines
  // Band 1's input lines read before band 0's first acc_to_vmem (the list scheduler issues
  // them as soon as port 0 is free: they write the other set), so they arrive while band 0's
  // matmuls stream: W, b and both bands' input lines ahead of it.
  size_t early = 0;
  for (size_t q = r2.begin; q < r2.end && !std::holds_alternative<AccToVmem>(e2.program[q]); ++q)
    early += std::holds_alternative<ReadVmem>(e2.program[q]) ? 1 : 0;
  EXPECT_GE(early, 4u);
  // The conv (cin = 1) one line per call, alternating two ACC regions (one line apart): the
  // first matmul of each call (not accumulating) writes the other region than the previous
  // call's, so one call's matmuls run while the other's acc_to_vmem moves its rows.
  std::vector<uint32_t> firsts;
  for (size_t q = r2.begin; q < r2.end; ++q) {
    const auto* mm = std::get_if<MatmulBf16>(&e2.program[q]);
    if (mm != nullptr && !mm->accumulate) firsts.push_back(mm->acc_addr);
  }
  ASSERT_GE(firsts.size(), 4u);  // two bands of two conv lines
  for (size_t q = 1; q < firsts.size(); ++q) EXPECT_NE(firsts[q], firsts[q - 1]) << q;
}

// The fused gradient (5 output channels at N = 4: two blocks, one group): dW of both blocks in
// one call (conv_dw_group), so each band's tap rows (9, by 5 aligns) are built once, not
// once per block; and the next job's reads spread over the job's matmuls (spread_reads), never
// two of them with fewer than two matmuls between them once the matmuls run.
TEST(TrainFuse, ConvPoolGradBuildsTapRowsOnceAndSpreadsItsReads) {
  Graph g = conv_pool_graph(true);
  ASSERT_EQ(fuse_conv_pool(g), 1);
  const ChipParams chip = ChipParams::training(4);
  Placement p = place(g, chip);
  const Schedule s = schedule(g);
  size_t bwd = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op == Op::ConvPoolGrad) bwd = i;
  }
  ASSERT_EQ(p.depth[bwd], 2u);
  p.chunk[bwd] = 1;  // one pooled line per band: two bands
  const Emitted e = emit(g, p, s.step, TrainOptions{}, chip, Device::kArenaBase);
  Emitted::Range r{};
  for (const Emitted::Range& q : e.ranges)
    if (q.node == static_cast<int>(bwd)) r = q;
  size_t aligns = 0, align_rows = 0, matmuls = 0, since = 0, reads_after_mm = 0;
  bool read_seen = false;
  for (size_t k = r.begin; k < r.end; ++k) {
    const Instruction& in = e.program[k];
    if (const auto* v = std::get_if<Vector>(&in))
      if (v->func == static_cast<uint8_t>(VecFunc::Align)) {
        ++aligns;
        align_rows += v->inner;
      }
    if (std::holds_alternative<MatmulBf16>(in)) {
      ++matmuls;
      ++since;
    }
    if (std::holds_alternative<ReadVmem>(in) && matmuls > 0) {
      if (read_seen && since > 0) {
        EXPECT_GE(since, 2u) << k;
      }
      read_seen = true;
      since = 0;
      ++reads_after_mm;
    }
  }
  // two bands, 9 taps each; at batch 8 one align per run of taps of one kernel row in one
  // tile of N = 4 taps ({0, 1, 2}, {3}, {4, 5}, {6, 7}, {8}), each writing a row per tap
  EXPECT_EQ(aligns, 2u * 5);
  EXPECT_EQ(align_rows, 2u * 9);
  (void)reads_after_mm;  // two jobs: job 1's reads go ahead of job 0's passes (overlay)
  // Software-pipelined (overlay): job 1's vector passes sit among job 0's loads and matmuls.
  auto mxu = [&](size_t k) {
    return std::holds_alternative<MatmulBf16>(e.program[k]) ||
           std::holds_alternative<LoadWeights>(e.program[k]);
  };
  size_t sandwiched = 0;
  for (size_t k = r.begin + 1; k + 1 < r.end; ++k)
    sandwiched += std::holds_alternative<Vector>(e.program[k]) && mxu(k - 1) && mxu(k + 1) ? 1 : 0;
  EXPECT_GE(sandwiched, 3u);
}

// Each Dense weight's DenseGradW and its update become one DenseUpdate in the update's place
// (after AdamBegin): dW gets no device memory.
TEST(TrainFuse, DenseGradientAndUpdateBecomeOneNode) {
  TrainOptions o;
  Graph g = full(MlpSpec{}, 10, o);
  const Graph before = g;
  EXPECT_EQ(fuse_dense_update(g), 2);  // fc1 (Gemm), fc3 (MatMul); the biases stay
  const std::string d = g.dump();
  EXPECT_EQ(d.find("DenseGradW"), std::string::npos) << d;
  EXPECT_NE(d.find("upd DenseUpdate fc1 [Gemm] x(10x9), d(z1)(10x7), fc1.W(9x7), m(fc1.W)(9x7), "
                   "v(fc1.W)(9x7), adam state(4x1) -> fc1.W(9x7), m(fc1.W)(9x7), v(fc1.W)(9x7)\n"),
            std::string::npos)
      << d;
  EXPECT_LT(d.find("upd AdamBegin"), d.find("upd DenseUpdate"));
  EXPECT_EQ(g.nodes.size(), before.nodes.size() - 2);
  expect_layers_valid(g);
  const ChipParams chip = ChipParams::training(4);
  EXPECT_LT(place(g, chip).device_bytes, place(before, chip).device_bytes);
  EXPECT_EQ(fuse_dense_update(g), 0);
  // SGD with momentum: W and its velocity.
  o.optimizer = Optimizer::Sgd;
  o.momentum = 0.9f;
  Graph s = full(MlpSpec{}, 10, o);
  EXPECT_EQ(fuse_dense_update(s), 2);
  EXPECT_NE(s.dump().find("upd DenseUpdate fc3 [MatMul+Add] h1(10x7), d(logits)(10x3), "
                          "fc3.W(7x3), velocity(fc3.W)(7x3) -> fc3.W(7x3), velocity(fc3.W)(7x3)\n"),
            std::string::npos)
      << s.dump();
}

// A VMEM too small for one fused band (two conv lines) keeps the layers apart, in bands of one
// line; at the smallest VMEM that fuses, one channel block per pass.
TEST(TrainFuse, SmallVmemFallsBackOrGroupsChannels) {
  ChipParams chip = ChipParams::training(4);
  chip.vmem_rows = 400;
  Graph g = conv_pool_graph(true);
  EXPECT_EQ(fuse_conv_pool(g, chip), 0);
  EXPECT_EQ(g.dump(), conv_pool_graph(true).dump());
  uint32_t rows = 400;
  Graph f;
  for (; rows < 4000; rows += 8) {
    chip.vmem_rows = rows;
    f = conv_pool_graph(true);
    if (fuse_conv_pool(f, chip) > 0) break;
  }
  ASSERT_LT(rows, 4000u);
  const Placement p = place(f, chip);
  bool grouped = false;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    if (f.nodes[i].op != Op::ConvPool && f.nodes[i].op != Op::ConvPoolGrad) continue;
    EXPECT_GE(p.chunk[i], 1u);
    EXPECT_LE(node_layout(f, p, static_cast<int>(i), p.chunk[i], chip).end, chip.vmem_rows);
    grouped = grouped || p.group[i] == 1;
  }
  EXPECT_TRUE(grouped) << "VMEM rows " << rows;
  const Emitted e = emit(f, p, schedule(f).step, TrainOptions{}, chip, Device::kArenaBase);
  EXPECT_GT(e.program.size(), 50u);
}

}  // namespace
}  // namespace tpu::train::test

namespace tpu::train::test {
namespace {

// A BiasGrad that does not fit VMEM sums dY's rows in chunks, each chunk's sums continuing from
// db: the result equals the whole kernel's bit for bit (chunks of 3 rows and of 255 + 2 rows,
// across the 255-row steps of one rsum); a dY of more than 2,047 rows per block (rsum's 11-bit
// block step) is always chunked.
TEST(TrainEmit, BiasGradInRowChunksEqualsWhole) {
  cnn::OnnxGraph m("bias");
  m.input("x", {-1, 4});
  m.init_float("W", {4, 9}, uniform(36, 1.0f, 7));
  m.init_float("b", {9}, std::vector<float>(9, 0.0f));
  m.node("Gemm", {"x", "W", "b"}, {"y"}, {}, "fc");
  m.output("y", {-1, 9});
  // The bias gradient of a conv with 4 x 4 outputs and batch 132: 2,112 rows per block.
  cnn::OnnxGraph cm("conv_bias");
  cm.input("x", {-1, 1, 6, 6});
  cm.init_float("W", {2, 1, 3, 3}, uniform(18, 1.0f, 8));
  cm.init_float("b", {2}, std::vector<float>(2, 0.0f));
  cm.init_float("D", {32, 4}, uniform(128, 1.0f, 9));
  cm.node("Conv", {"x", "W", "b"}, {"c"}, {OnnxAttr::Ints("kernel_shape", {3, 3})}, "conv");
  cm.node("Flatten", {"c"}, {"f"}, {}, "flatten");
  cm.node("MatMul", {"f", "D"}, {"y"}, {}, "fc");
  cm.output("y", {-1, 4});
  for (uint32_t batch : {11u, 300u, 132u}) {
    Graph g = import_onnx(batch == 132 ? cm.serialize() : m.serialize(), batch, 4);
    g.classes = 4;  // 9 outputs exceed N = 4 for a loss, which this test does not emit
    append_backward(g);
    const ChipParams chip = ChipParams::training(4);
    Placement p = place(g, chip);
    int node = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].op == Op::BiasGrad) node = static_cast<int>(i);
    ASSERT_GE(node, 0);
    const Node& nd = g.nodes[static_cast<size_t>(node)];
    const Home& dy = p.homes[static_cast<size_t>(nd.in[0])];
    const Home& db = p.homes[static_cast<size_t>(nd.out[0])];
    std::vector<float> values = uniform(size_t{dy.geom.rows} * dy.geom.cols, 1.0f, batch);
    values[5] = -0.0f;
    std::vector<std::vector<uint32_t>> results;
    std::vector<uint32_t> chunks = {0u, 3u, 257u};
    if (dy.geom.rows > 2047) {
      EXPECT_GT(p.chunk[static_cast<size_t>(node)], 0u);
      EXPECT_LE(p.chunk[static_cast<size_t>(node)], 2047u);
      chunks = {p.chunk[static_cast<size_t>(node)], 1000u};
    }
    for (uint32_t chunk : chunks) {
      if (chunk >= dy.geom.rows) continue;
      p.chunk[static_cast<size_t>(node)] = chunk;
      ModelDevice dev(chip);
      const HostBuffer buf = dev.alloc(p.device_bytes, "device memory", 4096);
      const std::vector<float> img = pack(dy.geom, 4, values);
      dev.write(buf.addr + dy.addr, img.data(), img.size() * 4);
      dev.run(emit(g, p, {node}, TrainOptions{}, chip, buf.addr).program);
      std::vector<uint32_t> got(size_t{db.rows} * 4);
      dev.read(buf.addr + db.addr, got.data(), got.size() * 4);
      results.push_back(got);
    }
    ASSERT_GE(results.size(), 2u) << batch;  // at least two ways compared
    for (size_t i = 1; i < results.size(); ++i)
      EXPECT_EQ(results[i], results[0]) << batch << " " << i;
    // And the reference's column sums (from -0.0, rows in order).
    std::vector<uint32_t> want = ref::column_sums(ref::Mat{dy.geom.rows, dy.geom.cols, [&] {
                                                             std::vector<uint32_t> b;
                                                             for (float f : values)
                                                               b.push_back(ref::bits(f));
                                                             return b;
                                                           }()});
    want.resize(results[0].size(), 0);
    EXPECT_EQ(results[0], want) << batch;
  }
}

}  // namespace
}  // namespace tpu::train::test

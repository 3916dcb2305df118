// SPDX-License-Identifier: Apache-2.0
// The fold pass (driver/cnn/passes/fold_affine.h) on hand-built networks: the Fold steps a
// converter leaves (a bias, a per-channel scale, a BatchNormalization in a Copy layer of its own)
// fold into the Conv/Dense they read, readers and later steps follow; what cannot fold is refused
// with the message naming the node and what it follows (as the fusion pass will leave it). And
// through the importer: the folds of a model come out as the converters' order gave them.
#include "passes/fold_affine.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "cnn_test_util.h"
#include "ir_builders.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "passes/fuse_layers.h"

namespace {

using namespace tpu::cnn;
using namespace cnn_test;

// A 1x1 Conv of the 4-channel input with 2 output channels: weights oc * 4 + i + 1, bias
// 0.5, -0.5.
Layer conv1x1(const std::string& name, int input = kNetworkInput) {
  Layer l = conv_layer(name, {input}, 2, 1);
  for (size_t i = 0; i < l.weight.size(); ++i) l.weight[i] = float(i + 1);
  l.bias = {0.5f, -0.5f};
  return l;
}

// The Copy layer a converter makes of `op` (Add / Sub / Mul / Div) by `values` per channel
// reading layer `in` of `net` (the layer it may fold into).
Layer fold(const Network& net, const std::string& op, const std::string& name, int in,
           std::vector<double> values, bool constant_first = false) {
  const Layer& from = net.layers[size_t(in)];
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = op;
  c.inputs = {in};
  c.input_channels = {from.out.c};
  c.in = from.out;
  c.out_quant = from.out_quant;
  c.step.kind = StepKind::Fold;
  c.step.sources = {in};
  c.step.values = std::move(values);
  c.step.constant_first = constant_first;
  c.infer_shapes();
  return c;
}

// A BatchNormalization of layer `in` with per-channel scale, B, mean and var.
Layer batch_norm(const Network& net, const std::string& name, int in,
                 const std::array<std::vector<double>, 4>& p, double eps) {
  Layer c = fold(net, "BatchNormalization", name, in, {});
  c.step.batch_norm = p;
  for (size_t i = 0; i < p.size(); ++i)
    c.step.batch_norm_shapes[i] = "[" + std::to_string(p[i].size()) + "]";
  c.step.epsilon = eps;
  return c;
}

std::string refusal(const Network& net) {
  return error_of([&] { passes::fold_affine(net); });
}

// Add, Sub, Mul and Div by constants fold into the conv in order; the layer and the step
// reading the last fold read the conv.
TEST(FoldAffine, BiasAndScaleFoldIntoTheConvInOrder) {
  Network net = input_net();
  net.layers.push_back(conv1x1("conv"));
  net.layers.push_back(fold(net, "Add", "add", 0, {1.0, 2.0}));
  net.layers.push_back(fold(net, "Mul", "mul", 1, {2.0, 3.0}));
  net.layers.push_back(fold(net, "Sub", "sub", 2, {1.0, 1.0}));
  net.layers.push_back(fold(net, "Div", "div", 3, {4.0, 0.5}));
  net.layers.push_back(activation(net, "relu", 4, 4, Activation::Relu));
  net.layers.push_back(conv_layer("next", {5}, 2, 1));
  net.layers.back().input_channels = {2};
  const passes::FusedNetwork f = passes::fold_affine(net);
  ASSERT_EQ(f.net.layers.size(), 3u);
  const Layer& c = f.net.layers[0];
  // bias: ((0.5 + 1) * 2 - 1) / 4 and ((-0.5 + 2) * 3 - 1) / 0.5, as float steps
  EXPECT_EQ(c.bias[0], float(float(float(float(0.5f + 1.0f) * 2.0) - 1.0f) * (1.0 / 4.0)));
  EXPECT_EQ(c.bias[1], float(float(float(float(-0.5f + 2.0f) * 3.0) - 1.0f) * (1.0 / 0.5)));
  EXPECT_EQ(c.weight[0], float(float(1.0f * 2.0) * 0.25));
  EXPECT_EQ(c.weight[4], float(float(5.0f * 3.0) * 2.0));
  EXPECT_EQ(c.fused, (std::vector<std::string>{"Add add", "Mul mul", "Sub sub", "Div div"}));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(f.parts_of[i], std::vector<int>{0}) << i;
  EXPECT_EQ(f.net.layers[1].inputs, std::vector<int>{0});
  EXPECT_EQ(f.net.layers[1].step.sources, std::vector<int>{0});  // the Relu may join the conv
  EXPECT_EQ(f.net.layers[2].inputs, std::vector<int>{1});
  // ... and the fusion pass after it does.
  const passes::FusedNetwork all = passes::resolve_steps(net);
  ASSERT_EQ(all.net.layers.size(), 2u);
  EXPECT_EQ(all.net.layers[0].act, Activation::Relu);
  EXPECT_EQ(all.parts_of[5], std::vector<int>{0});
  EXPECT_EQ(all.net.layers[1].inputs, std::vector<int>{0});
}

// BatchNormalization: w * s, (b - mean) * s + B with s = scale / sqrt(var + eps); a quantization
// given to its output (a QuantizeLinear after it) is the conv's.
TEST(FoldAffine, BatchNormFoldsIntoWeightsAndBias) {
  Network net = input_net();
  net.layers.push_back(conv1x1("conv"));
  net.layers.push_back(
      batch_norm(net, "bn", 0, {{{2.0, 0.5}, {0.25, -1.0}, {1.0, -2.0}, {3.0, 0.75}}}, 1e-5));
  net.layers.back().out_quant = uint8_quant(0.5f);
  const passes::FusedNetwork f = passes::fold_affine(net);
  ASSERT_EQ(f.net.layers.size(), 1u);
  const Layer& c = f.net.layers[0];
  const double s0 = 2.0 / std::sqrt(3.0 + 1e-5), s1 = 0.5 / std::sqrt(0.75 + 1e-5);
  EXPECT_EQ(c.weight[1], float(2.0f * s0));
  EXPECT_EQ(c.weight[7], float(8.0f * s1));
  EXPECT_EQ(c.bias[0], float((0.5f - 1.0) * s0 + 0.25));
  EXPECT_EQ(c.bias[1], float((-0.5f + 2.0) * s1 - 1.0));
  EXPECT_EQ(c.fused, std::vector<std::string>{"BatchNormalization bn"});
  EXPECT_EQ(c.out_quant, uint8_quant(0.5f));
}

// What cannot fold is refused, naming the node and what it follows.
TEST(FoldAffine, RefusesWhatCannotFold) {
  auto with = [](const std::function<void(Network&)>& add) {
    Network net = input_net();
    net.layers.push_back(conv1x1("conv"));
    add(net);
    return refusal(net);
  };
  EXPECT_EQ(with([](Network& n) {
              n.layers.push_back(fold(n, "Sub", "s", 0, {1, 1}, true));
            }),
            "net: node 's' (Sub): Sub with the constant first is not supported after a layer");
  EXPECT_EQ(with([](Network& n) {
              n.layers.push_back(fold(n, "Div", "d", 0, {1, 0}, false));
            }),
            "net: node 'd' (Div): division by zero");
  // After a Relu that joins the conv (the fusion pass's pending step).
  EXPECT_EQ(with([](Network& n) {
              n.layers.push_back(activation(n, "relu", 0, 0, Activation::Relu));
              n.layers.push_back(fold(n, "Mul", "m", 1, {2, 2}));
            }),
            "net: node 'm' (Mul): Mul by a constant after an activation or pooling is not "
            "supported");
  // After a Relu that stays a Copy (another op reads the conv).
  EXPECT_EQ(with([](Network& n) {
              n.layers.push_back(activation(n, "relu", 0, -1, Activation::Relu));
              n.layers.push_back(fold(n, "Add", "a", 1, {2, 2}));
            }),
            "net: node 'a' (Add): Add by a constant after Relu 'relu' is not supported");
  EXPECT_EQ(with([](Network& n) {
              n.layers.push_back(activation(n, "relu", 0, -1, Activation::Relu));
              n.layers.push_back(batch_norm(n, "bn", 1, {{{1, 1}, {0, 0}, {0, 0}, {1, 1}}}, 0));
            }),
            "net: node 'bn' (BatchNormalization): BatchNormalization is supported right after a "
            "Conv or Gemm whose output nothing else reads (it is folded into it)");
  // After a conv with an activation already (fused before: the pass sees it on the layer).
  EXPECT_EQ(with([](Network& n) {
              n.layers[0].act = Activation::Relu;
              n.layers.push_back(batch_norm(n, "bn", 0, {{{1, 1}, {0, 0}, {0, 0}, {1, 1}}}, 0));
            }),
            "net: node 'bn' (BatchNormalization): BatchNormalization after an activation or "
            "pooling is not supported");
  EXPECT_EQ(with([](Network& n) {
              n.layers.push_back(batch_norm(n, "bn", 0, {{{1, 1, 1}, {0, 0}, {0, 0}, {1, 1}}}, 0));
            }),
            "net: node 'bn' (BatchNormalization): parameter of shape [3] for 2 channels");
  // Quantized weights and bias from the file.
  GivenQuant given;
  given.bias = {1, 2};
  EXPECT_EQ(with([&](Network& n) {
              n.layers[0].given = given;
              n.layers.push_back(fold(n, "Add", "a", 0, {1, 1}));
            }),
            "net: node 'a' (Add): adds a second bias to a layer with a quantized bias");
  EXPECT_EQ(with([&](Network& n) {
              n.layers[0].given = given;
              n.layers.push_back(fold(n, "Div", "d", 0, {2, 2}));
            }),
            "net: node 'd' (Div): scales a layer with quantized weights");
  EXPECT_EQ(with([&](Network& n) {
              n.layers[0].given = given;
              n.layers.push_back(batch_norm(n, "bn", 0, {{{1, 1}, {0, 0}, {0, 0}, {1, 1}}}, 0));
            }),
            "net: node 'bn' (BatchNormalization): BatchNormalization after a layer with "
            "quantized weights is not supported");
}

// A fold of a layer without weights (a Copy the importer made, an Add).
TEST(FoldAffine, RefusesALayerWithoutWeights) {
  Network net = input_net();
  Layer copy;
  copy.kind = LayerKind::Copy;
  copy.name = "x";
  copy.op = "Identity";
  copy.input_channels = {4};
  copy.in = net.input;
  copy.infer_shapes();
  net.layers.push_back(copy);
  net.layers.push_back(fold(net, "Mul", "m", 0, {2, 2, 2, 2}));
  EXPECT_EQ(refusal(net),
            "net: node 'm' (Mul): Mul by a constant after Identity 'x' is not "
            "supported");
}

// The fusion pass does not take a fold step: the fold pass runs first.
TEST(FoldAffine, FusionRefusesAFoldStepLeft) {
  Network net = input_net();
  net.layers.push_back(conv1x1("conv"));
  net.layers.push_back(fold(net, "Add", "a", 0, {1, 1}));
  EXPECT_EQ(error_of([&] { passes::fuse_steps(net); }),
            "net: internal: layer 'a' (Add): a fold step left for the fusion pass "
            "(passes/fold_affine.h first)");
}

// ---- through the importer ----------------------------------------------------------------

// Conv, Add, Mul, BatchNormalization, Relu: one layer, the folds in node order, and the
// float network's outputs those of the unfused graph (the reference evaluates the fused layer).
TEST(FoldAffineImport, FoldsInNodeOrderThenTheActivationJoins) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "conv", "x", "c");
  g.init_float("b", {1, 2, 1, 1}, {0.5f, -0.25f});
  g.node("Add", {"c", "b"}, {"a"}, {}, "add");
  g.init_float("k", {}, {2.0f});
  g.node("Mul", {"k", "a"}, {"m"}, {}, "mul");
  g.init_float("s", {2}, {1.0f, 0.5f});
  g.init_float("sh", {2}, {0.0f, 1.0f});
  g.init_float("mu", {2}, {0.25f, 0.0f});
  g.init_float("var", {2}, {1.0f, 4.0f});
  g.node("BatchNormalization", {"m", "s", "sh", "mu", "var"}, {"n"}, {}, "bn");
  g.node("Relu", {"n"}, {"y"}, {}, "relu");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 1u);
  const Layer& l = net.layers[0];
  EXPECT_EQ(l.act, Activation::Relu);
  EXPECT_EQ(l.fused,
            (std::vector<std::string>{"Add add", "Mul mul", "BatchNormalization bn", "Relu relu"}));
  const double s1 = 0.5 / std::sqrt(4.0 + double(1e-5f));
  EXPECT_EQ(l.bias[1], float((float(float(0.0f - 0.25f) * 2.0) - 0.0) * s1 + 1.0));
  EXPECT_EQ(l.weight[2], float(float(-0.5f * 2.0) * s1));
}

// A bias after a Relu that another reader keeps a Copy: refused by the fold pass after
// conversion, naming the Relu.
TEST(FoldAffineImport, ABiasAfterAReluCopyIsRefused) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "conv", "x", "c");
  g.node("Relu", {"c"}, {"r"}, {}, "relu");
  g.init_float("b", {}, {1.0f});
  g.node("Add", {"r", "b"}, {"a"}, {}, "bias");
  g.node("Add", {"c", "a"}, {"y"}, {}, "sum");
  g.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); }),
            "t.onnx: node 'bias' (Add): Add by a constant after Relu 'relu' is not supported");
}

// Errors in node order: a refused fold comes before a later node's conversion error (the fold
// pass runs on the nodes before it first).
TEST(FoldAffineImport, ErrorsInNodeOrder) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "conv", "x", "c");
  g.node("Relu", {"c"}, {"r"}, {}, "relu");
  for (const char* p : {"scale", "bias", "mean", "var"}) g.init_float(p, {2}, {1.0f, 1.0f});
  g.node("BatchNormalization", {"r", "scale", "bias", "mean", "var"}, {"n"}, {}, "bn");
  g.init_int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  g.node("Pad", {"n", "pads"}, {"y"}, {OnnxAttr::String("mode", "reflect")}, "pad");
  g.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); }),
            "t.onnx: node 'bn' (BatchNormalization): BatchNormalization after an activation or "
            "pooling is not supported");
}

}  // namespace

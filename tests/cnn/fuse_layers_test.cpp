// SPDX-License-Identifier: Apache-2.0
// The layer fusion pass (driver/cnn/passes/fuse_layers.h) on hand-built networks: the steps a
// converter leaves (an activation or a max-pool in a Copy layer of its own) join the layers
// computing their inputs, or stay Copy layers when they may not; readers follow.
#include "passes/fuse_layers.h"

#include <gtest/gtest.h>

#include "cnn_test_util.h"
#include "ir_builders.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "passes/fusion.h"

namespace {

using namespace tpu::cnn;
using namespace cnn_test;

// A 3x3 Conv with padding 1 (8x8 -> 8x8) reading `inputs` (4 channels each).
Layer conv(const std::string& name, std::vector<int> inputs, int cout = 2) {
  return conv_layer(name, std::move(inputs), cout, 3);
}

// The Copy layer of a 2x2/2 max-pool reading `inputs` (their outputs concatenated), joining
// `sources`.
Layer max_pool(const Network& net, const std::string& name, std::vector<int> inputs,
               std::vector<int> sources) {
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = "MaxPool";
  c.inputs = std::move(inputs);
  for (int p : c.inputs) {
    c.input_channels.push_back(net.layers[size_t(p)].out.c);
    c.in = net.layers[size_t(p)].out;
  }
  c.in.c = 0;
  for (int ch : c.input_channels) c.in.c += ch;
  c.pool_k = c.pool_s = 2;
  c.step.kind = StepKind::MaxPool;
  c.step.sources = std::move(sources);
  c.step.pool.k = c.step.pool.s = 2;
  c.infer_shapes();
  c.step.pool.oh = c.out.h;
  c.step.pool.ow = c.out.w;
  return c;
}

TEST(FuseLayers, ReluJoinsTheConvAndItsReadersFollow) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  net.layers.push_back(activation(net, "relu", 0, 0, Activation::Relu));
  net.layers.push_back(conv("next", {kNetworkInput}));
  net.layers.back().inputs = {1};
  net.layers.back().input_channels = {2};
  net.layers.back().in.c = 2;
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  const Layer& c = f.net.layers[0];
  EXPECT_EQ(c.name, "conv");
  EXPECT_EQ(c.act, Activation::Relu);
  EXPECT_EQ(c.fused, std::vector<std::string>{"Relu relu"});
  EXPECT_EQ(c.step.kind, StepKind::None);
  EXPECT_EQ(f.net.layers[1].inputs, std::vector<int>{0});  // read the conv now
  EXPECT_EQ(f.parts_of, (std::vector<std::vector<int>>{{0}, {0}, {1}}));
  EXPECT_EQ(f.net.name, "net");
  EXPECT_EQ(passes::fuse_layers(net).layers.size(), 2u);
}

TEST(FuseLayers, AStepWhoseInputOthersReadStaysACopy) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  net.layers.push_back(activation(net, "relu", 0, -1, Activation::Relu));  // conv read twice
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  EXPECT_EQ(f.net.layers[0].act, Activation::None);
  EXPECT_TRUE(f.net.layers[0].fused.empty());
  const Layer& r = f.net.layers[1];
  EXPECT_EQ(r.kind, LayerKind::Copy);
  EXPECT_EQ(r.act, Activation::Relu);
  EXPECT_EQ(r.inputs, std::vector<int>{0});
  EXPECT_EQ(r.step.kind, StepKind::None);  // no pending step leaves the pass
}

TEST(FuseLayers, OneLutPerLayerTheSecondStays) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  TensorQuant given;
  given.scale = 0.25f;
  net.layers[0].out_quant = given;  // a QuantizeLinear after the conv
  net.layers.push_back(activation(net, "sig", 0, 0, Activation::Lut, LutFunc::Sigmoid));
  TensorQuant after;
  after.scale = 1.0f / 256;
  after.is_unsigned = true;
  net.layers[1].out_quant = after;  // and one after the sigmoid
  net.layers.push_back(activation(net, "tanh", 1, 1, Activation::Lut, LutFunc::Tanh));
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  const Layer& c = f.net.layers[0];
  EXPECT_EQ(c.act, Activation::Lut);
  EXPECT_EQ(c.lut, LutFunc::Sigmoid);
  ASSERT_TRUE(c.pre_quant && c.out_quant);
  EXPECT_EQ(*c.pre_quant, given);  // the LUT reads the conv's quantization
  EXPECT_EQ(*c.out_quant, after);  // and the conv is requantized after it
  const Layer& t = f.net.layers[1];
  EXPECT_EQ(t.name, "tanh");
  EXPECT_EQ(t.lut, LutFunc::Tanh);
  EXPECT_EQ(t.inputs, std::vector<int>{0});
  EXPECT_EQ(f.parts_of[2], std::vector<int>{1});
}

TEST(FuseLayers, ClipAfterReluIsOneClamp) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  net.layers.push_back(activation(net, "relu", 0, 0, Activation::Relu));
  net.layers.push_back(activation(net, "clip", 1, 1, Activation::Clip, LutFunc::Sigmoid, -1, 6));
  const Network fused = passes::fuse_layers(net);
  ASSERT_EQ(fused.layers.size(), 1u);
  EXPECT_EQ(fused.layers[0].act, Activation::Clip);
  EXPECT_EQ(fused.layers[0].clip_lo, 0.0f);
  EXPECT_EQ(fused.layers[0].clip_hi, 6.0f);
  EXPECT_EQ(fused.layers[0].fused, (std::vector<std::string>{"Relu relu", "Clip clip"}));
}

TEST(FuseLayers, MaxPoolJoinsThenAnActivationAfterIt) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  net.layers.push_back(max_pool(net, "pool", {0}, {0}));
  TensorQuant q;
  q.scale = 0.5f;
  net.layers[1].out_quant = q;  // a QuantizeLinear after the pool: the conv's now
  net.layers.push_back(activation(net, "relu", 1, 1, Activation::Relu));
  net.layers.back().out_quant = q;
  // A LUT cannot follow the ReLU in one activate: it stays.
  net.layers.push_back(activation(net, "hswish", 2, 2, Activation::Lut, LutFunc::HardSwish));
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  const Layer& c = f.net.layers[0];
  EXPECT_EQ(c.out, (Shape3{2, 4, 4}));
  EXPECT_EQ(c.pool_k, 2);
  EXPECT_EQ(c.act, Activation::Relu);
  EXPECT_EQ(c.fused, (std::vector<std::string>{"MaxPool pool", "Relu relu"}));
  ASSERT_TRUE(c.out_quant);
  EXPECT_EQ(*c.out_quant, q);
  EXPECT_EQ(f.net.layers[1].name, "hswish");
  EXPECT_EQ(f.net.layers[1].inputs, std::vector<int>{0});
  EXPECT_EQ(f.net.layers[1].in, (Shape3{2, 4, 4}));
}

TEST(FuseLayers, MaxPoolOfAConcatenationJoinsEachPart) {
  Network net = input_net();
  net.layers.push_back(conv("a", {kNetworkInput}, 2));
  net.layers.push_back(conv("b", {kNetworkInput}, 3));
  net.layers.push_back(max_pool(net, "pool", {0, 1}, {0, 1}));
  net.layers.push_back(conv("next", {2}));
  net.layers.back().input_channels = {5};
  net.layers.back().in = {5, 4, 4};
  net.layers.back().weight.assign(2 * 5 * 9, 1.0f);
  net.layers.back().infer_shapes();
  // An activation of the pooled concatenation has no one layer to join: it stays.
  net.layers.push_back(activation(net, "relu", 2, 2, Activation::Relu));
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 4u);
  for (int i : {0, 1}) {
    EXPECT_EQ(f.net.layers[size_t(i)].out.h, 4);
    EXPECT_EQ(f.net.layers[size_t(i)].fused, std::vector<std::string>{"MaxPool pool"});
  }
  EXPECT_EQ(f.parts_of[2], (std::vector<int>{0, 1}));
  const Layer& next = f.net.layers[2];
  EXPECT_EQ(next.inputs, (std::vector<int>{0, 1}));  // the parts, where they are
  EXPECT_EQ(next.input_channels, (std::vector<int>{2, 3}));
  const Layer& relu = f.net.layers[3];
  EXPECT_EQ(relu.kind, LayerKind::Copy);
  EXPECT_EQ(relu.inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(relu.input_channels, (std::vector<int>{2, 3}));
}

TEST(FuseLayers, MaxPoolJoinsAllPartsOrNone) {
  Network net = input_net();
  net.layers.push_back(conv("a", {kNetworkInput}, 2));
  net.layers.push_back(conv("b", {kNetworkInput}, 2));
  net.layers.push_back(max_pool(net, "pool", {0, 1}, {0, -1}));  // b is read by others
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 3u);
  EXPECT_EQ(f.net.layers[0].pool_k, 1);
  EXPECT_EQ(f.net.layers[2].pool_k, 2);
  EXPECT_EQ(f.net.layers[2].inputs, (std::vector<int>{0, 1}));
}

TEST(FuseLayers, RefusesPaddingActivateCannotHoldASecondPoolAndDense) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  net.layers.push_back(max_pool(net, "wide", {0}, {0}));
  net.layers.back().step.pool.padded = true;  // padding beyond activate's fields
  net.layers.push_back(conv("conv2", {kNetworkInput}));
  net.layers.push_back(max_pool(net, "pool2", {2}, {2}));
  net.layers.push_back(max_pool(net, "pool3", {3}, {3}));  // conv2 pools already: stays
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 4u);
  EXPECT_EQ(f.net.layers[0].pool_k, 1);
  EXPECT_EQ(f.net.layers[1].name, "wide");
  EXPECT_EQ(f.net.layers[1].pool_k, 2);
  EXPECT_EQ(f.net.layers[2].fused, std::vector<std::string>{"MaxPool pool2"});
  EXPECT_EQ(f.net.layers[2].out, (Shape3{2, 4, 4}));
  EXPECT_EQ(f.net.layers[3].name, "pool3");
  EXPECT_EQ(f.net.layers[3].inputs, std::vector<int>{2});
  EXPECT_EQ(f.net.layers[3].out, (Shape3{2, 2, 2}));

  Network d = input_net();
  Layer fc;
  fc.kind = LayerKind::Dense;
  fc.name = "fc";
  fc.op = "Gemm";
  fc.input_channels = {4};
  fc.in = {4, 8, 8};
  fc.conv_out.c = 2;
  fc.weight.assign(2 * 256, 1.0f);
  fc.bias.assign(2, 0.0f);
  fc.infer_shapes();
  d.layers.push_back(fc);
  d.layers.push_back(activation(d, "relu", 0, 0, Activation::Relu));
  EXPECT_EQ(passes::fuse_layers(d).layers.size(), 1u);  // an activation joins a Dense
  d.layers[1] = max_pool_of_1x1("pool", 0, 1);
  EXPECT_EQ(passes::fuse_layers(d).layers.size(), 2u);  // a max-pool does not
}

TEST(FuseLayers, APooledLayerThatDoesNotFitNamesTheMaxPool) {
  Network net = input_net();
  net.input = {4, 1, 1};
  Layer c = conv("conv", {kNetworkInput});
  c.in = {4, 1, 1};
  c.infer_shapes();  // 1x1 output
  net.layers.push_back(c);
  // (1 - 2) / 2 + 1 == 1 in C++: the size check passes, the window does not fit.
  net.layers.push_back(max_pool_of_1x1("pool", 0, 2));
  const std::string e = error_of([&] { passes::fuse_layers(net); });
  EXPECT_EQ(
      e.rfind("net: node 'pool' (MaxPool): layer 'conv' (Conv): max-pool window 2 is larger", 0),
      0u)
      << e;
}

// ---- view_as_fused, the fold pass's query --------------------------------------------------

// Without a pending step the view is the network as it is.
TEST(ViewAsFused, PartsWithoutAStepAreThemselves) {
  Network net = input_net();
  net.layers.push_back(conv("conv", {kNetworkInput}));
  net.layers.push_back(activation(net, "relu", 0, 0, Activation::Relu));
  const passes::FusedView v = passes::view_as_fused(net, {0, kNetworkInput});
  EXPECT_FALSE(v.fused);
  EXPECT_EQ(v.parts, (std::vector<int>{0, kNetworkInput}));
  EXPECT_EQ(&v.net(net), &net);
  ASSERT_EQ(passes::view_as_fused(net, {0}).single(net), &net.layers[0]);
  EXPECT_EQ(passes::view_as_fused(net, {kNetworkInput}).single(net), nullptr);
}

// A step: the Relu as fused is the conv it joins (a bias after it is refused by its name); a
// Relu that may not join stays the Copy it is.
TEST(ViewAsFused, AStepViewsTheLayerItJoins) {
  for (const int source : {0, -1}) {
    Network net = input_net();
    net.layers.push_back(conv("conv", {kNetworkInput}));
    net.layers.push_back(activation(net, "relu", 0, source, Activation::Relu));
    const passes::FusedView v = passes::view_as_fused(net, {1});
    ASSERT_TRUE(v.fused);
    const Layer* l = v.single(net);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->name, source == 0 ? "conv" : "relu");
    EXPECT_EQ(l->act, Activation::Relu);
    EXPECT_EQ(l->has_weights(), source == 0);
    EXPECT_EQ(net.layers.size(), 2u);  // the network asked about is left as it is
    EXPECT_EQ(net.layers[1].step.kind, StepKind::Activation);
  }
}

// A max-pool of a concatenation that joins each part is those parts, with the quantization the
// pool gives them; one that cannot join stays one layer.
TEST(ViewAsFused, APooledConcatenationIsItsParts) {
  for (const bool joins : {true, false}) {
    Network net = input_net();
    net.layers.push_back(conv("a", {kNetworkInput}, 2));
    net.layers.push_back(conv("b", {kNetworkInput}, 2));
    net.layers.push_back(max_pool(net, "pool", {0, 1}, {0, joins ? 1 : -1}));
    net.layers[2].out_quant = uint8_quant(0.5f);
    const passes::FusedView v = passes::view_as_fused(net, {2, kNetworkInput});
    ASSERT_TRUE(v.fused);
    if (!joins) {
      EXPECT_EQ(v.parts, (std::vector<int>{2, kNetworkInput}));
      continue;
    }
    EXPECT_EQ(v.parts, (std::vector<int>{0, 1, kNetworkInput}));
    EXPECT_EQ(v.single(net), nullptr);
    for (int p : {0, 1}) EXPECT_EQ(v.net(net).layers[size_t(p)].out_quant, uint8_quant(0.5f));
    EXPECT_FALSE(net.layers[0].out_quant);  // only in the view
    EXPECT_EQ(passes::parts_in(*v.fused, {kNetworkInput, 2, 0}),
              (std::vector<int>{kNetworkInput, 0, 1, 0}));
  }
}

// ---- through the importer: converted 1:1, then fused ------------------------------------------

TEST(FuseLayersImport, ConvReluMaxPoolIsOneLayer) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "conv", "x", "c");
  g.node("Relu", {"c"}, {"r"}, {}, "relu");
  g.node("MaxPool", {"r"}, {"y"},
         {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].act, Activation::Relu);
  EXPECT_EQ(net.layers[0].out, (Shape3{2, 2, 2}));
  EXPECT_EQ(net.layers[0].fused, (std::vector<std::string>{"Relu relu", "MaxPool pool"}));
  EXPECT_EQ(net.layers[0].step.kind, StepKind::None);
}

TEST(FuseLayersImport, AnOutputOthersReadIsNotFusedInto) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "conv", "x", "c");
  g.node("Relu", {"c"}, {"r"}, {}, "relu");
  g.node("Add", {"c", "r"}, {"y"}, {}, "add");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 3u);
  EXPECT_EQ(net.layers[0].act, Activation::None);
  EXPECT_EQ(net.layers[1].kind, LayerKind::Copy);
  EXPECT_EQ(net.layers[1].act, Activation::Relu);
  EXPECT_EQ(net.layers[2].inputs, (std::vector<int>{0, 1}));
}

// Folds after an activation are refused, with the message of the layer the activation joined
// (or of the Copy it stays).
TEST(FuseLayersImport, FoldsAfterAnActivationAreRefused) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "conv", "x", "c");
  g.node("Relu", {"c"}, {"r"}, {}, "relu");
  for (const char* p : {"scale", "bias", "mean", "var"}) g.init_float(p, {2}, {1.0f, 1.0f});
  g.node("BatchNormalization", {"r", "scale", "bias", "mean", "var"}, {"y"}, {}, "bn");
  g.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); }),
            "t.onnx: node 'bn' (BatchNormalization): BatchNormalization after an activation or "
            "pooling is not supported");

  OnnxGraph h("t");
  h.input("x", {1, 2, 4, 4});
  conv_node(h, "conv", "x", "c");
  h.node("Relu", {"c"}, {"r"}, {}, "relu");
  h.init_float("k", {}, {2.0f});
  h.node("Mul", {"r", "k"}, {"m"}, {}, "mul");
  h.node("Add", {"c", "m"}, {"y"}, {}, "add");  // conv read twice: the Relu stays a Copy
  h.output("y");
  EXPECT_EQ(error_of([&] { import_onnx_bytes(h.serialize(), "t.onnx"); }),
            "t.onnx: node 'mul' (Mul): Mul by a constant after Relu 'relu' is not supported");
}

// QDQ around a max-pool that joins the conv: a QuantizeLinear with new parameters after it is
// a requantizing Copy (the conv's output keeps the first); around a standalone max-pool (an
// exact copy) it requantizes that copy in place.
TEST(FuseLayersImport, RequantizationAfterAPoolAsFused) {
  auto graph = [](bool conv_first) {
    auto g = std::make_unique<OnnxGraph>("t");
    g->input("x", {1, 2, 4, 4});
    quant(*g, "q1", 0.5f);
    quant(*g, "q2", 0.25f);
    g->node(conv_first ? "Relu" : "Identity", {"x"}, {"a"}, {}, "first");
    if (conv_first) conv_node(*g, "conv", "a", "c");
    pair(*g, "q1", conv_first ? "c" : "x", "cd");
    g->node("MaxPool", {"cd"}, {"p"},
            {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
    pair(*g, "q2", "p", "y");
    g->output("y");
    return import_onnx_bytes(g->serialize(), "t.onnx");
  };
  const Network fused = graph(true);  // Relu (a Copy of the input), Conv + pool, requantize
  ASSERT_EQ(fused.layers.size(), 3u);
  EXPECT_EQ(fused.layers[1].name, "conv");
  EXPECT_EQ(fused.layers[1].pool_k, 2);
  ASSERT_TRUE(fused.layers[1].out_quant);
  EXPECT_EQ(fused.layers[1].out_quant->scale, 0.5f);
  EXPECT_EQ(fused.layers[2].kind, LayerKind::Copy);
  EXPECT_EQ(fused.layers[2].op, "QuantizeLinear");
  EXPECT_EQ(fused.layers[2].inputs, std::vector<int>{1});
  EXPECT_EQ(fused.layers[2].out_quant->scale, 0.25f);

  const Network copy = graph(false);  // the input quantized, pooled by a Copy, requantized
  ASSERT_EQ(copy.layers.size(), 1u);
  EXPECT_EQ(copy.layers[0].op, "MaxPool");
  ASSERT_TRUE(copy.input_quant && copy.layers[0].out_quant);
  EXPECT_EQ(copy.input_quant->scale, 0.5f);
  EXPECT_EQ(copy.layers[0].out_quant->scale, 0.25f);
}

// A max-pool of a concatenation only it reads joins both convolutions; an Add reading it reads
// a Copy of the pooled parts.
TEST(FuseLayersImport, PooledConcatenationJoinsItsParts) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  conv_node(g, "a", "x", "ca");
  conv_node(g, "b", "x", "cb");
  g.node("Concat", {"ca", "cb"}, {"cat"}, {OnnxAttr::Int("axis", 1)}, "concat");
  g.node("MaxPool", {"cat"}, {"p"},
         {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
  g.node("Add", {"p", "p"}, {"y"}, {}, "add");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "t.onnx");
  ASSERT_EQ(net.layers.size(), 5u);
  for (int i : {0, 1})
    EXPECT_EQ(net.layers[size_t(i)].fused, std::vector<std::string>{"MaxPool pool"});
  for (int i : {2, 3}) {
    EXPECT_EQ(net.layers[size_t(i)].op, "Concat");
    EXPECT_EQ(net.layers[size_t(i)].inputs, (std::vector<int>{0, 1}));
    EXPECT_EQ(net.layers[size_t(i)].out, (Shape3{4, 2, 2}));
  }
  EXPECT_EQ(net.layers[4].inputs, (std::vector<int>{2, 3}));
}

}  // namespace

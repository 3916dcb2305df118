// SPDX-License-Identifier: Apache-2.0
// QDQ pairing (driver/cnn/passes/pair_qdq.h), the step of the fusion walk that resolves a
// QuantizeLinear of a tensor quantized otherwise already: on hand-built networks (a Copy layer
// holding a Quantize step, as the importer leaves it), then through the importer (pairs around
// convolutions, a DequantizeLinear read twice, unpaired nodes and the errors naming them).
#include "passes/pair_qdq.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "cnn_test_util.h"
#include "ir_builders.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "passes/fuse_layers.h"
#include "passes/fusion.h"

namespace {

using namespace tpu::cnn;
using namespace cnn_test;

std::optional<TensorQuant> quant_of(float scale) { return uint8_quant(scale); }

// A 1x1 Conv (4 -> 4 channels) reading layer `in`.
Layer conv(const std::string& name, int in) { return conv_layer(name, {in}, 4, 1); }

// The Copy layer a converter makes of a Relu reading layer `in` of `net` (joining `source`), its
// output quantized `q` (by a pair after it) or not.
Layer relu(const Network& net, const std::string& name, int in, int source,
           std::optional<TensorQuant> q) {
  Layer c = activation(net, name, in, source, Activation::Relu);
  c.out_quant = q;
  return c;
}

// A plain Copy of layer `in` quantized `q` (a standalone max-pool's exact copy, say).
Layer copy_of(const std::string& name, int in, const TensorQuant& q) {
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = "MaxPool";
  c.inputs = {in};
  c.input_channels = {4};
  c.in = {4, 8, 8};
  c.out_quant = q;
  c.infer_shapes();
  return c;
}

// The Copy layer holding the Quantize step of a QuantizeLinear of `inputs` (tensor `name`).
Layer quantize(const std::string& name, std::vector<int> inputs, const TensorQuant& q,
               bool sole_reader, int source) {
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = "QuantizeLinear";
  c.inputs = std::move(inputs);
  c.input_channels.assign(c.inputs.size(), 4);
  c.in = {4 * int(c.inputs.size()), 8, 8};
  c.out_quant = q;
  c.step.kind = StepKind::Quantize;
  c.step.quant = q;
  c.step.sole_reader = sole_reader;
  c.step.sources = {source};
  c.infer_shapes();
  return c;
}

// ---- the pairing step on hand-built networks ---------------------------------------------

// A pair on a tensor nothing quantized yet: the conv takes the quantization, the step leaves and
// the quantized op after it reads the conv.
TEST(PairQdq, APairFoldsIntoTheLayerBefore) {
  Network net = input_net();
  net.layers.push_back(conv("conv", kNetworkInput));
  net.layers.push_back(quantize("c", {0}, *quant_of(0.5f), true, 0));
  net.layers.push_back(conv("next", 1));
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  EXPECT_EQ(f.net.layers[0].out_quant, quant_of(0.5f));
  EXPECT_EQ(f.parts_of[1], std::vector<int>{0});
  EXPECT_EQ(f.net.layers[1].inputs, std::vector<int>{0});
  EXPECT_EQ(f.net.layers[1].step.kind, StepKind::None);
}

// Around a Conv + Relu that a first pair quantized (the Relu joins the conv first): a second pair
// of the same parameters annotates, of others needs a Copy (the fused layer is no exact copy),
// which a Relu after it then joins.
TEST(PairQdq, AroundAFusedConvReluAsFused) {
  for (const bool same : {true, false}) {
    Network net = input_net();
    net.layers.push_back(conv("conv", kNetworkInput));
    net.layers.push_back(relu(net, "relu", 0, 0, quant_of(0.5f)));
    net.layers.push_back(quantize("r", {1}, *quant_of(same ? 0.5f : 0.25f), true, 1));
    net.layers.push_back(relu(net, "relu2", 2, 2, std::nullopt));
    const passes::FusedNetwork f = passes::fuse_steps(net);
    EXPECT_EQ(f.net.layers[0].act, Activation::Relu);
    EXPECT_EQ(f.parts_of[1], std::vector<int>{0});
    if (same) {
      ASSERT_EQ(f.net.layers.size(), 1u);  // both Relus one clamp, the pair an annotation
      EXPECT_EQ(f.parts_of[2], std::vector<int>{0});
      EXPECT_EQ(f.parts_of[3], std::vector<int>{0});
      continue;
    }
    ASSERT_EQ(f.net.layers.size(), 2u);
    EXPECT_EQ(f.net.layers[0].out_quant, quant_of(0.5f));  // the conv keeps the first
    const Layer& c = f.net.layers[1];
    EXPECT_EQ(c.kind, LayerKind::Copy);
    EXPECT_EQ(c.op, "QuantizeLinear");
    EXPECT_EQ(c.inputs, std::vector<int>{0});
    EXPECT_EQ(c.act, Activation::Relu);  // relu2 joined the requantizing Copy
    EXPECT_EQ(c.step.kind, StepKind::None);
    EXPECT_EQ(f.parts_of[2], std::vector<int>{1});
    EXPECT_EQ(f.parts_of[3], std::vector<int>{1});
  }
}

// An exact copy only this tensor's readers read is requantized in place; read by more (a
// DequantizeLinear feeding two consumers of the tensor before it), a Copy requantizes it.
TEST(PairQdq, InPlaceOnlyForAnExactCopyNothingElseReads) {
  for (const bool sole : {true, false}) {
    Network net = input_net();
    net.layers.push_back(conv("conv", kNetworkInput));
    net.layers[0].out_quant = quant_of(0.5f);
    net.layers.push_back(copy_of("pool", 0, *quant_of(0.5f)));
    net.layers.push_back(quantize("p", {1}, *quant_of(0.25f), sole, sole ? 1 : -1));
    net.layers.push_back(conv("a", 2));
    net.layers.push_back(conv("b", sole ? 2 : 1));
    const passes::FusedNetwork f = passes::fuse_steps(net);
    EXPECT_EQ(f.net.layers[0].out_quant, quant_of(0.5f));
    if (sole) {
      ASSERT_EQ(f.net.layers.size(), 4u);
      EXPECT_EQ(f.net.layers[1].out_quant, quant_of(0.25f));
      EXPECT_EQ(f.net.layers[2].inputs, std::vector<int>{1});
      EXPECT_EQ(f.net.layers[3].inputs, std::vector<int>{1});
      continue;
    }
    ASSERT_EQ(f.net.layers.size(), 5u);
    EXPECT_EQ(f.net.layers[1].out_quant, quant_of(0.5f));  // the other reader sees it unchanged
    EXPECT_EQ(f.net.layers[2].op, "QuantizeLinear");
    EXPECT_EQ(f.net.layers[2].out_quant, quant_of(0.25f));
    EXPECT_EQ(f.net.layers[3].inputs, std::vector<int>{2});
    EXPECT_EQ(f.net.layers[4].inputs, std::vector<int>{1});
  }
}

// A pair that annotates a tensor others read passes no fusion on: a Relu after it stays a Copy.
TEST(PairQdq, AnAnnotationOfASharedTensorIsNotJoinedThrough) {
  Network net = input_net();
  net.layers.push_back(conv("conv", kNetworkInput));
  // (a QuantizeLinear of the conv's output, which another op reads too)
  net.layers.push_back(quantize("c", {0}, *quant_of(0.5f), false, -1));
  net.layers.push_back(relu(net, "relu", 1, 1, quant_of(0.5f)));
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  EXPECT_EQ(f.net.layers[0].out_quant, quant_of(0.5f));
  EXPECT_TRUE(f.closed[1]);
  EXPECT_EQ(f.net.layers[0].act, Activation::None);
  EXPECT_EQ(f.net.layers[1].op, "Relu");
  EXPECT_EQ(f.net.layers[1].inputs, std::vector<int>{0});
}

// The network input quantized otherwise is refused, naming the layer.
TEST(PairQdq, RequantizingTheInputNamesTheLayer) {
  Network net = input_net();
  net.input_quant = quant_of(0.5f);
  net.layers.push_back(quantize("x", {kNetworkInput}, *quant_of(0.25f), true, -1));
  net.layers.push_back(conv("conv", 0));
  const std::string e = error_of([&] { passes::fuse_steps(net); });
  EXPECT_EQ(e.rfind("net: layer 'x' (QuantizeLinear): requantizes the input with different "
                    "parameters",
                    0),
            0u)
      << e;
  Network same = input_net();
  same.input_quant = quant_of(0.5f);
  same.layers.push_back(quantize("x", {kNetworkInput}, *quant_of(0.5f), true, -1));
  same.layers.push_back(conv("conv", 0));
  const passes::FusedNetwork f = passes::fuse_steps(same);
  ASSERT_EQ(f.net.layers.size(), 1u);
  EXPECT_EQ(f.net.layers[0].inputs, std::vector<int>{kNetworkInput});
}

// ---- through the importer ------------------------------------------------------------------

// Convs `a` and `b` reading `in`, their sum the graph output y: the network imported.
Network two_convs_added(OnnxGraph& g, const std::string& in) {
  conv_node(g, "a", in, "ya");
  conv_node(g, "b", in, "yb");
  g.node("Add", {"ya", "yb"}, {"y"}, {}, "add");
  g.output("y");
  return import_onnx_bytes(g.serialize(), "t.onnx");
}

// Conv, Relu, a pair, a second pair of other parameters, a DequantizeLinear read by two Convs:
// the Relu joins the conv, the first pair annotates it, the second is a requantizing Copy both
// Convs read.
TEST(PairQdqImport, PairsAroundAFusedConvReluAndADequantizeReadTwice) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  quant(g, "q1", 0.5f);
  quant(g, "q2", 0.25f);
  conv_node(g, "conv", "x", "c");
  g.node("Relu", {"c"}, {"r"}, {}, "relu");
  pair(g, "q1", "r", "d1");
  pair(g, "q2", "d1", "d2");
  const Network net = two_convs_added(g, "d2");
  ASSERT_EQ(net.layers.size(), 5u);
  EXPECT_EQ(net.layers[0].name, "conv");
  EXPECT_EQ(net.layers[0].act, Activation::Relu);
  EXPECT_EQ(net.layers[0].out_quant, quant_of(0.5f));
  EXPECT_EQ(net.layers[1].op, "QuantizeLinear");
  EXPECT_EQ(net.layers[1].out_quant, quant_of(0.25f));
  EXPECT_EQ(net.layers[2].inputs, std::vector<int>{1});
  EXPECT_EQ(net.layers[3].inputs, std::vector<int>{1});
}

// One pair whose DequantizeLinear two Convs read: the conv before takes it, no Copy.
TEST(PairQdqImport, ADequantizeReadTwiceAnnotatesOnce) {
  OnnxGraph g("t");
  g.input("x", {1, 2, 4, 4});
  quant(g, "q1", 0.5f);
  conv_node(g, "conv", "x", "c");
  pair(g, "q1", "c", "d");
  const Network net = two_convs_added(g, "d");
  ASSERT_EQ(net.layers.size(), 4u);
  EXPECT_EQ(net.layers[0].out_quant, quant_of(0.5f));
  EXPECT_EQ(net.layers[1].inputs, std::vector<int>{0});
  EXPECT_EQ(net.layers[2].inputs, std::vector<int>{0});
}

// Unpaired and mismatched nodes, and the input requantized: errors name the node.
TEST(PairQdqImport, ErrorsNameTheNode) {
  auto error = [](const std::function<void(OnnxGraph&)>& body) {
    OnnxGraph g("t");
    g.input("x", {1, 2, 4, 4});
    quant(g, "q1", 0.5f);
    quant(g, "q2", 0.25f);
    body(g);
    g.output("y");
    return error_of([&] { import_onnx_bytes(g.serialize(), "t.onnx"); });
  };
  std::string e = error([](OnnxGraph& g) {  // a DequantizeLinear without QuantizeLinear
    conv_node(g, "conv", "x", "c");
    g.node("DequantizeLinear", {"c", "q1_s", "q1_z"}, {"y"}, {}, "dq");
  });
  EXPECT_NE(e.find("node 'dq' (DequantizeLinear): dequantizes a tensor that is not quantized"),
            std::string::npos)
      << e;
  e = error([](OnnxGraph& g) {  // a QuantizeLinear a float Conv reads
    g.node("QuantizeLinear", {"x", "q1_s", "q1_z"}, {"xq"}, {}, "q");
    conv_node(g, "conv", "xq", "y");
  });
  EXPECT_NE(e.find("node 'conv' (Conv): its input 'xq' is quantized"), std::string::npos) << e;
  e = error([](OnnxGraph& g) {  // the pair's parameters differ
    conv_node(g, "conv", "x", "c");
    g.node("QuantizeLinear", {"c", "q1_s", "q1_z"}, {"cq"}, {}, "q");
    g.node("DequantizeLinear", {"cq", "q2_s", "q2_z"}, {"y"}, {}, "dq");
  });
  EXPECT_NE(e.find("node 'dq' (DequantizeLinear): dequantizes with uint8 scale 0.25"),
            std::string::npos)
      << e;
  e = error([](OnnxGraph& g) {  // two QuantizeLinear in a row
    conv_node(g, "conv", "x", "c");
    g.node("QuantizeLinear", {"c", "q1_s", "q1_z"}, {"cq"}, {}, "q");
    g.node("QuantizeLinear", {"cq", "q2_s", "q2_z"}, {"y"}, {}, "qq");
  });
  EXPECT_NE(e.find("node 'qq' (QuantizeLinear): quantizes a tensor that is already quantized"),
            std::string::npos)
      << e;
  e = error([](OnnxGraph& g) {  // the input quantized twice, otherwise
    pair(g, "q1", "x", "d1");
    pair(g, "q2", "d1", "d2");
    conv_node(g, "conv", "d2", "y");
  });
  EXPECT_NE(e.find("node 'q2_q' (QuantizeLinear): requantizes the input with different "
                   "parameters"),
            std::string::npos)
      << e;
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The passes (driver/cnn/passes/) on hand-built inputs: constant folding on the frontend's
// graph, the IR -> IR passes and fusion rules on float networks.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "cnn_test_util.h"
#include "onnx_import.h"
#include "passes/fold_constants.h"
#include "passes/fusion.h"
#include "passes/network_passes.h"
#include "passes/requantize.h"

namespace {

using namespace tpu::cnn;
using cnn_test::error_of;

Layer layer(const std::string& name, LayerKind kind, std::vector<int> inputs) {
  Layer l;
  l.name = name;
  l.op = kind == LayerKind::Copy ? "MaxPool" : "Conv";
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.in = {4, 8, 8};
  l.input_channels.assign(l.inputs.size(), 4);
  l.in.c = 4 * int(l.inputs.size());
  return l;
}

TEST(QuantizeIntegerInput, InputTakesTheIntegersAndExactCopiesKeepThem) {
  Network net;
  net.name = "n";
  net.input = {4, 8, 8};
  net.layers.push_back(layer("pool", LayerKind::Copy, {kNetworkInput}));
  net.layers.push_back(layer("pool_of_pool", LayerKind::Copy, {0}));
  net.layers.push_back(layer("relu", LayerKind::Copy, {kNetworkInput}));
  net.layers.back().act = Activation::Relu;
  net.layers.push_back(layer("conv", LayerKind::Conv, {0}));
  TensorQuant other;
  other.scale = 0.5f;
  net.layers.push_back(layer("given", LayerKind::Copy, {kNetworkInput}));
  net.layers.back().out_quant = other;
  net.layers.push_back(layer("mixed", LayerKind::Copy, {0, 4}));  // two quantizations
  passes::quantize_integer_input(net, true);
  ASSERT_TRUE(net.input_quant);
  EXPECT_EQ(net.input_quant->scale, 1.0f);
  EXPECT_EQ(net.input_quant->zero_point, 0);
  EXPECT_TRUE(net.input_quant->is_unsigned);
  ASSERT_TRUE(net.layers[0].out_quant);
  EXPECT_EQ(*net.layers[0].out_quant, *net.input_quant);
  ASSERT_TRUE(net.layers[1].out_quant);  // in layer order: a copy of a copy too
  EXPECT_EQ(*net.layers[1].out_quant, *net.input_quant);
  EXPECT_FALSE(net.layers[2].out_quant);  // activated: requantized by calibration
  EXPECT_FALSE(net.layers[3].out_quant);  // not a copy
  EXPECT_EQ(*net.layers[4].out_quant, other);
  EXPECT_FALSE(net.layers[5].out_quant);
}

TEST(QuantizeIntegerInput, DeclaredInputQuantizationStays) {
  Network net;
  TensorQuant q;
  q.scale = 0.25f;
  q.zero_point = 3;
  net.input_quant = q;
  net.layers.push_back(layer("pool", LayerKind::Copy, {kNetworkInput}));
  passes::quantize_integer_input(net, false);
  EXPECT_EQ(*net.input_quant, q);
  EXPECT_FALSE(net.layers[0].out_quant);
}

TEST(CheckRawOutputs, OnlyTheOutputLayerMayBeRaw) {
  Network net;
  net.name = "m.onnx";
  net.layers.push_back(layer("a", LayerKind::Conv, {kNetworkInput}));
  net.layers.push_back(layer("b", LayerKind::Conv, {0}));
  net.layers[1].raw_out = true;
  EXPECT_EQ(error_of([&] { passes::check_raw_outputs(net); }), "(no error)");
  net.layers[1].pool_k = 2;
  EXPECT_EQ(error_of([&] { passes::check_raw_outputs(net); }),
            "m.onnx: layer 'b' computes an int32 result (MatMulInteger / ConvInteger): it must be "
            "the graph output itself, not read by other ops, pooled or activated");
  net.layers[1].pool_k = 1;
  net.layers[1].act = Activation::Relu;
  EXPECT_NE(error_of([&] { passes::check_raw_outputs(net); }), "(no error)");
  net.layers[1].act = Activation::None;
  net.layers[0].raw_out = true;  // read by b
  EXPECT_NE(error_of([&] { passes::check_raw_outputs(net); }).find("layer 'a'"), std::string::npos);
}

// ---- constant folding (passes/fold_constants.h) ---------------------------------------------

// A hand-built frontend graph: the nodes live in `proto`.
struct FoldCase {
  onnx::GraphProto proto;
  frontend::Graph g;
  FoldCase() { g.name = "t.onnx"; }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out, const std::string& domain = "") {
    onnx::NodeProto* n = proto.add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(proto.node_size()));
    n->set_domain(domain);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return n;
  }
  void constant(const std::string& name, std::vector<int64_t> dims, std::vector<double> v,
                int type = onnx::TensorProto::INT64) {
    frontend::Const c;
    c.dims = std::move(dims);
    c.v = std::move(v);
    c.elem_type = type;
    g.consts[name] = c;
  }
  frontend::Graph fold() {
    g.nodes.clear();
    for (const auto& n : proto.node()) g.nodes.push_back(&n);
    return passes::fold_constants(g);
  }
};

std::vector<std::string> ops_of(const frontend::Graph& g) {
  std::vector<std::string> ops;
  for (const auto* n : g.nodes) ops.push_back(n->op_type());
  return ops;
}

// A Constant node giving a Reshape its shape: the Constant leaves the graph as a constant, the
// Reshape (of a data tensor) stays for the converters.
TEST(FoldConstants, ConstantBeforeReshapeFolds) {
  FoldCase t;
  onnx::NodeProto* c = t.node("Constant", {}, {"shape"});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(1);
  a->add_ints(-1);
  t.node("Reshape", {"x", "shape"}, {"y"});
  const frontend::Graph out = t.fold();
  EXPECT_EQ(ops_of(out), (std::vector<std::string>{"Reshape"}));
  ASSERT_TRUE(out.consts.count("shape"));
  EXPECT_EQ(out.consts.at("shape").v, (std::vector<double>{1, -1}));
  EXPECT_EQ(out.consts.at("shape").dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(out.consts.at("shape").elem_type, onnx::TensorProto::INT64);
}

// Gather -> Unsqueeze -> Concat -> Cast on constants: one after the other, in node order.
TEST(FoldConstants, ChainsFoldInNodeOrder) {
  FoldCase t;
  t.constant("d", {3}, {7, 8, 9});
  t.constant("i", {}, {-1});
  t.constant("axes", {1}, {0});
  t.constant("m1", {1}, {-1});
  t.node("Gather", {"d", "i"}, {"b"});
  t.node("Unsqueeze", {"b", "axes"}, {"b1"});
  t.node("Concat", {"b1", "m1"}, {"s"});
  t.node("Cast", {"s"}, {"s2"});
  t.node("Reshape", {"x", "s2"}, {"y"});
  const frontend::Graph out = t.fold();
  EXPECT_EQ(ops_of(out), (std::vector<std::string>{"Reshape"}));
  EXPECT_EQ(out.consts.at("b").v, (std::vector<double>{9}));
  EXPECT_EQ(out.consts.at("b1").dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(out.consts.at("s2").v, (std::vector<double>{9, -1}));
  EXPECT_EQ(out.consts.at("s2").dims, (std::vector<int64_t>{2}));
}

// DequantizeLinear of int8 weights (per output channel): a quantized constant that keeps the
// integers, scales and zero points (the Conv reading it gets them as given quantization).
TEST(FoldConstants, DequantizeLinearKeepsTheIntegers) {
  FoldCase t;
  t.constant("wq", {2, 1, 1, 1}, {5, -7}, onnx::TensorProto::INT8);
  t.constant("ws", {2}, {0.5, 0.25}, onnx::TensorProto::FLOAT);
  t.constant("wz", {2}, {1, -1}, onnx::TensorProto::INT8);
  onnx::NodeProto* dq = t.node("DequantizeLinear", {"wq", "ws", "wz"}, {"w"});
  onnx::AttributeProto* a = dq->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  t.node("Conv", {"x", "w"}, {"y"});
  const frontend::Graph out = t.fold();
  EXPECT_EQ(ops_of(out), (std::vector<std::string>{"Conv"}));
  const frontend::Const& w = out.consts.at("w");
  EXPECT_TRUE(w.quantized);
  EXPECT_EQ(w.q, (std::vector<int64_t>{5, -7}));
  EXPECT_EQ(w.zp, (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(w.scale, (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(w.v, (std::vector<double>{2.0, -1.5}));  // (5-1)*0.5, (-7+1)*0.25
  EXPECT_EQ(w.elem_type, onnx::TensorProto::FLOAT);
}

// What the pass must leave to the converters: nodes reading a data tensor (alone or with a
// constant), a node reading a constant only a later node computes and that later node (its output
// is read before it is defined), ops of other domains, and a node without output. com.microsoft
// nodes on constants fold as the default domain's op.
TEST(FoldConstants, LeavesDataNodesLaterConstantsAndOtherDomains) {
  FoldCase t;
  t.constant("c", {1}, {2}, onnx::TensorProto::FLOAT);
  t.node("Relu", {"x"}, {"r"});
  t.node("Add", {"r", "c"}, {"a"});
  t.node("Identity", {"later"}, {"early"});
  t.node("Identity", {"c"}, {"later"});
  t.node("Identity", {"c"}, {"ml"}, "ai.onnx.ml");
  t.node("Identity", {"c"}, {});
  t.node("Identity", {"c"}, {"ms"}, "com.microsoft");
  t.node("Identity", {"ms"}, {"ms2"});
  const frontend::Graph out = t.fold();
  EXPECT_EQ(ops_of(out), (std::vector<std::string>{"Relu", "Add", "Identity", "Identity",
                                                   "Identity", "Identity"}));
  EXPECT_EQ(out.nodes[2]->output(0), "early");
  EXPECT_EQ(out.nodes[3]->output(0), "later");
  EXPECT_EQ(out.nodes[4]->domain(), "ai.onnx.ml");
  EXPECT_EQ(out.nodes[5]->output_size(), 0);
  EXPECT_FALSE(out.consts.count("later"));
  EXPECT_TRUE(out.consts.count("ms"));
  EXPECT_TRUE(out.consts.count("ms2"));
  EXPECT_FALSE(out.consts.count("r"));
  EXPECT_FALSE(out.consts.count("a"));
  EXPECT_EQ(out.consts.size(), 3u);
}

// A node the folders refuse stays in the graph, with what reads it (the importer reports it in
// node order); fold_node names it.
TEST(FoldConstants, RefusedNodesStayAndFoldNodeNamesThem) {
  FoldCase t;
  t.constant("c", {1}, {1}, onnx::TensorProto::FLOAT);
  t.node("Relu", {"c"}, {"r"});
  t.node("Identity", {"r"}, {"r2"});
  t.node("Identity", {"c"}, {"c2"});
  const frontend::Graph out = t.fold();
  EXPECT_EQ(ops_of(out), (std::vector<std::string>{"Relu", "Identity"}));
  EXPECT_TRUE(out.consts.count("c2"));
  EXPECT_EQ(error_of([&] { passes::fold_node(out, *out.nodes[0]); }),
            "t.onnx: node 'Relu_1' (Relu): is not supported (on constants). Supported ops: " +
                supported_ops());
  FoldCase u;
  u.constant("d", {3}, {1, 2, 3});
  u.constant("i", {1}, {5});
  u.node("Gather", {"d", "i"}, {"s"});
  const frontend::Graph gathered = u.fold();
  ASSERT_EQ(ops_of(gathered), (std::vector<std::string>{"Gather"}));
  EXPECT_EQ(error_of([&] { passes::fold_node(gathered, *gathered.nodes[0]); }),
            "t.onnx: node 'Gather_1' (Gather): index out of range");
  FoldCase v;
  v.node("Constant", {}, {"k"});  // no value attribute
  const frontend::Graph constant = v.fold();
  ASSERT_EQ(ops_of(constant), (std::vector<std::string>{"Constant"}));
  EXPECT_EQ(error_of([&] { passes::fold_node(constant, *constant.nodes[0]); }),
            "t.onnx: node 'Constant_1' (Constant): only tensor, float(s) and int(s) constants are "
            "supported");
}

// ---- fusion rules (passes/fusion.h) ---------------------------------------------------------

Layer conv_layer() {
  Layer l = layer("conv", LayerKind::Conv, {kNetworkInput});
  l.in = {1, 8, 8};
  l.input_channels = {1};
  l.kh = l.kw = 3;
  l.pad_t = l.pad_l = l.pad_b = l.pad_r = 1;
  l.out.c = 2;
  l.conv_out.c = 2;
  l.weight.assign(18, 1.0f);
  l.bias = {0.5f, -1.0f};
  l.infer_shapes();
  return l;
}

TEST(Fusion, ReluAndClipCombineIntoOneClamp) {
  Layer l = conv_layer();
  passes::fuse_activation(l, Activation::Relu, LutFunc::Sigmoid, 0, 0);
  EXPECT_EQ(l.act, Activation::Relu);
  passes::fuse_activation(l, Activation::Clip, LutFunc::Sigmoid, -1.0f, 6.0f);
  EXPECT_EQ(l.act, Activation::Clip);
  EXPECT_EQ(l.clip_lo, 0.0f);
  EXPECT_EQ(l.clip_hi, 6.0f);
  passes::fuse_activation(l, Activation::Clip, LutFunc::Sigmoid, 1.0f, 9.0f);  // intersection
  EXPECT_EQ(l.clip_lo, 1.0f);
  EXPECT_EQ(l.clip_hi, 6.0f);
  Layer m = conv_layer();
  m.out_quant = TensorQuant{};
  passes::fuse_activation(m, Activation::Clip, LutFunc::Sigmoid, 0.0f, 3.4e38f);
  EXPECT_EQ(m.act, Activation::Relu);  // Clip(0, +inf)
  EXPECT_FALSE(m.out_quant);           // requantized after the activation
}

TEST(Fusion, OneLutAtMostAndOnlyMonotonicAfterPooling) {
  Layer l = conv_layer();
  TensorQuant given;
  given.scale = 0.125f;
  l.out_quant = given;
  EXPECT_TRUE(passes::can_fuse_activation(l, Activation::Lut, LutFunc::Tanh));
  passes::fuse_activation(l, Activation::Lut, LutFunc::Tanh, 0.0f, 0.0f);
  EXPECT_EQ(l.act, Activation::Lut);
  EXPECT_EQ(l.lut, LutFunc::Tanh);
  ASSERT_TRUE(l.pre_quant);
  EXPECT_EQ(*l.pre_quant, given);  // the LUT's input quantization
  EXPECT_FALSE(l.out_quant);
  EXPECT_FALSE(passes::can_fuse_activation(l, Activation::Lut, LutFunc::Sigmoid));
  EXPECT_FALSE(passes::can_fuse_activation(l, Activation::Relu, LutFunc::Sigmoid));
  Layer pooled = conv_layer();
  pooled.pool_k = pooled.pool_s = 2;
  EXPECT_TRUE(passes::can_fuse_activation(pooled, Activation::Lut, LutFunc::Sigmoid));
  EXPECT_FALSE(passes::can_fuse_activation(pooled, Activation::Lut, LutFunc::HardSwish));
  EXPECT_TRUE(passes::can_fuse_activation(pooled, Activation::Relu, LutFunc::HardSwish));
}

TEST(Fusion, MaxPoolOfTheRightSize) {
  Layer l = conv_layer();  // 8x8 out
  MaxPoolWindow w;
  w.k = w.s = 2;
  w.oh = w.ow = 4;
  EXPECT_TRUE(passes::can_fuse_max_pool(l, w));
  w.oh = 3;
  EXPECT_FALSE(passes::can_fuse_max_pool(l, w));
  w.oh = 4;
  w.padded = true;  // padding activate's fields cannot hold
  EXPECT_FALSE(passes::can_fuse_max_pool(l, w));
  w.padded = false;
  passes::fuse_max_pool(l, w);
  EXPECT_EQ(l.out, (Shape3{2, 4, 4}));
  EXPECT_FALSE(passes::can_fuse_max_pool(l, w));  // pooled already
  Layer d = layer("fc", LayerKind::Dense, {kNetworkInput});
  d.conv_out = {2, 8, 8};
  EXPECT_FALSE(passes::can_fuse_max_pool(d, w));
}

TEST(Fusion, BatchNormAndScalesFoldIntoWeightsAndBias) {
  Layer l = conv_layer();
  passes::fold_batch_norm(l, {2.0, 1.0}, {0.25, 0.0}, {0.5, -1.0}, {3.0, 0.0}, 1.0);
  // channel 0: s = 2 / sqrt(4) = 1: w 1, b (0.5 - 0.5) * 1 + 0.25; channel 1: s = 1 / 1.
  EXPECT_EQ(l.weight[0], 1.0f);
  EXPECT_EQ(l.bias[0], 0.25f);
  EXPECT_EQ(l.bias[1], 0.0f);
  passes::scale_output_channel(l, 1, -0.5);
  EXPECT_EQ(l.weight[9], -0.5f);
  EXPECT_EQ(l.weight[8], 1.0f);  // channel 0 untouched
  EXPECT_EQ(l.bias[1], -0.0f);
}

// ---- QDQ rules (passes/requantize.h) ------------------------------------------------------------

TEST(Requantization, AnnotateInPlaceOrCopy) {
  Network net;
  net.name = "n";
  net.input = {4, 8, 8};
  TensorQuant q, q2;
  q.scale = 0.5f;
  q2.scale = 0.25f;
  net.layers.push_back(layer("conv", LayerKind::Conv, {kNetworkInput}));
  using passes::Requantization;
  EXPECT_EQ(passes::requantization(net, {0}, true, q), Requantization::Annotate);
  net.layers[0].out_quant = q;
  EXPECT_EQ(passes::requantization(net, {0}, true, q), Requantization::Annotate);  // the same
  EXPECT_EQ(passes::requantization(net, {0}, true, q2), Requantization::Copy);     // not a copy
  net.layers.push_back(layer("pool", LayerKind::Copy, {0}));
  net.layers[1].out_quant = q;  // an exact copy of the conv
  EXPECT_TRUE(passes::exact_copy(net, 1));
  EXPECT_EQ(passes::requantization(net, {1}, true, q2), Requantization::InPlace);
  EXPECT_EQ(passes::requantization(net, {1}, false, q2), Requantization::Copy);    // read by more
  EXPECT_EQ(passes::requantization(net, {0, 1}, true, q2), Requantization::Copy);  // two parts
  net.layers[1].act = Activation::Relu;
  EXPECT_FALSE(passes::exact_copy(net, 1));
  EXPECT_EQ(passes::requantization(net, {1}, true, q2), Requantization::Copy);
  net.input_quant = q;
  EXPECT_EQ(passes::requantization(net, {kNetworkInput}, true, q2), Requantization::Copy);
  EXPECT_EQ(passes::requantization(net, {kNetworkInput, 0}, true, q), Requantization::Annotate);
}

TEST(Requantization, ExactCopyNeedsEveryInputQuantizedAlike) {
  Network net;
  net.name = "n";
  net.input = {4, 8, 8};
  TensorQuant q, q2;
  q.scale = 0.5f;
  q2.scale = 0.25f;
  net.layers.push_back(layer("a", LayerKind::Conv, {kNetworkInput}));
  net.layers.push_back(layer("b", LayerKind::Conv, {kNetworkInput}));
  net.layers.push_back(layer("cat", LayerKind::Copy, {0, 1}));
  EXPECT_FALSE(passes::exact_copy(net, 2));  // no quantization of its own
  net.layers[2].out_quant = q;
  net.layers[0].out_quant = q;
  EXPECT_FALSE(passes::exact_copy(net, 2));  // b has none
  net.layers[1].out_quant = q2;
  EXPECT_FALSE(passes::exact_copy(net, 2));  // b has another
  net.layers[1].out_quant = q;
  EXPECT_TRUE(passes::exact_copy(net, 2));
  EXPECT_FALSE(passes::exact_copy(net, 0));  // a Conv is no copy
}

}  // namespace

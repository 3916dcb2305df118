// SPDX-License-Identifier: Apache-2.0
// The IR -> IR passes over the float network (driver/cnn/passes/), on hand-built networks.
#include <gtest/gtest.h>

#include "cnn_test_util.h"
#include "passes/fusion.h"
#include "passes/network_passes.h"

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
  passes::MaxPoolWindow w;
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

}  // namespace

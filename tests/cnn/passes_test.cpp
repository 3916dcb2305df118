// SPDX-License-Identifier: Apache-2.0
// The IR -> IR passes over the float network (driver/cnn/passes/), on hand-built networks.
#include <gtest/gtest.h>

#include "cnn_test_util.h"
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

}  // namespace

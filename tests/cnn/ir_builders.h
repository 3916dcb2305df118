// SPDX-License-Identifier: Apache-2.0
// Builders shared by the tests of the IR passes (fuse_layers_test.cpp, pair_qdq_test.cpp,
// fold_affine_test.cpp): the hand-built networks and layers the converters would leave (a Conv,
// the Copy layer holding an activation's or a max-pool's pending step, a uint8 quantization),
// and the ONNX nodes the importer tests put around them (a Conv, a QuantizeLinear /
// DequantizeLinear pair).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "network.h"
#include "onnx_export.h"
#include "passes/fusion.h"

namespace cnn_test {

using tpu::cnn::Activation;
using tpu::cnn::Layer;
using tpu::cnn::LayerKind;
using tpu::cnn::LutFunc;
using tpu::cnn::Network;
using tpu::cnn::OnnxGraph;
using tpu::cnn::StepKind;
using tpu::cnn::TensorQuant;

// A network "net" with an 8x8 input of 4 channels and no layers yet.
inline Network input_net() {
  Network net;
  net.name = "net";
  net.input = {4, 8, 8};
  return net;
}

// uint8 quantization of `scale`, zero point 128.
inline TensorQuant uint8_quant(float scale) {
  TensorQuant q;
  q.scale = scale;
  q.zero_point = 128;
  q.is_unsigned = true;
  return q;
}

// A k x k Conv (k = 3: padding 1, so 8x8 -> 8x8) with `cout` output channels reading `inputs`
// (4 channels each, 8x8), weights and bias ones and zeros.
inline Layer conv_layer(const std::string& name, std::vector<int> inputs, int cout, int k) {
  Layer l;
  l.kind = LayerKind::Conv;
  l.name = name;
  l.op = "Conv";
  l.inputs = std::move(inputs);
  l.input_channels.assign(l.inputs.size(), 4);
  l.in = {4 * int(l.inputs.size()), 8, 8};
  l.kh = l.kw = k;
  l.pad_t = l.pad_l = l.pad_b = l.pad_r = k / 2;
  l.conv_out.c = cout;
  l.weight.assign(size_t(cout) * size_t(l.in.c) * size_t(k * k), 1.0f);
  l.bias.assign(size_t(cout), 0.0f);
  l.infer_shapes();
  return l;
}

// The Copy layer a converter makes of an activation reading layer `in` of `net` (`source`: the
// layer it may join, -1 when another op reads its input too), as fuse_activation leaves it.
inline Layer activation(const Network& net, const std::string& name, int in, int source,
                        Activation a, LutFunc f = LutFunc::Sigmoid, float p0 = 0.0f,
                        float p1 = 0.0f) {
  const Layer& from = net.layers[size_t(in)];
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = a == Activation::Lut    ? tpu::cnn::lut_func_name(f)
         : a == Activation::Clip ? "Clip"
                                 : "Relu";
  c.inputs = {in};
  c.input_channels = {from.out.c};
  c.in = from.out;
  c.out_quant = from.out_quant;
  c.step.kind = StepKind::Activation;
  c.step.sources = {source};
  c.step.act = a;
  c.step.lut = f;
  c.step.p0 = p0;
  c.step.p1 = p1;
  tpu::cnn::passes::fuse_activation(c, a, f, p0, p1);
  c.fused.push_back(c.op + " " + name);
  c.infer_shapes();
  return c;
}

// The Copy layer of a pending k x k / k max-pool `name` of layer `in`, a 1x1 image of two
// channels, whose pooled size the step declares as 1x1.
inline Layer max_pool_of_1x1(const std::string& name, int in, int k) {
  Layer p;
  p.kind = LayerKind::Copy;
  p.name = name;
  p.op = "MaxPool";
  p.inputs = {in};
  p.input_channels = {2};
  p.in = {2, 1, 1};
  p.infer_shapes();
  p.step.kind = StepKind::MaxPool;
  p.step.sources = {in};
  p.step.pool.k = p.step.pool.s = k;
  p.step.pool.oh = p.step.pool.ow = 1;
  return p;
}

// ---- ONNX nodes for the tests through the importer

// A 1x1 Conv `name` (2 -> 2 channels) reading `in`, its weights `name`_w.
inline void conv_node(OnnxGraph& g, const std::string& name, const std::string& in,
                      const std::string& out) {
  g.init_float(name + "_w", {2, 2, 1, 1}, {1.0f, 0.5f, -0.5f, 1.0f});
  g.node("Conv", {in, name + "_w"}, {out}, {}, name);
}

// The scale `name`_s and uint8 zero point 128 `name`_z of a quantization.
inline void quant(OnnxGraph& g, const std::string& name, float scale) {
  g.init_float(name + "_s", {}, {scale});
  g.init_uint8(name + "_z", {}, {128});
}

// QuantizeLinear `q`_q of `in` and DequantizeLinear `q`_dq to `out`, with quantization `q`.
inline void pair(OnnxGraph& g, const std::string& q, const std::string& in,
                 const std::string& out) {
  g.node("QuantizeLinear", {in, q + "_s", q + "_z"}, {in + "_q"}, {}, q + "_q");
  g.node("DequantizeLinear", {in + "_q", q + "_s", q + "_z"}, {out}, {}, q + "_dq");
}

}  // namespace cnn_test

// SPDX-License-Identifier: Apache-2.0
// Converters of the activations: each a Copy layer holding the step, which the fusion pass
// (passes/fuse_layers.h) merges into the layer before when it can.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/importer.h"
#include "passes/fusion.h"

namespace tpu::cnn::frontend {

void Importer::activation(const onnx::NodeProto& n, bool ql) {
  const std::string& op = n.op_type();
  if (ql)
    int_input(n, 0, 1, 2);
  else
    float_input(n, 0, "QLinear" + op);
  if (op == "Relu")
    return fused_activation(n, n.input(0), Activation::Relu, LutFunc::Sigmoid, 0, 0);
  if (op == "Clip") {
    float lo, hi;
    if (opset_ < 11) {
      lo = attr_float(n, "min", -3.4028234e38f);
      hi = attr_float(n, "max", 3.4028234e38f);
    } else {
      const Const* mn = opt_konst(n, 1, "min");
      const Const* mx = opt_konst(n, 2, "max");
      lo = mn ? float(mn->v.at(0)) : -3.4028234e38f;
      hi = mx ? float(mx->v.at(0)) : 3.4028234e38f;
    }
    if (lo > hi) fail(n, "min > max");
    return fused_activation(n, n.input(0), Activation::Clip, LutFunc::Sigmoid, lo, hi);
  }
  if (op == "HardSigmoid") {
    const float alpha = attr_float(n, "alpha", 0.2f), beta = attr_float(n, "beta", 0.5f);
    // x * HardSigmoid(x) (HardSwish below opset 14): the Mul decides.
    if (uses_[n.output(0)] == 1 && std::fabs(alpha - 1.0f / 6.0f) < 1e-6f && beta == 0.5f) {
      for (const auto& m : model_.graph().node())
        if (m.op_type() == "Mul" && m.input_size() == 2 &&
            ((m.input(0) == n.output(0) && m.input(1) == n.input(0)) ||
             (m.input(1) == n.output(0) && m.input(0) == n.input(0)))) {
          hard_sigmoid_of_[n.output(0)] = n.input(0);
          return;
        }
    }
    return fused_activation(n, n.input(0), Activation::Lut, LutFunc::HardSigmoid, alpha, beta);
  }
  if (op == "Sigmoid" || op == "QLinearSigmoid")
    return fused_activation(n, n.input(0), Activation::Lut, LutFunc::Sigmoid, 0, 0, ql);
  if (op == "Tanh") return fused_activation(n, n.input(0), Activation::Lut, LutFunc::Tanh, 0, 0);
  if (op == "HardSwish")
    return fused_activation(n, n.input(0), Activation::Lut, LutFunc::HardSwish, 0, 0);
  if (op == "LeakyRelu" || op == "QLinearLeakyRelu")
    return fused_activation(n, n.input(0), Activation::Lut, LutFunc::LeakyRelu,
                            attr_float(n, "alpha", 0.01f), 0, ql);
  if (op == "PRelu") {
    const Const& s = konst(n, 1, "slope");
    bool one = true;
    for (double x : s.v) one &= x == s.v[0];
    if (one)
      return fused_activation(n, n.input(0), Activation::Lut, LutFunc::LeakyRelu, float(s.v.at(0)),
                              0);
    return prelu_per_channel(n, per_channel(n, s, data(n, 0)));
  }
  fail(n, "is not supported");
}

void Importer::prelu_per_channel(const onnx::NodeProto& n, const std::vector<double>& slope) {
  const Value v = float_input(n, 0, "a per-tensor QLinearLeakyRelu");
  if (v.flat) fail(n, "a per-channel PRelu of a flattened tensor is not supported");
  Value x = v;
  x.parts = {materialize(v, n.input(0))};
  auto copy = [&](const char* what, float sign) {
    Layer c = start_layer(n, LayerKind::Copy, x);
    c.name = node_name(n) + what;
    c.act = Activation::Relu;
    c.channel_scale.assign(size_t(v.shape.c), sign);
    return push_layer(n, std::move(c));
  };
  const int pos = copy(" (x > 0)", 1.0f), neg = copy(" (x < 0)", -1.0f);
  Layer a;
  a.kind = LayerKind::Add;
  a.name = node_name(n);
  a.op = n.op_type();
  a.inputs = {pos, neg};
  a.input_channels = {v.shape.c, v.shape.c};
  a.in = v.shape;
  for (double sl : slope) a.channel_scale.push_back(float(-sl));
  const int id = push_layer(n, std::move(a));
  new_layer_output(n, id, false);
}

void Importer::fused_activation(const onnx::NodeProto& n, const std::string& in, Activation a,
                                LutFunc f, float p0, float p1, bool ql) {
  const Value v = values_.at(in);
  // A Copy layer holding the step, 1:1: the fusion pass (passes/fuse_layers.h) merges it into
  // the layer computing `in` when nothing else reads it and the rules allow.
  Layer c = start_layer(n, LayerKind::Copy, v);
  // Of a (de)quantized tensor: the copy is exact, and a LUT maps from there.
  if (v.quant) c.out_quant = v.quant;
  c.step.kind = StepKind::Activation;
  c.step.sources = {fusable(in)};
  c.step.act = a;
  c.step.lut = f;
  c.step.p0 = p0;
  c.step.p1 = p1;
  const int li = push_layer(n, std::move(c));
  Layer& l = net_.layers[size_t(li)];
  passes::fuse_activation(l, a, f, p0, p1);
  if (a == Activation::Lut && ql)
    l.out_quant = tensor_quant(n, konst(n, 3, "Y_scale"), opt_konst(n, 4, "Y_zero_point"));
  l.fused.push_back(n.op_type() + " " + node_name(n));
  new_layer_output(n, li, v.flat);
  values_[n.output(0)].shape = l.out;
  finish_int_output(n, li, ql);
}

}  // namespace tpu::cnn::frontend

// SPDX-License-Identifier: Apache-2.0
// Converters of the activations: fused into the layer before, or a Copy layer.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/importer.h"

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
  int li = fusable(in);
  if (li >= 0) {
    const Layer& l = net_.layers[size_t(li)];
    const bool can =
        l.act == Activation::None || (a != Activation::Lut && l.act != Activation::Lut);
    const bool pool_ok = l.pool_k == 1 || a != Activation::Lut || lut_func_monotonic(f);
    if (!can || !pool_ok) li = -1;
  }
  if (li < 0) {
    Layer c = start_layer(n, LayerKind::Copy, v);
    c.op = n.op_type();
    // Of a (de)quantized tensor: the copy is exact, and a LUT maps from there.
    if (v.quant) c.out_quant = v.quant;
    li = push_layer(n, std::move(c));
  }
  Layer& l = net_.layers[size_t(li)];
  if (a == Activation::Lut) {
    l.act = Activation::Lut;
    l.lut = f;
    l.lut_alpha = p0;
    l.lut_beta = p1;
    // Its input's quantization (QDQ before it, or a QLinear op's input) feeds the LUT.
    l.pre_quant = l.out_quant;
    l.out_quant.reset();
    if (ql) l.out_quant = tensor_quant(n, konst(n, 3, "Y_scale"), opt_konst(n, 4, "Y_zero_point"));
  } else {
    float lo = p0, hi = p1;
    if (l.act == Activation::None) {
      l.act = a;
      l.clip_lo = lo;
      l.clip_hi = hi;
    } else if (a == Activation::Relu) {
      if (l.act == Activation::Clip)
        l.clip_lo = std::max(l.clip_lo, 0.0f), l.clip_hi = std::max(l.clip_hi, 0.0f);
    } else {
      if (l.act == Activation::Relu)
        lo = std::max(lo, 0.0f), hi = std::max(hi, 0.0f);
      else
        lo = std::max(lo, l.clip_lo), hi = std::min(hi, l.clip_hi);
      l.act = Activation::Clip;
      l.clip_lo = lo;
      l.clip_hi = std::max(lo, hi);
    }
    if (l.act == Activation::Clip && l.clip_lo == 0.0f && l.clip_hi >= 3.0e38f)
      l.act = Activation::Relu;
    l.out_quant.reset();  // requantized once, to the quantization after the activation
  }
  l.fused.push_back(n.op_type() + " " + node_name(n));
  new_layer_output(n, li, v.flat);
  values_[n.output(0)].shape = l.out;
  finish_int_output(n, li, ql);
}

}  // namespace tpu::cnn::frontend

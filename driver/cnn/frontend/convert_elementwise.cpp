// SPDX-License-Identifier: Apache-2.0
// Converters of Add / Sub / Mul / Div (a layer, a folded bias or scale, or preprocessing),
// QLinearAdd, Concat, QLinearConcat and BatchNormalization.
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

std::vector<double> Importer::per_channel(const onnx::NodeProto& n, const Const& c,
                                          const Value& v) const {
  const int channels = v.shape.c;
  std::vector<double> per(static_cast<size_t>(channels));
  if (c.numel() == 1) {
    std::fill(per.begin(), per.end(), c.v[0]);
  } else if (c.numel() == channels) {
    bool ok = true;
    if (!v.flat) {
      // [C] alone would broadcast along W: only [C,1,1] / [1,C,1,1] are per channel.
      ok = c.dims.size() >= 3 && c.dims[c.dims.size() - 1] == 1 && c.dims[c.dims.size() - 2] == 1;
    }
    if (!ok)
      fail(n, "constant of shape " + dims_str(c.dims) +
                  " is not a per-channel value for a tensor with " + std::to_string(channels) +
                  " channels");
    per.assign(c.v.begin(), c.v.end());
  } else {
    fail(n, "constant of shape " + dims_str(c.dims) + " is neither a scalar nor per channel (" +
                std::to_string(channels) + " channels)");
  }
  return per;
}

void Importer::arith(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (n.input_size() != 2) fail(n, "expects two inputs");
  if (op == "Mul")
    for (int i = 0; i < 2; ++i) {
      auto it = hard_sigmoid_of_.find(n.input(i));
      if (it != hard_sigmoid_of_.end() && it->second == n.input(1 - i))
        return fused_activation(n, n.input(1 - i), Activation::Lut, LutFunc::HardSwish, 0, 0);
    }
  const bool d0 = values_.count(n.input(0)) > 0, d1 = values_.count(n.input(1)) > 0;
  if (d0 && d1) {
    if (op == "Add") return add(n, false);
    fail(n, op + " of two tensors is not supported (only Add, and x * HardSigmoid(x))");
  }
  const bool data_first = d0;
  const Value v = data(n, data_first ? 0 : 1);
  const Const& c = konst(n, data_first ? 1 : 0, "operand");
  if (v.is_int) fail(n, "operates on a quantized tensor (DequantizeLinear first)");
  const std::vector<double> per = per_channel(n, c, v);
  const std::string& name = n.input(data_first ? 0 : 1);
  if (const int li = fusable(name); li >= 0) {
    // A bias or scale of the layer before: the fold pass folds it, or refuses.
    PendingStep step;
    step.values = per;
    step.constant_first = !data_first;
    return fold_step(n, v, li, std::move(step));
  }
  // Preprocessing on the input: x' = a*x + b per channel.
  if (name != input_tail_ || v.parts != std::vector<int>{kNetworkInput})
    fail(n, op + " by a constant is supported after a Conv/Gemm/MatMul read by nothing else, or "
                 "on the input");
  if (uses_[name] != 1) fail(n, op + " on an input that other nodes also read is not supported");
  if (net_.input_quant) fail(n, op + " on the input after it was quantized is not supported");
  if (net_.pre_scale.empty()) {
    net_.pre_scale.assign(size_t(v.shape.c), 1.0f);
    net_.pre_shift.assign(size_t(v.shape.c), 0.0f);
  }
  for (int ch = 0; ch < v.shape.c; ++ch) {
    float& a = net_.pre_scale[size_t(ch)];
    float& b = net_.pre_shift[size_t(ch)];
    const double k = per[size_t(ch)];
    if (op == "Add")
      b = float(b + k);
    else if (op == "Sub" && data_first)
      b = float(b - k);
    else if (op == "Sub") {
      a = -a;
      b = float(k - b);
    } else if (op == "Mul") {
      a = float(a * k);
      b = float(b * k);
    } else if (op == "Div" && data_first) {
      if (k == 0) fail(n, "division by zero");
      a = float(a / k);
      b = float(b / k);
    } else {
      fail(n, "dividing a constant by the input is not supported");
    }
  }
  define(n, v, name);
}

void Importer::add(const onnx::NodeProto& n, bool ql) {
  const Value a = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearAdd");
  const Value b = ql ? int_input(n, 3, 4, 5) : float_input(n, 1, "QLinearAdd");
  if (!(a.shape == b.shape) || a.flat != b.flat)
    fail(n, "adds tensors of shapes " + a.shape.str() + " and " + b.shape.str() +
                "; only equal shapes are supported (no broadcasting)");
  Layer l;
  l.kind = LayerKind::Add;
  l.name = node_name(n);
  l.op = n.op_type();
  l.inputs = {materialize(a, n.input(0)), materialize(b, n.input(ql ? 3 : 1))};
  l.input_channels = {a.shape.c, b.shape.c};
  l.in = a.shape;
  l.out_quant = out_quant(n, ql, 6, 7);
  const int id = push_layer(n, std::move(l));
  new_layer_output(n, id, a.flat);
  finish_int_output(n, id, ql);
}

void Importer::concat(const onnx::NodeProto& n, bool ql) {
  Value v;
  const int first = ql ? 2 : 0, step = ql ? 3 : 1;
  int64_t axis = attr_int(n, "axis", 1);
  std::vector<int> sources;  // per input: the layer whose output only this reads, else -1
  for (int i = first; i < n.input_size(); i += step) {
    const Value p = ql ? int_input(n, i, i + 1, i + 2) : float_input(n, i, "QLinearConcat");
    const int rank = p.flat ? 2 : 4;
    if (axis < 0) axis += rank;
    if (axis != 1)
      fail(n, "axis " + std::to_string(attr_int(n, "axis", 1)) +
                  ": only concatenation on channels (axis 1) is supported");
    if (v.parts.empty()) {
      v.shape = p.shape;
      v.flat = p.flat;
    } else {
      if (p.flat != v.flat || p.shape.h != v.shape.h || p.shape.w != v.shape.w)
        fail(n, "concatenates tensors of shapes " + v.shape.str() + " and " + p.shape.str() +
                    " (H and W must match)");
      v.shape.c += p.shape.c;
    }
    v.parts.insert(v.parts.end(), p.parts.begin(), p.parts.end());
    if (p.parts.size() == 1) concat_inputs_[n.output(0)].push_back(n.input(i));
    sources.push_back(p.parts.size() == 1 ? fusable(n.input(i)) : -1);
  }
  if (v.parts.empty()) fail(n, "has no inputs");
  // Pooling fuses into the parts only when each is one layer's output (not itself a concat).
  if (ql || concat_inputs_[n.output(0)].size() != v.parts.size()) concat_inputs_.erase(n.output(0));
  if (!ql) {
    values_[n.output(0)] = v;
    return;
  }
  // QLinearConcat: a Copy layer of the parts holding its output quantization, 1:1. The fusion
  // walk (passes/concat_steps.h) keeps it, requantizing, unless every part as fused has that
  // quantization; then the readers read the parts in place (a max-pool that only it reads
  // joins each part that only it reads).
  const TensorQuant q = tensor_quant(n, konst(n, 0, "Y_scale"), opt_konst(n, 1, "Y_zero_point"));
  Layer c = start_layer(n, LayerKind::Copy, v);
  c.name = n.output(0);
  c.op = "Concat";
  c.out_quant = q;
  c.step.kind = StepKind::QuantizeConcat;
  c.step.quant = q;
  c.step.sources = std::move(sources);
  const int id = push_layer(n, std::move(c));
  v.parts = {id};
  v.is_int = true;
  v.quant = q;
  values_[n.output(0)] = v;
  tail_of_[n.output(0)] = id;  // activations and pooling fuse into it (or, pooling, its parts)
}

void Importer::batch_norm(const onnx::NodeProto& n) {
  const Value v = float_input(n, 0, "a QDQ Conv");
  const int li = fusable(n.input(0));
  if (li < 0)
    fail(n,
         "BatchNormalization is supported right after a Conv or Gemm whose output nothing else "
         "reads (it is folded into it)");
  PendingStep step;
  const char* what[] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 4; ++i) {
    const Const& c = konst(n, i + 1, what[i]);
    step.batch_norm[size_t(i)] = c.v;
    step.batch_norm_shapes[size_t(i)] = dims_str(c.dims);
  }
  step.epsilon = attr_float(n, "epsilon", 1e-5f);
  fold_step(n, v, li, std::move(step));
}

void Importer::fold_step(const onnx::NodeProto& n, const Value& v, int li, PendingStep step) {
  const Layer& s = net_.layers[size_t(li)];
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = node_name(n);
  c.op = n.op_type();
  c.inputs = {li};
  c.input_channels = {s.out.c};
  c.in = s.out;
  c.out_quant = s.out_quant;  // (what a QuantizeLinear after it gives: the layer's, once folded)
  c.step = std::move(step);
  c.step.kind = StepKind::Fold;
  c.step.sources = {li};
  const int id = push_layer(n, std::move(c));
  Value out = v;
  out.parts = {id};
  values_[n.output(0)] = out;
  tail_of_[n.output(0)] = id;  // activations and pooling after it join the layer it folds into
}

}  // namespace tpu::cnn::frontend

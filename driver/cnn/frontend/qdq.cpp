// SPDX-License-Identifier: Apache-2.0
// Quantization annotations: QuantizeLinear / DequantizeLinear pairs and the inputs and outputs
// of the QLinear and integer ops give tensors their scale and zero point.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/importer.h"
#include "passes/pair_qdq.h"

namespace tpu::cnn::frontend {

TensorQuant Importer::tensor_quant(const onnx::NodeProto& n, const Const& s, const Const* z) const {
  if (s.numel() != 1 || (z && z->numel() != 1))
    fail(n, "per-axis quantization of activations is not supported (only of weights)");
  TensorQuant q;
  q.scale = float(s.v[0]);
  if (!(q.scale > 0.0f)) fail(n, "scale must be positive");
  q.is_unsigned = !z || z->elem_type == onnx::TensorProto::UINT8;
  if (z && z->elem_type != onnx::TensorProto::UINT8 && z->elem_type != onnx::TensorProto::INT8)
    fail(n,
         std::string("zero point of type ") + type_name(z->elem_type) + " (only int8 and uint8)");
  q.zero_point = z ? int(z->v[0]) : 0;
  return q;
}

std::optional<TensorQuant>& Importer::quant_ref(int p) {
  return p == kNetworkInput ? net_.input_quant : net_.layers[size_t(p)].out_quant;
}

const std::optional<TensorQuant>& Importer::quant_ref(int p) const {
  return p == kNetworkInput ? net_.input_quant : net_.layers[size_t(p)].out_quant;
}

int Importer::annotate(const onnx::NodeProto& n, Value& v, const TensorQuant& q,
                       const std::string& name) {
  const auto& have = net_.input_quant;
  for (int p : v.parts)
    if (p == kNetworkInput && have && !(*have == q))
      fail(n, "requantizes the input with different parameters (" + q.str() + " vs " + have->str() +
                  ")");
  const bool sole_reader = v.parts.size() == 1 && fusable(name) == v.parts[0];
  // (A max-pool of a concatenation is, as fused, its parts: the pairing step decides there.)
  const bool pooled_concat = std::any_of(v.parts.begin(), v.parts.end(), [&](int p) {
    if (p == kNetworkInput) return false;
    const PendingStep& step = net_.layers[size_t(p)].step;
    return step.kind == StepKind::MaxPool && step.sources.size() > 1;
  });
  if (!pooled_concat &&
      passes::requantization(net_, v.parts, sole_reader, q) == passes::Requantization::Annotate) {
    for (int p : v.parts) quant_ref(p) = q;
    v.quant = q;
    return -1;
  }
  // Quantized otherwise already: a Copy layer holding the Quantize step, which the QDQ pairing
  // step (passes/pair_qdq.h) resolves in the fusion walk, on the network as fused by then.
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = n.op_type();
  c.inputs = v.parts;
  for (int p : v.parts) c.input_channels.push_back(channels_of(p));
  c.in = v.shape;
  c.out_quant = q;
  c.step.kind = StepKind::Quantize;
  c.step.quant = q;
  c.step.sole_reader = sole_reader;
  c.step.sources = {fusable(name)};
  c.infer_shapes();
  net_.layers.push_back(std::move(c));
  v.parts = {int(net_.layers.size()) - 1};
  v.quant = q;
  return v.parts[0];
}

void Importer::quantize_linear(const onnx::NodeProto& n) {
  Value v = data(n, 0);
  if (v.is_int) fail(n, "quantizes a tensor that is already quantized");
  const int copy = annotate(
      n, v, tensor_quant(n, konst(n, 1, "y_scale"), opt_konst(n, 2, "y_zero_point")), n.input(0));
  v.is_int = true;
  define(n, v, n.input(0));
  if (copy >= 0) tail_of_[n.output(0)] = copy;  // activations and pooling fuse into it
}

void Importer::dequantize_linear(const onnx::NodeProto& n) {
  Value v = data(n, 0);
  if (!v.is_int) fail(n, "dequantizes a tensor that is not quantized");
  const TensorQuant q = tensor_quant(n, konst(n, 1, "x_scale"), opt_konst(n, 2, "x_zero_point"));
  if (v.quant && !(q == *v.quant))
    fail(n, "dequantizes with " + q.str() + " a tensor quantized with " + v.quant->str());
  if (!v.quant)
    annotate(n, v, q, n.input(0));  // an integer graph input: this says how it is quantized
  v.is_int = false;
  define(n, v, n.input(0));
}

Importer::Value Importer::int_input(const onnx::NodeProto& n, int i, int si, int zi) {
  Value v = data(n, i);
  const TensorQuant q =
      tensor_quant(n, konst(n, si, "input scale"), opt_konst(n, zi, "input zero point"));
  if (!v.is_int)
    fail(n, "its input '" + n.input(i) + "' is not a quantized tensor (QuantizeLinear missing?)");
  if (v.quant && !(q == *v.quant))
    fail(n, "declares its input '" + n.input(i) + "' as " + q.str() + " but it was quantized as " +
                v.quant->str());
  if (!v.quant) annotate(n, v, q, n.input(i));
  return v;
}

Importer::Value Importer::float_input(const onnx::NodeProto& n, int i,
                                      const std::string& alternative) {
  const Value& v = data(n, i);
  if (v.is_int)
    fail(n, "its input '" + n.input(i) + "' is quantized (use " + alternative +
                ", or DequantizeLinear first)");
  return v;
}

Importer::Value Importer::integer_input(const onnx::NodeProto& n, int i, int zi) {
  Value v = data(n, i);
  if (!v.is_int) fail(n, "its input '" + n.input(i) + "' is not a uint8 / int8 tensor");
  const Const* z = opt_konst(n, zi, "zero point");
  if (z && z->numel() != 1)
    fail(n, "zero point of shape " + dims_str(z->dims) +
                " (per row); only a per-tensor zero point is supported");
  Const one;
  one.v = {1.0};
  TensorQuant q = tensor_quant(n, one, z);
  if (!z) q.is_unsigned = v.quant ? v.quant->is_unsigned : int_input_unsigned_;
  if (v.quant && !(q == *v.quant))
    fail(n, "reads its input '" + n.input(i) + "' as " + q.str() + " but it was quantized as " +
                v.quant->str());
  if (!v.quant) annotate(n, v, q, n.input(i));
  return v;
}

Const Importer::integer_weights(const onnx::NodeProto& n, int wi, int zi, int oc_axis) const {
  Const w = konst(n, wi, "weights");
  const Const* z = opt_konst(n, zi, "weight zero point");
  if (w.elem_type != onnx::TensorProto::UINT8 && w.elem_type != onnx::TensorProto::INT8)
    fail(n, std::string("weights of type ") + type_name(w.elem_type) + " (only uint8 and int8)");
  w.quantized = true;
  w.axis = oc_axis;
  const int64_t channels = z && z->numel() > 1 ? z->numel() : 1;
  if (channels > 1 && (oc_axis >= int(w.dims.size()) || channels != w.dims[size_t(oc_axis)]))
    fail(n, "weight zero point of shape " + dims_str(z->dims) +
                " matches neither per-tensor nor per-output-channel");
  w.scale.assign(size_t(channels), 1.0);
  w.zp.assign(size_t(channels), 0);
  if (z)
    for (int64_t c = 0; c < channels; ++c) w.zp[size_t(c)] = int64_t(z->v[size_t(c)]);
  w.q.assign(w.v.begin(), w.v.end());
  for (int64_t i = 0; i < w.numel(); ++i)
    w.v[size_t(i)] = double(w.q[size_t(i)] - w.zp[w.channel_of(i)]);
  return w;
}

void Importer::make_raw(Layer& l) const {
  TensorQuant q;
  q.scale = 1.0f;
  q.zero_point = 0;
  q.is_unsigned = false;
  l.out_quant = q;
  l.raw_out = true;
}

std::optional<TensorQuant> Importer::out_quant(const onnx::NodeProto& n, bool ql, int si, int zi) {
  if (!ql) return std::nullopt;
  return tensor_quant(n, konst(n, si, "output scale"), opt_konst(n, zi, "output zero point"));
}

void Importer::finish_int_output(const onnx::NodeProto& n, int layer, bool ql) {
  if (!ql) return;
  Value& v = values_[n.output(0)];
  v.is_int = true;
  v.quant = net_.layers[size_t(layer)].out_quant;
}

}  // namespace tpu::cnn::frontend

// SPDX-License-Identifier: Apache-2.0
// Converters of the ops that make a Conv or Dense layer: Conv, QLinearConv, ConvInteger, Gemm,
// MatMul, QLinearMatMul, MatMulInteger.
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

void Importer::conv(const onnx::NodeProto& n) {
  const bool ql = n.op_type() == "QLinearConv";
  const bool integer = n.op_type() == "ConvInteger";
  const Value v = ql        ? int_input(n, 0, 1, 2)
                  : integer ? integer_input(n, 0, 2)
                            : float_input(n, 0, "QLinearConv");
  if (v.flat) fail(n, "its input '" + n.input(0) + "' is flattened; Conv needs an NCHW tensor");
  Const w;
  const Const* b = nullptr;
  if (ql) {
    w = qlinear_weights(n, 3, 4, 5, 0);
    b = opt_konst(n, 8, "B");
  } else if (integer) {
    w = integer_weights(n, 1, 3, 0);
  } else {
    w = konst(n, 1, "W");
    b = opt_konst(n, 2, "B");
  }
  if (w.dims.size() != 4)
    fail(n, "weights of shape " + dims_str(w.dims) + "; expected [Cout, Cin/group, kH, kW]");
  Layer l = start_layer(n, LayerKind::Conv, v);
  l.group = int(attr_int(n, "group", 1));
  if (l.group < 1 || v.shape.c % l.group != 0)
    fail(n, "group " + std::to_string(l.group) + " does not divide the " +
                std::to_string(v.shape.c) + " input channels");
  if (w.dims[1] * l.group != v.shape.c)
    fail(n, "weights " + dims_str(w.dims) + " with group " + std::to_string(l.group) + " expect " +
                std::to_string(w.dims[1] * l.group) + " input channels but its input '" +
                n.input(0) + "' has shape " + v.shape.str() + " (wrong input shape?)");
  l.conv_out.c = int(w.dims[0]);
  l.kh = int(w.dims[2]);
  l.kw = int(w.dims[3]);
  const auto ks = attr_ints(n, "kernel_shape");
  if (!ks.empty() && (ks.size() != 2 || ks[0] != l.kh || ks[1] != l.kw))
    fail(n, "kernel_shape " + dims_str(ks) + " does not match the weights " + dims_str(w.dims));
  strides_from(n, &l);
  const auto dil = attr_ints(n, "dilations");
  if (!dil.empty()) {
    if (dil.size() != 2) fail(n, "dilations must have 2 values");
    l.dh = int(dil[0]);
    l.dw = int(dil[1]);
  }
  pads_from(n, attr_string(n, "auto_pad", "NOTSET"), attr_ints(n, "pads"), &l, l.kh, l.kw, l.dh,
            l.dw, *this);
  absorb_pad(v, &l);
  // Quantized weights whose value minus zero point leaves int8: weight planes (above).
  const int planes = w.quantized ? weight_planes(n, w) : 1;
  const int64_t k = w.dims[1] * w.dims[2] * w.dims[3];  // per plane
  auto conv_index = [k](int oc, int64_t i) { return oc * k + i; };
  if (planes > 1) {
    if (l.group != 1)
      fail(n,
           "weight minus zero point leaves int8 in a grouped convolution (the weights would "
           "need to be split into planes, which only an ungrouped one can)");
    repeat_input(l, planes);
    l.weight = plane_floats(w, int(w.dims[0]), k, planes, conv_index);
  } else {
    l.weight.assign(w.v.begin(), w.v.end());
  }
  l.conv_out.c = int(w.dims[0]);
  try {
    l.infer_shapes();
  } catch (const Error& e) {
    fail(n, e.what());
  }
  const int cout = l.cout();
  if (b) {
    if (b->numel() != cout)
      fail(n, "bias of shape " + dims_str(b->dims) + " for " + std::to_string(cout) +
                  " output channels");
    l.bias.assign(b->v.begin(), b->v.end());
  } else {
    l.bias.assign(size_t(cout), 0.0f);
  }
  const std::optional<TensorQuant> in_q = v.quant;
  if (w.quantized) l.given = given_weights(n, w, cout, k, 0, conv_index, planes);
  if (ql) {
    if (b) {
      l.given->bias.assign(b->v.begin(), b->v.end());
      for (int oc = 0; oc < cout; ++oc)
        l.bias[size_t(oc)] = float(b->v[size_t(oc)] * double(in_q->scale) *
                                   double(l.given->weight_scale[size_t(oc)]));
    }
  } else {
    given_bias(b, l, in_q);
  }
  l.out_quant = out_quant(n, ql, 6, 7);
  if (integer) make_raw(l);
  const int id = push_layer(n, std::move(l));
  new_layer_output(n, id, false);
  finish_int_output(n, id, ql || integer);
}

void Importer::dense(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const bool ql = op == "QLinearMatMul";
  const bool integer = op == "MatMulInteger";
  const Value v = ql        ? int_input(n, 0, 1, 2)
                  : integer ? integer_input(n, 0, 2)
                            : float_input(n, 0, "QLinearMatMul");
  if (!v.flat)
    fail(n, "its input '" + n.input(0) + "' has shape [N, " + std::to_string(v.shape.c) + ", " +
                std::to_string(v.shape.h) + ", " + std::to_string(v.shape.w) + "]; " + op +
                " needs a 2-D [N, features] input (Flatten first)");
  const int64_t k = v.shape.size();
  Const w;
  const Const* c = nullptr;
  bool trans_b = false;
  double alpha = 1.0, beta = 1.0;
  if (ql) {
    w = qlinear_weights(n, 3, 4, 5, 1);
  } else if (integer) {
    w = integer_weights(n, 1, 3, 1);
  } else {
    w = konst(n, 1, "B");
    if (op == "Gemm") {
      if (attr_int(n, "transA", 0) != 0) fail(n, "transA = 1 is not supported");
      trans_b = attr_int(n, "transB", 0) != 0;
      alpha = attr_float(n, "alpha", 1.0f);
      beta = attr_float(n, "beta", 1.0f);
      c = opt_konst(n, 2, "C");
    }
  }
  if (w.dims.size() != 2)
    fail(n, "weights of shape " + dims_str(w.dims) + "; expected a 2-D matrix");
  const int64_t wk = trans_b ? w.dims[1] : w.dims[0];
  const int cout = int(trans_b ? w.dims[0] : w.dims[1]);
  if (wk != k)
    fail(n, "weights " + dims_str(w.dims) + (trans_b ? " (transB)" : "") + " expect " +
                std::to_string(wk) + " input features but its input '" + n.input(0) + "' has " +
                std::to_string(k) + " (wrong input shape?)");
  Layer l = start_layer(n, LayerKind::Dense, v);
  l.conv_out.c = cout;
  auto index = [&](int oc, int64_t i) { return trans_b ? int64_t(oc) * k + i : i * cout + oc; };
  // Quantized weights whose value minus zero point leaves int8: weight planes (see conv).
  const int planes = w.quantized ? weight_planes(n, w) : 1;
  if (planes > 1) {
    repeat_input(l, planes);
    l.weight = plane_floats(w, cout, k, planes, index);
    for (float& f : l.weight) f = float(alpha * f);
  } else {
    l.weight.resize(size_t(cout * k));
    for (int oc = 0; oc < cout; ++oc)
      for (int64_t i = 0; i < k; ++i)
        l.weight[size_t(oc * k + i)] = float(alpha * w.v[size_t(index(oc, i))]);
  }
  l.bias.assign(size_t(cout), 0.0f);
  if (c) {
    if (c->numel() != 1 && c->numel() != cout)
      fail(n, "bias C of shape " + dims_str(c->dims) + " for " + std::to_string(cout) + " outputs");
    for (int oc = 0; oc < cout; ++oc)
      l.bias[size_t(oc)] = float(beta * c->v[c->numel() == 1 ? 0 : size_t(oc)]);
  }
  if (w.quantized) {
    l.given = given_weights(n, w, cout, k, trans_b ? 0 : 1, index, planes);
    if (alpha != 1.0)
      for (float& s : l.given->weight_scale) s = float(double(s) * alpha);
    if (c && beta == 1.0) given_bias(c, l, v.quant);
  }
  l.out_quant = out_quant(n, ql, 6, 7);
  if (integer) make_raw(l);
  const int id = push_layer(n, std::move(l));
  new_layer_output(n, id, true);
  finish_int_output(n, id, ql || integer);
}

}  // namespace tpu::cnn::frontend

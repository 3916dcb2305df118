// SPDX-License-Identifier: Apache-2.0
// Converters of the ops that make no layer: Pad, Squeeze / Unsqueeze, Softmax, Identity /
// Dropout, Shape, Flatten / Reshape.
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

void Importer::pad(const onnx::NodeProto& n) {
  Value v = float_input(n, 0, "a Conv with pads");
  if (v.flat) fail(n, "its input is flattened");
  if (attr_string(n, "mode", "constant") != "constant")
    fail(n, "mode '" + attr_string(n, "mode", "constant") + "': only constant padding");
  std::vector<int64_t> p;
  double value = 0.0;
  if (opset_ < 11) {
    p = attr_ints(n, "pads");
    value = attr_float(n, "value", 0.0f);
  } else {
    const Const& c = konst(n, 1, "pads");
    p.assign(c.v.begin(), c.v.end());
    if (const Const* cv = opt_konst(n, 2, "constant_value")) value = cv->v.at(0);
    if (n.input_size() > 3 && !n.input(3).empty()) fail(n, "the axes input is not supported");
  }
  if (p.size() != 8)
    fail(n, "pads " + dims_str(p) + ": 8 values (N, C, H, W begins, then ends) are expected");
  if (value != 0.0)
    fail(n, "constant value " + std::to_string(value) + ": only zero padding is supported");
  if (p[0] || p[1] || p[4] || p[5]) fail(n, "pads " + dims_str(p) + ": only H and W may be padded");
  for (int64_t x : p)
    if (x < 0) fail(n, "pads " + dims_str(p) + ": negative pads (cropping) are not supported");
  v.pad_t += int(p[2]);
  v.pad_l += int(p[3]);
  v.pad_b += int(p[6]);
  v.pad_r += int(p[7]);
  values_[n.output(0)] = v;
}

void Importer::squeeze(const onnx::NodeProto& n) {
  Value v = data(n, 0);
  std::vector<int64_t> axes = attr_ints(n, "axes");
  if (n.input_size() > 1 && !n.input(1).empty()) {
    const Const& a = konst(n, 1, "axes");
    axes.assign(a.v.begin(), a.v.end());
  }
  const bool sq = n.op_type() == "Squeeze";
  for (auto& a : axes)
    if (a < 0) a += 4;
  std::sort(axes.begin(), axes.end());
  if (sq && !v.flat && v.shape.h == 1 && v.shape.w == 1 &&
      (axes.empty() || axes == std::vector<int64_t>{2, 3})) {
    v.flat = true;
  } else if (!sq && v.flat && axes == std::vector<int64_t>{2, 3}) {
    v.flat = false;
  } else {
    fail(n, "axes " + dims_str(axes) + " of a " + (v.flat ? "[N, features]" : "[N, C, H, W]") +
                " tensor: only the 1x1 spatial dimensions of [N, C, 1, 1] are supported");
  }
  define(n, v, n.input(0));
}

void Importer::softmax(const onnx::NodeProto& n) {
  const Value& v = data(n, 0);
  const auto& g = model_.graph();
  const int64_t axis = attr_int(n, "axis", opset_ < 13 ? 1 : -1);
  if (n.output(0) != g.output(0).name())
    fail(n,
         n.op_type() +
             " is supported only as the last node (it runs on the host, after the chip's logits)");
  if (!v.flat && !(v.shape.h == 1 && v.shape.w == 1))
    fail(n, n.op_type() + " of a " + v.shape.str() +
                " tensor: only of the logits [N, classes] is supported");
  if (axis != 1 && axis != -1)
    fail(n, "axis " + std::to_string(axis) + ": only over the classes (axis 1 or -1)");
  net_.host_softmax = n.op_type();
  define(n, v, n.input(0));
}

void Importer::alias(const onnx::NodeProto& n) {
  for (int i = 1; i < n.output_size(); ++i)
    if (!n.output(i).empty() && n.op_type() != "Dropout")
      fail(n, "only its first output may be used");
  define(n, data(n, 0), n.input(0));
}

void Importer::shape_of(const onnx::NodeProto& n) {
  const Value& v = data(n, 0);
  Const r;
  r.elem_type = onnx::TensorProto::INT64;
  const double b = net_.file_batch > 0 ? net_.file_batch : 1;
  if (v.flat)
    r.v = {b, double(v.shape.size())};
  else
    r.v = {b, double(v.shape.c), double(v.shape.h), double(v.shape.w)};
  r.dims = {int64_t(r.v.size())};
  graph_.consts[n.output(0)] = std::move(r);
}

void Importer::flatten(const onnx::NodeProto& n) {
  Value v = data(n, 0);
  const int64_t total = v.shape.size();
  if (n.op_type() == "Flatten") {
    const int64_t axis = attr_int(n, "axis", 1);
    if (axis != 1 && !(v.flat && axis == -1))
      fail(n, "axis " + std::to_string(axis) + ": only axis = 1 (keep the batch) is supported");
  } else {
    const Const& s = konst(n, 1, "shape");
    std::vector<int64_t> cur_dims = v.flat
                                        ? std::vector<int64_t>{1, total}
                                        : std::vector<int64_t>{1, v.shape.c, v.shape.h, v.shape.w};
    std::vector<int64_t> t(s.v.begin(), s.v.end());
    int64_t known = 1;
    int minus = -1;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == 0 && i < cur_dims.size()) t[i] = cur_dims[i];
      if (t[i] == -1) {
        if (minus >= 0) fail(n, "more than one -1 in the shape");
        minus = int(i);
      } else {
        known *= t[i];
      }
    }
    const int64_t batch = net_.file_batch > 0 ? net_.file_batch : 1;
    if (minus >= 0 && known > 0) t[size_t(minus)] = (batch * total) / known;
    const bool to_flat = t.size() == 2 && t[0] * t[1] == batch * total && t[1] == total;
    const bool same = t.size() == 4 && t[1] == v.shape.c && t[2] == v.shape.h && t[3] == v.shape.w;
    if (!to_flat && !same)
      fail(n, "reshaping to " + dims_str(std::vector<int64_t>(s.v.begin(), s.v.end())) +
                  " is not supported (only flattening [N, C, H, W] to [N, C*H*W])");
    if (same) {
      v.flat = false;
      define(n, v, n.input(0));
      return;
    }
  }
  v.flat = true;
  define(n, v, n.input(0));
}

}  // namespace tpu::cnn::frontend

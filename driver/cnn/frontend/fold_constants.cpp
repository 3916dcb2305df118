// SPDX-License-Identifier: Apache-2.0
// Constant folding: a node whose inputs are all constants is evaluated at import (its op's
// `fold` entry in the converter table, op_table.cpp); its output is a constant for the nodes
// after it (shape computations, DequantizeLinear of integer weights, ...).
#include <onnx/onnx_pb.h>

#include "frontend/importer.h"
#include "frontend/op_table.h"
#include "onnx_import.h"

namespace tpu::cnn::frontend {

void Importer::fold(const onnx::NodeProto& n) {
  // Folding ignores the domain: the folded ops are the default domain's.
  const OpConverter* c = find_converter("", n.op_type());
  if (!c || !c->fold) fail(n, "is not supported (on constants). Supported ops: " + supported_ops());
  consts_[n.output(0)] = c->fold(*this, n);
}

// Identity and Cast (a Cast loses the quantized origin).
Const Importer::fold_copy(const onnx::NodeProto& n) const {
  Const r = konst(n, 0, "input");
  if (n.op_type() == "Cast") r.quantized = false;
  return r;
}

Const Importer::fold_dequantize(const onnx::NodeProto& n) const {
  const Const& x = konst(n, 0, "x");
  const Const& s = konst(n, 1, "x_scale");
  const Const* z = opt_konst(n, 2, "x_zero_point");
  int axis = int(attr_int(n, "axis", 1));
  if (axis < 0) axis += int(x.dims.size());
  if (s.numel() != 1 &&
      (axis < 0 || axis >= int(x.dims.size()) || s.numel() != x.dims[size_t(axis)]))
    fail(n, "scale of shape " + dims_str(s.dims) + " does not match axis " + std::to_string(axis) +
                " of " + dims_str(x.dims));
  if (z && z->numel() != s.numel()) fail(n, "zero point and scale have different sizes");
  Const r;
  r.dims = x.dims;
  r.elem_type = onnx::TensorProto::FLOAT;
  r.quantized = true;
  r.axis = axis;
  r.scale = s.v;
  r.zp = z ? std::vector<int64_t>(z->v.begin(), z->v.end()) : std::vector<int64_t>(s.v.size(), 0);
  r.q.assign(x.v.begin(), x.v.end());
  r.v.resize(x.v.size());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t ch = r.channel_of(i);
    // As ONNX computes it: float32 (x - zp) * scale.
    r.v[size_t(i)] = double(float(double(r.q[size_t(i)] - r.zp[ch])) * float(r.scale[ch]));
  }
  return r;
}

Const Importer::fold_gather(const onnx::NodeProto& n) const {
  const Const& d = konst(n, 0, "data");
  const Const& idx = konst(n, 1, "indices");
  if (d.dims.size() != 1 || attr_int(n, "axis", 0) != 0)
    fail(n, "only 1-D constant Gather is supported");
  Const r;
  for (double i : idx.v) {
    int64_t k = int64_t(i);
    if (k < 0) k += d.numel();
    if (k < 0 || k >= d.numel()) fail(n, "index out of range");
    r.v.push_back(d.v[size_t(k)]);
  }
  r.dims = idx.dims;
  r.elem_type = d.elem_type;
  return r;
}

// Squeeze and Unsqueeze.
Const Importer::fold_squeeze(const onnx::NodeProto& n) const {
  Const r = konst(n, 0, "data");
  int64_t count = 0;
  if (n.input_size() > 1)
    count = konst(n, 1, "axes").numel();
  else
    count = int64_t(attr_ints(n, "axes").size());
  r.quantized = false;
  if (n.op_type() == "Unsqueeze") {
    if (r.dims.empty() && count == 1)
      r.dims = {1};
    else
      r.dims.insert(r.dims.begin(), size_t(count), 1);
  } else {
    std::vector<int64_t> d;
    for (int64_t x : r.dims)
      if (x != 1) d.push_back(x);
    r.dims = d;
  }
  return r;
}

Const Importer::fold_concat(const onnx::NodeProto& n) const {
  Const r;
  for (int i = 0; i < n.input_size(); ++i) {
    const Const& c = konst(n, i, "input");
    r.v.insert(r.v.end(), c.v.begin(), c.v.end());
    r.elem_type = c.elem_type;
  }
  r.dims = {int64_t(r.v.size())};
  return r;
}

}  // namespace tpu::cnn::frontend

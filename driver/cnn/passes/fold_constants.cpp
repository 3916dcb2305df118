// SPDX-License-Identifier: Apache-2.0
#include "passes/fold_constants.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/op_table.h"
#include "onnx_import.h"

namespace tpu::cnn::passes {

using frontend::Const;
using frontend::Graph;

namespace {

// Input i of n, a constant (the pass folds only nodes whose inputs all are).
const Const& konst(const Graph& g, const onnx::NodeProto& n, int i, const char* what) {
  if (i >= n.input_size() || n.input(i).empty())
    frontend::fail_node(g.name, n, std::string("missing input ") + what);
  return g.consts.at(n.input(i));
}

const Const* opt_konst(const Graph& g, const onnx::NodeProto& n, int i) {
  if (i >= n.input_size() || n.input(i).empty()) return nullptr;
  return &g.consts.at(n.input(i));
}

bool known_domain(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx" || n.domain() == frontend::kMicrosoftDomain;
}

}  // namespace

Const fold_node(const Graph& g, const onnx::NodeProto& n) {
  // Folding ignores the domain: the folded ops are the default domain's.
  const frontend::OpConverter* c = frontend::find_converter("", n.op_type());
  if (!c || !c->fold)
    frontend::fail_node(g.name, n,
                        "is not supported (on constants). Supported ops: " + supported_ops());
  return c->fold(g, n);
}

Graph fold_constants(Graph g) {
  std::vector<const onnx::NodeProto*> left;
  std::set<std::string> read;  // by the nodes before
  for (const onnx::NodeProto* np : g.nodes) {
    const onnx::NodeProto& n = *np;
    const bool read_before = n.output_size() > 0 && read.count(n.output(0)) > 0;
    read.insert(n.input().begin(), n.input().end());
    const frontend::OpConverter* c = frontend::find_converter("", n.op_type());
    bool all_const = true;
    for (const auto& in : n.input()) all_const &= in.empty() || g.consts.count(in) > 0;
    const bool source = c && c->source;  // Constant: reads nothing
    if (!known_domain(n) || n.output_size() == 0 || n.output(0).empty() || read_before ||
        !(source || (all_const && n.input_size() > 0))) {
      left.push_back(np);
      continue;
    }
    try {
      Const r = fold_node(g, n);
      g.consts[n.output(0)] = std::move(r);
    } catch (const Error&) {
      left.push_back(np);  // refused: the importer reports it where it stands (fold_node)
    }
  }
  g.nodes = std::move(left);
  return g;
}

Const fold_constant(const Graph& g, const onnx::NodeProto& n) {
  using frontend::find_attr;
  Const c;
  if (const auto* a = find_attr(n, "value")) {
    c = frontend::read_tensor(a->t(), "Constant '" + frontend::node_name(n) + "'");
  } else if (const auto* f = find_attr(n, "value_float")) {
    c.v = {double(f->f())};
  } else if (const auto* fs = find_attr(n, "value_floats")) {
    c.v.assign(fs->floats().begin(), fs->floats().end());
    c.dims = {int64_t(c.v.size())};
  } else if (const auto* i = find_attr(n, "value_int")) {
    c.v = {double(i->i())};
    c.elem_type = onnx::TensorProto::INT64;
  } else if (const auto* is = find_attr(n, "value_ints")) {
    for (int64_t x : is->ints()) c.v.push_back(double(x));
    c.dims = {int64_t(c.v.size())};
    c.elem_type = onnx::TensorProto::INT64;
  } else {
    frontend::fail_node(g.name, n, "only tensor, float(s) and int(s) constants are supported");
  }
  return c;
}

// Identity and Cast (a Cast loses the quantized origin).
Const fold_copy(const Graph& g, const onnx::NodeProto& n) {
  Const r = konst(g, n, 0, "input");
  if (n.op_type() == "Cast") r.quantized = false;
  return r;
}

Const fold_dequantize(const Graph& g, const onnx::NodeProto& n) {
  using frontend::dims_str;
  const Const& x = konst(g, n, 0, "x");
  const Const& s = konst(g, n, 1, "x_scale");
  const Const* z = opt_konst(g, n, 2);
  int axis = int(frontend::attr_int(n, "axis", 1));
  if (axis < 0) axis += int(x.dims.size());
  if (s.numel() != 1 &&
      (axis < 0 || axis >= int(x.dims.size()) || s.numel() != x.dims[size_t(axis)]))
    frontend::fail_node(g.name, n,
                        "scale of shape " + dims_str(s.dims) + " does not match axis " +
                            std::to_string(axis) + " of " + dims_str(x.dims));
  if (z && z->numel() != s.numel())
    frontend::fail_node(g.name, n, "zero point and scale have different sizes");
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

Const fold_gather(const Graph& g, const onnx::NodeProto& n) {
  const Const& d = konst(g, n, 0, "data");
  const Const& idx = konst(g, n, 1, "indices");
  if (d.dims.size() != 1 || frontend::attr_int(n, "axis", 0) != 0)
    frontend::fail_node(g.name, n, "only 1-D constant Gather is supported");
  Const r;
  for (double i : idx.v) {
    int64_t k = int64_t(i);
    if (k < 0) k += d.numel();
    if (k < 0 || k >= d.numel()) frontend::fail_node(g.name, n, "index out of range");
    r.v.push_back(d.v[size_t(k)]);
  }
  r.dims = idx.dims;
  r.elem_type = d.elem_type;
  return r;
}

// Squeeze and Unsqueeze.
Const fold_squeeze(const Graph& g, const onnx::NodeProto& n) {
  Const r = konst(g, n, 0, "data");
  int64_t count = 0;
  if (n.input_size() > 1)
    count = konst(g, n, 1, "axes").numel();
  else
    count = int64_t(frontend::attr_ints(n, "axes").size());
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

Const fold_concat(const Graph& g, const onnx::NodeProto& n) {
  Const r;
  for (int i = 0; i < n.input_size(); ++i) {
    const Const& c = konst(g, n, i, "input");
    r.v.insert(r.v.end(), c.v.begin(), c.v.end());
    r.elem_type = c.elem_type;
  }
  r.dims = {int64_t(r.v.size())};
  return r;
}

}  // namespace tpu::cnn::passes

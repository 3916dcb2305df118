// SPDX-License-Identifier: Apache-2.0
// The importer's driver: the graph input, the walk over the nodes left by constant folding (each
// through its entry of the converter table, op_table.cpp), and the values that tie nodes to
// layers and fusion tails.
#include "frontend/importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/op_table.h"
#include "onnx_import.h"
#include "passes/fold_affine.h"
#include "passes/fold_constants.h"
#include "passes/fuse_layers.h"
#include "passes/network_passes.h"

namespace tpu::cnn::frontend {

Importer::Importer(const onnx::ModelProto& model, std::string name) : model_(model) {
  net_.name = std::move(name);
  graph_.name = net_.name;
}

[[noreturn]] void fail_node(const std::string& graph, const onnx::NodeProto& n,
                            const std::string& msg) {
  throw Error(graph + ": node '" + node_name(n) + "' (" + n.op_type() + "): " + msg);
}

std::string node_name(const onnx::NodeProto& n) {
  if (!n.name().empty()) return n.name();
  return n.output_size() ? n.output(0) : std::string("?");
}

Network Importer::run() {
  if (!model_.has_graph()) fail_model("the file holds no graph (truncated or not an ONNX model?)");
  const auto& g = model_.graph();
  if (g.node_size() == 0) fail_model("the graph has no nodes (truncated or empty model?)");
  for (const auto& opset : model_.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
  for (const auto& t : g.initializer())
    graph_.consts[t.name()] = read_tensor(t, "initializer '" + t.name() + "'");
  find_input(g);
  if (g.output_size() != 1)
    fail_model("the graph has " + std::to_string(g.output_size()) +
               " outputs; exactly one (the logits) is supported");
  const std::string out = g.output(0).name();
  for (const auto& n : g.node())
    for (const auto& in : n.input())
      if (!in.empty()) ++uses_[in];
  ++uses_[out];
  for (const auto& n : g.node()) graph_.nodes.push_back(&n);
  graph_ = passes::fold_constants(std::move(graph_));
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const size_t consts = graph_.consts.size();
    try {
      node(*graph_.nodes[i]);
    } catch (const Error&) {
      // Errors in node order: a fold of an earlier node that the fold pass refuses comes first.
      passes::fold_affine(net_);
      throw;
    }
    // A converter made a constant (Shape): fold what reads it in the nodes left.
    if (graph_.consts.size() != consts) {
      graph_.nodes.erase(graph_.nodes.begin(), graph_.nodes.begin() + ptrdiff_t(i) + 1);
      graph_ = passes::fold_constants(std::move(graph_));
      i = size_t(-1);
    }
  }
  // The pending steps: the folds join the layers they follow (passes/fold_affine.h), then the
  // activation and max-pool steps the layers computing their inputs and the Quantize steps are
  // paired (passes/fuse_layers.h).
  passes::FusedNetwork fused = passes::resolve_steps(std::move(net_));
  net_ = std::move(fused.net);
  // (An integer input that no QLinear op or DequantizeLinear declared: the integers.)
  if (int_input_) passes::quantize_integer_input(net_, int_input_unsigned_);
  auto it = values_.find(out);
  if (it == values_.end()) {
    if (graph_.consts.count(out)) fail_model("the graph output '" + out + "' is a constant");
    fail_model("the graph output '" + out + "' is not produced by any node");
  }
  Value v = it->second;
  v.parts = passes::parts_in(fused, v.parts);
  const int last = materialize(v, out);
  if (last != int(net_.layers.size()) - 1)
    fail_model("the graph output '" + out + "' is computed by layer '" +
               net_.layers[size_t(last)].name + "', but layers after it ('" +
               net_.layers.back().name + "') do not lead to the output");
  passes::check_raw_outputs(net_);
  net_.output_name = out;
  return std::move(net_);
}

void Importer::fail_model(const std::string& msg) const { throw Error(net_.name + ": " + msg); }

void Importer::fail(const onnx::NodeProto& n, const std::string& msg) const {
  fail_node(net_.name, n, msg);
}

std::string Importer::node_name(const onnx::NodeProto& n) { return frontend::node_name(n); }

void Importer::find_input(const onnx::GraphProto& g) {
  const onnx::ValueInfoProto* in = nullptr;
  for (const auto& vi : g.input()) {
    if (graph_.consts.count(vi.name())) continue;  // old IR: initializers are listed as inputs
    if (in)
      fail_model("the graph has more than one input ('" + in->name() + "', '" + vi.name() +
                 "'); one image input is supported");
    in = &vi;
  }
  if (!in) fail_model("the graph has no input");
  net_.input_name = in->name();
  if (!in->type().has_tensor_type()) fail_model("input '" + in->name() + "' is not a tensor");
  const auto& tt = in->type().tensor_type();
  // A uint8 / int8 input is already quantized: the first QLinear op declares its scale and zero
  // point (else it is scale 1, zero point 0: the integers themselves).
  const bool int_input =
      tt.elem_type() == onnx::TensorProto::UINT8 || tt.elem_type() == onnx::TensorProto::INT8;
  if (tt.elem_type() != onnx::TensorProto::FLOAT && !int_input)
    fail_model("input '" + in->name() + "' is " + type_name(tt.elem_type()) +
               "; a float32 NCHW input (or a uint8 / int8 one, already quantized) is expected");
  std::vector<int64_t> d;
  std::string shape = "[";
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& dim = tt.shape().dim(i);
    d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    shape += (i ? ", " : "") + (dim.has_dim_value()       ? std::to_string(dim.dim_value())
                                : dim.dim_param().empty() ? "?"
                                                          : dim.dim_param());
  }
  shape += "]";
  if (d.empty() || d.size() > 4)
    fail_model("input '" + in->name() + "' has shape " + shape +
               "; expected NCHW [N, C, H, W] (or [N, C, L], [N, features], [N])");
  for (size_t i = 1; i < d.size(); ++i) {
    if (d[i] <= 0)
      fail_model("input '" + in->name() + "' has shape " + shape +
                 ": C, H and W must be fixed numbers");
    if (d[i] > 65535)
      fail_model("input '" + in->name() + "' has shape " + shape +
                 ": dimensions above 65535 are not supported");
  }
  if (d[0] > 65535)
    fail_model("input '" + in->name() + "' has shape " + shape + ": batch above 65535");
  net_.file_batch = d[0] > 0 ? int(d[0]) : 0;
  Value v;
  v.parts = {kNetworkInput};
  if (d.size() == 4) {
    net_.input = {int(d[1]), int(d[2]), int(d[3])};
  } else if (d.size() == 3) {
    net_.input = {int(d[1]), 1, int(d[2])};  // [N, C, L]: an image of one row
    input_rank3_ = true;
  } else if (d.size() == 1) {
    net_.input = {1, 1, 1};  // [N]: N images of one value (elementwise ops)
    v.flat = true;
  } else {
    net_.input = {int(d[1]), 1, 1};
    v.flat = true;
  }
  v.shape = net_.input;
  if (int_input) {
    v.is_int = true;
    int_input_unsigned_ = tt.elem_type() == onnx::TensorProto::UINT8;
    int_input_ = true;
  }
  values_[in->name()] = v;
  input_tail_ = in->name();
}

bool Importer::is_const(const std::string& name) const { return graph_.consts.count(name) > 0; }

const Const& Importer::konst(const onnx::NodeProto& n, int i, const char* what) const {
  if (i >= n.input_size() || n.input(i).empty()) fail(n, std::string("missing input ") + what);
  auto it = graph_.consts.find(n.input(i));
  if (it == graph_.consts.end() && !values_.count(n.input(i)))
    fail(n, std::string(what) + ": tensor '" + n.input(i) +
                "' is not defined (no initializer, graph input or earlier node produces it)");
  if (it == graph_.consts.end())
    fail(n, std::string(what) + " '" + n.input(i) + "' must be a constant (initializer)");
  return it->second;
}

const Const* Importer::opt_konst(const onnx::NodeProto& n, int i, const char* what) const {
  if (i >= n.input_size() || n.input(i).empty()) return nullptr;
  return &konst(n, i, what);
}

const Importer::Value& Importer::data(const onnx::NodeProto& n, int i) const {
  if (i >= n.input_size() || n.input(i).empty()) fail(n, "missing data input " + std::to_string(i));
  auto it = values_.find(n.input(i));
  if (it == values_.end()) {
    if (is_const(n.input(i)))
      fail(n, "input '" + n.input(i) + "' is a constant; a data tensor is expected");
    fail(n, "tensor '" + n.input(i) +
                "' is not defined (no initializer, graph input or earlier node produces it)");
  }
  return it->second;
}

int Importer::channels_of(int part) const {
  return part == kNetworkInput ? net_.input.c : net_.layers[size_t(part)].out.c;
}

void Importer::node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const bool ms = n.domain() == kMicrosoftDomain;
  if (!n.domain().empty() && n.domain() != "ai.onnx" && !ms)
    fail(n, "operator domain '" + n.domain() +
                "' is not supported. Supported ops: " + supported_ops());
  if (n.output_size() == 0 || n.output(0).empty()) fail(n, "has no output");
  const OpConverter* plain = find_converter("", op);
  bool any_data = false, all_const = true;
  for (const auto& in : n.input()) {
    if (in.empty()) continue;
    if (values_.count(in))
      any_data = true;
    else if (!is_const(in))
      all_const = false;
  }
  if (!any_data) {
    // Every input a constant (or a Constant), and the folding pass left it: an earlier node reads
    // its output (as an input its converter ignores), or its folder refuses it. Folded here, where
    // it stands, or refused in node order.
    if ((all_const && n.input_size() > 0) || (plain && plain->source)) {
      Const r = passes::fold_node(graph_, n);
      graph_.consts[n.output(0)] = std::move(r);
      return;
    }
    const std::string undefined =
        "', which is not defined (no initializer, graph input or earlier node produces it)";
    for (const auto& in : n.input())
      if (!in.empty() && !is_const(in)) fail(n, "reads tensor '" + in + undefined);
    fail(n, "has no input");
  }
  for (const auto& in : n.input()) {
    auto it = values_.find(in);
    if (it != values_.end() && it->second.padded() && !(plain && plain->takes_pad))
      fail(n, "reads '" + in +
                  "', the output of a Pad; a Pad is supported only before a Conv or an AveragePool "
                  "(it becomes their padding)");
  }
  const OpConverter* c = ms ? find_converter(kMicrosoftDomain, op) : plain;
  if (c && c->convert) return c->convert(*this, n);
  if (ms)
    fail(n,
         "operator com.microsoft." + op + " is not supported. Supported ops: " + supported_ops());
  fail(n, "is not supported. Supported ops: " + supported_ops());
}

int Importer::fusable(const std::string& name) const {
  auto it = tail_of_.find(name);
  if (it == tail_of_.end()) return -1;
  auto u = uses_.find(name);
  return u != uses_.end() && u->second == 1 ? it->second : -1;
}

void Importer::define(const onnx::NodeProto& n, const Value& v, const std::string& from) {
  values_[n.output(0)] = v;
  auto it = tail_of_.find(from);
  if (!from.empty() && it != tail_of_.end() && fusable(from) >= 0)
    tail_of_[n.output(0)] = it->second;
  if (!from.empty() && from == input_tail_) input_tail_ = n.output(0);
}

void Importer::new_layer_output(const onnx::NodeProto& n, int layer, bool flat) {
  Value v;
  v.parts = {layer};
  v.shape = net_.layers[size_t(layer)].out;
  v.flat = flat;
  values_[n.output(0)] = v;
  tail_of_[n.output(0)] = layer;
}

Layer Importer::start_layer(const onnx::NodeProto& n, LayerKind kind, const Value& v) {
  Layer l;
  l.kind = kind;
  l.name = node_name(n);
  l.op = n.op_type();
  l.inputs = v.parts;
  for (int p : v.parts) l.input_channels.push_back(channels_of(p));
  l.in = v.shape;
  return l;
}

int Importer::push_layer(const onnx::NodeProto& n, Layer&& l) {
  try {
    l.infer_shapes();
  } catch (const Error& e) {
    fail(n, e.what());
  }
  net_.layers.push_back(std::move(l));
  return int(net_.layers.size()) - 1;
}

int Importer::materialize(const Value& v, const std::string& name) {
  if (v.parts.size() == 1) {
    // The input itself (a graph of Identity, Dropout, Flatten ...): one Copy layer carries it.
    if (v.parts[0] == kNetworkInput) return copy_layer(v, name, "Identity");
    if (net_.layers[size_t(v.parts[0])].step.kind == StepKind::None) return v.parts[0];
    // A layer holding a pending step may leave as several parts (a max-pool joining each part
    // of a concatenation, a QLinearConcat whose parts keep their quantization): a Copy holding
    // a OneTensor step, which the fusion walk (passes/concat_steps.h) keeps only then.
    const int id = copy_layer(v, name, "Concat");
    net_.layers[size_t(id)].step.kind = StepKind::OneTensor;
    return id;
  }
  return copy_layer(v, name, "Concat");
}

int Importer::copy_layer(const Value& v, const std::string& name, const std::string& op) {
  Layer l;
  l.kind = LayerKind::Copy;
  l.name = name;
  l.op = op;
  l.inputs = v.parts;
  for (int p : v.parts) l.input_channels.push_back(channels_of(p));
  l.in = v.shape;
  if (v.quant) l.out_quant = v.quant;
  l.infer_shapes();
  net_.layers.push_back(std::move(l));
  return int(net_.layers.size()) - 1;
}

}  // namespace tpu::cnn::frontend

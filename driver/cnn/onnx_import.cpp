// SPDX-License-Identifier: Apache-2.0
#include "onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace tpu::cnn {

std::string supported_ops() {
  return "Conv (groups, depthwise, dilations), QLinearConv, Gemm, MatMul, QLinearMatMul, Add (of "
         "two "
         "tensors, or a bias), QLinearAdd, Sub/Mul/Div by constants (folded into the layer before, "
         "or "
         "input preprocessing), Concat (channels), QLinearConcat, BatchNormalization (after "
         "Conv/Gemm), "
         "Relu, Clip, Sigmoid, QLinearSigmoid, Tanh, LeakyRelu, QLinearLeakyRelu, HardSigmoid, "
         "HardSwish "
         "(or x * HardSigmoid(x)), PRelu, MaxPool, AveragePool, QLinearAveragePool, "
         "GlobalAveragePool, QLinearGlobalAveragePool, ReduceMean (over H and W), Flatten, Reshape "
         "(flattening), Squeeze/Unsqueeze (of 1x1 H and W), Pad (zeros, before a Conv or "
         "AveragePool), "
         "Softmax/LogSoftmax (last, on the host), Identity, Dropout, QuantizeLinear, "
         "DequantizeLinear, Constant, "
         "Shape/Gather/Unsqueeze/Concat/Cast (on constants)";
}

namespace {

// A constant tensor (initializer, Constant node or folded), values as doubles.
struct Const {
  std::vector<int64_t> dims;
  std::vector<double> v;  // real values (after dequantization)
  int elem_type = 0;
  // Quantized origin: DequantizeLinear of an integer constant, or a QLinear op's weights.
  bool quantized = false;
  std::vector<int64_t> q;     // the integers
  std::vector<double> scale;  // 1 (per tensor) or dims[axis] values
  std::vector<int64_t> zp;    // as scale
  int axis = 0;

  int64_t numel() const { return int64_t(v.size()); }
  // Index into scale/zp of element `flat`.
  size_t channel_of(int64_t flat) const {
    if (scale.size() <= 1) return 0;
    int64_t stride = 1;
    for (size_t d = size_t(axis) + 1; d < dims.size(); ++d) stride *= dims[d];
    return size_t((flat / stride) % dims[size_t(axis)]);
  }
};

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

const char* type_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
      return "float";
    case onnx::TensorProto::UINT8:
      return "uint8";
    case onnx::TensorProto::INT8:
      return "int8";
    case onnx::TensorProto::INT16:
      return "int16";
    case onnx::TensorProto::UINT16:
      return "uint16";
    case onnx::TensorProto::INT32:
      return "int32";
    case onnx::TensorProto::INT64:
      return "int64";
    case onnx::TensorProto::DOUBLE:
      return "double";
    case onnx::TensorProto::BOOL:
      return "bool";
    case onnx::TensorProto::FLOAT16:
      return "float16";
    default:
      return "unsupported type";
  }
}

template <typename T>
void raw_values(const std::string& raw, int64_t n, std::vector<double>* out) {
  out->resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, raw.data() + size_t(i) * sizeof(T), sizeof(T));
    (*out)[size_t(i)] = double(x);
  }
}

// A NaN or infinite value in a float tensor would silently change the float model's results
// (or give a NaN requantization multiplier): refused, naming the tensor and the element.
void check_finite(const Const& c, const std::string& what) {
  for (size_t i = 0; i < c.v.size(); ++i) {
    if (std::isfinite(c.v[i])) continue;
    std::string at;
    for (size_t d = c.dims.size(), rest = i; d-- > 0;) {
      const size_t dim = size_t(std::max<int64_t>(c.dims[d], 1));
      at = std::to_string(rest % dim) + (at.empty() ? "" : ",") + at;
      rest /= dim;
    }
    throw Error(what + ": element " + std::to_string(i) + (at.empty() ? "" : " [" + at + "]") +
                " of shape " + dims_str(c.dims) + " is " +
                (std::isnan(c.v[i]) ? "NaN"
                 : c.v[i] > 0       ? "+Inf"
                                    : "-Inf") +
                " (expected finite numbers)");
  }
}

Const read_tensor(const onnx::TensorProto& t, const std::string& what) {
  Const c;
  c.elem_type = t.data_type();
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw Error(what + ": tensor data stored in an external file is not supported");
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > (int64_t(1) << 31)) throw Error(what + ": bad dimension " + std::to_string(d));
    c.dims.push_back(d);
    n *= d;
    if (n > (int64_t(1) << 31)) throw Error(what + ": tensor too large");
  }
  const std::string& raw = t.raw_data();
  size_t elem = 0;
  switch (c.elem_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
      elem = 4;
      break;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
      elem = 8;
      break;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      elem = 1;
      break;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      elem = 2;
      break;
    default:
      throw Error(what + ": data type " + std::to_string(c.elem_type) + " (" +
                  type_name(c.elem_type) +
                  ") is not supported (float, double, int8, uint8, int16, uint16, int32, int64)");
  }
  if (t.has_raw_data()) {
    if (raw.size() != size_t(n) * elem)
      throw Error(what + ": " + std::to_string(raw.size()) + " bytes of data for shape " +
                  dims_str(c.dims) + " of " + type_name(c.elem_type) + ", expected " +
                  std::to_string(size_t(n) * elem) + " (truncated or corrupt file?)");
    switch (c.elem_type) {
      case onnx::TensorProto::FLOAT:
        raw_values<float>(raw, n, &c.v);
        break;
      case onnx::TensorProto::DOUBLE:
        raw_values<double>(raw, n, &c.v);
        break;
      case onnx::TensorProto::INT32:
        raw_values<int32_t>(raw, n, &c.v);
        break;
      case onnx::TensorProto::INT64:
        raw_values<int64_t>(raw, n, &c.v);
        break;
      case onnx::TensorProto::INT8:
        raw_values<int8_t>(raw, n, &c.v);
        break;
      case onnx::TensorProto::UINT8:
      case onnx::TensorProto::BOOL:
        raw_values<uint8_t>(raw, n, &c.v);
        break;
      case onnx::TensorProto::INT16:
        raw_values<int16_t>(raw, n, &c.v);
        break;
      case onnx::TensorProto::UINT16:
        raw_values<uint16_t>(raw, n, &c.v);
        break;
    }
    check_finite(c, what);
    return c;
  }
  auto check = [&](int64_t have) {
    if (have != n)
      throw Error(what + ": " + std::to_string(have) + " values for shape " + dims_str(c.dims) +
                  ", expected " + std::to_string(n) + " (truncated or corrupt file?)");
  };
  switch (c.elem_type) {
    case onnx::TensorProto::FLOAT:
      check(t.float_data_size());
      c.v.assign(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto::DOUBLE:
      check(t.double_data_size());
      c.v.assign(t.double_data().begin(), t.double_data().end());
      break;
    case onnx::TensorProto::INT64:
      check(t.int64_data_size());
      for (int64_t x : t.int64_data()) c.v.push_back(double(x));
      break;
    default:
      check(t.int32_data_size());
      for (int32_t x : t.int32_data()) c.v.push_back(double(x));
  }
  check_finite(c, what);
  return c;
}

// Node attributes.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : def;
}
float attr_float(const onnx::NodeProto& n, const std::string& name, float def) {
  const auto* a = find_attr(n, name);
  return a ? a->f() : def;
}
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}
std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : def;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string name) : model_(model) {
    net_.name = std::move(name);
  }

  Network run() {
    if (!model_.has_graph())
      fail_model("the file holds no graph (truncated or not an ONNX model?)");
    const auto& g = model_.graph();
    if (g.node_size() == 0) fail_model("the graph has no nodes (truncated or empty model?)");
    for (const auto& opset : model_.opset_import())
      if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
    for (const auto& t : g.initializer())
      consts_[t.name()] = read_tensor(t, "initializer '" + t.name() + "'");
    find_input(g);
    if (g.output_size() != 1)
      fail_model("the graph has " + std::to_string(g.output_size()) +
                 " outputs; exactly one (the logits) is supported");
    const std::string out = g.output(0).name();
    for (const auto& n : g.node())
      for (const auto& in : n.input())
        if (!in.empty()) ++uses_[in];
    ++uses_[out];
    for (int i = 0; i < g.node_size(); ++i) node(g.node(i));
    if (int_input_ && !net_.input_quant) {
      TensorQuant q;
      q.is_unsigned = int_input_unsigned_;
      net_.input_quant = q;
      // Copies (max pooling, Identity ...) of integers keep their quantization.
      for (auto& l : net_.layers) {
        if (l.kind != LayerKind::Copy || l.out_quant || l.act != Activation::None) continue;
        std::optional<TensorQuant> in;
        bool same = true;
        for (int p : l.inputs) {
          const std::optional<TensorQuant> h = quant_ref(p);
          if (!h || (in && !(*in == *h)))
            same = false;
          else
            in = h;
        }
        if (same && in) l.out_quant = in;
      }
    }
    auto it = values_.find(out);
    if (it == values_.end()) {
      if (consts_.count(out)) fail_model("the graph output '" + out + "' is a constant");
      fail_model("the graph output '" + out + "' is not produced by any node");
    }
    Value v = it->second;
    const int last = materialize(v, out);
    if (last != int(net_.layers.size()) - 1)
      fail_model("the graph output '" + out + "' is computed by layer '" +
                 net_.layers[size_t(last)].name + "', but layers after it ('" +
                 net_.layers.back().name + "') do not lead to the output");
    net_.output_name = out;
    return std::move(net_);
  }

 private:
  // A data tensor of the graph: the outputs of some layers (or the network input) concatenated
  // on channels, with its shape (one image) and, between QuantizeLinear and DequantizeLinear,
  // its quantization.
  struct Value {
    std::vector<int> parts;
    Shape3 shape;
    bool flat = false;  // [N, features] (flattened in C, H, W order)
    bool is_int = false;
    std::optional<TensorQuant> quant;
    int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;  // a Pad with zeros the next Conv absorbs
    bool padded() const { return pad_t || pad_l || pad_b || pad_r; }
  };

  bool int_input_ = false, int_input_unsigned_ = false, input_rank3_ = false;
  // Concat outputs -> the names of their inputs, each one layer's whole output (max-pooling of
  // the concatenation fuses into those layers).
  std::map<std::string, std::vector<std::string>> concat_inputs_;

  [[noreturn]] void fail_model(const std::string& msg) const {
    throw Error(net_.name + ": " + msg);
  }
  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& msg) const {
    throw Error(net_.name + ": node '" + node_name(n) + "' (" + n.op_type() + "): " + msg);
  }
  static std::string node_name(const onnx::NodeProto& n) {
    if (!n.name().empty()) return n.name();
    return n.output_size() ? n.output(0) : std::string("?");
  }

  void find_input(const onnx::GraphProto& g) {
    const onnx::ValueInfoProto* in = nullptr;
    for (const auto& vi : g.input()) {
      if (consts_.count(vi.name())) continue;  // old IR: initializers are listed as inputs
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

  bool is_const(const std::string& name) const { return consts_.count(name) > 0; }
  const Const& konst(const onnx::NodeProto& n, int i, const char* what) const {
    if (i >= n.input_size() || n.input(i).empty()) fail(n, std::string("missing input ") + what);
    auto it = consts_.find(n.input(i));
    if (it == consts_.end() && !values_.count(n.input(i)))
      fail(n, std::string(what) + ": tensor '" + n.input(i) +
                  "' is not defined (no initializer, graph input or earlier node produces it)");
    if (it == consts_.end())
      fail(n, std::string(what) + " '" + n.input(i) + "' must be a constant (initializer)");
    return it->second;
  }
  const Const* opt_konst(const onnx::NodeProto& n, int i, const char* what) const {
    if (i >= n.input_size() || n.input(i).empty()) return nullptr;
    return &konst(n, i, what);
  }
  // The data tensor read by input i.
  const Value& data(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size() || n.input(i).empty())
      fail(n, "missing data input " + std::to_string(i));
    auto it = values_.find(n.input(i));
    if (it == values_.end()) {
      if (is_const(n.input(i)))
        fail(n, "input '" + n.input(i) + "' is a constant; a data tensor is expected");
      fail(n, "tensor '" + n.input(i) +
                  "' is not defined (no initializer, graph input or earlier node produces it)");
    }
    return it->second;
  }
  int channels_of(int part) const {
    return part == kNetworkInput ? net_.input.c : net_.layers[size_t(part)].out.c;
  }

  // ---- the per-node dispatcher ------------------------------------------------------------
  void node(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const bool ms = n.domain() == "com.microsoft";
    if (!n.domain().empty() && n.domain() != "ai.onnx" && !ms)
      fail(n, "operator domain '" + n.domain() +
                  "' is not supported. Supported ops: " + supported_ops());
    if (n.output_size() == 0 || n.output(0).empty()) fail(n, "has no output");
    if (op == "Constant") return constant(n);
    bool any_data = false, all_const = true;
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      if (values_.count(in))
        any_data = true;
      else if (!is_const(in))
        all_const = false;
    }
    if (!any_data) {
      if (all_const && n.input_size() > 0) return fold(n);
      for (const auto& in : n.input())
        if (!in.empty() && !is_const(in))
          fail(n, "reads tensor '" + in +
                      "', which is not defined (no initializer, graph input or earlier node "
                      "produces it)");
      fail(n, "has no input");
    }
    for (const auto& in : n.input()) {
      auto it = values_.find(in);
      if (it != values_.end() && it->second.padded() && op != "Conv" && op != "AveragePool" &&
          op != "Pad")
        fail(n,
             "reads '" + in +
                 "', the output of a Pad; a Pad is supported only before a Conv or an AveragePool "
                 "(it becomes their padding)");
    }
    if (ms) {
      if (op == "QLinearAdd") return add(n, true);
      if (op == "QLinearConcat") return concat(n, true);
      if (op == "QLinearGlobalAveragePool") return global_pool(n, true);
      if (op == "QLinearAveragePool") return average_pool(n, true);
      if (op == "QLinearSigmoid" || op == "QLinearLeakyRelu") return activation(n, true);
      fail(n,
           "operator com.microsoft." + op + " is not supported. Supported ops: " + supported_ops());
    }
    if (op == "Shape") return shape_of(n);
    if (op == "Conv" || op == "QLinearConv") return conv(n);
    if (op == "Gemm" || op == "MatMul" || op == "QLinearMatMul") return dense(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return arith(n);
    if (op == "Concat") return concat(n, false);
    if (op == "BatchNormalization") return batch_norm(n);
    if (op == "Relu" || op == "Clip" || op == "Sigmoid" || op == "Tanh" || op == "LeakyRelu" ||
        op == "HardSigmoid" || op == "HardSwish" || op == "PRelu")
      return activation(n, false);
    if (op == "MaxPool") return maxpool(n);
    if (op == "AveragePool") return average_pool(n, false);
    if (op == "GlobalAveragePool" || op == "ReduceMean") return global_pool(n, false);
    if (op == "Flatten" || op == "Reshape") return flatten(n);
    if (op == "Identity" || op == "Dropout") return alias(n);
    if (op == "Pad") return pad(n);
    if (op == "Squeeze" || op == "Unsqueeze") return squeeze(n);
    if (op == "Softmax" || op == "LogSoftmax") return softmax(n);
    if (op == "QuantizeLinear") return quantize_linear(n);
    if (op == "DequantizeLinear") return dequantize_linear(n);
    fail(n, "is not supported. Supported ops: " + supported_ops());
  }

  // ---- values and fusion --------------------------------------------------------------------
  // The layer whose latest output `name` is, when nothing else reads it: later elementwise
  // steps (bias, activation, max-pool) fuse into that layer. -1 otherwise.
  int fusable(const std::string& name) const {
    auto it = tail_of_.find(name);
    if (it == tail_of_.end()) return -1;
    auto u = uses_.find(name);
    return u != uses_.end() && u->second == 1 ? it->second : -1;
  }
  // Defines node output 0 as value v; `from` (a fusable input name) passes the layer's tail on.
  void define(const onnx::NodeProto& n, const Value& v, const std::string& from = "") {
    values_[n.output(0)] = v;
    auto it = tail_of_.find(from);
    if (!from.empty() && it != tail_of_.end() && fusable(from) >= 0)
      tail_of_[n.output(0)] = it->second;
    if (!from.empty() && from == input_tail_) input_tail_ = n.output(0);
  }
  void new_layer_output(const onnx::NodeProto& n, int layer, bool flat) {
    Value v;
    v.parts = {layer};
    v.shape = net_.layers[size_t(layer)].out;
    v.flat = flat;
    values_[n.output(0)] = v;
    tail_of_[n.output(0)] = layer;
  }
  // A layer reading value v (its parts concatenated on channels).
  Layer start_layer(const onnx::NodeProto& n, LayerKind kind, const Value& v) {
    Layer l;
    l.kind = kind;
    l.name = node_name(n);
    l.op = n.op_type();
    l.inputs = v.parts;
    for (int p : v.parts) l.input_channels.push_back(channels_of(p));
    l.in = v.shape;
    return l;
  }
  int push_layer(const onnx::NodeProto& n, Layer&& l) {
    try {
      l.infer_shapes();
    } catch (const Error& e) {
      fail(n, e.what());
    }
    net_.layers.push_back(std::move(l));
    return int(net_.layers.size()) - 1;
  }
  // The single layer computing v: a concatenation of several is copied into one tensor.
  int materialize(const Value& v, const std::string& name) {
    if (v.parts.size() == 1) {
      // The input itself (a graph of Identity, Dropout, Flatten ...): one Copy layer carries it.
      if (v.parts[0] == kNetworkInput) return copy_layer(v, name, "Identity");
      return v.parts[0];
    }
    return copy_layer(v, name, "Concat");
  }
  // A Copy of v's parts into one tensor, quantized as v.quant (a requantization when its parts
  // are quantized otherwise).
  int copy_layer(const Value& v, const std::string& name, const std::string& op) {
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

  // Pad with zeros on H and W (tf2onnx and Keras write it before a Conv): the Conv or
  // AveragePool reading it takes it as its padding.
  void pad(const onnx::NodeProto& n) {
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
    if (p[0] || p[1] || p[4] || p[5])
      fail(n, "pads " + dims_str(p) + ": only H and W may be padded");
    for (int64_t x : p)
      if (x < 0) fail(n, "pads " + dims_str(p) + ": negative pads (cropping) are not supported");
    v.pad_t += int(p[2]);
    v.pad_l += int(p[3]);
    v.pad_b += int(p[6]);
    v.pad_r += int(p[7]);
    values_[n.output(0)] = v;
  }

  // Squeeze / Unsqueeze of the 1x1 spatial dimensions ([N, C, 1, 1] <-> [N, C]).
  void squeeze(const onnx::NodeProto& n) {
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

  // A Softmax of the logits that produces the graph output runs on the host (docs/cnn.md).
  void softmax(const onnx::NodeProto& n) {
    const Value& v = data(n, 0);
    const auto& g = model_.graph();
    const int64_t axis = attr_int(n, "axis", opset_ < 13 ? 1 : -1);
    if (n.output(0) != g.output(0).name())
      fail(
          n,
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

  void alias(const onnx::NodeProto& n) {
    for (int i = 1; i < n.output_size(); ++i)
      if (!n.output(i).empty() && n.op_type() != "Dropout")
        fail(n, "only its first output may be used");
    define(n, data(n, 0), n.input(0));
  }

  void constant(const onnx::NodeProto& n) {
    Const c;
    if (const auto* a = find_attr(n, "value")) {
      c = read_tensor(a->t(), "Constant '" + node_name(n) + "'");
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
      fail(n, "only tensor, float(s) and int(s) constants are supported");
    }
    consts_[n.output(0)] = std::move(c);
  }

  // Nodes that only read constants are evaluated here.
  void fold(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    Const r;
    if (op == "Identity" || op == "Cast") {
      r = konst(n, 0, "input");
      if (op == "Cast") r.quantized = false;
    } else if (op == "DequantizeLinear") {
      const Const& x = konst(n, 0, "x");
      const Const& s = konst(n, 1, "x_scale");
      const Const* z = opt_konst(n, 2, "x_zero_point");
      int axis = int(attr_int(n, "axis", 1));
      if (axis < 0) axis += int(x.dims.size());
      if (s.numel() != 1 &&
          (axis < 0 || axis >= int(x.dims.size()) || s.numel() != x.dims[size_t(axis)]))
        fail(n, "scale of shape " + dims_str(s.dims) + " does not match axis " +
                    std::to_string(axis) + " of " + dims_str(x.dims));
      if (z && z->numel() != s.numel()) fail(n, "zero point and scale have different sizes");
      r.dims = x.dims;
      r.elem_type = onnx::TensorProto::FLOAT;
      r.quantized = true;
      r.axis = axis;
      r.scale = s.v;
      r.zp =
          z ? std::vector<int64_t>(z->v.begin(), z->v.end()) : std::vector<int64_t>(s.v.size(), 0);
      r.q.assign(x.v.begin(), x.v.end());
      r.v.resize(x.v.size());
      for (int64_t i = 0; i < x.numel(); ++i) {
        const size_t ch = r.channel_of(i);
        // As ONNX computes it: float32 (x - zp) * scale.
        r.v[size_t(i)] = double(float(double(r.q[size_t(i)] - r.zp[ch])) * float(r.scale[ch]));
      }
    } else if (op == "Gather") {
      const Const& d = konst(n, 0, "data");
      const Const& idx = konst(n, 1, "indices");
      if (d.dims.size() != 1 || attr_int(n, "axis", 0) != 0)
        fail(n, "only 1-D constant Gather is supported");
      for (double i : idx.v) {
        int64_t k = int64_t(i);
        if (k < 0) k += d.numel();
        if (k < 0 || k >= d.numel()) fail(n, "index out of range");
        r.v.push_back(d.v[size_t(k)]);
      }
      r.dims = idx.dims;
      r.elem_type = d.elem_type;
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      r = konst(n, 0, "data");
      int64_t count = 0;
      if (n.input_size() > 1)
        count = konst(n, 1, "axes").numel();
      else
        count = int64_t(attr_ints(n, "axes").size());
      r.quantized = false;
      if (op == "Unsqueeze") {
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
    } else if (op == "Concat") {
      for (int i = 0; i < n.input_size(); ++i) {
        const Const& c = konst(n, i, "input");
        r.v.insert(r.v.end(), c.v.begin(), c.v.end());
        r.elem_type = c.elem_type;
      }
      r.dims = {int64_t(r.v.size())};
    } else {
      fail(n, "is not supported (on constants). Supported ops: " + supported_ops());
    }
    consts_[n.output(0)] = std::move(r);
  }

  void shape_of(const onnx::NodeProto& n) {
    const Value& v = data(n, 0);
    Const r;
    r.elem_type = onnx::TensorProto::INT64;
    const double b = net_.file_batch > 0 ? net_.file_batch : 1;
    if (v.flat)
      r.v = {b, double(v.shape.size())};
    else
      r.v = {b, double(v.shape.c), double(v.shape.h), double(v.shape.w)};
    r.dims = {int64_t(r.v.size())};
    consts_[n.output(0)] = std::move(r);
  }

  // ---- quantization annotations -----------------------------------------------------------
  TensorQuant tensor_quant(const onnx::NodeProto& n, const Const& s, const Const* z) const {
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

  std::optional<TensorQuant>& quant_ref(int p) {
    return p == kNetworkInput ? net_.input_quant : net_.layers[size_t(p)].out_quant;
  }
  const std::optional<TensorQuant>& quant_ref(int p) const {
    return p == kNetworkInput ? net_.input_quant : net_.layers[size_t(p)].out_quant;
  }
  // Whether layer li copies its inputs exactly (e.g. a standalone max-pool keeping its input's
  // quantization): requantizing its output is the same as requantizing its inputs.
  bool exact_copy(int li) const {
    const Layer& l = net_.layers[size_t(li)];
    if (l.kind != LayerKind::Copy || l.act != Activation::None || !l.out_quant) return false;
    for (int p : l.inputs)
      if (!quant_ref(p) || !(*quant_ref(p) == *l.out_quant)) return false;
    return true;
  }

  // Value v (tensor `name`, read by node n) gets quantization q: its producing layers' outputs
  // (or the input). Where they are quantized otherwise already (a Q/DQ pair, then another Q),
  // a Copy requantizes them (an exact copy that nothing else reads is requantized in place,
  // which is the same) and its index is returned; -1 otherwise.
  int annotate(const onnx::NodeProto& n, Value& v, const TensorQuant& q, const std::string& name) {
    bool differs = false;
    for (int p : v.parts) {
      const std::optional<TensorQuant>& have = quant_ref(p);
      if (p == kNetworkInput && have && !(*have == q))
        fail(n, "requantizes the input with different parameters (" + q.str() + " vs " +
                    have->str() + ")");
      differs |= have && !(*have == q);
    }
    if (differs) {
      if (v.parts.size() == 1 && fusable(name) == v.parts[0] && exact_copy(v.parts[0])) {
        net_.layers[size_t(v.parts[0])].out_quant = q;
        v.quant = q;
        return -1;
      }
      // One Copy requantizes them (concatenated tensors together).
      Value c = v;
      c.quant = q;
      const int l = copy_layer(c, name, n.op_type());
      v.parts = {l};
      v.quant = q;
      return l;
    }
    for (int p : v.parts) quant_ref(p) = q;
    v.quant = q;
    return -1;
  }

  void quantize_linear(const onnx::NodeProto& n) {
    Value v = data(n, 0);
    if (v.is_int) fail(n, "quantizes a tensor that is already quantized");
    const int copy = annotate(
        n, v, tensor_quant(n, konst(n, 1, "y_scale"), opt_konst(n, 2, "y_zero_point")), n.input(0));
    v.is_int = true;
    define(n, v, n.input(0));
    if (copy >= 0) tail_of_[n.output(0)] = copy;  // activations and pooling fuse into it
  }

  void dequantize_linear(const onnx::NodeProto& n) {
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

  // The input of a QLinear op: declared quantization must match what produced it.
  Value int_input(const onnx::NodeProto& n, int i, int si, int zi) {
    Value v = data(n, i);
    const TensorQuant q =
        tensor_quant(n, konst(n, si, "input scale"), opt_konst(n, zi, "input zero point"));
    if (!v.is_int)
      fail(n, "its input '" + n.input(i) + "' is not a quantized tensor (QuantizeLinear missing?)");
    if (v.quant && !(q == *v.quant))
      fail(n, "declares its input '" + n.input(i) + "' as " + q.str() +
                  " but it was quantized as " + v.quant->str());
    if (!v.quant) annotate(n, v, q, n.input(i));
    return v;
  }
  Value float_input(const onnx::NodeProto& n, int i, const std::string& alternative) {
    const Value& v = data(n, i);
    if (v.is_int)
      fail(n, "its input '" + n.input(i) + "' is quantized (use " + alternative +
                  ", or DequantizeLinear first)");
    return v;
  }
  std::optional<TensorQuant> out_quant(const onnx::NodeProto& n, bool ql, int si, int zi) {
    if (!ql) return std::nullopt;
    return tensor_quant(n, konst(n, si, "output scale"), opt_konst(n, zi, "output zero point"));
  }
  void finish_int_output(const onnx::NodeProto& n, int layer, bool ql) {
    if (!ql) return;
    Value& v = values_[n.output(0)];
    v.is_int = true;
    v.quant = net_.layers[size_t(layer)].out_quant;
  }

  // ---- layers ------------------------------------------------------------------------------
  // Integer weights of a quantized constant: w[oc][i] = q - zp at index(oc, i), one scale per oc.
  GivenQuant given_weights(const onnx::NodeProto& n, const Const& w, int cout, int64_t k,
                           int oc_axis, const std::function<int64_t(int, int64_t)>& index) const {
    if (w.scale.size() > 1 && w.axis != oc_axis)
      fail(n, "weights are quantized per channel along axis " + std::to_string(w.axis) +
                  "; only per-tensor or per-output-channel (axis " + std::to_string(oc_axis) +
                  ") is supported");
    GivenQuant g;
    g.weight.resize(size_t(cout * k));
    g.weight_scale.resize(size_t(cout));
    for (int oc = 0; oc < cout; ++oc) {
      for (int64_t i = 0; i < k; ++i) {
        const int64_t flat = index(oc, i);
        const size_t ch = w.channel_of(flat);
        const int64_t v = w.q[size_t(flat)] - w.zp[ch];
        if (v < -128 || v > 127)
          fail(n, "weight minus zero point (" + std::to_string(v) +
                      ") does not fit in int8; the MXU takes int8 weights");
        g.weight[size_t(oc * k + i)] = int8_t(v);
        if (i == 0) g.weight_scale[size_t(oc)] = float(w.scale[ch]);
      }
    }
    return g;
  }

  // Integer biases when a quantized bias constant has the scale input_scale * weight_scale.
  void given_bias(const Const* b, Layer& l, const std::optional<TensorQuant>& in_q) const {
    if (!b || !b->quantized || !l.given || !in_q) return;
    std::vector<int32_t> bias(size_t(l.cout()));
    for (int oc = 0; oc < l.cout(); ++oc) {
      const size_t ch = b->channel_of(oc);
      const double want = double(in_q->scale) * double(l.given->weight_scale[size_t(oc)]);
      if (b->zp[ch] != 0 || std::fabs(b->scale[ch] - want) > 1e-6 * want)
        return;  // requantize the float bias
      bias[size_t(oc)] = int32_t(b->q[size_t(oc)]);
    }
    l.given->bias = std::move(bias);
  }

  // A weight tensor of a QLinear op: its integers, scale and zero point as a quantized Const.
  Const qlinear_weights(const onnx::NodeProto& n, int wi, int si, int zi, int oc_axis) const {
    Const w = konst(n, wi, "weights");
    const Const& s = konst(n, si, "weight scale");
    const Const& z = konst(n, zi, "weight zero point");
    if (s.numel() != 1 && (oc_axis >= int(w.dims.size()) || s.numel() != w.dims[size_t(oc_axis)]))
      fail(n, "weight scale of shape " + dims_str(s.dims) +
                  " matches neither per-tensor nor per-output-channel");
    w.quantized = true;
    w.axis = oc_axis;
    w.scale = s.v;
    w.zp.assign(z.v.begin(), z.v.end());
    if (w.zp.size() == 1 && w.scale.size() > 1) w.zp.assign(w.scale.size(), w.zp[0]);
    if (w.zp.size() != w.scale.size()) fail(n, "weight zero point and scale have different sizes");
    w.q.assign(w.v.begin(), w.v.end());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const size_t ch = w.channel_of(i);
      w.v[size_t(i)] = double(float(double(w.q[size_t(i)] - w.zp[ch])) * float(w.scale[ch]));
    }
    return w;
  }

  static void pads_from(const onnx::NodeProto& n, const std::string& ap,
                        const std::vector<int64_t>& pads, LayerGeometry* l, int kh, int kw, int dh,
                        int dw, const Importer& self) {
    if (ap == "NOTSET") {
      if (!pads.empty()) {
        if (pads.size() != 4) self.fail(n, "pads must have 4 values");
        l->pad_t = int(pads[0]);
        l->pad_l = int(pads[1]);
        l->pad_b = int(pads[2]);
        l->pad_r = int(pads[3]);
      }
    } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      auto same = [&](int in, int k, int s, int d, int* lo, int* hi) {
        const int out = (in + s - 1) / s;
        const int total = std::max(0, (out - 1) * s + d * (k - 1) + 1 - in);
        *lo = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        *hi = total - *lo;
      };
      same(l->in.h, kh, l->sh, dh, &l->pad_t, &l->pad_b);
      same(l->in.w, kw, l->sw, dw, &l->pad_l, &l->pad_r);
    } else if (ap != "VALID") {
      self.fail(n, "auto_pad '" + ap + "' is not supported");
    }
  }
  static void absorb_pad(const Value& v, LayerGeometry* l) {
    l->pad_t += v.pad_t;
    l->pad_l += v.pad_l;
    l->pad_b += v.pad_b;
    l->pad_r += v.pad_r;
  }
  void strides_from(const onnx::NodeProto& n, LayerGeometry* l) const {
    const auto st = attr_ints(n, "strides");
    if (!st.empty()) {
      if (st.size() != 2) fail(n, "strides must have 2 values");
      l->sh = int(st[0]);
      l->sw = int(st[1]);
    }
  }

  void conv(const onnx::NodeProto& n) {
    const bool ql = n.op_type() == "QLinearConv";
    const Value v = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearConv");
    if (v.flat) fail(n, "its input '" + n.input(0) + "' is flattened; Conv needs an NCHW tensor");
    Const w;
    const Const* b = nullptr;
    if (ql) {
      w = qlinear_weights(n, 3, 4, 5, 0);
      b = opt_konst(n, 8, "B");
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
      fail(n, "weights " + dims_str(w.dims) + " with group " + std::to_string(l.group) +
                  " expect " + std::to_string(w.dims[1] * l.group) +
                  " input channels but its input '" + n.input(0) + "' has shape " + v.shape.str() +
                  " (wrong input shape?)");
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
    l.weight.assign(w.v.begin(), w.v.end());
    l.conv_out.c = int(w.dims[0]);
    try {
      l.infer_shapes();
    } catch (const Error& e) {
      fail(n, e.what());
    }
    const int cout = l.cout();
    const int64_t k = l.fan_in();
    if (b) {
      if (b->numel() != cout)
        fail(n, "bias of shape " + dims_str(b->dims) + " for " + std::to_string(cout) +
                    " output channels");
      l.bias.assign(b->v.begin(), b->v.end());
    } else {
      l.bias.assign(size_t(cout), 0.0f);
    }
    const std::optional<TensorQuant> in_q = v.quant;
    if (w.quantized)
      l.given = given_weights(n, w, cout, k, 0, [k](int oc, int64_t i) { return oc * k + i; });
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
    const int id = push_layer(n, std::move(l));
    new_layer_output(n, id, false);
    finish_int_output(n, id, ql);
  }

  void dense(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const bool ql = op == "QLinearMatMul";
    const Value v = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearMatMul");
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
    l.weight.resize(size_t(cout * k));
    for (int oc = 0; oc < cout; ++oc)
      for (int64_t i = 0; i < k; ++i)
        l.weight[size_t(oc * k + i)] = float(alpha * w.v[size_t(index(oc, i))]);
    l.bias.assign(size_t(cout), 0.0f);
    if (c) {
      if (c->numel() != 1 && c->numel() != cout)
        fail(n,
             "bias C of shape " + dims_str(c->dims) + " for " + std::to_string(cout) + " outputs");
      for (int oc = 0; oc < cout; ++oc)
        l.bias[size_t(oc)] = float(beta * c->v[c->numel() == 1 ? 0 : size_t(oc)]);
    }
    if (w.quantized) {
      l.given = given_weights(n, w, cout, k, trans_b ? 0 : 1, index);
      if (alpha != 1.0)
        for (float& s : l.given->weight_scale) s = float(double(s) * alpha);
      if (c && beta == 1.0) given_bias(c, l, v.quant);
    }
    l.out_quant = out_quant(n, ql, 6, 7);
    const int id = push_layer(n, std::move(l));
    new_layer_output(n, id, true);
    finish_int_output(n, id, ql);
  }

  // A per-channel constant operand: scalar, [C], [1, C], [C, 1, 1] or [1, C, 1, 1].
  std::vector<double> per_channel(const onnx::NodeProto& n, const Const& c, const Value& v) const {
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

  // Add/Sub/Mul/Div: of two tensors (Add), x * HardSigmoid(x), or with a constant (a bias or
  // scale folded into the layer before, or input preprocessing).
  void arith(const onnx::NodeProto& n) {
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
    const int li = fusable(name);
    if (li >= 0) {
      Layer& l = net_.layers[size_t(li)];
      if (!l.has_weights())
        fail(n, op + " by a constant after " + l.op + " '" + l.name + "' is not supported");
      if (l.act != Activation::None || l.pool_k > 1)
        fail(n, op + " by a constant after an activation or pooling is not supported");
      if (l.given && !l.given->bias.empty() && (op == "Add" || op == "Sub"))
        fail(n, "adds a second bias to a layer with a quantized bias");
      if (l.given && (op == "Mul" || op == "Div")) fail(n, "scales a layer with quantized weights");
      const int64_t k = l.fan_in();
      for (int ch = 0; ch < l.cout(); ++ch) {
        const double x = per[size_t(ch)];
        if (op == "Add")
          l.bias[size_t(ch)] += float(x);
        else if (op == "Sub" && data_first)
          l.bias[size_t(ch)] -= float(x);
        else if (op == "Mul" || (op == "Div" && data_first)) {
          if (op == "Div" && x == 0) fail(n, "division by zero");
          const double s = op == "Mul" ? x : 1.0 / x;
          for (int64_t i = 0; i < k; ++i)
            l.weight[size_t(ch * k + i)] = float(l.weight[size_t(ch * k + i)] * s);
          l.bias[size_t(ch)] = float(l.bias[size_t(ch)] * s);
        } else {
          fail(n, op + " with the constant first is not supported after a layer");
        }
      }
      l.fused.push_back(op + " " + node_name(n));
      define(n, v, name);
      return;
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

  // Add of two tensors (QLinearAdd: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp).
  void add(const onnx::NodeProto& n, bool ql) {
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

  // Concat on channels: the parts are read where they are (a virtual tensor); QLinearConcat
  // (Y_scale, Y_zp, then X, X_scale, X_zp per input) requantizes when the scales differ.
  void concat(const onnx::NodeProto& n, bool ql) {
    Value v;
    const int first = ql ? 2 : 0, step = ql ? 3 : 1;
    int64_t axis = attr_int(n, "axis", 1);
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
    }
    if (v.parts.empty()) fail(n, "has no inputs");
    // Pooling fuses into the parts only when each is one layer's output (not itself a concat).
    if (concat_inputs_[n.output(0)].size() != v.parts.size()) concat_inputs_.erase(n.output(0));
    if (ql) {
      const TensorQuant q =
          tensor_quant(n, konst(n, 0, "Y_scale"), opt_konst(n, 1, "Y_zero_point"));
      bool same = true;
      for (int p : v.parts) {
        const auto& have = p == kNetworkInput ? net_.input_quant : net_.layers[size_t(p)].out_quant;
        same &= have && *have == q;
      }
      int copy = -1;
      if (!same) {
        Value c = v;
        c.quant = q;
        v.parts = {copy = materialize(c, n.output(0))};
      }
      v.is_int = true;
      v.quant = q;
      values_[n.output(0)] = v;
      if (copy >= 0) {
        tail_of_[n.output(0)] = copy;  // activations and pooling fuse into it
        concat_inputs_.erase(n.output(0));
      }
      return;
    }
    values_[n.output(0)] = v;
  }

  // BatchNormalization after a Conv/Gemm read by nothing else: folded into its weights and bias.
  void batch_norm(const onnx::NodeProto& n) {
    const Value v = float_input(n, 0, "a QDQ Conv");
    const int li = fusable(n.input(0));
    if (li < 0 || !net_.layers[size_t(li)].has_weights())
      fail(n,
           "BatchNormalization is supported right after a Conv or Gemm whose output nothing else "
           "reads (it is folded into it)");
    Layer& l = net_.layers[size_t(li)];
    if (l.act != Activation::None || l.pool_k > 1)
      fail(n, "BatchNormalization after an activation or pooling is not supported");
    if (l.given)
      fail(n, "BatchNormalization after a layer with quantized weights is not supported");
    const Const& scale = konst(n, 1, "scale");
    const Const& bias = konst(n, 2, "B");
    const Const& mean = konst(n, 3, "input_mean");
    const Const& var = konst(n, 4, "input_var");
    const double eps = attr_float(n, "epsilon", 1e-5f);
    const int cout = l.cout();
    for (const Const* c : {&scale, &bias, &mean, &var})
      if (c->numel() != cout)
        fail(n, "parameter of shape " + dims_str(c->dims) + " for " + std::to_string(cout) +
                    " channels");
    const int64_t k = l.fan_in();
    for (int oc = 0; oc < cout; ++oc) {
      const double s = scale.v[size_t(oc)] / std::sqrt(var.v[size_t(oc)] + eps);
      for (int64_t i = 0; i < k; ++i)
        l.weight[size_t(oc * k + i)] = float(l.weight[size_t(oc * k + i)] * s);
      l.bias[size_t(oc)] =
          float((l.bias[size_t(oc)] - mean.v[size_t(oc)]) * s + bias.v[size_t(oc)]);
    }
    l.fused.push_back("BatchNormalization " + node_name(n));
    define(n, v, n.input(0));
  }

  // Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, PRelu (one slope), and
  // com.microsoft QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zp, Y_scale, Y_zp).
  void activation(const onnx::NodeProto& n, bool ql) {
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
        return fused_activation(n, n.input(0), Activation::Lut, LutFunc::LeakyRelu,
                                float(s.v.at(0)), 0);
      return prelu_per_channel(n, per_channel(n, s, data(n, 0)));
    }
    fail(n, "is not supported");
  }

  // PRelu with a slope per channel (one LUT cannot): relu(x) + (-slope) * relu(-x), two
  // Copy layers with ReLU (the second negates) and an Add with per-channel operand weights.
  void prelu_per_channel(const onnx::NodeProto& n, const std::vector<double>& slope) {
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

  // An activation on tensor `in`: fused into the layer computing it, or a Copy layer.
  void fused_activation(const onnx::NodeProto& n, const std::string& in, Activation a, LutFunc f,
                        float p0, float p1, bool ql = false) {
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
      if (ql)
        l.out_quant = tensor_quant(n, konst(n, 3, "Y_scale"), opt_konst(n, 4, "Y_zero_point"));
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

  void maxpool(const onnx::NodeProto& n) {
    for (int i = 1; i < n.output_size(); ++i)
      if (!n.output(i).empty()) fail(n, "the Indices output is not supported");
    const Value& v0 = data(n, 0);
    const Value v = v0;
    if (v.flat) fail(n, "its input is flattened");
    const auto ks = attr_ints(n, "kernel_shape");
    if (ks.size() != 2 || ks[0] != ks[1])
      fail(n, "kernel_shape " + dims_str(ks) + ": only square 2-D windows are supported");
    auto st = attr_ints(n, "strides");
    if (st.empty()) st = {1, 1};
    if (st.size() != 2 || st[0] != st[1])
      fail(n, "strides " + dims_str(st) + ": only equal strides are supported");
    for (int64_t d : attr_ints(n, "dilations"))
      if (d != 1) fail(n, "dilated max-pooling is not supported");
    const int k = int(ks[0]), s = int(st[0]);
    if (k > 15 || s > 15)
      fail(n, "kernel_shape " + dims_str(ks) + " / strides " + dims_str(st) +
                  ": window and stride must be <= 15");
    LayerGeometry g;
    g.in = v.shape;
    g.sh = g.sw = s;
    pads_from(n, attr_string(n, "auto_pad", "NOTSET"), attr_ints(n, "pads"), &g, k, k, 1, 1, *this);
    const bool ceil = attr_int(n, "ceil_mode", 0) != 0;
    // Output size (PyTorch/ONNX): floor or ceil of (H + pads - k) / s + 1; a window may not
    // start in the bottom/right padding.
    auto out_size = [&](int in, int lo, int hi) {
      const int span = in + lo + hi - k;
      if (span < 0)
        fail(n, "the window " + std::to_string(k) + " is larger than the padded input " +
                    v.shape.str());
      int o = (ceil ? (span + s - 1) / s : span / s) + 1;
      if (ceil && (o - 1) * s >= in + lo) --o;
      return o;
    };
    const int oh = out_size(v.shape.h, g.pad_t, g.pad_b),
              ow = out_size(v.shape.w, g.pad_l, g.pad_r);
    // The chip's pooling is floor without padding: extend the bottom/right padding so it is.
    const int extra_b = std::max(0, (oh - 1) * s + k - (v.shape.h + g.pad_t + g.pad_b));
    const int extra_r = std::max(0, (ow - 1) * s + k - (v.shape.w + g.pad_l + g.pad_r));
    const bool padded = g.pad_t || g.pad_l || g.pad_b || g.pad_r || extra_b || extra_r;
    // The activate instruction pools with up to 7 lines/columns of padding on each side.
    const int pads[4] = {g.pad_t, g.pad_l, g.pad_b + extra_b, g.pad_r + extra_r};
    const bool chip_pads = *std::max_element(pads, pads + 4) < std::min(k, 8);
    // The layers the pool fuses into: the one computing its input, or every part of a concat
    // that only this pool reads (pooling works channel by channel).
    auto fuses = [&](int li) {
      if (li < 0) return false;
      const Layer& l = net_.layers[size_t(li)];
      return (!padded || chip_pads) && l.pool_k == 1 && l.kind != LayerKind::Dense &&
             (l.act != Activation::Lut || lut_func_monotonic(l.lut)) &&
             (l.conv_out.h + pads[0] + pads[2] - k) / s + 1 == oh &&
             (l.conv_out.w + pads[1] + pads[3] - k) / s + 1 == ow;
    };
    std::vector<int> targets;
    const auto parts = concat_inputs_.find(n.input(0));
    if (parts != concat_inputs_.end() && uses_[n.input(0)] == 1) {
      for (const std::string& part : parts->second) targets.push_back(fusable(part));
      if (!std::all_of(targets.begin(), targets.end(), fuses)) targets.clear();
    } else if (fuses(fusable(n.input(0)))) {
      targets = {fusable(n.input(0))};
    }
    for (int t : targets) {
      Layer& l = net_.layers[size_t(t)];
      l.pool_k = k;
      l.pool_s = s;
      l.pool_pad_t = pads[0];
      l.pool_pad_l = pads[1];
      l.pool_pad_b = pads[2];
      l.pool_pad_r = pads[3];
      try {
        l.infer_shapes();
      } catch (const Error& e) {
        fail(n, e.what());
      }
      l.fused.push_back("MaxPool " + node_name(n));
    }
    if (targets.size() > 1) {  // the pooled parts, concatenated where they are
      Value out = v;
      out.shape = {v.shape.c, oh, ow};
      values_[n.output(0)] = out;
      return;
    }
    int li = targets.empty() ? -1 : targets[0];
    if (li < 0) {
      // A Copy layer: pooled with activate's padding when it fits its fields, else over a
      // padded copy of the image (a border of pixels the maximum skips).
      Layer c = start_layer(n, LayerKind::Copy, v);
      if (chip_pads) {
        c.pool_pad_t = pads[0];
        c.pool_pad_l = pads[1];
        c.pool_pad_b = pads[2];
        c.pool_pad_r = pads[3];
      } else {
        c.pad_t = pads[0];
        c.pad_l = pads[1];
        c.pad_b = pads[2];
        c.pad_r = pads[3];
      }
      c.pool_k = k;
      c.pool_s = s;
      if (v.quant) c.out_quant = v.quant;  // of a (de)quantized tensor: an exact copy
      li = push_layer(n, std::move(c));
    }
    new_layer_output(n, li, false);
    if (v.is_int) {
      values_[n.output(0)].is_int = true;
      values_[n.output(0)].quant = v.quant;
    }
  }

  // AveragePool (QLinearAveragePool: X, x_scale, x_zp, y_scale, y_zp): a depthwise Conv of
  // ones / window size. Padding counts as 0 (count_include_pad = 1, or no padding). The QLinear
  // form has the float weights too: quantize() gives them the integers it gives the float
  // model's (the same network from a QDQ, QLinear or float model).
  void average_pool(const onnx::NodeProto& n, bool ql) {
    const Value v = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearAveragePool");
    if (v.flat) fail(n, "its input is flattened");
    if (ql && attr_int(n, "channels_last", 0) != 0) fail(n, "channels_last = 1 is not supported");
    const auto ks = attr_ints(n, "kernel_shape");
    if (ks.size() != 2) fail(n, "kernel_shape " + dims_str(ks) + ": a 2-D window is expected");
    for (int64_t d : attr_ints(n, "dilations"))
      if (d != 1) fail(n, "dilated average pooling is not supported");
    Layer l = start_layer(n, LayerKind::Conv, v);
    l.group = v.shape.c;
    l.kh = int(ks[0]);
    l.kw = int(ks[1]);
    strides_from(n, &l);
    pads_from(n, attr_string(n, "auto_pad", "NOTSET"), attr_ints(n, "pads"), &l, l.kh, l.kw, 1, 1,
              *this);
    const bool padded = l.pad_t || l.pad_l || l.pad_b || l.pad_r;
    absorb_pad(v, &l);  // a Pad before it: real zeros, always counted
    if (padded && attr_int(n, "count_include_pad", 0) == 0)
      fail(n,
           "padding with count_include_pad = 0 (a divisor that changes at the borders) is not "
           "supported; "
           "count_include_pad = 1 (PyTorch's default) is");
    l.conv_out.c = v.shape.c;
    try {
      l.infer_shapes();
    } catch (const Error& e) {
      fail(n, e.what());
    }
    if (attr_int(n, "ceil_mode", 0) != 0 && ((v.shape.h + l.pad_t + l.pad_b - l.kh) % l.sh != 0 ||
                                             (v.shape.w + l.pad_l + l.pad_r - l.kw) % l.sw != 0))
      fail(n, "ceil_mode = 1 with a partial last window is not supported");
    l.weight.assign(size_t(v.shape.c) * l.kh * l.kw, 1.0f / float(l.kh * l.kw));
    l.bias.assign(size_t(v.shape.c), 0.0f);
    l.out_quant = out_quant(n, ql, 3, 4);
    const int id = push_layer(n, std::move(l));
    new_layer_output(n, id, false);
    finish_int_output(n, id, ql);
  }

  // GlobalAveragePool / QLinearGlobalAveragePool / ReduceMean over H and W: a Dense with one
  // group per channel (weights 1 / pixels; the QLinear form too, as average_pool).
  void global_pool(const onnx::NodeProto& n, bool ql) {
    const std::string& op = n.op_type();
    const Value v = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearGlobalAveragePool");
    if (v.flat) fail(n, "its input is flattened");
    bool keep = true;
    if (ql && attr_int(n, "channels_last", 0) != 0) fail(n, "channels_last = 1 is not supported");
    if (op == "ReduceMean") {
      std::vector<int64_t> axes = attr_ints(n, "axes");
      if (n.input_size() > 1 && !n.input(1).empty()) {
        const Const& a = konst(n, 1, "axes");
        axes.assign(a.v.begin(), a.v.end());
      }
      for (auto& a : axes)
        if (a < 0) a += 4;
      std::sort(axes.begin(), axes.end());
      if (axes != std::vector<int64_t>{2, 3})
        fail(n, "axes " + dims_str(axes) + ": only the mean over H and W (axes 2, 3) is supported");
      keep = attr_int(n, "keepdims", 1) != 0;
    }
    Layer l = start_layer(n, LayerKind::Dense, v);
    l.group = v.shape.c;
    l.conv_out.c = v.shape.c;
    const int64_t pixels = int64_t(v.shape.h) * v.shape.w;
    l.weight.assign(size_t(v.shape.c * pixels), 1.0f / float(pixels));
    l.bias.assign(size_t(v.shape.c), 0.0f);
    l.out_quant = out_quant(n, ql, 3, 4);
    const int id = push_layer(n, std::move(l));
    new_layer_output(n, id, !keep);
    finish_int_output(n, id, ql);
  }

  void flatten(const onnx::NodeProto& n) {
    Value v = data(n, 0);
    const int64_t total = v.shape.size();
    if (n.op_type() == "Flatten") {
      const int64_t axis = attr_int(n, "axis", 1);
      if (axis != 1 && !(v.flat && axis == -1))
        fail(n, "axis " + std::to_string(axis) + ": only axis = 1 (keep the batch) is supported");
    } else {
      const Const& s = konst(n, 1, "shape");
      std::vector<int64_t> cur_dims =
          v.flat ? std::vector<int64_t>{1, total}
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
      const bool same =
          t.size() == 4 && t[1] == v.shape.c && t[2] == v.shape.h && t[3] == v.shape.w;
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

  const onnx::ModelProto& model_;
  Network net_;
  std::map<std::string, Const> consts_;
  std::map<std::string, Value> values_;
  std::map<std::string, int> uses_;     // node inputs (and the graph output) reading each name
  std::map<std::string, int> tail_of_;  // names that are a layer's latest output
  std::map<std::string, std::string> hard_sigmoid_of_;  // HardSigmoid(x) output -> x (HardSwish)
  std::string input_tail_;                              // the input after preprocessing so far
  int64_t opset_ = 13;
};

}  // namespace

Network import_onnx_bytes(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) throw Error(name + ": empty file, not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Error(name + ": cannot parse as an ONNX model (truncated or corrupt protobuf, " +
                std::to_string(bytes.size()) + " bytes)");
  return Importer(model, name).run();
}

Network load_onnx(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the file");
  std::ostringstream s;
  s << f.rdbuf();
  if (!f.good() && !f.eof()) throw Error(path + ": read error");
  return import_onnx_bytes(s.str(), path);
}

}  // namespace tpu::cnn

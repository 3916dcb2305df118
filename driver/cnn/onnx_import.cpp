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
  return "Conv, QLinearConv, Gemm, MatMul, QLinearMatMul, Add (bias after Conv/Gemm/MatMul, or "
         "input preprocessing), Sub/Mul/Div (input preprocessing by constants), Relu, Clip, "
         "MaxPool, Flatten, Reshape (flattening), Identity, Dropout, QuantizeLinear, "
         "DequantizeLinear, Constant, Shape/Gather/Unsqueeze/Concat/Cast (on constants)";
}

namespace {

// A constant tensor (initializer, Constant node or folded), values as doubles.
struct Const {
  std::vector<int64_t> dims;
  std::vector<double> v;  // real values (after dequantization)
  int elem_type = 0;
  // Quantized origin: DequantizeLinear of an integer constant, or a QLinear op's weights.
  bool quantized = false;
  std::vector<int64_t> q;      // the integers
  std::vector<double> scale;   // 1 (per tensor) or dims[axis] values
  std::vector<int64_t> zp;     // as scale
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
    case onnx::TensorProto::FLOAT: return "float";
    case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::INT16: return "int16";
    case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::INT32: return "int32";
    case onnx::TensorProto::INT64: return "int64";
    case onnx::TensorProto::DOUBLE: return "double";
    case onnx::TensorProto::BOOL: return "bool";
    case onnx::TensorProto::FLOAT16: return "float16";
    default: return "unsupported type";
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
    throw Error(what + ": element " + std::to_string(i) + (at.empty() ? "" : " [" + at + "]") + " of shape " +
                dims_str(c.dims) + " is " + (std::isnan(c.v[i]) ? "NaN" : c.v[i] > 0 ? "+Inf" : "-Inf") +
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
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: elem = 4; break;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64: elem = 8; break;
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL: elem = 1; break;
    case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: elem = 2; break;
    default:
      throw Error(what + ": data type " + std::to_string(c.elem_type) + " (" + type_name(c.elem_type) +
                  ") is not supported (float, double, int8, uint8, int16, uint16, int32, int64)");
  }
  if (t.has_raw_data()) {
    if (raw.size() != size_t(n) * elem)
      throw Error(what + ": " + std::to_string(raw.size()) + " bytes of data for shape " + dims_str(c.dims) +
                  " of " + type_name(c.elem_type) + ", expected " + std::to_string(size_t(n) * elem) +
                  " (truncated or corrupt file?)");
    switch (c.elem_type) {
      case onnx::TensorProto::FLOAT: raw_values<float>(raw, n, &c.v); break;
      case onnx::TensorProto::DOUBLE: raw_values<double>(raw, n, &c.v); break;
      case onnx::TensorProto::INT32: raw_values<int32_t>(raw, n, &c.v); break;
      case onnx::TensorProto::INT64: raw_values<int64_t>(raw, n, &c.v); break;
      case onnx::TensorProto::INT8: raw_values<int8_t>(raw, n, &c.v); break;
      case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL: raw_values<uint8_t>(raw, n, &c.v); break;
      case onnx::TensorProto::INT16: raw_values<int16_t>(raw, n, &c.v); break;
      case onnx::TensorProto::UINT16: raw_values<uint16_t>(raw, n, &c.v); break;
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
  Importer(const onnx::ModelProto& model, std::string name) : model_(model) { net_.name = std::move(name); }

  Network run() {
    if (!model_.has_graph()) fail_model("the file holds no graph (truncated or not an ONNX model?)");
    const auto& g = model_.graph();
    if (g.node_size() == 0) fail_model("the graph has no nodes (truncated or empty model?)");
    for (const auto& opset : model_.opset_import())
      if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
    for (const auto& t : g.initializer()) consts_[t.name()] = read_tensor(t, "initializer '" + t.name() + "'");
    find_input(g);
    if (g.output_size() != 1)
      fail_model("the graph has " + std::to_string(g.output_size()) + " outputs; exactly one (the logits) is supported");
    net_.output_name = g.output(0).name();
    for (int i = 0; i < g.node_size(); ++i) node(g.node(i), i);
    if (net_.layers.empty()) fail_model("the graph has no Conv, Gemm or MatMul layer");
    if (cur_ != net_.output_name)
      fail_model("the graph output '" + net_.output_name + "' is not the end of the layer chain (which ends in '" + cur_ + "')");
    return std::move(net_);
  }

 private:
  [[noreturn]] void fail_model(const std::string& msg) const { throw Error(net_.name + ": " + msg); }
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
      if (in) fail_model("the graph has more than one input ('" + in->name() + "', '" + vi.name() + "'); one image input is supported");
      in = &vi;
    }
    if (!in) fail_model("the graph has no input");
    net_.input_name = in->name();
    if (!in->type().has_tensor_type()) fail_model("input '" + in->name() + "' is not a tensor");
    const auto& tt = in->type().tensor_type();
    if (tt.elem_type() != onnx::TensorProto::FLOAT)
      fail_model("input '" + in->name() + "' is " + type_name(tt.elem_type()) + "; a float32 NCHW input is expected");
    std::vector<int64_t> d;
    std::string shape = "[";
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& dim = tt.shape().dim(i);
      d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      shape += (i ? ", " : "") + (dim.has_dim_value() ? std::to_string(dim.dim_value()) : dim.dim_param().empty() ? "?" : dim.dim_param());
    }
    shape += "]";
    if (d.size() != 4 && d.size() != 2)
      fail_model("input '" + in->name() + "' has shape " + shape + "; expected NCHW [N, C, H, W] (or [N, features])");
    for (size_t i = 1; i < d.size(); ++i) {
      if (d[i] <= 0) fail_model("input '" + in->name() + "' has shape " + shape + ": C, H and W must be fixed numbers");
      if (d[i] > 65535) fail_model("input '" + in->name() + "' has shape " + shape + ": dimensions above 65535 are not supported");
    }
    if (d[0] > 65535) fail_model("input '" + in->name() + "' has shape " + shape + ": batch above 65535");
    net_.file_batch = d[0] > 0 ? int(d[0]) : 0;
    if (d.size() == 4) {
      net_.input = {int(d[1]), int(d[2]), int(d[3])};
    } else {
      net_.input = {int(d[1]), 1, 1};
      flat_ = true;
    }
    cur_ = in->name();
    shape_ = net_.input;
  }

  bool is_const(const std::string& name) const { return consts_.count(name) > 0; }
  const Const& konst(const onnx::NodeProto& n, int i, const char* what) const {
    if (i >= n.input_size() || n.input(i).empty()) fail(n, std::string("missing input ") + what);
    auto it = consts_.find(n.input(i));
    if (it == consts_.end()) fail(n, std::string(what) + " '" + n.input(i) + "' must be a constant (initializer)");
    return it->second;
  }
  const Const* opt_konst(const onnx::NodeProto& n, int i, const char* what) const {
    if (i >= n.input_size() || n.input(i).empty()) return nullptr;
    return &konst(n, i, what);
  }

  // ---- the per-node dispatcher ------------------------------------------------------------
  void node(const onnx::NodeProto& n, int index) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail(n, "operator domain '" + n.domain() + "' is not supported. Supported ops: " + supported_ops());
    (void)index;
    if (n.output_size() == 0 || n.output(0).empty()) fail(n, "has no output");
    if (op == "Constant") return constant(n);
    bool reads_cur = false, all_const = true;
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      if (in == cur_) reads_cur = true;
      else if (!is_const(in)) all_const = false;
    }
    if (!reads_cur) {
      if (all_const && n.input_size() > 0) return fold(n);
      for (const auto& in : n.input())
        if (!in.empty() && in != cur_ && !is_const(in))
          fail(n, "reads tensor '" + in + "', which is not the output of the previous layer ('" + cur_ +
                  "'): only sequential networks (one chain from input to output, no branches or residual connections) are supported");
      fail(n, "has no input");
    }
    for (const auto& in : n.input())
      if (!in.empty() && in != cur_ && !is_const(in))
        fail(n, "reads tensor '" + in + "' besides '" + cur_ +
                "': only sequential networks (one chain from input to output, no branches or residual connections) are supported");
    if (op == "Shape") return shape_of(n);
    if (op == "Conv" || op == "QLinearConv") return conv(n);
    if (op == "Gemm" || op == "MatMul" || op == "QLinearMatMul") return dense(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return arith(n);
    if (op == "Relu" || op == "Clip") return activation(n);
    if (op == "MaxPool") return maxpool(n);
    if (op == "Flatten" || op == "Reshape") return flatten(n);
    if (op == "Identity" || op == "Dropout") return advance(n);
    if (op == "QuantizeLinear") return quantize_linear(n);
    if (op == "DequantizeLinear") return dequantize_linear(n);
    fail(n, "is not supported. Supported ops: " + supported_ops());
  }

  void data_input_first(const onnx::NodeProto& n) const {
    if (n.input(0) != cur_) fail(n, "the data tensor '" + cur_ + "' must be its first input");
  }
  void advance(const onnx::NodeProto& n) {
    data_input_first(n);
    for (int i = 1; i < n.output_size(); ++i)
      if (!n.output(i).empty() && n.op_type() != "Dropout") fail(n, "only its first output may be used");
    cur_ = n.output(0);
  }
  Layer* pending(const onnx::NodeProto& n, const std::string& what) {
    if (layer_open_ < 0)
      fail(n, what + " must follow a Conv, Gemm or MatMul (it is fused into that layer's activation step)");
    return &net_.layers[size_t(layer_open_)];
  }

  // ---- constants -----------------------------------------------------------------------------
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
      if (s.numel() != 1 && (axis < 0 || axis >= int(x.dims.size()) || s.numel() != x.dims[size_t(axis)]))
        fail(n, "scale of shape " + dims_str(s.dims) + " does not match axis " + std::to_string(axis) + " of " + dims_str(x.dims));
      if (z && z->numel() != s.numel()) fail(n, "zero point and scale have different sizes");
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
    } else if (op == "Gather") {
      const Const& d = konst(n, 0, "data");
      const Const& idx = konst(n, 1, "indices");
      if (d.dims.size() != 1 || attr_int(n, "axis", 0) != 0) fail(n, "only 1-D constant Gather is supported");
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
      if (n.input_size() > 1) count = konst(n, 1, "axes").numel();
      else count = int64_t(attr_ints(n, "axes").size());
      r.quantized = false;
      if (op == "Unsqueeze") {
        if (r.dims.empty() && count == 1) r.dims = {1};
        else r.dims.insert(r.dims.begin(), size_t(count), 1);
      } else {
        std::vector<int64_t> d;
        for (int64_t x : r.dims) if (x != 1) d.push_back(x);
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
    Const r;
    r.elem_type = onnx::TensorProto::INT64;
    const double b = net_.file_batch > 0 ? net_.file_batch : 1;
    if (flat_) r.v = {b, double(shape_.size())};
    else r.v = {b, double(shape_.c), double(shape_.h), double(shape_.w)};
    r.dims = {int64_t(r.v.size())};
    consts_[n.output(0)] = std::move(r);  // the data tensor stays current
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
      fail(n, std::string("zero point of type ") + type_name(z->elem_type) + " (only int8 and uint8)");
    q.zero_point = z ? int(z->v[0]) : 0;
    return q;
  }

  // The quantization of the current tensor became known.
  void annotate(const onnx::NodeProto& n, const TensorQuant& q) {
    if (layer_open_ < 0) {
      if (net_.input_quant && !(*net_.input_quant == q))
        fail(n, "requantizes the input with different parameters (" + q.str() + " vs " + net_.input_quant->str() + ")");
      net_.input_quant = q;
      input_locked_ = true;
    } else {
      net_.layers[size_t(layer_open_)].out_quant = q;
    }
    cur_quant_ = q;
  }

  void quantize_linear(const onnx::NodeProto& n) {
    data_input_first(n);
    if (is_int_) fail(n, "quantizes a tensor that is already quantized");
    annotate(n, tensor_quant(n, konst(n, 1, "y_scale"), opt_konst(n, 2, "y_zero_point")));
    is_int_ = true;
    cur_ = n.output(0);
  }

  void dequantize_linear(const onnx::NodeProto& n) {
    data_input_first(n);
    if (!is_int_) fail(n, "dequantizes a tensor that is not quantized");
    const TensorQuant q = tensor_quant(n, konst(n, 1, "x_scale"), opt_konst(n, 2, "x_zero_point"));
    if (cur_quant_ && !(q == *cur_quant_))
      fail(n, "dequantizes with " + q.str() + " a tensor quantized with " + cur_quant_->str());
    is_int_ = false;
    cur_ = n.output(0);
  }

  // The input quantization a QLinear op declares must match what produced its input.
  void check_input_quant(const onnx::NodeProto& n, const TensorQuant& q) {
    if (!is_int_) fail(n, "its input '" + cur_ + "' is not a quantized tensor (QuantizeLinear missing?)");
    if (cur_quant_ && !(q == *cur_quant_))
      fail(n, "declares its input as " + q.str() + " but it was quantized as " + cur_quant_->str());
    if (!cur_quant_) annotate(n, q);
  }

  // ---- layers ------------------------------------------------------------------------------
  // Integer weights of a quantized constant: w[oc][i] = q - zp at index(oc, i), one scale per oc.
  GivenQuant given_weights(const onnx::NodeProto& n, const Const& w, int cout, int64_t k, int oc_axis,
                           const std::function<int64_t(int, int64_t)>& index) const {
    if (w.scale.size() > 1 && w.axis != oc_axis)
      fail(n, "weights are quantized per channel along axis " + std::to_string(w.axis) +
              "; only per-tensor or per-output-channel (axis " + std::to_string(oc_axis) + ") is supported");
    GivenQuant g;
    g.weight.resize(size_t(cout * k));
    g.weight_scale.resize(size_t(cout));
    for (int oc = 0; oc < cout; ++oc) {
      for (int64_t i = 0; i < k; ++i) {
        const int64_t flat = index(oc, i);
        const size_t ch = w.channel_of(flat);
        const int64_t v = w.q[size_t(flat)] - w.zp[ch];
        if (v < -128 || v > 127)
          fail(n, "weight minus zero point (" + std::to_string(v) + ") does not fit in int8; the MXU takes int8 weights");
        g.weight[size_t(oc * k + i)] = int8_t(v);
        if (i == 0) g.weight_scale[size_t(oc)] = float(w.scale[ch]);
      }
    }
    return g;
  }

  // Integer biases when a quantized bias constant has the scale input_scale * weight_scale.
  void given_bias(const Const* b, Layer& l) const {
    if (!b || !b->quantized || !l.given || !cur_quant_) return;
    std::vector<int32_t> bias(size_t(l.cout()));
    for (int oc = 0; oc < l.cout(); ++oc) {
      const size_t ch = b->channel_of(oc);
      const double want = double(cur_quant_->scale) * double(l.given->weight_scale[size_t(oc)]);
      if (b->zp[ch] != 0 || std::fabs(b->scale[ch] - want) > 1e-6 * want) return;  // requantize the float bias
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
      fail(n, "weight scale of shape " + dims_str(s.dims) + " matches neither per-tensor nor per-output-channel");
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

  void open_layer(Layer&& l) {
    net_.layers.push_back(std::move(l));
    layer_open_ = int(net_.layers.size()) - 1;
    act_seen_ = pool_seen_ = false;
    input_locked_ = true;
    cur_quant_.reset();  // a new tensor: quantized by a later QuantizeLinear, or calibrated
  }

  void conv(const onnx::NodeProto& n) {
    data_input_first(n);
    const bool ql = n.op_type() == "QLinearConv";
    if (flat_) fail(n, "its input '" + cur_ + "' is flattened; Conv needs an NCHW tensor");
    Const w;
    const Const* b = nullptr;
    std::vector<double> qbias;
    if (ql) {
      check_input_quant(n, tensor_quant(n, konst(n, 1, "x_scale"), opt_konst(n, 2, "x_zero_point")));
      w = qlinear_weights(n, 3, 4, 5, 0);
      b = opt_konst(n, 8, "B");
    } else {
      if (is_int_) fail(n, "its input is quantized (use QLinearConv, or DequantizeLinear first)");
      w = konst(n, 1, "W");
      b = opt_konst(n, 2, "B");
    }
    if (w.dims.size() != 4) fail(n, "weights of shape " + dims_str(w.dims) + "; expected [Cout, Cin, kH, kW]");
    if (attr_int(n, "group", 1) != 1) fail(n, "grouped or depthwise convolution (group != 1) is not supported");
    for (int64_t d : attr_ints(n, "dilations"))
      if (d != 1) fail(n, "dilated convolution is not supported");
    if (w.dims[1] != shape_.c)
      fail(n, "weights " + dims_str(w.dims) + " expect " + std::to_string(w.dims[1]) + " input channels but its input '" +
              cur_ + "' has shape " + shape_.str() + " (wrong input shape?)");
    Layer l;
    l.kind = LayerKind::Conv;
    l.name = node_name(n);
    l.op = n.op_type();
    l.in = shape_;
    l.conv_out.c = int(w.dims[0]);
    l.kh = int(w.dims[2]);
    l.kw = int(w.dims[3]);
    const auto ks = attr_ints(n, "kernel_shape");
    if (!ks.empty() && (ks.size() != 2 || ks[0] != l.kh || ks[1] != l.kw))
      fail(n, "kernel_shape " + dims_str(ks) + " does not match the weights " + dims_str(w.dims));
    const auto st = attr_ints(n, "strides");
    if (!st.empty()) {
      if (st.size() != 2) fail(n, "strides must have 2 values");
      l.sh = int(st[0]);
      l.sw = int(st[1]);
    }
    const std::string ap = attr_string(n, "auto_pad", "NOTSET");
    const auto pads = attr_ints(n, "pads");
    if (ap == "NOTSET") {
      if (!pads.empty()) {
        if (pads.size() != 4) fail(n, "pads must have 4 values");
        l.pad_t = int(pads[0]);
        l.pad_l = int(pads[1]);
        l.pad_b = int(pads[2]);
        l.pad_r = int(pads[3]);
      }
    } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      auto same = [&](int in, int k, int s, int* lo, int* hi) {
        const int out = (in + s - 1) / s;
        const int total = std::max(0, (out - 1) * s + k - in);
        *lo = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        *hi = total - *lo;
      };
      same(l.in.h, l.kh, l.sh, &l.pad_t, &l.pad_b);
      same(l.in.w, l.kw, l.sw, &l.pad_l, &l.pad_r);
    } else if (ap != "VALID") {
      fail(n, "auto_pad '" + ap + "' is not supported");
    }
    try {
      l.infer_shapes();
    } catch (const Error& e) {
      fail(n, e.what());
    }
    l.weight.assign(w.v.begin(), w.v.end());
    const int cout = l.cout();
    const int64_t k = l.fan_in();
    if (b) {
      if (b->numel() != cout) fail(n, "bias of shape " + dims_str(b->dims) + " for " + std::to_string(cout) + " output channels");
      l.bias.assign(b->v.begin(), b->v.end());
    } else {
      l.bias.assign(size_t(cout), 0.0f);
    }
    if (w.quantized) l.given = given_weights(n, w, cout, k, 0, [k](int oc, int64_t i) { return oc * k + i; });
    if (ql) {
      if (b) {
        l.given->bias.assign(b->v.begin(), b->v.end());
        for (int oc = 0; oc < cout; ++oc)
          l.bias[size_t(oc)] = float(b->v[size_t(oc)] * double(cur_quant_->scale) * double(l.given->weight_scale[size_t(oc)]));
      }
    } else {
      given_bias(b, l);
    }
    shape_ = l.out;
    open_layer(std::move(l));
    if (ql) annotate(n, tensor_quant(n, konst(n, 6, "y_scale"), opt_konst(n, 7, "y_zero_point")));
    cur_ = n.output(0);
  }

  void dense(const onnx::NodeProto& n) {
    data_input_first(n);
    const std::string& op = n.op_type();
    const bool ql = op == "QLinearMatMul";
    if (!flat_)
      fail(n, "its input '" + cur_ + "' has shape [N, " + std::to_string(shape_.c) + ", " + std::to_string(shape_.h) + ", " +
              std::to_string(shape_.w) + "]; " + op + " needs a 2-D [N, features] input (Flatten first)");
    const int64_t k = shape_.size();
    Const w;
    const Const* c = nullptr;
    bool trans_b = false;
    double alpha = 1.0, beta = 1.0;
    if (ql) {
      check_input_quant(n, tensor_quant(n, konst(n, 1, "a_scale"), opt_konst(n, 2, "a_zero_point")));
      w = qlinear_weights(n, 3, 4, 5, 1);
    } else {
      if (is_int_) fail(n, "its input is quantized (use QLinearMatMul, or DequantizeLinear first)");
      w = konst(n, 1, "B");
      if (op == "Gemm") {
        if (attr_int(n, "transA", 0) != 0) fail(n, "transA = 1 is not supported");
        trans_b = attr_int(n, "transB", 0) != 0;
        alpha = attr_float(n, "alpha", 1.0f);
        beta = attr_float(n, "beta", 1.0f);
        c = opt_konst(n, 2, "C");
      }
    }
    if (w.dims.size() != 2) fail(n, "weights of shape " + dims_str(w.dims) + "; expected a 2-D matrix");
    const int64_t wk = trans_b ? w.dims[1] : w.dims[0];
    const int cout = int(trans_b ? w.dims[0] : w.dims[1]);
    if (wk != k)
      fail(n, "weights " + dims_str(w.dims) + (trans_b ? " (transB)" : "") + " expect " + std::to_string(wk) +
              " input features but its input '" + cur_ + "' has " + std::to_string(k) + " (wrong input shape?)");
    Layer l;
    l.kind = LayerKind::Dense;
    l.name = node_name(n);
    l.op = op;
    l.in = shape_;
    l.conv_out.c = cout;
    l.infer_shapes();
    auto index = [&](int oc, int64_t i) { return trans_b ? int64_t(oc) * k + i : i * cout + oc; };
    l.weight.resize(size_t(cout * k));
    for (int oc = 0; oc < cout; ++oc)
      for (int64_t i = 0; i < k; ++i) l.weight[size_t(oc * k + i)] = float(alpha * w.v[size_t(index(oc, i))]);
    l.bias.assign(size_t(cout), 0.0f);
    if (c) {
      if (c->numel() != 1 && c->numel() != cout) fail(n, "bias C of shape " + dims_str(c->dims) + " for " + std::to_string(cout) + " outputs");
      for (int oc = 0; oc < cout; ++oc) l.bias[size_t(oc)] = float(beta * c->v[c->numel() == 1 ? 0 : size_t(oc)]);
    }
    if (w.quantized) {
      l.given = given_weights(n, w, cout, k, trans_b ? 0 : 1, index);
      if (alpha != 1.0)
        for (float& s : l.given->weight_scale) s = float(double(s) * alpha);
      if (c && beta == 1.0) given_bias(c, l);
    }
    shape_ = l.out;
    flat_ = true;
    open_layer(std::move(l));
    if (ql) annotate(n, tensor_quant(n, konst(n, 6, "y_scale"), opt_konst(n, 7, "y_zero_point")));
    cur_ = n.output(0);
  }

  // Add/Sub/Mul/Div with a constant: a bias after a layer, or input preprocessing.
  void arith(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (n.input_size() != 2) fail(n, "expects two inputs");
    const bool data_first = n.input(0) == cur_;
    const Const& c = konst(n, data_first ? 1 : 0, "operand");
    if (is_int_) fail(n, "operates on a quantized tensor (DequantizeLinear first)");
    const int channels = shape_.c;
    // The constant must broadcast per channel: scalar, [C], [1, C], [C, 1, 1] or [1, C, 1, 1].
    std::vector<double> per(static_cast<size_t>(channels));
    if (c.numel() == 1) {
      std::fill(per.begin(), per.end(), c.v[0]);
    } else if (c.numel() == channels) {
      bool ok = true;
      if (!flat_) {
        // [C] alone would broadcast along W: only [C,1,1] / [1,C,1,1] are per channel.
        ok = c.dims.size() >= 3 && c.dims[c.dims.size() - 1] == 1 && c.dims[c.dims.size() - 2] == 1;
      }
      if (!ok) fail(n, "constant of shape " + dims_str(c.dims) + " is not a per-channel value for a tensor with " + std::to_string(channels) + " channels");
      per.assign(c.v.begin(), c.v.end());
    } else {
      fail(n, "constant of shape " + dims_str(c.dims) + " is neither a scalar nor per channel (" + std::to_string(channels) + " channels)");
    }
    if (layer_open_ >= 0) {
      if (op != "Add" && !(op == "Sub" && data_first))
        fail(n, op + " after a layer is not supported (only Add of a bias; put scaling into the weights)");
      Layer& l = net_.layers[size_t(layer_open_)];
      if (act_seen_) fail(n, "a bias Add after " + std::string(l.act == Activation::Relu ? "Relu" : "Clip") + " is not supported");
      if (l.given && !l.given->bias.empty()) fail(n, "adds a second bias to a layer with a quantized bias");
      for (int ch = 0; ch < channels; ++ch) l.bias[size_t(ch)] += float(op == "Sub" ? -per[size_t(ch)] : per[size_t(ch)]);
      l.fused.push_back(op + " " + node_name(n));
      cur_ = n.output(0);
      return;
    }
    // Preprocessing on the input: x' = a*x + b per channel.
    if (input_locked_) fail(n, op + " on the input after it was quantized is not supported");
    if (net_.pre_scale.empty()) {
      net_.pre_scale.assign(size_t(channels), 1.0f);
      net_.pre_shift.assign(size_t(channels), 0.0f);
    }
    for (int ch = 0; ch < channels; ++ch) {
      float& a = net_.pre_scale[size_t(ch)];
      float& b = net_.pre_shift[size_t(ch)];
      const double k = per[size_t(ch)];
      if (op == "Add") b = float(b + k);
      else if (op == "Sub" && data_first) b = float(b - k);
      else if (op == "Sub") { a = -a; b = float(k - b); }
      else if (op == "Mul") { a = float(a * k); b = float(b * k); }
      else if (op == "Div" && data_first) {
        if (k == 0) fail(n, "division by zero");
        a = float(a / k);
        b = float(b / k);
      } else {
        fail(n, "dividing a constant by the input is not supported");
      }
    }
    cur_ = n.output(0);
  }

  void activation(const onnx::NodeProto& n) {
    data_input_first(n);
    Layer* l = pending(n, n.op_type());
    float lo = 0.0f, hi = 0.0f;
    Activation a = Activation::Relu;
    if (n.op_type() == "Clip") {
      a = Activation::Clip;
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
    }
    // Compose with an activation already fused (Relu after Clip etc.).
    if (l->act == Activation::None) {
      l->act = a;
      l->clip_lo = lo;
      l->clip_hi = hi;
    } else if (a == Activation::Relu) {
      if (l->act == Activation::Clip) l->clip_lo = std::max(l->clip_lo, 0.0f);
      if (l->act == Activation::Clip) l->clip_hi = std::max(l->clip_hi, 0.0f);
    } else {
      if (l->act == Activation::Relu) lo = std::max(lo, 0.0f), hi = std::max(hi, 0.0f);
      else lo = std::max(lo, l->clip_lo), hi = std::min(hi, l->clip_hi);
      l->act = Activation::Clip;
      l->clip_lo = lo;
      l->clip_hi = std::max(lo, hi);
    }
    if (l->act == Activation::Clip && l->clip_lo == 0.0f && l->clip_hi >= 3.0e38f) l->act = Activation::Relu;
    act_seen_ = true;
    l->fused.push_back(n.op_type() + " " + node_name(n));
    cur_ = n.output(0);
  }

  void maxpool(const onnx::NodeProto& n) {
    data_input_first(n);
    for (int i = 1; i < n.output_size(); ++i)
      if (!n.output(i).empty()) fail(n, "the Indices output is not supported");
    Layer* l = pending(n, "MaxPool");
    if (pool_seen_) fail(n, "a second MaxPool on the same layer output is not supported");
    if (flat_) fail(n, "its input is flattened");
    const auto ks = attr_ints(n, "kernel_shape");
    if (ks.size() != 2 || ks[0] != ks[1])
      fail(n, "kernel_shape " + dims_str(ks) + ": only square 2-D windows are supported");
    auto st = attr_ints(n, "strides");
    if (st.empty()) st = {1, 1};
    if (st.size() != 2 || st[0] != st[1]) fail(n, "strides " + dims_str(st) + ": only equal strides are supported");
    for (int64_t p : attr_ints(n, "pads"))
      if (p != 0) fail(n, "padded max-pooling is not supported");
    for (int64_t d : attr_ints(n, "dilations"))
      if (d != 1) fail(n, "dilated max-pooling is not supported");
    const std::string ap = attr_string(n, "auto_pad", "NOTSET");
    if (ap != "NOTSET" && ap != "VALID") fail(n, "auto_pad '" + ap + "' is not supported");
    const int k = int(ks[0]), s = int(st[0]);
    if (attr_int(n, "ceil_mode", 0) != 0 &&
        ((l->conv_out.h - k) % s != 0 || (l->conv_out.w - k) % s != 0))
      fail(n, "ceil_mode = 1 with a partial last window is not supported");
    l->pool_k = k;
    l->pool_s = s;
    try {
      l->infer_shapes();
    } catch (const Error& e) {
      fail(n, e.what());
    }
    shape_ = l->out;
    pool_seen_ = true;
    l->fused.push_back("MaxPool " + node_name(n));
    cur_ = n.output(0);
  }

  void flatten(const onnx::NodeProto& n) {
    data_input_first(n);
    const int64_t total = shape_.size();
    if (n.op_type() == "Flatten") {
      const int64_t axis = attr_int(n, "axis", 1);
      if (axis != 1 && !(flat_ && axis == -1)) fail(n, "axis " + std::to_string(axis) + ": only axis = 1 (keep the batch) is supported");
    } else {
      const Const& s = konst(n, 1, "shape");
      std::vector<int64_t> cur_dims = flat_ ? std::vector<int64_t>{1, total}
                                            : std::vector<int64_t>{1, shape_.c, shape_.h, shape_.w};
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
      const bool same = t.size() == 4 && !flat_ && t[1] == shape_.c && t[2] == shape_.h && t[3] == shape_.w;
      if (!to_flat && !same)
        fail(n, "reshaping to " + dims_str(std::vector<int64_t>(s.v.begin(), s.v.end())) +
                " is not supported (only flattening [N, C, H, W] to [N, C*H*W])");
      if (same) {
        cur_ = n.output(0);
        return;
      }
    }
    flat_ = true;
    cur_ = n.output(0);
  }

  const onnx::ModelProto& model_;
  Network net_;
  std::map<std::string, Const> consts_;
  int64_t opset_ = 13;
  std::string cur_;        // the data tensor: output of the last node of the chain
  Shape3 shape_;           // its shape (one image); flattened in C, H, W order if flat_
  bool flat_ = false;
  bool is_int_ = false;    // between QuantizeLinear and DequantizeLinear (or QLinear ops)
  std::optional<TensorQuant> cur_quant_;
  int layer_open_ = -1;    // the layer later Add/Relu/Clip/MaxPool fuse into
  bool act_seen_ = false, pool_seen_ = false;
  bool input_locked_ = false;
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

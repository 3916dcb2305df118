// SPDX-License-Identifier: Apache-2.0
#include "compiler/import.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace tpu::train::compiler {

namespace {

// A data value of the ONNX graph: its tensor, and whether it is still the [B, C, H, W] image
// (the graph input before a Flatten) rather than a [B, features] matrix.
struct Value {
  int tensor = -1;
  bool image = false;
};

class Importer;

struct TrainOpConverter {
  std::string_view op;
  void (Importer::*convert)(const onnx::NodeProto& n);
};

const std::vector<TrainOpConverter>& converters();

class Importer {
 public:
  Importer(const onnx::ModelProto& m, uint32_t batch) : g_(m.graph()) { graph_.batch = batch; }
  Graph run();

  // ---- converters (the table in converters())
  void gemm(const onnx::NodeProto& n);
  void matmul(const onnx::NodeProto& n);
  void add(const onnx::NodeProto& n);  // a bias after a MatMul, or add_tensors
  void add_tensors(const onnx::NodeProto& n);
  void relu(const onnx::NodeProto& n);
  void flatten(const onnx::NodeProto& n);  // Flatten (axis 1), Reshape to [B, features]
  void identity(const onnx::NodeProto& n);
  void softmax(const onnx::NodeProto& n);  // of the logits, as the graph output: part of the loss

 private:
  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) const;
  std::string node_name(const onnx::NodeProto& n) const;
  void read_input();
  const Value& data(const onnx::NodeProto& n, int i) const;
  const Value& flat(const onnx::NodeProto& n, int i) const;
  bool is_init(const std::string& name) const { return inits_.count(name) != 0; }
  // A float initializer as a parameter of node n (each initializer trains in one place).
  Param take_param(const onnx::NodeProto& n, int i);
  int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t def) const;
  float attr_float(const onnx::NodeProto& n, const char* name, float def) const;
  void define(const onnx::NodeProto& n, Value v) { values_[n.output(0)] = v; }
  // A Dense node reading X with the weight parameter w (inputs x outputs after `transposed`).
  int dense(const onnx::NodeProto& n, const Value& x, Param w);
  void finish();

  const onnx::GraphProto& g_;
  Graph graph_;
  std::map<std::string, const onnx::TensorProto*> inits_;
  std::set<std::string> taken_;
  std::map<std::string, Value> values_;
  std::map<int, int> bias_free_dense_;  // tensor -> Dense node computing it without a bias
  std::string softmax_in_, softmax_out_;
  int index_ = 0;  // of the node being converted
};

std::string Importer::node_name(const onnx::NodeProto& n) const {
  if (!n.name().empty()) return n.name();
  return "#" + std::to_string(index_) + (n.output_size() ? " (output '" + n.output(0) + "')" : "");
}

void Importer::fail(const onnx::NodeProto& n, const std::string& what) const {
  throw std::invalid_argument("import_onnx: node '" + node_name(n) + "' (" + n.op_type() +
                              "): " + what);
}

int64_t Importer::attr_int(const onnx::NodeProto& n, const char* name, int64_t def) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return def;
}

float Importer::attr_float(const onnx::NodeProto& n, const char* name, float def) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return def;
}

void Importer::read_input() {
  const onnx::ValueInfoProto* in = nullptr;
  for (const auto& vi : g_.input()) {
    if (!is_init(vi.name())) {
      in = &vi;
      break;
    }
  }
  if (in == nullptr) throw std::invalid_argument("import_onnx: the graph has no data input");
  const auto& shape = in->type().tensor_type().shape();
  std::vector<int64_t> d;
  for (const auto& dim : shape.dim()) d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  const bool ok4 = d.size() == 4 && d[1] > 0 && d[2] > 0 && d[3] > 0;
  const bool ok2 = d.size() == 2 && d[1] > 0;
  if (!ok4 && !ok2) {
    throw std::invalid_argument("import_onnx: input '" + in->name() +
                                "' must be [batch, C, H, W] or [batch, features] with fixed "
                                "C, H, W / features");
  }
  graph_.input_c = static_cast<uint32_t>(d[1]);
  graph_.input_h = ok4 ? static_cast<uint32_t>(d[2]) : 1;
  graph_.input_w = ok4 ? static_cast<uint32_t>(d[3]) : 1;
  Tensor t{in->name(), TensorKind::Input, graph_.batch,
           graph_.input_c * graph_.input_h * graph_.input_w, false};
  graph_.input = graph_.add_tensor(t);
  values_[in->name()] = Value{graph_.input, ok4};
}

const Value& Importer::data(const onnx::NodeProto& n, int i) const {
  if (i >= n.input_size() || n.input(i).empty()) fail(n, "input " + std::to_string(i) + " missing");
  auto it = values_.find(n.input(i));
  if (it == values_.end()) {
    fail(n, "input '" + n.input(i) + "' must be a data tensor" +
                (is_init(n.input(i)) ? " (it is an initializer)" : " (it is not defined)"));
  }
  return it->second;
}

const Value& Importer::flat(const onnx::NodeProto& n, int i) const {
  const Value& v = data(n, i);
  if (v.image) fail(n, "input '" + n.input(i) + "' is a [B, C, H, W] image: Flatten it first");
  return v;
}

Param Importer::take_param(const onnx::NodeProto& n, int i) {
  if (i >= n.input_size() || !is_init(n.input(i))) {
    fail(n, "input " + std::to_string(i) + " must be an initializer (a trainable weight)");
  }
  const std::string& name = n.input(i);
  if (!taken_.insert(name).second) fail(n, "initializer '" + name + "' is trained in two places");
  const onnx::TensorProto& t = *inits_.at(name);
  if (t.data_type() != onnx::TensorProto::FLOAT) fail(n, "initializer '" + name + "' is not float32");
  Param p;
  p.initializer = name;
  size_t count = 1;
  for (int64_t d : t.dims()) {
    p.dims.push_back(d);
    count *= static_cast<size_t>(d);
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != count * 4) fail(n, "initializer '" + name + "': size mismatch");
    p.initial.resize(count);
    std::memcpy(p.initial.data(), t.raw_data().data(), count * 4);
  } else {
    if (static_cast<size_t>(t.float_data_size()) != count)
      fail(n, "initializer '" + name + "': size mismatch");
    p.initial.assign(t.float_data().begin(), t.float_data().end());
  }
  for (float v : p.initial)
    if (!std::isfinite(v)) fail(n, "initializer '" + name + "' holds a NaN or infinity");
  return p;
}

int Importer::dense(const onnx::NodeProto& n, const Value& x, Param w) {
  const uint32_t k = graph_.tensors[static_cast<size_t>(x.tensor)].cols;
  if (w.dims.size() != 2) fail(n, "weight '" + w.initializer + "' must be 2-D");
  const auto in = static_cast<uint32_t>(w.dims[w.transposed ? 1 : 0]);
  const auto out = static_cast<uint32_t>(w.dims[w.transposed ? 0 : 1]);
  if (in != k) {
    fail(n, "weight '" + w.initializer + "' has " + std::to_string(in) + " inputs, the data " +
                std::to_string(k));
  }
  w.tensor = graph_.add_tensor(Tensor{w.initializer, TensorKind::Weight, in, out, false});
  graph_.params.push_back(std::move(w));
  const std::string y = n.output(0);
  const int yt = graph_.add_tensor(Tensor{y, TensorKind::Activation, graph_.batch, out, false});
  Node d{Op::Dense, node_name(n), n.op_type(), Phase::Forward,
         static_cast<int>(graph_.nodes.size()), {x.tensor, graph_.params.back().tensor}, {yt}};
  const int id = graph_.add_node(std::move(d));
  values_[y] = Value{yt, false};
  return id;
}

int bias_dim(const Param& b) {
  if (b.dims.size() == 1) return static_cast<int>(b.dims[0]);
  if (b.dims.size() == 2 && b.dims[0] == 1) return static_cast<int>(b.dims[1]);
  return -1;
}

void Importer::gemm(const onnx::NodeProto& n) {
  if (attr_int(n, "transA", 0) != 0) fail(n, "transA = 1 is not supported");
  if (attr_float(n, "alpha", 1.0f) != 1.0f || attr_float(n, "beta", 1.0f) != 1.0f)
    fail(n, "alpha and beta must be 1");
  const Value x = flat(n, 0);
  Param w = take_param(n, 1);
  w.transposed = attr_int(n, "transB", 0) != 0;
  const int id = dense(n, x, std::move(w));
  if (n.input_size() > 2 && !n.input(2).empty()) {
    Param b = take_param(n, 2);
    const Tensor& y = graph_.tensors[static_cast<size_t>(graph_.nodes[id].out[0])];
    if (bias_dim(b) != static_cast<int>(y.cols)) fail(n, "bias must be [" + std::to_string(y.cols) + "]");
    b.tensor = graph_.add_tensor(Tensor{b.initializer, TensorKind::Weight, 1, y.cols, true});
    graph_.nodes[static_cast<size_t>(id)].in.push_back(b.tensor);
    graph_.params.push_back(std::move(b));
  } else {
    bias_free_dense_[graph_.nodes[static_cast<size_t>(id)].out[0]] = id;
  }
}

void Importer::matmul(const onnx::NodeProto& n) {
  const Value x = flat(n, 0);
  const int id = dense(n, x, take_param(n, 1));
  bias_free_dense_[graph_.nodes[static_cast<size_t>(id)].out[0]] = id;
}

void Importer::add(const onnx::NodeProto& n) {
  if (n.input_size() != 2) fail(n, "expected 2 inputs");
  const int ci = is_init(n.input(1)) ? 1 : is_init(n.input(0)) ? 0 : -1;
  if (ci < 0) return add_tensors(n);
  const Value x = flat(n, 1 - ci);
  auto it = bias_free_dense_.find(x.tensor);
  bool is_output = false;
  for (const auto& o : g_.output()) is_output |= o.name() == n.input(1 - ci);
  if (it == bias_free_dense_.end() || !graph_.readers(x.tensor).empty() || is_output) {
    fail(n, "Add of an initializer is supported only as the bias of the MatMul before it");
  }
  Node& d = graph_.nodes[static_cast<size_t>(it->second)];
  Param b = take_param(n, ci);
  Tensor& y = graph_.tensors[static_cast<size_t>(x.tensor)];
  if (bias_dim(b) != static_cast<int>(y.cols)) fail(n, "bias must be [" + std::to_string(y.cols) + "]");
  b.tensor = graph_.add_tensor(Tensor{b.initializer, TensorKind::Weight, 1, y.cols, true});
  d.in.push_back(b.tensor);
  d.onnx_op += "+Add";
  graph_.params.push_back(std::move(b));
  bias_free_dense_.erase(it);
  y.name = n.output(0);
  values_.erase(n.input(1 - ci));  // the MatMul's output without its bias exists no more
  define(n, x);
}

void Importer::add_tensors(const onnx::NodeProto& n) {
  const Value a = data(n, 0), b = data(n, 1);
  const Tensor& at = graph_.tensors[static_cast<size_t>(a.tensor)];
  const Tensor& bt = graph_.tensors[static_cast<size_t>(b.tensor)];
  if (a.image != b.image || at.rows != bt.rows || at.cols != bt.cols)
    fail(n, "the two inputs must have the same shape (no broadcasting)");
  const int yt = graph_.add_tensor(Tensor{n.output(0), TensorKind::Activation, at.rows, at.cols, false});
  graph_.add_node(Node{Op::Add, node_name(n), n.op_type(), Phase::Forward,
                       static_cast<int>(graph_.nodes.size()), {a.tensor, b.tensor}, {yt}});
  define(n, Value{yt, a.image});
}

void Importer::relu(const onnx::NodeProto& n) {
  const Value x = data(n, 0);
  const Tensor& xt = graph_.tensors[static_cast<size_t>(x.tensor)];
  const int yt = graph_.add_tensor(Tensor{n.output(0), TensorKind::Activation, xt.rows, xt.cols, false});
  graph_.add_node(Node{Op::Relu, node_name(n), n.op_type(), Phase::Forward,
                       static_cast<int>(graph_.nodes.size()), {x.tensor}, {yt}});
  define(n, Value{yt, x.image});
}

void Importer::flatten(const onnx::NodeProto& n) {
  const Value x = data(n, 0);
  if (n.op_type() == "Flatten" && attr_int(n, "axis", 1) != 1) fail(n, "only axis = 1 is supported");
  if (n.op_type() == "Reshape") {
    // The shape must be [B or -1 or 0, features or -1]: what Flatten does.
    if (n.input_size() < 2 || !is_init(n.input(1))) fail(n, "the shape must be an initializer");
    const onnx::TensorProto& s = *inits_.at(n.input(1));
    std::vector<int64_t> v(s.int64_data().begin(), s.int64_data().end());
    if (v.empty() && s.raw_data().size() % 8 == 0) {
      v.resize(s.raw_data().size() / 8);
      std::memcpy(v.data(), s.raw_data().data(), s.raw_data().size());
    }
    const int64_t f = graph_.tensors[static_cast<size_t>(x.tensor)].cols;
    const bool ok = v.size() == 2 && (v[1] == f || (v[1] == -1 && v[0] != -1));
    if (!ok) fail(n, "only a reshape to [batch, " + std::to_string(f) + "] (a Flatten) is supported");
    taken_.insert(n.input(1));
  }
  // The data is already a [batch, C*H*W] matrix in NCHW order: a Flatten moves nothing.
  define(n, Value{x.tensor, false});
}

void Importer::identity(const onnx::NodeProto& n) { define(n, data(n, 0)); }

void Importer::softmax(const onnx::NodeProto& n) {
  const Value x = flat(n, 0);
  const int64_t axis = attr_int(n, "axis", -1);
  if (axis != -1 && axis != 1) fail(n, "only a Softmax over the classes (axis -1 or 1) is supported");
  if (g_.output_size() != 1 || g_.output(0).name() != n.output(0))
    fail(n, "a Softmax must compute the graph output (it becomes part of the loss)");
  softmax_in_ = n.input(0);
  softmax_out_ = n.output(0);
  define(n, x);
}

void Importer::finish() {
  if (g_.output_size() != 1) {
    throw std::invalid_argument("import_onnx: the graph must have one output (the logits), it has " +
                                std::to_string(g_.output_size()));
  }
  const std::string& out = g_.output(0).name();
  auto it = values_.find(out);
  if (it == values_.end()) throw std::invalid_argument("import_onnx: output '" + out + "' is not computed");
  if (it->second.image || it->second.tensor == graph_.input) {
    throw std::invalid_argument("import_onnx: output '" + out + "' must be [batch, classes] logits");
  }
  if (graph_.params.empty()) {
    throw std::invalid_argument("import_onnx: the model has no trainable weight (no Gemm or MatMul "
                                "with an initializer)");
  }
  graph_.logits = it->second.tensor;
  graph_.classes = graph_.tensors[static_cast<size_t>(graph_.logits)].cols;
  graph_.tensors[static_cast<size_t>(graph_.logits)].name = softmax_in_.empty() ? out : softmax_in_;
}

Graph Importer::run() {
  if (graph_.batch == 0) throw std::invalid_argument("import_onnx: batch must be >= 1");
  for (const auto& t : g_.initializer()) inits_[t.name()] = &t;
  read_input();
  for (const auto& n : g_.node()) {
    const TrainOpConverter* c = nullptr;
    for (const auto& e : converters())
      if (e.op == n.op_type() && (n.domain().empty() || n.domain() == "ai.onnx")) c = &e;
    if (c == nullptr) fail(n, "not supported for training; supported: " + supported_train_ops());
    if (!softmax_out_.empty()) fail(n, "nodes after the output Softmax are not supported");
    if (n.output_size() < 1) fail(n, "has no output");
    (this->*(c->convert))(n);
    ++index_;
  }
  finish();
  return std::move(graph_);
}

const std::vector<TrainOpConverter>& converters() {
  static const std::vector<TrainOpConverter> table = {
      {"Add", &Importer::add},         {"Dropout", &Importer::identity},
      {"Flatten", &Importer::flatten}, {"Gemm", &Importer::gemm},
      {"Identity", &Importer::identity}, {"MatMul", &Importer::matmul},
      {"Relu", &Importer::relu},       {"Reshape", &Importer::flatten},
      {"Softmax", &Importer::softmax},
  };
  return table;
}

}  // namespace

std::string supported_train_ops() {
  std::string s;
  for (const auto& e : converters()) s += (s.empty() ? "" : ", ") + std::string(e.op);
  return s;
}

Graph import_onnx(const onnx::ModelProto& model, uint32_t batch) {
  return Importer(model, batch).run();
}

Graph import_onnx(const std::string& path_or_bytes, uint32_t batch) {
  onnx::ModelProto m;
  std::ifstream f(path_or_bytes, std::ios::binary);
  if (f) {
    std::stringstream ss;
    ss << f.rdbuf();
    if (!m.ParseFromString(ss.str()))
      throw std::invalid_argument("import_onnx: '" + path_or_bytes + "' is not an ONNX model");
  } else if (path_or_bytes.size() < 4096 && path_or_bytes.find('\0') == std::string::npos &&
             (!m.ParseFromString(path_or_bytes) || m.graph().node_size() == 0)) {
    throw std::invalid_argument("import_onnx: cannot open '" + path_or_bytes + "'");
  } else if (!m.ParseFromString(path_or_bytes)) {
    throw std::invalid_argument("import_onnx: the bytes given are not an ONNX model");
  }
  return import_onnx(m, batch);
}

}  // namespace tpu::train::compiler

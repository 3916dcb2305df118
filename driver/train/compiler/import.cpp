// SPDX-License-Identifier: Apache-2.0
#include "compiler/import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
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
  bool image = false;             // [B, C, H, W]: the graph input, or an image-layout tensor
  uint32_t c = 0, h = 1, w = 1;   // its channels and size (image)
  std::vector<uint32_t> row_map;  // a flattened image: the tensor column of ONNX feature i
  uint32_t features = 0;          // a flattened image: ONNX's feature count C*H*W
};

class Importer;

struct TrainOpConverter {
  std::string_view op;
  void (Importer::*convert)(const onnx::NodeProto& n);
};

const std::vector<TrainOpConverter>& converters();

class Importer {
 public:
  Importer(const onnx::ModelProto& m, uint32_t batch, uint32_t n) : g_(m.graph()) {
    graph_.batch = batch;
    graph_.chip_n = n;
  }
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
  void conv(const onnx::NodeProto& n);
  void pool(const onnx::NodeProto& n);         // MaxPool, AveragePool
  void global_pool(const onnx::NodeProto& n);  // GlobalAveragePool

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
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const char* name) const;
  // kernel_shape, strides, pads (and no dilation, ceil_mode or auto_pad) of a Conv or pool.
  void window(const onnx::NodeProto& n, uint32_t& kh, uint32_t& kw, uint32_t& sh, uint32_t& sw,
              uint32_t pads[4]) const;
  // An image tensor of the batch: rows h*w*batch, cols c.
  Value image(const std::string& name, uint32_t c, uint32_t h, uint32_t w);
  const Value& image_input(const onnx::NodeProto& n) const;
  const Tensor& tensor(int id) const { return graph_.tensors[static_cast<size_t>(id)]; }
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
  Value v{graph_.input, ok4, graph_.input_c, graph_.input_h, graph_.input_w, {}, 0};
  values_[in->name()] = v;
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
  if (t.data_type() != onnx::TensorProto::FLOAT)
    fail(n, "initializer '" + name + "' is not float32");
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
  const uint32_t k = x.row_map.empty() ? tensor(x.tensor).cols : x.features;
  w.row_map = x.row_map;
  if (w.dims.size() != 2) fail(n, "weight '" + w.initializer + "' must be 2-D");
  const auto in = static_cast<uint32_t>(w.dims[w.transposed ? 1 : 0]);
  const auto out = static_cast<uint32_t>(w.dims[w.transposed ? 0 : 1]);
  if (in != k) {
    fail(n, "weight '" + w.initializer + "' has " + std::to_string(in) + " inputs, the data " +
                std::to_string(k));
  }
  w.tensor = graph_.add_tensor(
      Tensor{w.initializer, TensorKind::Weight, tensor(x.tensor).cols, out, false});
  graph_.params.push_back(std::move(w));
  const std::string y = n.output(0);
  const int yt = graph_.add_tensor(Tensor{y, TensorKind::Activation, graph_.batch, out, false});
  Node d = make_node(Op::Dense, node_name(n), n.op_type(), Phase::Forward,
                     static_cast<int>(graph_.nodes.size()), {x.tensor, graph_.params.back().tensor},
                     {yt});
  const int id = graph_.add_node(std::move(d));
  values_[y] = Value{yt, false, 0, 1, 1, {}, 0};
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
    if (bias_dim(b) != static_cast<int>(y.cols))
      fail(n, "bias must be [" + std::to_string(y.cols) + "]");
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
  if (bias_dim(b) != static_cast<int>(y.cols))
    fail(n, "bias must be [" + std::to_string(y.cols) + "]");
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
  const int yt =
      graph_.add_tensor(Tensor{n.output(0), TensorKind::Activation, at.rows, at.cols, false});
  graph_.add_node(make_node(Op::Add, node_name(n), n.op_type(), Phase::Forward,
                            static_cast<int>(graph_.nodes.size()), {a.tensor, b.tensor}, {yt}));
  Value y = a;
  y.tensor = yt;
  define(n, y);
}

void Importer::relu(const onnx::NodeProto& n) {
  const Value x = data(n, 0);
  const Tensor& xt = graph_.tensors[static_cast<size_t>(x.tensor)];
  const int yt =
      graph_.add_tensor(Tensor{n.output(0), TensorKind::Activation, xt.rows, xt.cols, false});
  graph_.add_node(make_node(Op::Relu, node_name(n), n.op_type(), Phase::Forward,
                            static_cast<int>(graph_.nodes.size()), {x.tensor}, {yt}));
  Value y = x;
  y.tensor = yt;
  define(n, y);
}

void Importer::flatten(const onnx::NodeProto& n) {
  const Value x = data(n, 0);
  if (n.op_type() == "Flatten" && attr_int(n, "axis", 1) != 1)
    fail(n, "only axis = 1 is supported");
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
    if (!ok)
      fail(n, "only a reshape to [batch, " + std::to_string(f) + "] (a Flatten) is supported");
    taken_.insert(n.input(1));
  }
  if (!x.image || x.tensor == graph_.input) {
    // The graph input is placed as a [batch, C*H*W] matrix in NCHW order: a Flatten moves nothing.
    define(n, Value{x.tensor, false, 0, 1, 1, {}, 0});
    return;
  }
  // An image activation: the Dense reads it as a view (flatten_view), features in the order
  // (channel block, pixel, lane); the Dense weight's rows follow (row_map).
  const uint32_t hw = x.h * x.w, b = graph_.batch, nn = graph_.chip_n;
  if ((hw * b) % nn != 0) {
    fail(n, "batch x H x W = " + std::to_string(hw * b) +
                " must be a multiple of N = " + std::to_string(nn) + " to flatten an image");
  }
  Value v{-1, false, 0, 1, 1, {}, x.c * hw};
  for (uint32_t c = 0; c < x.c; ++c)
    for (uint32_t p = 0; p < hw; ++p) v.row_map.push_back(flatten_feature(c, p, hw, nn));
  Tensor t{n.output(0), TensorKind::Activation, b, round_up(x.c, nn) * hw, false};
  t.view_of = x.tensor;
  v.tensor = graph_.add_tensor(t);
  define(n, v);
}

void Importer::identity(const onnx::NodeProto& n) { define(n, data(n, 0)); }

void Importer::softmax(const onnx::NodeProto& n) {
  const Value x = flat(n, 0);
  const int64_t axis = attr_int(n, "axis", -1);
  if (axis != -1 && axis != 1)
    fail(n, "only a Softmax over the classes (axis -1 or 1) is supported");
  if (g_.output_size() != 1 || g_.output(0).name() != n.output(0))
    fail(n, "a Softmax must compute the graph output (it becomes part of the loss)");
  softmax_in_ = n.input(0);
  softmax_out_ = n.output(0);
  define(n, x);
}

std::vector<int64_t> Importer::attr_ints(const onnx::NodeProto& n, const char* name) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  return {};
}

void Importer::window(const onnx::NodeProto& n, uint32_t& kh, uint32_t& kw, uint32_t& sh,
                      uint32_t& sw, uint32_t pads[4]) const {
  for (const auto& a : n.attribute()) {
    if (a.name() == "auto_pad" && a.s() != "NOTSET")
      fail(n, "auto_pad is not supported (give pads)");
    if (a.name() == "ceil_mode" && a.i() != 0) fail(n, "ceil_mode = 1 is not supported");
    if (a.name() == "storage_order" && a.i() != 0) fail(n, "storage_order = 1 is not supported");
    if (a.name() == "dilations")
      for (int64_t d : a.ints())
        if (d != 1) fail(n, "dilations other than 1 are not supported");
  }
  const std::vector<int64_t> k = attr_ints(n, "kernel_shape"), s = attr_ints(n, "strides"),
                             p = attr_ints(n, "pads");
  if (k.size() != 2 || k[0] < 1 || k[1] < 1) fail(n, "kernel_shape must be 2 values >= 1");
  if (!s.empty() && (s.size() != 2 || s[0] < 1 || s[1] < 1))
    fail(n, "strides must be 2 values >= 1");
  if (!p.empty() && (p.size() != 4 || *std::min_element(p.begin(), p.end()) < 0))
    fail(n, "pads must be 4 values >= 0");
  kh = static_cast<uint32_t>(k[0]);
  kw = static_cast<uint32_t>(k[1]);
  sh = s.empty() ? 1 : static_cast<uint32_t>(s[0]);
  sw = s.empty() ? 1 : static_cast<uint32_t>(s[1]);
  // ONNX: [top, left, bottom, right]
  for (int i = 0; i < 4; ++i)
    pads[i] = p.empty() ? 0 : static_cast<uint32_t>(p[static_cast<size_t>(i)]);
}

Value Importer::image(const std::string& name, uint32_t c, uint32_t h, uint32_t w) {
  const int t =
      graph_.add_tensor(Tensor{name, TensorKind::Activation, h * w * graph_.batch, c, false});
  return Value{t, true, c, h, w, {}, 0};
}

const Value& Importer::image_input(const onnx::NodeProto& n) const {
  const Value& x = data(n, 0);
  if (!x.image) fail(n, "input '" + n.input(0) + "' must be a [B, C, H, W] image");
  return x;
}

void Importer::conv(const onnx::NodeProto& n) {
  const Value x = image_input(n);
  if (attr_int(n, "group", 1) != 1) fail(n, "group must be 1");
  ConvGeom g;
  uint32_t pads[4];
  window(n, g.kh, g.kw, g.sh, g.sw, pads);
  g.pad_top = pads[0], g.pad_left = pads[1], g.pad_bottom = pads[2], g.pad_right = pads[3];
  g.batch = graph_.batch, g.cin = x.c, g.h = x.h, g.w = x.w;
  Param w = take_param(n, 1);
  if (w.dims.size() != 4 || w.dims[1] != x.c || w.dims[2] != g.kh || w.dims[3] != g.kw) {
    fail(n, "weight '" + w.initializer + "' must be [cout, " + std::to_string(x.c) + ", " +
                std::to_string(g.kh) + ", " + std::to_string(g.kw) + "]");
  }
  g.cout = static_cast<uint32_t>(w.dims[0]);
  if (g.hp() < g.kh || g.wp() < g.kw) fail(n, "the kernel is larger than the padded input");
  const uint32_t nn = graph_.chip_n;
  // The conv input: the graph input placed by the host with the border, or a ConvPad of an image.
  int xin = x.tensor;
  const uint32_t in_cols = g.packed() ? nn : g.cin;
  if (x.tensor == graph_.input) {
    Tensor& t = graph_.tensors[static_cast<size_t>(graph_.input)];
    t.rows = g.input_rows(nn);
    t.cols = in_cols;
    graph_.input_conv = g;
  } else if (g.packed()) {
    fail(n, "a Conv with one input channel must read the graph input");
  } else if (g.hp() != g.h || g.wp() != g.w) {  // an unpadded conv reads the image itself
    xin = graph_.add_tensor(Tensor{n.output(0) + ":padded input", TensorKind::Activation,
                                   g.input_rows(nn), in_cols, false});
    // Part of the Conv's layer (the Conv is the next node).
    Node pad = make_node(Op::ConvPad, node_name(n), n.op_type(), Phase::Forward,
                         static_cast<int>(graph_.nodes.size()) + 1, {x.tensor}, {xin});
    pad.conv = g;
    graph_.add_node(std::move(pad));
  }
  w.conv = g;
  w.tensor = graph_.add_tensor(
      Tensor{w.initializer, TensorKind::Weight, g.weight_rows(nn), g.cout, false});
  const Value y = image(n.output(0), g.cout, g.ho(), g.wo());
  Node c = make_node(Op::Conv, node_name(n), n.op_type(), Phase::Forward,
                     static_cast<int>(graph_.nodes.size()), {xin, w.tensor}, {y.tensor});
  c.conv = g;
  graph_.params.push_back(std::move(w));
  if (n.input_size() > 2 && !n.input(2).empty()) {
    Param b = take_param(n, 2);
    if (bias_dim(b) != static_cast<int>(g.cout))
      fail(n, "bias must be [" + std::to_string(g.cout) + "]");
    b.tensor = graph_.add_tensor(Tensor{b.initializer, TensorKind::Weight, 1, g.cout, true});
    c.in.push_back(b.tensor);
    graph_.params.push_back(std::move(b));
  }
  graph_.add_node(std::move(c));
  define(n, y);
}

void Importer::pool(const onnx::NodeProto& n) {
  const Value x = image_input(n);
  if (x.tensor == graph_.input) fail(n, "the graph input must go to a Conv or a Flatten");
  PoolGeom g;
  uint32_t pads[4];
  window(n, g.kh, g.kw, g.sh, g.sw, pads);
  g.pad_top = pads[0], g.pad_left = pads[1], g.pad_bottom = pads[2], g.pad_right = pads[3];
  g.batch = graph_.batch, g.c = x.c, g.h = x.h, g.w = x.w;
  const bool max = n.op_type() == "MaxPool";
  if (g.kh > g.h + g.pad_top + g.pad_bottom || g.kw > g.w + g.pad_left + g.pad_right)
    fail(n, "the window is larger than the padded input");
  if (max &&
      (g.pad_top >= g.kh || g.pad_bottom >= g.kh || g.pad_left >= g.kw || g.pad_right >= g.kw))
    fail(n, "pads must be smaller than the window");
  if (!max && (pads[0] || pads[1] || pads[2] || pads[3]))
    fail(n, "AveragePool with pads is not supported");
  const Value y = image(n.output(0), g.c, g.ho(), g.wo());
  Node p = make_node(max ? Op::MaxPool : Op::AvgPool, node_name(n), n.op_type(), Phase::Forward,
                     static_cast<int>(graph_.nodes.size()), {x.tensor}, {y.tensor});
  if (max) {
    const Tensor& yt = tensor(y.tensor);
    p.out.push_back(graph_.add_tensor(
        Tensor{"argmax(" + n.output(0) + ")", TensorKind::Activation, yt.rows, yt.cols, false}));
  }
  p.pool = g;
  graph_.add_node(std::move(p));
  define(n, y);
}

void Importer::global_pool(const onnx::NodeProto& n) {
  const Value x = image_input(n);
  if (x.tensor == graph_.input) fail(n, "the graph input must go to a Conv or a Flatten");
  PoolGeom g;
  g.batch = graph_.batch, g.c = x.c, g.h = x.h, g.w = x.w;
  g.kh = x.h, g.kw = x.w, g.sh = 1, g.sw = 1;
  // [B, C, 1, 1]: a [batch, C] matrix, features in ONNX's order already.
  const int yt =
      graph_.add_tensor(Tensor{n.output(0), TensorKind::Activation, graph_.batch, x.c, false});
  Node p = make_node(Op::GlobalAvgPool, node_name(n), n.op_type(), Phase::Forward,
                     static_cast<int>(graph_.nodes.size()), {x.tensor}, {yt});
  p.pool = g;
  graph_.add_node(std::move(p));
  define(n, Value{yt, false, 0, 1, 1, {}, 0});
}

void Importer::finish() {
  if (g_.output_size() != 1) {
    throw std::invalid_argument(
        "import_onnx: the graph must have one output (the logits), it has " +
        std::to_string(g_.output_size()));
  }
  const std::string& out = g_.output(0).name();
  auto it = values_.find(out);
  if (it == values_.end())
    throw std::invalid_argument("import_onnx: output '" + out + "' is not computed");
  if (it->second.image || it->second.tensor == graph_.input) {
    throw std::invalid_argument("import_onnx: output '" + out +
                                "' must be [batch, classes] logits");
  }
  if (graph_.params.empty()) {
    throw std::invalid_argument(
        "import_onnx: the model has no trainable weight (no Gemm or MatMul "
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
  // The host places the input once, in the layout of its readers: one Conv (its input with the
  // border), or any number of Flatten / Reshape / Gemm / MatMul ([batch, C*H*W]).
  uint32_t input_reads = 0;
  bool conv_reads_input = false;
  for (const auto& n : g_.node()) {
    for (const auto& in : n.input()) {
      if (in != tensor(graph_.input).name) continue;
      static const std::set<std::string> kReaders = {"Conv", "Flatten", "Reshape", "Gemm",
                                                     "MatMul"};
      conv_reads_input |= n.op_type() == "Conv";
      if (kReaders.count(n.op_type()) == 0 || (++input_reads > 1 && conv_reads_input)) {
        fail(n, "the graph input must be read by one Conv, or by Flatten, Reshape, Gemm or MatMul");
      }
    }
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
      {"Add", &Importer::add},
      {"AveragePool", &Importer::pool},
      {"Conv", &Importer::conv},
      {"Dropout", &Importer::identity},
      {"Flatten", &Importer::flatten},
      {"Gemm", &Importer::gemm},
      {"GlobalAveragePool", &Importer::global_pool},
      {"Identity", &Importer::identity},
      {"MatMul", &Importer::matmul},
      {"MaxPool", &Importer::pool},
      {"Relu", &Importer::relu},
      {"Reshape", &Importer::flatten},
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

Graph import_onnx(const onnx::ModelProto& model, uint32_t batch, uint32_t n) {
  if (n < 4 || (n & (n - 1)) != 0)
    throw std::invalid_argument("import_onnx: N must be a power of two >= 4");
  return Importer(model, batch, n).run();
}

Graph import_onnx(const std::string& path_or_bytes, uint32_t batch, uint32_t n) {
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
  return import_onnx(m, batch, n);
}

}  // namespace tpu::train::compiler

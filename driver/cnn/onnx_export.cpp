// SPDX-License-Identifier: Apache-2.0
#include "onnx_export.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>

namespace tpu::cnn {

struct OnnxGraph::Impl {
  onnx::ModelProto model;
  onnx::GraphProto* graph = nullptr;
};

OnnxGraph::OnnxGraph(const std::string& name, int opset) : impl_(std::make_unique<Impl>()) {
  auto& m = impl_->model;
  m.set_ir_version(7);
  m.set_producer_name("tpu-rtl");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  impl_->graph = m.mutable_graph();
  impl_->graph->set_name(name);
}

OnnxGraph::~OnnxGraph() = default;

namespace {
void set_shape(onnx::ValueInfoProto* vi, const std::vector<int64_t>& dims) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(d);
  }
}
onnx::TensorProto* new_init(onnx::GraphProto* g, const std::string& name,
                            const std::vector<int64_t>& dims, int type) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  return t;
}
}  // namespace

void OnnxGraph::input(const std::string& name, const std::vector<int64_t>& dims) {
  auto* vi = impl_->graph->add_input();
  vi->set_name(name);
  set_shape(vi, dims);
}

void OnnxGraph::output(const std::string& name, const std::vector<int64_t>& dims) {
  auto* vi = impl_->graph->add_output();
  vi->set_name(name);
  if (dims.empty())
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  else
    set_shape(vi, dims);
}

void OnnxGraph::init_float(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<float>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::FLOAT);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}
void OnnxGraph::init_int8(const std::string& name, const std::vector<int64_t>& dims,
                          const std::vector<int8_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::INT8);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
}
void OnnxGraph::init_uint8(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<uint8_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::UINT8);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
}
void OnnxGraph::init_int32(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<int32_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::INT32);
  for (int32_t x : v) t->add_int32_data(x);  // the typed field, to exercise both encodings
}
void OnnxGraph::init_int64(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<int64_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::INT64);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
}

void OnnxGraph::node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs,
                     const std::string& name, const std::string& domain) {
  if (!domain.empty()) {
    bool have = false;
    for (const auto& o : impl_->model.opset_import()) have |= o.domain() == domain;
    if (!have) {
      auto* o = impl_->model.add_opset_import();
      o->set_domain(domain);
      o->set_version(1);
    }
  }
  auto* n = impl_->graph->add_node();
  n->set_op_type(op);
  if (!domain.empty()) n->set_domain(domain);
  n->set_name(name.empty() ? (outputs.empty() ? op : outputs[0] + "_" + op) : name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& a : attrs) {
    auto* at = n->add_attribute();
    at->set_name(a.name);
    switch (a.kind) {
      case OnnxAttr::Kind::Int:
        at->set_type(onnx::AttributeProto::INT);
        at->set_i(a.i);
        break;
      case OnnxAttr::Kind::Float:
        at->set_type(onnx::AttributeProto::FLOAT);
        at->set_f(a.f);
        break;
      case OnnxAttr::Kind::Ints:
        at->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : a.ints) at->add_ints(x);
        break;
      case OnnxAttr::Kind::String:
        at->set_type(onnx::AttributeProto::STRING);
        at->set_s(a.s);
        break;
    }
  }
}

std::string OnnxGraph::serialize() const {
  std::string s;
  if (!impl_->model.SerializeToString(&s)) throw Error("cannot serialize the ONNX model");
  return s;
}

void OnnxGraph::save(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  const std::string s = serialize();
  f.write(s.data(), long(s.size()));
  if (!f) throw Error(path + ": cannot write");
}

// ---------------------------------------------------------------------------------------------

namespace {

std::vector<int64_t> input_dims(const Shape3& s, int64_t batch) {
  return {batch < 0 ? -1 : batch, s.c, s.h, s.w};
}
// The output's dims: [batch, features] after a Gemm, [batch, C, H, W] otherwise.
std::vector<int64_t> output_dims(const Shape3& s, bool flat, int64_t batch) {
  if (flat) return {batch < 0 ? -1 : batch, s.size()};
  return input_dims(s, batch);
}

std::string layer_error(const LayerGeometry& l, size_t i, const std::string& msg) {
  return "layer " + std::to_string(i) + " '" + l.name + "' (" + l.op + "): " + msg;
}

std::vector<OnnxAttr> conv_attrs(const LayerGeometry& l) {
  return {OnnxAttr::Ints("kernel_shape", {l.kh, l.kw}), OnnxAttr::Ints("strides", {l.sh, l.sw}),
          OnnxAttr::Ints("pads", {l.pad_t, l.pad_l, l.pad_b, l.pad_r}),
          OnnxAttr::Ints("dilations", {l.dh, l.dw}), OnnxAttr::Int("group", l.group)};
}
// A Dense of groups as a Conv whose kernel covers its whole input image.
std::vector<OnnxAttr> dense_conv_attrs(const LayerGeometry& l) {
  return {OnnxAttr::Ints("kernel_shape", {l.in.h, l.in.w}), OnnxAttr::Ints("strides", {1, 1}),
          OnnxAttr::Ints("pads", {0, 0, 0, 0}), OnnxAttr::Int("group", l.group)};
}
// An AveragePool with per-pixel divisors as ONNX writes it: the layer's padding with
// count_include_pad = 0 (every window averages the input taps it covers; ceil_mode's extra
// windows are in the padding). Throws when the divisors are another count (a Pad before it,
// count_include_pad = 1 with a partial ceil-mode window), which does not import back.
std::vector<OnnxAttr> divisor_pool_attrs(const LayerGeometry& l, size_t i) {
  auto counts = [](int outs, int k, int st, int pad, int n) {
    std::vector<int> c(static_cast<size_t>(outs));
    for (int o = 0; o < outs; ++o)
      c[size_t(o)] = std::min(o * st - pad + k, n) - std::max(o * st - pad, 0);
    return c;
  };
  if (l.group != l.in.c || l.cout() != l.in.c || l.dh != 1 || l.dw != 1 ||
      counts(l.out.h, l.kh, l.sh, l.pad_t, l.in.h) != l.avg_lines ||
      counts(l.out.w, l.kw, l.sw, l.pad_l, l.in.w) != l.avg_cols)
    throw Error(layer_error(l, i,
                            "an AveragePool whose divisors count padding taps (a Pad before it, or "
                            "count_include_pad = 1 with a partial ceil-mode window) has no ONNX "
                            "form that imports back; export the model it came from"));
  return {OnnxAttr::Ints("kernel_shape", {l.kh, l.kw}), OnnxAttr::Ints("strides", {l.sh, l.sw}),
          OnnxAttr::Ints("pads", {l.pad_t, l.pad_l, l.pad_b, l.pad_r}),
          OnnxAttr::Int("count_include_pad", 0)};
}
// Whether the layer max-pools (a Copy's padding is its pool's border; a Conv's is its own).
bool pooled(const LayerGeometry& l) {
  return l.pool_k > 1 || l.pool_s > 1 ||
         (l.kind == LayerKind::Copy && (l.pad_t || l.pad_l || l.pad_b || l.pad_r));
}
// The layer's max-pool (a Copy's with its padding, which ONNX's MaxPool also never picks).
std::vector<OnnxAttr> pool_attrs(const LayerGeometry& l) {
  std::vector<OnnxAttr> a{OnnxAttr::Ints("kernel_shape", {l.pool_k, l.pool_k}),
                          OnnxAttr::Ints("strides", {l.pool_s, l.pool_s})};
  // A Copy's border and a fused pool's padding (the importer gives a layer one or the other).
  const bool copy = l.kind == LayerKind::Copy;
  if (copy || l.pool_padded())
    a.push_back(OnnxAttr::Ints(
        "pads", {(copy ? l.pad_t : 0) + l.pool_pad_t, (copy ? l.pad_l : 0) + l.pool_pad_l,
                 (copy ? l.pad_b : 0) + l.pool_pad_b, (copy ? l.pad_r : 0) + l.pool_pad_r}));
  return a;
}

// How a Dense layer is written.
enum class DenseForm { Gemm, GlobalPool, GroupedConv };
DenseForm dense_form(const LayerGeometry& l, size_t i, bool input_flat, bool global_pool_weights) {
  if (l.group == 1) return DenseForm::Gemm;
  if (!input_flat && global_pool_weights && l.group == l.in.c && l.cout() == l.in.c)
    return DenseForm::GlobalPool;
  if (!input_flat && l.in.c % l.group == 0) return DenseForm::GroupedConv;
  throw Error(layer_error(l, i, "a grouped Dense of a flattened input has no ONNX form"));
}
// What the importer makes of GlobalAveragePool: float weights 1 / pixels.
float global_pool_weight(const LayerGeometry& l) { return 1.0f / float(int64_t(l.in.h) * l.in.w); }

// The ONNX op of a LUT function has its name.
const char* lut_op(LutFunc f) { return lut_func_name(f); }
std::vector<OnnxAttr> lut_attrs(LutFunc f, float alpha, float beta) {
  if (f == LutFunc::LeakyRelu) return {OnnxAttr::Float("alpha", alpha)};
  if (f == LutFunc::HardSigmoid)
    return {OnnxAttr::Float("alpha", alpha), OnnxAttr::Float("beta", beta)};
  return {};
}
// HardSwish is an opset 14 op.
LutFunc lut_func_of(const Layer& l) { return l.lut; }
LutFunc lut_func_of(const QLayer& l) { return l.lut_func; }
template <typename L>
int opset_for(const std::vector<L>& layers) {
  for (const auto& l : layers)
    if (l.act == Activation::Lut && lut_func_of(l) == LutFunc::HardSwish) return 14;
  return 13;
}
// Max-pooling after the activation is written before it (or fused by the importer) only when
// they commute.
template <typename L>
void check_pool_after_lut(const L& l, size_t i) {
  if (l.act == Activation::Lut && l.pool_k > 1 && !lut_func_monotonic(lut_func_of(l)))
    throw Error(layer_error(l, i,
                            std::string("max-pooling after ") + lut_func_name(lut_func_of(l)) +
                                ", which is not monotonic, does not import back as one layer"));
}

// Preprocessing as Mul + Add of per-channel constants.
std::string export_pre(OnnxGraph& g, const std::vector<float>& a, const std::vector<float>& b,
                       const Shape3& in, std::string x) {
  if (a.empty()) return x;
  g.init_float("pre_scale", {1, in.c, 1, 1}, a);
  g.init_float("pre_shift", {1, in.c, 1, 1}, b);
  g.node("Mul", {x, "pre_scale"}, {"pre_mul"});
  g.node("Add", {"pre_mul", "pre_shift"}, {"pre_add"});
  return "pre_add";
}

// The graph output "logits" from tensor x (a float tensor): the host's Softmax / LogSoftmax
// when the network has one, else an Identity.
void finish_output(OnnxGraph& g, const std::string& x, const std::string& host_softmax) {
  if (host_softmax.empty())
    g.node("Identity", {x}, {"logits"});
  else
    g.node(host_softmax, {x}, {"logits"}, {OnnxAttr::Int("axis", 1)}, "/" + host_softmax);
}

// A per-channel PRelu as the importer makes it: layers i-2 and i-1 copy relu(x) and relu(-x)
// of one tensor (channel_scale +1 and -1) and layer i adds them with per-channel factors
// -slope. Returns the slopes, empty if layer i is not such an Add.
std::vector<float> prelu_slopes(const Network& net, size_t i) {
  const Layer& a = net.layers[i];
  if (a.kind != LayerKind::Add || a.channel_scale.empty() || i < 2 || a.pool_k > 1 ||
      a.act != Activation::None || a.inputs != std::vector<int>{int(i) - 2, int(i) - 1})
    return {};
  for (int k = 0; k < 2; ++k) {
    const Layer& c = net.layers[i - 2 + size_t(k)];
    if (c.kind != LayerKind::Copy || c.act != Activation::Relu || c.inputs.size() != 1 ||
        c.inputs != net.layers[i - 2].inputs || pooled(c) ||
        c.channel_scale.size() != size_t(c.cout()))
      return {};
    for (float f : c.channel_scale)
      if (f != (k == 0 ? 1.0f : -1.0f)) return {};
  }
  for (size_t j = i + 1; j < net.layers.size(); ++j)
    for (int in : net.layers[j].inputs)
      if (in == int(i) - 2 || in == int(i) - 1) return {};  // the copies are read by the Add only
  std::vector<float> slope;
  for (float f : a.channel_scale) slope.push_back(-f);
  return slope;
}

void quant_init(OnnxGraph& g, const std::string& name, const TensorQuant& q) {
  g.init_float(name + "_scale", {}, {q.scale});
  if (q.is_unsigned)
    g.init_uint8(name + "_zp", {}, {uint8_t(q.zero_point)});
  else
    g.init_int8(name + "_zp", {}, {int8_t(q.zero_point)});
}

// Concat (axis 1) of several tensors; one is returned as it is.
std::string concat(OnnxGraph& g, const std::vector<std::string>& xs, const std::string& p) {
  if (xs.size() == 1) return xs[0];
  g.node("Concat", xs, {p + "_cat"}, {OnnxAttr::Int("axis", 1)}, p + "_concat");
  return p + "_cat";
}

// The LUT function, ReLU or Clip in the float domain. `as_mul`: HardSwish as x * HardSigmoid(x)
// (a Copy of a tensor nothing else reads comes from that form; HardSwish would fuse into the
// layer computing the tensor).
std::string float_act(OnnxGraph& g, Activation a, LutFunc f, float alpha, float beta, float lo,
                      float hi, const std::string& p, const std::string& x, bool as_mul = false) {
  if (a == Activation::Lut && f == LutFunc::HardSwish && as_mul) {
    g.node("HardSigmoid", {x}, {p + "_hsig"},
           {OnnxAttr::Float("alpha", 1.0f / 6.0f), OnnxAttr::Float("beta", 0.5f)});
    g.node("Mul", {x, p + "_hsig"}, {p + "_lut"});
    return p + "_lut";
  }
  switch (a) {
    case Activation::None:
      return x;
    case Activation::Relu:
      g.node("Relu", {x}, {p + "_relu"});
      return p + "_relu";
    case Activation::Clip:
      g.init_float(p + "_lo", {}, {lo});
      g.init_float(p + "_hi", {}, {hi});
      g.node("Clip", {x, p + "_lo", p + "_hi"}, {p + "_clip"});
      return p + "_clip";
    case Activation::Lut:
      g.node(lut_op(f), {x}, {p + "_lut"}, lut_attrs(f, alpha, beta));
      return p + "_lut";
  }
  return x;
}
// A quantized layer's activation in the float domain (Clip bounds from its integer ones).
std::string float_act(OnnxGraph& g, const QLayer& l, const std::string& p, const std::string& x) {
  return float_act(g, l.act, l.lut_func, l.lut_alpha, l.lut_beta,
                   float(l.lo - l.out_q.zero_point) * l.out_q.scale,
                   float(l.hi - l.out_q.zero_point) * l.out_q.scale, p, x);
}

}  // namespace

std::string export_float_onnx(const Network& net, int64_t batch) {
  OnnxGraph g(net.name, opset_for(net.layers));
  g.input("input", input_dims(net.input, batch));
  const std::string in = export_pre(g, net.pre_scale, net.pre_shift, net.input, "input");
  std::vector<std::string> out(net.layers.size());
  std::vector<char> flat(net.layers.size(), 0);
  auto name_of = [&](int p) { return p == kNetworkInput ? in : out[size_t(p)]; };
  std::vector<char> prelu_part(net.layers.size(), 0);  // the copies of a per-channel PRelu
  for (size_t i = 0; i < net.layers.size(); ++i)
    if (!prelu_slopes(net, i).empty()) prelu_part[i - 2] = prelu_part[i - 1] = 1;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    check_pool_after_lut(l, i);
    if (l.raw_out)
      throw Error(
          layer_error(l, i, "an int32 output (MatMulInteger / ConvInteger) has no float form"));

    const std::string p = "l" + std::to_string(i);
    bool f = l.inputs[0] != kNetworkInput && flat[size_t(l.inputs[0])];
    if (prelu_part[i]) continue;
    if (!l.channel_scale.empty()) {
      const std::vector<float> slope = prelu_slopes(net, i);
      if (slope.empty())
        throw Error(
            layer_error(l, i, "per-channel factors outside a per-channel PRelu have no ONNX form"));
      g.init_float(p + "_slope", {l.cout(), 1, 1}, slope);
      g.node("PRelu", {name_of(net.layers[i - 2].inputs[0]), p + "_slope"}, {p + "_prelu"}, {},
             p + "_prelu");
      out[i] = p + "_prelu";
      flat[i] =
          net.layers[i - 2].inputs[0] != kNetworkInput && flat[size_t(net.layers[i - 2].inputs[0])];
      continue;
    }
    std::string x;
    if (l.kind == LayerKind::Add) {
      g.node("Add", {name_of(l.inputs[0]), name_of(l.inputs[1])}, {p + "_add"}, {}, p + "_add");
      x = p + "_add";
    } else {
      std::vector<std::string> xs;
      for (int s : l.inputs) xs.push_back(name_of(s));
      x = concat(g, xs, p);
    }
    if (l.per_pixel_divisor()) {
      g.node("AveragePool", {x}, {p + "_avg"}, divisor_pool_attrs(l, i), p + "_avg");
      x = p + "_avg";
    } else if (l.kind == LayerKind::Conv) {
      g.init_float(p + "_w", {l.cout(), l.in.c / l.group, l.kh, l.kw}, l.weight);
      g.init_float(p + "_b", {l.cout()}, l.bias);
      g.node("Conv", {x, p + "_w", p + "_b"}, {p + "_conv"}, conv_attrs(l), p + "_conv");
      x = p + "_conv";
    } else if (l.kind == LayerKind::Dense) {
      bool gp = true;
      for (float w : l.weight) gp &= w == global_pool_weight(l);
      for (float b : l.bias) gp &= b == 0.0f;
      switch (dense_form(l, i, f, gp)) {
        case DenseForm::Gemm:
          if (!f) {
            g.node("Flatten", {x}, {p + "_flat"}, {OnnxAttr::Int("axis", 1)});
            x = p + "_flat";
          }
          g.init_float(p + "_w", {l.cout(), l.fan_in()}, l.weight);
          g.init_float(p + "_b", {l.cout()}, l.bias);
          g.node("Gemm", {x, p + "_w", p + "_b"}, {p + "_gemm"}, {OnnxAttr::Int("transB", 1)},
                 p + "_gemm");
          x = p + "_gemm";
          f = true;
          break;
        case DenseForm::GlobalPool:
          g.node("GlobalAveragePool", {x}, {p + "_gap"}, {}, p + "_gap");
          x = p + "_gap";
          break;
        case DenseForm::GroupedConv:
          g.init_float(p + "_w", {l.cout(), l.in.c / l.group, l.in.h, l.in.w}, l.weight);
          g.init_float(p + "_b", {l.cout()}, l.bias);
          g.node("Conv", {x, p + "_w", p + "_b"}, {p + "_conv"}, dense_conv_attrs(l), p + "_conv");
          x = p + "_conv";
          break;
      }
    } else if (l.kind == LayerKind::Copy && pooled(l)) {
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l), p + "_pool");
      x = p + "_pool";
    }
    x = float_act(g, l.act, l.lut, l.lut_alpha, l.lut_beta, l.clip_lo, l.clip_hi, p, x,
                  l.kind == LayerKind::Copy && l.inputs.size() == 1);
    if (l.kind != LayerKind::Copy && pooled(l)) {
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l));
      x = p + "_pool";
    }
    out[i] = x;
    flat[i] = f;
  }
  finish_output(g, out.back(), net.host_softmax);
  g.output("logits", output_dims(net.layers.back().out, flat.back() != 0, batch));
  return g.serialize();
}

namespace {

std::vector<float> bias_scales(const QLayer& l) {
  std::vector<float> s(size_t(l.cout()));
  for (int oc = 0; oc < l.cout(); ++oc)
    s[size_t(oc)] = float(double(l.in_q.scale) * double(l.weight_scale[size_t(oc)]));
  return s;
}

bool same_input_quant(const QLayer& l) {
  for (const auto& q : l.in_qs)
    if (!(q == l.in_q)) return false;
  return true;
}

// Whether a grouped Dense is what quantize() makes of the importer's GlobalAveragePool (float
// weights 1 / pixels, no bias), so that GlobalAveragePool imports back to the same integers.
bool quantized_global_pool(const QLayer& l) {
  const float w = global_pool_weight(l);
  const float ws = float(std::fabs(double(w)) / 127.0);
  const int8_t wq = int8_t(round_clamp(double(w) / double(ws), -127, 127));
  for (int8_t v : l.weight)
    if (v != wq) return false;
  for (float s : l.weight_scale)
    if (s != ws) return false;
  for (int32_t b : l.bias)
    if (b != 0) return false;
  return same_input_quant(l);
}

// DequantizeLinear of the int8 weights (per output channel) and of the int32 bias.
void qdq_params(OnnxGraph& g, const QLayer& l, const std::string& p,
                const std::vector<int64_t>& wd) {
  g.init_int8(p + "_wq", wd, l.weight);
  g.init_float(p + "_ws", {l.cout()}, l.weight_scale);
  g.init_int8(p + "_wz", {l.cout()}, std::vector<int8_t>(size_t(l.cout()), 0));
  g.node("DequantizeLinear", {p + "_wq", p + "_ws", p + "_wz"}, {p + "_w"},
         {OnnxAttr::Int("axis", 0)});
  g.init_int32(p + "_bq", {l.cout()}, l.bias);
  g.init_float(p + "_bs", {l.cout()}, bias_scales(l));
  g.init_int32(p + "_bz", {l.cout()}, std::vector<int32_t>(size_t(l.cout()), 0));
  g.node("DequantizeLinear", {p + "_bq", p + "_bs", p + "_bz"}, {p + "_b"},
         {OnnxAttr::Int("axis", 0)});
}

// x quantized and dequantized with the parameters `q` (initializers q_scale, q_zp).
std::string qdq(OnnxGraph& g, const std::string& x, const std::string& q, const std::string& out) {
  g.node("QuantizeLinear", {x, q + "_scale", q + "_zp"}, {out + "_q"});
  g.node("DequantizeLinear", {out + "_q", q + "_scale", q + "_zp"}, {out + "_dq"});
  return out + "_dq";
}

// A HardSwish Copy reading one tensor in its own quantization: written as x * HardSigmoid(x).
// (After a requantization the HardSwish op fuses into the requantizing copy instead.)
bool hardswish_as_mul(const QLayer& l) {
  return l.kind == LayerKind::Copy && l.act == Activation::Lut &&
         l.lut_func == LutFunc::HardSwish && l.inputs.size() == 1 && l.pre_q == l.in_q;
}

void check_quantized_layer(const QLayer& l, size_t i) {
  check_pool_after_lut(l, i);
  if (l.raw)
    throw Error(layer_error(l, i,
                            "an int32 output (MatMulInteger / ConvInteger) has no quantized "
                            "export here; export the model it came from"));
  bool negated = false;
  for (int32_t m : l.mult) negated |= m < 0;
  if ((l.kind == LayerKind::Add && l.weight.size() != 2) || (l.kind == LayerKind::Copy && negated))
    throw Error(layer_error(
        l, i,
        "per-channel factors (a per-channel PRelu) have no quantized ONNX form that imports "
        "back (the importer quantizes its ReLU copies only by calibration)"));
  if (l.has_weights() && !same_input_quant(l))
    throw Error(layer_error(
        l, i,
        "its concatenated inputs have different scales (folded into the weights), which "
        "ONNX cannot express"));
}

}  // namespace

std::string export_qdq_onnx(const QuantNetwork& net, int64_t batch) {
  OnnxGraph g(net.name + " (QDQ)", opset_for(net.layers));
  g.input("input", input_dims(net.input, batch));
  quant_init(g, "in", net.input_q);
  const std::string in =
      qdq(g, export_pre(g, net.pre_scale, net.pre_shift, net.input, "input"), "in", "in");
  std::vector<std::string> out(net.layers.size());
  std::vector<char> flat(net.layers.size(), 0);
  auto name_of = [&](int p) { return p == kNetworkInput ? in : out[size_t(p)]; };
  auto quant_of = [&](int p) {
    return p == kNetworkInput ? std::string("in") : "l" + std::to_string(p) + "_out";
  };
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const QLayer& l = net.layers[i];
    check_quantized_layer(l, i);
    const std::string p = "l" + std::to_string(i);
    quant_init(g, p + "_out", l.out_q);
    bool f = l.inputs[0] != kNetworkInput && flat[size_t(l.inputs[0])];
    std::string x;
    if (l.kind == LayerKind::Add) {
      g.node("Add", {name_of(l.inputs[0]), name_of(l.inputs[1])}, {p + "_add"}, {}, p + "_add");
      x = p + "_add";
    } else {
      std::vector<std::string> xs;
      for (int s : l.inputs) xs.push_back(name_of(s));
      x = concat(g, xs, p);
      // As ONNX Runtime quantizes a Concat: its output gets a Q/DQ pair (the inputs' own).
      if (xs.size() > 1 && same_input_quant(l)) x = qdq(g, x, quant_of(l.inputs[0]), p + "_cat");
    }
    if (l.per_pixel_divisor()) {
      g.node("AveragePool", {x}, {p + "_avg"}, divisor_pool_attrs(l, i), p + "_avg");
      x = p + "_avg";
    } else if (l.kind == LayerKind::Conv) {
      qdq_params(g, l, p, {l.cout(), l.in.c / l.group, l.kh, l.kw});
      g.node("Conv", {x, p + "_w", p + "_b"}, {p + "_conv"}, conv_attrs(l), p + "_conv");
      x = p + "_conv";
    } else if (l.kind == LayerKind::Dense) {
      switch (dense_form(l, i, f, quantized_global_pool(l))) {
        case DenseForm::Gemm:
          if (!f) {
            g.node("Flatten", {x}, {p + "_flat"}, {OnnxAttr::Int("axis", 1)});
            x = p + "_flat";
          }
          qdq_params(g, l, p, {l.cout(), l.fan_in()});
          g.node("Gemm", {x, p + "_w", p + "_b"}, {p + "_gemm"}, {OnnxAttr::Int("transB", 1)},
                 p + "_gemm");
          x = p + "_gemm";
          f = true;
          break;
        case DenseForm::GlobalPool:
          g.node("GlobalAveragePool", {x}, {p + "_gap"}, {}, p + "_gap");
          x = p + "_gap";
          break;
        case DenseForm::GroupedConv:
          qdq_params(g, l, p, {l.cout(), l.in.c / l.group, l.in.h, l.in.w});
          g.node("Conv", {x, p + "_w", p + "_b"}, {p + "_conv"}, dense_conv_attrs(l), p + "_conv");
          x = p + "_conv";
          break;
      }
    } else if (l.kind == LayerKind::Copy && pooled(l)) {
      // Max-pooling first (it commutes with the requantization and the activation).
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l), p + "_pool");
      x = p + "_pool";
    }
    if (l.act == Activation::Lut) {
      // The function's input quantization is the Q/DQ pair before it.
      quant_init(g, p + "_pre", l.pre_q);
      x = qdq(g, x, p + "_pre", p + "_pre");
      x = float_act(g, l.act, l.lut_func, l.lut_alpha, l.lut_beta, 0, 0, p, x, hardswish_as_mul(l));
    } else {
      x = float_act(g, l, p, x);
    }
    if (l.kind != LayerKind::Copy && pooled(l)) {
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l));
      x = p + "_pool";
    }
    out[i] = qdq(g, x, p + "_out", p);
    flat[i] = f;
  }
  finish_output(g, out.back(), net.host_softmax);
  g.output("logits", output_dims(net.layers.back().out, flat.back() != 0, batch));
  return g.serialize();
}

namespace {

const char* const kMicrosoft = "com.microsoft";

// One layer of the QLinear export as it is written: the tensor `x` so far (quantized by `xq`'s
// scale and zero point, `xquant`), and the quantization `tq` / `target` its linear part
// produces (the LUT's input, or the output).
struct QLinearLayer {
  OnnxGraph& g;
  const QLayer& l;
  size_t i;
  std::string p, tq;
  TensorQuant target;
  bool lut, pool_first, f;
  std::string x, xq;
  TensorQuant xquant;
};

std::string qlinear_quant_of(int p) {
  return p == kNetworkInput ? std::string("in") : "l" + std::to_string(p) + "_out";
}

// The layer's inputs: one, or QLinearAdd / QLinearConcat of several.
void qlinear_inputs(QLinearLayer& s, const std::vector<std::string>& out) {
  const QLayer& l = s.l;
  auto name_of = [&](int p) { return p == kNetworkInput ? std::string("in_q") : out[size_t(p)]; };
  s.x = name_of(l.inputs[0]);
  s.xq = qlinear_quant_of(l.inputs[0]);
  s.xquant = l.in_q;
  const std::string& p = s.p;
  if (l.kind == LayerKind::Add) {
    const std::string b = qlinear_quant_of(l.inputs[1]);
    s.g.node("QLinearAdd",
             {s.x, s.xq + "_scale", s.xq + "_zp", name_of(l.inputs[1]), b + "_scale", b + "_zp",
              s.tq + "_scale", s.tq + "_zp"},
             {p + "_add"}, {}, p + "_qadd", kMicrosoft);
    s.x = p + "_add";
    s.xq = s.tq;
    s.xquant = s.target;
  } else if (l.inputs.size() > 1) {
    // Shared by the inputs (read in place by the importer), or a Copy's own requantization
    // (unless it max-pools first).
    if (l.kind == LayerKind::Copy && !(s.pool_first && pooled(l))) s.xq = s.tq, s.xquant = s.target;
    std::vector<std::string> ins{s.xq + "_scale", s.xq + "_zp"};
    for (int in : l.inputs)
      ins.insert(ins.end(),
                 {name_of(in), qlinear_quant_of(in) + "_scale", qlinear_quant_of(in) + "_zp"});
    s.g.node("QLinearConcat", ins, {p + "_cat"}, {OnnxAttr::Int("axis", 1)}, p + "_qconcat",
             kMicrosoft);
    s.x = p + "_cat";
  }
}

// A convolution (or a dense layer written as a grouped one): QLinearConv.
void qlinear_conv(QLinearLayer& s) {
  const QLayer& l = s.l;
  const std::string& p = s.p;
  const bool dense = l.kind == LayerKind::Dense;
  s.g.init_int8(p + "_wq",
                {l.cout(), l.in.c / l.group, dense ? l.in.h : l.kh, dense ? l.in.w : l.kw},
                l.weight);
  s.g.init_float(p + "_ws", {l.cout()}, l.weight_scale);
  s.g.init_int8(p + "_wz", {l.cout()}, std::vector<int8_t>(size_t(l.cout()), 0));
  s.g.init_int32(p + "_bq", {l.cout()}, l.bias);
  s.g.node("QLinearConv",
           {s.x, s.xq + "_scale", s.xq + "_zp", p + "_wq", p + "_ws", p + "_wz", s.tq + "_scale",
            s.tq + "_zp", p + "_bq"},
           {p + "_conv"}, dense ? dense_conv_attrs(l) : conv_attrs(l), p + "_qconv");
  s.x = p + "_conv";
}

// A dense layer: QLinearMatMul, then the bias, activation and output quantization in float.
void qlinear_matmul(QLinearLayer& s) {
  const QLayer& l = s.l;
  const std::string& p = s.p;
  OnnxGraph& g = s.g;
  if (!s.f) {
    g.node("Flatten", {s.x}, {p + "_flat"}, {OnnxAttr::Int("axis", 1)});
    s.x = p + "_flat";
  }
  s.f = true;
  const int64_t k = l.fan_in();
  std::vector<int8_t> wt(size_t(k * l.cout()));  // [K, M]
  for (int oc = 0; oc < l.cout(); ++oc)
    for (int64_t j = 0; j < k; ++j) wt[size_t(j * l.cout() + oc)] = l.weight[size_t(oc * k + j)];
  g.init_int8(p + "_wq", {k, l.cout()}, wt);
  g.init_float(p + "_ws", {l.cout()}, l.weight_scale);
  g.init_int8(p + "_wz", {l.cout()}, std::vector<int8_t>(size_t(l.cout()), 0));
  g.node("QLinearMatMul",
         {s.x, s.xq + "_scale", s.xq + "_zp", p + "_wq", p + "_ws", p + "_wz", s.tq + "_scale",
          s.tq + "_zp"},
         {p + "_mm"}, {}, p + "_qmatmul");
  // The bias in float, then requantized: QLinearMatMul has no bias input.
  std::vector<float> b(size_t(l.cout()));
  for (int oc = 0; oc < l.cout(); ++oc)
    b[size_t(oc)] = float(double(l.bias[size_t(oc)]) * double(l.in_q.scale) *
                          double(l.weight_scale[size_t(oc)]));
  g.init_float(p + "_b", {l.cout()}, b);
  g.node("DequantizeLinear", {p + "_mm", s.tq + "_scale", s.tq + "_zp"}, {p + "_mmdq"});
  g.node("Add", {p + "_mmdq", p + "_b"}, {p + "_biased"});
  s.x = float_act(g, l.act, l.lut_func, l.lut_alpha, l.lut_beta,
                  float(l.lo - l.out_q.zero_point) * l.out_q.scale,
                  float(l.hi - l.out_q.zero_point) * l.out_q.scale, p, p + "_biased");
  g.node("QuantizeLinear", {s.x, p + "_out_scale", p + "_out_zp"}, {p + "_yq"});
  s.x = p + "_yq";
}

// A copy: max-pooling on the integers first (when it may), then its requantization.
void qlinear_copy(QLinearLayer& s) {
  const std::string& p = s.p;
  if (s.pool_first && pooled(s.l)) {
    s.g.node("MaxPool", {s.x}, {p + "_pool"}, pool_attrs(s.l), p + "_pool");  // on the integers
    s.x = p + "_pool";
  }
  if (!(s.xquant == s.target)) {
    // The requantization (the importer folds it into the copy, or makes it one).
    s.g.node("DequantizeLinear", {s.x, s.xq + "_scale", s.xq + "_zp"}, {p + "_rdq"});
    s.g.node("QuantizeLinear", {p + "_rdq", s.tq + "_scale", s.tq + "_zp"}, {p + "_rq"});
    s.x = p + "_rq";
  }
}

// The activation and output quantization (when the linear part has not written them).
void qlinear_activation(QLinearLayer& s) {
  const QLayer& l = s.l;
  const std::string& p = s.p;
  OnnxGraph& g = s.g;
  if (s.lut && (l.lut_func == LutFunc::Sigmoid || l.lut_func == LutFunc::LeakyRelu)) {
    const bool leaky = l.lut_func == LutFunc::LeakyRelu;
    g.node(leaky ? "QLinearLeakyRelu" : "QLinearSigmoid",
           {s.x, s.tq + "_scale", s.tq + "_zp", p + "_out_scale", p + "_out_zp"}, {p + "_lut"},
           leaky ? std::vector<OnnxAttr>{OnnxAttr::Float("alpha", l.lut_alpha)}
                 : std::vector<OnnxAttr>{},
           p + (leaky ? "_qleakyrelu" : "_qsigmoid"), kMicrosoft);
    s.x = p + "_lut";
  } else if (s.lut || l.act == Activation::Clip ||
             (l.act == Activation::Relu &&
              (l.kind == LayerKind::Copy || l.out_q.zero_point != l.out_q.qmin()))) {
    // ReLU into a tensor whose zero point is its minimum is the saturation itself (not
    // for a Copy, which would vanish); anything else runs in float.
    g.node("DequantizeLinear", {s.x, s.tq + "_scale", s.tq + "_zp"}, {p + "_ydq"});
    s.x = float_act(g, l.act, l.lut_func, l.lut_alpha, l.lut_beta,
                    float(l.lo - l.out_q.zero_point) * l.out_q.scale,
                    float(l.hi - l.out_q.zero_point) * l.out_q.scale, p, p + "_ydq",
                    hardswish_as_mul(l));
    g.node("QuantizeLinear", {s.x, p + "_out_scale", p + "_out_zp"}, {p + "_yq"});
    s.x = p + "_yq";
  }
}

// Layer i: its nodes; returns its integer output's name.
std::string qlinear_layer(OnnxGraph& g, const QLayer& l, size_t i,
                          const std::vector<std::string>& out, std::vector<char>& flat) {
  check_quantized_layer(l, i);
  const std::string p = "l" + std::to_string(i);
  const bool lut = l.act == Activation::Lut;
  quant_init(g, p + "_out", l.out_q);
  if (lut) quant_init(g, p + "_pre", l.pre_q);
  QLinearLayer s{g,
                 l,
                 i,
                 p,
                 lut ? p + "_pre" : p + "_out",
                 lut ? l.pre_q : l.out_q,
                 lut,
                 l.kind == LayerKind::Copy && same_input_quant(l),  // before requantization
                 l.inputs[0] != kNetworkInput && flat[size_t(l.inputs[0])],
                 {},
                 {},
                 {}};
  qlinear_inputs(s, out);
  bool done = false;  // bias, activation and output quantization written
  if (l.per_pixel_divisor()) {
    std::vector<OnnxAttr> attrs = divisor_pool_attrs(l, i);
    attrs.push_back(OnnxAttr::Int("channels_last", 0));
    g.node("QLinearAveragePool",
           {s.x, s.xq + "_scale", s.xq + "_zp", s.tq + "_scale", s.tq + "_zp"}, {p + "_avg"}, attrs,
           p + "_qavg", kMicrosoft);
    s.x = p + "_avg";
  } else if (l.kind == LayerKind::Conv ||
             (l.kind == LayerKind::Dense && l.group > 1 &&
              dense_form(l, i, s.f, quantized_global_pool(l)) == DenseForm::GroupedConv)) {
    qlinear_conv(s);
  } else if (l.kind == LayerKind::Dense && l.group > 1) {
    g.node("QLinearGlobalAveragePool",
           {s.x, s.xq + "_scale", s.xq + "_zp", s.tq + "_scale", s.tq + "_zp"}, {p + "_gap"},
           {OnnxAttr::Int("channels_last", 0)}, p + "_qgap", kMicrosoft);
    s.x = p + "_gap";
  } else if (l.kind == LayerKind::Dense) {
    qlinear_matmul(s);
    done = true;
  } else if (l.kind == LayerKind::Copy) {
    qlinear_copy(s);
  }
  if (!done) qlinear_activation(s);
  if (!s.pool_first && pooled(l)) {
    g.node("MaxPool", {s.x}, {p + "_pool"}, pool_attrs(l), p + "_pool");
    s.x = p + "_pool";
  }
  flat[i] = s.f;
  return s.x;
}

}  // namespace

std::string export_qlinear_onnx(const QuantNetwork& net, int64_t batch) {
  OnnxGraph g(net.name + " (QLinear)", opset_for(net.layers));
  g.input("input", input_dims(net.input, batch));
  const std::string pre = export_pre(g, net.pre_scale, net.pre_shift, net.input, "input");
  quant_init(g, "in", net.input_q);
  g.node("QuantizeLinear", {pre, "in_scale", "in_zp"}, {"in_q"});
  std::vector<std::string> out(net.layers.size());  // the layers' integer outputs
  std::vector<char> flat(net.layers.size(), 0);
  for (size_t i = 0; i < net.layers.size(); ++i)
    out[i] = qlinear_layer(g, net.layers[i], i, out, flat);
  const std::string last = qlinear_quant_of(int(net.layers.size()) - 1);
  g.node("DequantizeLinear", {out.back(), last + "_scale", last + "_zp"}, {"logits_dq"});
  finish_output(g, "logits_dq", net.host_softmax);
  g.output("logits", output_dims(net.layers.back().out, flat.back() != 0, batch));
  return g.serialize();
}

}  // namespace tpu::cnn

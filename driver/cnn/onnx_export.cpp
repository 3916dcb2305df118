#include "onnx_export.h"

#include <onnx/onnx_pb.h>

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
    if (d < 0) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}
onnx::TensorProto* new_init(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims, int type) {
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
  if (dims.empty()) vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  else set_shape(vi, dims);
}

void OnnxGraph::init_float(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::FLOAT);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}
void OnnxGraph::init_int8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int8_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::INT8);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
}
void OnnxGraph::init_uint8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<uint8_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::UINT8);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
}
void OnnxGraph::init_int32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::INT32);
  for (int32_t x : v) t->add_int32_data(x);  // the typed field, to exercise both encodings
}
void OnnxGraph::init_int64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  auto* t = new_init(impl_->graph, name, dims, onnx::TensorProto::INT64);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
}

void OnnxGraph::node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs,
                     const std::string& name) {
  auto* n = impl_->graph->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? (outputs.empty() ? op : outputs[0] + "_" + op) : name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& a : attrs) {
    auto* at = n->add_attribute();
    at->set_name(a.name);
    switch (a.kind) {
      case OnnxAttr::Kind::Int: at->set_type(onnx::AttributeProto::INT); at->set_i(a.i); break;
      case OnnxAttr::Kind::Float: at->set_type(onnx::AttributeProto::FLOAT); at->set_f(a.f); break;
      case OnnxAttr::Kind::Ints:
        at->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : a.ints) at->add_ints(x);
        break;
      case OnnxAttr::Kind::String: at->set_type(onnx::AttributeProto::STRING); at->set_s(a.s); break;
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

std::vector<int64_t> input_dims(const Shape3& s, int64_t batch) { return {batch < 0 ? -1 : batch, s.c, s.h, s.w}; }

std::vector<OnnxAttr> conv_attrs(const LayerGeometry& l) {
  return {OnnxAttr::Ints("kernel_shape", {l.kh, l.kw}), OnnxAttr::Ints("strides", {l.sh, l.sw}),
          OnnxAttr::Ints("pads", {l.pad_t, l.pad_l, l.pad_b, l.pad_r})};
}
std::vector<OnnxAttr> pool_attrs(const LayerGeometry& l) {
  return {OnnxAttr::Ints("kernel_shape", {l.pool_k, l.pool_k}), OnnxAttr::Ints("strides", {l.pool_s, l.pool_s})};
}

// Preprocessing as Mul + Add of per-channel constants.
std::string export_pre(OnnxGraph& g, const std::vector<float>& a, const std::vector<float>& b, const Shape3& in,
                       std::string x) {
  if (a.empty()) return x;
  g.init_float("pre_scale", {1, in.c, 1, 1}, a);
  g.init_float("pre_shift", {1, in.c, 1, 1}, b);
  g.node("Mul", {x, "pre_scale"}, {"pre_mul"});
  g.node("Add", {"pre_mul", "pre_shift"}, {"pre_add"});
  return "pre_add";
}

void quant_init(OnnxGraph& g, const std::string& name, const TensorQuant& q) {
  g.init_float(name + "_scale", {}, {q.scale});
  if (q.is_unsigned) g.init_uint8(name + "_zp", {}, {uint8_t(q.zero_point)});
  else g.init_int8(name + "_zp", {}, {int8_t(q.zero_point)});
}

}  // namespace

std::string export_float_onnx(const Network& net, int64_t batch) {
  OnnxGraph g(net.name);
  g.input("input", input_dims(net.input, batch));
  std::string x = export_pre(g, net.pre_scale, net.pre_shift, net.input, "input");
  bool flat = false;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    const std::string p = "l" + std::to_string(i);
    if (l.kind == LayerKind::Conv) {
      g.init_float(p + "_w", {l.cout(), l.in.c, l.kh, l.kw}, l.weight);
      g.init_float(p + "_b", {l.cout()}, l.bias);
      g.node("Conv", {x, p + "_w", p + "_b"}, {p + "_conv"}, conv_attrs(l), p + "_conv");
      x = p + "_conv";
    } else {
      if (!flat) {
        g.node("Flatten", {x}, {p + "_flat"}, {OnnxAttr::Int("axis", 1)});
        x = p + "_flat";
        flat = true;
      }
      g.init_float(p + "_w", {l.cout(), l.fan_in()}, l.weight);
      g.init_float(p + "_b", {l.cout()}, l.bias);
      g.node("Gemm", {x, p + "_w", p + "_b"}, {p + "_gemm"}, {OnnxAttr::Int("transB", 1)}, p + "_gemm");
      x = p + "_gemm";
    }
    if (l.act == Activation::Relu) {
      g.node("Relu", {x}, {p + "_relu"});
      x = p + "_relu";
    } else if (l.act == Activation::Clip) {
      g.init_float(p + "_lo", {}, {l.clip_lo});
      g.init_float(p + "_hi", {}, {l.clip_hi});
      g.node("Clip", {x, p + "_lo", p + "_hi"}, {p + "_clip"});
      x = p + "_clip";
    }
    if (l.pool_k > 1 || l.pool_s > 1) {
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l));
      x = p + "_pool";
    }
  }
  g.node("Identity", {x}, {"logits"});
  g.output("logits");
  return g.serialize();
}

namespace {

// Activation of a quantized layer in the float domain (between DQ and Q).
std::string float_act(OnnxGraph& g, const QLayer& l, const std::string& p, std::string x) {
  if (l.act == Activation::Relu) {
    g.node("Relu", {x}, {p + "_relu"});
    return p + "_relu";
  }
  if (l.act == Activation::Clip) {
    g.init_float(p + "_lo", {}, {float(l.lo - l.out_q.zero_point) * l.out_q.scale});
    g.init_float(p + "_hi", {}, {float(l.hi - l.out_q.zero_point) * l.out_q.scale});
    g.node("Clip", {x, p + "_lo", p + "_hi"}, {p + "_clip"});
    return p + "_clip";
  }
  return x;
}

std::vector<float> bias_scales(const QLayer& l) {
  std::vector<float> s(size_t(l.cout()));
  for (int oc = 0; oc < l.cout(); ++oc) s[size_t(oc)] = float(double(l.in_q.scale) * double(l.weight_scale[size_t(oc)]));
  return s;
}

}  // namespace

std::string export_qdq_onnx(const QuantNetwork& net, int64_t batch) {
  OnnxGraph g(net.name + " (QDQ)");
  g.input("input", input_dims(net.input, batch));
  std::string x = export_pre(g, net.pre_scale, net.pre_shift, net.input, "input");
  quant_init(g, "in", net.input_q);
  g.node("QuantizeLinear", {x, "in_scale", "in_zp"}, {"in_q"});
  g.node("DequantizeLinear", {"in_q", "in_scale", "in_zp"}, {"in_dq"});
  x = "in_dq";
  bool flat = false;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const QLayer& l = net.layers[i];
    const std::string p = "l" + std::to_string(i);
    const std::vector<int64_t> wd = l.kind == LayerKind::Conv ? std::vector<int64_t>{l.cout(), l.in.c, l.kh, l.kw}
                                                              : std::vector<int64_t>{l.cout(), l.fan_in()};
    g.init_int8(p + "_wq", wd, l.weight);
    g.init_float(p + "_ws", {l.cout()}, l.weight_scale);
    g.init_int8(p + "_wz", {l.cout()}, std::vector<int8_t>(size_t(l.cout()), 0));
    g.node("DequantizeLinear", {p + "_wq", p + "_ws", p + "_wz"}, {p + "_w"}, {OnnxAttr::Int("axis", 0)});
    g.init_int32(p + "_bq", {l.cout()}, l.bias);
    g.init_float(p + "_bs", {l.cout()}, bias_scales(l));
    g.init_int32(p + "_bz", {l.cout()}, std::vector<int32_t>(size_t(l.cout()), 0));
    g.node("DequantizeLinear", {p + "_bq", p + "_bs", p + "_bz"}, {p + "_b"}, {OnnxAttr::Int("axis", 0)});
    if (l.kind == LayerKind::Conv) {
      g.node("Conv", {x, p + "_w", p + "_b"}, {p + "_y"}, conv_attrs(l), p + "_conv");
    } else {
      if (!flat) {
        g.node("Flatten", {x}, {p + "_flat"}, {OnnxAttr::Int("axis", 1)});
        x = p + "_flat";
        flat = true;
      }
      g.node("Gemm", {x, p + "_w", p + "_b"}, {p + "_y"}, {OnnxAttr::Int("transB", 1)}, p + "_gemm");
    }
    x = float_act(g, l, p, p + "_y");
    if (l.pool_k > 1 || l.pool_s > 1) {
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l));
      x = p + "_pool";
    }
    quant_init(g, p + "_out", l.out_q);
    g.node("QuantizeLinear", {x, p + "_out_scale", p + "_out_zp"}, {p + "_q"});
    g.node("DequantizeLinear", {p + "_q", p + "_out_scale", p + "_out_zp"}, {p + "_dq"});
    x = p + "_dq";
  }
  g.node("Identity", {x}, {"logits"});
  g.output("logits");
  return g.serialize();
}

std::string export_qlinear_onnx(const QuantNetwork& net, int64_t batch) {
  OnnxGraph g(net.name + " (QLinear)", 13);
  g.input("input", input_dims(net.input, batch));
  std::string x = export_pre(g, net.pre_scale, net.pre_shift, net.input, "input");
  quant_init(g, "in", net.input_q);
  g.node("QuantizeLinear", {x, "in_scale", "in_zp"}, {"in_q"});
  x = "in_q";
  std::string xq = "in";  // name prefix of x's scale / zero point
  bool flat = false;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const QLayer& l = net.layers[i];
    const std::string p = "l" + std::to_string(i);
    quant_init(g, p + "_out", l.out_q);
    g.init_float(p + "_ws", {l.cout()}, l.weight_scale);
    g.init_int8(p + "_wz", {l.cout()}, std::vector<int8_t>(size_t(l.cout()), 0));
    // ReLU into uint8 with zero point 0 is the saturation itself; anything else runs in float.
    const bool implicit_act = l.act == Activation::None ||
                              (l.act == Activation::Relu && l.out_q.is_unsigned && l.out_q.zero_point == 0);
    if (l.kind == LayerKind::Conv) {
      g.init_int8(p + "_wq", {l.cout(), l.in.c, l.kh, l.kw}, l.weight);
      g.init_int32(p + "_bq", {l.cout()}, l.bias);
      g.node("QLinearConv", {x, xq + "_scale", xq + "_zp", p + "_wq", p + "_ws", p + "_wz", p + "_out_scale", p + "_out_zp", p + "_bq"},
             {p + "_y"}, conv_attrs(l), p + "_qconv");
      x = p + "_y";
      if (!implicit_act) {
        g.node("DequantizeLinear", {x, p + "_out_scale", p + "_out_zp"}, {p + "_ydq"});
        x = float_act(g, l, p, p + "_ydq");
        g.node("QuantizeLinear", {x, p + "_out_scale", p + "_out_zp"}, {p + "_yq"});
        x = p + "_yq";
      }
    } else {
      if (!flat) {
        g.node("Flatten", {x}, {p + "_flat"}, {OnnxAttr::Int("axis", 1)});
        x = p + "_flat";
        flat = true;
      }
      const int64_t k = l.fan_in();
      std::vector<int8_t> wt(size_t(k * l.cout()));  // [K, M]
      for (int oc = 0; oc < l.cout(); ++oc)
        for (int64_t j = 0; j < k; ++j) wt[size_t(j * l.cout() + oc)] = l.weight[size_t(oc * k + j)];
      g.init_int8(p + "_wq", {k, l.cout()}, wt);
      g.node("QLinearMatMul", {x, xq + "_scale", xq + "_zp", p + "_wq", p + "_ws", p + "_wz", p + "_out_scale", p + "_out_zp"},
             {p + "_y"}, {}, p + "_qmatmul");
      // The bias in float, then requantized: QLinearMatMul has no bias input.
      std::vector<float> b(size_t(l.cout()));
      for (int oc = 0; oc < l.cout(); ++oc)
        b[size_t(oc)] = float(double(l.bias[size_t(oc)]) * double(l.in_q.scale) * double(l.weight_scale[size_t(oc)]));
      g.init_float(p + "_b", {l.cout()}, b);
      g.node("DequantizeLinear", {p + "_y", p + "_out_scale", p + "_out_zp"}, {p + "_ydq"});
      g.node("Add", {p + "_ydq", p + "_b"}, {p + "_biased"});
      x = float_act(g, l, p, p + "_biased");
      g.node("QuantizeLinear", {x, p + "_out_scale", p + "_out_zp"}, {p + "_yq"});
      x = p + "_yq";
    }
    if (l.pool_k > 1 || l.pool_s > 1) {
      g.node("MaxPool", {x}, {p + "_pool"}, pool_attrs(l));
      x = p + "_pool";
    }
    xq = p + "_out";
  }
  g.node("DequantizeLinear", {x, xq + "_scale", xq + "_zp"}, {"logits"});
  g.output("logits");
  return g.serialize();
}

}  // namespace tpu::cnn

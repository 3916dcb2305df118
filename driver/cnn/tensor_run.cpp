// SPDX-License-Identifier: Apache-2.0
#include "tensor_run.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "onnx_import.h"
#include "quantize.h"
#include "reference.h"
#include "runner.h"

namespace tpu::cnn {

namespace {

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

TensorSpec spec_of(const onnx::ValueInfoProto& vi) {
  TensorSpec s;
  s.name = vi.name();
  if (!vi.type().has_tensor_type()) return s;
  const auto& tt = vi.type().tensor_type();
  s.onnx_type = tt.elem_type();
  s.has_shape = tt.has_shape();
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    s.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    s.dim_names.push_back(d.has_dim_value()       ? std::to_string(d.dim_value())
                          : d.dim_param().empty() ? "?"
                                                  : d.dim_param());
  }
  return s;
}

}  // namespace

std::string TensorSpec::shape_str() const {
  if (!has_shape) return "(shape not declared)";
  std::string s = "[";
  for (size_t i = 0; i < dim_names.size(); ++i) s += (i ? ", " : "") + dim_names[i];
  return s + "]";
}
std::string TensorSpec::type_str() const {
  return onnx_type ? onnx_type_name(onnx_type) : "(type not declared)";
}
std::string TensorSpec::describe() const { return type_str() + " " + shape_str(); }

namespace {

std::string read_model_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  std::ostringstream b;
  b << f.rdbuf();
  return b.str();
}

onnx::ModelProto parse_model(const std::string& bytes, const std::string& path) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes))
    throw Error(path + ": cannot parse as an ONNX model (truncated or corrupt protobuf, " +
                std::to_string(bytes.size()) + " bytes)");
  return m;
}

}  // namespace

GraphSignature read_graph_signature(const std::string& path) {
  return graph_signature_of_bytes(read_model_file(path), path);
}

GraphSignature graph_signature_of_bytes(const std::string& bytes, const std::string& path) {
  const onnx::ModelProto m = parse_model(bytes, path);
  GraphSignature sig;
  const auto& g = m.graph();
  std::vector<std::string> inits;
  for (const auto& t : g.initializer()) inits.push_back(t.name());
  for (const auto& vi : g.input())
    if (std::find(inits.begin(), inits.end(), vi.name()) == inits.end())
      sig.inputs.push_back(spec_of(vi));
  for (const auto& vi : g.output()) sig.outputs.push_back(spec_of(vi));
  return sig;
}

int64_t check_input_tensor(const TensorSpec& spec, const Tensor& t, const std::string& source) {
  const std::string expected =
      "expected " + spec.describe() + " (any batch in the first dimension)";
  DType want;
  if (spec.onnx_type && (!dtype_from_onnx(spec.onnx_type, &want) || want != t.dtype))
    throw Error(source + ": input '" + spec.name + "' is " + spec.type_str() +
                ", but the tensor is " + t.describe() + "; " + expected +
                (spec.onnx_type == 1 && dtype_is_float(t.dtype)
                     ? " (convert it, e.g. x.astype(np.float32))"
                     : ""));
  if (spec.has_shape) {
    bool ok = t.shape.size() == spec.dims.size() && !t.shape.empty();
    for (size_t i = 1; ok && i < spec.dims.size(); ++i)
      ok = spec.dims[i] < 0 || spec.dims[i] == t.shape[i];
    if (!ok)
      throw Error(source + ": input '" + spec.name + "' has shape " + spec.shape_str() +
                  ", but the tensor is " + t.describe() + "; " + expected);
  } else if (t.shape.empty()) {
    throw Error(source + ": input '" + spec.name +
                "' is given a scalar; expected a batch of images (first dimension)");
  }
  if (t.shape[0] < 1)
    throw Error(source + ": input '" + spec.name + "' is " + t.describe() +
                ", an empty batch; expected at least one image");
  check_input_values(spec, t, source);
  return t.shape[0];
}

namespace {
std::string element_at(const Tensor& t, int64_t i) {
  std::vector<int64_t> idx(t.shape.size());
  for (size_t k = t.shape.size(); k-- > 0;) {
    idx[k] = t.shape[k] ? i % t.shape[k] : 0;
    i = t.shape[k] ? i / t.shape[k] : 0;
  }
  return dims_str(idx);
}
std::string value_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}
}  // namespace

void check_input_values(const TensorSpec& spec, const Tensor& t, const std::string& source) {
  if (!dtype_is_float(t.dtype)) return;
  int64_t first_subnormal = -1;
  double max_abs = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.value(i);
    if (!std::isfinite(v))
      throw Error(source + ": input '" + spec.name + "' element " + std::to_string(i) + " " +
                  element_at(t, i) + " is " + value_text(v) +
                  " (expected finite numbers: the chip computes on int8)");
    const float f = float(v);
    if (f != 0.0f && std::fpclassify(f) == FP_SUBNORMAL && first_subnormal < 0) first_subnormal = i;
    max_abs = std::max(max_abs, std::fabs(v));
  }
  // Every nonzero value subnormal: no int8 scale (a normal float) can represent the range.
  if (first_subnormal >= 0 && max_abs < double(std::numeric_limits<float>::min()))
    throw Error(source + ": input '" + spec.name + "' element " + std::to_string(first_subnormal) +
                " " + element_at(t, first_subnormal) + " is " +
                value_text(t.value(first_subnormal)) +
                ", a subnormal float, and so is every nonzero value of the tensor: its range "
                "has no int8 scale (expected values of at least 1.18e-38 in magnitude, or 0)");
}

double float_tolerance(const TensorQuant& q, double steps, const std::string& host_softmax) {
  const double t = steps * double(q.scale);
  if (host_softmax == "Softmax") return t / 2;
  if (host_softmax == "LogSoftmax") return 2 * t;
  return t;
}

double propagated_tolerance(const QuantNetwork& q, bool exact_input) {
  auto x_max = [](const TensorQuant& t) {
    return double(t.scale) *
           std::max(std::abs(t.qmin() - t.zero_point), std::abs(t.qmax() - t.zero_point));
  };
  const double e_input = exact_input ? 0.0 : double(q.input_q.scale) / 2;
  std::vector<double> e(q.layers.size(), 0.0);
  for (size_t li = 0; li < q.layers.size(); ++li) {
    const QLayer& l = q.layers[li];
    std::vector<double> ins;
    for (int p : l.inputs) ins.push_back(p >= 0 && size_t(p) < li ? e[size_t(p)] : e_input);
    const double e_in = ins.empty() ? e_input : *std::max_element(ins.begin(), ins.end());
    double lin = e_in;
    if (l.kind == LayerKind::Add) {
      lin = 0;
      for (double v : ins) lin += v;
    } else if (l.kind == LayerKind::Conv || l.kind == LayerKind::Dense) {
      double xm = x_max(l.in_q);
      for (const auto& t : l.in_qs) xm = std::max(xm, x_max(t));
      const int cout = l.cout();
      const size_t k = cout > 0 ? l.weight.size() / size_t(cout) : 0;
      lin = 0;
      for (int oc = 0; oc < cout; ++oc) {
        const double ws = l.weight_scale.empty()
                              ? 1.0
                              : double(l.weight_scale[size_t(oc) % l.weight_scale.size()]);
        double sum = 0;
        for (size_t i = 0; i < k; ++i) sum += std::abs(double(l.weight[size_t(oc) * k + i])) * ws;
        lin = std::max(lin, sum * e_in + double(k) * xm * ws / 2);
      }
      // An AveragePool with per-pixel divisors sums (weights 1) and divides by at least the
      // smallest divisor.
      if (l.per_pixel_divisor()) lin /= double(l.divisors().front());
    }
    if (l.act == Activation::Lut) {
      double slope = 1;
      switch (l.lut_func) {
        case LutFunc::Sigmoid:
          slope = 0.25;
          break;
        case LutFunc::Tanh:
          slope = 1;
          break;
        case LutFunc::LeakyRelu:
          slope = std::max(1.0, std::abs(double(l.lut_alpha)));
          break;
        case LutFunc::HardSigmoid:
          slope = std::abs(double(l.lut_alpha));
          break;
        case LutFunc::HardSwish:
          slope = 1.5;
          break;
      }
      lin = slope * (lin + double(l.pre_q.scale) / 2);
    }
    e[li] = lin + double(l.out_q.scale) / 2;
  }
  const double t = e.empty() ? e_input : e.back();
  if (q.host_softmax == "Softmax") return t / 2;
  if (q.host_softmax == "LogSoftmax") return 2 * t;
  return t;
}

void apply_host_softmax(const std::string& op, std::vector<float>& z) {
  if (op.empty() || z.empty()) return;
  if (op != "Softmax" && op != "LogSoftmax")
    throw Error("host operation '" + op + "': expected Softmax or LogSoftmax");
  const double mx = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (float v : z) sum += std::exp(double(v) - mx);
  for (float& v : z)
    v = float(op == "Softmax" ? std::exp(double(v) - mx) / sum : double(v) - mx - std::log(sum));
}

OutputCheck compare_tensors(const Tensor& got, const Tensor& expected, double tolerance) {
  OutputCheck c;
  c.name = got.name;
  c.shape = got.shape;
  c.dtype = got.dtype;
  c.compared = true;
  const bool integer = !dtype_is_float(got.dtype);
  c.tolerance = integer ? 0.0 : tolerance;
  if (got.shape != expected.shape) {
    c.detail = "shape " + got.shape_str() + " differs from the expected " + expected.shape_str();
    c.max_abs_error = NAN;
    return c;
  }
  if (integer && dtype_is_float(expected.dtype)) {
    c.detail = std::string("dtype ") + dtype_name(got.dtype) + " differs from the expected " +
               dtype_name(expected.dtype);
    c.max_abs_error = NAN;
    return c;
  }
  if (!integer && !std::isfinite(c.tolerance)) {
    c.detail = "the tolerance is " + value_text(c.tolerance) +
               " (the output's quantization scale is not finite): nothing can be compared";
    c.max_abs_error = NAN;
    return c;
  }
  int64_t first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.value(i), b = expected.value(i);
    const double err = std::fabs(a - b);
    // NaN is bad, and so is any non-finite output: never a PASS for one.
    const bool bad = integer ? a != b : !(err <= c.tolerance) || !std::isfinite(a);
    if (std::isnan(err))
      c.max_abs_error = NAN;
    else if (!std::isnan(c.max_abs_error))
      c.max_abs_error = std::max(c.max_abs_error, err);
    if (bad) {
      if (first < 0) first = i;
      ++c.mismatches;
    }
  }
  c.pass = c.mismatches == 0;
  if (first >= 0) {
    // The index of the first mismatch in the tensor's dimensions.
    std::vector<int64_t> idx(got.shape.size());
    int64_t r = first;
    for (size_t k = got.shape.size(); k-- > 0;) {
      idx[k] = got.shape[k] ? r % got.shape[k] : 0;
      r = got.shape[k] ? r / got.shape[k] : 0;
    }
    std::ostringstream s;
    s.precision(9);
    s << c.mismatches << " of " << got.numel() << " values differ; first at " << dims_str(idx)
      << ": got " << got.value(first) << ", expected " << expected.value(first);
    if (!integer) s << " (tolerance " << c.tolerance << ")";
    c.detail = s.str();
  }
  return c;
}

std::string fold_inputs_as_constants(const std::string& bytes,
                                     const std::map<std::string, Tensor>& constants,
                                     const std::string& path) {
  onnx::ModelProto m = parse_model(bytes, path);
  const GraphSignature sig = graph_signature_of_bytes(bytes, path);
  auto* g = m.mutable_graph();
  for (const auto& kv : constants) {
    const auto spec = std::find_if(sig.inputs.begin(), sig.inputs.end(),
                                   [&](const TensorSpec& s) { return s.name == kv.first; });
    if (spec == sig.inputs.end())
      throw Error(path + ": cannot fold input '" + kv.first +
                  "' as a constant: the graph has no such input");
    const Tensor& t = kv.second;
    DType want;
    if (spec->onnx_type && (!dtype_from_onnx(spec->onnx_type, &want) || want != t.dtype))
      throw Error(path + ": input '" + kv.first + "' is " + spec->describe() +
                  ", but the tensor given for it is " + t.describe());
    if (spec->has_shape) {
      bool ok = spec->dims.size() == t.shape.size();
      for (size_t i = 0; ok && i < t.shape.size(); ++i)
        ok = spec->dims[i] < 0 || spec->dims[i] == t.shape[i];
      if (!ok)
        throw Error(path + ": input '" + kv.first + "' is " + spec->describe() +
                    ", but the tensor given for it is " + t.describe());
    }
    Tensor named = t;
    named.name = kv.first;
    onnx::TensorProto tp;
    if (!tp.ParseFromString(serialize_tensor_proto(named)))
      throw Error(path + ": input '" + kv.first + "': cannot make an initializer of " +
                  t.describe());
    // Old IRs list initializers among the inputs too: replace any initializer of that name.
    auto* inits = g->mutable_initializer();
    for (int i = inits->size(); i-- > 0;)
      if (inits->Get(i).name() == kv.first) inits->DeleteSubrange(i, 1);
    *g->add_initializer() = tp;
    auto* ins = g->mutable_input();
    for (int i = ins->size(); i-- > 0;)
      if (ins->Get(i).name() == kv.first) ins->DeleteSubrange(i, 1);
  }
  std::string out;
  if (!m.SerializeToString(&out))
    throw Error(path + ": cannot serialize the model with folded inputs");
  return out;
}

TensorModel::TensorModel(const std::string& path) : TensorModel(path, {}) {}

TensorModel::TensorModel(const std::string& path, const std::map<std::string, Tensor>& constants)
    : path_(path), constants_(constants) {
  const std::string bytes = constants.empty()
                                ? read_model_file(path)
                                : fold_inputs_as_constants(read_model_file(path), constants, path);
  sig_ = graph_signature_of_bytes(bytes, path);
  if (sig_.inputs.size() != 1) {
    std::string names;
    for (const auto& s : sig_.inputs) names += (names.empty() ? "'" : ", '") + s.name + "'";
    throw Error(path + ": the graph has " + std::to_string(sig_.inputs.size()) + " inputs (" +
                names +
                "); one image input is supported (the values of inputs that are parameters can be "
                "given: they are "
                "folded as constants)");
  }
  net_ = import_onnx_bytes(bytes, path);
  if (sig_.inputs[0].name != net_.input_name)
    throw Error(path + ": the graph input '" + sig_.inputs[0].name +
                "' is not the network's input '" + net_.input_name + "'");
}

const TensorSpec& TensorModel::input_spec() const { return sig_.inputs.at(0); }

const TensorSpec& TensorModel::output_spec() const {
  for (const auto& o : sig_.outputs)
    if (o.name == net_.output_name) return o;
  throw Error(path_ + ": the network's output '" + net_.output_name + "' is not a graph output");
}

DType TensorModel::input_dtype() const {
  DType t = DType::Float32;
  if (input_spec().onnx_type && !dtype_from_onnx(input_spec().onnx_type, &t)) t = DType::Float32;
  return t;
}

bool TensorModel::needs_calibration() const { return !fully_quantized(net_); }

int TensorModel::depth() const {
  std::vector<int> d(net_.layers.size(), 0);  // layers are in topological order
  for (size_t l = 0; l < net_.layers.size(); ++l) {
    int m = 0;
    for (int i : net_.layers[l].inputs)
      if (i >= 0 && size_t(i) < l) m = std::max(m, d[size_t(i)]);
    d[l] = m + 1;
  }
  return d.empty() ? 0 : d.back();
}

std::vector<std::vector<float>> TensorModel::images(const Tensor& t,
                                                    const std::string& source) const {
  const int64_t batch = check_input_tensor(input_spec(), t, source);
  const int64_t per = t.numel() / batch;
  if (per != net_.input.size())
    throw Error(source + ": input '" + input_spec().name + "' is " + t.describe() + ", " +
                std::to_string(per) + " values per image; the network takes " + net_.input.str() +
                " = " + std::to_string(net_.input.size()));
  std::vector<float> all = t.to_float();
  if (!dtype_is_float(t.dtype)) {
    // An already quantized (uint8 / int8) input: its float values, which quantize back to the
    // same integers on the way in.
    if (!net_.input_quant)
      throw Error(source + ": input '" + input_spec().name + "' is " + t.describe() +
                  " but the network does not say how it is quantized");
    const TensorQuant& iq = *net_.input_quant;
    for (float& v : all) v = float(double(iq.scale) * (double(v) - iq.zero_point));
  }
  std::vector<std::vector<float>> out;
  for (int64_t b = 0; b < batch; ++b)
    out.emplace_back(all.begin() + b * per, all.begin() + (b + 1) * per);
  return out;
}

std::vector<std::vector<float>> TensorModel::images(
    const std::map<std::string, Tensor>& inputs,
    const std::map<std::string, std::string>& sources) const {
  std::string names;
  for (const auto& s : sig_.inputs)
    names += (names.empty() ? "" : ", ") + ("'" + s.name + "' " + s.describe());
  for (const auto& kv : inputs) {
    const bool known = std::any_of(sig_.inputs.begin(), sig_.inputs.end(),
                                   [&](const TensorSpec& s) { return s.name == kv.first; });
    if (!known)
      throw Error("input '" + kv.first + "': the model " + path_ +
                  " has no such input; its inputs: " + names);
  }
  for (const auto& s : sig_.inputs)
    if (!inputs.count(s.name))
      throw Error("input '" + s.name + "' (" + s.describe() + ") of " + path_ + " is not given");
  const std::string& name = input_spec().name;
  const auto& t = inputs.at(name);
  const auto src = sources.find(name);
  return images(t,
                src != sources.end()
                    ? src->second
                    : "input '" + name + "'" +
                          (t.name.empty() || t.name == name ? "" : " (tensor '" + t.name + "')"));
}

std::string TensorModel::quantize(const std::vector<std::vector<float>>& calibration) {
  if (!needs_calibration()) {
    q_ = quantize_model(net_, {});
    quantized_ = true;
    return "quantized in the model file";
  }
  if (calibration.empty())
    throw Error(path_ + ": a float model needs calibration images to be quantized");
  q_ = quantize_model(net_, calibration);
  quantized_ = true;
  return "post-training int8, calibrated on " + std::to_string(calibration.size()) + " images";
}

namespace {

// The output tensor's shape: the graph's with the batch (`images`) in front, or [B, C, H, W]
// ([B, C] after a dense layer) when the graph does not declare it; throws Error when the
// declared shape holds another number of values than the network's output layer `last`.
std::vector<int64_t> output_shape(const std::string& path, const TensorSpec& os, const QLayer& last,
                                  size_t images) {
  const int64_t per = last.out.size();
  std::vector<int64_t> shape{int64_t(images)};
  bool declared = os.has_shape && !os.dims.empty();
  int64_t declared_per = 1;
  for (size_t i = 1; declared && i < os.dims.size(); ++i) {
    if (os.dims[i] < 0)
      declared = false;
    else
      declared_per *= os.dims[i];
  }
  if (declared && declared_per != per)
    throw Error(path + ": output '" + os.name + "' is declared " + os.shape_str() + " (" +
                std::to_string(declared_per) + " values per image) but the network computes " +
                last.out.str());
  if (declared) {
    shape.insert(shape.end(), os.dims.begin() + 1, os.dims.end());
  } else if (last.kind == LayerKind::Dense) {
    shape.push_back(per);
  } else {
    const Shape3& o = last.out;
    shape.insert(shape.end(), {o.c, o.h, o.w});
  }
  return shape;
}

}  // namespace

TensorModel::Run TensorModel::run(Device& device, const std::vector<std::vector<float>>& images,
                                  uint32_t batch, double tolerance_steps,
                                  uint64_t max_cycles) const {
  if (!quantized_) throw Error("TensorModel::run: quantize() the model first");
  if (images.empty()) throw Error("TensorModel::run: no images");
  const TensorSpec& os = output_spec();
  const bool raw = q_.layers.back().raw;  // MatMulInteger / ConvInteger: int32 out
  DType out_type = raw ? DType::Int32 : DType::Float32;
  if (os.onnx_type && (!dtype_from_onnx(os.onnx_type, &out_type) ||
                       (out_type != DType::Float32 && out_type != DType::UInt8 &&
                        out_type != DType::Int8 && out_type != DType::Int32)))
    throw Error(path_ + ": output '" + os.name + "' is " + os.type_str() +
                "; float32, uint8, int8 or (from MatMulInteger / ConvInteger) int32 outputs are "
                "supported");
  if ((out_type == DType::Int32) != raw)
    throw Error(path_ + ": output '" + os.name + "' is " + os.type_str() + " but the network's " +
                (raw ? "output is an int32 (MatMulInteger / ConvInteger)"
                     : "output is quantized to 8 bits"));
  const TensorQuant& oq = q_.output_q();
  if (out_type != DType::Float32 && !q_.host_softmax.empty())
    throw Error(path_ + ": output '" + os.name + "' is " + os.type_str() + " but comes from a " +
                q_.host_softmax + " (float)");
  if ((out_type == DType::UInt8 || out_type == DType::Int8) &&
      (out_type == DType::UInt8) != oq.is_unsigned)
    throw Error(path_ + ": output '" + os.name + "' is " + os.type_str() +
                " but the network's output is quantized as " + oq.str());
  const std::vector<int64_t> shape = output_shape(path_, os, q_.layers.back(), images.size());

  Run r;
  r.images = int(images.size());
  r.chip_n = device.params().N;
  r.batch = std::min<uint32_t>(batch, uint32_t(images.size()));
  for (const auto& l : q_.layers) r.macs_per_image += l.macs();
  ChipRunner runner(device, q_, r.batch);
  std::vector<float> fout;
  std::vector<int64_t> iout;
  const int64_t in_size = q_.input.size();
  for (size_t i0 = 0; i0 < images.size(); i0 += r.batch) {
    const size_t b = std::min<size_t>(r.batch, images.size() - i0);
    std::vector<std::vector<int32_t>> qi(b, std::vector<int32_t>(size_t(in_size)));
    std::vector<const int32_t*> ptrs;
    for (size_t j = 0; j < b; ++j) {
      if (int64_t(images[i0 + j].size()) != in_size)
        throw Error("TensorModel::run: image " + std::to_string(i0 + j) + " has " +
                    std::to_string(images[i0 + j].size()) + " values, expected " +
                    std::to_string(in_size));
      q_.quantize_input(images[i0 + j].data(), qi[j].data());
      ptrs.push_back(qi[j].data());
    }
    const auto res = runner.run(ptrs, max_cycles);
    ++r.runs;
    r.cycles += res.stats.cycles;
    r.cycles_estimated = res.stats.cycles_estimated;
    r.run_seconds += res.stats.wall_seconds;
    for (int c = 0; c < PerfCounters::kCount; ++c)
      r.counters.set(c, r.counters.get(c) + res.stats.counters.get(c));
    for (size_t j = 0; j < b; ++j) {
      const auto& o = res.outputs[j];
      if (int_forward(q_, ptrs[j]) != o) ++r.mismatched_images;
      if (out_type == DType::Float32) {
        std::vector<float> z;
        for (int32_t v : o) z.push_back(float(double(oq.scale) * (double(v) - oq.zero_point)));
        apply_host_softmax(q_.host_softmax, z);
        fout.insert(fout.end(), z.begin(), z.end());
      } else {
        iout.insert(iout.end(), o.begin(), o.end());
      }
    }
  }
  r.mxu_utilization =
      r.cycles ? double(r.macs_per_image) * r.images / (double(r.cycles) * r.chip_n * r.chip_n)
               : 0.0;
  Tensor t = out_type == DType::Float32 ? Tensor::from_float(shape, fout, os.name)
                                        : Tensor::from_int(out_type, shape, iout, os.name);
  r.outputs.push_back(std::move(t));
  r.tolerances.push_back(
      out_type == DType::Float32 ? float_tolerance(oq, tolerance_steps, q_.host_softmax) : 0.0);
  return r;
}

std::vector<TestDataSet> read_test_data_sets(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(
        dir +
        ": not a directory (expected an ONNX test directory with model.onnx and test_data_set_N/)");
  std::vector<std::pair<long, std::string>> sets;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const std::string prefix = "test_data_set_";
    if (e.is_directory() && n.compare(0, prefix.size(), prefix) == 0 && n.size() > prefix.size() &&
        std::all_of(n.begin() + long(prefix.size()), n.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      sets.emplace_back(std::stol(n.substr(prefix.size())), e.path().string());
  }
  if (ec) throw Error(dir + ": cannot list the directory (" + ec.message() + ")");
  if (sets.empty())
    throw Error(dir + ": no test_data_set_N directories (expected ONNX's test layout)");
  std::sort(sets.begin(), sets.end());
  std::vector<TestDataSet> out;
  for (const auto& s : sets) {
    TestDataSet d;
    d.dir = s.second;
    for (const char* kind : {"input", "output"}) {
      for (int k = 0;; ++k) {
        const std::string p =
            (fs::path(s.second) / (std::string(kind) + "_" + std::to_string(k) + ".pb")).string();
        if (!fs::exists(p, ec)) break;
        (std::string(kind) == "input" ? d.inputs : d.outputs).push_back(load_tensor(p));
      }
    }
    if (d.inputs.empty())
      throw Error(s.second + ": no input_0.pb (expected input_K.pb and output_K.pb)");
    out.push_back(std::move(d));
  }
  return out;
}

std::map<std::string, Tensor> name_inputs(const GraphSignature& sig,
                                          const std::vector<Tensor>& inputs,
                                          const std::string& source,
                                          std::map<std::string, std::string>* sources) {
  std::map<std::string, Tensor> m;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    std::string name = t.name;
    const bool known = std::any_of(sig.inputs.begin(), sig.inputs.end(),
                                   [&](const TensorSpec& s) { return s.name == name; });
    if (!known) {
      if (k >= sig.inputs.size())
        throw Error(source + ": input_" + std::to_string(k) + ".pb" +
                    (t.name.empty() ? "" : " ('" + t.name + "')") +
                    " has no graph input (the graph has " + std::to_string(sig.inputs.size()) +
                    ")");
      name = sig.inputs[k].name;
    }
    if (m.count(name)) throw Error(source + ": input '" + name + "' is given twice");
    m[name] = t;
    if (sources) (*sources)[name] = source + "/input_" + std::to_string(k) + ".pb";
  }
  return m;
}

std::string tensor_file_name(const std::string& name, const std::string& ext) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  if (s == "." || s == "..") s = "_";
  return s + ext;
}

}  // namespace tpu::cnn

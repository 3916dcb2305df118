// SPDX-License-Identifier: Apache-2.0
#include "frontend/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>

#include "network.h"

namespace tpu::cnn::frontend {
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

namespace {

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

}  // namespace

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

}  // namespace tpu::cnn::frontend

// SPDX-License-Identifier: Apache-2.0
#include "tensor_io.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "output_file.h"

namespace tpu::cnn {

namespace {

// The host is little-endian (x86-64, arm64); the formats are read and written little-endian.
static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE float and double expected");

std::string read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error(path + ": read error");
  return s.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int64_t checked_numel(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(what + ": negative dimension " + std::to_string(d) + " in the shape");
    if (d > 0 && n > (int64_t(1) << 40) / d)
      throw Error(what +
                  ": the shape has more than 2^40 elements (not a tensor this tool can hold)");
    n *= d;
  }
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- .npy header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 28, 28), }
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

class DictParser {
 public:
  DictParser(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip();
      if (key == "descr") {
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        fail("unknown key '" + key + "' (expected 'descr', 'fortran_order' and 'shape')");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' after the value of '" + key + "'");
    }
    if (!have_descr || !have_fortran || !have_shape)
      fail("the header dict lacks " +
           std::string(!have_descr     ? "'descr'"
                       : !have_fortran ? "'fortran_order'"
                                       : "'shape'") +
           " (expected 'descr', 'fortran_order' and 'shape')");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(what_ + ": bad .npy header at character " + std::to_string(i_) + ": " + msg +
                " (header: " + s_ + ")");
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    skip();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++i_;
    std::string v;
    while (i_ < s_.size() && s_[i_] != q) v += s_[i_++];
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return v;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> v;
    while (true) {
      skip();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("expected a dimension (a non-negative integer)");
      int64_t d = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (d > (int64_t(1) << 40)) fail("dimension too large");
        d = d * 10 + (s_[i_++] - '0');
      }
      v.push_back(d);
      skip();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        fail("expected ',' or ')' in the shape");
    }
    ++i_;
    return v;
  }

  const std::string& s_;
  std::string what_;
  size_t i_ = 0;
};

// descr ('<f4', '|u1', ...) -> dtype; `swap` for big-endian data.
DType npy_dtype(const std::string& descr, bool* swap, const std::string& what) {
  if (descr.size() < 3)
    throw Error(what + ": unsupported dtype '" + descr +
                "' (expected float32, float16, float64, uint8, int8, int32 or int64)");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  *swap = order == '>';
  if (order != '<' && order != '>' && order != '|' && order != '=')
    throw Error(what + ": bad byte order '" + std::string(1, order) + "' in dtype '" + descr +
                "' (expected <, >, | or =)");
  if (kind == "f4") return DType::Float32;
  if (kind == "f2") return DType::Float16;
  if (kind == "f8") return DType::Float64;
  if (kind == "u1") return DType::UInt8;
  if (kind == "i1") return DType::Int8;
  if (kind == "i4") return DType::Int32;
  if (kind == "i8") return DType::Int64;
  throw Error(what + ": unsupported dtype '" + descr +
              "' (expected float32 <f4, float16 <f2, float64 <f8, uint8 |u1, int8 |i1, int32 <i4 "
              "or int64 <i8)");
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::Float32:
      return "<f4";
    case DType::Float16:
      return "<f2";
    case DType::Float64:
      return "<f8";
    case DType::UInt8:
      return "|u1";
    case DType::Int8:
      return "|i1";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
  }
  return "?";
}

template <typename T>
void put(std::vector<uint8_t>& d, size_t i, T v) {
  std::memcpy(d.data() + i * sizeof(T), &v, sizeof(T));
}
template <typename T>
T get(const std::vector<uint8_t>& d, int64_t i) {
  T v;
  std::memcpy(&v, d.data() + size_t(i) * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::Float64:
      return "float64";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::Float64:
    case DType::Int64:
      return 8;
    case DType::UInt8:
    case DType::Int8:
      return 1;
  }
  return 1;
}

bool dtype_is_float(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::Float64;
}

int dtype_to_onnx(DType t) {
  switch (t) {
    case DType::Float32:
      return onnx::TensorProto::FLOAT;
    case DType::Float16:
      return onnx::TensorProto::FLOAT16;
    case DType::Float64:
      return onnx::TensorProto::DOUBLE;
    case DType::UInt8:
      return onnx::TensorProto::UINT8;
    case DType::Int8:
      return onnx::TensorProto::INT8;
    case DType::Int32:
      return onnx::TensorProto::INT32;
    case DType::Int64:
      return onnx::TensorProto::INT64;
  }
  return onnx::TensorProto::UNDEFINED;
}

bool dtype_from_onnx(int o, DType* t) {
  switch (o) {
    case onnx::TensorProto::FLOAT:
      *t = DType::Float32;
      return true;
    case onnx::TensorProto::FLOAT16:
      *t = DType::Float16;
      return true;
    case onnx::TensorProto::DOUBLE:
      *t = DType::Float64;
      return true;
    case onnx::TensorProto::UINT8:
      *t = DType::UInt8;
      return true;
    case onnx::TensorProto::INT8:
      *t = DType::Int8;
      return true;
    case onnx::TensorProto::INT32:
      *t = DType::Int32;
      return true;
    case onnx::TensorProto::INT64:
      *t = DType::Int64;
      return true;
    default:
      return false;
  }
}

std::string onnx_type_name(int o) {
  DType t;
  if (dtype_from_onnx(o, &t)) return dtype_name(t);
  switch (o) {
    case onnx::TensorProto::UNDEFINED:
      return "undefined";
    case onnx::TensorProto::UINT16:
      return "uint16";
    case onnx::TensorProto::INT16:
      return "int16";
    case onnx::TensorProto::UINT32:
      return "uint32";
    case onnx::TensorProto::UINT64:
      return "uint64";
    case onnx::TensorProto::BOOL:
      return "bool";
    case onnx::TensorProto::STRING:
      return "string";
    case onnx::TensorProto::BFLOAT16:
      return "bfloat16";
    case onnx::TensorProto::COMPLEX64:
      return "complex64";
    case onnx::TensorProto::COMPLEX128:
      return "complex128";
    default:
      return "type " + std::to_string(o);
  }
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) & 1u, exp = uint32_t(h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24);  // zero, subnormal
  else if (exp == 31)
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(float(mant | 0x400u), int(exp) - 25);
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf, NaN
  const int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow: inf
  if (e <= 0) {                                  // subnormal half (or zero)
    if (e < -10) return sign;
    const uint32_t m = mant | 0x800000u;
    const int shift = 14 - e;  // 24 - 10 + (1 - e) - 1
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return uint16_t(sign | h);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Tensor::shape_str() const { return shape_string(shape); }
std::string Tensor::describe() const { return std::string(dtype_name(dtype)) + " " + shape_str(); }

double Tensor::value(int64_t i) const {
  switch (dtype) {
    case DType::Float32:
      return get<float>(data, i);
    case DType::Float16:
      return half_to_float(get<uint16_t>(data, i));
    case DType::Float64:
      return get<double>(data, i);
    case DType::UInt8:
      return get<uint8_t>(data, i);
    case DType::Int8:
      return get<int8_t>(data, i);
    case DType::Int32:
      return get<int32_t>(data, i);
    case DType::Int64:
      return double(get<int64_t>(data, i));
  }
  return 0;
}

std::vector<float> Tensor::to_float() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[size_t(i)] = float(value(i));
  return v;
}

std::vector<int64_t> Tensor::to_int64() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    v[size_t(i)] = dtype == DType::Int64 ? get<int64_t>(data, i) : int64_t(value(i));
  return v;
}

Tensor Tensor::from_float(const std::vector<int64_t>& shape, const std::vector<float>& v,
                          std::string name) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = DType::Float32;
  t.shape = shape;
  if (int64_t(v.size()) != checked_numel(shape, "Tensor::from_float"))
    throw Error("Tensor::from_float: " + std::to_string(v.size()) + " values for shape " +
                shape_string(shape) + " (expected " + std::to_string(t.numel()) + ")");
  t.data.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

Tensor Tensor::from_int(DType dtype, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& v, std::string name) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = shape;
  if (int64_t(v.size()) != checked_numel(shape, "Tensor::from_int"))
    throw Error("Tensor::from_int: " + std::to_string(v.size()) + " values for shape " +
                shape_string(shape) + " (expected " + std::to_string(t.numel()) + ")");
  t.data.resize(v.size() * dtype_size(dtype));
  auto check = [&](size_t i, int64_t lo, int64_t hi) {
    if (v[i] < lo || v[i] > hi)
      throw Error("Tensor::from_int: value " + std::to_string(v[i]) + " at index " +
                  std::to_string(i) + " does not fit " + dtype_name(dtype) + " (expected " +
                  std::to_string(lo) + ".." + std::to_string(hi) + ")");
  };
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case DType::Float32:
        put<float>(t.data, i, float(v[i]));
        break;
      case DType::Float16:
        put<uint16_t>(t.data, i, float_to_half(float(v[i])));
        break;
      case DType::Float64:
        put<double>(t.data, i, double(v[i]));
        break;
      case DType::UInt8:
        check(i, 0, 255);
        put<uint8_t>(t.data, i, uint8_t(v[i]));
        break;
      case DType::Int8:
        check(i, -128, 127);
        put<int8_t>(t.data, i, int8_t(v[i]));
        break;
      case DType::Int32:
        check(i, INT32_MIN, INT32_MAX);
        put<int32_t>(t.data, i, int32_t(v[i]));
        break;
      case DType::Int64:
        put<int64_t>(t.data, i, v[i]);
        break;
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------- .npy

Tensor parse_npy(const std::string& b, const std::string& name) {
  static const char kMagic[] = "\x93NUMPY";
  if (b.size() < 10 || b.compare(0, 6, kMagic, 6) != 0)
    throw Error(name + ": not a .npy file (expected the magic \\x93NUMPY at the start, " +
                std::to_string(b.size()) + " bytes)");
  const int major = static_cast<unsigned char>(b[6]), minor = static_cast<unsigned char>(b[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(name + ": .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " is not supported (expected 1.0, 2.0 or 3.0)");
  size_t header_len, start;
  if (major == 1) {
    header_len = size_t(static_cast<unsigned char>(b[8])) | size_t(static_cast<unsigned char>(b[9]))
                                                                << 8;
    start = 10;
  } else {
    if (b.size() < 12)
      throw Error(name + ": truncated .npy header (" + std::to_string(b.size()) + " bytes)");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= size_t(static_cast<unsigned char>(b[size_t(8 + i)])) << (8 * i);
    start = 12;
  }
  if (b.size() < start + header_len)
    throw Error(name + ": truncated .npy header (" + std::to_string(header_len) +
                " header bytes announced, " + std::to_string(b.size() - start) + " present)");
  const std::string header = b.substr(start, header_len);
  const NpyHeader h = DictParser(header, name).parse();
  if (h.fortran)
    throw Error(name +
                ": the array is in Fortran order (fortran_order: True); expected C order "
                "(save np.ascontiguousarray(x))");
  bool swap = false;
  Tensor t;
  t.dtype = npy_dtype(h.descr, &swap, name);
  t.shape = h.shape;
  const int64_t n = checked_numel(t.shape, name);
  const size_t es = dtype_size(t.dtype);
  const size_t want = size_t(n) * es, have = b.size() - start - header_len;
  if (have < want)
    throw Error(name + ": truncated data: " + std::to_string(have) + " bytes for " +
                std::string(dtype_name(t.dtype)) + " " + t.shape_str() + ", expected " +
                std::to_string(want));
  if (have > want)
    throw Error(name + ": " + std::to_string(have - want) + " bytes after the data of " +
                std::string(dtype_name(t.dtype)) + " " + t.shape_str() + " (expected exactly " +
                std::to_string(want) + " bytes)");
  t.data.assign(b.begin() + long(start + header_len), b.end());
  if (swap && es > 1)
    for (size_t i = 0; i < t.data.size(); i += es)
      for (size_t k = 0; k < es / 2; ++k) std::swap(t.data[i + k], t.data[i + es - 1 - k]);
  return t;
}

std::string serialize_npy(const Tensor& t) {
  std::string dict =
      std::string("{'descr': '") + npy_descr(t.dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape.size(); ++i)
    dict +=
        std::to_string(t.shape[i]) + (t.shape.size() == 1 || i + 1 < t.shape.size() ? ", " : "");
  if (t.shape.size() == 1) dict.resize(dict.size() - 1);  // "(5,)"
  dict += "), }";
  // Pad with spaces and end with '\n' so that the preamble is a multiple of 64 bytes.
  size_t pre = 10;
  size_t total = pre + dict.size() + 1;
  int major = 1;
  if (total + 63 > 65535 + 10) {
    major = 2;
    pre = 12;
    total = pre + dict.size() + 1;
  }
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  const size_t hl = dict.size();
  out += char(hl & 0xff);
  out += char((hl >> 8) & 0xff);
  if (major == 2) {
    out += char((hl >> 16) & 0xff);
    out += char((hl >> 24) & 0xff);
  }
  out += dict;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

// ------------------------------------------------------------------------------- TensorProto

Tensor parse_tensor_proto(const std::string& bytes, const std::string& name) {
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes))
    throw Error(name + ": cannot parse as an ONNX TensorProto (truncated or corrupt protobuf, " +
                std::to_string(bytes.size()) + " bytes)");
  Tensor t;
  t.name = p.name();
  if (p.data_type() == onnx::TensorProto::UNDEFINED)
    throw Error(name + ": the TensorProto has no data_type (not a TensorProto, or corrupt; " +
                std::to_string(bytes.size()) + " bytes)");
  if (!dtype_from_onnx(p.data_type(), &t.dtype))
    throw Error(name + ": TensorProto '" + p.name() + "' has data type " +
                onnx_type_name(p.data_type()) +
                " (expected float32, float16, float64, uint8, int8, int32 or int64)");
  if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0)
    throw Error(name + ": TensorProto '" + p.name() +
                "' keeps its data in an external file (not supported; "
                "expected the values in the file)");
  for (int i = 0; i < p.dims_size(); ++i) t.shape.push_back(p.dims(i));
  const int64_t n = checked_numel(t.shape, name);
  const size_t es = dtype_size(t.dtype);
  const std::string what = name + ": TensorProto '" + p.name() + "' (" + t.describe() + ")";
  auto count_check = [&](int64_t have, const char* field) {
    if (have != n)
      throw Error(what + ": " + std::to_string(have) + " values in " + field + ", expected " +
                  std::to_string(n));
  };
  // The value count is checked before anything is allocated (dims can claim 2^40 values).
  const size_t want_bytes = size_t(n) * es;
  if (p.has_raw_data()) {
    if (p.raw_data().size() != want_bytes)
      throw Error(what + ": raw_data holds " + std::to_string(p.raw_data().size()) +
                  " bytes, expected " + std::to_string(want_bytes));
    t.data.assign(p.raw_data().begin(), p.raw_data().end());
    return t;
  }
  switch (t.dtype) {
    case DType::Float32:
      count_check(p.float_data_size(), "float_data");
      break;
    case DType::Float64:
      count_check(p.double_data_size(), "double_data");
      break;
    case DType::Int64:
      count_check(p.int64_data_size(), "int64_data");
      break;
    default:
      count_check(p.int32_data_size(), "int32_data");
      break;
  }
  t.data.resize(want_bytes);
  switch (t.dtype) {
    case DType::Float32:
      for (int64_t i = 0; i < n; ++i) put<float>(t.data, size_t(i), p.float_data(int(i)));
      break;
    case DType::Float64:
      for (int64_t i = 0; i < n; ++i) put<double>(t.data, size_t(i), p.double_data(int(i)));
      break;
    case DType::Int64:
      for (int64_t i = 0; i < n; ++i) put<int64_t>(t.data, size_t(i), p.int64_data(int(i)));
      break;
    case DType::Float16:  // the bits, one per int32
    case DType::UInt8:
    case DType::Int8:
    case DType::Int32:
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = p.int32_data(int(i));
        if (t.dtype == DType::Float16)
          put<uint16_t>(t.data, size_t(i), uint16_t(v));
        else if (t.dtype == DType::UInt8)
          put<uint8_t>(t.data, size_t(i), uint8_t(v));
        else if (t.dtype == DType::Int8)
          put<int8_t>(t.data, size_t(i), int8_t(v));
        else
          put<int32_t>(t.data, size_t(i), v);
      }
      break;
  }
  return t;
}

std::string serialize_tensor_proto(const Tensor& t) {
  onnx::TensorProto p;
  p.set_name(t.name);
  p.set_data_type(dtype_to_onnx(t.dtype));
  for (int64_t d : t.shape) p.add_dims(d);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
  return p.SerializeAsString();
}

// ------------------------------------------------------------------------------------- files

bool is_tensor_file(const std::string& path) {
  const std::string l = lower(path);
  return ends_with(l, ".npy") || ends_with(l, ".pb");
}

Tensor load_tensor(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory (expected a .npy or an ONNX TensorProto .pb file)");
  if (!std::filesystem::exists(path, ec))
    throw Error(path + ": no such file (expected a .npy or an ONNX TensorProto .pb file)");
  const std::string l = lower(path);
  if (ends_with(l, ".npy")) return parse_npy(read_file_bytes(path), path);
  if (ends_with(l, ".pb")) return parse_tensor_proto(read_file_bytes(path), path);
  throw Error(path +
              ": unknown tensor file type (expected a .npy or an ONNX TensorProto .pb file)");
}

void save_tensor(const std::string& path, const Tensor& t) {
  const std::string l = lower(path);
  std::string bytes;
  if (ends_with(l, ".npy"))
    bytes = serialize_npy(t);
  else if (ends_with(l, ".pb"))
    bytes = serialize_tensor_proto(t);
  else
    throw Error(path + ": unknown tensor file type (expected to write .npy or .pb)");
  try {
    write_file_atomically(path, bytes);  // all or nothing: a failure leaves the old file
  } catch (const std::runtime_error& e) {
    throw Error(e.what());
  }
}

}  // namespace tpu::cnn

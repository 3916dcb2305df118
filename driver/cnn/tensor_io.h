// SPDX-License-Identifier: Apache-2.0
// Tensors in files: NumPy .npy (format versions 1.0, 2.0 and 3.0, C order) and ONNX TensorProto
// .pb (raw_data or the typed fields), the formats people use to hand a model its inputs and to
// compare its outputs (ONNX's test layout: test_data_set_N/input_K.pb, output_K.pb).
//
// A Tensor holds its values as raw little-endian bytes in C (row-major) order; the accessors
// convert. Every reading error names the file and says what was wrong and what was expected
// (cnn::Error).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "network.h"

namespace tpu::cnn {

enum class DType { Float32, Float16, Float64, UInt8, Int8, Int32, Int64 };

// "float32", "float16", "float64", "uint8", "int8", "int32", "int64".
const char* dtype_name(DType t);
// Bytes per element.
size_t dtype_size(DType t);
bool dtype_is_float(DType t);
// The ONNX TensorProto data type of `t` (onnx::TensorProto::FLOAT, ...), and back (false if the
// ONNX type has no DType).
int dtype_to_onnx(DType t);
bool dtype_from_onnx(int onnx_type, DType* t);
// The name of an ONNX data type ("float32", "bool", "string", ...; "type N" if unknown).
std::string onnx_type_name(int onnx_type);

struct Tensor {
  std::string name;  // the TensorProto name (empty for .npy)
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // empty = scalar
  std::vector<uint8_t> data;   // numel() * dtype_size(dtype) bytes, little-endian, C order

  int64_t numel() const;          // product of the shape (1 for a scalar)
  std::string shape_str() const;  // "[1, 1, 28, 28]"
  std::string describe() const;   // "float32 [1, 1, 28, 28]"
  // Element i converted (float16 decoded exactly; int64 may round).
  double value(int64_t i) const;
  std::vector<float> to_float() const;
  std::vector<int64_t> to_int64() const;  // float values are truncated toward zero

  static Tensor from_float(const std::vector<int64_t>& shape, const std::vector<float>& v,
                           std::string name = "");
  // Integer values into an integer dtype (Error if a value does not fit) or a float dtype.
  static Tensor from_int(DType dtype, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& v, std::string name = "");
};

// Half-precision (IEEE binary16) bits to float and float to the nearest half (ties to even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

// .npy. `name` is used in messages. Throws Error on a bad magic or header, Fortran order, an
// unsupported dtype, a shape that does not match the data (truncated or extra bytes).
Tensor parse_npy(const std::string& bytes, const std::string& name);
// Format version 1.0 (2.0 when the header needs more than 65535 bytes), header padded to 64 bytes.
std::string serialize_npy(const Tensor& t);

// ONNX TensorProto. Throws Error on bytes that do not parse, an unsupported data type, external
// data or a value count that does not match the dims.
Tensor parse_tensor_proto(const std::string& bytes, const std::string& name);
// raw_data, little-endian, with name, dims and data_type.
std::string serialize_tensor_proto(const Tensor& t);

// By extension: .npy or .pb (Error for anything else, naming the path).
Tensor load_tensor(const std::string& path);
// By extension: .npy or .pb, all or nothing (tpu::write_file_atomically: a failure leaves the
// old file). Throws Error if the file cannot be written.
void save_tensor(const std::string& path, const Tensor& t);
// True for the extensions load_tensor reads.
bool is_tensor_file(const std::string& path);

}  // namespace tpu::cnn

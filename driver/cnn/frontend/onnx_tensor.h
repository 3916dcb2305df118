// SPDX-License-Identifier: Apache-2.0
// ONNX tensors and attributes as the frontend reads them: constant tensors (initializers,
// Constant nodes, folded values) with their quantized origin, and node attributes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class AttributeProto;
class NodeProto;
class TensorProto;
}  // namespace onnx

namespace tpu::cnn::frontend {

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

// "[1, 3, 224, 224]"
std::string dims_str(const std::vector<int64_t>& d);
// The name of an ONNX TensorProto data type ("float32", "uint8", ...).
const char* type_name(int t);
// The values of a tensor (raw_data or the typed fields); throws Error naming `what` for a
// tensor whose data does not match its shape or type, or holds a NaN / infinity.
Const read_tensor(const onnx::TensorProto& t, const std::string& what);

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def);
float attr_float(const onnx::NodeProto& n, const std::string& name, float def);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name);
std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def);

}  // namespace tpu::cnn::frontend

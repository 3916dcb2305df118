// Writing ONNX models from C++ (Debian's libonnx-dev protobuf classes, hidden behind this
// header): a small graph builder, and exporters of a network as a float model, a QDQ model
// (QuantizeLinear/DequantizeLinear pairs) or a QLinear model (QLinearConv/QLinearMatMul).
// Tests use them to build models without PyTorch; the quantized exports round-trip exactly
// through load_onnx + quantize.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "network.h"

namespace tpu::cnn {

// A node attribute.
struct OnnxAttr {
  enum class Kind { Int, Float, Ints, String } kind = Kind::Int;
  std::string name;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  std::string s;
  static OnnxAttr Int(std::string n, int64_t v) { OnnxAttr a; a.kind = Kind::Int; a.name = std::move(n); a.i = v; return a; }
  static OnnxAttr Float(std::string n, float v) { OnnxAttr a; a.kind = Kind::Float; a.name = std::move(n); a.f = v; return a; }
  static OnnxAttr Ints(std::string n, std::vector<int64_t> v) { OnnxAttr a; a.kind = Kind::Ints; a.name = std::move(n); a.ints = std::move(v); return a; }
  static OnnxAttr String(std::string n, std::string v) { OnnxAttr a; a.kind = Kind::String; a.name = std::move(n); a.s = std::move(v); return a; }
};

class OnnxGraph {
 public:
  explicit OnnxGraph(const std::string& name, int opset = 13);
  ~OnnxGraph();
  OnnxGraph(const OnnxGraph&) = delete;
  OnnxGraph& operator=(const OnnxGraph&) = delete;

  // A float graph input; a dimension < 0 is symbolic ("N").
  void input(const std::string& name, const std::vector<int64_t>& dims);
  // A graph output (float, shape left unspecified unless given).
  void output(const std::string& name, const std::vector<int64_t>& dims = {});
  void init_float(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v);
  void init_int8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int8_t>& v);
  void init_uint8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<uint8_t>& v);
  void init_int32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& v);
  void init_int64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v);
  void node(const std::string& op, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs = {},
            const std::string& name = "");
  std::string serialize() const;
  void save(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The float network as an ONNX model: input "input" [batch, C, H, W] (batch < 0: symbolic),
// Conv / Gemm with bias, Relu / Clip, MaxPool, Flatten, output "logits".
std::string export_float_onnx(const Network& net, int64_t batch = 1);
// The quantized network in QDQ form (weights as DequantizeLinear of int8 initializers,
// int32 biases, Q/DQ pairs on every activation).
std::string export_qdq_onnx(const QuantNetwork& net, int64_t batch = 1);
// The quantized network with QLinearConv / QLinearMatMul (+ DequantizeLinear, Add of the bias,
// QuantizeLinear for dense layers, which QLinearMatMul cannot bias).
std::string export_qlinear_onnx(const QuantNetwork& net, int64_t batch = 1);

}  // namespace tpu::cnn

// SPDX-License-Identifier: Apache-2.0
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
  static OnnxAttr Int(std::string n, int64_t v) {
    OnnxAttr a;
    a.kind = Kind::Int;
    a.name = std::move(n);
    a.i = v;
    return a;
  }
  static OnnxAttr Float(std::string n, float v) {
    OnnxAttr a;
    a.kind = Kind::Float;
    a.name = std::move(n);
    a.f = v;
    return a;
  }
  static OnnxAttr Ints(std::string n, std::vector<int64_t> v) {
    OnnxAttr a;
    a.kind = Kind::Ints;
    a.name = std::move(n);
    a.ints = std::move(v);
    return a;
  }
  static OnnxAttr String(std::string n, std::string v) {
    OnnxAttr a;
    a.kind = Kind::String;
    a.name = std::move(n);
    a.s = std::move(v);
    return a;
  }
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
  void init_float(const std::string& name, const std::vector<int64_t>& dims,
                  const std::vector<float>& v);
  void init_int8(const std::string& name, const std::vector<int64_t>& dims,
                 const std::vector<int8_t>& v);
  void init_uint8(const std::string& name, const std::vector<int64_t>& dims,
                  const std::vector<uint8_t>& v);
  void init_int32(const std::string& name, const std::vector<int64_t>& dims,
                  const std::vector<int32_t>& v);
  void init_int64(const std::string& name, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& v);
  // A node; a non-empty `domain` (e.g. "com.microsoft") also imports that domain, version 1.
  void node(const std::string& op, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const std::vector<OnnxAttr>& attrs = {},
            const std::string& name = "", const std::string& domain = "");
  std::string serialize() const;
  void save(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every exporter writes the layers in order, as the importer reads them back:
//  * several inputs of a Conv, Dense or Copy: a Concat (axis 1) first;
//  * Conv: Conv with group and dilations; Dense: Gemm (Flatten first when its input is 4-D),
//    or GlobalAveragePool when it is one (one group per channel, weights 1 / pixels, a 4-D
//    input), or else a grouped Conv whose kernel covers the image; Add: Add of two tensors;
//  * an AveragePool with per-pixel divisors: AveragePool (QLinearAveragePool) with its pads and
//    count_include_pad = 0;
//  * Copy: MaxPool with its pads (before the activation, which commutes with it);
//  * activations: Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish (opset 14 then).
//  * a per-channel PRelu (the importer's two ReLU copies and per-channel Add): PRelu (float);
//  * a host Softmax / LogSoftmax: the last node.
// Throws Error for what ONNX cannot say so that it imports back (a Conv or Dense reading
// concatenated inputs of different scales, a grouped Dense of a flat input, a pool after a LUT
// function that is not monotonic, a per-channel PRelu in quantized form, an AveragePool whose
// divisors count padding taps).

// The float network as an ONNX model: input "input" [batch, C, H, W] (batch < 0: symbolic),
// output "logits".
std::string export_float_onnx(const Network& net, int64_t batch = 1);
// The quantized network in QDQ form, as ONNX Runtime's static quantizer writes it: weights as
// DequantizeLinear of int8 initializers (per output channel, axis 0), int32 biases, and every
// layer's output (and a LUT function's input) as a QuantizeLinear / DequantizeLinear pair; a
// Concat is followed by its own pair.
std::string export_qdq_onnx(const QuantNetwork& net, int64_t batch = 1);
// The quantized network with QLinearConv / QLinearMatMul and the com.microsoft ops QLinearAdd,
// QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu;
// MaxPool on the integer tensor; other activations (and a dense layer's bias, which QLinearMatMul
// cannot add) between DequantizeLinear and QuantizeLinear.
std::string export_qlinear_onnx(const QuantNetwork& net, int64_t batch = 1);

}  // namespace tpu::cnn

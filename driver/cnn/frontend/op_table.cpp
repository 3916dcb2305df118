// SPDX-License-Identifier: Apache-2.0
#include "frontend/op_table.h"

#include "frontend/importer.h"
#include "onnx_import.h"
#include "passes/fold_constants.h"

namespace tpu::cnn::frontend {

namespace {

using Node = onnx::NodeProto;
constexpr std::string_view kMs = kMicrosoftDomain;

// The converters, by kind of op (the Importer's member functions do the work).
void conv(Importer& im, const Node& n) { im.conv(n); }
void dense(Importer& im, const Node& n) { im.dense(n); }
void arith(Importer& im, const Node& n) { im.arith(n); }
void qlinear_add(Importer& im, const Node& n) { im.add(n, true); }
void concat(Importer& im, const Node& n) { im.concat(n, false); }
void qlinear_concat(Importer& im, const Node& n) { im.concat(n, true); }
void batch_norm(Importer& im, const Node& n) { im.batch_norm(n); }
void activation(Importer& im, const Node& n) { im.activation(n, false); }
void qlinear_activation(Importer& im, const Node& n) { im.activation(n, true); }
void maxpool(Importer& im, const Node& n) { im.maxpool(n); }
void average_pool(Importer& im, const Node& n) { im.average_pool(n, false); }
void qlinear_average_pool(Importer& im, const Node& n) { im.average_pool(n, true); }
void global_pool(Importer& im, const Node& n) { im.global_pool(n, false); }
void qlinear_global_pool(Importer& im, const Node& n) { im.global_pool(n, true); }
void flatten(Importer& im, const Node& n) { im.flatten(n); }
void squeeze(Importer& im, const Node& n) { im.squeeze(n); }
void pad(Importer& im, const Node& n) { im.pad(n); }
void softmax(Importer& im, const Node& n) { im.softmax(n); }
void alias(Importer& im, const Node& n) { im.alias(n); }
void quantize_linear(Importer& im, const Node& n) { im.quantize_linear(n); }
void dequantize_linear(Importer& im, const Node& n) { im.dequantize_linear(n); }
void shape_of(Importer& im, const Node& n) { im.shape_of(n); }

// The folders (passes/fold_constants.h).
using passes::fold_concat;
using passes::fold_constant;
using passes::fold_copy;
using passes::fold_dequantize;
using passes::fold_gather;
using passes::fold_squeeze;

constexpr std::string_view kByConstants =
    "Sub/Mul/Div by constants (folded into the layer before, or input preprocessing)";
constexpr std::string_view kSqueeze = "Squeeze/Unsqueeze (of 1x1 H and W)";
constexpr std::string_view kSoftmax = "Softmax/LogSoftmax (last, on the host)";
constexpr std::string_view kOnConstants = "Shape/Gather/Unsqueeze/Concat/Cast (on constants)";

}  // namespace

const std::vector<OpConverter>& op_converters() {
  static const std::vector<OpConverter> table{
      {"", "Conv", conv, nullptr, "Conv (groups, depthwise, dilations)", false, true},
      {"", "QLinearConv", conv, nullptr, "QLinearConv"},
      {"", "ConvInteger", conv, nullptr, "ConvInteger"},
      {"", "Gemm", dense, nullptr, "Gemm"},
      {"", "MatMul", dense, nullptr, "MatMul"},
      {"", "QLinearMatMul", dense, nullptr, "QLinearMatMul"},
      {"", "MatMulInteger", dense, nullptr, "MatMulInteger (int32 outputs)"},
      {"", "Add", arith, nullptr, "Add (of two tensors, or a bias)"},
      {kMs, "QLinearAdd", qlinear_add, nullptr, "QLinearAdd"},
      {"", "Sub", arith, nullptr, kByConstants},
      {"", "Mul", arith, nullptr, kByConstants},
      {"", "Div", arith, nullptr, kByConstants},
      {"", "Concat", concat, fold_concat, "Concat (channels)"},
      {kMs, "QLinearConcat", qlinear_concat, nullptr, "QLinearConcat"},
      {"", "BatchNormalization", batch_norm, nullptr, "BatchNormalization (after Conv/Gemm)"},
      {"", "Relu", activation, nullptr, "Relu"},
      {"", "Clip", activation, nullptr, "Clip"},
      {"", "Sigmoid", activation, nullptr, "Sigmoid"},
      {kMs, "QLinearSigmoid", qlinear_activation, nullptr, "QLinearSigmoid"},
      {"", "Tanh", activation, nullptr, "Tanh"},
      {"", "LeakyRelu", activation, nullptr, "LeakyRelu"},
      {kMs, "QLinearLeakyRelu", qlinear_activation, nullptr, "QLinearLeakyRelu"},
      {"", "HardSigmoid", activation, nullptr, "HardSigmoid"},
      {"", "HardSwish", activation, nullptr, "HardSwish (or x * HardSigmoid(x))"},
      {"", "PRelu", activation, nullptr, "PRelu"},
      {"", "MaxPool", maxpool, nullptr, "MaxPool"},
      {"", "AveragePool", average_pool, nullptr, "AveragePool", false, true},
      {kMs, "QLinearAveragePool", qlinear_average_pool, nullptr, "QLinearAveragePool"},
      {"", "GlobalAveragePool", global_pool, nullptr, "GlobalAveragePool"},
      {kMs, "QLinearGlobalAveragePool", qlinear_global_pool, nullptr, "QLinearGlobalAveragePool"},
      {"", "ReduceMean", global_pool, nullptr, "ReduceMean (over H and W)"},
      {"", "Flatten", flatten, nullptr, "Flatten"},
      {"", "Reshape", flatten, nullptr, "Reshape (flattening)"},
      {"", "Squeeze", squeeze, fold_squeeze, kSqueeze},
      {"", "Unsqueeze", squeeze, fold_squeeze, kSqueeze},
      {"", "Pad", pad, nullptr, "Pad (zeros, before a Conv or AveragePool)", false, true},
      {"", "Softmax", softmax, nullptr, kSoftmax},
      {"", "LogSoftmax", softmax, nullptr, kSoftmax},
      {"", "Identity", alias, fold_copy, "Identity"},
      {"", "Dropout", alias, nullptr, "Dropout"},
      {"", "QuantizeLinear", quantize_linear, nullptr, "QuantizeLinear"},
      {"", "DequantizeLinear", dequantize_linear, fold_dequantize, "DequantizeLinear"},
      {"", "Constant", nullptr, fold_constant, "Constant", true},
      {"", "Shape", shape_of, nullptr, kOnConstants},
      {"", "Gather", nullptr, fold_gather, kOnConstants},
      {"", "Cast", nullptr, fold_copy, kOnConstants},
  };
  return table;
}

const OpConverter* find_converter(std::string_view domain, std::string_view op) {
  for (const OpConverter& c : op_converters())
    if (c.domain == domain && c.op == op) return &c;
  return nullptr;
}

}  // namespace tpu::cnn::frontend

namespace tpu::cnn {

std::string supported_ops() {
  std::string s;
  std::string_view last;
  for (const auto& c : frontend::op_converters()) {
    if (c.listed_as == last) continue;
    s += (s.empty() ? "" : ", ") + std::string(c.listed_as);
    last = c.listed_as;
  }
  return s;
}

std::vector<std::string> supported_op_names() {
  std::vector<std::string> names;
  for (const auto& c : frontend::op_converters()) {
    const std::string domain(c.domain);
    names.push_back(domain.empty() ? std::string(c.op) : domain + "." + std::string(c.op));
  }
  return names;
}

}  // namespace tpu::cnn

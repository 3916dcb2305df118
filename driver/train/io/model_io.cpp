// SPDX-License-Identifier: Apache-2.0
#include "model_io.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "onnx_export.h"
#include "output_file.h"
#include "train_data.h"

namespace tpu::train {

std::vector<float> glorot_uniform(size_t count, uint64_t fan_in, uint64_t fan_out,
                                  uint64_t& state) {
  const double limit = std::sqrt(6.0 / double(fan_in + fan_out));
  std::vector<float> v(count);
  for (float& x : v) {
    const double u = double(splitmix64(state) >> 40) * 0x1p-24;
    x = float((2.0 * u - 1.0) * limit);
  }
  return v;
}

std::string keras_example_onnx(uint64_t seed) {
  constexpr int64_t kFilters = 64, kK = 3, kClasses = 10, kPooled = 13;
  constexpr int64_t kFlat = kFilters * kPooled * kPooled;  // 10816
  uint64_t state = seed;
  const std::vector<float> conv_w =
      glorot_uniform(size_t(kFilters * kK * kK), 1 * kK * kK, uint64_t(kFilters * kK * kK), state);
  const std::vector<float> dense_w =
      glorot_uniform(size_t(kClasses * kFlat), uint64_t(kFlat), uint64_t(kClasses), state);
  using cnn::OnnxAttr;
  cnn::OnnxGraph g("keras_fashion_mnist", 13);
  g.input("input", {-1, 1, 28, 28});
  g.init_float("conv.weight", {kFilters, 1, kK, kK}, conv_w);
  g.init_float("conv.bias", {kFilters}, std::vector<float>(size_t(kFilters), 0.0f));
  g.init_float("dense.weight", {kClasses, kFlat}, dense_w);
  g.init_float("dense.bias", {kClasses}, std::vector<float>(size_t(kClasses), 0.0f));
  g.node("Conv", {"input", "conv.weight", "conv.bias"}, {"conv_out"},
         {OnnxAttr::Ints("kernel_shape", {kK, kK}), OnnxAttr::Ints("strides", {1, 1}),
          OnnxAttr::Ints("pads", {0, 0, 0, 0})},
         "conv");
  g.node("MaxPool", {"conv_out"}, {"pool_out"},
         {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
  g.node("Relu", {"pool_out"}, {"relu_out"}, {}, "relu");
  g.node("Flatten", {"relu_out"}, {"flat"}, {OnnxAttr::Int("axis", 1)}, "flatten");
  g.node("Gemm", {"flat", "dense.weight", "dense.bias"}, {"logits"}, {OnnxAttr::Int("transB", 1)},
         "dense");
  g.output("logits", {-1, kClasses});
  return g.serialize();
}

std::string mlp_example_onnx(uint32_t hidden, uint64_t seed) {
  constexpr int64_t kIn = 784, kClasses = 10;
  if (hidden == 0 || hidden > 65536)
    throw std::invalid_argument("mlp_example_onnx: hidden " + std::to_string(hidden) +
                                " is outside 1..65536");
  const int64_t h = hidden;
  uint64_t state = seed;
  const std::vector<float> w1 = glorot_uniform(size_t(h * kIn), kIn, uint64_t(h), state);
  const std::vector<float> w2 = glorot_uniform(size_t(kClasses * h), uint64_t(h), kClasses, state);
  using cnn::OnnxAttr;
  cnn::OnnxGraph g("mlp_fashion_mnist", 13);
  g.input("input", {-1, 1, 28, 28});
  g.init_float("fc1.weight", {h, kIn}, w1);
  g.init_float("fc1.bias", {h}, std::vector<float>(size_t(h), 0.0f));
  g.init_float("fc2.weight", {kClasses, h}, w2);
  g.init_float("fc2.bias", {kClasses}, std::vector<float>(size_t(kClasses), 0.0f));
  g.node("Flatten", {"input"}, {"flat"}, {OnnxAttr::Int("axis", 1)}, "flatten");
  g.node("Gemm", {"flat", "fc1.weight", "fc1.bias"}, {"h"}, {OnnxAttr::Int("transB", 1)}, "fc1");
  g.node("Relu", {"h"}, {"h_relu"}, {}, "relu");
  g.node("Gemm", {"h_relu", "fc2.weight", "fc2.bias"}, {"logits"}, {OnnxAttr::Int("transB", 1)},
         "fc2");
  g.output("logits", {-1, kClasses});
  return g.serialize();
}

std::string read_model_file(const std::string& path, const std::string& option) {
  const std::string what = option.empty() ? path : option + " " + path;
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st))
    throw std::runtime_error(what + ": no such file (expected an ONNX model file)");
  if (std::filesystem::is_directory(st))
    throw std::runtime_error(what + ": is a directory (expected an ONNX model file)");
  if (!std::filesystem::is_regular_file(st))
    throw std::runtime_error(what + ": is not a regular file (expected an ONNX model file)");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > (uintmax_t(1) << 31))
    throw std::runtime_error(what + ": larger than 2 GiB (protobuf's limit) or unreadable");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(what + ": cannot open for reading");
  std::string bytes(size_t(size), '\0');
  f.read(bytes.data(), std::streamsize(size));
  if (!f) throw std::runtime_error(what + ": read error");
  return bytes;
}

std::vector<std::string> trainable_initializers(const std::string& model_bytes) {
  onnx::ModelProto m;
  if (!m.ParseFromString(model_bytes))
    throw std::invalid_argument("not an ONNX model (the protobuf does not parse)");
  std::set<std::string> read;  // weight operands of Conv / Gemm / MatMul
  for (const auto& n : m.graph().node()) {
    const std::string& op = n.op_type();
    if (op != "Conv" && op != "Gemm" && op != "MatMul") continue;
    for (int i = 0; i < n.input_size(); ++i) read.insert(n.input(i));
  }
  std::vector<std::string> names;
  for (const auto& t : m.graph().initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT && read.count(t.name()))
      names.push_back(t.name());
  return names;
}

ModelShape model_shape(const std::string& model_bytes) {
  onnx::ModelProto m;
  if (!m.ParseFromString(model_bytes))
    throw std::invalid_argument("not an ONNX model (the protobuf does not parse)");
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  const onnx::ValueInfoProto* in = nullptr;
  for (const auto& v : m.graph().input())
    if (!inits.count(v.name())) {
      in = &v;
      break;
    }
  if (!in) throw std::invalid_argument("the graph has no input (expected images [B, C, H, W])");
  const auto& dims = in->type().tensor_type().shape().dim();
  auto fixed = [](const onnx::TensorShapeProto_Dimension& d) {
    return d.has_dim_value() && d.dim_value() > 0 && d.dim_value() <= 65535;
  };
  if (dims.size() != 4 || !fixed(dims[1]) || !fixed(dims[2]) || !fixed(dims[3]))
    throw std::invalid_argument("input " + in->name() +
                                " is not [B, C, H, W] with fixed C, H and W (expected images)");
  ModelShape s;
  for (int i = 0; i < 3; ++i) s.chw[size_t(i)] = uint32_t(dims[i + 1].dim_value());
  if (m.graph().output_size() > 0) {
    const auto& od = m.graph().output(0).type().tensor_type().shape().dim();
    if (od.size() == 2 && fixed(od[1])) s.classes = uint32_t(od[1].dim_value());
  }
  return s;
}

}  // namespace tpu::train

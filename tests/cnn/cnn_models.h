// Models for the CNN tests, built in C++ with the ONNX protobuf API (onnx_export.h) — no
// PyTorch at test time — and the bundled Fashion-MNIST model.
//
//  * CIFAR-10 ConvNet: 3x32x32, Conv 3x3x32 pad 1 -> ReLU -> MaxPool 2 -> Conv 3x3x64 pad 1 ->
//    ReLU -> MaxPool 2 -> Dense 4096->512 -> ReLU -> Dense 10.
//  * Three-conv net: 3x32x32, Conv 3x3x32 / 3x3x64 / 3x3x128 (pad 1) each + ReLU + MaxPool 2,
//    Dense 2048->128 + ReLU, Dense 10.
// Random weights are He-normal, biases small and uniform, so activations neither die nor explode.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dataset.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "quantize.h"
#include "runner.h"

namespace cnn_test {

using namespace tpu::cnn;

inline std::string bundled_model() { return std::string(TPU_CNN_SOURCE_DIR) + "/models/fashion_cnn.onnx"; }

struct ConvSpec {
  int cout, k, stride, pad;
  bool pool;
};

// An ONNX model (serialized) of convs (+ReLU, +MaxPool 2) then dense layers (+ReLU except the
// last), random weights from `seed`.
inline std::string random_cnn_onnx(const std::string& name, Shape3 in, const std::vector<ConvSpec>& convs,
                                   const std::vector<int>& dense, uint32_t seed) {
  std::mt19937 rng(seed);
  OnnxGraph g(name);
  g.input("input", {1, in.c, in.h, in.w});
  std::string x = "input";
  Shape3 s = in;
  auto weights = [&](size_t count, int64_t fan_in) {
    std::normal_distribution<float> d(0.0f, std::sqrt(2.0f / float(fan_in)));
    std::vector<float> w(count);
    for (auto& v : w) v = d(rng);
    return w;
  };
  auto biases = [&](int count) {
    std::uniform_real_distribution<float> d(-0.05f, 0.1f);
    std::vector<float> b(static_cast<size_t>(count));
    for (auto& v : b) v = d(rng);
    return b;
  };
  int i = 0;
  for (const auto& c : convs) {
    const std::string p = "conv" + std::to_string(++i);
    g.init_float(p + ".weight", {c.cout, s.c, c.k, c.k}, weights(size_t(c.cout) * s.c * c.k * c.k, int64_t(s.c) * c.k * c.k));
    g.init_float(p + ".bias", {c.cout}, biases(c.cout));
    g.node("Conv", {x, p + ".weight", p + ".bias"}, {p + "_out"},
           {OnnxAttr::Ints("kernel_shape", {c.k, c.k}), OnnxAttr::Ints("strides", {c.stride, c.stride}),
            OnnxAttr::Ints("pads", {c.pad, c.pad, c.pad, c.pad})},
           "/" + p + "/Conv");
    g.node("Relu", {p + "_out"}, {p + "_relu"}, {}, "/" + p + "/Relu");
    x = p + "_relu";
    s = {c.cout, (s.h + 2 * c.pad - c.k) / c.stride + 1, (s.w + 2 * c.pad - c.k) / c.stride + 1};
    if (c.pool) {
      g.node("MaxPool", {x}, {p + "_pool"}, {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})},
             "/" + p + "/MaxPool");
      x = p + "_pool";
      s = {s.c, s.h / 2, s.w / 2};
    }
  }
  g.node("Flatten", {x}, {"flat"}, {OnnxAttr::Int("axis", 1)}, "/Flatten");
  x = "flat";
  int64_t k = s.size();
  i = 0;
  for (size_t d = 0; d < dense.size(); ++d) {
    const std::string p = "fc" + std::to_string(++i);
    g.init_float(p + ".weight", {dense[d], k}, weights(size_t(dense[d]) * size_t(k), k));
    g.init_float(p + ".bias", {dense[d]}, biases(dense[d]));
    const std::string out = d + 1 == dense.size() ? "logits" : p + "_out";
    g.node("Gemm", {x, p + ".weight", p + ".bias"}, {out}, {OnnxAttr::Int("transB", 1)}, "/" + p + "/Gemm");
    x = out;
    if (d + 1 < dense.size()) {
      g.node("Relu", {x}, {p + "_relu"}, {}, "/" + p + "/Relu");
      x = p + "_relu";
    }
    k = dense[d];
  }
  g.output("logits", {1, dense.back()});
  return g.serialize();
}

inline Network cifar_convnet(uint32_t seed) {
  return import_onnx_bytes(random_cnn_onnx("cifar10_convnet", {3, 32, 32}, {{32, 3, 1, 1, true}, {64, 3, 1, 1, true}},
                                           {512, 10}, seed),
                           "cifar10_convnet");
}

inline Network three_conv_net(uint32_t seed) {
  return import_onnx_bytes(
      random_cnn_onnx("three_conv", {3, 32, 32}, {{32, 3, 1, 1, true}, {64, 3, 1, 1, true}, {128, 3, 1, 1, true}},
                      {128, 10}, seed),
      "three_conv");
}

inline std::vector<std::vector<float>> random_images(const Shape3& s, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.0f, 1.0f);
  std::vector<std::vector<float>> v(size_t(count), std::vector<float>(size_t(s.size())));
  for (auto& img : v)
    for (auto& x : img) x = d(rng);
  return v;
}

inline std::vector<std::vector<int32_t>> quantize_images(const QuantNetwork& q, const std::vector<std::vector<float>>& x) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& img : x) {
    out.emplace_back(size_t(q.input.size()));
    q.quantize_input(img.data(), out.back().data());
  }
  return out;
}

inline std::vector<const int32_t*> pointers(const std::vector<std::vector<int32_t>>& v, size_t first = 0, size_t count = ~size_t{0}) {
  std::vector<const int32_t*> p;
  for (size_t i = first; i < v.size() && p.size() < count; ++i) p.push_back(v[i].data());
  return p;
}

// The bundled model quantized with the first `calibration` training images.
inline QuantNetwork fashion_quantized(int calibration = 200) {
  const Network net = load_onnx(bundled_model());
  const ImageSet train = load_fashion_mnist(fashion_mnist_dir(), true);
  std::vector<std::vector<float>> cal;
  for (int i = 0; i < calibration; ++i) cal.push_back(pixels_to_float(train.image(i), train.rows * train.cols));
  return quantize_model(net, cal);
}

}  // namespace cnn_test

// SPDX-License-Identifier: Apache-2.0
// Small float ONNX models for the training compiler's tests, built with the onnx protobuf
// classes (tpu::cnn::OnnxGraph), and a host reference of their training step written from the
// reference kernels (reference.h).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "onnx_export.h"
#include "reference.h"

namespace tpu::train::test {

// input [B, c, h, w] -> Flatten -> Gemm fc1 (transB = 1) -> Relu
//   [residual: -> Gemm fc2 (transB = 0) -> Relu -> Add with fc1's Relu]
//   -> MatMul fc3 + Add bias -> [Softmax]
struct MlpSpec {
  uint32_t c = 1, h = 3, w = 3, hidden = 7, classes = 3;
  bool residual = false, softmax = true;
  uint32_t seed = 1;
  uint32_t inputs() const { return c * h * w; }
};

inline std::vector<float> uniform(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(count);
  for (float& x : v) x = d(rng);
  return v;
}

// The initial weights in ONNX order: fc1.W [hidden, K], fc1.b, fc2.W [hidden, hidden], fc2.b,
// fc3.W [hidden, classes], fc3.b (fc2 only when residual).
struct MlpWeights {
  std::vector<float> w1, b1, w2, b2, w3, b3;
};

inline MlpWeights mlp_weights(const MlpSpec& s) {
  MlpWeights w;
  w.w1 = uniform(size_t{s.hidden} * s.inputs(), 0.5f, s.seed + 1);
  w.b1 = uniform(s.hidden, 0.1f, s.seed + 2);
  if (s.residual) {
    w.w2 = uniform(size_t{s.hidden} * s.hidden, 0.5f, s.seed + 3);
    w.b2 = uniform(s.hidden, 0.1f, s.seed + 4);
  }
  w.w3 = uniform(size_t{s.hidden} * s.classes, 0.5f, s.seed + 5);
  w.b3 = uniform(s.classes, 0.1f, s.seed + 6);
  return w;
}

inline std::string mlp_onnx(const MlpSpec& s) {
  using cnn::OnnxAttr;
  const MlpWeights w = mlp_weights(s);
  const int64_t k = s.inputs(), hd = s.hidden, cl = s.classes;
  cnn::OnnxGraph g("mlp");
  g.input("x", {-1, s.c, s.h, s.w});
  g.init_float("fc1.W", {hd, k}, w.w1);
  g.init_float("fc1.b", {hd}, w.b1);
  g.init_float("fc3.W", {hd, cl}, w.w3);
  g.init_float("fc3.b", {cl}, w.b3);
  g.node("Flatten", {"x"}, {"f"}, {OnnxAttr::Int("axis", 1)}, "flatten");
  g.node("Gemm", {"f", "fc1.W", "fc1.b"}, {"z1"}, {OnnxAttr::Int("transB", 1)}, "fc1");
  g.node("Relu", {"z1"}, {"h1"}, {}, "relu1");
  std::string r = "h1";
  if (s.residual) {
    g.init_float("fc2.W", {hd, hd}, w.w2);
    g.init_float("fc2.b", {hd}, w.b2);
    g.node("Gemm", {"h1", "fc2.W", "fc2.b"}, {"z2"}, {}, "fc2");
    g.node("Relu", {"z2"}, {"h2"}, {}, "relu2");
    g.node("Add", {"h1", "h2"}, {"r"}, {}, "residual");
    r = "r";
  }
  g.node("MatMul", {r, "fc3.W"}, {"m3"}, {}, "fc3");
  g.node("Add", {"m3", "fc3.b"}, {"logits"}, {}, "fc3_bias");
  if (s.softmax) {
    g.node("Softmax", {"logits"}, {"probs"}, {OnnxAttr::Int("axis", -1)}, "softmax");
    g.output("probs", {-1, cl});
  } else {
    g.output("logits", {-1, cl});
  }
  return g.serialize();
}

}  // namespace tpu::train::test

// SPDX-License-Identifier: Apache-2.0
// Float ONNX models for tpusim train (docs/training.md "tpusim train"): the default model (the
// Keras Fashion-MNIST example with Glorot-uniform weights from a seed), reading a model file,
// the check that a model has something to train, and (trainer.h's export_trained_onnx, in
// onnx_out.cpp) the trained model written back as a float ONNX file.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tpu::train {

// Glorot (Xavier) uniform values, as Keras' GlorotUniform: limit = sqrt(6 / (fan_in + fan_out)),
// value k = float((2 u_k - 1) * limit) computed in double, with u_k = (splitmix64(state) >> 40)
// * 2^-24 (24 random bits, u in [0, 1)); `state` advances by `count` draws.
std::vector<float> glorot_uniform(size_t count, uint64_t fan_in, uint64_t fan_out, uint64_t& state);

// The Keras example of issue 30 as a float ONNX model (opset 13, serialized ModelProto):
//   input "input" [N, 1, 28, 28] -> Conv "conv" (64 filters 3x3, valid, stride 1) -> MaxPool
//   "pool" (2x2, stride 2) -> Relu "relu" -> Flatten "flatten" (axis 1: 64*13*13 = 10816) ->
//   Gemm "dense" (transB = 1, 10 outputs) -> output "logits" [N, 10].
// Initializers: conv.weight [64, 1, 3, 3] (Glorot, fan_in 1*3*3 = 9, fan_out 64*3*3 = 576),
// conv.bias [64] zeros, dense.weight [10, 10816] (Glorot, fan_in 10816, fan_out 10),
// dense.bias [10] zeros; state = seed, conv.weight drawn first then dense.weight, each in its
// initializer's element order.
std::string keras_example_onnx(uint64_t seed);

// A float MLP for 1x28x28 images (the Python module's mlp_example, tests): input "input"
// [N, 1, 28, 28] -> Flatten -> Gemm "fc1" (transB = 1, `hidden` outputs) -> Relu -> Gemm "fc2"
// (transB = 1, 10 outputs) -> "logits"; fc1.weight [hidden, 784] and fc2.weight [10, hidden]
// Glorot-uniform from `seed` (in that order), biases zero. Unlike the Keras example it trains
// with the Trainer's Dense path alone.
std::string mlp_example_onnx(uint32_t hidden, uint64_t seed);

// The bytes of an ONNX file (at most 2 GiB, a regular file). Throws std::runtime_error naming
// `option` and the path.
std::string read_model_file(const std::string& path, const std::string& option = "--model");

// The trainable weights the model has: float initializers read by a Conv (W, B), Gemm (B, C)
// or MatMul node, in initializer order. Throws std::invalid_argument for bytes that are not an
// ONNX model.
std::vector<std::string> trainable_initializers(const std::string& model_bytes);

// export_trained_onnx's model as bytes: the original model (a path or the serialized
// ModelProto) with the trained initializers. Throws std::invalid_argument as it does.
std::string trained_onnx(const std::string& original_model,
                         const std::map<std::string, std::vector<float>>& weights);

// The model's input image and classes as its graph declares them: the first graph input that
// is not an initializer, [B, C, H, W] with static C, H, W, and the first output [B, classes]
// (classes 0 when it is not static). Throws std::invalid_argument naming what does not fit.
struct ModelShape {
  std::array<uint32_t, 3> chw{};
  uint32_t classes = 0;
};
ModelShape model_shape(const std::string& model_bytes);

}  // namespace tpu::train

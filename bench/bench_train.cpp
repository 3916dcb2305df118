// SPDX-License-Identifier: Apache-2.0
// The training compiler's figures (docs/training.md "The training compiler"): compile time,
// instructions per step, the golden model's cycle estimate per step and the wall time per step
// on the model backend, per layer cycles.
//   bench_train [--n N] [--steps S] [--batch B] [--sgd] [MODEL.onnx]
// Without a model: the Dense half of the Keras example (Flatten of 64 x 13 x 13 -> Dense 10,
// Gemm transB = 1 as Keras / PyTorch export it), Glorot-uniform weights, zero bias.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "device_model.h"
#include "onnx_export.h"
#include "trainer.h"

namespace {

std::string keras_dense() {
  const int64_t k = 64 * 13 * 13, c = 10;
  std::mt19937 rng(1);
  const float limit = std::sqrt(6.0f / static_cast<float>(k + c));
  std::uniform_real_distribution<float> d(-limit, limit);
  std::vector<float> w(static_cast<size_t>(k * c));
  for (float& x : w) x = d(rng);
  tpu::cnn::OnnxGraph g("keras_dense");
  g.input("input", {-1, 64, 13, 13});
  g.init_float("dense.weight", {c, k}, w);
  g.init_float("dense.bias", {c}, std::vector<float>(c, 0.0f));
  g.node("Flatten", {"input"}, {"f"}, {tpu::cnn::OnnxAttr::Int("axis", 1)}, "flatten");
  g.node("Gemm", {"f", "dense.weight", "dense.bias"}, {"logits"},
         {tpu::cnn::OnnxAttr::Int("transB", 1)}, "dense");
  g.output("logits", {-1, c});
  return g.serialize();
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 16, steps = 3;
  std::string model;
  tpu::train::TrainOptions o;  // Adam 1e-3, batch 32
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) {
      n = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--steps" && i + 1 < argc) {
      steps = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--batch" && i + 1 < argc) {
      o.batch = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--sgd") {
      o.optimizer = tpu::train::Optimizer::Sgd;
      o.lr = 0.01f;
    } else {
      model = a;
    }
  }
  const tpu::ChipParams chip = tpu::ChipParams::training(n);
  tpu::train::Trainer t(model.empty() ? keras_dense() : model, o, chip);
  std::printf("compile: %.3f s, %zu instructions per step\n", t.compile_seconds(), t.step_instructions());
  tpu::ModelDevice dev(chip);
  t.init(dev);
  const auto chw = t.input_chw();
  const size_t pixels = size_t{chw[0]} * chw[1] * chw[2];
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> px(0.0f, 1.0f);
  std::vector<float> x(pixels * o.batch);
  std::vector<int32_t> labels(o.batch);
  for (uint32_t s = 0; s < steps; ++s) {
    for (float& v : x) v = px(rng);
    for (int32_t& l : labels) l = static_cast<int32_t>(rng() % t.classes());
    const auto t0 = std::chrono::steady_clock::now();
    const tpu::train::StepResult r = t.step(dev, x.data(), labels.data());
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("step %u: loss %.6f, %llu cycles (model estimate), %.3f s wall\n", s, r.loss,
                static_cast<unsigned long long>(r.cycles), wall);
  }
  for (const auto& l : t.layer_cycles()) {
    std::printf("  %-10s %-20s forward %9llu backward %9llu update %9llu\n", l.name.c_str(), l.op.c_str(),
                static_cast<unsigned long long>(l.forward), static_cast<unsigned long long>(l.backward),
                static_cast<unsigned long long>(l.update));
  }
  return 0;
}

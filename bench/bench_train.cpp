// SPDX-License-Identifier: Apache-2.0
// The training compiler's figures (docs/training.md "The training compiler"): compile time,
// instructions per step, the golden model's cycle estimate per step and the wall time per step
// on the model backend, per layer cycles.
//   bench_train [--n N] [--steps S] [--batch B] [--sgd] [--dense] [--same-batch] [MODEL.onnx]
// (--same-batch: every step on the first batch, whose loss must then fall)
// Without a model: the Keras example of issue 30 (Conv 3x3x1x64 valid -> MaxPool 2 -> Relu ->
// Flatten -> Dense 10 (Gemm transB = 1) -> Softmax on 28 x 28 x 1), Glorot-uniform weights,
// zero biases; --dense: its Dense half alone (Flatten of 64 x 13 x 13 -> Dense 10).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <variant>

#include "device_model.h"
#include "onnx_export.h"
#include "trainer.h"

namespace {

std::vector<float> glorot(size_t count, int64_t fan_in, int64_t fan_out, uint32_t seed) {
  std::mt19937 rng(seed);
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  std::uniform_real_distribution<float> d(-limit, limit);
  std::vector<float> w(count);
  for (float& x : w) x = d(rng);
  return w;
}

std::string keras(bool dense_only) {
  using tpu::cnn::OnnxAttr;
  const int64_t k = 64 * 13 * 13, c = 10;
  tpu::cnn::OnnxGraph g("keras");
  g.init_float("dense.weight", {c, k}, glorot(static_cast<size_t>(k * c), k, c, 1));
  g.init_float("dense.bias", {c}, std::vector<float>(c, 0.0f));
  if (dense_only) {
    g.input("input", {-1, 64, 13, 13});
    g.node("Flatten", {"input"}, {"f"}, {OnnxAttr::Int("axis", 1)}, "flatten");
  } else {
    g.input("input", {-1, 1, 28, 28});
    g.init_float("conv.weight", {64, 1, 3, 3}, glorot(576, 9, 576, 2));
    g.init_float("conv.bias", {64}, std::vector<float>(64, 0.0f));
    g.node("Conv", {"input", "conv.weight", "conv.bias"}, {"c"},
           {OnnxAttr::Ints("kernel_shape", {3, 3})}, "conv");
    g.node("MaxPool", {"c"}, {"p"},
           {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
    g.node("Relu", {"p"}, {"r"}, {}, "relu");
    g.node("Flatten", {"r"}, {"f"}, {OnnxAttr::Int("axis", 1)}, "flatten");
  }
  g.node("Gemm", {"f", "dense.weight", "dense.bias"}, {"logits"}, {OnnxAttr::Int("transB", 1)},
         "dense");
  g.node("Softmax", {"logits"}, {"probs"}, {}, "softmax");
  g.output("probs", {-1, c});
  return g.serialize();
}

// Per layer and phase, the work of each unit (rows: VMEM rows moved by DMA, rows fed to the
// MXU, rows the vector unit walks with N per loaded tile or transposed block and acc_to_vmem's),
// and the step's MACs: what bounds the step.
void print_units(const tpu::train::Trainer& t, const tpu::ChipParams& chip) {
  struct Work {
    uint64_t dma = 0, mxu = 0, vpu = 0;
  };
  std::map<std::string, Work> per;
  std::vector<std::string> order;
  Work total;
  const auto& prog = t.step_program();
  for (const tpu::train::ProgramSpan& sp : t.step_program_spans()) {
    const std::string key = sp.layer + " " + sp.phase;
    if (per.find(key) == per.end()) order.push_back(key);
    Work& w = per[key];
    for (size_t i = sp.begin; i < sp.end; ++i) {
      std::visit(
          [&](const auto& in) {
            using T = std::decay_t<decltype(in)>;
            uint64_t d = 0, m = 0, v = 0;
            if constexpr (std::is_same_v<T, tpu::ReadVmem> || std::is_same_v<T, tpu::WriteVmem>) {
              d = in.rows;
            } else if constexpr (std::is_same_v<T, tpu::MatmulBf16>) {
              m = uint64_t{in.inner} * in.outer;
            } else if constexpr (std::is_same_v<T, tpu::LoadWeights>) {
              v = uint64_t{chip.N} * in.tiles;
            } else if constexpr (std::is_same_v<T, tpu::Transpose>) {
              v = uint64_t{chip.N} * in.blocks;
            } else if constexpr (std::is_same_v<T, tpu::AccToVmem>) {
              v = in.rows;
            } else if constexpr (std::is_same_v<T, tpu::Vector>) {
              v = uint64_t{in.inner} * in.outer;
            }
            w.dma += d;
            w.mxu += m;
            w.vpu += v;
            total.dma += d;
            total.mxu += m;
            total.vpu += v;
          },
          prog[i]);
    }
  }
  std::printf("units (rows): %-24s %10s %10s %10s\n", "layer phase", "dma", "mxu", "vector");
  for (const std::string& k : order) {
    const Work& w = per[k];
    std::printf("              %-24s %10llu %10llu %10llu\n", k.c_str(),
                static_cast<unsigned long long>(w.dma), static_cast<unsigned long long>(w.mxu),
                static_cast<unsigned long long>(w.vpu));
  }
  std::printf("              %-24s %10llu %10llu %10llu\n", "total",
              static_cast<unsigned long long>(total.dma),
              static_cast<unsigned long long>(total.mxu),
              static_cast<unsigned long long>(total.vpu));
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t n = 16, steps = 3, vmem_rows = 0;
  std::string model;
  bool dense_only = false, same_batch = false;
  tpu::train::TrainOptions o;  // Adam 1e-3, batch 32
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) {
      n = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--steps" && i + 1 < argc) {
      steps = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--batch" && i + 1 < argc) {
      o.batch = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--vmem-rows" && i + 1 < argc) {
      vmem_rows = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (a == "--same-batch") {
      same_batch = true;
    } else if (a == "--dense") {
      dense_only = true;
    } else if (a == "--sgd") {
      o.optimizer = tpu::train::Optimizer::Sgd;
      o.lr = 0.01f;
    } else {
      model = a;
    }
  }
  tpu::ChipParams chip = tpu::ChipParams::training(n);
  if (vmem_rows != 0) chip.vmem_rows = vmem_rows;
  tpu::train::Trainer t(model.empty() ? keras(dense_only) : model, o, chip);
  std::printf("compile: %.3f s, %zu instructions per step\n", t.compile_seconds(),
              t.step_instructions());
  tpu::ModelDevice dev(chip);
  t.init(dev);
  const auto chw = t.input_chw();
  const size_t pixels = size_t{chw[0]} * chw[1] * chw[2];
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> px(0.0f, 1.0f);
  std::vector<float> x(pixels * o.batch);
  std::vector<int32_t> labels(o.batch);
  for (uint32_t s = 0; s < steps; ++s) {
    if (s == 0 || !same_batch) {
      for (float& v : x) v = px(rng);
      for (int32_t& l : labels) l = static_cast<int32_t>(rng() % t.classes());
    }
    const auto t0 = std::chrono::steady_clock::now();
    const tpu::train::StepResult r = t.step(dev, x.data(), labels.data());
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("step %u: loss %.6f, %llu cycles (model estimate), %.3f s wall\n", s, r.loss,
                static_cast<unsigned long long>(r.cycles), wall);
  }
  for (const auto& l : t.layer_cycles()) {
    std::printf("  %-10s %-20s forward %9llu backward %9llu update %9llu\n", l.name.c_str(),
                l.op.c_str(), static_cast<unsigned long long>(l.forward),
                static_cast<unsigned long long>(l.backward),
                static_cast<unsigned long long>(l.update));
  }
  print_units(t, chip);
  return 0;
}

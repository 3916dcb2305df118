// SPDX-License-Identifier: Apache-2.0
// End to end: the Trainer (the training compiler's passes, then the step program on the golden
// model) trains small float ONNX models; every step's loss and every weight equal the host
// reference of tests/train/reference.h bit for bit, and the loss decreases.
#include "trainer.h"

#include <gtest/gtest.h>

#include <fstream>

#include "compiler/autodiff.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "device_model.h"
#include "temp_dir.h"
#include "train_models.h"

namespace tpu::train::test {
namespace {

using ref::Bits;
using ref::Mat;

Mat mat(uint32_t rows, uint32_t cols, const std::vector<float>& v) {
  Mat m{rows, cols, {}};
  for (float f : v) m.v.push_back(ref::bits(f));
  return m;
}

std::vector<Bits> bits(const std::vector<float>& v) {
  return mat(1, static_cast<uint32_t>(v.size()), v).v;
}

Mat add(const Mat& a, const Mat& b) {
  Mat r = a;
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = ref::add(a.v[i], b.v[i]);
  return r;
}

// The training step of MlpSpec's model written from the reference kernels, in the order the
// compiler's autodiff pass documents (a fan-out's gradients summed in the order computed).
struct RefTrainer {
  MlpSpec s;
  uint32_t n;
  TrainOptions o;
  Mat w1, w2, w3;  // inputs x outputs
  std::vector<Bits> b1, b2, b3;
  std::vector<std::vector<Bits>> m, v;  // per parameter (graph order); v: SGD's velocity
  ref::Adam adam;

  RefTrainer(const MlpSpec& spec, uint32_t n_, const TrainOptions& opt) : s(spec), n(n_), o(opt) {
    const MlpWeights w = mlp_weights(s);
    w1 = ref::transposed(mat(s.hidden, s.inputs(), w.w1));
    b1 = bits(w.b1);
    if (s.residual) {
      w2 = mat(s.hidden, s.hidden, w.w2);
      b2 = bits(w.b2);
    }
    w3 = mat(s.hidden, s.classes, w.w3);
    b3 = bits(w.b3);
    adam = ref::Adam{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay};
  }
  std::vector<std::vector<Bits>*> params() {
    if (s.residual) return {&w1.v, &b1, &w2.v, &b2, &w3.v, &b3};
    return {&w1.v, &b1, &w3.v, &b3};
  }
  struct Fwd {
    Mat z1, h1, z2, h2, r, logits;
  };
  Fwd forward(const Mat& x) const {
    Fwd f;
    f.z1 = ref::add_row(ref::matmul_tiled(x, w1, n), b1);
    f.h1 = ref::relu(f.z1);
    f.r = f.h1;
    if (s.residual) {
      f.z2 = ref::add_row(ref::matmul_tiled(f.h1, w2, n), b2);
      f.h2 = ref::relu(f.z2);
      f.r = add(f.h1, f.h2);
    }
    f.logits = ref::add_row(ref::matmul_tiled(f.r, w3, n), b3);
    return f;
  }
  Bits step(const Mat& x, const std::vector<int32_t>& labels) {
    const Fwd f = forward(x);
    const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(f.logits, labels, n);
    std::vector<std::vector<Bits>> g;
    const std::vector<Bits> dw3 = ref::matmul_tiled(ref::transposed(f.r), ce.dlogits, n).v;
    const std::vector<Bits> db3 = ref::column_sums(ce.dlogits);
    const Mat dr = ref::matmul_tiled(ce.dlogits, ref::transposed(w3), n);
    Mat dh1 = dr;
    if (s.residual) {
      const Mat dz2 = ref::relu_backward(f.z2, dr);
      g.push_back(ref::matmul_tiled(ref::transposed(f.h1), dz2, n).v);
      g.push_back(ref::column_sums(dz2));
      dh1 = add(dr, ref::matmul_tiled(dz2, ref::transposed(w2), n));
    }
    const Mat dz1 = ref::relu_backward(f.z1, dh1);
    g.insert(g.begin(), {ref::matmul_tiled(ref::transposed(x), dz1, n).v, ref::column_sums(dz1)});
    g.push_back(dw3);
    g.push_back(db3);
    update(g);
    return ce.loss;
  }
  void update(const std::vector<std::vector<Bits>>& g) {
    const auto p = params();
    m.resize(p.size());
    v.resize(p.size());
    Bits update_scale = 0, eps_term = 0;
    if (o.optimizer == Optimizer::Adam) ref::adam_begin_step(adam, update_scale, eps_term);
    for (size_t i = 0; i < p.size(); ++i) {
      if (m[i].empty()) m[i] = v[i] = std::vector<Bits>(g[i].size(), 0);
      if (o.optimizer == Optimizer::Adam) {
        ref::adam_update(adam, update_scale, eps_term, *p[i], g[i], m[i], v[i]);
      } else {
        std::vector<Bits> none;
        ref::sgd(ref::Sgd{o.lr, o.momentum, o.weight_decay}, *p[i], g[i],
                 o.momentum != 0.0f ? v[i] : none);
      }
    }
  }
  // Weights in ONNX order, as Trainer::weights gives them.
  std::map<std::string, std::vector<Bits>> onnx_weights() const {
    std::map<std::string, std::vector<Bits>> r{
        {"fc1.W", ref::transposed(w1).v}, {"fc1.b", b1}, {"fc3.W", w3.v}, {"fc3.b", b3}};
    if (s.residual) {
      r["fc2.W"] = w2.v;
      r["fc2.b"] = b2;
    }
    return r;
  }
};

// Labels from a random linear teacher, so the batch is learnable.
std::vector<int32_t> teacher_labels(const std::vector<float>& x, uint32_t rows, uint32_t cols,
                                    uint32_t classes) {
  const std::vector<float> t = uniform(size_t{cols} * classes, 1.0f, 77);
  std::vector<int32_t> labels(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    double best = -1e30;
    for (uint32_t c = 0; c < classes; ++c) {
      double sum = 0;
      for (uint32_t k = 0; k < cols; ++k)
        sum += double{x[size_t{r} * cols + k]} * t[size_t{k} * classes + c];
      if (sum > best) {
        best = sum;
        labels[r] = static_cast<int32_t>(c);
      }
    }
  }
  return labels;
}

std::map<std::string, std::vector<Bits>> as_bits(
    const std::map<std::string, std::vector<float>>& w) {
  std::map<std::string, std::vector<Bits>> r;
  for (const auto& [k, v] : w) r[k] = bits(v);
  return r;
}

struct Case {
  const char* name;
  uint32_t n, batch;
  MlpSpec spec;
  TrainOptions opt;
  uint32_t vmem_rows = 0;  // 0: ChipParams::training's
};

TrainOptions sgd(float lr, float momentum = 0.0f, float wd = 0.0f) {
  TrainOptions o;
  o.optimizer = Optimizer::Sgd;
  o.lr = lr;
  o.momentum = momentum;
  o.weight_decay = wd;
  return o;
}
TrainOptions adam(float lr, float wd = 0.0f) {
  TrainOptions o;
  o.lr = lr;
  o.weight_decay = wd;
  return o;
}
MlpSpec spec(uint32_t c, uint32_t h, uint32_t w, uint32_t hidden, uint32_t classes, bool residual) {
  MlpSpec s;
  s.c = c;
  s.h = h;
  s.w = w;
  s.hidden = hidden;
  s.classes = classes;
  s.residual = residual;
  return s;
}

class TrainerMlp : public ::testing::TestWithParam<Case> {};

const Case kCases[] = {
    {"N4_Sgd", 4, 10, spec(1, 3, 3, 7, 3, false), sgd(0.5f)},
    {"N4_ResidualAdam", 4, 10, spec(1, 3, 3, 7, 3, true), adam(0.05f)},
    {"N16_Adam_WeightDecay", 16, 34, spec(2, 3, 5, 21, 10, false), adam(0.05f, 0.01f)},
    {"N16_ResidualMomentum_WeightDecay", 16, 34, spec(2, 3, 5, 21, 10, true),
     sgd(0.1f, 0.9f, 0.01f)},
    // 64 inputs in 256 VMEM rows: every Dense and update node runs in chunks.
    {"N4_Chunked_Adam", 4, 10, spec(1, 8, 8, 9, 3, true), adam(0.05f), 256},
};
INSTANTIATE_TEST_SUITE_P(Steps, TrainerMlp, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

TEST_P(TrainerMlp, LossesAndWeightsMatchReferenceAndLossDecreases) {
  const Case& c = GetParam();
  ChipParams chip = ChipParams::training(c.n);
  if (c.vmem_rows != 0) chip.vmem_rows = c.vmem_rows;
  TrainOptions o = c.opt;
  o.batch = c.batch;
  Trainer t(mlp_onnx(c.spec), o, chip);
  EXPECT_EQ(t.classes(), c.spec.classes);
  if (c.vmem_rows != 0) {  // the case is there to chunk: check that it does
    compiler::Graph g = compiler::import_onnx(mlp_onnx(c.spec), c.batch, c.n);
    compiler::append_backward(g);
    compiler::append_update(g, o);
    const compiler::Placement p = compiler::place(g, chip);
    EXPECT_LT(p.chunk[0], (c.spec.inputs() + c.n - 1) / c.n);  // fc1 in K-chunks
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].op == compiler::Op::AdamUpdate && g.nodes[i].name == "fc1" &&
          g.tensors[static_cast<size_t>(g.nodes[i].in[0])].rows > 1) {
        EXPECT_LT(p.chunk[i], p.homes[static_cast<size_t>(g.nodes[i].in[0])].rows);  // row chunks
      }
    }
  }
  EXPECT_EQ(t.input_chw(), (std::array<uint32_t, 3>{c.spec.c, c.spec.h, c.spec.w}));
  ModelDevice dev(chip);
  t.init(dev);
  RefTrainer r(c.spec, c.n, o);
  EXPECT_EQ(as_bits(t.weights(dev)), r.onnx_weights());
  const uint32_t k = c.spec.inputs();
  const std::vector<float> x = uniform(size_t{c.batch} * k, 1.0f, 91);
  const std::vector<int32_t> labels = teacher_labels(x, c.batch, k, c.spec.classes);
  const Mat xm = mat(c.batch, k, x);
  std::vector<float> losses;
  for (int step = 0; step < 8; ++step) {
    const StepResult s = t.step(dev, x.data(), labels.data());
    const Bits want = r.step(xm, labels);
    ASSERT_EQ(ref::bits(s.loss), want)
        << "step " << step << ": chip " << s.loss << ", reference " << ref::value(want);
    ASSERT_EQ(as_bits(t.weights(dev)), r.onnx_weights()) << "step " << step;
    EXPECT_GT(s.cycles, 0u);
    losses.push_back(s.loss);
  }
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << i;
  EXPECT_LT(losses.back(), 0.8f * losses.front());
  // The forward pass on the chip: the reference's logits of the trained weights, for a count
  // that is not a multiple of the batch.
  const uint32_t count = c.batch + 3;
  const std::vector<float> xs = uniform(size_t{count} * k, 1.0f, 92);
  const std::vector<float> z = t.logits(dev, xs.data(), count);
  ASSERT_EQ(z.size(), size_t{count} * c.spec.classes);
  for (uint32_t first = 0; first < count; first += c.batch) {
    const uint32_t rows = std::min(c.batch, count - first);
    std::vector<float> part(xs.begin() + first * k, xs.begin() + (first + rows) * k);
    const Mat want = r.forward(mat(rows, k, part)).logits;
    const std::vector<float> got(z.begin() + first * c.spec.classes,
                                 z.begin() + (first + rows) * c.spec.classes);
    EXPECT_EQ(bits(got), want.v) << "images from " << first;
  }
}

TEST(Trainer, LayerCyclesAndFigures) {
  TrainOptions o = adam(0.01f);
  o.batch = 8;
  const ChipParams chip = ChipParams::training(4);
  Trainer t(mlp_onnx(MlpSpec{}), o, chip);
  EXPECT_TRUE(t.layer_cycles().empty());
  EXPECT_GT(t.step_instructions(), 50u);
  EXPECT_GT(t.compile_seconds(), 0.0);
  ModelDevice dev(chip);
  t.init(dev);
  const std::vector<float> x = uniform(8 * 9, 1.0f, 5);
  const std::vector<int32_t> labels(8, 1);
  const StepResult s = t.step(dev, x.data(), labels.data());
  const std::vector<LayerCycles> l = t.layer_cycles();
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l[0].name, "fc1");
  EXPECT_EQ(l[0].op, "Gemm");
  EXPECT_EQ(l[2].op, "MatMul+Add");
  uint64_t sum = 0;
  for (const LayerCycles& c : l) sum += c.forward + c.backward + c.update;
  EXPECT_EQ(sum, s.cycles);
  const std::vector<ProgramSpan> spans = t.step_program_spans();
  ASSERT_FALSE(spans.empty());
  EXPECT_EQ(spans.front().begin, 0u);
  EXPECT_EQ(spans.front().layer, "fc1");
  EXPECT_EQ(spans.front().phase, "forward");
  EXPECT_EQ(spans.back().end + 1, t.step_program().size());  // then halt
  for (size_t i = 1; i < spans.size(); ++i) EXPECT_EQ(spans[i].begin, spans[i - 1].end);
  EXPECT_EQ(spans.back().phase, "update");
}

TEST(Trainer, BadLabelsAndModels) {
  TrainOptions o = adam(0.01f);
  o.batch = 4;
  const ChipParams chip = ChipParams::training(4);
  Trainer t(mlp_onnx(MlpSpec{}), o, chip);
  ModelDevice dev(chip);
  t.init(dev);
  const std::vector<float> x(4 * 9, 0.5f);
  const std::vector<int32_t> labels = {0, 1, 3, 2};
  try {
    t.step(dev, x.data(), labels.data());
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("label 3 of example 2 is outside [0, 3)"),
              std::string::npos)
        << e.what();
  }
  cnn::OnnxGraph g("bn");
  g.input("x", {1, 4});
  g.init_float("W", {4, 3}, std::vector<float>(12, 0.1f));
  for (const char* p : {"s", "b", "m", "v"}) g.init_float(p, {3}, std::vector<float>(3, 1.0f));
  g.node("MatMul", {"x", "W"}, {"y"}, {}, "fc");
  g.node("BatchNormalization", {"y", "s", "b", "m", "v"}, {"z"}, {}, "bn");
  g.output("z", {1, 3});
  try {
    Trainer bad(g.serialize(), o, chip);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'bn' (BatchNormalization)"), std::string::npos)
        << e.what();
  }
  ModelDevice other(ChipParams::training(16));
  EXPECT_THROW(t.init(other), std::invalid_argument);
  ModelDevice fresh(chip);  // not initialized: no weights there
  EXPECT_THROW(t.step(fresh, x.data(), labels.data()), std::logic_error);
  EXPECT_THROW(t.weights(fresh), std::logic_error);
}

TEST(Trainer, ModelFromAFile) {
  const std::string path = test_support::temp_dir() + "/mlp.onnx";
  std::ofstream(path, std::ios::binary) << mlp_onnx(MlpSpec{});
  TrainOptions o = adam(0.01f);
  o.batch = 4;
  const Trainer a(path, o, ChipParams::training(4));
  const Trainer b(mlp_onnx(MlpSpec{}), o, ChipParams::training(4));
  EXPECT_EQ(a.step_instructions(), b.step_instructions());
}

}  // namespace
}  // namespace tpu::train::test

// SPDX-License-Identifier: Apache-2.0
// Data-parallel training on the pod of golden models (issue 31 item 4; PodTrainer,
// compiler/allreduce.h): after every step every chip holds the same weights bit for bit and
// the same loss; the loss curve equals one chip's with the same global batch up to the
// reassociation of the batch sums (the bound below); the pass's graph and its errors.
#include "pod_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/allreduce.h"
#include "compiler/autodiff.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "device_model.h"
#include "float_bits.h"
#include "train_models.h"

namespace tpu::train::test {
namespace {

constexpr uint32_t kN = 4;

MlpSpec model(uint32_t side = 4) {
  MlpSpec s;
  s.c = 1;
  s.h = side;
  s.w = side;
  s.hidden = 9;
  s.classes = 4;      // <= N
  s.residual = true;  // a fan-out: AddGrad before the sums
  return s;
}

TrainOptions options(Optimizer opt, uint32_t batch) {
  TrainOptions o;
  o.optimizer = opt;
  o.lr = opt == Optimizer::Adam ? 0.01f : 0.1f;
  o.batch = batch;
  return o;
}

struct Data {
  std::vector<float> x;
  std::vector<int32_t> labels;
};

Data data(uint32_t batch, uint32_t step, uint32_t side = 4) {
  const MlpSpec s = model(side);
  Data d{uniform(size_t{batch} * s.inputs(), 1.0f, 100 + step), {}};
  for (uint32_t i = 0; i < batch; ++i)
    d.labels.push_back(static_cast<int32_t>((i * 7 + step) % s.classes));
  return d;
}

using tpu::test::as_bits;
using tpu::test::bits;

struct PodCase {
  const char* name;
  const char* topology;
  uint32_t chips;
  Optimizer opt;
  uint32_t batch = 16;
  uint32_t side = 4;       // input side*side pixels
  uint32_t vmem_rows = 0;  // 0: ChipParams::training's
};

ChipParams chip_of(const PodCase& c) {
  ChipParams p = ChipParams::training(kN);
  if (c.vmem_rows != 0) p.vmem_rows = c.vmem_rows;
  return p;
}

class PodTraining : public ::testing::TestWithParam<PodCase> {};

const PodCase kPods[] = {
    {"Ring2_Adam", "ring", 2, Optimizer::Adam},
    {"Ring4_Sgd", "ring", 4, Optimizer::Sgd},
    {"Ring4_Adam", "ring", 4, Optimizer::Adam},
    {"Torus2x2_Adam", "torus:2x2", 4, Optimizer::Adam},
    // 3 chips: chunks of unequal rows; fc1's dW (256 x 9: 768 VMEM rows) in 256 VMEM rows is
    // all-reduced in three pieces.
    {"Ring3_Chunked_Sgd", "ring", 3, Optimizer::Sgd, 12, 16, 256},
    {"Torus2x4_Adam", "torus:2x4", 8, Optimizer::Adam, 32},
};
INSTANTIATE_TEST_SUITE_P(Pods, PodTraining, ::testing::ValuesIn(kPods),
                         [](const ::testing::TestParamInfo<PodCase>& i) {
                           return std::string(i.param.name);
                         });

TEST_P(PodTraining, EveryChipHoldsTheSameWeightsAfterEveryStep) {
  const PodCase& c = GetParam();
  const uint32_t batch = c.batch;
  PodTrainer t(mlp_onnx(model(c.side)), options(c.opt, batch), chip_of(c),
               PodTopology::parse(c.topology, c.chips));
  t.init();
  if (c.vmem_rows != 0) {  // the case is there to all-reduce in pieces: check that it does
    compiler::Graph g = compiler::import_onnx(mlp_onnx(model(c.side)), batch / c.chips, kN);
    compiler::append_backward(g);
    const compiler::Placement p = compiler::place(g, t.chip_params());
    uint32_t rows = 0;
    for (const compiler::Param& q : g.params)
      rows = std::max(rows, p.homes[static_cast<size_t>(q.grad)].rows);
    EXPECT_GT(rows, c.vmem_rows);
  }
  const auto initial = as_bits(t.weights(0));
  for (uint32_t step = 0; step < 4; ++step) {
    const Data d = data(batch, step, c.side);
    const PodStepResult r = t.step(d.x.data(), d.labels.data());
    ASSERT_EQ(r.chip_losses.size(), c.chips);
    for (float l : r.chip_losses) EXPECT_EQ(bits(l), bits(r.loss)) << "step " << step;
    const auto w0 = as_bits(t.weights(0));
    for (uint32_t chip = 1; chip < c.chips; ++chip)
      EXPECT_EQ(as_bits(t.weights(chip)), w0) << "chip " << chip << ", step " << step;
    EXPECT_GT(r.allreduce_cycles, 0u);
    EXPECT_LT(r.allreduce_cycles, r.cycles);
    EXPECT_GT(r.link_bytes, 0u);
    EXPECT_GT(r.link_utilization, 0.0);
    EXPECT_LE(r.link_utilization, 1.0);
  }
  EXPECT_NE(as_bits(t.weights(0)), initial);  // the update ran on the summed gradients
}

TEST_P(PodTraining, LossCurveMatchesOneChipUpToReassociation) {
  const PodCase& c = GetParam();
  const uint32_t batch = c.batch;
  const TrainOptions o = options(c.opt, batch);
  PodTrainer pod(mlp_onnx(model(c.side)), o, chip_of(c), PodTopology::parse(c.topology, c.chips));
  pod.init();
  const ChipParams chip = pod.chip_params();
  Trainer one(mlp_onnx(model(c.side)), o, chip);
  ModelDevice dev(chip);
  one.init(dev);
  // The bound. Step 1: both start from the same weights, so every example's forward pass and
  // loss l_i is the same bit for bit (rows are independent); the batch loss is (sum of the
  // B losses) * (1/B) with 1/B = 2^-4 exact, and the two sums add the same B terms >= 0 in
  // different orders (one chip: its row sum; the pod: each chip's row sum, then the ring's
  // chain). Each ordered sum is within gamma_{B-1} * sum of the exact one (Higham, "Accuracy
  // and Stability of Numerical Algorithms", 4.2; gamma_n = n u / (1 - n u), u = 2^-24), so
  // |L_pod - L_one| <= 2 gamma_{B-1} L_exact <= 2 gamma_{B-1} / (1 - gamma_{B-1}) L_one.
  // (For B not a power of two, 1/B rounds, but to the same float on both: the product adds
  // at most one more rounding, u, to each side.)
  // Later steps: the weights differ by the reassociation of the gradients' batch sums (the
  // same gamma_{B-1} relative to the sums of |terms|); to first order each step adds at most
  // one more such relative difference to the loss, so step k (from 1) is held to k times
  // step 1's bound. (A first-order estimate, not a proof: a model whose loss amplified weight
  // differences would need a bound with its condition number.)
  const double u = std::ldexp(1.0, -24);
  const double gamma = (batch - 1) * u / (1 - (batch - 1) * u);
  const bool pow2 = (batch & (batch - 1)) == 0;
  const double bound = 2 * gamma / (1 - gamma) + (pow2 ? 0.0 : 2 * u);
  for (uint32_t step = 0; step < 5; ++step) {
    const Data d = data(batch, step, c.side);
    const float lp = pod.step(d.x.data(), d.labels.data()).loss;
    const float l1 = one.step(dev, d.x.data(), d.labels.data()).loss;
    ASSERT_TRUE(std::isfinite(l1) && l1 > 0);
    const double rel = std::fabs(static_cast<double>(lp) - l1) / l1;
    EXPECT_LE(rel, (step + 1) * bound)
        << "step " << step + 1 << ": one chip " << l1 << ", pod " << lp << " (" << rel / u << " u)";
  }
}

TEST(PodTrainingPass, SumsEveryGradientAndTheLossAndScalesByTheGlobalBatch) {
  const TrainOptions o = options(Optimizer::Adam, 8);
  compiler::Graph g = compiler::import_onnx(mlp_onnx(model()), 4, kN);
  compiler::append_backward(g);
  compiler::Graph single = g;
  EXPECT_EQ(compiler::insert_gradient_allreduce(g, PodTopology::ring(2), 8),
            static_cast<int>(g.params.size()) + 1);
  EXPECT_EQ(g.loss_batch, 8u);
  size_t sums = 0;
  for (const compiler::Node& n : g.nodes) {
    if (n.op != compiler::Op::AllReduce) continue;
    ASSERT_EQ(n.in, n.out);  // in place
    const int t = n.in[0];
    const bool is_grad = std::any_of(g.params.begin(), g.params.end(),
                                     [&](const compiler::Param& p) { return p.grad == t; });
    EXPECT_TRUE(is_grad || t == g.loss) << g.tensors[static_cast<size_t>(t)].name;
    ++sums;
  }
  EXPECT_EQ(sums, g.params.size() + 1);
  compiler::append_update(g, o);
  compiler::append_update(single, o);
  // dW must reach device memory to be summed: no DenseGradW is fused with its update.
  EXPECT_EQ(compiler::fuse_dense_update(g), 0);
  EXPECT_GT(compiler::fuse_dense_update(single), 0);
}

TEST(PodTrainingPass, Errors) {
  compiler::Graph g = compiler::import_onnx(mlp_onnx(model()), 4, kN);
  EXPECT_THROW(compiler::insert_gradient_allreduce(g, PodTopology::ring(2), 8),
               std::invalid_argument);  // no loss yet
  compiler::append_backward(g);
  try {
    compiler::insert_gradient_allreduce(g, PodTopology::ring(2), 6);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("global batch 6"), std::string::npos) << e.what();
  }
  compiler::append_update(g, options(Optimizer::Sgd, 8));
  EXPECT_THROW(compiler::insert_gradient_allreduce(g, PodTopology::ring(2), 8),
               std::invalid_argument);  // after the update
  try {
    PodTrainer t(mlp_onnx(model()), options(Optimizer::Sgd, 10), ChipParams::training(kN),
                 PodTopology::ring(4));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("global batch 10 is not divisible by the pod's 4 chips"),
              std::string::npos)
        << e.what();
  }
  PodTrainer t(mlp_onnx(model()), options(Optimizer::Sgd, 8), ChipParams::training(kN),
               PodTopology::ring(2));
  const Data d = data(8, 0);
  EXPECT_THROW(t.step(d.x.data(), d.labels.data()), std::logic_error);  // before init()
  t.init();
  std::vector<int32_t> bad = d.labels;
  bad[5] = 4;  // classes = 4
  EXPECT_THROW(t.step(d.x.data(), bad.data()), std::invalid_argument);
  EXPECT_THROW(t.weights(2), std::out_of_range);
}

TEST(PodTrainingPass, LogitsOfChipZeroEqualOneChipsForward) {
  const TrainOptions o = options(Optimizer::Sgd, 8);
  PodTrainer pod(mlp_onnx(model()), o, ChipParams::training(kN), PodTopology::ring(2));
  pod.init();
  TrainOptions half = o;
  half.batch = 4;  // the pod's chips run batch / 2
  Trainer one(mlp_onnx(model()), half, pod.chip_params());
  ModelDevice dev(pod.chip_params());
  one.init(dev);
  const Data d = data(8, 3);
  const std::vector<float> a = pod.logits(d.x.data(), 7), b = one.logits(dev, d.x.data(), 7);
  ASSERT_EQ(a.size(), size_t{7} * 4);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(bits(a[i]), bits(b[i])) << i;
}

}  // namespace
}  // namespace tpu::train::test

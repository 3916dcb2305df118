// SPDX-License-Identifier: Apache-2.0
// Data-parallel training on the RTL pod (issue 31 item 4; sim/pod_train_rtl.h): PodTrainer's
// programs on the pod of Verilated chips (tpu_pod_rtl_n4), checked in lockstep against the
// golden pod. Here, independently of that check, a second PodTrainer on the pod of golden
// models trains the same model on the same data: every chip's loss of every step and every
// chip's weights after every step must equal it bit for bit, and all chips must hold the same
// weights. Plus the named errors: a chip or link that is not the built pod's, a fault and a
// pod deadlock (reported, never a hang), an RTL outcome that differs from the golden pod's.
#include "pod_train_rtl.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "float_bits.h"
#include "pod_rtl.h"
#include "program.h"
#include "thread_transport.h"
#include "train_models.h"

namespace tpu::sim {
namespace {

using train::Optimizer;

train::test::MlpSpec model() {
  train::test::MlpSpec s;
  s.c = 1;
  s.h = 4;
  s.w = 4;
  s.hidden = 9;
  s.classes = 4;      // <= N
  s.residual = true;  // a fan-out: AddGrad before the sums
  return s;
}

train::TrainOptions options(Optimizer opt, uint32_t batch) {
  train::TrainOptions o;
  o.optimizer = opt;
  o.lr = opt == Optimizer::Adam ? 0.01f : 0.1f;
  o.batch = batch;
  return o;
}

using tpu::test::as_bits;
using tpu::test::bits;

struct Case {
  const char* name;
  const char* topology;
  uint32_t chips;
  Optimizer opt;
  uint32_t batch;
  uint32_t steps;
  uint32_t latency;
};

class PodTrainRtl : public ::testing::TestWithParam<Case> {};

const Case kCases[] = {
    {"Ring2_Adam", "ring", 2, Optimizer::Adam, 8, 3, 64},
    {"Ring3_Sgd", "ring", 3, Optimizer::Sgd, 12, 2, 5},
    {"Torus2x2_Adam", "torus:2x2", 4, Optimizer::Adam, 8, 2, 17},
    {"One_Sgd", "ring", 1, Optimizer::Sgd, 4, 2, 64},
};
INSTANTIATE_TEST_SUITE_P(Pods, PodTrainRtl, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

TEST_P(PodTrainRtl, EveryChipMatchesTheGoldenPodAfterEveryStep) {
  const Case& c = GetParam();
  const PodTopology topo = PodTopology::parse(c.topology, c.chips);
  const std::string onnx = train::test::mlp_onnx(model());
  const train::TrainOptions o = options(c.opt, c.batch);
  LinkTiming timing;
  timing.latency = c.latency;
  train::PodTrainer rtl(onnx, o, PodRtl::params(), topo, timing);
  train::PodTrainer golden(onnx, o, PodRtl::params(), topo, timing);
  auto check = std::make_shared<PodTrainRtlCheck>();
  rtl.set_backend(pod_rtl_backend(true, check));
  rtl.init();
  golden.init();
  const auto initial = as_bits(golden.weights(0));
  for (uint32_t step = 0; step < c.steps; ++step) {
    check->step = step + 1;
    std::vector<float> x =
        train::test::uniform(size_t{c.batch} * model().inputs(), 1.0f, 100 + step);
    std::vector<int32_t> labels;
    for (uint32_t i = 0; i < c.batch; ++i) labels.push_back(int32_t((i * 7 + step) % 4));
    const train::PodStepResult r = rtl.step(x.data(), labels.data());
    const train::PodStepResult g = golden.step(x.data(), labels.data());
    ASSERT_EQ(r.chip_losses.size(), c.chips);
    for (uint32_t chip = 0; chip < c.chips; ++chip)
      EXPECT_EQ(bits(r.chip_losses[chip]), bits(g.loss)) << "chip " << chip << ", step " << step;
    const auto w = as_bits(golden.weights(0));
    for (uint32_t chip = 0; chip < c.chips; ++chip)
      EXPECT_EQ(as_bits(rtl.weights(chip)), w) << "chip " << chip << ", step " << step;
    EXPECT_GT(r.cycles, 0u);  // measured
    if (c.chips > 1) {
      EXPECT_GT(r.allreduce_cycles, 0u);
      EXPECT_LT(r.allreduce_cycles, r.cycles);
      EXPECT_EQ(r.link_bytes, g.link_bytes);  // the same messages
      EXPECT_GT(r.link_utilization, 0.0);
      EXPECT_LE(r.link_utilization, 1.0);
      // The RTL takes longer than the estimate for the rendezvous (docs/pod.md), not 3x.
      EXPECT_GT(r.allreduce_cycles, g.allreduce_cycles / 2);
      EXPECT_LT(r.allreduce_cycles, 3 * g.allreduce_cycles);
    }
  }
  EXPECT_NE(as_bits(rtl.weights(0)), initial);  // the update ran
  EXPECT_TRUE(check->matches) << "step " << check->mismatch_step << ": " << check->mismatch;
  EXPECT_TRUE(check->golden);
  EXPECT_EQ(check->runs, c.steps * (c.chips > 1 ? 3u : 2u));
  EXPECT_GT(check->rtl_cycles, 0u);
  EXPECT_GT(check->golden_cycles, 0u);
  ASSERT_EQ(check->golden_step_cycles.size(), c.steps);
  for (uint64_t g : check->golden_step_cycles) EXPECT_GT(g, 0u);
}

// The trainer's RTL pod over ranks (docs/pod.md "The distributed pod"): two ranks as threads,
// each a PodTrainer on its block of the torus 2x2, against the one-process RTL pod: every
// step's losses, cycles, all-reduce cycles and link bytes, every chip's weights after every
// step, the golden check's verdict and cycle sums identical.
struct DistStep {
  std::vector<float> losses;
  uint64_t cycles = 0, allreduce_cycles = 0, link_bytes = 0;
  std::vector<std::vector<uint32_t>> weights;  // per chip, flattened bit patterns
};

std::vector<DistStep> train_steps(std::shared_ptr<PodTransport> transport, uint32_t steps,
                                  PodTrainRtlCheck* out_check) {
  const PodTopology topo = PodTopology::parse("torus:2x2", 4);
  LinkTiming timing;
  timing.latency = 17;
  train::PodTrainer t(train::test::mlp_onnx(model()), options(Optimizer::Adam, 8), PodRtl::params(),
                      topo, timing);
  auto check = std::make_shared<PodTrainRtlCheck>();
  t.set_backend(pod_rtl_backend(true, check, std::move(transport)));
  t.init();
  std::vector<DistStep> out;
  for (uint32_t step = 0; step < steps; ++step) {
    check->step = step + 1;
    std::vector<float> x = train::test::uniform(size_t{8} * model().inputs(), 1.0f, 300 + step);
    std::vector<int32_t> labels;
    for (uint32_t i = 0; i < 8; ++i) labels.push_back(int32_t((i * 5 + step) % 4));
    const train::PodStepResult r = t.step(x.data(), labels.data());
    DistStep d;
    d.losses = r.chip_losses;
    d.cycles = r.cycles;
    d.allreduce_cycles = r.allreduce_cycles;
    d.link_bytes = r.link_bytes;
    for (uint32_t chip = 0; chip < 4; ++chip) {
      std::vector<uint32_t> flat;
      for (const auto& [name, v] : as_bits(t.weights(chip)))
        flat.insert(flat.end(), v.begin(), v.end());
      d.weights.push_back(std::move(flat));
    }
    out.push_back(std::move(d));
  }
  *out_check = *check;
  return out;
}

TEST(PodTrainRtlDist, TwoRanksMatchOneProcess) {
  constexpr uint32_t kSteps = 2;
  PodTrainRtlCheck one_check;
  const std::vector<DistStep> one = train_steps(nullptr, kSteps, &one_check);
  auto hub = std::make_shared<pod_thread_transport::Hub>(2);
  std::vector<std::vector<DistStep>> dist(2);
  std::vector<PodTrainRtlCheck> checks(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (uint32_t k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      try {
        dist[k] = train_steps(std::make_shared<pod_thread_transport::ThreadTransport>(hub, k),
                              kSteps, &checks[k]);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(one_check.matches) << one_check.mismatch;
  for (uint32_t k = 0; k < 2; ++k) {
    ASSERT_EQ(errors[k], "") << "rank " << k;
    ASSERT_EQ(dist[k].size(), kSteps);
    EXPECT_TRUE(checks[k].matches) << "rank " << k << ": " << checks[k].mismatch;
    EXPECT_EQ(checks[k].rtl_cycles, one_check.rtl_cycles) << "rank " << k;
    EXPECT_EQ(checks[k].golden_cycles, one_check.golden_cycles) << "rank " << k;
    for (uint32_t s = 0; s < kSteps; ++s) {
      const DistStep& a = one[s];
      const DistStep& b = dist[k][s];
      EXPECT_EQ(b.cycles, a.cycles) << "rank " << k << " step " << s;
      EXPECT_EQ(b.allreduce_cycles, a.allreduce_cycles) << "rank " << k << " step " << s;
      EXPECT_EQ(b.link_bytes, a.link_bytes) << "rank " << k << " step " << s;
      ASSERT_EQ(b.losses.size(), a.losses.size());
      for (size_t c = 0; c < a.losses.size(); ++c)
        EXPECT_EQ(bits(b.losses[c]), bits(a.losses[c])) << "rank " << k << " chip " << c;
      EXPECT_TRUE(b.weights == a.weights) << "rank " << k << " step " << s;
    }
  }
}

TEST(PodTrainRtlFit, NamesWhatDoesNotFitTheBuiltPod) {
  const PodTopology ring = PodTopology::ring(2);
  EXPECT_NO_THROW(check_pod_rtl_fits(PodRtl::params(), ring, {}));
  ChipParams other = ChipParams::pod(PodRtl::params().N * 2, 4);
  try {
    check_pod_rtl_fits(other, ring, {});
    FAIL() << "no error for N = " << other.N;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("N is " + std::to_string(other.N)), std::string::npos)
        << e.what();
  }
  LinkTiming narrow;
  narrow.bytes_per_cycle = PodRtl::ici_width_bits() / 16;
  EXPECT_THROW(check_pod_rtl_fits(PodRtl::params(), ring, narrow), std::invalid_argument);
  LinkTiming zero;
  zero.latency = 0;
  EXPECT_THROW(check_pod_rtl_fits(PodRtl::params(), ring, zero), std::invalid_argument);
  // The maker checks too (PodTrainer::init makes the pod).
  auto check = std::make_shared<PodTrainRtlCheck>();
  EXPECT_THROW(pod_rtl_backend(true, check)(PodRtl::params(), ring, narrow), std::invalid_argument);
}

// A pod of two made by the maker, device memory [kBase, kBase + 64 KiB) mapped.
constexpr uint32_t kBase = 0x8000'0000u;
std::unique_ptr<train::PodBackend> pod2(std::shared_ptr<PodTrainRtlCheck> check) {
  auto pod = pod_rtl_backend(true, std::move(check))(PodRtl::params(), PodTopology::ring(2), {});
  pod->map(kBase, 1u << 16);
  return pod;
}

TEST(PodTrainRtlFit, DeadlockAndFaultsAreNamedErrors) {
  auto check = std::make_shared<PodTrainRtlCheck>();
  auto pod = pod2(check);
  // Chip 0 receives what nobody sends: both chips end ERR_ICI_DEADLOCK (the fabric's rule).
  ProgramBuilder recv(PodRtl::params()), idle(PodRtl::params());
  recv.ici_recv(0, 0, 1);
  try {
    pod->run({recv.finish(), idle.finish()}, "test");
    FAIL() << "no error for a deadlock";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ERR_ICI_DEADLOCK"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in the test program: chip 0"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(check->matches);  // the golden pod deadlocked the same way
}

TEST(PodTrainRtlFit, LoadsDumpsAndComparesWithTheGoldenPod) {
  auto check = std::make_shared<PodTrainRtlCheck>();
  auto pod = pod2(check);
  const uint32_t n = PodRtl::params().N;
  std::vector<uint8_t> row(4 * n);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(i * 13 + 1);
  pod->load(1, kBase + 256, row);
  // Chip 1 copies the row through VMEM to kBase + 512; chip 0 does nothing.
  ProgramBuilder copy(PodRtl::params()), idle(PodRtl::params());
  copy.read_vmem(3, 1, kBase + 256);
  copy.write_vmem(3, 1, kBase + 512);
  const train::PodRunFigures f = pod->run({idle.finish(), copy.finish()}, "copy");
  EXPECT_GT(f.cycles, 0u);
  EXPECT_EQ(f.link_bytes, 0u);
  EXPECT_EQ(pod->dump(1, kBase + 512, row.size()), row);
  EXPECT_TRUE(check->matches) << check->mismatch;
  EXPECT_EQ(check->runs, 1u);
  EXPECT_THROW(pod->dump(0, kBase - 4, 4), std::out_of_range);
  // The RTL pod's DMA window also covers its program area after the data; the golden pod's
  // is the data alone: a write there halts on the RTL and faults on the golden pod, an outcome
  // that differs, reported and kept as the mismatch.
  ProgramBuilder out(PodRtl::params());
  out.write_vmem(3, 1, kBase + (1u << 20));  // past the data and the program
  check->step = 7;
  try {
    pod->run({idle.finish(), out.finish()}, "outside");
    FAIL() << "no error for an outcome that differs";
  } catch (const std::out_of_range& e) {
    FAIL() << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("in the outside program: chip 1"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(check->matches);
  EXPECT_EQ(check->mismatch_step, 7u);
  EXPECT_NE(check->mismatch.find("chip 1 halted; the golden pod's chip 1"), std::string::npos)
      << check->mismatch;
}

}  // namespace
}  // namespace tpu::sim

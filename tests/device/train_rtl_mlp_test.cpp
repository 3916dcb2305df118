// SPDX-License-Identifier: Apache-2.0
// The training kernels on the training chip's RTL: steps of the 2-layer MLP of
// driver/train/mlp.h (Dense - ReLU - Dense - softmax cross-entropy; SGD and Adam), each step
// one program that streams the batch, the parameters (and Adam's moments and state) from host
// memory, trains on the chip and streams them back. The RTL (tpu_device_rtl_train_n<N>) and the
// golden model run the same programs from the same host memory: after every step every byte of
// every host buffer (loss, parameters, moments) must be identical, and the loss must fall.
// (tests/train checks the golden model's steps against the independent host reference.)
//
// One chip per process: every test case runs in its own process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device_model.h"
#include "device_rtl.h"
#include "mlp.h"

namespace {

using namespace tpu;
using namespace tpu::train;
constexpr uint32_t N = TPU_SIM_N;

uint32_t bits(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, 4);
  return b;
}
float value(uint32_t b) {
  float f = 0;
  std::memcpy(&f, &b, 4);
  return f;
}

struct Buffer {
  uint32_t addr = 0, bytes = 0;
};

// Host memory of one backend: the same buffers, at the same addresses, on both.
class HostSide {
 public:
  explicit HostSide(Device& dev) : dev_(dev) {}
  uint32_t put(const std::vector<float>& values) {
    const uint32_t bytes = static_cast<uint32_t>((values.size() * 4 + 63) / 64 * 64);
    const HostBuffer b = dev_.alloc(bytes, "b" + std::to_string(buffers_.size()));
    dev_.write(b.addr, values.data(), values.size() * 4);
    buffers_.push_back({b.addr, bytes});
    return b.addr;
  }
  uint32_t put_mat(const VMat& m, const std::vector<float>& values) {
    return put(pack(m, N, values));
  }
  std::vector<uint8_t> all() {
    std::vector<uint8_t> out;
    for (const Buffer& b : buffers_) {
      const std::vector<uint8_t> v = dev_.read(b.addr, b.bytes);
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  }
  Device& dev() { return dev_; }

 private:
  Device& dev_;
  std::vector<Buffer> buffers_;
};

std::vector<float> random_floats(size_t count, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(count);
  for (float& f : v) f = d(rng);
  return v;
}

// The problem's host buffers on one backend (same seed: same data on both).
MlpHost place(HostSide& h, const MlpPlan& plan) {
  const MlpShape& s = plan.shape;
  std::mt19937 rng(4242);
  MlpHost host;
  host.x = h.put_mat(plan.x, random_floats(size_t{s.batch} * s.inputs, 1.0f, rng));
  std::vector<uint32_t> labels((s.batch + N - 1) / N * N, 0);
  for (uint32_t i = 0; i < s.batch; ++i) labels[i] = (i * 7 + i / 3) % s.classes;
  std::vector<float> label_lanes(labels.size());
  std::memcpy(label_lanes.data(), labels.data(), labels.size() * 4);
  host.labels = h.put(label_lanes);
  host.pad_row = h.put(pad_row_lanes(s.classes, N));
  host.w1 = h.put_mat(plan.w1, random_floats(size_t{s.inputs} * s.hidden, 0.5f, rng));
  host.b1 = h.put_mat(plan.b1, std::vector<float>(s.hidden, 0.0f));
  host.w2 = h.put_mat(plan.w2, random_floats(size_t{s.hidden} * s.classes, 0.5f, rng));
  host.b2 = h.put_mat(plan.b2, std::vector<float>(s.classes, 0.0f));
  host.loss = h.put(std::vector<float>(N, 0.0f));
  for (size_t i = 0; i < 4; ++i) {
    const std::vector<float> zero(size_t{plan.m[i].rows} * plan.m[i].cols, 0.0f);
    host.m[i] = h.put_mat(plan.m[i], zero);
    host.v[i] = h.put_mat(plan.v[i], zero);
  }
  std::vector<float> state(AdamState::kRows * N, 0.0f);
  for (uint32_t j = 0; j < 2 * N; ++j) state[j] = 1.0f;
  host.adam_state = h.put(state);
  return host;
}

enum class Opt { Sgd, Adam };

void run_steps(Opt opt, int steps) {
  RtlDevice rtl;
  ModelDevice model(rtl.params());
  ASSERT_EQ(rtl.params(), ChipParams::training(N)) << "the RTL training chip executes every "
                                                      "training instruction";
  const MlpShape shape{2 * N + 2, N + 3, N + 5, std::min(10u, N - 1)};
  VmemArena arena(N, 0, rtl.params().vmem_rows);
  const MlpPlan plan = plan_mlp(shape, arena);
  HostSide hr(rtl), hm(model);
  const MlpHost host = place(hr, plan);
  const MlpHost host_m = place(hm, plan);
  ASSERT_EQ(host.adam_state, host_m.adam_state);
  std::vector<float> losses;
  uint64_t cycles = 0;
  for (int step = 0; step < steps; ++step) {
    ProgramBuilder pb(rtl.params());
    if (opt == Opt::Sgd) {
      emit_mlp_sgd_step(pb, plan, host, SgdParams{0.5f, 0.0f, 0.0f});
    } else {
      emit_mlp_adam_step(pb, plan, host, AdamParams{0.05f, 0.9f, 0.999f, 1e-7f, 0.0f});
    }
    const std::vector<Instruction> program = pb.finish();
    const RunStats r = rtl.run(program, 50'000'000);
    model.run(program, 50'000'000);
    cycles += r.cycles;
    const std::vector<uint8_t> a = hr.all(), b = hm.all();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); i += 4) {
      uint32_t x = 0, y = 0;
      std::memcpy(&x, &a[i], 4);
      std::memcpy(&y, &b[i], 4);
      ASSERT_EQ(x, y) << "step " << step << ", host byte " << i << " of the buffers ("
                      << program.size() << " instructions)";
    }
    uint32_t loss = 0;
    rtl.read(host.loss, &loss, 4);
    losses.push_back(value(loss));
    std::printf("step %d: loss %.6f, %zu instructions, %llu cycles\n", step, value(loss),
                program.size(), static_cast<unsigned long long>(r.cycles));
  }
  for (size_t s = 1; s < losses.size(); ++s) EXPECT_LT(losses[s], losses[s - 1]) << s;
  EXPECT_GT(cycles, 0u);
  const uint32_t last = bits(losses.back());
  EXPECT_NE(last & 0x7F800000u, 0x7F800000u) << "the loss is finite";
}

TEST(TrainRtlMlp, SgdStepsBitIdenticalToTheGoldenModel) { run_steps(Opt::Sgd, 4); }
TEST(TrainRtlMlp, AdamStepsBitIdenticalToTheGoldenModel) { run_steps(Opt::Adam, 4); }

}  // namespace

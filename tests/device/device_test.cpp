// SPDX-License-Identifier: Apache-2.0
// The Device interface on both backends ("rtl": the Verilated chip, "model": the golden
// model) for the chip built with N = TPU_SIM_N: tiled matmuls bit-exact with the C++
// reference, the documented errors with identical messages, timeouts, and rtl == model on
// every output byte and on the counters the model computes exactly.
//
// One chip per process: every TEST_P instance runs in its own process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "assembler.h"
#include "device_model.h"
#include "device_rtl.h"
#include "program.h"
#include "random_matmul.h"
#include "tiled_ops.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;

std::string hex8(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

std::unique_ptr<Device> open(const std::string& backend) {
  if (backend == "rtl") return std::make_unique<RtlDevice>();
  return std::make_unique<ModelDevice>(ChipParams::with_n(N));
}

class DeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { dev = open(GetParam()); }
  std::unique_ptr<Device> dev;
};

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Backends, DeviceTest, ::testing::Values("rtl", "model"), backend_name);

TEST_P(DeviceTest, ReportsTheChipParameters) {
  EXPECT_EQ(dev->backend(), GetParam());
  EXPECT_EQ(dev->params(), ChipParams::with_n(N));
  if (GetParam() == "rtl") {
    EXPECT_EQ(RtlDevice::compiled_n(), N);
  }
}

void run_random_matmuls(Device& dev, unsigned seed, int count, uint32_t max_m, uint32_t max_k,
                        uint32_t max_n, const MatmulResources& res = {}) {
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    const tpu_test::MatmulCase c = tpu_test::random_case(rng, max_m, max_k, max_n);
    SCOPED_TRACE("case " + std::to_string(i) + " (seed " + std::to_string(seed) +
                 "): " + c.describe());
    MatmulRun r;
    ASSERT_NO_THROW(r = run_matmul(dev, c.spec, c.a, c.w, 2'000'000, res));
    const std::vector<uint8_t> ref = reference_matmul(c.spec, c.a, c.w);
    for (size_t j = 0; j < ref.size(); ++j) {
      ASSERT_EQ(int(r.out[j]), int(ref[j]))
          << "row " << j / c.spec.n << " column " << j % c.spec.n << "; " << r.plan.describe();
    }
    EXPECT_EQ(r.stats.counters.mxu_macs, uint64_t(r.plan.kt) * r.plan.nt * c.spec.m * N * N);
  }
}

// Odd shapes, both signednesses, bias, per-column requantization, every activation function.
TEST_P(DeviceTest, RandomTiledMatmulsMatchTheReference) {
  run_random_matmuls(*dev, 100 + N, 12, N == 4 ? 70 : 150, 3 * N + 5, 3 * N + 5);
}

// Chunks of M, quantization slots reloaded while running, a short weight lookahead, and a
// part of the chip only: the same schedule paths the tiny-chip model tests take.
TEST_P(DeviceTest, ChunkedTiledMatmulsMatchTheReference) {
  MatmulResources r;
  r.ub_base = 40;
  r.ub_rows = 1000;
  r.acc_base = 3;
  r.acc_rows = 100;
  r.first_slot = 5;
  r.slots = 3;
  r.weight_lookahead = 2;
  r.max_chunk_rows = 24;
  r.edge_chunk_rows = 8;
  run_random_matmuls(*dev, 200 + N, 6, 90, 2 * N + 3, 5 * N + 1, r);
  r.slots = 1;
  r.acc_rows = 9;  // one ACC region at N = 4 (aligned chunks of 8)
  r.weight_lookahead = 0;
  run_random_matmuls(*dev, 300 + N, 4, 40, 2 * N + 3, 2 * N + 1, r);
}

// The documented errors, same code, pc and message on both backends; the device stays usable.
TEST_P(DeviceTest, ErrorsAreReportedAsDocumented) {
  const HostBuffer in = dev->register_buffer(0x10000, 0x1000, "in");
  const HostBuffer out = dev->register_buffer(0x20000, 0x1000, "out");
  auto expect = [&](const std::vector<Instruction>& prog, ErrorCode code, uint32_t pc,
                    const std::string& message) {
    try {
      dev->run(prog, 100'000);
      ADD_FAILURE() << "no ChipError; expected " << error_name(code);
    } catch (const ChipError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(e.pc(), pc) << e.what();
      EXPECT_EQ(std::string(e.what()), message);
    }
  };
  // A malformed program: unknown opcode, reserved bits set.
  expect(assemble("nop\nnop\n.inst 0x2a\nhalt\n"), ErrorCode::ERR_OPCODE, 2,
         "ERR_OPCODE at instruction 2 (.inst 0x0000000000000000000000000000002a): opcode 0x2a is "
         "not an instruction (expected 0x00..0x07)");
  RawInstruction reserved{encode(Sync{})};
  reserved.bytes[14] |= 0x10;  // bit 116
  expect({reserved, Halt{}}, ErrorCode::ERR_RESERVED, 0,
         "ERR_RESERVED at instruction 0 (.inst 0x00100000000000000000000000000006): sync: reserved "
         "bits 127:8 must be zero, but bit 116 is set");
  // Out-of-range addresses.
  const uint32_t ub = dev->params().ub_rows, acc = dev->params().acc_rows;
  expect({ReadHost{HostDest::Ub, ub - 1, 2, in.addr}, Halt{}}, ErrorCode::ERR_UB_RANGE, 0,
         "ERR_UB_RANGE at instruction 0 (read_host    ub=" + std::to_string(ub - 1) +
             " rows=2 host=0x10000): read_host: UB rows " + std::to_string(ub - 1) + ".." +
             std::to_string(ub) + " out of range (UbRows = " + std::to_string(ub) +
             ", last row must be < " + std::to_string(ub) + ")");
  Matmul mm;
  mm.switch_weights = true;
  mm.acc_addr = uint16_t(acc - 4);
  mm.inner = 5;
  const std::vector<Instruction> acc_prog = {ReadWeights{1, in.addr}, mm, Halt{}};
  std::string why;
  ASSERT_EQ(check(mm, dev->params(), &why), ErrorCode::ERR_ACC_RANGE);
  expect(acc_prog, ErrorCode::ERR_ACC_RANGE, 1,
         "ERR_ACC_RANGE at instruction 1 (" + disassemble(mm) + "): " + why);
  // A DMA outside every registered buffer (and one that runs off the end of one).
  expect({Nop{}, WriteHost{0, 1, 0x30000}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 1,
         "ERR_HOST_RANGE at instruction 1 (write_host   ub=0 rows=1 host=0x30000): write_host: "
         "host bytes 0x00030000..0x" +
             hex8(0x30000 + N - 1) +
             " are not inside any enabled DMA window (expected a registered buffer)");
  try {
    dev->run({ReadHost{HostDest::Ub, 0, 0x1000 / N + 1, in.addr}, Halt{}});
    ADD_FAILURE();
  } catch (const ChipError& e) {
    EXPECT_EQ(e.code(), ErrorCode::ERR_HOST_RANGE) << e.what();
  }
  // No halt.
  expect({Nop{}, Nop{}}, ErrorCode::ERR_CMD_OVERRUN, 2,
         "ERR_CMD_OVERRUN at instruction 2: the program ended after 2 instructions without halt");
  // The device still works, and try_run reports instead of throwing.
  ProgramBuilder b(dev->params());
  b.read_host(0, 4, in.addr).write_host(0, 4, out.addr);
  dev->fill(in.addr, 4 * N, 0x5A);
  EXPECT_NO_THROW(dev->run(b.finish(), 100'000));
  EXPECT_EQ(dev->read(out.addr, 4 * N), std::vector<uint8_t>(4 * N, 0x5A));
  const RunOutcome o = dev->try_run({Nop{}}, 100'000);
  EXPECT_EQ(o.status, RunOutcome::Status::Error);
  EXPECT_EQ(o.error, ErrorCode::ERR_CMD_OVERRUN);
}

// A run that needs more cycles than allowed is a TimeoutError on rtl, after which the chip
// runs again; the model has no timing and ignores the limit (device_model.h).
TEST_P(DeviceTest, CycleLimit) {
  const HostBuffer buf = dev->register_buffer(0x10000, 0x10000, "buf");
  ProgramBuilder b(dev->params());
  for (int i = 0; i < 20; ++i)
    b.read_host(0, std::min(dev->params().ub_rows, 0x10000 / N), buf.addr);
  const auto slow = b.finish();
  if (GetParam() == "rtl") {
    try {
      dev->run(slow, 200);
      ADD_FAILURE() << "no TimeoutError";
    } catch (const TimeoutError& e) {
      EXPECT_EQ(e.max_cycles(), 200u);
      EXPECT_NE(std::string(e.what()).find("did not halt within 200 cycles"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(dev->try_run(slow, 300).status, RunOutcome::Status::Timeout);
  } else {
    EXPECT_NO_THROW(dev->run(slow, 200));
  }
  const RunStats s = dev->run(slow, 1'000'000);
  EXPECT_EQ(s.counters.instr_retired, 21u);
  EXPECT_EQ(s.cycles_estimated, GetParam() == "model");
}

// The same jobs on both backends in one process: identical host memory and counters.
TEST(RtlVsModel, SameBytesAndCounters) {
  RtlDevice rtl;
  ModelDevice model(ChipParams::with_n(N));
  std::mt19937 rng(7 + N);
  for (int i = 0; i < 6; ++i) {
    const tpu_test::MatmulCase c = tpu_test::random_case(rng, 2 * N + 20, 3 * N, 3 * N);
    SCOPED_TRACE(c.describe());
    const MatmulRun a = run_matmul(rtl, c.spec, c.a, c.w, 1'000'000);
    const MatmulRun b = run_matmul(model, c.spec, c.a, c.w);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.instructions, b.instructions);
    EXPECT_FALSE(a.stats.cycles_estimated);
    EXPECT_TRUE(b.stats.cycles_estimated);
    EXPECT_EQ(a.stats.counters.mxu_busy, b.stats.counters.mxu_busy);
    EXPECT_EQ(a.stats.counters.mxu_macs, b.stats.counters.mxu_macs);
    EXPECT_EQ(a.stats.counters.dma_wr_bytes, b.stats.counters.dma_wr_bytes);
    EXPECT_EQ(a.stats.counters.instr_retired, b.stats.counters.instr_retired);
    EXPECT_EQ(a.stats.counters.act_busy, b.stats.counters.act_busy);
    EXPECT_GE(a.stats.counters.dma_rd_bytes, b.stats.counters.dma_rd_bytes);  // + prefetch
  }
}

// The schedule keeps the MXU busy: a 256 x 256 x 256 matmul at N = 16 (tpusim matmul's
// benchmark) uses the array more than 90% of the cycles, and waiting for weight tiles costs
// under 1% (the weight DMA overlaps consecutive read_weights, so matmuls are issued early
// and may wait a few cycles for a tile instead of waiting at the issue stage).
TEST(RtlPerformance, LargeMatmulKeepsTheArrayBusy) {
  if (N != 16) GTEST_SKIP() << "calibrated for N = 16";
  RtlDevice dev;
  std::mt19937 rng(3);
  MatmulSpec s;
  s.m = s.k = s.n = 256;
  s.shift = {12};
  std::vector<uint8_t> a(256 * 256), w(256 * 256);
  for (auto& v : a) v = uint8_t(rng());
  for (auto& v : w) v = uint8_t(rng());
  const MatmulRun r = run_matmul(dev, s, a, w);
  EXPECT_EQ(r.out, reference_matmul(s, a, w));
  EXPECT_GT(r.mxu_utilization, 0.90) << r.stats.cycles << " cycles; " << r.plan.describe();
  EXPECT_LT(r.stats.counters.weight_stall, r.stats.cycles / 100);
}

}  // namespace

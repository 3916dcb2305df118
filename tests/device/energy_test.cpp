// SPDX-License-Identifier: Apache-2.0
// The action counts of driver/energy.h against the chip's own performance counters: a program
// of every int8 instruction (with accumulation, max-pooling with padding, a raw activate) run
// on both backends. The counters are the hardware's (rtl) or the golden model's exact ones.
#include "energy.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "device_model.h"
#include "device_rtl.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;

std::unique_ptr<Device> open(const std::string& backend) {
  if (backend == "rtl") return std::make_unique<RtlDevice>();
  return std::make_unique<ModelDevice>(ChipParams::with_n(N));
}

// 6x5 image of N channels: read, weights, two matmuls (the second accumulates), a pooled
// activate (k 3, s 2, pads 1) and a raw one, both written back.
std::vector<Instruction> program(uint32_t in, uint32_t w, uint32_t q, uint32_t out) {
  const uint16_t width = 5, height = 6;
  const uint32_t pixels = width * height;
  Activate pool;
  pool.func = ActFunc::Relu;
  pool.acc_addr = 0;
  pool.ub_addr = 200;
  pool.width = width;
  pool.height = height;
  pool.pool_k = 3;
  pool.pool_s = 2;
  pool.ub_stride = 3;
  pool.pad_top = pool.pad_left = pool.pad_bottom = pool.pad_right = 1;
  Activate raw;
  raw.raw = true;
  raw.acc_addr = 0;
  raw.ub_addr = 300;
  raw.width = width;
  raw.height = height;
  raw.ub_stride = 4 * width;
  Matmul m1;
  m1.switch_weights = true;
  m1.inner = width;
  m1.outer = height;
  m1.outer_stride = width;
  Matmul m2 = m1;
  m2.accumulate = true;
  const uint32_t pooled_rows = uint32_t(pool.last_ub_row() - 200 + 1);
  return {ReadHost{HostDest::Ub, 0, pixels, in},
          ReadHost{HostDest::Param, 0, 12, q},
          ReadWeights{2, w},
          m1,
          m2,
          pool,
          raw,
          WriteHost{200, pooled_rows, out},
          WriteHost{300, 4 * pixels, out + 0x4000},
          Sync{},
          Halt{}};
}

class ActionCountsVsCounters : public ::testing::TestWithParam<std::string> {};

TEST_P(ActionCountsVsCounters, EqualTheChipsCounters) {
  auto dev = open(GetParam());
  const HostBuffer in = dev->alloc(0x1000, "in"), w = dev->alloc(0x1000, "w"),
                   q = dev->alloc(0x1000, "q"), out = dev->alloc(0x8000, "out");
  std::mt19937 rng(5);
  std::vector<uint8_t> bytes(0x1000);
  for (auto& b : bytes) b = uint8_t(rng());
  dev->write(in.addr, bytes);
  dev->write(w.addr, bytes);
  std::vector<uint8_t> qbytes(12 * N * 4, 0);
  for (uint32_t c = 0; c < N; ++c) qbytes[4 * (N + c)] = 1;  // mult 1, bias 0, shift 0
  dev->write(q.addr, qbytes);
  const auto prog = program(in.addr, w.addr, q.addr, out.addr);
  const RunStats s = dev->run(prog);
  const ActionCounts a = count_actions(prog, dev->params());
  EXPECT_EQ(a.instructions, prog.size());
  EXPECT_EQ(a.mac_int8, s.counters.mxu_macs);
  EXPECT_EQ(a.host_write, s.counters.dma_wr_bytes);
  EXPECT_EQ(a.host_read, s.counters.dma_rd_bytes);      // instruction fetch included
  EXPECT_EQ(a.instructions, s.counters.instr_retired);  // halt included
  // Independent of the counters: the sizes by hand.
  EXPECT_EQ(a.mac_int8, 2ull * 30 * N * N);
  EXPECT_EQ(a.ub_read, 2ull * 30 * N + (a.host_write));  // matmul rows, then write_host rows
  EXPECT_EQ(a.acc_write, 2ull * 30 * 4 * N);
  EXPECT_EQ(a.weight_fifo, 2ull * 2 * N * N);
  EXPECT_EQ(a.param, 12ull * N);
}

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }
INSTANTIATE_TEST_SUITE_P(Backends, ActionCountsVsCounters, ::testing::Values("rtl", "model"),
                         backend_name);

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Device (buffers, DMA windows, host access, running, errors) on the model backend, which
// needs no RTL. The same behaviour on the rtl backend is checked in tests/device.
#include "device_model.h"

#include <gtest/gtest.h>

#include "assembler.h"
#include "fp.h"
#include "program.h"

namespace {

using namespace tpu;

TEST(DeviceBuffers, RegisterAllocRelease) {
  ModelDevice d(ChipParams::with_n(4));
  EXPECT_EQ(d.backend(), "model");
  const HostBuffer a = d.register_buffer(0x1000, 0x100, "a");
  EXPECT_THROW(d.register_buffer(0x10F0, 0x20, "b"), DeviceError);  // overlaps a
  EXPECT_THROW(d.register_buffer(0x0, 0, "z"), DeviceError);
  EXPECT_THROW(d.register_buffer(0xFFFFFF00u, 0x200, "wrap"), DeviceError);
  EXPECT_THROW(d.register_buffer(Device::kCmdBase + 0x100, 0x10, "cmd"), DeviceError);
  const HostBuffer x = d.alloc(100, "x");
  const HostBuffer y = d.alloc(10, "y", 4096);
  EXPECT_EQ(x.addr, Device::kArenaBase);
  EXPECT_EQ(y.addr % 4096, 0u);
  EXPECT_GE(y.addr, x.end());
  EXPECT_EQ(d.buffers().size(), 3u);
  // alloc zero-fills; register_buffer keeps what memory holds.
  d.fill(x.addr, x.size, 0xAB);
  d.release(x);
  EXPECT_THROW(d.read(x.addr, 1), DeviceError);
  EXPECT_THROW(d.release(x.addr), DeviceError);
  const HostBuffer x2 = d.register_buffer(x.addr, 4, "again");
  EXPECT_EQ(d.read(x2.addr, 4), std::vector<uint8_t>(4, 0xAB));
  d.release(x2);
  d.release(y);
  EXPECT_EQ(d.alloc(16, "z").addr, Device::kArenaBase) << "released arena space is reused";
  d.release_all();
  EXPECT_TRUE(d.buffers().empty());
  (void)a;
}

TEST(DeviceBuffers, HostAccessOnlyInsideBuffers) {
  ModelDevice d;
  d.register_buffer(0x1000, 0x100, "a");
  d.register_buffer(0x1100, 0x100, "b");  // touches a
  d.write(0x1000, std::vector<uint8_t>(0x100, 1));
  EXPECT_EQ(d.read(0x10FF, 1)[0], 1);
  EXPECT_THROW(d.write(0x10F0, std::vector<uint8_t>(0x20, 0)), DeviceError) << "spans two buffers";
  EXPECT_THROW(d.read(0x0FFF, 2), DeviceError);
  try {
    d.read(0x3000, 1);
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("a 0x00001000..0x000010ff"), std::string::npos)
        << e.what();
  }
}

TEST(DeviceBuffers, WindowsMergeTouchingBuffersAndLimitToEight) {
  ModelDevice d;
  for (int i = 0; i < 50; ++i) d.alloc(48, "t", 16);  // back to back: one window
  d.register_buffer(0x1000, 0x10, "a");
  d.register_buffer(0x1010, 0x10, "b");  // touches a
  DmaWindows w = d.dma_windows(3);
  EXPECT_EQ(w[0].base, 0x1000u);
  EXPECT_EQ(w[0].size, 0x20u);
  EXPECT_EQ(w[1].base, Device::kArenaBase);
  EXPECT_EQ(w[1].size, 50u * 48u);
  EXPECT_EQ(w[2].base, Device::kCmdBase);
  EXPECT_EQ(w[2].size, 48u);
  EXPECT_EQ(w[3].size, 0u);
  for (uint32_t i = 0; i < 5; ++i) d.register_buffer(0x10000 * (i + 1), 16, "s");
  EXPECT_NO_THROW(d.dma_windows(1));  // 2 + 5 + command buffer = 8
  d.register_buffer(0x900000, 16, "one too many");
  EXPECT_THROW(d.dma_windows(1), DeviceError);
  EXPECT_THROW(d.run({Halt{}}), DeviceError);
}

// A small job that uses every unit: y = relu(x W) with the identity-ish slot.
std::vector<Instruction> small_job(uint32_t in, uint32_t out, const ChipParams& p) {
  ProgramBuilder b(p);
  b.read_params(0, 1, in).read_weights(1, in + 0x100).read_host(0, 4, in + 0x200);
  b.matmul(0, 0, 4, kSwitchWeights).activate(0, 10, 4, 0, ActFunc::Relu).write_host(10, 4, out);
  return b.finish();
}

TEST(DeviceRun, RunsAndCounts) {
  ModelDevice d(ChipParams::with_n(4));
  const HostBuffer in = d.register_buffer(0x1000, 0x300, "in");
  const HostBuffer out = d.register_buffer(0x2000, 0x40, "out");
  std::vector<uint8_t> slot(48, 0);
  for (int c = 0; c < 4; ++c) slot[16 + 4 * c] = 1;  // mult = 1, shift 0
  d.write(in.addr, slot);
  std::vector<uint8_t> w(16, 0);
  for (int i = 0; i < 4; ++i) w[i * 4 + i] = 1;  // identity tile
  d.write(in.addr + 0x100, w);
  const std::vector<uint8_t> x = {1, 2, 3, 4, 0xFF, 5, 0x80, 7, 9, 9, 9, 9, 0, 0, 0, 1};
  d.write(in.addr + 0x200, x);
  const RunStats s = d.run(small_job(in.addr, out.addr, d.params()));
  std::vector<uint8_t> expect = x;
  for (auto& v : expect) v = int8_t(v) < 0 ? 0 : v;  // ReLU
  EXPECT_EQ(d.read(out.addr, 16), expect);
  EXPECT_TRUE(s.cycles_estimated);
  EXPECT_GT(s.cycles, 0u);
  EXPECT_EQ(s.instructions, 7u);
  EXPECT_EQ(s.counters.instr_retired, 7u);
  EXPECT_EQ(s.counters.mxu_busy, 4u);
  EXPECT_EQ(s.counters.mxu_macs, 4u * 16u);
  EXPECT_EQ(s.counters.dma_wr_bytes, 16u);
  EXPECT_EQ(s.counters.dma_rd_bytes, 7u * 16 + 48 + 16 + 16);
  EXPECT_EQ(s.counters.act_busy, 4u);
}

// The documented errors, with the documented message.
TEST(DeviceRun, ChipErrors) {
  ModelDevice d(ChipParams::with_n(4));
  const HostBuffer in = d.register_buffer(0x1000, 0x300, "in");
  auto run_expect = [&](const std::vector<Instruction>& prog, ErrorCode code, uint32_t pc,
                        const std::string& text) {
    try {
      d.run(prog);
      ADD_FAILURE() << "no ChipError, expected " << error_name(code);
    } catch (const ChipError& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(e.pc(), pc) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos)
          << e.what() << "\n missing: " << text;
    }
    const RunOutcome o = d.try_run(prog);
    EXPECT_EQ(o.status, RunOutcome::Status::Error);
    EXPECT_EQ(o.error, code);
  };
  // Malformed: an unknown opcode, reserved bits.
  run_expect(assemble("nop\n.inst 0x2a\nhalt\n"), ErrorCode::ERR_OPCODE, 1,
             "ERR_OPCODE at instruction 1 (.inst 0x0000000000000000000000000000002a): opcode 0x2a");
  run_expect(assemble(".inst 0x10000000000000000000000000000007\nhalt\n"), ErrorCode::ERR_RESERVED,
             0, "reserved bits");
  // Out-of-range addresses.
  run_expect({ReadHost{HostDest::Ub, 8191, 2, in.addr}, Halt{}}, ErrorCode::ERR_UB_RANGE, 0,
             "ERR_UB_RANGE at instruction 0 (read_host    ub=8191 rows=2 host=0x1000): read_host: "
             "UB rows 8191..8192 out of range");
  Matmul mm;
  mm.switch_weights = true;
  mm.acc_addr = 2047;
  mm.inner = 2;
  run_expect({ReadWeights{1, in.addr}, mm, Halt{}}, ErrorCode::ERR_ACC_RANGE, 1, "ERR_ACC_RANGE");
  // DMA outside every registered buffer.
  run_expect({Nop{}, ReadHost{HostDest::Ub, 0, 1, 0x5000}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 1,
             "ERR_HOST_RANGE at instruction 1");
  run_expect({WriteHost{0, 0xC1, in.addr}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 0,
             "not inside any enabled DMA window");
  // Weight accounting and a missing halt.
  run_expect({Matmul{}, Halt{}}, ErrorCode::ERR_NO_WEIGHTS, 0, "no weight tile was made active");
  run_expect({ReadWeights{7, in.addr}, Halt{}}, ErrorCode::ERR_WEIGHT_OVERFLOW, 0,
             "at most WFifoTiles + 2 = 6");
  run_expect({Nop{}}, ErrorCode::ERR_CMD_OVERRUN, 1, "ended after 1 instructions without halt");
  run_expect({}, ErrorCode::ERR_CMD_OVERRUN, 0, "ERR_CMD_OVERRUN");
  // Still usable.
  EXPECT_NO_THROW(d.run({Halt{}}));
}

TEST(DeviceRun, ModelNeverTimesOut) {
  ModelDevice d;
  std::vector<Instruction> prog(1000, Nop{});
  prog.push_back(Halt{});
  EXPECT_NO_THROW(d.run(prog, 1));
  EXPECT_THROW(d.run(prog, 0), DeviceError);
}

}  // namespace

namespace {

// The training configuration on the model backend: a float program end to end through host
// memory, and the cycle estimate counting the VMEM rows the vector unit walks.
TEST(DeviceModelTraining, VectorProgramThroughHostMemory) {
  ModelDevice d(ChipParams::training(4));
  const HostBuffer in = d.alloc(64, "in");
  const HostBuffer out = d.alloc(64, "out");
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 16; ++i) {  // 4 rows of 4 fp32: 0, 1, ..., 15
    const uint32_t bits = fp::bits_of(static_cast<float>(i));
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  }
  d.write(in.addr, bytes);
  ProgramBuilder b(d.params());
  b.read_vmem(0, 4, in.addr);
  b.vop_imm(VecFunc::FMul, 4, 0, fp::bits_of(0.5f), 4);  // x / 2
  b.vop_unary(VecFunc::LSum, 8, 4, 4);                   // row sums in every lane
  b.write_vmem(8, 4, out.addr);
  const RunStats s = d.run(b.finish());
  const std::vector<uint8_t> got = d.read(out.addr, 64);
  for (int r = 0; r < 4; ++r) {
    const float want = 0.5f * static_cast<float>(4 * r + (4 * r + 1) + (4 * r + 2) + (4 * r + 3));
    for (int j = 0; j < 4; ++j) {
      uint32_t bits = 0;
      for (int k = 0; k < 4; ++k) bits |= uint32_t{got[16 * r + 4 * j + k]} << (8 * k);
      EXPECT_EQ(fp::float_of(bits), want) << r << " " << j;
    }
  }
  EXPECT_TRUE(s.cycles_estimated);
  EXPECT_EQ(s.counters.dma_rd_bytes, 5 * 16u + 64u);  // 5 instructions fetched, 4 rows
  EXPECT_EQ(s.counters.dma_wr_bytes, 64u);
}

// The estimate with a weight port (isa.md "The weight port"): read_weights' bytes leave the
// device-memory port's sum and count on the port, one beat per cycle.
TEST(DeviceRun, WeightPortEstimate) {
  ChipParams p = ChipParams::with_n(64);
  auto weights_only = [](const ChipParams& params, uint32_t addr) {
    ProgramBuilder b(params);
    b.read_weights(6, addr);
    for (int i = 0; i < 6; ++i) b.matmul(0, 0, 1, kSwitchWeights);
    return b.finish();
  };
  ModelDevice shared(p);
  const HostBuffer w1 = shared.alloc(6 * 64 * 64, "w");
  const RunStats s1 = shared.run(weights_only(p, w1.addr));
  p.weight_port_bytes = 64;
  ModelDevice ported(p);
  const HostBuffer w2 = ported.alloc(6 * 64 * 64, "w");
  const RunStats s2 = ported.run(weights_only(p, w2.addr));
  // 24 KiB of tiles: at 128 bits / 2 per cycle (8 bytes) with the instructions without the
  // port; 64 bytes per cycle with it, the instructions alone on the device-memory port.
  const uint64_t instr_bytes = 16 * s1.counters.instr_retired;
  EXPECT_EQ(s1.cycles, (6u * 64 * 64 + instr_bytes) / 8 + 2 * 64 + 16);
  EXPECT_EQ(s2.cycles, 6u * 64 * 64 / 64 + 2 * 64 + 16);
  EXPECT_EQ(s1.counters.dma_rd_bytes, s2.counters.dma_rd_bytes);
  // The checked builder refuses a host address off the port's beat.
  EXPECT_THROW(weights_only(p, w2.addr + 16), std::exception);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// ProgramBuilder: every argument the chip would reject is refused before it is emitted, with
// a message naming the instruction, the argument and the allowed range.
#include <gtest/gtest.h>

#include <string>

#include "program.h"

namespace {

using namespace tpu;

// Runs `f`, expects a ProgramError for `instruction` / `argument` whose message contains
// every string of `parts`.
template <typename F>
void expect_error(F f, const std::string& instruction, const std::string& argument,
                  std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no ProgramError (expected " << instruction << "." << argument << ")";
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.instruction(), instruction) << e.what();
    EXPECT_EQ(e.argument(), argument) << e.what();
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << e.what() << "\n  missing: " << p;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

class BuilderTest : public ::testing::Test {
 protected:
  ChipParams p = ChipParams::with_n(16);  // UB 8192, ACC 2048, 16 slots, 4 FIFO tiles
  ProgramBuilder b{p};
};

TEST_F(BuilderTest, EmitsWhatItIsGiven) {
  b.read_params(2, 3, 0x1000)
      .read_lut(0x2000)
      .read_weights(2, 0x3000)
      .read_host(10, 4, 0x4000)
      .matmul(10, 100, 4, kSwitchWeights | kAUnsigned)
      .matmul(10, 100, 4, kAccumulate | kSwitchWeights | kWUnsigned)
      .activate(100, 20, 4, 7, ActFunc::Relu, true)
      .write_host(20, 4, 0x5000)
      .sync()
      .nop();
  const auto prog = b.finish();
  ASSERT_EQ(prog.size(), 11u);
  EXPECT_EQ(prog[0], Instruction(ReadHost{HostDest::Param, 24, 36, 0x1000}));
  EXPECT_EQ(prog[1], Instruction(ReadHost{HostDest::Lut, 0, 16, 0x2000}));
  EXPECT_EQ(prog[2], Instruction(ReadWeights{2, 0x3000}));
  EXPECT_EQ(prog[3], Instruction(ReadHost{HostDest::Ub, 10, 4, 0x4000}));
  const auto& mm = std::get<Matmul>(prog[5]);
  EXPECT_TRUE(mm.accumulate && mm.switch_weights && mm.w_unsigned && !mm.a_unsigned);
  EXPECT_EQ(mm.inner, 4);
  EXPECT_EQ(mm.acc_addr, 100);
  const auto& act = std::get<Activate>(prog[6]);
  EXPECT_EQ(act.width, 4);
  EXPECT_EQ(act.height, 1);
  EXPECT_EQ(act.slot, 7);
  EXPECT_TRUE(act.out_unsigned);
  EXPECT_EQ(prog[7], Instruction(WriteHost{20, 4, 0x5000}));
  EXPECT_EQ(prog.back(), Instruction(Halt{}));
  EXPECT_TRUE(b.halted());
  EXPECT_EQ(b.pending_weight_tiles(), 0u);
  for (const auto& i : prog) EXPECT_EQ(check(i, p), ErrorCode::ERR_NONE) << disassemble(i);
}

TEST_F(BuilderTest, FinishAddsHaltOnce) {
  b.nop();
  EXPECT_EQ(b.finish().size(), 2u);
  EXPECT_EQ(b.finish().size(), 2u);
  expect_error([&] { b.nop(); }, "nop", "", {"after halt"});
}

TEST_F(BuilderTest, ReadHostRanges) {
  expect_error([&] { b.read_host(8192, 1, 0); }, "read_host", "local_addr",
               {"local_addr = 8192", "0..8191", "UbRows = 8192"});
  expect_error([&] { b.read_host(8190, 3, 0); }, "read_host", "rows",
               {"local_addr + rows - 1 = 8192", "0..8191"});
  expect_error([&] { b.read_host(0, 0, 0); }, "read_host", "rows", {"rows = 0", "1.."});
  expect_error([&] { b.read_host(0, 1, 0x1008); }, "read_host", "host_addr",
               {"0x00001008", "16-byte aligned"});
  expect_error([&] { b.read_host(0, 2, 0xFFFFFFF0u); }, "read_host", "host_addr",
               {"32-bit address space"});
  expect_error([&] { b.read_params(16, 1, 0); }, "read_host", "first_slot",
               {"first_slot = 16", "0..15"});
  expect_error([&] { b.read_params(14, 3, 0); }, "read_host", "slots", {"slots = 3", "1..2"});
  expect_error(
      [&] {
        b.read_host(ReadHost{HostDest::Lut, 15, 2, 0});
      },
      "read_host", "rows", {"LUT rows"});
  expect_error(
      [&] {
        b.read_host(ReadHost{static_cast<HostDest>(3), 0, 1, 0});
      },
      "read_host", "dest", {"dest = 3"});
  EXPECT_EQ(b.size(), 0u) << "nothing is emitted by a failing call";
}

TEST_F(BuilderTest, HostRangesRestrictDma) {
  b.set_host_ranges({{0x1000, 0x100, "in"}, {0x2000, 0x100, "out"}});
  b.read_host(0, 16, 0x1000);  // exactly the buffer
  expect_error([&] { b.read_host(0, 17, 0x1000); }, "read_host", "host_addr",
               {"0x00001000..0x0000110f", "not inside one registered host buffer",
                "in 0x00001000..0x000010ff"});
  expect_error([&] { b.write_host(0, 1, 0x3000); }, "write_host", "host_addr",
               {"registered host buffer"});
  expect_error([&] { b.read_weights(1, 0x1010); }, "read_weights", "host_addr",
               {"registered host buffer"});
}

TEST_F(BuilderTest, WeightAccounting) {
  expect_error([&] { b.matmul(0, 0, 1, kNoFlags); }, "matmul", "switch",
               {"ERR_NO_WEIGHTS", "needs switch"});
  expect_error([&] { b.matmul(0, 0, 1, kSwitchWeights); }, "matmul", "switch", {"ERR_NO_WEIGHTS"});
  b.read_weights(6, 0);
  EXPECT_EQ(b.pending_weight_tiles(), 6u);
  expect_error([&] { b.read_weights(1, 0); }, "read_weights", "tiles",
               {"6 already waiting", "ERR_WEIGHT_OVERFLOW", "allowed 1..0"});
  b.matmul(0, 0, 1, kSwitchWeights);
  b.read_weights(1, 0);
  for (int i = 0; i < 6; ++i) b.matmul(0, 0, 1, kSwitchWeights);
  EXPECT_EQ(b.pending_weight_tiles(), 0u);
  b.matmul(0, 0, 1, kNoFlags);  // the active tile stays
  expect_error([&] { b.matmul(0, 0, 1, kSwitchWeights); }, "matmul", "switch",
               {"already been made active"});
}

TEST_F(BuilderTest, MatmulRanges) {
  b.read_weights(1, 0);
  expect_error([&] { b.matmul(0, 0, 0, kSwitchWeights); }, "matmul", "rows",
               {"rows = 0", "1..4095"});
  expect_error([&] { b.matmul(0, 0, 4096, kSwitchWeights); }, "matmul", "rows", {"rows = 4096"});
  expect_error([&] { b.matmul(0, 2040, 9, kSwitchWeights); }, "matmul", "acc_addr",
               {"acc_addr + inner*outer - 1 = 2048", "0..2047", "AccRows = 2048"});
  expect_error([&] { b.matmul(8190, 0, 3, kSwitchWeights); }, "matmul", "ub_addr",
               {"last UB row read", "8192"});
  expect_error([&] { b.matmul(0, 0, 1, 1u << 7); }, "matmul", "flags", {"MatmulFlag"});
  Matmul m;
  m.switch_weights = true;
  m.inner = 10;
  m.outer = 10;
  m.inner_stride = 2;
  m.outer_stride = 910;
  m.ub_addr = 0;
  expect_error([&] { b.matmul(m); }, "matmul", "ub_addr", {"= 8208"});  // 9*910 + 9*2
  m.outer_stride = 100;
  b.matmul(m);
}

TEST_F(BuilderTest, ActivateRanges) {
  expect_error([&] { b.activate(0, 0, 1, 16); }, "activate", "slot", {"slot = 16", "0..15"});
  expect_error([&] { b.activate(2047, 0, 2, 0); }, "activate", "acc_addr",
               {"acc_addr + width*height - 1 = 2048"});
  expect_error([&] { b.activate(0, 8191, 2, 0); }, "activate", "ub_addr",
               {"last UB row written", "8192"});
  Activate a;
  a.width = 4;
  a.height = 2;
  a.pool_k = 3;
  expect_error([&] { b.activate(a); }, "activate", "pool_k", {"pool_k = 3", "1..2"});
  a.pool_k = 2;
  a.pool_s = 0;
  expect_error([&] { b.activate(a); }, "activate", "pool_s", {"pool_s = 0"});
  a.pool_s = 2;
  a.width = 0;
  expect_error([&] { b.activate(a); }, "activate", "width", {"width = 0"});
  a.width = 4;
  b.activate(a);
  // Max-pool padding: each pad below pool_k, and the window inside the padded image.
  a.pad_left = 2;
  expect_error([&] { b.activate(a); }, "activate", "pad_left", {"pad_left = 2", "0..1"});
  a.pad_left = 0;
  a.pool_k = 3;
  a.pad_bottom = 1;  // height 2 + 1 = 3 fits the window of 3
  b.activate(a);
  a.pad_bottom = 0;
  expect_error([&] { b.activate(a); }, "activate", "pool_k", {"pool_k = 3", "1..2"});
}

TEST_F(BuilderTest, AppendChecksDecodedAndRawInstructions) {
  b.append(ReadHost{HostDest::Ub, 0, 1, 0x100});
  b.append(RawInstruction{encode(Nop{})});  // decodes: fine
  RawInstruction bad;
  bad.bytes[0] = 0x2a;
  expect_error([&] { b.append(bad); }, ".inst", "", {"opcode 0x2a"});
  expect_error([&] { b.append(WriteHost{9000, 1, 0}); }, "write_host", "ub_row", {"ub_row = 9000"});
  EXPECT_EQ(b.size(), 2u);
}

TEST(Builder, SmallChipParameters) {
  ChipParams p = ChipParams::with_n(4);
  p.ub_rows = 32;
  p.acc_rows = 8;
  p.qp_slots = 2;
  p.wfifo_tiles = 1;
  ProgramBuilder b(p);
  expect_error([&] { b.read_weights(4, 0); }, "read_weights", "tiles", {"the 3 tiles"});
  expect_error(
      [&] {
        b.read_host(ReadHost{HostDest::Lut, 0, 65, 0});
      },
      "read_host", "rows", {"LUT rows: 256/N = 64"});
  expect_error([&] { b.read_params(0, 3, 0); }, "read_host", "slots", {"slots = 3", "1..2"});
  EXPECT_THROW(ProgramBuilder(ChipParams{5}), std::invalid_argument);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Top-level tests of the Verilated tpu_core through tpu::sim::Chip: registers over AXI4-Lite,
// short programs fetched and executed over AXI4, error paths, run() stop conditions and VCD.
// Built once per N in TPU_SIM_N_LIST (tpu_sim_chip_tests_n<N>) and per N in
// TPU_SIM_TRAIN_N_LIST on the training chip (tpu_sim_chip_tests_train_n<N>, tests named
// train_n<N>.sim.*: the register-map walk on the training chip for scripts/coverage.sh
// --train-only); every program test runs with backpressure off and on.
//
// One Chip per process (SystemC elaborates once): the tests share it and reset it in place.
// ctest runs each test in its own process; running the binary directly also works.
#include "chip.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace tpu::sim {
namespace {

constexpr uint32_t kCmdBase = 0x1000;
constexpr uint32_t kDataBase = 0x10000;

// ISA error codes (docs/isa.md).
constexpr uint32_t kErrOpcode = 1;
constexpr uint32_t kErrAxiRead = 9;
constexpr uint32_t kErrAxiWrite = 10;
constexpr uint32_t kErrCmdOverrun = 11;

using Instr = std::vector<uint8_t>;  // 16 bytes, little-endian

Instr simple(uint8_t opcode) {
  Instr i(16, 0);
  i[0] = opcode;
  return i;
}
Instr nop() { return simple(0x00); }
Instr halt() { return simple(0x07); }

// read_host (0x01) / write_host (0x05): local row 39:16, rows 63:40, host address 95:64.
Instr host_transfer(uint8_t opcode, uint32_t ub_row, uint32_t rows, uint32_t host_addr) {
  Instr i(16, 0);
  i[0] = opcode;
  for (int b = 0; b < 3; ++b) i[2 + b] = static_cast<uint8_t>(ub_row >> (8 * b));
  for (int b = 0; b < 3; ++b) i[5 + b] = static_cast<uint8_t>(rows >> (8 * b));
  for (int b = 0; b < 4; ++b) i[8 + b] = static_cast<uint8_t>(host_addr >> (8 * b));
  return i;
}
Instr read_host(uint32_t ub_row, uint32_t rows, uint32_t host_addr) {
  return host_transfer(0x01, ub_row, rows, host_addr);
}
Instr write_host(uint32_t ub_row, uint32_t rows, uint32_t host_addr) {
  return host_transfer(0x05, ub_row, rows, host_addr);
}

Chip& shared_chip() {
  static Chip chip;  // default ChipConfig; tests adjust it through setters
  return chip;
}

class ChipTest : public ::testing::TestWithParam<double> {
 protected:
  void SetUp() override {
    chip().set_backpressure(GetParam(), 12345);
    chip().set_memory_timing(10, 16);
    chip().memory().clear();
    chip().reset();
    chip().add_region(kCmdBase, 0x1000, "commands");
    chip().add_region(kDataBase, 0x10000, "data");
  }
  Chip& chip() { return shared_chip(); }

  void load_program(const std::vector<Instr>& program, uint32_t addr = kCmdBase) {
    std::vector<uint8_t> bytes;
    for (const Instr& i : program) bytes.insert(bytes.end(), i.begin(), i.end());
    chip().write_mem(addr, bytes);
  }

  RunResult run_program(const std::vector<Instr>& program, uint64_t max_cycles = 100000) {
    load_program(program);
    chip().start(kCmdBase, static_cast<uint32_t>(program.size()));
    return chip().run(max_cycles);
  }
};

std::string bp_name(const ::testing::TestParamInfo<double>& info) {
  return info.param == 0.0 ? "bp_off" : "bp_on";
}
INSTANTIATE_TEST_SUITE_P(Backpressure, ChipTest, ::testing::Values(0.0, 0.3), bp_name);

TEST_P(ChipTest, IdAndParameterRegisters) {
  EXPECT_EQ(chip().read_reg(reg::kId), reg::kIdValue);
  const Params p = chip().params();
  EXPECT_EQ(p.id, 0x54505531u);
  EXPECT_EQ(p.n, Chip::compiled_n());
  EXPECT_EQ(p.ub_rows, 8192u);
  EXPECT_EQ(p.acc_rows, 2048u);
  EXPECT_EQ(p.wfifo_tiles, 4u);
  EXPECT_EQ(p.qp_slots, 16u);
  EXPECT_EQ(p.axi_width, Chip::compiled_axi_width());
}

TEST_P(ChipTest, ResetValues) {
  EXPECT_EQ(chip().read_reg(reg::kStatus), 0u);
  EXPECT_EQ(chip().read_reg(reg::kIrqEnable), reg::kIrqEnableResetValue);
  EXPECT_EQ(chip().read_reg(reg::kIrqStatus), 0u);
  EXPECT_FALSE(chip().irq());
}

TEST_P(ChipTest, ReadWriteRegistersHoldValues) {
  chip().write_reg(reg::kCmdAddr, 0x0001'2340);
  chip().write_reg(reg::kCmdCount, 77);
  EXPECT_EQ(chip().read_reg(reg::kCmdAddr), 0x0001'2340u);
  EXPECT_EQ(chip().read_reg(reg::kCmdCount), 77u);
  chip().write_reg(reg::kIrqEnable, 0x1);
  EXPECT_EQ(chip().read_reg(reg::kIrqEnable), 0x1u);
}

TEST_P(ChipTest, UnmappedRegisterAnswersSlverr) {
  EXPECT_EQ(chip().try_read_reg(0x800).resp, 2u);
  EXPECT_EQ(chip().try_write_reg(0x800, 1).resp, 2u);
  try {
    chip().read_reg(0x0FC);
    FAIL() << "expected RegisterError";
  } catch (const RegisterError& e) {
    EXPECT_EQ(e.addr, 0x0FCu);
    EXPECT_EQ(e.resp, 2u);
  }
  // The port still works afterwards.
  EXPECT_EQ(chip().read_reg(reg::kId), reg::kIdValue);
}

// Only whole-word writes: a write with any other byte strobe answers SLVERR and changes
// nothing (docs/architecture.md).
TEST_P(ChipTest, PartialByteStrobeWriteAnswersSlverrAndChangesNothing) {
  chip().write_reg(reg::kCmdAddr, 0x1234'5670);
  for (uint32_t strb : {0x0u, 0x1u, 0x3u, 0x7u, 0xEu, 0x8u}) {
    EXPECT_EQ(chip().try_write_reg(reg::kCmdAddr, 0xFFFF'FFF0, strb).resp, 2u) << strb;
    EXPECT_EQ(chip().read_reg(reg::kCmdAddr), 0x1234'5670u) << strb;
  }
  EXPECT_EQ(chip().try_write_reg(reg::kCmdAddr, 0xFFFF'FFF0, 0xF).resp, 0u);
  EXPECT_EQ(chip().read_reg(reg::kCmdAddr), 0xFFFF'FFF0u);
  EXPECT_THROW(chip().try_write_reg(reg::kCmdAddr, 0, 0x1F), std::invalid_argument);
}

TEST_P(ChipTest, RegisterAddressOutside12BitsIsRejected) {
  EXPECT_THROW(chip().read_reg(0x1000), std::invalid_argument);
}

TEST_P(ChipTest, HaltOnlyProgramFinishes) {
  const RunResult r = run_program({halt()});
  ASSERT_EQ(r.reason, StopReason::kDone) << to_string(r.reason);
  EXPECT_TRUE(r.status & reg::kStatusDone);
  EXPECT_FALSE(r.status & reg::kStatusError);
  EXPECT_FALSE(r.status & reg::kStatusBusy);
  EXPECT_GT(r.cycles, 0u);
  EXPECT_TRUE(chip().irq());
  EXPECT_EQ(chip().read_reg(reg::kIrqStatus) & reg::kIrqDone, reg::kIrqDone);
  const Counters c = chip().counters();
  EXPECT_GE(c.dma_rd_bytes, 16u);
  EXPECT_EQ(c.dma_wr_bytes, 0u);
  EXPECT_GT(c.cycles, 0u);
  EXPECT_LE(c.cycles, r.cycles);
}

TEST_P(ChipTest, NopThenHaltFinishes) {
  const RunResult r = run_program({nop(), halt()});
  ASSERT_EQ(r.reason, StopReason::kDone) << to_string(r.reason) << " err " << r.err_code;
}

// golden_model.h: INSTR_RETIRED counts "instructions completed, including the halt".
TEST_P(ChipTest, InstrRetiredCountsEveryInstructionIncludingHalt) {
  ASSERT_EQ(run_program({halt()}).reason, StopReason::kDone);
  EXPECT_EQ(chip().counter(8), 1u) << "halt-only program";
  ASSERT_EQ(run_program({nop(), nop(), halt()}).reason, StopReason::kDone);
  EXPECT_EQ(chip().counter(8), 3u) << "nop, nop, halt";
}

// An opcode the chip does not have: on the int8 chip the first training opcode (0x08, isa.md
// "Training configuration"), on the training chip (tpu_sim_chip_tests_train_n<N>) 0x12, the
// first opcode no configuration has.
constexpr uint8_t kIllegalOpcode = TPU_SIM_VMEM_ROWS > 0 ? 0x12 : 0x08;

TEST_P(ChipTest, IllegalOpcodeFaultsWithErrOpcodeAtItsIndex) {
  const RunResult r = run_program({nop(), nop(), simple(kIllegalOpcode), halt()});
  ASSERT_EQ(r.reason, StopReason::kError) << to_string(r.reason);
  EXPECT_TRUE(r.status & reg::kStatusError);
  EXPECT_EQ(r.err_code, kErrOpcode);
  EXPECT_EQ(r.err_pc, 2u);
  const Status s = chip().status();
  EXPECT_TRUE(s.error);
  EXPECT_FALSE(s.done);
  EXPECT_EQ(s.err_code, kErrOpcode);
  EXPECT_EQ(s.err_pc, 2u);
  EXPECT_EQ(chip().read_reg(reg::kIrqStatus) & reg::kIrqError, reg::kIrqError);
}

TEST_P(ChipTest, ProgramWithoutHaltOverrunsCommandBuffer) {
  const RunResult r = run_program({nop(), nop()});
  ASSERT_EQ(r.reason, StopReason::kError) << to_string(r.reason);
  EXPECT_EQ(r.err_code, kErrCmdOverrun);
}

TEST_P(ChipTest, CommandBufferInUnmappedMemoryFaultsWithAxiRead) {
  chip().start(0x8000'0000, 1);  // DECERR
  const RunResult r = chip().run(100000);
  ASSERT_EQ(r.reason, StopReason::kError) << to_string(r.reason);
  EXPECT_EQ(r.err_code, kErrAxiRead);
  EXPECT_EQ(r.err_pc, 0u);
}

TEST_P(ChipTest, InjectedSlaveErrorOnFetchFaultsWithAxiRead) {
  chip().inject_error(kCmdBase + 16, 16);  // the second instruction
  const RunResult r = run_program({nop(), halt()});
  ASSERT_EQ(r.reason, StopReason::kError) << to_string(r.reason);
  EXPECT_EQ(r.err_code, kErrAxiRead);
}

TEST_P(ChipTest, ReadHostThenWriteHostCopiesRows) {
  const uint32_t n = Chip::compiled_n();
  const uint32_t rows = 40;  // several bursts
  std::vector<uint8_t> src(rows * n);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 5);
  chip().write_mem(kDataBase, src);
  // The bridge counts since the chip was built, and the chip is shared by the tests of this
  // process (earlier ones fault on purpose): count this run's error responses only.
  const uint64_t errors_before = chip().axi_stats().error_responses;
  const RunResult r =
      run_program({read_host(3, rows, kDataBase), write_host(3, rows, kDataBase + 0x8000), halt()});
  ASSERT_EQ(r.reason, StopReason::kDone) << to_string(r.reason) << " err " << r.err_code;
  EXPECT_EQ(chip().read_mem(kDataBase + 0x8000, src.size()), src);
  const Counters c = chip().counters();
  EXPECT_EQ(c.dma_wr_bytes, src.size());
  EXPECT_EQ(c.dma_rd_bytes, src.size() + 3 * 16);
  EXPECT_EQ(chip().axi_stats().error_responses, errors_before);
}

TEST_P(ChipTest, WriteHostToUnmappedMemoryFaultsWithAxiWrite) {
  const RunResult r = run_program({write_host(0, 1, 0x4000'0000), halt()});
  ASSERT_EQ(r.reason, StopReason::kError) << to_string(r.reason);
  EXPECT_EQ(r.err_code, kErrAxiWrite);
  EXPECT_EQ(r.err_pc, 0u);
}

// CYCLES counts exactly the cycles of the run, i.e. those STATUS.BUSY is set, which the trace
// port shows as trace_run_o (docs/architecture.md). Not one more (the done / error cycle after
// the run) and not one fewer; for runs that end with halt, with an error found at decode, with
// an AXI error, and for a long DMA run with backpressure.
TEST_P(ChipTest, CyclesCounterEqualsTheCyclesTheTracePortMarksRunning) {
  const uint32_t n = Chip::compiled_n();
  std::vector<uint8_t> src(64 * n, 0x5A);
  chip().write_mem(kDataBase, src);
  struct Case {
    const char* what;
    std::vector<Instr> program;
    StopReason reason;
  };
  const std::vector<Case> cases = {
      {"halt only", {halt()}, StopReason::kDone},
      {"nops", {nop(), nop(), nop(), halt()}, StopReason::kDone},
      {"copy 64 rows",
       {read_host(0, 64, kDataBase), write_host(0, 64, kDataBase + 0x8000), halt()},
       StopReason::kDone},
      {"illegal opcode", {nop(), simple(0x08), halt()}, StopReason::kError},
      {"write_host to unmapped memory",
       {write_host(0, 1, 0x4000'0000), halt()},
       StopReason::kError},
  };
  chip().set_instruction_trace(true);
  for (const Case& c : cases) {
    const RunResult r = run_program(c.program);
    ASSERT_EQ(r.reason, c.reason) << c.what << ": " << to_string(r.reason);
    const uint64_t running = chip().trace_run_cycles();
    EXPECT_GT(running, 0u) << c.what;
    EXPECT_LE(running, r.cycles) << c.what;
    EXPECT_EQ(chip().counter(reg::kCounterCycles), running) << c.what;
    // The other counters tick only inside the run too.
    const Counters k = chip().counters();
    EXPECT_LE(k.dma_busy, running) << c.what;
    EXPECT_LE(k.act_busy, running) << c.what;
  }
  chip().set_instruction_trace(false);
}

TEST_P(ChipTest, RunStopsAtCycleLimitAndResumes) {
  load_program({nop(), nop(), nop(), halt()});
  chip().start(kCmdBase, 4);
  const uint64_t before = chip().cycle();
  const RunResult partial = chip().run(5);
  EXPECT_EQ(partial.reason, StopReason::kCycleLimit);
  EXPECT_EQ(partial.cycles, 5u);
  EXPECT_EQ(chip().cycle() - before, 5u);
  const RunResult rest = chip().run(100000);
  EXPECT_EQ(rest.reason, StopReason::kDone) << to_string(rest.reason);
}

TEST_P(ChipTest, RunPollsStatusWhenInterruptsAreDisabled) {
  chip().write_reg(reg::kIrqEnable, 0);
  const RunResult r = run_program({nop(), halt()});
  EXPECT_EQ(r.reason, StopReason::kDone) << to_string(r.reason);
  EXPECT_FALSE(chip().irq());
}

TEST_P(ChipTest, SecondRunAfterCompletionFinishesToo) {
  ASSERT_EQ(run_program({halt()}).reason, StopReason::kDone);
  ASSERT_TRUE(chip().irq());  // left pending on purpose: start() acknowledges it
  const RunResult r = run_program({nop(), nop(), halt()});
  EXPECT_EQ(r.reason, StopReason::kDone) << to_string(r.reason);
  EXPECT_FALSE(chip().status().error);
}

// IRQ_STATUS is write-1-to-clear: each bit written 1 clears, each written 0 is kept;
// irq_o is IRQ_STATUS & IRQ_ENABLE (docs/architecture.md). Both bits are made pending by a
// halt run and an error run started without acknowledging the first (start() would).
TEST_P(ChipTest, IrqStatusIsWriteOneToClearAndMaskedByIrqEnable) {
  ASSERT_EQ(run_program({halt()}).reason, StopReason::kDone);
  load_program({simple(0xEE)}, kCmdBase + 0x100);  // an unknown opcode: ERR_OPCODE
  chip().write_reg(reg::kCmdAddr, kCmdBase + 0x100);
  chip().write_reg(reg::kCmdCount, 1);
  chip().write_reg(reg::kCtrl, reg::kCtrlStart);
  const RunResult r = chip().run(100000);
  ASSERT_EQ(r.reason, StopReason::kError) << to_string(r.reason);
  ASSERT_EQ(r.err_code, kErrOpcode);
  const uint32_t both = reg::kIrqDone | reg::kIrqError;
  ASSERT_EQ(chip().read_reg(reg::kIrqStatus), both);
  chip().write_reg(reg::kIrqStatus, 0);  // writing 0 clears nothing
  EXPECT_EQ(chip().read_reg(reg::kIrqStatus), both);
  chip().write_reg(reg::kIrqStatus, reg::kIrqError);  // clears the error bit only
  EXPECT_EQ(chip().read_reg(reg::kIrqStatus), reg::kIrqDone);
  EXPECT_TRUE(chip().irq());
  chip().write_reg(reg::kIrqEnable, reg::kIrqError);  // the pending done bit is masked
  EXPECT_EQ(chip().read_reg(reg::kIrqEnable), reg::kIrqError);
  EXPECT_FALSE(chip().irq());
  chip().write_reg(reg::kIrqEnable, reg::kIrqDone);
  EXPECT_TRUE(chip().irq());
  chip().write_reg(reg::kIrqStatus, reg::kIrqDone);
  EXPECT_EQ(chip().read_reg(reg::kIrqStatus), 0u);
  EXPECT_FALSE(chip().irq());
  chip().write_reg(reg::kIrqEnable, reg::kIrqEnableResetValue);
}

// Every register of docs/registers.csv, through reg::kRegisters (generated from it, so a new
// register is walked here without editing this test), behaves on the chip as its access type
// says: RO answers a write SLVERR and keeps its value; RW reads back what was written (its low
// `bits` bits) and nothing else; RW1C is cleared bit by bit by writing 1 and never set by a
// write; W reads 0. Every stored register reads its reset value after reset; a write that is
// not a whole word answers SLVERR and changes nothing; every other word address answers
// SLVERR to reads and writes and aliases no register.
class RegisterMapTest : public ChipTest {
 protected:
  static uint32_t mask(const reg::Register& r) {
    return r.bits >= 32 ? 0xFFFF'FFFFu : (1u << r.bits) - 1u;
  }
  // A value of every register: reads each one (all must answer OKAY).
  std::vector<uint32_t> snapshot() {
    std::vector<uint32_t> v;
    for (const reg::Register& r : reg::kRegisters) {
      const RegAccess a = chip().try_read_reg(r.addr);
      EXPECT_EQ(a.resp, 0u) << r.name;
      v.push_back(a.data);
    }
    return v;
  }
  void expect_unchanged(const std::vector<uint32_t>& before, const char* after_what) {
    const std::vector<uint32_t> now = snapshot();
    for (size_t i = 0; i < now.size(); ++i) {
      EXPECT_EQ(now[i], before[i]) << reg::kRegisters[i].name << " changed by " << after_what;
    }
  }
  // Makes the hardware set every bit of an RW1C register; returns the bits it set. One entry
  // per RW1C register of the map: a new one fails below until it has one.
  uint32_t set_by_hardware(const reg::Register& r) {
    if (std::string(r.name) == "IRQ_STATUS") {
      // A halt run sets DONE; an error run started without acknowledging it sets ERROR.
      EXPECT_EQ(run_program({halt()}).reason, StopReason::kDone);
      load_program({simple(0xEE)}, kCmdBase + 0x100);  // an unknown opcode: ERR_OPCODE
      chip().write_reg(reg::kCmdAddr, kCmdBase + 0x100);
      chip().write_reg(reg::kCmdCount, 1);
      chip().write_reg(reg::kCtrl, reg::kCtrlStart);
      EXPECT_EQ(chip().run(100000).reason, StopReason::kError);
      return reg::kIrqDone | reg::kIrqError;
    }
    ADD_FAILURE() << "RW1C register " << r.name << ": add how the hardware sets it to this test";
    return 0;
  }
};
INSTANTIATE_TEST_SUITE_P(Backpressure, RegisterMapTest, ::testing::Values(0.0, 0.3), bp_name);

TEST_P(RegisterMapTest, ResetValues) {
  for (const reg::Register& r : reg::kRegisters) {
    const RegAccess a = chip().try_read_reg(r.addr);
    EXPECT_EQ(a.resp, 0u) << r.name;
    if (r.access == reg::Access::ReadWrite || r.access == reg::Access::WriteOneToClear) {
      EXPECT_EQ(a.data, r.reset) << r.name;
    } else if (r.access == reg::Access::WriteOnly) {
      EXPECT_EQ(a.data, 0u) << r.name;
    }
  }
}

TEST_P(RegisterMapTest, ReadOnlyAndWriteOnlyRegisters) {
  for (const reg::Register& r : reg::kRegisters) {
    if (r.access != reg::Access::ReadOnly && r.access != reg::Access::WriteOnly) continue;
    const std::vector<uint32_t> before = snapshot();
    if (r.access == reg::Access::ReadOnly) {
      const uint32_t value = chip().read_reg(r.addr);
      EXPECT_EQ(chip().try_write_reg(r.addr, ~value).resp, 2u) << r.name;
      EXPECT_EQ(chip().try_write_reg(r.addr, 0).resp, 2u) << r.name;
    } else {
      EXPECT_EQ(chip().try_write_reg(r.addr, 0).resp, 0u) << r.name;  // a command of nothing
      EXPECT_EQ(chip().read_reg(r.addr), 0u) << r.name;
    }
    expect_unchanged(before, r.name);
  }
}

TEST_P(RegisterMapTest, ReadWriteRegistersReadBackAndAliasNothing) {
  const uint32_t patterns[] = {0xFFFF'FFFFu, 0x5A5A'5A5Au, 0xA5A5'A5A5u, 0u};
  for (const reg::Register& r : reg::kRegisters) {
    if (r.access != reg::Access::ReadWrite) continue;
    for (uint32_t p : patterns) {
      EXPECT_EQ(chip().try_write_reg(r.addr, p).resp, 0u) << r.name;
      EXPECT_EQ(chip().read_reg(r.addr), p & mask(r)) << r.name << " written " << p;
    }
    chip().write_reg(r.addr, 0x1234'5678u);
    for (uint32_t strb : {0x0u, 0x1u, 0x7u, 0xEu}) {  // partial writes: SLVERR, nothing written
      EXPECT_EQ(chip().try_write_reg(r.addr, 0xFFFF'FFFFu, strb).resp, 2u) << r.name << strb;
      EXPECT_EQ(chip().read_reg(r.addr), 0x1234'5678u & mask(r)) << r.name << strb;
    }
  }
  // A distinct value in every RW register at once: each reads its own.
  std::vector<uint32_t> written;
  for (const reg::Register& r : reg::kRegisters) {
    written.push_back(r.access == reg::Access::ReadWrite ? (r.addr * 0x9E37'79B9u) ^ 0x0F0F'0F0Fu
                                                         : 0u);
    if (r.access == reg::Access::ReadWrite) chip().write_reg(r.addr, written.back());
  }
  for (size_t i = 0; i < written.size(); ++i) {
    const reg::Register& r = reg::kRegisters[i];
    if (r.access == reg::Access::ReadWrite) {
      EXPECT_EQ(chip().read_reg(r.addr), written[i] & mask(r)) << r.name;
    }
  }
}

TEST_P(RegisterMapTest, WriteOneToClearRegisters) {
  for (const reg::Register& r : reg::kRegisters) {
    if (r.access != reg::Access::WriteOneToClear) continue;
    chip().write_reg(r.addr, 0xFFFF'FFFFu);  // clears everything, sets nothing
    EXPECT_EQ(chip().read_reg(r.addr), 0u) << r.name;
    const uint32_t set = set_by_hardware(r);
    ASSERT_NE(set, 0u) << r.name;
    EXPECT_EQ(chip().read_reg(r.addr), set) << r.name;
    EXPECT_EQ(chip().try_write_reg(r.addr, 0).resp, 0u) << r.name;  // writing 0 clears nothing
    EXPECT_EQ(chip().read_reg(r.addr), set) << r.name;
    EXPECT_EQ(chip().try_write_reg(r.addr, set, 0x7).resp, 2u) << r.name;  // partial: nothing
    EXPECT_EQ(chip().read_reg(r.addr), set) << r.name;
    uint32_t left = set;
    for (unsigned b = 0; b < r.bits; ++b) {  // each bit written 1 clears that bit only
      if (!(set & (1u << b))) continue;
      chip().write_reg(r.addr, 1u << b);
      left &= ~(1u << b);
      EXPECT_EQ(chip().read_reg(r.addr), left) << r.name << " bit " << b;
    }
  }
}

TEST_P(RegisterMapTest, UnmappedAddressesAnswerSlverrAndAliasNothing) {
  std::vector<bool> mapped(0x1000 / 4, false);
  for (const reg::Register& r : reg::kRegisters) mapped[r.addr / 4] = true;
  chip().write_reg(reg::kIrqEnable, 0);  // a stray write must show below, not start a run
  const std::vector<uint32_t> before = snapshot();
  unsigned unmapped = 0;
  for (uint32_t addr = 0; addr < 0x1000; addr += 4) {
    if (mapped[addr / 4]) continue;
    ++unmapped;
    const RegAccess rd = chip().try_read_reg(addr);
    EXPECT_EQ(rd.resp, 2u) << std::hex << addr;
    EXPECT_EQ(rd.data, 0u) << std::hex << addr;
    EXPECT_EQ(chip().try_write_reg(addr, 0xFFFF'FFFFu).resp, 2u) << std::hex << addr;
  }
  EXPECT_EQ(unmapped + std::size(reg::kRegisters), 0x1000u / 4);
  expect_unchanged(before, "writes to unmapped addresses");
}

TEST_P(ChipTest, RunOnFinishedChipReturnsImmediately) {
  ASSERT_EQ(run_program({halt()}).reason, StopReason::kDone);
  const RunResult again = chip().run(1000);  // irq still pending -> STATUS is polled at once
  EXPECT_EQ(again.reason, StopReason::kDone);
  EXPECT_EQ(again.cycles, 0u);
}

TEST_P(ChipTest, SecondChipInOneProcessIsRefused) {
  (void)chip();
  EXPECT_TRUE(Chip::constructed());
  EXPECT_THROW(Chip second, std::logic_error);
}

// More instructions than the chip's instruction queue holds: fetch has to refill it.
TEST_P(ChipTest, LongProgramOfNopsFinishes) {
  std::vector<Instr> program(100, nop());
  program.push_back(halt());
  const RunResult r = run_program(program);
  ASSERT_EQ(r.reason, StopReason::kDone) << to_string(r.reason) << " err " << r.err_code;
  EXPECT_GE(chip().counter(6), program.size() * 16);  // DMA_RD_BYTES: every instruction fetched
}

// Prints the simulation speed (a reported figure) on a DMA-heavy program.
TEST_P(ChipTest, SimulationSpeedOfBulkCopies) {
  const uint32_t n = Chip::compiled_n();
  constexpr uint32_t kBulk = 0x200000, kRows = 4096;
  chip().add_region(kBulk, 2 * kRows * 16, "bulk");
  std::vector<Instr> program;
  for (int i = 0; i < 3; ++i) {
    program.push_back(read_host(0, kRows, kBulk));
    program.push_back(write_host(0, kRows, kBulk + kRows * n));
  }
  program.push_back(halt());
  load_program(program);
  chip().start(kCmdBase, static_cast<uint32_t>(program.size()));
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = chip().run(10'000'000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.reason, StopReason::kDone) << to_string(r.reason) << " err " << r.err_code;
  const double rate = static_cast<double>(r.cycles) / seconds;
  std::printf("[ speed    ] N=%u backpressure=%.1f: %llu cycles in %.3f s = %.0f cycles/s\n", n,
              GetParam(), static_cast<unsigned long long>(r.cycles), seconds, rate);
  RecordProperty("cycles_per_second", std::to_string(static_cast<long long>(rate)));
}

// Needs its own Chip configuration, so it only runs as the first Chip of its process (always
// the case under ctest).
TEST(ChipVcd, DumpsOnlyInsideTheCycleWindow) {
  // Constructing this Chip would make every later test's shared Chip impossible (one per
  // process), so only run when selected on its own (as ctest does).
  if (GTEST_FLAG_GET(filter).find("ChipVcd") == std::string::npos || Chip::constructed())
    GTEST_SKIP() << "needs its own process: run with --gtest_filter=ChipVcd.*";
  const std::string path =
      test_support::temp_dir() + "tpu_sim_window_n" + std::to_string(Chip::compiled_n()) + ".vcd";
  std::remove(path.c_str());
  ChipConfig cfg;
  cfg.vcd_file = path;
  cfg.vcd_from_cycle = 20;
  cfg.vcd_to_cycle = 60;
  cfg.trace_depth = 1;
  {
    Chip chip(cfg);  // reset() in the constructor takes the first ~10 cycles
    chip.add_region(kCmdBase, 0x1000, "commands");
    chip.write_mem(kCmdBase, halt());
    chip.start(kCmdBase, 1);
    EXPECT_EQ(chip.run(100000).reason, StopReason::kDone);
    chip.step(100);
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no VCD at " << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string vcd = text.str();
  EXPECT_NE(vcd.find("$enddefinitions"), std::string::npos);
  EXPECT_NE(vcd.find("clk_i"), std::string::npos);
  // Timestamps are in ps (1 ns clock, rising edges at 250 + 1000k): all inside [20, 60) cycles.
  uint64_t first = UINT64_MAX, last = 0;
  std::istringstream lines(vcd);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > 1 && line[0] == '#') {
      const uint64_t t = std::stoull(line.substr(1));
      first = std::min(first, t);
      last = std::max(last, t);
    }
  }
  ASSERT_NE(first, UINT64_MAX) << "VCD has no timestamps";
  EXPECT_GE(first, 19'000u);
  EXPECT_LE(first, 20'000u);
  EXPECT_LE(last, 60'000u);
  EXPECT_GE(last, 58'000u);
}

}  // namespace
}  // namespace tpu::sim

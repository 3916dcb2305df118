// SPDX-License-Identifier: Apache-2.0
// The training chip (tpu_sim_train_n<N>, VmemRows = TPU_SIM_VMEM_ROWS) against the golden model
// on random programs of the training generator (random_program.h, GenOptions::vmem_rows):
// only the training opcodes the RTL executes (RtlDevice::kRtlTrainingOps) are emitted, the
// others appear as ERR_OPCODE faults on both sides; int8 instructions mixed in. Every byte of
// host memory, UB, ACC and the VMEM window is compared (run_case). Labels rtl;verif;random.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "chip_backend.h"
#include "device_rtl.h"
#include "random_program.h"

namespace {

using namespace tpu::verif;

GenOptions options() {
  GenOptions opt;
  opt.n = TPU_SIM_N;
  opt.vmem_rows = TPU_SIM_VMEM_ROWS;
  opt.train_ops = tpu::RtlDevice::kRtlTrainingOps;
  return opt;
}

struct Backends {
  ChipBackend chip;
  GoldenBackend golden{generate_program(0, options()).params};
};
Backends& backends() {
  static Backends* b = new Backends;  // one Chip per process, never destroyed
  return *b;
}

void run_batch(uint64_t first, uint64_t count, double fault_probability = 0.3,
               bool long_mix = false) {
  auto& b = backends();
  GenOptions opt = options();
  opt.fault_probability = fault_probability;
  opt.long_mix = long_mix;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    const CaseResult r = run_case(b.chip, b.golden, tc);
    if (!r.ok) {
      std::ostringstream s;
      s << mismatch_report(b.chip, b.golden, tc, seed, r.mismatch);
      s << "replay: build/tests/verif/tpu_random_train_n" << TPU_SIM_N << " replay --seed " << seed
        << (long_mix ? " --long-mix" : "") << "\n"
        << describe(tc);
      FAIL() << s.str();
    }
  }
}

TEST(RandomTrainChip, ChipReportsTheGeneratorsVmem) {
  EXPECT_EQ(tpu::sim::Chip::compiled_vmem_rows(), unsigned(TPU_SIM_VMEM_ROWS));
}
// Seeds 27 and 155/310/386 (faults only) at N = 4 once stopped on tpu_vpu's VpuCmdHold
// assertion (an AXI error while a vector instruction waited for the vector unit); the
// assertion was removed from the unit (it held only while the controller kept its command).
TEST(RandomTrainChip, Seeds0To199) { run_batch(0, 200); }
TEST(RandomTrainChip, Seeds200To399) { run_batch(200, 200); }
TEST(RandomTrainChip, FaultsSeeds0To399) { run_batch(0, 400, 1.0); }
// The long-transfer mix (GenOptions::long_mix: hundreds to thousands of VMEM rows per
// transfer, high VMEM and host addresses, all eight DMA windows at random bases and sizes).
// (Seeds 0..1999 at N = 4 and 0..499 at N = 16 passed with tpu_random_train_n<N> --long-mix.)
TEST(RandomTrainChip, LongMixSeeds0To59) { run_batch(0, 60, 0.3, true); }
TEST(RandomTrainChip, LongMixFaultsSeeds0To39) { run_batch(0, 40, 1.0, true); }

// write_vmem hands the host writer chunks of UbRows / 4 VMEM rows (tpu_vmem_dma_out); the
// random windows (at most 256 rows) never reach a second chunk. Here read_vmem and write_vmem
// of 2060 rows (fp32, then back one row further on over the same host bytes, and as bf16 next
// to them) cross the chunk boundary at row 2048; then strided bf16 / fp32 transfers. The host
// memory must match the golden model's byte for byte. The rows fit the data region at N = 4
// only.
TEST(TrainChipCorners, VmemDmaAcrossWriterChunks) {
  constexpr uint32_t kRows = 2060, kChunk = 8192 / 4;
  const uint32_t row_bytes = 4 * TPU_SIM_N, bf16_bytes = 2 * TPU_SIM_N;
  const uint32_t bf16_at = kDataBase + kRows * row_bytes;
  if (uint64_t{kRows} * (row_bytes + bf16_bytes) > kDataSize || TPU_SIM_VMEM_ROWS < 2 * kRows) {
    GTEST_SKIP() << "2060 rows of " << row_bytes << " + " << bf16_bytes
                 << " bytes do not fit the data region at this N";
  }
  static_assert(kRows > kChunk, "the transfer must cross a chunk");
  std::vector<uint8_t> data(kDataSize);
  std::mt19937_64 rng(2060);
  for (auto& b : data) b = uint8_t(rng());
  tpu::ReadVmem in;
  in.vmem_addr = 100;
  in.rows = kRows;
  in.host_addr = kDataBase;
  tpu::WriteVmem back;   // rows 101.. back over the same bytes,
  back.vmem_addr = 101;  // (one row further on: every host row changes)
  back.rows = kRows - 1;
  back.host_addr = kDataBase;
  tpu::WriteVmem half;  // bf16, right behind
  half.bf16 = true;
  half.vmem_addr = 100;
  half.rows = kRows;
  half.host_addr = bf16_at;
  tpu::ReadVmem strided;  // bf16 rows 48 bytes apart (a host stride, one transfer per row)
  strided.bf16 = true;
  strided.vmem_addr = 4000;
  strided.rows = 257;
  strided.host_addr = kDataBase;
  strided.host_stride = 48;
  tpu::WriteVmem strided_out;  // and back as fp32 rows 32 bytes apart, over the bf16 copy
  strided_out.vmem_addr = 4000;
  strided_out.rows = 257;
  strided_out.host_addr = bf16_at;
  strided_out.host_stride = row_bytes + 16;
  const std::vector<tpu::Instruction> program = {in,          back,    tpu::Sync{}, half,
                                                 tpu::Sync{}, strided, strided_out, tpu::Halt{}};
  auto& b = backends();
  RunConfig cfg;
  cfg.mem_bytes_per_cycle = 0;
  const std::vector<std::pair<uint32_t, std::vector<uint8_t>>> mem = {{kDataBase, data}};
  const Outcome g = b.golden.run(mem, cfg, program);
  const Outcome c = b.chip.run(mem, cfg, program);
  ASSERT_TRUE(g.done) << b.golden.last_message();
  ASSERT_TRUE(c.done) << (c.hung ? "hung" : tpu::error_name(tpu::ErrorCode(c.err_code)));
  ASSERT_EQ(c.data.size(), g.data.size());
  size_t first = 0;
  while (first < g.data.size() && c.data[first] == g.data[first]) ++first;
  EXPECT_EQ(first, g.data.size()) << "first differing host byte: data + " << first << " (row "
                                  << first / row_bytes << " of the fp32 rows)";
  EXPECT_NE(g.data, data) << "the program changed no host byte";
}

// The VMEM port (docs/architecture.md "The VMEM port") faults with the named AXI codes at the
// instruction's index: SLVERR on a row of a read_vmem (ERR_AXI_READ) or write_vmem
// (ERR_AXI_WRITE), SLVERR on bytes outside every row but inside a beat-aligned block that
// holds row bytes (the port reads / writes those blocks: docs/isa.md "The VMEM port"), and
// DECERR from unmapped memory; a failing instruction after valid ones, then the same chip runs
// a valid program (no state left from the drained bursts). Chip and golden model agree on the
// code and index in every case.
TEST(TrainChipCorners, VmemPortErrorsFaultAtTheInstruction) {
  const uint32_t beat = 4 * TPU_SIM_N, row = 4 * TPU_SIM_N;
  struct Case {
    const char* what;
    bool write;
    uint32_t host_addr, stride, err_at;
    uint32_t code;
    bool outside;  // the SLVERR bytes lie outside every row
  };
  const uint32_t base = kDataBase + 0x2000 + 16;  // rows straddle beats (at N >= 8)
  const uint32_t out = kOutBase + 0x1000 + 16;
  const std::vector<Case> cases = {
      {"SLVERR on a read_vmem row", false, base, 0, base + 5 * row, 9, false},
      {"SLVERR on a write_vmem row", true, out, 0, out + 3 * row + 16, 10, false},
      // Strided rows 2 beats apart: the byte block just before row 2 is in its first beat.
      {"SLVERR in a read_vmem beat outside the rows", false, base, 2 * beat + 16,
       base + 2 * (2 * beat + 16) - 16, 9, true},
      {"SLVERR in a write_vmem beat outside the rows", true, out, 2 * beat + 16,
       out + 2 * (2 * beat + 16) + row, 10, true},
      {"DECERR on read_vmem", false, kUnmapped + 16, 0, 0, 9, false},
      {"DECERR on write_vmem", true, kUnmapped + 32, 0, 0, 10, false},
  };
  auto& b = backends();
  std::vector<uint8_t> data(kDataSize);
  std::mt19937_64 rng(33);
  for (auto& x : data) x = uint8_t(rng());
  const std::vector<std::pair<uint32_t, std::vector<uint8_t>>> mem = {{kDataBase, data}};
  for (const Case& k : cases) {
    if (k.outside && beat <= 16) continue;  // N = 4: a beat is one 16-byte block
    tpu::ReadVmem warm;                     // a valid transfer first
    warm.vmem_addr = 0;
    warm.rows = 40;
    warm.host_addr = kDataBase + 16;
    tpu::VmemDma d;
    d.vmem_addr = 64;
    d.rows = 8;
    d.host_addr = k.host_addr;
    d.host_stride = k.stride;
    std::vector<tpu::Instruction> program = {warm};
    if (k.write)
      program.push_back(tpu::WriteVmem{d});
    else
      program.push_back(tpu::ReadVmem{d});
    program.push_back(tpu::Halt{});
    RunConfig cfg;
    if (k.err_at != 0) cfg.slverr.push_back({k.err_at, 16});
    const Outcome g = b.golden.run(mem, cfg, program);
    const Outcome c = b.chip.run(mem, cfg, program);
    EXPECT_FALSE(g.done) << k.what;
    EXPECT_EQ(g.err_code, k.code) << k.what << ": " << b.golden.last_message();
    EXPECT_EQ(g.err_pc, 1u) << k.what;
    EXPECT_FALSE(c.hung) << k.what;
    EXPECT_EQ(c.err_code, g.err_code) << k.what;
    EXPECT_EQ(c.err_pc, g.err_pc) << k.what;
    // The chip works normally afterwards.
    tpu::WriteVmem w;
    w.vmem_addr = 0;
    w.rows = 40;
    w.host_addr = kOutBase + 48;
    const std::vector<tpu::Instruction> ok = {warm, w, tpu::Halt{}};
    const Outcome g2 = b.golden.run(mem, RunConfig{}, ok);
    const Outcome c2 = b.chip.run(mem, RunConfig{}, ok);
    ASSERT_TRUE(g2.done) << b.golden.last_message();
    EXPECT_TRUE(c2.done) << k.what << ": then " << tpu::error_name(tpu::ErrorCode(c2.err_code));
    EXPECT_EQ(c2.out, g2.out) << k.what;
  }
}

}  // namespace

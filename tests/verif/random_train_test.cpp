// SPDX-License-Identifier: Apache-2.0
// The random generator in the training configuration, checked on the golden model alone (no
// RTL; labels verif;random): every valid case runs to its halt, every planted training fault
// is reported with the code and index the generator aimed at, the dump program reads the VMEM
// window back bit for bit, and over a batch the coverage counters of random_coverage.cpp
// that the generator promises (required_coverage) are all hit. Also: the int8 generator still
// gives exactly the programs it gave before the training instructions were added (a digest
// of the cases of fixed seeds, taken with the generator of main 1b9a596).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "random_program.h"

namespace {

using namespace tpu;
using namespace tpu::verif;

uint64_t case_digest(const TestCase& tc, uint64_t h) {
  const std::string d = describe(tc);
  h = fnv1a(h, d.data(), d.size());
  for (const auto& [addr, bytes] : tc.memory) {
    h = fnv1a(h, &addr, sizeof addr);
    h = fnv1a(h, bytes.data(), bytes.size());
  }
  const std::vector<uint8_t> prog = encode_program(tc.program);
  return fnv1a(h, prog.data(), prog.size());
}

uint64_t int8_digest(uint32_t n, bool axi_pairs) {
  GenOptions opt;
  opt.n = n;
  opt.axi_pairs = axi_pairs;
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint64_t seed = 0; seed < 300; ++seed) h = case_digest(generate_program(seed, opt), h);
  return h;
}

TEST(RandomTrain, Int8ProgramsUnchanged) {
  // Seeds 0..299 with the generator before the training instructions (main 1b9a596).
  EXPECT_EQ(int8_digest(16, false), 0x4ebe73357f38c5abull) << std::hex << int8_digest(16, false);
  EXPECT_EQ(int8_digest(4, false), 0x5a0ff6dfecd512f6ull) << std::hex << int8_digest(4, false);
  EXPECT_EQ(int8_digest(16, true), 0x94ec50c1ef71e7f1ull) << std::hex << int8_digest(16, true);
}

struct Batch {
  int kinds[4] = {0, 0, 0, 0};
  int planted = 0;
  Coverage cov;
};

// Runs seeds [first, first + count) of the training generator on the golden model.
void run_batch(uint32_t n, uint64_t first, uint64_t count, Batch& b, uint32_t train_ops = 0x7F,
               double fault_probability = 0.3, bool long_mix = false) {
  GenOptions opt;
  opt.n = n;
  opt.long_mix = long_mix;
  opt.fault_probability = fault_probability;
  opt.vmem_rows = ChipParams::kTrainingVmemRows;
  opt.train_ops = train_ops;
  GoldenBackend golden(generate_program(first, opt).params);
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    ++b.kinds[int(tc.kind)];
    const Outcome g = golden.run(tc.memory, tc.config, tc.program);
    if (tc.kind == CaseKind::kValid) {
      ASSERT_TRUE(g.done) << "seed " << seed << ": " << golden.last_message() << "\n"
                          << describe(tc);
    }
    if (tc.kind == CaseKind::kStaticFault && tc.expect_error != ErrorCode::ERR_NONE) {
      ++b.planted;
      ASSERT_EQ(error_name(ErrorCode(g.err_code)), error_name(tc.expect_error))
          << "seed " << seed << " (" << tc.fault << "): " << golden.last_message() << "\n"
          << describe(tc);
      ASSERT_EQ(g.err_pc, tc.expect_pc) << "seed " << seed << ": " << golden.last_message();
    }
    cover_case(tc, g, b.cov);
    if (!g.done && g.err_code != uint32_t(ErrorCode::ERR_AXI_READ) &&
        g.err_code != uint32_t(ErrorCode::ERR_AXI_WRITE) && seed % 4 != 0)
      continue;
    if (!g.done && (g.err_code == uint32_t(ErrorCode::ERR_AXI_READ) ||
                    g.err_code == uint32_t(ErrorCode::ERR_AXI_WRITE)))
      continue;
    // The dump run reads the VMEM window back bit for bit.
    const DumpProgram d = build_dump_program(tc, golden.model());
    const std::vector<uint32_t> want = golden.model().vmem_rows(tc.vmem_base, tc.vmem_rows);
    RunConfig plain = tc.config;
    plain.windows = DmaWindows{};
    plain.slverr.clear();
    plain.high_region = false;
    const Outcome g2 = golden.run(d.memory, plain, d.program);
    ASSERT_TRUE(g2.done) << "seed " << seed << ": dump: " << golden.last_message();
    ASSERT_GE(g2.vmem.size(), want.size() * 4);
    ASSERT_EQ(std::memcmp(g2.vmem.data(), want.data(), want.size() * 4), 0) << "seed " << seed;
  }
}

void expect_covered(const Batch& b, uint32_t n, bool faults) {
  std::vector<std::string> missing;
  for (const std::string& key : required_coverage(n, faults)) {
    if (b.cov.count(key) == 0) missing.push_back(key);
  }
  std::ostringstream s;
  for (const auto& m : missing) s << " " << m;
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << required_coverage(n, faults).size()
                               << " counters not hit:" << s.str();
  EXPECT_GT(b.kinds[int(CaseKind::kValid)], 0);
  if (faults) EXPECT_GT(b.planted, 100);
}

// The default mix (30 % faults), then only fault cases (every training fault).
TEST(RandomTrain, GoldenSelfCheckAndCoverageN16) {
  Batch b;
  run_batch(16, 0, 400, b);
  expect_covered(b, 16, false);
  run_batch(16, 0, 600, b, 0x7F, 1.0);
  expect_covered(b, 16, true);
}

TEST(RandomTrain, GoldenSelfCheckAndCoverageN4) {
  Batch b;
  run_batch(4, 0, 800, b);
  expect_covered(b, 4, false);
  run_batch(4, 0, 600, b, 0x7F, 1.0);
  expect_covered(b, 4, true);
}

// The long-transfer mix (GenOptions::long_mix) on the golden model: valid cases halt, planted
// faults give their codes (the random DMA windows leave them outside every window), the VMEM
// window reads back; and the mix does what it is for: windows of >= 256 rows, half of them at
// the top rows of VMEM, read_vmem / write_vmem of hundreds of rows, host addresses at the top
// of the address space, all eight DMA windows enabled with bases and sizes that set every bit.
TEST(RandomTrain, LongMixGoldenSelfCheck) {
  for (const uint32_t n : {4u, 16u}) {
    Batch b;
    run_batch(n, 0, 100, b, 0x7F, 0.3, true);
    run_batch(n, 0, 60, b, 0x7F, 1.0, true);
    EXPECT_GT(b.planted, 20) << "N = " << n;
    GenOptions opt;
    opt.n = n;
    opt.vmem_rows = ChipParams::kTrainingVmemRows;
    opt.long_mix = true;
    const uint32_t most = kDumpVmemSize / (4 * n);
    int top = 0, long_dma = 0, high = 0, all_windows = 0;
    uint32_t base_or = 0, size_or = 0, base_and = ~0u;
    for (uint64_t seed = 0; seed < 150; ++seed) {
      const TestCase tc = generate_program(seed, opt);
      ASSERT_GE(tc.vmem_rows, 256u) << "seed " << seed;
      ASSERT_LE(tc.vmem_rows, most) << "seed " << seed;
      top += tc.vmem_base + tc.vmem_rows == opt.vmem_rows;
      int enabled = 0;
      for (const DmaWindow& w : tc.config.windows) {
        if (w.size == 0) continue;
        ++enabled;
        base_or |= w.base;
        base_and &= w.base;
        size_or |= w.size;
        ASSERT_FALSE(kSpareBase >= w.base && kSpareBase - w.base < uint64_t{w.size}) << seed;
        ASSERT_FALSE(kOutBase + kOutSize >= w.base && kOutBase + kOutSize - w.base < w.size)
            << "seed " << seed;
      }
      all_windows += enabled == kNumDmaWindows;
      for (const Instruction& in : tc.program) {
        const VmemDma* d = std::get_if<ReadVmem>(&in);
        if (d == nullptr) d = std::get_if<WriteVmem>(&in);
        if (d == nullptr) continue;
        long_dma += d->rows >= 256;
        high += d->host_addr >= kHighBase;
      }
    }
    EXPECT_GT(top, 50) << "N = " << n;
    EXPECT_GT(long_dma, 150) << "N = " << n;
    EXPECT_GT(high, 150) << "N = " << n;
    EXPECT_GT(all_windows, 80) << "N = " << n;
    EXPECT_EQ(base_or, ~0u) << std::hex << base_or;
    EXPECT_EQ(base_and, 0u) << std::hex << base_and;
    EXPECT_EQ(size_or, ~0u) << std::hex << size_or;
  }
}

// Restricted to some opcodes (a chip that implements only those): nothing else is emitted.
TEST(RandomTrain, TrainOpsRestrictTheOpcodes) {
  GenOptions opt;
  opt.n = 16;
  opt.vmem_rows = ChipParams::kTrainingVmemRows;
  opt.train_ops = train_op_bit(Opcode::ReadVmem) | train_op_bit(Opcode::WriteVmem) |
                  train_op_bit(Opcode::Vector);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    for (size_t i = 0; i < tc.program.size(); ++i) {
      const uint8_t op = opcode_byte(tc.program[i]);
      // (raw words: planted faults and junk after the halt, never executed)
      if (!is_training_opcode(op) || std::holds_alternative<RawInstruction>(tc.program[i]))
        continue;
      EXPECT_TRUE((opt.train_ops & train_op_bit(Opcode(op))) != 0)
          << "seed " << seed << " index " << i << ": " << disassemble(tc.program[i]);
    }
  }
  Batch b;
  run_batch(16, 1000, 100, b, opt.train_ops);
}

// The generator is a pure function of the seed in the training configuration too.
TEST(RandomTrain, GeneratorIsReproducible) {
  GenOptions opt;
  opt.n = 16;
  opt.vmem_rows = 4096;
  for (uint64_t seed : {0ull, 5ull, 99ull}) {
    const TestCase a = generate_program(seed, opt), b = generate_program(seed, opt);
    EXPECT_EQ(describe(a), describe(b));
    EXPECT_EQ(a.memory, b.memory);
    EXPECT_EQ(a.params.vmem_rows, 4096u);
  }
}

// A summary of the coverage counters (printed; TPU_TRAIN_COVERAGE_SEEDS=K for K seeds).
TEST(RandomTrain, PrintCoverage) {
  const char* env = std::getenv("TPU_TRAIN_COVERAGE_SEEDS");
  if (env == nullptr) GTEST_SKIP() << "set TPU_TRAIN_COVERAGE_SEEDS to print the counters";
  Batch b;
  run_batch(16, 0, std::strtoull(env, nullptr, 10), b);
  for (const auto& [k, v] : b.cov)
    std::printf("%-40s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
}

}  // namespace

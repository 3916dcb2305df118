// SPDX-License-Identifier: Apache-2.0
// The random generator's depthwise knob (GenOptions::dw_width, docs/isa.md "Depthwise
// configuration") on the golden model alone (no chip has the unit yet; labels verif;random):
// programs with dwconv run to their halt, every planted dwconv fault is reported with the code
// and index the generator aimed at, and with the knob at 0 the seeds give the programs they
// gave before it existed (the digests of random_train_test's Int8ProgramsUnchanged).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "random_program.h"

namespace {

using namespace tpu;
using namespace tpu::verif;

uint64_t int8_digest(const GenOptions& opt) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    const std::string d = describe(tc);
    h = fnv1a(h, d.data(), d.size());
    for (const auto& [addr, bytes] : tc.memory) {
      h = fnv1a(h, &addr, sizeof addr);
      h = fnv1a(h, bytes.data(), bytes.size());
    }
    const std::vector<uint8_t> prog = encode_program(tc.program);
    h = fnv1a(h, prog.data(), prog.size());
  }
  return h;
}

TEST(RandomDw, KnobOffGivesTheSamePrograms) {
  GenOptions opt;
  opt.n = 16;
  opt.dw_width = 0;
  EXPECT_EQ(int8_digest(opt), 0x4ebe73357f38c5abull);
  opt.n = 4;
  EXPECT_EQ(int8_digest(opt), 0x5a0ff6dfecd512f6ull);
}

void run_batch(uint32_t n, uint32_t width, double fault_probability) {
  GenOptions opt;
  opt.n = n;
  opt.dw_width = width;
  opt.fault_probability = fault_probability;
  GoldenBackend golden(generate_program(0, opt).params);
  int dwconvs = 0, planted = 0, valid = 0;
  std::map<ErrorCode, int> codes;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    ASSERT_EQ(tc.params.dw_width, width);
    for (const Instruction& in : tc.program) dwconvs += std::holds_alternative<DwConv>(in);
    const Outcome g = golden.run(tc.memory, tc.config, tc.program);
    if (tc.kind == CaseKind::kValid) {
      ++valid;
      ASSERT_TRUE(g.done) << "seed " << seed << ": " << golden.last_message() << "\n"
                          << describe(tc);
    }
    if (tc.kind == CaseKind::kStaticFault && tc.expect_error != ErrorCode::ERR_NONE) {
      ++planted;
      ++codes[tc.expect_error];
      ASSERT_EQ(error_name(ErrorCode(g.err_code)), error_name(tc.expect_error))
          << "seed " << seed << " (" << tc.fault << "): " << golden.last_message() << "\n"
          << describe(tc);
      ASSERT_EQ(g.err_pc, tc.expect_pc) << "seed " << seed << ": " << golden.last_message();
    }
  }
  EXPECT_GT(dwconvs, 300);
  if (fault_probability < 1.0) EXPECT_GT(valid, 100);
  if (fault_probability == 1.0) {
    EXPECT_GT(planted, 30);
    EXPECT_GT(codes[ErrorCode::ERR_FIELD], 0);
    EXPECT_GT(codes[ErrorCode::ERR_UB_RANGE], 0);
    EXPECT_GT(codes[ErrorCode::ERR_ACC_RANGE], 0);
  }
}

TEST(RandomDw, GoldenRunsTheDwconvProgramsN16) {
  run_batch(16, 4, 0.3);
  run_batch(16, 1, 1.0);
}

TEST(RandomDw, GoldenRunsTheDwconvProgramsN4) {
  run_batch(4, 2, 0.3);
  run_batch(4, 8, 1.0);
}

}  // namespace

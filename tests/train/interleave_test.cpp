// SPDX-License-Identifier: Apache-2.0
// Instruction placement inside an emitted job (driver/train/compiler/interleave.h).
#include "compiler/interleave.h"

#include <gtest/gtest.h>

#include <string>

namespace tpu::train::test {
namespace {

using namespace compiler;

// v, then per group a load_weights and `per` matmuls, `groups` times.
std::vector<Instruction> job(size_t groups, size_t per) {
  std::vector<Instruction> c{Vector{}};
  for (size_t g = 0; g < groups; ++g) {
    c.push_back(LoadWeights{});
    for (size_t k = 0; k < per; ++k) c.push_back(MatmulBf16{});
  }
  return c;
}

// 4 reads over 16 matmuls after the first (index 2): the first right after it, the others
// after matmuls 4, 8 and 12 of the 16 (each a quarter of them later than the one before).
TEST(TrainInterleave, SpreadReadsEvenlyOverTheMatmuls) {
  const std::vector<Instruction> c = job(17, 1);  // v, (lw, mm) x 17: matmuls at 2, 4, ..., 34
  const std::vector<size_t> at = spread_reads(c, 2, 4);
  ASSERT_EQ(at.size(), 4u);
  EXPECT_EQ(at[0], 2u);
  EXPECT_EQ(at[1], 2u + 2 * 5);  // the matmuls after index 2 are 4, 6, ..., 34: #4 is at 12
  EXPECT_EQ(at[2], 2u + 2 * 9);
  EXPECT_EQ(at[3], 2u + 2 * 13);
  for (size_t r = 1; r < at.size(); ++r) {
    EXPECT_TRUE(std::holds_alternative<MatmulBf16>(c[at[r]])) << r;
  }
}

// More reads than matmuls: nondecreasing, each after `from` or a matmul, never past the end;
// no matmul after `from`: all at `from`; no reads: none.
TEST(TrainInterleave, SpreadReadsEdgeCases) {
  const std::vector<Instruction> c = job(1, 3);  // v, lw, mm, mm, mm
  const std::vector<size_t> at = spread_reads(c, 2, 7);
  ASSERT_EQ(at.size(), 7u);
  EXPECT_EQ(at[0], 2u);
  for (size_t r = 1; r < at.size(); ++r) {
    EXPECT_GE(at[r], at[r - 1]) << r;
    EXPECT_LT(at[r], c.size()) << r;
    EXPECT_TRUE(std::holds_alternative<MatmulBf16>(c[at[r]])) << r;
  }
  EXPECT_EQ(at.back(), 4u);
  EXPECT_EQ(spread_reads(c, 4, 3), (std::vector<size_t>{4, 4, 4}));
  EXPECT_TRUE(spread_reads(c, 2, 0).empty());
}

Vector vec(uint16_t dst, uint8_t rows) {
  Vector v;
  v.dst = dst;
  v.inner = rows;
  return v;
}
MatmulBf16 mm(uint16_t vmem, uint16_t acc, uint16_t rows) {
  MatmulBf16 m;
  m.vmem_addr = vmem;
  m.acc_addr = acc;
  m.inner = rows;
  return m;
}
LoadWeights lw(uint16_t vmem) {
  LoadWeights l;
  l.vmem_addr = vmem;
  l.rows = 16;
  return l;
}
AccToVmem acc_out(uint16_t acc, uint16_t vmem, uint32_t rows) {
  AccToVmem a;
  a.acc_addr = acc;
  a.vmem_addr = vmem;
  a.rows = rows;
  return a;
}
// The kinds of a list, in order: 'v' vector, 'l' load_weights, 'm' matmul_bf16, 'a'
// acc_to_vmem, 'w' write_vmem.
std::string kinds(const std::vector<Instruction>& v) {
  std::string s;
  for (const Instruction& i : v) {
    s += std::holds_alternative<Vector>(i)        ? 'v'
         : std::holds_alternative<LoadWeights>(i) ? 'l'
         : std::holds_alternative<MatmulBf16>(i)  ? 'm'
         : std::holds_alternative<AccToVmem>(i)   ? 'a'
         : std::holds_alternative<WriteVmem>(i)   ? 'w'
                                                  : '?';
  }
  return s;
}

// A ConvPool job's tail (the last matmul, the writes of the job before, the last acc_to_vmem,
// the pool's vector passes) and the next job's loads and first matmul: the loads and matmul go
// right after the last matmul (they read other rows; ACC rows 0-31 against the move's 32-63).
TEST(TrainInterleave, HoistMatmulsAheadOfThePool) {
  const std::vector<Instruction> in{mm(500, 32, 32), WriteVmem{}, acc_out(32, 100, 32),
                                    vec(200, 32),    vec(232, 8), lw(900),
                                    mm(500, 0, 32),  lw(900),     acc_out(0, 100, 32)};
  EXPECT_EQ(kinds(hoist_matmuls(in)), "mlmlwavva");
  // A vector pass writing a row the matmul reads stays ahead of it, and so does all before it.
  std::vector<Instruction> dep = in;
  dep[4] = vec(510, 1);
  EXPECT_EQ(kinds(hoist_matmuls(dep)), "mwavvlmla");
  // One writing a row the second load reads: the loads and matmul jump only what follows it.
  dep = in;
  dep[3] = vec(905, 1);
  EXPECT_EQ(kinds(hoist_matmuls(dep)), "mwavlmlva");
  // The acc_to_vmem reading ACC rows the matmul writes stays ahead of it; the passes after it
  // are jumped.
  dep = in;
  dep[2] = acc_out(16, 100, 32);
  EXPECT_EQ(kinds(hoist_matmuls(dep)), "mwalmlvva");
  // No vector pass in the run: nothing moves (only the pool's passes wait for the move).
  const std::vector<Instruction> plain{mm(500, 32, 32), acc_out(32, 100, 32), lw(900),
                                       mm(500, 0, 32)};
  EXPECT_EQ(kinds(hoist_matmuls(plain)), "malm");
  // Only loads after the passes (no matmul): nothing moves.
  const std::vector<Instruction> loads{vec(200, 4), lw(900), acc_out(0, 100, 4)};
  EXPECT_EQ(kinds(hoist_matmuls(loads)), "vla");
}

}  // namespace
}  // namespace tpu::train::test

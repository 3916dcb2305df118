// SPDX-License-Identifier: Apache-2.0
// Instruction placement inside an emitted job (driver/train/compiler/interleave.h).
#include "compiler/interleave.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tpu::train::test

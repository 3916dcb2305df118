// SPDX-License-Identifier: Apache-2.0
// exp, log, rcp, rsqrt, sqrt as vector-unit sequences: the error bound of docs/isa.md over a
// dense sample of every domain (every input in the slow test, fp_slow_test.cpp), and the
// special values the sequences are documented to give.
#include <gtest/gtest.h>

#include <cmath>

#include "fp.h"
#include "fp_error.h"
#include "fp_sequences.h"

namespace tpu {
namespace {

uint32_t eval(FpFunction f, float x) { return eval_sequence(fp_sequence(f), fp::bits_of(x)); }

TEST(FpFunctions, ErrorWithinTheDocumentedBoundDenseSample) {
  for (const fp_error::FunctionSpec& s : fp_error::specs()) {
    const fp_error::Worst w = fp_error::measure(s, 8191);
    EXPECT_LE(w.ulp, s.bound_ulp) << fp_sequence(s.f).name << " at 0x" << std::hex << w.x;
    EXPECT_GT(w.points, 50000u);
    std::printf("%s: max %.3f ulp over %llu inputs (at 0x%08x)\n",
                std::string(fp_sequence(s.f).name).c_str(), w.ulp,
                static_cast<unsigned long long>(w.points), w.x);
  }
}

TEST(FpFunctions, SpecialValues) {
  using fp::kCanonicalNaN;
  EXPECT_EQ(eval(FpFunction::Exp, 0.0f), fp::kOne);
  EXPECT_EQ(eval(FpFunction::Exp, -0.0f), fp::kOne);
  EXPECT_EQ(eval(FpFunction::Exp, 100.0f), fp::kPosInf);
  EXPECT_EQ(eval(FpFunction::Exp, INFINITY), fp::kPosInf);
  EXPECT_EQ(eval(FpFunction::Exp, -100.0f), fp::kPosZero);
  EXPECT_EQ(eval(FpFunction::Exp, -INFINITY), fp::kPosZero);
  EXPECT_EQ(eval(FpFunction::Exp, NAN), kCanonicalNaN);
  EXPECT_EQ(eval(FpFunction::Log, 1.0f), fp::kPosZero);
  EXPECT_EQ(eval(FpFunction::Rcp, 1.0f), fp::kOne);
  EXPECT_EQ(eval(FpFunction::Rcp, -4.0f), fp::bits_of(-0.25f));
  EXPECT_EQ(eval(FpFunction::Rsqrt, 4.0f), fp::bits_of(0.5f));
  EXPECT_EQ(eval(FpFunction::Sqrt, 0.0f), fp::kPosZero);
  EXPECT_EQ(eval(FpFunction::Sqrt, 1e-45f), fp::kPosZero);  // subnormal: read as 0
  EXPECT_EQ(eval(FpFunction::Sqrt, 16.0f), fp::bits_of(4.0f));
  // rcp is odd: the result of -x is the result of x with the sign set.
  for (float x : {3.0f, 7.5e-20f, 1.2e30f, 0.1f}) {
    EXPECT_EQ(eval(FpFunction::Rcp, -x), eval(FpFunction::Rcp, x) | fp::kSignBit) << x;
  }
}

TEST(FpFunctions, SequenceLengths) {
  // The vector instructions per tensor (docs/isa.md): training's cost model counts on them.
  EXPECT_EQ(fp_sequence(FpFunction::Exp).steps.size(), 31u);
  EXPECT_EQ(fp_sequence(FpFunction::Log).steps.size(), 29u);
  EXPECT_EQ(fp_sequence(FpFunction::Rcp).steps.size(), 18u);
  EXPECT_EQ(fp_sequence(FpFunction::Rsqrt).steps.size(), 21u);
  EXPECT_EQ(fp_sequence(FpFunction::Sqrt).steps.size(), 23u);
}

}  // namespace
}  // namespace tpu

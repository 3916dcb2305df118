// SPDX-License-Identifier: Apache-2.0
// Label `slow` (tests/driver/CMakeLists.txt): every fp32 input. The conversions against the
// native-float reference, and the function sequences' error over their whole domains.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fp.h"
#include "fp_error.h"
#include "fp_reference.h"

namespace tpu {
namespace {

using namespace fp::reference;

TEST(FpSlow, Fp32ToBf16AndInt32AllValues) {
  uint64_t bad = 0;
  for (uint64_t x = 0; x < (uint64_t{1} << 32); ++x) {
    const auto v = static_cast<uint32_t>(x);
    if (fp::to_bf16(v) != rto_bf16(v) || fp::to_int32(v) != rto_int(v)) ++bad;
  }
  EXPECT_EQ(bad, 0u);
}

// TPU_FP_SWEEP_STEP=k measures every k-th input instead (docs/isa.md quotes k = 17);
// TPU_FP_SWEEP_THREADS=t threads (default 2, the machine's cores).
uint64_t env_number(const char* name, uint64_t fallback) {
  const char* env = std::getenv(name);
  const uint64_t k = env != nullptr ? std::strtoull(env, nullptr, 10) : fallback;
  return k == 0 ? fallback : k;
}

// `domains` empty: the function's whole domain (fp_error.h).
void sweep(FpFunction f, const std::vector<fp_error::Domain>& domains = {}) {
  fp_error::FunctionSpec s = fp_error::spec(f);
  if (!domains.empty()) s.domains = domains;
  const uint64_t step = env_number("TPU_FP_SWEEP_STEP", 1);
  const auto threads = static_cast<unsigned>(env_number("TPU_FP_SWEEP_THREADS", 2));
  const auto t0 = std::chrono::steady_clock::now();
  const fp_error::Worst w = fp_error::measure(s, step, threads);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LE(w.ulp, s.bound_ulp) << fp_sequence(f).name << " at 0x" << std::hex << w.x;
  uint64_t domain = 0;
  for (const fp_error::Domain& d : s.domains) domain += uint64_t{d.hi} - d.lo + 1;
  EXPECT_EQ(w.points, step == 1 ? domain : w.points) << "every pattern of the domain";
  std::printf("%s: max %.4f ulp at 0x%08x (%.9g) over %llu inputs, step %llu, %u threads, %.1f s\n",
              std::string(fp_sequence(f).name).c_str(), w.ulp, w.x,
              static_cast<double>(fp::float_of(w.x)), static_cast<unsigned long long>(w.points),
              static_cast<unsigned long long>(step), threads, sec);
}

TEST(FpSlow, ExpErrorEveryInput) { sweep(FpFunction::Exp); }
TEST(FpSlow, LogErrorEveryInput) { sweep(FpFunction::Log); }
TEST(FpSlow, RcpErrorEveryInput) { sweep(FpFunction::Rcp); }
TEST(FpSlow, RsqrtErrorEveryInput) { sweep(FpFunction::Rsqrt); }
TEST(FpSlow, SqrtErrorEveryInput) { sweep(FpFunction::Sqrt); }

// rsqrt and sqrt scale exactly: x * 4 gives y / 2 (rsqrt) or y * 2 (sqrt) in every step, as
// long as no intermediate leaves the normal range, so [1, 4) and the two binade pairs at the
// ends of the domain (where an intermediate could) hold every error there is. Every input of
// those (3 * 2^24 each; seconds, where the whole domain takes an hour of CPU).
const std::vector<fp_error::Domain> kEdgeAndUnitBinades = {
    {0x00800000, 0x017FFFFF}, {0x3F800000, 0x407FFFFF}, {0x7E800000, 0x7F7FFFFF}};
// The scaling itself, on every 257th input of [1, 4) times every 4^k between the edge binades:
// the result's pattern moves by -k (rsqrt) or +k (sqrt) binades and nothing else changes.
void expect_exact_scaling(FpFunction f, int sign) {
  const FpSequence& seq = fp_sequence(f);
  uint64_t checked = 0, bad = 0;
  for (uint32_t x = 0x3F800000; x < 0x40800000; x += 257) {
    const uint32_t y = eval_sequence(seq, x);
    for (int k = -62; k <= 62; ++k) {  // x * 4^k in [2^-124, 2^126)
      const auto xk = static_cast<uint32_t>(int64_t{x} + int64_t{k} * (2 << 23));
      const auto yk = static_cast<uint32_t>(int64_t{y} + int64_t{sign} * k * (1 << 23));
      ++checked;
      if (eval_sequence(seq, xk) != yk) ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << fp_sequence(f).name << ": of " << checked;
}
TEST(FpSlow, RsqrtErrorEveryInputOfTheUnitAndEdgeBinades) {
  expect_exact_scaling(FpFunction::Rsqrt, -1);
  sweep(FpFunction::Rsqrt, kEdgeAndUnitBinades);
}
TEST(FpSlow, SqrtErrorEveryInputOfTheUnitAndEdgeBinades) {
  expect_exact_scaling(FpFunction::Sqrt, 1);
  sweep(FpFunction::Sqrt, kEdgeAndUnitBinades);
}

}  // namespace
}  // namespace tpu

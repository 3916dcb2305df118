// SPDX-License-Identifier: Apache-2.0
// Label `slow` (tests/driver/CMakeLists.txt): every fp32 input. The conversions against the
// native-float reference, and the function sequences' error over their whole domains.
#include <gtest/gtest.h>

#include <cstdlib>

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

// TPU_FP_SWEEP_STEP=k measures every k-th input instead (docs/isa.md quotes k = 17).
uint64_t sweep_step() {
  const char* env = std::getenv("TPU_FP_SWEEP_STEP");
  const uint64_t k = env != nullptr ? std::strtoull(env, nullptr, 10) : 1;
  return k == 0 ? 1 : k;
}

TEST(FpSlow, FunctionErrorEveryInput) {
  for (const fp_error::FunctionSpec& s : fp_error::specs()) {
    const fp_error::Worst w = fp_error::measure(s, sweep_step());
    EXPECT_LE(w.ulp, s.bound_ulp) << fp_sequence(s.f).name;
    std::printf("%s: max %.3f ulp over %llu inputs (at 0x%08x)\n",
                std::string(fp_sequence(s.f).name).c_str(), w.ulp,
                static_cast<unsigned long long>(w.points), w.x);
  }
}

}  // namespace
}  // namespace tpu

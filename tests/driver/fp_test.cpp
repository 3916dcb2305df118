// SPDX-License-Identifier: Apache-2.0
// The bit-level float numerics (driver/fp.h) against an independent reference built on the
// host's native arithmetic, as docs/isa.md "Floating point" says: one operation in double,
// then one rounding to 24 bits with an unbounded exponent (scaling by 2^64 keeps the value in
// float's normal range), with DAZ, FTZ and the canonical NaN applied by bit tests around it.
// Built with -ffp-contract=off and without -ffast-math (driver/CMakeLists.txt).
#include "fp.h"

#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fp_reference.h"

namespace tpu::fp {
namespace {

using namespace reference;

// ---- inputs: every corner class, plus random patterns

std::vector<uint32_t> corners() {
  std::vector<uint32_t> v = {
      0x00000000, 0x80000000,                          // zeros
      0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF,  // subnormals
      0x00400000, 0x80400000,                          //
      0x00800000, 0x80800000, 0x00800001, 0x00FFFFFF,  // smallest normals
      0x01000000, 0x0B800000, 0x1F800000,              // tiny normals (products underflow)
      0x3F800000, 0xBF800000, 0x3F800001, 0x3F7FFFFF,  // around 1
      0x33800000, 0x33800001, 0x34000000, 0xB3800000,  // 2^-24 (ties against 1)
      0x3F000000, 0x40000000, 0x40400000, 0xC0400000,  //
      0x4B000000, 0x4B000001, 0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001,  // int range
      0x3EFFFFFF, 0x3F000001, 0x3FC00000, 0x40200000,  // around 0.5, 1.5, 2.5 (f2i ties)
      0x5F000000, 0x7E800000, 0x7F000000, 0x7F7FFFFF, 0xFF7FFFFF,  // huge (overflow)
      0x7F7F8000, 0x7F7F7FFF, 0x7F7FC000,                          // bf16 carry to infinity
      0x7F800000, 0xFF800000,                                      // infinities
      0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FBFFFFF,  // NaNs
      0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF,              // bf16 ties
  };
  return v;
}

uint32_t random_operand(std::mt19937_64& rng) {
  const uint32_t r = static_cast<uint32_t>(rng());
  switch (rng() % 4) {
    case 0:
      return r;  // any pattern
    case 1:
      return (r & 0x807FFFFFu) | ((0x70u + (r >> 24) % 32u) << 23);  // exponents near 1
    case 2:
      return (r & 0x80FFFFFFu);  // tiny: subnormal or exponent 1
    default:
      return (r & 0x807FFFFFu) | ((0x3Fu + (r >> 23) % 3u) << 23) | 0x3F000000u;
  }
}

std::string hex(uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}

TEST(Fp, ReferenceSelfCheck) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  EXPECT_EQ(rround(1.0), 0x3F800000u);
  EXPECT_EQ(rround(0x1p-127), 0u);                           // flushed
  EXPECT_EQ(rround(0x1p-126 * (1 - 0x1p-25)), 0x00800000u);  // rounds up to 2^-126: kept
  EXPECT_EQ(rround(-0x1p128), 0xFF800000u);
}

template <typename Op, typename Ref>
void compare_pairs(const char* name, Op op, Ref ref, int random_pairs) {
  const std::vector<uint32_t> c = corners();
  int failures = 0;
  auto one = [&](uint32_t a, uint32_t b) {
    const uint32_t got = op(a, b), want = ref(a, b);
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << name << "(" << hex(a) << ", " << hex(b) << ") = " << hex(got)
                    << ", reference " << hex(want);
    }
  };
  for (uint32_t a : c)
    for (uint32_t b : c) one(a, b);
  std::mt19937_64 rng(12345);
  for (int i = 0; i < random_pairs; ++i) one(random_operand(rng), random_operand(rng));
  // Cancellation: b close to -a.
  for (int i = 0; i < random_pairs / 8; ++i) {
    const uint32_t a = random_operand(rng);
    one(a, (a ^ 0x80000000u) + static_cast<uint32_t>(rng() % 64) - 32u);
  }
  EXPECT_EQ(failures, 0) << name;
}

constexpr int kPairs = 2'000'000;

TEST(Fp, AddMatchesReference) {
  compare_pairs("add", add, radd, kPairs);
  compare_pairs("add_exact", add_exact, radd, kPairs);
}
TEST(Fp, SubMatchesReference) { compare_pairs("sub", sub, rsub, kPairs / 2); }
TEST(Fp, MulMatchesReference) {
  compare_pairs("mul", mul, rmul, kPairs);
  compare_pairs("mul_exact", mul_exact, rmul, kPairs);
}

// The fast path's edges: results at and around 2^-126 (where gradual underflow and FTZ
// after rounding differ), at the overflow threshold, and exact cancellation.
TEST(Fp, FastPathEdges) {
  std::mt19937_64 rng(99);
  int failures = 0;
  auto both = [&](uint32_t a, uint32_t b) {
    if ((add(a, b) != add_exact(a, b) || mul(a, b) != mul_exact(a, b) || add(a, b) != radd(a, b) ||
         mul(a, b) != rmul(a, b)) &&
        ++failures <= 10) {
      ADD_FAILURE() << hex(a) << ", " << hex(b);
    }
  };
  for (int i = 0; i < 1'000'000; ++i) {
    // a * b near 2^-126 and 2^128: exponents summing to about -126 + 127 or 128 + 127.
    const uint32_t fa = static_cast<uint32_t>(rng()) & 0x807FFFFFu;
    const uint32_t fb = static_cast<uint32_t>(rng()) & 0x807FFFFFu;
    const uint32_t ea = 1 + static_cast<uint32_t>(rng() % 253);
    const uint32_t target = (rng() % 2) ? 1 + 127 : 254 + 127;  // product exponent field
    const int64_t eb = int64_t{target} - ea + static_cast<int64_t>(rng() % 3) - 1;
    if (eb < 1 || eb > 254) continue;
    both(fa | ea << 23, fb | static_cast<uint32_t>(eb) << 23);
    // a + b near 2^-126: two tiny normals of opposite or equal signs.
    both((static_cast<uint32_t>(rng()) & 0x80FFFFFFu) | 0x00800000u,
         (static_cast<uint32_t>(rng()) & 0x80FFFFFFu) | 0x00800000u);
  }
  EXPECT_EQ(failures, 0);
}
TEST(Fp, MaxMinMatchReference) {
  compare_pairs(
      "max", max, [](uint32_t a, uint32_t b) { return rmax(a, b, true); }, kPairs / 4);
  compare_pairs(
      "min", min, [](uint32_t a, uint32_t b) { return rmax(a, b, false); }, kPairs / 4);
}

TEST(Fp, ComparesMatchReference) {
  auto mask = [](bool b) { return b ? kMaskTrue : kMaskFalse; };
  auto rcmp = [](uint32_t a, uint32_t b, int which) {
    const double x = rval(a), y = rval(b);  // NaN compares false natively
    return which == 0 ? x < y : which == 1 ? x <= y : x == y;
  };
  compare_pairs(
      "lt", [&](uint32_t a, uint32_t b) { return mask(lt(a, b)); },
      [&](uint32_t a, uint32_t b) { return mask(rcmp(a, b, 0)); }, kPairs / 4);
  compare_pairs(
      "le", [&](uint32_t a, uint32_t b) { return mask(le(a, b)); },
      [&](uint32_t a, uint32_t b) { return mask(rcmp(a, b, 1)); }, kPairs / 4);
  compare_pairs(
      "eq", [&](uint32_t a, uint32_t b) { return mask(eq(a, b)); },
      [&](uint32_t a, uint32_t b) { return mask(rcmp(a, b, 2)); }, kPairs / 4);
}

// Every bf16 x bf16 product class: products of bf16 values are exact unless they leave the
// normal range (docs/isa.md); all 65536 values against a spread of the other operand.
TEST(Fp, Bf16ProductsExactOrFlushed) {
  std::mt19937_64 rng(7);
  int failures = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    for (int j = 0; j < 64; ++j) {
      const uint32_t a = from_bf16(static_cast<uint16_t>(h));
      const uint32_t b = from_bf16(static_cast<uint16_t>(rng()));
      const uint32_t got = mul(a, b), want = rmul(a, b);
      if (got != want && ++failures <= 10) ADD_FAILURE() << hex(a) << " * " << hex(b);
      // exact: the reference product in double equals the fp32 result unless out of range
      const double p = rval(a) * rval(b);
      if (!rnan(got) && std::fabs(p) >= 0x1p-126 && std::fabs(p) < 0x1p128 && rval(got) != p &&
          ++failures <= 10) {
        ADD_FAILURE() << "bf16 product not exact: " << hex(a) << " * " << hex(b);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(Fp, Bf16ToFp32AllValues) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t want = (h & 0x7F80u) == 0 ? (h & 0x8000u) << 16 : h << 16;  // DAZ
    ASSERT_EQ(from_bf16(static_cast<uint16_t>(h)), want) << hex(h);
    // and back: every bf16 that is not a NaN or subnormal survives fp32 -> bf16 unchanged
    const bool nan = (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0;
    if (!nan && (h & 0x7F80u) != 0) {
      ASSERT_EQ(to_bf16(want), h) << hex(h);
    }
    if (nan) {
      ASSERT_EQ(to_bf16(want), kCanonicalNaNBf16) << hex(h);
    }
  }
}

// fp32 -> bf16 for every fp32 pattern in a dense sample (all of them in the slow test).
void check_to_bf16(uint64_t step) {
  int failures = 0;
  for (uint64_t x = 0; x < (uint64_t{1} << 32); x += step) {
    const auto v = static_cast<uint32_t>(x);
    if (to_bf16(v) != rto_bf16(v) && ++failures <= 10) {
      ADD_FAILURE() << "to_bf16(" << hex(v) << ") = " << to_bf16(v) << ", reference "
                    << rto_bf16(v);
    }
  }
  for (uint32_t v : corners()) EXPECT_EQ(to_bf16(v), rto_bf16(v)) << hex(v);
  EXPECT_EQ(failures, 0);
}
TEST(Fp, Fp32ToBf16DenseSample) { check_to_bf16(997); }

TEST(Fp, Bf16Corners) {
  EXPECT_EQ(to_bf16(0x7F7FFFFFu), 0x7F80u);  // carry out of the largest finite: infinity
  EXPECT_EQ(to_bf16(0x3F808000u), 0x3F80u);  // tie, even stays
  EXPECT_EQ(to_bf16(0x3F818000u), 0x3F82u);  // tie, odd rounds up
  EXPECT_EQ(to_bf16(0x807FFFFFu), 0x8000u);  // DAZ keeps the sign
  EXPECT_EQ(to_bf16(0xFFC00001u), 0x7FC0u);  // canonical NaN
}

void check_to_int(uint64_t step) {
  int failures = 0;
  for (uint64_t x = 0; x < (uint64_t{1} << 32); x += step) {
    const auto v = static_cast<uint32_t>(x);
    if (to_int32(v) != rto_int(v) && ++failures <= 10) ADD_FAILURE() << "to_int32 " << hex(v);
  }
  for (uint32_t v : corners()) EXPECT_EQ(to_int32(v), rto_int(v)) << hex(v);
  EXPECT_EQ(failures, 0);
}
TEST(Fp, Fp32ToInt32DenseSample) { check_to_int(1009); }

TEST(Fp, Int32ToFp32) {
  std::mt19937_64 rng(3);
  std::vector<int32_t> vs = {0,        1,         -1,         16777216,        16777217,
                             16777219, -16777217, 2147483647, -2147483647 - 1, 33554435};
  for (int i = 0; i < 1'000'000; ++i) vs.push_back(static_cast<int32_t>(rng()));
  for (int32_t v : vs) {
    ASSERT_EQ(from_int32(v), rbits(static_cast<float>(v))) << v;  // cvtsi2ss rounds to even
  }
}

TEST(Fp, ContractExamples) {
  EXPECT_EQ(add(0x3F800000u, 0xBF800000u), 0u);             // x + (-x) = +0
  EXPECT_EQ(add(0x80000000u, 0x80000000u), 0x80000000u);    // -0 + -0 = -0
  EXPECT_EQ(add(0x00000000u, 0x80000000u), 0u);             // +0 + -0 = +0
  EXPECT_EQ(add(0x7F800000u, 0xFF800000u), kCanonicalNaN);  // inf - inf
  EXPECT_EQ(mul(0x7F800000u, 0x80000000u), kCanonicalNaN);  // inf * 0
  EXPECT_EQ(mul(0x80000000u, 0x3F800000u), 0x80000000u);    // sign XOR
  EXPECT_EQ(mul(0x1F800000u, 0x9F800000u), 0x80000000u);    // 2^-64 * -2^-64: FTZ, signed
  EXPECT_EQ(add(0x00400000u, 0x3F800000u), 0x3F800000u);    // DAZ
  EXPECT_EQ(max(0x80000000u, 0u), 0u);                      // -0 < +0
  EXPECT_EQ(min(0x80000000u, 0u), 0x80000000u);
  EXPECT_EQ(max(0x7F800001u, 0u), kCanonicalNaN);
  EXPECT_TRUE(eq(0x80000000u, 0u));
  EXPECT_TRUE(eq(0x00000001u, 0u));  // DAZ
  EXPECT_FALSE(lt(kCanonicalNaN, kPosInf));
  // 2^-126 * (1 - 2^-46) rounds (24 bits) to 2^-126 exactly: kept, not flushed.
  EXPECT_EQ(mul(0x3F7FFFFEu, 0x00800001u), 0x00800000u);
  // (1 - 2^-24) * 2^-126 is exact in 24 bits and below 2^-126: flushed.
  EXPECT_EQ(mul(0x3F7FFFFFu, 0x00800000u), 0u);
  EXPECT_EQ(to_int32(0x3FC00000u), 2);           // 1.5 -> 2
  EXPECT_EQ(to_int32(0x40200000u), 2);           // 2.5 -> 2
  EXPECT_EQ(to_int32(0x7FC00000u), 0);           // NaN -> 0
  EXPECT_EQ(to_int32(0x4F000000u), 2147483647);  // 2^31 saturates
}

}  // namespace
}  // namespace tpu::fp

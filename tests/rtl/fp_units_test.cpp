// SPDX-License-Identifier: Apache-2.0
// Block tests of the floating-point units (tpu_fp32_add, tpu_fp32_mul, tpu_bf16_mul,
// tpu_fp_cvt, tpu_fp_cmp) and of one vector-unit lane (tpu_vpu_lane, every func of docs/isa.md
// `vector`) against
// the native-arithmetic reference of fp_ref.h: every pair of a list of corner values (zeros,
// subnormals, the smallest and largest normals, ties, infinities, NaNs), operands built to
// land on the FTZ and overflow boundaries and on cancellation, and random operands (uniform
// bit patterns and exponents drawn close together).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "Vtpu_bf16_mul.h"
#include "Vtpu_fp32_add.h"
#include "Vtpu_fp32_mul.h"
#include "Vtpu_fp_cmp.h"
#include "Vtpu_fp_cvt.h"
#include "Vtpu_vpu_lane.h"
#include "fp_ref.h"
#include "verilated.h"

namespace {

// Random vectors per block: 10^6, or the environment's TPU_FP_RANDOM (the slow label's runs).
int random_count() {
  const char* env = std::getenv("TPU_FP_RANDOM");
  return env != nullptr ? std::atoi(env) : 1000000;
}
const int kRandom = random_count();

// One Verilated combinational block with its own context.
template <class M>
class Block {
 public:
  Block() : ctx_(std::make_unique<VerilatedContext>()), m_(std::make_unique<M>(ctx_.get())) {}
  M& operator*() { return *m_; }
  M* operator->() { return m_.get(); }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<M> m_;
};

uint32_t fp32(unsigned s, unsigned e, uint32_t f) {
  return uint32_t(s) << 31 | uint32_t(e & 0xff) << 23 | (f & 0x7fffff);
}

// Corner values of fp32, both signs.
std::vector<uint32_t> corners32() {
  const uint32_t mags[] = {
      0x00000000, 0x00000001, 0x007FFFFF, 0x00400000,  // zero, subnormals
      0x00800000, 0x00800001, 0x00FFFFFF, 0x01000000,  // smallest normals
      0x3F800000, 0x3F800001, 0x3FFFFFFF, 0x3F7FFFFF,  // 1, 1 + ulp, 2 - ulp, 1 - ulp/2
      0x3FC00000, 0x40400000, 0x4B000000, 0x4B7FFFFF,  // 1.5, 3, 2^23, 2^24 - 1
      0x33800000, 0x34000000, 0x0C800000, 0x72800000,  // 2^-24, 2^-23, 2^-102, 2^102
      0x7F000000, 0x7F7FFFFF, 0x7F7FFFFE, 0x7E800000,  // large, max finite
      0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF,  // inf, NaNs (quiet, signalling)
      0x3F000000, 0x3F400000, 0x1F800000, 0x5F800000,  // 0.5, 0.75, 2^-64, 2^64
  };
  std::vector<uint32_t> v;
  for (uint32_t m : mags) {
    v.push_back(m);
    v.push_back(m | 0x80000000u);
  }
  return v;
}

std::vector<uint16_t> corners16() {
  std::vector<uint16_t> v;
  for (uint32_t c : corners32()) v.push_back(uint16_t(c >> 16));
  for (unsigned m : {0x0001, 0x007F, 0x0080, 0x0081, 0x00FF, 0x7F7F, 0x7F7E, 0x7F81, 0x3F81, 0x3FFF,
                     0x1F80, 0x2000, 0x5F80, 0x5FFF, 0x4000}) {
    v.push_back(uint16_t(m));
    v.push_back(uint16_t(m | 0x8000u));
  }
  return v;
}

// Random operand pairs: uniform bit patterns, or exponents within a few of each other (for
// rounding and cancellation), or b built from a (a - tiny changes, -a, a with a random low
// part), or exponents near the ends of the range.
class PairGen {
 public:
  explicit PairGen(uint32_t seed) : rng_(seed) {}
  std::pair<uint32_t, uint32_t> next(bool product) {
    const uint32_t a = word_(rng_), b = word_(rng_);
    switch (kind_(rng_)) {
      case 0:
        return {a, b};
      case 1: {  // close exponents
        const unsigned ea = 1 + a % 254, eb = std::clamp<int>(int(ea) + int(b % 7) - 3, 1, 254);
        return {fp32(a >> 31, ea, a >> 8), fp32(b >> 31, eb, b >> 9)};
      }
      case 2:  // cancellation: -a with the low bits changed
        return {a, (a ^ 0x80000000u ^ (b & 0x1FF)) & ~(b & 0x600)};
      case 3: {  // exponents near the end of the range, for products or sums
        const unsigned ea = product ? 30 + a % 70 : 1 + a % 8;
        const unsigned eb =
            product ? (a & 0x100 ? 254 - (b % 8) - ea + 127 : 130 - ea - b % 8) : 1 + b % 8;
        return {fp32(a >> 31, ea, a >> 8), fp32(b >> 31, std::clamp(eb, 1u, 254u), b >> 9)};
      }
      default: {  // a short significand in b (ties when added or multiplied)
        return {a, (b & 0xFFFF0000u) | ((b >> 8) & 0x8000u)};
      }
    }
  }

 private:
  std::mt19937 rng_;
  std::uniform_int_distribution<uint32_t> word_;
  std::uniform_int_distribution<int> kind_{0, 4};
};

#define EXPECT_BITS(got, want, what)                                                              \
  ASSERT_EQ(got, want) << std::hex << what << ": got 0x" << (got) << " want 0x" << (want) << " (" \
                       << fpref::value(want) << ")"

struct AddCase {
  Block<Vtpu_fp32_add> m;
  void check(uint32_t a, uint32_t b) {
    for (int sub = 0; sub < 2; ++sub) {
      m->a_i = a;
      m->b_i = b;
      m->sub_i = sub != 0;
      m->eval();
      const uint32_t want = fpref::add(a, sub ? b ^ 0x80000000u : b);
      EXPECT_BITS(m->y_o, want, (sub ? "sub 0x" : "add 0x") << a << ", 0x" << b);
    }
  }
};

TEST(Fp32Add, CornerPairs) {
  AddCase t;
  for (uint32_t a : corners32())
    for (uint32_t b : corners32()) t.check(a, b);
}

TEST(Fp32Add, Cancellation) {
  AddCase t;
  // x - x = +0 for every sign, (-0) + (-0) = -0, differences that fall below 2^-126.
  EXPECT_EQ(fpref::add(0x3F800000u, 0xBF800000u), 0u);
  EXPECT_EQ(fpref::add(0x80000000u, 0x80000000u), 0x80000000u);
  for (uint32_t f = 0; f < (1u << 23); f += 4099) {
    for (unsigned e : {1u, 2u, 3u, 24u, 25u, 26u, 127u, 254u}) {
      const uint32_t x = fp32(0, e, f);
      t.check(x, x);
      t.check(x, x ^ 0x80000000u);
      t.check(x, fp32(1, e, f + 1));
      t.check(x, fp32(1, e - (e > 1), f ^ 0x7FFFFF));
    }
  }
}

TEST(Fp32Add, Random) {
  AddCase t;
  PairGen g(1);
  for (int i = 0; i < kRandom; ++i) {
    const auto [a, b] = g.next(false);
    t.check(a, b);
  }
}

struct MulCase {
  Block<Vtpu_fp32_mul> m;
  void check(uint32_t a, uint32_t b) {
    m->a_i = a;
    m->b_i = b;
    m->eval();
    EXPECT_BITS(m->y_o, fpref::mul(a, b), "mul 0x" << a << ", 0x" << b);
  }
};

TEST(Fp32Mul, CornerPairs) {
  MulCase t;
  for (uint32_t a : corners32())
    for (uint32_t b : corners32()) t.check(a, b);
}

// Significand products just below 2 (all ones, then a round bit), at exponents where the
// rounded result lands on 2^-126 (kept: the FTZ test is after rounding) or on 2^128 (inf).
TEST(Fp32Mul, RoundingAcrossFtzAndOverflow) {
  MulCase t;
  std::mt19937 rng(3);
  int kept_min = 0, to_inf = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t ma = (1u << 23) | (rng() & 0x7FFFFF);
    const uint64_t mb = ((uint64_t(1) << 47) - 1 - (rng() & 0xFFF)) / ma;  // p just below 2^47
    if (mb < (1u << 23) || mb >= (1u << 24)) continue;
    const unsigned lo = 2 + unsigned(rng() % 120), hi = 130 + unsigned(rng() % 120);
    const unsigned exps[][2] = {{lo, 126 - lo}, {lo, 127 - lo}, {lo, 128 - lo},
                                {hi, 380 - hi}, {hi, 381 - hi}, {hi, 382 - hi}};
    for (const auto& e : exps) {
      if (e[1] < 1 || e[1] > 254) continue;
      const uint32_t a = fp32(rng() & 1u, e[0], uint32_t(ma));
      const uint32_t b = fp32(rng() & 1u, e[1], uint32_t(mb));
      t.check(a, b);
      const uint32_t p = fpref::mul(a, b) & 0x7FFFFFFFu;
      kept_min += p == 0x00800000u;
      to_inf += p == 0x7F800000u;
    }
  }
  EXPECT_GT(kept_min, 100);  // the boundary cases really occurred
  EXPECT_GT(to_inf, 100);
}

TEST(Fp32Mul, Random) {
  MulCase t;
  PairGen g(2);
  for (int i = 0; i < kRandom; ++i) {
    const auto [a, b] = g.next(true);
    t.check(a, b);
  }
}

struct Bf16MulCase {
  Block<Vtpu_bf16_mul> m;
  void check(uint16_t a, uint16_t b) {
    m->a_i = a;
    m->b_i = b;
    m->eval();
    EXPECT_BITS(m->p_o, fpref::bf16_mul(a, b), "bf16 mul 0x" << a << ", 0x" << b);
  }
};

TEST(Bf16Mul, CornerPairs) {
  Bf16MulCase t;
  for (uint16_t a : corners16())
    for (uint16_t b : corners16()) t.check(a, b);
}

// Every pair of significands (2^14) at exponent pairs on both sides of the FTZ and the
// overflow boundary and in the middle, with mixed signs.
TEST(Bf16Mul, AllSignificandsAtBoundaryExponents) {
  Bf16MulCase t;
  const unsigned pairs[][2] = {{63, 63},   {64, 63},   {1, 126},   {1, 127},  {100, 26},  {27, 100},
                               {127, 127}, {191, 191}, {192, 191}, {254, 1},  {254, 127}, {200, 55},
                               {200, 56},  {128, 127}, {1, 1},     {254, 254}};
  for (const auto& p : pairs) {
    for (unsigned fa = 0; fa < 128; ++fa) {
      for (unsigned fb = 0; fb < 128; ++fb) {
        const unsigned s = (fa ^ fb) & 3;
        t.check(uint16_t((s & 1) << 15 | p[0] << 7 | fa),
                uint16_t((s >> 1) << 15 | p[1] << 7 | fb));
      }
    }
  }
}

TEST(Bf16Mul, Random) {
  Bf16MulCase t;
  PairGen g(4);
  for (int i = 0; i < kRandom; ++i) {
    const auto [a, b] = g.next(true);
    t.check(uint16_t(a >> 16), uint16_t(b >> 16));
  }
}

struct CvtCase {
  Block<Vtpu_fp_cvt> m;
  // Every output for operand x: x read as fp32 (to bf16, to int32), as int32 (to fp32) and
  // its low half as bf16 (to fp32).
  void check(uint32_t x) {
    m->x_i = x;
    m->eval();
    EXPECT_BITS(uint32_t(m->bf16_o), uint32_t(fpref::fp32_to_bf16(x)), "fp32 -> bf16 0x" << x);
    EXPECT_BITS(m->f2i_o, fpref::fp32_to_int32(x), "fp32 -> int32 0x" << x);
    EXPECT_BITS(m->i2f_o, fpref::int32_to_fp32(x), "int32 -> fp32 0x" << x);
    EXPECT_BITS(m->widen_o, fpref::bf16_to_fp32(uint16_t(x)), "bf16 -> fp32 0x" << (x & 0xFFFF));
  }
};

TEST(FpCvt, Corners) {
  CvtCase t;
  for (uint32_t x : corners32()) t.check(x);
  for (uint32_t x :
       {0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0x00FFFFFFu, 0x01000001u, 0x01000003u, 0xFEFFFFFFu,
        0x4EFFFFFFu, 0x4F000000u, 0xCF000000u, 0xCF000001u, 0xCEFFFFFFu, 0x3F000001u, 0xBF000000u,
        0x3EFFFFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0xFF7F8000u, 0x00808000u, 0x00818000u})
    t.check(x);
}

TEST(FpCvt, AllBf16) {
  CvtCase t;
  for (uint32_t x = 0; x < 0x10000u; ++x) t.check(x);
}

// Ties and near-ties of every conversion: fp32 -> bf16 with low halves around 0x8000,
// fp32 -> int32 at k + 1/2 and one ulp either side, int32 -> fp32 with 25..31 significant bits.
TEST(FpCvt, Ties) {
  CvtCase t;
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t hi = uint32_t(rng()) & 0xFFFF0000u;
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) t.check(hi | lo);
    const double k = double(rng() % (1u << 23)) * ((rng() & 1) ? 1 : -1) + 0.5;
    const uint32_t half = fpref::bits(float(k));  // exact: k + 1/2 has at most 24 bits
    t.check(half);
    t.check(half + 1);
    t.check(half - 1);
    const unsigned shift = 1 + unsigned(rng() % 8);  // 25..32 significant bits
    const uint32_t v = ((1u << 23) | (uint32_t(rng()) & 0x7FFFFFu)) << shift |
                       (uint32_t(rng()) & ((1u << shift) - 1));
    t.check(v);
    t.check(uint32_t(0) - v);
    t.check((v & ~((1u << shift) - 1)) | (1u << (shift - 1)));  // an exact tie
  }
}

TEST(FpCvt, Random) {
  CvtCase t;
  std::mt19937 rng(6);
  for (int i = 0; i < kRandom; ++i) {
    const uint32_t w = uint32_t(rng());
    // Uniform patterns, and fp32 values whose magnitude is around the int32 range.
    t.check(i % 2 ? w : fp32(w >> 31, 120 + (w >> 8) % 40, w));
  }
}

struct CmpCase {
  Block<Vtpu_fp_cmp> m;
  void check(uint32_t a, uint32_t b) {
    m->a_i = a;
    m->b_i = b;
    m->eval();
    ASSERT_EQ(bool(m->lt_o), fpref::lt(a, b)) << std::hex << "lt 0x" << a << ", 0x" << b;
    ASSERT_EQ(bool(m->le_o), fpref::le(a, b)) << std::hex << "le 0x" << a << ", 0x" << b;
    ASSERT_EQ(bool(m->eq_o), fpref::eq(a, b)) << std::hex << "eq 0x" << a << ", 0x" << b;
    EXPECT_BITS(m->max_o, fpref::max(a, b), "max 0x" << a << ", 0x" << b);
    EXPECT_BITS(m->min_o, fpref::min(a, b), "min 0x" << a << ", 0x" << b);
  }
};

TEST(FpCmp, CornerPairs) {
  CmpCase t;
  for (uint32_t a : corners32())
    for (uint32_t b : corners32()) t.check(a, b);
}

TEST(FpCmp, Random) {
  CmpCase t;
  PairGen g(7);
  for (int i = 0; i < kRandom; ++i) {
    const auto [a, b] = g.next(false);
    t.check(a, b);
    t.check(a, a);
  }
}

// f(A, B) of one lane for `vector` func (docs/isa.md): the float functions from fp_ref.h, the
// integer ones in native uint32_t / int32_t arithmetic. *ok = false for an undefined func.
uint32_t lane_ref(unsigned func, uint32_t a, uint32_t b, bool* ok) {
  const auto mask = [](bool t) { return t ? 0xFFFFFFFFu : 0u; };
  const uint32_t sign = 0x80000000u;
  *ok = true;
  switch (func) {
    case 0x00:
    case 0x28:
    case 0x30:
      return fpref::add(a, b);
    case 0x01:
      return fpref::add(a, b ^ sign);
    case 0x02:
      return fpref::add(b, a ^ sign);
    case 0x03:
      return fpref::mul(a, b);
    case 0x04:
    case 0x29:
    case 0x31:
      return fpref::max(a, b);
    case 0x05:
    case 0x2A:
    case 0x32:
      return fpref::min(a, b);
    case 0x06:
      return mask(fpref::lt(a, b));
    case 0x07:
      return mask(fpref::le(a, b));
    case 0x08:
      return mask(fpref::eq(a, b));
    case 0x10:
      return a + b;
    case 0x11:
      return a - b;
    case 0x12:
      return b - a;
    case 0x13:
      return a & b;
    case 0x14:
      return a | b;
    case 0x15:
      return a ^ b;
    case 0x16:
      return a & ~b;
    case 0x17:
      return a << (b & 31);
    case 0x18:
      return a >> (b & 31);
    case 0x19:
      return uint32_t(int32_t(a) >> (b & 31));  // arithmetic (GCC, and C++20)
    case 0x1A:
      return mask(int32_t(a) < int32_t(b));
    case 0x1B:
      return mask(a == b);
    case 0x20:
      return fpref::fp32_to_int32(a);
    case 0x21:
      return fpref::int32_to_fp32(a);
    case 0x22:
      return fpref::bf16_to_fp32(fpref::fp32_to_bf16(a));
    case 0x38:
      return a;
    default:
      *ok = false;
      return 0;
  }
}

struct LaneCase {
  Block<Vtpu_vpu_lane> m;
  void check(unsigned func, uint32_t a, uint32_t b) {
    m->func_i = uint8_t(func);
    m->a_i = a;
    m->b_i = b;
    m->eval();
    bool ok = false;
    const uint32_t want = lane_ref(func, a, b, &ok);
    ASSERT_EQ(bool(m->func_ok_o), ok) << std::hex << "func 0x" << func;
    EXPECT_BITS(m->y_o, want, "func 0x" << func << " (0x" << a << ", 0x" << b << ")");
  }
};

// Every func value 0..63 (defined or not) on every pair of corner values, and on integer
// corners (shift counts beyond 31, the int32 extremes).
TEST(VpuLane, EveryFuncCornerPairs) {
  LaneCase t;
  std::vector<uint32_t> vals = corners32();
  for (uint32_t v : {0x00000001u, 0x0000001Fu, 0x00000020u, 0x00000021u, 0xFFFFFFFFu, 0x7FFFFFFEu,
                     0x80000001u, 0x01000001u, 0xFEFFFFFFu})
    vals.push_back(v);
  for (unsigned func = 0; func < 64; ++func)
    for (uint32_t a : vals)
      for (uint32_t b : vals) t.check(func, a, b);
}

TEST(VpuLane, Random) {
  LaneCase t;
  PairGen g(8);
  std::mt19937 rng(9);
  for (int i = 0; i < kRandom; ++i) {
    const auto [a, b] = g.next(i % 2 == 0);
    t.check(unsigned(rng() % 64), a, b);
  }
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_requant (one column of the activation unit) against the golden model's
// requantizer (driver/arith), with random and extreme operands and the rounding ties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>

#include "Vtpu_requant.h"
#include "arith.h"
#include "verilated.h"

namespace {

class Requant {
 public:
  Requant()
      : ctx_(std::make_unique<VerilatedContext>()),
        m_(std::make_unique<Vtpu_requant>(ctx_.get())) {}
  // The block's output, for func != LUT (the LUT is applied outside the block).
  int eval(int32_t acc, int32_t bias, int32_t mult, uint32_t misc, tpu::ActFunc f, bool uns) {
    m_->acc_i = uint32_t(acc);
    m_->bias_i = uint32_t(bias);
    m_->mult_i = uint32_t(mult);
    m_->misc_i = misc;
    m_->func_i = uint8_t(f);
    m_->out_unsigned_i = uns;
    m_->eval();
    int v = m_->y_o & 0x1ff;
    return v >= 256 ? v - 512 : v;  // 9-bit two's complement
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_requant> m_;
};

uint32_t misc(unsigned shift, int zp, int lo, int hi) {
  return (shift & 63) | (uint32_t(zp) & 0xff) << 8 | (uint32_t(lo) & 0xff) << 16 |
         (uint32_t(hi) & 0xff) << 24;
}

void expect_match(Requant& r, int32_t acc, int32_t bias, int32_t mult, uint32_t m, tpu::ActFunc f,
                  bool uns) {
  const int want = tpu::requantize(acc, bias, mult, m, f, uns, nullptr);
  ASSERT_EQ(r.eval(acc, bias, mult, m, f, uns), want)
      << "acc " << acc << " bias " << bias << " mult " << mult << " misc 0x" << std::hex << m
      << std::dec << " func " << int(f) << " unsigned " << uns;
}

TEST(Requant, TiesRoundHalfAwayFromZero) {
  Requant r;
  // acc * 1 / 2: +5/2 = 2.5 -> 3, -5/2 = -2.5 -> -3, +3/2 -> 2, -3/2 -> -2, -1/2 -> -1.
  EXPECT_EQ(r.eval(5, 0, 1, misc(1, 0, 0, 0), tpu::ActFunc::Identity, false), 3);
  EXPECT_EQ(r.eval(-5, 0, 1, misc(1, 0, 0, 0), tpu::ActFunc::Identity, false), -3);
  EXPECT_EQ(r.eval(3, 0, 1, misc(1, 0, 0, 0), tpu::ActFunc::Identity, false), 2);
  EXPECT_EQ(r.eval(-3, 0, 1, misc(1, 0, 0, 0), tpu::ActFunc::Identity, false), -2);
  EXPECT_EQ(r.eval(-1, 0, 1, misc(1, 0, 0, 0), tpu::ActFunc::Identity, false), -1);
  EXPECT_EQ(r.eval(-4, 0, 1, misc(3, 0, 0, 0), tpu::ActFunc::Identity, false), -1);  // -0.5
  EXPECT_EQ(r.eval(-3, 0, 1, misc(3, 0, 0, 0), tpu::ActFunc::Identity, false), 0);   // -0.375
  for (int32_t acc = -300; acc <= 300; ++acc) {
    for (unsigned s = 0; s < 4; ++s)
      expect_match(r, acc, 0, 1, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false);
  }
}

// Exact ties -(k + 1/2) at every shift 1..62, from a negative accumulator and from a negative
// multiplier, round away from zero to -(k + 1) (docs/isa.md); +(k + 1/2) to k + 1. The
// expected values are written out, not taken from the golden model; random operands almost
// never land on a tie at large shifts.
TEST(Requant, TiesAtEveryShiftRoundAwayFromZero) {
  Requant r;
  for (unsigned s = 1; s <= 62; ++s) {
    for (int32_t k = 0; k <= 130; k += (k < 8 ? 1 : 61)) {
      const int64_t odd = 2 * int64_t(k) + 1;  // (2k + 1) * 2^(s-1) / 2^s = k + 1/2
      if (s >= 32) {
        // mult = 2^(s-1) does not fit: acc = (2k + 1) * 2^(s-32) times mult = -2^31.
        if (s - 32 > 29 || odd << (s - 32) > std::numeric_limits<int32_t>::max()) continue;
        const int32_t acc = int32_t(odd << (s - 32));
        const int32_t mult = std::numeric_limits<int32_t>::min();  // -2^31
        // p = -(2k+1) * 2^(s-1): a negative tie.
        const int want = -std::min<int>(k + 1, 128);
        EXPECT_EQ(r.eval(acc, 0, mult, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false), want)
            << "shift " << s << " k " << k << " (negative multiplier)";
        continue;
      }
      const int32_t mult = int32_t(int64_t(1) << (s - 1));
      const int32_t acc = int32_t(odd);
      const int up = std::min<int>(k + 1, 127), down = -std::min<int>(k + 1, 128);
      EXPECT_EQ(r.eval(acc, 0, mult, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false), up)
          << "shift " << s << " k " << k;
      EXPECT_EQ(r.eval(-acc, 0, mult, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false), down)
          << "shift " << s << " k " << k << " (negative accumulator)";
      EXPECT_EQ(r.eval(acc, 0, -mult, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false), down)
          << "shift " << s << " k " << k << " (negative multiplier)";
      // One step either side of a negative tie (mult 1): the nearest integer.
      if (s >= 2 && s <= 22) {
        const int32_t tie = -int32_t(odd << (s - 1));  // -(k + 1/2) * 2^s
        EXPECT_EQ(r.eval(tie + 1, 0, 1, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false),
                  -std::min<int>(k, 128))
            << "shift " << s << " k " << k << " (just above a negative tie)";
        EXPECT_EQ(r.eval(tie - 1, 0, 1, misc(s, 0, 0, 0), tpu::ActFunc::Identity, false), down)
            << "shift " << s << " k " << k << " (just below a negative tie)";
      }
    }
  }
}

TEST(Requant, ExtremesSaturate) {
  Requant r;
  const int32_t mn = std::numeric_limits<int32_t>::min(), mx = std::numeric_limits<int32_t>::max();
  const int32_t vals[] = {mn, mn + 1, -1, 0, 1, mx - 1, mx};
  for (int32_t acc : vals)
    for (int32_t bias : vals)
      for (int32_t mult : vals)
        for (unsigned s : {0u, 1u, 31u, 62u, 63u})
          for (bool uns : {false, true})
            for (int f = 0; f < 3; ++f)
              expect_match(r, acc, bias, mult,
                           misc(s, uns ? 200 : -100, uns ? 3 : -50, uns ? 250 : 60),
                           tpu::ActFunc(f), uns);
}

TEST(Requant, RandomAgainstGolden) {
  Requant r;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(),
                                             std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> small(-(1 << 20), 1 << 20);  // (-1 << 20 is UB in C++17)
  std::uniform_int_distribution<uint32_t> word;
  std::uniform_int_distribution<int> f(0, 2), coin(0, 1);
  for (int i = 0; i < 200000; ++i) {
    const bool wide = coin(rng);
    expect_match(r, wide ? any(rng) : small(rng), wide ? any(rng) : small(rng) / 16, any(rng),
                 word(rng), tpu::ActFunc(f(rng)), coin(rng));
  }
}

}  // namespace

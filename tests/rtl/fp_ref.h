// SPDX-License-Identifier: Apache-2.0
// Reference floating-point arithmetic for the block tests of the float units (docs/isa.md
// "Floating point"), independent of the RTL's bit-level algorithm: native double arithmetic
// (exact for the products, correctly rounded to 53 bits for the sums), one rounding to 24 (or
// 8) bits done by the host's float conversion on a value scaled into the normal range by an
// exact power of two (so the rounding has an unbounded exponent), then the DAZ / FTZ /
// overflow / canonical-NaN rules by bit manipulation. Double rounding is innocuous for + - *
// since 53 >= 2 * 24 + 2. Built with -ffp-contract=off (tests/rtl/CMakeLists.txt), no
// -ffast-math, in the default rounding mode (to nearest, ties to even).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace fpref {

constexpr uint32_t kQNaN = 0x7FC00000u;
constexpr uint16_t kQNaN16 = 0x7FC0u;

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float value(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A subnormal reads as a zero of its sign.
inline float daz(uint32_t u) {
  const float f = value(u);
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

// Rounds v to `digits` significant bits, ties to even, with an unbounded exponent, then
// flushes a magnitude below 2^-126 to a zero of v's sign and one >= 2^128 to an infinity.
inline double round_unbounded(double v, int digits) {
  if (v == 0.0 || std::isinf(v) || std::isnan(v)) return v;
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m * 2^e, 0.5 <= |m| < 1, exact
  double r;
  if (digits == 24) {
    r = double(float(m));  // m is in float's normal range: one rounding to 24 bits
  } else {
    r = std::nearbyint(std::ldexp(m, digits)) / std::ldexp(1.0, digits);
  }
  const double out = std::ldexp(r, e);
  if (std::fabs(out) < std::ldexp(1.0, -126)) return std::copysign(0.0, v);
  if (std::fabs(out) >= std::ldexp(1.0, 128)) return std::copysign(HUGE_VAL, v);
  return out;
}

// A double already representable in fp32 (or +-inf, or NaN) as fp32 bits; NaN is canonical.
inline uint32_t to_fp32(double v) {
  if (std::isnan(v)) return kQNaN;
  return bits(float(v));
}

inline uint32_t add(uint32_t a, uint32_t b) {
  const double s = double(daz(a)) + double(daz(b));  // NaN operands and Inf - Inf give NaN
  return to_fp32(round_unbounded(s, 24));
}

inline uint32_t mul(uint32_t a, uint32_t b) {
  const double p = double(daz(a)) * double(daz(b));  // exact: 48 significant bits at most
  return to_fp32(round_unbounded(p, 24));
}

// Exact: append 16 zero bits; DAZ (a NaN keeps its pattern: this is a move, not arithmetic).
inline uint32_t bf16_to_fp32(uint16_t x) {
  const float f = value(uint32_t(x) << 16);
  return std::isnan(f) ? uint32_t(x) << 16 : bits(daz(uint32_t(x) << 16));
}

inline uint32_t bf16_mul(uint16_t a, uint16_t b) { return mul(bf16_to_fp32(a), bf16_to_fp32(b)); }

inline uint16_t fp32_to_bf16(uint32_t x) {
  const float f = daz(x);
  if (std::isnan(f)) return kQNaN16;
  const double r = round_unbounded(double(f), 8);  // exact in fp32, 8 significant bits
  return uint16_t(bits(float(r)) >> 16);
}

// Round to nearest even, saturating; NaN gives 0.
inline uint32_t fp32_to_int32(uint32_t x) {
  const float f = daz(x);
  if (std::isnan(f)) return 0;
  const double r = std::nearbyint(double(f));
  if (r >= 2147483647.0) return 0x7FFFFFFFu;
  if (r <= -2147483648.0) return 0x80000000u;
  return uint32_t(int32_t(r));
}

inline uint32_t int32_to_fp32(uint32_t v) { return bits(float(int32_t(v))); }

// Comparisons: DAZ, -0 == +0 (native), false with a NaN operand (native).
inline bool lt(uint32_t a, uint32_t b) { return daz(a) < daz(b); }
inline bool le(uint32_t a, uint32_t b) { return daz(a) <= daz(b); }
inline bool eq(uint32_t a, uint32_t b) { return daz(a) == daz(b); }

// max / min: NaN -> canonical NaN, -0 below +0, the result is the operand after DAZ.
inline uint32_t max(uint32_t a, uint32_t b) {
  const float x = daz(a), y = daz(b);
  if (std::isnan(x) || std::isnan(y)) return kQNaN;
  if (x == y) return std::signbit(x) ? bits(y) : bits(x);  // equal: only +-0 can differ
  return bits(x > y ? x : y);
}
inline uint32_t min(uint32_t a, uint32_t b) {
  const float x = daz(a), y = daz(b);
  if (std::isnan(x) || std::isnan(y)) return kQNaN;
  if (x == y) return std::signbit(x) ? bits(x) : bits(y);
  return bits(x < y ? x : y);
}

}  // namespace fpref

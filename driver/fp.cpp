// SPDX-License-Identifier: Apache-2.0
#include "fp.h"

#include <cstring>

namespace tpu::fp {

namespace {

constexpr uint32_t kExpMask = 0x7F800000u;
constexpr uint32_t kFracMask = 0x007FFFFFu;
constexpr uint32_t kHidden = 0x00800000u;
constexpr int kFracBits = 23;
constexpr int kBias = 127;
// A normal x is (kHidden | frac) * 2^(exp_field - kExpOffset).
constexpr int kExpOffset = kBias + kFracBits;  // 150
constexpr int kMaxBiased = 255;
// Guard bits for add: 24-bit significands shifted up so alignment keeps 39 bits below them.
constexpr int kAddGuard = 39;

uint32_t exp_field(uint32_t x) { return (x & kExpMask) >> kFracBits; }
bool negative(uint32_t x) { return (x & kSignBit) != 0; }
uint64_t significand(uint32_t x) { return (x & kFracMask) | kHidden; }  // normal x only

int msb_index(uint64_t v) {  // v != 0
  return 63 - __builtin_clzll(v);
}

// Ordering key of a non-NaN value with -0 below +0 (max / min).
int64_t order_key(uint32_t x) {
  const int64_t mag = x & ~kSignBit;
  return negative(x) ? -mag - 1 : mag;
}

// Ordering key of a non-NaN value with -0 == +0 (compares).
int64_t compare_key(uint32_t x) {
  const int64_t mag = x & ~kSignBit;
  return negative(x) ? -mag : mag;
}

// Round-to-nearest-even of mag / 2^shift (shift >= 1, mag < 2^64).
uint64_t shift_round_even(uint64_t mag, int shift) {
  if (shift >= 64) return 0;  // callers only pass shifts that leave < 0.5 here when >= 64
  const uint64_t q = mag >> shift;
  const uint64_t rem = mag & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}

}  // namespace

bool is_nan(uint32_t x) { return exp_field(x) == kMaxBiased && (x & kFracMask) != 0; }
bool is_inf(uint32_t x) { return (x & ~kSignBit) == kPosInf; }
bool is_subnormal(uint32_t x) { return exp_field(x) == 0 && (x & kFracMask) != 0; }
bool is_zero(uint32_t x) { return (x & ~kSignBit) == 0; }

uint32_t daz(uint32_t x) { return is_subnormal(x) ? (x & kSignBit) : x; }

uint32_t round_pack(bool neg, uint64_t mag, int exp2) {
  const uint32_t sign = neg ? kSignBit : 0u;
  if (mag == 0) return sign;
  const int p = msb_index(mag);
  int shift = p - kFracBits;  // bits below the 24 kept
  uint64_t r;
  if (shift > 0) {
    r = shift_round_even(mag, shift);
    if (r == (uint64_t{1} << (kFracBits + 1))) {  // rounded up to the next binade
      r >>= 1;
      ++shift;
    }
  } else {
    r = mag << -shift;
  }
  // value = r * 2^(exp2 + shift), r in [2^23, 2^24): biased exponent exp2 + shift + 150.
  const int64_t biased = int64_t{exp2} + shift + kExpOffset;
  if (biased <= 0) return sign;                     // FTZ after rounding
  if (biased >= kMaxBiased) return sign | kPosInf;  // overflow
  return sign | static_cast<uint32_t>(biased) << kFracBits | (static_cast<uint32_t>(r) & kFracMask);
}

uint32_t add_exact(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return kCanonicalNaN;
  if (is_inf(a) || is_inf(b)) {
    if (is_inf(a) && is_inf(b) && negative(a) != negative(b)) return kCanonicalNaN;
    return is_inf(a) ? a : b;
  }
  if (is_zero(a) && is_zero(b)) return (negative(a) && negative(b)) ? kNegZero : kPosZero;
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  // Both normal: make a the larger magnitude.
  if ((b & ~kSignBit) > (a & ~kSignBit)) {
    const uint32_t t = a;
    a = b;
    b = t;
  }
  const int d = static_cast<int>(exp_field(a)) - static_cast<int>(exp_field(b));
  const uint64_t big = significand(a) << kAddGuard;
  const uint64_t small_full = significand(b) << kAddGuard;
  uint64_t small;
  if (d >= 63) {
    small = 1;  // only a sticky bit remains
  } else {
    small = small_full >> d;
    if (small_full & ((uint64_t{1} << d) - 1)) small |= 1;  // sticky
  }
  const bool subtract = negative(a) != negative(b);
  const uint64_t mag = subtract ? big - small : big + small;
  if (mag == 0) return kPosZero;  // exact cancellation: +0 (round to nearest)
  return round_pack(negative(a), mag, static_cast<int>(exp_field(a)) - kExpOffset - kAddGuard);
}

// The fast path: for operands that are zeros or normal numbers, the host's IEEE float + and *
// (round to nearest even, no contraction: -ffp-contract=off, no -ffast-math, so no FTZ / DAZ
// mode either) give the contract's result whenever theirs is a zero, an infinity or a normal
// number above 2^-126 in magnitude: the exact value then lies where gradual underflow plays
// no part (a result of exactly 2^-126 may come from a value that the contract flushes, so it
// takes the integer path, as do subnormal results, NaN and infinite operands).
namespace {
bool plain(uint32_t x) {
  const uint32_t e = exp_field(x);
  return (e != 0 && e != kMaxBiased) || (x & ~kSignBit) == 0;
}
bool fast_result_ok(uint32_t r) {
  const uint32_t mag = r & ~kSignBit;
  return mag == 0 || mag == kPosInf || (mag > kHidden && mag < kPosInf);
}
}  // namespace

uint32_t add(uint32_t a, uint32_t b) {
  if (plain(a) && plain(b)) {
    const uint32_t r = bits_of(float_of(a) + float_of(b));
    if (fast_result_ok(r)) return r;
  }
  return add_exact(a, b);
}

uint32_t mul(uint32_t a, uint32_t b) {
  if (plain(a) && plain(b)) {
    const uint32_t r = bits_of(float_of(a) * float_of(b));
    if (fast_result_ok(r)) return r;
  }
  return mul_exact(a, b);
}

uint32_t sub(uint32_t a, uint32_t b) {
  // a - b = a + (-b); NaN operands are canonicalized by add whatever their sign.
  return add(a, b ^ kSignBit);
}

uint32_t mul_exact(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return kCanonicalNaN;
  const bool neg = negative(a) != negative(b);
  const uint32_t sign = neg ? kSignBit : 0u;
  if (is_inf(a) || is_inf(b)) {
    if (is_zero(a) || is_zero(b)) return kCanonicalNaN;  // 0 x inf
    return sign | kPosInf;
  }
  if (is_zero(a) || is_zero(b)) return sign;
  const uint64_t mag = significand(a) * significand(b);
  const int exp2 = static_cast<int>(exp_field(a)) + static_cast<int>(exp_field(b)) - 2 * kExpOffset;
  return round_pack(neg, mag, exp2);
}

uint32_t max(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return kCanonicalNaN;
  return order_key(a) >= order_key(b) ? a : b;
}

uint32_t min(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return kCanonicalNaN;
  return order_key(a) <= order_key(b) ? a : b;
}

bool lt(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return false;
  return compare_key(a) < compare_key(b);
}

bool le(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return false;
  return compare_key(a) <= compare_key(b);
}

bool eq(uint32_t a, uint32_t b) {
  a = daz(a);
  b = daz(b);
  if (is_nan(a) || is_nan(b)) return false;
  return compare_key(a) == compare_key(b);
}

uint16_t to_bf16(uint32_t x) {
  x = daz(x);
  if (is_nan(x)) return kCanonicalNaNBf16;
  // Round the pattern to its upper 16 bits, ties to even; a carry out of the largest finite
  // value reaches the infinity pattern (no NaN can arise: NaN inputs were handled above).
  const uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

uint32_t from_bf16(uint16_t h) { return daz(uint32_t{h} << 16); }

int32_t to_int32(uint32_t x) {
  constexpr int32_t kMax = 2147483647;
  constexpr int32_t kMin = -kMax - 1;
  x = daz(x);
  if (is_nan(x)) return 0;
  if (is_zero(x)) return 0;
  const bool neg = negative(x);
  if (is_inf(x)) return neg ? kMin : kMax;
  const int e = static_cast<int>(exp_field(x)) - kExpOffset;  // x = sig * 2^e
  const uint64_t sig = significand(x);
  uint64_t mag;
  if (e >= 0) {
    if (e >= 8) return neg ? kMin : kMax;  // |x| >= 2^31
    mag = sig << e;
  } else {
    mag = shift_round_even(sig, -e);  // -e <= 150; >= 64 means |x| < 2^-40: 0
  }
  if (neg) return mag >= uint64_t{1} << 31 ? kMin : -static_cast<int32_t>(mag);
  return mag > static_cast<uint64_t>(kMax) ? kMax : static_cast<int32_t>(mag);
}

uint32_t from_int32(int32_t v) {
  if (v == 0) return kPosZero;
  const bool neg = v < 0;
  const uint64_t mag = neg ? uint64_t{0} - static_cast<uint64_t>(int64_t{v}) : uint64_t(v);
  return round_pack(neg, mag, 0);
}

uint32_t bf16_dot(const uint16_t* a, const uint16_t* w, unsigned n, unsigned w_stride) {
  uint32_t s = kPosZero;
  for (unsigned k = 0; k < n; ++k) s = add(s, mul(from_bf16(a[k]), from_bf16(w[k * w_stride])));
  return s;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float float_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace tpu::fp

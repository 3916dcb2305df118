// SPDX-License-Identifier: Apache-2.0
// An independent reference of docs/isa.md "Floating point" on the host's native arithmetic
// (no code shared with driver/fp.cpp): one operation in double, then one rounding to 24
// significant bits with an unbounded exponent (scaling by 2^64 keeps the value in float's
// normal range), with DAZ, FTZ and the canonical NaN applied by bit tests around it. A float
// + - * in double is exact or correctly rounded to 53 >= 2*24 + 2 bits, so rounding that to
// float once is correctly rounded. Needs -ffp-contract=off and no -ffast-math.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tpu::fp::reference {

inline uint32_t rbits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline float rfloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline bool rnan(uint32_t x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0; }
// DAZ by bit test: exponent field 0 -> signed zero.
inline uint32_t rdaz(uint32_t x) { return (x & 0x7F800000u) == 0 ? (x & 0x80000000u) : x; }
inline double rval(uint32_t x) { return static_cast<double>(rfloat(rdaz(x))); }

// A double result of one operation on floats -> fp32 with the contract's rounding.
inline uint32_t rround(double r) {
  if (std::isnan(r)) return 0x7FC00000u;
  const uint32_t sign = std::signbit(r) ? 0x80000000u : 0u;
  if (std::isinf(r)) return sign | 0x7F800000u;
  if (r == 0.0) return sign;
  if (std::fabs(r) < 1.0) {
    const float f = static_cast<float>(r * 0x1p64);  // RNE to 24 bits, in float's normal range
    if (std::fabs(f) < 0x1p-62f) return sign;        // rounded magnitude < 2^-126: FTZ
    return rbits(static_cast<float>(static_cast<double>(f) * 0x1p-64));
  }
  const float f = static_cast<float>(r * 0x1p-64);
  if (std::fabs(static_cast<double>(f)) >= 0x1p64) return sign | 0x7F800000u;
  return rbits(static_cast<float>(static_cast<double>(f) * 0x1p64));
}

inline uint32_t radd(uint32_t a, uint32_t b) {
  if (rnan(a) || rnan(b)) return 0x7FC00000u;
  return rround(rval(a) + rval(b));
}
inline uint32_t rsub(uint32_t a, uint32_t b) {
  if (rnan(a) || rnan(b)) return 0x7FC00000u;
  return rround(rval(a) - rval(b));
}
inline uint32_t rmul(uint32_t a, uint32_t b) {
  if (rnan(a) || rnan(b)) return 0x7FC00000u;
  return rround(rval(a) * rval(b));
}
inline uint32_t rmax(uint32_t a, uint32_t b, bool is_max) {
  if (rnan(a) || rnan(b)) return 0x7FC00000u;
  a = rdaz(a);
  b = rdaz(b);
  const double x = rfloat(a), y = rfloat(b);
  if (x == y) {  // equal values: only +0 / -0 differ
    const bool pick_a = is_max ? !std::signbit(x) : std::signbit(x);
    return pick_a ? a : b;
  }
  return (x > y) == is_max ? a : b;
}
// fp32 -> bf16 by scaling and std::nearbyint (ties to even in the default rounding mode).
inline uint16_t rto_bf16(uint32_t x) {
  if (rnan(x)) return 0x7FC0;
  const double v = rval(x);
  if (v == 0.0 || std::isinf(v)) return static_cast<uint16_t>(rbits(static_cast<float>(v)) >> 16);
  const int e = std::ilogb(v);
  const double q = std::nearbyint(std::ldexp(v, 7 - e));  // 8 significant bits
  const double r = std::ldexp(q, e - 7);
  if (std::fabs(r) >= 0x1p128) return std::signbit(r) ? 0xFF80 : 0x7F80;
  return static_cast<uint16_t>(rbits(static_cast<float>(r)) >> 16);
}
inline int32_t rto_int(uint32_t x) {
  if (rnan(x)) return 0;
  const double r = std::nearbyint(rval(x));
  if (r >= 2147483647.0) return 2147483647;
  if (r <= -2147483648.0) return -2147483647 - 1;
  return static_cast<int32_t>(r);
}

}  // namespace tpu::fp::reference

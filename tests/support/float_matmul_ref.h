// SPDX-License-Identifier: Apache-2.0
// An independent host reference of the float32 matmul on the bf16 matrix unit
// (driver/float_matmul.h), written from docs/isa.md "Floating point" alone: native double
// arithmetic with one rounding to float (correctly rounded: 53 >= 2*24 + 2), the
// unbounded-exponent FTZ test, DAZ and the canonical NaN applied around it by bit manipulation.
// It shares no code with the golden model (driver/fp.cpp) nor with the tiling; and random
// operands with the float corner cases over-represented.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace tpu_test {

constexpr uint32_t kCanonicalNan = 0x7FC00000u;

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// DAZ: a subnormal reads as a zero of its sign.
inline float daz(float f) {
  const uint32_t u = f32_bits(f);
  return ((u >> 23) & 0xFF) == 0 ? f32_of(u & 0x80000000u) : f;
}

// fp32 -> bf16 -> fp32 (isa.md): DAZ, NaN -> 0x7FC0, the pattern rounded to its upper 16 bits
// ties to even (a carry out of the largest finite value gives infinity).
inline float bf16_round(float x) {
  if (std::isnan(x)) return f32_of(kCanonicalNan);
  const uint64_t u = f32_bits(daz(x));
  const uint64_t r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16;
  return f32_of(static_cast<uint32_t>(r << 16));
}

// A double result of one + or x of fp32 operands -> the fp32 the chip stores: rounded once to
// 24 bits with an unbounded exponent, then a zero of its sign below 2^-126 (FTZ after rounding),
// infinity from 2^128 on, the canonical NaN.
inline float finish(double r) {
  if (std::isnan(r)) return f32_of(kCanonicalNan);
  if (r == 0 || std::isinf(r)) return static_cast<float>(r);
  // Below 2^-100, scale up by 2^100 first (exact in double) so float's subnormal range does not
  // round with fewer bits; the FTZ test then looks at the 24-bit rounded magnitude.
  if (std::fabs(r) < 0x1p-100) {
    const float s = static_cast<float>(r * 0x1p100);
    if (std::fabs(s) < 0x1p-26f) return std::signbit(r) ? -0.0f : 0.0f;
    return static_cast<float>(static_cast<double>(s) * 0x1p-100);  // exact: a normal float
  }
  return static_cast<float>(r);  // overflow rounds to infinity (RNE)
}

inline float add(float a, float b) {
  a = daz(a);
  b = daz(b);
  if (std::isnan(a) || std::isnan(b)) return f32_of(kCanonicalNan);
  if (a == 0 && b == 0) return (std::signbit(a) && std::signbit(b)) ? -0.0f : 0.0f;
  return finish(static_cast<double>(a) + static_cast<double>(b));
}

inline float mul(float a, float b) {
  a = daz(a);
  b = daz(b);
  if (std::isnan(a) || std::isnan(b)) return f32_of(kCanonicalNan);
  return finish(static_cast<double>(a) * static_cast<double>(b));  // 0 x inf: NaN -> canonical
}

// out (m x n) = a (m x k) . w (k x n) on the chip with N = tile: K padded with +0 to whole tiles;
// per tile and column, s = +0 then s = add(s, mul(a, w)) over the tile's rows in order; the
// first tile's s is stored, each later one added to it.
inline std::vector<float> reference_float_matmul(const std::vector<float>& a,
                                                 const std::vector<float>& w, uint32_t m,
                                                 uint32_t k, uint32_t n, uint32_t tile) {
  const uint32_t kt = (k + tile - 1) / tile;
  std::vector<float> out(size_t{m} * n);
  for (uint32_t r = 0; r < m; ++r)
    for (uint32_t c = 0; c < n; ++c) {
      float acc = 0;
      for (uint32_t t = 0; t < kt; ++t) {
        float s = 0.0f;
        for (uint32_t kk = t * tile; kk < (t + 1) * tile; ++kk) {
          const float av = kk < k ? bf16_round(a[size_t{r} * k + kk]) : 0.0f;
          const float wv = kk < k ? bf16_round(w[size_t{kk} * n + c]) : 0.0f;
          s = add(s, mul(av, wv));
        }
        acc = t == 0 ? s : add(acc, s);
      }
      out[size_t{r} * n + c] = acc;
    }
  return out;
}

// Random signs and magnitudes over 2^-20 .. 2^20 (the summation order shows in the bits), with
// `special` of every 64 values a float corner case (NaN, infinities, subnormals, signed zeros,
// ties of the bf16 rounding, the largest finite values).
inline std::vector<float> random_floats(std::mt19937& rng, size_t count, uint32_t special = 0) {
  static const uint32_t kSpecial[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                      0x7FC00000u, 0xFFC00001u, 0x00000001u, 0x807FFFFFu,
                                      0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0x00800000u,
                                      0x0080FFFFu, 0xBF800000u, 0x1F800000u, 0x20000000u};
  std::uniform_real_distribution<double> e(-20, 20);
  std::vector<float> v(count);
  for (auto& x : v) {
    if (rng() % 64 < special) {
      x = f32_of(kSpecial[rng() % (sizeof kSpecial / sizeof kSpecial[0])]);
    } else {
      x = static_cast<float>(std::exp2(e(rng)) * (rng() % 2 ? -1.0 : 1.0));
    }
  }
  return v;
}

}  // namespace tpu_test

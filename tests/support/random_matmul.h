// SPDX-License-Identifier: Apache-2.0
// Random tiled-matmul cases for the tests: odd shapes, both signednesses, bias, per-column
// requantization and every activation function.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tiled_ops.h"

namespace tpu_test {

struct MatmulCase {
  tpu::MatmulSpec spec;
  std::vector<uint8_t> a, w;
  std::string describe() const {
    const auto& s = spec;
    return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
           (s.a_unsigned ? " a:u8" : " a:i8") + (s.w_unsigned ? " w:u8" : " w:i8") +
           (s.raw            ? " out:i32"
            : s.out_unsigned ? " out:u8"
                             : " out:i8") +
           " func=" + std::string(tpu::act_func_name(s.func)) + (s.bias.empty() ? "" : " bias") +
           " mult/shift values=" + std::to_string(s.mult.size());
  }
};

// Shapes up to max_dim in each dimension (not multiples of anything in particular).
inline MatmulCase random_case(std::mt19937& rng, uint32_t max_m, uint32_t max_k, uint32_t max_n) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  MatmulCase c;
  tpu::MatmulSpec& s = c.spec;
  s.m = uint32_t(pick(1, max_m));
  s.k = uint32_t(pick(1, max_k));
  s.n = uint32_t(pick(1, max_n));
  s.a_unsigned = pick(0, 1);
  s.w_unsigned = pick(0, 1);
  s.out_unsigned = pick(0, 1);
  s.func = tpu::ActFunc(pick(0, 3));
  c.a.resize(size_t(s.m) * s.k);
  c.w.resize(size_t(s.k) * s.n);
  for (auto& v : c.a) v = uint8_t(pick(0, 255));
  for (auto& v : c.w) v = uint8_t(pick(0, 255));
  // Scale so that the outputs spread over the output range instead of saturating.
  const int64_t amp = 64 + 128 * (s.a_unsigned && s.w_unsigned);
  const int64_t typical = int64_t(std::sqrt(double(s.k)) * 74 * 74) +
                          amp * int64_t(s.k) * 30 * (s.a_unsigned && s.w_unsigned);
  unsigned base_shift = 0;
  while ((int64_t{1} << base_shift) * 64 < typical) ++base_shift;
  if (pick(0, 3) > 0) {
    s.bias.resize(s.n);
    for (auto& b : s.bias) b = int32_t(pick(-typical, typical));
  }
  switch (pick(0, 2)) {
    case 0:
      break;  // mult 1, shift 0: mostly saturated (still bit-exact)
    case 1:
      s.mult = {int32_t(pick(1, 1 << 15))};
      s.shift = {uint8_t(base_shift + 15)};
      break;
    default:
      s.mult.resize(s.n);
      s.shift.resize(s.n);
      for (auto& m : s.mult) m = int32_t(pick(-(1 << 20), 1 << 20));
      for (auto& sh : s.shift) sh = uint8_t(std::min<int64_t>(63, base_shift + 20 + pick(-2, 2)));
  }
  const int lo = s.out_unsigned ? 0 : -128, hi = s.out_unsigned ? 255 : 127;
  s.zero_point = int(pick(lo, hi) / 4);
  s.clamp_lo = int(pick(lo, (lo + hi) / 2));
  s.clamp_hi = int(pick((lo + hi) / 2, hi));
  if (s.func == tpu::ActFunc::Lut) {
    s.lut.resize(256);
    for (auto& v : s.lut) v = uint8_t(pick(0, 255));
  }
  return c;
}

// A raw (int32 output) case: random_case's shapes, signednesses and bias, without what a raw
// output does not have (requantization, function, unsigned output, zero point). One case in
// four gets biases near the int32 limits, so that the bias add saturates.
inline MatmulCase random_raw_case(std::mt19937& rng, uint32_t max_m, uint32_t max_k,
                                  uint32_t max_n) {
  MatmulCase c = random_case(rng, max_m, max_k, max_n);
  tpu::MatmulSpec& s = c.spec;
  s.raw = true;
  s.func = tpu::ActFunc::Identity;
  s.out_unsigned = false;
  s.zero_point = 0;
  s.mult.clear();
  s.shift.clear();
  s.lut.clear();
  if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
    s.bias.resize(s.n);
    for (size_t i = 0; i < s.bias.size(); ++i)
      s.bias[i] = i % 2 ? INT32_MIN + int32_t(i) : INT32_MAX - int32_t(i);
  }
  return c;
}

}  // namespace tpu_test

// SPDX-License-Identifier: Apache-2.0
#include "arith.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tpu {

namespace {

// A byte as int8 or uint8.
int byte_value(uint8_t b, bool as_unsigned) { return as_unsigned ? b : static_cast<int8_t>(b); }

}  // namespace

int32_t saturating_add_int32(int32_t x, int32_t y) {
  int64_t sum = int64_t{x} + y;
  sum = std::clamp<int64_t>(sum, std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max());
  return static_cast<int32_t>(sum);
}

int64_t round_shift_half_away(int64_t p, unsigned s) {
  if (s == 0) return p;
  // (p + 2^(s-1) - (p < 0)) >> s needs 65 bits when s = 63. Split p = q * 2^s + rem with
  // q = floor(p / 2^s) and 0 <= rem < 2^s; then the sum is q * 2^s + (rem + 2^(s-1) - neg),
  // and the bracket is below 2^s + 2^(s-1) <= 1.5 * 2^63: it fits in uint64_t, and shifting
  // it by s gives 0 or 1.
  const int64_t q = p >> s;  // arithmetic shift (guaranteed since C++20, and by GCC/Clang)
  const uint64_t mask = (uint64_t{1} << s) - 1;
  const uint64_t rem = static_cast<uint64_t>(p) & mask;
  const uint64_t bracket = rem + (uint64_t{1} << (s - 1)) - (p < 0 ? 1 : 0);
  return q + static_cast<int64_t>(bracket >> s);
}

MiscFields unpack_misc(uint32_t misc, bool out_unsigned) {
  MiscFields m;
  m.shift = misc & 63;  // bits 7:6 ignored
  m.zp = byte_value(static_cast<uint8_t>(misc >> 8), out_unsigned);
  m.lo = byte_value(static_cast<uint8_t>(misc >> 16), out_unsigned);
  m.hi = byte_value(static_cast<uint8_t>(misc >> 24), out_unsigned);
  return m;
}

int requantize(int32_t acc, int32_t bias, int32_t mult, uint32_t misc, ActFunc func,
               bool out_unsigned, const uint8_t* lut) {
  const MiscFields m = unpack_misc(misc, out_unsigned);
  const int out_min = out_unsigned ? 0 : -128;
  const int out_max = out_unsigned ? 255 : 127;

  int32_t x = saturating_add_int32(acc, bias);
  int64_t p = int64_t{x} * mult;  // |p| <= 2^62: exact
  int64_t r = round_shift_half_away(p, m.shift);
  // |r| <= 2^62 and |zp| <= 255: no overflow.
  int y = static_cast<int>(std::clamp<int64_t>(r + m.zp, out_min, out_max));
  switch (func) {
    case ActFunc::Identity:
      return y;
    case ActFunc::Relu:
      return std::max(y, m.zp);
    case ActFunc::Clamp:
      return std::min(std::max(y, m.lo), m.hi);
    case ActFunc::Lut:
      if (lut == nullptr) throw std::invalid_argument("requantize: func = lut needs a LUT");
      return byte_value(lut[y & 0xFF], out_unsigned);
  }
  throw std::invalid_argument("requantize: func is not 0..3");
}

void mxu_row(const uint8_t* a, const uint8_t* w, unsigned n, bool a_unsigned, bool w_unsigned,
             int32_t* out) {
  for (unsigned col = 0; col < n; ++col) {
    // |a*w| <= 2^16 and n <= 256: the exact sum fits easily in 64 bits.
    int64_t sum = 0;
    for (unsigned k = 0; k < n; ++k) {
      sum += int64_t{byte_value(a[k], a_unsigned)} * byte_value(w[k * n + col], w_unsigned);
    }
    out[col] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
  }
}

}  // namespace tpu

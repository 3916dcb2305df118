// SPDX-License-Identifier: Apache-2.0
// Bit-exact arithmetic of the datapath, written from docs/isa.md as pure functions: the MXU
// dot product and the activation unit's requantization. The golden model uses them, and
// block-level RTL tests (MXU, activation unit) use them as their independent reference.
#pragma once

#include <cstdint>

#include "isa.h"

namespace tpu {

// x + y clamped to [INT32_MIN, INT32_MAX] (the bias add).
int32_t saturating_add_int32(int32_t x, int32_t y);

// round_half_away_from_zero(p / 2^s) for any p and s in 0..63,
// exactly as isa.md defines it:
// s == 0 ? p : (p + 2^(s-1) - (p < 0)) >> s, arithmetic shift, without overflow.
int64_t round_shift_half_away(int64_t p, unsigned s);

// The fields packed in a quantization slot's `misc` word.
struct MiscFields {
  unsigned shift;  // bits 5:0
  int zp;          // bits 15:8  } read as int8 when the output is signed,
  int lo;          // bits 23:16 } as uint8 when it is unsigned
  int hi;          // bits 31:24 }
};
MiscFields unpack_misc(uint32_t misc, bool out_unsigned);

// One accumulator value through bias, requantization, zero point, saturation and `func`
// (isa.md `activate`, everything but pooling). Returns the output value in the output type:
// -128..127 when !out_unsigned, 0..255 when out_unsigned; UB stores it as (value & 0xFF).
// `lut` (256 bytes) is read only when func == ActFunc::Lut and may be null otherwise.
int requantize(int32_t acc, int32_t bias, int32_t mult, uint32_t misc, ActFunc func,
               bool out_unsigned, const uint8_t* lut);

// One MXU row: out[n] = sum_k a[k] * w[k*N + n] for n < N, exact and then wrapped to int32.
// `a` holds N activations and `w` a row-major N x N tile, read as int8 or uint8.
void mxu_row(const uint8_t* a, const uint8_t* w, unsigned n, bool a_unsigned, bool w_unsigned,
             int32_t* out);

// Wrapping int32 add (the accumulate of `matmul acc`).
inline int32_t wrapping_add_int32(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
}

}  // namespace tpu

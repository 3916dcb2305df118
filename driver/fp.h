// SPDX-License-Identifier: Apache-2.0
// The floating-point numerics of the training configuration (docs/isa.md "Floating point"),
// bit by bit in integer arithmetic (add / mul with a native fast path, see below): fp32 add / sub /
// mul with DAZ, round to nearest even with an unbounded exponent, flush to zero after rounding, one
// canonical NaN; max / min / compares; fp32 <-> bf16; fp32 <-> int32. Values are fp32 bit patterns
// (uint32_t).
//
// The golden model and the vector-unit reference use these; the tests compare them with an
// independent reference built on the host's native float arithmetic (tests/driver/fp_test.cpp).
#pragma once

#include <cstdint>

namespace tpu::fp {

constexpr uint32_t kCanonicalNaN = 0x7FC00000u;
constexpr uint16_t kCanonicalNaNBf16 = 0x7FC0u;
constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kPosInf = 0x7F800000u;
constexpr uint32_t kNegInf = 0xFF800000u;
constexpr uint32_t kPosZero = 0u;
constexpr uint32_t kNegZero = 0x80000000u;
constexpr uint32_t kOne = 0x3F800000u;
constexpr uint32_t kMaskTrue = 0xFFFFFFFFu;  // vector compares: true
constexpr uint32_t kMaskFalse = 0u;

bool is_nan(uint32_t x);
bool is_inf(uint32_t x);
bool is_subnormal(uint32_t x);  // exponent field 0, fraction != 0
bool is_zero(uint32_t x);       // +-0 (not subnormals)

// DAZ: a subnormal reads as a zero of the same sign; every other pattern is unchanged.
uint32_t daz(uint32_t x);

// value = (-1)^negative * mag * 2^exp2, rounded to 24 significant bits (nearest, ties to
// even) with an unbounded exponent, then flushed to a signed zero below 2^-126 or made a
// signed infinity at or above 2^128. mag == 0 gives a zero with the given sign.
uint32_t round_pack(bool negative, uint64_t mag, int exp2);

uint32_t add(uint32_t a, uint32_t b);
uint32_t sub(uint32_t a, uint32_t b);  // a - b
uint32_t mul(uint32_t a, uint32_t b);
// add and mul in integer arithmetic only. add / mul take a native-float fast path where IEEE
// arithmetic and the contract agree (operands zero or normal, result zero, infinite or normal
// above 2^-126) and these otherwise; the tests check both against the reference.
uint32_t add_exact(uint32_t a, uint32_t b);
uint32_t mul_exact(uint32_t a, uint32_t b);
uint32_t max(uint32_t a, uint32_t b);  // NaN -> canonical NaN; -0 < +0
uint32_t min(uint32_t a, uint32_t b);
bool lt(uint32_t a, uint32_t b);  // DAZ; -0 == +0; NaN -> false
bool le(uint32_t a, uint32_t b);
bool eq(uint32_t a, uint32_t b);

// fp32 -> bf16: DAZ, NaN -> 0x7FC0, round the pattern to its upper 16 bits, ties to even.
uint16_t to_bf16(uint32_t x);
// bf16 -> fp32: append 16 zero bits; DAZ (a bf16 subnormal becomes a signed zero).
uint32_t from_bf16(uint16_t h);
// fp32 -> bf16 -> fp32 (the MXU's input rounding).
inline uint32_t round_bf16(uint32_t x) { return from_bf16(to_bf16(x)); }

// fp32 -> int32: DAZ, round to nearest even, saturate to [INT32_MIN, INT32_MAX], NaN -> 0.
int32_t to_int32(uint32_t x);
// int32 -> fp32, round to nearest even.
uint32_t from_int32(int32_t v);

// One output column of the bf16 matrix unit: s = +0; s = add(s, mul(a[k], w[k])) for k in
// order. a and w are bf16 patterns (n of each).
uint32_t bf16_dot(const uint16_t* a, const uint16_t* w, unsigned n, unsigned w_stride);

// Bit pattern <-> float (memcpy).
uint32_t bits_of(float f);
float float_of(uint32_t bits);

}  // namespace tpu::fp

// SPDX-License-Identifier: Apache-2.0
// The error of the function sequences (driver/fp_sequences.h) against the exact function in
// double precision, in ulp of the exact result's fp32 binade, over fp32 input ranges.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "fp.h"
#include "fp_sequences.h"

namespace tpu::fp_error {

struct Domain {
  uint32_t lo, hi;  // fp32 patterns, inclusive, lo <= hi (one sign)
};

struct FunctionSpec {
  FpFunction f;
  double (*exact)(double);
  std::vector<Domain> domains;  // inputs whose exact result is a normal fp32
  double bound_ulp;             // the documented maximum error (docs/isa.md)
};

inline double exact_exp(double x) { return std::exp(x); }
inline double exact_log(double x) { return std::log(x); }
inline double exact_rcp(double x) { return 1.0 / x; }
inline double exact_rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double exact_sqrt(double x) { return std::sqrt(x); }

// docs/isa.md "Function sequences: definitions and error".
inline const std::vector<FunctionSpec>& specs() {
  static const std::vector<FunctionSpec> kSpecs = {
      {FpFunction::Exp, exact_exp, {{0x00000000, 0x42B17217}, {0x80000000, 0xC2AEAC4F}}, 1.5},
      {FpFunction::Log, exact_log, {{0x00800000, 0x7F7FFFFF}}, 2.0},
      {FpFunction::Rcp, exact_rcp, {{0x00800000, 0x7E000000}, {0x80800000, 0xFE000000}}, 2.5},
      {FpFunction::Rsqrt, exact_rsqrt, {{0x00800000, 0x7F7FFFFF}}, 1.5},
      {FpFunction::Sqrt, exact_sqrt, {{0x00800000, 0x7F7FFFFF}}, 2.5},
  };
  return kSpecs;
}

struct Worst {
  double ulp = 0;
  uint32_t x = 0;
  uint64_t points = 0;
};

// |got - exact| / 2^(floor(log2 |exact|) - 23), the worst over every `step`-th pattern of
// the domains (and each domain's last pattern).
inline Worst measure(const FunctionSpec& s, uint64_t step) {
  const FpSequence& seq = fp_sequence(s.f);
  Worst w;
  auto one = [&](uint32_t x) {
    const double want = s.exact(static_cast<double>(fp::float_of(x)));
    const double got = static_cast<double>(fp::float_of(eval_sequence(seq, x)));
    int e = 0;
    std::frexp(want, &e);
    const double err = std::fabs(got - want) / std::ldexp(1.0, e - 24);
    ++w.points;
    if (!(err <= w.ulp)) {  // NaN counts as worse than anything
      w.ulp = err;
      w.x = x;
    }
  };
  for (const Domain& d : s.domains) {
    for (uint64_t x = d.lo; x <= d.hi; x += step) one(static_cast<uint32_t>(x));
    one(d.hi);
  }
  return w;
}

}  // namespace tpu::fp_error

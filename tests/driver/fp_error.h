// SPDX-License-Identifier: Apache-2.0
// The error of the function sequences (driver/fp_sequences.h) against the exact function in
// double precision, in ulp of the exact result's fp32 binade, over fp32 input ranges.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <thread>
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

// The exact functions in long double (x86: 64 significant bits; the libm functions are
// within an ulp of that, 2^-40 of an fp32 ulp), rounded once to double: for an fp32 error
// measurement that is exact to far below the printed 0.001 ulp.
inline double exact_exp(double x) {
  return static_cast<double>(std::exp(static_cast<long double>(x)));
}
inline double exact_log(double x) {
  return static_cast<double>(std::log(static_cast<long double>(x)));
}
inline double exact_rcp(double x) {
  return static_cast<double>(1.0L / static_cast<long double>(x));
}
inline double exact_rsqrt(double x) {
  return static_cast<double>(1.0L / std::sqrt(static_cast<long double>(x)));
}
inline double exact_sqrt(double x) {
  return static_cast<double>(std::sqrt(static_cast<long double>(x)));
}

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

inline const FunctionSpec& spec(FpFunction f) {
  for (const FunctionSpec& s : specs()) {
    if (s.f == f) return s;
  }
  throw std::invalid_argument("fp_error::spec: no such function");
}

struct Worst {
  double ulp = 0;
  uint32_t x = 0;
  uint64_t points = 0;
};

// |got - exact| / 2^(floor(log2 |exact|) - 23) of one input.
inline double error_ulp(const FunctionSpec& s, const FpSequence& seq, uint32_t x) {
  const double want = s.exact(static_cast<double>(fp::float_of(x)));
  const double got = static_cast<double>(fp::float_of(eval_sequence(seq, x)));
  int e = 0;
  std::frexp(want, &e);
  return std::fabs(got - want) / std::ldexp(1.0, e - 24);
}

// Keeps the larger error (a NaN error, a NaN or wrong-class result, beats everything and is
// kept); of equal errors the smaller pattern.
inline void worse(Worst& w, double err, uint32_t x) {
  if (std::isnan(w.ulp)) return;
  if (std::isnan(err) || err > w.ulp || (err == w.ulp && x < w.x)) {
    w.ulp = err;
    w.x = x;
  }
}

// The worst over every `step`-th pattern of the domains and each domain's last pattern,
// with `threads` threads (each takes an interleaved share of the patterns; the result does
// not depend on the thread count: ties go to the smallest pattern).
inline Worst measure(const FunctionSpec& s, uint64_t step, unsigned threads = 1) {
  const FpSequence& seq = fp_sequence(s.f);
  threads = std::max(1u, threads);
  std::vector<Worst> part(threads);
  auto work = [&](unsigned t) {
    Worst& w = part[t];
    for (const Domain& d : s.domains) {
      const uint64_t count = (uint64_t{d.hi} - d.lo) / step + 1;
      for (uint64_t i = t; i < count; i += threads) {
        const auto x = static_cast<uint32_t>(d.lo + i * step);
        worse(w, error_ulp(s, seq, x), x);
        ++w.points;
      }
      if (t == 0 && (uint64_t{d.hi} - d.lo) % step != 0) {  // the last pattern, if skipped
        worse(w, error_ulp(s, seq, d.hi), d.hi);
        ++w.points;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  Worst all;
  for (const Worst& w : part) {
    worse(all, w.ulp, w.x);
    all.points += w.points;
  }
  return all;
}

}  // namespace tpu::fp_error

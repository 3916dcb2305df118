// SPDX-License-Identifier: Apache-2.0
#include "fp_sequences.h"

#include <array>
#include <stdexcept>

#include "vector_unit.h"

namespace tpu {

namespace {

using T = SeqTensor;
using F = VecFunc;

// ---- constants (fp32 / int32 bit patterns), docs/isa.md "Function sequences"
constexpr uint32_t kOne = 0x3F800000;    // 1.0
constexpr uint32_t kHalf = 0x3F000000;   // 0.5
constexpr uint32_t kTwo = 0x40000000;    // 2.0
constexpr uint32_t kExpHi = 0x42B20000;  // 89.0: above it exp overflows anyway
constexpr uint32_t kExpLo = 0xC2D00000;  // -104.0: below it exp flushes to 0 anyway
constexpr uint32_t kLog2E = 0x3FB8AA3B;  // log2(e)
constexpr uint32_t kLn2Hi = 0x3F317200;  // ln 2, 16 significant bits (k * kLn2Hi is exact)
constexpr uint32_t kLn2Lo = 0x35BFBE8E;  // ln 2 - kLn2Hi
// e^r ~ sum r^k / k!, k = 0..7 (Taylor; |r| <= ln2/2, truncation below 0.1 ulp)
constexpr std::array<uint32_t, 8> kExpC = {0x3F800000, 0x3F800000, 0x3F000000, 0x3E2AAAAB,
                                           0x3D2AAAAB, 0x3C088889, 0x3AB60B61, 0x39500D01};
constexpr uint32_t kSqrtHalfBits = 0x3F3504F3;  // sqrt(0.5)
constexpr uint32_t kFracMask = 0x007FFFFF;
// log1p(f) / f ~ sum q_k f^k on [sqrt(0.5) - 1, sqrt(2) - 1] (least squares, degree 9)
constexpr std::array<uint32_t, 10> kLogQ = {0x3F800000, 0xBEFFFFFC, 0x3EAAAAA8, 0xBE800214,
                                            0x3E4CD23B, 0xBE2A13D3, 0x3E113437, 0xBE079618,
                                            0x3E043DCF, 0xBD9C7055};
constexpr uint32_t kRcpMagic = 0x7EF311C3;    // 1/x ~ kRcpMagic - bits(x)
constexpr uint32_t kRsqrtMagic = 0x5F3759DF;  // 1/sqrt(x) ~ kRsqrtMagic - bits(x)/2
constexpr uint32_t kAbsMask = 0x7FFFFFFF;
constexpr uint32_t kAllOnes = 0xFFFFFFFF;
constexpr uint32_t kMinNormal = 0x00800000;  // 2^-126
constexpr int kRcpNewtonSteps = 3;
constexpr int kRsqrtNewtonSteps = 3;

SeqStep imm(F f, T dst, T a, uint32_t value) { return SeqStep{f, dst, a, true, T::X, value}; }
SeqStep row(F f, T dst, T a, T b) { return SeqStep{f, dst, a, false, b, 0}; }
SeqStep unary(F f, T dst, T a) { return SeqStep{f, dst, a, false, T::X, 0}; }

// p = c[n-1]; p = p * x + c[k] for k = n-2 .. 0, into `p` (x a tensor).
void horner(std::vector<SeqStep>& s, T p, T x, const uint32_t* c, int n) {
  s.push_back(imm(F::FMul, p, x, c[n - 1]));
  s.push_back(imm(F::FAdd, p, p, c[n - 2]));
  for (int k = n - 3; k >= 0; --k) {
    s.push_back(row(F::FMul, p, p, x));
    s.push_back(imm(F::FAdd, p, p, c[k]));
  }
}

FpSequence make_exp() {
  // S0 = clamped x, then r; S1 = k as float, then k1; S2 = k (int), then k2; S3 = products, p.
  std::vector<SeqStep> s = {
      imm(F::FMin, T::S0, T::X, kExpHi),  imm(F::FMax, T::S0, T::S0, kExpLo),
      imm(F::FMul, T::S1, T::S0, kLog2E), unary(F::F2I, T::S2, T::S1),
      unary(F::I2F, T::S1, T::S2),        imm(F::FMul, T::S3, T::S1, kLn2Hi),
      row(F::FSub, T::S0, T::S0, T::S3),  imm(F::FMul, T::S3, T::S1, kLn2Lo),
      row(F::FSub, T::S0, T::S0, T::S3),
  };
  horner(s, T::S3, T::S0, kExpC.data(), static_cast<int>(kExpC.size()));
  const std::vector<SeqStep> scale = {
      imm(F::Sra, T::S1, T::S2, 1),      row(F::ISub, T::S2, T::S2, T::S1),
      imm(F::IAdd, T::S1, T::S1, 127),   imm(F::Shl, T::S1, T::S1, 23),
      row(F::FMul, T::S3, T::S3, T::S1), imm(F::IAdd, T::S2, T::S2, 127),
      imm(F::Shl, T::S2, T::S2, 23),     row(F::FMul, T::Y, T::S3, T::S2),
  };
  s.insert(s.end(), scale.begin(), scale.end());
  return FpSequence{"exp", 4, s};
}

FpSequence make_log() {
  // S0 = bits - sqrt(0.5), then m, then f; S1 = e; S2 = q.
  std::vector<SeqStep> s = {
      imm(F::ISub, T::S0, T::X, kSqrtHalfBits), imm(F::Sra, T::S1, T::S0, 23),
      imm(F::And, T::S0, T::S0, kFracMask),     imm(F::IAdd, T::S0, T::S0, kSqrtHalfBits),
      imm(F::FSub, T::S0, T::S0, kOne),
  };
  horner(s, T::S2, T::S0, kLogQ.data(), static_cast<int>(kLogQ.size()));
  const std::vector<SeqStep> tail = {
      row(F::FMul, T::S2, T::S2, T::S0),  unary(F::I2F, T::S1, T::S1),
      imm(F::FMul, T::S0, T::S1, kLn2Lo), row(F::FAdd, T::S2, T::S2, T::S0),
      imm(F::FMul, T::S0, T::S1, kLn2Hi), row(F::FAdd, T::Y, T::S0, T::S2),
  };
  s.insert(s.end(), tail.begin(), tail.end());
  return FpSequence{"log", 3, s};
}

FpSequence make_rcp() {
  // S0 = sign, S1 = |x|, S2 = y, S3 = correction.
  std::vector<SeqStep> s = {
      imm(F::And, T::S0, T::X, 0x80000000u),
      imm(F::And, T::S1, T::X, kAbsMask),
      imm(F::Xor, T::S2, T::S1, kAllOnes),
      imm(F::IAdd, T::S2, T::S2, kRcpMagic + 1),
  };
  for (int i = 0; i < kRcpNewtonSteps; ++i) {  // y = y (2 - |x| y): no tiny intermediate
    s.push_back(row(F::FMul, T::S3, T::S1, T::S2));
    s.push_back(imm(F::FSubR, T::S3, T::S3, kTwo));
    s.push_back(row(F::FMul, T::S2, T::S2, T::S3));
  }
  // y += y (1 - |x| y): the last step rounds better (its correction is flushed to 0 when
  // y < ~2^-102, leaving the previous y)
  s.push_back(row(F::FMul, T::S3, T::S1, T::S2));
  s.push_back(imm(F::FSubR, T::S3, T::S3, kOne));
  s.push_back(row(F::FMul, T::S3, T::S3, T::S2));
  s.push_back(row(F::FAdd, T::S2, T::S2, T::S3));
  s.push_back(row(F::Or, T::Y, T::S2, T::S0));
  return FpSequence{"rcp", 4, s};
}

// rsqrt of tensor `x` into `y` with scratch s0, s1 (y written only by the last step).
void append_rsqrt(std::vector<SeqStep>& s, T x, T y, T s0, T s1) {
  s.push_back(imm(F::Shr, s0, x, 1));
  s.push_back(imm(F::Xor, s0, s0, kAllOnes));
  s.push_back(imm(F::IAdd, s0, s0, kRsqrtMagic + 1));
  for (int i = 0; i < kRsqrtNewtonSteps; ++i) {  // y += y (1 - x y^2) / 2
    s.push_back(row(F::FMul, s1, x, s0));
    s.push_back(row(F::FMul, s1, s1, s0));
    s.push_back(imm(F::FSubR, s1, s1, kOne));
    s.push_back(row(F::FMul, s1, s1, s0));
    s.push_back(imm(F::FMul, s1, s1, kHalf));
    s.push_back(row(F::FAdd, i + 1 == kRsqrtNewtonSteps ? y : s0, s0, s1));
  }
}

FpSequence make_rsqrt() {
  std::vector<SeqStep> s;
  append_rsqrt(s, T::X, T::Y, T::S0, T::S1);
  return FpSequence{"rsqrt", 2, s};
}

FpSequence make_sqrt() {
  // S2 = max(x, 2^-126), then its rsqrt; y = x * that (0 -> 0).
  std::vector<SeqStep> s = {imm(F::FMax, T::S2, T::X, kMinNormal)};
  append_rsqrt(s, T::S2, T::S2, T::S0, T::S1);
  s.push_back(row(F::FMul, T::Y, T::X, T::S2));
  return FpSequence{"sqrt", 3, s};
}

}  // namespace

const FpSequence& fp_sequence(FpFunction f) {
  static const FpSequence kExp = make_exp(), kLog = make_log(), kRcp = make_rcp(),
                          kRsqrt = make_rsqrt(), kSqrt = make_sqrt();
  switch (f) {
    case FpFunction::Exp:
      return kExp;
    case FpFunction::Log:
      return kLog;
    case FpFunction::Rcp:
      return kRcp;
    case FpFunction::Rsqrt:
      return kRsqrt;
    case FpFunction::Sqrt:
      return kSqrt;
  }
  throw std::invalid_argument("fp_sequence: not a function");
}

const std::vector<FpFunction>& all_fp_functions() {
  static const std::vector<FpFunction> kAll = {FpFunction::Exp, FpFunction::Log, FpFunction::Rcp,
                                               FpFunction::Rsqrt, FpFunction::Sqrt};
  return kAll;
}

uint32_t eval_sequence(const FpSequence& seq, uint32_t x) {
  std::array<uint32_t, 6> t{};  // X, Y, S0..S3
  t[static_cast<size_t>(T::X)] = x;
  for (const SeqStep& st : seq.steps) {
    const uint32_t a = t[static_cast<size_t>(st.a)];
    const uint32_t b = st.b_is_imm ? st.imm : t[static_cast<size_t>(st.b)];
    t[static_cast<size_t>(st.dst)] = vector_lane(st.func, a, b);
  }
  return t[static_cast<size_t>(T::Y)];
}

}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
#include "detail.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels.h"

namespace tpu::train {

namespace {

constexpr uint32_t kMaxVecInner = 255;  // vector inner count (8 bits)

}  // namespace

uint32_t imm(float f) {
  uint32_t b;
  static_assert(sizeof b == sizeof f, "fp32");
  std::memcpy(&b, &f, sizeof b);
  return b;
}

void detail::require(bool ok, const char* kernel, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(kernel) + ": " + what);
}

void detail::clear_own_padding(ProgramBuilder& pb, const VMat& m) {
  if (m.pitch - m.rows < pb.params().N) clear_padding_rows(pb, m);
}

void detail::row_sum(ProgramBuilder& pb, uint32_t dst, uint32_t a, uint32_t rows, uint32_t outer,
                     uint32_t a_outer_stride) {
  for (uint32_t first = 0; first < rows; first += kMaxVecInner) {
    Vector v;
    v.func = static_cast<uint8_t>(VecFunc::RSum);
    v.bmode = first == 0 ? BMode::Imm : BMode::RowDst;
    v.dst = static_cast<uint16_t>(dst);
    v.a = static_cast<uint16_t>(a + first);
    v.inner = static_cast<uint8_t>(std::min(kMaxVecInner, rows - first));
    v.outer = static_cast<uint16_t>(outer);
    v.a_inner_stride = 1;
    v.a_outer_stride = static_cast<uint16_t>(a_outer_stride);
    v.dst_outer_stride = 1;
    v.b = first == 0 ? detail::kNegZero : dst;
    pb.vector(v);
  }
}

}  // namespace tpu::train

#include "vec2d.h"

namespace tpu::train {

void detail::vec2d(ProgramBuilder& pb, const char* kernel, VecFunc f, const Pattern& dst,
                   const Pattern& a, BMode bmode, uint32_t b, uint32_t inner, uint32_t outer) {
  constexpr uint32_t kMaxOuter = 1023, kMaxInnerStride = 15, kMaxOuterStride = 2047;
  require(inner >= 1 && inner <= kMaxVecInner, kernel,
          "vector inner count " + std::to_string(inner) + " (allowed 1..255)");
  require(dst.inner_stride <= kMaxInnerStride && a.inner_stride <= kMaxInnerStride, kernel,
          "vector inner stride above 15");
  require(dst.outer_stride <= kMaxOuterStride && a.outer_stride <= kMaxOuterStride, kernel,
          "vector outer stride " + std::to_string(std::max(dst.outer_stride, a.outer_stride)) +
              " above 2047");
  for (uint32_t first = 0; first < outer; first += kMaxOuter) {
    Vector v;
    v.func = static_cast<uint8_t>(f);
    v.bmode = bmode;
    v.dst = static_cast<uint16_t>(dst.base + first * dst.outer_stride);
    v.a = static_cast<uint16_t>(a.base + first * a.outer_stride);
    v.inner = static_cast<uint8_t>(inner);
    v.outer = static_cast<uint16_t>(std::min(kMaxOuter, outer - first));
    v.a_inner_stride = static_cast<uint8_t>(a.inner_stride);
    v.a_outer_stride = static_cast<uint16_t>(a.outer_stride);
    v.dst_inner_stride = static_cast<uint8_t>(dst.inner_stride);
    v.dst_outer_stride = static_cast<uint16_t>(dst.outer_stride);
    v.b = b;
    if (bmode == BMode::RowA) v.b = b + first * a.outer_stride;
    if (bmode == BMode::RowDst) v.b = b + first * dst.outer_stride;
    pb.vector(v);
  }
}

}  // namespace tpu::train

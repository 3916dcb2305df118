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

// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the training kernels' sources (not part of the interface).
#pragma once

#include <cstdint>
#include <string>

#include "layout.h"

namespace tpu::train::detail {

constexpr uint32_t kNegZero = 0x80000000u;  // -0.0: the identity of an fp sum
constexpr uint32_t kOne = 0x3F800000u;      // 1.0f

// Throws std::invalid_argument("<kernel>: <what>") unless ok.
void require(bool ok, const char* kernel, const std::string& what);

// Per lane, dst + o = (-0.0 + A[a + o*stride] + ... + A[a + o*stride + rows-1]) for o < outer,
// rows in order (rsum, chained 255 rows at a time through bmode dst).
void row_sum(ProgramBuilder& pb, uint32_t dst, uint32_t a, uint32_t rows, uint32_t outer,
             uint32_t a_outer_stride);

// clear_padding_rows(m) unless m is a view into a larger tensor (pitch - rows >= N: a band of
// lines; the rows past `rows` belong to the rest of the tensor).
void clear_own_padding(ProgramBuilder& pb, const VMat& m);

}  // namespace tpu::train::detail

// SPDX-License-Identifier: Apache-2.0
// The lane arithmetic of the vector unit (docs/isa.md `vector`), as pure functions on 32-bit
// patterns: the golden model (driver/golden_vector.cpp) and the function-sequence evaluator
// (driver/fp_sequences.h) both use them.
#pragma once

#include <cstdint>

#include "isa.h"

namespace tpu {

// f(a, b) for one lane of an element-wise func (everything but the reductions and align;
// unary funcs ignore b). Throws std::invalid_argument for other funcs.
uint32_t vector_lane(VecFunc f, uint32_t a, uint32_t b);

// The fp operation a reduction folds with: lsum / rsum -> add, lmax / rmax -> max,
// lmin / rmin -> min.
uint32_t reduce_step(VecFunc f, uint32_t s, uint32_t x);

// The lane reduction's fixed tree over n lanes (n a power of two): for h = n/2 .. 1,
// x[j] = op(x[j], x[j + h]) for j < h; returns x[0]. `x` is scratch (overwritten).
uint32_t lane_reduce(VecFunc f, uint32_t* x, unsigned n);

}  // namespace tpu

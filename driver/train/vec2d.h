// SPDX-License-Identifier: Apache-2.0
// One `vector` instruction on 2-D row patterns (isa.md `vector`), with its field limits
// checked and named (not part of the interface; used by conv.cpp and pool.cpp).
#pragma once

#include <cstdint>

#include "layout.h"

namespace tpu::train::detail {

struct Pattern {
  uint32_t base = 0;
  uint32_t inner_stride = 1;
  uint32_t outer_stride = 0;
};

// dst(o, i) = f(a(o, i), B) for o < outer, i < inner; B per `bmode`: RowA (b on a's
// pattern), RowDst (b on dst's pattern), Fixed (row b), Imm (b is the immediate). Outer counts
// above the field's 1023 are split into several instructions.
void vec2d(ProgramBuilder& pb, const char* kernel, VecFunc f, const Pattern& dst, const Pattern& a,
           BMode bmode, uint32_t b, uint32_t inner, uint32_t outer);

}  // namespace tpu::train::detail

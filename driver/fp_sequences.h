// SPDX-License-Identifier: Apache-2.0
// exp, log, reciprocal, rsqrt and sqrt as fixed sequences of vector-unit operations
// (docs/isa.md "Function sequences"). The vector unit has no transcendental hardware:
// ProgramBuilder::vexp etc. (program.h) emit one `vector` instruction per step over a tensor,
// so the golden model reproduces every result bit. eval_sequence() computes one lane of the
// same steps (the same lane arithmetic, vector_unit.h) so the error of each function can be
// measured over every fp32 input without building programs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "isa.h"

namespace tpu {

// The tensors a step reads and writes: the input X, the output Y and scratch tensors.
// Y is written only by the last step, so Y may be the same tensor as X.
enum class SeqTensor : uint8_t { X, Y, S0, S1, S2, S3 };

struct SeqStep {
  VecFunc func;
  SeqTensor dst;
  SeqTensor a;
  bool b_is_imm;  // B is the immediate `imm` in every lane, else the tensor `b`
  SeqTensor b;
  uint32_t imm;
};

enum class FpFunction { Exp, Log, Rcp, Rsqrt, Sqrt };

struct FpSequence {
  std::string_view name;  // "exp", ...
  unsigned scratch;       // scratch tensors used (S0 .. S<scratch-1>)
  std::vector<SeqStep> steps;
};

const FpSequence& fp_sequence(FpFunction f);
const std::vector<FpFunction>& all_fp_functions();

// One lane of the sequence applied to the fp32 pattern x; returns the result pattern.
uint32_t eval_sequence(const FpSequence& seq, uint32_t x);

}  // namespace tpu

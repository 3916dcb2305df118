// SPDX-License-Identifier: Apache-2.0
#include "compiler/interleave.h"

#include <variant>

namespace tpu::train::compiler {

std::vector<size_t> spread_reads(const std::vector<Instruction>& compute, size_t from,
                                 size_t count) {
  std::vector<size_t> matmuls;
  for (size_t i = from + 1; i < compute.size(); ++i) {
    if (std::holds_alternative<MatmulBf16>(compute[i])) matmuls.push_back(i);
  }
  std::vector<size_t> at(count, from);
  for (size_t r = 1; r < count && !matmuls.empty(); ++r) {
    at[r] = matmuls[r * matmuls.size() / count];
  }
  return at;
}

}  // namespace tpu::train::compiler

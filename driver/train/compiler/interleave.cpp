// SPDX-License-Identifier: Apache-2.0
#include "compiler/interleave.h"

#include <algorithm>
#include <variant>

#include "compiler/emit.h"

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

namespace {

struct Rows {
  uint64_t first, last;
};
bool overlap(const Rows& a, const Rows& b) { return a.first <= b.last && b.first <= a.last; }
// The VMEM rows a load_weights or matmul_bf16 reads (a bounding interval).
Rows read_rows(const Instruction& i) {
  if (const auto* lw = std::get_if<LoadWeights>(&i)) return Rows{lw->vmem_addr, lw->last_row()};
  const auto& mm = std::get<MatmulBf16>(i);
  return Rows{mm.vmem_addr, mm.last_vmem_row()};
}
bool is_mxu(const Instruction& i) {
  return std::holds_alternative<LoadWeights>(i) || std::holds_alternative<MatmulBf16>(i);
}

// Whether jumping `in` over the loads / matmuls [m0, m1) keeps every result: it writes no VMEM
// row they read and reads no ACC row they write (a write_vmem reads VMEM, writes host memory).
bool may_jump(const Instruction& in, const std::vector<Instruction>& v, size_t m0, size_t m1) {
  for (size_t m = m0; m < m1; ++m) {
    if (const auto* vec = std::get_if<Vector>(&in)) {
      if (overlap(Rows{vec->dst, vec->dst_row(vec->outer - 1u, vec->inner - 1u)}, read_rows(v[m])))
        return false;
    } else if (const auto* mv = std::get_if<AccToVmem>(&in)) {
      const Rows vm{mv->vmem_addr, uint64_t{mv->vmem_addr} + mv->rows - 1};
      if (overlap(vm, read_rows(v[m]))) return false;
      const auto* mm = std::get_if<MatmulBf16>(&v[m]);
      const Rows acc{mv->acc_addr, uint64_t{mv->acc_addr} + mv->rows - 1};
      if (mm != nullptr &&
          overlap(acc,
                  Rows{mm->acc_addr, uint64_t{mm->acc_addr} + uint64_t{mm->inner} * mm->outer - 1}))
        return false;
    } else if (!std::holds_alternative<WriteVmem>(in)) {
      return false;
    }
  }
  return true;
}
bool jumpable(const Instruction& i) {
  return std::holds_alternative<Vector>(i) || std::holds_alternative<AccToVmem>(i) ||
         std::holds_alternative<WriteVmem>(i);
}

}  // namespace

std::vector<Instruction> hoist_matmuls(const std::vector<Instruction>& in) {
  std::vector<Instruction> out;
  out.reserve(in.size());
  auto copy = [&](size_t a, size_t b) {
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(a),
               in.begin() + static_cast<std::ptrdiff_t>(b));
  };
  size_t i = 0;
  while (i < in.size()) {
    if (!jumpable(in[i])) {
      out.push_back(in[i++]);
      continue;
    }
    size_t j_end = i;
    bool vector = false;
    for (; j_end < in.size() && jumpable(in[j_end]); ++j_end)
      vector = vector || std::holds_alternative<Vector>(in[j_end]);
    size_t m_end = j_end;
    bool matmul = false;
    for (; m_end < in.size() && is_mxu(in[m_end]); ++m_end)
      matmul = matmul || std::holds_alternative<MatmulBf16>(in[m_end]);
    // The loads and matmuls go ahead of the longest tail of the run they may all jump.
    size_t from = j_end;
    while (vector && matmul && from > i && may_jump(in[from - 1], in, j_end, m_end)) --from;
    bool tail_vector = false;
    for (size_t k = from; k < j_end; ++k)
      tail_vector = tail_vector || std::holds_alternative<Vector>(in[k]);
    if (!tail_vector) from = j_end;
    copy(i, from);
    copy(j_end, m_end);
    copy(from, j_end);
    i = m_end;
  }
  return out;
}

std::vector<Instruction> overlay(const std::vector<Instruction>& main,
                                 const std::vector<Instruction>& side, const ChipParams& chip) {
  std::vector<Instruction> out;
  out.reserve(main.size() + side.size());
  uint64_t lw = 0, mm = 0, other = 0, free_at = 0;
  size_t next = 0;
  for (const Instruction& m : main) {
    out.push_back(m);
    const uint64_t w = instruction_work(m, chip);
    if (std::holds_alternative<LoadWeights>(m)) {
      lw += w;
    } else if (std::holds_alternative<MatmulBf16>(m)) {
      mm += w;
    } else {
      other += w;
    }
    const uint64_t t = std::max(lw, mm) + other;
    for (; next < side.size() && t >= free_at; ++next) {
      out.push_back(side[next]);
      const uint64_t sw = instruction_work(side[next], chip);
      free_at = t + (std::holds_alternative<Vector>(side[next])
                         ? (sw + kOverlayVectorRows - 1) / kOverlayVectorRows
                         : sw);
    }
  }
  out.insert(out.end(), side.begin() + static_cast<std::ptrdiff_t>(next), side.end());
  return out;
}

}  // namespace tpu::train::compiler

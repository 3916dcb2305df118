// SPDX-License-Identifier: Apache-2.0
#include "compiler/interleave.h"

#include <algorithm>
#include <limits>
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

std::vector<size_t> update_read_anchors(const std::vector<Instruction>& compute, size_t count) {
  size_t first_mm = compute.size(), last_move = compute.size();
  for (size_t i = 0; i < compute.size(); ++i) {
    if (first_mm == compute.size() && std::holds_alternative<MatmulBf16>(compute[i])) first_mm = i;
    if (std::holds_alternative<AccToVmem>(compute[i])) last_move = i;
  }
  if (count == 0 || first_mm == compute.size() || last_move == compute.size() ||
      last_move < first_mm)
    return {};
  std::vector<size_t> passes;
  for (size_t i = last_move + 1; i < compute.size(); ++i) {
    if (std::holds_alternative<Vector>(compute[i])) passes.push_back(i);
  }
  if (passes.empty()) return {};
  std::vector<size_t> at{first_mm};
  for (size_t k = 1; k < count; ++k) at.push_back(passes[k * passes.size() / count]);
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

namespace tpu::train::compiler {

namespace {

// Bounding intervals of what an instruction reads and writes (isa.md "Ordering").
struct Span {
  uint64_t lo = 1, hi = 0;  // empty when lo > hi
};
bool meet(const Span& a, const Span& b) {
  return a.lo <= a.hi && b.lo <= b.hi && a.lo <= b.hi && b.lo <= a.hi;
}
Span span_of(uint64_t first, uint64_t count) { return Span{first, first + count - 1}; }
struct Access {
  Span vr, vw, ar, aw, hr, hw;  // VMEM, ACC, host bytes; read and written
  bool fifo = false;            // pushes or pops the weight FIFO
  bool known = true;            // a training instruction whose ranges are listed here
};

Access access_of(const Instruction& in, uint32_t n) {
  Access a;
  if (const auto* rv = std::get_if<ReadVmem>(&in)) {
    a.vw = span_of(rv->vmem_addr, rv->rows);
    a.hr = span_of(rv->host_addr, rv->host_span(n));
  } else if (const auto* wv = std::get_if<WriteVmem>(&in)) {
    a.vr = span_of(wv->vmem_addr, wv->rows);
    a.hw = span_of(wv->host_addr, wv->host_span(n));
  } else if (const auto* lw = std::get_if<LoadWeights>(&in)) {
    a.vr = Span{lw->vmem_addr, lw->last_row()};
    a.fifo = true;
  } else if (const auto* mm = std::get_if<MatmulBf16>(&in)) {
    a.vr = Span{mm->vmem_addr, mm->last_vmem_row()};
    a.aw = span_of(mm->acc_addr, uint64_t{mm->inner} * mm->outer);
    if (mm->accumulate) a.ar = a.aw;
    a.fifo = true;
  } else if (const auto* av = std::get_if<AccToVmem>(&in)) {
    a.ar = span_of(av->acc_addr, av->rows);
    a.vw = span_of(av->vmem_addr, av->rows);
  } else if (const auto* tr = std::get_if<Transpose>(&in)) {
    a.vr = Span{tr->src, tr->last_src_row(n)};
    a.vw = Span{tr->dst, tr->last_dst_row(n)};
  } else if (const auto* v = std::get_if<Vector>(&in)) {
    const uint32_t o = v->outer - 1u, i = v->inner - 1u;
    a.vw = Span{v->dst, v->dst_row(o, i)};
    const bool align_next = v->vec_func() == VecFunc::Align && v->b > 0;
    a.vr = Span{v->a, v->a_row(o, i) + (align_next ? 1 : 0)};
    if (v->bmode != BMode::Imm && !is_unary_vec_func(v->func)) {
      a.vr.lo = std::min<uint64_t>(a.vr.lo, v->b);
      a.vr.hi = std::max<uint64_t>(a.vr.hi, v->b_row(o, i));
    }
  } else {
    a.known = false;
  }
  return a;
}

// No row one writes and the other reads or writes (the weight FIFO aside).
bool disjoint(const Access& x, const Access& y) {
  if (!x.known || !y.known) return false;
  auto rw = [](const Span& r1, const Span& w1, const Span& r2, const Span& w2) {
    return meet(w1, r2) || meet(w1, w2) || meet(r1, w2);
  };
  return !rw(x.vr, x.vw, y.vr, y.vw) && !rw(x.ar, x.aw, y.ar, y.aw) && !rw(x.hr, x.hw, y.hr, y.hw);
}

// Per gap g (before instruction g; g = size: the end) of a stream, whether the weight FIFO is
// between uses there: no tile pushed and not yet made active, and the stream's next matmul
// (if any) makes a new tile active.
std::vector<bool> fifo_quiet(const std::vector<Instruction>& s) {
  std::vector<bool> q(s.size() + 1, false);
  bool next_switches = true;  // of the next matmul at or after the gap
  std::vector<bool> sw(s.size() + 1, true);
  for (size_t g = s.size(); g-- > 0;) {
    if (const auto* mm = std::get_if<MatmulBf16>(&s[g])) next_switches = mm->switch_weights;
    sw[g] = next_switches;
  }
  uint64_t pending = 0;
  for (size_t g = 0; g <= s.size(); ++g) {
    q[g] = pending == 0 && sw[g];
    if (g == s.size()) break;
    if (const auto* lw = std::get_if<LoadWeights>(&s[g])) pending += lw->tiles;
    if (const auto* mm = std::get_if<MatmulBf16>(&s[g]); mm != nullptr && mm->switch_weights)
      pending -= std::min<uint64_t>(pending, 1);
  }
  return q;
}

enum Unit { kRead, kWrite, kLoad, kMatmul, kMove, kVector, kOther, kUnits };
Unit unit_of(const Instruction& in) {
  if (std::holds_alternative<ReadVmem>(in)) return kRead;
  if (std::holds_alternative<WriteVmem>(in)) return kWrite;
  if (std::holds_alternative<LoadWeights>(in)) return kLoad;
  if (std::holds_alternative<MatmulBf16>(in)) return kMatmul;
  if (std::holds_alternative<AccToVmem>(in) || std::holds_alternative<Transpose>(in)) return kMove;
  if (std::holds_alternative<Vector>(in)) return kVector;
  return kOther;
}

// The in-order issue estimate of merge_beside.
struct IssueModel {
  explicit IssueModel(const ChipParams& c) : chip(c) {}
  const ChipParams& chip;
  uint64_t issue = 0, free[kUnits] = {};
  std::vector<uint64_t> tiles;  // when each pushed tile is loaded, oldest first
  size_t next_tile = 0;
  uint64_t vector_rows = kOverlayVectorRows;  // per cycle
  // write_vmem and load_weights both read through VMEM read port 0: one unit (merge_beside)
  bool port0 = false;
  Unit unit(const Instruction& in) const {
    const Unit u = unit_of(in);
    return port0 && u == kWrite ? kLoad : u;
  }
  uint64_t start(const Instruction& in) const {
    uint64_t t = std::max(issue, free[unit(in)]);
    const auto* mm = std::get_if<MatmulBf16>(&in);
    if (mm != nullptr && mm->switch_weights && next_tile < tiles.size())
      t = std::max(t, tiles[next_tile]);
    return t;
  }
  // Cycles of a unit as the training chip's timeline shows them at N = 16 (a VMEM-port DMA
  // about two cycles per row, the vector unit about kOverlayVectorRows rows per cycle, a
  // weight tile N and a cycle per load_weights (the next one fills while one drains), a matmul
  // its rows + 2N, a transposed block transpose_block_cycles(N), acc_to_vmem two rows per
  // cycle).
  uint64_t work(const Instruction& in) const {
    const uint64_t n = chip.N;
    if (const auto* rv = std::get_if<ReadVmem>(&in)) return 2 * uint64_t{rv->rows} + 16;
    if (const auto* wv = std::get_if<WriteVmem>(&in)) return 2 * uint64_t{wv->rows} + 16;
    if (const auto* v = std::get_if<Vector>(&in))
      return (uint64_t{v->inner} * v->outer + vector_rows - 1) / vector_rows + 4;
    if (const auto* lw = std::get_if<LoadWeights>(&in)) return uint64_t{lw->tiles} * n + 1;
    if (const auto* mm = std::get_if<MatmulBf16>(&in))
      return uint64_t{mm->inner} * mm->outer + 2 * n;
    if (const auto* t = std::get_if<Transpose>(&in))
      return uint64_t{t->blocks} * transpose_block_cycles(n);
    if (const auto* av = std::get_if<AccToVmem>(&in)) return (uint64_t{av->rows} + 1) / 2 + 2;
    return 1;
  }
  // Runs `in` at its start, not before `ready` (the scoreboard); returns its estimated end.
  uint64_t run(const Instruction& in, uint64_t ready = 0) {
    const uint64_t t = std::max(start(in), ready), w = work(in);
    issue = t + 1;
    free[unit(in)] = t + w;
    if (const auto* lw = std::get_if<LoadWeights>(&in)) {
      for (uint64_t k = 1; k <= lw->tiles; ++k) tiles.push_back(t + k * chip.N);
    }
    const auto* mm = std::get_if<MatmulBf16>(&in);
    if (mm != nullptr && mm->switch_weights && next_tile < tiles.size()) ++next_tile;
    return t + w;
  }
};

// The chip's scoreboard in an estimate: the placed instructions still near (the last kNear),
// with their estimated ends; an instruction is held until every one it shares a row with ends.
struct Scoreboard {
  static constexpr size_t kNear = 256;
  std::vector<std::pair<Access, uint64_t>> placed;  // a ring of kNear
  size_t next = 0;
  uint64_t ready(const Access& a) const {
    uint64_t t = 0;
    for (const auto& [b, end] : placed)
      if (!disjoint(a, b)) t = std::max(t, end);
    return t;
  }
  void add(const Access& a, uint64_t end) {
    if (placed.size() < kNear) {
      placed.emplace_back(a, end);
    } else {
      placed[next] = {a, end};
      next = (next + 1) % kNear;
    }
  }
};

}  // namespace

bool rows_disjoint(const Instruction& a, const Instruction& b, uint32_t n) {
  return disjoint(access_of(a, n), access_of(b, n));
}

std::vector<Merged> merge_beside(const std::vector<Instruction>& main,
                                 const std::vector<Instruction>& side, const ChipParams& chip) {
  const uint32_t n = chip.N;
  std::vector<Access> ma, sa;
  for (const Instruction& i : main) ma.push_back(access_of(i, n));
  for (const Instruction& i : side) sa.push_back(access_of(i, n));
  // after[j]: the first main gap side[j] may go to (past every main instruction it depends on).
  std::vector<size_t> after(side.size(), 0);
  for (size_t j = 0; j < side.size(); ++j) {
    for (size_t i = main.size(); i-- > 0;) {
      if (!disjoint(ma[i], sa[j])) {  // (the FIFO rule below orders the weight loads)
        after[j] = i + 1;
        break;
      }
    }
  }
  const std::vector<bool> mq = fifo_quiet(main), sq = fifo_quiet(side);
  std::vector<Merged> out;
  out.reserve(main.size() + side.size());
  IssueModel model(chip);
  model.vector_rows = kMergeVectorRows;
  model.port0 = true;
  Scoreboard board;
  auto start = [&](const Instruction& in, const Access& a) {
    return std::max(model.start(in), board.ready(a));
  };
  auto run = [&](const Instruction& in, const Access& a) {
    board.add(a, model.run(in, board.ready(a)));
  };
  size_t i = 0, j = 0;
  while (j < side.size()) {
    // side's next unit: one instruction, or a whole weight-FIFO use (quiet gap to quiet gap)
    size_t k = j + 1;
    while (k < side.size() && !sq[k]) ++k;
    bool fifo = false, allowed = true;
    for (size_t x = j; x < k; ++x) {
      fifo = fifo || sa[x].fifo;
      allowed = allowed && after[x] <= i;
    }
    allowed = allowed && (!fifo || mq[i]);
    if (i < main.size() && (!allowed || start(side[j], sa[j]) > start(main[i], ma[i]))) {
      run(main[i], ma[i]);
      out.push_back(Merged{false, i++});
      continue;
    }
    for (; j < k; ++j) {
      run(side[j], sa[j]);
      out.push_back(Merged{true, j});
    }
  }
  for (; i < main.size(); ++i) out.push_back(Merged{false, i});
  return out;
}

}  // namespace tpu::train::compiler

namespace tpu::train::compiler {

namespace {

// The in-order issue estimate of list_schedule: IssueModel's units and rates, the vector unit
// at kScheduleVectorRows rows per cycle and the VMEM-port DMA at about a row per cycle.
struct HazardModel {
  explicit HazardModel(const ChipParams& c) : base(c) {}
  IssueModel base;
  uint64_t work(const Instruction& in) const {
    if (const auto* v = std::get_if<Vector>(&in))
      return (uint64_t{v->inner} * v->outer + kScheduleVectorRows - 1) / kScheduleVectorRows + 3;
    if (const auto* rv = std::get_if<ReadVmem>(&in)) return uint64_t{rv->rows} + 16;
    if (const auto* wv = std::get_if<WriteVmem>(&in)) return uint64_t{wv->rows} * 6 / 5;
    return base.work(in);
  }
};

}  // namespace

std::vector<Instruction> list_schedule(const std::vector<Instruction>& in, const ChipParams& chip,
                                       size_t window, bool feed_transposes) {
  const uint32_t n = chip.N;
  std::vector<Access> acc;
  acc.reserve(in.size());
  for (const Instruction& i : in) acc.push_back(access_of(i, n));
  auto ordered = [&](size_t a, size_t b) {  // whether a and b must keep their order
    return !disjoint(acc[a], acc[b]) || (acc[a].fifo && acc[b].fifo);
  };
  HazardModel model(chip);
  // feeds[i]: vector pass i writes rows a transpose among the next `window` instructions reads
  std::vector<bool> feeds(in.size(), false);
  for (size_t j = 0; feed_transposes && j < in.size(); ++j) {
    if (!std::holds_alternative<Transpose>(in[j])) continue;
    for (size_t i = j; i-- > 0 && j - i <= window;) {
      if (std::holds_alternative<Vector>(in[i]) && meet(acc[i].vw, acc[j].vr)) feeds[i] = true;
    }
  }
  std::vector<uint64_t> end(in.size(), 0);
  std::vector<size_t> pending(in.size()), recent;  // recent: placed, newest last
  for (size_t i = 0; i < in.size(); ++i) pending[i] = i;
  constexpr size_t kRecent = 512;
  std::vector<Instruction> out;
  out.reserve(in.size());
  while (!pending.empty()) {
    size_t best = 0;
    uint64_t best_t = std::numeric_limits<uint64_t>::max();
    bool best_vec = false;
    for (size_t p = 0; p < std::min(window, pending.size()); ++p) {
      const size_t c = pending[p];
      bool ready = true;
      for (size_t q = 0; q < p && ready; ++q) ready = !ordered(pending[q], c);
      if (!ready) continue;
      // The chip's scoreboard: held until every earlier instruction on a common row is done.
      uint64_t t = model.base.start(in[c]);
      for (size_t e : recent) {
        if (!disjoint(acc[e], acc[c])) t = std::max(t, end[e]);
      }
      // Ties: a vector pass after the others (the matrix and move units' work is the longer
      // chain; the vector unit's passes fill in beside it), except one that feeds a transpose.
      const bool vec = std::holds_alternative<Vector>(in[c]) && !feeds[c];
      if (t < best_t || (t == best_t && best_vec && !vec)) {
        best_t = t;
        best = p;
        best_vec = vec;
      }
      if (t <= model.base.issue && !vec) break;  // nothing starts earlier
    }
    const size_t c = pending[best];
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(best));
    const uint64_t w = model.work(in[c]);
    model.base.issue = best_t + 1;
    model.base.free[unit_of(in[c])] = best_t + w;
    if (const auto* lw = std::get_if<LoadWeights>(&in[c])) {
      for (uint64_t k = 1; k <= lw->tiles; ++k) model.base.tiles.push_back(best_t + k * n);
    }
    const auto* mm = std::get_if<MatmulBf16>(&in[c]);
    if (mm != nullptr && mm->switch_weights && model.base.next_tile < model.base.tiles.size())
      ++model.base.next_tile;
    end[c] = best_t + w;
    recent.push_back(c);
    if (recent.size() > kRecent) recent.erase(recent.begin());
    out.push_back(in[c]);
  }
  return out;
}

}  // namespace tpu::train::compiler

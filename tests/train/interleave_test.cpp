// SPDX-License-Identifier: Apache-2.0
// Instruction placement inside an emitted job (driver/train/compiler/interleave.h).
#include "compiler/interleave.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace tpu::train::test {
namespace {

using namespace compiler;

// v, then per group a load_weights and `per` matmuls, `groups` times.
std::vector<Instruction> job(size_t groups, size_t per) {
  std::vector<Instruction> c{Vector{}};
  for (size_t g = 0; g < groups; ++g) {
    c.push_back(LoadWeights{});
    for (size_t k = 0; k < per; ++k) c.push_back(MatmulBf16{});
  }
  return c;
}

// 4 reads over 16 matmuls after the first (index 2): the first right after it, the others
// after matmuls 4, 8 and 12 of the 16 (each a quarter of them later than the one before).
TEST(TrainInterleave, SpreadReadsEvenlyOverTheMatmuls) {
  const std::vector<Instruction> c = job(17, 1);  // v, (lw, mm) x 17: matmuls at 2, 4, ..., 34
  const std::vector<size_t> at = spread_reads(c, 2, 4);
  ASSERT_EQ(at.size(), 4u);
  EXPECT_EQ(at[0], 2u);
  EXPECT_EQ(at[1], 2u + 2 * 5);  // the matmuls after index 2 are 4, 6, ..., 34: #4 is at 12
  EXPECT_EQ(at[2], 2u + 2 * 9);
  EXPECT_EQ(at[3], 2u + 2 * 13);
  for (size_t r = 1; r < at.size(); ++r) {
    EXPECT_TRUE(std::holds_alternative<MatmulBf16>(c[at[r]])) << r;
  }
}

// More reads than matmuls: nondecreasing, each after `from` or a matmul, never past the end;
// no matmul after `from`: all at `from`; no reads: none.
TEST(TrainInterleave, SpreadReadsEdgeCases) {
  const std::vector<Instruction> c = job(1, 3);  // v, lw, mm, mm, mm
  const std::vector<size_t> at = spread_reads(c, 2, 7);
  ASSERT_EQ(at.size(), 7u);
  EXPECT_EQ(at[0], 2u);
  for (size_t r = 1; r < at.size(); ++r) {
    EXPECT_GE(at[r], at[r - 1]) << r;
    EXPECT_LT(at[r], c.size()) << r;
    EXPECT_TRUE(std::holds_alternative<MatmulBf16>(c[at[r]])) << r;
  }
  EXPECT_EQ(at.back(), 4u);
  EXPECT_EQ(spread_reads(c, 4, 3), (std::vector<size_t>{4, 4, 4}));
  EXPECT_TRUE(spread_reads(c, 2, 0).empty());
}

// A DenseUpdate chunk: decay passes, transpose, two dW matmuls, the dW acc_to_vmem, 31 Adam
// passes. 4 reads: the first after the first matmul, the others after passes 7, 15 and 23
// of the 31 (k * 31 / 4); without an acc_to_vmem after a matmul or passes after it: none.
TEST(TrainInterleave, UpdateReadsBesideTheAdamPasses) {
  std::vector<Instruction> c{Vector{},     Vector{},     Transpose{},
                             MatmulBf16{}, MatmulBf16{}, AccToVmem{}};
  const size_t first_pass = c.size();
  for (int k = 0; k < 31; ++k) c.push_back(Vector{});
  const std::vector<size_t> at = update_read_anchors(c, 4);
  ASSERT_EQ(at.size(), 4u);
  EXPECT_EQ(at[0], 3u);
  EXPECT_EQ(at[1], first_pass + 7);
  EXPECT_EQ(at[2], first_pass + 15);
  EXPECT_EQ(at[3], first_pass + 23);
  EXPECT_EQ(update_read_anchors(c, 1), (std::vector<size_t>{3}));
  EXPECT_TRUE(update_read_anchors(c, 0).empty());
  const std::vector<Instruction> no_move{Transpose{}, MatmulBf16{}, Vector{}};
  EXPECT_TRUE(update_read_anchors(no_move, 3).empty());
  const std::vector<Instruction> no_pass{MatmulBf16{}, AccToVmem{}};
  EXPECT_TRUE(update_read_anchors(no_pass, 3).empty());
  const std::vector<Instruction> move_first{AccToVmem{}, MatmulBf16{}, Vector{}};
  EXPECT_TRUE(update_read_anchors(move_first, 3).empty());
}

Vector vec(uint16_t dst, uint8_t rows) {
  Vector v;
  v.dst = dst;
  v.inner = rows;
  return v;
}
MatmulBf16 mm(uint16_t vmem, uint16_t acc, uint16_t rows) {
  MatmulBf16 m;
  m.vmem_addr = vmem;
  m.acc_addr = acc;
  m.inner = rows;
  return m;
}
LoadWeights lw(uint16_t vmem) {
  LoadWeights l;
  l.vmem_addr = vmem;
  l.rows = 16;
  return l;
}
AccToVmem acc_out(uint16_t acc, uint16_t vmem, uint32_t rows) {
  AccToVmem a;
  a.acc_addr = acc;
  a.vmem_addr = vmem;
  a.rows = rows;
  return a;
}
// The kinds of a list, in order: 'v' vector, 'l' load_weights, 'm' matmul_bf16, 'a'
// acc_to_vmem, 'w' write_vmem.
std::string kinds(const std::vector<Instruction>& v) {
  std::string s;
  for (const Instruction& i : v) {
    s += std::holds_alternative<Vector>(i)        ? 'v'
         : std::holds_alternative<LoadWeights>(i) ? 'l'
         : std::holds_alternative<MatmulBf16>(i)  ? 'm'
         : std::holds_alternative<AccToVmem>(i)   ? 'a'
         : std::holds_alternative<WriteVmem>(i)   ? 'w'
                                                  : '?';
  }
  return s;
}

// A ConvPool job's tail (the last matmul, the writes of the job before, the last acc_to_vmem,
// the pool's vector passes) and the next job's loads and first matmul: the loads and matmul go
// right after the last matmul (they read other rows; ACC rows 0-31 against the move's 32-63).
TEST(TrainInterleave, HoistMatmulsAheadOfThePool) {
  const std::vector<Instruction> in{mm(500, 32, 32), WriteVmem{}, acc_out(32, 100, 32),
                                    vec(200, 32),    vec(232, 8), lw(900),
                                    mm(500, 0, 32),  lw(900),     acc_out(0, 100, 32)};
  EXPECT_EQ(kinds(hoist_matmuls(in)), "mlmlwavva");
  // A vector pass writing a row the matmul reads stays ahead of it, and so does all before it.
  std::vector<Instruction> dep = in;
  dep[4] = vec(510, 1);
  EXPECT_EQ(kinds(hoist_matmuls(dep)), "mwavvlmla");
  // One writing a row the second load reads: the loads and matmul jump only what follows it.
  dep = in;
  dep[3] = vec(905, 1);
  EXPECT_EQ(kinds(hoist_matmuls(dep)), "mwavlmlva");
  // The acc_to_vmem reading ACC rows the matmul writes stays ahead of it; the passes after it
  // are jumped.
  dep = in;
  dep[2] = acc_out(16, 100, 32);
  EXPECT_EQ(kinds(hoist_matmuls(dep)), "mwalmlvva");
  // No vector pass in the run: nothing moves (only the pool's passes wait for the move).
  const std::vector<Instruction> plain{mm(500, 32, 32), acc_out(32, 100, 32), lw(900),
                                       mm(500, 0, 32)};
  EXPECT_EQ(kinds(hoist_matmuls(plain)), "malm");
  // Only loads after the passes (no matmul): nothing moves.
  const std::vector<Instruction> loads{vec(200, 4), lw(900), acc_out(0, 100, 4)};
  EXPECT_EQ(kinds(hoist_matmuls(loads)), "vla");
}

// A ConvPool job's tail: the move of the last matmul's rows, the pool's passes over them, and
// the next block's move (other VMEM rows, an ACC region the second matmul writes): the list
// scheduler issues that move as soon as it can start before the next pass (it starts when its
// matmul ends, where in order it would wait for the vector unit), keeps the passes that read
// the first move's rows after it, and keeps the weight FIFO's order (l m l m).
TEST(TrainInterleave, ListScheduleMovesAheadOfIndependentPasses) {
  ChipParams chip;
  chip.N = 16;
  Vector p1 = vec(300, 32), p2 = vec(300, 32), p3 = vec(300, 32);
  for (Vector* p : {&p1, &p2, &p3}) {
    p->a = 100;  // reads the first move's rows 100-131, writes 300-331
    p->outer = 6;
  }
  // (estimates: the second matmul 65-129, the first move 66-84 (two rows a cycle), the passes
  // 51 cycles each from 84, so the second move starts at 129, before the second pass's 135)
  const std::vector<Instruction> in{
      lw(900), mm(500, 0, 32),      lw(900), mm(500, 64, 32), acc_out(0, 100, 32), p1, p2,
      p3,      acc_out(64, 200, 32)};
  EXPECT_EQ(kinds(list_schedule(in, chip, 64)), "lmlmavavv");
  // The passes reading the rows the second move writes: it stays after them (write after
  // read); they stay after the first move (their B operand, rows 0 on, spans its rows).
  std::vector<Instruction> dep = in;
  for (size_t i = 5; i < 8; ++i) std::get<Vector>(dep[i]).a = 200;
  EXPECT_EQ(kinds(list_schedule(dep, chip, 64)), "lmlmavvva");
  // A window of 1: program order.
  EXPECT_EQ(kinds(list_schedule(in, chip, 1)), kinds(in));
}

// TrainOptions::im2col_build_first: a pool pass (rows 300-331 from row 100) and a tap-row pass
// (rows 600-615) that a transpose reads, both free to start at once on the vector unit: in
// program order the pool pass goes first; with feed_transposes the tap-row pass goes first and
// the transpose right after it (the move unit then starts it when the pass ends, not after
// both passes).
TEST(TrainInterleave, ListScheduleFeedsTransposesFirst) {
  ChipParams chip;
  chip.N = 16;
  Vector pool = vec(300, 32), taps = vec(600, 16);
  pool.a = 100;
  taps.a = 400;
  pool.bmode = taps.bmode = BMode::Imm;  // no B rows (they would span the other's rows)
  Transpose t;
  t.src = 600;
  t.dst = 700;
  t.src_stride = t.dst_stride = 16;
  const std::vector<Instruction> in{pool, taps, t};
  auto order = [&](bool feed) {
    std::string s;
    for (const Instruction& i : list_schedule(in, chip, 64, feed)) {
      s += std::holds_alternative<Transpose>(i) ? 't' : std::get<Vector>(i).dst == 300 ? 'p' : 'b';
    }
    return s;
  };
  EXPECT_EQ(order(false), "pbt");
  EXPECT_EQ(order(true), "btp");
  // A transpose further back than the window: the tap-row pass feeds none.
  std::vector<Instruction> far{pool, taps};
  for (int k = 0; k < 4; ++k) far.push_back(vec(static_cast<uint16_t>(800 + 16 * k), 16));
  far.push_back(t);
  EXPECT_EQ(std::get<Vector>(list_schedule(far, chip, 4, true).front()).dst, 300);
  EXPECT_EQ(std::get<Vector>(list_schedule(far, chip, 8, true).front()).dst, 600);
}

// Random streams of vector passes, moves, weight loads and matmuls over a few rows: the
// scheduled list is a permutation of the input in which every pair that shares a row
// (rows_disjoint false) or both use the weight FIFO keeps its order.
TEST(TrainInterleave, ListScheduleKeepsEveryDependentPairInOrder) {
  ChipParams chip;
  chip.N = 16;
  std::mt19937 rng(30);
  auto pick = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<Instruction> in;
    std::vector<std::string> ids;  // the instruction's identity (a field no range uses)
    for (uint32_t k = 0; k < 120; ++k) {
      const uint32_t kind = pick(0, 3);
      if (kind == 0) {
        Vector v = vec(static_cast<uint16_t>(pick(0, 400)), static_cast<uint8_t>(pick(1, 40)));
        v.a = static_cast<uint16_t>(pick(0, 400));
        v.bmode = BMode::Imm;
        v.b = k;
        in.push_back(v);
      } else if (kind == 1) {
        in.push_back(acc_out(static_cast<uint16_t>(1000 + k), static_cast<uint16_t>(pick(0, 400)),
                             pick(1, 40)));
      } else if (kind == 2) {
        LoadWeights l = lw(static_cast<uint16_t>(pick(0, 400)));
        l.tile_stride = static_cast<uint16_t>(k);
        in.push_back(l);
      } else {
        in.push_back(mm(static_cast<uint16_t>(pick(0, 400)), static_cast<uint16_t>(1000 + k),
                        static_cast<uint16_t>(pick(1, 40))));
      }
    }
    auto id = [](const Instruction& i) -> uint32_t {
      if (const auto* v = std::get_if<Vector>(&i)) return v->b;
      if (const auto* a = std::get_if<AccToVmem>(&i)) return a->acc_addr - 1000u;
      if (const auto* l = std::get_if<LoadWeights>(&i)) return l->tile_stride;
      return std::get<MatmulBf16>(i).acc_addr - 1000u;
    };
    const std::vector<Instruction> out = list_schedule(in, chip, 32);
    ASSERT_EQ(out.size(), in.size());
    std::vector<size_t> pos(in.size(), in.size());
    for (size_t o = 0; o < out.size(); ++o) pos[id(out[o])] = o;
    for (size_t i = 0; i < in.size(); ++i) ASSERT_LT(pos[i], in.size()) << i;
    auto fifo = [](const Instruction& i) {
      return std::holds_alternative<LoadWeights>(i) || std::holds_alternative<MatmulBf16>(i);
    };
    size_t moved = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      moved += pos[i] != i;
      for (size_t j = i + 1; j < in.size(); ++j) {
        if (!rows_disjoint(in[i], in[j], chip.N) || (fifo(in[i]) && fifo(in[j]))) {
          EXPECT_LT(pos[i], pos[j]) << "round " << round << ": " << i << " before " << j;
        }
      }
    }
    EXPECT_GT(moved, 0u) << round;  // the scheduler did reorder something
  }
}

}  // namespace
}  // namespace tpu::train::test

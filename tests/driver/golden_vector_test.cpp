// SPDX-License-Identifier: Apache-2.0
// The golden model's training-configuration instructions against independent references:
// the bf16 matrix unit in the documented summation order, weight loads (transposed, short),
// transposes, every vector function and operand mode, the reductions' orders, the function
// sequences, and every fault. The float reference is tests/driver/fp_reference.h (native
// double arithmetic + one rounding), not driver/fp.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "assembler.h"
#include "fp.h"
#include "fp_reference.h"
#include "fp_sequences.h"
#include "golden_model.h"
#include "program.h"

namespace tpu {
namespace {

using namespace fp::reference;

constexpr uint32_t kCmd = 0x0000;
constexpr uint32_t kHostIn = 0x10000;
constexpr uint32_t kHostOut = 0x20000;
constexpr uint32_t kMemEnd = 0x40000;
constexpr uint32_t kRom = 0x80000;

const std::vector<uint32_t> kSpecial = {
    0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x3F800000,
    0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
    0x3F808000, 0x3F818000, 0x33800000, 0x1F800000, 0x5F800000, 0x4B000001, 0xCF000000};

uint32_t random_value(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      return kSpecial[rng() % kSpecial.size()];
    case 1:
      return static_cast<uint32_t>(rng());  // any pattern
    default: {                              // moderate magnitudes, both signs
      const auto e = static_cast<uint32_t>(0x70 + rng() % 30);
      return static_cast<uint32_t>((rng() & 0x807FFFFFu) | (e << 23));
    }
  }
}

// Reference bf16 rounding of a lane, back as fp32.
uint32_t rbf16(uint32_t x) { return static_cast<uint32_t>(rto_bf16(x)) << 16; }

class GoldenVector : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    mem.add_region(0, kMemEnd);
    mem.add_region(kRom, 0x1000, RegionMemory::Access::ReadOnly);
    ChipParams p = ChipParams::training(GetParam());
    p.vmem_rows = 1024;
    p.acc_rows = 256;
    model = std::make_unique<GoldenModel>(mem, p);
  }
  uint32_t n() const { return model->params().N; }

  void ok(const Instruction& in) {
    std::string why;
    ASSERT_EQ(model->execute(in, &why), ErrorCode::ERR_NONE) << disassemble(in) << ": " << why;
  }
  // Fills VMEM rows [first, first + rows) with random values; returns them.
  std::vector<uint32_t> fill(uint32_t first, uint32_t rows, std::mt19937_64& rng) {
    std::vector<uint32_t> v(size_t{rows} * n());
    for (auto& x : v) x = random_value(rng);
    model->set_vmem_rows(first, v);
    return v;
  }
  RunResult run(const std::vector<Instruction>& prog) {
    const std::vector<uint8_t> bytes = encode_program(prog);
    mem.load(kCmd, bytes);
    return model->run(kCmd, static_cast<uint32_t>(prog.size()));
  }

  RegionMemory mem;
  std::unique_ptr<GoldenModel> model;
};

INSTANTIATE_TEST_SUITE_P(N, GoldenVector, ::testing::Values(4u, 16u));

// ---- DMA

TEST_P(GoldenVector, DmaFp32AndBf16) {
  std::mt19937_64 rng(1);
  const uint32_t rows = 5;
  std::vector<uint32_t> words(size_t{rows} * n());
  std::vector<uint8_t> bytes;
  for (auto& w : words) {
    w = random_value(rng);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(w >> (8 * b)));
  }
  mem.load(kHostIn, bytes);
  ReadVmem rv;
  rv.vmem_addr = 10;
  rv.rows = rows;
  rv.host_addr = kHostIn;
  ok(rv);
  EXPECT_EQ(model->vmem_rows(10, rows), words);  // bit for bit, NaNs and subnormals included
  // bf16 out: each lane rounded (RNE, DAZ, canonical NaN), 2 bytes per lane.
  WriteVmem wv;
  wv.bf16 = true;
  wv.vmem_addr = 10;
  wv.rows = rows;
  wv.host_addr = kHostOut;
  ok(wv);
  const std::vector<uint8_t> out = mem.dump(kHostOut, size_t{rows} * n() * 2);
  for (size_t i = 0; i < words.size(); ++i) {
    const uint16_t h = static_cast<uint16_t>(out[2 * i] | out[2 * i + 1] << 8);
    EXPECT_EQ(h, rto_bf16(words[i])) << i;
  }
  // bf16 in: widened exactly, subnormals to signed zeros.
  rv.bf16 = true;
  rv.host_addr = kHostOut;
  rv.vmem_addr = 20;
  ok(rv);
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t h = rto_bf16(words[i]);
    const uint32_t want = (h & 0x7F80u) == 0 ? (h & 0x8000u) << 16 : h << 16;
    EXPECT_EQ(model->vmem_rows(20, rows)[i], want) << i;
  }
}

TEST_P(GoldenVector, DmaHostStride) {
  // Rows 256 bytes apart in host memory, both directions.
  std::vector<uint8_t> bytes(3 * 256);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  mem.load(kHostIn, bytes);
  ReadVmem rv;
  rv.rows = 3;
  rv.host_addr = kHostIn;
  rv.host_stride = 256;
  ok(rv);
  for (uint32_t r = 0; r < 3; ++r) {
    for (uint32_t j = 0; j < n(); ++j) {
      const size_t at = r * 256 + 4 * j;
      const uint32_t want = bytes[at] | bytes[at + 1] << 8 | bytes[at + 2] << 16 |
                            static_cast<uint32_t>(bytes[at + 3]) << 24;
      EXPECT_EQ(model->vmem(r, j), want);
    }
  }
  WriteVmem wv;
  wv.rows = 3;
  wv.host_addr = kHostOut;
  wv.host_stride = 512;
  ok(wv);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(mem.dump(kHostOut + r * 512, 4 * n()),
              std::vector<uint8_t>(bytes.begin() + r * 256, bytes.begin() + r * 256 + 4 * n()));
  }
}

TEST_P(GoldenVector, DmaAxiErrorsWriteNothing) {
  model->set_vmem(0, 0, 0x12345678);
  ReadVmem rv;
  rv.rows = 2;
  rv.host_addr = kMemEnd - 4 * n();  // the second row is unmapped
  std::string why;
  EXPECT_EQ(model->execute(rv, &why), ErrorCode::ERR_AXI_READ) << why;
  EXPECT_EQ(model->vmem(0, 0), 0x12345678u);
  WriteVmem wv;
  wv.host_addr = kRom;
  EXPECT_EQ(model->execute(wv, &why), ErrorCode::ERR_AXI_WRITE) << why;
}

// ---- weights and the bf16 matrix unit

// The documented order: s = +0; s = add(s, mul(a[k], w[k][c])) for k = 0..N-1; then the
// accumulator. Operands are the bf16-rounded values; all arithmetic from the reference.
uint32_t ref_column(const std::vector<uint32_t>& a_row, const std::vector<uint32_t>& w, uint32_t n,
                    uint32_t c) {
  uint32_t s = 0;
  for (uint32_t k = 0; k < n; ++k) s = radd(s, rmul(rbf16(a_row[k]), w[size_t{k} * n + c]));
  return s;
}

TEST_P(GoldenVector, MatmulBf16MatchesTheDocumentedOrder) {
  std::mt19937_64 rng(GetParam());
  const uint32_t nn = n();
  for (int trial = 0; trial < 6; ++trial) {
    const bool transpose = trial % 2 == 1;
    const uint32_t rows = trial < 4 ? nn : nn / 2 + 1;  // fewer rows: the rest of W is zero
    // Weight block at VMEM 0 (row_stride 3), activations at 200.
    const std::vector<uint32_t> wrows = fill(0, 3 * nn, rng);
    std::vector<uint32_t> w(size_t{nn} * nn, 0);  // the tile, fp32 values of bf16 weights
    for (uint32_t k = 0; k < rows; ++k) {
      for (uint32_t j = 0; j < nn; ++j) {
        const uint32_t v = rbf16(wrows[size_t{3 * k} * nn + j]);
        (transpose ? w[size_t{j} * nn + k] : w[size_t{k} * nn + j]) = v;
      }
    }
    LoadWeights lw;
    lw.transpose = transpose;
    lw.row_stride = 3;
    lw.rows = static_cast<uint16_t>(rows);
    ok(lw);
    const std::vector<uint32_t> act = fill(200, 40, rng);
    // Old accumulator contents for the accumulate case.
    std::vector<uint32_t> old(size_t{12} * nn);
    for (uint32_t r = 0; r < 12; ++r) {
      for (uint32_t c = 0; c < nn; ++c) {
        old[size_t{r} * nn + c] = random_value(rng);
        model->set_acc(r, c, static_cast<int32_t>(old[size_t{r} * nn + c]));
      }
    }
    MatmulBf16 mm;
    mm.switch_weights = true;
    mm.accumulate = trial >= 2;
    mm.vmem_addr = 200;
    mm.inner = 4;
    mm.outer = 3;
    mm.inner_stride = 2;
    mm.outer_stride = 9;
    ok(mm);
    for (uint32_t o = 0; o < 3; ++o) {
      for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t r = o * 4 + i;
        const size_t a_at = size_t{o * 9 + i * 2} * nn;
        const std::vector<uint32_t> a(act.begin() + a_at, act.begin() + a_at + nn);
        for (uint32_t c = 0; c < nn; ++c) {
          uint32_t want = ref_column(a, w, nn, c);
          if (mm.accumulate) want = radd(old[size_t{r} * nn + c], want);
          ASSERT_EQ(static_cast<uint32_t>(model->acc(r, c)), want)
              << "trial " << trial << " row " << r << " col " << c;
        }
      }
    }
  }
}

TEST_P(GoldenVector, MatmulBf16SignedZeroAndCancellation) {
  // All products -0: the sum is +0 + -0 ... = +0; overwrite stores it exactly.
  const uint32_t nn = n();
  std::vector<uint32_t> wrows(size_t{nn} * nn, 0x3F800000);  // W = 1
  model->set_vmem_rows(0, wrows);
  std::vector<uint32_t> a(nn, 0x80000000);  // a = -0
  a[0] = 0x4B800000;                        // 2^24
  a[1] = 0x3F800000;                        // + 1: lost (ties to even) ...
  a[2] = 0xCB800000;                        // - 2^24: cancels to 0
  model->set_vmem_rows(100, a);
  LoadWeights lw;
  lw.rows = static_cast<uint16_t>(nn);
  ok(lw);
  MatmulBf16 mm;
  mm.switch_weights = true;
  mm.vmem_addr = 100;
  ok(mm);
  // ((+0 + 2^24) + 1) = 2^24 (tie, even), - 2^24 = +0, then + (-0)s = +0.
  for (uint32_t c = 0; c < nn; ++c) EXPECT_EQ(model->acc(0, c), 0) << c;
}

TEST_P(GoldenVector, WeightTileTypesAndOrder) {
  const uint32_t nn = n();
  // A bf16 tile then an int8 tile, popped in push order.
  std::vector<uint32_t> ones(size_t{nn} * nn, 0x40000000);  // 2.0
  model->set_vmem_rows(0, ones);
  mem.load(kHostIn, std::vector<uint8_t>(size_t{nn} * nn, 3));
  LoadWeights lw;
  lw.rows = static_cast<uint16_t>(nn);
  ok(lw);
  ReadWeights rw;
  rw.host_addr = kHostIn;
  ok(rw);
  EXPECT_EQ(model->pending_weight_tiles(), 2u);
  Matmul mm;  // int8 matmul, but the next tile is bf16
  mm.switch_weights = true;
  std::string why;
  EXPECT_EQ(model->execute(mm, &why), ErrorCode::ERR_WEIGHT_TYPE) << why;
  EXPECT_EQ(model->pending_weight_tiles(), 2u);  // nothing consumed
  MatmulBf16 mb;
  mb.switch_weights = true;
  ok(mb);
  EXPECT_TRUE(model->active_tile_is_bf16());
  EXPECT_EQ(model->active_tile_bf16()[0], 0x4000);
  mb.switch_weights = true;  // the next one is int8
  EXPECT_EQ(model->execute(mb, &why), ErrorCode::ERR_WEIGHT_TYPE) << why;
  ok(mm);
  EXPECT_FALSE(model->active_tile_is_bf16());
  mb.switch_weights = false;
  EXPECT_EQ(model->execute(mb, &why), ErrorCode::ERR_WEIGHT_TYPE) << why;
  mb.switch_weights = true;
  EXPECT_EQ(model->execute(mb, &why), ErrorCode::ERR_NO_WEIGHTS) << why;
  // Capacity: WFifoTiles + 2 tiles may wait, whatever their source.
  lw.tiles = static_cast<uint16_t>(model->weight_capacity());
  ok(lw);
  lw.tiles = 1;
  EXPECT_EQ(model->execute(lw, &why), ErrorCode::ERR_WEIGHT_OVERFLOW) << why;
  EXPECT_EQ(model->execute(rw, &why), ErrorCode::ERR_WEIGHT_OVERFLOW) << why;
}

TEST_P(GoldenVector, AccToVmemAndTranspose) {
  std::mt19937_64 rng(5);
  const uint32_t nn = n();
  for (uint32_t r = 0; r < 3; ++r) {
    for (uint32_t c = 0; c < nn; ++c) model->set_acc(r + 7, c, static_cast<int32_t>(rng()));
  }
  ok(AccToVmem{7, 50, 3});
  for (uint32_t r = 0; r < 3; ++r) {
    for (uint32_t c = 0; c < nn; ++c) {
      EXPECT_EQ(model->vmem(50 + r, c), static_cast<uint32_t>(model->acc(r + 7, c)));
    }
  }
  // Two blocks, source rows 2 apart, blocks 40 rows apart; block 1 in place.
  const std::vector<uint32_t> src = fill(100, 2 * 40, rng);
  auto s = [&](uint32_t b, uint32_t i, uint32_t j) {
    return src[(size_t{b} * 40 + size_t{i} * 2) * nn + j];
  };
  ok(Transpose{100, 300, 2, 40, 40, 2});
  for (uint32_t b = 0; b < 2; ++b) {
    for (uint32_t j = 0; j < nn; ++j) {
      for (uint32_t i = 0; i < nn; ++i) EXPECT_EQ(model->vmem(300 + b * 40 + j, i), s(b, i, j));
    }
  }
  const std::vector<uint32_t> blk = fill(500, nn, rng);
  ok(Transpose{500, 500, 1, 0, 0, 1});  // in place: read whole block first
  for (uint32_t j = 0; j < nn; ++j) {
    for (uint32_t i = 0; i < nn; ++i) EXPECT_EQ(model->vmem(500 + j, i), blk[size_t{i} * nn + j]);
  }
}

// ---- vector unit

// The reference of one lane of every element-wise function.
uint32_t ref_lane(VecFunc f, uint32_t a, uint32_t b) {
  auto m = [](bool t) { return t ? 0xFFFFFFFFu : 0u; };
  const auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  const double x = rval(a), y = rval(b);  // NaN compares false
  switch (f) {
    case VecFunc::FAdd:
      return radd(a, b);
    case VecFunc::FSub:
      return rsub(a, b);
    case VecFunc::FSubR:
      return rsub(b, a);
    case VecFunc::FMul:
      return rmul(a, b);
    case VecFunc::FMax:
      return rmax(a, b, true);
    case VecFunc::FMin:
      return rmax(a, b, false);
    case VecFunc::FLt:
      return m(x < y);
    case VecFunc::FLe:
      return m(x <= y);
    case VecFunc::FEq:
      return m(x == y);
    case VecFunc::IAdd:
      return static_cast<uint32_t>(int64_t{sa} + sb);
    case VecFunc::ISub:
      return static_cast<uint32_t>(int64_t{sa} - sb);
    case VecFunc::ISubR:
      return static_cast<uint32_t>(int64_t{sb} - sa);
    case VecFunc::And:
      return a & b;
    case VecFunc::Or:
      return a | b;
    case VecFunc::Xor:
      return a ^ b;
    case VecFunc::AndN:
      return a & ~b;
    case VecFunc::Shl:
      return static_cast<uint32_t>(uint64_t{a} << (b % 32));
    case VecFunc::Shr:
      return a / (uint32_t{1} << (b % 32));
    case VecFunc::Sra:
      return static_cast<uint32_t>(static_cast<int32_t>(std::floor(sa / std::ldexp(1.0, b % 32))));
    case VecFunc::ILt:
      return m(sa < sb);
    case VecFunc::IEq:
      return m(a == b);
    case VecFunc::F2I:
      return static_cast<uint32_t>(rto_int(a));
    case VecFunc::I2F:
      return rbits(static_cast<float>(sa));
    case VecFunc::Bf16:
      return rbf16(a);
    default:
      break;
  }
  ADD_FAILURE() << "not element-wise";
  return 0;
}

TEST_P(GoldenVector, EveryElementwiseFunctionEveryBMode) {
  std::mt19937_64 rng(77);
  const uint32_t nn = n();
  for (VecFunc f : all_vec_funcs()) {
    const auto code = static_cast<uint8_t>(f);
    if (is_lane_reduction(code) || is_row_reduction(code) || f == VecFunc::Align) continue;
    for (int mode = 0; mode < 4; ++mode) {
      if (is_unary_vec_func(code) && mode > 0) break;
      const std::vector<uint32_t> before = fill(0, 400, rng);
      auto at = [&](uint64_t row, uint32_t j) { return before[row * nn + j]; };
      Vector v;
      v.func = code;
      v.bmode = static_cast<BMode>(is_unary_vec_func(code) ? 0 : mode);
      v.dst = 300;
      v.a = 10;
      v.inner = 3;
      v.outer = 4;
      v.a_inner_stride = 3;
      v.a_outer_stride = 20;
      v.dst_inner_stride = 2;
      v.dst_outer_stride = 7;
      v.b = v.bmode == BMode::Imm ? random_value(rng) : (is_unary_vec_func(code) ? 0 : 150);
      ok(v);
      for (uint32_t o = 0; o < 4; ++o) {
        for (uint32_t i = 0; i < 3; ++i) {
          const uint64_t a_row = 10 + o * 20 + i * 3;
          const uint64_t rows[4] = {150 + o * 20 + i * 3, 150 + o * 7 + i * 2, 150, 0};
          for (uint32_t j = 0; j < nn; ++j) {
            const uint32_t b = v.bmode == BMode::Imm ? v.b : at(rows[mode], j);
            ASSERT_EQ(model->vmem(300 + o * 7 + i * 2, j), ref_lane(f, at(a_row, j), b))
                << vec_func_name(code) << " bmode " << mode << " o " << o << " i " << i << " lane "
                << j;
          }
        }
      }
    }
  }
}

uint32_t ref_reduce(VecFunc f, uint32_t s, uint32_t x) {
  if (f == VecFunc::LSum || f == VecFunc::RSum) return radd(s, x);
  return rmax(s, x, f == VecFunc::LMax || f == VecFunc::RMax);
}

TEST_P(GoldenVector, LaneReductionsUseTheTree) {
  std::mt19937_64 rng(9);
  const uint32_t nn = n();
  for (VecFunc f : {VecFunc::LSum, VecFunc::LMax, VecFunc::LMin}) {
    const std::vector<uint32_t> x = fill(0, 8, rng);
    Vector v;
    v.func = static_cast<uint8_t>(f);
    v.dst = 100;
    v.inner = 8;
    ok(v);
    for (uint32_t r = 0; r < 8; ++r) {
      std::vector<uint32_t> t(x.begin() + r * nn, x.begin() + (r + 1) * nn);
      for (uint32_t h = nn / 2; h >= 1; h /= 2) {
        for (uint32_t j = 0; j < h; ++j) t[j] = ref_reduce(f, t[j], t[j + h]);
      }
      for (uint32_t j = 0; j < nn; ++j) EXPECT_EQ(model->vmem(100 + r, j), t[0]) << r << " " << j;
    }
  }
  // The order is visible: lanes 1e8, 1, -1e8, 1, 0, ...: the tree adds lane 0 to lane N/2
  // first. N = 4: (1e8 + -1e8) + (1 + 1) = 2; a left-to-right sum would give 1.
  std::vector<uint32_t> row(nn, 0);
  row[0] = rbits(1e8f);
  row[nn / 2] = rbits(-1e8f);
  row[1] = rbits(1.0f);
  row[nn / 2 + 1] = rbits(1.0f);
  model->set_vmem_rows(0, row);
  Vector v;
  v.func = static_cast<uint8_t>(VecFunc::LSum);
  v.dst = 1;
  ok(v);
  EXPECT_EQ(model->vmem(1, 0), rbits(2.0f));
}

TEST_P(GoldenVector, RowReductionsInOrderFromTheSeed) {
  std::mt19937_64 rng(11);
  const uint32_t nn = n();
  for (VecFunc f : {VecFunc::RSum, VecFunc::RMax, VecFunc::RMin}) {
    for (int mode = 0; mode < 4; ++mode) {
      const std::vector<uint32_t> x = fill(0, 400, rng);
      Vector v;
      v.func = static_cast<uint8_t>(f);
      v.bmode = static_cast<BMode>(mode);
      v.dst = 300;
      v.a = 0;
      v.inner = 7;
      v.outer = 3;
      v.a_inner_stride = 2;
      v.a_outer_stride = 30;
      v.dst_outer_stride = 10;
      v.b = mode == 3 ? 0x80000000u : 200;
      ok(v);
      for (uint32_t o = 0; o < 3; ++o) {
        for (uint32_t j = 0; j < nn; ++j) {
          const uint64_t seed_rows[3] = {200 + o * 30, 200 + o * 10, 200};
          uint32_t s = mode == 3 ? v.b : x[seed_rows[mode] * nn + j];
          for (uint32_t i = 0; i < 7; ++i) s = ref_reduce(f, s, x[(o * 30 + i * 2) * nn + j]);
          EXPECT_EQ(model->vmem(300 + o * 10, j), s);
          EXPECT_EQ(model->vmem(301 + o * 10, j), x[(301 + o * 10) * nn + j]);  // not written
        }
      }
    }
  }
}

TEST_P(GoldenVector, AlignShiftsAcrossTwoRows) {
  std::mt19937_64 rng(13);
  const uint32_t nn = n();
  const std::vector<uint32_t> x = fill(0, 20, rng);
  for (uint32_t s = 0; s < nn; ++s) {
    Vector v;
    v.func = static_cast<uint8_t>(VecFunc::Align);
    v.bmode = BMode::Imm;
    v.b = s;
    v.dst = 100;
    v.a = 2;
    v.inner = 5;
    v.a_inner_stride = 3;
    ok(v);
    for (uint32_t i = 0; i < 5; ++i) {
      for (uint32_t j = 0; j < nn; ++j) {
        const size_t flat = size_t{2 + i * 3} * nn + j + s;  // lanes of row r, then row r + 1
        EXPECT_EQ(model->vmem(100 + i, j), x[flat]) << s;
      }
    }
  }
}

TEST_P(GoldenVector, RowsRunOneAtATime) {
  // dst = a + 1 row: each row reads the row written just before it (a running sum).
  std::vector<uint32_t> r0(n(), rbits(1.0f));
  model->set_vmem_rows(0, r0);
  Vector v;
  v.func = static_cast<uint8_t>(VecFunc::FAdd);
  v.bmode = BMode::Imm;
  v.b = rbits(1.0f);
  v.dst = 1;
  v.a = 0;
  v.inner = 10;
  ok(v);
  for (uint32_t r = 0; r <= 10; ++r)
    EXPECT_EQ(model->vmem(r, 0), rbits(1.0f + static_cast<float>(r)));
}

TEST_P(GoldenVector, FaultsWriteNothingAndStopTheRun) {
  const std::vector<Instruction> prog = assemble(
      "fadd dst=1 a=0 imm=1.0\n"
      "fadd dst=2 a=1023 imm=1.0 inner=2\n"  // reads row 1024: ERR_VMEM_RANGE
      "halt\n");
  const RunResult r = run(prog);
  EXPECT_EQ(r.error, ErrorCode::ERR_VMEM_RANGE) << r.message;
  EXPECT_EQ(r.err_pc, 1u);
  EXPECT_EQ(r.retired, 1u);
  EXPECT_EQ(model->vmem(1, 0), rbits(1.0f));
  EXPECT_EQ(model->vmem(2, 0), 0u);
  const RunResult r2 = run(assemble("lsum dst=1 a=0 b=1\nhalt\n"));
  EXPECT_EQ(r2.error, ErrorCode::ERR_FIELD) << r2.message;
  const RunResult r3 = run(assemble("matmul_bf16 vmem=0 acc=0\nhalt\n"));
  EXPECT_EQ(r3.error, ErrorCode::ERR_NO_WEIGHTS) << r3.message;
}

TEST(GoldenVectorInt8, TrainingOpcodesAreUnknownWithoutVmem) {
  RegionMemory mem;
  mem.add_region(0, 0x1000);
  GoldenModel model(mem, ChipParams::with_n(16));
  for (const char* text : {"read_vmem rows=1", "fadd", "transpose", "acc_to_vmem",
                           "load_weights rows=16", "matmul_bf16 switch", "write_vmem"}) {
    std::vector<uint8_t> bytes = encode_program(assemble(std::string(text) + "\nhalt\n"));
    bytes[14] |= 0x80;  // a bit reserved in some of them: the opcode is still what faults
    mem.load(0, bytes);
    const RunResult r = model.run(0, 2);
    EXPECT_EQ(r.error, ErrorCode::ERR_OPCODE) << text << ": " << r.message;
    EXPECT_EQ(r.err_pc, 0u);
  }
}

// ---- function sequences: the program ProgramBuilder emits, run by the golden model, gives
// exactly eval_sequence's bits lane by lane (so the error figures measured with
// eval_sequence hold for the instructions).

TEST_P(GoldenVector, FunctionSequencesMatchTheirLaneEvaluation) {
  std::mt19937_64 rng(21);
  const uint32_t nn = n();
  const uint32_t rows = 37;
  for (FpFunction f : all_fp_functions()) {
    const FpSequence& seq = fp_sequence(f);
    for (bool in_place : {false, true}) {
      std::vector<uint32_t> x(size_t{rows} * nn);
      for (auto& v : x) {
        v = random_value(rng);
        if (rng() % 2) v &= 0x7FFFFFFFu;  // mostly the positive domain of log / rcp / rsqrt
      }
      model->set_vmem_rows(0, x);
      ProgramBuilder b(model->params());
      const uint32_t dst = in_place ? 0 : 100;
      b.vfunction(f, dst, 0, rows, 200);
      for (const Instruction& in : b.instructions()) ok(in);
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(model->vmem_rows(dst, rows)[i], eval_sequence(seq, x[i]))
            << seq.name << " x = " << std::hex << x[i];
      }
    }
  }
}

TEST_P(GoldenVector, BuilderSplitsLargeTensorsAndChecks) {
  std::mt19937_64 rng(23);
  const std::vector<uint32_t> x = fill(0, 600, rng);
  ProgramBuilder b(model->params());
  b.vop_imm(VecFunc::Xor, 0, 0, 0xFFFFFFFFu, 600);  // 600 = 2 x 255 + 90: two instructions
  EXPECT_EQ(b.size(), 2u);
  for (const Instruction& in : b.instructions()) ok(in);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(model->vmem_rows(0, 600)[i], ~x[i]);
  EXPECT_THROW(b.vexp(0, 10, 20, 15), ProgramError);                   // scratch overlaps src
  EXPECT_THROW(b.vop(VecFunc::FAdd, 1020, 0, 0, 5), ProgramError);     // past VmemRows
  EXPECT_THROW(b.matmul_bf16(0, 0, 1, kSwitchWeights), ProgramError);  // no tile
  b.load_weights(0, 1);
  EXPECT_THROW(b.matmul(0, 0, 1, kSwitchWeights), ProgramError);  // int8 matmul, bf16 tile
  b.matmul_bf16(0, 0, 1, kSwitchWeights);
  ProgramBuilder int8(ChipParams::with_n(16));
  EXPECT_THROW(int8.vop(VecFunc::FAdd, 0, 0, 0, 1), ProgramError);
}

}  // namespace
}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
// Dense kernels on the golden model against the host reference (reference.h), bit for bit,
// and the reference against double-precision math within a stated tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <variant>

#include "rig.h"

namespace tpu::train::test {
namespace {

class Dense : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Dense, ::testing::Values(4u, 16u));

// Shapes that exercise padding: M and K not multiples of N, two column blocks.
struct Shapes {
  uint32_t m, k, out;
};
Shapes shapes(uint32_t n) { return {3 * n + 1, 2 * n + 3, n + 2}; }

TEST_P(Dense, ForwardMatchesReferenceBitForBit) {
  Rig rig(GetParam());
  const Shapes s = shapes(rig.n());
  const ref::Mat x = random_mat(s.m, s.k, 2.0f, 1), w = random_mat(s.k, s.out, 0.5f, 2);
  const std::vector<uint32_t> b = random_values(s.out, 1.0f, 3);
  VMat vx = rig.arena().matrix(s.m, s.k), vw = rig.arena().matrix(s.k, s.out);
  VMat vb = rig.arena().row_vector(s.out), vy = rig.arena().matrix(s.m, s.out);
  rig.put(vx, x.v);
  rig.put(vw, w.v);
  rig.put(vb, b);
  // Stale VMEM contents (NaN) where Y goes: its padding rows must come out +0 all the same.
  rig.put_rows(vy.base, std::vector<uint32_t>(size_t{vy.span(rig.n())} * rig.n(), 0x7FC00000u));
  dense_forward(rig.pb(), vx, vw, &vb, vy, 0);
  rig.want(vy);
  rig.run();
  const ref::Mat want = ref::add_row(ref::matmul_tiled(x, w, rig.n()), b);
  expect_bits(rig.got(vy), want.v, "Y");
  // Padding lanes / rows of Y stay +0.0.
  const std::vector<uint32_t> image = rig.got_image(vy);
  for (uint32_t r = 0; r < vy.span(rig.n()); ++r) {
    for (uint32_t j = 0; j < rig.n(); ++j) {
      const uint32_t col = r / vy.pitch * rig.n() + j;
      if (col >= s.out || r % vy.pitch >= s.m) {
        EXPECT_EQ(image[r * rig.n() + j], 0u);
      }
    }
  }
}

TEST_P(Dense, BackwardMatchesReferenceBitForBit) {
  Rig rig(GetParam());
  const uint32_t n = rig.n();
  const Shapes s = shapes(n);
  const ref::Mat x = random_mat(s.m, s.k, 2.0f, 4), w = random_mat(s.k, s.out, 0.5f, 5);
  const ref::Mat dy = random_mat(s.m, s.out, 1.0f, 6);
  VMat vx = rig.arena().matrix(s.m, s.k), vw = rig.arena().matrix(s.k, s.out);
  VMat vdy = rig.arena().matrix(s.m, s.out), vdx = rig.arena().matrix(s.m, s.k);
  VMat vdw = rig.arena().matrix(s.k, s.out), vdb = rig.arena().row_vector(s.out);
  const uint32_t xt = rig.arena().rows(vx.span(n));
  rig.put(vx, x.v);
  rig.put(vw, w.v);
  rig.put(vdy, dy.v);
  dense_backward_input(rig.pb(), vdy, vw, vdx, 0);
  rig.put_rows(vdw.base, std::vector<uint32_t>(size_t{vdw.span(n)} * n, 0x7FC00000u));
  dense_backward_weights(rig.pb(), vx, vdy, vdw, xt, 0);
  bias_grad(rig.pb(), vdy, vdb);
  rig.want(vdx);
  rig.want(vdw);
  rig.want(vdb);
  rig.run();
  expect_bits(rig.got(vdx), ref::matmul_tiled(dy, ref::transposed(w), n).v, "dX");
  expect_bits(rig.got(vdw), ref::matmul_tiled(ref::transposed(x), dy, n).v, "dW");
  expect_bits(rig.got(vdb), ref::column_sums(dy), "db");
  const std::vector<uint32_t> image = rig.got_image(vdw);
  for (uint32_t r = 0; r < vdw.span(n); ++r) {
    const bool pad_row = r % vdw.pitch >= s.k;
    for (uint32_t j = 0; j < n; ++j) {
      if (pad_row || r / vdw.pitch * n + j >= s.out) {
        EXPECT_EQ(image[r * n + j], 0u) << r;
      }
    }
  }
}

// dX with K-blocks rotating through ACC slots (acc_end): two halves of two slots, so four runs
// alternate between the halves; dX contiguous (M a multiple of N: one acc_to_vmem per run) and
// with padding rows (one per block), over stale NaN. Same bits as the reference.
TEST_P(Dense, BackwardInputThroughAccSlotsMatchesReference) {
  const uint32_t n = GetParam();
  for (const uint32_t m : {2 * n, 3 * n + 1}) {
    Rig rig(n);
    const uint32_t k = 7 * n + 3, out = n + 2, acc = 5;
    const ref::Mat w = random_mat(k, out, 0.5f, 21), dy = random_mat(m, out, 1.0f, 22);
    VMat vw = rig.arena().matrix(k, out), vdy = rig.arena().matrix(m, out);
    VMat vdx = rig.arena().matrix(m, k);
    rig.put(vw, w.v);
    rig.put(vdy, dy.v);
    rig.put_rows(vdx.base, std::vector<uint32_t>(size_t{vdx.span(n)} * n, 0x7FC00000u));
    dense_backward_input(rig.pb(), vdy, vw, vdx, acc, acc + 4 * m + 1);
    size_t moves = 0;
    for (const Instruction& i : rig.pb().instructions())
      moves += std::holds_alternative<AccToVmem>(i);
    EXPECT_EQ(moves, vdx.pitch == m ? 4u : 8u) << "m = " << m;
    rig.want(vdx);
    rig.run();
    expect_bits(rig.got(vdx), ref::matmul_tiled(dy, ref::transposed(w), n).v, "dX");
  }
}

// A layer streamed through VMEM in two K-chunks (N columns, then the rest) gives the same bits
// as the whole layer: the tile sums are added to ACC in the same order.
TEST_P(Dense, ForwardInKChunksMatchesWholeLayer) {
  Rig rig(GetParam());
  const uint32_t n = rig.n();
  const Shapes s = shapes(n);
  const ref::Mat x = random_mat(s.m, s.k, 2.0f, 9), w = random_mat(s.k, s.out, 0.5f, 10);
  const std::vector<uint32_t> b = random_values(s.out, 1.0f, 11);
  ref::Mat x0 = ref::zeros(s.m, n), x1 = ref::zeros(s.m, s.k - n);
  ref::Mat w0 = ref::zeros(n, s.out), w1 = ref::zeros(s.k - n, s.out);
  for (uint32_t r = 0; r < s.m; ++r) {
    for (uint32_t c = 0; c < s.k; ++c) (c < n ? x0.at(r, c) : x1.at(r, c - n)) = x.at(r, c);
  }
  for (uint32_t r = 0; r < s.k; ++r) {
    for (uint32_t c = 0; c < s.out; ++c) (r < n ? w0.at(r, c) : w1.at(r - n, c)) = w.at(r, c);
  }
  VMat vx0 = rig.arena().matrix(s.m, n), vw0 = rig.arena().matrix(n, s.out);
  VMat vx1 = rig.arena().matrix(s.m, s.k - n), vw1 = rig.arena().matrix(s.k - n, s.out);
  VMat vb = rig.arena().row_vector(s.out), vy = rig.arena().matrix(s.m, s.out);
  rig.put(vx0, x0.v);
  rig.put(vw0, w0.v);
  rig.put(vb, b);
  dense_forward_partial(rig.pb(), vx0, vw0, 8, false);
  rig.put(vx1, x1.v);  // the second chunk arrives after the first one's matmuls
  rig.put(vw1, w1.v);
  dense_forward_partial(rig.pb(), vx1, vw1, 8, true);
  dense_forward_finish(rig.pb(), 8, &vb, vy);
  rig.want(vy);
  rig.run();
  expect_bits(rig.got(vy), ref::add_row(ref::matmul_tiled(x, w, n), b).v, "Y");
}

// Weight tiles loaded `group` per load_weights (dense_forward_partial's and
// dense_backward_input's tile_group; TrainOptions::dense_tile_groups): the same bits as the
// reference, every tile a matmul switches to loaded once, fewer loads. K = 9N + 3 (ten
// K-blocks, the last of 3 rows: a tile of other rows starts a group of its own), two output
// blocks: Y's tiles run down one output block (stride N): groups 4, 4, 1 (the ninth
// K-block's), 1 (the partial one) per block with group 4 (2, 2, 2, 2, 1, 1 with group 2);
// dX's alternate between the two blocks (stride = W's pitch, then back): pairs.
TEST_P(Dense, WeightTilesInGroupsMatchReference) {
  const uint32_t n = GetParam();
  const uint32_t m = 2 * n + 1, k = 9 * n + 3, out = n + 2, acc = 3;
  const ref::Mat x = random_mat(m, k, 2.0f, 31), w = random_mat(k, out, 0.5f, 32);
  const ref::Mat dy = random_mat(m, out, 1.0f, 33);
  for (const uint32_t group : {1u, 2u, 4u}) {
    Rig rig(n);
    VMat vx = rig.arena().matrix(m, k), vw = rig.arena().matrix(k, out);
    VMat vy = rig.arena().matrix(m, out), vdy = rig.arena().matrix(m, out);
    VMat vdx = rig.arena().matrix(m, k);
    rig.put(vx, x.v);
    rig.put(vw, w.v);
    rig.put(vdy, dy.v);
    auto count = [&](size_t from, size_t& loads, size_t& tiles, size_t& switches) {
      const std::vector<Instruction>& p = rig.pb().instructions();
      loads = tiles = switches = 0;
      for (size_t i = from; i < p.size(); ++i) {
        if (const auto* lw = std::get_if<LoadWeights>(&p[i])) {
          ++loads;
          tiles += lw->tiles;
          EXPECT_LE(lw->tiles, group);
        }
        if (const auto* mm = std::get_if<MatmulBf16>(&p[i])) switches += mm->switch_weights;
      }
    };
    size_t loads = 0, tiles = 0, switches = 0;
    dense_forward_partial(rig.pb(), vx, vw, acc, false, group);
    count(0, loads, tiles, switches);
    EXPECT_EQ(tiles, 20u);
    EXPECT_EQ(switches, 20u);
    EXPECT_EQ(loads, group == 1 ? 20u : group == 2 ? 12u : 8u) << group;
    dense_forward_finish(rig.pb(), acc, nullptr, vy);
    const size_t from = rig.pb().instructions().size();
    dense_backward_input(rig.pb(), vdy, vw, vdx, acc, acc + 4 * m + 1, group);
    count(from, loads, tiles, switches);
    EXPECT_EQ(tiles, 20u);
    EXPECT_EQ(switches, 20u);
    EXPECT_EQ(loads, group == 1 ? 20u : 10u) << group;
    rig.want(vy);
    rig.want(vdx);
    rig.run();
    expect_bits(rig.got(vy), ref::matmul_tiled(x, w, n).v, "Y");
    expect_bits(rig.got(vdx), ref::matmul_tiled(dy, ref::transposed(w), n).v, "dX");
  }
}

// The reference itself against double precision: |ref - exact| <= 2^-20 * sum |x_k w_k| on
// bf16-rounded inputs (fp32 partial sums over at most K + K/N additions of 2^-24 each).
TEST_P(Dense, ReferenceIsCloseToExactProducts) {
  const uint32_t n = GetParam();
  const Shapes s = shapes(n);
  const ref::Mat x = random_mat(s.m, s.k, 2.0f, 7), w = random_mat(s.k, s.out, 0.5f, 8);
  const ref::Mat y = ref::matmul_tiled(x, w, n);
  for (uint32_t i = 0; i < s.m; ++i) {
    for (uint32_t j = 0; j < s.out; ++j) {
      double exact = 0, mag = 0;
      for (uint32_t k = 0; k < s.k; ++k) {
        const double p =
            double{ref::value(ref::to_bf16(x.at(i, k)))} * ref::value(ref::to_bf16(w.at(k, j)));
        exact += p;
        mag += std::fabs(p);
      }
      EXPECT_LE(std::fabs(ref::value(y.at(i, j)) - exact), std::ldexp(mag, -20));
    }
  }
}

TEST_P(Dense, ShapeMismatchesAreNamedErrors) {
  Rig rig(GetParam());
  VMat x = rig.arena().matrix(5, 7), w = rig.arena().matrix(6, 3), y = rig.arena().matrix(5, 3);
  try {
    dense_forward(rig.pb(), x, w, nullptr, y, 0);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dense_forward: X 5x7 . W 6x3"), std::string::npos)
        << e.what();
  }
  VMat big = rig.arena().matrix(2049, 3);
  EXPECT_THROW(dense_forward(rig.pb(), big, rig.arena().matrix(3, 3), nullptr,
                             rig.arena().matrix(2049, 3), 0),
               std::invalid_argument);  // more rows than AccRows
}

}  // namespace
}  // namespace tpu::train::test

// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_mxu_fp (the bf16 systolic array) against a C++ reference that computes
// each column in the order docs/isa.md prescribes (the partial sum enters row 0 as +0.0, row k
// adds the exact bf16 product a[k] * w[k][n]) with the native-arithmetic reference fp_ref.h.
// The array is driven as tests/rtl/mxu_test.cpp drives the int8 one: weight tiles shifted in
// and committed by the documented commit rule, rows fed back to back across weight switches;
// every result row is compared bit for bit. Operands: random bf16 in a moderate range, and
// tiles and rows with corner values (zeros of both signs, subnormals, the FTZ and overflow
// boundaries, infinities, NaNs) and with exact cancellation.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "Vtpu_mxu_fp.h"
#include "fp_ref.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr int N = TPU_TEST_N;
using Tile = std::vector<uint16_t>;  // N*N bf16, [k*N + n]
using Gen = std::function<uint16_t(std::mt19937&)>;

struct Row {
  std::vector<uint16_t> a;  // N bf16
  int buf;
  uint32_t tag;
};

class Harness {
 public:
  Harness()
      : ctx_(std::make_unique<VerilatedContext>()), m(std::make_unique<Vtpu_mxu_fp>(ctx_.get())) {
    m->clk_i = 0;
    m->rst_ni = 0;
    idle_inputs();
    m->eval();
    tick();
    tick();
    m->rst_ni = 1;
    tick();
  }
  void idle_inputs() {
    m->in_valid_i = 0;
    m->w_shift_i = 0;
    m->w_commit_i = 0;
    for (int i = 0; i < N; ++i) {
      set_field(m->in_data_i, 16 * i, 16, 0);
      set_field(m->w_row_i, 16 * i, 16, 0);
    }
  }
  void tick() {
    m->eval();
    if (m->out_valid_o) {
      std::vector<uint32_t> sums(N);
      for (int c = 0; c < N; ++c) sums[c] = get_field(m->out_sum_o, 32 * c, 32);
      results.push_back({m->out_tag_o, sums});
    }
    m->clk_i = 1;
    m->eval();
    m->clk_i = 0;
    m->eval();
    ++cycle;
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;

 public:
  std::unique_ptr<Vtpu_mxu_fp> m;
  std::deque<std::pair<uint32_t, std::vector<uint32_t>>> results;
  int64_t cycle = 0;
};

// Column n of a * W in the contract's order.
std::vector<uint32_t> reference(const Row& r, const Tile& w) {
  std::vector<uint32_t> out(N);
  for (int n = 0; n < N; ++n) {
    uint32_t s = 0;  // +0.0
    for (int k = 0; k < N; ++k) s = fpref::add(s, fpref::bf16_mul(r.a[k], w[k * N + n]));
    out[n] = s;
  }
  return out;
}

// Loads tiles into alternating buffers and feeds rows_per_tile[t] rows with tile t (the same
// schedule as mxu_test.cpp); compares every result row.
void run_schedule(std::mt19937& rng, const std::vector<int>& rows_per_tile, const Gen& wgen,
                  const Gen& agen) {
  Harness h;
  const size_t tiles = rows_per_tile.size();
  std::vector<Tile> w(tiles, Tile(N * N));
  for (auto& t : w)
    for (auto& v : t) v = wgen(rng);
  std::vector<Row> fed;
  std::vector<size_t> fed_tile;
  size_t next_load = 0, current = SIZE_MAX;
  int load_step = -1, rows_left = 0, active_buf = -1;
  int64_t last_use[2] = {-1000, -1000}, loaded_at[2] = {-1, -1};
  size_t in_buf[2] = {SIZE_MAX, SIZE_MAX};
  bool buf_loaded[2] = {false, false};
  uint32_t tag = 0;
  for (int guard = 0; guard < 100000; ++guard) {
    h.idle_inputs();
    const int64_t now = h.cycle;
    if (next_load < tiles) {
      const int b = int(next_load % 2);
      if (load_step == -1) load_step = 0;
      if (load_step < N) {
        h.m->w_shift_i = 1;
        for (int c = 0; c < N; ++c)
          set_field(h.m->w_row_i, 16 * c, 16, w[next_load][(N - 1 - load_step) * N + c]);
        ++load_step;
      } else if (!buf_loaded[b] && active_buf != b && now >= last_use[b] + N) {
        h.m->w_commit_i = 1;
        h.m->w_buf_i = b != 0;
        buf_loaded[b] = true;
        in_buf[b] = next_load;
        loaded_at[b] = now;
        ++next_load;
        load_step = -1;
      }
    }
    if (rows_left == 0) {
      const size_t want = current == SIZE_MAX ? 0 : current + 1;
      const int b = want < tiles ? int(want % 2) : -1;
      if (b >= 0 && buf_loaded[b] && in_buf[b] == want && now > loaded_at[b]) {
        current = want;
        rows_left = rows_per_tile[want];
        active_buf = b;
        buf_loaded[b] = false;
      }
    }
    if (rows_left > 0) {
      Row r{std::vector<uint16_t>(N), active_buf, tag++ & 0x3ffffu};
      for (auto& v : r.a) v = agen(rng);
      h.m->in_valid_i = 1;
      for (int k = 0; k < N; ++k) set_field(h.m->in_data_i, 16 * k, 16, r.a[k]);
      h.m->in_wbuf_i = r.buf != 0;
      h.m->in_tag_i = r.tag;
      last_use[r.buf] = now;
      fed.push_back(r);
      fed_tile.push_back(current);
      --rows_left;
    }
    h.tick();
    if (current == tiles - 1 && rows_left == 0 && h.results.size() == fed.size()) break;
  }
  size_t rows = 0;
  for (int n : rows_per_tile) rows += size_t(n);
  ASSERT_EQ(fed.size(), rows) << "the schedule did not feed every row";
  ASSERT_EQ(h.results.size(), fed.size()) << "the array lost or invented rows";
  for (size_t i = 0; i < fed.size(); ++i) {
    ASSERT_EQ(h.results[i].first, fed[i].tag) << "row " << i << " left out of order";
    const auto want = reference(fed[i], w[fed_tile[i]]);
    for (int n = 0; n < N; ++n) {
      ASSERT_EQ(h.results[i].second[n], want[n])
          << std::hex << "row " << std::dec << i << " column " << n << " (tile " << fed_tile[i]
          << "): got 0x" << std::hex << h.results[i].second[n] << " want 0x" << want[n];
    }
  }
}

uint16_t bf16(unsigned s, unsigned e, unsigned f) {
  return uint16_t((s & 1) << 15 | (e & 0xff) << 7 | (f & 0x7f));
}

// Random bf16 with exponents in [lo, hi].
Gen moderate(unsigned lo, unsigned hi) {
  return [lo, hi](std::mt19937& rng) {
    const uint32_t r = uint32_t(rng());
    return bf16(r >> 31, lo + (r >> 8) % (hi - lo + 1), r);
  };
}

// Corner values: zeros, subnormals, smallest / largest normals, infinities, NaNs, and values
// whose products land near 2^-126 and 2^128; each with probability rare_percent, else a
// moderate value.
Gen corners(int rare_percent) {
  return [rare_percent](std::mt19937& rng) -> uint16_t {
    static const uint16_t c[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F7F,
                                 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x2000,
                                 0x1F80, 0x5F80, 0x5FFF, 0xA07F, 0x3F80, 0xBF80};
    const uint32_t r = uint32_t(rng());
    if (int(r % 100) < rare_percent) return c[(r >> 8) % (sizeof c / sizeof c[0])];
    return moderate(100, 154)(rng);
  };
}

TEST(MxuFp, RandomModerate) {
  std::mt19937 rng(1);
  run_schedule(rng, {400, 300, 300}, moderate(110, 144), moderate(110, 144));
}

// Wide exponent ranges: products from far below 2^-126 to beyond 2^128.
TEST(MxuFp, RandomWideRange) {
  std::mt19937 rng(2);
  run_schedule(rng, {200, 200}, moderate(1, 254), moderate(1, 254));
  run_schedule(rng, {200}, moderate(1, 80), moderate(1, 80));        // FTZ
  run_schedule(rng, {200}, moderate(180, 254), moderate(180, 254));  // overflow
}

TEST(MxuFp, CornerValues) {
  std::mt19937 rng(3);
  run_schedule(rng, {300, 300}, corners(5), corners(5));
  run_schedule(rng, {200}, corners(60), corners(60));
}

// Exact cancellation: w[k+1][n] = -w[k][n] and a[k+1] = a[k] for even k, so each pair of rows
// adds p then -p: the sums pass through +0 (x + (-x) = +0) and stay at +0 or end in -0 / +0
// from signed-zero products.
TEST(MxuFp, Cancellation) {
  std::mt19937 rng(4);
  int k_w = 0, k_a = 0;
  uint16_t last_a = 0;
  const Gen base = corners(10);
  const Gen w = [&](std::mt19937& r) {
    // Tile element order is [k*N + n]: pair row k with row k+1 through a per-column memory.
    static std::vector<uint16_t> prev(N);
    const int k = k_w / N, n = k_w % N;
    k_w = (k_w + 1) % (N * N);
    uint16_t v = (k % 2 == 0) ? base(r) : uint16_t(prev[n] ^ 0x8000u);
    prev[n] = v;
    return v;
  };
  const Gen a = [&](std::mt19937& r) {
    const int k = k_a % N;
    k_a = (k_a + 1) % N;
    last_a = (k % 2 == 0) ? base(r) : last_a;
    return last_a;
  };
  run_schedule(rng, {300, N + 1, N + 1}, w, a);
}

// Columns whose products are all -0 (negative zero or subnormal weights times positive
// activations, and the reverse): the sum starts at +0.0 in row 0, so it stays +0; products
// of mixed zero signs likewise give +0, and a column with one nonzero product gives it exactly.
TEST(MxuFp, SignedZeroProducts) {
  std::mt19937 rng(6);
  const Gen neg_zero = [](std::mt19937& r) {
    return uint16_t((r() & 1) ? 0x8000u : 0x8000u | (r() & 0x7Fu));
  };
  const Gen any_zero = [](std::mt19937& r) { return uint16_t((r() & 0x8000u) | (r() & 0x7Fu)); };
  run_schedule(rng, {100}, neg_zero, moderate(100, 154));
  run_schedule(rng, {100}, moderate(100, 154), neg_zero);
  run_schedule(rng, {100}, any_zero, corners(5));
}

// Tiles used for exactly N+1 rows (buffer switch with the previous tile's rows in flight), and
// short runs that wait for the drain.
TEST(MxuFp, DoubleBufferSwitches) {
  std::mt19937 rng(5);
  run_schedule(rng, std::vector<int>(6, N + 1), moderate(120, 134), moderate(120, 134));
  run_schedule(rng, {1, 2, 1, 3, 1, 1, N, 1}, corners(5), corners(5));
}

}  // namespace

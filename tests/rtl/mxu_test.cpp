// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_mxu against a plain C++ matrix product.
// Drives the array directly: weight tiles are shifted in and committed following the commit
// rule documented in rtl/tpu_mxu.sv, rows are fed back to back across weight switches, and
// every result row is compared bit-exactly with the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "Vtpu_mxu.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr int N = TPU_TEST_N;

using Tile = std::vector<uint8_t>;  // N*N, [k*N + n]

struct Row {
  std::vector<int> a;  // N values, already in range of int8 or uint8
  bool a_unsigned;
  bool w_unsigned;
  int buf;
  uint32_t tag;
};

class MxuHarness {
 public:
  MxuHarness()
      : ctx_(std::make_unique<VerilatedContext>()), m_(std::make_unique<Vtpu_mxu>(ctx_.get())) {
    m_->clk_i = 0;
    m_->rst_ni = 0;
    idle_inputs();
    m_->eval();
    tick();
    tick();
    m_->rst_ni = 1;
    tick();
  }

  void idle_inputs() {
    m_->in_valid_i = 0;
    m_->w_shift_i = 0;
    m_->w_commit_i = 0;
    for (int i = 0; i < N; ++i) {
      set_field(m_->in_data_i, 9 * i, 9, 0);
      set_field(m_->w_row_i, 8 * i, 8, 0);
    }
  }

  // One clock cycle: inputs set by the caller are sampled at the rising edge; outputs are
  // collected before the edge (they are registered, so they belong to this cycle).
  void tick() {
    m_->eval();
    if (m_->out_valid_o) {
      std::vector<int32_t> sums(N);
      for (int c = 0; c < N; ++c)
        sums[c] = static_cast<int32_t>(get_field(m_->out_sum_o, 32 * c, 32));
      results.push_back({m_->out_tag_o, sums});
    }
    m_->clk_i = 1;
    m_->eval();
    m_->clk_i = 0;
    m_->eval();
    ++cycle;
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_mxu> m_;
  std::deque<std::pair<uint32_t, std::vector<int32_t>>> results;
  uint64_t cycle = 0;
};

std::vector<int32_t> reference(const Row& r, const Tile& w) {
  std::vector<int32_t> out(N, 0);
  for (int n = 0; n < N; ++n) {
    int64_t s = 0;
    for (int k = 0; k < N; ++k) {
      uint8_t raw = w[k * N + n];
      int wv = r.w_unsigned ? int(raw) : int(int8_t(raw));
      s += int64_t(r.a[k]) * wv;
    }
    out[n] = static_cast<int32_t>(s);
  }
  return out;
}

// Drives a schedule: tiles are loaded into alternating buffers, each used by a run of rows.
class MxuTest : public ::testing::TestWithParam<int> {};

void run_schedule(std::mt19937& rng, const std::vector<int>& rows_per_tile, bool extremes) {
  MxuHarness h;
  const size_t tiles = rows_per_tile.size();
  std::vector<Tile> w(tiles, Tile(N * N));
  std::uniform_int_distribution<int> byte(0, 255);
  const uint8_t ext[] = {0x80, 0x7f, 0xff, 0x00, 0x01};
  for (auto& t : w) {
    for (auto& v : t) v = extremes ? ext[byte(rng) % 5] : uint8_t(byte(rng));
  }

  std::vector<Row> fed;  // rows in feed order with the tile index they use
  std::vector<size_t> fed_tile;
  // State of the schedule.
  size_t next_load = 0;       // next tile to load
  int load_step = -1;         // -1 idle, 0..N-1 shifting, N = waiting to commit
  size_t current = SIZE_MAX;  // tile being fed
  int rows_left = 0;
  int64_t last_use[2] = {-1000, -1000};
  int64_t loaded_at[2] = {-1, -1};
  size_t in_buf[2] = {SIZE_MAX, SIZE_MAX};
  bool buf_loaded[2] = {false, false};
  int active_buf = -1;
  uint32_t tag = 0;

  auto buf_of_tile = [&](size_t t) { return int(t % 2); };

  for (int guard = 0; guard < 100000; ++guard) {
    h.idle_inputs();
    const int64_t now = int64_t(h.cycle);
    // Weight loader: shift tile next_load, then commit into its buffer when the rule allows.
    if (next_load < tiles) {
      const int b = buf_of_tile(next_load);
      if (load_step == -1) load_step = 0;
      if (load_step >= 0 && load_step < N) {
        h.m_->w_shift_i = 1;
        for (int c = 0; c < N; ++c)
          set_field(h.m_->w_row_i, 8 * c, 8, w[next_load][(N - 1 - load_step) * N + c]);
        ++load_step;
      } else if (load_step == N && !buf_loaded[b] && active_buf != b &&
                 now >= last_use[b] + (N - 1) + 1) {
        h.m_->w_commit_i = 1;
        h.m_->w_buf_i = static_cast<CData>(b);
        buf_loaded[b] = true;
        in_buf[b] = next_load;
        loaded_at[b] = now;
        ++next_load;
        load_step = -1;
      }
    }
    // Feeder.
    if (rows_left == 0) {
      const size_t want = (current == SIZE_MAX) ? 0 : current + 1;
      const int b = (want < tiles) ? buf_of_tile(want) : -1;
      if (b >= 0 && buf_loaded[b] && in_buf[b] == want && now > loaded_at[b]) {
        current = want;
        rows_left = rows_per_tile[want];
        active_buf = b;
        buf_loaded[b] = false;
      }
    }
    if (rows_left > 0) {
      Row r;
      std::uniform_int_distribution<int> coin(0, 1);
      r.a_unsigned = coin(rng);
      r.w_unsigned = coin(rng);
      r.buf = active_buf;
      r.tag = tag++ & 0x3ffff;
      r.a.resize(N);
      for (int k = 0; k < N; ++k) {
        uint8_t raw = extremes ? ext[byte(rng) % 5] : uint8_t(byte(rng));
        r.a[k] = r.a_unsigned ? int(raw) : int(int8_t(raw));
      }
      h.m_->in_valid_i = 1;
      for (int k = 0; k < N; ++k) set_field(h.m_->in_data_i, 9 * k, 9, uint16_t(r.a[k]) & 0x1ff);
      h.m_->in_wbuf_i = static_cast<CData>(r.buf);
      h.m_->in_wuns_i = r.w_unsigned;
      h.m_->in_tag_i = r.tag;
      last_use[r.buf] = now;
      fed.push_back(r);
      fed_tile.push_back(current);
      --rows_left;
    }
    h.tick();
    if (current == tiles - 1 && rows_left == 0 && h.results.size() == fed.size()) break;
  }
  ASSERT_EQ(h.results.size(), fed.size()) << "the array lost or invented rows";
  for (size_t i = 0; i < fed.size(); ++i) {
    ASSERT_EQ(h.results[i].first, fed[i].tag) << "row " << i << " left out of order";
    auto want = reference(fed[i], w[fed_tile[i]]);
    for (int n = 0; n < N; ++n) {
      ASSERT_EQ(h.results[i].second[n], want[n])
          << "row " << i << " column " << n << " (tile " << fed_tile[i] << ", a_unsigned "
          << fed[i].a_unsigned << ", w_unsigned " << fed[i].w_unsigned << ")";
    }
  }
}

TEST(Mxu, SingleTileRandom) {
  std::mt19937 rng(1);
  run_schedule(rng, {3 * N}, false);
}

TEST(Mxu, ExtremeOperands) {
  std::mt19937 rng(2);
  run_schedule(rng, {2 * N, 2 * N}, true);
}

// Tiles used for exactly N+1 rows: the shortest run for which loading is fully hidden, so the
// array switches buffers while the previous tile's rows are still in flight.
TEST(Mxu, DoubleBufferSwitchBackToBack) {
  std::mt19937 rng(3);
  run_schedule(rng, std::vector<int>(8, N + 1), false);
}

// Short runs force the loader to wait for the drain of the previous tile.
TEST(Mxu, ShortRunsWaitForDrain) {
  std::mt19937 rng(4);
  run_schedule(rng, {1, 2, 1, 3, 1, 1, N, 1}, false);
}

}  // namespace

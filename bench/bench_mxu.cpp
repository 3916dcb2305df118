// SPDX-License-Identifier: Apache-2.0
// Simulator benchmark, bare MXU: tpu_mxu alone (Verilated, plain C++, like
// tests/rtl/mxu_test.cpp) doing what it does inside the core under the workload: a valid row
// every cycle (64 distinct rows, cycled), and every R rows a new weight tile shifted in
// (N cycles), committed into the free buffer and switched to. Two evals per cycle, like the
// bare core harness. The first result row of each of the first two tiles is checked against
// a C++ matmul.
//
//   bench_mxu_n<N> [--cycles C] [--rows-per-tile R] [--warmup W]
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "Vtpu_mxu.h"
#include "verilated.h"
#include "workload.h"

namespace {

// The MXU's data ports are flat vectors (element i in bits [w*i +: w]); Verilator gives them as
// an integer (up to 64 bits) or a VlWide of 32-bit words. Packs elements into 32-bit words...
std::vector<uint32_t> pack(const int* elems, int count, unsigned width) {
  std::vector<uint32_t> words((count * width + 31) / 32, 0u);
  const uint32_t mask = (1u << width) - 1u;
  for (int i = 0; i < count; ++i) {
    const uint64_t v = uint64_t(uint32_t(elems[i]) & mask) << ((i * width) % 32);
    const size_t w = (size_t(i) * width) / 32;
    words[w] |= uint32_t(v);
    if (w + 1 < words.size()) words[w + 1] |= uint32_t(v >> 32);
  }
  return words;
}
// ... and stores them into a port of either kind.
template <typename T>
void store(T& port, const std::vector<uint32_t>& words) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t v = 0;
    for (size_t w = 0; w < words.size() && w < 2; ++w) v |= uint64_t(words[w]) << (32 * w);
    port = T(v);
  } else {
    for (size_t w = 0; w < words.size(); ++w) port[w] = words[w];
  }
}
template <typename T>
int32_t load32(const T& port, int index) {
  if constexpr (std::is_integral_v<T>)
    return int32_t(uint32_t(uint64_t(port) >> (32 * index)));
  else
    return int32_t(port[index]);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    constexpr int N = TPU_BENCH_N;
    const tpu::bench::Options opt = tpu::bench::parse_options(argc, argv);
    // Same R and run length as the core workload (its program is not used here).
    uint32_t r = opt.rows_per_tile ? opt.rows_per_tile : std::max(256u, uint32_t(N * N / 8));
    r = (r + 63) / 64 * 64;
    const uint64_t total = std::max<uint64_t>(4 * uint64_t(r), opt.target_cycles);
    const uint64_t warmup = opt.warmup >= 0 ? uint64_t(opt.warmup) : r;

    std::mt19937 rng(7);
    std::uniform_int_distribution<int> byte(-128, 127);
    constexpr int kRows = 64, kTiles = 4;
    std::vector<int> act(kRows * N), wts(kTiles * N * N);
    for (auto& v : act) v = byte(rng);
    for (auto& v : wts) v = byte(rng);
    // Port images: activation row i (9-bit elements), weight row j of the tiles (8-bit).
    std::vector<std::vector<uint32_t>> act_words(kRows), wts_words(kTiles * N);
    for (int i = 0; i < kRows; ++i) act_words[i] = pack(&act[i * N], N, 9);
    for (int j = 0; j < kTiles * N; ++j) wts_words[j] = pack(&wts[j * N], N, 8);

    auto ctx = std::make_unique<VerilatedContext>();
    auto m = std::make_unique<Vtpu_mxu>(ctx.get());
    uint64_t cycle = 0, out_rows = 0;
    size_t bad = 0, checked = 0;
    int64_t first_row_of_tile[2] = {-1, -1};  // cycle the checked rows were fed
    auto tick = [&] {
      m->clk_i = 1;
      m->eval();
      m->clk_i = 0;
      m->eval();
      ++cycle;
    };
    auto idle = [&] {
      m->in_valid_i = 0;
      m->w_shift_i = 0;
      m->w_commit_i = 0;
    };
    m->clk_i = 0;
    m->rst_ni = 0;
    idle();
    m->eval();
    tick();
    tick();
    m->rst_ni = 1;
    m->eval();

    // Load tile 0 into buffer 0 before the first row.
    auto shift_row = [&](int tile, int step) {  // bottom tile row first
      m->w_shift_i = 1;
      store(m->w_row_i, wts_words[tile * N + (N - 1 - step)]);
    };
    for (int s = 0; s < N; ++s) {
      idle();
      shift_row(0, s);
      tick();
    }
    idle();
    m->w_commit_i = 1;
    m->w_buf_i = 0;
    tick();
    idle();
    tick();

    auto reference = [&](int row, int tile, int col) {
      int64_t s = 0;
      for (int k = 0; k < N; ++k) s += int64_t(act[row * N + k]) * wts[(tile * N + k) * N + col];
      return int32_t(s);
    };

    // Steady state: row i of tile t uses buffer t % 2; tile t+1 shifts in during the first N
    // cycles of tile t and commits at cycle N + 1 of it (the other buffer's last row left
    // R - N - 1 >= N cycles earlier), and is switched to after R rows.
    std::chrono::steady_clock::time_point t0;
    uint64_t c0 = 0;
    bool timing = false;
    for (uint64_t i = 0; i < total; ++i) {
      if (!timing && i >= warmup) {
        timing = true;
        t0 = std::chrono::steady_clock::now();
        c0 = cycle;
      }
      const uint64_t tile = i / r, in_tile = i % r;
      idle();
      m->in_valid_i = 1;
      const int row = int(i % kRows);
      store(m->in_data_i, act_words[row]);
      m->in_wbuf_i = tile % 2;
      m->in_wuns_i = 0;
      m->in_tag_i = uint32_t(i & 0x3FFFF);
      if (in_tile < uint64_t(N)) shift_row(int((tile + 1) % kTiles), int(in_tile));
      if (in_tile == uint64_t(N) + 1) {
        m->w_commit_i = 1;
        m->w_buf_i = (tile + 1) % 2;
      }
      if (tile < 2 && in_tile == 0) first_row_of_tile[tile] = int64_t(i);
      tick();
      if (m->out_valid_o) {
        ++out_rows;
        const uint32_t tag = m->out_tag_o;
        for (int t = 0; t < 2; ++t) {
          // Tags wrap at 2^18: only the first pass is checked.
          if (out_rows <= (1u << 18) && first_row_of_tile[t] >= 0 &&
              tag == uint32_t(first_row_of_tile[t])) {
            for (int c = 0; c < N; ++c)
              if (load32(m->out_sum_o, c) != reference(int(tag % kRows), t, c)) ++bad;
            ++checked;
          }
        }
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t measured = cycle - c0;
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    m->final();
    std::printf(
        "RESULT harness=mxu n=%d rows_per_tile=%u fed=%llu out_rows=%llu checked=%zu "
        "measured_cycles=%llu seconds=%.4f cps=%.1f mismatches=%zu\n",
        N, r, (unsigned long long)total, (unsigned long long)out_rows, checked,
        (unsigned long long)measured, secs, double(measured) / secs, bad);
    return (bad || checked != 2) ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mxu: %s\n", e.what());
    return 1;
  }
}

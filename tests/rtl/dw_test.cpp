// SPDX-License-Identifier: Apache-2.0
// The depthwise unit (rtl/tpu_dw.sv) alone: random dwconv commands on a behavioural UB and ACC
// whose ports deny grants at random, every accumulator row checked bit for bit against the
// golden model's dwconv (driver/golden_model.cpp, written from docs/isa.md) after each
// command. Also: the unit reads exactly the rows isa.md's hazard ranges name (input bounding
// interval, weight rows) and as many as DwConv::ub_reads counts, writes each output row once,
// and with every grant at once takes the cycles of isa.md's formula (DwConv::unit_cycles) plus
// the accept cycle and at most P + 1 for the last writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "Vtpu_dw.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t P = TPU_TEST_DW;  // DwWidth
constexpr uint32_t kUbRows = 600;
constexpr uint32_t kAccRows = 400;
constexpr int64_t kCycleLimit = 200000;  // per command: a hang is a failure

tpu::ChipParams params() {
  tpu::ChipParams p = tpu::ChipParams::with_n(N);
  p.ub_rows = kUbRows;
  p.acc_rows = kAccRows;
  p.dw_width = P;
  return p;
}

class Harness {
 public:
  explicit Harness(uint32_t seed)
      : rng(seed),
        ctx_(std::make_unique<VerilatedContext>()),
        m(std::make_unique<Vtpu_dw>(ctx_.get())),
        golden(host_, params()),
        ub(size_t{kUbRows} * N),
        acc(size_t{kAccRows} * N) {
    for (auto& b : ub) b = static_cast<uint8_t>(rng());
    golden.set_ub_rows(0, ub);
    for (uint32_t r = 0; r < kAccRows; ++r) {
      for (uint32_t c = 0; c < N; ++c) {
        acc[size_t{r} * N + c] = static_cast<int32_t>(rng());
        golden.set_acc(r, c, acc[size_t{r} * N + c]);
      }
    }
    m->clk_i = 0;
    m->rst_ni = 0;
    m->clear_i = 0;
    m->cmd_valid_i = 0;
    m->ub_rgnt_i = 0;
    m->acc_wgnt_i = 0;
    m->eval();
    tick();
    tick();
    m->rst_ni = 1;
    tick();
  }

  // One clock cycle: random grants, the memories' reaction, the edge, then the read data.
  void tick() {
    m->ub_rgnt_i = static_cast<double>(rng() % 1000) < ub_grant * 1000;
    m->acc_wgnt_i = static_cast<double>(rng() % 1000) < acc_grant * 1000;
    m->eval();
    int read_row = -1;
    if (m->rst_ni && m->ub_re_o && m->ub_rgnt_i) read_row = static_cast<int>(m->ub_raddr_o);
    if (m->rst_ni && m->acc_we_o && m->acc_wgnt_i) write_acc();
    if (read_row >= 0) reads.push_back(static_cast<uint32_t>(read_row));
    cmd_taken = m->cmd_valid_i && m->cmd_ready_o;
    m->clk_i = 1;
    m->eval();
    m->clk_i = 0;
    for (uint32_t x = 0; x < N / 4; ++x) {
      uint32_t w = static_cast<uint32_t>(rng());  // garbage unless a row was read
      if (read_row >= 0 && static_cast<uint32_t>(read_row) < kUbRows) {
        w = 0;
        for (uint32_t b = 0; b < 4; ++b)
          w |= uint32_t{ub[size_t(read_row) * N + 4 * x + b]} << (8 * b);
      }
      set_word(m->ub_rdata_i, x, w);
    }
    m->eval();
    ++cycle;
  }

  void write_acc() {
    const uint32_t row = m->acc_waddr_o;
    writes.push_back(row);
    if (row >= kAccRows) return;  // reported by the range check
    for (uint32_t c = 0; c < N; ++c) {
      const uint32_t v = get_word(m->acc_wdata_o, c);
      int32_t& a = acc[size_t{row} * N + c];
      a = m->acc_wacc_o ? static_cast<int32_t>(static_cast<uint32_t>(a) + v)
                        : static_cast<int32_t>(v);
    }
  }

  // Runs one command to completion; returns the cycles from the accepting edge to idle.
  int64_t run(const tpu::DwConv& d) {
    const tpu::InstrBytes w = tpu::encode(d);
    for (uint32_t x = 0; x < 4; ++x) {
      uint32_t v = 0;
      for (uint32_t b = 0; b < 4; ++b) v |= uint32_t{w[4 * x + b]} << (8 * b);
      m->cmd_i[x] = v;
    }
    reads.clear();
    writes.clear();
    m->cmd_valid_i = 1;
    int64_t start = -1;
    for (int64_t i = 0; i < kCycleLimit; ++i) {
      tick();
      if (cmd_taken) {
        m->cmd_valid_i = 0;
        start = cycle;
      }
      if (start >= 0 && !m->busy_o) return cycle - start;
    }
    ADD_FAILURE() << "no completion within " << kCycleLimit << " cycles";
    return -1;
  }

  std::mt19937 rng;
  double ub_grant = 1, acc_grant = 1;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_dw> m;
  tpu::RegionMemory host_;
  tpu::GoldenModel golden;
  std::vector<uint8_t> ub;
  std::vector<int32_t> acc;
  std::vector<uint32_t> reads, writes;
  bool cmd_taken = false;
  int64_t cycle = 0;
};

// A random legal command in the test's UB / ACC (images up to 20 x 14 so that several line
// groups and long lines occur).
tpu::DwConv random_command(std::mt19937& rng) {
  auto pick = [&](uint32_t lo, uint32_t hi) {
    return lo + static_cast<uint32_t>(rng() % (hi - lo + 1));
  };
  for (;;) {
    tpu::DwConv d;
    d.kernel_h = static_cast<uint8_t>(pick(1, 3));
    d.kernel_w = static_cast<uint8_t>(pick(1, 3));
    d.stride2 = pick(0, 1) != 0;
    d.pad_top = static_cast<uint8_t>(pick(0, d.kernel_h - 1u));
    d.pad_bottom = static_cast<uint8_t>(pick(0, d.kernel_h - 1u));
    d.pad_left = static_cast<uint8_t>(pick(0, d.kernel_w - 1u));
    d.pad_right = static_cast<uint8_t>(pick(0, d.kernel_w - 1u));
    d.height = static_cast<uint16_t>(pick(1, pick(0, 3) == 0 ? 20 : 6));
    d.width = static_cast<uint16_t>(pick(1, pick(0, 3) == 0 ? 14 : 6));
    d.ub_stride = static_cast<uint16_t>(d.height == 1 ? pick(0, 0xFFFF) : d.width + pick(0, 3));
    d.accumulate = pick(0, 1) != 0;
    d.a_unsigned = pick(0, 1) != 0;
    d.w_unsigned = pick(0, 1) != 0;
    if (d.padded_height() < d.kernel_h || d.padded_width() < d.kernel_w) continue;
    const uint64_t span = d.last_input_row() + 1;
    if (span > kUbRows || d.output_pixels() > kAccRows) continue;
    d.ub_addr = pick(0, static_cast<uint32_t>(kUbRows - span));
    d.w_addr = pick(0, kUbRows - d.taps() - 1);
    d.acc_addr =
        static_cast<uint16_t>(pick(0, static_cast<uint32_t>(kAccRows - d.output_pixels())));
    EXPECT_EQ(tpu::check(d, params()), tpu::ErrorCode::ERR_NONE);
    return d;
  }
}

void run_random(uint32_t seed, int commands, double ub_grant, double acc_grant, bool timing) {
  Harness h(seed);
  h.ub_grant = ub_grant;
  h.acc_grant = acc_grant;
  std::mt19937 rng(seed * 7 + 1);
  for (int i = 0; i < commands; ++i) {
    const tpu::DwConv d = random_command(rng);
    SCOPED_TRACE("command " + std::to_string(i) + ": " + tpu::disassemble(d));
    const int64_t cycles = h.run(d);
    ASSERT_GE(cycles, 0);
    std::string why;
    ASSERT_EQ(h.golden.execute(d, &why), tpu::ErrorCode::ERR_NONE) << why;
    // Every ACC row, bit for bit.
    for (uint32_t r = 0; r < kAccRows; ++r) {
      const std::vector<int32_t> want = h.golden.acc_row(r);
      for (uint32_t c = 0; c < N; ++c) {
        ASSERT_EQ(h.acc[size_t{r} * N + c], want[c]) << "ACC row " << r << " column " << c;
      }
    }
    // Reads inside isa.md's hazard ranges, exactly the counted number; each output row once.
    EXPECT_EQ(h.reads.size(), d.ub_reads(P));
    for (uint32_t r : h.reads) {
      const bool input = r >= d.ub_addr && r <= d.last_input_row();
      const bool weights = r >= d.w_addr && r <= d.zero_point_row();
      ASSERT_TRUE(input || weights) << "UB row " << r << " read";
    }
    std::set<uint32_t> rows(h.writes.begin(), h.writes.end());
    EXPECT_EQ(h.writes.size(), d.output_pixels());
    EXPECT_EQ(rows.size(), d.output_pixels());
    ASSERT_GE(*rows.begin(), d.acc_addr);
    ASSERT_LE(*rows.rbegin(), d.acc_addr + d.output_pixels() - 1);
    if (timing) {
      const int64_t formula = static_cast<int64_t>(d.unit_cycles(P));
      EXPECT_GE(cycles, formula + 1);
      EXPECT_LE(cycles, formula + P + 2);
    }
  }
}

TEST(DwUnit, RandomCommandsFullGrantsAndTheCycleFormula) { run_random(1, 300, 1.0, 1.0, true); }

TEST(DwUnit, RandomCommandsDeniedGrants) { run_random(2, 300, 0.6, 0.5, false); }

TEST(DwUnit, RandomCommandsRareAccGrants) { run_random(3, 150, 0.9, 0.15, false); }

}  // namespace

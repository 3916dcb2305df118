// SPDX-License-Identifier: Apache-2.0
// Block tests of the VMEM port's DMA (issue 30, docs/architecture.md "The VMEM port"):
// tpu_vdma_rd (read_vmem: host memory -> VMEM rows) or, built with TPU_TEST_VDMA_WR,
// tpu_vdma_wr (write_vmem: VMEM rows -> host memory), each against an AXI4 slave model written
// here: a 64 KiB memory answering after a random latency, with random backpressure on every
// channel, that checks the master's side of the protocol (beat-aligned INCR bursts of 1..256
// beats, no 4 KiB crossing, AR / AW / W held until accepted, WLAST on the burst's last beat)
// and answers SLVERR inside an injected error range. Transfers: random 16-byte aligned host
// addresses (rows straddling beats), row counts up to several hundred (bursts cut at 256 beats
// and at 4 KiB), contiguous or strided (strides below, at and above the row size), fp32 or
// bf16 rows; the expected VMEM rows / host bytes come from the ISA's definition (docs/isa.md
// read_vmem / write_vmem) with tpu::fp's bf16 conversions. Also: one row per cycle on a
// contiguous transfer at any alignment without backpressure, and the error paths.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fp.h"
#include "port_fields.h"
#include "verilated.h"
#ifdef TPU_TEST_VDMA_WR
#include "Vtpu_vdma_wr.h"
using Top = Vtpu_vdma_wr;
#else
#include "Vtpu_vdma_rd.h"
using Top = Vtpu_vdma_rd;
#endif

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t kBeat = 4 * N;  // bytes per beat: one fp32 VMEM row
constexpr uint32_t kMem = 1u << 16;
constexpr uint32_t kVmemRows = 1024;
constexpr uint32_t kOkay = 0, kSlvErr = 2;

struct Cmd {
  uint32_t addr = 0, rows = 1, stride = 0, vaddr = 0;
  bool bf16 = false;
  uint32_t row_bytes() const { return bf16 ? 2 * N : 4 * N; }
  uint32_t step() const { return stride == 0 ? row_bytes() : stride; }
  uint32_t host_end() const { return addr + (rows - 1) * step() + row_bytes(); }
};

// Timing and backpressure of the slave.
struct SlaveConfig {
  double stall = 0.0;  // probability a ready / valid is held back in a cycle
  uint32_t min_latency = 1, max_latency = 8;
  uint32_t err_lo = 0, err_hi = 0;  // SLVERR for bursts overlapping [err_lo, err_hi)
};

template <typename T>
void set_bytes(T& port, const uint8_t* src, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) set_field(port, 8 * i, 8, src[i]);
}
template <typename T>
void get_bytes(const T& port, uint8_t* dst, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(get_field(port, 8 * i, 8));
}

class Bench {
 public:
  explicit Bench(uint64_t seed) : rng_(seed), top_(std::make_unique<Top>()) {
    mem_.resize(kMem);
    for (auto& b : mem_) b = static_cast<uint8_t>(rng_());
    vmem_.resize(size_t{kVmemRows} * N);
    for (auto& w : vmem_) w = static_cast<uint32_t>(rng_());
    top_->clk_i = 0;
    top_->rst_ni = 0;
    top_->eval();
    top_->rst_ni = 1;
    top_->eval();
  }
  ~Bench() { top_->final(); }

  SlaveConfig cfg;
  std::vector<uint8_t> mem_;
  std::vector<uint32_t> vmem_;
  std::vector<std::string> violations;
  // read_vmem: the VMEM writes in order (row address, N lanes).
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> vm_writes;
  uint64_t cycles = 0;
  bool err_seen = false;

  // Runs one transfer to completion; returns the cycles from the command to !busy.
  uint64_t run(const Cmd& c, uint64_t limit = 200000) {
    top_->cmd_valid_i = 1;
    top_->cmd_addr_i = c.addr;
    top_->cmd_rows_i = c.rows;
    top_->cmd_stride_i = c.stride;
    top_->cmd_bf16_i = c.bf16;
    top_->cmd_vaddr_i = static_cast<uint16_t>(c.vaddr);
    EXPECT_TRUE(top_->cmd_ready_o);
    cycle();
    top_->cmd_valid_i = 0;
    uint64_t n = 1;
    err_seen = false;
    while (top_->busy_o) {
      cycle();
      if (++n > limit) {
        ADD_FAILURE() << "transfer did not finish within " << limit << " cycles";
        break;
      }
    }
#ifdef TPU_TEST_VDMA_WR
    err_seen = top_->err_o;
#endif
    return n;
  }

 private:
  struct Burst {
    uint32_t addr, beats, next = 0;
    uint64_t ready_at;
    bool err;
  };
  struct WBurst {
    uint32_t addr, beats;
  };
  struct Resp {
    uint64_t ready_at;
    uint32_t resp;
  };

  bool coin() { return cfg.stall > 0 && std::uniform_real_distribution<>(0, 1)(rng_) < cfg.stall; }
  uint32_t latency() {
    return std::uniform_int_distribution<uint32_t>(cfg.min_latency, cfg.max_latency)(rng_);
  }
  bool error_at(uint32_t addr, uint32_t bytes) const {
    return addr < cfg.err_hi && cfg.err_lo < addr + bytes;
  }
  void check_burst(const char* ch, uint32_t addr, uint32_t len) {
    const uint32_t beats = len + 1;
    if (addr % kBeat) violations.push_back(std::string(ch) + " address not beat aligned");
    if ((addr % 4096) + beats * kBeat > 4096) violations.push_back(std::string(ch) + " crosses 4K");
    if (addr + beats * kBeat > kMem) violations.push_back(std::string(ch) + " beyond memory");
  }

  // One clock cycle: the slave's registered outputs are already on the inputs; sample the
  // master's outputs (functions of its flops), take the edge, update the slave.
  void cycle() {
    top_->eval();
#ifdef TPU_TEST_VDMA_WR
    cycle_wr();
#else
    cycle_rd();
#endif
    ++cycles;
  }

#ifndef TPU_TEST_VDMA_WR
  void cycle_rd() {
    Top& t = *top_;
    const bool ar_fire = t.ar_valid_o && t.ar_ready_i;
    const bool r_fire = t.r_valid_i && t.r_ready_o;
    if (ar_hold_ && (!t.ar_valid_o || t.ar_addr_o != ar_prev_addr_ || t.ar_len_o != ar_prev_len_))
      violations.push_back("AR changed before ARREADY");
    ar_hold_ = t.ar_valid_o && !ar_fire;
    ar_prev_addr_ = t.ar_addr_o;
    ar_prev_len_ = t.ar_len_o;
    if (t.vm_w_we_o) {
      std::vector<uint32_t> row(N);
      for (uint32_t l = 0; l < N; ++l) row[l] = get_field(t.vm_w_wdata_o, 32 * l, 32);
      vm_writes.emplace_back(t.vm_w_waddr_o, row);
    }
    if (t.err_o) err_seen_pulse = true;
    t.clk_i = 1;
    t.eval();
    t.clk_i = 0;
    if (ar_fire) {
      check_burst("AR", ar_prev_addr_, ar_prev_len_);
      const uint32_t beats = ar_prev_len_ + 1;
      reads_.push_back(
          {ar_prev_addr_, beats, 0, cycles + latency(), error_at(ar_prev_addr_, beats * kBeat)});
    }
    if (r_fire) {
      Burst& b = reads_.front();
      if (++b.next == b.beats) reads_.pop_front();
      t.r_valid_i = 0;
    }
    t.ar_ready_i = reads_.size() < 32 && !coin();
    if (!t.r_valid_i && !reads_.empty() && cycles >= reads_.front().ready_at && !coin()) {
      const Burst& b = reads_.front();
      const uint32_t a = b.addr + b.next * kBeat;
      std::vector<uint8_t> beat(kBeat, 0);
      if (!b.err && a + kBeat <= kMem) std::memcpy(beat.data(), &mem_[a], kBeat);
      set_bytes(t.r_data_i, beat.data(), kBeat);
      t.r_resp_i = static_cast<uint8_t>(b.err ? kSlvErr : kOkay);
      t.r_last_i = b.next + 1 == b.beats;
      t.r_valid_i = 1;
    }
    t.vm_w_wgnt_i = 1;
  }
  bool ar_hold_ = false;
  uint32_t ar_prev_addr_ = 0, ar_prev_len_ = 0;
  std::deque<Burst> reads_;

 public:
  bool err_seen_pulse = false;

 private:
#else
  void cycle_wr() {
    Top& t = *top_;
    const bool aw_fire = t.aw_valid_o && t.aw_ready_i;
    const bool w_fire = t.w_valid_o && t.w_ready_i;
    const bool b_fire = t.b_valid_i && t.b_ready_o;
    if (aw_hold_ && (!t.aw_valid_o || t.aw_addr_o != aw_prev_addr_ || t.aw_len_o != aw_prev_len_))
      violations.push_back("AW changed before AWREADY");
    aw_hold_ = t.aw_valid_o && !aw_fire;
    aw_prev_addr_ = t.aw_addr_o;
    aw_prev_len_ = t.aw_len_o;
    std::vector<uint8_t> wdata(kBeat);
    get_bytes(t.w_data_o, wdata.data(), kBeat);
    std::vector<uint8_t> strb(kBeat);
    for (uint32_t i = 0; i < kBeat; ++i)
      strb[i] = static_cast<uint8_t>(get_field(t.w_strb_o, i, 1));
    if (w_hold_ && (!t.w_valid_o || wdata != w_prev_ || strb != w_prev_strb_))
      violations.push_back("W changed before WREADY");
    w_hold_ = t.w_valid_o && !w_fire;
    w_prev_ = wdata;
    w_prev_strb_ = strb;
    const bool w_last = t.w_last_o;
    const bool re = t.vm_re_o;
    const uint32_t raddr = t.vm_raddr_o;
    t.clk_i = 1;
    t.eval();
    t.clk_i = 0;
    if (aw_fire) {
      check_burst("AW", aw_prev_addr_, aw_prev_len_);
      waddrs_.push_back({aw_prev_addr_, aw_prev_len_ + 1u});
    }
    if (w_fire) {
      // W may come before its AW is accepted (AXI4): beats gather into bursts by WLAST,
      // paired with the addresses in order.
      wbuf_.push_back({0, wdata, strb});
      if (w_last) {
        wbursts_.push_back(std::move(wbuf_));
        wbuf_.clear();
      }
      if (wbuf_.size() > 256) violations.push_back("no WLAST after 256 beats");
    }
    while (!waddrs_.empty() && !wbursts_.empty()) {
      const WBurst wb = waddrs_.front();
      const std::vector<WBeat> beats = std::move(wbursts_.front());
      waddrs_.pop_front();
      wbursts_.pop_front();
      if (beats.size() != wb.beats) violations.push_back("WLAST not on the burst's last beat");
      const bool err = error_at(wb.addr, wb.beats * kBeat);
      if (!err) {
        for (size_t k = 0; k < beats.size(); ++k)
          for (uint32_t i = 0; i < kBeat; ++i) {
            const uint32_t a = wb.addr + uint32_t(k) * kBeat + i;
            if (beats[k].strb[i] && a < kMem) mem_[a] = beats[k].data[i];
          }
      }
      resps_.push_back({cycles + latency(), err ? kSlvErr : kOkay});
    }
    if (b_fire) {
      resps_.pop_front();
      t.b_valid_i = 0;
    }
    t.aw_ready_i = waddrs_.size() + resps_.size() < 32 && !coin();
    t.w_ready_i = !coin();
    if (!t.b_valid_i && !resps_.empty() && cycles >= resps_.front().ready_at && !coin()) {
      t.b_valid_i = 1;
      t.b_resp_i = static_cast<uint8_t>(resps_.front().resp);
    }
    // VMEM: the row read in the cycle that ended, always granted.
    if (re) {
      for (uint32_t l = 0; l < N; ++l)
        set_field(t.vm_rdata_i, 32 * l, 32, vmem_[size_t{raddr % kVmemRows} * N + l]);
    } else {
      for (uint32_t l = 0; l < N; ++l) set_field(t.vm_rdata_i, 32 * l, 32, 0xDEADBEEFu);
    }
    t.vm_rgnt_i = 1;
  }
  struct WBeat {
    uint32_t addr;
    std::vector<uint8_t> data, strb;
  };
  bool aw_hold_ = false, w_hold_ = false;
  uint32_t aw_prev_addr_ = 0, aw_prev_len_ = 0;
  std::vector<uint8_t> w_prev_, w_prev_strb_;
  std::deque<WBurst> waddrs_;
  std::vector<WBeat> wbuf_;
  std::deque<std::vector<WBeat>> wbursts_;
  std::deque<Resp> resps_;
#endif

  std::mt19937_64 rng_;
  std::unique_ptr<Top> top_;
};

Cmd random_cmd(std::mt19937_64& rng, uint32_t max_rows) {
  Cmd c;
  c.bf16 = rng() % 3 == 0;
  c.rows = 1 + static_cast<uint32_t>(rng() % max_rows);
  switch (rng() % 4) {
    case 0:
      c.stride = 0;
      break;
    case 1:
      c.stride = c.row_bytes();
      break;
    default:
      c.stride = 16 * (1 + static_cast<uint32_t>(rng() % (c.row_bytes() / 4 + 8)));
      break;
  }
  const uint32_t span = (c.rows - 1) * c.step() + c.row_bytes();
  if (span + 64 >= kMem) c.rows = 1;
  const uint32_t room = kMem - ((c.rows - 1) * c.step() + c.row_bytes()) - kBeat;
  c.addr = 16 * static_cast<uint32_t>(rng() % (room / 16));
  c.vaddr = static_cast<uint32_t>(rng() % (kVmemRows - c.rows + 1));
  return c;
}

#ifdef TPU_TEST_VDMA_WR
// The host bytes of VMEM row `lanes` as the instruction stores them (fp32 or bf16).
std::vector<uint8_t> host_row(const uint32_t* lanes, bool bf16) {
  std::vector<uint8_t> r;
  for (uint32_t l = 0; l < N; ++l) {
    if (bf16) {
      const uint16_t h = tpu::fp::to_bf16(lanes[l]);
      r.push_back(static_cast<uint8_t>(h));
      r.push_back(static_cast<uint8_t>(h >> 8));
    } else {
      for (int b = 0; b < 4; ++b) r.push_back(static_cast<uint8_t>(lanes[l] >> (8 * b)));
    }
  }
  return r;
}
#endif

// Whether a transfer's bursts cover the beat that holds host byte `at` (some row overlaps it).
bool touches_beat(const Cmd& c, uint32_t at) {
  const uint32_t lo = at & ~(kBeat - 1), hi = lo + kBeat;
  for (uint32_t i = 0; i < c.rows; ++i) {
    const uint32_t a = c.addr + i * c.step();
    if (a < hi && lo < a + c.row_bytes()) return true;
  }
  return false;
}

uint64_t test_seed() {
  const char* s = std::getenv("TPU_VDMA_SEED");
  return s ? std::strtoull(s, nullptr, 0) : 0x5EED;
}

#ifndef TPU_TEST_VDMA_WR
// Expected VMEM rows of a read_vmem from `mem`.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> expected_rows(
    const Cmd& c, const std::vector<uint8_t>& mem, uint32_t rows) {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out;
  for (uint32_t i = 0; i < rows; ++i) {
    const uint32_t a = c.addr + i * c.step();
    std::vector<uint32_t> row(N);
    for (uint32_t l = 0; l < N; ++l) {
      if (c.bf16) {
        row[l] =
            tpu::fp::from_bf16(static_cast<uint16_t>(mem[a + 2 * l] | mem[a + 2 * l + 1] << 8));
      } else {
        uint32_t v = 0;
        for (int b = 0; b < 4; ++b) v |= uint32_t{mem[a + 4 * l + b]} << (8 * b);
        row[l] = v;
      }
    }
    out.emplace_back(c.vaddr + i, row);
  }
  return out;
}

TEST(VdmaRd, RandomTransfersMatchTheIsaUnderBackpressure) {
  std::mt19937_64 rng(test_seed());
  for (int rep = 0; rep < 6; ++rep) {
    Bench b(rng());
    b.cfg.stall = rep % 3 == 0 ? 0.0 : 0.3;
    b.cfg.max_latency = rep % 2 ? 30 : 4;
    for (int k = 0; k < 40; ++k) {
      const Cmd c = random_cmd(rng, k % 5 == 0 ? 600 : 40);
      b.vm_writes.clear();
      b.run(c);
      ASSERT_TRUE(b.violations.empty()) << b.violations.front();
      EXPECT_FALSE(b.err_seen_pulse);
      ASSERT_EQ(b.vm_writes, expected_rows(c, b.mem_, c.rows))
          << "addr " << c.addr << " rows " << c.rows << " stride " << c.stride << " bf16 "
          << c.bf16;
    }
  }
}

TEST(VdmaRd, ContiguousRowsOnePerCycleAtAnyAlignment) {
  for (uint32_t off = 0; off < kBeat; off += 16) {
    Bench b(7 + off);
    b.cfg.min_latency = b.cfg.max_latency = 10;
    Cmd c;
    c.addr = 4096 * 3 - 512 + off;  // the transfer crosses a 4 KiB boundary
    c.rows = 512;
    const uint64_t cycles = b.run(c);
    EXPECT_EQ(b.vm_writes, expected_rows(c, b.mem_, c.rows));
    EXPECT_LE(cycles, c.rows + 40) << "offset " << off;
    c.bf16 = true;
    b.vm_writes.clear();
    const uint64_t cycles16 = b.run(c);
    EXPECT_EQ(b.vm_writes, expected_rows(c, b.mem_, c.rows));
    EXPECT_LE(cycles16, c.rows + 40) << "bf16 offset " << off;
  }
}

TEST(VdmaRd, ErrorResponseEndsTheTransferAfterTheRowsBeforeIt) {
  std::mt19937_64 rng(test_seed() + 1);
  for (int k = 0; k < 30; ++k) {
    Bench b(rng());
    b.cfg.stall = k % 2 ? 0.25 : 0.0;
    Cmd c = random_cmd(rng, 300);
    // The error range: a 16-byte block inside the transfer's host bytes.
    const uint32_t at = c.addr + 16 * static_cast<uint32_t>(rng() % ((c.host_end() - c.addr) / 16));
    b.cfg.err_lo = at;
    b.cfg.err_hi = at + 16;
    b.run(c);
    ASSERT_TRUE(b.violations.empty()) << b.violations.front();
    // Rows are written in order, each as the ISA reads it, and only rows that do not touch
    // the failing burst's beats.
    const auto exp = expected_rows(c, b.mem_, c.rows);
    ASSERT_LE(b.vm_writes.size(), exp.size());
    for (size_t i = 0; i < b.vm_writes.size(); ++i) EXPECT_EQ(b.vm_writes[i], exp[i]);
    EXPECT_EQ(b.err_seen_pulse, touches_beat(c, at));
    EXPECT_TRUE(!b.err_seen_pulse || b.vm_writes.size() < c.rows);
    // The unit is idle and takes the next transfer normally.
    b.cfg.err_lo = b.cfg.err_hi = 0;
    b.err_seen_pulse = false;
    b.vm_writes.clear();
    const Cmd d = random_cmd(rng, 50);
    b.run(d);
    EXPECT_EQ(b.vm_writes, expected_rows(d, b.mem_, d.rows));
    EXPECT_FALSE(b.err_seen_pulse);
  }
}
#else
// Host memory after a write_vmem of VMEM rows `vmem` onto `mem`.
std::vector<uint8_t> expected_mem(const Cmd& c, std::vector<uint8_t> mem,
                                  const std::vector<uint32_t>& vmem) {
  for (uint32_t i = 0; i < c.rows; ++i) {
    const auto bytes = host_row(&vmem[size_t{(c.vaddr + i) % kVmemRows} * N], c.bf16);
    std::memcpy(&mem[c.addr + i * c.step()], bytes.data(), bytes.size());
  }
  return mem;
}

TEST(VdmaWr, RandomTransfersMatchTheIsaUnderBackpressure) {
  std::mt19937_64 rng(test_seed());
  for (int rep = 0; rep < 6; ++rep) {
    Bench b(rng());
    b.cfg.stall = rep % 3 == 0 ? 0.0 : 0.3;
    b.cfg.max_latency = rep % 2 ? 30 : 4;
    for (int k = 0; k < 40; ++k) {
      const Cmd c = random_cmd(rng, k % 5 == 0 ? 600 : 40);
      const auto want = expected_mem(c, b.mem_, b.vmem_);
      b.run(c);
      ASSERT_TRUE(b.violations.empty()) << b.violations.front();
      EXPECT_FALSE(b.err_seen);
      ASSERT_TRUE(b.mem_ == want) << "addr " << c.addr << " rows " << c.rows << " stride "
                                  << c.stride << " bf16 " << c.bf16;
    }
  }
}

TEST(VdmaWr, ContiguousRowsOnePerCycleAtAnyAlignment) {
  for (uint32_t off = 0; off < kBeat; off += 16) {
    Bench b(11 + off);
    b.cfg.min_latency = b.cfg.max_latency = 10;
    Cmd c;
    c.addr = 4096 * 3 - 512 + off;
    c.rows = 512;
    auto want = expected_mem(c, b.mem_, b.vmem_);
    const uint64_t cycles = b.run(c);
    EXPECT_TRUE(b.mem_ == want);
    EXPECT_LE(cycles, c.rows + 40) << "offset " << off;
    c.bf16 = true;
    want = expected_mem(c, b.mem_, b.vmem_);
    const uint64_t cycles16 = b.run(c);
    EXPECT_TRUE(b.mem_ == want);
    EXPECT_LE(cycles16, c.rows + 40) << "bf16 offset " << off;
  }
}

TEST(VdmaWr, ErrorResponseIsReportedAndTheNextTransferWorks) {
  std::mt19937_64 rng(test_seed() + 1);
  for (int k = 0; k < 30; ++k) {
    Bench b(rng());
    b.cfg.stall = k % 2 ? 0.25 : 0.0;
    const Cmd c = random_cmd(rng, 300);
    const uint32_t at = c.addr + 16 * static_cast<uint32_t>(rng() % ((c.host_end() - c.addr) / 16));
    b.cfg.err_lo = at;
    b.cfg.err_hi = at + 16;
    b.run(c);
    ASSERT_TRUE(b.violations.empty()) << b.violations.front();
    EXPECT_EQ(b.err_seen, touches_beat(c, at));
    b.cfg.err_lo = b.cfg.err_hi = 0;
    const Cmd d = random_cmd(rng, 50);
    const auto want = expected_mem(d, b.mem_, b.vmem_);
    b.run(d);
    EXPECT_FALSE(b.err_seen);
    EXPECT_TRUE(b.mem_ == want);
  }
}
#endif

}  // namespace

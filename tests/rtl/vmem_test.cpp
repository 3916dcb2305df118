// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_vmem (the training chip's vector memory, issue 30) against a C++ model of
// its contract (rtl/tpu_vmem.sv's header): three narrow read clients (clients 0 and 1 on read
// port 0, client 2 on read port 1), two narrow write clients, the vector unit's wide clients
// va / vb / vw (bank-indexed: bank k carries a row r with r mod S = k). Every cycle random
// requests; the model decides the grants (per bank, fixed priority: a narrow client is granted
// unless a lower-numbered narrow client of its port uses its bank in that cycle; the wide
// client bank by bank, every requested bank that no granted narrow client of its port uses)
// and the data: a granted read returns its row in the next cycle, and a read granted in the
// cycle its row is written returns the new row (write-first). The test compares grants every
// cycle (the wide clients' bank by bank) and the read data of every granted read, and reads
// rows in the cycle they are written on purpose (the write-first rule).
// Built for N = 4 at VpuRows (TPU_TEST_S) 1 and 4.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "Vtpu_vmem.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t S = TPU_TEST_S;  // VpuRows: banks
constexpr uint32_t kRows = 64;      // the build's VmemRows
constexpr uint32_t kRowBits = 32 * N;
constexpr uint32_t kReaders = 3;                     // narrow read clients (ports: kReadPort)
constexpr uint32_t kReadPort[kReaders] = {0, 0, 1};  // the build's RdPort = 3'b100
constexpr uint32_t kWriters = 2;                     // narrow write clients

using Row = std::vector<uint32_t>;  // N lanes (empty: an unused request, zeros)

uint32_t lane(const Row& r, uint32_t l) { return r.empty() ? 0 : r[l]; }

struct Requests {
  bool re[kReaders] = {};
  uint32_t raddr[kReaders] = {};
  bool we[kWriters] = {};
  uint32_t waddr[kWriters] = {};
  Row wdata[kWriters];
  uint32_t va_re = 0, vb_re = 0, vw_we = 0;  // bank bits
  uint32_t va_row[S] = {}, vb_row[S] = {}, vw_row[S] = {};
  Row vw_data[S];
};

struct Grants {
  bool rgnt[kReaders] = {};
  bool wgnt[kWriters] = {};
  uint32_t va = 0, vb = 0, vw = 0;  // the wide clients' granted banks
};

uint32_t bank_bit(uint32_t row) { return 1u << (row % S); }

// The contract: who is granted.
Grants model_grants(const Requests& q) {
  Grants g;
  uint32_t read_banks[2] = {0, 0};  // per read port: the banks narrow clients read
  for (uint32_t i = 0; i < kReaders; ++i) {
    uint32_t& used = read_banks[kReadPort[i]];
    g.rgnt[i] = q.re[i] && (used & bank_bit(q.raddr[i])) == 0;
    if (g.rgnt[i]) used |= bank_bit(q.raddr[i]);
  }
  uint32_t written_banks = 0;  // the banks narrow writes use
  for (uint32_t i = 0; i < kWriters; ++i) {
    g.wgnt[i] = q.we[i] && (written_banks & bank_bit(q.waddr[i])) == 0;
    if (g.wgnt[i]) written_banks |= bank_bit(q.waddr[i]);
  }
  g.va = q.va_re & ~read_banks[0];
  g.vb = q.vb_re & ~read_banks[1];
  g.vw = q.vw_we & ~written_banks;
  return g;
}

class Harness {
 public:
  explicit Harness(uint32_t seed)
      : rng_(seed),
        ctx_(std::make_unique<VerilatedContext>()),
        m_(std::make_unique<Vtpu_vmem>(ctx_.get())),
        mem_(kRows, Row(N, 0)) {
    m_->clk_i = 0;
    m_->rst_ni = 0;
    m_->eval();
    m_->rst_ni = 1;
    m_->eval();
  }

  // A row of bank k (or any row when k is S).
  uint32_t row_of_bank(uint32_t k) {
    const uint32_t r = rng_() % kRows;
    return S == 1 ? r : (r - r % S) + k;
  }
  Row random_row() {
    Row r(N);
    for (uint32_t& w : r) w = static_cast<uint32_t>(rng_());
    return r;
  }

  // Random requests; with probability `clash` reads aim at the rows written in this cycle.
  Requests random_requests(double clash) {
    std::bernoulli_distribution coin(0.5), hit(clash);
    Requests q;
    for (uint32_t i = 0; i < kWriters; ++i) {
      q.we[i] = coin(rng_);
      q.waddr[i] = rng_() % kRows;
      q.wdata[i] = random_row();
    }
    for (uint32_t k = 0; k < S; ++k) {
      if (coin(rng_)) q.vw_we |= 1u << k;
      q.vw_row[k] = row_of_bank(k);
      q.vw_data[k] = random_row();
      if (coin(rng_)) q.va_re |= 1u << k;
      if (coin(rng_)) q.vb_re |= 1u << k;
      q.va_row[k] = hit(rng_) ? q.vw_row[k] : row_of_bank(k);
      q.vb_row[k] = hit(rng_) ? q.vw_row[k] : row_of_bank(k);
    }
    const uint32_t written = q.we[0] ? q.waddr[0] : q.we[1] ? q.waddr[1] : q.vw_row[0];
    for (uint32_t i = 0; i < kReaders; ++i) {
      q.re[i] = coin(rng_);
      q.raddr[i] = hit(rng_) ? written : rng_() % kRows;
    }
    return q;
  }

  void drive(const Requests& q) {
    m_->re_i = 0;
    m_->we_i = 0;
    m_->va_re_i = q.va_re;
    m_->vb_re_i = q.vb_re;
    m_->vw_we_i = q.vw_we;
    for (uint32_t i = 0; i < kReaders; ++i) {
      set_field(m_->re_i, i, 1, q.re[i]);
      set_field(m_->raddr_i, 16 * i, 16, q.raddr[i]);
    }
    for (uint32_t i = 0; i < kWriters; ++i) {
      set_field(m_->we_i, i, 1, q.we[i]);
      set_field(m_->waddr_i, 16 * i, 16, q.waddr[i]);
      for (uint32_t l = 0; l < N; ++l)
        set_field(m_->wdata_i, kRowBits * i + 32 * l, 32, lane(q.wdata[i], l));
    }
    for (uint32_t k = 0; k < S; ++k) {
      set_field(m_->va_raddr_i, 16 * k, 16, q.va_row[k]);
      set_field(m_->vb_raddr_i, 16 * k, 16, q.vb_row[k]);
      set_field(m_->vw_waddr_i, 16 * k, 16, q.vw_row[k]);
      for (uint32_t l = 0; l < N; ++l)
        set_field(m_->vw_wdata_i, kRowBits * k + 32 * l, 32, lane(q.vw_data[k], l));
    }
    m_->eval();
  }

  // One cycle: drive, compare grants, clock, apply the model's writes, compare read data.
  void cycle(const Requests& q, uint64_t t) {
    drive(q);
    const Grants g = model_grants(q);
    for (uint32_t i = 0; i < kReaders; ++i)
      ASSERT_EQ(get_field(m_->rgnt_o, i, 1), g.rgnt[i]) << "cycle " << t << " read client " << i;
    for (uint32_t i = 0; i < kWriters; ++i)
      ASSERT_EQ(get_field(m_->wgnt_o, i, 1), g.wgnt[i]) << "cycle " << t << " write client " << i;
    ASSERT_EQ(uint32_t{m_->va_rgnt_o}, g.va) << "cycle " << t;
    ASSERT_EQ(uint32_t{m_->vb_rgnt_o}, g.vb) << "cycle " << t;
    ASSERT_EQ(uint32_t{m_->vw_wgnt_o}, g.vw) << "cycle " << t;
    m_->clk_i = 1;
    m_->eval();
    m_->clk_i = 0;
    m_->eval();
    // Write first: the model writes, then the reads of this cycle see the new rows.
    for (uint32_t i = 0; i < kWriters; ++i)
      if (g.wgnt[i]) mem_[q.waddr[i]] = q.wdata[i];
    for (uint32_t k = 0; k < S; ++k)
      if (g.vw >> k & 1u) mem_[q.vw_row[k]] = q.vw_data[k];
    for (uint32_t i = 0; i < kReaders; ++i) {
      if (!g.rgnt[i]) continue;
      for (uint32_t l = 0; l < N; ++l)
        ASSERT_EQ(get_field(m_->rdata_o, kRowBits * i + 32 * l, 32), mem_[q.raddr[i]][l])
            << "cycle " << t << " read client " << i << " row " << q.raddr[i] << " lane " << l;
    }
    for (uint32_t k = 0; k < S; ++k) {
      for (uint32_t l = 0; l < N; ++l) {
        if (g.va >> k & 1u) {
          ASSERT_EQ(get_field(m_->va_rdata_o, kRowBits * k + 32 * l, 32), mem_[q.va_row[k]][l])
              << "cycle " << t << " va bank " << k << " row " << q.va_row[k];
        }
        if (g.vb >> k & 1u) {
          ASSERT_EQ(get_field(m_->vb_rdata_o, kRowBits * k + 32 * l, 32), mem_[q.vb_row[k]][l])
              << "cycle " << t << " vb bank " << k << " row " << q.vb_row[k];
        }
      }
    }
  }

  std::mt19937 rng_;

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_vmem> m_;
  std::vector<Row> mem_;
};

TEST(Vmem, RandomRequestsMatchTheContract) {
  Harness h(1);
  for (uint64_t t = 0; t < 20000; ++t) {
    h.cycle(h.random_requests(0.25), t);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A narrow read of the row a narrow write writes in the same cycle returns the new row, on
// both read ports and for either write client.
TEST(Vmem, ReadInTheCycleOfItsWriteReturnsTheNewRow) {
  Harness h(2);
  uint64_t t = 0;
  for (uint32_t writer = 0; writer < kWriters; ++writer) {
    for (uint32_t row : {0u, 5u, kRows - 1}) {
      Requests q;
      q.we[writer] = true;
      q.waddr[writer] = row;
      q.wdata[writer] = h.random_row();
      for (uint32_t i = 0; i < kReaders; ++i) {
        q.re[i] = true;
        q.raddr[i] = row;
      }
      h.cycle(q, t++);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// The wide read clients see a wide write of the same rows in the same cycle (write-first in
// every bank and both copies).
TEST(Vmem, WideReadInTheCycleOfAWideWriteReturnsTheNewRows) {
  Harness h(3);
  for (uint64_t t = 0; t < 200; ++t) {
    Requests q;
    q.vw_we = q.va_re = q.vb_re = (1u << S) - 1;
    for (uint32_t k = 0; k < S; ++k) {
      q.vw_row[k] = q.va_row[k] = q.vb_row[k] = h.row_of_bank(k);
      q.vw_data[k] = h.random_row();
    }
    h.cycle(q, t);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A narrow client takes one bank and the wide clients get the others in the same cycle; reads
// in that cycle of rows written in it (a narrow read of a row of the wide write, a wide read of
// the narrow write's row) return the new rows.
TEST(Vmem, WideClientsGetTheBanksTheNarrowClientsLeave) {
  Harness h(4);
  for (uint64_t t = 0; t < 64; ++t) {
    Requests q;
    q.vw_we = q.va_re = q.vb_re = (1u << S) - 1;
    for (uint32_t k = 0; k < S; ++k) {
      q.va_row[k] = q.vb_row[k] = h.row_of_bank(k);
      q.vw_row[k] = h.row_of_bank(k);
      q.vw_data[k] = h.random_row();
    }
    // Narrow read clients 0 (port 0) and 2 (port 1) on a rotating bank, narrow write client 1
    // on another one.
    const uint32_t nb = static_cast<uint32_t>(t % S);
    q.re[0] = q.re[2] = true;
    q.raddr[0] = q.vw_row[(nb + 1) % S];  // the row the wide write writes now
    q.raddr[2] = h.row_of_bank(nb);
    q.we[1] = t % 2 == 0;
    q.waddr[1] = h.row_of_bank((nb + S - 1) % S);
    q.wdata[1] = h.random_row();
    if (q.we[1]) q.va_row[(nb + S - 1) % S] = q.waddr[1];
    h.cycle(q, t);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Two narrow clients of one port, or both narrow writers, in different banks are granted in
// the same cycle (per-bank priority); in the same bank only the lower-numbered one is. With one
// bank (S = 1) the port is the bank: only client 0 (reads) / writer 0 is granted.
TEST(Vmem, NarrowClientsOfAPortShareItByBank) {
  Harness h(5);
  for (uint64_t t = 0; t < 64; ++t) {
    Requests q;
    const uint32_t b0 = static_cast<uint32_t>(t % S);
    const uint32_t b1 = t % 4 < 2 ? b0 : (b0 + 1) % S;  // same bank in half the cycles
    q.re[0] = q.re[1] = true;
    q.raddr[0] = h.row_of_bank(b0);
    q.raddr[1] = h.row_of_bank(b1);
    q.we[0] = q.we[1] = true;
    q.waddr[0] = h.row_of_bank(b1);
    q.waddr[1] = h.row_of_bank(b0);
    q.wdata[0] = h.random_row();
    q.wdata[1] = h.random_row();
    h.cycle(q, t);
    if (::testing::Test::HasFatalFailure()) return;
    const Grants g = model_grants(q);
    EXPECT_TRUE(g.rgnt[0] && g.wgnt[0]);
    EXPECT_EQ(g.rgnt[1], b0 != b1) << "cycle " << t;
    EXPECT_EQ(g.wgnt[1], b0 != b1) << "cycle " << t;
  }
}

}  // namespace

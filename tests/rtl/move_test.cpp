// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_vmem_move (the training chip's move unit: acc_to_vmem and transpose) against
// the instructions' definitions in docs/isa.md, run on a C++ VMEM and ACC: random instructions
// (overlapping and in-place transposes among them) with the VMEM read and write grants (both
// write clients) and the second ACC port's grant denied at random, each instruction's VMEM
// compared with its blocks / rows done one after the other. Also the rates: a transposed block
// every N + 3 cycles, acc_to_vmem two rows per cycle, when nothing is denied.
// Built for N = 4.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "Vtpu_vmem_move.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t kRows = 256;    // VMEM rows of the model
constexpr uint32_t kAccRows = 64;  // the build's AccRows

using Mem = std::vector<std::vector<uint32_t>>;  // rows of N lanes

struct Move {
  bool transpose = true;
  uint32_t src = 0, dst = 0, count = 1, src_stride = 0, dst_stride = 0, row_stride = 1;
};

// docs/isa.md: transpose blocks in order, each reading all its rows before writing; acc_to_vmem
// row by row.
void reference(const Move& m, Mem& vmem, const Mem& acc) {
  if (!m.transpose) {
    for (uint32_t i = 0; i < m.count; ++i) vmem[m.dst + i] = acc[m.src + i];
    return;
  }
  for (uint32_t b = 0; b < m.count; ++b) {
    Mem s(N);
    for (uint32_t i = 0; i < N; ++i) s[i] = vmem[m.src + b * m.src_stride + i * m.row_stride];
    for (uint32_t j = 0; j < N; ++j) {
      for (uint32_t i = 0; i < N; ++i) vmem[m.dst + b * m.dst_stride + j][i] = s[i][j];
    }
  }
}

class Harness {
 public:
  explicit Harness(uint32_t seed)
      : rng_(seed),
        ctx_(std::make_unique<VerilatedContext>()),
        m_(std::make_unique<Vtpu_vmem_move>(ctx_.get())) {
    vmem_ = random_mem(kRows);
    acc_ = random_mem(kAccRows);
    m_->clk_i = 0;
    m_->rst_ni = 0;
    m_->eval();
    m_->rst_ni = 1;
    m_->eval();
  }

  Mem random_mem(uint32_t rows) {
    Mem m(rows, std::vector<uint32_t>(N));
    for (auto& r : m)
      for (uint32_t& w : r) w = static_cast<uint32_t>(rng_());
    return m;
  }

  // Runs one instruction with grants given with probability p; returns its cycles.
  uint64_t run(const Move& mv, double p) {
    std::bernoulli_distribution grant(p);
    set_cmd(mv);
    m_->cmd_valid_i = 1;
    tick(false, false, false, false);  // taken in this cycle
    m_->cmd_valid_i = 0;
    uint64_t cycles = 1;
    while (m_->busy_o) {
      tick(grant(rng_), grant(rng_), grant(rng_), grant(rng_));
      if (++cycles > 100000) {
        ADD_FAILURE() << "the move unit hangs";
        return cycles;
      }
    }
    return cycles;
  }

  Mem vmem_, acc_;
  std::mt19937 rng_;

 private:
  void set_cmd(const Move& mv) {
    auto& c = m_->cmd_i;  // move_cmd_t, 105 bits, transpose in the top bit
    set_field(c, 104, 1, mv.transpose);
    set_field(c, 88, 16, mv.src);
    set_field(c, 72, 16, mv.dst);
    set_field(c, 48, 24, mv.count);
    set_field(c, 32, 16, mv.src_stride);
    set_field(c, 16, 16, mv.dst_stride);
    set_field(c, 0, 16, mv.row_stride);
  }

  // One cycle: present last cycle's read data, grant, clock, apply the writes (write-first).
  // The second ACC port's data is there only in the cycle after its grant (garbage after, as
  // when the MXU reads copy 0 again); two writes of one row in a cycle are an error.
  void tick(bool rgnt, bool wgnt, bool wgnt2, bool acc2_gnt) {
    for (uint32_t l = 0; l < N; ++l) {
      set_field(m_->vm_rdata_i, 32 * l, 32, rdata_[l]);
      set_field(m_->acc_rdata_i, 32 * l, 32, acc_data_[l]);
      set_field(m_->acc2_rdata_i, 32 * l, 32, acc2_fresh_ ? acc2_data_[l] : 0xdeadbeefu);
    }
    m_->vm_rgnt_i = 0;
    m_->vm_w_wgnt_i = 0;
    m_->vm_w2_wgnt_i = 0;
    m_->acc2_gnt_i = 0;
    m_->eval();
    const bool re = m_->vm_re_o && rgnt, we = m_->vm_w_we_o && wgnt;
    const bool we2 = m_->vm_w2_we_o && wgnt2;
    m_->vm_rgnt_i = re;
    m_->vm_w_wgnt_i = we;
    m_->vm_w2_wgnt_i = we2;
    m_->eval();
    // acc2's grant may depend on nothing the unit drives but its request.
    const bool acc2 = m_->acc2_re_o && acc2_gnt;
    m_->acc2_gnt_i = acc2;
    m_->eval();
    const uint32_t raddr = m_->vm_raddr_o, waddr = m_->vm_w_waddr_o, waddr2 = m_->vm_w2_waddr_o;
    const bool acc_re = m_->acc_re_o;  // reads the next ACC row when the write is granted
    const uint32_t acc_addr = m_->acc_raddr_o, acc2_addr = m_->acc2_raddr_o;
    std::vector<uint32_t> wdata(N), wdata2(N);
    for (uint32_t l = 0; l < N; ++l) {
      wdata[l] = get_field(m_->vm_w_wdata_o, 32 * l, 32);
      wdata2[l] = get_field(m_->vm_w2_wdata_o, 32 * l, 32);
    }
    m_->clk_i = 1;
    m_->eval();
    m_->clk_i = 0;
    m_->eval();
    if (we && we2) {
      ASSERT_NE(waddr, waddr2) << "both write clients write one row";
    }
    if (we) {
      ASSERT_LT(waddr, kRows);
      vmem_[waddr] = wdata;
    }
    if (we2) {
      ASSERT_LT(waddr2, kRows);
      vmem_[waddr2] = wdata2;
    }
    if (re) {
      ASSERT_LT(raddr, kRows);
      rdata_ = vmem_[raddr];
    }
    if (acc_re) acc_data_ = acc_[acc_addr % kAccRows];
    acc2_fresh_ = acc2;
    if (acc2) acc2_data_ = acc_[acc2_addr % kAccRows];
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_vmem_move> m_;
  std::vector<uint32_t> rdata_ = std::vector<uint32_t>(N), acc_data_ = std::vector<uint32_t>(N);
  std::vector<uint32_t> acc2_data_ = std::vector<uint32_t>(N);
  bool acc2_fresh_ = false;
};

// A random transpose inside kRows: overlapping blocks, in-place blocks and strided rows often.
Move random_transpose(std::mt19937& rng) {
  Move m;
  m.count = 1 + rng() % 6;
  m.row_stride = 1 + rng() % 3;
  const uint32_t kind = rng() % 4;
  m.src_stride = kind == 0 ? N : (rng() % (2 * N));
  m.dst_stride = kind == 1 ? m.src_stride : (rng() % (2 * N));
  const uint32_t src_span = (m.count - 1) * m.src_stride + (N - 1) * m.row_stride + 1;
  const uint32_t dst_span = (m.count - 1) * m.dst_stride + N;
  m.src = rng() % (kRows - src_span);
  // kind 1: in place (each block's destination its own first rows); 2: the next block's source
  // right after this block's destination; else anywhere.
  m.dst = kind == 1   ? m.src
          : kind == 2 ? (m.src + N) % (kRows - dst_span)
                      : rng() % (kRows - dst_span);
  return m;
}

TEST(Move, RandomInstructionsMatchTheBlocksInOrder) {
  for (double p : {1.0, 0.7, 0.3}) {
    Harness h(static_cast<uint32_t>(p * 100));
    for (int t = 0; t < 400; ++t) {
      Move m;
      if (t % 5 == 4) {
        m.transpose = false;
        m.count = 1 + h.rng_() % 16;
        m.src = h.rng_() % (kAccRows - m.count);
        m.dst = h.rng_() % (kRows - m.count);
      } else {
        m = random_transpose(h.rng_);
      }
      Mem want = h.vmem_;
      reference(m, want, h.acc_);
      h.run(m, p);
      if (::testing::Test::HasFailure()) return;
      for (uint32_t r = 0; r < kRows; ++r) {
        ASSERT_EQ(h.vmem_[r], want[r])
            << "p " << p << " instruction " << t << " (transpose " << m.transpose << " src "
            << m.src << " dst " << m.dst << " count " << m.count << " strides " << m.src_stride
            << "/" << m.dst_stride << "/" << m.row_stride << ") row " << r;
      }
    }
  }
}

// Blocks that do not meet each other's rows overlap their reads and writes: 8 blocks in about
// 8 (N + 3) cycles, where one after the other they take 8 (2N + 1).
TEST(Move, TransposeBlocksPipelined) {
  Harness h(7);
  Move m;
  m.count = 8;
  m.src = 0;
  m.src_stride = N;
  m.dst = 128;
  m.dst_stride = N;
  Mem want = h.vmem_;
  reference(m, want, h.acc_);
  const uint64_t cycles = h.run(m, 1.0);
  EXPECT_EQ(h.vmem_, want);
  EXPECT_LE(cycles, 8 * (N + 3) + N + 4) << "cycles " << cycles;
  // In place, each block's source is its destination: the blocks do not meet each other.
  Move ip = m;
  ip.dst = 0;
  want = h.vmem_;
  reference(ip, want, h.acc_);
  EXPECT_LE(h.run(ip, 1.0), 8 * (N + 3) + N + 4);
  EXPECT_EQ(h.vmem_, want);
  // Each block's source the previous block's destination: one after the other.
  Move chain = m;
  chain.dst = N;
  chain.count = 4;
  want = h.vmem_;
  reference(chain, want, h.acc_);
  EXPECT_GE(h.run(chain, 1.0), 4 * (2 * N + 1));
  EXPECT_EQ(h.vmem_, want);
}

// acc_to_vmem with every grant: a pair of rows per cycle (16 rows in 8 cycles and the last
// write), and an odd count's last row alone.
TEST(Move, AccToVmemTwoRowsPerCycle) {
  Harness h(11);
  for (uint32_t count : {16u, 15u, 1u, 2u}) {
    Move m;
    m.transpose = false;
    m.count = count;
    m.src = 3;
    m.dst = 40;
    Mem want = h.vmem_;
    reference(m, want, h.acc_);
    const uint64_t cycles = h.run(m, 1.0);
    EXPECT_EQ(h.vmem_, want) << "count " << count;
    EXPECT_EQ(cycles, (count + 1) / 2 + 2) << "count " << count;
  }
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_vpu (the vector unit, issue 30) against the golden model's `vector`
// execution (driver/golden_vector.cpp through GoldenModel::execute): random instructions of
// every func and bmode, inner and outer strides including 0, destinations overlapping later
// operand rows, float corner values (NaN, infinities, signed zeros, subnormals, values near
// overflow and near the conversions' limits, cancelling pairs), run on a VMEM model that
// denies each port's grants at random, read data only in the cycle after a granted read
// (garbage otherwise) and writes first (a read granted with a write of its row returns the new
// row). After every instruction the whole VMEM must equal the golden model's, bit for bit.
// TPU_VPU_RANDOM sets the number of random instructions (the `slow.` copies run more).
// Built for each VpuRows S (TPU_TEST_S): the ports are bank-indexed (bank k = rows r with
// r mod S = k, rtl/tpu_vmem.sv), granted bank by bank: the grant patterns deny whole ports or
// single banks at random, or one bank per cycle in turn as a narrow client streaming rows does
// (rtl/tpu_vmem.sv); the VMEM model checks that every bank request names a row of its bank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "Vtpu_vpu.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t S = TPU_TEST_S;       // VpuRows: element rows per cycle, VMEM banks
constexpr uint32_t kRows = 64;           // VMEM rows of the test: small, so ranges overlap
constexpr int64_t kCycleLimit = 200000;  // per instruction: a hang is a failure
// Pipeline stages of the lane reductions' tree after X (tpu_vpu.sv: TS = log2(N) - 1).
constexpr int64_t kTreeStages = N == 4 ? 1 : N == 16 ? 3 : N == 64 ? 5 : N == 256 ? 7 : -1;

using tpu::BMode;

uint32_t r32(std::mt19937& rng) { return static_cast<uint32_t>(rng()); }

using tpu::VecFunc;

// Grant probabilities of the three ports (1 = always granted), for the whole port or for each
// bank on its own; or `stream`: full grants but for bank (cycle mod S) on every port, the bank
// a narrow client streaming contiguous rows takes (rtl/tpu_vmem.sv).
struct Grants {
  double a = 1, b = 1, w = 1;
  bool per_bank = false;
  bool stream = false;
};

class Harness {
 public:
  explicit Harness(uint32_t seed)
      : rng(seed),
        ctx_(std::make_unique<VerilatedContext>()),
        m(std::make_unique<Vtpu_vpu>(ctx_.get())),
        mem(size_t{kRows} * N, 0) {
    m->clk_i = 0;
    m->rst_ni = 0;
    m->clear_i = 0;
    m->cmd_valid_i = 0;
    m->vm_a_rgnt_i = 0;
    m->vm_b_rgnt_i = 0;
    m->vm_w_wgnt_i = 0;
    m->eval();
    tick();
    tick();
    m->rst_ni = 1;
    tick();
  }

  // One clock cycle: random grants, the memory's reaction to the requests, the clock edge,
  // then this cycle's read data (or garbage) on the data inputs.
  void tick() {
    m->vm_a_rgnt_i = static_cast<CData>(grant_mask(grants.a));
    m->vm_b_rgnt_i = static_cast<CData>(grant_mask(grants.b));
    m->vm_w_wgnt_i = static_cast<CData>(grant_mask(grants.w));
    m->eval();
    if (m->rst_ni) check_requests();
    if ((m->vm_w_we_o & m->vm_w_wgnt_i) != 0) {  // write first
      for (uint32_t k = 0; k < S; ++k) {
        if (!bit(m->vm_w_we_o, k) || !bit(m->vm_w_wgnt_i, k)) continue;
        const uint32_t row = get_field(m->vm_w_waddr_o, 16 * k, 16);
        for (uint32_t j = 0; j < N; ++j) {
          mem[size_t{row} * N + j] = get_word(m->vm_w_wdata_o, N * k + j);
        }
        ++writes;
      }
      ++write_cycles;
    }
    std::vector<uint32_t> a_rows = read_rows(m->vm_a_rgnt_i, m->vm_a_re_o, m->vm_a_raddr_o);
    std::vector<uint32_t> b_rows = read_rows(m->vm_b_rgnt_i, m->vm_b_re_o, m->vm_b_raddr_o);
    cmd_taken = m->cmd_valid_i && m->cmd_ready_o;
    m->clk_i = 1;
    m->eval();
    m->clk_i = 0;
    for (uint32_t x = 0; x < N * S; ++x) {
      set_word(m->vm_a_rdata_i, x, a_rows[x]);
      set_word(m->vm_b_rdata_i, x, b_rows[x]);
    }
    m->eval();
    ++cycle;
  }

  // This cycle's granted banks of a port granted with probability p.
  uint32_t grant_mask(double p) {
    constexpr uint32_t kAll = (1u << S) - 1;
    if (grants.stream) return kAll & ~(1u << static_cast<uint32_t>(cycle % S));
    std::uniform_real_distribution<double> u(0, 1);
    if (!grants.per_bank) return u(rng) < p ? kAll : 0;
    uint32_t mask = 0;
    for (uint32_t k = 0; k < S; ++k) mask |= (u(rng) < p ? 1u : 0u) << k;
    return mask;
  }

  // Runs one instruction: valid after a random delay, held until taken, then until idle.
  // Returns the cycles from the command's acceptance to idle.
  int64_t run(const tpu::Vector& v) {
    set_command(v);
    for (int d = std::uniform_int_distribution<int>(0, 2)(rng); d > 0; --d) tick();
    m->cmd_valid_i = 1;
    const int64_t start = cycle;
    while (true) {
      tick();
      if (cmd_taken) break;
      if (cycle - start > kCycleLimit) ADD_FAILURE() << "command never taken";
      if (cycle - start > kCycleLimit) return -1;
    }
    m->cmd_valid_i = 0;
    const int64_t taken = cycle;
    while (m->busy_o) {
      tick();
      if (cycle - taken > kCycleLimit) {
        ADD_FAILURE() << "the unit hangs";
        return -1;
      }
    }
    EXPECT_TRUE(m->idle_o && m->cmd_ready_o);
    return cycle - taken;
  }

  // The command port: bits 127:8 of the encoded instruction.
  void set_command(const tpu::Vector& v) {
    const tpu::InstrBytes w = tpu::encode(tpu::Instruction{v});
    for (unsigned byte = 1; byte < tpu::kInstrBytes; ++byte) {
      set_field(m->cmd_i, 8 * (byte - 1), 8, w[byte]);
    }
  }

 private:
  template <typename T>
  static bool bit(const T& port, uint32_t k) {
    return get_field(port, k, 1) != 0;
  }
  // Every bank request names an in-range row of its bank.
  template <typename R, typename A>
  void check_port(const R& re, const A& addr, const char* what) {
    for (uint32_t k = 0; k < S; ++k) {
      if (!bit(re, k)) continue;
      const uint32_t row = get_field(addr, 16 * k, 16);
      EXPECT_LT(row, kRows) << what << " outside the VMEM";
      EXPECT_EQ(row % S, k) << what << ": bank " << k << " asked for row " << row;
    }
  }
  void check_requests() {
    check_port(m->vm_a_re_o, m->vm_a_raddr_o, "port A read");
    check_port(m->vm_b_re_o, m->vm_b_raddr_o, "port B read");
    check_port(m->vm_w_we_o, m->vm_w_waddr_o, "write");
    if (!m->busy_o) {
      EXPECT_FALSE(m->vm_a_re_o || m->vm_b_re_o || m->vm_w_we_o) << "a request while idle";
    }
  }
  // The banks' data: bank k's row if it was read (granted), garbage otherwise.
  template <typename R, typename A>
  std::vector<uint32_t> read_rows(uint32_t granted, const R& re, const A& addr) {
    std::vector<uint32_t> r(N * S);
    for (uint32_t k = 0; k < S; ++k) {
      const bool rd = (granted >> k & 1u) && bit(re, k);
      const uint32_t row = get_field(addr, 16 * k, 16);
      for (uint32_t j = 0; j < N; ++j) {
        r[N * k + j] = rd && row < kRows ? mem[size_t{row} * N + j] : r32(rng);
      }
    }
    return r;
  }

 public:
  std::mt19937 rng;
  Grants grants;

 private:
  std::unique_ptr<VerilatedContext> ctx_;

 public:
  std::unique_ptr<Vtpu_vpu> m;
  std::vector<uint32_t> mem;  // kRows x N
  int64_t cycle = 0;
  int64_t writes = 0;        // rows written
  int64_t write_cycles = 0;  // cycles with a granted write (of any bank)
  bool cmd_taken = false;
};

// ---- operand values

// Float corner values and values that stress the conversions.
const std::vector<uint32_t>& corner_values() {
  static const std::vector<uint32_t> v = {
      0x00000000, 0x80000000,              // signed zeros
      0x7F800000, 0xFF800000,              // infinities
      0x7FC00000, 0xFFC00000, 0x7F800001,  // NaNs (canonical, negative, signalling)
      0x00000001, 0x807FFFFF, 0x00400000,  // subnormals
      0x00800000, 0x80800000, 0x00800001,  // the smallest normals
      0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000,  // near overflow
      0x3F800000, 0xBF800000, 0x40000000,  // 1, -1, 2
      0x3F808000, 0x3F818000, 0x3F80C000,  // bf16 ties and above
      0x4B800000, 0x4B800001, 0x4EFFFFFF,  // 2^24, 2^31 - 128 (f2i limits)
      0x4F000000, 0xCF000000, 0xCF000001,  // +-2^31 and below
      0x3F000000, 0xBF000000, 0x3FC00000,  // +-0.5, 1.5 (f2i ties)
      0x01000000, 0x80FFFFFF,              // products that flush
      0xFFFFFFFF, 0x7FFFFFFF, 0x00FFFFFF,  // integers / masks
      0x0000001F, 0x00000020, 0x80000001,
  };
  return v;
}

uint32_t random_value(std::mt19937& rng) {
  const uint32_t pick = r32(rng) % 8;
  if (pick < 2) return corner_values()[r32(rng) % corner_values().size()];
  if (pick < 3) return r32(rng);                                   // any pattern
  if (pick < 4) return static_cast<uint32_t>(r32(rng) % 64) - 32;  // small integers
  // A normal float of moderate magnitude, either sign.
  const uint32_t exp = 127 - 12 + r32(rng) % 24;
  return (r32(rng) & 0x80000000u) | exp << 23 | (r32(rng) & 0x007FFFFFu);
}

// Fresh VMEM contents: random values, and rows that cancel or nearly cancel earlier rows.
std::vector<uint32_t> random_vmem(std::mt19937& rng) {
  std::vector<uint32_t> mem(size_t{kRows} * N);
  for (uint32_t r = 0; r < kRows; ++r) {
    const uint32_t kind = r32(rng) % 6;
    for (uint32_t j = 0; j < N; ++j) {
      uint32_t& x = mem[size_t{r} * N + j];
      if (r > 0 && kind == 0) {
        x = mem[size_t{r32(rng) % r} * N + j] ^ 0x80000000u;  // -y
      } else if (r > 0 && kind == 1) {
        x = (mem[size_t{r32(rng) % r} * N + j] ^ 0x80000000u) + (r32(rng) % 3) - 1;  // -y +- 1 ulp
      } else {
        x = random_value(rng);
      }
    }
  }
  return mem;
}

// ---- random instructions

uint32_t pick(std::mt19937& rng, uint32_t lo, uint32_t hi) {  // uniform in [lo, hi]
  return lo + static_cast<uint32_t>(r32(rng) % (hi - lo + 1));
}

uint32_t inner_stride(std::mt19937& rng) {
  const uint32_t k = r32(rng) % 5;
  return k == 0 ? 0 : k <= 2 ? 1 : pick(rng, 0, 15);
}

uint32_t outer_stride(std::mt19937& rng, uint32_t inner, uint32_t istride) {
  const uint32_t k = r32(rng) % 6;
  if (k == 0) return 0;
  if (k <= 2) return inner * istride;  // contiguous lines
  return pick(rng, 0, kRows / 2);
}

// A base row near `near` (overlapping ranges) or anywhere, so that base + extent < kRows.
uint32_t base_row(std::mt19937& rng, uint32_t extent, uint32_t near) {
  const uint32_t top = kRows - 1 - extent;
  if (r32(rng) % 2 == 0) return pick(rng, 0, top);
  const int64_t r = int64_t{near} + static_cast<int64_t>(pick(rng, 0, 4)) - 2;
  return static_cast<uint32_t>(std::clamp<int64_t>(r, 0, top));
}

// A random `vector` instruction that passes the decoder's checks on a kRows-row VMEM.
tpu::Vector random_vector(std::mt19937& rng) {
  const auto& funcs = tpu::all_vec_funcs();
  while (true) {
    tpu::Vector v;
    v.func = static_cast<uint8_t>(funcs[r32(rng) % funcs.size()]);
    const VecFunc f = v.vec_func();
    v.inner = static_cast<uint8_t>(r32(rng) % 4 == 0 ? pick(rng, 1, 40) : pick(rng, 1, 6));
    v.outer = static_cast<uint16_t>(r32(rng) % 4 == 0 ? pick(rng, 1, 16) : pick(rng, 1, 4));
    v.a_inner_stride = static_cast<uint8_t>(inner_stride(rng));
    v.dst_inner_stride = static_cast<uint8_t>(inner_stride(rng));
    v.a_outer_stride = static_cast<uint16_t>(outer_stride(rng, v.inner, v.a_inner_stride));
    v.dst_outer_stride = static_cast<uint16_t>(outer_stride(rng, v.inner, v.dst_inner_stride));
    const uint32_t a_ext = (v.outer - 1u) * v.a_outer_stride + (v.inner - 1u) * v.a_inner_stride;
    const uint32_t d_ext =
        (v.outer - 1u) * v.dst_outer_stride + (v.inner - 1u) * v.dst_inner_stride;
    bool align_next = false;
    if (tpu::is_unary_vec_func(v.func)) {
      v.bmode = BMode::RowA;
      v.b = 0;
    } else if (f == VecFunc::Align) {
      v.bmode = BMode::Imm;
      const uint32_t k = r32(rng) % 4;
      v.b = k == 0 ? 0 : k == 1 ? N - 1 : pick(rng, 0, N - 1);
      align_next = v.b > 0;
    } else {
      v.bmode = static_cast<BMode>(r32(rng) % 4);
      v.b = random_value(rng);
    }
    if (a_ext + (align_next ? 1 : 0) >= kRows || d_ext >= kRows) continue;
    v.a = static_cast<uint16_t>(base_row(rng, a_ext + (align_next ? 1 : 0), r32(rng) % kRows));
    v.dst = static_cast<uint16_t>(base_row(rng, d_ext, v.a));
    if (tpu::is_unary_vec_func(v.func)) {
      // b stays 0
    } else if (v.bmode == BMode::RowA) {
      v.b = base_row(rng, a_ext, r32(rng) % 2 ? v.a + 1 : v.dst);
    } else if (v.bmode == BMode::RowDst) {
      v.b = base_row(rng, d_ext, r32(rng) % 2 ? v.dst : v.a);
    } else if (v.bmode == BMode::Fixed) {
      v.b = base_row(rng, 0, r32(rng) % 2 ? v.dst : v.a);
    }
    return v;
  }
}

std::string describe(const tpu::Vector& v) {
  std::ostringstream s;
  s << tpu::vec_func_name(v.func) << " bmode=" << static_cast<int>(v.bmode) << " dst=" << v.dst
    << " a=" << v.a << " inner=" << int{v.inner} << " outer=" << v.outer
    << " a_strides=" << int{v.a_inner_stride} << "/" << v.a_outer_stride
    << " dst_strides=" << int{v.dst_inner_stride} << "/" << v.dst_outer_stride << " b=0x"
    << std::hex << v.b;
  return s.str();
}

// The golden model of a kRows-row VMEM.
struct Golden {
  Golden() : gm(host, params()) {}
  static tpu::ChipParams params() {
    tpu::ChipParams p = tpu::ChipParams::training(N);
    p.vmem_rows = kRows;
    return p;
  }
  tpu::RegionMemory host;
  tpu::GoldenModel gm;
};

// Runs v on both; false (with a failure naming the first differing lane) on a mismatch.
bool run_and_compare(Harness& h, Golden& g, const tpu::Vector& v, int64_t* cycles = nullptr) {
  std::string why;
  const tpu::ErrorCode e = g.gm.execute(tpu::Instruction{v}, &why);
  if (e != tpu::ErrorCode::ERR_NONE) {
    ADD_FAILURE() << "the generator made a faulting instruction: " << describe(v) << ": " << why;
    return false;
  }
  const int64_t c = h.run(v);
  if (cycles) *cycles = c;
  if (c < 0) return false;
  const std::vector<uint32_t> want = g.gm.vmem_rows(0, kRows);
  for (size_t k = 0; k < want.size(); ++k) {
    if (want[k] != h.mem[k]) {
      ADD_FAILURE() << describe(v) << ": VMEM[" << k / N << "][" << k % N << "] = 0x" << std::hex
                    << h.mem[k] << ", golden 0x" << want[k];
      return false;
    }
  }
  return true;
}

// A harness, the golden model and the test's random numbers, both memories holding the same
// random contents (refill()).
struct Rig {
  Rig(uint32_t harness_seed, uint32_t rng_seed) : h(harness_seed), rng(rng_seed) { refill(); }
  void refill() {
    h.mem = random_vmem(rng);
    g.gm.set_vmem_rows(0, h.mem);
  }
  Harness h;
  Golden g;
  std::mt19937 rng;
};

// Offers v until the unit takes it (the command stays offered: the caller withdraws it).
void offer_until_taken(Harness& h, const tpu::Vector& v) {
  h.set_command(v);
  h.m->cmd_valid_i = 1;
  do h.tick();
  while (!h.cmd_taken);
}

// One line of the throughput tests' output.
void print_rate(const std::string& what, int64_t rows, int64_t cycles) {
  std::printf("%s: %lld rows in %lld cycles (%.3f rows/cycle)\n", what.c_str(),
              static_cast<long long>(rows), static_cast<long long>(cycles),
              double(rows) / double(cycles));
}

std::string func_name(const tpu::Vector& v) { return std::string(tpu::vec_func_name(v.func)); }

const Grants kGrantPatterns[] = {
    {1, 1, 1},
    {0.9, 0.9, 0.9},
    {0.5, 0.5, 0.5},
    {0.3, 0.8, 0.6},
    {1, 0.2, 1},
    {1, 1, 0.2},
    {0.2, 1, 1},
    {0.7, 0.4, 0.9},
    {0.9, 0.9, 0.9, true},
    {0.5, 0.5, 0.5, true},
    {0.8, 0.3, 0.6, true},
    {1, 1, 1, false, S > 1},  // a narrow client streaming (S = 1: full grants)
};

int random_count(int dflt) {
  const char* e = std::getenv("TPU_VPU_RANDOM");
  return e ? std::atoi(e) : dflt;
}

// `count` random instructions in batches of 50, each batch on fresh VMEM contents and with a
// grant pattern of its own.
void run_random(uint32_t seed, int count) {
  Rig r(seed, seed * 7919u + 1);  // the first batch's VMEM contents
  int done = 0;
  int64_t rows = 0, cycles = 0;
  while (done < count) {
    if (done > 0) r.refill();
    r.h.grants = kGrantPatterns[r32(r.rng) % std::size(kGrantPatterns)];
    for (int k = 0; k < 50 && done < count; ++k, ++done) {
      const tpu::Vector v = random_vector(r.rng);
      int64_t c = 0;
      ASSERT_TRUE(run_and_compare(r.h, r.g, v, &c)) << "instruction " << done << ", seed " << seed;
      rows += int64_t{v.inner} * v.outer;
      cycles += c;
    }
  }
  std::printf("N=%u seed %u: %d instructions, %lld element rows, %lld cycles\n", N, seed, count,
              static_cast<long long>(rows), static_cast<long long>(cycles));
}

TEST(Vpu, RandomInstructions) {
  const int count = random_count(6000);
  for (uint32_t seed = 1; seed <= 2; ++seed) run_random(seed, count / 2);
}

// One row per cycle with full grants when no row waits for an earlier write: every func
// class, A and B from rows the instruction does not write.
TEST(Vpu, ThroughputFullGrants) {
  Rig r(7, 11);
  const VecFunc funcs[] = {VecFunc::FAdd, VecFunc::FMul,  VecFunc::LSum,
                           VecFunc::RSum, VecFunc::Align, VecFunc::I2F};
  for (VecFunc f : funcs) {
    tpu::Vector v;
    v.func = static_cast<uint8_t>(f);
    v.inner = 200;
    v.outer = 5;
    v.a = 0;  // A rows 0..9 (align: and 10), B rows 20..24, destination rows 40..44
    v.a_inner_stride = 0;
    v.a_outer_stride = 2;
    v.dst = 40;
    v.dst_inner_stride = 0;
    v.dst_outer_stride = 1;
    if (tpu::is_unary_vec_func(v.func)) {
      v.bmode = BMode::RowA;
    } else if (f == VecFunc::Align) {
      v.bmode = BMode::Imm;
      v.b = N / 2;
    } else {
      v.bmode = BMode::Fixed;
      v.b = 20;
    }
    int64_t cycles = 0;
    ASSERT_TRUE(run_and_compare(r.h, r.g, v, &cycles)) << describe(v);
    const int64_t rows = int64_t{v.inner} * v.outer;
    print_rate(func_name(v), rows, cycles);
    // The pipeline's fill and drain only (the lane reductions' tree: log2(N) - 1 stages more).
    EXPECT_LE(cycles, rows + 2 + (tpu::is_lane_reduction(v.func) ? kTreeStages : 0)) << describe(v);
  }
}

// A row that reads the previous row's destination waits for its write: three cycles per row
// for element-wise functions (read, X, write), 2 + log2(N) for the lane reductions.
TEST(Vpu, DependentRowsFullGrants) {
  Rig r(9, 13);
  for (VecFunc f : {VecFunc::FAdd, VecFunc::LMax}) {
    tpu::Vector v;
    v.func = static_cast<uint8_t>(f);
    v.inner = 100;
    v.a = 30;  // every row reads and writes row 30
    v.a_inner_stride = 0;
    v.dst = 30;
    v.dst_inner_stride = 0;
    v.bmode = f == VecFunc::FAdd ? BMode::Imm : BMode::RowA;
    v.b = f == VecFunc::FAdd ? 0x3F800000u : 0;
    int64_t cycles = 0;
    ASSERT_TRUE(run_and_compare(r.h, r.g, v, &cycles)) << describe(v);
    const int64_t per_row = 3 + (tpu::is_lane_reduction(v.func) ? kTreeStages : 0);
    print_rate(func_name(v) + ", each row reading the last one's result", v.inner, cycles);
    EXPECT_LE(cycles, int64_t{v.inner} * per_row) << describe(v);
  }
}

// A command offered while the unit is busy and withdrawn before it is taken (the controller
// does that when a run stops) has no effect.
TEST(Vpu, WithdrawnCommandIsNotTaken) {
  Rig r(3, 3);
  Harness& h = r.h;
  h.grants = {0.8, 0.8, 0.8};
  for (int trial = 0; trial < 20; ++trial) {
    tpu::Vector v = random_vector(r.rng);
    v.inner = 20;
    v.a_inner_stride = 0;
    v.dst_inner_stride = 0;
    ASSERT_EQ(r.g.gm.execute(tpu::Instruction{v}), tpu::ErrorCode::ERR_NONE);
    offer_until_taken(h, v);
    h.set_command(random_vector(r.rng));  // offered while busy, then withdrawn
    for (int k = 0; k < 5; ++k) {
      h.tick();
      ASSERT_FALSE(h.cmd_taken) << "a command taken while busy";
    }
    h.m->cmd_valid_i = 0;
    while (h.m->busy_o) h.tick();
    for (int k = 0; k < 3; ++k) h.tick();
    ASSERT_EQ(h.mem, r.g.gm.vmem_rows(0, kRows)) << describe(v);
  }
}

// clear_i drops an instruction in flight: no request after it, and the next one runs right.
TEST(Vpu, ClearMidInstruction) {
  Rig r(5, 5);
  Harness& h = r.h;
  std::mt19937& rng = r.rng;
  h.grants = {0.7, 0.7, 0.5};
  for (int trial = 0; trial < 20; ++trial) {
    tpu::Vector v = random_vector(rng);
    v.inner = 40;
    v.a_inner_stride = 0;
    v.dst_inner_stride = 0;
    offer_until_taken(h, v);
    h.m->cmd_valid_i = 0;
    for (int k = static_cast<int>(r32(rng) % 30); k > 0; --k) h.tick();
    h.m->clear_i = 1;
    h.tick();
    h.m->clear_i = 0;
    h.m->eval();
    ASSERT_FALSE(h.m->busy_o) << "busy after clear";
    const int64_t writes = h.writes;
    for (int k = 0; k < 5; ++k) {
      h.tick();
      ASSERT_FALSE(h.m->vm_a_re_o || h.m->vm_b_re_o || h.m->vm_w_we_o);
    }
    ASSERT_EQ(h.writes, writes);
    r.g.gm.set_vmem_rows(0, h.mem);
    ASSERT_TRUE(run_and_compare(h, r.g, random_vector(rng)));
  }
}

}  // namespace

namespace {

// A contiguous tensor (inner strides 1, each line right after the last) of `rows` rows.
tpu::Vector contiguous(VecFunc f, uint32_t a, uint32_t dst, uint8_t inner, uint16_t outer) {
  tpu::Vector v;
  v.func = static_cast<uint8_t>(f);
  v.inner = inner;
  v.outer = outer;
  v.a = static_cast<uint16_t>(a);
  v.a_inner_stride = 1;
  v.a_outer_stride = inner;
  v.dst = static_cast<uint16_t>(dst);
  v.dst_inner_stride = 1;
  v.dst_outer_stride = inner;
  return v;
}

// S rows per cycle with full grants on contiguous tensors, whatever B is (a row on A's or the
// destination's pattern, the accumulating update b = dst, one fixed row read once for the
// group, the immediate, align's next row), the lane reductions (one tree per row), and the row
// reductions (S rows folded per cycle, each line's rows in their groups). Also in place
// (dst = a): a group's rows write what only they read.
TEST(Vpu, WideThroughputContiguous) {
  Rig r(17, 19);
  Harness& h = r.h;
  Golden& g = r.g;
  constexpr uint8_t kInner = 6;
  constexpr uint16_t kOuter = 3;  // 18 rows: A at 0.., B at 20.., destination at 40..
  struct Case {
    VecFunc f;
    BMode bmode;
    uint32_t b, dst;
  };
  const Case cases[] = {
      {VecFunc::FAdd, BMode::RowA, 20, 40},         {VecFunc::FMul, BMode::RowDst, 20, 40},
      {VecFunc::FAdd, BMode::RowDst, 40, 40},       {VecFunc::FSub, BMode::Fixed, 20, 40},
      {VecFunc::FMax, BMode::Imm, 0x3F800000u, 40}, {VecFunc::I2F, BMode::RowA, 0, 40},
      {VecFunc::LSum, BMode::RowA, 0, 40},          {VecFunc::Align, BMode::Imm, N - 1, 40},
      {VecFunc::FAdd, BMode::Imm, 0x3F800000u, 0},  // in place
      {VecFunc::RSum, BMode::Imm, 0x80000000u, 40}, {VecFunc::RMax, BMode::Fixed, 20, 40},
  };
  for (const Case& c : cases) {
    tpu::Vector v = contiguous(c.f, 0, c.dst, kInner, kOuter);
    v.bmode = c.bmode;
    v.b = c.b;
    const bool rowred = c.f == VecFunc::RSum || c.f == VecFunc::RMax;
    if (rowred) v.dst_outer_stride = 1;
    int64_t cycles = 0;
    ASSERT_TRUE(run_and_compare(h, g, v, &cycles)) << describe(v);
    const int64_t rows = int64_t{v.inner} * v.outer;
    // Groups: S rows (a row reduction's stay in their line), then the fill and drain.
    const int64_t groups = rowred ? int64_t{v.outer} * ((v.inner + S - 1) / S) : (rows + S - 1) / S;
    print_rate("S=" + std::to_string(S) + " " + func_name(v) + " bmode " +
                   std::to_string(static_cast<int>(v.bmode)),
               rows, cycles);
    EXPECT_LE(cycles, groups + 2 + (tpu::is_lane_reduction(v.func) ? kTreeStages : 0))
        << describe(v);
  }
}

// Throughput on a long instruction: 200 lines of 16 contiguous rows, element-wise and a row
// reduction.
TEST(Vpu, WideThroughputLong) {
  Harness h(23);
  Golden g;
  h.mem.assign(size_t{kRows} * N, 0x3F800000u);  // 1.0
  g.gm.set_vmem_rows(0, h.mem);
  // A 64-row VMEM: lines of 16 rows, A rows 0..15 read over and over (outer stride 0),
  // destination rows 32..47.
  for (VecFunc f : {VecFunc::FMul, VecFunc::RSum}) {
    tpu::Vector v = contiguous(f, 0, 32, 16, 200);
    v.a_outer_stride = 0;
    v.dst_outer_stride = 0;
    v.bmode = BMode::Imm;
    v.b = f == VecFunc::RSum ? 0x80000000u : 0x3F800000u;
    int64_t cycles = 0;
    ASSERT_TRUE(run_and_compare(h, g, v, &cycles)) << describe(v);
    const int64_t rows = int64_t{v.inner} * v.outer;
    print_rate("S=" + std::to_string(S) + " " + func_name(v), rows, cycles);
    EXPECT_LE(cycles, rows / S + 2) << describe(v);
  }
}

// A narrow client streaming contiguous rows takes bank (cycle mod S) of every port each cycle
// (rtl/tpu_vmem.sv grants the vector unit the other banks): a group gets all but one of its
// banks in its first cycle and the rest while the next group reads the banks it can, and each
// bank of the write queue writes its oldest row, so contiguous tensors go S - 1 rows per cycle,
// the banks the narrow client leaves (S > 1; at S = 1 the narrow client takes the whole port).
TEST(Vpu, WideThroughputNarrowStream) {
  if (S == 1) GTEST_SKIP() << "one bank: a narrow client takes the whole port";
  Rig r(37, 41);
  Harness& h = r.h;
  Golden& g = r.g;
  h.grants.stream = true;
  // Runs v against the golden model; its cycles at most bound(rows) + 4.
  auto check = [&](const tpu::Vector& v, const std::string& what, int64_t (*bound)(int64_t rows)) {
    int64_t cycles = 0;
    ASSERT_TRUE(run_and_compare(h, g, v, &cycles)) << describe(v);
    const int64_t rows = int64_t{v.inner} * v.outer;
    print_rate("S=" + std::to_string(S) + " narrow stream " + what + func_name(v), rows, cycles);
    EXPECT_LE(cycles, bound(rows) + 4) << describe(v);
  };
  for (BMode bm : {BMode::RowA, BMode::Imm}) {
    tpu::Vector v = contiguous(VecFunc::FAdd, 0, 40, 6, 3);
    v.bmode = bm;
    v.b = bm == BMode::Imm ? 0x3F800000u : 20;
    check(v, "", [](int64_t rows) { return (rows + S - 2) / (S - 1); });
  }
  // Long: 200 lines of 16 rows (A rows 0..15 over and over, B rows 16..31, destination rows
  // 32..47), and the same with B the immediate.
  h.mem.assign(size_t{kRows} * N, 0x3F800000u);  // 1.0
  g.gm.set_vmem_rows(0, h.mem);
  for (BMode bm : {BMode::RowA, BMode::Imm}) {
    tpu::Vector v = contiguous(VecFunc::FMul, 0, 32, 16, 200);
    v.a_outer_stride = 0;
    v.dst_outer_stride = 0;
    v.bmode = bm;
    v.b = bm == BMode::Imm ? 0x3F800000u : 16;
    check(v, "long ", [](int64_t rows) { return rows / (S - 1); });
  }
}

// Hazards inside a group: every row reads the row the one before it writes (dst = a + 1), a
// row B reads ahead of the destination (bmode 1, b = dst + 1), and strides that put two rows
// of a group in one bank (inner stride 2, S; outer stride 0 with inner stride 0), all against
// the golden model, with the cycle bounds of the serial cases.
TEST(Vpu, WideHazardsAndConflicts) {
  Rig r(29, 31);
  Harness& h = r.h;
  Golden& g = r.g;
  // A chain through the group: row i reads row 10 + i, which row i - 1 wrote.
  tpu::Vector chain = contiguous(VecFunc::FAdd, 10, 11, 30, 1);
  chain.bmode = BMode::Imm;
  chain.b = 0x3F800000u;
  int64_t cycles = 0;
  ASSERT_TRUE(run_and_compare(h, g, chain, &cycles)) << describe(chain);
  EXPECT_LE(cycles, 3 * 30) << describe(chain);
  EXPECT_GE(cycles, 2 * 30) << "rows of a chain went in one group: " << describe(chain);
  // B reads the next destination row (written by the next element, so read before it).
  tpu::Vector ahead = contiguous(VecFunc::FSub, 0, 20, 20, 1);
  ahead.bmode = BMode::RowDst;
  ahead.b = 21;
  ASSERT_TRUE(run_and_compare(h, g, ahead, &cycles)) << describe(ahead);
  EXPECT_LE(cycles, (20 + S - 1) / S + 2) << describe(ahead);
  // B reads the previous destination row (bmode 1, b = dst - 1): a chain again.
  tpu::Vector behind = contiguous(VecFunc::FAdd, 0, 21, 20, 1);
  behind.bmode = BMode::RowDst;
  behind.b = 20;
  ASSERT_TRUE(run_and_compare(h, g, behind, &cycles)) << describe(behind);
  EXPECT_GE(cycles, 2 * 20) << describe(behind);
  // Bank conflicts: inner stride S puts every row of a line in one bank.
  tpu::Vector same_bank = contiguous(VecFunc::FMul, 0, 40, 6, 2);
  same_bank.a_inner_stride = static_cast<uint8_t>(S);
  same_bank.a_outer_stride = 1;
  same_bank.bmode = BMode::Imm;
  same_bank.b = 0x40000000u;
  ASSERT_TRUE(run_and_compare(h, g, same_bank, &cycles)) << describe(same_bank);
  EXPECT_LE(cycles, 12 + 2) << describe(same_bank);
  // Inner stride 2: S / 2 rows per cycle.
  tpu::Vector stride2 = contiguous(VecFunc::FMax, 0, 40, 16, 1);
  stride2.a_inner_stride = 2;
  stride2.bmode = BMode::RowDst;
  stride2.b = 20;
  ASSERT_TRUE(run_and_compare(h, g, stride2, &cycles)) << describe(stride2);
  EXPECT_LE(cycles, 16 / std::max<int64_t>(1, S / 2) + 2) << describe(stride2);
  // Destination stride 0 inside a line: every row writes one row (one per group).
  tpu::Vector same_dst = contiguous(VecFunc::FAdd, 0, 40, 8, 3);
  same_dst.dst_inner_stride = 0;
  same_dst.dst_outer_stride = 1;
  same_dst.bmode = BMode::RowA;
  same_dst.b = 20;
  ASSERT_TRUE(run_and_compare(h, g, same_dst, &cycles)) << describe(same_dst);
}

}  // namespace

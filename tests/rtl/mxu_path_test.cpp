// SPDX-License-Identifier: Apache-2.0
// Block test of the training chip's matrix path (issue 30) through tests/rtl/tpu_mxu_path.sv:
// tpu_load_weights, tpu_weight_loader (Float), tpu_matmul_unit (Float), tpu_mxu, tpu_mxu_fp,
// tpu_accumulators (Float) and tpu_weight_types together, against the golden model
// (driver/golden_model, ChipParams::training) running the same instructions.
//
// The test plays the controller and the memories: it issues random programs of load_weights,
// read_weights, matmul and matmul_bf16 in program order (load_weights only once the weight DMA
// has pushed every row of earlier read_weights, read_weights only once load_weights is idle,
// as the controller must), models VMEM and UB behind read ports that deny grants at random,
// pushes read_weights' rows as the weight DMA would (with random gaps, when the FIFO has
// room), and drives tpu_weight_types at issue. At the end every ACC row the program wrote is
// read back and compared bit for bit with the golden model's. Programs cover rows < N,
// transpose, acc on and off, int8 and bf16 tiles interleaved in the one FIFO, and VMEM values
// with NaN, Inf, subnormals, bf16 rounding ties and overflow, products that overflow or flush,
// and sums that cancel exactly. Some programs end with a matmul of the wrong tile type: the
// golden model faults it ERR_WEIGHT_TYPE and tpu_weight_types must flag it (every earlier
// matmul must not be flagged).
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "Vtpu_mxu_path.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t kUbRows = 256;  // tpu_mxu_path's defaults
constexpr uint32_t kAccRows = 128;
constexpr uint32_t kVmemRows = 512;  // rows the test's VMEM model holds
constexpr uint32_t kWFifoTiles = 4;
constexpr uint32_t kCapacity = kWFifoTiles + 2;  // tiles that may wait (isa.md)
constexpr uint32_t kHostBase = 0x10000;
constexpr uint32_t kHostSize = 0x100000;

using tpu::Instruction;

tpu::ChipParams params() {
  tpu::ChipParams p = tpu::ChipParams::training(N);
  p.ub_rows = kUbRows;
  p.acc_rows = kAccRows;
  p.vmem_rows = kVmemRows;
  p.wfifo_tiles = kWFifoTiles;
  return p;
}

// ---------------------------------------------------------------- VMEM values
enum class Values { Moderate, Cancel, Corners, Extreme };

uint32_t moderate(std::mt19937& rng, unsigned lo, unsigned hi) {
  const uint32_t r = uint32_t(rng());
  return (r & 0x80000000u) | (lo + r % (hi - lo + 1)) << 23 | (uint32_t(rng()) & 0x7FFFFFu);
}

uint32_t vmem_value(std::mt19937& rng, Values v) {
  static const uint32_t corners[] = {
      0x00000000, 0x80000000, 0x00000001, 0x807FFFFF,  // zeros, subnormals (DAZ)
      0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,  // smallest normal, largest (-> bf16 inf)
      0x7F7F8000, 0x7F7F7FFF, 0x3F808000, 0x3F818000,  // bf16 ties to even, just below a tie
      0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,  // infinities, NaNs
      0xFFFFFFFF, 0x5F800000, 0xDF800000, 0x1F800000,  // 2^64 (products overflow), 2^-64 (flush)
      0x20000000, 0x3F800000, 0xBF800000, 0x00FFFFFF};
  static const uint32_t small[] = {0x3F800000, 0xBF800000, 0x40000000, 0xC0000000,
                                   0x3F000000, 0xBF000000, 0x40400000, 0xC0400000,
                                   0x3FC00000, 0xBFC00000, 0x00000000, 0x80000000};
  const uint32_t r = uint32_t(rng() % 100);
  switch (v) {
    case Values::Moderate:
      return moderate(rng, 110, 144);
    case Values::Cancel:  // small exact values: sums cancel to +-0 often
      return small[rng() % (sizeof small / sizeof small[0])];
    case Values::Corners:
      if (r < 30) return corners[rng() % (sizeof corners / sizeof corners[0])];
      return moderate(rng, 100, 154);
    case Values::Extreme:  // products and sums near 2^128 and 2^-126
      if (r < 10) return corners[rng() % (sizeof corners / sizeof corners[0])];
      return r < 55 ? moderate(rng, 185, 254) : moderate(rng, 1, 70);
  }
  return 0;
}

// ---------------------------------------------------------------- random programs
struct Program {
  std::vector<Instruction> instrs;
  bool ends_with_type_fault = false;
};

struct GenState {
  std::deque<bool> pending;        // types of waiting tiles (true = bf16), oldest first
  std::optional<bool> active;      // type of the active tile
  std::vector<bool> written;       // ACC rows written so far
  uint32_t host_next = kHostBase;  // next unused host tile
};

tpu::LoadWeights gen_load_weights(std::mt19937& rng, uint32_t tiles) {
  tpu::LoadWeights lw;
  lw.transpose = rng() % 2;
  const uint32_t r = uint32_t(rng() % 4);
  lw.rows = uint16_t(r == 0 ? N : r == 1 ? 1 : 1 + rng() % N);
  lw.row_stride = uint16_t(rng() % 4);
  lw.tiles = uint16_t(tiles);
  lw.tile_stride = uint16_t(rng() % (2 * N + 1));
  const uint64_t span =
      uint64_t(tiles - 1) * lw.tile_stride + uint64_t(lw.rows - 1) * lw.row_stride;
  lw.vmem_addr = uint16_t(rng() % (kVmemRows - span));
  return lw;
}

// A matmul / matmul_bf16 row pattern and ACC range; acc only if every row was written.
template <typename M>
void gen_pattern(std::mt19937& rng, M& m, uint32_t mem_rows, GenState& st) {
  m.inner = uint16_t(1 + rng() % 8);
  m.outer = uint16_t(1 + rng() % 3);
  m.inner_stride = uint8_t(rng() % 4);
  m.outer_stride = uint16_t(rng() % 24);
  const uint64_t span =
      uint64_t(m.outer - 1) * m.outer_stride + uint64_t(m.inner - 1) * m.inner_stride;
  const uint32_t base = uint32_t(rng() % (mem_rows - span));
  const uint32_t rows = uint32_t(m.inner) * m.outer;
  m.acc_addr = uint16_t(rng() % (kAccRows - rows + 1));
  bool all = true;
  for (uint32_t i = 0; i < rows; ++i) all = all && st.written[m.acc_addr + i];
  m.accumulate = all && rng() % 3 != 0;
  for (uint32_t i = 0; i < rows; ++i) st.written[m.acc_addr + i] = true;
  if constexpr (std::is_same_v<M, tpu::Matmul>) {
    m.ub_addr = base;
  } else {
    m.vmem_addr = uint16_t(base);
  }
}

// A matmul of type bf16 (else int8) using `sw`.
Instruction gen_matmul(std::mt19937& rng, bool bf16, bool sw, GenState& st) {
  if (bf16) {
    tpu::MatmulBf16 m;
    m.switch_weights = sw;
    gen_pattern(rng, m, kVmemRows, st);
    return m;
  }
  tpu::Matmul m;
  m.switch_weights = sw;
  m.a_unsigned = rng() % 2;
  m.w_unsigned = rng() % 2;
  gen_pattern(rng, m, kUbRows, st);
  return m;
}

Program gen_program(std::mt19937& rng, size_t length, int bf16_percent) {
  Program p;
  GenState st;
  st.written.assign(kAccRows, false);
  while (p.instrs.size() < length) {
    const uint32_t r = uint32_t(rng() % 100);
    const uint32_t room = kCapacity - uint32_t(st.pending.size());
    if (r < 30 && room > 0) {
      const uint32_t tiles = 1 + uint32_t(rng() % std::min<uint32_t>(room, 3));
      const bool bf16 = int(rng() % 100) < bf16_percent;
      if (bf16) {
        p.instrs.push_back(gen_load_weights(rng, tiles));
      } else {
        tpu::ReadWeights rw;
        rw.tiles = tiles;
        rw.host_addr = st.host_next;
        st.host_next += tiles * N * N;
        p.instrs.push_back(rw);
      }
      for (uint32_t t = 0; t < tiles; ++t) st.pending.push_back(bf16);
      continue;
    }
    const bool can_switch = !st.pending.empty();
    if (!can_switch && !st.active) continue;
    const bool sw = can_switch && (!st.active || rng() % 2);
    const bool bf16 = sw ? st.pending.front() : *st.active;
    if (sw) {
      st.active = st.pending.front();
      st.pending.pop_front();
    }
    p.instrs.push_back(gen_matmul(rng, bf16, sw, st));
  }
  // A matmul of the wrong type at the end (it faults; nothing after it runs).
  if (rng() % 3 == 0) {
    const bool can_switch = !st.pending.empty();
    if (can_switch || st.active) {
      const bool sw = can_switch && (!st.active || rng() % 2);
      const bool bf16 = sw ? st.pending.front() : *st.active;
      p.instrs.push_back(gen_matmul(rng, !bf16, sw, st));
      p.ends_with_type_fault = true;
    }
  }
  return p;
}

// ---------------------------------------------------------------- the harness
class Path {
 public:
  Path()
      : ctx_(std::make_unique<VerilatedContext>()), m(std::make_unique<Vtpu_mxu_path>(ctx_.get())) {
    m->clk_i = 0;
    m->rst_ni = 0;
    m->clear_i = 0;
    clear_inputs();
    m->eval();
    tick();
    tick();
    m->rst_ni = 1;
    tick();
  }
  void clear_inputs() {
    m->lw_valid_i = 0;
    m->mm_valid_i = 0;
    m->wdma_push_i = 0;
    m->wt_push_i = 0;
    m->wt_pop_i = 0;
    m->acc_re_i = 0;
  }
  void tick() {
    m->clk_i = 1;
    m->eval();
    m->clk_i = 0;
    m->eval();
    ++cycle;
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;

 public:
  std::unique_ptr<Vtpu_mxu_path> m;
  uint64_t cycle = 0;
};

// One read port of a memory model: grants at random; the row of a granted read is on the data
// input in the next cycle only (other cycles: random garbage).
struct ReadPort {
  int deny_percent = 0;
  std::optional<uint32_t> granted;  // row read in the previous cycle
};

template <typename T>
void put_vmem_row(T& port, const std::vector<uint32_t>& vm, std::optional<uint32_t> row,
                  std::mt19937& rng) {
  for (uint32_t j = 0; j < N; ++j) {
    set_field(port, 32 * j, 32, row ? vm[*row * N + j] : uint32_t(rng()));
  }
}

struct RunConfig {
  int deny_percent = 20;
  int wdma_gap_percent = 30;
  // > 0: first run another random program on the same path, pulse clear_i in this cycle of
  // it (START / soft reset / abort mid-flight), let the arrays drain, then run the program.
  uint64_t clear_at = 0;
};

// The memories of a program and the test's side of the path: plays the controller, the
// memories and the weight DMA for `p` (its first `runs` instructions, then the faulting one if
// p ends with one) until everything issued has finished, or until the first cycle from
// stop_cycle on in which tpu_load_weights is busy (then *stopped is set).
int g_clears_mid_load = 0;  // ClearMidProgram: clears that hit a busy load_weights

struct Memories {
  std::vector<uint32_t> vm;
  std::vector<uint8_t> ub;
  tpu::RegionMemory host;
};

void drive(Path& h, const Program& p, size_t runs, Memories& mem, const RunConfig& cfg,
           std::mt19937& rng, uint64_t stop_cycle, bool* finished, bool* stopped) {
  auto& m = *h.m;
  const auto& vm = mem.vm;
  const auto& ub = mem.ub;
  auto& host = mem.host;
  ReadPort lw_port{cfg.deny_percent, {}}, mv_port{cfg.deny_percent, {}},
      ub_port{cfg.deny_percent, {}};
  std::deque<std::vector<uint8_t>> wdma_rows;  // rows of issued read_weights not yet pushed
  size_t pc = 0, matmuls_issued = 0, retired = 0, lw_issued = 0, lw_done = 0;
  bool type_fault_seen = false;
  const uint64_t limit = h.cycle + 200000;
  *stopped = false;
  while (h.cycle < limit) {
    if (h.cycle >= stop_cycle && m.lw_busy_o) {
      *stopped = true;
      return;
    }
    h.clear_inputs();
    // Memory read data of the previous cycle's granted reads; new grants.
    put_vmem_row(m.lw_rdata_i, vm, lw_port.granted, rng);
    put_vmem_row(m.mv_rdata_i, vm, mv_port.granted, rng);
    for (uint32_t j = 0; j < N; ++j)
      set_field(m.ub_rdata_i, 8 * j, 8,
                ub_port.granted ? ub[*ub_port.granted * N + j] : uint8_t(rng()));
    m.lw_rgnt_i = int(rng() % 100) >= lw_port.deny_percent;
    m.mv_rgnt_i = int(rng() % 100) >= mv_port.deny_percent;
    m.ub_rgnt_i = int(rng() % 100) >= ub_port.deny_percent;
    m.eval();

    // The weight DMA: one row when the FIFO has room (never while load_weights pushes: the
    // controller issues them in order, see below).
    if (!wdma_rows.empty() && m.free_rows_o > 0 && int(rng() % 100) >= cfg.wdma_gap_percent) {
      ASSERT_FALSE(m.lw_busy_o) << "read_weights rows while load_weights is busy";
      m.wdma_push_i = 1;
      for (uint32_t j = 0; j < N; ++j) set_field(m.wdma_row_i, 8 * j, 8, wdma_rows.front()[j]);
      wdma_rows.pop_front();
    }

    // The controller: the instruction at pc.
    bool issued = false;
    if (pc < runs || (pc == runs && p.ends_with_type_fault && !type_fault_seen)) {
      const Instruction& in = p.instrs[pc];
      if (const auto* lw = std::get_if<tpu::LoadWeights>(&in)) {
        if (wdma_rows.empty() && !m.wdma_push_i) {
          m.lw_valid_i = 1;
          m.lw_transpose_i = lw->transpose;
          m.lw_vmem_addr_i = lw->vmem_addr;
          m.lw_row_stride_i = lw->row_stride;
          m.lw_tiles_i = lw->tiles;
          m.lw_tile_stride_i = lw->tile_stride;
          m.lw_rows_i = lw->rows;
          m.eval();
          if (m.lw_ready_o) {
            issued = true;
            ++lw_issued;
            m.wt_push_i = 1;
            m.wt_push_bf16_i = 1;
            m.wt_push_tiles_i = lw->tiles;
          }
        }
      } else if (const auto* rw = std::get_if<tpu::ReadWeights>(&in)) {
        if (!m.lw_busy_o && !m.lw_valid_i) {
          const auto bytes = host.dump(rw->host_addr, size_t{rw->tiles} * N * N);
          for (uint32_t r = 0; r < rw->tiles * N; ++r)
            wdma_rows.emplace_back(bytes.begin() + r * N, bytes.begin() + (r + 1) * N);
          issued = true;
          m.wt_push_i = 1;
          m.wt_push_bf16_i = 0;
          m.wt_push_tiles_i = rw->tiles;
        }
      } else {
        const auto* mm = std::get_if<tpu::Matmul>(&in);
        const auto* mb = std::get_if<tpu::MatmulBf16>(&in);
        const bool bf16 = mb != nullptr;
        const bool sw = bf16 ? mb->switch_weights : mm->switch_weights;
        m.wt_mm_bf16_i = bf16;
        m.wt_mm_switch_i = sw;
        m.eval();
        if (pc == runs) {  // the faulting one: flagged, never issued
          ASSERT_TRUE(m.wt_type_err_o) << "tpu_weight_types missed ERR_WEIGHT_TYPE at " << pc;
          type_fault_seen = true;
        } else {
          ASSERT_FALSE(m.wt_type_err_o) << "tpu_weight_types flagged a legal matmul at " << pc;
          m.mm_valid_i = 1;
          m.mm_bf16_i = bf16;
          m.mm_acc_i = bf16 ? mb->accumulate : mm->accumulate;
          m.mm_a_unsigned_i = bf16 ? 0 : mm->a_unsigned;
          m.mm_w_unsigned_i = bf16 ? 0 : mm->w_unsigned;
          m.mm_switch_i = sw;
          m.mm_addr_i = bf16 ? mb->vmem_addr : mm->ub_addr;
          m.mm_acc_addr_i = bf16 ? mb->acc_addr : mm->acc_addr;
          m.mm_inner_i = bf16 ? mb->inner : mm->inner;
          m.mm_outer_i = bf16 ? mb->outer : mm->outer;
          m.mm_inner_stride_i = bf16 ? mb->inner_stride : mm->inner_stride;
          m.mm_outer_stride_i = bf16 ? mb->outer_stride : mm->outer_stride;
          m.eval();
          if (m.mm_ready_o) {
            issued = true;
            ++matmuls_issued;
            m.wt_pop_i = sw;
          }
        }
      }
    }
    if (issued) ++pc;
    m.eval();
    lw_port.granted =
        m.lw_re_o && m.lw_rgnt_i ? std::optional<uint32_t>(m.lw_raddr_o) : std::nullopt;
    mv_port.granted =
        m.mv_re_o && m.mv_rgnt_i ? std::optional<uint32_t>(m.mv_raddr_o) : std::nullopt;
    ub_port.granted =
        m.ub_re_o && m.ub_rgnt_i ? std::optional<uint32_t>(m.ub_raddr_o) : std::nullopt;
    if (lw_port.granted) {
      ASSERT_LT(*lw_port.granted, kVmemRows);
    }
    if (mv_port.granted) {
      ASSERT_LT(*mv_port.granted, kVmemRows);
    }
    if (m.retire_o) ++retired;
    if (m.lw_done_o) ++lw_done;
    h.tick();
    const bool all_issued = pc == runs && (!p.ends_with_type_fault || type_fault_seen);
    if (all_issued && wdma_rows.empty() && !m.lw_busy_o && m.mm_ready_o &&
        retired == matmuls_issued && lw_done == lw_issued)
      break;
  }
  *finished = h.cycle < limit;
  ASSERT_LT(h.cycle, limit) << "the path hung: pc " << pc << " of " << runs << ", retired "
                            << retired << " of " << matmuls_issued;
}

// Runs `p` on the RTL and on the golden model (prepared with the same memories); compares
// the type check and every written ACC row.
void run_program(std::mt19937& rng, const Program& p, Values values, const RunConfig& cfg) {
  // Memories.
  Memories mem;
  auto& vm = mem.vm;
  auto& ub = mem.ub;
  auto& host = mem.host;
  vm.resize(size_t{kVmemRows} * N);
  for (auto& v : vm) v = vmem_value(rng, values);
  ub.resize(size_t{kUbRows} * N);
  for (auto& b : ub) b = uint8_t(rng());
  host.add_region(kHostBase, kHostSize);
  std::vector<uint8_t> host_bytes(kHostSize);
  for (auto& b : host_bytes) b = uint8_t(rng());
  host.load(kHostBase, host_bytes);

  // The golden model: the same instructions in order, up to the first fault.
  tpu::GoldenModel g(host, params());
  g.set_dma_window(0, kHostBase, kHostSize);
  g.set_vmem_rows(0, vm);
  g.set_ub_rows(0, ub);
  std::vector<bool> written(kAccRows, false);
  size_t runs = p.instrs.size();
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    std::string why;
    const tpu::ErrorCode e = g.execute(p.instrs[i], &why);
    if (e != tpu::ErrorCode::ERR_NONE) {
      ASSERT_TRUE(p.ends_with_type_fault && i + 1 == p.instrs.size() &&
                  e == tpu::ErrorCode::ERR_WEIGHT_TYPE)
          << "golden model fault at " << i << ": " << why;
      runs = i;
      break;
    }
    auto mark = [&](uint16_t acc_addr, uint32_t rows) {
      for (uint32_t r = 0; r < rows; ++r) written[acc_addr + r] = true;
    };
    if (const auto* mm = std::get_if<tpu::Matmul>(&p.instrs[i]))
      mark(mm->acc_addr, mm->inner * mm->outer);
    if (const auto* mb = std::get_if<tpu::MatmulBf16>(&p.instrs[i]))
      mark(mb->acc_addr, mb->inner * mb->outer);
  }
  ASSERT_EQ(runs == p.instrs.size(), !p.ends_with_type_fault) << "the last matmul did not fault";

  // The RTL (after a cleared prelude, if asked).
  Path h;
  auto& m = *h.m;
  bool finished = false;
  if (cfg.clear_at > 0) {
    const Program pre = gen_program(rng, p.instrs.size(), 50);
    const size_t pre_runs = pre.instrs.size() - (pre.ends_with_type_fault ? 1 : 0);
    bool stopped = false;
    drive(h, pre, pre_runs, mem, cfg, rng, h.cycle + cfg.clear_at, &finished, &stopped);
    if (stopped) ++g_clears_mid_load;
    if (testing::Test::HasFatalFailure()) return;
    h.clear_inputs();
    m.clear_i = 1;
    h.tick();
    m.clear_i = 0;
    for (uint32_t i = 0; i < 3 * N; ++i) h.tick();  // rows in the arrays still land
    ASSERT_FALSE(m.lw_busy_o) << "tpu_load_weights busy after clear";
    ASSERT_TRUE(m.wl_idle_o) << "tpu_weight_loader not idle after clear";
    ASSERT_TRUE(m.mm_ready_o) << "tpu_matmul_unit busy after clear";
  }
  bool stopped = false;
  drive(h, p, runs, mem, cfg, rng, UINT64_MAX, &finished, &stopped);
  if (testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(finished);
  // ACC rows, through the activation unit's read port.
  for (uint32_t r = 0; r < kAccRows; ++r) {
    if (!written[r]) continue;
    h.clear_inputs();
    m.acc_re_i = 1;
    m.acc_raddr_i = static_cast<std::remove_reference_t<decltype(m.acc_raddr_i)>>(r);
    h.tick();
    h.clear_inputs();
    m.eval();
    const auto want = g.acc_row(r);
    for (uint32_t c = 0; c < N; ++c) {
      const uint32_t got = get_field(m.acc_rdata_o, 32 * c, 32);
      ASSERT_EQ(got, uint32_t(want[c]))
          << std::hex << "ACC row " << std::dec << r << " column " << c << ": got 0x" << std::hex
          << got << " want 0x" << uint32_t(want[c]);
    }
  }
}

void run_many(uint32_t seed, int programs, size_t length, int bf16_percent, Values values,
              RunConfig cfg) {
  std::mt19937 rng(seed);
  for (int i = 0; i < programs; ++i) {
    SCOPED_TRACE("program " + std::to_string(i) + " seed " + std::to_string(seed));
    const Program p = gen_program(rng, length, bf16_percent);
    RunConfig c = cfg;
    if (cfg.clear_at > 0) c.clear_at = 1 + rng() % cfg.clear_at;  // anywhere in the prelude
    run_program(rng, p, values, c);
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(MxuPath, Bf16Moderate) { run_many(1, 20, 40, 100, Values::Moderate, {}); }
TEST(MxuPath, Bf16Cancellation) { run_many(2, 20, 40, 100, Values::Cancel, {}); }
TEST(MxuPath, Bf16Corners) { run_many(3, 20, 40, 100, Values::Corners, {}); }
TEST(MxuPath, Bf16Extreme) { run_many(4, 20, 40, 100, Values::Extreme, {}); }
TEST(MxuPath, MixedInt8AndBf16) { run_many(5, 30, 50, 50, Values::Corners, {}); }
TEST(MxuPath, Int8Only) { run_many(6, 10, 40, 0, Values::Moderate, {}); }
TEST(MxuPath, HeavyGrantDenials) { run_many(7, 15, 40, 70, Values::Corners, {70, 60}); }
TEST(MxuPath, AlwaysGranted) { run_many(8, 15, 40, 70, Values::Corners, {0, 0}); }
// clear_i (START, soft reset, an abort) in a random cycle of another program in which
// load_weights is busy: the units drop what they hold and the next program runs as on a fresh
// path.
TEST(MxuPath, ClearMidProgram) {
  g_clears_mid_load = 0;
  run_many(10, 20, 40, 60, Values::Corners, {20, 30, 300});
  EXPECT_GE(g_clears_mid_load, 10) << "too few clears hit a busy load_weights";
}

// A stream of transposed bf16 tiles with every read granted and room in the FIFO: the unit
// fills tile t+1 while tile t drains, so kCapacity tiles take about kCapacity * N cycles from
// the command to the last row in the FIFO (plus the first tile's fill), not twice that.
TEST(MxuPath, LoadWeightsStreamsOneRowPerCycle) {
  Path h;
  auto& m = *h.m;
  std::mt19937 rng(9);
  std::vector<uint32_t> vm(size_t{kVmemRows} * N);
  for (auto& v : vm) v = moderate(rng, 120, 130);
  std::optional<uint32_t> granted;
  h.clear_inputs();
  m.lw_valid_i = 1;
  m.lw_transpose_i = 1;
  m.lw_vmem_addr_i = 0;
  m.lw_row_stride_i = 1;
  m.lw_tiles_i = kCapacity;
  m.lw_tile_stride_i = N;
  m.lw_rows_i = N;
  m.lw_rgnt_i = 1;
  m.eval();
  ASSERT_TRUE(m.lw_ready_o);
  const uint64_t start = h.cycle;
  uint64_t done_at = 0;
  for (int i = 0; i < 40 * int(N) && !done_at; ++i) {
    put_vmem_row(m.lw_rdata_i, vm, granted, rng);
    m.eval();
    granted = m.lw_re_o ? std::optional<uint32_t>(m.lw_raddr_o) : std::nullopt;
    if (m.lw_done_o) done_at = h.cycle;
    h.tick();
    h.clear_inputs();
    m.lw_rgnt_i = 1;
  }
  ASSERT_NE(done_at, 0u) << "load_weights did not finish";
  // Fill of the first tile (N reads, the last one's row pushed as it arrives) then
  // kCapacity * N pushes back to back: the last one N * (kCapacity + 1) cycles after the
  // command (it is taken in cycle 0, the first read issues in cycle 1).
  EXPECT_EQ(done_at - start, uint64_t{kCapacity} * N + N)
      << "tiles do not overlap: " << (done_at - start) << " cycles for " << kCapacity << " tiles";
}

}  // namespace

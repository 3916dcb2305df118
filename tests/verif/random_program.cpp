// SPDX-License-Identifier: Apache-2.0
#include "random_program.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "fp.h"

namespace tpu::verif {

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// splitmix64: decorrelates consecutive seeds before they seed the Mersenne twister.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(mix(seed)) {}
  // Uniform in [lo, hi] (inclusive).
  uint64_t pick(uint64_t lo, uint64_t hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<uint64_t>(lo, hi)(gen_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(gen_) < p; }
  uint32_t u32() { return uint32_t(gen_()); }
  template <class T>
  const T& one_of(const std::vector<T>& v) {
    return v[pick(0, v.size() - 1)];
  }
  std::vector<uint8_t> bytes(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i += 8) {
      uint64_t r = gen_();
      for (size_t b = 0; b < 8 && i + b < n; ++b) v[i + b] = uint8_t(r >> (8 * b));
    }
    return v;
  }

 private:
  std::mt19937_64 gen_;
};

void put32(std::vector<uint8_t>& v, size_t word, uint32_t x) {
  for (int b = 0; b < 4; ++b) v[4 * word + b] = uint8_t(x >> (8 * b));
}

// One quantization slot (bias[N], mult[N], misc[N]) from one of several regimes, so that every
// part of the requantizer is exercised: ordinary scales, plain shifts, and anything at all
// (extreme biases that saturate the int32 add, negative multipliers, every shift 0..63,
// random misc bits 7:6).
std::vector<uint8_t> random_slot(Rng& rng, uint32_t n) {
  std::vector<uint8_t> s(12 * n);
  const int regime = int(rng.pick(0, 9));
  for (uint32_t c = 0; c < n; ++c) {
    uint32_t bias, mult, misc;
    if (regime <= 4) {  // ordinary: output spread over the 8-bit range for typical sums
      bias = uint32_t(int32_t(rng.pick(0, 80000)) - 40000);
      mult = uint32_t(rng.pick(1, 1u << 30));
      const uint32_t shift = uint32_t(rng.pick(18, 42));
      misc = shift | uint32_t(rng.pick(0, 255)) << 8 | uint32_t(rng.pick(0, 255)) << 16 |
             uint32_t(rng.pick(0, 255)) << 24;
    } else if (regime <= 6) {  // plain shift / small multiplier
      bias = rng.chance(0.5) ? 0 : uint32_t(int32_t(rng.pick(0, 2000)) - 1000);
      mult = rng.chance(0.5) ? 1u << rng.pick(0, 4) : uint32_t(int32_t(rng.pick(0, 64)) - 32);
      misc = uint32_t(rng.pick(0, 14)) | uint32_t(rng.pick(0, 255)) << 8 |
             uint32_t(rng.pick(0, 255)) << 16 | uint32_t(rng.pick(0, 255)) << 24;
    } else {  // anything
      bias = rng.one_of<uint32_t>(
          {0x8000'0000u, 0x7FFF'FFFFu, 0x7FFF'0000u, 0x8000'FFFFu, rng.u32(), rng.u32()});
      mult = rng.one_of<uint32_t>(
          {0x8000'0000u, 0x7FFF'FFFFu, 0xFFFF'FFFFu, 1u, rng.u32(), rng.u32()});
      misc = rng.u32();
    }
    put32(s, c, bias);
    put32(s, n + c, mult);
    put32(s, 2 * n + c, misc);
  }
  return s;
}

// The bits of `op` that isa.md marks reserved (opcode byte excluded).
std::vector<unsigned> reserved_bits(Opcode op) {
  std::vector<unsigned> bits;
  for (unsigned b = 8; b < 128; ++b) {
    bool defined = false;
    for (const FieldInfo& f : instruction_fields(op)) {
      if (b >= f.bits.lo && b <= f.bits.hi()) defined = true;
    }
    if (!defined) bits.push_back(b);
  }
  return bits;
}

// Builds one random test case. Every UB access lies in [ub_base, ub_base + ub_rows), every
// ACC access in [acc_base, acc_base + acc_rows); the prologue defines all of that state, so a
// case does not depend on what ran before it.
class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& opt)
      : rng_(seed),
        side_(seed ^ 0x5EC0'4D5E'ED00'0001ull),
        pair_(seed ^ 0x9A1B'0E44'07C3'0002ull),
        opt_(opt) {
    tc_.seed = seed;
    tc_.params = ChipParams::with_n(opt.n);
    n_ = opt.n;
    if (opt.vmem_rows > 0) {
      if (opt.vmem_rows > 65000) throw std::invalid_argument("GenOptions::vmem_rows > 65000");
      tc_.params = ChipParams::training(opt.n);
      tc_.params.vmem_rows = opt.vmem_rows;
      // The golden model executes the emitted opcodes only, as an RTL that implements those.
      tc_.params.training_ops = uint8_t(opt.train_ops & ChipParams::kAllTrainingOps);
      tc_.params.ici_links = opt.ici_links;
      train_ = true;
    }
    if (opt.long_mix && !train_)
      throw std::invalid_argument("GenOptions::long_mix needs vmem_rows > 0");
    long_ = opt.long_mix;
    // The depthwise unit (off by default: no draw is made for it, so the seeds give the
    // programs they gave before).
    if (opt.dw_width > 0) {
      tc_.params.dw_width = opt.dw_width;
      dw_ = true;
    }
  }

  TestCase make() {
    const ChipParams& p = tc_.params;
    // ---- the kind of case
    if (rng_.chance(opt_.fault_probability)) {
      const uint64_t k = rng_.pick(0, 99);
      // (AXI faults were 28 of 100 before issue 34: more of them carry a younger AXI error now)
      tc_.kind = k < 45 ? CaseKind::kStaticFault : k < 88 ? CaseKind::kAxiFault : CaseKind::kNoHalt;
    }
    if (opt_.axi_pairs) tc_.kind = CaseKind::kAxiFault;
    // ---- windows of the chip in use
    const uint32_t max_ub = std::min<uint32_t>(4096 / n_, 256);
    tc_.ub_rows = rng_.one_of<uint32_t>({32, 64, 96, 128, max_ub});
    tc_.acc_rows = std::min(tc_.ub_rows, rng_.one_of<uint32_t>({16, 32, 48, 64}));
    auto place = [&](uint32_t total, uint32_t rows) -> uint32_t {
      switch (rng_.pick(0, 5)) {
        case 0:
          return 0;
        case 1:
          return total - rows;  // the top rows: every address bit set
        default:
          return uint32_t(rng_.pick(0, total - rows));
      }
    };
    tc_.ub_base = place(p.ub_rows, tc_.ub_rows);
    tc_.acc_base = place(p.acc_rows, tc_.acc_rows);
    nslots_ = uint32_t(rng_.pick(1, p.qp_slots));
    if (train_) place_vmem_window();

    // ---- run configuration
    RunConfig& cfg = tc_.config;
    if (opt_.random_timing) {
      cfg.mem_latency = rng_.one_of<uint32_t>({1, 2, 3, 5, 10, 10, 20, 40});
      cfg.mem_bytes_per_cycle = rng_.one_of<uint32_t>({0, 4, 8, 16, 16, 32, 64});
      cfg.backpressure = rng_.chance(0.5) ? 0.0 : rng_.one_of<double>({0.1, 0.3, 0.5, 0.7});
      cfg.backpressure_seed = rng_.pick(1, 1u << 30);
    }
    windows_on_ = rng_.chance(long_ ? 0.7 : 0.3);
    if (windows_on_ && long_) {
      place_long_windows();
    } else if (windows_on_) {
      // The three regions in three random window slots; sometimes one big window instead.
      std::vector<int> slots = {0, 1, 2, 3, 4, 5, 6};  // 7: see emit_axi_fault
      std::shuffle(slots.begin(), slots.end(), std::mt19937(uint32_t(rng_.u32())));
      if (rng_.chance(0.3)) {
        cfg.windows[size_t(slots[0])] = {kCmdBase, kOutBase + kOutSize - kCmdBase};
      } else {
        cfg.windows[size_t(slots[0])] = {kCmdBase, kCmdSize};
        cfg.windows[size_t(slots[1])] = {kDataBase, kDataSize};
        cfg.windows[size_t(slots[2])] = {kOutBase, kOutSize};
      }
    }

    // ---- host memory image: random data with the quantization slots and LUT at its start
    std::vector<uint8_t> data = rng_.bytes(kDataSize);
    for (uint32_t s = 0; s < p.qp_slots; ++s) {
      auto slot = random_slot(rng_, n_);
      std::copy(slot.begin(), slot.end(), data.begin() + long(quant_off_ + s * 12 * n_));
    }
    if (train_) fill_float_data(data);
    tc_.memory.push_back({kDataBase, data});
    if (long_) {  // float data at the top of the host address space too
      std::vector<uint8_t> high(kHighSize);
      const std::vector<uint32_t> w = float_words(kHighSize / 4);
      for (uint32_t i = 0; i < w.size(); ++i) put32(high, i, w[i]);
      tc_.memory.push_back({kHighBase, high});
      cfg.high_region = true;
    }
    if (rng_.chance(0.5)) tc_.memory.push_back({kOutBase, rng_.bytes(kOutSize)});

    // ---- prologue: defines every bit of state the body can read
    auto& prog = tc_.program;
    prog.push_back(ReadHost{HostDest::Param, 0, 12 * nslots_, kDataBase + quant_off_});
    prog.push_back(ReadHost{HostDest::Lut, 0, p.lut_rows(), host_in(256)});
    prog.push_back(ReadHost{HostDest::Ub, tc_.ub_base, tc_.ub_rows, host_in(tc_.ub_rows * n_)});
    prog.push_back(ReadWeights{1, host_in(n_ * n_)});
    Matmul init;
    init.switch_weights = true;
    init.a_unsigned = rng_.chance(0.5);
    init.w_unsigned = rng_.chance(0.5);
    init.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - tc_.acc_rows));
    init.acc_addr = uint16_t(tc_.acc_base);
    init.inner = uint16_t(tc_.acc_rows);
    prog.push_back(init);
    active_ = true;
    if (train_) prog.push_back(prologue_read_vmem());
    tc_.prologue_length = prog.size();

    // ---- body
    const uint32_t length = uint32_t(rng_.pick(opt_.min_length, opt_.max_length));
    const uint32_t fault_at = uint32_t(rng_.pick(0, length));  // body index of the fault
    // AXI cases sometimes carry a static fault a little later too: the AXI error may arrive
    // after the chip decoded the later fault, and the first in program order must win.
    uint32_t second_at = ~0u;
    bool pair = false;
    for (uint32_t i = 0; i <= length; ++i) {
      if (i == fault_at && tc_.kind == CaseKind::kStaticFault) emit_static_fault();
      if (i == fault_at && tc_.kind == CaseKind::kAxiFault) {
        emit_axi_fault();
        pair = pair_.chance(kErrorPairChance) || opt_.axi_pairs;
        pair = pair && !axi_fetch_fault_ && !no_pair_;
        if (pair) emit_error_pair();
        if (!axi_fetch_fault_ && rng_.chance(0.3)) second_at = i + uint32_t(rng_.pick(0, 3));
      }
      if (i == second_at) {
        const std::string first = tc_.fault;
        // Sometimes a younger read of unmapped memory first: its DECERR can reach the
        // controller before, or in the same cycle as, the older AXI error (random seed 9322468
        // at N = 4 with an older generator: a write_host's SLVERR and a later read_weights'
        // DECERR in one cycle, and the chip reported the younger). Decided by a stream of its
        // own, so the cases that do not take it are the ones the seeds gave before.
        const std::string younger = side_.chance(0.5) ? emit_younger_read_fault() : "";
        emit_static_fault();
        tc_.fault = first + younger + ", then " + tc_.fault;
      }
      // A younger AXI error ends the body: no instruction fetch after it competes with the
      // pair's reads for the read channel (it would move their errors by a whole burst).
      if (pair) break;
      if (i < length) emit_valid();
    }
    if (rng_.chance(0.2)) prog.push_back(Sync{});
    size_t last_run = prog.size() - 1;  // the last word that can execute
    if (tc_.kind != CaseKind::kNoHalt) {
      prog.push_back(Halt{});
      last_run = prog.size() - 1;
      // Sometimes words that must never be fetched or run follow the halt.
      if (rng_.chance(0.1)) {
        RawInstruction junk;
        for (auto& b : junk.bytes) b = uint8_t(rng_.pick(0, 255));
        prog.push_back(junk);
      }
    } else {
      tc_.fault =
          "no halt: the command buffer ends after " + std::to_string(prog.size()) + " instructions";
    }
    if (axi_fetch_fault_) {
      // SLVERR on the command buffer at one instruction (possibly past the halt, where the
      // chip may prefetch but must not fault).
      // (Host memory fails whole bursts of up to 16 words, so a failing word past the end is
      // placed where no burst with executed words can reach it.)
      const uint32_t at = rng_.chance(0.8) ? uint32_t(rng_.pick(tc_.prologue_length, last_run))
                                           : uint32_t(last_run + rng_.pick(17, 40));
      cfg.slverr.push_back({kCmdBase + 16 * at, 16});
      tc_.fault = "SLVERR on the instruction fetch of index " + std::to_string(at);
    }
    return tc_;
  }

 private:
  // 16-byte aligned host source of `bytes` bytes: the random data, sometimes the results.
  uint32_t host_in(uint32_t bytes) {
    if (rng_.chance(0.15) && bytes <= kOutSize)
      return kOutBase + 16 * uint32_t(rng_.pick(0, (kOutSize - bytes) / 16));
    return kDataBase + 16 * uint32_t(rng_.pick(0, (kDataSize - bytes) / 16));
  }
  // 16-byte aligned destination: the results region, sometimes over the random data (so that
  // host-memory hazards with reads are exercised), never the quantization slots.
  uint32_t host_out(uint32_t bytes) {
    if (rng_.chance(0.1)) {
      const uint32_t lo = 0x1000;
      return kDataBase + lo + 16 * uint32_t(rng_.pick(0, (kDataSize - lo - bytes) / 16));
    }
    return kOutBase + 16 * uint32_t(rng_.pick(0, (kOutSize - bytes) / 16));
  }
  // The long-transfer mix's row counts: half of them in the upper half of the limit.
  uint32_t long_rows(uint32_t limit) {
    const uint64_t k = rng_.pick(0, 3);
    if (k < 2) return uint32_t(rng_.pick(std::max<uint32_t>(1, limit / 2), limit));
    return k == 2 ? uint32_t(rng_.pick(1, limit)) : rows_upto(limit);
  }
  // The long-transfer mix's DMA windows (GenOptions::long_mix): all eight enabled. Those the
  // program needs (cmd, data, out, high; never slot 7, which an AXI fault takes over) start at
  // a random address below their region; the cmd and data ones end anywhere up to the end of
  // kOut. The others get a random base and size (any scale) that do not cover kSpareBase or
  // the byte after kOut, where the planted ERR_HOST_RANGE faults must stay outside every window.
  void place_long_windows() {
    DmaWindows& w = tc_.config.windows;
    std::vector<int> slots = {0, 1, 2, 3, 4, 5, 6};
    std::shuffle(slots.begin(), slots.end(), std::mt19937(uint32_t(rng_.u32())));
    const uint32_t out_end = kOutBase + kOutSize;
    auto cover = [&](uint32_t base, uint32_t end) -> DmaWindow {
      const uint32_t from = uint32_t(rng_.pick(0, base));
      const uint32_t to = rng_.chance(0.5) ? end : uint32_t(rng_.pick(end, out_end));
      return {from, to - from};
    };
    w[size_t(slots[0])] = cover(kCmdBase, kCmdBase + kCmdSize);
    w[size_t(slots[1])] = cover(kDataBase, kDataBase + kDataSize);
    w[size_t(slots[2])] = cover(kOutBase, out_end);
    const uint32_t high = uint32_t(rng_.pick(kUnmapped + 0x1'0000, kHighBase));
    w[size_t(slots[3])] = {high, uint32_t((uint64_t{1} << 32) - high)};
    auto covers = [](const DmaWindow& x, uint32_t a) {
      return a >= x.base && a - x.base < uint64_t{x.size};
    };
    for (const size_t i : {size_t(slots[4]), size_t(slots[5]), size_t(slots[6]), size_t(7)}) {
      DmaWindow x{};
      for (int tries = 0; tries < 16; ++tries) {
        x.base = rng_.u32();
        x.size = std::max<uint32_t>(1, rng_.u32() >> rng_.pick(0, 31));
        x.size = uint32_t(std::min<uint64_t>(x.size, (uint64_t{1} << 32) - x.base));
        if (!covers(x, kSpareBase) && !covers(x, out_end)) break;
        x = {uint32_t(rng_.pick(kUnmapped, kHighBase - 16)), 16};
      }
      w[i] = x;
    }
  }
  uint32_t rows_upto(uint32_t limit) {
    // Mostly short transfers, sometimes long ones.
    if (rng_.chance(0.8)) return uint32_t(rng_.pick(1, std::min<uint32_t>(limit, 24)));
    return uint32_t(rng_.pick(1, limit));
  }

  Instruction make_read_ub() {
    const uint32_t rows = rows_upto(tc_.ub_rows);
    return ReadHost{HostDest::Ub, tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - rows)), rows,
                    host_in(rows * n_)};
  }
  Instruction make_write_host() {
    const uint32_t rows = rows_upto(std::min(tc_.ub_rows, kOutSize / n_ / 2));
    return WriteHost{tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - rows)), rows,
                     host_out(rows * n_)};
  }
  Instruction make_read_param() {
    // Whole slots or any rows inside the slots the program uses.
    const uint32_t total = 12 * nslots_;
    const uint32_t first = uint32_t(rng_.pick(0, total - 1));
    const uint32_t rows = uint32_t(rng_.pick(1, total - first));
    const uint32_t host = rng_.chance(0.5) && (first * n_) % 16 == 0
                              ? kDataBase + quant_off_ + first * n_
                              : host_in(rows * n_);
    return ReadHost{HostDest::Param, first, rows, host};
  }
  Instruction make_read_lut() {
    const uint32_t lr = tc_.params.lut_rows();
    const uint32_t first = uint32_t(rng_.pick(0, lr - 1));
    const uint32_t rows = uint32_t(rng_.pick(1, lr - first));
    return ReadHost{HostDest::Lut, first, rows, host_in(rows * n_)};
  }
  // Fills `mm` with a valid matmul; false when none fits the current weight state.
  bool make_matmul(Matmul& mm) {
    mm.switch_weights = credit_ > 0 && (!active_ || rng_.chance(0.5));
    if (!mm.switch_weights && !active_) return false;
    if (train_ && !tile_fits(mm.switch_weights, false)) return false;  // a bf16 tile
    mm.accumulate = rng_.chance(0.5);
    mm.a_unsigned = rng_.chance(0.5);
    mm.w_unsigned = rng_.chance(0.5);
    const uint32_t acc = tc_.acc_rows;
    if (rng_.chance(0.25)) {  // one long run of rows
      mm.inner = uint16_t(rng_.pick(1, acc));
      mm.outer = 1;
    } else {
      mm.inner = uint16_t(rng_.pick(1, std::min<uint32_t>(acc, 12)));
      mm.outer =
          uint16_t(rng_.pick(1, std::max<uint32_t>(1, std::min<uint32_t>(4, acc / mm.inner))));
    }
    const uint32_t rows = uint32_t(mm.inner) * mm.outer;
    if (rows > acc) return false;
    // Strides that do not matter (count 1) take any value, so every field bit toggles.
    mm.inner_stride = uint8_t(mm.inner == 1 ? rng_.pick(0, 255) : rng_.pick(0, 3));
    mm.outer_stride =
        mm.outer == 1 ? uint32_t(rng_.pick(0, (1u << 24) - 1)) : uint32_t(rng_.pick(0, 16));
    const uint64_t span =
        uint64_t(mm.outer - 1u) * mm.outer_stride + uint64_t(mm.inner - 1u) * mm.inner_stride;
    if (span >= tc_.ub_rows) return false;
    mm.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - 1 - span));
    mm.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, acc - rows));
    if (mm.switch_weights) {
      --credit_;
      active_ = true;
    }
    return true;
  }
  // A raw int32 activate: no pooling, four UB rows per pixel.
  Activate make_raw_activate(Activate a) {
    a.raw = true;
    a.func = ActFunc::Identity;
    a.out_unsigned = false;
    const uint32_t acc = tc_.acc_rows;
    const uint32_t ub_px = tc_.ub_rows / Activate::kRawRowsPerPixel;
    a.width = uint16_t(rng_.pick(1, std::min(acc, ub_px)));
    a.height = uint16_t(rng_.pick(1, std::max<uint32_t>(1, std::min(acc, ub_px) / a.width)));
    const uint32_t line = a.width * Activate::kRawRowsPerPixel;
    a.ub_stride = a.height == 1 ? uint32_t(rng_.pick(0, (1u << 24) - 1))
                                : uint32_t(rng_.pick(rng_.chance(0.2) ? 0 : line, line + 4));
    uint32_t span = (a.height - 1u) * a.ub_stride + line;
    if (span > tc_.ub_rows) {  // a stride too long for the window: pack the lines
      a.ub_stride = line;
      span = a.height * line;
    }
    a.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, acc - uint32_t(a.width) * a.height));
    a.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - span));
    return a;
  }
  Activate make_activate() {
    Activate a;
    a.func = ActFunc(rng_.pick(0, 3));
    a.out_unsigned = rng_.chance(0.5);
    a.slot = uint8_t(rng_.pick(0, nslots_ - 1));
    if (tc_.ub_rows >= Activate::kRawRowsPerPixel && rng_.chance(0.12)) {
      return make_raw_activate(a);
    }
    const uint32_t acc = tc_.acc_rows;
    uint32_t kmax = 1;
    while ((kmax + 1) * (kmax + 1) <= acc && kmax < 15) ++kmax;
    a.pool_k = uint8_t(
        rng_.chance(0.4) ? 1 : rng_.pick(1, std::min<uint32_t>(kmax, rng_.chance(0.8) ? 3 : 15)));
    a.pool_s = uint8_t(rng_.chance(0.8) ? rng_.pick(1, 3) : rng_.pick(1, 15));
    a.width = uint16_t(rng_.pick(a.pool_k, acc / a.pool_k));
    a.height = uint16_t(rng_.pick(a.pool_k, acc / a.width));
    if (a.pool_k > 1 && rng_.chance(0.3)) {  // max-pool padding, each side below the window
      const uint32_t max_pad = std::min<uint32_t>(7, a.pool_k - 1u);
      a.pad_top = uint8_t(rng_.pick(0, max_pad));
      a.pad_left = uint8_t(rng_.pick(0, max_pad));
      a.pad_bottom = uint8_t(rng_.pick(0, max_pad));
      a.pad_right = uint8_t(rng_.pick(0, max_pad));
    }
    uint32_t ho = (a.padded_height() - a.pool_k) / a.pool_s + 1u,
             wo = (a.padded_width() - a.pool_k) / a.pool_s + 1u;
    if (ho * wo > tc_.ub_rows) {  // the padding grew the output past the UB window: drop it
      a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 0;
      ho = (a.height - a.pool_k) / a.pool_s + 1u;
      wo = (a.width - a.pool_k) / a.pool_s + 1u;
    }
    a.ub_stride =
        ho == 1 ? uint32_t(rng_.pick(0, (1u << 24) - 1)) : uint32_t(rng_.pick(wo, wo + 4));
    uint32_t span = (ho - 1) * a.ub_stride + wo;
    if (span > tc_.ub_rows) {  // a stride too long for the window: pack the lines
      a.ub_stride = wo;
      span = ho * wo;
    }
    a.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, acc - uint32_t(a.width) * a.height));
    a.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - span));
    return a;
  }
  Instruction make_read_weights() {
    const uint32_t room = tc_.params.wfifo_tiles + 2 - credit_;
    return make_read_weights_of(uint32_t(rng_.pick(1, std::min(room, 4u))));
  }
  Instruction make_read_weights_of(uint32_t tiles) {
    credit_ += tiles;
    return ReadWeights{tiles, host_in(tiles * n_ * n_)};
  }

  // Bursts past the chip's queue and table depths followed by work that depends only on the
  // burst's oldest entry (issue 15: a matmul issued without room in the controller's 4-entry
  // in-flight matmul table survived every random program). Depths: tpu_ctrl's in-flight matmul
  // table (MmDepth = 4), two overlapped read_weights and the weight FIFO (WFifoTiles + 2 tiles
  // in the FIFO and the MXU's shadow buffer), the instruction queue; a burst is longer than each.
  static constexpr uint32_t kMmTableDepth = 4;
  void emit_burst() {
    auto& prog = tc_.program;
    const uint32_t acc = tc_.acc_rows;
    switch (rng_.pick(0, 2)) {
      case 0: {  // short matmuls past the matmul table, then an activate of the oldest one's rows
        Matmul first;
        if (!make_matmul(first)) break;
        first.inner = uint16_t(rng_.pick(1, std::min<uint32_t>(3, acc / 2)));
        first.outer = 1;
        first.inner_stride = 1;
        first.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - first.inner));
        first.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, acc - first.inner));
        prog.push_back(first);
        // The others write ACC rows outside the first one's, so only the table orders them.
        const uint32_t lo = first.acc_addr - tc_.acc_base, hi = lo + first.inner;
        const uint32_t count = uint32_t(rng_.pick(kMmTableDepth, 3 * kMmTableDepth));
        for (uint32_t i = 0; i < count; ++i) {
          Matmul mm = first;
          mm.switch_weights = false;
          mm.accumulate = rng_.chance(0.5);
          mm.inner = uint16_t(rng_.pick(1, 3));
          const bool below = lo >= mm.inner, above = acc - hi >= mm.inner;
          if (!below && !above) break;
          const bool use_below = below && (!above || rng_.chance(0.5));
          mm.acc_addr = uint16_t(tc_.acc_base + (use_below ? rng_.pick(0, lo - mm.inner)
                                                           : rng_.pick(hi, acc - mm.inner)));
          mm.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - mm.inner));
          mm.inner_stride = 1;
          prog.push_back(mm);
        }
        Activate a = make_activate();
        a.pool_k = a.pool_s = 1;
        a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 0;  // each pad must be < pool_k
        a.width = first.inner;
        a.height = 1;
        a.acc_addr = first.acc_addr;
        a.ub_stride = uint32_t(rng_.pick(0, (1u << 24) - 1));
        if (a.raw && a.width * Activate::kRawRowsPerPixel > tc_.ub_rows) a.raw = false;
        a.ub_addr =
            tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - a.width * a.ub_rows_per_pixel()));
        prog.push_back(a);
        return;
      }
      case 1: {  // one-tile read_weights up to the FIFO's capacity, then a switch to the oldest
        const uint32_t cap = tc_.params.wfifo_tiles + 2;
        while (credit_ < cap) prog.push_back(make_read_weights_of(1));
        Matmul mm;
        if (!make_matmul(mm)) return;
        if (!mm.switch_weights && credit_ > 0 && (!train_ || tile_fits(true, false))) {
          mm.switch_weights = true;
          --credit_;
          active_ = true;
        }
        prog.push_back(mm);
        return;
      }
      default: {  // read_host bursts into UB, then a write_host of the oldest one's rows only
        const uint32_t rows0 = uint32_t(rng_.pick(1, std::min<uint32_t>(4, tc_.ub_rows / 2)));
        const uint32_t ub0 = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - rows0));
        prog.push_back(ReadHost{HostDest::Ub, ub0, rows0, host_in(rows0 * n_)});
        const uint32_t count = uint32_t(rng_.pick(4, 20));
        for (uint32_t i = 0; i < count; ++i) {
          const uint32_t rows = uint32_t(rng_.pick(1, 4));
          const uint32_t lo = ub0 - tc_.ub_base, hi = lo + rows0;
          const bool below = lo >= rows, above = tc_.ub_rows - hi >= rows;
          if (!below && !above) break;
          const bool use_below = below && (!above || rng_.chance(0.5));
          const uint32_t ub = tc_.ub_base + uint32_t(use_below ? rng_.pick(0, lo - rows)
                                                               : rng_.pick(hi, tc_.ub_rows - rows));
          prog.push_back(ReadHost{HostDest::Ub, ub, rows, host_in(rows * n_)});
        }
        prog.push_back(WriteHost{ub0, rows0, host_out(rows0 * n_)});
        return;
      }
    }
  }

  void emit_valid() {
    auto& prog = tc_.program;
    if (train_ && rng_.chance(0.6) && emit_train()) return;
    if (dw_ && rng_.chance(0.2)) {
      prog.push_back(make_dwconv());
      return;
    }
    if (rng_.chance(0.04)) {
      emit_burst();
      return;
    }
    for (;;) {
      const uint64_t k = rng_.pick(0, 99);
      if (k < 16) {
        prog.push_back(make_read_ub());
        return;
      }
      if (k < 20) {
        prog.push_back(make_read_param());
        return;
      }
      if (k < 24) {
        prog.push_back(make_read_lut());
        return;
      }
      if (k < 36) {
        if (credit_ >= tc_.params.wfifo_tiles + 2) continue;
        prog.push_back(make_read_weights());
        return;
      }
      if (k < 64) {
        Matmul mm;
        if (!make_matmul(mm)) continue;
        prog.push_back(mm);
        return;
      }
      if (k < 84) {
        prog.push_back(make_activate());
        return;
      }
      if (k < 96) {
        prog.push_back(make_write_host());
        return;
      }
      if (k < 98) {
        prog.push_back(Sync{});
        return;
      }
      prog.push_back(Nop{});
      return;
    }
  }

  // One instruction that fails a static check, derived from a valid one where possible.
  void emit_static_fault() {
    const ChipParams& p = tc_.params;
    auto& prog = tc_.program;
    if (train_ && tc_.params.ici_links > 0 && rng_.chance(0.25)) {
      emit_ici_fault();
      return;
    }
    if (train_ && rng_.chance(0.75) && emit_train_fault()) return;
    if (dw_ && rng_.chance(0.5)) {
      emit_dw_fault();
      return;
    }
    const uint64_t k = rng_.pick(0, 16);
    Instruction bad;
    switch (k) {
      case 0: {  // unknown opcode
        RawInstruction raw;
        raw.bytes[0] = uint8_t(rng_.pick(train_ ? 0x0F : 8, 255));  // (0x08-0x0E: training)
        if (dw_ && raw.bytes[0] == kDwOpcode) raw.bytes[0] = kDwOpcode + 1;  // dwconv exists
        if (rng_.chance(0.5))
          for (size_t b = 1; b < 16; ++b) raw.bytes[b] = uint8_t(rng_.pick(0, 255));
        bad = raw;
        tc_.fault = "unknown opcode";
        break;
      }
      case 1:
      case 2: {  // a reserved bit of a valid instruction
        Instruction base;
        switch (rng_.pick(0, 7)) {
          case 0:
            base = Nop{};
            break;
          case 1:
            base = Sync{};
            break;
          case 2:
            base = Halt{};
            break;
          case 3:
            base = make_read_ub();
            break;
          case 4:
            base = make_write_host();
            break;
          case 5:
            base = ReadWeights{1, host_in(n_ * n_)};
            break;
          case 6:
            base = make_activate();
            break;
          default: {
            Matmul mm;
            mm.ub_addr = tc_.ub_base;
            mm.acc_addr = uint16_t(tc_.acc_base);
            base = mm;
          }
        }
        RawInstruction raw{encode(base)};
        const auto bits = reserved_bits(Opcode(raw.bytes[0]));
        const unsigned bit = rng_.one_of(bits);
        raw.bytes[bit / 8] |= uint8_t(1u << (bit % 8));
        if (rng_.chance(0.3)) {  // and another one
          const unsigned b2 = rng_.one_of(bits);
          raw.bytes[b2 / 8] |= uint8_t(1u << (b2 % 8));
        }
        bad = raw;
        tc_.fault = "reserved bit " + std::to_string(bit) + " set";
        break;
      }
      case 3: {  // zero counts, bad dest, bad pooling
        switch (rng_.pick(0, 8)) {
          case 0: {
            auto r = std::get<ReadHost>(make_read_ub());
            r.rows = 0;
            bad = r;
            break;
          }
          case 1: {
            auto r = std::get<ReadHost>(make_read_ub());
            r.dest = HostDest(3);
            bad = r;
            break;
          }
          case 2: {
            auto w = std::get<WriteHost>(make_write_host());
            w.rows = 0;
            bad = w;
            break;
          }
          case 3: {
            bad = ReadWeights{0, host_in(256)};
            break;
          }
          case 4:
          case 5: {
            Matmul mm;
            mm.ub_addr = tc_.ub_base;
            mm.acc_addr = uint16_t(tc_.acc_base);
            mm.switch_weights = rng_.chance(0.5);
            (rng_.chance(0.5) ? mm.inner : mm.outer) = 0;
            bad = mm;
            break;
          }
          default: {
            Activate a = make_activate();
            switch (rng_.pick(0, 7)) {
              case 0:
                a.width = 0;
                break;
              case 1:
                a.height = 0;
                break;
              case 2:
                a.pool_k = 0;
                break;
              case 3:
                a.pool_s = 0;
                break;
              case 4:
                a.pool_k = uint8_t(std::min<uint64_t>(15, a.width + rng_.pick(1, 3)));
                break;
              case 5:  // a pad as large as the window (pool_k <= 7 so it fits its 3 bits)
                a.pool_k = uint8_t(rng_.pick(1, 7));
                a.pool_s = 1;
                a.width = a.height = 8;
                (rng_.chance(0.5) ? a.pad_top : a.pad_right) = uint8_t(rng_.pick(a.pool_k, 7));
                break;
              case 6:  // raw with pooling, padding, a function or an unsigned output
                a = make_raw_activate(a);
                switch (rng_.pick(0, 4)) {
                  case 0:
                    a.pool_k = 2;
                    a.width = a.height = 2;
                    a.ub_stride = 0;
                    break;
                  case 1:
                    a.pool_s = uint8_t(rng_.pick(2, 15));
                    break;
                  case 2:
                    a.func = ActFunc(rng_.pick(1, 3));
                    break;
                  case 3:
                    a.out_unsigned = true;
                    break;
                  default:
                    a.pool_k = 2;
                    a.width = a.height = 2;
                    a.ub_stride = 0;
                    a.pad_bottom = 1;
                    break;
                }
                break;
              default:
                a.pool_k = uint8_t(std::min<uint64_t>(15, a.height + rng_.pick(1, 3)));
                break;
            }
            bad = a;
          }
        }
        tc_.fault = "bad field";
        break;
      }
      case 4:
      case 5: {  // UB range
        const uint32_t over = uint32_t(rng_.pick(0, 3));
        switch (rng_.pick(0, 3)) {
          case 0: {
            const uint32_t rows = uint32_t(rng_.pick(1, 8));
            bad = ReadHost{HostDest::Ub,
                           uint32_t(rng_.chance(0.3) ? rng_.pick(p.ub_rows, (1u << 24) - 1)
                                                     : p.ub_rows - rows + 1 + over),
                           rows, host_in(8 * n_)};
            break;
          }
          case 1: {
            const uint32_t rows = uint32_t(rng_.pick(1, 8));
            bad = WriteHost{p.ub_rows - rows + 1 + over, rows, host_out(8 * n_)};
            break;
          }
          case 2: {
            Matmul mm;
            if (!active_ && credit_ > 0) mm.switch_weights = true;
            mm.inner = uint16_t(rng_.pick(1, 8));
            mm.inner_stride = uint8_t(rng_.pick(1, 255));
            mm.outer = uint16_t(rng_.pick(1, 3));
            mm.outer_stride = uint32_t(rng_.pick(0, 1u << 23));
            mm.acc_addr = uint16_t(tc_.acc_base);
            const uint64_t span = uint64_t(mm.outer - 1u) * mm.outer_stride +
                                  uint64_t(mm.inner - 1u) * mm.inner_stride;
            const uint64_t lo = span >= p.ub_rows ? 0 : p.ub_rows - span;
            mm.ub_addr = uint32_t(std::min<uint64_t>((1u << 24) - 1, rng_.pick(lo, lo + 4)));
            bad = mm;
            break;
          }
          default: {
            Activate a = make_activate();
            a.ub_addr = p.ub_rows - uint32_t(rng_.pick(0, 2));
            if (rng_.chance(0.3)) a.ub_addr = uint32_t(rng_.pick(0, (1u << 24) - 1));
            a.ub_stride = uint32_t(rng_.pick(0, (1u << 24) - 1));
            bad = a;
          }
        }
        tc_.fault = "UB range";
        break;
      }
      case 6: {  // ACC range
        if (rng_.chance(0.5)) {
          Matmul mm;
          if (!active_ && credit_ > 0) mm.switch_weights = true;
          mm.ub_addr = tc_.ub_base;
          mm.inner = uint16_t(rng_.pick(1, 64));
          mm.outer = uint16_t(rng_.pick(1, 64));
          const uint32_t rows = uint32_t(mm.inner) * mm.outer;
          mm.inner_stride = 0;
          mm.acc_addr = uint16_t(std::min<uint64_t>(
              0xFFFF, rng_.pick(rows > p.acc_rows ? 0 : p.acc_rows - rows + 1, p.acc_rows + 3)));
          if (rng_.chance(0.2)) mm.acc_addr = uint16_t(rng_.pick(0, 0xFFFF));
          bad = mm;
        } else {
          Activate a = make_activate();
          const uint32_t rows = uint32_t(a.width) * a.height;
          a.acc_addr = uint16_t(
              std::min<uint64_t>(0xFFFF, rng_.pick(p.acc_rows - rows + 1, p.acc_rows + 2)));
          bad = a;
        }
        tc_.fault = "ACC range";
        break;
      }
      case 7: {  // PARAM / LUT range
        if (rng_.chance(0.5)) {
          const uint32_t rows = uint32_t(rng_.pick(1, 12));
          bad = ReadHost{HostDest::Param, p.param_rows() - rows + uint32_t(rng_.pick(1, 3)), rows,
                         host_in(12 * n_)};
        } else {
          const uint32_t rows = uint32_t(rng_.pick(1, p.lut_rows()));
          bad = ReadHost{HostDest::Lut, p.lut_rows() - rows + uint32_t(rng_.pick(1, 3)), rows,
                         host_in(256)};
        }
        tc_.fault = "PARAM/LUT range";
        break;
      }
      case 8: {  // misaligned host address
        const uint32_t off = uint32_t(rng_.pick(1, 15));
        switch (rng_.pick(0, 3)) {
          case 0: {
            auto r = std::get<ReadHost>(make_read_ub());
            r.host_addr += off;
            bad = r;
            break;
          }
          case 1: {
            auto w = std::get<WriteHost>(make_write_host());
            w.host_addr += off;
            bad = w;
            break;
          }
          case 2: {
            bad = ReadWeights{1, host_in(n_ * n_) + off};
            break;
          }
          default: {
            auto r = std::get<ReadHost>(make_read_param());
            r.host_addr += off;
            bad = r;
          }
        }
        tc_.fault = "misaligned host address";
        break;
      }
      case 9:
      case 10: {  // host range: wraps past 2^32, or outside the enabled windows
        uint32_t addr;
        uint64_t end;  // the range must reach past this address (the window's end, or 2^32)
        if (windows_on_ && rng_.chance(0.7)) {
          addr =
              rng_.chance(0.5) ? kSpareBase : kOutBase + kOutSize - 16;  // spare / crosses the end
          end = addr == kSpareBase ? addr : kOutBase + kOutSize;
        } else {
          addr = 0xFFFF'FFF0u - 16 * uint32_t(rng_.pick(0, 3));
          end = uint64_t(1) << 32;
        }
        // Enough bytes at every N (8 rows or one tile of N = 4 may end exactly at the end).
        const uint64_t need = end - addr + 1;
        const uint32_t rows = std::max<uint32_t>(8, uint32_t((need + n_ - 1) / n_));
        const uint32_t tiles = std::max<uint32_t>(1, uint32_t((need + n_ * n_ - 1) / (n_ * n_)));
        switch (rng_.pick(0, 2)) {
          case 0:
            bad = ReadHost{HostDest::Ub, tc_.ub_base, rows, addr};
            break;
          case 1:
            bad = WriteHost{tc_.ub_base, rows, addr};
            break;
          default:
            bad = ReadWeights{tiles, addr};
            break;
        }
        tc_.fault = "host range";
        break;
      }
      case 11:
      case 12: {  // a matmul that needs a tile that can never arrive
        Matmul mm;
        mm.ub_addr = tc_.ub_base;
        mm.acc_addr = uint16_t(tc_.acc_base);
        mm.switch_weights = true;
        // Drain the pushed tiles first, so the faulting switch finds none.
        if (train_) drain_tiles();
        while (credit_ > 0) {
          Matmul drain = mm;
          drain.inner = uint16_t(rng_.pick(1, 4));
          prog.push_back(drain);
          --credit_;
        }
        bad = mm;
        tc_.fault = "no weights";
        break;
      }
      case 13:
      case 14: {  // more tiles than can ever wait
        const uint32_t room = p.wfifo_tiles + 2 - credit_;
        bad = ReadWeights{room + uint32_t(rng_.pick(1, 3)), host_in(n_ * n_)};
        if (rng_.chance(0.2))
          bad = ReadWeights{uint32_t(rng_.pick(room + 1, (1u << 24) - 1)), host_in(n_ * n_)};
        tc_.fault = "weight overflow";
        break;
      }
      case 15: {  // a write_host into the command buffer: an earlier instruction, itself or
                  // the next one (ERR_HOST_RANGE, docs/isa.md)
        const uint32_t at = uint32_t(rng_.pick(0, prog.size() + 1));
        const uint32_t rows = uint32_t(rng_.pick(1, 3));
        bad = WriteHost{tc_.ub_base, rows, kCmdBase + 16 * at};
        tc_.fault = "write_host into the command buffer";
        break;
      }
      default: {  // several faults in one instruction: the lowest code wins
        auto r = std::get<ReadHost>(make_read_ub());
        r.host_addr += uint32_t(rng_.pick(1, 15));
        r.local_addr = p.ub_rows + uint32_t(rng_.pick(0, 100));
        if (rng_.chance(0.5)) r.rows = 0;
        if (rng_.chance(0.5)) r.host_addr = 0xFFFF'FFF1u;
        bad = r;
        tc_.fault = "several faults";
      }
    }
    tc_.fault += " at index " + std::to_string(prog.size()) + ": " + disassemble(bad);
    prog.push_back(bad);
  }

  // An AXI error on a read_vmem / write_vmem: DECERR from unmapped memory, or SLVERR on one
  // of its rows. No younger error pair follows (emit_error_pair() shortens int8 DMAs only).
  bool emit_train_axi_fault() {
    Opcode op;
    if (!pick_op({Opcode::ReadVmem, Opcode::WriteVmem}, op)) return false;
    auto& prog = tc_.program;
    const bool write = op == Opcode::WriteVmem;
    VmemDma d = make_vdma(write);
    const size_t at = prog.size();
    if (rng_.chance(0.4)) {
      if (windows_on_) tc_.config.windows[7] = {kUnmapped, 0x1'0000};
      d.host_stride = 0;
      d.host_addr = kUnmapped + 16 * uint32_t(rng_.pick(0, 64));
      tc_.fault = write ? "DECERR on write_vmem" : "DECERR on read_vmem";
    } else {
      const uint64_t off =
          d.step(n_) * rng_.pick(0, d.rows - 1) + (d.row_bytes(n_) - 1) * rng_.pick(0, 1);
      tc_.config.slverr.push_back(
          {uint32_t(d.host_addr + off) & ~15u, uint32_t(16 * rng_.pick(1, 4))});
      tc_.fault = write ? "SLVERR on write_vmem" : "SLVERR on read_vmem";
    }
    prog.push_back(write ? Instruction(WriteVmem{d}) : Instruction(ReadVmem{d}));
    no_pair_ = true;
    tc_.fault += " at index " + std::to_string(at) + ": " + disassemble(prog[at]);
    return true;
  }

  // A DMA that host memory answers with SLVERR or DECERR, or a failing instruction fetch.
  void emit_axi_fault() {
    auto& prog = tc_.program;
    RunConfig& cfg = tc_.config;
    if (train_ && rng_.chance(0.35) && emit_train_axi_fault()) return;
    uint64_t k = rng_.pick(0, 5);
    if (opt_.axi_pairs) k %= 5;  // no fetch fault: a pair follows
    const size_t at = prog.size();
    switch (k) {
      case 0: {  // read of unmapped memory (DECERR); with windows on, a window covers it
        if (windows_on_) cfg.windows[7] = {kUnmapped, 0x1'0000};
        const uint32_t addr = kUnmapped + 16 * uint32_t(rng_.pick(0, 64));
        if (rng_.chance(0.5)) {
          prog.push_back(ReadHost{HostDest(rng_.pick(0, 2)), 0, 1, addr});
        } else {
          prog.push_back(ReadWeights{1, addr});
          ++credit_;
        }
        tc_.fault = "DECERR on a read";
        break;
      }
      case 1: {  // write to unmapped memory (DECERR)
        if (windows_on_) cfg.windows[7] = {kUnmapped, 0x1'0000};
        const uint32_t rows = uint32_t(rng_.pick(1, 40));
        prog.push_back(WriteHost{tc_.ub_base, std::min(rows, tc_.ub_rows),
                                 kUnmapped + 16 * uint32_t(rng_.pick(0, 64))});
        tc_.fault = "DECERR on a write";
        break;
      }
      case 2:
      case 3: {  // SLVERR inside the data the next read uses
        Instruction in = rng_.chance(0.6) ? make_read_ub() : make_read_weights();
        uint32_t host = 0, bytes = 0;
        if (auto* r = std::get_if<ReadHost>(&in)) {
          host = r->host_addr;
          bytes = r->rows * n_;
        }
        if (auto* w = std::get_if<ReadWeights>(&in)) {
          host = w->host_addr;
          bytes = w->tiles * n_ * n_;
        }
        const uint32_t off = 16 * uint32_t(rng_.pick(0, (bytes - 1) / 16));
        cfg.slverr.push_back({host + off, uint32_t(16 * rng_.pick(1, 4))});
        prog.push_back(in);
        tc_.fault = "SLVERR on a read";
        break;
      }
      case 4: {  // SLVERR on the write
        auto w = std::get<WriteHost>(make_write_host());
        const uint32_t off = 16 * uint32_t(rng_.pick(0, (w.rows * n_ - 1) / 16));
        cfg.slverr.push_back({w.host_addr + off, uint32_t(16 * rng_.pick(1, 4))});
        prog.push_back(w);
        tc_.fault = "SLVERR on a write";
        break;
      }
      default:
        axi_fetch_fault_ = true;  // placed once the program is complete
        return;
    }
    tc_.fault += " at index " + std::to_string(at) + ": " + disassemble(prog[at]);
  }

  // A read of unmapped memory (DECERR) placed after an AXI fault, from side_ only; returns
  // its part of the fault description.
  std::string emit_younger_read_fault() {
    auto& prog = tc_.program;
    if (windows_on_) tc_.config.windows[7] = {kUnmapped, 0x1'0000};
    const uint32_t addr = kUnmapped + 16 * uint32_t(side_.pick(0, 64));
    if (credit_ < tc_.params.wfifo_tiles + 2 && side_.chance(0.5)) {
      prog.push_back(ReadWeights{1, addr});
      ++credit_;
    } else {
      prog.push_back(ReadHost{HostDest::Ub, tc_.ub_base, uint32_t(side_.pick(1, 4)), addr});
    }
    return ", then DECERR on a younger read at index " + std::to_string(prog.size() - 1) + ": " +
           disassemble(prog.back());
  }

  // A younger AXI error right behind the AXI fault just emitted (issue 34): a failing read_host,
  // read_weights or write_host, or a read_weights that succeeds behind a failing one (the
  // weight DMA overlaps two). ERR_PC must name the older. For the two errors to land in one
  // cycle often, both are short: the older fault is replaced by a small one whose error comes
  // a few beats into it (replace_older()), the younger moves one beat, and most of the time
  // two activates hold the younger back by 1..16 cycles (the second waits for the activation
  // unit, the first has that many pixels), so its error lands just before, in or just after
  // the older one's cycle. From pair_ only, so the cases that do not take it are the ones the
  // seeds gave before.
  void emit_error_pair() {
    auto& prog = tc_.program;
    replace_older();
    const bool older_weights = std::holds_alternative<ReadWeights>(prog.back());
    const bool older_write = std::holds_alternative<WriteHost>(prog.back());
    if (windows_on_) tc_.config.windows[7] = {kUnmapped, 0x1'0000};
    const uint32_t addr = kUnmapped + 16 * uint32_t(pair_.pick(0, 64));
    const bool weights_room = credit_ < tc_.params.wfifo_tiles + 2;
    // The younger's unit: errors of a write and a read can land in one cycle, two reads
    // cannot (one R beat per cycle), except an older read_weights' failing beat and a younger
    // read_weights' start; behind a failing read_weights, some younger ones succeed.
    enum class Younger { ReadHost, WriteHost, Weights, GoodWeights };
    Younger y = Younger::ReadHost;
    const uint64_t k = pair_.pick(0, 9);
    if (older_write) {
      y = k < 5 ? Younger::ReadHost : Younger::Weights;
    } else if (!older_weights) {
      y = k < 6 ? Younger::WriteHost : k < 8 ? Younger::Weights : Younger::ReadHost;
    } else {
      y = k < 4   ? Younger::WriteHost
          : k < 6 ? Younger::Weights
          : k < 9 ? Younger::GoodWeights
                  : Younger::ReadHost;
    }
    if (!weights_room && (y == Younger::Weights || y == Younger::GoodWeights))
      y = Younger::ReadHost;
    // Two read_weights: the younger's start meets the older's failing beat at a hold of the
    // beats before it + 7 (measured like set_hold()'s).
    if (older_weights && (y == Younger::Weights || y == Younger::GoodWeights)) {
      const int64_t before = int64_t(beats(bytes_of(prog.back()) - 16));
      hold_ = uint32_t(std::clamp<int64_t>(before + 7 + (pair_.chance(0.25) ? 1 : 0), 1, kMaxHold));
    }
    const uint32_t holds = pair_.chance(0.8) ? 2 : 0;
    // The older one's UB rows are below the top kTopRows rows of the UB window
    // (replace_older()); the activates and the younger use those, so none waits for the older.
    const uint32_t upper = tc_.ub_base + tc_.ub_rows - kTopRows;
    const uint32_t beat_rows = n_ >= 16 ? 1 : 16 / n_;
    for (uint32_t h = 0; h < holds; ++h) {
      Activate a;
      a.acc_addr = uint16_t(tc_.acc_base);
      a.ub_addr = upper;
      a.width = uint16_t(h == 0 ? std::min(hold_, tc_.acc_rows) : 1);
      a.height = 1;
      a.slot = uint8_t(pair_.pick(0, nslots_ - 1));
      prog.push_back(a);
    }
    std::string what = "DECERR";
    switch (y) {
      case Younger::ReadHost:
        prog.push_back(ReadHost{HostDest::Ub, upper, beat_rows, addr});
        break;
      case Younger::WriteHost:
        prog.push_back(WriteHost{upper, beat_rows, addr});
        break;
      case Younger::Weights:
        prog.push_back(ReadWeights{1, addr});
        ++credit_;
        break;
      case Younger::GoodWeights:
        prog.push_back(ReadWeights{1, kDataBase + 16 * uint32_t(pair_.pick(0, 64))});
        what = "no error";
        ++credit_;
        break;
    }
    // Mostly without AXI backpressure: the sizes and the hold are aimed at one cycle.
    if (pair_.chance(0.8)) tc_.config.backpressure = 0.0;
    tc_.fault += ", then " + what + " on a younger DMA at index " +
                 std::to_string(prog.size() - 1) + " (" + std::to_string(holds) +
                 " activates between): " + disassemble(prog.back());
  }
  static constexpr double kErrorPairChance = 0.8;
  // Sets hold_, the pixels of the first activate that holds the younger DMA back, from the
  // beats before the older one's error: measured on the RTL of issue 34 (N = 4, no
  // backpressure), the errors coincide at hold = the write's beats - 8 behind a write_host and
  // at hold = the beats before the failing one - memory latency - 4 behind a read; in random
  // programs (bandwidth, windows, the state left by the body) it is often 1 to 3 cycles more:
  // the hold is that - 1 .. + 3, in 1..16.
  void set_hold(uint32_t beats_before_error, bool older_write) {
    const int64_t target = int64_t(beats_before_error) -
                           (older_write ? 8 : int64_t(tc_.config.mem_latency) + 4) +
                           int64_t(pair_.pick(0, 4)) - 1;
    hold_ = uint32_t(std::clamp<int64_t>(target, 1, kMaxHold));
  }
  // The beats of `bytes` on the AXI bus.
  uint32_t beats(uint32_t bytes) const { return bytes * 8 / tc_.params.axi_width; }
  static constexpr uint32_t kMaxHold = 16;
  static constexpr uint32_t kTopRows = kMaxHold + 1;  // the activates' UB rows (and the younger's)
  uint32_t hold_ = 1;

  uint32_t bytes_of(const Instruction& in) const {
    if (const auto* rw = std::get_if<ReadWeights>(&in)) return rw->tiles * n_ * n_;
    if (const auto* rh = std::get_if<ReadHost>(&in)) return rh->rows * n_;
    return 0;
  }

  // Replaces the failing DMA just emitted by a short one of the same direction: a write_host of
  // 16..64 bytes whose first 16 answer SLVERR (the whole burst fails: the error comes with the
  // write response), or a read_host to the UB or a read_weights of 2..9 x 16 bytes (at least
  // N bytes a row, a tile) that ends 16 bytes past a 4 KiB boundary of the random data, those
  // 16 answering SLVERR: bursts never cross the boundary and host memory fails whole bursts,
  // so the error comes with its last burst, a few beats in. From pair_ only.
  void replace_older() {
    auto& prog = tc_.program;
    RunConfig& cfg = tc_.config;
    uint32_t host = 0;
    bool write = false;
    if (const auto* rw = std::get_if<ReadWeights>(&prog.back())) {
      credit_ -= rw->tiles;
      host = rw->host_addr;
    } else if (const auto* rh = std::get_if<ReadHost>(&prog.back())) {
      host = rh->host_addr;
    } else if (const auto* wh = std::get_if<WriteHost>(&prog.back())) {
      host = wh->host_addr;
      write = true;
    }
    prog.pop_back();
    if (host < kUnmapped) cfg.slverr.pop_back();  // an SLVERR access (a DECERR one added none)
    // Mostly from an idle chip, so that the two errors' timing depends on the pair alone.
    if (pair_.chance(0.8)) prog.push_back(Sync{});
    const uint32_t unit = std::max(16u, n_);  // bytes: a multiple of 16 and of a row
    // Sizes aimed at a hold of 1..12 (set_hold()), within the UB rows below the top ones.
    const uint32_t want = uint32_t(pair_.pick(1, 12));
    const uint32_t max_bytes = (tc_.ub_rows - kTopRows) * n_ / unit * unit;
    auto bytes_for = [&](uint32_t beats_wanted) {
      const uint32_t b = (beats_wanted * tc_.params.axi_width / 8 + unit - 1) / unit * unit;
      return std::clamp(b, 2 * unit, std::max(2 * unit, max_bytes));
    };
    if (write) {
      const uint32_t bytes = bytes_for(want + 8);
      const uint32_t at = kOutBase + 16 * uint32_t(pair_.pick(0, (kOutSize - bytes) / 16));
      const uint32_t rows = bytes / n_;
      prog.push_back(WriteHost{tc_.ub_base, rows, at});
      set_hold(beats(rows * n_), true);
      cfg.slverr.push_back({at, 16});
      tc_.fault = "SLVERR on a short write at index " + std::to_string(prog.size() - 1) + ": " +
                  disassemble(prog.back());
      return;
    }
    // In the upper half of the data: every transfer below fits under the boundary.
    constexpr uint32_t kHalf = kDataSize / 2;
    const uint32_t boundary =
        kDataBase + kHalf + 0x1000 * uint32_t(pair_.pick(0, kHalf / 0x1000 - 1));
    const uint32_t room = tc_.params.wfifo_tiles + 2 - credit_;
    const uint32_t tile = n_ * n_;
    const uint32_t min_tiles = tile >= 32 ? 1 : 32 / tile;  // 32 bytes or more
    const uint32_t max_tiles =
        std::min({room, std::max(2 * min_tiles, 9u * 16u / tile), kHalf / tile});
    if (max_tiles >= min_tiles && pair_.chance(0.5)) {
      const uint32_t tiles = uint32_t(pair_.pick(min_tiles, max_tiles));
      prog.push_back(ReadWeights{tiles, boundary + 16 - tiles * tile});
      credit_ += tiles;
    } else {
      // Bytes before the boundary, then one unit past it (its first 16 bytes fail).
      const uint32_t before =
          std::min(bytes_for(want + tc_.config.mem_latency + 4), max_bytes - unit);
      const uint32_t rows = (before + unit) / n_;
      prog.push_back(ReadHost{HostDest::Ub, tc_.ub_base, rows, boundary - before});
    }
    cfg.slverr.push_back({boundary, 16});
    set_hold(beats(bytes_of(prog.back()) - 16), false);
    tc_.fault = "SLVERR on the last burst of a short read at index " +
                std::to_string(prog.size() - 1) + ": " + disassemble(prog.back());
  }

  // ==== training configuration (GenOptions::vmem_rows > 0; never called for the int8 chip,
  // so the int8 seeds draw exactly what they always drew)

  // Float corner-case data in kData from this offset (the quantization slots are below).
  static constexpr uint32_t kFloatOff = 0x2000;
  static constexpr uint32_t kFloatBase = kDataBase + kFloatOff, kFloatSize = kDataSize - kFloatOff;

  bool op_on(Opcode op) const { return (opt_.train_ops & train_op_bit(op)) != 0; }

  // The weight tiles as the program so far leaves them (types of the pending tiles, oldest
  // first, and of the active one), worked out from the program itself.
  struct TileState {
    std::vector<bool> pending_bf16;
    bool active = false, active_bf16 = false;
  };
  TileState tile_state() const {
    TileState t;
    auto pop = [&t]() {
      if (t.pending_bf16.empty()) return;
      t.active = true;
      t.active_bf16 = t.pending_bf16.front();
      t.pending_bf16.erase(t.pending_bf16.begin());
    };
    for (const Instruction& in : tc_.program) {
      if (const auto* rw = std::get_if<ReadWeights>(&in))
        t.pending_bf16.insert(t.pending_bf16.end(), rw->tiles, false);
      if (const auto* lw = std::get_if<LoadWeights>(&in))
        t.pending_bf16.insert(t.pending_bf16.end(), lw->tiles, true);
      if (const auto* mm = std::get_if<Matmul>(&in); mm && mm->switch_weights) pop();
      if (const auto* mb = std::get_if<MatmulBf16>(&in); mb && mb->switch_weights) pop();
    }
    return t;
  }
  // Whether an int8 matmul (bf16 = false) or a matmul_bf16 with this switch finds its type.
  bool tile_fits(bool switch_weights, bool bf16) const {
    const TileState t = tile_state();
    if (switch_weights) return !t.pending_bf16.empty() && t.pending_bf16.front() == bf16;
    return t.active && t.active_bf16 == bf16;
  }

  // One fp32 lane: corner cases (NaN with any payload, infinities, signed zeros, subnormals,
  // values next to 2^128 and 2^31, bf16 rounding ties), any pattern, small integers, or an
  // ordinary magnitude.
  uint32_t corner_value() {
    static const std::vector<uint32_t> kCorners = {
        0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000,
        0x00800001, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0xFF7F8000,
        0x7F7F7FFF, 0x7F7FC000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
        0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x7FC00001, 0x4F000000, 0x4EFFFFFF, 0xCF000000,
        0xCF000001, 0x4B000001, 0x4B800001, 0x3F808000, 0x3F818000, 0x00FF8000, 0x007F8000,
        0x0080FFFF, 0x33800000, 0x1F800000, 0x5F800000, 0x3F7FFFFF, 0xBF800001};
    const uint32_t sign = rng_.chance(0.5) ? fp::kSignBit : 0u;
    switch (rng_.pick(0, 9)) {
      case 0:
      case 1:
        return rng_.one_of(kCorners);
      case 2:
        return rng_.u32();
      case 3:  // subnormal or a signed zero
        return sign | (rng_.chance(0.25) ? 0u : uint32_t(rng_.pick(1, 0x7FFFFF)));
      case 4:  // just below 2^128 (bf16 rounding and sums overflow) or just above 2^-126
        return sign | (rng_.chance(0.5) ? 0x7F000000u | uint32_t(rng_.pick(0x7E0000, 0x7FFFFF))
                                        : 0x00800000u | uint32_t(rng_.pick(0, 0x1FFFF)));
      case 5:  // small integers, as int32 patterns or as floats
        return rng_.chance(0.5) ? uint32_t(int32_t(rng_.pick(0, 80)) - 40)
                                : fp::bits_of(float(int32_t(rng_.pick(0, 80)) - 40));
      default:
        return moderate_value();
    }
  }
  uint32_t moderate_value() {
    const uint32_t sign = rng_.chance(0.5) ? fp::kSignBit : 0u;
    return sign | uint32_t(rng_.pick(0x70, 0x8F)) << 23 | uint32_t(rng_.pick(0, 0x7FFFFF));
  }
  // -x, a few ulp off (a near-cancelling partner of x).
  uint32_t partner(uint32_t x) {
    return uint32_t(int64_t(x ^ fp::kSignBit) + int64_t(rng_.pick(0, 4)) - 2);
  }

  // The float area of the host image, in blocks of 4 rows of N fp32 lanes: ordinary values
  // (a few corners), corner cases, or near-cancelling pairs (lane j + N/2 against lane j, odd
  // rows against the row before) for sums, lane trees and row reductions.
  void fill_float_data(std::vector<uint8_t>& data) {
    const std::vector<uint32_t> w = float_words(kFloatSize / 4);
    for (uint32_t i = 0; i < w.size(); ++i) put32(data, kFloatOff / 4 + i, w[i]);
  }
  // `words` fp32 lanes of that float data (whole blocks of 4 rows first, then a partial one).
  std::vector<uint32_t> float_words(uint32_t words) {
    const uint32_t block = 4 * n_;
    std::vector<uint32_t> w(words);
    for (uint32_t b0 = 0; b0 < words; b0 += block) {
      const uint64_t regime = rng_.pick(0, 9);
      for (uint32_t i = b0; i < std::min(words, b0 + block); ++i) {
        const uint32_t lane = (i - b0) % n_, row = (i - b0) / n_;
        if (regime < 5) {
          w[i] = rng_.chance(0.05) ? corner_value() : moderate_value();
        } else if (regime < 8) {
          w[i] = corner_value();
        } else if (lane >= n_ / 2) {
          w[i] = partner(w[i - n_ / 2]);
        } else {
          w[i] = row % 2 == 1 ? partner(w[i - n_]) : moderate_value();
        }
      }
    }
    return w;
  }

  // The VMEM window and its prologue: a read_vmem of the whole window from the float data.
  void place_vmem_window() {
    const uint32_t total = tc_.params.vmem_rows;
    if (long_) {  // hundreds to thousands of rows, at the top of VMEM in half the cases
      const uint32_t most = std::min(total, kDumpVmemSize / (4 * n_));
      tc_.vmem_rows = std::min(most, rng_.one_of<uint32_t>({256, 512, 1024, most}));
      tc_.vmem_base =
          rng_.chance(0.5) ? total - tc_.vmem_rows : uint32_t(rng_.pick(0, total - tc_.vmem_rows));
      vb_ = tc_.vmem_base;
      vr_ = tc_.vmem_rows;
      tc_.config.vmem_dump = true;
      return;
    }
    tc_.vmem_rows = std::min(total, rng_.one_of<uint32_t>({32, 48, 64, 128, 256}));
    tc_.vmem_rows = std::max(tc_.vmem_rows, std::min(total, 2 * n_));
    switch (rng_.pick(0, 5)) {
      case 0:
        tc_.vmem_base = 0;
        break;
      case 1:
        tc_.vmem_base = total - tc_.vmem_rows;  // the top rows: every address bit set
        break;
      default:
        tc_.vmem_base = uint32_t(rng_.pick(0, total - tc_.vmem_rows));
    }
    vb_ = tc_.vmem_base;
    vr_ = tc_.vmem_rows;
    tc_.config.vmem_dump = true;
  }
  Instruction prologue_read_vmem() {
    ReadVmem rv;
    rv.vmem_addr = uint16_t(vb_);
    rv.rows = vr_;
    if (long_) {
      rv.host_addr = kHighBase + 16 * uint32_t(rng_.pick(0, (kHighSize - vr_ * 4 * n_) / 16));
      return rv;
    }
    rv.host_addr = kFloatBase + 16 * uint32_t(rng_.pick(0, (kFloatSize - vr_ * 4 * n_) / 16));
    return rv;
  }
  // A VMEM base row for an access spanning `span` rows past it, inside the window.
  uint16_t vrow(uint64_t span) { return uint16_t(vb_ + rng_.pick(0, vr_ - 1 - span)); }
  // A row near `row` (overlapping operands) that keeps `span` rows inside the window.
  uint16_t vnear(uint32_t row, uint64_t span) {
    const int64_t lo = vb_, hi = int64_t(vb_) + vr_ - 1 - int64_t(span);
    return uint16_t(std::clamp<int64_t>(int64_t(row) + int64_t(rng_.pick(0, 4)) - 2, lo, hi));
  }

  // read_vmem / write_vmem of the window, fp32 or bf16, any stride (0, below, at or above the
  // row size), from the float data (or the results) / to the results (or the float data).
  VmemDma make_vdma(bool write) {
    VmemDma d;
    d.bf16 = rng_.chance(0.4);
    const uint32_t r = d.row_bytes(n_);
    const bool other = rng_.chance(write ? 0.1 : 0.15);
    const bool high = long_ && rng_.chance(0.4);  // the top of the host address space
    const uint32_t lo = high ? kHighBase : (write != other) ? kOutBase : kFloatBase;
    const uint32_t size = high ? kHighSize : (write != other) ? kOutSize : kFloatSize;
    const uint32_t limit = std::min(vr_, size / 2 / r);
    d.rows = long_ ? long_rows(limit) : rows_upto(limit);
    if (d.rows == 1) {
      d.host_stride = rng_.u32() & ~15u;  // does not matter
    } else if (rng_.chance(0.5)) {
      d.host_stride = 16 * uint32_t(rng_.pick(1, (2 * r) / 16 + 2));
    }
    if (d.host_span(n_) > size) d.host_stride = 0;
    d.host_addr = lo + 16 * uint32_t(rng_.pick(0, (size - d.host_span(n_)) / 16));
    d.vmem_addr = vrow(d.rows - 1);
    return d;
  }
  LoadWeights make_load_weights(uint32_t tiles) {
    LoadWeights lw;
    lw.transpose = rng_.chance(0.5);
    lw.rows = uint16_t(rng_.chance(0.5) ? n_ : rng_.pick(1, n_));
    lw.tiles = uint16_t(tiles);
    lw.row_stride =
        uint16_t(lw.rows == 1 ? rng_.pick(0, 0xFFFF) : rng_.one_of<uint32_t>({0, 1, 1, 1, 2, 3}));
    lw.tile_stride = uint16_t(tiles == 1 ? rng_.pick(0, 0xFFFF) : rng_.pick(0, 2 * n_));
    auto span = [&lw]() { return lw.last_row() - lw.vmem_addr; };
    lw.vmem_addr = 0;
    if (span() >= vr_) lw.tile_stride = 0;
    if (span() >= vr_) lw.row_stride = 1;
    lw.vmem_addr = vrow(span());
    credit_ += tiles;
    return lw;
  }
  // A valid matmul_bf16 (false when no bf16 tile can be used).
  bool make_matmul_bf16(MatmulBf16& mb) {
    const bool can_switch = credit_ > 0 && tile_fits(true, true);
    const bool can_stay = tile_fits(false, true);
    if (!can_switch && !can_stay) return false;
    mb.switch_weights = can_switch && (!can_stay || rng_.chance(0.5));
    mb.accumulate = rng_.chance(0.5);
    const uint32_t acc = tc_.acc_rows;
    if (rng_.chance(0.25)) {
      mb.inner = uint16_t(rng_.pick(1, acc));
      mb.outer = 1;
    } else {
      mb.inner = uint16_t(rng_.pick(1, std::min<uint32_t>(acc, 12)));
      mb.outer =
          uint16_t(rng_.pick(1, std::max<uint32_t>(1, std::min<uint32_t>(4, acc / mb.inner))));
    }
    mb.inner_stride = uint8_t(mb.inner == 1 ? rng_.pick(0, 255) : rng_.pick(0, 3));
    mb.outer_stride = uint16_t(mb.outer == 1 ? rng_.pick(0, 0xFFFF) : rng_.pick(0, 16));
    mb.vmem_addr = 0;
    if (mb.last_vmem_row() >= vr_) mb.inner_stride = uint8_t(mb.inner == 1 ? 0 : 1);
    if (mb.last_vmem_row() >= vr_) mb.outer_stride = mb.inner;
    if (mb.last_vmem_row() >= vr_) return false;
    mb.vmem_addr = vrow(mb.last_vmem_row());
    mb.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, acc - uint32_t(mb.inner) * mb.outer));
    if (mb.switch_weights) {
      --credit_;
      active_ = true;
    }
    return true;
  }
  AccToVmem make_acc_to_vmem() {
    AccToVmem av;
    av.rows = rows_upto(std::min(tc_.acc_rows, vr_));
    av.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, tc_.acc_rows - av.rows));
    av.vmem_addr = vrow(av.rows - 1);
    return av;
  }
  Transpose make_transpose() {
    Transpose t;
    t.blocks = uint16_t(rng_.chance(0.6) ? 1 : rng_.pick(2, 4));
    t.src_row_stride = uint16_t(rng_.one_of<uint32_t>({1, 1, 1, 0, 2, 3}));
    t.src_stride = uint16_t(t.blocks == 1 ? rng_.pick(0, 0xFFFF) : rng_.pick(0, 2 * n_));
    t.dst_stride = uint16_t(t.blocks == 1 ? rng_.pick(0, 0xFFFF) : rng_.pick(0, 2 * n_));
    if (t.last_src_row(n_) >= vr_) t.src_row_stride = 1;
    if (t.last_src_row(n_) >= vr_ || t.last_dst_row(n_) >= vr_) t.blocks = 1;
    if (rng_.chance(0.3) && t.src_row_stride == 1) {  // in place
      t.dst_stride = t.src_stride;
      t.src = t.dst = vrow(t.last_src_row(n_));
      return t;
    }
    const uint64_t dspan = t.last_dst_row(n_);
    t.src = vrow(t.last_src_row(n_));
    t.dst = rng_.chance(0.3) ? vnear(t.src, dspan) : vrow(dspan);
    return t;
  }
  // The immediate of a binary vector func: shift counts, small or any integers, fp corners.
  uint32_t vector_imm(VecFunc f) {
    if (f == VecFunc::Shl || f == VecFunc::Shr || f == VecFunc::Sra)
      return uint32_t(rng_.pick(0, 40));
    if (uint8_t(f) >= 0x10 && uint8_t(f) < 0x20)
      return rng_.chance(0.5) ? uint32_t(int32_t(rng_.pick(0, 2000)) - 1000) : rng_.u32();
    return corner_value();
  }
  Vector make_vector() {
    Vector v;
    const VecFunc f = rng_.one_of(all_vec_funcs());
    v.func = uint8_t(f);
    if (is_unary_vec_func(v.func)) {
      v.bmode = BMode::RowA;
    } else if (f == VecFunc::Align) {
      v.bmode = BMode::Imm;
      v.b = rng_.chance(0.3) ? 0 : uint32_t(rng_.pick(1, n_ - 1));
    } else {
      v.bmode = BMode(rng_.pick(0, 3));
      if (v.bmode == BMode::Imm) v.b = vector_imm(f);
    }
    const uint64_t shape = rng_.pick(0, 9);
    v.inner = uint8_t(shape < 7   ? rng_.pick(1, 4)
                      : shape < 9 ? rng_.pick(5, 16)
                                  : rng_.pick(17, 255));
    v.outer = uint16_t(rng_.chance(0.6)   ? 1
                       : rng_.chance(0.9) ? rng_.pick(2, 4)
                                          : rng_.pick(5, 1023));
    auto inner_stride = [&]() {
      return uint8_t(v.inner == 1
                         ? rng_.pick(0, 15)
                         : rng_.one_of<uint32_t>({0, 1, 1, 1, 2, 3, uint32_t(rng_.pick(0, 15))}));
    };
    auto outer_stride = [&]() {
      return uint16_t(v.outer == 1 ? rng_.pick(0, 2047) : rng_.pick(0, 2 * uint32_t(v.inner) + 2));
    };
    v.a_inner_stride = inner_stride();
    v.dst_inner_stride = inner_stride();
    v.a_outer_stride = outer_stride();
    v.dst_outer_stride = outer_stride();
    fit_vector(v);
    return v;
  }
  // Bounding rows past the base of a vector's destination, A and B patterns.
  struct VectorSpans {
    uint64_t dst, a, b;
  };
  VectorSpans vector_spans(const Vector& v) const {
    Vector z = v;
    z.dst = z.a = 0;
    VectorSpans s{z.dst_row(v.outer - 1u, v.inner - 1u), z.a_row(v.outer - 1u, v.inner - 1u), 0};
    if (v.vec_func() == VecFunc::Align && v.b > 0) ++s.a;
    if (v.bmode == BMode::RowA) s.b = z.a_row(v.outer - 1u, v.inner - 1u);
    if (v.bmode == BMode::RowDst) s.b = z.dst_row(v.outer - 1u, v.inner - 1u);
    return s;
  }
  // Shrinks the strides until the patterns fit the window, then places the operands
  // (destination over or next to A or B in a share of cases).
  void fit_vector(Vector& v) {
    auto fits = [&]() {
      const VectorSpans s = vector_spans(v);
      return s.dst < vr_ && s.a < vr_ && s.b < vr_;
    };
    if (!fits()) {
      v.a_inner_stride = v.dst_inner_stride = uint8_t(v.inner * v.outer < vr_ / 2 ? 1 : 0);
      v.a_outer_stride = v.dst_outer_stride = uint16_t(v.a_inner_stride * v.inner);
    }
    if (!fits()) v.a_outer_stride = v.dst_outer_stride = 0;
    const VectorSpans s = vector_spans(v);
    v.a = vrow(s.a);
    v.dst = rng_.chance(0.3) ? vnear(v.a, s.dst) : vrow(s.dst);
    if (v.bmode == BMode::Imm || is_unary_vec_func(v.func)) return;
    const uint32_t near = v.bmode == BMode::RowDst ? v.dst : v.a + (v.bmode == BMode::RowA);
    v.b = rng_.chance(0.35) ? vnear(near, s.b) : vrow(s.b);
  }

  // One training instruction (weights: vector, the DMAs, weights and matmuls, the rest);
  // false when none of the enabled ones fits the current state.
  bool emit_train() {
    for (int tries = 0; tries < 8; ++tries) {
      const uint64_t k = rng_.pick(0, 99);
      const Opcode op = k < 34   ? Opcode::Vector
                        : k < 46 ? Opcode::ReadVmem
                        : k < 56 ? Opcode::WriteVmem
                        : k < 68 ? Opcode::LoadWeights
                        : k < 84 ? Opcode::MatmulBf16
                        : k < 92 ? Opcode::Transpose
                                 : Opcode::AccToVmem;
      if (op_on(op) && emit_train_op(op)) return true;
    }
    return false;
  }
  // One valid training instruction of opcode `op` (one of emit_train's seven); false when none
  // fits the weight state (no room for a tile, no bf16 tile for a matmul_bf16).
  bool emit_train_op(Opcode op) {
    auto& prog = tc_.program;
    switch (op) {
      case Opcode::Vector:
        prog.push_back(make_vector());
        return true;
      case Opcode::ReadVmem:
        prog.push_back(ReadVmem{make_vdma(false)});
        return true;
      case Opcode::WriteVmem:
        prog.push_back(WriteVmem{make_vdma(true)});
        return true;
      case Opcode::LoadWeights: {
        const uint32_t room =
            tc_.params.wfifo_tiles + 2 - uint32_t(tile_state().pending_bf16.size());
        if (room == 0) return false;
        prog.push_back(make_load_weights(uint32_t(rng_.pick(1, std::min(room, 3u)))));
        return true;
      }
      case Opcode::MatmulBf16: {
        MatmulBf16 mb;
        if (!make_matmul_bf16(mb)) return false;
        prog.push_back(mb);
        return true;
      }
      case Opcode::Transpose:
        prog.push_back(make_transpose());
        return true;
      case Opcode::AccToVmem:
        prog.push_back(make_acc_to_vmem());
        return true;
      default:
        throw std::invalid_argument("emit_train_op: not a training opcode");
    }
  }

 public:
  // ---- TrainDraw (random_program.h): the training drawing for a program built elsewhere
  void use_windows(const ChipParams& params, uint32_t vmem_base, uint32_t vmem_rows,
                   uint32_t acc_base, uint32_t acc_rows) {
    tc_.params = params;
    n_ = params.N;
    vb_ = tc_.vmem_base = vmem_base;
    vr_ = tc_.vmem_rows = vmem_rows;
    tc_.acc_base = acc_base;
    tc_.acc_rows = acc_rows;
  }
  std::optional<Instruction> draw(Opcode op, const std::vector<Instruction>& program) {
    tc_.program = program;
    credit_ = uint32_t(tile_state().pending_bf16.size());
    if (!emit_train_op(op)) return std::nullopt;
    return tc_.program.back();
  }
  std::vector<uint32_t> draw_float_words(uint32_t words) { return float_words(words); }

 private:
  // ---- static faults of the training instructions (each sets expect_error / expect_pc)

  // Matmuls (of each tile's type) that make every pending tile active, so the weight state is
  // known: nothing pending, the last one active.
  void drain_tiles() {
    auto& prog = tc_.program;
    const TileState t = tile_state();
    for (const bool bf16 : t.pending_bf16) {
      const uint16_t rows = uint16_t(rng_.pick(1, 4));
      if (bf16) {
        MatmulBf16 mb;
        mb.switch_weights = true;
        mb.vmem_addr = uint16_t(vb_);
        mb.acc_addr = uint16_t(tc_.acc_base);
        mb.inner = rows;
        prog.push_back(mb);
      } else {
        Matmul mm;
        mm.switch_weights = true;
        mm.ub_addr = tc_.ub_base;
        mm.acc_addr = uint16_t(tc_.acc_base);
        mm.inner = rows;
        prog.push_back(mm);
      }
    }
    credit_ = 0;
    active_ = active_ || !t.pending_bf16.empty();
  }
  // A training instruction whose last VMEM row is `over` rows past the end of VMEM (through
  // whichever of its patterns `which` picks); ERR_VMEM_RANGE.
  Instruction vmem_range_fault(Opcode op, uint32_t over) {
    const uint32_t end = tc_.params.vmem_rows + over;  // the last row touched
    auto base = [end](uint64_t span) {
      return uint16_t(std::min<uint64_t>(0xFFFF, end - std::min<uint64_t>(span, end)));
    };
    switch (op) {
      case Opcode::ReadVmem:
      case Opcode::WriteVmem: {
        VmemDma d = make_vdma(op == Opcode::WriteVmem);
        d.vmem_addr = base(d.rows - 1);
        if (op == Opcode::ReadVmem) return ReadVmem{d};
        return WriteVmem{d};
      }
      case Opcode::LoadWeights: {
        LoadWeights lw = make_load_weights(1);
        --credit_;  // faults: pushes nothing
        lw.vmem_addr = 0;
        lw.vmem_addr = base(lw.last_row());
        return lw;
      }
      case Opcode::MatmulBf16: {
        MatmulBf16 mb;
        mb.acc_addr = uint16_t(tc_.acc_base);
        mb.inner = uint16_t(rng_.pick(1, std::min<uint32_t>(8, tc_.acc_rows)));
        mb.inner_stride = uint8_t(rng_.pick(0, 255));
        mb.outer = 1;
        mb.outer_stride = uint16_t(rng_.pick(0, 0xFFFF));
        mb.vmem_addr = 0;
        mb.vmem_addr = base(mb.last_vmem_row());
        return mb;
      }
      case Opcode::AccToVmem: {
        AccToVmem av = make_acc_to_vmem();
        av.vmem_addr = base(av.rows - 1);
        return av;
      }
      case Opcode::Transpose: {
        Transpose t = make_transpose();
        const uint64_t ls = t.last_src_row(n_) - t.src, ld = t.last_dst_row(n_) - t.dst;
        if (rng_.chance(0.5)) {
          t.src = base(ls);
        } else {
          t.dst = base(ld);
        }
        return t;
      }
      default: {
        Vector v = make_vector();
        const VectorSpans s = vector_spans(v);
        const bool has_b = v.bmode != BMode::Imm && !is_unary_vec_func(v.func);
        switch (rng_.pick(0, has_b ? 2 : 1)) {
          case 0:
            v.dst = base(s.dst);
            break;
          case 1:
            v.a = base(s.a);
            break;
          default:  // B: bmode 0-2, up to the whole 32-bit field
            v.b = rng_.chance(0.2) ? uint32_t(rng_.pick(0x10000, 0xFFFFFFFF))
                                   : uint32_t(end - std::min<uint64_t>(s.b, end));
        }
        return v;
      }
    }
  }
  // An enabled training opcode from `ops` (train_ops bits); false if none.
  bool pick_op(std::vector<Opcode> ops, Opcode& op) {
    ops.erase(std::remove_if(ops.begin(), ops.end(), [this](Opcode o) { return !op_on(o); }),
              ops.end());
    if (ops.empty()) return false;
    op = rng_.one_of(ops);
    return true;
  }
  // A zero count, a rows field past N, a func that is not in the table, B on a unary func,
  // align without an immediate or with one >= N: ERR_FIELD.
  bool field_fault(Instruction& bad) {
    Opcode op;
    if (!pick_op({Opcode::ReadVmem, Opcode::WriteVmem, Opcode::LoadWeights, Opcode::MatmulBf16,
                  Opcode::AccToVmem, Opcode::Transpose, Opcode::Vector, Opcode::Vector},
                 op))
      return false;
    switch (op) {
      case Opcode::ReadVmem:
      case Opcode::WriteVmem: {
        VmemDma d = make_vdma(op == Opcode::WriteVmem);
        d.rows = 0;
        bad = op == Opcode::ReadVmem ? Instruction(ReadVmem{d}) : Instruction(WriteVmem{d});
        return true;
      }
      case Opcode::LoadWeights: {
        LoadWeights lw = make_load_weights(1);
        --credit_;
        switch (rng_.pick(0, 2)) {
          case 0:
            lw.tiles = 0;
            break;
          case 1:
            lw.rows = 0;
            break;
          default:
            lw.rows = uint16_t(rng_.pick(n_ + 1, 511));
        }
        bad = lw;
        return true;
      }
      case Opcode::MatmulBf16: {
        MatmulBf16 mb;
        mb.vmem_addr = uint16_t(vb_);
        mb.acc_addr = uint16_t(tc_.acc_base);
        mb.switch_weights = rng_.chance(0.5);
        (rng_.chance(0.5) ? mb.inner : mb.outer) = 0;
        bad = mb;
        return true;
      }
      case Opcode::AccToVmem: {
        AccToVmem av = make_acc_to_vmem();
        av.rows = 0;
        bad = av;
        return true;
      }
      case Opcode::Transpose: {
        Transpose t = make_transpose();
        t.blocks = 0;
        bad = t;
        return true;
      }
      default: {
        Vector v = make_vector();
        switch (rng_.pick(0, 5)) {
          case 0:
            if (rng_.chance(0.5)) {
              v.inner = 0;
            } else {
              v.outer = 0;
            }
            break;
          case 1: {  // not a func
            uint8_t f;
            do f = uint8_t(rng_.pick(0, 63));
            while (is_vec_func(f));
            v.func = f;
            break;
          }
          case 2:  // a unary func with bmode != 0 or b != 0
          case 3:
            v.func = uint8_t(rng_.one_of<VecFunc>({VecFunc::F2I, VecFunc::I2F, VecFunc::Bf16,
                                                   VecFunc::LSum, VecFunc::LMax, VecFunc::LMin}));
            if (rng_.chance(0.5)) v.bmode = BMode(rng_.pick(1, 3));
            v.b =
                rng_.chance(0.5) || v.bmode == BMode::RowA ? uint32_t(rng_.pick(1, 0xFFFFFFFF)) : 0;
            break;
          case 4:  // align on rows
            v.func = uint8_t(VecFunc::Align);
            v.bmode = BMode(rng_.pick(0, 2));
            v.b = vrow(0);
            break;
          default:  // align by N or more
            v.func = uint8_t(VecFunc::Align);
            v.bmode = BMode::Imm;
            v.b = rng_.chance(0.7) ? uint32_t(rng_.pick(n_, 2 * n_)) : rng_.u32() | 0x80000000u;
        }
        bad = v;
        return true;
      }
    }
  }
  // read_vmem / write_vmem with a host address or stride that is not a multiple of 16
  // (ERR_ALIGN), or a host range that wraps past 2^32, leaves the DMA windows or (write_vmem)
  // reaches into the command buffer (ERR_HOST_RANGE).
  bool host_fault(bool align, Instruction& bad, ErrorCode& code) {
    Opcode op;
    if (!pick_op({Opcode::ReadVmem, Opcode::WriteVmem}, op)) return false;
    const bool write = op == Opcode::WriteVmem;
    VmemDma d = make_vdma(write);
    code = align ? ErrorCode::ERR_ALIGN : ErrorCode::ERR_HOST_RANGE;
    if (align) {
      if (rng_.chance(0.6) || d.rows == 1) {
        d.host_addr += uint32_t(rng_.pick(1, 15));
      } else {
        d.host_stride = d.host_stride + uint32_t(rng_.pick(1, 15));
      }
    } else {
      const uint64_t k = rng_.pick(0, 2);
      if (k == 0 && windows_on_) {  // past the end of the results window, or the spare memory
        d.host_addr = rng_.chance(0.5) ? kSpareBase : kOutBase + kOutSize - 16;
        d.host_stride = 0;
        d.rows = std::max<uint32_t>(d.rows, 2);
      } else if (k == 1 && write) {  // over this program's command buffer (up to its halt)
        d.host_addr = kCmdBase + 16 * uint32_t(rng_.pick(0, tc_.program.size() + 1));
      } else if (rng_.chance(0.5)) {  // wraps past 2^32: more than 64 bytes from 2^32 - 64
        d.host_addr = 0xFFFF'FFF0u - 16 * uint32_t(rng_.pick(0, 3));
        d.host_stride = 0;
        d.rows = std::max<uint32_t>(d.rows, 9);
      } else {
        d.host_addr = 0xFFFF'FFF0u - 16 * uint32_t(rng_.pick(0, 3));
        d.host_stride = 16 * uint32_t(rng_.pick(4, 8));
        d.rows = std::max<uint32_t>(d.rows, 2);
      }
      d.rows = std::min(d.rows, vr_);
      d.vmem_addr = uint16_t(std::min<uint32_t>(d.vmem_addr, vb_ + vr_ - d.rows));
    }
    bad = write ? Instruction(WriteVmem{d}) : Instruction(ReadVmem{d});
    return true;
  }
  // matmul_bf16 or acc_to_vmem past the accumulators (ERR_ACC_RANGE).
  bool acc_fault(Instruction& bad) {
    Opcode op;
    if (!pick_op({Opcode::MatmulBf16, Opcode::AccToVmem}, op)) return false;
    const uint32_t acc_rows = tc_.params.acc_rows;
    if (op == Opcode::AccToVmem) {
      AccToVmem av = make_acc_to_vmem();
      av.acc_addr =
          uint16_t(std::min<uint64_t>(0xFFFF, rng_.pick(acc_rows - av.rows + 1, acc_rows + 2)));
      if (rng_.chance(0.2)) av.acc_addr = uint16_t(rng_.pick(acc_rows, 0xFFFF));
      bad = av;
      return true;
    }
    MatmulBf16 mb;
    mb.vmem_addr = uint16_t(vb_);
    mb.inner = uint16_t(rng_.pick(1, 64));
    mb.outer = uint16_t(rng_.pick(1, 64));
    mb.inner_stride = 0;
    mb.outer_stride = 0;
    const uint32_t rows = uint32_t(mb.inner) * mb.outer;
    mb.acc_addr = uint16_t(std::min<uint64_t>(
        0xFFFF, rng_.pick(rows > acc_rows ? 0 : acc_rows - rows + 1, acc_rows + 3)));
    if (rng_.chance(0.2)) mb.acc_addr = uint16_t(rng_.pick(acc_rows, 0xFFFF));
    mb.switch_weights = rng_.chance(0.5);
    bad = mb;
    return true;
  }
  // A matmul of one type whose tile is of the other (ERR_WEIGHT_TYPE): a tile of the wrong
  // type pushed behind the drained FIFO, then a switch; or, when the active tile already is
  // of the other type, a matmul without switch.
  bool weight_type_fault(Instruction& bad) {
    const bool bf16_mm =
        op_on(Opcode::MatmulBf16) && (!op_on(Opcode::LoadWeights) || rng_.chance(0.5));
    if (!bf16_mm && !op_on(Opcode::LoadWeights)) return false;
    drain_tiles();
    const TileState t = tile_state();
    const bool stay = t.active && t.active_bf16 != bf16_mm && rng_.chance(0.5);
    if (!stay) {
      if (bf16_mm) {
        tc_.program.push_back(make_read_weights_of(1));
      } else {
        tc_.program.push_back(make_load_weights(1));
      }
    }
    if (bf16_mm) {
      MatmulBf16 mb;
      if (!make_matmul_shape(mb)) return false;
      mb.switch_weights = !stay;
      bad = mb;
    } else {
      Matmul mm;
      mm.ub_addr = tc_.ub_base;
      mm.acc_addr = uint16_t(tc_.acc_base);
      mm.inner = uint16_t(rng_.pick(1, 4));
      mm.switch_weights = !stay;
      bad = mm;
    }
    return true;
  }
  // The fields of a valid matmul_bf16 apart from the weights (for weight faults).
  bool make_matmul_shape(MatmulBf16& mb) {
    mb.accumulate = rng_.chance(0.5);
    mb.inner = uint16_t(rng_.pick(1, std::min<uint32_t>(tc_.acc_rows, 8)));
    mb.inner_stride = uint8_t(rng_.pick(0, 2));
    mb.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, tc_.acc_rows - mb.inner));
    mb.vmem_addr = vrow(mb.last_vmem_row() - mb.vmem_addr);
    return true;
  }
  // The fields of a valid instruction of opcode `op` (the weight state aside; nothing counted).
  Instruction any_train_instr(Opcode op) {
    switch (op) {
      case Opcode::ReadVmem:
        return ReadVmem{make_vdma(false)};
      case Opcode::WriteVmem:
        return WriteVmem{make_vdma(true)};
      case Opcode::LoadWeights: {
        LoadWeights lw = make_load_weights(1);
        --credit_;
        return lw;
      }
      case Opcode::MatmulBf16: {
        MatmulBf16 mb;
        make_matmul_shape(mb);
        mb.switch_weights = rng_.chance(0.5);
        return mb;
      }
      case Opcode::AccToVmem:
        return make_acc_to_vmem();
      case Opcode::Transpose:
        return make_transpose();
      default:
        return make_vector();
    }
  }
  // One static fault of a training instruction; false when the enabled opcodes have none of
  // the kind drawn (the int8 faults are used then).
  // A link instruction on a chip alone (every link down): its static checks in isa.md's order,
  // ERR_RESERVED, ERR_FIELD, ERR_VMEM_RANGE, then ERR_ICI_LINK (a link below IciLinks that is
  // not connected, or one past IciLinks).
  void emit_ici_fault() {
    auto& prog = tc_.program;
    const ChipParams& p = tc_.params;
    const bool recv = rng_.chance(0.5);
    const uint32_t link =
        uint32_t(rng_.chance(0.8) ? rng_.pick(0, p.ici_links - 1) : rng_.pick(p.ici_links, 15));
    uint32_t rows = uint32_t(rng_.pick(1, vr_));
    uint32_t vmem = vb_ + uint32_t(rng_.pick(0, vr_ - rows));
    uint8_t reduce = recv ? uint8_t(rng_.pick(0, 2)) : 0;
    ErrorCode code = ErrorCode::ERR_ICI_LINK;
    std::string what = "link not connected";
    const uint64_t k = rng_.pick(0, 5);
    if (k == 0 || (k == 1 && !recv)) {
      rows = 0;
      code = ErrorCode::ERR_FIELD;
      what = "zero rows";
    } else if (k == 1) {
      reduce = 3;
      code = ErrorCode::ERR_FIELD;
      what = "reduce = 3";
    } else if (k == 2) {
      vmem = p.vmem_rows - uint32_t(rng_.pick(1, 2));
      rows = std::max<uint32_t>(rows, 3);
      code = ErrorCode::ERR_VMEM_RANGE;
      what = "VMEM range";
    }
    Instruction in = recv ? Instruction{IciRecv{uint8_t(link), reduce, uint16_t(vmem), rows}}
                          : Instruction{IciSend{uint8_t(link), uint16_t(vmem), rows}};
    RawInstruction raw{encode(in)};
    if (k == 3) {  // a reserved bit (and perhaps a bad field as well: reserved comes first)
      const auto bits = reserved_bits(recv ? Opcode::IciRecv : Opcode::IciSend);
      const unsigned bit = rng_.one_of(bits);
      raw.bytes[bit / 8] |= uint8_t(1u << (bit % 8));
      code = ErrorCode::ERR_RESERVED;
      what = "reserved bit " + std::to_string(bit) + " set";
    }
    tc_.expect_error = code;
    tc_.expect_pc = prog.size();
    tc_.fault = what + " at index " + std::to_string(prog.size()) + ": " + disassemble(in);
    prog.push_back(raw);
  }

  bool emit_train_fault() {
    auto& prog = tc_.program;
    Instruction bad;
    ErrorCode code = ErrorCode::ERR_NONE;
    std::string what;
    switch (rng_.pick(0, 12)) {
      case 0:
      case 1:
        if (!field_fault(bad)) return false;
        code = ErrorCode::ERR_FIELD;
        what = "bad field";
        break;
      case 2:
        if (!host_fault(true, bad, code)) return false;
        what = "misaligned host address or stride";
        break;
      case 3:
        if (!host_fault(false, bad, code)) return false;
        what = "host range";
        break;
      case 4:
        if (!acc_fault(bad)) return false;
        code = ErrorCode::ERR_ACC_RANGE;
        what = "ACC range";
        break;
      case 5:
      case 6: {
        Opcode op;
        if (!pick_op({Opcode::ReadVmem, Opcode::WriteVmem, Opcode::LoadWeights, Opcode::MatmulBf16,
                      Opcode::AccToVmem, Opcode::Transpose, Opcode::Vector, Opcode::Vector},
                     op))
          return false;
        bad = vmem_range_fault(op,
                               uint32_t(rng_.chance(0.8) ? rng_.pick(0, 2) : rng_.pick(3, 40000)));
        code = ErrorCode::ERR_VMEM_RANGE;
        what = "VMEM range";
        break;
      }
      case 7:
        if (!weight_type_fault(bad)) return false;
        code = ErrorCode::ERR_WEIGHT_TYPE;
        what = "weight type";
        break;
      case 8: {  // load_weights past the FIFO's room
        if (!op_on(Opcode::LoadWeights)) return false;
        const uint32_t room =
            tc_.params.wfifo_tiles + 2 - uint32_t(tile_state().pending_bf16.size());
        LoadWeights lw = make_load_weights(1);
        --credit_;
        lw.tiles =
            uint16_t(rng_.chance(0.8) ? room + rng_.pick(1, 3) : rng_.pick(room + 1, 0xFFFF));
        lw.tile_stride = 0;  // (the VMEM range check comes first)
        bad = lw;
        code = ErrorCode::ERR_WEIGHT_OVERFLOW;
        what = "weight overflow";
        break;
      }
      case 9: {  // matmul_bf16 switch with every pushed tile used
        if (!op_on(Opcode::MatmulBf16)) return false;
        drain_tiles();
        MatmulBf16 mb;
        make_matmul_shape(mb);
        mb.switch_weights = true;
        bad = mb;
        code = ErrorCode::ERR_NO_WEIGHTS;
        what = "no weights";
        break;
      }
      case 10:
      case 11: {  // a reserved bit of a training instruction (vector has none)
        const uint8_t off = uint8_t(~opt_.train_ops & ChipParams::kAllTrainingOps);
        if (off != 0 && rng_.chance(0.3)) {  // an opcode this chip does not execute
          unsigned k;
          do k = unsigned(rng_.pick(0, 6));
          while (((off >> k) & 1u) == 0);
          bad = RawInstruction{encode(any_train_instr(Opcode(0x08 + k)))};
          code = ErrorCode::ERR_OPCODE;
          what = "training opcode not in train_ops";
          break;
        }
        Opcode op;
        if (!pick_op({Opcode::ReadVmem, Opcode::WriteVmem, Opcode::LoadWeights, Opcode::MatmulBf16,
                      Opcode::AccToVmem, Opcode::Transpose},
                     op))
          return false;
        RawInstruction raw{encode(any_train_instr(op))};
        const auto bits = reserved_bits(op);
        const unsigned bit = rng_.one_of(bits);
        raw.bytes[bit / 8] |= uint8_t(1u << (bit % 8));
        if (rng_.chance(0.3)) {  // and another one
          const unsigned b2 = rng_.one_of(bits);
          raw.bytes[b2 / 8] |= uint8_t(1u << (b2 % 8));
        }
        bad = raw;
        code = ErrorCode::ERR_RESERVED;
        what = "reserved bit " + std::to_string(bit) + " set";
        break;
      }
      default: {  // several faults in one word: the lowest code wins
        if (!op_on(Opcode::ReadVmem)) return false;
        VmemDma d = make_vdma(false);
        d.host_addr = kFloatBase;
        d.host_stride = 0;
        d.vmem_addr = uint16_t(tc_.params.vmem_rows - 1);
        d.rows = std::max<uint32_t>(d.rows, 9);  // ERR_VMEM_RANGE
        code = ErrorCode::ERR_VMEM_RANGE;
        if (rng_.chance(0.5)) {
          d.host_addr = 0xFFFF'FFF0u;  // ERR_HOST_RANGE (9 rows of 8 bytes or more wrap)
          code = ErrorCode::ERR_HOST_RANGE;
        }
        if (rng_.chance(0.5)) {
          d.host_addr += uint32_t(rng_.pick(1, 15));  // ERR_ALIGN
          code = ErrorCode::ERR_ALIGN;
        }
        if (rng_.chance(0.3)) {
          d.rows = 0;  // ERR_FIELD
          code = ErrorCode::ERR_FIELD;
        }
        bad = ReadVmem{d};
        what = "several faults";
      }
    }
    tc_.expect_error = code;
    tc_.expect_pc = prog.size();
    tc_.fault = what + " at index " + std::to_string(prog.size()) + ": " + disassemble(bad);
    prog.push_back(bad);
    return true;
  }

  // ---- depthwise configuration (GenOptions::dw_width > 0)

  // A valid dwconv inside the UB and ACC windows: kernel 1..3 x 1..3, stride 1 or 2, random
  // pads, an image of up to 8 x 12 pixels (line stride W..W+3, any 16-bit stride for one line).
  DwConv make_dwconv() {
    DwConv d;
    for (int attempt = 0; attempt < 64; ++attempt) {
      d.kernel_h = uint8_t(rng_.pick(1, 3));
      d.kernel_w = uint8_t(rng_.pick(1, 3));
      d.stride2 = rng_.chance(0.4);
      d.pad_top = uint8_t(rng_.pick(0, d.kernel_h - 1u));
      d.pad_bottom = uint8_t(rng_.pick(0, d.kernel_h - 1u));
      d.pad_left = uint8_t(rng_.pick(0, d.kernel_w - 1u));
      d.pad_right = uint8_t(rng_.pick(0, d.kernel_w - 1u));
      d.width = uint16_t(rng_.pick(1, std::min<uint32_t>(12, tc_.ub_rows / 4)));
      d.height = uint16_t(rng_.pick(1, 8));
      d.ub_stride = uint16_t(d.height == 1 ? rng_.pick(0, 0xFFFF) : d.width + rng_.pick(0, 3));
      if (d.padded_height() < d.kernel_h || d.padded_width() < d.kernel_w) continue;
      const uint64_t span = d.last_input_row() - d.ub_addr + 1;
      if (span > tc_.ub_rows || d.output_pixels() > tc_.acc_rows) continue;
      d.ub_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - span));
      d.w_addr = tc_.ub_base + uint32_t(rng_.pick(0, tc_.ub_rows - d.taps() - 1));
      d.acc_addr = uint16_t(tc_.acc_base + rng_.pick(0, tc_.acc_rows - d.output_pixels()));
      d.accumulate = rng_.chance(0.5);
      d.a_unsigned = rng_.chance(0.5);
      d.w_unsigned = rng_.chance(0.5);
      return d;
    }
    d = DwConv{};  // 1 x 1 of one pixel
    d.ub_addr = d.w_addr = tc_.ub_base;
    d.acc_addr = uint16_t(tc_.acc_base);
    return d;
  }

  // One static fault of dwconv: ERR_FIELD (zero size or kernel, pad >= kernel, image smaller
  // than the kernel), ERR_UB_RANGE (input or weight rows), ERR_ACC_RANGE. (dwconv has no
  // reserved bits; ERR_OPCODE on a chip without the unit is the unknown-opcode case.)
  void emit_dw_fault() {
    auto& prog = tc_.program;
    const ChipParams& p = tc_.params;
    DwConv d = make_dwconv();
    ErrorCode code = ErrorCode::ERR_FIELD;
    std::string what;
    switch (rng_.pick(0, 6)) {
      case 0:
        (rng_.chance(0.5) ? d.width : d.height) = 0;
        what = "zero width or height";
        break;
      case 1:
        (rng_.chance(0.5) ? d.kernel_h : d.kernel_w) = 0;
        what = "zero kernel";
        break;
      case 2:
        d.kernel_h = uint8_t(rng_.pick(1, 2));
        d.pad_bottom = d.kernel_h;
        what = "pad_bottom >= kernel_h";
        break;
      case 3:
        d.kernel_w = 3;
        d.width = 1;
        d.pad_left = d.pad_right = 0;
        what = "image narrower than the kernel";
        break;
      case 4:
        d.ub_addr = uint32_t(rng_.pick(p.ub_rows - d.width, p.ub_rows + 100));
        d.ub_stride = uint16_t(rng_.pick(1, 0xFFFF));
        d.height = uint16_t(std::max<uint32_t>(d.height, 2));
        if (d.padded_height() < d.kernel_h) d.height = d.kernel_h;
        code = ErrorCode::ERR_UB_RANGE;
        what = "input rows past UbRows";
        break;
      case 5:
        d.w_addr = uint32_t(rng_.pick(p.ub_rows - d.taps(), (1u << 24) - 1));
        code = ErrorCode::ERR_UB_RANGE;
        what = "weight rows past UbRows";
        break;
      default:
        d.acc_addr = uint16_t(rng_.pick(p.acc_rows - d.output_pixels() + 1, 0xFFFF));
        code = ErrorCode::ERR_ACC_RANGE;
        what = "output rows past AccRows";
        break;
    }
    tc_.expect_error = code;
    tc_.expect_pc = prog.size();
    tc_.fault = what + " at index " + std::to_string(prog.size()) + ": " + disassemble(d);
    prog.push_back(d);
  }

  Rng rng_;
  Rng side_;  // emit_younger_read_fault()
  Rng pair_;  // emit_error_pair()
  GenOptions opt_;
  TestCase tc_;
  uint32_t n_ = 16;
  uint32_t nslots_ = 1;
  uint32_t credit_ = 0;  // tiles pushed, not yet made active
  bool active_ = false;
  bool windows_on_ = false;
  bool axi_fetch_fault_ = false;
  // Training configuration (GenOptions::vmem_rows > 0): the VMEM window, and an AXI fault of
  // read_vmem / write_vmem (no younger error pair follows it).
  bool train_ = false;
  bool dw_ = false;    // GenOptions::dw_width > 0
  bool long_ = false;  // GenOptions::long_mix
  uint32_t vb_ = 0, vr_ = 0;
  bool no_pair_ = false;
  static constexpr uint32_t quant_off_ = 0;  // slots at the start of kData (<= 16 * 12 * 16 B)
};

bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) {
  return a < b + blen && b < a + alen;
}

// Host memory with ranges that fail every access (SLVERR on the chip).
class FaultyMemory : public RegionMemory {
 public:
  std::vector<ByteRange> bad;
  bool read(uint64_t addr, size_t len, uint8_t* dst) override {
    for (const auto& r : bad)
      if (overlaps(addr, len, r.base, r.size)) return false;
    return RegionMemory::read(addr, len, dst);
  }
  bool write(uint64_t addr, size_t len, const uint8_t* src) override {
    for (const auto& r : bad)
      if (overlaps(addr, len, r.base, r.size)) return false;
    return RegionMemory::write(addr, len, src);
  }
};

std::string first_byte_difference(const char* region, uint32_t base, uint32_t n,
                                  const std::vector<uint8_t>& chip,
                                  const std::vector<uint8_t>& golden) {
  if (chip.size() != golden.size()) return std::string(region) + ": sizes differ";
  for (size_t i = 0; i < chip.size(); ++i) {
    if (chip[i] != golden[i]) {
      size_t count = 0;
      for (size_t j = i; j < chip.size(); ++j) count += chip[j] != golden[j];
      std::ostringstream s;
      s << region << " host byte " << hex(base + i) << " (row " << i / n << ", column " << i % n
        << " of the region): chip " << int(chip[i]) << ", golden " << int(golden[i]) << " ("
        << count << " bytes differ)";
      return s.str();
    }
  }
  return {};
}

}  // namespace

const char* to_string(CaseKind kind) {
  switch (kind) {
    case CaseKind::kValid:
      return "valid";
    case CaseKind::kStaticFault:
      return "static-fault";
    case CaseKind::kAxiFault:
      return "axi-fault";
    case CaseKind::kNoHalt:
      return "no-halt";
  }
  return "?";
}

TestCase generate_program(uint64_t seed, const GenOptions& options) {
  return Generator(seed, options).make();
}

struct TrainDraw::Impl {
  Generator gen;
  uint32_t n;
  Impl(uint64_t seed, const GenOptions& opt) : gen(seed, opt), n(opt.n) {}
};

TrainDraw::TrainDraw(uint64_t seed, const ChipParams& params, uint32_t vmem_base,
                     uint32_t vmem_rows, uint32_t acc_base, uint32_t acc_rows) {
  if (params.vmem_rows == 0 || vmem_rows == 0 || acc_rows == 0 ||
      uint64_t{vmem_base} + vmem_rows > params.vmem_rows ||
      uint64_t{acc_base} + acc_rows > params.acc_rows || vmem_rows < 2 * params.N) {
    throw std::invalid_argument(
        "TrainDraw: the VMEM window (>= 2N rows) and the ACC window "
        "must lie inside the chip's VMEM and accumulators");
  }
  GenOptions opt;
  opt.n = params.N;
  opt.vmem_rows = std::min<uint32_t>(params.vmem_rows, 65000);
  opt.ici_links = params.ici_links;
  impl_ = std::make_unique<Impl>(seed, opt);
  impl_->gen.use_windows(params, vmem_base, vmem_rows, acc_base, acc_rows);
}
TrainDraw::~TrainDraw() = default;

std::optional<Instruction> TrainDraw::draw(Opcode op, const std::vector<Instruction>& program) {
  return impl_->gen.draw(op, program);
}

std::vector<uint8_t> TrainDraw::float_rows(uint32_t rows) {
  const std::vector<uint32_t> w = impl_->gen.draw_float_words(rows * impl_->n);
  std::vector<uint8_t> bytes(4 * w.size());
  for (size_t i = 0; i < w.size(); ++i) put32(bytes, i, w[i]);
  return bytes;
}

std::string listing(const std::vector<Instruction>& program) {
  std::string text;
  for (size_t i = 0; i < program.size(); ++i) {
    char idx[32];
    std::snprintf(idx, sizeof idx, "%4zu: ", i);
    text += idx + disassemble(program[i]) + "\n";
  }
  return text;
}

std::string describe(const TestCase& tc) {
  std::ostringstream s;
  s << "seed " << tc.seed << ", N = " << tc.params.N << ", " << to_string(tc.kind);
  if (!tc.fault.empty()) s << " (" << tc.fault << ")";
  s << "\n  memory latency " << tc.config.mem_latency << " cycles, "
    << tc.config.mem_bytes_per_cycle << " bytes/cycle, backpressure " << tc.config.backpressure
    << " (seed " << tc.config.backpressure_seed << ")\n";
  s << "  UB window rows " << tc.ub_base << ".." << tc.ub_base + tc.ub_rows - 1
    << ", ACC window rows " << tc.acc_base << ".." << tc.acc_base + tc.acc_rows - 1
    << ", prologue = instructions 0.." << tc.prologue_length - 1 << "\n";
  if (tc.vmem_rows > 0) {
    s << "  training configuration: VMEM " << tc.params.vmem_rows << " rows, window rows "
      << tc.vmem_base << ".." << tc.vmem_base + tc.vmem_rows - 1;
    if (tc.expect_error != ErrorCode::ERR_NONE)
      s << ", planted " << error_name(tc.expect_error) << " at index " << tc.expect_pc;
    s << "\n";
  }
  for (int i = 0; i < kNumDmaWindows; ++i) {
    if (tc.config.windows[size_t(i)].size) {
      s << "  DMA window " << i << ": " << hex(tc.config.windows[size_t(i)].base) << " + "
        << hex(tc.config.windows[size_t(i)].size) << "\n";
    }
  }
  for (const auto& r : tc.config.slverr)
    s << "  SLVERR: " << hex(r.base) << " + " << r.size << "\n";
  s << listing(tc.program);
  return s.str();
}

// ---- golden backend

struct GoldenBackend::Impl {
  FaultyMemory mem;
  bool high_mapped = false;  // kHigh, mapped at the first RunConfig::high_region run
  std::unique_ptr<GoldenModel> model;
};

GoldenBackend::GoldenBackend(const ChipParams& params) : impl_(std::make_unique<Impl>()) {
  impl_->mem.add_region(kCmdBase, kCmdSize);
  impl_->mem.add_region(kDataBase, kDataSize);
  impl_->mem.add_region(kOutBase, kOutSize);
  impl_->mem.add_region(kSpareBase, kSpareSize);
  impl_->mem.add_region(kDumpBase, kDumpSize);
  impl_->mem.add_region(kDumpVmemBase, kDumpVmemSize);
  impl_->model = std::make_unique<GoldenModel>(impl_->mem, params);
}
GoldenBackend::~GoldenBackend() = default;
GoldenModel& GoldenBackend::model() { return *impl_->model; }
void GoldenBackend::add_region(uint32_t base, uint32_t size) { impl_->mem.add_region(base, size); }

Outcome GoldenBackend::run(const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& memory,
                           const RunConfig& config, const std::vector<Instruction>& program) {
  auto& mem = impl_->mem;
  mem.bad.clear();
  mem.load(kDataBase, std::vector<uint8_t>(kDataSize, 0));
  mem.load(kOutBase, std::vector<uint8_t>(kOutSize, 0));
  mem.load(kSpareBase, std::vector<uint8_t>(kSpareSize, 0));
  mem.load(kDumpBase, std::vector<uint8_t>(kDumpSize, 0));
  if (config.vmem_dump) mem.load(kDumpVmemBase, std::vector<uint8_t>(kDumpVmemSize, 0));
  if (config.high_region && !impl_->high_mapped) {
    mem.add_region(kHighBase, kHighSize);
    impl_->high_mapped = true;
  }
  if (config.high_region) mem.load(kHighBase, std::vector<uint8_t>(kHighSize, 0));
  for (const auto& [addr, bytes] : memory) mem.load(addr, bytes);
  mem.load(kCmdBase, encode_program(program));
  mem.bad = config.slverr;
  auto& m = *impl_->model;
  m.set_dma_windows(config.windows);
  RunResult r = m.run(kCmdBase, uint32_t(program.size()));
  mem.bad.clear();
  last_message_ = r.message;
  Outcome o;
  o.done = r.done();
  o.err_code = uint32_t(r.error);
  o.err_pc = r.done() ? 0 : r.err_pc;
  o.retired = r.retired;
  o.counters = program_counters(program, r.retired, impl_->model->params().N);
  o.data = mem.dump(kDataBase, kDataSize);
  o.out = mem.dump(kOutBase, kOutSize);
  o.dump = mem.dump(kDumpBase, kDumpSize);
  if (config.vmem_dump) o.vmem = mem.dump(kDumpVmemBase, kDumpVmemSize);
  if (config.high_region) o.high = mem.dump(kHighBase, kHighSize);
  return o;
}

ProgramCounters program_counters(const std::vector<Instruction>& program, uint64_t retired,
                                 uint32_t n) {
  // docs/architecture.md: a matmul feeds inner x outer rows (N^2 MACs each); the activation
  // unit takes one cycle per window tap and reads a row in each (Ho x Wo x pool_k^2), four per
  // pixel of a raw activate; the DMA moves rows x N bytes, tiles x N^2.
  ProgramCounters c;
  c.valid = true;
  for (size_t i = 0; i < program.size() && i < retired; ++i) {
    const Instruction& in = program[i];
    if (const auto* rh = std::get_if<ReadHost>(&in)) {
      c.dma_rd_bytes += uint64_t{rh->rows} * n;
    } else if (const auto* rw = std::get_if<ReadWeights>(&in)) {
      c.dma_rd_bytes += uint64_t{rw->tiles} * n * n;
    } else if (const auto* wh = std::get_if<WriteHost>(&in)) {
      c.dma_wr_bytes += uint64_t{wh->rows} * n;
    } else if (const auto* mm = std::get_if<Matmul>(&in)) {
      c.mxu_busy += uint64_t{mm->inner} * mm->outer;
    } else if (const auto* rv = std::get_if<ReadVmem>(&in)) {  // training configuration
      c.dma_rd_bytes += uint64_t{rv->rows} * rv->row_bytes(n);
    } else if (const auto* wv = std::get_if<WriteVmem>(&in)) {
      c.dma_wr_bytes += uint64_t{wv->rows} * wv->row_bytes(n);
    } else if (const auto* mb = std::get_if<MatmulBf16>(&in)) {
      c.mxu_busy += uint64_t{mb->inner} * mb->outer;
    } else if (const auto* a = std::get_if<Activate>(&in)) {
      if (a->raw) {
        c.act_busy += uint64_t{a->width} * a->height * 4;
      } else {
        const uint64_t hp = uint64_t{a->height} + a->pad_top + a->pad_bottom;
        const uint64_t wp = uint64_t{a->width} + a->pad_left + a->pad_right;
        c.act_busy += ((hp - a->pool_k) / a->pool_s + 1) * ((wp - a->pool_k) / a->pool_s + 1) *
                      a->pool_k * a->pool_k;
      }
    }
  }
  c.mxu_macs = c.mxu_busy * n * n;
  return c;
}

// ---- dump program

namespace {
uint32_t scratch_rows(const TestCase& tc) {
  return tc.ub_base + tc.ub_rows + tc.acc_rows <= tc.params.ub_rows ? tc.ub_base + tc.ub_rows
                                                                    : tc.ub_base - tc.acc_rows;
}
}  // namespace

DumpProgram build_dump_program(const TestCase& tc, const GoldenModel& golden) {
  const uint32_t n = tc.params.N;
  DumpProgram d;
  d.program.push_back(WriteHost{tc.ub_base, tc.ub_rows, kDumpUb});
  const uint32_t scratch = scratch_rows(tc);
  std::vector<uint8_t> params(size_t(tc.acc_rows) * 12 * n, 0);
  for (uint32_t r = 0; r < tc.acc_rows; ++r) {
    const uint32_t slot = r % tc.params.qp_slots;
    const uint32_t host = kDumpParams + r * 12 * n;
    std::vector<uint8_t> s(12 * n, 0);
    for (uint32_t c = 0; c < n; ++c) {
      put32(s, c, ~uint32_t(golden.acc(tc.acc_base + r, c)));  // bias = -golden - 1
      put32(s, n + c, 1);                                      // mult = 1, misc = 0: shift 0
    }
    std::copy(s.begin(), s.end(), params.begin() + long(r) * 12 * n);
    d.program.push_back(ReadHost{HostDest::Param, 12 * slot, 12, host});
    Activate a;
    a.acc_addr = uint16_t(tc.acc_base + r);
    a.ub_addr = scratch + r;
    a.width = 1;
    a.height = 1;
    a.slot = uint8_t(slot);
    d.program.push_back(a);
  }
  d.program.push_back(WriteHost{scratch, tc.acc_rows, kDumpAcc});
  if (tc.vmem_rows > 0) {  // the VMEM window, fp32 lanes bit for bit
    WriteVmem wv;
    wv.vmem_addr = uint16_t(tc.vmem_base);
    wv.rows = tc.vmem_rows;
    wv.host_addr = kDumpVmemBase;
    d.program.push_back(wv);
  }
  d.program.push_back(Halt{});
  d.memory.push_back({kDumpParams, params});
  return d;
}

// ---- comparison

namespace {}  // namespace

bool same_fetch_fault(const Outcome& c, const Outcome& g, const std::string& golden_message) {
  // Host memory answers a whole AXI burst with the error, so the chip's first failing beat can
  // be up to 15 instructions before the word the golden model (which fetches 16 bytes at a
  // time) sees failing; every instruction of that burst did fail to fetch.
  return !c.done && !g.done && c.err_code == uint32_t(ErrorCode::ERR_AXI_READ) &&
         g.err_code == c.err_code &&
         golden_message.find("instruction fetch") != std::string::npos && c.err_pc <= g.err_pc &&
         g.err_pc - c.err_pc < 16;
}

namespace {

// The chip's counters against the golden backend's (see ProgramCounters); `words`: the
// command buffer's length, `retired`: the instructions retired.
std::string compare_counters(const Outcome& c, const Outcome& g, size_t words) {
  if (!c.counters.valid || !g.counters.valid) return {};
  std::ostringstream s;
  auto check = [&](const char* name, uint64_t chip, uint64_t golden) {
    if (chip != golden && s.tellp() == 0)
      s << name << ": chip " << chip << ", golden (from the program) " << golden;
  };
  check("MXU_BUSY", c.counters.mxu_busy, g.counters.mxu_busy);
  check("MXU_MACS", c.counters.mxu_macs, g.counters.mxu_macs);
  check("ACT_BUSY", c.counters.act_busy, g.counters.act_busy);
  check("DMA_WR_BYTES", c.counters.dma_wr_bytes, g.counters.dma_wr_bytes);
  if (s.tellp() != 0) return s.str();
  // The fetch: whole 16-byte words, at least every retired one, at most the command buffer.
  const uint64_t lo = g.counters.dma_rd_bytes + kInstrBytes * g.retired;
  const uint64_t hi = g.counters.dma_rd_bytes + kInstrBytes * uint64_t{words};
  const uint64_t rd = c.counters.dma_rd_bytes;
  if (rd < lo || rd > hi || (rd - lo) % kInstrBytes != 0) {
    s << "DMA_RD_BYTES: chip " << rd << ", golden " << g.counters.dma_rd_bytes << " + the fetch of "
      << g.retired << " to " << words << " instructions (16 bytes each)";
  }
  return s.str();
}

std::string compare_status(const Outcome& c, const Outcome& g,
                           const std::string& golden_message = {}) {
  std::ostringstream s;
  if (c.hung) return "the chip did not finish (no done, no error within the cycle limit)";
  if (same_fetch_fault(c, g, golden_message)) return {};
  if (c.done != g.done || c.err_code != g.err_code || c.err_pc != g.err_pc) {
    auto show = [](const Outcome& o) {
      if (o.done) return std::string("done");
      return std::string(error_name(ErrorCode(o.err_code))) + " at index " +
             std::to_string(o.err_pc);
    };
    s << "status: chip " << show(c) << ", golden " << show(g);
    return s.str();
  }
  return {};
}

}  // namespace

CaseResult run_case(Backend& chip, GoldenBackend& golden, const TestCase& tc) {
  CaseResult res;
  res.golden = golden.run(tc.memory, tc.config, tc.program);
  res.chip = chip.run(tc.memory, tc.config, tc.program);
  const Outcome& g = res.golden;
  const Outcome& c = res.chip;
  auto fail = [&](std::string why) {
    res.ok = false;
    res.mismatch = std::move(why);
    return res;
  };
  if (tc.kind == CaseKind::kValid && !g.done) {
    res.valid_faulted = true;
    return fail("generator bug: a valid program faults on the golden model: " +
                golden.last_message());
  }
  if (auto m = compare_status(c, g, golden.last_message()); !m.empty()) {
    if (!g.done) m += " (golden: " + golden.last_message() + ")";
    return fail(m);
  }
  // After an AXI error response, isa.md leaves memory and the destinations undefined.
  const bool defined = g.done || (g.err_code != uint32_t(ErrorCode::ERR_AXI_READ) &&
                                  g.err_code != uint32_t(ErrorCode::ERR_AXI_WRITE));
  if (!defined) return res;
  if (c.retired != g.retired) {
    return fail("INSTR_RETIRED: chip " + std::to_string(c.retired) + ", golden " +
                std::to_string(g.retired));
  }
  if (auto m = compare_counters(c, g, tc.program.size()); !m.empty()) return fail(m);
  const uint32_t n = tc.params.N;
  if (auto m = first_byte_difference("kData", kDataBase, n, c.data, g.data); !m.empty())
    return fail(m);
  if (auto m = first_byte_difference("kOut", kOutBase, n, c.out, g.out); !m.empty()) return fail(m);
  if (auto m = first_byte_difference("kDump", kDumpBase, n, c.dump, g.dump); !m.empty())
    return fail(m);
  if (auto m = first_byte_difference("kHigh", kHighBase, n, c.high, g.high); !m.empty())
    return fail(m);

  // Run 2: read back the UB window and check every accumulator of the ACC window.
  DumpProgram d = build_dump_program(tc, golden.model());
  RunConfig plain = tc.config;
  plain.windows = DmaWindows{};
  plain.slverr.clear();
  plain.high_region = false;
  std::vector<std::vector<int32_t>> expect(tc.acc_rows);
  for (uint32_t r = 0; r < tc.acc_rows; ++r) expect[r] = golden.model().acc_row(tc.acc_base + r);
  const Outcome g2 = golden.run(d.memory, plain, d.program);
  const Outcome c2 = chip.run(d.memory, plain, d.program);
  if (!g2.done) return fail("dump program faults on the golden model: " + golden.last_message());
  if (auto m = compare_status(c2, g2); !m.empty()) return fail("dump run: " + m);
  if (auto m = compare_counters(c2, g2, d.program.size()); !m.empty())
    return fail("dump run: " + m);
  for (uint32_t i = 0; i < tc.ub_rows * n; ++i) {
    if (c2.dump[i] != g2.dump[i]) {
      std::ostringstream s;
      s << "UB[" << tc.ub_base + i / n << "][" << i % n << "]: chip " << int(c2.dump[i])
        << ", golden " << int(g2.dump[i]);
      return fail(s.str());
    }
  }
  for (size_t i = 0; i < c2.vmem.size() && i < g2.vmem.size(); i += 4) {
    uint32_t cv = 0, gv = 0;
    std::memcpy(&cv, &c2.vmem[i], 4);  // (little-endian host, as the lanes)
    std::memcpy(&gv, &g2.vmem[i], 4);
    if (cv != gv) {
      std::ostringstream s;
      s << "VMEM[" << tc.vmem_base + i / (4 * n) << "][" << i / 4 % n << "]: chip " << hex(cv)
        << ", golden " << hex(gv);
      return fail(s.str());
    }
  }
  if (c2.vmem.size() != g2.vmem.size()) return fail("dump run: VMEM dump sizes differ");
  const size_t acc_off = kDumpAcc - kDumpBase;
  for (uint32_t i = 0; i < tc.acc_rows * n; ++i) {
    if (g2.dump[acc_off + i] != 0xFF)
      return fail("dump program self-check failed on the golden model");
    if (c2.dump[acc_off + i] != 0xFF) {
      const int8_t v = int8_t(c2.dump[acc_off + i]);
      std::ostringstream s;
      s << "ACC[" << tc.acc_base + i / n << "][" << i % n << "]: golden " << expect[i / n][i % n]
        << ", chip "
        << (v == 127 ? "greater by >= 128"
            : v == -128
                ? "less by >= 128"
                : (v > -1 ? "greater by " : "less by ") + std::to_string(v > -1 ? v + 1 : -1 - v));
      return fail(s.str());
    }
  }
  return res;
}

std::string mismatch_report(Backend& chip, GoldenBackend& golden, const TestCase& tc, uint64_t seed,
                            const std::string& mismatch) {
  std::ostringstream s;
  s << "seed " << seed << ": " << mismatch << "\n";
  const FirstDifference fd = find_first_difference(chip, golden, tc);
  if (fd.index >= 0) {
    s << "first differing instruction: " << fd.index << ": "
      << disassemble(tc.program[static_cast<size_t>(fd.index)]) << " (" << fd.mismatch << ")\n";
  }
  return s.str();
}

FirstDifference find_first_difference(Backend& chip, GoldenBackend& golden, const TestCase& tc) {
  FirstDifference fd;
  for (size_t k = tc.prologue_length; k <= tc.program.size(); ++k) {
    TestCase t = tc;
    t.program.resize(k);
    if (t.program.empty() || !std::holds_alternative<Halt>(t.program.back()))
      t.program.push_back(Halt{});
    if (t.kind == CaseKind::kNoHalt || t.kind == CaseKind::kStaticFault)
      t.kind = CaseKind::kStaticFault;
    CaseResult r = run_case(chip, golden, t);
    if (!r.ok) {
      fd.index = long(k) - 1;
      fd.mismatch = r.mismatch;
      return fd;
    }
  }
  return fd;
}

}  // namespace tpu::verif

// SPDX-License-Identifier: Apache-2.0
// Random multi-chip link programs on the RTL pod (sim/pod_rtl.h, N = 4) against the pod of
// golden models (issue 31): rings of 2, 3 and 4 chips and the torus 2x2, random link latency.
// Each program is a random global order of transfers on connected links (each chip's program
// is its part of that order, so the pod never deadlocks by itself: the oldest unfinished
// transfer can always start), each transfer 1..8 rows from random VMEM rows, copied or reduced
// (fp32 / int32 add) into random rows, with VMEM-port DMA (read_vmem / write_vmem of random rows),
// vector instructions, transposes and sync mixed in, so the link instructions meet the chip's
// row hazards against every VMEM client. A quarter of the
// programs inject a fault: one chip syncs (its link instructions done) and then faults (a DMA
// outside its host window), and its neighbours end with ERR_ICI_DEADLOCK; in half of them
// (FaultPlan) the chip syncs, posts a receive and faults in the next instruction, so the
// matching send meets a receive whose chip stopped (before, in or after the link latency
// window of the fault: isa.md "Errors of the link instructions"). Compared bit for bit:
// every chip's outcome (done, or ERR_CODE and ERR_PC), the host bytes it wrote and its final VMEM.
// The RTL's assertions are on in every program (a firing assertion stops the process).
//
// The Matrix* tests add the matrix path (Mix::Matrix): between the transfers the chips also run
// load_weights (plain and transposed, 1..N rows per tile), matmul_bf16 (overwrite and
// accumulate, with and without switch), acc_to_vmem and the training generator's strided
// vector instructions and transposes (tests/verif/random_program.h TrainDraw: the single-chip
// training generator's instructions and float corner values), all in the same 32 VMEM rows as
// the link instructions, so the link unit's rows meet the MXU's, the weight loader's and the
// accumulator reader's. Every chip starts by defining its ACC window (a matmul_bf16 over it),
// and the ACC window is compared too. A fifth of the programs without an injected fault carry
// a size mismatch drawn so its outcome does not depend on timing: both ends sync (their
// earlier link instructions done), then the send and the receive of different row counts, then
// sync again (nothing later issues before the fault): both chips end ERR_ICI_SIZE at them (also
// checked against the expectation, not only the golden pod), and their later partners
// ERR_ICI_DEADLOCK.
//
// TPU_POD_RANDOM_COUNT (programs per test, default 75 per link-only test and 40 per Matrix
// test) and TPU_POD_RANDOM_FIRST (first seed) set the run; the `slow` test runs more.
//
// The Long* tests (Mix::Long, issue 30 toggle coverage) are the link-only programs in 1024 VMEM
// rows at the top of VMEM or at a random base above row 16384, with messages of up to 1024 rows
// (half of them 512 or more) and the local instructions moved into those rows; the final VMEM
// of those rows is compared. TPU_POD_RANDOM_LONG_COUNT programs per topology (default 12).
//
// Built twice (tests/pod/CMakeLists.txt): random_pod_rtl_test on tpu_pod_rtl_n4 (IciLinks 4:
// rings and the torus 2x2) and random_pod_rtl_l2_test on tpu_pod_rtl_n4_l2, the pod chip's link
// configuration (IciLinks 2, as tpu_sim_pod_n4, whose chip-alone testbench has no peer), with
// TPU_POD_RING_ONLY (rings only: a torus needs 4 links) and TPU_POD_SEED_OFFSET (seeds of its
// own), so the 2-link chip's link unit runs real transfers (issue 30 toggle coverage).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pod_rtl_harness.h"
#include "random_program.h"

namespace {

using namespace pod_rtl_test;  // NOLINT(build/namespaces)

constexpr uint32_t kRows = 64;      // VMEM rows the programs use
constexpr uint32_t kMaxMsg = 8;     // rows per message
constexpr uint32_t kRowBytes = 16;  // 4 N
#ifndef TPU_POD_SEED_OFFSET
#define TPU_POD_SEED_OFFSET 0
#endif
constexpr uint32_t kSeedOffset = TPU_POD_SEED_OFFSET;  // added to every test's first seed

uint32_t env_count(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

uint32_t rnd(std::mt19937& rng, uint32_t n) { return static_cast<uint32_t>(rng() % n); }

// A random chip and one of its connected links, and the chip and link at the other end.
struct LinkDraw {
  uint32_t src, link;
  tpu::PodTopology::End dst;
};
LinkDraw draw_link(std::mt19937& rng, const tpu::PodTopology& topo) {
  for (;;) {
    const uint32_t src = rnd(rng, topo.chips());
    const uint32_t link = rnd(rng, topo.links_needed());
    if (const auto dst = topo.peer(src, link)) return {src, link, *dst};
  }
}

// The VMEM rows a link-only program uses, [base, base + rows), and the rows per message. The
// default mix: the 64 rows from 0, messages of 1..8 rows; Mix::Long (toggle coverage of the
// link unit's row counters and VMEM addresses, docs/verification.md "Coverage"): 1024 rows at
// the top of VMEM or at a random base above row 16384, messages of up to all of them.
struct Window {
  uint32_t base = 0, rows = kRows, max_msg = kMaxMsg;
  bool long_msgs = false;  // half of the messages in the upper half of 1..max_msg
};
constexpr uint32_t kLongRows = 1024;  // (kMemSize - kVmemDump) / 16: what the VMEM dump holds

Window long_window(std::mt19937& rng) {
  const uint32_t top = chip_params().vmem_rows - kLongRows;
  const uint32_t base = rnd(rng, 2) == 0 ? top : top / 2 + rnd(rng, top / 2);
  return Window{base, kLongRows, kLongRows, true};
}

// Rows of one message in window w.
uint32_t message_rows(std::mt19937& rng, const Window& w) {
  if (w.long_msgs && rnd(rng, 2) == 0) return w.max_msg / 2 + rnd(rng, w.max_msg / 2 + 1);
  return 1 + rnd(rng, w.max_msg);
}

// Now and then a local instruction on a chip: VMEM-port DMA of random rows, a sync, an
// element-wise vector instruction (fp32 / int32 / bitwise; in place or into rows apart from its
// operands) or an N x N transpose (rows relative to the window's base; the default window's
// draws are those of the generator before Mix::Long).
void local_op(tpu::ProgramBuilder& b, std::mt19937& rng, const Window& w = Window{}) {
  const uint32_t span = w.rows, o = w.base;
  const uint32_t rows = 1 + rnd(rng, 16);
  const uint32_t row = o + rnd(rng, span - rows + 1);
  static const tpu::VecFunc kFuncs[] = {tpu::VecFunc::FAdd, tpu::VecFunc::FMul, tpu::VecFunc::FMax,
                                        tpu::VecFunc::IAdd, tpu::VecFunc::Xor,  tpu::VecFunc::FLt};
  const uint32_t n = chip_params().N;
  switch (rnd(rng, 5)) {
    case 0:
      b.read_vmem(row, rows, kData + kRowBytes * rnd(rng, span - rows + 1));
      break;
    case 1:
      if (w.long_msgs) {  // (the final write_vmem of the window fills kOut)
        b.write_vmem(row, rows, kOut + kRowBytes * rnd(rng, span - rows + 1));
      } else {
        b.write_vmem(row, rows, kOut + kRowBytes * (span + rnd(rng, 2 * span)));
      }
      break;
    case 2: {  // a in [0, 20), b in [22, 42), dst = a or in [44, 64)
      const uint32_t r = 1 + rnd(rng, 8);
      const uint32_t a = rnd(rng, 20 - r + 1), bb = 22 + rnd(rng, 20 - r + 1);
      const uint32_t dst = rnd(rng, 2) == 0 ? a : 44 + rnd(rng, 20 - r + 1);
      b.vop(kFuncs[rnd(rng, 6)], o + dst, o + a, o + bb, r);
      break;
    }
    case 3: {  // one N x N block from the lower half to the upper half, or back
      const uint32_t lo = n * rnd(rng, span / 2 / n), hi = span / 2 + n * rnd(rng, span / 2 / n);
      if (rnd(rng, 2) == 0) {
        b.transpose(o + lo, o + hi, 1);
      } else {
        b.transpose(o + hi, o + lo, 1);
      }
      break;
    }
    default:
      b.sync();
      break;
  }
}

struct Case {
  std::vector<std::vector<tpu::Instruction>> programs;
  std::vector<std::vector<uint8_t>> data;
  uint32_t latency = 1;
  bool fault = false;
  // The injected fault comes right after a receive the faulting chip posted (isa.md "Errors of
  // the link instructions": it stays posted, its message is discarded, the sender completes).
  bool posted_fault = false;
  // Mix::Matrix: the chips' ACC window (compared after the run), and with a size mismatch the
  // two chips that end ERR_ICI_SIZE and the index of their link instruction.
  AccRows acc;
  std::vector<std::pair<uint32_t, uint32_t>> size_faults;
  uint32_t window = 0;  // the first VMEM row of the program's rows (Mix::Long)
};

// Where an injected fault goes (both generators): by default, at transfer `at`, the faulting
// chip syncs (its link instructions done) and then faults; with `posted` (drawn from its own
// generator, so the programs of the other draws stay the same) it syncs before the first
// transfer from `at` on that it receives, posts that receive and faults in the next
// instruction, while the sender's message is still to come (or only later, when no such
// transfer follows).
struct FaultPlan {
  uint32_t chip = 0, at = 0;
  bool posted = false;
  bool pending = false;  // the posted-receive fault not placed yet
};
constexpr uint32_t kFaultHost = 4 * kMemSize;  // a read_vmem from there faults ERR_HOST_RANGE

// Before transfer t to chip `dst`: the fault's instructions due now (after_recv: a fault to
// place right after the receive of this transfer).
bool place_fault(FaultPlan& f, Case& c, std::vector<tpu::ProgramBuilder>& b, uint32_t t,
                 uint32_t dst) {
  if (!c.fault) return false;
  if (t == f.at && !f.posted) b[f.chip].sync().read_vmem(0, 1, kFaultHost);
  if (t == f.at && f.posted) f.pending = true;
  if (!f.pending || dst != f.chip) return false;
  f.pending = false;
  c.posted_fault = true;
  b[f.chip].sync();
  return true;
}

FaultPlan fault_plan(uint32_t seed, uint32_t chip, uint32_t at) {
  std::mt19937 own(seed ^ 0x5bd1e995u);
  return FaultPlan{chip, at, own() % 2 == 0, false};
}

Case random_case(const tpu::PodTopology& topo, uint32_t seed, bool long_mix = false) {
  std::mt19937 rng(seed);
  Case c;
  c.latency = 1 + rnd(rng, 24);
  const uint32_t chips = topo.chips();
  std::vector<tpu::ProgramBuilder> b(chips, tpu::ProgramBuilder(chip_params()));
  const Window w = long_mix ? long_window(rng) : Window{};
  c.window = w.base;
  for (uint32_t r = 0; r < chips; ++r) {
    c.data.push_back(random_rows(rng, w.rows));
    b[r].read_vmem(w.base, w.rows, kData);
  }
  c.fault = rnd(rng, 4) == 0;
  const uint32_t faulty = rnd(rng, chips);
  const uint32_t transfers = 6 + rnd(rng, 24);
  const uint32_t fault_at = rnd(rng, transfers);
  const tpu::IciReduce kReduce[] = {tpu::IciReduce::None, tpu::IciReduce::FAdd,
                                    tpu::IciReduce::IAdd};
  FaultPlan plan = fault_plan(seed, faulty, fault_at);
  for (uint32_t t = 0; t < transfers; ++t) {
    const auto [src, link, dst] = draw_link(rng, topo);
    const bool after_recv = place_fault(plan, c, b, t, dst.chip);
    const uint32_t rows = message_rows(rng, w);
    b[src].ici_send(link, w.base + rnd(rng, w.rows - rows + 1), rows);
    b[dst.chip].ici_recv(dst.link, w.base + rnd(rng, w.rows - rows + 1), rows,
                         kReduce[rnd(rng, 3)]);
    if (after_recv) b[dst.chip].read_vmem(0, 1, kFaultHost);
    if (rnd(rng, 4) == 0) local_op(b[rnd(rng, chips)], rng, w);
  }
  if (plan.pending) b[faulty].sync().read_vmem(0, 1, kFaultHost);
  for (uint32_t r = 0; r < chips; ++r) {
    b[r].write_vmem(w.base, w.rows, kOut);
    c.programs.push_back(b[r].finish());
  }
  return c;
}

// ---- Mix::Matrix: the matrix path between the transfers

constexpr uint32_t kMatrixRows = 32;     // VMEM rows of every instruction (links included)
constexpr uint32_t kMaxVectorRows = 64;  // rows of a drawn vector instruction (run time)

// One chip's local instruction in a Matrix program: mostly the matrix path (load_weights,
// matmul_bf16, acc_to_vmem), else a strided vector or a transpose as the training generator
// draws them, VMEM-port DMA or sync.
void matrix_op(tpu::ProgramBuilder& b, tpu::verif::TrainDraw& draw, std::mt19937& rng) {
  using tpu::Opcode;
  static const Opcode kOps[] = {Opcode::LoadWeights, Opcode::MatmulBf16, Opcode::MatmulBf16,
                                Opcode::AccToVmem,   Opcode::Vector,     Opcode::Transpose};
  const uint32_t k = rnd(rng, 8);
  if (k < 6) {
    for (int tries = 0; tries < 4; ++tries) {
      const std::optional<tpu::Instruction> in = draw.draw(kOps[k], b.instructions());
      if (!in) return;  // no room for a tile, or no bf16 tile for a matmul_bf16
      const auto* v = std::get_if<tpu::Vector>(&*in);
      if (v != nullptr && uint32_t{v->inner} * v->outer > kMaxVectorRows) continue;
      b.append(*in);
      return;
    }
    return;
  }
  const uint32_t rows = 1 + rnd(rng, 8);
  const uint32_t row = rnd(rng, kMatrixRows - rows + 1);
  if (k == 6) {
    b.write_vmem(row, rows, kOut + kRowBytes * (kRows + rnd(rng, 2 * kRows)));
  } else if (rnd(rng, 2) == 0) {
    b.read_vmem(row, rows, kData + kRowBytes * rnd(rng, kMatrixRows - rows + 1));
  } else {
    b.sync();
  }
}

// A Matrix program's chips: the training generator's float rows in VMEM, weight tiles from
// them and a matmul_bf16 (overwrite) over the whole ACC window, so that every row the program
// reads is defined.
void matrix_prologue(Case& c, std::vector<tpu::ProgramBuilder>& b,
                     std::vector<std::unique_ptr<tpu::verif::TrainDraw>>& draws, std::mt19937& rng,
                     uint32_t seed) {
  static const uint32_t kAccRows[] = {8, 16, 32, 64};
  c.acc.rows = kAccRows[rnd(rng, 4)];
  c.acc.first = rnd(rng, 2) == 0 ? 0 : rnd(rng, chip_params().acc_rows - c.acc.rows + 1);
  for (uint32_t r = 0; r < b.size(); ++r) {
    draws.push_back(std::make_unique<tpu::verif::TrainDraw>(
        (uint64_t{seed} << 8) + r, chip_params(), 0, kMatrixRows, c.acc.first, c.acc.rows));
    c.data.push_back(draws[r]->float_rows(kMatrixRows));
    b[r].read_vmem(0, kMatrixRows, kData);
    b[r].append(*draws[r]->draw(tpu::Opcode::LoadWeights, b[r].instructions()));
    tpu::MatmulBf16 mb;
    mb.switch_weights = true;
    mb.vmem_addr =
        static_cast<uint16_t>(rnd(rng, kMatrixRows - std::min(c.acc.rows, kMatrixRows) + 1));
    mb.acc_addr = static_cast<uint16_t>(c.acc.first);
    mb.inner = static_cast<uint16_t>(c.acc.rows);
    mb.inner_stride = static_cast<uint8_t>(c.acc.rows <= kMatrixRows ? 1 : 0);
    b[r].append(mb);
  }
}

// A size mismatch whose outcome does not depend on timing: both ends sync (their earlier link
// instructions done), the send and a receive of another row count, then sync (nothing later
// issues before the fault). Both end ERR_ICI_SIZE at their link instruction.
void size_mismatch(Case& c, std::vector<tpu::ProgramBuilder>& b, std::mt19937& rng, uint32_t src,
                   uint32_t link, const tpu::PodTopology::End& dst) {
  const uint32_t rows = 1 + rnd(rng, kMaxMsg);
  uint32_t other = 1 + rnd(rng, kMaxMsg - 1);
  if (other >= rows) ++other;
  b[src].sync();
  b[dst.chip].sync();
  c.size_faults.emplace_back(src, static_cast<uint32_t>(b[src].size()));
  b[src].ici_send(link, rnd(rng, kMatrixRows - rows + 1), rows);
  c.size_faults.emplace_back(dst.chip, static_cast<uint32_t>(b[dst.chip].size()));
  b[dst.chip].ici_recv(dst.link, rnd(rng, kMatrixRows - other + 1), other);
  b[src].sync();
  b[dst.chip].sync();
}

Case matrix_case(const tpu::PodTopology& topo, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.latency = 1 + rnd(rng, 24);
  const uint32_t chips = topo.chips();
  std::vector<tpu::ProgramBuilder> b(chips, tpu::ProgramBuilder(chip_params()));
  std::vector<std::unique_ptr<tpu::verif::TrainDraw>> draws;
  matrix_prologue(c, b, draws, rng, seed);
  c.fault = rnd(rng, 4) == 0;
  const bool mismatch = !c.fault && rnd(rng, 5) == 0;
  const uint32_t faulty = rnd(rng, chips);
  const uint32_t transfers = 6 + rnd(rng, 24);
  const uint32_t fault_at = rnd(rng, transfers);
  const tpu::IciReduce kReduce[] = {tpu::IciReduce::None, tpu::IciReduce::FAdd,
                                    tpu::IciReduce::IAdd};
  FaultPlan plan = fault_plan(seed, faulty, fault_at);
  for (uint32_t t = 0; t < transfers; ++t) {
    const auto [src, link, dst] = draw_link(rng, topo);
    const bool after_recv = place_fault(plan, c, b, t, dst.chip);
    if (mismatch && t == fault_at) {
      size_mismatch(c, b, rng, src, link, dst);
    } else {
      const uint32_t rows = 1 + rnd(rng, kMaxMsg);
      b[src].ici_send(link, rnd(rng, kMatrixRows - rows + 1), rows);
      b[dst.chip].ici_recv(dst.link, rnd(rng, kMatrixRows - rows + 1), rows, kReduce[rnd(rng, 3)]);
    }
    if (after_recv) b[dst.chip].read_vmem(0, 1, kFaultHost);
    for (uint32_t k = rnd(rng, 3); k > 0; --k) {
      const uint32_t r = rnd(rng, chips);
      matrix_op(b[r], *draws[r], rng);
    }
  }
  if (plan.pending) b[faulty].sync().read_vmem(0, 1, kFaultHost);
  for (uint32_t r = 0; r < chips; ++r) {
    b[r].write_vmem(0, kMatrixRows, kOut);
    c.programs.push_back(b[r].finish());
  }
  return c;
}

enum class Mix { Links, Matrix, Long };

// Runs `count` random programs on the topology from seed `first`; reports how many ran clean
// (every chip halted), how many with the injected fault and how many with a size mismatch.
void run_random(const tpu::PodTopology& topo, uint32_t first, Mix mix = Mix::Links) {
  // (Mix::Long has a count of its own: its programs take ~10 times as long, and the `slow`
  // test sets TPU_POD_RANDOM_COUNT to thousands)
  const uint32_t count = mix == Mix::Long
                             ? env_count("TPU_POD_RANDOM_LONG_COUNT", 12)
                             : env_count("TPU_POD_RANDOM_COUNT", mix == Mix::Links ? 75 : 40);
  first += kSeedOffset + env_count("TPU_POD_RANDOM_FIRST", 0);
  const uint32_t vmem_rows = mix == Mix::Links    ? kRows
                             : mix == Mix::Matrix ? kMatrixRows
                                                  : kLongRows;
  uint32_t clean = 0, faulted = 0, mismatched = 0, posted = 0;
  for (uint32_t s = first; s < first + count && !::testing::Test::HasFailure(); ++s) {
    const Case c =
        mix == Mix::Matrix ? matrix_case(topo, s) : random_case(topo, s, mix == Mix::Long);
    const std::string what = topo.name() + " " + std::to_string(topo.chips()) + " chips, seed " +
                             std::to_string(s) + ", latency " + std::to_string(c.latency);
    if (std::getenv("TPU_POD_VERBOSE") != nullptr) {
      std::printf("%s%s%s%s\n", what.c_str(), c.fault ? ", fault injected" : "",
                  c.posted_fault ? " after a posted receive" : "",
                  c.size_faults.empty() ? "" : ", size mismatch");
      for (uint32_t r = 0; r < topo.chips(); ++r) {
        for (size_t i = 0; i < c.programs[r].size(); ++i) {
          std::printf("  chip %u %3zu: %s\n", r, i, tpu::disassemble(c.programs[r][i]).c_str());
        }
      }
    }
    // The RTL's assertions are on in every program, injected faults included.
    const tpu::sim::PodRtlResult res =
        run_both(topo, c.latency, c.programs, c.data, what, vmem_rows, true, c.acc, c.window);
    for (const auto& [chip, pc] : c.size_faults) {
      EXPECT_EQ(res.chips[chip].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_ICI_SIZE))
          << what << ": chip " << chip;
      EXPECT_EQ(res.chips[chip].err_pc, pc) << what << ": chip " << chip;
    }
    if (res.ok()) {
      ++clean;
    } else if (!c.size_faults.empty()) {
      ++mismatched;
    } else {
      ++faulted;
      posted += c.posted_fault ? 1 : 0;
      EXPECT_TRUE(c.fault) << what << ": a chip faulted without an injected fault";
    }
  }
  std::printf(
      "%s (%u chips)%s: %u programs, %u clean, %u with an injected fault (%u of them right "
      "after a posted receive), %u with a size mismatch\n",
      topo.name().c_str(), topo.chips(),
      mix == Mix::Matrix ? ", matrix path"
      : mix == Mix::Long ? ", long transfers"
                         : "",
      clean + faulted + mismatched, clean, faulted, posted, mismatched);
}

TEST(RandomPodRtl, Ring2) { run_random(tpu::PodTopology::ring(2), 1000); }
TEST(RandomPodRtl, Ring3) { run_random(tpu::PodTopology::ring(3), 2000); }
TEST(RandomPodRtl, Ring4) { run_random(tpu::PodTopology::ring(4), 3000); }
#ifndef TPU_POD_RING_ONLY
TEST(RandomPodRtl, Torus2x2) { run_random(tpu::PodTopology::torus(2, 2), 4000); }
#endif
TEST(RandomPodRtl, MatrixRing2) { run_random(tpu::PodTopology::ring(2), 5000, Mix::Matrix); }
TEST(RandomPodRtl, MatrixRing3) { run_random(tpu::PodTopology::ring(3), 6000, Mix::Matrix); }
TEST(RandomPodRtl, MatrixRing4) { run_random(tpu::PodTopology::ring(4), 7000, Mix::Matrix); }
#ifndef TPU_POD_RING_ONLY
TEST(RandomPodRtl, MatrixTorus2x2) { run_random(tpu::PodTopology::torus(2, 2), 8000, Mix::Matrix); }
#endif
// Mix::Long: messages of up to 1024 rows in 1024 VMEM rows at the top of VMEM or above row
// 16384 (the link unit's row counters, program counters and VMEM addresses;
// TPU_POD_RANDOM_LONG_COUNT programs per topology, default 12, about 1 s each).
TEST(RandomPodRtl, LongRing2) { run_random(tpu::PodTopology::ring(2), 9000, Mix::Long); }
TEST(RandomPodRtl, LongRing4) { run_random(tpu::PodTopology::ring(4), 10000, Mix::Long); }
#ifndef TPU_POD_RING_ONLY
TEST(RandomPodRtl, LongTorus2x2) { run_random(tpu::PodTopology::torus(2, 2), 11000, Mix::Long); }
#endif

// The chip's link count (tpu_pod_rtl_n4: 4, tpu_pod_rtl_n4_l2: 2) as its registers report it.
TEST(RandomPodRtl, ChipHasTheBuildsLinks) {
  EXPECT_EQ(chip_params().ici_links, static_cast<unsigned>(TPU_POD_EXPECT_LINKS));
  EXPECT_EQ(PodRtl::ici_width_bits(), 128u);
}

}  // namespace

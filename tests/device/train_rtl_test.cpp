// SPDX-License-Identifier: Apache-2.0
// The training chip's RTL (tpu_core with VmemRows = 32768, tpu_device_rtl_train_n<N>) against
// the golden model run with the parameters the chip reports (ChipParams::training_ops: the
// training opcodes this RTL executes, docs/isa.md "Status"): directed and random programs of
// read_vmem / write_vmem (fp32 and bf16, contiguous and strided host rows), acc_to_vmem,
// transpose, vector (rtl/tpu_vpu.sv: every func and bmode), load_weights and matmul_bf16 (the
// bf16 matrix path), with float corner-case data
// (NaN, infinities, subnormals, values that round up in the bf16 conversion), and every static
// fault of those instructions. Host memory and the
// fault (code, index) must be identical, byte for byte.
//
// One chip per process: every test case runs in its own process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device_model.h"
#include "device_rtl.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;
constexpr uint32_t kInBytes = 64 * 1024;
constexpr uint32_t kOutBytes = 64 * 1024;
constexpr uint32_t kVmemSpan = 64;  // VMEM rows the random programs use (plus a few at the top)

// Host memory the programs use, at the same addresses on both backends.
struct Layout {
  HostBuffer in, out;
};

Layout make_layout(Device& dev) {
  Layout l;
  l.in = dev.alloc(kInBytes, "in", 4096);
  l.out = dev.alloc(kOutBytes, "out", 4096);
  return l;
}

// A uniform integer in [0, n).
uint32_t rnd(std::mt19937& rng, uint64_t n) { return static_cast<uint32_t>(rng() % n); }

// 32-bit patterns with the float corner cases over-represented.
uint32_t corner_pattern(std::mt19937& rng) {
  static const uint32_t kSpecial[] = {
      0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
      0x7F800001u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x3F808000u, 0x3F818000u,
      0x3F80FFFFu, 0x7F7FFFFFu, 0xFF7F8000u, 0x7F7F8000u, 0x00800000u, 0x0080FFFFu,
      0x3F800000u, 0xBF800000u, 0x00008000u, 0x80010000u};
  const uint32_t pick = rnd(rng, 4);
  if (pick == 0) return kSpecial[rnd(rng, sizeof kSpecial / sizeof kSpecial[0])];
  return static_cast<uint32_t>(rng());
}

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i + 4 <= n; i += 4) {
    const uint32_t w = corner_pattern(rng);
    std::memcpy(&v[i], &w, 4);
  }
  return v;
}

// Fills ACC rows 0 .. 2N-1 with int32 sums (an int8 matmul of random data), so acc_to_vmem
// has something to move.
std::vector<Instruction> fill_acc(const Layout& l) {
  ReadHost rh;
  rh.local_addr = 0;
  rh.rows = 2 * N;
  rh.host_addr = l.in.addr;
  ReadWeights rw;
  rw.tiles = 1;
  rw.host_addr = l.in.addr + 4096;
  Matmul mm;
  mm.switch_weights = true;
  mm.inner = static_cast<uint16_t>(2 * N);
  return {rh, rw, mm};
}

VmemDma random_vmem_dma(std::mt19937& rng, uint32_t host_base, uint32_t host_bytes) {
  VmemDma d;
  d.bf16 = rnd(rng, 2) == 0;
  d.rows = 1 + rnd(rng, 12);
  d.vmem_addr = static_cast<uint16_t>(rnd(rng, kVmemSpan - d.rows));
  switch (rnd(rng, 4)) {
    case 0:
      d.host_stride = 0;
      break;
    case 1:
      d.host_stride = d.row_bytes(N) % 16 == 0 ? d.row_bytes(N) : 0;
      break;
    case 2:
      d.host_stride = 16 * (1 + rnd(rng, 3));
      break;  // may overlap the rows
    default:
      d.host_stride = 16 * (1 + rnd(rng, 40));
      break;
  }
  const uint64_t span = d.host_span(N);
  d.host_addr = host_base + 16 * static_cast<uint32_t>(rnd(rng, (host_bytes - span) / 16));
  return d;
}

// A `vector` whose rows all lie in [0, kVmemSpan + 8): every func, every bmode it allows.
Vector random_vector(std::mt19937& rng) {
  static const uint8_t kFuncs[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x10, 0x11,
                                   0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x20,
                                   0x21, 0x22, 0x28, 0x29, 0x2A, 0x30, 0x31, 0x32, 0x38};
  for (;;) {
    Vector v;
    v.func = kFuncs[rnd(rng, sizeof kFuncs)];
    v.inner = static_cast<uint8_t>(1 + rnd(rng, 6));
    v.outer = static_cast<uint16_t>(1 + rnd(rng, 4));
    v.a_inner_stride = static_cast<uint8_t>(rnd(rng, 3));
    v.a_outer_stride = static_cast<uint16_t>(rnd(rng, 10));
    v.dst_inner_stride = static_cast<uint8_t>(rnd(rng, 3));
    v.dst_outer_stride = static_cast<uint16_t>(rnd(rng, 10));
    v.dst = static_cast<uint16_t>(rnd(rng, kVmemSpan));
    v.a = static_cast<uint16_t>(rnd(rng, kVmemSpan));
    const bool unary = v.func >= 0x20 && v.func <= 0x2A;
    if (v.func == 0x38) {
      v.bmode = BMode::Imm;
      v.b = rnd(rng, N);
    } else if (!unary) {
      v.bmode = static_cast<BMode>(rnd(rng, 4));
      v.b = v.bmode == BMode::Imm ? corner_pattern(rng) : rnd(rng, kVmemSpan);
      if (v.bmode == BMode::Imm && v.func >= 0x17 && v.func <= 0x19) v.b = rnd(rng, 40);
    }
    const uint32_t o = v.outer - 1u, i = v.inner - 1u;
    uint64_t last = std::max(v.dst_row(o, i), v.a_row(o, i) + (v.func == 0x38 && v.b > 0));
    if (!unary && v.bmode != BMode::Imm) last = std::max(last, v.b_row(o, i));
    if (last < kVmemSpan + 8) return v;
  }
}

// load_weights of one bf16 tile (random transpose, rows, strides) and matmul_bf16s over it
// into ACC rows 0 .. 2N-1 (the first with switch; overwrite or accumulate).
std::vector<Instruction> random_bf16_matmul(std::mt19937& rng) {
  std::vector<Instruction> out;
  LoadWeights lw;
  lw.transpose = rnd(rng, 2) == 0;
  lw.rows = static_cast<uint16_t>(1 + rnd(rng, N));
  lw.row_stride = static_cast<uint16_t>(rnd(rng, 3));
  lw.vmem_addr = static_cast<uint16_t>(rnd(rng, kVmemSpan + 8 - (lw.rows - 1u) * lw.row_stride));
  out.push_back(lw);
  const int mms = 1 + static_cast<int>(rnd(rng, 2));
  for (int m = 0; m < mms; ++m) {
    MatmulBf16 mb;
    mb.switch_weights = m == 0;
    mb.accumulate = rnd(rng, 2) == 0;
    mb.inner = static_cast<uint16_t>(1 + rnd(rng, N));
    mb.outer = static_cast<uint16_t>(1 + rnd(rng, 2));
    mb.inner_stride = static_cast<uint8_t>(rnd(rng, 3));
    mb.outer_stride = static_cast<uint16_t>(rnd(rng, 8));
    mb.acc_addr = static_cast<uint16_t>(rnd(rng, 2 * N - uint32_t{mb.inner} * mb.outer + 1));
    const uint64_t span = mb.last_vmem_row() - mb.vmem_addr + 1;
    mb.vmem_addr = static_cast<uint16_t>(rnd(rng, kVmemSpan + 8 - span));
    out.push_back(mb);
  }
  return out;
}

Instruction random_op(std::mt19937& rng, const Layout& l) {
  switch (rnd(rng, 7)) {
    case 5:
    case 6:
      return random_vector(rng);
    case 0:
    case 1: {
      ReadVmem r;
      static_cast<VmemDma&>(r) = random_vmem_dma(rng, l.in.addr, kInBytes);
      return r;
    }
    case 2: {
      WriteVmem w;
      static_cast<VmemDma&>(w) = random_vmem_dma(rng, l.out.addr, kOutBytes / 2);
      return w;
    }
    case 3: {
      AccToVmem a;
      a.rows = 1 + rnd(rng, 2 * N);
      a.acc_addr = static_cast<uint16_t>(rnd(rng, 2 * N - a.rows + 1));
      a.vmem_addr = static_cast<uint16_t>(rnd(rng, kVmemSpan - a.rows));
      return a;
    }
    default: {
      Transpose t;
      t.blocks = static_cast<uint16_t>(1 + rnd(rng, 3));
      t.src_row_stride = static_cast<uint16_t>(rnd(rng, 3));
      t.src_stride = static_cast<uint16_t>(rnd(rng, N + 1));
      t.dst_stride = static_cast<uint16_t>(rnd(rng, N + 1));
      const uint64_t src_span = t.last_src_row(N) - t.src + 1;
      const uint64_t dst_span = t.last_dst_row(N) - t.dst + 1;
      t.src = static_cast<uint16_t>(rnd(rng, kVmemSpan + 8 - src_span));
      t.dst = static_cast<uint16_t>(rnd(rng, kVmemSpan + 8 - dst_span));
      return t;
    }
  }
}

// The whole VMEM region the programs use, to host memory (fp32, bit for bit).
Instruction dump_vmem(const Layout& l) {
  WriteVmem w;
  w.vmem_addr = 0;
  w.rows = kVmemSpan + 8;
  w.host_addr = l.out.addr + kOutBytes / 2;
  return w;
}

struct Backends {
  std::unique_ptr<RtlDevice> rtl;
  std::unique_ptr<ModelDevice> model;
  Layout rl, ml;
};

Backends& backends() {
  static Backends b = [] {
    Backends x;
    x.rtl = std::make_unique<RtlDevice>();
    x.model = std::make_unique<ModelDevice>(x.rtl->params());
    x.rl = make_layout(*x.rtl);
    x.ml = make_layout(*x.model);
    return x;
  }();
  return b;
}

// Runs `program` (+ halt) on both backends from the same host memory; expects the same
// outcome and the same host memory.
// Returns the outcome's status.
RunOutcome::Status expect_same(const std::vector<Instruction>& body, const std::vector<uint8_t>& in,
                               const std::string& what) {
  Backends& b = backends();
  EXPECT_EQ(b.rl.in.addr, b.ml.in.addr);
  EXPECT_EQ(b.rl.out.addr, b.ml.out.addr);
  std::vector<Instruction> program = body;
  program.push_back(Halt{});
  RunOutcome o[2];
  std::vector<uint8_t> out[2];
  Device* devs[2] = {b.rtl.get(), b.model.get()};
  for (int k = 0; k < 2; ++k) {
    devs[k]->write(b.rl.in.addr, in);
    devs[k]->fill(b.rl.out.addr, kOutBytes, 0xA5);
    o[k] = devs[k]->try_run(program, 2'000'000);
    out[k] = devs[k]->read(b.rl.out.addr, kOutBytes);
  }
  SCOPED_TRACE(what + "\n" + listing(program));
  EXPECT_EQ(to_string(o[0].status), std::string(to_string(o[1].status))) << o[0].message;
  if (o[1].status == RunOutcome::Status::Error) {
    EXPECT_EQ(error_name(o[0].error), error_name(o[1].error)) << o[0].message;
    EXPECT_EQ(o[0].pc, o[1].pc);
  }
  size_t written = 0;  // words the program changed
  for (size_t i = 0; i < out[0].size(); i += 4) {
    uint32_t r = 0, m = 0;
    std::memcpy(&r, &out[0][i], 4);
    std::memcpy(&m, &out[1][i], 4);
    if (r != m) {
      ADD_FAILURE() << "host byte " << i << " of out: rtl 0x" << std::hex << r << ", model 0x" << m;
      break;
    }
    written += m != 0xA5A5A5A5u;
  }
  // The final dump of VMEM ran when the program was done.
  if (o[1].done()) {
    EXPECT_GE(written, size_t{(kVmemSpan + 8) * N / 2});
  } else {
    std::printf("%s: %s\n", what.c_str(), o[1].message.c_str());
  }
  return o[0].status;
}

TEST(TrainRtl, ReportsTheTrainingParameters) {
  const ChipParams& p = backends().rtl->params();
  EXPECT_EQ(p.vmem_rows, ChipParams::kTrainingVmemRows);
  EXPECT_EQ(p.training_ops, RtlDevice::kRtlTrainingOps);
  EXPECT_EQ(RtlDevice::compiled_vmem_rows(), ChipParams::kTrainingVmemRows);
  EXPECT_EQ(p.N, N);
}

TEST(TrainRtl, ReadAndWriteVmemDirected) {
  std::mt19937 rng(7);
  const std::vector<uint8_t> in = random_bytes(rng, kInBytes);
  const Layout& l = backends().rl;
  for (bool bf16 : {false, true}) {
    for (uint32_t stride : {0u, 16u, 48u, 4 * N + 32}) {
      ReadVmem r;
      r.bf16 = bf16;
      r.rows = 7;
      r.vmem_addr = 3;
      r.host_addr = l.in.addr + 32;
      r.host_stride = stride;
      WriteVmem w;
      w.bf16 = !bf16;
      w.rows = 9;
      w.vmem_addr = 2;
      w.host_addr = l.out.addr + 64;
      w.host_stride = stride;
      EXPECT_EQ(expect_same({r, w, dump_vmem(l)}, in,
                            "bf16 " + std::to_string(bf16) + " stride " + std::to_string(stride)),
                RunOutcome::Status::Done);
    }
  }
}

TEST(TrainRtl, AccToVmemAndTransposeDirected) {
  std::mt19937 rng(8);
  const std::vector<uint8_t> in = random_bytes(rng, kInBytes);
  const Layout& l = backends().rl;
  std::vector<Instruction> p = fill_acc(l);
  AccToVmem a;
  a.acc_addr = 1;
  a.vmem_addr = 5;
  a.rows = 2 * N - 1;
  p.push_back(a);
  Transpose t;  // in place
  t.src = 5;
  t.dst = 5;
  p.push_back(t);
  Transpose t2;  // two blocks, strided source rows
  t2.src = 0;
  t2.dst = 40;
  t2.blocks = 2;
  t2.src_stride = 1;
  t2.dst_stride = static_cast<uint16_t>(N);
  t2.src_row_stride = 2;
  if (t2.last_dst_row(N) >= kVmemSpan + 8) t2.dst = static_cast<uint16_t>(kVmemSpan + 8 - 2 * N);
  p.push_back(t2);
  p.push_back(dump_vmem(l));
  EXPECT_EQ(expect_same(p, in, "acc_to_vmem + transpose"), RunOutcome::Status::Done);
}

// The training units on the trace port (Device::timeline): acc_to_vmem and transpose on the
// move unit, vector, load_weights, each with its own unit code and a duration; read_vmem on
// read_host, write_vmem on write_host, matmul_bf16 on matmul. An instruction that reads what
// another one writes issues in the very cycle that one is finished (the controller's hazard
// check clears then): a done pulse a cycle early or late fails the equalities.
TEST(TrainRtl, TimelineHasTheTrainingUnits) {
  RtlDevice& dev = *backends().rtl;
  const Layout& l = backends().rl;
  std::mt19937 rng(9);
  dev.write(l.in.addr, random_bytes(rng, kInBytes));
  std::vector<Instruction> p = fill_acc(l);  // 0-2: read_host, read_weights, matmul
  ReadVmem r;                                // 3: VMEM rows 0 .. 2N-1
  r.rows = 2 * N;
  r.host_addr = l.in.addr;
  p.push_back(r);
  Vector big;  // 4: rows 40 .. 40+2N-1 = rows 0.. + rows 0..
  big.inner = static_cast<uint8_t>(2 * N);
  big.dst = 40;
  p.push_back(big);
  Vector small = big;  // 5: one row, reads row 40 (written by 4)
  small.inner = 1;
  small.a = 40;
  small.dst = 39;
  p.push_back(small);
  AccToVmem a;  // 6: after the matmul (ACC rows 0 .. 2N-1)
  a.rows = 2 * N;
  a.vmem_addr = static_cast<uint16_t>(40 + 2 * N);
  p.push_back(a);
  Transpose t;  // 7: reads what 6 wrote
  t.src = a.vmem_addr;
  t.dst = static_cast<uint16_t>(a.vmem_addr + 2 * N);
  p.push_back(t);
  LoadWeights lw;  // 8: reads rows 40 .. 40+N-1 (written by 4)
  lw.vmem_addr = 40;
  lw.rows = static_cast<uint16_t>(N);
  p.push_back(lw);
  MatmulBf16 mb;  // 9
  mb.switch_weights = true;
  mb.vmem_addr = 0;
  mb.inner = static_cast<uint16_t>(N);
  p.push_back(mb);
  WriteVmem w;  // 10: reads what 7 wrote
  w.vmem_addr = t.dst;
  w.rows = N;
  w.host_addr = l.out.addr;
  p.push_back(w);
  p.push_back(Halt{});

  dev.record_timeline(true);
  const RunOutcome o = dev.try_run(p, 2'000'000);
  const std::vector<InstrEvent> tl = dev.timeline();
  dev.record_timeline(false);
  SCOPED_TRACE(listing(p));
  ASSERT_TRUE(o.done()) << o.message;
  ASSERT_EQ(tl.size(), p.size() - 1);
  const ExecUnit want[] = {ExecUnit::ReadHost, ExecUnit::ReadWeights, ExecUnit::Matmul,
                           ExecUnit::ReadHost, ExecUnit::Vector,      ExecUnit::Vector,
                           ExecUnit::Move,     ExecUnit::Move,        ExecUnit::LoadWeights,
                           ExecUnit::Matmul,   ExecUnit::WriteHost};
  std::map<ExecUnit, uint64_t> last_end;
  for (size_t i = 0; i < tl.size(); ++i) {
    const InstrEvent& e = tl[i];
    SCOPED_TRACE("pc " + std::to_string(e.pc) + " [" + std::to_string(e.start) + ", " +
                 std::to_string(e.end) + ")");
    EXPECT_EQ(e.pc, i);
    EXPECT_TRUE(e.complete);
    EXPECT_EQ(unit_name(e.unit), unit_name(want[i]));
    EXPECT_LT(e.start, e.end);
    EXPECT_LE(e.end, o.stats.cycles);
    if (e.unit != ExecUnit::Matmul && e.unit != ExecUnit::ReadWeights) {
      EXPECT_GE(e.start, last_end[e.unit]);  // one instruction at a time
    }
    last_end[e.unit] = e.end;
  }
  // Dependencies (VMEM and ACC rows) issue exactly when their producer is finished.
  EXPECT_EQ(tl[4].start, tl[3].end);   // vector after read_vmem
  EXPECT_EQ(tl[5].start, tl[4].end);   // vector after vector
  EXPECT_EQ(tl[7].start, tl[6].end);   // transpose after acc_to_vmem
  EXPECT_EQ(tl[10].start, tl[7].end);  // write_vmem after transpose
  EXPECT_GE(tl[6].start, tl[2].end);   // acc_to_vmem after the matmul
  EXPECT_GE(tl[8].start, tl[4].end);   // load_weights after the vector
  EXPECT_GT(tl[9].end, tl[8].end);     // matmul_bf16 uses the tile load_weights made
  // acc_to_vmem moves its 2N rows at most two per cycle (a pair per cycle through the
  // accumulators' two read ports and two VMEM write clients). (No such bound for the vector
  // unit: its rows per cycle are its own, and its VMEM writes yield to the move unit's, so a
  // one-row vector running next to acc_to_vmem can take longer than a 2N-row one alone.)
  EXPECT_GE(tl[6].end - tl[6].start, uint64_t{N});
}

// Back-to-back load_weights overlap: the controller offers the next one while the previous one
// drains its last tile, and tpu_load_weights fills the next tile meanwhile. Two load_weights of
// 2 tiles (the second transposed) take one cycle more than one of 4 tiles (the unit takes the
// next command in the cycle after the previous one's last VMEM read), not the first tile's fill
// again (N cycles); the results match the golden model.
TEST(TrainRtl, BackToBackLoadWeightsOverlap) {
  RtlDevice& dev = *backends().rtl;
  const Layout& l = backends().rl;
  std::mt19937 rng(11);
  const std::vector<uint8_t> in = random_bytes(rng, kInBytes);
  auto program = [&](bool split) {
    std::vector<Instruction> p;
    ReadVmem r;  // 0: every VMEM row the dump reads (the weights: rows 0 .. 4N-1)
    r.rows = kVmemSpan + 8;
    r.host_addr = l.in.addr;
    p.push_back(r);
    LoadWeights a;  // 1 (and 2): tiles of rows 0 .. 4N-1
    a.rows = static_cast<uint16_t>(N);
    a.tiles = split ? 2 : 4;
    a.tile_stride = static_cast<uint16_t>(N);
    p.push_back(a);
    if (split) {
      LoadWeights b = a;
      b.vmem_addr = static_cast<uint16_t>(2 * N);
      b.transpose = true;
      p.push_back(b);
    }
    for (uint32_t t = 0; t < 4; ++t) {
      MatmulBf16 mb;
      mb.switch_weights = true;
      mb.vmem_addr = static_cast<uint16_t>(N * t);
      mb.inner = static_cast<uint16_t>(N);
      mb.acc_addr = static_cast<uint16_t>(N * t);
      p.push_back(mb);
    }
    AccToVmem av;  // ACC rows 0 .. 4N-1 over the weights' rows
    av.rows = 4 * N;
    p.push_back(av);
    p.push_back(dump_vmem(l));
    return p;
  };
  uint64_t span[2] = {0, 0};
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split ? "two load_weights" : "one load_weights");
    dev.record_timeline(true);
    EXPECT_EQ(expect_same(program(split), in, split ? "2 + 2 tiles" : "4 tiles"),
              RunOutcome::Status::Done);
    const std::vector<InstrEvent> tl = dev.timeline();
    dev.record_timeline(false);
    const size_t last_lw = split ? 2 : 1;
    ASSERT_GT(tl.size(), last_lw);
    ASSERT_EQ(unit_name(tl[last_lw].unit), unit_name(ExecUnit::LoadWeights));
    for (size_t i = 1; i <= last_lw; ++i) EXPECT_TRUE(tl[i].complete) << "no done pulse, pc " << i;
    span[split] = tl[last_lw].end - tl[1].start;
    if (split) {
      EXPECT_LT(tl[2].start, tl[1].end) << "the second load_weights waited for the first";
      EXPECT_GT(tl[2].end, tl[1].end);
    }
  }
  EXPECT_EQ(span[1], span[0] + 1) << "4 tiles in one load_weights: " << span[0]
                                  << " cycles, in two: " << span[1];
  EXPECT_GE(span[0], uint64_t{4 * N});
}

// Random programs of the four instructions (their hazards on VMEM rows and host bytes
// included: consecutive instructions overlap often).
TEST(TrainRtl, RandomProgramsMatchTheGoldenModel) {
  std::mt19937 rng(1000 + N);
  const Layout& l = backends().rl;
  for (int prog = 0; prog < 150; ++prog) {
    const std::vector<uint8_t> in = random_bytes(rng, kInBytes);
    std::vector<Instruction> p = fill_acc(l);
    const int ops = 3 + static_cast<int>(rnd(rng, 14));
    for (int i = 0; i < ops; ++i) {
      if (rnd(rng, 5) == 0) {
        for (const Instruction& x : random_bf16_matmul(rng)) p.push_back(x);
      } else {
        p.push_back(random_op(rng, l));
      }
    }
    p.push_back(dump_vmem(l));
    EXPECT_EQ(expect_same(p, in, "program " + std::to_string(prog)), RunOutcome::Status::Done);
    if (HasFailure()) return;
  }
}

// Every static fault of the four instructions, and ERR_OPCODE for the training opcodes this
// RTL does not execute yet, at the same index as the golden model; earlier instructions'
// results in host memory.
TEST(TrainRtl, FaultsMatchTheGoldenModel) {
  std::mt19937 rng(77);
  const std::vector<uint8_t> in = random_bytes(rng, kInBytes);
  const Layout& l = backends().rl;
  const uint32_t vrows = backends().rtl->params().vmem_rows;
  std::vector<std::pair<std::string, Instruction>> bad;
  {
    ReadVmem r;
    r.rows = 0;
    r.host_addr = l.in.addr;
    bad.push_back({"read_vmem rows 0", r});
    r.rows = 2;
    r.host_addr = l.in.addr + 8;
    bad.push_back({"read_vmem unaligned", r});
    r.host_addr = l.in.addr;
    r.host_stride = 24;
    bad.push_back({"read_vmem stride unaligned", r});
    r.host_stride = 0;
    r.host_addr = l.in.addr + kInBytes + kOutBytes + 4096;
    bad.push_back({"read_vmem outside the windows", r});
    r.host_addr = l.in.addr;
    r.vmem_addr = static_cast<uint16_t>(vrows - 1);
    bad.push_back({"read_vmem VMEM range", r});
    r.host_addr = 0xFFFFFFF0u;
    bad.push_back({"read_vmem host range and VMEM range (host first)", r});
  }
  {
    WriteVmem w;
    w.rows = 3;
    w.host_addr = l.out.addr;
    w.vmem_addr = static_cast<uint16_t>(vrows - 2);
    bad.push_back({"write_vmem VMEM range", w});
    w.vmem_addr = 0;
    w.host_stride = 0x20000;
    bad.push_back({"write_vmem stride past the window", w});
    w.host_stride = 0;
    w.host_addr = Device::kCmdBase;
    bad.push_back({"write_vmem into the command buffer", w});
  }
  {
    AccToVmem a;
    a.rows = 0;
    bad.push_back({"acc_to_vmem rows 0", a});
    a.rows = 4;
    a.acc_addr = static_cast<uint16_t>(backends().rtl->params().acc_rows - 2);
    a.vmem_addr = static_cast<uint16_t>(vrows - 1);
    bad.push_back({"acc_to_vmem ACC range first", a});
    a.acc_addr = 0;
    bad.push_back({"acc_to_vmem VMEM range", a});
  }
  {
    Transpose t;
    t.blocks = 0;
    bad.push_back({"transpose blocks 0", t});
    t.blocks = 2;
    t.src_stride = static_cast<uint16_t>(vrows / 2);
    t.src = static_cast<uint16_t>(vrows / 2);
    bad.push_back({"transpose source range", t});
    t.src = 0;
    t.dst = static_cast<uint16_t>(vrows - N);
    t.dst_stride = 1;
    bad.push_back({"transpose destination range", t});
  }
  {
    LoadWeights lw;
    lw.rows = 0;
    bad.push_back({"load_weights rows 0", lw});
    lw.rows = static_cast<uint16_t>(N + 1);
    bad.push_back({"load_weights rows N + 1", lw});
    lw.rows = static_cast<uint16_t>(N);
    lw.tiles = 2;
    lw.tile_stride = static_cast<uint16_t>(vrows - N + 1);
    bad.push_back({"load_weights VMEM range", lw});
    lw.tile_stride = 0;
    lw.tiles = static_cast<uint16_t>(backends().rtl->params().wfifo_tiles + 3);
    bad.push_back({"load_weights overflow", lw});
    MatmulBf16 mb;
    mb.inner = 0;
    bad.push_back({"matmul_bf16 inner 0", mb});
    mb.inner = 2;
    mb.acc_addr = static_cast<uint16_t>(backends().rtl->params().acc_rows - 1);
    mb.vmem_addr = static_cast<uint16_t>(vrows - 1);
    bad.push_back({"matmul_bf16 ACC range before VMEM range", mb});
    mb.acc_addr = 0;
    bad.push_back({"matmul_bf16 VMEM range", mb});
    mb.vmem_addr = 0;
    mb.switch_weights = true;
    bad.push_back({"matmul_bf16 switch without a tile", mb});
    mb.switch_weights = false;
    bad.push_back({"matmul_bf16 on the int8 tile (ERR_WEIGHT_TYPE)", mb});
    Vector v;
    v.inner = 0;
    bad.push_back({"vector inner 0", v});
    v.inner = 2;
    v.func = 0x09;
    bad.push_back({"vector func 0x09", v});
    v.func = 0x20;
    v.bmode = BMode::Imm;
    bad.push_back({"vector unary with bmode 3", v});
    v.func = 0x38;
    v.b = N;
    bad.push_back({"vector align shift N", v});
    v.b = 1;
    v.a = static_cast<uint16_t>(vrows - 2);
    bad.push_back({"vector align reads A + 1 past the end", v});
    v.a = 0;
    v.func = 0x00;
    v.bmode = BMode::RowDst;
    v.b = vrows - 1;
    bad.push_back({"vector B range", v});
    v.b = 0;
    v.dst = static_cast<uint16_t>(vrows - 1);
    bad.push_back({"vector destination range", v});
    RawInstruction raw;
    raw.bytes.fill(0);
    raw.bytes[0] = 0x08;
    raw.bytes[1] = 0x02;  // read_vmem with a reserved bit (9) set
    bad.push_back({"read_vmem reserved bits", raw});
    raw.bytes[0] = 0x0F;
    bad.push_back({"opcode 0x0F", raw});
  }
  {
    // An int8 matmul on a bf16 tile.
    LoadWeights lw;
    lw.rows = static_cast<uint16_t>(N);
    MatmulBf16 mb;
    mb.switch_weights = true;
    Matmul mm;
    std::vector<Instruction> p = fill_acc(l);
    p.insert(p.end(), {lw, mb, mm});
    EXPECT_EQ(expect_same(p, in, "matmul on a bf16 tile"), RunOutcome::Status::Error);
  }
  for (const auto& [name, instr] : bad) {
    ReadVmem before;
    before.rows = 4;
    before.host_addr = l.in.addr;
    std::vector<Instruction> p = fill_acc(l);
    p.insert(p.end(), {before, dump_vmem(l), instr, dump_vmem(l)});
    EXPECT_EQ(expect_same(p, in, name), RunOutcome::Status::Error);
  }
}

}  // namespace

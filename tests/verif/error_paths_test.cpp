// SPDX-License-Identifier: Apache-2.0
// Every error path of docs/isa.md, on both backends (the Verilated chip and the golden
// model), each compared with the other and with the expected code and faulting index:
// illegal opcode, every reserved bit of every opcode, UB/ACC/PARAM ranges at their exact
// boundaries, DMA outside the enabled windows (nothing written), AXI SLVERR/DECERR on reads,
// writes and instruction fetch, command buffer overrun, a run that never ends (cycle limit),
// and soft reset in the middle of a matmul / DMA / activate followed by a correct run.
//
// The typed exceptions of the driver's device layer (driver/device.h) are tested with that
// layer; these tests work at the Chip / GoldenModel level, which is what they turn into
// exceptions (ERR_CODE, ERR_PC, STATUS).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chip_backend.h"
#include "random_program.h"

namespace {

using namespace tpu;
using namespace tpu::verif;

constexpr uint32_t N = TPU_SIM_N;
using Memory = std::vector<std::pair<uint32_t, std::vector<uint8_t>>>;

struct Backends {
  ChipBackend chip;
  GoldenBackend golden{ChipParams::with_n(N)};
};
Backends& backends() {
  static Backends* b = new Backends;
  return *b;
}
const ChipParams& params() {
  static ChipParams p = ChipParams::with_n(N);
  return p;
}

std::string show(const Outcome& o) {
  if (o.hung) return "hung";
  if (o.done) return "done";
  return std::string(error_name(ErrorCode(o.err_code))) + " at " + std::to_string(o.err_pc);
}

// Runs `program` on both backends; expects both to report `code` at `pc` (ERR_NONE: done),
// and (unless the state is undefined after an AXI error) the same host memory.
void expect_both(const std::vector<Instruction>& program, ErrorCode code, uint32_t pc,
                 const RunConfig& cfg = {}, const Memory& mem = {}) {
  auto& b = backends();
  SCOPED_TRACE("program:\n" + listing(program));
  const Outcome g = b.golden.run(mem, cfg, program);
  const Outcome c = b.chip.run(mem, cfg, program);
  const std::string want = code == ErrorCode::ERR_NONE
                               ? "done"
                               : std::string(error_name(code)) + " at " + std::to_string(pc);
  EXPECT_EQ(show(g), want) << "golden: " << b.golden.last_message();
  if (!same_fetch_fault(c, g, b.golden.last_message())) {
    EXPECT_EQ(show(c), want);
  }
  if (code == ErrorCode::ERR_AXI_READ || code == ErrorCode::ERR_AXI_WRITE) return;
  EXPECT_EQ(c.retired, g.retired);
  EXPECT_TRUE(c.out == g.out) << "kOut differs";
  EXPECT_TRUE(c.data == g.data) << "kData differs";
}

// A short valid program, so every test also checks that the chip still works after the fault.
void expect_chip_still_works(uint64_t seed = 42) {
  auto& b = backends();
  GenOptions opt;
  opt.n = N;
  opt.fault_probability = 0;
  opt.max_length = 20;
  const TestCase tc = generate_program(seed, opt);
  const CaseResult r = run_case(b.chip, b.golden, tc);
  EXPECT_TRUE(r.ok) << r.mismatch;
}

std::vector<uint8_t> pattern(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 7 + salt);
  return v;
}

TEST(ErrorPaths, IllegalOpcode) {
  for (unsigned op : {0x08u, 0x0Fu, 0x10u, 0x2Au, 0x7Fu, 0x80u, 0xFFu}) {
    RawInstruction raw;
    raw.bytes[0] = uint8_t(op);
    expect_both({Nop{}, raw, Halt{}}, ErrorCode::ERR_OPCODE, 1);
    raw.bytes[15] = 0xFF;  // reserved-looking bits too: the opcode is reported
    expect_both({raw, Halt{}}, ErrorCode::ERR_OPCODE, 0);
  }
  expect_chip_still_works();
}

// Every reserved bit of every opcode, one at a time.
TEST(ErrorPaths, EveryReservedBit) {
  const std::vector<Instruction> bases = {Nop{},
                                          ReadHost{HostDest::Ub, 0, 1, kDataBase},
                                          ReadWeights{1, kDataBase},
                                          [] {
                                            Matmul m;
                                            m.switch_weights = true;
                                            return Instruction(m);
                                          }(),
                                          [] {
                                            Activate a;
                                            a.width = 1;
                                            a.height = 1;
                                            return Instruction(a);
                                          }(),
                                          WriteHost{0, 1, kOutBase},
                                          Sync{},
                                          Halt{}};
  for (const auto& base : bases) {
    const InstrBytes word = encode(base);
    const Opcode op = Opcode(word[0]);
    for (unsigned bit = 8; bit < 128; ++bit) {
      bool defined = false;
      for (const auto& f : instruction_fields(op))
        defined |= bit >= f.bits.lo && bit <= f.bits.hi();
      if (defined) continue;
      RawInstruction raw{word};
      raw.bytes[bit / 8] |= uint8_t(1u << (bit % 8));
      SCOPED_TRACE(std::string(mnemonic(op)) + " bit " + std::to_string(bit));
      expect_both({Nop{}, Nop{}, raw, Halt{}}, ErrorCode::ERR_RESERVED, 2);
      if (HasFailure()) return;
    }
  }
  expect_chip_still_works();
}

TEST(ErrorPaths, FieldErrors) {
  ReadHost bad_dest{HostDest(3), 0, 1, kDataBase};
  expect_both({bad_dest, Halt{}}, ErrorCode::ERR_FIELD, 0);
  expect_both({ReadHost{HostDest::Ub, 0, 0, kDataBase}, Halt{}}, ErrorCode::ERR_FIELD, 0);
  expect_both({WriteHost{0, 0, kOutBase}, Halt{}}, ErrorCode::ERR_FIELD, 0);
  expect_both({ReadWeights{0, kDataBase}, Halt{}}, ErrorCode::ERR_FIELD, 0);
  Matmul m;
  m.switch_weights = true;
  m.inner = 0;
  expect_both({ReadWeights{1, kDataBase}, m, Halt{}}, ErrorCode::ERR_FIELD, 1);
  m.inner = 1;
  m.outer = 0;
  expect_both({ReadWeights{1, kDataBase}, m, Halt{}}, ErrorCode::ERR_FIELD, 1);
  Activate a;
  a.width = 3;
  a.height = 3;
  for (int k = 0; k < 9; ++k) {
    Activate x = a;
    if (k == 0) x.width = 0;
    if (k == 1) x.height = 0;
    if (k == 2) x.pool_k = 0;
    if (k == 3) x.pool_s = 0;
    if (k == 4) x.pool_k = 4;
    if (k == 5) {
      x.width = 5;
      x.pool_k = 4;
    }              // pool_k > height only
    if (k == 6) {  // a pad equal to the window
      x.pool_k = 2;
      x.pad_top = 2;
    }
    if (k == 7) {  // the window larger than the padded image: 3 + 1 + 1 < 6
      x.pool_k = 6;
      x.pad_left = 1;
      x.pad_right = 1;
      x.height = 6;
    }
    if (k == 8) {  // the largest pad, with a window too small for it
      x.pool_k = 7;
      x.pad_bottom = 7;
    }
    expect_both({Nop{}, x, Halt{}}, ErrorCode::ERR_FIELD, 1);
  }
  // A raw int32 activate with pooling, a stride, padding, a function or an unsigned output.
  a.raw = true;
  for (int k = 0; k < 6; ++k) {
    Activate x = a;
    if (k == 0) x.pool_k = 2;
    if (k == 1) x.pool_s = 2;
    if (k == 2) {
      x.pool_k = 2;
      x.pad_right = 1;
    }
    if (k == 3) x.func = ActFunc::Relu;
    if (k == 4) x.func = ActFunc::Lut;
    if (k == 5) x.out_unsigned = true;
    expect_both({Nop{}, x, Halt{}}, ErrorCode::ERR_FIELD, 1);
  }
  expect_chip_still_works();
}

// Exact boundaries: the last row in range runs, one more faults.
TEST(ErrorPaths, UbAccParamRanges) {
  const ChipParams& p = params();
  const Memory mem = {{kDataBase, pattern(kDataSize, 3)}};
  // UB via read_host / write_host
  expect_both({ReadHost{HostDest::Ub, p.ub_rows - 2, 2, kDataBase}, Halt{}}, ErrorCode::ERR_NONE, 0,
              {}, mem);
  expect_both({ReadHost{HostDest::Ub, p.ub_rows - 2, 3, kDataBase}, Halt{}},
              ErrorCode::ERR_UB_RANGE, 0, {}, mem);
  expect_both({ReadHost{HostDest::Ub, 0xFFFFFF, 0xFFFFFF, kDataBase}, Halt{}},
              ErrorCode::ERR_UB_RANGE, 0, {}, mem);
  expect_both({WriteHost{p.ub_rows - 1, 1, kOutBase}, Halt{}}, ErrorCode::ERR_NONE, 0, {}, mem);
  expect_both({WriteHost{p.ub_rows - 1, 2, kOutBase}, Halt{}}, ErrorCode::ERR_UB_RANGE, 0, {}, mem);
  // matmul: largest UB row read, ACC rows
  Matmul m;
  m.switch_weights = true;
  m.inner = 3;
  m.inner_stride = 5;
  m.outer = 2;
  m.outer_stride = 100;
  m.ub_addr = p.ub_rows - 1 - (100 + 2 * 5);
  m.acc_addr = uint16_t(p.acc_rows - 6);
  expect_both({ReadWeights{1, kDataBase}, m, Halt{}}, ErrorCode::ERR_NONE, 0, {}, mem);
  Matmul m2 = m;
  m2.ub_addr += 1;
  expect_both({ReadWeights{1, kDataBase}, m2, Halt{}}, ErrorCode::ERR_UB_RANGE, 1, {}, mem);
  m2 = m;
  m2.acc_addr += 1;
  expect_both({ReadWeights{1, kDataBase}, m2, Halt{}}, ErrorCode::ERR_ACC_RANGE, 1, {}, mem);
  m2.acc_addr = 0xFFFF;
  m2.ub_addr = 0xFFFFFF;
  expect_both({ReadWeights{1, kDataBase}, m2, Halt{}}, ErrorCode::ERR_UB_RANGE, 1, {}, mem);
  // activate: ACC region and UB output
  Activate a;
  a.width = 4;
  a.height = 3;
  a.pool_k = 2;
  a.pool_s = 1;      // Ho = 2, Wo = 3
  a.ub_stride = 10;  // last UB row = ub_addr + 10 + 2
  a.acc_addr = uint16_t(p.acc_rows - 12);
  a.ub_addr = p.ub_rows - 13;
  expect_both({a, Halt{}}, ErrorCode::ERR_NONE, 0, {}, mem);
  Activate a2 = a;
  a2.acc_addr += 1;
  expect_both({a2, Halt{}}, ErrorCode::ERR_ACC_RANGE, 0, {}, mem);
  a2 = a;
  a2.ub_addr += 1;
  expect_both({a2, Halt{}}, ErrorCode::ERR_UB_RANGE, 0, {}, mem);
  a2.acc_addr = 0xFFFF;
  expect_both({a2, Halt{}}, ErrorCode::ERR_UB_RANGE, 0, {}, mem);  // lowest code wins
  a2.slot = uint8_t(p.qp_slots - 1);
  a2.ub_addr = 0;
  expect_both({a2, Halt{}}, ErrorCode::ERR_ACC_RANGE, 0, {}, mem);
  // A raw activate writes four UB rows per pixel: last row = ub_addr + 2*10 + 4*4 - 1.
  Activate r;
  r.raw = true;
  r.width = 4;
  r.height = 3;
  r.ub_stride = 10;
  r.acc_addr = uint16_t(p.acc_rows - 12);
  r.ub_addr = p.ub_rows - 36;
  expect_both({r, Halt{}}, ErrorCode::ERR_NONE, 0, {}, mem);
  r.ub_addr += 1;
  expect_both({r, Halt{}}, ErrorCode::ERR_UB_RANGE, 0, {}, mem);
  // PARAM and LUT rows
  expect_both({ReadHost{HostDest::Param, p.param_rows() - 12, 12, kDataBase}, Halt{}},
              ErrorCode::ERR_NONE, 0, {}, mem);
  expect_both({ReadHost{HostDest::Param, p.param_rows() - 12, 13, kDataBase}, Halt{}},
              ErrorCode::ERR_PARAM_RANGE, 0, {}, mem);
  expect_both({ReadHost{HostDest::Lut, 0, p.lut_rows(), kDataBase}, Halt{}}, ErrorCode::ERR_NONE, 0,
              {}, mem);
  expect_both({ReadHost{HostDest::Lut, 1, p.lut_rows(), kDataBase}, Halt{}},
              ErrorCode::ERR_PARAM_RANGE, 0, {}, mem);
  expect_chip_still_works();
}

TEST(ErrorPaths, WeightsErrors) {
  const ChipParams& p = params();
  Matmul m;
  expect_both({m, Halt{}}, ErrorCode::ERR_NO_WEIGHTS, 0);  // no tile made active in this run
  m.switch_weights = true;
  expect_both({m, Halt{}}, ErrorCode::ERR_NO_WEIGHTS, 0);  // nothing pushed
  expect_both({ReadWeights{1, kDataBase}, m, m, Halt{}}, ErrorCode::ERR_NO_WEIGHTS, 2);
  expect_both({ReadWeights{p.wfifo_tiles + 2, kDataBase}, Halt{}}, ErrorCode::ERR_NONE, 0);
  expect_both({ReadWeights{p.wfifo_tiles + 3, kDataBase}, Halt{}}, ErrorCode::ERR_WEIGHT_OVERFLOW,
              0);
  expect_both({ReadWeights{2, kDataBase}, m, ReadWeights{p.wfifo_tiles + 1, kDataBase}, Halt{}},
              ErrorCode::ERR_NONE, 0);
  expect_both({ReadWeights{2, kDataBase}, m, ReadWeights{p.wfifo_tiles + 2, kDataBase}, Halt{}},
              ErrorCode::ERR_WEIGHT_OVERFLOW, 2);
  // 2^24-1 tiles also wrap the host address space: the lower code wins.
  expect_both({ReadWeights{0xFFFFFF, kDataBase}, Halt{}},
              uint64_t{0xFFFFFF} * N * N + kDataBase > 0xFFFF'FFFFull
                  ? ErrorCode::ERR_HOST_RANGE
                  : ErrorCode::ERR_WEIGHT_OVERFLOW,
              0);
  expect_both({ReadWeights{0x10000 / (N * N) + 1, 0xFFFF'0000u}, Halt{}}, ErrorCode::ERR_HOST_RANGE,
              0);
  expect_chip_still_works();
}

TEST(ErrorPaths, AlignmentAndAddressWrap) {
  for (uint32_t off = 1; off < 16; off += 7) {
    expect_both({ReadHost{HostDest::Ub, 0, 1, kDataBase + off}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
    expect_both({WriteHost{0, 1, kOutBase + off}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
    expect_both({ReadWeights{1, kDataBase + off}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
  }
  expect_both({ReadHost{HostDest::Ub, 0, 32 / N, 0xFFFF'FFF0u}, Halt{}}, ErrorCode::ERR_HOST_RANGE,
              0);
  expect_both({WriteHost{0, 32 / N, 0xFFFF'FFF0u}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 0);
  expect_both({ReadWeights{2, uint32_t(0x1'0000'0000ull - N * N)}, Halt{}},
              ErrorCode::ERR_HOST_RANGE, 0);
  expect_both({ReadHost{HostDest::Ub, 0, 2, 0xFFFF'FFF1u}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
  // Misaligned and past 2^32 at once, at every N (2 rows wrap only from N = 8 on): ERR_ALIGN
  // (code 7) wins over ERR_HOST_RANGE (code 8), for each host instruction.
  expect_both({ReadHost{HostDest::Ub, 0, 32 / N, 0xFFFF'FFF1u}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
  expect_both({WriteHost{0, 32 / N, 0xFFFF'FFF8u}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
  expect_both({ReadWeights{2, 0xFFFF'FFF4u}, Halt{}}, ErrorCode::ERR_ALIGN, 0);
  expect_chip_still_works();
}

// DMA windows: accesses outside every enabled window fault before anything moves.
TEST(ErrorPaths, DmaOutsideRegisteredBuffers) {
  RunConfig cfg;
  cfg.windows[0] = {kCmdBase, kCmdSize};
  cfg.windows[3] = {kDataBase, kDataSize};
  cfg.windows[5] = {kOutBase, kOutSize};
  const Memory mem = {{kDataBase, pattern(kDataSize, 9)}, {kSpareBase, pattern(kSpareSize, 1)}};
  // In the windows: fine.
  expect_both({ReadHost{HostDest::Ub, 0, 4, kDataBase}, WriteHost{0, 4, kOutBase}, Halt{}},
              ErrorCode::ERR_NONE, 0, cfg, mem);
  // Misaligned and outside every window: ERR_ALIGN wins over ERR_HOST_RANGE.
  expect_both({ReadHost{HostDest::Ub, 0, 4, kSpareBase + 8}, Halt{}}, ErrorCode::ERR_ALIGN, 0, cfg,
              mem);
  expect_both({WriteHost{0, 4, kSpareBase + 4}, Halt{}}, ErrorCode::ERR_ALIGN, 0, cfg, mem);
  // A write outside: nothing written, earlier instructions complete.
  expect_both({ReadHost{HostDest::Ub, 0, 4, kDataBase}, WriteHost{0, 4, kOutBase},
               WriteHost{0, 4, kSpareBase}, WriteHost{0, 4, kOutBase + 64}, Halt{}},
              ErrorCode::ERR_HOST_RANGE, 2, cfg, mem);
  auto& b = backends();
  const std::vector<uint8_t> spare = pattern(kSpareSize, 1);
  EXPECT_EQ(b.chip.chip().read_mem(kSpareBase, 64),
            std::vector<uint8_t>(spare.begin(), spare.begin() + 64));
  EXPECT_EQ(b.chip.chip().read_mem(kOutBase + 64, 64), std::vector<uint8_t>(64, 0));
  // Crossing the end of a window, reads, weights.
  expect_both({WriteHost{0, 32 / N, kOutBase + kOutSize - 16}, Halt{}}, ErrorCode::ERR_HOST_RANGE,
              0, cfg, mem);
  expect_both({ReadHost{HostDest::Ub, 0, 1, kSpareBase}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 0, cfg,
              mem);
  expect_both({ReadHost{HostDest::Param, 0, 1, kSpareBase}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 0,
              cfg, mem);
  expect_both({ReadWeights{1, kSpareBase}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 0, cfg, mem);
  expect_both({ReadWeights{1, kDataBase + kDataSize - N * N + 16}, Halt{}},
              ErrorCode::ERR_HOST_RANGE, 0, cfg, mem);
  // Two adjacent windows do not make one: a range across the boundary faults.
  RunConfig split = cfg;
  split.windows[3] = {kDataBase, 0x8000};
  split.windows[6] = {kDataBase + 0x8000, 0x8000};
  expect_both({ReadHost{HostDest::Ub, 0, 32 / N, kDataBase + 0x8000 - 16}, Halt{}},
              ErrorCode::ERR_HOST_RANGE, 0, split, mem);
  expect_both({ReadHost{HostDest::Ub, 0, 1, kDataBase + 0x8000 - 16},
               ReadHost{HostDest::Ub, 1, 1, kDataBase + 0x8000}, Halt{}},
              ErrorCode::ERR_NONE, 0, split, mem);
  // The command buffer itself outside the windows: ERR_HOST_RANGE at index 0, nothing fetched.
  RunConfig no_cmd = cfg;
  no_cmd.windows[0] = {kCmdBase, 32};
  expect_both({Nop{}, Nop{}, Nop{}, Halt{}}, ErrorCode::ERR_HOST_RANGE, 0, no_cmd, mem);
  expect_both({Nop{}, Halt{}}, ErrorCode::ERR_NONE, 0, no_cmd, mem);
  expect_chip_still_works();
}

// Host memory answering SLVERR (injected) or DECERR (unmapped).
TEST(ErrorPaths, AxiErrorResponses) {
  const Memory mem = {{kDataBase, pattern(kDataSize, 5)}};
  RunConfig slv;
  slv.slverr = {{kDataBase + 0x200, 16}};
  expect_both({ReadHost{HostDest::Ub, 0, 8, kDataBase + 0x180}, Halt{}}, ErrorCode::ERR_NONE, 0,
              slv, mem);
  expect_both({Nop{}, ReadHost{HostDest::Ub, 0, 1024 / N, kDataBase + 0x100}, Halt{}},
              ErrorCode::ERR_AXI_READ, 1, slv, mem);
  expect_both({Nop{}, ReadHost{HostDest::Param, 0, 12, kDataBase + 0x200}, Halt{}},
              ErrorCode::ERR_AXI_READ, 1, slv, mem);
  expect_both({ReadHost{HostDest::Lut, 0, params().lut_rows(), kDataBase + 0x200}, Halt{}},
              ErrorCode::ERR_AXI_READ, 0, slv, mem);
  expect_both({ReadWeights{2, kDataBase + 0x200 - N * N}, Halt{}}, ErrorCode::ERR_AXI_READ, 0, slv,
              mem);
  RunConfig slvw;
  slvw.slverr = {{kOutBase + 0x400, 16}};
  expect_both({WriteHost{0, 2048 / N, kOutBase}, Halt{}}, ErrorCode::ERR_AXI_WRITE, 0, slvw, mem);
  expect_both({WriteHost{0, 4, kOutBase}, Nop{}, WriteHost{0, 1, kOutBase + 0x400}, Halt{}},
              ErrorCode::ERR_AXI_WRITE, 2, slvw, mem);
  // A matmul waiting for the tile of a read_weights that fails must not hang the core
  // (found by random seed 1220 at N = 16; fixed in rtl/, see docs/verification.md).
  {
    Matmul sw;
    sw.switch_weights = true;
    sw.inner = 4;
    expect_both({ReadWeights{2, kDataBase + 0x200 - N * N}, sw, sw, Halt{}},
                ErrorCode::ERR_AXI_READ, 0, slv, mem);
    expect_both({ReadWeights{1, kDataBase + 0x200}, sw, Halt{}}, ErrorCode::ERR_AXI_READ, 0, slv,
                mem);
    RunConfig late = slv;
    late.mem_latency = 40;
    late.backpressure = 0.5;
    expect_both({ReadWeights{3, kDataBase + 0x200 - 2 * N * N}, sw, sw, sw, Halt{}},
                ErrorCode::ERR_AXI_READ, 0, late, mem);
    // A later static fault decoded before the AXI error arrives: the AXI error of the older
    // instruction is reported (program order; found by this test, fixed in rtl/tpu_ctrl.sv).
    expect_both({ReadWeights{3, kDataBase + 0x200 - 2 * N * N}, sw, sw, sw, sw, Halt{}},
                ErrorCode::ERR_AXI_READ, 0, late, mem);
    expect_both({ReadHost{HostDest::Ub, 0, 1024 / N, kDataBase + 0x100}, Nop{},
                 [] {
                   RawInstruction r;
                   r.bytes[0] = 0x55;
                   return Instruction(r);
                 }(),
                 Halt{}},
                ErrorCode::ERR_AXI_READ, 0, late, mem);
    expect_both({WriteHost{0, 200, kUnmapped}, Matmul{}, Halt{}}, ErrorCode::ERR_AXI_WRITE, 0, late,
                mem);
  }
  // DECERR
  expect_both({ReadHost{HostDest::Ub, 0, 1, kUnmapped}, Halt{}}, ErrorCode::ERR_AXI_READ, 0, {},
              mem);
  expect_both({ReadWeights{1, kUnmapped}, Halt{}}, ErrorCode::ERR_AXI_READ, 0, {}, mem);
  expect_both({WriteHost{0, 1, kUnmapped}, Halt{}}, ErrorCode::ERR_AXI_WRITE, 0, {}, mem);
  // A read that runs off the end of mapped memory.
  expect_both({ReadHost{HostDest::Ub, 0, 32 / N, kDataBase + kDataSize - 16}, Halt{}},
              ErrorCode::ERR_AXI_READ, 0, {}, mem);
  // Instruction fetch: the failing word's index, also late in a long buffer.
  for (uint32_t at : {0u, 1u, 5u, 9u, 17u}) {
    RunConfig f;
    f.slverr = {{kCmdBase + 16 * at, 16}};
    std::vector<Instruction> prog(20, Nop{});
    prog.push_back(Halt{});
    expect_both(prog, ErrorCode::ERR_AXI_READ, at, f);
  }
  // A failing word after the halt is never executed (the chip may prefetch it). Host memory
  // fails whole bursts, and a fetch burst is up to 16 words: a failing word closer to
  // executed ones may make their burst fail (see docs/verification.md).
  for (uint32_t after : {16u, 17u, 30u}) {
    RunConfig f;
    f.slverr = {{kCmdBase + 16 * (3 + after), 16}};
    std::vector<Instruction> prog = {Nop{}, Nop{}, Halt{}};
    prog.resize(3 + after + 4, Nop{});
    expect_both(prog, ErrorCode::ERR_NONE, 0, f);
  }
  expect_chip_still_works();
}

// Two AXI errors reported by different units in the same cycle: ERR_CODE / ERR_PC name the
// older instruction (docs/isa.md "Errors": the first fault in program order). A write_host
// fails (SLVERR) while a younger read of unmapped memory (DECERR) fails, to UB, PARAM or the
// weights; a valid read_host of `delay` beats before the failing read delays its error by
// that many cycles (the read channel returns bursts in order), so some delay makes the two
// errors arrive in the same cycle, whatever N, latency and the units' own delays. The chip
// reported the younger read's error then (random seed 9322468 at N = 4, see
// ChipCorners.Seed9322468WriteAndReadErrorsInOneCycle; fixed in rtl/tpu_ctrl.sv). Also with a
// later static fault decoded first, and with the read error arriving before the write error.
TEST(ErrorPaths, AxiErrorsOfTwoUnitsInOneCycle) {
  const Memory mem = {{kDataBase, pattern(kDataSize, 3)}};
  RunConfig cfg;
  cfg.mem_latency = 3;
  cfg.slverr = {{kOutBase, 0x1000}};
  const uint32_t rows_per_beat = N >= 16 ? 1 : 16 / N;  // a row is N bytes, a beat 16
  const std::vector<Instruction> failing_reads = {ReadHost{HostDest::Ub, 200, 1, kUnmapped},
                                                  ReadWeights{1, kUnmapped},
                                                  ReadHost{HostDest::Param, 0, 1, kUnmapped}};
  for (const Instruction& bad : failing_reads) {
    for (uint32_t write_beats : {1u, 4u}) {
      for (uint32_t delay = 0; delay <= 24; ++delay) {
        std::vector<Instruction> prog = {WriteHost{0, write_beats * rows_per_beat, kOutBase}};
        if (delay) prog.push_back(ReadHost{HostDest::Ub, 100, delay * rows_per_beat, kDataBase});
        prog.push_back(bad);
        prog.push_back(Halt{});
        SCOPED_TRACE("write beats " + std::to_string(write_beats) + ", delay " +
                     std::to_string(delay));
        expect_both(prog, ErrorCode::ERR_AXI_WRITE, 0, cfg, mem);
        // A static fault after them, decoded before either error arrives.
        prog.insert(prog.end() - 1, ReadHost{HostDest::Ub, params().ub_rows, 1, kDataBase});
        expect_both(prog, ErrorCode::ERR_AXI_WRITE, 0, cfg, mem);
        if (HasFailure()) return;
      }
    }
  }
  expect_chip_still_works();
}

// ERR_PC names the oldest faulting instruction for every pair of units that report AXI errors
// (read_host, read_weights, write_host), in both age orders, and for two overlapped
// read_weights (the only unit with two instructions in flight). The older instruction's error
// comes from its last burst (SLVERR), after the rest of its transfer; the younger one
// reads or writes unmapped memory (DECERR) as soon as it starts, or, for two read_weights,
// also succeeds. Between them, activate 1 of `w` pixels and activate 2 (which waits for the
// activation unit) hold the younger one back by about w cycles without touching the bus, so
// the sweep over w moves the younger's start and error from before the older's error, through
// the same cycle, to after it (and the younger read_weights' start onto the cycle the older
// one's failing beat arrives). Two reads never report in the same cycle (one R beat per
// cycle), so for read_host / read_weights the sweep covers both arrival orders instead.
TEST(ErrorPaths, AxiErrorsOfEveryUnitPairInBothOrders) {
  const Memory mem = {{kDataBase, pattern(kDataSize, 9)}};
  // The older reads end 16 bytes past a 4 KiB boundary and those 16 bytes fail: host memory
  // fails whole bursts and a burst never crosses the boundary, so the failing burst is the
  // last one, after the rest of the transfer (256 bytes for read_host, WFifoTiles + 1 tiles for
  // read_weights, leaving room for the younger one). The older write_host reports its error
  // at its last write response anyway.
  constexpr uint32_t kWriteBytes = 64;
  const uint32_t boundary = kDataBase + 0x5000;
  const uint32_t host_bytes = 256 + 16;
  const uint32_t tiles = params().wfifo_tiles + 1;
  const uint32_t weight_bytes = tiles * N * N;
  enum class Unit { ReadHost, ReadWeights, WriteHost };
  auto name = [](Unit u) {
    return u == Unit::ReadHost      ? "read_host"
           : u == Unit::ReadWeights ? "read_weights"
                                    : "write_host";
  };
  auto older = [&](Unit u, RunConfig* cfg) -> Instruction {
    if (u == Unit::WriteHost) {
      cfg->slverr.push_back({kOutBase + kWriteBytes - 16, 16});
      return WriteHost{0, kWriteBytes / N, kOutBase};
    }
    cfg->slverr.push_back({boundary, 16});
    if (u == Unit::ReadHost) {
      return ReadHost{HostDest::Ub, 0, host_bytes / N, boundary + 16 - host_bytes};
    }
    return ReadWeights{tiles, boundary + 16 - weight_bytes};
  };
  auto younger = [&](Unit u, bool fails) -> Instruction {
    const uint32_t at = fails ? kUnmapped : kDataBase;
    if (u == Unit::WriteHost) return WriteHost{400, 1, fails ? kUnmapped : kOutBase + 0x1000};
    if (u == Unit::ReadHost) return ReadHost{HostDest::Ub, 500, 1, at};
    return ReadWeights{1, at};
  };
  struct Pair {
    Unit older, younger;
    bool younger_fails;
  };
  const std::vector<Pair> pairs = {
      {Unit::WriteHost, Unit::ReadHost, true},      {Unit::ReadHost, Unit::WriteHost, true},
      {Unit::WriteHost, Unit::ReadWeights, true},   {Unit::ReadWeights, Unit::WriteHost, true},
      {Unit::ReadHost, Unit::ReadWeights, true},    {Unit::ReadWeights, Unit::ReadHost, true},
      {Unit::ReadWeights, Unit::ReadWeights, true}, {Unit::ReadWeights, Unit::ReadWeights, false}};
  for (uint32_t latency : {3u, 12u}) {
    for (const Pair& p : pairs) {
      for (uint32_t w = 1; w <= 96; ++w) {
        RunConfig cfg;
        cfg.mem_latency = latency;
        Activate a1, a2;
        a1.width = uint16_t(w);
        a1.height = 1;
        a1.ub_addr = 600;
        a2.width = 1;
        a2.height = 1;
        a2.ub_addr = 700;
        const std::vector<Instruction> prog = {older(p.older, &cfg), a1, a2,
                                               younger(p.younger, p.younger_fails), Halt{}};
        SCOPED_TRACE(std::string("older ") + name(p.older) + ", younger " + name(p.younger) +
                     (p.younger_fails ? " (fails)" : " (succeeds)") + ", latency " +
                     std::to_string(latency) + ", activate width " + std::to_string(w));
        expect_both(prog,
                    p.older == Unit::WriteHost ? ErrorCode::ERR_AXI_WRITE : ErrorCode::ERR_AXI_READ,
                    0, cfg, mem);
        if (HasFailure()) return;
      }
    }
  }
  expect_chip_still_works();
}

TEST(ErrorPaths, CommandBufferOverrun) {
  expect_both({Nop{}, Nop{}}, ErrorCode::ERR_CMD_OVERRUN, 2);
  expect_both({Nop{}}, ErrorCode::ERR_CMD_OVERRUN, 1);
  std::vector<Instruction> prog(40, Sync{});
  expect_both(prog, ErrorCode::ERR_CMD_OVERRUN, 40);
  expect_chip_still_works();
}

// A write_host into its own command buffer (issue 10: the chip finished, the model ran the
// overwritten instruction) is a static ERR_HOST_RANGE on both: an earlier instruction, the
// write_host itself, the next one, one far ahead, and a range that only touches the buffer's
// last byte; a write just past the buffer is fine.
TEST(ErrorPaths, WriteHostIntoCommandBuffer) {
  std::vector<Instruction> prog(12, Nop{});
  prog.back() = Halt{};
  for (uint32_t target : {0u, 3u, 4u, 5u, 10u, 11u}) {
    SCOPED_TRACE("target instruction " + std::to_string(target));
    std::vector<Instruction> p = prog;
    p[4] = WriteHost{0, 1, kCmdBase + 16 * target};
    expect_both(p, ErrorCode::ERR_HOST_RANGE, 4);
  }
  // Starts below the buffer and ends inside it.
  std::vector<Instruction> p = prog;
  p[2] = WriteHost{0, 16 / N + 1, kCmdBase - 16};  // 16 + N bytes: one row into the buffer
  expect_both(p, ErrorCode::ERR_HOST_RANGE, 2);
  p[2] = WriteHost{0, 1, kCmdBase + 16 * uint32_t(prog.size())};  // just past it: allowed
  expect_both(p, ErrorCode::ERR_NONE, 0);
  expect_chip_still_works();
}

// A program that does not finish within the run's cycle budget: Chip::run returns
// kCycleLimit (the driver turns that into a timeout), and a soft reset recovers.
TEST(ErrorPaths, RunThatDoesNotFinishInTime) {
  auto& chip = backends().chip.chip();
  std::vector<Instruction> prog = {ReadWeights{1, kDataBase}};
  Matmul m;
  m.switch_weights = true;
  m.inner = 2000;
  m.inner_stride = 1;
  prog.push_back(m);
  for (int i = 0; i < 8; ++i) {
    Matmul again = m;
    again.switch_weights = false;
    again.accumulate = true;
    prog.push_back(again);
  }
  prog.push_back(Halt{});
  chip.write_mem(kCmdBase, encode_program(prog));
  chip.start(kCmdBase, uint32_t(prog.size()));
  const auto r = chip.run(1000);
  EXPECT_EQ(r.reason, sim::StopReason::kCycleLimit);
  EXPECT_TRUE(chip.status().busy);
  chip.write_reg(sim::reg::kCtrl, sim::reg::kCtrlSoftReset);
  chip.step(200);
  EXPECT_FALSE(chip.status().busy);
  expect_chip_still_works(7);
}

// SOFT_RESET while units are busy, then a correct run (compared with the golden model).
// `stop_after` cycles into a program dominated by one unit.
void soft_reset_during(const std::vector<Instruction>& prog, uint64_t stop_after,
                       double backpressure, uint64_t check_seed) {
  auto& b = backends();
  auto& chip = b.chip.chip();
  chip.write_mem(kDataBase, pattern(kDataSize, 11));
  chip.write_mem(kCmdBase, encode_program(prog));
  chip.set_backpressure(backpressure, 3);
  chip.set_memory_timing(10, 16);
  chip.start(kCmdBase, uint32_t(prog.size()));
  chip.step(stop_after);
  const auto before = chip.status();
  EXPECT_TRUE(before.busy) << "the program finished before the soft reset";
  chip.write_reg(sim::reg::kCtrl, sim::reg::kCtrlSoftReset);
  // Bursts already on the bus complete first (a write burst is up to 256 beats).
  for (int i = 0; i < 100 && chip.status().busy; ++i) chip.step(100);
  const auto after = chip.status();
  EXPECT_FALSE(after.busy);
  EXPECT_FALSE(after.done);
  EXPECT_FALSE(after.error);
  chip.set_backpressure(0, 1);
  // The weight FIFO and buffers are empty: a matmul without switch has no tile.
  Matmul m;
  expect_both({m, Halt{}}, ErrorCode::ERR_NO_WEIGHTS, 0);
  expect_chip_still_works(check_seed);
  expect_chip_still_works(check_seed + 1);
}

TEST(ErrorPaths, SoftResetDuringMatmul) {
  std::vector<Instruction> prog = {ReadWeights{3, kDataBase}};
  Matmul m;
  m.switch_weights = true;
  m.inner = 1500;
  m.inner_stride = 1;
  prog.push_back(m);
  prog.push_back(m);  // the next tile, while the FIFO still holds one
  prog.push_back(Halt{});
  for (uint64_t at : {150u, 400u, 900u, 1700u, 2500u}) {
    SCOPED_TRACE("soft reset at cycle " + std::to_string(at));
    soft_reset_during(prog, at, 0.0, 100 + at);
  }
}

TEST(ErrorPaths, SoftResetDuringDmaAndActivate) {
  {  // long read_host / read_weights / write_host under backpressure
    std::vector<Instruction> prog = {ReadHost{HostDest::Ub, 0, 2000, kDataBase},
                                     ReadWeights{5, kDataBase}, WriteHost{0, 500, kOutBase},
                                     Halt{}};
    for (uint64_t at : {60u, 300u, 1500u}) soft_reset_during(prog, at, 0.5, 200 + at);
  }
  {  // a long activate with pooling
    Activate a;
    a.width = 40;
    a.height = 40;
    a.pool_k = 2;
    a.pool_s = 1;
    a.ub_stride = 39;
    a.func = ActFunc::Relu;
    std::vector<Instruction> prog = {a, a, Halt{}};
    for (uint64_t at : {50u, 900u, 2000u}) soft_reset_during(prog, at, 0.0, 300 + at);
  }
  {  // a long write_host (the write channel in flight)
    std::vector<Instruction> prog = {WriteHost{0, 900, kOutBase}, Halt{}};
    for (uint64_t at : {40u, 333u}) soft_reset_during(prog, at, 0.3, 400 + at);
  }
}

// START while the core is busy is ignored; unknown registers answer SLVERR.
TEST(ErrorPaths, RegisterInterface) {
  auto& chip = backends().chip.chip();
  std::vector<Instruction> prog = {ReadHost{HostDest::Ub, 0, 500, kDataBase}, Halt{}};
  chip.write_mem(kCmdBase, encode_program(prog));
  chip.set_backpressure(0, 1);
  chip.start(kCmdBase, uint32_t(prog.size()));
  chip.step(20);
  chip.write_reg(sim::reg::kCmdCount, 1);
  chip.write_reg(sim::reg::kCtrl, sim::reg::kCtrlStart);  // ignored while busy
  const auto r = chip.run(100000);
  EXPECT_EQ(r.reason, sim::StopReason::kDone);
  EXPECT_EQ(chip.counter(8), 2u);
  EXPECT_EQ(chip.try_read_reg(0x3FC).resp, 2u);
  EXPECT_EQ(chip.try_write_reg(sim::reg::kParamN, 1).resp, 2u);  // read-only
  EXPECT_THROW(chip.read_reg(0xFFC), sim::RegisterError);
  expect_chip_still_works(9);
}

// ---- corners the random programs do not reach (found with scripts/coverage.sh)

// Every bit of every read/write register, both ways, read back (the window registers feed the
// controller's range checks; the values do not matter while no run starts).
TEST(ChipCorners, RegisterBitsReadBack) {
  auto& chip = backends().chip.chip();
  std::vector<uint32_t> regs = {sim::reg::kCmdAddr, sim::reg::kCmdCount, sim::reg::kIrqEnable};
  for (uint32_t i = 0; i < 8; ++i) {
    regs.push_back(0x080 + 8 * i);
    regs.push_back(0x084 + 8 * i);
  }
  for (uint32_t r : regs) {
    const uint32_t mask = r == sim::reg::kIrqEnable ? 0x3u : r == sim::reg::kCmdAddr ? ~0xFu : ~0u;
    for (uint32_t v : {0xFFFF'FFFFu, 0x0u, 0xAAAA'AAAAu, 0x5555'5555u, 0x0u}) {
      chip.write_reg(r, v);
      EXPECT_EQ(chip.read_reg(r) & mask, v & mask) << "register 0x" << std::hex << r;
    }
  }
  chip.write_reg(sim::reg::kIrqEnable, sim::reg::kIrqEnableResetValue);
  // Partial-word writes answer SLVERR; reads of every read-only register work.
  for (uint32_t r : {0x000u, 0x004u, 0x008u, 0x00Cu, 0x010u, 0x014u, 0x018u, 0x020u, 0x024u, 0x028u,
                     0x02Cu, 0x030u, 0x038u, 0x03Cu, 0x048u, 0x04Cu}) {
    EXPECT_EQ(chip.try_read_reg(r).resp, 0u) << r;
  }
  for (uint32_t i = 0; i < sim::reg::kNumCounters; ++i) (void)chip.counter(i);
  // Unmapped addresses across the 12-bit register space answer SLVERR.
  for (uint32_t a : {0x050u, 0x0C0u, 0x1FCu, 0x200u, 0x400u, 0x800u, 0xFFCu, 0xAA8u, 0x554u}) {
    EXPECT_EQ(chip.try_read_reg(a).resp, 2u) << a;
    EXPECT_EQ(chip.try_write_reg(a, 0xFFFF'FFFFu).resp, 2u) << a;
  }
  expect_chip_still_works(21);
}

// Host buffers and the command buffer at the top of the 32-bit space (every address bit set),
// DMA windows there, transfers that cross 4 KiB boundaries near 2^32.
TEST(ChipCorners, HighHostAddresses) {
  auto& b = backends();
  constexpr uint32_t kHigh = 0xFFFF'0000u, kMid = 0xAAAA'0000u, kLow5 = 0x5555'0000u;
  static bool mapped = false;
  if (!mapped) {
    for (uint32_t base : {kHigh, kMid, kLow5}) {
      b.chip.add_region(base, 0x1'0000);
      b.golden.add_region(base, 0x1'0000);
    }
    mapped = true;
  }
  const Memory mem = {
      {kHigh, pattern(0x1'0000, 17)}, {kMid, pattern(0x1'0000, 4)}, {kLow5, pattern(0x1'0000, 9)}};
  const uint32_t rows = 8192 / N;  // 8 KiB: crosses 4 KiB boundaries
  std::vector<Instruction> prog = {
      ReadHost{HostDest::Ub, params().ub_rows - rows, rows, kHigh + 0x7000},
      ReadHost{HostDest::Ub, 0, rows, kMid + 0x1000},
      ReadWeights{params().wfifo_tiles + 2,
                  uint32_t(0x1'0000'0000ull - (params().wfifo_tiles + 2) * N * N)},
      WriteHost{params().ub_rows - rows, rows, kLow5 + 0x3000},
      WriteHost{0, rows, kHigh + 0xE000},
      ReadHost{HostDest::Param, 0, params().param_rows(), kLow5 + 0x100},
      Halt{}};
  for (int i = 0; i < int(params().wfifo_tiles) + 2; ++i) {
    Matmul m;
    m.switch_weights = true;
    m.ub_addr = params().ub_rows - 1 - uint32_t(i);
    m.acc_addr = uint16_t(params().acc_rows - 1 - uint32_t(i));
    prog.insert(prog.end() - 1, m);
  }
  expect_both(prog, ErrorCode::ERR_NONE, 0, {}, mem);
  RunConfig win;
  win.windows[0] = {kHigh, 0xFFFF};  // ends one byte short of 2^32
  win.windows[1] = {kMid, 0x1'0000};
  win.windows[2] = {kLow5, 0x1'0000};
  win.windows[3] = {kCmdBase, kCmdSize};
  expect_both(prog, ErrorCode::ERR_HOST_RANGE, 2, win, mem);
  win.windows[0] = {0xFFFF'F000u, 0x1000};
  win.windows[4] = {kHigh, 0xF000};
  expect_both(prog, ErrorCode::ERR_HOST_RANGE, 4, win, mem);  // write across two windows
  win.windows[4] = {kHigh, 0x1'0000};
  expect_both(prog, ErrorCode::ERR_NONE, 0, win, mem);
  // The command buffer up there too (and a fault late in it).
  auto& chip = b.chip.chip();
  std::vector<Instruction> nops(300, Nop{});
  nops.push_back(ReadHost{HostDest::Ub, 0, 1, kHigh});
  nops.push_back(Halt{});
  chip.write_mem(kHigh + 0x8000, encode_program(nops));
  chip.start(kHigh + 0x8000, uint32_t(nops.size()));
  auto r = chip.run(100000);
  EXPECT_EQ(r.reason, sim::StopReason::kDone);
  expect_chip_still_works(22);
}

// The case of random seed 9322468 at N = 4 (an older generator's program, verbatim, with its
// memory timing and fault): write_host 11 fails (SLVERR) and read_weights 15 reads unmapped
// memory (DECERR; 16 bytes at 0xffffffe0 do not wrap at N = 4, at N = 16 it is ERR_HOST_RANGE
// at decode). At N = 4 both errors reached the controller in the same cycle and it reported
// ERR_AXI_READ at 15 (instruction 22 only shifts the timing through the instruction fetch).
// The first fault in program order is write_host 11's at every N.
TEST(ChipCorners, Seed9322468WriteAndReadErrorsInOneCycle) {
  if (N != 4) GTEST_SKIP() << "the program is for N = 4 (LUT rows, timing)";
  // The listing of that case (tpu_random_n4 replay), instructions 0 .. 33.
  const std::vector<Instruction> prog = assemble(R"(
read_host dest=param addr=0 rows=96 host=0x100000
read_host dest=lut addr=0 rows=64 host=0x109340
read_host ub=7332 rows=64 host=0x1016c0
read_weights tiles=1 host=0x108650
matmul ub=7378 acc=0 inner=16 outer=1 inner_stride=1 outer_stride=0 w_unsigned switch
write_host ub=7363 rows=17 host=0x401b70
matmul ub=7370 acc=4 inner=8 outer=1 inner_stride=0 outer_stride=8859195 a_unsigned w_unsigned
write_host ub=7335 rows=61 host=0x402220
write_host ub=7338 rows=51 host=0x402da0
matmul ub=7336 acc=2 inner=9 outer=1 inner_stride=3 outer_stride=11654966 a_unsigned w_unsigned
activate acc=3 ub=7352 width=2 height=5 pool_k=2 pool_s=1 ub_stride=3 slot=6 func=relu
write_host ub=7356 rows=16 host=0x402d10
activate acc=0 ub=7346 width=8 height=2 pool_k=1 pool_s=2 ub_stride=4971611 slot=7 func=identity out_unsigned
read_host ub=7393 rows=2 host=0x10f3c0
matmul ub=7360 acc=6 inner=8 outer=1 inner_stride=2 outer_stride=7005432
read_weights tiles=1 host=0xffffffe0
read_host ub=7338 rows=12 host=0x401910
matmul ub=7385 acc=4 inner=10 outer=1 inner_stride=0 outer_stride=3879323 acc a_unsigned
matmul ub=7385 acc=9 inner=2 outer=1 inner_stride=0 outer_stride=11664066 a_unsigned w_unsigned
activate acc=0 ub=7389 width=5 height=3 pool_k=3 pool_s=3 ub_stride=9092693 slot=3 func=lut
write_host ub=7346 rows=23 host=0x401d20
matmul ub=7332 acc=4 inner=3 outer=4 inner_stride=3 outer_stride=6
read_weights tiles=3 host=0x100f20
activate acc=1 ub=7375 width=15 height=1 pool_k=1 pool_s=3 ub_stride=16136596 slot=5 func=relu out_unsigned
read_host dest=param addr=61 rows=3 host=0x1048b0
read_host ub=7343 rows=22 host=0x105b20
activate acc=0 ub=7372 width=4 height=4 pool_k=3 pool_s=1 ub_stride=2 slot=6 func=identity out_unsigned
write_host ub=7361 rows=22 host=0x400f10
write_host ub=7337 rows=4 host=0x400a40
matmul ub=7336 acc=1 inner=2 outer=2 inner_stride=2 outer_stride=13
activate acc=4 ub=7353 width=1 height=3 pool_k=1 pool_s=3 ub_stride=10784641 slot=0 func=clamp out_unsigned
read_host ub=7361 rows=7 host=0x10f020
activate acc=6 ub=7362 width=7 height=1 pool_k=1 pool_s=2 ub_stride=15008067 slot=2 func=clamp
halt
)",
                                                 "seed9322468.s");
  RunConfig cfg;
  cfg.mem_latency = 2;
  cfg.mem_bytes_per_cycle = 16;
  cfg.backpressure = 0.1;
  cfg.backpressure_seed = 117762765;
  cfg.slverr = {{0x402d20, 48}};
  const Memory mem = {{kDataBase, pattern(kDataSize, 11)}};
  expect_both(prog, ErrorCode::ERR_AXI_WRITE, 11, cfg, mem);
  expect_chip_still_works(24);
}

// A long command buffer: PC, ERR_PC and the fetch counters run through 17 bits.
TEST(ChipCorners, LongCommandBuffer) {
  auto& chip = backends().chip.chip();
  const uint32_t count = (1u << 17) + 3;
  std::vector<uint8_t> nops(size_t(count) * 16, 0);
  // (kCmd holds 4096 instructions: a buffer of its own.)
  static bool mapped = false;
  constexpr uint32_t kBig = 0x2000'0000u;
  if (!mapped) {
    chip.add_region(kBig, 0x40'0000, "big");
    mapped = true;
  }
  // The last words move data, so the units' instruction indices are large too.
  const std::vector<Instruction> tail = {ReadHost{HostDest::Ub, 0, 4, kBig + 0x30'0000},
                                         ReadWeights{1, kBig + 0x30'0000},
                                         WriteHost{0, 4, kBig + 0x38'0000}};
  const std::vector<uint8_t> tail_bytes = encode_program(tail);
  std::copy(tail_bytes.begin(), tail_bytes.end(), nops.end() - long(tail_bytes.size()));
  chip.write_mem(kBig, nops);
  chip.start(kBig, count);  // no halt: ERR_CMD_OVERRUN at count
  auto r = chip.run(20'000'000);
  EXPECT_EQ(r.reason, sim::StopReason::kError);
  EXPECT_EQ(r.err_code, uint32_t(ErrorCode::ERR_CMD_OVERRUN));
  EXPECT_EQ(r.err_pc, count);
  EXPECT_EQ(chip.counter(8), count);
  expect_chip_still_works(23);
}

// The largest shapes: a matmul over the whole ACC (long inner / outer loops, large strides)
// and activates over the whole ACC with the largest pooling windows, at the top of the UB.
// Bursts of short matmuls past the controller's in-flight matmul table (4 entries) and past
// the MXU pipeline, each followed by an activate that depends only on the oldest matmul of
// the burst: it must wait for that matmul's row, however many younger ones are in flight
// (a controller that issues past a full table loses the oldest footprint and the activate
// reads a stale accumulator row).
TEST(ChipCorners, MatmulBurstPastTableDepthThenDependentActivate) {
  const Memory mem = {{kDataBase, pattern(kDataSize, 41)}};
  for (uint32_t burst = 1; burst <= 12; ++burst) {
    SCOPED_TRACE("burst of " + std::to_string(burst) + " matmuls");
    std::vector<Instruction> prog = {ReadHost{HostDest::Ub, 0, 64, kDataBase},
                                     ReadHost{HostDest::Param, 0, 12, kDataBase + 0x1000},
                                     ReadWeights{2, kDataBase + 0x2000}};
    // Old accumulator contents, then wait for them: the burst overwrites them.
    Matmul init;
    init.switch_weights = true;
    init.inner = 16;
    init.ub_addr = 32;
    prog.push_back(init);
    prog.push_back(Sync{});
    for (uint32_t i = 0; i < burst; ++i) {
      Matmul m;
      m.switch_weights = i == 0;  // the second tile: different products than `init`
      m.ub_addr = i;
      m.acc_addr = uint16_t(i);
      prog.push_back(m);
    }
    Activate act;  // reads ACC row 0 only: the oldest matmul of the burst
    act.func = ActFunc::Identity;
    act.width = 1;
    act.height = 1;
    act.ub_addr = 100;
    prog.push_back(act);
    prog.push_back(WriteHost{100, 1, kOutBase});
    prog.push_back(Halt{});
    expect_both(prog, ErrorCode::ERR_NONE, 0, {}, mem);
  }
}

// Max-pooling with window != stride, both ways, and windows that leave pixels over at the
// right and bottom edges, and padded windows (ceil-mode style, the largest pads, a 1x1 image
// inside its padding); directed: the random programs reach these only now and then.
TEST(ChipCorners, PoolingWindowDifferentFromStride) {
  const Memory mem = {{kDataBase, pattern(kDataSize, 53)}};
  struct Shape {
    uint16_t w, h;
    uint8_t k, s;
    uint8_t pt = 0, pl = 0, pb = 0, pr = 0;  // max-pool padding
  };
  for (const Shape sh : {Shape{7, 7, 3, 2}, Shape{8, 8, 2, 3}, Shape{9, 5, 4, 1}, Shape{5, 9, 1, 3},
                         Shape{15, 15, 5, 7}, Shape{6, 4, 3, 4}, Shape{7, 7, 3, 2, 1, 1, 1, 1},
                         Shape{14, 14, 3, 2, 0, 0, 1, 1}, Shape{4, 5, 8, 1, 7, 3, 0, 7},
                         Shape{9, 3, 2, 3, 1, 0, 1, 0}, Shape{1, 1, 3, 1, 2, 2, 2, 2}}) {
    SCOPED_TRACE("W=" + std::to_string(sh.w) + " H=" + std::to_string(sh.h) +
                 " k=" + std::to_string(sh.k) + " s=" + std::to_string(sh.s) + " pads " +
                 std::to_string(sh.pt) + "," + std::to_string(sh.pl) + "," + std::to_string(sh.pb) +
                 "," + std::to_string(sh.pr));
    const uint32_t pixels = uint32_t(sh.w) * sh.h;
    // The 256 UB rows written back are zeroed first (from the spare area, zero at every run):
    // the activate's stride leaves gaps, and the test must not read what earlier tests left in
    // the chip's unified buffer.
    std::vector<Instruction> prog = {
        ReadHost{HostDest::Ub, 512, 256, kSpareBase}, ReadHost{HostDest::Ub, 0, pixels, kDataBase},
        ReadHost{HostDest::Param, 0, 12, kDataBase + 0x4000}, ReadWeights{1, kDataBase + 0x6000}};
    Matmul m;
    m.switch_weights = true;
    m.inner = uint16_t(pixels);
    prog.push_back(m);
    Activate act;
    act.func = ActFunc::Relu;
    act.width = sh.w;
    act.height = sh.h;
    act.pool_k = sh.k;
    act.pool_s = sh.s;
    act.pad_top = sh.pt;
    act.pad_left = sh.pl;
    act.pad_bottom = sh.pb;
    act.pad_right = sh.pr;
    act.ub_addr = 512;
    act.ub_stride = 16;
    prog.push_back(act);
    prog.push_back(WriteHost{512, 256, kOutBase});
    prog.push_back(Halt{});
    expect_both(prog, ErrorCode::ERR_NONE, 0, {}, mem);
  }
}

// Raw int32 output: accumulators that saturate with the bias (both ways), strides that
// interleave and overlap the pixels' four UB rows, back-to-back raw and requantizing
// activates; directed, compared on both backends.
TEST(ChipCorners, RawInt32Activates) {
  const Memory mem = {{kDataBase, pattern(kDataSize, 71)}};
  struct Shape {
    uint16_t w, h;
    uint32_t stride;
  };
  for (const Shape sh : {Shape{1, 1, 0}, Shape{5, 3, 20}, Shape{4, 4, 16}, Shape{3, 5, 13},
                         Shape{6, 2, 3}, Shape{3, 3, 0}, Shape{64, 2, 256}}) {
    SCOPED_TRACE("W=" + std::to_string(sh.w) + " H=" + std::to_string(sh.h) +
                 " ub_stride=" + std::to_string(sh.stride));
    const uint32_t pixels = uint32_t(sh.w) * sh.h;
    // Two matmuls into the same rows: large sums, and a bias in the slot that pushes some of
    // them past INT32_MAX / INT32_MIN (the pattern's slot values are arbitrary int32).
    std::vector<Instruction> prog = {ReadHost{HostDest::Ub, 0, pixels, kDataBase},
                                     ReadHost{HostDest::Param, 0, 12, kDataBase + 0x4000},
                                     ReadWeights{2, kDataBase + 0x6000}};
    Matmul m;
    m.switch_weights = true;
    m.inner = uint16_t(pixels);
    prog.push_back(m);
    m.accumulate = true;
    m.a_unsigned = true;
    prog.push_back(m);
    Activate act;
    act.raw = true;
    act.width = sh.w;
    act.height = sh.h;
    act.ub_stride = sh.stride;
    act.ub_addr = 1024;
    prog.push_back(act);
    Activate q;  // a requantizing activate right behind it, into rows the raw one also wrote
    q.func = ActFunc::Relu;
    q.width = 2;
    q.height = 1;
    q.ub_addr = 1026;
    prog.push_back(q);
    const uint32_t rows = (sh.h - 1u) * sh.stride + 4u * sh.w;
    prog.push_back(WriteHost{1024, std::max(rows, 4u), kOutBase});
    prog.push_back(Halt{});
    expect_both(prog, ErrorCode::ERR_NONE, 0, {}, mem);
  }
}

TEST(ChipCorners, LargestShapes) {
  const ChipParams& p = params();
  const Memory mem = {{kDataBase, pattern(kDataSize, 29)}};
  std::vector<Instruction> prog = {
      ReadHost{HostDest::Ub, 0, 4096, kDataBase},
      ReadHost{HostDest::Ub, 4096, 4096, kDataBase + 0x10000 - 4096 * N},
      ReadHost{HostDest::Param, 0, p.param_rows(), kDataBase + 0x40},
      ReadWeights{2, kDataBase + 0x400}};
  Matmul a;
  a.switch_weights = true;
  a.inner = uint16_t(p.acc_rows);
  a.inner_stride = 3;
  a.ub_addr = p.ub_rows - 1 - 3 * (p.acc_rows - 1);
  prog.push_back(a);
  Matmul b;
  b.switch_weights = true;
  b.accumulate = true;
  b.a_unsigned = b.w_unsigned = true;
  b.inner = 1;
  b.inner_stride = 255;
  b.outer = uint16_t(p.acc_rows - 1);
  b.outer_stride = 3;
  b.ub_addr = 100;
  prog.push_back(b);
  Activate big;
  big.func = ActFunc::Relu;
  big.width = uint16_t(p.acc_rows);
  big.height = 1;
  big.ub_addr = p.ub_rows - p.acc_rows;
  big.slot = uint8_t(p.qp_slots - 1);
  prog.push_back(big);
  Activate pool;
  pool.func = ActFunc::Clamp;
  pool.out_unsigned = true;
  pool.width = 45;
  pool.height = 45;
  pool.pool_k = 15;
  pool.pool_s = 15;
  pool.acc_addr = uint16_t(p.acc_rows - 45 * 45);
  pool.ub_stride = 1000;
  pool.ub_addr = p.ub_rows - 2 * 1000 - 3;
  prog.push_back(pool);
  prog.push_back(WriteHost{p.ub_rows - 1024, 1024, kOutBase});
  prog.push_back(Halt{});
  expect_both(prog, ErrorCode::ERR_NONE, 0, {}, mem);
  // The ACC itself, checked exactly through the dump program of a case with that window.
  auto& bk = backends();
  TestCase tc;
  tc.params = p;
  tc.ub_base = 0;
  tc.ub_rows = 64;
  tc.acc_base = p.acc_rows - 64;
  tc.acc_rows = 64;
  const DumpProgram d = build_dump_program(tc, bk.golden.model());
  const Outcome g = bk.golden.run(d.memory, {}, d.program);
  const Outcome c = bk.chip.run(d.memory, {}, d.program);
  EXPECT_TRUE(g.done && c.done);
  EXPECT_TRUE(c.dump == g.dump) << "ACC or UB differs after the largest shapes";
}

}  // namespace

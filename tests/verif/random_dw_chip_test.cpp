// SPDX-License-Identifier: Apache-2.0
// The depthwise chip (tpu_sim_dw_n16: the int8 chip with DwWidth = TPU_SIM_DW_WIDTH, docs/isa.md
// "Depthwise configuration") against the golden model on the random generator's programs with
// the depthwise knob (GenOptions::dw_width): valid dwconv instructions among the int8 ones,
// their planted static faults (ERR_FIELD, ERR_UB_RANGE, ERR_ACC_RANGE), AXI faults, random
// memory timing and backpressure; every byte of host memory, UB and ACC the generator dumps is
// compared (run_case). And isa.md's cycle cost of dwconv against the chip's measured cycles.
// Labels rtl;verif;random.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

#include "chip_backend.h"
#include "random_program.h"

namespace {

using namespace tpu::verif;

constexpr uint64_t kBatch = 100;
// MatmulAndDwconvTogether: cycles the overlap may fall short of hiding the whole dwconv (its
// issue behind the matmul and its last writes after it).
constexpr uint64_t kSyncSlack = 8;

GenOptions options() {
  GenOptions opt;
  opt.n = TPU_SIM_N;
  opt.dw_width = TPU_SIM_DW_WIDTH;
  return opt;
}

struct Backends {
  ChipBackend chip;
  GoldenBackend golden{generate_program(0, options()).params};
};
Backends& backends() {
  static Backends* b = new Backends;  // one Chip per process, never destroyed
  return *b;
}

// Runs the seeds chip vs golden; counts the dwconv instructions and the planted dwconv faults.
void run_batch(uint64_t first, uint64_t count, double fault_probability) {
  auto& b = backends();
  GenOptions opt = options();
  opt.fault_probability = fault_probability;
  int dwconvs = 0, valid = 0, dw_faults = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    for (const tpu::Instruction& in : tc.program)
      dwconvs += std::holds_alternative<tpu::DwConv>(in);
    valid += tc.kind == CaseKind::kValid;
    dw_faults += tc.fault.find("dwconv") != std::string::npos;
    const CaseResult r = run_case(b.chip, b.golden, tc);
    if (!r.ok) {
      std::ostringstream s;
      s << mismatch_report(b.chip, b.golden, tc, seed, r.mismatch);
      s << describe(tc);
      FAIL() << s.str();
    }
  }
  EXPECT_GT(dwconvs, int(count));  // the knob keeps emitting dwconv
  if (fault_probability < 1.0) {
    EXPECT_GT(valid, int(count) / 3);
  } else {
    EXPECT_GT(dw_faults, 0);
  }
}

TEST(DwChip, ReportsItsDwWidth) {
  auto& b = backends();
  EXPECT_EQ(tpu::sim::Chip::compiled_dw_width(), unsigned(TPU_SIM_DW_WIDTH));
  EXPECT_EQ(b.chip.chip().params().dw_width, unsigned(TPU_SIM_DW_WIDTH));
}

TEST(DwChip, Seeds0To99) { run_batch(0, kBatch, 0.3); }
TEST(DwChip, Seeds100To199) { run_batch(100, kBatch, 0.3); }
TEST(DwChip, Seeds200To299) { run_batch(200, kBatch, 0.3); }
// Every case a fault (static, AXI or no halt), the dwconv static faults among them.
TEST(DwChip, FaultsSeeds0To99) { run_batch(0, kBatch, 1.0); }

// The chip's cycles for one dwconv: the run with it minus the same run without it (both end
// with the halt, which waits for every unit), against isa.md's formula DwConv::unit_cycles.
uint64_t run_cycles(const std::vector<tpu::Instruction>& program) {
  auto& b = backends();
  std::vector<uint8_t> data(kDataSize);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 37u + (i >> 8));
  RunConfig config;
  config.mem_latency = 1;
  config.mem_bytes_per_cycle = 0;
  const Outcome o = b.chip.run({{kDataBase, data}}, config, program);
  EXPECT_TRUE(o.done);
  return b.chip.chip().counters().cycles;
}

TEST(DwChip, CycleCostMatchesIsaFormula) {
  constexpr uint32_t kP = TPU_SIM_DW_WIDTH;
  std::vector<tpu::DwConv> layers;
  auto add = [&](uint16_t w, uint16_t h, uint8_t k, bool s2, uint8_t pad) {
    tpu::DwConv d;
    d.kernel_h = d.kernel_w = k;
    d.stride2 = s2;
    d.width = w;
    d.height = h;
    d.ub_addr = 0;
    d.ub_stride = w;
    d.w_addr = 1024;
    d.acc_addr = 0;
    d.pad_top = d.pad_left = pad;
    d.pad_bottom = d.pad_right = s2 ? 0 : pad;
    layers.push_back(d);
  };
  add(16, 16, 3, false, 1);  // MobileNet's 3x3 stride 1, "same" padding
  add(16, 16, 3, true, 1);   // 3x3 stride 2
  add(28, 7, 3, false, 0);   // no padding
  add(12, 9, 1, false, 0);   // 1x1
  // MobileNetV2's first depthwise layer (112 x 112, 3x3, pad 1): one band of 9 output lines of
  // one channel block (1,008 ACC rows; the top and bottom padding as for an inner band).
  add(112, 9, 3, false, 1);
  const std::vector<tpu::Instruction> prologue = {
      tpu::ReadHost{tpu::HostDest::Ub, 0, 1024, kDataBase},
      tpu::ReadHost{tpu::HostDest::Ub, 1024, 10, kDataBase + 1024 * TPU_SIM_N}, tpu::Sync{}};
  std::vector<tpu::Instruction> base = prologue;
  base.push_back(tpu::Halt{});
  const uint64_t without = run_cycles(base);
  for (const tpu::DwConv& d : layers) {
    std::vector<tpu::Instruction> prog = prologue;
    prog.push_back(d);
    prog.push_back(tpu::Halt{});
    const uint64_t measured = run_cycles(prog) - without;
    const uint64_t formula = d.unit_cycles(kP);
    std::cout << "dwconv " << d.width << "x" << d.height << " k" << unsigned(d.kernel_h) << " s"
              << d.stride() << ": measured " << measured << " cycles, isa.md formula " << formula
              << " (+" << int64_t(measured) - int64_t(formula) << ")\n";
    // isa.md: the formula, + 1 to accept the command, + at most P + 1 for the last writes; the
    // chip adds the issue from the queue and the ACC write a cycle after its grant.
    EXPECT_GE(measured, formula);
    EXPECT_LE(measured, formula + kP + 6);
  }
}

// Directed: a long matmul and a dwconv in flight together (UB rows read by both, disjoint ACC
// rows), then both results through raw activates to host memory: chip = golden byte for byte.
// *dw_cycles: the dwconv's isa.md formula (DwConv::unit_cycles).
Outcome run_overlap(bool serial, uint64_t* cycles, uint64_t* dw_cycles) {
  auto& b = backends();
  std::vector<uint8_t> data(kDataSize);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 29u + (i >> 7));
  tpu::DwConv d;
  d.kernel_h = d.kernel_w = 3;
  d.width = d.height = 16;
  d.ub_stride = 16;
  d.w_addr = 1024;
  d.acc_addr = 1024;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  *dw_cycles = d.unit_cycles(TPU_SIM_DW_WIDTH);
  tpu::Matmul m;
  m.switch_weights = true;
  m.inner = 1024;
  tpu::Activate dw_out, mm_out;
  dw_out.raw = mm_out.raw = true;
  dw_out.acc_addr = 1024;
  dw_out.ub_addr = 2048;
  dw_out.width = 16;
  dw_out.height = 8;
  dw_out.ub_stride = 64;
  mm_out.ub_addr = 3072;
  mm_out.width = 128;
  mm_out.height = 1;
  mm_out.ub_stride = 512;
  std::vector<tpu::Instruction> prog = {
      tpu::ReadHost{tpu::HostDest::Ub, 0, 1024, kDataBase},
      tpu::ReadHost{tpu::HostDest::Ub, 1024, 10, kDataBase + 16384},
      tpu::ReadHost{tpu::HostDest::Param, 0, 12, kDataBase + 32768},
      tpu::ReadWeights{1, kDataBase + 40960},
      tpu::Sync{},
      m};
  if (serial) prog.push_back(tpu::Sync{});
  prog.insert(prog.end(), {d, dw_out, mm_out, tpu::WriteHost{2048, 512, kOutBase},
                           tpu::WriteHost{3072, 512, kOutBase + 8192}, tpu::Halt{}});
  RunConfig config;
  config.mem_latency = 1;
  config.mem_bytes_per_cycle = 0;
  const Outcome chip = b.chip.run({{kDataBase, data}}, config, prog);
  *cycles = b.chip.chip().counters().cycles;
  const Outcome golden = b.golden.run({{kDataBase, data}}, config, prog);
  EXPECT_TRUE(chip.done);
  EXPECT_TRUE(golden.done) << b.golden.last_message();
  EXPECT_EQ(chip.out, golden.out);
  EXPECT_GT(std::count_if(chip.out.begin(), chip.out.begin() + 16384, [](uint8_t v) { return v; }),
            8000);  // the results are there, not zeros
  return chip;
}

// The unit has its own UB read port and ACC write port (docs/architecture.md "The depthwise
// unit in `tpu_core`"), so the dwconv (acc = 0) runs in the matmul's cycles: issued together,
// the two take the matmul's time, at least the dwconv's formula cycles (less the few cycles
// of a sync's drain) below the run with a sync between them. With the ports shared (the feeder
// first) the dwconv waited for the matmul's reads: 4,275 cycles together, 4,303 serial.
TEST(DwChip, MatmulAndDwconvTogether) {
  uint64_t together = 0, serial = 0, dw = 0;
  const Outcome a = run_overlap(false, &together, &dw);
  const Outcome b = run_overlap(true, &serial, &dw);
  EXPECT_EQ(a.out, b.out);
  std::cout << "matmul (1,024 rows) + dwconv 16x16 3x3 (" << dw
            << " cycles by isa.md): " << together << " cycles together, " << serial
            << " with a sync between them\n";
  EXPECT_LT(together, serial);
  EXPECT_GE(serial + kSyncSlack, together + dw);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The pod chip alone (tpu_sim_pod_n4: the training chip with IciLinks = TPU_SIM_ICI_LINKS,
// docs/isa.md "Inter-chip links") against the golden model on the training generator's random
// programs with link instructions (GenOptions::ici_links): alone, every link is down, so each
// link instruction faults at decode -- ERR_ICI_LINK, or ERR_RESERVED / ERR_FIELD /
// ERR_VMEM_RANGE first in isa.md's order -- and everything else runs as on the training chip
// (the link unit idle beside it). Every byte of host memory, UB, ACC and the VMEM window is
// compared (run_case). Labels rtl;verif;random;pod.
#include <gtest/gtest.h>

#include <sstream>

#include "chip_backend.h"
#include "device_rtl.h"
#include "random_program.h"

namespace {

using namespace tpu::verif;

GenOptions options() {
  GenOptions opt;
  opt.n = TPU_SIM_N;
  opt.vmem_rows = TPU_SIM_VMEM_ROWS;
  opt.train_ops = tpu::RtlDevice::kRtlTrainingOps;
  opt.ici_links = TPU_SIM_ICI_LINKS;
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

// Runs the seeds; with `ici_only`, only the cases whose planted fault is a link instruction
// (and checks that the chip reported the code the generator aimed at).
void run_batch(uint64_t first, uint64_t count, double fault_probability, size_t* ici_cases) {
  auto& b = backends();
  GenOptions opt = options();
  opt.fault_probability = fault_probability;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    const CaseResult r = run_case(b.chip, b.golden, tc);
    if (!r.ok) {
      std::ostringstream s;
      s << "seed " << seed << ": " << r.mismatch << "\n" << describe(tc);
      FAIL() << s.str();
    }
    const bool ici = tc.fault.find("ici_") != std::string::npos;
    if (ici && ici_cases != nullptr) ++*ici_cases;
  }
}

TEST(PodChipAlone, ReportsItsLinksAllDown) {
  auto& b = backends();
  const tpu::sim::Params p = b.chip.chip().params();
  EXPECT_EQ(tpu::sim::Chip::compiled_ici_links(), unsigned(TPU_SIM_ICI_LINKS));
  EXPECT_EQ(p.ici_links, unsigned(TPU_SIM_ICI_LINKS));
  EXPECT_EQ(p.ici_link_up, 0u);
}

// Directed: one link instruction of each kind after a valid prologue; the chip stops at it
// with the golden model's code and index.
TEST(PodChipAlone, LinkInstructionsFaultInIsaOrder) {
  auto& b = backends();
  const tpu::ChipParams params = generate_program(0, options()).params;
  struct Case {
    tpu::Instruction in;
    tpu::ErrorCode code;
  };
  const uint32_t last = params.vmem_rows - 1;
  const std::vector<Case> cases = {
      {tpu::IciSend{0, 0, 4}, tpu::ErrorCode::ERR_ICI_LINK},
      {tpu::IciRecv{1, 1, 8, 2}, tpu::ErrorCode::ERR_ICI_LINK},
      {tpu::IciRecv{uint8_t(TPU_SIM_ICI_LINKS), 0, 0, 1}, tpu::ErrorCode::ERR_ICI_LINK},
      {tpu::IciSend{15, uint16_t(last), 2}, tpu::ErrorCode::ERR_VMEM_RANGE},
      {tpu::IciSend{0, 0, 0}, tpu::ErrorCode::ERR_FIELD},
      {tpu::IciRecv{0, 3, 0, 1}, tpu::ErrorCode::ERR_FIELD},
  };
  for (const Case& c : cases) {
    TestCase tc = generate_program(1, options());
    tc.program = {tpu::Nop{}, c.in, tpu::Halt{}};
    tc.kind = CaseKind::kStaticFault;
    const Outcome chip = b.chip.run(tc.memory, tc.config, tc.program);
    const Outcome gold = b.golden.run(tc.memory, tc.config, tc.program);
    EXPECT_FALSE(chip.done) << tpu::disassemble(c.in);
    EXPECT_EQ(chip.err_code, uint32_t(c.code)) << tpu::disassemble(c.in);
    EXPECT_EQ(chip.err_pc, 1u) << tpu::disassemble(c.in);
    EXPECT_EQ(gold.err_code, chip.err_code) << tpu::disassemble(c.in);
    EXPECT_EQ(gold.err_pc, chip.err_pc) << tpu::disassemble(c.in);
  }
}

TEST(RandomPodChip, Seeds0To99) { run_batch(0, 100, 0.3, nullptr); }
TEST(RandomPodChip, FaultsSeeds0To299) {
  size_t ici = 0;
  run_batch(0, 300, 1.0, &ici);
  EXPECT_GT(ici, 30u) << "the generator planted too few link-instruction faults";
}

}  // namespace

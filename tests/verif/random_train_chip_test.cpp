// SPDX-License-Identifier: Apache-2.0
// The training chip (tpu_sim_train_n<N>, VmemRows = TPU_SIM_VMEM_ROWS) against the golden model
// on random programs of the training generator (random_program.h, GenOptions::vmem_rows):
// only the training opcodes the RTL executes (RtlDevice::kRtlTrainingOps) are emitted, the
// others appear as ERR_OPCODE faults on both sides; int8 instructions mixed in. Every byte of
// host memory, UB, ACC and the VMEM window is compared (run_case). Labels rtl;verif;random.
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

void run_batch(uint64_t first, uint64_t count, double fault_probability = 0.3) {
  auto& b = backends();
  GenOptions opt = options();
  opt.fault_probability = fault_probability;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    const CaseResult r = run_case(b.chip, b.golden, tc);
    if (!r.ok) {
      std::ostringstream s;
      s << "seed " << seed << ": " << r.mismatch << "\n";
      const FirstDifference fd = find_first_difference(b.chip, b.golden, tc);
      if (fd.index >= 0) {
        s << "first differing instruction: " << fd.index << ": "
          << tpu::disassemble(tc.program[size_t(fd.index)]) << " (" << fd.mismatch << ")\n";
      }
      s << "replay: build/tests/verif/tpu_random_train_n" << TPU_SIM_N << " replay --seed " << seed
        << "\n"
        << describe(tc);
      FAIL() << s.str();
    }
  }
}

TEST(RandomTrainChip, ChipReportsTheGeneratorsVmem) {
  EXPECT_EQ(tpu::sim::Chip::compiled_vmem_rows(), unsigned(TPU_SIM_VMEM_ROWS));
}
// Seeds 27 and 155/310/386 (faults only) at N = 4 once stopped on tpu_vpu's VpuCmdHold
// assertion (an AXI error while a vector instruction waited for the vector unit); the
// assertion was removed from the unit (it held only while the controller kept its command).
TEST(RandomTrainChip, Seeds0To199) { run_batch(0, 200); }
TEST(RandomTrainChip, Seeds200To399) { run_batch(200, 200); }
TEST(RandomTrainChip, FaultsSeeds0To399) { run_batch(0, 400, 1.0); }

}  // namespace

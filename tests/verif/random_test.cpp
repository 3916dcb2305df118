// SPDX-License-Identifier: Apache-2.0
// The default constrained-random suite: 4 batches of 125 seeded programs per N (valid ones and
// ones with a random fault, random memory timing and backpressure), chip vs golden model, and
// a batch of 125 AXI faults each followed by a younger AXI error (GenOptions::axi_pairs).
// Each batch is its own ctest test (and process), so ctest -j runs them in parallel.
// A mismatch prints the seed, the first differing instruction and the replay command.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include "chip_backend.h"
#include "random_program.h"

namespace {

using namespace tpu::verif;

constexpr uint64_t kBatch = 125;

struct Backends {
  ChipBackend chip;
  GoldenBackend golden{tpu::ChipParams::with_n(TPU_SIM_N)};
};
Backends& backends() {
  static Backends* b = new Backends;  // one Chip per process, never destroyed
  return *b;
}

void run_batch(uint64_t first, bool axi_pairs = false) {
  auto& b = backends();
  GenOptions opt;
  opt.n = TPU_SIM_N;
  opt.axi_pairs = axi_pairs;
  int kinds[4] = {0, 0, 0, 0};
  for (uint64_t seed = first; seed < first + kBatch; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    ++kinds[int(tc.kind)];
    const CaseResult r = run_case(b.chip, b.golden, tc);
    if (!r.ok) {
      std::ostringstream s;
      s << mismatch_report(b.chip, b.golden, tc, seed, r.mismatch);
      s << "replay: scripts/replay.sh --n " << TPU_SIM_N << " " << seed << "\n" << describe(tc);
      FAIL() << s.str();
    }
  }
  if (axi_pairs) {
    EXPECT_EQ(kinds[int(CaseKind::kAxiFault)], int(kBatch));
    return;
  }
  // The generator must keep producing every kind of case.
  EXPECT_GT(kinds[int(CaseKind::kValid)], 50);
  EXPECT_GT(kinds[int(CaseKind::kStaticFault)], 5);
  EXPECT_GT(kinds[int(CaseKind::kAxiFault)], 1);
}

TEST(RandomPrograms, Seeds0To124) { run_batch(0); }
TEST(RandomPrograms, Seeds125To249) { run_batch(125); }
TEST(RandomPrograms, Seeds250To374) { run_batch(250); }
TEST(RandomPrograms, Seeds375To499) { run_batch(375); }
// Every case an AXI fault with a younger AXI error behind it (GenOptions::axi_pairs): two
// errors in the same cycle, ERR_PC must name the older (issue 34).
TEST(RandomPrograms, AxiErrorPairsSeeds0To124) { run_batch(0, true); }

// The generator is a pure function of the seed (replay depends on it).
TEST(RandomPrograms, GeneratorIsReproducible) {
  GenOptions opt;
  opt.n = TPU_SIM_N;
  for (uint64_t seed : {0ull, 1ull, 77ull, 123456789ull}) {
    const TestCase a = generate_program(seed, opt), b = generate_program(seed, opt);
    EXPECT_EQ(describe(a), describe(b));
    EXPECT_EQ(a.memory, b.memory);
  }
  EXPECT_NE(describe(generate_program(1, opt)), describe(generate_program(2, opt)));
}

}  // namespace

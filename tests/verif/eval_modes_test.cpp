// SPDX-License-Identifier: Apache-2.0
// The once-per-cycle evaluation of the Verilated core (sim/core_model.h) against evaluating it at
// every change of its clock or inputs, as Verilator's own SystemC wrapper does
// (ChipConfig::eval_every_change). The same seeded random programs, with random memory timing
// and AXI backpressure on both ports, must give the same runs: every instruction's issue and
// finish cycle, the CYCLES counter, the cycle each run ended (register accesses included), the
// outcome and the host memory left behind.
//
// Run-ahead (sim/core_model.h: the model evaluates edges ahead of the SystemC kernel while
// nothing else acts on them) is off while the instruction trace records, so it is checked apart:
// the same programs without the trace, run-ahead on against off, must end alike (outcome, every
// counter, the cycle each run ended, memory), and run-ahead must have been used.
//
// One Chip per process: each mode runs in a child process (fork, before any Chip exists) and
// writes a fingerprint of its runs to a file in a directory of its own (mkdtemp: parallel runs
// of the test never share a name); the test compares the two files line by line.
//
// A chip that hangs must fail fast (a mutant of scripts/mutate.sh may hang it): each program
// has a cycle budget of kMaxCycles (the longest of these programs takes about 8,400 cycles), the
// child stops at the first program that exceeds it, and a child that still runs after kChildSeconds
// is stopped (SIGALRM) and counts as failed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chip_backend.h"
#include "random_program.h"

namespace {

using namespace tpu::verif;

constexpr uint64_t kFirstSeed = 7'000'000;
constexpr uint64_t kPrograms = 200;
// A bound on one program's cycles (the longest of these programs takes about a tenth of it)
// and on a child's run time (a child takes about 2 s; a hang costs one program of 200,000 cycles,
// under a second).
constexpr uint64_t kMaxCycles = 200'000;
constexpr unsigned kChildSeconds = 120;

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

enum class Mode {
  kEdge,         // once per cycle, instruction trace on (so no run-ahead)
  kEveryChange,  // at every change, instruction trace on
  kRunAhead,     // once per cycle, no trace, run-ahead on (the default)
  kNoRunAhead,   // once per cycle, no trace, run-ahead off
};

const char* name(Mode mode) {
  switch (mode) {
    case Mode::kEdge:
      return "edge";
    case Mode::kEveryChange:
      return "every";
    case Mode::kRunAhead:
      return "run_ahead";
    case Mode::kNoRunAhead:
      return "no_run_ahead";
  }
  return "?";
}

// One line per program: the outcome, the chip's counters and cycle, every traced instruction.
// The last line: the edges the model evaluated ahead, over all programs.
std::string fingerprint(Mode mode) {
  tpu::sim::ChipConfig cfg;
  cfg.eval_every_change = mode == Mode::kEveryChange;
  cfg.run_ahead = mode != Mode::kNoRunAhead;
  const bool traced = mode == Mode::kEdge || mode == Mode::kEveryChange;
  ChipBackend chip(cfg);
  chip.max_cycles = kMaxCycles;
  chip.chip().set_instruction_trace(traced);
  GenOptions opt;
  opt.n = TPU_SIM_N;
  std::ostringstream s;
  for (uint64_t seed = kFirstSeed; seed < kFirstSeed + kPrograms; ++seed) {
    const TestCase tc = generate_program(seed, opt);
    const Outcome o = chip.run(tc.memory, tc.config, tc.program);
    tpu::sim::Chip& c = chip.chip();
    s << "seed " << seed << " done " << o.done << " hung " << o.hung << " err " << o.err_code << "@"
      << o.err_pc << " retired " << o.retired << " cycles " << c.counter(0) << " at " << c.cycle()
      << " mem " << std::hex << fnv1a(o.data) << fnv1a(o.out) << fnv1a(o.dump) << std::dec;
    if (traced) {
      s << " trace";
      for (const auto& e : c.trace_events())
        s << " " << e.pc << ":" << unsigned(e.unit) << ":" << e.issue << "-" << e.done;
    } else {
      s << " counters";
      const tpu::sim::Counters k = c.counters();
      for (uint64_t v : {k.cycles, k.mxu_busy, k.mxu_macs, k.weight_stall, k.input_stall,
                         k.dma_busy, k.dma_rd_bytes, k.dma_wr_bytes, k.instr_retired, k.act_busy})
        s << " " << v;
    }
    s << "\n";
    if (o.hung) {
      s << "hung: seed " << seed << " did not end within " << kMaxCycles << " cycles\n";
      break;
    }
  }
  s << "run-ahead " << chip.chip().edges_run_ahead() << " of " << chip.chip().cycle() << "\n";
  return s.str();
}

// Runs fingerprint(mode) in a child process; returns its lines.
std::vector<std::string> run_in_child(Mode mode) {
  std::string dir_template = ::testing::TempDir() + "tpu_eval_modes_XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << dir_template << " failed";
    return {};
  }
  const std::string dir = dir_template;
  const std::string path = dir + "/n" + std::to_string(TPU_SIM_N) + "_" + name(mode);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(kChildSeconds);  // a hang that the cycle budget misses: SIGALRM ends the child
    int rc = 0;
    std::ofstream out(path);
    try {
      out << fingerprint(mode);
    } catch (const std::exception& e) {
      out << "exception: " << e.what() << "\n";
      rc = 1;
    }
    out.close();
    _exit(rc);  // no SystemC or gtest teardown in the child
  }
  EXPECT_GT(pid, 0) << "fork failed";
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child (" << name(mode) << ") failed, status " << status << "; see " << path;
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::remove(path.c_str());
  rmdir(dir.c_str());
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind("hung", 0), std::string::npos) << name(mode) << ": " << line;
  }
  return lines;
}

TEST(EvalModes, OncePerCycleRunsLikeEveryChange) {
  if (tpu::sim::Chip::constructed()) GTEST_SKIP() << "needs a process without a Chip";
  std::vector<std::string> edge = run_in_child(Mode::kEdge);
  std::vector<std::string> every = run_in_child(Mode::kEveryChange);
  ASSERT_EQ(edge.size(), kPrograms + 1);
  ASSERT_EQ(every.size(), kPrograms + 1);
  // No run-ahead in either: the trace is on.
  EXPECT_EQ(edge.back().rfind("run-ahead 0 of ", 0), 0u) << edge.back();
  EXPECT_EQ(every.back().rfind("run-ahead 0 of ", 0), 0u) << every.back();
  edge.pop_back();
  every.pop_back();
  size_t traced = 0;
  for (size_t i = 0; i < kPrograms; ++i) {
    EXPECT_EQ(edge[i], every[i]) << "program " << i << " differs between the two evaluations";
    if (edge[i].find(':') != std::string::npos) ++traced;
  }
  EXPECT_GT(traced, kPrograms / 2) << "too few runs recorded an instruction trace";
  // The longest program against the hang budget (kMaxCycles must stay well above it).
  uint64_t longest = 0;
  for (const std::string& line : edge) {
    const size_t c = line.find(" cycles ");
    if (c != std::string::npos)
      longest = std::max<uint64_t>(longest, std::stoull(line.substr(c + 8)));
  }
  std::printf("longest program: %llu cycles (budget %llu)\n", (unsigned long long)longest,
              (unsigned long long)kMaxCycles);
  EXPECT_LT(longest, kMaxCycles / 4) << "raise kMaxCycles: programs come close to the hang budget";
  // The cycle the last run ended: the programs must have run for a while.
  const size_t at = edge.back().find(" at ");
  ASSERT_NE(at, std::string::npos);
  const uint64_t cycles = std::stoull(edge.back().substr(at + 4));
  std::printf("%llu programs in %llu cycles\n", (unsigned long long)kPrograms,
              (unsigned long long)cycles);
  EXPECT_GT(cycles, kPrograms * 100);
}

TEST(EvalModes, RunAheadRunsLikeEveryEdge) {
  if (tpu::sim::Chip::constructed()) GTEST_SKIP() << "needs a process without a Chip";
  std::vector<std::string> ahead = run_in_child(Mode::kRunAhead);
  std::vector<std::string> edge = run_in_child(Mode::kNoRunAhead);
  ASSERT_EQ(ahead.size(), kPrograms + 1);
  ASSERT_EQ(edge.size(), kPrograms + 1);
  for (size_t i = 0; i < kPrograms; ++i)
    EXPECT_EQ(ahead[i], edge[i]) << "program " << i << " differs with run-ahead";
  // "run-ahead E of C": off, none; on, some of the cycles (about 5 %: these programs keep the
  // bus busy, and half of them have AXI backpressure, which keeps the bridge awake).
  unsigned long long e = 0, c = 0;
  ASSERT_EQ(std::sscanf(edge.back().c_str(), "run-ahead %llu of %llu", &e, &c), 2) << edge.back();
  EXPECT_EQ(e, 0u);
  ASSERT_EQ(std::sscanf(ahead.back().c_str(), "run-ahead %llu of %llu", &e, &c), 2) << ahead.back();
  std::printf("run-ahead: %llu of %llu cycles\n", e, c);
  EXPECT_GT(e, c / 50) << "run-ahead was hardly used";
}

}  // namespace

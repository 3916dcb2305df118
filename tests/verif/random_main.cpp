// SPDX-License-Identifier: Apache-2.0
// tpu_random_n<N>: the constrained-random differential regression, chip vs golden model.
//
//   tpu_random_n16 run --first 0 --count 1000 [--quiet] [--stop]   seeds first .. first+count-1
//   tpu_random_n16 run --first 0 --count 1000 --shard I/K           shard I of K of those seeds
//                                                                     (driver/shard.h)
//   tpu_random_n16 replay --seed 1234 [--no-bisect]                 one case, with listing
//   tpu_random_n16 show --seed 1234                                 the case only, nothing run
//   tpu_random_train_n16 coverage --first 0 --count 1000 [--shard I/K]
//                      the generator's coverage counters of those seeds (random_coverage.cpp:
//                      each case on the golden model only, no chip), then the counters of
//                      required_coverage() that none of them hit ("missing: ..." lines)
//
// Options shared by all commands: --min-length L, --max-length L, --fault-probability P,
// --no-timing (fixed memory timing, no backpressure). Changing them changes the cases a seed
// gives; scripts/regress.sh and the test suite use the defaults.
// Training configuration (issue 30): tpu_random_train_n<N> (the training chip,
// tpu_sim_train_n<N>) generates for its VMEM rows and the training opcodes its RTL executes
// (RtlDevice::kRtlTrainingOps) by default; --vmem-rows R (GenOptions::vmem_rows, the chip
// must have the same) and --train-ops LIST (comma-separated mnemonics, e.g. read_vmem,vector;
// the others are then ERR_OPCODE faults on both sides) override them.
// --long-mix (training chips only): the long-transfer mix (GenOptions::long_mix: VMEM windows
// of hundreds to thousands of rows, high VMEM and host addresses, all eight DMA windows at
// random bases and sizes), for toggle coverage (docs/verification.md "Coverage").
// Depthwise configuration (issue 33): tpu_random_dw_n<N> (the depthwise chip, tpu_sim_dw_n<N>)
// generates with the depthwise knob at the chip's DwWidth (GenOptions::dw_width).
//
// Exit status: 0 when every case matched, 1 on a mismatch, 2 on a usage error. The last line
// of `run` is "N passed, M failed".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "chip_backend.h"
#include "device_rtl.h"  // RtlDevice::kRtlTrainingOps
#include "random_program.h"
#include "shard.h"

namespace {

using namespace tpu::verif;

int usage() {
  std::cerr
      << "usage: tpu_random_n" << TPU_SIM_N
      << " run --first S --count C [--shard I/K] [--quiet] [--stop]\n"
         "       tpu_random_n"
      << TPU_SIM_N
      << " replay --seed S [--no-bisect]\n"
         "       tpu_random_n"
      << TPU_SIM_N
      << " show --seed S\n"
         "       tpu_random_n"
      << TPU_SIM_N
      << " coverage --first S --count C [--shard I/K]\n"
         "options: --min-length L --max-length L --fault-probability P --no-timing --axi-pairs\n"
         "         --long-mix --vmem-rows R --train-ops "
         "read_vmem,write_vmem,load_weights,matmul_bf16,"
         "acc_to_vmem,transpose,vector\n";
  return 2;
}

void report_failure(std::ostream& os, ChipBackend& chip, tpu::verif::GoldenBackend& golden,
                    const TestCase& tc, const CaseResult& r, bool bisect) {
  os << "MISMATCH seed " << tc.seed << " (N = " << TPU_SIM_N << ", " << to_string(tc.kind)
     << "): " << r.mismatch << "\n";
  if (bisect) {
    FirstDifference fd = find_first_difference(chip, golden, tc);
    if (fd.index >= 0) {
      os << "  first differing instruction: " << fd.index << ": "
         << tpu::disassemble(tc.program[size_t(fd.index)])
         << (size_t(fd.index) < tc.prologue_length ? "  (in the prologue)" : "") << "\n"
         << "    (program truncated after it: " << fd.mismatch << ")\n";
    } else {
      os << "  every prefix of the program matches: the difference needs the whole program\n";
    }
  }
  os << "  replay: scripts/replay.sh --n " << TPU_SIM_N << " " << tc.seed << "\n";
}

// "read_vmem,vector" -> train_ops bits; false for an unknown name.
bool parse_train_ops(const std::string& list, uint32_t& bits) {
  bits = 0;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, end - at);
    bool found = false;
    for (unsigned op = 0x08; op <= 0x0E; ++op) {
      if (tpu::mnemonic(tpu::Opcode(op)) == name) {
        bits |= train_op_bit(tpu::Opcode(op));
        found = true;
      }
    }
    if (!found) {
      std::cerr << "--train-ops: unknown training opcode '" << name << "'\n";
      return false;
    }
    at = end + 1;
  }
  return true;
}

}  // namespace

// `coverage`: the counters of seeds [first, first + count) (this shard's part), golden model only.
int print_coverage(const GenOptions& opt, uint64_t first, uint64_t count,
                   const tpu::ShardSpec& shard) {
  const tpu::ShardRange r = tpu::shard_range(count, shard);
  first += r.begin;
  count = r.size();
  const auto t0 = std::chrono::steady_clock::now();
  GoldenBackend golden(generate_program(first, opt).params);
  Coverage cov;
  uint64_t by_kind[4] = {0, 0, 0, 0};
  for (uint64_t s = first; s < first + count; ++s) {
    const TestCase tc = generate_program(s, opt);
    ++by_kind[int(tc.kind)];
    const Outcome g = golden.run(tc.memory, tc.config, tc.program);
    cover_case(tc, g, cov);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [name, hits] : cov) std::cout << name << " " << hits << "\n";
  unsigned missing = 0;
  if (opt.vmem_rows != 0) {
    for (const std::string& name : required_coverage(opt.n, opt.fault_probability > 0)) {
      if (cov.count(name) == 0 || cov.at(name) == 0) {
        std::cout << "missing: " << name << "\n";
        ++missing;
      }
    }
  }
  std::cout << "N = " << opt.n << ", seeds " << first << ".." << first + count - 1 << ": "
            << by_kind[0] << " valid, " << by_kind[1] << " static-fault, " << by_kind[2]
            << " axi-fault, " << by_kind[3] << " no-halt programs; " << cov.size() << " counters, "
            << missing << " required ones missing; " << secs << " s\n";
  return missing ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  uint64_t first = 0, count = 1, seed = 0;
  tpu::ShardSpec shard;
  bool quiet = false, stop = false, bisect = true, have_seed = false;
  GenOptions opt;
  opt.n = TPU_SIM_N;
#if defined(TPU_SIM_VMEM_ROWS) && TPU_SIM_VMEM_ROWS > 0
  // The training chip (tpu_random_train_n<N>): its VMEM and the opcodes its RTL executes.
  opt.vmem_rows = TPU_SIM_VMEM_ROWS;
  opt.train_ops = tpu::RtlDevice::kRtlTrainingOps;
#endif
#if defined(TPU_SIM_DW_WIDTH) && TPU_SIM_DW_WIDTH > 0
  // The depthwise chip (tpu_random_dw_n<N>): the generator's depthwise knob at its DwWidth.
  opt.dw_width = TPU_SIM_DW_WIDTH;
#endif
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--first")
      first = std::strtoull(value(), nullptr, 0);
    else if (a == "--count")
      count = std::strtoull(value(), nullptr, 0);
    else if (a == "--shard") {
      try {
        shard = tpu::parse_shard(value());
      } catch (const std::invalid_argument& e) {
        std::cerr << e.what() << "\n";
        return 2;
      }
    } else if (a == "--seed") {
      seed = std::strtoull(value(), nullptr, 0);
      have_seed = true;
    } else if (a == "--quiet")
      quiet = true;
    else if (a == "--stop")
      stop = true;
    else if (a == "--no-bisect")
      bisect = false;
    else if (a == "--min-length")
      opt.min_length = uint32_t(std::strtoul(value(), nullptr, 0));
    else if (a == "--max-length")
      opt.max_length = uint32_t(std::strtoul(value(), nullptr, 0));
    else if (a == "--fault-probability")
      opt.fault_probability = std::strtod(value(), nullptr);
    else if (a == "--no-timing")
      opt.random_timing = false;
    else if (a == "--axi-pairs")
      opt.axi_pairs = true;
    else if (a == "--long-mix")
      opt.long_mix = true;
    else if (a == "--vmem-rows")
      opt.vmem_rows = uint32_t(std::strtoul(value(), nullptr, 0));
    else if (a == "--train-ops") {
      if (!parse_train_ops(value(), opt.train_ops)) return 2;
    } else
      return usage();
  }
  if (opt.min_length > opt.max_length || opt.vmem_rows > 65000) return usage();
  if (opt.long_mix && opt.vmem_rows == 0) {
    std::cerr << "--long-mix needs a training chip (--vmem-rows R > 0)\n";
    return 2;
  }

  if (cmd == "show") {
    if (!have_seed) return usage();
    std::cout << describe(generate_program(seed, opt));
    return 0;
  }

  if (cmd == "coverage") return print_coverage(opt, first, count, shard);

  ChipBackend chip;
  GoldenBackend golden(generate_program(0, opt).params);

  if (cmd == "replay") {
    if (!have_seed) return usage();
    const TestCase tc = generate_program(seed, opt);
    std::cout << describe(tc);
    const CaseResult r = run_case(chip, golden, tc);
    auto show = [](const Outcome& o) {
      if (o.hung) return std::string("hung");
      if (o.done) return std::string("done");
      return std::string(tpu::error_name(tpu::ErrorCode(o.err_code))) + " at index " +
             std::to_string(o.err_pc);
    };
    std::cout << "golden: " << show(r.golden) << ", retired " << r.golden.retired << "\n"
              << "chip:   " << show(r.chip) << ", retired " << r.chip.retired << "\n";
    if (r.ok) {
      std::cout << "MATCH: chip and golden model agree on every compared byte\n";
      return 0;
    }
    report_failure(std::cout, chip, golden, tc, r, bisect);
    return 1;
  }

  if (cmd != "run") return usage();
  {  // this shard's seeds (the one static sharding of tpusim and regress.sh)
    const tpu::ShardRange r = tpu::shard_range(count, shard);
    first += r.begin;
    count = r.size();
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t passed = 0, failed = 0, by_kind[4] = {0, 0, 0, 0}, faulted = 0;
  for (uint64_t s = first; s < first + count; ++s) {
    const TestCase tc = generate_program(s, opt);
    const CaseResult r = run_case(chip, golden, tc);
    ++by_kind[int(tc.kind)];
    if (!r.golden.done) ++faulted;
    if (r.ok) {
      ++passed;
    } else {
      ++failed;
      report_failure(std::cout, chip, golden, tc, r, bisect);
      std::cout.flush();
      if (stop) break;
    }
    if (!quiet && (s - first + 1) % 1000 == 0) {
      std::cout << "  " << (s - first + 1) << " programs, " << failed << " failed\n";
      std::cout.flush();
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "N = " << TPU_SIM_N << ", seeds " << first << ".." << first + count - 1 << ": "
            << by_kind[0] << " valid, " << by_kind[1] << " static-fault, " << by_kind[2]
            << " axi-fault, " << by_kind[3] << " no-halt programs (" << faulted
            << " ended in an error); " << secs << " s, " << chip.chip().cycle()
            << " simulated cycles\n";
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

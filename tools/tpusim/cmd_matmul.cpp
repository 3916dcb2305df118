// SPDX-License-Identifier: Apache-2.0
// tpusim matmul: a random M x K x N tiled matmul on a backend, checked against a CPU matmul.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>

#include "interrupt.h"
#include "tiled_ops.h"
#include "tpusim.h"

namespace {

// matmul's options, read and checked.
struct MatmulOptions {
  bool a_uns = false, w_uns = false, json = false, bias = false, relu = false;
  uint64_t seed = 1;
  tpu::MatmulSpec spec;
  tpu::MatmulResources res;
  tpusim::DeviceOptions dev;
};

// Reads the options; false for --help. Throws UsageError for bad ones.
bool parse_matmul_options(const tpusim::Args& args, MatmulOptions& o,
                          tpusim::po::variables_map& vm) {
  namespace po = tpusim::po;
  const tpu::ChipParams kDefaultChip = tpu::ChipParams::with_n(tpu::RtlDevice::compiled_n());
  po::options_description opts("options");
  opts.add_options()("m", po::value<std::string>()->required(),
                     "rows of A and of the result (1..16384)")(
      "k", po::value<std::string>()->required(), "columns of A = rows of W (1..16384)")(
      "n", po::value<std::string>()->required(), "columns of W and of the result (1..16384)")(
      "a-unsigned", po::bool_switch(&o.a_uns), "A is uint8 (default int8)")(
      "w-unsigned", po::bool_switch(&o.w_uns), "W is uint8 (default int8)")(
      "bias", po::bool_switch(&o.bias), "add a random per-column int32 bias")(
      "relu", po::bool_switch(&o.relu), "apply ReLU (default identity)")(
      "seed", po::value<std::string>()->default_value("1"),
      "random seed for the operands (0..2^63-1)")(
      "lookahead", po::value<std::string>(),
      ("weight tiles requested ahead of the MXU, 1..WFifoTiles+2 (1.." +
       std::to_string(kDefaultChip.wfifo_tiles + 2) +
       " on the default chip; default: WFifoTiles, " + std::to_string(kDefaultChip.wfifo_tiles) +
       ")")
          .c_str())("chunk-rows", po::value<std::string>(),
                    "at most this many rows of A per chunk, 1..4095 (default: as many as fit)")(
      "edge-rows", po::value<std::string>(),
      "rows of the first and last chunk, 1..4095 (default: chosen from N)")(
      "json", po::bool_switch(&o.json), "print the result as one JSON object, also on failure");
  tpusim::add_device_options(
      opts, o.dev, /*with_vcd=*/false,
      "derived from the work: 20 x (M x K/N x N/N + DMA bytes / 4 + 100000)");
  if (!tpusim::parse_options(
          args,
          "tpusim matmul --m M --k K --n N [--a-unsigned] [--w-unsigned] [--seed S] "
          "[--backend rtl|model] [--json]",
          "Multiplies a random M x K matrix by a random K x N matrix on the chip, tiled by the "
          "driver (tiled_ops.h), requantized to int8 with a shift chosen to keep the results in "
          "range, and compares every output byte with a plain C++ matmul. mxu_utilization is "
          "useful MACs / (cycles * N^2) for the chip's array size N. Exit code 1 on a mismatch.",
          opts, {}, vm)) {
    return false;
  }
  tpu::MatmulSpec& spec = o.spec;
  spec.m = static_cast<uint32_t>(tpusim::int_option(vm, "m", 1, 16384));
  spec.k = static_cast<uint32_t>(tpusim::int_option(vm, "k", 1, 16384));
  spec.n = static_cast<uint32_t>(tpusim::int_option(vm, "n", 1, 16384));
  o.seed = static_cast<uint64_t>(tpusim::int_option(vm, "seed", 0, INT64_MAX));
  const double macs = double(spec.m) * spec.k * spec.n;
  if (macs > 8.6e9) {
    throw tpusim::UsageError("m*k*n = " + std::to_string(uint64_t(macs)) +
                             " MACs is more than this tool simulates (at most 2^33)");
  }
  spec.a_unsigned = o.a_uns;
  spec.w_unsigned = o.w_uns;
  spec.func = o.relu ? tpu::ActFunc::Relu : tpu::ActFunc::Identity;
  if (vm.count("lookahead"))
    o.res.weight_lookahead = static_cast<uint32_t>(tpusim::int_option(vm, "lookahead", 1, 1 << 20));
  if (vm.count("chunk-rows"))
    o.res.max_chunk_rows = static_cast<uint32_t>(tpusim::int_option(vm, "chunk-rows", 1, 4095));
  if (vm.count("edge-rows"))
    o.res.edge_chunk_rows = static_cast<uint32_t>(tpusim::int_option(vm, "edge-rows", 1, 4095));
  return true;
}

// Random operands A and W (and the bias, with --bias), and the shift that maps the largest
// |sum| over a sample of rows to about 127.
void random_operands(MatmulOptions& o, std::vector<uint8_t>& a, std::vector<uint8_t>& w) {
  tpu::MatmulSpec& spec = o.spec;
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> byte(0, 255);
  a.resize(size_t{spec.m} * spec.k);
  w.resize(size_t{spec.k} * spec.n);
  for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  auto av = [&](size_t i) { return o.a_uns ? int64_t{a[i]} : int64_t{int8_t(a[i])}; };
  auto wv = [&](size_t i) { return o.w_uns ? int64_t{w[i]} : int64_t{int8_t(w[i])}; };
  int64_t peak = 1;
  for (uint32_t r = 0; r < std::min<uint32_t>(spec.m, 16); ++r) {
    for (uint32_t c = 0; c < spec.n; ++c) {
      int64_t s = 0;
      for (uint32_t i = 0; i < spec.k; ++i)
        s += av(size_t{r} * spec.k + i) * wv(size_t{i} * spec.n + c);
      peak = std::max<int64_t>(peak, std::llabs(s));
    }
  }
  if (o.bias) {
    std::uniform_int_distribution<int64_t> b(-peak / 2, peak / 2);
    spec.bias.resize(spec.n);
    for (auto& v : spec.bias) v = static_cast<int32_t>(b(rng));
  }
  unsigned shift = 0;
  while (shift < 40 && (peak + (o.bias ? peak / 2 : 0)) > (int64_t{127} << shift)) ++shift;
  spec.shift = {static_cast<uint8_t>(shift)};
}

// The result: one JSON object, or the lines.
void print_matmul(const MatmulOptions& o, const tpu::Device& dev, const tpu::MatmulRun& run,
                  uint64_t mismatches, double total_wall) {
  const tpu::MatmulSpec& spec = o.spec;
  const tpu::ChipParams& p = dev.params();
  const bool match = mismatches == 0;
  if (o.json) {
    tpusim::Json j;
    j.add("m", spec.m).add("k", spec.k).add("n", spec.n);
    j.add("backend", std::string(dev.backend()));
    j.add("array_size", p.N);
    j.add("a_unsigned", o.a_uns).add("w_unsigned", o.w_uns).add("bias", o.bias);
    j.add("relu", o.relu);
    j.add("seed", o.seed);
    j.add("status", match ? "done" : "mismatch");
    j.add("match", match);
    j.add("mismatches", mismatches);
    if (run.stats.cycles_estimated) {
      j.add_null("mxu_utilization");  // the model has no timing: no utilization to report
    } else {
      j.add("mxu_utilization", run.mxu_utilization);
    }
    j.add("useful_macs", run.useful_macs);
    j.add("plan", run.plan.describe());
    tpusim::add_run_stats(j, run.stats);
    if (!run.stats.cycles_estimated && run.stats.wall_seconds > 0) {
      j.add("sim_cycles_per_second", double(run.stats.cycles) / run.stats.wall_seconds);
    }
    j.add("total_wall_seconds", total_wall);
    std::cout << j.str() << "\n";
    return;
  }
  std::printf("%u x %u x %u %s x %s matmul%s%s on %s (N=%u): %s\n", spec.m, spec.k, spec.n,
              o.a_uns ? "uint8" : "int8", o.w_uns ? "uint8" : "int8", o.bias ? " + bias" : "",
              o.relu ? ", ReLU" : "", std::string(dev.backend()).c_str(), p.N,
              match ? "matches the C++ reference bit for bit" : "MISMATCH");
  if (run.stats.cycles_estimated) {
    std::printf(
        "cycles %llu (estimate: the model has no timing, so no MXU utilization), %zu "
        "instructions, "
        "run wall %.3f s\n",
        (unsigned long long)run.stats.cycles, run.instructions, run.stats.wall_seconds);
  } else {
    std::printf("cycles %llu, MXU utilization %.1f%%, %zu instructions, run wall %.3f s\n",
                (unsigned long long)run.stats.cycles, 100.0 * run.mxu_utilization, run.instructions,
                run.stats.wall_seconds);
  }
  std::printf("plan: %s\n", run.plan.describe().c_str());
}

int run_matmul(const tpusim::Args& args) {
  const auto t_start = std::chrono::steady_clock::now();
  MatmulOptions o;
  tpusim::po::variables_map vm;
  if (!parse_matmul_options(args, o, vm)) return 0;
  std::vector<uint8_t> a, w;
  random_operands(o, a, w);
  const tpu::MatmulSpec& spec = o.spec;
  auto dev = tpusim::open_device(o.dev, vm);
  const tpu::ChipParams& p = dev->params();
  if (o.res.weight_lookahead > p.wfifo_tiles + 2) {
    throw tpusim::UsageError("--lookahead " + std::to_string(o.res.weight_lookahead) +
                             " is out of range (allowed 1.." + std::to_string(p.wfifo_tiles + 2) +
                             ": the chip's " + std::to_string(p.wfifo_tiles) +
                             " weight FIFO tiles + 2)");
  }
  if (!o.dev.max_cycles_given) {  // a generous bound from the work to do
    const uint64_t kt = (spec.k + p.N - 1) / p.N, nt = (spec.n + p.N - 1) / p.N;
    const uint64_t bytes = (uint64_t{spec.m} * (kt + nt) + kt * nt * p.N) * p.N;
    o.dev.max_cycles = 20 * (uint64_t{spec.m} * kt * nt + bytes / 4 + 100'000);
  }
  tpusim::set_activity("running the " + std::to_string(spec.m) + " x " + std::to_string(spec.k) +
                       " x " + std::to_string(spec.n) + " matmul on the " + o.dev.backend +
                       " backend");
  const tpu::MatmulRun run = tpu::run_matmul(*dev, spec, a, w, o.dev.max_cycles, o.res);
  tpusim::set_activity("checking the result against the C++ matmul");
  const std::vector<uint8_t> ref = tpu::reference_matmul(spec, a, w);
  uint64_t mismatches = 0;
  size_t first_bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (run.out[i] != ref[i] && mismatches++ == 0) first_bad = i;
  }
  print_matmul(o, *dev, run, mismatches,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
  if (mismatches != 0) {
    std::fprintf(stderr,
                 "tpusim matmul: error: %llu of %zu outputs differ; first at row %zu column %zu: "
                 "chip %d, reference %d\n",
                 (unsigned long long)mismatches, ref.size(), first_bad / spec.n, first_bad % spec.n,
                 spec.out_unsigned ? run.out[first_bad] : int(int8_t(run.out[first_bad])),
                 spec.out_unsigned ? ref[first_bad] : int(int8_t(ref[first_bad])));
    return 1;
  }
  return 0;
}

}  // namespace

TPUSIM_SUBCOMMAND("matmul", "random tiled matmul checked against C++: tpusim matmul --m --k --n",
                  run_matmul);

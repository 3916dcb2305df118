// SPDX-License-Identifier: Apache-2.0
// Simulator benchmark, SystemC harness: the workload (workload.h) through tpu::sim::Chip, the
// testbench every other tool uses (sim/: Verilated SystemC model, AXI bridges, TLM memory).
//
//   bench_sc_n<N> [--cycles C] [--rows-per-tile R] [--warmup W]
//                 [--vcd FILE [--vcd-from A --vcd-to B]]   (absolute cycles)
//
// Prints one line: RESULT harness=sc n=N ... cps=<simulated cycles per second of the timed part>.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "chip.h"
#include "workload.h"

int main(int argc, char** argv) {
  using namespace tpu;
  try {
    const bench::Options opt = bench::parse_options(argc, argv);
    const uint32_t n = sim::Chip::compiled_n();
    const bench::Workload w = bench::make_workload(n, opt.target_cycles, opt.rows_per_tile);
    const uint64_t warmup = opt.warmup >= 0 ? uint64_t(opt.warmup) : w.warmup_cycles;

    sim::ChipConfig cfg;  // default memory timing: latency 10 cycles, 16 bytes/cycle
    // VCD: whole run, or the window [--vcd-from, --vcd-to) in absolute cycles (reset and
    // start() take the first ~25; START's cycle is printed as start_cycle).
    cfg.vcd_file = opt.get("--vcd");
    cfg.vcd_from_cycle = std::stoull(opt.get("--vcd-from", "0"));
    if (opt.has("--vcd-to")) cfg.vcd_to_cycle = std::stoull(opt.get("--vcd-to"));

    sim::Chip chip(cfg);
    chip.reset();
    for (const auto& r : w.regions) chip.add_region(r.base, r.size, r.name);
    for (const auto& [addr, bytes] : w.init) chip.write_mem(addr, bytes);

    const auto t_setup = std::chrono::steady_clock::now();
    chip.start(w.cmd_addr, w.cmd_count);
    const uint64_t start_cycle = chip.cycle();
    sim::RunResult first = chip.run(warmup);
    // MXU busy over the timed part: CYCLES and MXU_BUSY (low words; < 2^32 here) now and at
    // the end. The reads take a few cycles of the untimed part.
    uint32_t cycles0 = 0, busy0 = 0;
    if (first.reason == sim::StopReason::kCycleLimit) {
      cycles0 = chip.read_reg(sim::reg::counter_lo(0));
      busy0 = chip.read_reg(sim::reg::counter_lo(1));
    }
    const auto t0 = std::chrono::steady_clock::now();
    sim::RunResult rest{};
    rest.reason = first.reason;
    if (first.reason == sim::StopReason::kCycleLimit) rest = chip.run(uint64_t(1) << 40);
    const auto t1 = std::chrono::steady_clock::now();
    if (rest.reason != sim::StopReason::kDone) {
      std::fprintf(stderr, "bench_sc: the chip stopped with %s (error %u at %u)\n",
                   sim::to_string(rest.reason), rest.err_code, rest.err_pc);
      return 1;
    }
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    const double warm_secs = std::chrono::duration<double>(t0 - t_setup).count();
    const sim::Counters c = chip.counters();
    const size_t bad = bench::count_mismatches(w, chip.read_mem(w.out_addr, w.expected.size()));
    std::printf(
        "RESULT harness=sc n=%u tiles=%u rows_per_tile=%u counter_cycles=%llu "
        "mxu_busy=%llu busy_pct=%.1f timed_busy_pct=%.1f weight_stall=%llu "
        "start_cycle=%llu warmup=%llu "
        "warmup_s=%.4f measured_cycles=%llu seconds=%.4f cps=%.1f mismatches=%zu\n",
        n, w.tiles, w.rows_per_tile, (unsigned long long)c.cycles, (unsigned long long)c.mxu_busy,
        100.0 * double(c.mxu_busy) / double(c.cycles),
        100.0 * double(c.mxu_busy - busy0) / double(c.cycles - cycles0),
        (unsigned long long)c.weight_stall, (unsigned long long)start_cycle,
        (unsigned long long)warmup, warm_secs, (unsigned long long)rest.cycles, secs,
        double(rest.cycles) / secs, bad);
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_sc: %s\n", e.what());
    return 1;
  }
}

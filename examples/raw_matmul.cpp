// SPDX-License-Identifier: Apache-2.0
// A matmul on the simulated chip, driven with raw instructions: the smallest complete host
// program. It places an M x K int8 matrix, K x N weight tiles and a program in host memory,
// rings the doorbell, waits for the interrupt and checks the result against a C++ matmul.
//
//   raw_matmul [M] [K-tiles] [VCD-file]   (default 64 rows, 4 tiles of N inputs, no VCD)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "chip.h"
#include "isa.h"

int main(int argc, char** argv) {
  using namespace tpu;
  const uint32_t m = argc > 1 ? uint32_t(std::atoi(argv[1])) : 64;
  const uint32_t kt = argc > 2 ? uint32_t(std::atoi(argv[2])) : 4;
  try {
    sim::ChipConfig config;
    if (argc > 3) config.vcd_file = argv[3];
    sim::Chip chip(config);
    chip.reset();
    const sim::Params p = chip.params();
    const uint32_t n = p.n;
    if (m < 1 || m > 4095 || kt < 1 || kt > p.wfifo_tiles + 2 || m * (kt + 1) > p.ub_rows ||
        m > p.acc_rows) {
      std::fprintf(stderr, "raw_matmul: M must be 1..%u and K-tiles 1..%u on this chip\n",
                   std::min(4095u, p.acc_rows), p.wfifo_tiles + 2);
      return 2;
    }
    std::printf("chip: N=%u, UB %u rows, ACC %u rows, AXI %u bits\n", n, p.ub_rows, p.acc_rows,
                p.axi_width);

    // Host memory: program, activations (K/N column blocks of M rows), weights, results.
    const uint32_t cmd = 0x1000, act = 0x10000, wts = 0x100000, out = 0x200000;
    chip.add_region(cmd, 0x1000, "program");
    chip.add_region(act, 0x80000, "activations");
    chip.add_region(wts, 0x80000, "weights");
    chip.add_region(out, 0x80000, "results");

    std::mt19937 rng(42);
    std::uniform_int_distribution<int> d(-128, 127);
    const uint32_t k = kt * n;
    std::vector<int8_t> a(size_t(m) * k), w(size_t(k) * n);
    for (auto& v : a) v = int8_t(d(rng));
    for (auto& v : w) v = int8_t(d(rng));
    // Block t of the activations holds columns t*N .. t*N+N-1 of every row.
    std::vector<uint8_t> a_blocks(size_t(m) * k), w_tiles(size_t(k) * n);
    for (uint32_t t = 0; t < kt; ++t)
      for (uint32_t r = 0; r < m; ++r)
        for (uint32_t c = 0; c < n; ++c)
          a_blocks[(size_t(t) * m + r) * n + c] = uint8_t(a[size_t(r) * k + t * n + c]);
    for (size_t i = 0; i < w.size(); ++i) w_tiles[i] = uint8_t(w[i]);  // tile t = rows t*N..
    chip.write_mem(act, a_blocks);
    chip.write_mem(wts, w_tiles);

    // The program: accumulate the K/N partial products in the accumulators, requantize them
    // to int8 (round(sum / 2^8), saturated) and write the rows back.
    std::vector<Instruction> prog;
    prog.push_back(ReadHost{HostDest::Ub, 0, m * kt, act});
    prog.push_back(ReadWeights{kt, wts});
    for (uint32_t t = 0; t < kt; ++t) {
      Matmul mm;
      mm.accumulate = t > 0;
      mm.switch_weights = true;
      mm.ub_addr = t * m;
      mm.inner = uint16_t(m);
      prog.push_back(mm);
    }
    // Requantize: y = round(acc / 2^8), saturated to int8, through slot 0.
    std::vector<uint8_t> slot(12 * n, 0);
    for (uint32_t c = 0; c < n; ++c) {
      slot[4 * (n + c)] = 1;      // mult = 1
      slot[4 * (2 * n + c)] = 8;  // shift = 8, zp = 0
    }
    chip.write_mem(act + 0x70000, slot);
    prog.insert(prog.begin(), ReadHost{HostDest::Param, 0, 12, act + 0x70000});
    Activate at;
    at.width = uint16_t(m);
    at.height = 1;
    at.ub_addr = m * kt;
    prog.push_back(at);
    prog.push_back(WriteHost{m * kt, m, out});
    prog.push_back(Halt{});
    std::vector<uint8_t> bytes;
    for (const auto& i : prog) {
      auto e = encode(i);
      bytes.insert(bytes.end(), e.begin(), e.end());
    }
    chip.write_mem(cmd, bytes);

    std::printf("program (%zu instructions):\n", prog.size());
    for (const auto& i : prog) std::printf("  %s\n", disassemble(i).c_str());

    const auto t0 = std::chrono::steady_clock::now();
    chip.start(cmd, uint32_t(prog.size()));
    const sim::RunResult r = chip.run(100'000'000);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.reason != sim::StopReason::kDone) {
      std::fprintf(stderr,
                   "raw_matmul: the chip stopped with %s (error %u: %s at instruction %u)\n",
                   sim::to_string(r.reason), r.err_code,
                   std::string(error_name(ErrorCode(r.err_code))).c_str(), r.err_pc);
      return 1;
    }
    const std::vector<uint8_t> got = chip.read_mem(out, size_t(m) * n);
    size_t mismatches = 0;
    for (uint32_t r0 = 0; r0 < m; ++r0) {
      for (uint32_t c = 0; c < n; ++c) {
        int64_t s = 0;
        for (uint32_t i = 0; i < k; ++i) s += int64_t(a[size_t(r0) * k + i]) * w[size_t(i) * n + c];
        // round half away from zero of s / 256, saturated
        int64_t q = s >= 0 ? (s + 128) >> 8 : -((-s + 128) >> 8);
        q = std::max<int64_t>(-128, std::min<int64_t>(127, q));
        if (int8_t(got[size_t(r0) * n + c]) != q) ++mismatches;
      }
    }
    const sim::Counters cnt = chip.counters();
    std::printf("\nfirst result row: ");
    for (uint32_t c = 0; c < std::min(n, 16u); ++c) std::printf("%4d", int(int8_t(got[c])));
    std::printf("\n\n%u x %u x %u int8 matmul: %s\n", m, k, n,
                mismatches ? "MISMATCH" : "matches the C++ reference bit for bit");
    std::printf("cycles %llu, MXU busy %llu, MXU utilization %.1f%% (useful MACs / cycles*N^2)\n",
                (unsigned long long)cnt.cycles, (unsigned long long)cnt.mxu_busy,
                100.0 * double(m) * k * n / (double(cnt.cycles) * n * n));
    std::printf("simulated %llu cycles in %.3f s: %.0f cycles/s\n", (unsigned long long)r.cycles,
                wall, double(r.cycles) / wall);
    std::printf("DMA read %llu bytes, written %llu bytes, weight stalls %llu cycles\n",
                (unsigned long long)cnt.dma_rd_bytes, (unsigned long long)cnt.dma_wr_bytes,
                (unsigned long long)cnt.weight_stall);
    return mismatches ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "raw_matmul: %s\n", e.what());
    return 1;
  }
}

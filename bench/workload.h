// SPDX-License-Identifier: Apache-2.0
// The simulator benchmark's workload: one long matmul program that keeps the MXU busy, built
// with driver/isa.h encode() and run unchanged by every harness (SystemC Chip, bare Verilated
// core, Icarus), so their simulated cycles per second compare like for like.
//
// Program (N = MXU size, A = 64 activation rows, R rows per weight tile):
//   read_host  PARAM slot 0 (identity, mult 1, shift s)
//   read_host  UB[0..A) <- A random int8 rows
//   read_weights 1 tile  x 3              (three tiles ahead of the feeder)
//   for t in 0..T-1:
//     matmul switch acc  ub 0, inner A, outer rows/A, outer_stride 0   (first chunk of tile t)
//     read_weights 1 tile                 (tile t+3, while tile t computes)
//     matmul acc ...                      (more chunks while R > 2048 = AccRows)
//   activate ACC[0..A) -> UB[A..2A), write_host UB[A..2A) -> results, halt
// Tile t is host tile t % 4. Every ACC row r < A accumulates a[r] . W[t % 4] once per chunk,
// so the expected result of the A checked rows is cheap to compute exactly (wrapping int32,
// then the isa.md requantization). R defaults to max(256, N^2/8): twice the cycles the weight
// DMA (16 bytes/cycle) needs per tile, so the MXU never waits for weights after start-up.
//
// Measured region: the harness runs `warmup_cycles` after START untimed (start-up DMA, the
// first tile, a VCD window), then times the rest of the run up to done.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::bench {

struct MemRegion {
  uint32_t base = 0;
  uint32_t size = 0;
  std::string name;
};

struct Workload {
  uint32_t n = 0;
  uint32_t act_rows = 64;      // A: distinct activation rows, reused by every matmul row
  uint32_t rows_per_tile = 0;  // R
  uint32_t chunks_per_tile = 0;
  uint32_t tiles = 0;          // T
  uint32_t shift = 0;          // requantization shift of the check
  uint64_t mxu_rows = 0;       // rows fed to the MXU in total: T * R
  uint64_t warmup_cycles = 0;  // untimed cycles after START
  uint32_t axi_bytes = 0;      // AXI data width in bytes: min(N, 16)

  std::vector<MemRegion> regions;
  // Host memory contents: (address, bytes).
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> init;
  uint32_t cmd_addr = 0, cmd_count = 0;
  uint32_t out_addr = 0;
  std::vector<uint8_t> expected;  // act_rows x N int8 at out_addr after the run

  // Concatenated encoded program (also in `init`).
  std::vector<uint8_t> program;
  std::vector<std::string> listing;  // disassembly of the first and last instructions
};

// target_cycles: approximate run length (T = max(4, target / R)); rows_per_tile 0 = default.
Workload make_workload(uint32_t n, uint64_t target_cycles, uint32_t rows_per_tile = 0);

// Counts mismatching bytes between `got` (act_rows x N) and the expectation.
size_t count_mismatches(const Workload& w, const std::vector<uint8_t>& got);

// Common command line of the harnesses: --cycles C --rows-per-tile R --warmup W, plus
// harness-specific options collected in `rest`.
struct Options {
  uint64_t target_cycles = 200000;
  uint32_t rows_per_tile = 0;
  int64_t warmup = -1;  // -1: the workload's default
  std::vector<std::string> rest;
  std::string get(const std::string& key, const std::string& def = "") const;  // --key value
  bool has(const std::string& flag) const;
};
Options parse_options(int argc, char** argv);

// Host memory spans [mem_base, mem_end) (all regions).
uint32_t mem_base(const Workload& w);
uint32_t mem_end(const Workload& w);
// Writes the host memory image as $readmemh text for the Icarus testbench: one AXI word per
// line, @-addresses in words relative to mem_base().
void write_readmemh(const Workload& w, const std::string& image_path);

}  // namespace tpu::bench

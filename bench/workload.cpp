// SPDX-License-Identifier: Apache-2.0
#include "workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>

#include "isa.h"

namespace tpu::bench {

namespace {

constexpr uint32_t kDistinctTiles = 4;
constexpr uint32_t kLookahead = 3;   // tiles requested ahead of the feeder (<= WFifoTiles + 2)
constexpr uint32_t kAccRows = 2048;  // the core's default AccRows: rows per matmul chunk
constexpr uint32_t kPage = 4096;

uint32_t round_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// isa.md activate, identity, bias 0, mult 1, zp 0: round half away from zero, saturate int8.
int8_t requantize(int32_t acc, uint32_t shift) {
  const int64_t p = acc;
  int64_t r = p;
  if (shift != 0) r = (p + (int64_t{1} << (shift - 1)) - (p < 0 ? 1 : 0)) >> shift;
  return int8_t(std::clamp<int64_t>(r, -128, 127));
}

}  // namespace

Workload make_workload(uint32_t n, uint64_t target_cycles, uint32_t rows_per_tile) {
  if (n < 4 || n > 256 || (n & (n - 1)) != 0)
    throw std::invalid_argument("N must be 4..256, a power of two");
  Workload w;
  w.n = n;
  const uint32_t a_rows = w.act_rows;
  w.axi_bytes = std::min(n, 16u);
  uint32_t r = rows_per_tile ? rows_per_tile : std::max(256u, n * n / 8);
  r = round_up(r, a_rows);
  w.rows_per_tile = r;
  w.chunks_per_tile = (r + kAccRows - 1) / kAccRows;
  w.tiles = uint32_t(std::max<uint64_t>(4, target_cycles / r));
  w.mxu_rows = uint64_t(w.tiles) * r;

  // Random operands (fixed seed: every harness gets the same bytes).
  std::mt19937 rng(12345 + n);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::vector<int8_t> act(size_t(a_rows) * n), wts(size_t(kDistinctTiles) * n * n);
  for (auto& v : act) v = int8_t(byte(rng));
  for (auto& v : wts) v = int8_t(byte(rng));

  // Expected accumulators of rows 0..A-1: sum over tiles of (chunks) * a[r] . W[t % 4].
  std::vector<uint32_t> acc(size_t(a_rows) * n, 0);  // wrapping int32
  for (uint32_t d = 0; d < kDistinctTiles; ++d) {
    uint64_t uses = 0;  // matmul chunks that use distinct tile d
    for (uint32_t t = d; t < w.tiles; t += kDistinctTiles) uses += w.chunks_per_tile;
    if (uses == 0) continue;
    for (uint32_t row = 0; row < a_rows; ++row)
      for (uint32_t c = 0; c < n; ++c) {
        int64_t s = 0;
        for (uint32_t k = 0; k < n; ++k)
          s += int64_t(act[size_t(row) * n + k]) * wts[(size_t(d) * n + k) * n + c];
        acc[size_t(row) * n + c] += uint32_t(uint64_t(s) * uses);
      }
  }
  // A shift that keeps most results inside int8.
  int64_t maxabs = 1;
  for (uint32_t v : acc) maxabs = std::max<int64_t>(maxabs, std::llabs(int64_t(int32_t(v))));
  w.shift = 0;
  while (w.shift < 40 && (maxabs >> w.shift) > 160) ++w.shift;
  w.expected.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i)
    w.expected[i] = uint8_t(requantize(int32_t(acc[i]), w.shift));

  // The program.
  std::vector<Instruction> prog;
  uint32_t next = 0x10000;
  auto place = [&](uint32_t size, const std::string& name) {
    const uint32_t base = next;
    const uint32_t sz = round_up(std::max(size, 1u), kPage);
    w.regions.push_back({base, sz, name});
    next += sz;
    return base;
  };
  const uint32_t instr_count_est = 5 + kLookahead + w.tiles * (1 + w.chunks_per_tile) + 3;
  w.cmd_addr = place(instr_count_est * uint32_t(kInstrBytes), "program");
  const uint32_t slot_addr = place(12 * n, "param");
  const uint32_t act_addr = place(a_rows * n, "activations");
  const uint32_t wts_addr = place(kDistinctTiles * n * n, "weights");
  w.out_addr = place(a_rows * n, "results");

  std::vector<uint8_t> slot(12 * n, 0);
  for (uint32_t c = 0; c < n; ++c) {
    slot[4 * (n + c)] = 1;                     // mult = 1
    slot[4 * (2 * n + c)] = uint8_t(w.shift);  // shift, zp 0
  }
  w.init.push_back({slot_addr, slot});
  w.init.push_back({act_addr, std::vector<uint8_t>(act.begin(), act.end())});
  w.init.push_back({wts_addr, std::vector<uint8_t>(wts.begin(), wts.end())});

  auto tile_addr = [&](uint32_t t) { return wts_addr + (t % kDistinctTiles) * n * n; };
  prog.push_back(ReadHost{HostDest::Param, 0, 12, slot_addr});
  prog.push_back(ReadHost{HostDest::Ub, 0, a_rows, act_addr});
  for (uint32_t t = 0; t < std::min(kLookahead, w.tiles); ++t)
    prog.push_back(ReadWeights{1, tile_addr(t)});
  for (uint32_t t = 0; t < w.tiles; ++t) {
    uint32_t left = r;
    for (uint32_t c = 0; c < w.chunks_per_tile; ++c) {
      const uint32_t rows = std::min(left, kAccRows);
      left -= rows;
      Matmul mm;
      mm.accumulate = !(t == 0 && c == 0);
      mm.switch_weights = (c == 0);
      mm.ub_addr = 0;
      mm.acc_addr = 0;
      mm.inner = uint16_t(a_rows);
      mm.outer = uint16_t(rows / a_rows);
      mm.inner_stride = 1;
      mm.outer_stride = 0;
      prog.push_back(mm);
      if (c == 0 && t + kLookahead < w.tiles)
        prog.push_back(ReadWeights{1, tile_addr(t + kLookahead)});
    }
  }
  Activate at;
  at.acc_addr = 0;
  at.ub_addr = a_rows;
  at.width = uint16_t(a_rows);
  at.height = 1;
  prog.push_back(at);
  prog.push_back(WriteHost{a_rows, a_rows, w.out_addr});
  prog.push_back(Halt{});
  if (prog.size() > instr_count_est) throw std::logic_error("workload: program region too small");

  for (const auto& i : prog) {
    const auto e = encode(i);
    w.program.insert(w.program.end(), e.begin(), e.end());
  }
  w.cmd_count = uint32_t(prog.size());
  w.init.push_back({w.cmd_addr, w.program});
  for (size_t i = 0; i < prog.size(); ++i) {
    if (i < 8 || i + 4 > prog.size())
      w.listing.push_back(disassemble(prog[i]));
    else if (i == 8)
      w.listing.push_back("...");
  }

  // Untimed start-up: parameter + activation DMA, the first tile (DMA + N shift cycles), and
  // one tile period of steady state on top.
  const uint64_t dma_cycles = (uint64_t(12 + a_rows) * n + uint64_t(n) * n) / w.axi_bytes;
  w.warmup_cycles = dma_cycles + 3 * n + 200 + r;
  return w;
}

size_t count_mismatches(const Workload& w, const std::vector<uint8_t>& got) {
  size_t bad = 0;
  for (size_t i = 0; i < w.expected.size(); ++i)
    if (i >= got.size() || got[i] != w.expected[i]) ++bad;
  return bad;
}

std::string Options::get(const std::string& key, const std::string& def) const {
  for (size_t i = 0; i + 1 < rest.size(); ++i)
    if (rest[i] == key) return rest[i + 1];
  return def;
}

bool Options::has(const std::string& flag) const {
  return std::find(rest.begin(), rest.end(), flag) != rest.end();
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--cycles")
      o.target_cycles = std::stoull(value());
    else if (a == "--rows-per-tile")
      o.rows_per_tile = uint32_t(std::stoul(value()));
    else if (a == "--warmup")
      o.warmup = std::stoll(value());
    else
      o.rest.push_back(a);
  }
  return o;
}

void write_readmemh(const Workload& w, const std::string& image_path) {
  // One word of axi_bytes per line, word addresses relative to mem_base(w); little-endian
  // (byte 0 = bits 7:0).
  std::ofstream f(image_path);
  if (!f) throw std::runtime_error("cannot write " + image_path);
  const uint32_t wb = w.axi_bytes;
  const uint32_t base = mem_base(w);
  for (const auto& [addr, bytes] : w.init) {
    f << '@' << std::hex << (addr - base) / wb << '\n';
    for (size_t i = 0; i < bytes.size(); i += wb) {
      for (int b = int(wb) - 1; b >= 0; --b) {
        const size_t k = i + size_t(b);
        char buf[3];
        std::snprintf(buf, sizeof buf, "%02x", k < bytes.size() ? bytes[k] : 0);
        f << buf;
      }
      f << '\n';
    }
  }
}

uint32_t mem_base(const Workload& w) {
  uint32_t lo = UINT32_MAX;
  for (const auto& r : w.regions) lo = std::min(lo, r.base);
  return lo;
}

uint32_t mem_end(const Workload& w) {
  uint32_t hi = 0;
  for (const auto& r : w.regions) hi = std::max(hi, r.base + r.size);
  return hi;
}

}  // namespace tpu::bench

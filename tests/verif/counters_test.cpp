// SPDX-License-Identifier: Apache-2.0
// The performance counters other than CYCLES (docs/architecture.md, COUNTER_1..9), pinned to
// exact values on small programs (issue 34):
//   * the counters that are a function of the program (MXU_BUSY, MXU_MACS, DMA_RD_BYTES,
//     DMA_WR_BYTES, INSTR_RETIRED, ACT_BUSY) against values worked out here from docs/isa.md,
//     on both backends: the chip (rtl) and the model backend (driver/device_model.h, the
//     golden model's counters);
//   * the counters of waits (WEIGHT_STALL, INPUT_STALL) and DMA_BUSY, which depend on timing and
//     which only the chip defines (the model reports 0), against the instruction trace of the
//     same run (docs/architecture.md "Trace port") and the memory latency: a counter that
//     counts the wrong waits (another unit's, a wait for the unit instead of for data) breaks
//     these relations.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chip_backend.h"
#include "device_model.h"
#include "random_program.h"

namespace {

using namespace tpu;
using namespace tpu::verif;

constexpr uint32_t N = TPU_SIM_N;
using Memory = std::vector<std::pair<uint32_t, std::vector<uint8_t>>>;

ChipBackend& chip() {
  static ChipBackend* c = new ChipBackend;  // one Chip per process, never destroyed
  return *c;
}

std::vector<uint8_t> pattern(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 13 + salt);
  return v;
}

// A run on the chip: its counters and trace.
struct ChipRun {
  Outcome outcome;
  sim::Counters counters;
  std::vector<sim::TraceEvent> trace;
};
ChipRun run_chip(const std::vector<Instruction>& program, const RunConfig& cfg = {}) {
  ChipRun r;
  chip().chip().set_instruction_trace(true);
  r.outcome = chip().run({{kDataBase, pattern(kDataSize, 7)}}, cfg, program);
  r.counters = chip().chip().counters();
  r.trace = chip().chip().trace_events();
  chip().chip().set_instruction_trace(false);
  return r;
}

// The same program on the model backend (the golden model), data and results registered.
PerfCounters run_model(const std::vector<Instruction>& program) {
  ModelDevice dev(ChipParams::with_n(N));
  dev.register_buffer(kDataBase, kDataSize, "data");
  dev.register_buffer(kOutBase, kOutSize, "out");
  dev.write(kDataBase, pattern(kDataSize, 7));
  const RunOutcome o = dev.try_run(program);
  EXPECT_TRUE(o.done()) << "model: " << o.message;
  return o.stats.counters;
}

const sim::TraceEvent& event(const ChipRun& r, uint32_t pc) {
  for (const sim::TraceEvent& e : r.trace)
    if (e.pc == pc) return e;
  ADD_FAILURE() << "no trace event for instruction " << pc;
  static const sim::TraceEvent none;
  return none;
}

// The counters that follow from the program alone (docs/architecture.md), worked out from
// docs/isa.md for a program that runs to its halt: every instruction (the halt included) is
// fetched (16 bytes) and retired; a matmul feeds inner x outer rows to the MXU, N^2 MACs
// each; the DMA moves rows x N bytes (read_host, write_host) and tiles x N^2 (read_weights);
// the activation unit reads one accumulator row per cycle, one cycle per window tap (Ho x Wo
// x pool_k^2: a tap in the max-pool padding takes its cycle, its value is skipped) and four
// per pixel of a raw activate (four UB rows each, docs/architecture.md).
struct Expected {
  uint64_t mxu_busy = 0, mxu_macs = 0, dma_rd_bytes = 0, dma_wr_bytes = 0, instr_retired = 0;
  uint64_t act_busy = 0;
};
uint64_t act_reads(const Activate& a) {
  if (a.raw) return uint64_t{a.width} * a.height * 4;
  const uint64_t ho = (uint64_t{a.height} + a.pad_top + a.pad_bottom - a.pool_k) / a.pool_s + 1;
  const uint64_t wo = (uint64_t{a.width} + a.pad_left + a.pad_right - a.pool_k) / a.pool_s + 1;
  return ho * wo * a.pool_k * a.pool_k;
}
Expected expected(const std::vector<Instruction>& program) {
  Expected e;
  for (const Instruction& in : program) {
    ++e.instr_retired;
    e.dma_rd_bytes += kInstrBytes;
    if (const auto* rh = std::get_if<ReadHost>(&in)) {
      e.dma_rd_bytes += uint64_t{rh->rows} * N;
    } else if (const auto* rw = std::get_if<ReadWeights>(&in)) {
      e.dma_rd_bytes += uint64_t{rw->tiles} * N * N;
    } else if (const auto* wh = std::get_if<WriteHost>(&in)) {
      e.dma_wr_bytes += uint64_t{wh->rows} * N;
    } else if (const auto* mm = std::get_if<Matmul>(&in)) {
      e.mxu_busy += uint64_t{mm->inner} * mm->outer;
    } else if (const auto* a = std::get_if<Activate>(&in)) {
      e.act_busy += act_reads(*a);
    }
    if (std::holds_alternative<Halt>(in)) break;
  }
  e.mxu_macs = e.mxu_busy * N * N;
  return e;
}

// Every kind of instruction, activates with pooling, padding and raw output.
std::vector<Instruction> mixed_program() {
  Matmul m1;
  m1.switch_weights = true;
  m1.inner = 5;
  m1.outer = 3;
  m1.outer_stride = 5;
  Matmul m2;
  m2.switch_weights = true;
  m2.ub_addr = 16;
  m2.acc_addr = 16;
  m2.inner = 4;
  Matmul m3 = m2;  // same tile, accumulating
  m3.switch_weights = false;
  m3.accumulate = true;
  m3.inner = 2;
  Activate plain;
  plain.width = 5;
  plain.height = 3;
  plain.ub_addr = 100;
  Activate pooled = plain;
  pooled.pool_k = 2;
  pooled.ub_addr = 120;
  Activate padded;
  padded.width = 4;
  padded.height = 3;
  padded.pool_k = 3;
  padded.pool_s = 2;
  padded.pad_top = padded.pad_left = padded.pad_bottom = padded.pad_right = 1;
  padded.ub_addr = 140;
  padded.func = ActFunc::Relu;
  Activate raw;
  raw.width = 4;
  raw.height = 2;
  raw.raw = true;
  raw.ub_addr = 200;
  return {ReadHost{HostDest::Param, 0, 12, kDataBase},
          ReadHost{HostDest::Ub, 0, 64, kDataBase + 0x1000},
          ReadWeights{2, kDataBase + 0x2000},
          m1,
          m2,
          m3,
          plain,
          pooled,
          padded,
          raw,
          WriteHost{100, 40, kOutBase},
          Nop{},
          Sync{},
          WriteHost{200, 32, kOutBase + 0x1000},
          Halt{}};
}

TEST(Counters, DeterministicCountersOnBothBackends) {
  const std::vector<Instruction> prog = mixed_program();
  const Expected e = expected(prog);
  const ChipRun r = run_chip(prog);
  ASSERT_TRUE(r.outcome.done) << "chip: err " << r.outcome.err_code << " at " << r.outcome.err_pc;
  const sim::Counters& c = r.counters;
  EXPECT_EQ(c.mxu_busy, e.mxu_busy);
  EXPECT_EQ(c.mxu_macs, e.mxu_macs);
  EXPECT_EQ(c.dma_rd_bytes, e.dma_rd_bytes);
  EXPECT_EQ(c.dma_wr_bytes, e.dma_wr_bytes);
  EXPECT_EQ(c.instr_retired, e.instr_retired);
  EXPECT_EQ(c.act_busy, e.act_busy);
  const PerfCounters m = run_model(prog);
  EXPECT_EQ(m.mxu_busy, e.mxu_busy);
  EXPECT_EQ(m.mxu_macs, e.mxu_macs);
  EXPECT_EQ(m.dma_rd_bytes, e.dma_rd_bytes);
  EXPECT_EQ(m.dma_wr_bytes, e.dma_wr_bytes);
  EXPECT_EQ(m.instr_retired, e.instr_retired);
  EXPECT_EQ(m.act_busy, e.act_busy);
  // The model has no timing: it defines the waits and DMA_BUSY as 0 (device_model.h).
  EXPECT_EQ(m.weight_stall, 0u);
  EXPECT_EQ(m.input_stall, 0u);
  EXPECT_EQ(m.dma_busy, 0u);
}

RunConfig latency(uint32_t cycles) {
  RunConfig cfg;
  cfg.mem_latency = cycles;
  return cfg;
}

std::string dump(const ChipRun& r) {
  std::string s;
  for (const sim::TraceEvent& e : r.trace)
    s += std::to_string(e.pc) + ": unit " + std::to_string(unsigned(e.unit)) + " " +
         std::to_string(e.issue) + "-" + std::to_string(e.done) + "\n";
  const sim::Counters& c = r.counters;
  s += "weight_stall " + std::to_string(c.weight_stall) + " input_stall " +
       std::to_string(c.input_stall) + " dma_busy " + std::to_string(c.dma_busy) + " cycles " +
       std::to_string(c.cycles) + "\n";
  return s;
}

// INPUT_STALL counts the cycles a matmul at the head of the instruction queue waits to issue
// for a UB or ACC dependency: from the cycle after the instruction it depends on issued
// (the matmul is the head from then on) to the cycle before its own issue.
TEST(Counters, InputStallIsTheWaitOfAMatmulForItsData) {
  Matmul mm;
  mm.switch_weights = true;
  mm.inner = 8;
  Activate act;
  act.width = 8;
  act.height = 1;
  act.ub_addr = 200;
  Matmul over = mm;  // overwrites the ACC rows the activate reads (WAR)
  over.switch_weights = false;
  over.ub_addr = 40;
  for (uint32_t lat : {1u, 10u, 40u}) {
    SCOPED_TRACE("memory latency " + std::to_string(lat));
    // 0 read_weights, 1 sync, 2 read_host into the rows the matmul 3 reads.
    const std::vector<Instruction> prog = {ReadWeights{1, kDataBase + 0x2000}, Sync{},
                                           ReadHost{HostDest::Ub, 0, 64, kDataBase}, mm, Halt{}};
    const ChipRun r = run_chip(prog, latency(lat));
    ASSERT_TRUE(r.outcome.done);
    const uint64_t wait = event(r, 3).issue - event(r, 2).issue - 1;
    EXPECT_GT(wait, 10u) << dump(r);
    EXPECT_EQ(r.counters.input_stall, wait) << dump(r);
    EXPECT_EQ(r.counters.weight_stall, 0u) << "the tile was in before the matmul\n" << dump(r);
    // 3 activate waits for matmul 2 (ACC), 4 write_host for the activate (UB), 5 read_host
    // for the write_host (WAR on the UB), 6 activate, then 7 a matmul waits for activate 6
    // (WAR on the ACC): only the matmul's wait counts.
    const std::vector<Instruction> chain = {
        ReadWeights{1, kDataBase + 0x2000},        Sync{}, mm,   act,   WriteHost{200, 8, kOutBase},
        ReadHost{HostDest::Ub, 200, 8, kDataBase}, act,    over, Halt{}};
    const ChipRun c = run_chip(chain, latency(lat));
    ASSERT_TRUE(c.outcome.done);
    for (uint32_t pc : {3u, 4u, 5u, 7u}) {
      EXPECT_GT(event(c, pc).issue, event(c, pc - 1).issue + 1)
          << "instruction " << pc << " did not wait\n"
          << dump(c);
    }
    EXPECT_EQ(c.counters.input_stall, event(c, 7).issue - event(c, 6).issue - 1) << dump(c);
  }
}

// WEIGHT_STALL counts the cycles a matmul that switches to a new tile waits for it in the
// MXU: issued right behind its read_weights, it waits until the tile has arrived; each cycle
// of memory latency more is a cycle more of stall: the stall is the cycles from the matmul's
// issue to the read_weights' done (its last row in the weight FIFO) plus N, the cycles the
// tile's N rows then take into the MXU's weight buffer, one per cycle (docs/architecture.md).
TEST(Counters, WeightStallIsTheWaitOfAMatmulForItsTile) {
  Matmul mm;
  mm.switch_weights = true;
  mm.inner = 8;
  std::vector<uint64_t> stall, done;
  for (uint32_t lat : {1u, 10u, 40u}) {
    SCOPED_TRACE("memory latency " + std::to_string(lat));
    const std::vector<Instruction> prog = {ReadHost{HostDest::Ub, 0, 16, kDataBase}, Sync{},
                                           ReadWeights{1, kDataBase + 0x2000}, mm, Halt{}};
    const ChipRun r = run_chip(prog, latency(lat));
    ASSERT_TRUE(r.outcome.done);
    EXPECT_EQ(r.counters.input_stall, 0u) << dump(r);
    EXPECT_GT(r.counters.weight_stall, 0u) << dump(r);
    // The tile's last row is in the weight FIFO from the read_weights' done cycle; the matmul
    // waits from its issue to then (plus the tile's move into the MXU, a constant).
    stall.push_back(r.counters.weight_stall);
    done.push_back(event(r, 2).done - event(r, 3).issue);
    std::printf("latency %u: weight_stall %llu, tile done - matmul issue %llu\n", lat,
                (unsigned long long)stall.back(), (unsigned long long)done.back());
  }
  for (size_t i = 0; i < stall.size(); ++i)
    EXPECT_EQ(stall[i], done[i] + N) << "latency step " << i;
}

// DMA_BUSY counts the cycles a DMA transfer (instruction fetch included) is outstanding: a
// halt-only program is one fetch round trip (latency + a constant); a long activate between
// syncs adds no DMA cycle.
TEST(Counters, DmaBusyCountsTransfersOnly) {
  std::vector<uint64_t> busy;
  for (uint32_t lat : {4u, 10u, 40u}) {
    const ChipRun r = run_chip({Halt{}}, latency(lat));
    ASSERT_TRUE(r.outcome.done);
    busy.push_back(r.counters.dma_busy);
    EXPECT_LE(r.counters.dma_busy, r.counters.cycles);
  }
  EXPECT_EQ(busy[1] - busy[0], 6u) << busy[0] << " " << busy[1];
  EXPECT_EQ(busy[2] - busy[0], 36u) << busy[0] << " " << busy[2];
  Activate small, big;
  small.width = 4;
  small.height = 1;
  big.width = 64;
  big.height = 4;
  big.pool_k = 2;
  const ChipRun a = run_chip({Sync{}, small, Sync{}, Halt{}}, latency(10));
  const ChipRun b = run_chip({Sync{}, big, Sync{}, Halt{}}, latency(10));
  ASSERT_TRUE(a.outcome.done && b.outcome.done);
  EXPECT_GT(b.counters.cycles, a.counters.cycles + 100);
  EXPECT_EQ(b.counters.act_busy, act_reads(big));
  EXPECT_EQ(a.counters.dma_busy, b.counters.dma_busy) << "DMA_BUSY counted the activate";
  std::printf("halt-only dma_busy at latency 4: %llu\n", (unsigned long long)busy[0]);
}

}  // namespace

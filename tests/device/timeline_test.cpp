// SPDX-License-Identifier: Apache-2.0
// The instruction timeline (Device::timeline) of the rtl backend, recorded from tpu_core's trace
// port: one event per issued instruction, each unit's events in order and (for the serial
// units) never overlapping, durations that follow the instruction sizes cycle for cycle, and
// dependent instructions starting only after what they depend on. The model backend has none.
//
// One chip per process: every TEST runs in its own process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device_model.h"
#include "device_rtl.h"
#include "program.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;

ExecUnit unit_of(Opcode op) {
  switch (op) {
    case Opcode::ReadHost:
      return ExecUnit::ReadHost;
    case Opcode::ReadWeights:
      return ExecUnit::ReadWeights;
    case Opcode::Matmul:
      return ExecUnit::Matmul;
    case Opcode::Activate:
      return ExecUnit::Activate;
    case Opcode::WriteHost:
      return ExecUnit::WriteHost;
    default:
      return ExecUnit::Control;
  }
}

std::string describe(const InstrEvent& e) {
  return "pc " + std::to_string(e.pc) + " " + std::string(mnemonic(e.opcode)) + " [" +
         std::to_string(e.start) + ", " + std::to_string(e.end) + ")";
}

// The checks that hold for every run that halts: returns the events by pc.
std::map<uint32_t, InstrEvent> check_timeline(const std::vector<Instruction>& program,
                                              const RunStats& stats,
                                              const std::vector<InstrEvent>& tl) {
  std::map<uint32_t, InstrEvent> by_pc;
  // Every instruction but the final halt is issued exactly once, in program order.
  EXPECT_EQ(tl.size(), program.size() - 1);
  EXPECT_EQ(tl.size(), stats.counters.instr_retired - 1);  // the halt retires without issue
  for (size_t i = 0; i < tl.size(); ++i) {
    const InstrEvent& e = tl[i];
    SCOPED_TRACE(describe(e));
    EXPECT_EQ(e.pc, i);
    EXPECT_TRUE(e.complete);
    EXPECT_EQ(uint8_t(e.opcode), opcode_byte(program[i]));
    EXPECT_EQ(e.unit, unit_of(e.opcode));
    if (e.unit == ExecUnit::Control) {
      EXPECT_EQ(e.end, e.start);
    } else {
      EXPECT_LT(e.start, e.end);
    }
    EXPECT_LE(e.end, stats.cycles);
    if (i > 0) {
      EXPECT_GE(e.start, tl[i - 1].start);  // in-order issue
    }
    by_pc[e.pc] = e;
  }
  // Each unit finishes in issue order; the serial units hold one instruction at a time.
  std::map<ExecUnit, const InstrEvent*> last;
  for (const InstrEvent& e : tl) {
    const InstrEvent* prev = last[e.unit];
    if (prev) {
      SCOPED_TRACE(describe(*prev) + " then " + describe(e));
      EXPECT_GE(e.end, prev->end);
      if (e.unit == ExecUnit::ReadHost || e.unit == ExecUnit::Activate ||
          e.unit == ExecUnit::WriteHost) {
        EXPECT_GE(e.start, prev->end);
      }
    }
    last[e.unit] = &e;
  }
  return by_pc;
}

// A dense layer: input, parameters, two weight tiles, two matmuls accumulating, the activation,
// the output; a sync and a nop; the second part repeats the activation with other sizes.
TEST(Timeline, RtlEventsFollowTheProgram) {
  RtlDevice dev;
  ASSERT_TRUE(dev.has_timeline());
  const uint32_t rows = 40;
  const HostBuffer in = dev.alloc(rows * N, "in");
  const HostBuffer prm = dev.alloc(12 * N, "params");
  const HostBuffer w = dev.alloc(2 * N * N, "weights");
  const HostBuffer out = dev.alloc(rows * N, "out");
  std::vector<uint8_t> bytes(rows * N);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7);
  dev.write(in.addr, bytes);
  std::vector<uint8_t> slot(12 * N, 0);
  for (uint32_t c = 0; c < N; ++c)
    slot[4 * (N + c) + 1] = 1;  // mult = 256: out = acc >> 8 (misc 0)
  dev.write(prm.addr, slot);

  ProgramBuilder b(dev.params());
  b.read_host(0, rows, in.addr);                       // 0
  b.read_params(0, 1, prm.addr);                       // 1
  b.read_weights(1, w.addr);                           // 2
  b.read_weights(1, w.addr + N * N);                   // 3
  b.matmul(0, 0, rows, kSwitchWeights);                // 4: waits for 0 (UB rows)
  b.matmul(0, 0, rows, kSwitchWeights | kAccumulate);  // 5
  b.activate(0, 100, rows, 0, ActFunc::Relu);          // 6: waits for 4, 5 (ACC rows)
  b.write_host(100, rows, out.addr);                   // 7: waits for 6 (UB rows)
  b.sync();                                            // 8
  b.nop();                                             // 9
  b.activate(0, 200, 8, 0);                            // 10: 8 rows
  b.activate(0, 300, 24, 0);                           // 11: 24 rows
  b.matmul(0, 0, 8, kNoFlags);                         // 12
  b.sync();                                            // 13
  b.matmul(0, 0, 24, kNoFlags);                        // 14
  const std::vector<Instruction> program = b.finish();

  dev.record_timeline(true);
  const RunStats stats = dev.run(program);
  const std::vector<InstrEvent> tl = dev.timeline();
  SCOPED_TRACE(listing(program));
  auto ev = check_timeline(program, stats, tl);
  ASSERT_EQ(ev.size(), program.size() - 1);

  // A matmul takes at least its rows plus the array's depth.
  for (uint32_t pc : {4u, 5u}) EXPECT_GE(ev[pc].end - ev[pc].start, rows + N) << describe(ev[pc]);
  // The MXU holds both matmuls at once: the second is issued before the first has finished.
  EXPECT_LT(ev[5].start, ev[4].end);
  // Dependencies: a matmul reads the UB rows read_host writes, and waits for its tile.
  EXPECT_GE(ev[4].start, ev[0].end);
  EXPECT_GT(ev[4].end, ev[2].end);
  EXPECT_GT(ev[5].end, ev[3].end);
  // The activation reads the accumulators both matmuls write, write_host the UB rows it writes:
  // each issues in the very cycle its producer is finished (the controller's hazard check
  // clears then), so these hold with equality — an end reported a cycle early or late fails.
  EXPECT_EQ(ev[6].start, ev[5].end);
  EXPECT_EQ(ev[7].start, ev[6].end);
  // sync waits until every unit is idle, i.e. for the last of them; nop and sync take no time.
  uint64_t last_end = 0;
  for (uint32_t pc = 0; pc < 8; ++pc) last_end = std::max(last_end, ev[pc].end);
  EXPECT_EQ(ev[8].start, last_end);
  EXPECT_GE(ev[9].start, ev[8].start);
  // The activation unit reads one accumulator row per cycle: 16 more rows take 16 more cycles.
  EXPECT_EQ((ev[11].end - ev[11].start) - (ev[10].end - ev[10].start), 16u);
  // So does the MXU, with the tile in place and nothing else running.
  EXPECT_EQ((ev[14].end - ev[14].start) - (ev[12].end - ev[12].start), 16u);
  // The run's last cycle is the halt's: after everything else.
  EXPECT_GT(stats.cycles, ev[14].end);

  // A second run replaces the timeline; with recording off it stays empty.
  ProgramBuilder b2(dev.params());
  b2.read_host(0, 4, in.addr);
  b2.write_host(0, 4, out.addr);
  const std::vector<Instruction> p2 = b2.finish();
  const RunStats s2 = dev.run(p2);
  check_timeline(p2, s2, dev.timeline());
  dev.record_timeline(false);
  dev.run(p2);
  EXPECT_TRUE(dev.timeline().empty());
}

// Runs that overlap many weight transfers and matmuls (the tiled matmul driver's schedule):
// the general checks over a longer program.
TEST(Timeline, RtlTiledMatmul) {
  RtlDevice dev;
  const uint32_t m = 3 * N + 5;
  const HostBuffer a = dev.alloc(m * N, "a");
  const HostBuffer w = dev.alloc(6 * N * N, "w");
  const HostBuffer out = dev.alloc(m * N, "out");
  ProgramBuilder b(dev.params());
  b.read_host(0, m, a.addr);
  for (uint32_t t = 0; t < 6; ++t) {
    b.read_weights(1, w.addr + t * N * N);
    b.matmul(0, (t % 2) * m, m, kSwitchWeights | (t >= 2 ? uint32_t{kAccumulate} : 0u));
  }
  b.write_host(0, m, out.addr);
  const std::vector<Instruction> program = b.finish();
  dev.record_timeline(true);
  const RunStats stats = dev.run(program);
  SCOPED_TRACE(listing(program));
  check_timeline(program, stats, dev.timeline());
}

TEST(Timeline, ModelBackendHasNone) {
  ModelDevice dev(ChipParams::with_n(N));
  EXPECT_FALSE(dev.has_timeline());
  try {
    dev.record_timeline(true);
    FAIL() << "record_timeline(true) did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("model backend: no instruction timeline"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(dev.recording_timeline());
  EXPECT_NO_THROW(dev.record_timeline(false));
}

}  // namespace

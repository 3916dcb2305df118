// SPDX-License-Identifier: Apache-2.0
// Whole Verilated chips joined by links (issue 31) through the RTL pod library
// (sim/pod_rtl.h: tpu_core with IciLinks = 4, N = 4, VmemRows = 32768, IciWidth = 128, several
// instances in one process, each with its own host memory on m_axi / m_vaxi, links joined by
// sim/ici_fabric.h with latency, the deadlock rule driving ici_deadlock_i). Every program is a
// whole chip program (read_vmem, link instructions, write_vmem, halt) fetched over AXI; the
// outcome (done or error code and index) and the host bytes the chips wrote are compared with
// the pod of golden models (driver/pod.h) bit for bit. This checks the link unit's wiring in
// the chip: the decoder, the controller's issue and hazards (a write_vmem of the rows a receive
// writes waits for it), the VMEM clients, the errors. Label pod.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "collectives.h"
#include "pod_rtl_harness.h"

namespace {

using namespace pod_rtl_test;  // NOLINT(build/namespaces)

// One step of a ring all-reduce on every chip: send my rows to +x, receive -x's rows and
// reduce them into a copy of mine (or copy), then write the result back.
std::vector<tpu::Instruction> ring_step(uint32_t rows, tpu::IciReduce reduce, uint32_t messages) {
  tpu::ProgramBuilder b(chip_params());
  b.read_vmem(0, rows * messages, kData);
  b.read_vmem(128, rows * messages, kData);
  for (uint32_t k = 0; k < messages; ++k) {
    b.ici_send(0, k * rows, rows);
    b.ici_recv(1, 128 + k * rows, rows, reduce);
  }
  b.write_vmem(128, rows * messages, kOut);
  return b.finish();
}

TEST(CorePod, RingOfTwoFaddAllReduceStep) {
  std::mt19937 rng(1);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 16), random_rows(rng, 16)};
  run_both(2, 7, {ring_step(16, tpu::IciReduce::FAdd, 1), ring_step(16, tpu::IciReduce::FAdd, 1)},
           data, "fadd ring 2");
}

TEST(CorePod, RingOfThreeIaddAndCopyInFifoOrder) {
  std::mt19937 rng(2);
  std::vector<std::vector<uint8_t>> data;
  for (int r = 0; r < 3; ++r) data.push_back(random_rows(rng, 30));
  std::vector<std::vector<tpu::Instruction>> iadd, copy;
  for (int r = 0; r < 3; ++r) {
    iadd.push_back(ring_step(10, tpu::IciReduce::IAdd, 3));
    copy.push_back(ring_step(5, tpu::IciReduce::None, 6));
  }
  run_both(3, 3, iadd, data, "iadd ring 3");
  run_both(3, 20, copy, data, "copy ring 3");
}

TEST(CorePod, SizeMismatchFaultsBothEnds) {
  std::mt19937 rng(3);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 8), random_rows(rng, 8)};
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 8, kData).ici_send(0, 0, 4).write_vmem(0, 8, kOut);
  b.read_vmem(0, 8, kData).ici_recv(1, 0, 5).write_vmem(0, 8, kOut);
  run_both(2, 5, {a.finish(), b.finish()}, data, "size mismatch");
}

TEST(CorePod, ReceiveWithNothingSentIsADeadlock) {
  std::mt19937 rng(4);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 4), random_rows(rng, 4)};
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 4, kData).ici_recv(1, 0, 4).write_vmem(0, 4, kOut);
  b.read_vmem(0, 4, kData).ici_recv(1, 8, 2).write_vmem(0, 4, kOut);
  run_both(2, 4, {a.finish(), b.finish()}, data, "deadlock");
}

// The 2-D all-reduce (driver/collectives.h) on a torus 2x2 of whole chips (4 links each): the
// rows come in over the VMEM port, the reduced rows go back; every chip's VMEM equals the
// golden pod's and the host reference's chains bit for bit.
TEST(CorePod, TorusAllReduceMatchesGoldenAndReference) {
  const tpu::PodTopology topo = tpu::PodTopology::torus(2, 2);
  constexpr uint32_t kRows = 13;  // uneven chunks
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::vector<uint32_t>> lanes;
  std::vector<std::vector<tpu::Instruction>> programs;
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    data.push_back(random_rows(rng, kRows));
    lanes.emplace_back(size_t{kRows} * N);
    std::memcpy(lanes.back().data(), data.back().data(), data.back().size());
    tpu::ProgramBuilder b(chip_params());
    b.read_vmem(0, kRows, kData);
    const std::vector<tpu::Instruction> ar =
        tpu::all_reduce_program(topo, chip_params(), r, 0, kRows, tpu::CollectiveDtype::Fp32);
    for (size_t i = 0; i + 1 < ar.size(); ++i) b.append(ar[i]);  // without its halt
    b.write_vmem(0, kRows, kOut);
    programs.push_back(b.finish());
  }
  const tpu::sim::PodRtlResult res = run_both(topo, 11, programs, data, "torus 2x2", kRows);
  EXPECT_TRUE(res.ok()) << res.message;
  EXPECT_GT(res.link_beats, 0u);
  const std::vector<uint32_t> want =
      tpu::reference_all_reduce(topo, N, lanes, tpu::CollectiveDtype::Fp32);
  PodRtl rtl(topo, 11, kMemSize);
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    std::memcpy(&rtl.memory(r)[kData], data[r].data(), data[r].size());
  }
  ASSERT_TRUE(rtl.run(programs, kCycleLimit).ok());
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    std::vector<uint32_t> got(want.size());
    std::memcpy(got.data(), &rtl.memory(r)[kOut], 4 * got.size());
    EXPECT_EQ(got, want) << "chip " << r;
  }
}

// A chip that faults stops its neighbours waiting on it: they fault ERR_ICI_DEADLOCK (a named
// error, never a hang) within the fabric's deadlock window (2 latency + 2 beats per row + 16
// quiet cycles) plus the few cycles a fault takes to reach ERR_CODE; the golden pod agrees.
TEST(CorePod, FaultStopsTheOthersWithinBoundedCycles) {
  constexpr uint32_t kLatency = 40;
  std::mt19937 rng(6);
  std::vector<std::vector<uint8_t>> data;
  for (int r = 0; r < 3; ++r) data.push_back(random_rows(rng, 4));
  tpu::ProgramBuilder a(chip_params()), b(chip_params()), c(chip_params());
  a.read_vmem(0, 4, kData).read_vmem(0, 1, 4 * kMemSize).ici_send(0, 0, 4);  // DMA fault
  b.read_vmem(0, 4, kData).ici_recv(1, 0, 4).write_vmem(0, 4, kOut);         // waits on chip 0
  c.read_vmem(0, 4, kData).ici_recv(0, 8, 4).write_vmem(0, 4, kOut);         // waits on chip 0 too
  const tpu::sim::PodRtlResult res =
      run_both(3, kLatency, {a.finish(), b.finish(), c.finish()}, data, "fault", 16);
  ASSERT_EQ(res.status, tpu::sim::PodRtlStatus::Stopped);
  ASSERT_FALSE(res.chips[0].done);
  EXPECT_GE(res.deadlocks, 1u);
  const uint64_t window = 2 * kLatency + 2 * 1 + 16;
  for (uint32_t r : {1u, 2u}) {
    EXPECT_FALSE(res.chips[r].done);
    EXPECT_EQ(res.chips[r].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_ICI_DEADLOCK));
    EXPECT_LE(res.chips[r].cycles, res.chips[0].cycles + window + 8)
        << "chip " << r << " stopped at " << res.chips[r].cycles << ", chip 0 at "
        << res.chips[0].cycles;
  }
}

// A run that has not ended after max_cycles returns PodRtlStatus::CycleLimit naming the chips
// still running (a run always ends: the limit is the last resort; here smaller than the run).
TEST(CorePod, CycleLimitIsANamedResult) {
  PodRtl rtl(tpu::PodTopology::ring(2), 5, kMemSize);
  std::vector<std::vector<tpu::Instruction>> programs;
  for (int r = 0; r < 2; ++r) {
    tpu::ProgramBuilder b(chip_params());
    b.read_vmem(0, 512, 0x2000).write_vmem(0, 512, 0x4000);
    programs.push_back(b.finish());
  }
  const tpu::sim::PodRtlResult res = rtl.run(programs, 50);
  EXPECT_EQ(res.status, tpu::sim::PodRtlStatus::CycleLimit);
  EXPECT_NE(res.message.find("still running: chip 0 chip 1"), std::string::npos) << res.message;
}

// A vector instruction reads one bounding interval of rows, A's and B's together (isa.md
// "Ordering"): with A = rows 0..2 and B = rows 27..29 it waits for a receive writing rows 15..16.
// Chip 0 faults before sending, so chip 1's receive never completes: the vector instruction
// must not run before the deadlock (the golden pod once let it, with separate A and B ranges).
TEST(CorePod, VectorWaitsForAReceiveBetweenItsOperands) {
  std::mt19937 rng(8);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 64), random_rows(rng, 64)};
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 64, kData).read_vmem(0, 1, 4 * kMemSize).ici_send(0, 0, 2);
  b.read_vmem(0, 64, kData)
      .ici_recv(1, 15, 2)
      .vop(tpu::VecFunc::FAdd, 40, 0, 27, 3)
      .write_vmem(0, 64, kOut);
  const tpu::sim::PodRtlResult res =
      run_both(2, 9, {a.finish(), b.finish()}, data, "vector between", 64);
  EXPECT_EQ(res.chips[1].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_ICI_DEADLOCK));
  EXPECT_EQ(res.chips[1].err_pc, 1u);
}

// The deadlock rule faults a chip whose next link instruction waits for its busy engine (chip 1
// sends twice on link 0; chip 0 faults before receiving anything): the outcome and memories
// match the golden pod. The controller withdraws the held command in the ici_err cycle on
// purpose (tpu_ctrl.sv head_go); its handshake-hold assertions exempt that cycle (before they
// did not, and CtrlIciHold stopped the process here): the test runs with assertions on.
std::vector<std::vector<tpu::Instruction>> held_at_deadlock() {
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 16, kData).read_vmem(0, 1, 4 * kMemSize).ici_recv(1, 0, 7);
  b.read_vmem(0, 16, kData).ici_send(0, 0, 7).ici_send(0, 8, 2).write_vmem(0, 16, kOut);
  return {a.finish(), b.finish()};
}

TEST(CorePod, LinkInstructionHeldAtDeadlockMatchesGolden) {
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 16), random_rows(rng, 16)};
  const tpu::sim::PodRtlResult res =
      run_both(tpu::PodTopology::ring(2), 20, held_at_deadlock(), data, "held at deadlock", 16);
  EXPECT_EQ(res.chips[1].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_ICI_DEADLOCK));
}

}  // namespace

namespace {

// A receive posted by a chip that then stops (isa.md "Errors of the link instructions": it
// stays posted; its message is discarded): chip 1 posts an ici_recv of `want` rows on link 1
// and faults right after (a read_vmem outside its DMA window); chip 0 sends `rows` rows to it
// after a read_vmem of `delay` rows (its send waits for those rows). Whatever the delay (the
// send starting before the fault reaches chip 0, `latency` cycles, or long after) and however
// long the message (up to beyond the receiving end's 2 latency + 2 beats of buffer), chip 0's
// send completes and it halts; a message of another size faults ERR_ICI_SIZE on chip 0 alone.
// The golden pod agrees bit for bit (outcomes, output bytes, VMEM: chip 1's rows unwritten).
std::vector<std::vector<tpu::Instruction>> send_to_stopped(uint32_t delay, uint32_t rows,
                                                           uint32_t want) {
  tpu::ProgramBuilder a(chip_params()), b(chip_params());
  a.read_vmem(0, 64, kData);
  if (delay > 0) a.read_vmem(64, delay, kData);
  a.ici_send(0, delay > 0 ? 64 : 0, rows).write_vmem(0, 64, kOut);
  b.read_vmem(0, 64, kData).ici_recv(1, 0, want).read_vmem(0, 1, 4 * kMemSize);
  b.write_vmem(0, 64, kOut);
  return {a.finish(), b.finish()};
}

void check(const tpu::sim::PodRtlResult& res, uint32_t rows, uint32_t want,
           const std::string& what) {
  EXPECT_EQ(res.chips[1].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_HOST_RANGE)) << what;
  EXPECT_EQ(res.chips[1].err_pc, 2u) << what;
  if (want == rows) {
    EXPECT_TRUE(res.chips[0].done) << what << ": " << res.message;
  } else {
    EXPECT_EQ(res.chips[0].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_ICI_SIZE)) << what;
  }
}

TEST(CorePod, SendToAReceiveWhoseChipStoppedCompletes) {
  constexpr uint32_t kLatency = 20;  // the receiving end holds 2 * 20 + 2 = 42 beats (rows)
  std::mt19937 rng(9);
  std::vector<std::vector<uint8_t>> data = {random_rows(rng, 128), random_rows(rng, 64)};
  for (uint32_t delay : {0u, 1u, 8u, 30u, 120u, 600u}) {
    for (uint32_t rows : {1u, 7u, 42u, 64u}) {
      for (uint32_t want : {rows, rows + 1}) {
        const std::string what = "delay " + std::to_string(delay) + ", rows " +
                                 std::to_string(rows) + ", want " + std::to_string(want);
        const tpu::sim::PodRtlResult res =
            run_both(2, kLatency, send_to_stopped(delay, rows, want), data, what, 128);
        check(res, rows, want, what);
      }
    }
  }
  // The shortest latencies: the message cannot reach chip 1 before its fault stops it (the
  // fault is decoded in the cycles after the receive is posted; the first beat comes at the
  // earliest 2 latencies after), so its rows stay unwritten here too.
  for (uint32_t latency : {1u, 2u, 3u}) {
    for (uint32_t rows : {1u, 9u}) {
      const std::string what =
          "latency " + std::to_string(latency) + ", rows " + std::to_string(rows);
      check(run_both(2, latency, send_to_stopped(0, rows, rows), data, what, 128), rows, rows,
            what);
    }
  }
}

}  // namespace

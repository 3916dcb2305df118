// SPDX-License-Identifier: Apache-2.0
// The pod of golden models (driver/pod.h): wiring, bit-exact transfers with and without
// reduction, per-link FIFO order, VMEM hazards against link instructions, and every error:
// link not connected, mismatched sizes, deadlock (nothing sent, a cycle of waiting chips, a
// neighbour that stopped), overrun; the cycle estimate's formula.
#include <gtest/gtest.h>

#include <random>

#include "fp.h"
#include "pod.h"
#include "program.h"

namespace tpu {
namespace {

constexpr uint32_t kN = 16;

std::vector<uint32_t> random_lanes(uint32_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(size_t{rows} * kN);
  for (uint32_t& x : v) x = static_cast<uint32_t>(rng());
  return v;
}

TEST(PodTopology, Wiring) {
  const PodTopology ring = PodTopology::ring(4);
  EXPECT_EQ(ring.name(), "ring");
  EXPECT_EQ(ring.links_needed(), 2u);
  auto e = ring.peer(0, kLinkXPlus);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->chip, 1u);
  EXPECT_EQ(e->link, kLinkXMinus);
  e = ring.peer(0, kLinkXMinus);
  EXPECT_EQ(e->chip, 3u);
  EXPECT_EQ(e->link, kLinkXPlus);
  EXPECT_FALSE(ring.peer(0, kLinkYPlus));
  EXPECT_FALSE(ring.peer(0, 4));
  EXPECT_FALSE(PodTopology::ring(1).peer(0, kLinkXPlus));

  const PodTopology t = PodTopology::parse("torus:2x3", 6);
  EXPECT_EQ(t.name(), "torus:2x3");
  EXPECT_EQ(t.links_needed(), 4u);
  e = t.peer(1, kLinkXPlus);  // (1,0) -> (0,0)
  EXPECT_EQ(e->chip, 0u);
  EXPECT_EQ(e->link, kLinkXMinus);
  e = t.peer(1, kLinkYPlus);  // (1,0) -> (1,1) = chip 3
  EXPECT_EQ(e->chip, 3u);
  EXPECT_EQ(e->link, kLinkYMinus);
  e = t.peer(1, kLinkYMinus);  // (1,0) -> (1,2) = chip 5
  EXPECT_EQ(e->chip, 5u);
  EXPECT_EQ(e->link, kLinkYPlus);
  // Every connected link's peer points back.
  for (uint32_t r = 0; r < 6; ++r) {
    for (uint32_t l = 0; l < 4; ++l) {
      auto p = t.peer(r, l);
      ASSERT_TRUE(p);
      auto back = t.peer(p->chip, p->link);
      EXPECT_EQ(back->chip, r);
      EXPECT_EQ(back->link, l);
    }
  }
  EXPECT_THROW(PodTopology::parse("torus:2x3", 4), std::invalid_argument);
  EXPECT_THROW(PodTopology::parse("mesh", 4), std::invalid_argument);
  EXPECT_THROW(PodTopology::parse("torus:0x4", 0), std::invalid_argument);
  EXPECT_THROW(PodTopology::parse("torus:2x2x", 4), std::invalid_argument);
}

TEST(PodModel, ConstructionErrors) {
  EXPECT_THROW(PodModel(PodTopology::torus(2, 2), ChipParams::pod(kN, 2)), std::invalid_argument);
  EXPECT_THROW(PodModel(PodTopology::ring(2), ChipParams::training(kN)), std::invalid_argument);
  EXPECT_THROW(PodModel(PodTopology::ring(2), ChipParams::pod(kN, 2), LinkTiming{0, 1}),
               std::invalid_argument);
  PodModel pod(PodTopology::ring(2), ChipParams::pod(kN, 2));
  EXPECT_THROW(pod.run({{}}), std::invalid_argument);  // one program for two chips
  EXPECT_THROW(pod.chip(2), std::out_of_range);
}

struct Fixture : ::testing::Test {
  ChipParams p = ChipParams::pod(kN, 2);
  PodModel pod{PodTopology::ring(2), p, LinkTiming{16, 64}};
  ProgramBuilder b0{p}, b1{p};
  PodResult run() { return pod.run({b0.finish(), b1.finish()}); }
};

TEST_F(Fixture, CopyIsBitExactAndTheEstimateFollowsTheFormula) {
  const auto data = random_lanes(10, 1);
  pod.chip(0).set_vmem_rows(100, data);
  b0.ici_send(kLinkXPlus, 100, 10);
  b1.ici_recv(kLinkXMinus, 7, 10);
  const PodResult r = run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(pod.chip(1).vmem_rows(7, 10), data);
  EXPECT_EQ(r.transfers, 1u);
  EXPECT_EQ(r.link_bytes, 640u);
  EXPECT_EQ(r.link_busy_cycles, 40u);  // 640 bytes at 16 per cycle
  // Both issued at cycle 0: the rows land at 40 + 64; the receiver's halt issues after that.
  EXPECT_EQ(r.chip_cycles[1], 40u + 64u + 1u);
  EXPECT_EQ(r.chip_cycles[0], 40u + 1u);
  EXPECT_EQ(r.cycles, 105u);
  EXPECT_EQ(r.chips[0].retired, 2u);  // ici_send + halt
  EXPECT_EQ(r.chips[1].retired, 2u);
}

TEST_F(Fixture, ReduceAddsLocalThenReceivedBitExact) {
  std::vector<uint32_t> a = random_lanes(4, 2), b = random_lanes(4, 3);
  // Corner cases in the first row: signed zeros, subnormal (DAZ), inf - inf, NaN, overflow.
  const uint32_t ca[] = {0x80000000, 0x80000000, 0x00000001, 0x7F800000,
                         0xFF800000, 0x7FC00001, 0x7F7FFFFF, 0x3F800000};
  const uint32_t cb[] = {0x80000000, 0x00000000, 0x3F800000, 0xFF800000,
                         0x3F800000, 0x3F800000, 0x7F7FFFFF, 0x33800000};
  for (int j = 0; j < 8; ++j) {
    a[j] = ca[j];
    b[j] = cb[j];
  }
  pod.chip(1).set_vmem_rows(0, a);   // local
  pod.chip(0).set_vmem_rows(50, b);  // received
  pod.chip(1).set_vmem_rows(10, a);
  pod.chip(0).set_vmem_rows(60, b);
  b0.ici_send(kLinkXPlus, 50, 4).ici_send(kLinkXPlus, 60, 4);
  b1.ici_recv(kLinkXMinus, 0, 4, IciReduce::FAdd).ici_recv(kLinkXMinus, 10, 4, IciReduce::IAdd);
  const PodResult r = run();
  ASSERT_TRUE(r.ok()) << r.message;
  const auto f = pod.chip(1).vmem_rows(0, 4);
  const auto i = pod.chip(1).vmem_rows(10, 4);
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(f[k], fp::add(a[k], b[k])) << k;
    EXPECT_EQ(i[k], a[k] + b[k]) << k;  // wrapping
  }
  EXPECT_EQ(f[0], 0x80000000u);  // -0 + -0
  EXPECT_EQ(f[1], 0x00000000u);  // -0 + +0
  EXPECT_EQ(f[2], 0x3F800000u);  // subnormal read as 0
  EXPECT_EQ(f[3], 0x7FC00000u);  // inf - inf
  EXPECT_EQ(f[5], 0x7FC00000u);  // NaN canonical
  EXPECT_EQ(f[6], 0x7F800000u);  // overflow
  EXPECT_EQ(f[7], 0x3F800000u);  // 1 + 2^-24 ties to even
}

TEST_F(Fixture, MessagesKeepTheirOrderOnALink) {
  const auto m1 = random_lanes(3, 4), m2 = random_lanes(3, 5), m3 = random_lanes(3, 6);
  pod.chip(0).set_vmem_rows(0, m1);
  pod.chip(0).set_vmem_rows(3, m2);
  pod.chip(0).set_vmem_rows(6, m3);
  b0.ici_send(kLinkXPlus, 0, 3).ici_send(kLinkXPlus, 3, 3).ici_send(kLinkXPlus, 6, 3);
  b1.ici_recv(kLinkXMinus, 200, 3).ici_recv(kLinkXMinus, 100, 3).ici_recv(kLinkXMinus, 300, 3);
  const PodResult r = run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(pod.chip(1).vmem_rows(200, 3), m1);
  EXPECT_EQ(pod.chip(1).vmem_rows(100, 3), m2);
  EXPECT_EQ(pod.chip(1).vmem_rows(300, 3), m3);
}

TEST_F(Fixture, LaterInstructionsWaitForRowsASendStillReads) {
  const auto old_rows = random_lanes(2, 7);
  pod.chip(0).set_vmem_rows(0, old_rows);
  b0.ici_send(kLinkXPlus, 0, 2);
  // Overwrites row 1 right after the send was issued: must wait until the rows have left.
  b0.vop_imm(VecFunc::IAdd, 1, 1, 5, 1);
  b1.vop_imm(VecFunc::IAdd, 40, 40, 0, 1);  // the receiver is late
  b1.ici_recv(kLinkXMinus, 20, 2);
  // And a reader of received rows sees them.
  b1.vop_imm(VecFunc::IAdd, 30, 21, 1, 1);
  const PodResult r = run();
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(pod.chip(1).vmem_rows(20, 2), old_rows);
  for (uint32_t j = 0; j < kN; ++j) {
    EXPECT_EQ(pod.chip(0).vmem(1, j), old_rows[kN + j] + 5);
    EXPECT_EQ(pod.chip(1).vmem(30, j), old_rows[kN + j] + 1);
  }
}

TEST_F(Fixture, MismatchedSizesFaultBothEnds) {
  pod.chip(1).set_vmem_rows(0, std::vector<uint32_t>(5 * kN, 0xABCD));
  b0.nop().ici_send(kLinkXPlus, 0, 4);
  b1.ici_recv(kLinkXMinus, 0, 5);
  const PodResult r = run();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_SIZE);
  EXPECT_EQ(r.chips[0].err_pc, 1u);
  EXPECT_EQ(r.chips[1].error, ErrorCode::ERR_ICI_SIZE);
  EXPECT_EQ(r.chips[1].err_pc, 0u);
  EXPECT_NE(r.chips[1].message.find("ici_recv of 5 rows on link 1 met an ici_send of 4 rows"),
            std::string::npos)
      << r.chips[1].message;
  EXPECT_EQ(pod.chip(1).vmem_rows(0, 5), std::vector<uint32_t>(5 * kN, 0xABCD));  // untouched
}

TEST_F(Fixture, ReceiveWithNothingSentIsADeadlockNotAHang) {
  b0.ici_recv(kLinkXMinus, 0, 1);
  b1.nop();
  const PodResult r = run();
  EXPECT_TRUE(r.chips[1].done());
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_DEADLOCK);
  EXPECT_EQ(r.chips[0].err_pc, 0u);
  EXPECT_NE(r.message.find("chip 1 has halted"), std::string::npos) << r.message;
}

TEST_F(Fixture, SendNobodyReceivesIsADeadlock) {
  b0.ici_send(kLinkXPlus, 0, 1).nop().nop();
  const PodResult r = run();
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_DEADLOCK);
  EXPECT_EQ(r.chips[0].err_pc, 0u);   // the oldest unmatched link instruction
  EXPECT_EQ(r.chips[0].retired, 2u);  // the nops ran; halt waits for the send
}

TEST_F(Fixture, ACycleOfWaitingChipsIsADeadlock) {
  // Each chip sends rows 0..1 and then receives into the same rows: the receive waits for its
  // own send (write after read), which waits for the other chip's receive: a cycle.
  for (ProgramBuilder* b : {&b0, &b1}) {
    b->ici_send(kLinkXPlus, 0, 2).ici_recv(kLinkXMinus, 0, 2, IciReduce::FAdd);
  }
  const PodResult r = run();
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_DEADLOCK);
  EXPECT_EQ(r.chips[1].error, ErrorCode::ERR_ICI_DEADLOCK);
  EXPECT_NE(r.message.find("pod deadlock"), std::string::npos);
  // Disjoint rows: the same exchange completes.
  PodModel ok(PodTopology::ring(2), p);
  ProgramBuilder c0(p), c1(p);
  for (ProgramBuilder* b : {&c0, &c1}) b->ici_send(kLinkXPlus, 0, 2).ici_recv(kLinkXMinus, 2, 2);
  EXPECT_TRUE(ok.run({c0.finish(), c1.finish()}).ok());
}

TEST_F(Fixture, ANeighbourThatStopsEndsTheOthersWithANamedError) {
  b0.ici_recv(kLinkXMinus, 0, 1);
  // A destination row past VmemRows (ChipParams::kTrainingVmemRows).
  const auto past = static_cast<uint16_t>(ChipParams::kTrainingVmemRows + 808);
  std::vector<Instruction> bad = {Vector{0, BMode::Imm, past, 0}, Halt{}};
  const PodResult r = pod.run({b0.finish(), bad});
  EXPECT_EQ(r.chips[1].error, ErrorCode::ERR_VMEM_RANGE);
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_DEADLOCK);
  EXPECT_NE(r.chips[0].message.find("chip 1 stopped with ERR_VMEM_RANGE"), std::string::npos)
      << r.chips[0].message;
}

TEST_F(Fixture, LinksThatAreNotConnected) {
  ChipParams four = ChipParams::pod(kN, 4);
  PodModel ring(PodTopology::ring(2), four);
  std::vector<Instruction> a = {IciSend{kLinkYPlus, 0, 1}, Halt{}}, h = {Halt{}};
  PodResult r = ring.run({a, h});
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_LINK);
  EXPECT_NE(r.chips[0].message.find("link 2 of chip 0 is not connected in topology ring"),
            std::string::npos)
      << r.chips[0].message;
  EXPECT_TRUE(r.chips[1].done());
  PodModel one(PodTopology::ring(1), p);
  r = one.run({{IciRecv{kLinkXMinus, 0, 0, 1}, Halt{}}});
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_LINK);
  // A link beyond IciLinks, and a chip alone in a golden model: ERR_ICI_LINK too.
  r = ring.run({{RawInstruction{encode(IciSend{9, 0, 1})}, Halt{}}, h});
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_ICI_LINK);
  EXPECT_EQ(pod.chip(0).execute(IciSend{0, 0, 1}), ErrorCode::ERR_ICI_LINK);
}

TEST_F(Fixture, ProgramsWithoutHaltOverrun) {
  const PodResult r = pod.run({{Nop{}}, {Halt{}}});
  EXPECT_EQ(r.chips[0].error, ErrorCode::ERR_CMD_OVERRUN);
  EXPECT_EQ(r.chips[0].err_pc, 1u);
}

}  // namespace
}  // namespace tpu

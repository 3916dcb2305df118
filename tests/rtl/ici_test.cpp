// SPDX-License-Identifier: Apache-2.0
// Block test of tpu_ici (the inter-chip link unit, issue 31): P copies of the Verilated unit,
// each with its own VMEM model (random grants on its three client ports, read data only in the
// cycle after a granted read, garbage otherwise, writes first), joined as a ring or a 2-D
// torus (driver/pod.h's wiring) by sim/ici_channel.h links with latency. Random link
// programs (a global sequence of transfers, each chip issuing its part in order under the
// row-range rule of docs/isa.md "Ordering of the link instructions", as the controller does)
// are run, and every chip's VMEM must equal the pod of golden models' (driver/pod.h) after the
// same programs, bit for bit: copies, fp32 adds with corner values, wrapping int32 adds.
// Faults: mismatched sizes (ERR_ICI_SIZE on both ends, nothing written), the pod's deadlock
// input (ERR_ICI_DEADLOCK at the oldest waiting instruction), and the link's speed (one beat
// per cycle once a message flows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "Vtpu_ici.h"
#include "collectives.h"
#include "ici_channel.h"
#include "ici_fabric.h"
#include "isa.h"
#include "pod.h"
#include "port_fields.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = TPU_TEST_N;
constexpr uint32_t kLinks = 4;                   // the build's IciLinks
constexpr uint32_t kWidth = TPU_TEST_ICI_WIDTH;  // the build's IciWidth
constexpr uint32_t kBpr = 32 * N / kWidth;       // beats per row
constexpr uint32_t kRows = 64;                   // VMEM rows of the test
constexpr int64_t kCycleLimit = 400000;

using tpu::IciRecv;
using tpu::IciSend;
using tpu::Instruction;
using tpu::sim::IciBeat;
using tpu::sim::IciChannel;
using tpu::sim::IciFabric;

// One link instruction as the harness issues it.
struct LinkOp {
  bool recv = false;
  uint32_t link = 0, vmem = 0, rows = 1, reduce = 0;
  uint32_t pc = 0;
};

uint64_t pack_cmd(const LinkOp& op) {
  return (uint64_t{op.recv} << 46) | (uint64_t{op.reduce} << 44) | (uint64_t{op.link} << 40) |
         (uint64_t{op.vmem} << 24) | uint64_t{op.rows};
}

bool overlap(const LinkOp& a, const LinkOp& b) {
  return a.vmem < b.vmem + b.rows && b.vmem < a.vmem + a.rows;
}

// One chip: the Verilated unit, its VMEM and its program.
struct Chip {
  std::unique_ptr<VerilatedContext> ctx = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vtpu_ici> m = std::make_unique<Vtpu_ici>(ctx.get());
  std::vector<uint32_t> mem;
  std::vector<LinkOp> prog;
  size_t next = 0;  // next instruction to issue
  LinkOp tx_op[kLinks], rx_op[kLinks];
  bool cmd_taken = false;
  bool err = false;
  uint32_t err_code = 0, err_pc = 0;
};

std::vector<std::optional<IciFabric::End>> wiring(const tpu::PodTopology& topo) {
  std::vector<std::optional<IciFabric::End>> peers;
  for (uint32_t c = 0; c < topo.chips(); ++c) {
    for (uint32_t l = 0; l < kLinks; ++l) {
      const auto p = topo.peer(c, l);
      peers.push_back(p ? std::optional<IciFabric::End>(IciFabric::End{p->chip, p->link})
                        : std::nullopt);
    }
  }
  return peers;
}

// The pod around the units: VMEM models, in-order issue under the row-range rule (the
// controller's part), sim/ici_fabric.h links and its deadlock rule. A chip that faults is
// cleared in the next cycle (the controller stops the run and abandons its link instructions).
class Pod {
 public:
  Pod(const tpu::PodTopology& topo, uint32_t latency, uint32_t seed, double grant,
      uint32_t vmem_rows = kRows)
      : topo_(topo),
        rng_(seed),
        grant_(grant),
        rows_(vmem_rows),
        chips_(topo.chips()),
        fabric_(topo.chips(), kLinks, wiring(topo), latency, kBpr) {
    for (Chip& c : chips_) c.mem.assign(size_t{rows_} * N, 0);
    for (Chip& c : chips_) {
      c.m->clk_i = 0;
      c.m->rst_ni = 0;
      c.m->clear_i = 0;
      c.m->cmd_valid_i = 0;
      c.m->deadlock_i = 0;
      c.m->eval();
    }
    for (int i = 0; i < 2; ++i) tick();
    for (Chip& c : chips_) c.m->rst_ni = 1;
    tick();
  }

  Chip& chip(uint32_t r) { return chips_[r]; }
  IciFabric& fabric() { return fabric_; }
  uint64_t cycle() const { return cycle_; }

  void drive_links(uint32_t r) {
    Vtpu_ici& m = *chips_[r].m;
    for (uint32_t l = 0; l < kLinks; ++l) {
      IciChannel* out = fabric_.up(r, l) ? &fabric_.out(r, l) : nullptr;
      IciChannel* in = fabric_.up(r, l) ? &fabric_.in(r, l) : nullptr;
      set_field(m.tx_ready_i, l, 1, out && out->tx_ready());
      set_field(m.tx_want_i, 24 * l, 24, out ? out->tx_want() : 0);
      const bool v = in && in->rx_valid();
      set_field(m.rx_valid_i, l, 1, v);
      set_field(m.rx_first_i, l, 1, v && in->rx_beat().first);
      set_field(m.rx_rows_i, 24 * l, 24, v ? in->rx_beat().rows : 0xABCDEFu);
      for (uint32_t k = 0; k < kWidth / 32; ++k) {
        set_field(m.rx_data_i, kWidth * l + 32 * k, 32, v ? in->rx_beat().data[k] : 0xDEADBEEFu);
      }
    }
  }

  void observe_links(uint32_t r) {
    Vtpu_ici& m = *chips_[r].m;
    for (uint32_t l = 0; l < kLinks; ++l) {
      if (!fabric_.up(r, l)) {
        EXPECT_FALSE(get_field(m.tx_valid_o, l, 1)) << "send on a link that is down";
        continue;
      }
      IciFabric::Pins& p = fabric_.pins(r, l);
      p.tx_fire = get_field(m.tx_valid_o, l, 1) && get_field(m.tx_ready_i, l, 1);
      p.rx_fire = get_field(m.rx_valid_i, l, 1) && get_field(m.rx_ready_o, l, 1);
      p.rx_want = get_field(m.rx_want_o, 24 * l, 24);
      if (p.tx_fire) {
        p.beat.first = get_field(m.tx_first_o, l, 1);
        p.beat.rows = get_field(m.tx_rows_o, 24 * l, 24);
        for (uint32_t k = 0; k < kWidth / 32; ++k) {
          p.beat.data.push_back(get_field(m.tx_data_o, kWidth * l + 32 * k, 32));
        }
        ++beats_;
      }
    }
  }

  void memory(uint32_t r) {
    Chip& c = chips_[r];
    Vtpu_ici& m = *c.m;
    if (m.vm_w_we_o && m.vm_w_wgnt_i) {
      EXPECT_LT(m.vm_w_waddr_o, rows_);
      for (uint32_t j = 0; j < N; ++j) {
        c.mem[size_t{m.vm_w_waddr_o % rows_} * N + j] = get_field(m.vm_w_wdata_o, 32 * j, 32);
      }
    }
    rdata_[r].assign(N, 0x5A5A5A5Au ^ static_cast<uint32_t>(cycle_));
    qdata_[r].assign(N, 0xA5A5A5A5u ^ static_cast<uint32_t>(cycle_));
    if (m.vm_r_re_o && m.vm_r_rgnt_i) {
      EXPECT_LT(m.vm_r_raddr_o, rows_);
      for (uint32_t j = 0; j < N; ++j) {
        rdata_[r][j] = c.mem[size_t{m.vm_r_raddr_o % rows_} * N + j];
      }
    }
    if (m.vm_q_re_o && m.vm_q_rgnt_i) {
      EXPECT_LT(m.vm_q_raddr_o, rows_);
      for (uint32_t j = 0; j < N; ++j) {
        qdata_[r][j] = c.mem[size_t{m.vm_q_raddr_o % rows_} * N + j];
      }
    }
  }

  void tick() {
    std::uniform_real_distribution<double> u(0, 1);
    const bool deadlock = fabric_.deadlock();
    if (deadlock) fabric_.clear_deadlock();
    std::vector<IciFabric::ChipState> states(chips_.size());
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      Chip& c = chips_[r];
      Vtpu_ici& m = *c.m;
      drive_links(r);
      m.vm_r_rgnt_i = u(rng_) < grant_;
      m.vm_q_rgnt_i = u(rng_) < grant_;
      m.vm_w_wgnt_i = u(rng_) < grant_;
      m.clear_i = c.err && m.busy_o;
      offer_command(r);
      states[r] = state(r);
      m.deadlock_i = deadlock && states[r] == IciFabric::ChipState::Waiting;
      m.eval();
    }
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      Chip& c = chips_[r];
      Vtpu_ici& m = *c.m;
      observe_links(r);
      memory(r);
      c.cmd_taken = m.cmd_valid_i && m.cmd_ready_o;
      if (c.cmd_taken) {
        const LinkOp& op = c.prog[c.next];
        (op.recv ? c.rx_op : c.tx_op)[op.link] = op;
        ++c.next;
      }
      m.clk_i = 1;
      m.eval();
      if (m.err_o && !c.err) {  // registered: the error of the cycle just ended
        c.err = true;
        c.err_code = m.err_code_o;
        c.err_pc = m.err_pc_o;
      }
      m.clk_i = 0;
      m.cmd_valid_i = 0;
      m.deadlock_i = 0;
      for (uint32_t j = 0; j < N; ++j) {
        set_field(m.vm_r_rdata_i, 32 * j, 32, rdata_[r][j]);
        set_field(m.vm_q_rdata_i, 32 * j, 32, qdata_[r][j]);
      }
      m.eval();
    }
    fabric_.step(states);
    ++cycle_;
  }

  // Whether chip r's next instruction may go to the unit: no busy engine's rows conflict
  // (the controller's rule: a send reads, a receive writes).
  bool issuable(uint32_t r) {
    Chip& c = chips_[r];
    Vtpu_ici& m = *c.m;
    if (c.err || c.next >= c.prog.size()) return false;
    const LinkOp& op = c.prog[c.next];
    for (uint32_t l = 0; l < kLinks; ++l) {
      if (get_field(m.tx_busy_o, l, 1) && op.recv && overlap(op, c.tx_op[l])) return false;
      if (get_field(m.rx_busy_o, l, 1) && overlap(op, c.rx_op[l])) return false;
    }
    return true;
  }

  void offer_command(uint32_t r) {
    Chip& c = chips_[r];
    Vtpu_ici& m = *c.m;
    m.cmd_valid_i = 0;
    if (!issuable(r)) return;
    const LinkOp& op = c.prog[c.next];
    m.cmd_valid_i = 1;
    m.cmd_i = pack_cmd(op);
    m.cmd_pc_i = op.pc;
  }

  // Stopped: faulted, or all issued and idle (halted). Waiting: link engines busy and the next
  // instruction (if any) held back. Running: it can issue.
  IciFabric::ChipState state(uint32_t r) {
    Chip& c = chips_[r];
    if (c.err || (c.next >= c.prog.size() && !c.m->busy_o)) return IciFabric::ChipState::Stopped;
    const bool can_issue = c.m->cmd_valid_i && c.m->cmd_ready_o;
    return can_issue ? IciFabric::ChipState::Running : IciFabric::ChipState::Waiting;
  }

  bool all_done() const {
    for (const Chip& c : chips_) {
      if (c.err ? c.m->busy_o : (c.next < c.prog.size() || c.m->busy_o)) return false;
    }
    return true;
  }

  // Runs until every chip has halted or faulted (never hangs: the deadlock rule).
  int64_t run() {
    const uint64_t start = cycle_;
    while (!all_done()) {
      tick();
      if (cycle_ - start > kCycleLimit) {
        ADD_FAILURE() << "the pod hangs";
        return -1;
      }
    }
    return static_cast<int64_t>(cycle_ - start);
  }

  uint64_t beats() const { return beats_; }
  uint32_t rows() const { return rows_; }

 private:
  tpu::PodTopology topo_;
  std::mt19937 rng_;
  double grant_;
  uint32_t rows_;
  std::vector<Chip> chips_;
  IciFabric fabric_;
  std::vector<std::vector<uint32_t>> rdata_ = std::vector<std::vector<uint32_t>>(16);
  std::vector<std::vector<uint32_t>> qdata_ = std::vector<std::vector<uint32_t>>(16);
  uint64_t cycle_ = 0;
  uint64_t beats_ = 0;
};

uint32_t rnd(std::mt19937& rng) { return static_cast<uint32_t>(rng()); }

uint32_t random_lane(std::mt19937& rng) {
  static const uint32_t kSpecial[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                      0x7FC00000u, 0x7F800001u, 0x00000001u, 0x807FFFFFu,
                                      0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u,
                                      0x00800000u, 0x80800000u, 0x33800000u, 0xB3800000u};
  const uint32_t k = rnd(rng) % 8;
  if (k == 0) return kSpecial[rnd(rng) % 16];
  if (k == 1) return 0x3F800000u + (rnd(rng) % 64) * 0x00400000u;  // similar exponents: cancelling
  return rnd(rng);
}

tpu::ChipParams params(uint32_t vmem_rows = kRows) {
  tpu::ChipParams p = tpu::ChipParams::pod(N, kLinks);
  p.vmem_rows = vmem_rows;
  return p;
}

// Fills both the RTL's and the golden pod's VMEM with the same random lanes.
void fill(Pod& pod, tpu::PodModel& gold, std::mt19937& rng) {
  for (uint32_t r = 0; r < gold.chips(); ++r) {
    std::vector<uint32_t> lanes(size_t{pod.rows()} * N);
    for (uint32_t& v : lanes) v = random_lane(rng);
    pod.chip(r).mem = lanes;
    gold.chip(r).set_vmem_rows(0, lanes);
  }
}

std::vector<std::vector<Instruction>> golden_programs(Pod& pod, uint32_t chips) {
  std::vector<std::vector<Instruction>> progs(chips);
  for (uint32_t r = 0; r < chips; ++r) {
    for (const LinkOp& op : pod.chip(r).prog) {
      if (op.recv) {
        progs[r].push_back(IciRecv{static_cast<uint8_t>(op.link), static_cast<uint8_t>(op.reduce),
                                   static_cast<uint16_t>(op.vmem), op.rows});
      } else {
        progs[r].push_back(
            IciSend{static_cast<uint8_t>(op.link), static_cast<uint16_t>(op.vmem), op.rows});
      }
    }
    progs[r].push_back(tpu::Halt{});
  }
  return progs;
}

void add_op(Chip& c, LinkOp op) {
  op.pc = static_cast<uint32_t>(c.prog.size());
  c.prog.push_back(op);
}

// A random global sequence of transfers on connected links; each chip's program is its part
// in that order, which can never deadlock (the oldest unfinished transfer can always start).
void random_programs(Pod& pod, const tpu::PodTopology& topo, std::mt19937& rng, uint32_t transfers,
                     uint32_t max_rows) {
  for (uint32_t t = 0; t < transfers; ++t) {
    uint32_t src = 0, link = 0;
    std::optional<tpu::PodTopology::End> dst;
    do {
      src = rnd(rng) % topo.chips();
      link = rnd(rng) % kLinks;
      dst = topo.peer(src, link);
    } while (!dst);
    const uint32_t rows = 1 + rnd(rng) % max_rows;
    LinkOp s, d;
    s.link = link;
    s.rows = rows;
    s.vmem = rnd(rng) % (kRows - rows + 1);
    d.recv = true;
    d.link = dst->link;
    d.rows = rows;
    d.vmem = rnd(rng) % (kRows - rows + 1);
    d.reduce = rnd(rng) % 3;
    add_op(pod.chip(src), s);
    add_op(pod.chip(dst->chip), d);
  }
}

void expect_vmem_equal(Pod& pod, tpu::PodModel& gold, const std::string& what) {
  for (uint32_t r = 0; r < gold.chips(); ++r) {
    const std::vector<uint32_t> want = gold.chip(r).vmem_rows(0, pod.rows());
    const std::vector<uint32_t>& got = pod.chip(r).mem;
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] != got[i]) {
        ADD_FAILURE() << what << ": chip " << r << " row " << i / N << " lane " << i % N
                      << ": RTL 0x" << std::hex << got[i] << ", golden 0x" << want[i];
        return;
      }
    }
  }
}

void random_run(const tpu::PodTopology& topo, uint32_t seed, double grant, uint32_t latency) {
  std::mt19937 rng(seed);
  Pod pod(topo, latency, seed, grant);
  tpu::PodModel gold(topo, params());
  fill(pod, gold, rng);
  random_programs(pod, topo, rng, 12 + rnd(rng) % 12, 1 + rnd(rng) % 9);
  const tpu::PodResult res = gold.run(golden_programs(pod, topo.chips()));
  ASSERT_TRUE(res.ok()) << res.message;
  const int64_t cycles = pod.run();
  ASSERT_GE(cycles, 0) << "seed " << seed;
  if (std::getenv("TPU_ICI_VERBOSE")) {
    std::printf("%s seed %u: %lld cycles, %llu beats\n", topo.name().c_str(), seed,
                static_cast<long long>(cycles), static_cast<unsigned long long>(pod.beats()));
  }
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    EXPECT_FALSE(pod.chip(r).err) << "seed " << seed << " chip " << r << " code "
                                  << pod.chip(r).err_code;
  }
  expect_vmem_equal(pod, gold, topo.name() + " seed " + std::to_string(seed));
}

uint32_t random_count() {
  const char* env = std::getenv("TPU_ICI_RANDOM");
  return env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 40u;
}

TEST(Ici, RandomRing2) {
  for (uint32_t s = 0; s < random_count(); ++s) {
    random_run(tpu::PodTopology::ring(2), s, s % 2 ? 0.6 : 1.0, 1 + s % 9);
  }
}

TEST(Ici, RandomRing4) {
  for (uint32_t s = 0; s < random_count() / 2; ++s) {
    random_run(tpu::PodTopology::ring(4), 1000 + s, s % 2 ? 0.5 : 1.0, 1 + s % 5);
  }
}

TEST(Ici, RandomTorus2x2) {
  for (uint32_t s = 0; s < random_count() / 2; ++s) {
    random_run(tpu::PodTopology::torus(2, 2), 2000 + s, s % 2 ? 0.7 : 1.0, 1 + s % 7);
  }
}

// Both ends of a message of another size than the receive fault ERR_ICI_SIZE at their
// instruction; the receiver's rows are untouched.
TEST(Ici, SizeMismatchFaultsBothEnds) {
  const auto topo = tpu::PodTopology::ring(2);
  std::mt19937 rng(7);
  Pod pod(topo, 5, 7, 1.0);
  tpu::PodModel gold(topo, params());
  fill(pod, gold, rng);
  const std::vector<uint32_t> before = pod.chip(1).mem;
  add_op(pod.chip(0), LinkOp{false, 0, 4, 3, 0, 0});  // 3 rows
  add_op(pod.chip(1), LinkOp{true, 1, 8, 2, 1, 0});   // a receive of 2
  ASSERT_GE(pod.run(), 0);
  EXPECT_TRUE(pod.chip(0).err);
  EXPECT_EQ(pod.chip(0).err_code, 17u);
  EXPECT_EQ(pod.chip(0).err_pc, 0u);
  EXPECT_TRUE(pod.chip(1).err);
  EXPECT_EQ(pod.chip(1).err_code, 17u);
  EXPECT_EQ(pod.chip(1).err_pc, 0u);
  EXPECT_EQ(pod.chip(1).mem, before);
  EXPECT_FALSE(pod.chip(0).m->busy_o);
  EXPECT_FALSE(pod.chip(1).m->busy_o);
  const tpu::PodResult res = gold.run(golden_programs(pod, 2));
  EXPECT_EQ(res.chips[0].error, tpu::ErrorCode::ERR_ICI_SIZE);
  EXPECT_EQ(res.chips[1].error, tpu::ErrorCode::ERR_ICI_SIZE);
}

// Runs the programs on the RTL pod and on the pod of golden models: every chip ends the same
// way (halted, or the same error at the same instruction) with the same VMEM.
void expect_same_outcome(Pod& pod, const tpu::PodTopology& topo, std::mt19937& rng,
                         const std::string& what) {
  tpu::PodModel gold(topo, params(pod.rows()));
  fill(pod, gold, rng);
  const tpu::PodResult res = gold.run(golden_programs(pod, topo.chips()));
  ASSERT_GE(pod.run(), 0) << what;
  if (std::getenv("TPU_ICI_VERBOSE")) {
    for (uint32_t r = 0; r < topo.chips(); ++r) {
      std::printf("%s chip %u: RTL err %u pc %u; model %s\n", what.c_str(), r,
                  pod.chip(r).err ? pod.chip(r).err_code : 0u, pod.chip(r).err_pc,
                  res.chips[r].message.c_str());
      for (const LinkOp& op : pod.chip(r).prog) {
        std::printf("   %u: %s link %u vmem %u rows %u reduce %u\n", op.pc,
                    op.recv ? "recv" : "send", op.link, op.vmem, op.rows, op.reduce);
      }
    }
  }
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    const tpu::RunResult& g = res.chips[r];
    const Chip& c = pod.chip(r);
    const uint32_t want_code = g.done() ? 0u : static_cast<uint32_t>(g.error);
    EXPECT_EQ(c.err ? c.err_code : 0u, want_code) << what << ": chip " << r << ": " << g.message;
    if (c.err && !g.done()) {
      EXPECT_EQ(c.err_pc, g.err_pc) << what << ": chip " << r;
    }
    EXPECT_FALSE(c.m->busy_o) << what << ": chip " << r << " left busy";
  }
  expect_vmem_equal(pod, gold, what);
}

// The pod's deadlock rule: a send nobody receives and a receive nobody sends to; the chip
// faults ERR_ICI_DEADLOCK at the older one within the rule's window, and is left idle.
TEST(Ici, DeadlockFaultsOldestWaiting) {
  const auto topo = tpu::PodTopology::ring(2);
  Pod pod(topo, 3, 9, 1.0);
  add_op(pod.chip(0), LinkOp{false, 0, 0, 2, 0, 0});  // a send nobody receives
  add_op(pod.chip(0), LinkOp{true, 1, 10, 1, 2, 0});  // a receive nobody sends to
  const int64_t cycles = pod.run();
  const Chip& c = pod.chip(0);
  EXPECT_TRUE(c.err);
  EXPECT_EQ(c.err_code, 18u);
  EXPECT_EQ(c.err_pc, 0u);
  EXPECT_FALSE(c.m->busy_o);
  EXPECT_FALSE(pod.chip(1).err);
  EXPECT_LE(cycles, static_cast<int64_t>(pod.fabric().window()) + 16);
}

// Hand-made faults against the pod model: a receive with nothing sent, a cycle of chips each
// waiting for the next, a size mismatch whose chips stop and leave a third waiting, a send
// nobody receives behind a transfer that completes.
TEST(Ici, FaultsMatchPodModel) {
  std::mt19937 rng(5);
  {
    Pod pod(tpu::PodTopology::ring(2), 4, 1, 1.0);
    add_op(pod.chip(1), LinkOp{true, 1, 3, 2, 1, 0});
    expect_same_outcome(pod, tpu::PodTopology::ring(2), rng, "receive, nothing sent");
  }
  {
    Pod pod(tpu::PodTopology::ring(4), 6, 2, 0.7);
    for (uint32_t r = 0; r < 4; ++r) {
      add_op(pod.chip(r), LinkOp{true, 1, 0, 4, 2, 0});
      add_op(pod.chip(r), LinkOp{false, 0, 8, 4, 0, 0});
    }
    expect_same_outcome(pod, tpu::PodTopology::ring(4), rng, "a cycle of receives");
  }
  {
    Pod pod(tpu::PodTopology::ring(4), 5, 3, 1.0);
    add_op(pod.chip(0), LinkOp{false, 0, 0, 3, 0, 0});
    add_op(pod.chip(1), LinkOp{true, 1, 0, 2, 0, 0});   // 2 rows where 3 come
    add_op(pod.chip(1), LinkOp{false, 0, 1, 1, 0, 0});  // its rows: waits for the receive
    add_op(pod.chip(2), LinkOp{true, 1, 20, 1, 1, 0});
    expect_same_outcome(pod, tpu::PodTopology::ring(4), rng, "size mismatch, then waiting");
  }
  {
    Pod pod(tpu::PodTopology::torus(2, 2), 7, 4, 0.8);
    add_op(pod.chip(0), LinkOp{false, 2, 0, 5, 0, 0});  // to chip 2, never received
    add_op(pod.chip(0), LinkOp{true, 1, 8, 3, 1, 0});   // from chip 1: completes
    add_op(pod.chip(1), LinkOp{false, 0, 30, 3, 0, 0});
    expect_same_outcome(pod, tpu::PodTopology::torus(2, 2), rng, "send nobody receives");
  }
}

// Fault injection, a chip that stops: random link programs where one chip's program ends
// early (its later instructions never come). The chips left waiting fault ERR_ICI_DEADLOCK
// exactly where the pod model says, with the same VMEM (everything that could still move
// has moved). Size faults are left out: what a faulting chip's other link instructions had
// done by then depends on timing, in the RTL as in any pod.
TEST(Ici, RandomStoppedChipMatchesPodModel) {
  const tpu::PodTopology topos[] = {tpu::PodTopology::ring(2), tpu::PodTopology::ring(4),
                                    tpu::PodTopology::torus(2, 2)};
  for (uint32_t s = 0; s < random_count() / 2; ++s) {
    const auto& topo = topos[s % 3];
    std::mt19937 rng(3000 + s);
    Pod pod(topo, 1 + s % 11, 3000 + s, s % 2 ? 0.6 : 1.0);
    random_programs(pod, topo, rng, 6 + rnd(rng) % 10, 1 + rnd(rng) % 6);
    uint32_t victim = rnd(rng) % topo.chips();
    while (pod.chip(victim).prog.empty()) victim = (victim + 1) % topo.chips();
    auto& prog = pod.chip(victim).prog;
    prog.resize(rnd(rng) % prog.size());
    expect_same_outcome(pod, topo, rng, topo.name() + " seed " + std::to_string(3000 + s));
  }
}

// One beat per cycle once a message flows: R rows take R * BPR cycles plus the round trip
// of the rendezvous and a few cycles of pipeline, with the VMEM ports always granted.
TEST(Ici, OneBeatPerCycle) {
  const auto topo = tpu::PodTopology::ring(2);
  for (uint32_t reduce = 0; reduce < 3; ++reduce) {
    constexpr uint32_t kLat = 8;
    Pod pod(topo, kLat, 11, 1.0);
    add_op(pod.chip(0), LinkOp{false, 0, 0, 48, 0, 0});
    add_op(pod.chip(1), LinkOp{true, 1, 8, 48, reduce, 0});
    const int64_t cycles = pod.run();
    const int64_t ideal = 48 * kBpr + 2 * kLat;
    const int64_t floor_cycles = ideal;  // copies and reduces alike
    EXPECT_GE(cycles, floor_cycles);
    EXPECT_LE(cycles, floor_cycles + 8) << "reduce " << reduce;
    EXPECT_EQ(pod.beats(), 48u * kBpr);
  }
}

// ---- the collective programs of driver/collectives.h on the RTL link units

// Chip r's program as link operations (the collectives are ici_send / ici_recv and a halt).
void load_program(Chip& c, const std::vector<Instruction>& prog) {
  for (const Instruction& in : prog) {
    if (const auto* s = std::get_if<IciSend>(&in)) {
      add_op(c, LinkOp{false, s->link, s->vmem_addr, s->rows, 0, 0});
    } else if (const auto* v = std::get_if<IciRecv>(&in)) {
      add_op(c, LinkOp{true, v->link, v->vmem_addr, v->rows, v->reduce, 0});
    } else if (!std::holds_alternative<tpu::Halt>(in)) {
      ADD_FAILURE() << "a collective program holds an instruction other than a link one";
    }
  }
}

struct CollectiveRun {
  int64_t rtl_cycles = 0;
  uint64_t model_cycles = 0;
};

CollectiveRun run_collective(const tpu::PodTopology& topo, tpu::CollectiveKind kind,
                             tpu::CollectiveDtype dtype, uint32_t rows, uint32_t latency,
                             uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t vmem = std::max<uint32_t>(kRows, rows);
  Pod pod(topo, latency, seed, 1.0, vmem);
  tpu::LinkTiming timing;
  timing.bytes_per_cycle = kWidth / 8;
  timing.latency = latency;
  tpu::PodModel gold(topo, params(vmem), timing);
  fill(pod, gold, rng);
  std::vector<std::vector<Instruction>> progs;
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    switch (kind) {
      case tpu::CollectiveKind::AllReduce:
        progs.push_back(tpu::all_reduce_program(topo, params(vmem), r, 0, rows, dtype));
        break;
      case tpu::CollectiveKind::ReduceScatter:
        progs.push_back(tpu::reduce_scatter_program(topo, params(vmem), r, 0, rows, dtype));
        break;
      case tpu::CollectiveKind::AllGather:
        progs.push_back(tpu::all_gather_program(topo, params(vmem), r, 0, rows));
        break;
    }
    load_program(pod.chip(r), progs.back());
  }
  const tpu::PodResult res = gold.run(progs);
  EXPECT_TRUE(res.ok()) << res.message;
  CollectiveRun out;
  out.rtl_cycles = pod.run();
  out.model_cycles = res.cycles;
  EXPECT_GE(out.rtl_cycles, 0);
  for (uint32_t r = 0; r < topo.chips(); ++r) EXPECT_FALSE(pod.chip(r).err) << "chip " << r;
  expect_vmem_equal(pod, gold, topo.name() + " rows " + std::to_string(rows));
  return out;
}

// Every collective of driver/collectives.h, fp32 and int32, on rings of 2 and 4 and the 2x2
// torus (its 2-D reduce-scatter and all-gather too), even and uneven chunks: every chip's VMEM
// equals the pod model's bit for bit.
TEST(IciCollectives, MatchPodModel) {
  const tpu::PodTopology topos[] = {tpu::PodTopology::ring(2), tpu::PodTopology::ring(4),
                                    tpu::PodTopology::torus(2, 2)};
  uint32_t seed = 100;
  for (const auto& topo : topos) {
    for (uint32_t rows : {3u, 16u, 21u}) {
      for (auto dtype : {tpu::CollectiveDtype::Fp32, tpu::CollectiveDtype::Int32}) {
        SCOPED_TRACE(topo.name() + " rows " + std::to_string(rows) + " " +
                     std::string(tpu::dtype_name(dtype)));
        run_collective(topo, tpu::CollectiveKind::AllReduce, dtype, rows, 1 + seed % 13, seed);
        ++seed;
        run_collective(topo, tpu::CollectiveKind::ReduceScatter, dtype, rows, 7, seed++);
        run_collective(topo, tpu::CollectiveKind::AllGather, dtype, rows, 5, seed++);
      }
    }
  }
}

// All-reduce over the RTL links against the pod model's estimate and the links' peak:
// busbw = S / t * 2(P-1)/P bytes per cycle (nccl-tests), the link carries IciWidth / 8 bytes
// per cycle. TPU_ICI_VERBOSE prints the table (docs/pod.md "The RTL link unit").
TEST(IciCollectives, AllReduceBusBandwidth) {
  constexpr uint32_t kLat = 64;
  const double peak = kWidth / 8.0;
  const tpu::PodTopology topos[] = {tpu::PodTopology::ring(2), tpu::PodTopology::ring(4),
                                    tpu::PodTopology::torus(2, 2)};
  for (const auto& topo : topos) {
    for (uint32_t rows : {16u, 64u, 256u, 1024u, 4096u}) {
      const CollectiveRun run = run_collective(topo, tpu::CollectiveKind::AllReduce,
                                               tpu::CollectiveDtype::Fp32, rows, kLat, rows);
      const double bytes = 4.0 * N * rows;
      const double factor = tpu::busbw_factor(tpu::CollectiveKind::AllReduce, topo.chips());
      const double busbw = bytes / static_cast<double>(run.rtl_cycles) * factor;
      const double model = bytes / static_cast<double>(run.model_cycles) * factor;
      if (std::getenv("TPU_ICI_VERBOSE")) {
        std::printf(
            "%-10s %8.0f bytes: RTL %7lld cycles busbw %5.1f %%, model %7llu cycles %5.1f %%\n",
            topo.name().c_str(), bytes, static_cast<long long>(run.rtl_cycles), 100 * busbw / peak,
            static_cast<unsigned long long>(run.model_cycles), 100 * model / peak);
      }
      // Never faster than the links allow: each chip sends 2(P-1)/P of the buffer.
      EXPECT_LE(busbw, peak * 1.0001) << topo.name() << " " << bytes;
    }
  }
}

}  // namespace

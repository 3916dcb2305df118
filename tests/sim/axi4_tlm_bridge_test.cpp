// SPDX-License-Identifier: Apache-2.0
// Axi4ToTlmBridge at 32, 64 and 128 bits (uint32_t, uint64_t and sc_bv<128> pins) against a
// pin-level test master, with and without backpressure. No RTL involved.
//
// SystemC elaborates once per process: one design holds a master+bridge+memory harness per
// width, built on first use and shared by every test (ctest runs each test in its own
// process; running the binary directly runs them all on the one design).
#include "axi4_tlm_bridge.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "host_memory_model.h"
#include "pin_types.h"
#include "random_stall.h"

namespace tpu::sim {
namespace {

constexpr uint64_t kPeriodPs = 1000;

struct Op {
  bool write = false;
  uint32_t addr = 0;
  unsigned beats = 1;
  uint32_t burst = 1;            // AxBURST (1 = INCR)
  std::vector<uint8_t> data;     // write data, beats * beat bytes
  std::vector<uint8_t> strobes;  // per byte 0/1; empty = all enabled
  // results
  std::vector<uint8_t> read_data;
  std::vector<uint32_t> resps;  // one per R beat, or the single BRESP
  bool rlast_ok = true;
  uint64_t addr_cycle = 0;   // cycle of the AR/AW handshake
  uint64_t first_cycle = 0;  // cycle of the first R beat / the B handshake
  uint64_t last_cycle = 0;   // cycle of the last R beat / the B handshake
  std::vector<uint64_t> beat_cycles;
  bool done = false;
};

// One op at a time; valid held until ready, ready/valid randomised with the stall coin.
template <unsigned W>
struct TestAxiMaster : sc_core::sc_module {
  using Data = PinType_t<W>;
  using Strb = PinType_t<W / 8>;
  static constexpr unsigned kBeatBytes = W / 8;

  sc_core::sc_in<bool> clk;
  sc_core::sc_out<uint32_t> araddr, arlen, arsize, arburst;
  sc_core::sc_out<bool> arvalid;
  sc_core::sc_in<bool> arready;
  sc_core::sc_in<Data> rdata;
  sc_core::sc_in<uint32_t> rresp;
  sc_core::sc_in<bool> rlast, rvalid;
  sc_core::sc_out<bool> rready;
  sc_core::sc_out<uint32_t> awaddr, awlen, awsize, awburst;
  sc_core::sc_out<bool> awvalid;
  sc_core::sc_in<bool> awready;
  sc_core::sc_out<Data> wdata;
  sc_core::sc_out<Strb> wstrb;
  sc_core::sc_out<bool> wlast, wvalid;
  sc_core::sc_in<bool> wready;
  sc_core::sc_in<uint32_t> bresp;
  sc_core::sc_in<bool> bvalid;
  sc_core::sc_out<bool> bready;

  std::vector<Op>* ops = nullptr;
  size_t current = 0;
  RandomStall stall;
  uint64_t cycle = 0;

  SC_HAS_PROCESS(TestAxiMaster);
  explicit TestAxiMaster(sc_core::sc_module_name n) : sc_core::sc_module(n) {
    SC_METHOD(on_clock);
    sensitive << clk.pos();
    dont_initialize();
  }

  bool idle() const { return ops == nullptr || current >= ops->size(); }
  void start(std::vector<Op>* list) {
    ops = list;
    current = 0;
    addr_done_ = false;
    beat_ = 0;
  }

 private:
  static uint32_t size_code() {
    uint32_t s = 0;
    while ((1u << s) < kBeatBytes) ++s;
    return s;
  }

  void on_clock() {
    ++cycle;
    if (idle()) return;
    Op& op = (*ops)[current];
    if (!op.write) {
      if (arvalid_q_ && arready.read()) {
        addr_done_ = true;
        arvalid_q_ = false;
        op.addr_cycle = cycle;
      }
      if (rready_q_ && rvalid.read()) {
        const size_t off = op.read_data.size();
        op.read_data.resize(off + kBeatBytes);
        pin_to_bytes(rdata.read(), &op.read_data[off], kBeatBytes);
        op.resps.push_back(rresp.read());
        if (rlast.read() != (beat_ + 1 == op.beats)) op.rlast_ok = false;
        if (beat_ == 0) op.first_cycle = cycle;
        op.beat_cycles.push_back(cycle);
        if (++beat_ == op.beats) return finish(op);
      }
      if (!addr_done_ && !arvalid_q_ && !stall.stall()) {
        araddr.write(op.addr);
        arlen.write(op.beats - 1);
        arsize.write(size_code());
        arburst.write(op.burst);
        arvalid_q_ = true;
      }
      rready_q_ = addr_done_ && !stall.stall();
    } else {
      if (awvalid_q_ && awready.read()) {
        addr_done_ = true;
        awvalid_q_ = false;
        op.addr_cycle = cycle;
      }
      if (wvalid_q_ && wready.read()) {
        ++beat_;
        wvalid_q_ = false;
      }
      if (bready_q_ && bvalid.read()) {
        op.resps.push_back(bresp.read());
        op.first_cycle = op.last_cycle = cycle;
        return finish(op);
      }
      if (!addr_done_ && !awvalid_q_ && !stall.stall()) {
        awaddr.write(op.addr);
        awlen.write(op.beats - 1);
        awsize.write(size_code());
        awburst.write(op.burst);
        awvalid_q_ = true;
      }
      if (beat_ < op.beats && !wvalid_q_ && !stall.stall()) {
        Data d{};
        pin_from_bytes(&op.data[beat_ * kBeatBytes], kBeatBytes, d);
        uint64_t strb = 0;
        for (unsigned i = 0; i < kBeatBytes; ++i)
          if (op.strobes.empty() || op.strobes[beat_ * kBeatBytes + i]) strb |= uint64_t{1} << i;
        wdata.write(d);
        wstrb.write(static_cast<Strb>(strb));
        wlast.write(beat_ + 1 == op.beats);
        wvalid_q_ = true;
      }
      bready_q_ = addr_done_ && beat_ == op.beats && !stall.stall();
    }
    drive();
  }

  void finish(Op& op) {
    if (op.write == false) op.last_cycle = cycle;
    op.done = true;
    ++current;
    addr_done_ = false;
    beat_ = 0;
    arvalid_q_ = rready_q_ = awvalid_q_ = wvalid_q_ = bready_q_ = false;
    drive();
  }

  void drive() {
    arvalid.write(arvalid_q_);
    rready.write(rready_q_);
    awvalid.write(awvalid_q_);
    wvalid.write(wvalid_q_);
    bready.write(bready_q_);
  }

  bool addr_done_ = false;
  unsigned beat_ = 0;
  bool arvalid_q_ = false, rready_q_ = false, awvalid_q_ = false, wvalid_q_ = false,
       bready_q_ = false;
};

template <unsigned W>
struct Harness : sc_core::sc_module {
  using Data = PinType_t<W>;
  using Strb = PinType_t<W / 8>;
  sc_core::sc_signal<uint32_t> araddr, arlen, arsize, arburst, rresp, awaddr, awlen, awsize,
      awburst, bresp;
  sc_core::sc_signal<bool> arvalid, arready, rlast, rvalid, rready, awvalid, awready;
  sc_core::sc_signal<bool> wlast, wvalid, wready, bvalid, bready;
  sc_core::sc_signal<Data> rdata, wdata;
  sc_core::sc_signal<Strb> wstrb;
  TestAxiMaster<W> master;
  Axi4ToTlmBridge<W> bridge;
  HostMemoryModel memory;

  Harness(sc_core::sc_module_name n, sc_core::sc_clock& clk, sc_core::sc_signal<bool>& rst_n)
      : sc_core::sc_module(n),
        master("master"),
        bridge("bridge", sc_core::sc_time::from_value(kPeriodPs)),
        memory("memory", sc_core::sc_time::from_value(kPeriodPs)) {
    master.clk(clk);
    bridge.clk(clk);
    bridge.rst_n(rst_n);
    master.araddr(araddr);
    bridge.araddr(araddr);
    master.arlen(arlen);
    bridge.arlen(arlen);
    master.arsize(arsize);
    bridge.arsize(arsize);
    master.arburst(arburst);
    bridge.arburst(arburst);
    master.arvalid(arvalid);
    bridge.arvalid(arvalid);
    master.arready(arready);
    bridge.arready(arready);
    master.rdata(rdata);
    bridge.rdata(rdata);
    master.rresp(rresp);
    bridge.rresp(rresp);
    master.rlast(rlast);
    bridge.rlast(rlast);
    master.rvalid(rvalid);
    bridge.rvalid(rvalid);
    master.rready(rready);
    bridge.rready(rready);
    master.awaddr(awaddr);
    bridge.awaddr(awaddr);
    master.awlen(awlen);
    bridge.awlen(awlen);
    master.awsize(awsize);
    bridge.awsize(awsize);
    master.awburst(awburst);
    bridge.awburst(awburst);
    master.awvalid(awvalid);
    bridge.awvalid(awvalid);
    master.awready(awready);
    bridge.awready(awready);
    master.wdata(wdata);
    bridge.wdata(wdata);
    master.wstrb(wstrb);
    bridge.wstrb(wstrb);
    master.wlast(wlast);
    bridge.wlast(wlast);
    master.wvalid(wvalid);
    bridge.wvalid(wvalid);
    master.wready(wready);
    bridge.wready(wready);
    master.bresp(bresp);
    bridge.bresp(bresp);
    master.bvalid(bvalid);
    bridge.bvalid(bvalid);
    master.bready(bready);
    bridge.bready(bready);
    bridge.socket.bind(memory.socket);
  }

  // Fresh memory with one region, timing and backpressure as given.
  void prepare(HostMemoryTiming timing, double backpressure, uint64_t seed) {
    memory.clear();
    memory.set_timing(timing);
    memory.add_region(0x0, 0x10000, "dram");
    bridge.set_backpressure(backpressure, seed);
    bridge.clear_protocol_violations();
    master.stall.configure(backpressure, seed + 1);
  }

  void run(std::vector<Op>& ops) {
    master.start(&ops);
    for (int chunk = 0; chunk < 1000 && !master.idle(); ++chunk)
      sc_core::sc_start(sc_core::sc_time::from_value(100 * kPeriodPs));
    ASSERT_TRUE(master.idle()) << "AXI ops did not finish within 100000 cycles";
    master.ops = nullptr;
  }
};

struct Design : sc_core::sc_module {
  sc_core::sc_clock clk;
  sc_core::sc_signal<bool> rst_n;
  Harness<32> h32;
  Harness<64> h64;
  Harness<128> h128;

  explicit Design(sc_core::sc_module_name n)
      : sc_core::sc_module(n),
        clk("clk", sc_core::sc_time::from_value(kPeriodPs), 0.5,
            sc_core::sc_time::from_value(kPeriodPs / 4), true),
        rst_n("rst_n", false),
        h32("h32", clk, rst_n),
        h64("h64", clk, rst_n),
        h128("h128", clk, rst_n) {}

  template <unsigned W>
  Harness<W>& harness() {
    if constexpr (W == 32)
      return h32;
    else if constexpr (W == 64)
      return h64;
    else
      return h128;
  }
};

Design& design() {
  static Design* d = [] {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    auto* top = new Design("design");  // never deleted: one elaboration per process
    sc_core::sc_start(sc_core::sc_time::from_value(3 * kPeriodPs));
    top->rst_n.write(true);
    sc_core::sc_start(sc_core::sc_time::from_value(2 * kPeriodPs));
    return top;
  }();
  return *d;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 8));
  return v;
}

Op read_op(uint32_t addr, unsigned beats) {
  Op op;
  op.addr = addr;
  op.beats = beats;
  return op;
}

Op write_op(uint32_t addr, std::vector<uint8_t> data, unsigned beat_bytes) {
  Op op;
  op.write = true;
  op.addr = addr;
  op.beats = static_cast<unsigned>(data.size() / beat_bytes);
  op.data = std::move(data);
  return op;
}

template <class WidthT>
class Axi4ToTlmBridgeTest : public ::testing::Test {
 protected:
  static constexpr unsigned W = WidthT::value;
  static constexpr unsigned kBeatBytes = W / 8;
  Harness<W>& h() { return design().template harness<W>(); }
};

using Widths =
    ::testing::Types<std::integral_constant<unsigned, 32>, std::integral_constant<unsigned, 64>,
                     std::integral_constant<unsigned, 128>>;
struct WidthNames {
  template <class T>
  static std::string GetName(int) {
    return "w" + std::to_string(T::value);
  }
};
TYPED_TEST_SUITE(Axi4ToTlmBridgeTest, Widths, WidthNames);

TYPED_TEST(Axi4ToTlmBridgeTest, WriteThenReadBackWithAndWithoutBackpressure) {
  constexpr unsigned B = TestFixture::kBeatBytes;
  uint64_t cycles_without_backpressure = 0;
  for (double bp : {0.0, 0.4}) {
    SCOPED_TRACE("backpressure " + std::to_string(bp));
    auto& h = this->h();
    const uint64_t begin = h.master.cycle;
    h.prepare({3, 8}, bp, 42);
    const auto small = pattern(4 * B, 1);
    const auto full = pattern(256 * B, 2);  // longest AXI4 burst, ends on a 4 KiB boundary
    std::vector<Op> ops = {write_op(0x1000, small, B), read_op(0x1000, 4),
                           write_op(0x2000, full, B), read_op(0x2000, 256), read_op(0x1000, 1)};
    h.run(ops);
    EXPECT_EQ(ops[0].resps, std::vector<uint32_t>{kAxiOkay});
    EXPECT_EQ(ops[1].read_data, small);
    EXPECT_EQ(ops[1].resps, std::vector<uint32_t>(4, kAxiOkay));
    EXPECT_TRUE(ops[1].rlast_ok);
    EXPECT_EQ(ops[3].read_data, full);
    EXPECT_TRUE(ops[3].rlast_ok);
    EXPECT_EQ(ops[4].read_data, std::vector<uint8_t>(small.begin(), small.begin() + B));
    EXPECT_EQ(h.memory.read(0x2000, full.size()), full);
    EXPECT_TRUE(h.bridge.protocol_violations().empty());
    const uint64_t cycles = h.master.cycle - begin;
    if (bp == 0.0)
      cycles_without_backpressure = cycles;
    else
      EXPECT_GT(cycles, cycles_without_backpressure + 100) << "backpressure did not slow the bus";
  }
}

TYPED_TEST(Axi4ToTlmBridgeTest, WriteStrobesMaskBytes) {
  constexpr unsigned B = TestFixture::kBeatBytes;
  auto& h = this->h();
  h.prepare({1, 0}, 0.0, 1);
  h.memory.write(0x100, std::vector<uint8_t>(2 * B, 0xEE));
  Op op = write_op(0x100, pattern(2 * B, 9), B);
  op.strobes.resize(2 * B);
  for (unsigned i = 0; i < 2 * B; ++i) op.strobes[i] = (i % 3) == 0;
  std::vector<Op> ops = {op};
  h.run(ops);
  const auto got = h.memory.read(0x100, 2 * B);
  for (unsigned i = 0; i < 2 * B; ++i)
    EXPECT_EQ(got[i], op.strobes[i] ? op.data[i] : 0xEE) << "byte " << i;
}

TYPED_TEST(Axi4ToTlmBridgeTest, UnmappedAddressAnswersDecerrOnEveryBeat) {
  constexpr unsigned B = TestFixture::kBeatBytes;
  for (double bp : {0.0, 0.4}) {
    auto& h = this->h();
    h.prepare({2, 16}, bp, 7);
    h.memory.clear();
    h.memory.add_region(0x0, 0x1800, "dram");
    std::vector<Op> ops = {read_op(0x20000, 4), write_op(0x20000, pattern(2 * B, 3), B),
                           read_op(0x1800 - B, 2)};  // first beat mapped, second not
    h.run(ops);
    EXPECT_EQ(ops[0].resps, std::vector<uint32_t>(4, kAxiDecErr));
    EXPECT_EQ(ops[0].read_data, std::vector<uint8_t>(4 * B, 0));
    EXPECT_TRUE(ops[0].rlast_ok);
    EXPECT_EQ(ops[1].resps, std::vector<uint32_t>{kAxiDecErr});
    EXPECT_EQ(ops[2].resps, std::vector<uint32_t>(2, kAxiDecErr));  // straddles the region end
  }
}

TYPED_TEST(Axi4ToTlmBridgeTest, InjectedErrorAnswersSlverrAndWritesNothing) {
  constexpr unsigned B = TestFixture::kBeatBytes;
  auto& h = this->h();
  h.prepare({2, 16}, 0.3, 11);
  h.memory.inject_error(0x3000, 1);
  std::vector<Op> ops = {write_op(0x3000, pattern(4 * B, 5), B), read_op(0x3000, 4),
                         read_op(0x3000 + 4 * B, 1)};
  h.run(ops);
  EXPECT_EQ(ops[0].resps, std::vector<uint32_t>{kAxiSlvErr});
  EXPECT_EQ(ops[1].resps, std::vector<uint32_t>(4, kAxiSlvErr));
  EXPECT_EQ(ops[2].resps, std::vector<uint32_t>{kAxiOkay});
  EXPECT_EQ(h.memory.read(0x3000, 4 * B), std::vector<uint8_t>(4 * B, 0));
}

TYPED_TEST(Axi4ToTlmBridgeTest, ReadLatencyFollowsMemoryTiming) {
  auto& h = this->h();
  // Unlimited bandwidth: the last beat lands 20 cycles after AR plus one registered cycle,
  // and the 8 beats stream back to back ahead of it.
  h.prepare({20, 0}, 0.0, 1);
  std::vector<Op> ops = {read_op(0x0, 8), read_op(0x0, 1)};
  h.run(ops);
  EXPECT_EQ(ops[0].last_cycle - ops[0].addr_cycle, 21u);
  EXPECT_EQ(ops[0].last_cycle - ops[0].first_cycle, 7u);
  EXPECT_EQ(ops[1].last_cycle - ops[1].addr_cycle, 21u);
  // Limited bandwidth: 8 beats of W bits at 1 byte/cycle take 8*W/8 cycles on the port.
  h.prepare({20, 1}, 0.0, 1);
  std::vector<Op> slow = {read_op(0x0, 8)};
  h.run(slow);
  EXPECT_EQ(slow[0].last_cycle - slow[0].addr_cycle, 20u + TestFixture::W + 1);
}

TYPED_TEST(Axi4ToTlmBridgeTest, WriteResponseFollowsMemoryLatency) {
  constexpr unsigned B = TestFixture::kBeatBytes;
  auto& h = this->h();
  h.prepare({15, 0}, 0.0, 1);
  std::vector<Op> ops = {write_op(0x40 * B, pattern(B, 1), B)};
  h.run(ops);
  // AW and W go together; the burst is performed at the W handshake, B follows 15 + 1 later.
  EXPECT_EQ(ops[0].last_cycle - ops[0].addr_cycle, 16u);
}

TYPED_TEST(Axi4ToTlmBridgeTest, ProtocolViolationsAreRecorded) {
  constexpr unsigned B = TestFixture::kBeatBytes;
  auto& h = this->h();
  h.prepare({1, 0}, 0.0, 1);
  Op crossing = read_op(0x1000 - B, 2);  // crosses the 4 KiB boundary at 0x1000
  Op wrap = read_op(0x0, 2);
  wrap.burst = 2;  // WRAP
  std::vector<Op> ops = {crossing, wrap};
  h.run(ops);
  const auto& v = h.bridge.protocol_violations();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NE(v[0].find("crosses a 4 KiB boundary"), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("ARBURST=2"), std::string::npos) << v[1];
}

}  // namespace
}  // namespace tpu::sim

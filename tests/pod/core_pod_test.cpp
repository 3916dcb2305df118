// SPDX-License-Identifier: Apache-2.0
// Whole Verilated chips joined by links (issue 31): P instances of tpu_core built with
// IciLinks = 2 (N = 4, VmemRows = 256, IciWidth = 64: two beats per row) in one process, each
// with its own host memory behind a minimal AXI slave, their link pins joined as a ring by
// sim/ici_fabric.h (latency, one beat per cycle, the deadlock rule driving ici_deadlock_i from
// ici_wait_o). Every program is a whole chip program (read_vmem, link instructions, write_vmem,
// halt) fetched over AXI; the outcome (done or error code and index) and the host bytes the
// chips wrote are compared with the pod of golden models (driver/pod.h) bit for bit.
// This checks the link unit's wiring in the chip: the decoder, the controller's issue and
// hazards (a write_vmem of the rows a receive writes waits for it), the VMEM clients, the
// errors. Label pod.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "Vtpu_core.h"
#include "assembler.h"
#include "ici_fabric.h"
#include "isa.h"
#include "pod.h"
#include "port_fields.h"
#include "program.h"
#include "verilated.h"

namespace {

constexpr uint32_t N = 4;
constexpr uint32_t kLinks = 2;
constexpr uint32_t kWidth = 64;             // IciWidth of the build
constexpr uint32_t kBpr = 32 * N / kWidth;  // beats per row
constexpr uint32_t kVmemRows = 256;
constexpr uint32_t kBeat = 4;             // AXI data bytes (min(8N, 128) bits at N = 4)
constexpr uint32_t kVBeat = 4 * N;        // the VMEM port's data bytes (one fp32 VMEM row)
constexpr uint32_t kMemSize = 64 * 1024;  // host memory of each chip, from address 0
constexpr uint32_t kData = 0x1000;        // input rows
constexpr uint32_t kOut = 0x6000;         // rows written back
constexpr uint32_t kOutSize = 0x4000;
constexpr uint64_t kCycleLimit = 200000;

// Register offsets (docs/registers.csv).
constexpr uint32_t kCtrl = 0x020, kStatus = 0x024, kErrCode = 0x028, kErrPc = 0x02C;
constexpr uint32_t kParamIciLinks = 0x038, kIciLinkUp = 0x03C;
constexpr uint32_t kPc = 0x048;
constexpr uint32_t kCmdAddr = 0x040, kCmdCount = 0x044, kWinBase = 0x080, kWinSize = 0x084;

using tpu::sim::IciChannel;
using tpu::sim::IciFabric;

tpu::ChipParams chip_params() {
  tpu::ChipParams p = tpu::ChipParams::training(N);
  p.ub_rows = 1024;
  p.acc_rows = 256;
  p.vmem_rows = kVmemRows;
  p.ici_links = kLinks;
  return p;
}

// One Verilated chip with its host memory and AXI slave.
// One AXI4 slave port's state: accepted bursts and the beat counts (always ready, one read
// beat per cycle, responses OKAY).
struct AxiSlave {
  struct Burst {
    uint32_t addr, beats;
  };
  std::deque<Burst> rd, wr;  // accepted AR / AW
  uint32_t rd_beat = 0, wr_beat = 0, bresp_pending = 0;
};

struct Chip {
  std::unique_ptr<VerilatedContext> ctx = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vtpu_core> m = std::make_unique<Vtpu_core>(ctx.get());
  std::vector<uint8_t> mem = std::vector<uint8_t>(kMemSize, 0);
  AxiSlave axi, vaxi;      // m_axi_* (host port) and m_vaxi_* (the VMEM port), one memory
  bool axi_error = false;  // an access outside the memory (reported by the test)
};

// The slave's outputs of a port whose beats are `beat` bytes (data as a field of `rdata`).
template <typename Bit, typename Data>
void drive_slave(AxiSlave& s, const std::vector<uint8_t>& mem, bool& error, uint32_t beat,
                 Bit& arready, Bit& awready, Bit& wready, Bit& rvalid, Bit& rresp, Data& rdata,
                 Bit& rlast, Bit& bvalid, Bit& bresp) {
  arready = 1;
  awready = 1;
  wready = !s.wr.empty();
  rvalid = !s.rd.empty();
  rresp = 0;
  rlast = 0;
  for (uint32_t w = 0; w < beat / 4; ++w) set_field(rdata, 32 * w, 32, 0);
  if (!s.rd.empty()) {
    const uint32_t a = s.rd.front().addr + beat * s.rd_beat;
    if (a + beat <= kMemSize) {
      for (uint32_t w = 0; w < beat / 4; ++w) {
        uint32_t v = 0;
        std::memcpy(&v, &mem[a + 4 * w], 4);
        set_field(rdata, 32 * w, 32, v);
      }
    } else {
      error = true;
    }
    rlast = s.rd_beat + 1 == s.rd.front().beats;
  }
  bvalid = s.bresp_pending != 0;
  bresp = 0;
}

// The handshakes of the cycle on one port (after eval, before the edge).
template <typename Bit, typename Addr, typename Len, typename Data, typename Strb>
void observe_slave(AxiSlave& s, std::vector<uint8_t>& mem, bool& error, uint32_t beat, Bit rvalid,
                   Bit rready, Bit arvalid, Bit arready, Addr araddr, Len arlen, Bit wvalid,
                   Bit wready, const Data& wdata, Strb wstrb, Bit awvalid, Bit awready, Addr awaddr,
                   Len awlen, Bit bvalid, Bit bready) {
  if (rvalid && rready && ++s.rd_beat == s.rd.front().beats) {
    s.rd.pop_front();
    s.rd_beat = 0;
  }
  if (arvalid && arready) s.rd.push_back({araddr, uint32_t{arlen} + 1});
  if (wvalid && wready) {
    const uint32_t a = s.wr.front().addr + beat * s.wr_beat;
    for (uint32_t b = 0; b < beat; ++b) {
      if (((wstrb >> b) & 1u) == 0) continue;
      if (a + b < kMemSize) {
        mem[a + b] = static_cast<uint8_t>(get_field(wdata, 8 * b, 8));
      } else {
        error = true;
      }
    }
    if (++s.wr_beat == s.wr.front().beats) {
      s.wr.pop_front();
      s.wr_beat = 0;
      ++s.bresp_pending;
    }
  }
  if (awvalid && awready) s.wr.push_back({awaddr, uint32_t{awlen} + 1});
  if (bvalid && bready) --s.bresp_pending;
}

class CorePod {
 public:
  CorePod(uint32_t chips, uint32_t latency)
      : topo_(tpu::PodTopology::ring(chips)),
        chips_(chips),
        fabric_(chips, kLinks, wiring(), latency, kBpr) {
    for (uint32_t r = 0; r < chips; ++r) {
      Vtpu_core& m = *chips_[r].m;
      m.clk_i = 0;
      m.rst_ni = 0;
      uint32_t up = 0;
      for (uint32_t l = 0; l < kLinks; ++l) up |= fabric_.up(r, l) ? 1u << l : 0u;
      m.ici_link_up_i = static_cast<uint8_t>(up);
      m.eval();
      for (int i = 0; i < 3; ++i) clock(r);
      m.rst_ni = 1;
      clock(r);
    }
  }

  Chip& chip(uint32_t r) { return chips_[r]; }
  uint64_t cycles() const { return cycles_; }

  // AXI4-Lite register access of chip r alone (set-up and read-back, the links idle).
  void write_reg(uint32_t r, uint32_t addr, uint32_t value) {
    Vtpu_core& m = *chips_[r].m;
    m.s_axil_awaddr_i = static_cast<uint16_t>(addr);
    m.s_axil_wdata_i = value;
    m.s_axil_wstrb_i = 0xF;
    m.s_axil_awvalid_i = 1;
    m.s_axil_wvalid_i = 1;
    m.s_axil_bready_i = 1;
    for (int i = 0; i < 100; ++i) {
      drive(r);
      m.eval();
      const bool aw = m.s_axil_awvalid_i && m.s_axil_awready_o;
      const bool w = m.s_axil_wvalid_i && m.s_axil_wready_o;
      const bool b = m.s_axil_bvalid_o;
      clock_edge(r);
      if (aw) m.s_axil_awvalid_i = 0;
      if (w) m.s_axil_wvalid_i = 0;
      if (b) return;
    }
    ADD_FAILURE() << "register write " << addr << " never answered";
  }
  uint32_t read_reg(uint32_t r, uint32_t addr) {
    Vtpu_core& m = *chips_[r].m;
    m.s_axil_araddr_i = static_cast<uint16_t>(addr);
    m.s_axil_arvalid_i = 1;
    m.s_axil_rready_i = 1;
    for (int i = 0; i < 100; ++i) {
      drive(r);
      m.eval();
      const bool ar = m.s_axil_arvalid_i && m.s_axil_arready_o;
      const bool rv = m.s_axil_rvalid_o;
      const uint32_t data = m.s_axil_rdata_o;
      clock_edge(r);
      if (ar) m.s_axil_arvalid_i = 0;
      if (rv) return data;
    }
    ADD_FAILURE() << "register read " << addr << " never answered";
    return 0;
  }

  // Loads each chip's program and starts them all; runs until every chip has stopped.
  // Returns false if the pod did not stop within the cycle limit.
  bool run(const std::vector<std::vector<tpu::Instruction>>& programs) {
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      const std::vector<uint8_t> code = tpu::encode_program(programs[r]);
      std::memcpy(chips_[r].mem.data(), code.data(), code.size());
      write_reg(r, kWinBase, 0);
      write_reg(r, kWinSize, kMemSize);
      write_reg(r, kCmdAddr, 0);
      write_reg(r, kCmdCount, static_cast<uint32_t>(programs[r].size()));
    }
    // START on every chip in the same cycle.
    for (Chip& c : chips_) {
      c.m->s_axil_awaddr_i = kCtrl;
      c.m->s_axil_wdata_i = 1;
      c.m->s_axil_wstrb_i = 0xF;
      c.m->s_axil_awvalid_i = 1;
      c.m->s_axil_wvalid_i = 1;
      c.m->s_axil_bready_i = 1;
    }
    const uint64_t start = cycles_;
    bool started = false;
    while (cycles_ - start < kCycleLimit) {
      if (started && !any_busy()) {
        // STATUS.DONE / ERROR are set in the cycle after BUSY falls.
        for (int i = 0; i < 2; ++i) step();
        return true;
      }
      started = started || any_busy();
      step();
    }
    return false;
  }

 private:
  std::vector<std::optional<IciFabric::End>> wiring() const {
    std::vector<std::optional<IciFabric::End>> peers;
    for (uint32_t c = 0; c < topo_.chips(); ++c) {
      for (uint32_t l = 0; l < kLinks; ++l) {
        const auto p = topo_.peer(c, l);
        peers.push_back(p ? std::optional<IciFabric::End>(IciFabric::End{p->chip, p->link})
                          : std::nullopt);
      }
    }
    return peers;
  }

  bool any_busy() const {
    for (const Chip& c : chips_) {
      if (c.m->trace_run_o) return true;
    }
    return false;
  }

  // The AXI slaves' outputs for this cycle (always ready; one read beat per cycle).
  void drive(uint32_t r) {
    Chip& c = chips_[r];
    Vtpu_core& m = *c.m;
    drive_slave(c.axi, c.mem, c.axi_error, kBeat, m.m_axi_arready_i, m.m_axi_awready_i,
                m.m_axi_wready_i, m.m_axi_rvalid_i, m.m_axi_rresp_i, m.m_axi_rdata_i,
                m.m_axi_rlast_i, m.m_axi_bvalid_i, m.m_axi_bresp_i);
    drive_slave(c.vaxi, c.mem, c.axi_error, kVBeat, m.m_vaxi_arready_i, m.m_vaxi_awready_i,
                m.m_vaxi_wready_i, m.m_vaxi_rvalid_i, m.m_vaxi_rresp_i, m.m_vaxi_rdata_i,
                m.m_vaxi_rlast_i, m.m_vaxi_bvalid_i, m.m_vaxi_bresp_i);
  }

  // The AXI handshakes of the cycle (after eval, before the edge).
  void axi_observe(uint32_t r) {
    Chip& c = chips_[r];
    Vtpu_core& m = *c.m;
    observe_slave(c.axi, c.mem, c.axi_error, kBeat, m.m_axi_rvalid_i, m.m_axi_rready_o,
                  m.m_axi_arvalid_o, m.m_axi_arready_i, m.m_axi_araddr_o, m.m_axi_arlen_o,
                  m.m_axi_wvalid_o, m.m_axi_wready_i, m.m_axi_wdata_o, m.m_axi_wstrb_o,
                  m.m_axi_awvalid_o, m.m_axi_awready_i, m.m_axi_awaddr_o, m.m_axi_awlen_o,
                  m.m_axi_bvalid_i, m.m_axi_bready_o);
    observe_slave(c.vaxi, c.mem, c.axi_error, kVBeat, m.m_vaxi_rvalid_i, m.m_vaxi_rready_o,
                  m.m_vaxi_arvalid_o, m.m_vaxi_arready_i, m.m_vaxi_araddr_o, m.m_vaxi_arlen_o,
                  m.m_vaxi_wvalid_o, m.m_vaxi_wready_i, m.m_vaxi_wdata_o, m.m_vaxi_wstrb_o,
                  m.m_vaxi_awvalid_o, m.m_vaxi_awready_i, m.m_vaxi_awaddr_o, m.m_vaxi_awlen_o,
                  m.m_vaxi_bvalid_i, m.m_vaxi_bready_o);
  }

  void clock_edge(uint32_t r) {
    Vtpu_core& m = *chips_[r].m;
    axi_observe(r);
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
  }
  void clock(uint32_t r) {
    drive(r);
    chips_[r].m->eval();
    clock_edge(r);
  }

  void drive_links(uint32_t r) {
    Vtpu_core& m = *chips_[r].m;
    for (uint32_t l = 0; l < kLinks; ++l) {
      IciChannel* out = fabric_.up(r, l) ? &fabric_.out(r, l) : nullptr;
      IciChannel* in = fabric_.up(r, l) ? &fabric_.in(r, l) : nullptr;
      set_field(m.ici_tx_ready_i, l, 1, out && out->tx_ready());
      set_field(m.ici_tx_want_i, 24 * l, 24, out ? out->tx_want() : 0);
      const bool v = in && in->rx_valid();
      set_field(m.ici_rx_valid_i, l, 1, v);
      set_field(m.ici_rx_first_i, l, 1, v && in->rx_beat().first);
      set_field(m.ici_rx_rows_i, 24 * l, 24, v ? in->rx_beat().rows : 0);
      for (uint32_t k = 0; k < kWidth / 32; ++k) {
        set_field(m.ici_rx_data_i, kWidth * l + 32 * k, 32, v ? in->rx_beat().data[k] : 0);
      }
    }
  }

  void observe_links(uint32_t r) {
    Vtpu_core& m = *chips_[r].m;
    for (uint32_t l = 0; l < kLinks; ++l) {
      if (!fabric_.up(r, l)) continue;
      IciFabric::Pins& p = fabric_.pins(r, l);
      p.tx_fire = get_field(m.ici_tx_valid_o, l, 1) && get_field(m.ici_tx_ready_i, l, 1);
      p.rx_fire = get_field(m.ici_rx_valid_i, l, 1) && get_field(m.ici_rx_ready_o, l, 1);
      p.rx_want = get_field(m.ici_rx_want_o, 24 * l, 24);
      if (p.tx_fire) {
        p.beat.first = get_field(m.ici_tx_first_o, l, 1);
        p.beat.rows = get_field(m.ici_tx_rows_o, 24 * l, 24);
        for (uint32_t k = 0; k < kWidth / 32; ++k) {
          p.beat.data.push_back(get_field(m.ici_tx_data_o, kWidth * l + 32 * k, 32));
        }
      }
    }
  }

  // One cycle of the whole pod.
  void step() {
    const bool deadlock = fabric_.deadlock();
    if (deadlock) fabric_.clear_deadlock();
    std::vector<IciFabric::ChipState> states(chips_.size());
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      Vtpu_core& m = *chips_[r].m;
      drive(r);
      drive_links(r);
      m.ici_deadlock_i = 0;
      m.eval();
      states[r] = !m.trace_run_o ? IciFabric::ChipState::Stopped
                  : m.ici_wait_o ? IciFabric::ChipState::Waiting
                                 : IciFabric::ChipState::Running;
      if (deadlock && states[r] == IciFabric::ChipState::Waiting) {
        m.ici_deadlock_i = 1;
        m.eval();
      }
    }
    for (uint32_t r = 0; r < chips_.size(); ++r) {
      Vtpu_core& m = *chips_[r].m;
      observe_links(r);
      const bool aw = m.s_axil_awvalid_i && m.s_axil_awready_o;
      const bool w = m.s_axil_wvalid_i && m.s_axil_wready_o;
      clock_edge(r);
      if (aw) m.s_axil_awvalid_i = 0;
      if (w) m.s_axil_wvalid_i = 0;
    }
    fabric_.step(states);
    ++cycles_;
  }

  tpu::PodTopology topo_;
  std::vector<Chip> chips_;
  IciFabric fabric_;
  uint64_t cycles_ = 0;
};

struct Outcome {
  bool done = false;
  uint32_t err_code = 0, err_pc = 0;
};

// Random fp32 bit patterns with corner values mixed in.
std::vector<uint8_t> random_rows(std::mt19937& rng, uint32_t rows) {
  static const uint32_t kCorners[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                      0x7FC00001u, 0x00000001u, 0x7F7FFFFFu, 0x3F800000u};
  std::vector<uint8_t> bytes(size_t{rows} * 4 * N);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t v = rng();
    if (rng() % 8 == 0)
      v = kCorners[rng() % 8];
    else if (rng() % 2 == 0)
      v = (v & 0x807FFFFFu) | (uint32_t(120 + rng() % 16) << 23);
    std::memcpy(&bytes[i], &v, 4);
  }
  return bytes;
}

// Runs the programs on the Verilated pod and on the pod of golden models (same host images)
// and compares the outcome of every chip and its output bytes.
void run_both(uint32_t chips, uint32_t latency,
              const std::vector<std::vector<tpu::Instruction>>& programs,
              const std::vector<std::vector<uint8_t>>& data, const char* what) {
  CorePod rtl(chips, latency);
  tpu::LinkTiming timing;
  timing.bytes_per_cycle = kWidth / 8;
  timing.latency = latency;
  tpu::PodModel model(tpu::PodTopology::ring(chips), chip_params(), timing);
  for (uint32_t r = 0; r < chips; ++r) {
    ASSERT_EQ(rtl.read_reg(r, kParamIciLinks), kLinks);
    ASSERT_EQ(rtl.read_reg(r, kIciLinkUp), chips > 1 ? 3u : 0u);
    std::memcpy(&rtl.chip(r).mem[kData], data[r].data(), data[r].size());
    model.memory(r).add_region(0, kMemSize);
    model.memory(r).load(kData, data[r]);
    model.chip(r).set_dma_window(0, 0, kMemSize);
  }
  ASSERT_TRUE(rtl.run(programs)) << what << ": the Verilated pod did not stop";
  const tpu::PodResult gold = model.run(programs);
  for (uint32_t r = 0; r < chips; ++r) {
    Outcome o;
    const uint32_t st = rtl.read_reg(r, kStatus);
    if (getenv("TPU_DEBUG") != nullptr) {
      for (uint32_t a2 : {kStatus, kStatus, 0x030u, 0x140u, 0x100u, kCmdCount, kPc})
        printf("chip %u reg %#x = %#x\n", r, a2, rtl.read_reg(r, a2));
    }
    o.done = (st & 2u) != 0;
    o.err_code = rtl.read_reg(r, kErrCode);
    o.err_pc = rtl.read_reg(r, kErrPc);
    const tpu::RunResult& g = gold.chips[r];
    EXPECT_FALSE(rtl.chip(r).axi_error) << what << ": chip " << r;
    EXPECT_EQ(o.done, g.done()) << what << ": chip " << r << ": golden " << g.message
                                << "; chip STATUS " << st << " ERR_CODE " << o.err_code
                                << " ERR_PC " << o.err_pc << " after " << rtl.cycles() << " cycles";
    if (!g.done()) {
      EXPECT_EQ(o.err_code, static_cast<uint32_t>(g.error))
          << what << ": chip " << r << ": " << g.message;
      EXPECT_EQ(o.err_pc, g.err_pc) << what << ": chip " << r;
    }
    const std::vector<uint8_t> want = model.memory(r).dump(kOut, kOutSize);
    const std::vector<uint8_t> got(rtl.chip(r).mem.begin() + kOut,
                                   rtl.chip(r).mem.begin() + kOut + kOutSize);
    size_t first = 0;
    while (first < want.size() && want[first] == got[first]) ++first;
    EXPECT_TRUE(want == got) << what << ": chip " << r << ": output bytes differ from byte "
                             << first << " (model " << int(first < want.size() ? want[first] : 0)
                             << ", chip " << int(first < got.size() ? got[first] : 0) << ")";
  }
}

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

}  // namespace

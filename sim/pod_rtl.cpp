// SPDX-License-Identifier: Apache-2.0
// A pod of Verilated RTL chips in one process (sim/pod_rtl.h).
#include "pod_rtl.h"

#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "Vtpu_pod_core.h"
#include "assembler.h"
#include "ici_fabric.h"
#include "program.h"
#include "verilated.h"

#ifndef TPU_POD_N
#error "TPU_POD_N, TPU_POD_VMEM_ROWS, TPU_POD_LINKS, TPU_POD_WIDTH come from tpu_add_pod_rtl()"
#endif

namespace tpu::sim {
namespace {

constexpr uint32_t N = TPU_POD_N;
constexpr uint32_t kLinks = TPU_POD_LINKS;
constexpr uint32_t kWidth = TPU_POD_WIDTH;                   // IciWidth (bits)
constexpr uint32_t kBpr = 32 * N / kWidth;                   // beats per VMEM row
constexpr uint32_t kBeat = (8 * N < 128 ? 8 * N : 128) / 8;  // m_axi data bytes
constexpr uint32_t kVBeat = 4 * N;                           // m_vaxi data bytes (a VMEM row)
static_assert(kLinks >= 2 && kWidth % 32 == 0 && (32 * N) % kWidth == 0, "pod chip build");

// Register offsets (docs/registers.csv).
constexpr uint32_t kCtrl = 0x020, kStatus = 0x024, kErrCode = 0x028, kErrPc = 0x02C;
constexpr uint32_t kCmdAddr = 0x040, kCmdCount = 0x044, kWinBase = 0x080, kWinSize = 0x084;
constexpr uint32_t kStatusDone = 2;
constexpr int kRegTimeout = 100;

// Field access on Verilator's flat ports (an integer up to 64 bits or a VlWide).
template <typename T>
void set_bits(T& port, unsigned lsb, unsigned width, uint32_t value) {
  if constexpr (!std::is_integral_v<T>) {
    if (width == 32 && lsb % 32 == 0) {
      port[lsb / 32] = value;
      return;
    }
  }
  for (unsigned b = 0; b < width; ++b) {
    const unsigned bit = lsb + b;
    const bool v = (value >> b) & 1u;
    if constexpr (std::is_integral_v<T>) {
      port = v ? T(port | (T(1) << bit)) : T(port & ~(T(1) << bit));
    } else {
      if (v) {
        port[bit / 32] |= 1u << (bit % 32);
      } else {
        port[bit / 32] &= ~(1u << (bit % 32));
      }
    }
  }
}
template <typename T>
uint32_t get_bits(const T& port, unsigned lsb, unsigned width) {
  if constexpr (!std::is_integral_v<T>) {
    if (width == 32 && lsb % 32 == 0) return port[lsb / 32];
  }
  uint32_t r = 0;
  for (unsigned b = 0; b < width; ++b) {
    const unsigned bit = lsb + b;
    uint32_t v = 0;
    if constexpr (std::is_integral_v<T>) {
      v = static_cast<uint32_t>((static_cast<uint64_t>(port) >> bit) & 1u);
    } else {
      v = (port[bit / 32] >> (bit % 32)) & 1u;
    }
    r |= v << b;
  }
  return r;
}

// One AXI4 slave port's state: accepted bursts and beat counts.
struct AxiSlave {
  struct Burst {
    uint64_t addr;
    uint32_t beats;
  };
  std::deque<Burst> rd, wr;  // accepted AR / AW
  uint32_t rd_beat = 0, wr_beat = 0, bresp_pending = 0;
};

struct Chip {
  std::unique_ptr<VerilatedContext> ctx = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vtpu_pod_core> m = std::make_unique<Vtpu_pod_core>(ctx.get());
  std::vector<uint8_t> mem;  // host memory from address `base`
  uint64_t base = 0;
  AxiSlave axi, vaxi;  // m_axi_* and m_vaxi_*, one memory
  std::string axi_error;
};

// The slave's outputs on a port of `beat`-byte beats.
template <typename Bit, typename Data>
void drive_slave(AxiSlave& s, Chip& c, uint32_t beat, Bit& arready, Bit& awready, Bit& wready,
                 Bit& rvalid, Bit& rresp, Data& rdata, Bit& rlast, Bit& bvalid, Bit& bresp) {
  arready = 1;
  awready = 1;
  wready = !s.wr.empty();
  rvalid = !s.rd.empty();
  rresp = 0;
  rlast = 0;
  for (uint32_t w = 0; w < beat / 4; ++w) set_bits(rdata, 32 * w, 32, 0);
  if (s.rd.empty()) {
    bvalid = s.bresp_pending != 0;
    bresp = 0;
    return;
  }
  const uint64_t a = s.rd.front().addr + uint64_t{beat} * s.rd_beat;
  if (a >= c.base && a - c.base + beat <= c.mem.size()) {
    for (uint32_t w = 0; w < beat / 4; ++w) {
      uint32_t v = 0;
      std::memcpy(&v, &c.mem[a - c.base + 4 * w], 4);
      set_bits(rdata, 32 * w, 32, v);
    }
  } else if (c.axi_error.empty()) {
    c.axi_error = "read of address " + std::to_string(a) + " outside the host memory";
  }
  rlast = s.rd_beat + 1 == s.rd.front().beats;
  bvalid = s.bresp_pending != 0;
  bresp = 0;
}

// The handshakes of the cycle on one port (after eval, before the edge).
template <typename Bit, typename Addr, typename Len, typename Data, typename Strb>
void observe_slave(AxiSlave& s, Chip& c, uint32_t beat, Bit rvalid, Bit rready, Bit arvalid,
                   Bit arready, Addr araddr, Len arlen, Bit wvalid, Bit wready, const Data& wdata,
                   Strb wstrb, Bit awvalid, Bit awready, Addr awaddr, Len awlen, Bit bvalid,
                   Bit bready) {
  if (rvalid && rready && ++s.rd_beat == s.rd.front().beats) {
    s.rd.pop_front();
    s.rd_beat = 0;
  }
  if (arvalid && arready) s.rd.push_back({uint64_t{araddr}, uint32_t{arlen} + 1});
  if (wvalid && wready) {
    const uint64_t a = s.wr.front().addr + uint64_t{beat} * s.wr_beat;
    for (uint32_t b = 0; b < beat; ++b) {
      if (((static_cast<uint64_t>(wstrb) >> b) & 1u) == 0) continue;
      if (a + b >= c.base && a + b - c.base < c.mem.size()) {
        c.mem[a + b - c.base] = static_cast<uint8_t>(get_bits(wdata, 8 * b, 8));
      } else if (c.axi_error.empty()) {
        c.axi_error = "write of address " + std::to_string(a + b) + " outside the host memory";
      }
    }
    if (++s.wr_beat == s.wr.front().beats) {
      s.wr.pop_front();
      s.wr_beat = 0;
      ++s.bresp_pending;
    }
  }
  if (awvalid && awready) s.wr.push_back({uint64_t{awaddr}, uint32_t{awlen} + 1});
  if (bvalid && bready) --s.bresp_pending;
}

std::vector<std::optional<IciFabric::End>> wiring(const PodTopology& topo) {
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

const PodTopology& checked(const PodTopology& topo, uint32_t latency, uint64_t mem_bytes,
                           uint64_t mem_base) {
  if (topo.chips() == 0) throw std::invalid_argument("PodRtl: a pod needs at least one chip");
  if (topo.links_needed() > kLinks && topo.chips() > 1) {
    throw std::invalid_argument(
        "PodRtl: topology " + topo.name() + " needs " + std::to_string(topo.links_needed()) +
        " links per chip; the Verilated chip has " + std::to_string(kLinks));
  }
  if (latency == 0) throw std::invalid_argument("PodRtl: the link latency must be >= 1 cycle");
  if (mem_bytes % 4096 != 0 || mem_bytes < 65536 || mem_bytes > (uint64_t{1} << 30)) {
    throw std::invalid_argument("PodRtl: host memory of " + std::to_string(mem_bytes) +
                                " bytes (expected a multiple of 4096 in 65536..2^30)");
  }
  if (mem_base % 4096 != 0 || mem_base + mem_bytes > (uint64_t{1} << 32)) {
    throw std::invalid_argument("PodRtl: host memory at " + std::to_string(mem_base) +
                                " (expected a multiple of 4096, ending within 2^32)");
  }
  return topo;
}

}  // namespace

bool PodRtlResult::ok() const {
  if (status != PodRtlStatus::Stopped) return false;
  for (const PodRtlChipOutcome& c : chips) {
    if (!c.done) return false;
  }
  return true;
}

struct PodRtl::Impl {
  Impl(const PodTopology& topo, uint32_t latency, uint64_t mem_bytes, uint64_t mem_base)
      : chips(topo.chips()), fabric(topo.chips(), kLinks, wiring(topo), latency, kBpr) {
    for (uint32_t r = 0; r < chips.size(); ++r) {
      chips[r].mem.assign(mem_bytes, 0);
      chips[r].base = mem_base;
      Vtpu_pod_core& m = *chips[r].m;
      m.clk_i = 0;
      m.rst_ni = 0;
      uint32_t up = 0;
      for (uint32_t l = 0; l < kLinks; ++l) up |= fabric.up(r, l) ? 1u << l : 0u;
      m.ici_link_up_i = static_cast<std::remove_reference_t<decltype(m.ici_link_up_i)>>(up);
      m.eval();
      for (int i = 0; i < 3; ++i) clock(r);
      m.rst_ni = 1;
      clock(r);
    }
  }

  void drive(uint32_t r) {
    Chip& c = chips[r];
    Vtpu_pod_core& m = *c.m;
    drive_slave(c.axi, c, kBeat, m.m_axi_arready_i, m.m_axi_awready_i, m.m_axi_wready_i,
                m.m_axi_rvalid_i, m.m_axi_rresp_i, m.m_axi_rdata_i, m.m_axi_rlast_i,
                m.m_axi_bvalid_i, m.m_axi_bresp_i);
    drive_slave(c.vaxi, c, kVBeat, m.m_vaxi_arready_i, m.m_vaxi_awready_i, m.m_vaxi_wready_i,
                m.m_vaxi_rvalid_i, m.m_vaxi_rresp_i, m.m_vaxi_rdata_i, m.m_vaxi_rlast_i,
                m.m_vaxi_bvalid_i, m.m_vaxi_bresp_i);
  }

  void axi_observe(uint32_t r) {
    Chip& c = chips[r];
    Vtpu_pod_core& m = *c.m;
    observe_slave(c.axi, c, kBeat, m.m_axi_rvalid_i, m.m_axi_rready_o, m.m_axi_arvalid_o,
                  m.m_axi_arready_i, m.m_axi_araddr_o, m.m_axi_arlen_o, m.m_axi_wvalid_o,
                  m.m_axi_wready_i, m.m_axi_wdata_o, m.m_axi_wstrb_o, m.m_axi_awvalid_o,
                  m.m_axi_awready_i, m.m_axi_awaddr_o, m.m_axi_awlen_o, m.m_axi_bvalid_i,
                  m.m_axi_bready_o);
    observe_slave(c.vaxi, c, kVBeat, m.m_vaxi_rvalid_i, m.m_vaxi_rready_o, m.m_vaxi_arvalid_o,
                  m.m_vaxi_arready_i, m.m_vaxi_araddr_o, m.m_vaxi_arlen_o, m.m_vaxi_wvalid_o,
                  m.m_vaxi_wready_i, m.m_vaxi_wdata_o, m.m_vaxi_wstrb_o, m.m_vaxi_awvalid_o,
                  m.m_vaxi_awready_i, m.m_vaxi_awaddr_o, m.m_vaxi_awlen_o, m.m_vaxi_bvalid_i,
                  m.m_vaxi_bready_o);
  }

  void clock_edge(uint32_t r) {
    Vtpu_pod_core& m = *chips[r].m;
    axi_observe(r);
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
  }
  void clock(uint32_t r) {
    drive(r);
    chips[r].m->eval();
    clock_edge(r);
  }

  void drive_links(uint32_t r) {
    Vtpu_pod_core& m = *chips[r].m;
    for (uint32_t l = 0; l < kLinks; ++l) {
      IciChannel* out = fabric.up(r, l) ? &fabric.out(r, l) : nullptr;
      IciChannel* in = fabric.up(r, l) ? &fabric.in(r, l) : nullptr;
      set_bits(m.ici_tx_ready_i, l, 1, out && out->tx_ready());
      set_bits(m.ici_tx_want_i, 24 * l, 24, out ? out->tx_want() : 0);
      const bool v = in && in->rx_valid();
      set_bits(m.ici_rx_valid_i, l, 1, v);
      set_bits(m.ici_rx_first_i, l, 1, v && in->rx_beat().first);
      set_bits(m.ici_rx_rows_i, 24 * l, 24, v ? in->rx_beat().rows : 0);
      for (uint32_t k = 0; k < kWidth / 32; ++k) {
        set_bits(m.ici_rx_data_i, kWidth * l + 32 * k, 32, v ? in->rx_beat().data[k] : 0);
      }
    }
  }

  void observe_links(uint32_t r) {
    Vtpu_pod_core& m = *chips[r].m;
    for (uint32_t l = 0; l < kLinks; ++l) {
      if (!fabric.up(r, l)) continue;
      IciFabric::Pins& p = fabric.pins(r, l);
      p.tx_fire = get_bits(m.ici_tx_valid_o, l, 1) && get_bits(m.ici_tx_ready_i, l, 1);
      p.rx_fire = get_bits(m.ici_rx_valid_i, l, 1) && get_bits(m.ici_rx_ready_o, l, 1);
      p.rx_want = get_bits(m.ici_rx_want_o, 24 * l, 24);
      if (p.tx_fire) {
        p.beat.first = get_bits(m.ici_tx_first_o, l, 1);
        p.beat.rows = get_bits(m.ici_tx_rows_o, 24 * l, 24);
        for (uint32_t k = 0; k < kWidth / 32; ++k) {
          p.beat.data.push_back(get_bits(m.ici_tx_data_o, kWidth * l + 32 * k, 32));
        }
        ++beats;
      }
    }
  }

  // One cycle of the whole pod: every chip evaluated with its links' inputs, the deadlock rule
  // applied to the waiting chips, then every clock edge and the fabric's step.
  void step() {
    const bool deadlock = fabric.deadlock();
    if (deadlock) {
      fabric.clear_deadlock();
      ++deadlocks;
    }
    states.assign(chips.size(), IciFabric::ChipState::Running);
    for (uint32_t r = 0; r < chips.size(); ++r) {
      Vtpu_pod_core& m = *chips[r].m;
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
    for (uint32_t r = 0; r < chips.size(); ++r) {
      Vtpu_pod_core& m = *chips[r].m;
      observe_links(r);
      const bool aw = m.s_axil_awvalid_i && m.s_axil_awready_o;
      const bool w = m.s_axil_wvalid_i && m.s_axil_wready_o;
      clock_edge(r);
      if (aw) m.s_axil_awvalid_i = 0;
      if (w) m.s_axil_wvalid_i = 0;
    }
    fabric.step(states);
    ++cycles;
  }

  std::vector<Chip> chips;
  IciFabric fabric;
  std::vector<IciFabric::ChipState> states;
  uint64_t cycles = 0;
  uint64_t beats = 0;
  uint64_t deadlocks = 0;
};

ChipParams PodRtl::params() {
  ChipParams p = ChipParams::pod(N, kLinks);
  p.ub_rows = TPU_POD_UB_ROWS;
  p.acc_rows = TPU_POD_ACC_ROWS;
  p.vmem_rows = TPU_POD_VMEM_ROWS;
  return p;
}

uint32_t PodRtl::ici_width_bits() { return kWidth; }

PodRtl::PodRtl(const PodTopology& topology, uint32_t latency, uint64_t mem_bytes, uint64_t mem_base)
    : topology_(checked(topology, latency, mem_bytes, mem_base)),
      impl_(std::make_unique<Impl>(topology, latency, mem_bytes, mem_base)) {}

PodRtl::~PodRtl() = default;

uint32_t PodRtl::chips() const { return static_cast<uint32_t>(impl_->chips.size()); }
std::vector<uint8_t>& PodRtl::memory(uint32_t r) { return impl_->chips.at(r).mem; }
uint64_t PodRtl::cycles() const { return impl_->cycles; }
uint64_t PodRtl::memory_base() const { return impl_->chips.front().base; }

void PodRtl::set_assertions(bool on) {
  for (Chip& c : impl_->chips) c.ctx->assertOn(on);
}

void PodRtl::write_reg(uint32_t r, uint32_t addr, uint32_t value) {
  Vtpu_pod_core& m = *impl_->chips.at(r).m;
  m.s_axil_awaddr_i = static_cast<uint16_t>(addr);
  m.s_axil_wdata_i = value;
  m.s_axil_wstrb_i = 0xF;
  m.s_axil_awvalid_i = 1;
  m.s_axil_wvalid_i = 1;
  m.s_axil_bready_i = 1;
  for (int i = 0; i < kRegTimeout; ++i) {
    impl_->drive(r);
    m.eval();
    const bool aw = m.s_axil_awvalid_i && m.s_axil_awready_o;
    const bool w = m.s_axil_wvalid_i && m.s_axil_wready_o;
    const bool b = m.s_axil_bvalid_o;
    impl_->clock_edge(r);
    if (aw) m.s_axil_awvalid_i = 0;
    if (w) m.s_axil_wvalid_i = 0;
    if (b) return;
  }
  throw std::runtime_error("PodRtl: chip " + std::to_string(r) + ": register write " +
                           std::to_string(addr) + " never answered");
}

uint32_t PodRtl::read_reg(uint32_t r, uint32_t addr) {
  Vtpu_pod_core& m = *impl_->chips.at(r).m;
  m.s_axil_araddr_i = static_cast<uint16_t>(addr);
  m.s_axil_arvalid_i = 1;
  m.s_axil_rready_i = 1;
  for (int i = 0; i < kRegTimeout; ++i) {
    impl_->drive(r);
    m.eval();
    const bool ar = m.s_axil_arvalid_i && m.s_axil_arready_o;
    const bool rv = m.s_axil_rvalid_o;
    const uint32_t data = m.s_axil_rdata_o;
    impl_->clock_edge(r);
    if (ar) m.s_axil_arvalid_i = 0;
    if (rv) return data;
  }
  throw std::runtime_error("PodRtl: chip " + std::to_string(r) + ": register read " +
                           std::to_string(addr) + " never answered");
}

PodRtlResult PodRtl::run(const std::vector<std::vector<Instruction>>& programs, uint64_t max_cycles,
                         uint32_t code_addr) {
  Impl& p = *impl_;
  if (programs.size() != p.chips.size()) {
    throw std::invalid_argument("PodRtl::run: " + std::to_string(programs.size()) +
                                " programs for " + std::to_string(p.chips.size()) + " chips");
  }
  for (uint32_t r = 0; r < p.chips.size(); ++r) {
    const std::vector<uint8_t> code = encode_program(programs[r]);
    std::vector<uint8_t>& mem = p.chips[r].mem;
    const uint64_t base = p.chips[r].base;
    if (code_addr < base || uint64_t{code_addr} - base + code.size() > mem.size()) {
      throw std::invalid_argument("PodRtl::run: chip " + std::to_string(r) + "'s program (" +
                                  std::to_string(code.size()) + " bytes at " +
                                  std::to_string(code_addr) + ") does not fit its host memory");
    }
    std::memcpy(mem.data() + (code_addr - base), code.data(), code.size());
    write_reg(r, kWinBase, static_cast<uint32_t>(base));
    write_reg(r, kWinSize, static_cast<uint32_t>(mem.size()));
    write_reg(r, kCmdAddr, code_addr);
    write_reg(r, kCmdCount, static_cast<uint32_t>(programs[r].size()));
  }
  for (Chip& c : p.chips) {  // START on every chip in the same cycle
    c.m->s_axil_awaddr_i = kCtrl;
    c.m->s_axil_wdata_i = 1;
    c.m->s_axil_wstrb_i = 0xF;
    c.m->s_axil_awvalid_i = 1;
    c.m->s_axil_wvalid_i = 1;
    c.m->s_axil_bready_i = 1;
  }
  PodRtlResult res;
  res.chips.resize(p.chips.size());
  std::vector<bool> seen_run(p.chips.size(), false), stopped(p.chips.size(), false);
  const uint64_t start = p.cycles, beats0 = p.beats, deadlocks0 = p.deadlocks;
  uint32_t running = static_cast<uint32_t>(p.chips.size());
  while (running > 0) {
    if (p.cycles - start >= max_cycles) {
      res.status = PodRtlStatus::CycleLimit;
      res.message =
          "the pod did not stop within " + std::to_string(max_cycles) + " cycles; still running:";
      for (uint32_t r = 0; r < p.chips.size(); ++r) {
        if (!stopped[r]) res.message += " chip " + std::to_string(r);
      }
      break;
    }
    p.step();
    for (uint32_t r = 0; r < p.chips.size(); ++r) {
      const bool busy = p.chips[r].m->trace_run_o;
      if (busy) seen_run[r] = true;
      if (seen_run[r] && !busy && !stopped[r]) {
        stopped[r] = true;
        res.chips[r].cycles = p.cycles - start;
        --running;
      }
    }
  }
  res.cycles = p.cycles - start;
  for (int i = 0; i < 2; ++i) p.step();  // STATUS.DONE / ERROR follow BUSY by a cycle
  for (uint32_t r = 0; r < p.chips.size(); ++r) {
    PodRtlChipOutcome& o = res.chips[r];
    o.done = (read_reg(r, kStatus) & kStatusDone) != 0;
    o.err_code = read_reg(r, kErrCode);
    o.err_pc = read_reg(r, kErrPc);
    if (!p.chips[r].axi_error.empty() && res.status == PodRtlStatus::Stopped) {
      res.status = PodRtlStatus::AxiError;
      res.message = "chip " + std::to_string(r) + ": " + p.chips[r].axi_error;
    }
  }
  res.link_beats = p.beats - beats0;
  res.deadlocks = p.deadlocks - deadlocks0;
  return res;
}

namespace {
void expect_halted(const PodRtlResult& res, const char* what) {
  if (res.status != PodRtlStatus::Stopped) {
    throw std::runtime_error(std::string("PodRtl::") + what + ": " + res.message);
  }
  for (size_t r = 0; r < res.chips.size(); ++r) {
    if (!res.chips[r].done) {
      throw std::runtime_error(std::string("PodRtl::") + what + ": chip " + std::to_string(r) +
                               " faulted with ERR_CODE " + std::to_string(res.chips[r].err_code));
    }
  }
}
}  // namespace

void PodRtl::load_vmem(uint32_t row, const std::vector<std::vector<uint32_t>>& lanes,
                       uint32_t host_addr) {
  std::vector<std::vector<Instruction>> programs;
  for (uint32_t r = 0; r < chips(); ++r) {
    const std::vector<uint32_t>& v = lanes.at(r);
    const auto rows = static_cast<uint32_t>(v.size() / N);
    std::vector<uint8_t>& mem = memory(r);
    const uint64_t base = memory_base();
    if (v.size() % N != 0 || host_addr < base || host_addr - base + 4 * v.size() > mem.size()) {
      throw std::invalid_argument("PodRtl::load_vmem: chip " + std::to_string(r) +
                                  ": not whole rows or beyond the host memory");
    }
    std::memcpy(mem.data() + (host_addr - base), v.data(), 4 * v.size());
    ProgramBuilder b(params());
    if (rows > 0) b.read_vmem(row, rows, host_addr);
    programs.push_back(b.finish());
  }
  expect_halted(run(programs), "load_vmem");
}

std::vector<std::vector<uint32_t>> PodRtl::dump_vmem(uint32_t row, uint32_t rows,
                                                     uint32_t host_addr) {
  std::vector<std::vector<Instruction>> programs;
  for (uint32_t r = 0; r < chips(); ++r) {
    if (host_addr < memory_base() ||
        host_addr - memory_base() + uint64_t{rows} * 4 * N > memory(r).size()) {
      throw std::invalid_argument("PodRtl::dump_vmem: beyond the host memory");
    }
    ProgramBuilder b(params());
    if (rows > 0) b.write_vmem(row, rows, host_addr);
    programs.push_back(b.finish());
  }
  expect_halted(run(programs), "dump_vmem");
  std::vector<std::vector<uint32_t>> out;
  for (uint32_t r = 0; r < chips(); ++r) {
    std::vector<uint32_t> v(size_t{rows} * N);
    std::memcpy(v.data(), memory(r).data() + (host_addr - memory_base()), 4 * v.size());
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace tpu::sim

// SPDX-License-Identifier: Apache-2.0
// A pod of Verilated RTL chips in one process (sim/pod_rtl.h).
#include "pod_rtl.h"

#include <cstring>
#include <deque>
#include <functional>
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
#ifdef TPU_POD_COVERAGE
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "verilated_cov.h"
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

#ifdef TPU_POD_COVERAGE
// A coverage build (TPU_COVERAGE, sim/pod_rtl.cmake): every chip has its own context, whose
// coverage counters live in the model and die with it, and a test builds hundreds of pods. So
// each chip's points are added into one table per process when its pod ends (the context's
// data file read back, counts summed per point, as verilator_coverage merges), written at exit
// to $TPU_COVERAGE_DIR/<program>_pod_<pid>.dat for scripts/coverage.sh.
class PodCoverage {
 public:
  static PodCoverage& get() {
    static PodCoverage c;
    return c;
  }
  void add(VerilatedContext& ctx) {
    const std::lock_guard<std::mutex> lock(mu_);
    const std::string tmp = path(".tmp");
    ctx.coveragep()->write(tmp.c_str());
    std::ifstream in(tmp);
    std::string line;
    while (std::getline(in, line)) {
      const size_t sp = line.rfind(' ');
      if (line.rfind("C '", 0) != 0 || sp == std::string::npos) continue;  // header
      points_[line.substr(0, sp)] += std::strtoull(line.c_str() + sp + 1, nullptr, 10);
    }
    std::remove(tmp.c_str());
  }
  ~PodCoverage() {
    if (points_.empty()) return;
    std::ofstream out(path(".dat"));
    out << "# SystemC::Coverage-3\n";
    for (const auto& [key, count] : points_) out << key << ' ' << count << '\n';
  }

 private:
  static std::string path(const char* ext) {
    const char* dir = std::getenv("TPU_COVERAGE_DIR");
    return std::string(dir && *dir ? dir : ".") + "/" + program_invocation_short_name + "_pod_" +
           std::to_string(::getpid()) + ext;
  }
  std::mutex mu_;
  std::map<std::string, uint64_t> points_;
};
#endif

struct Chip {
  std::unique_ptr<VerilatedContext> ctx;  // only for the chips simulated in this process
  std::unique_ptr<Vtpu_pod_core> m;
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

// The byte strings of the distributed pod's exchanges.
class Writer {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>, "plain values only");
    const size_t at = s_.size();
    s_.resize(at + sizeof v);
    std::memcpy(&s_[at], &v, sizeof v);
  }
  void put_string(const std::string& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    s_ += v;
  }
  std::string& str() { return s_; }

 private:
  std::string s_;
};
class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  T get() {
    T v{};
    if (pos_ + sizeof v > s_.size()) {
      throw std::runtime_error("PodRtl: a short message from another rank (different builds?)");
    }
    std::memcpy(&v, &s_[pos_], sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<uint32_t>();
    if (pos_ + n > s_.size()) throw std::runtime_error("PodRtl: a short message from another rank");
    std::string v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

void put_event(Writer& w, const IciFabric::Outgoing& o) {
  w.put<uint32_t>(o.chip);
  w.put<uint32_t>(o.link);
  w.put<uint8_t>(static_cast<uint8_t>(o.event.kind));
  w.put<uint64_t>(o.event.at);
  w.put<uint32_t>(o.event.want);
  w.put<uint8_t>(o.event.beat.first ? 1 : 0);
  w.put<uint32_t>(o.event.beat.rows);
  w.put<uint32_t>(static_cast<uint32_t>(o.event.beat.data.size()));
  for (uint32_t d : o.event.beat.data) w.put<uint32_t>(d);
}
IciFabric::Outgoing get_event(Reader& r) {
  IciFabric::Outgoing o;
  o.chip = r.get<uint32_t>();
  o.link = r.get<uint32_t>();
  const auto kind = r.get<uint8_t>();
  if (kind > static_cast<uint8_t>(IciEvent::Kind::Want)) {
    throw std::runtime_error("PodRtl: a link event of unknown kind from another rank");
  }
  o.event.kind = static_cast<IciEvent::Kind>(kind);
  o.event.at = r.get<uint64_t>();
  o.event.want = r.get<uint32_t>();
  o.event.beat.first = r.get<uint8_t>() != 0;
  o.event.beat.rows = r.get<uint32_t>();
  const auto words = r.get<uint32_t>();
  if (words > kWidth / 32) throw std::runtime_error("PodRtl: a beat wider than the link");
  for (uint32_t k = 0; k < words; ++k) o.event.beat.data.push_back(r.get<uint32_t>());
  return o;
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
  Impl(const PodTopology& topo, uint32_t latency, uint64_t mem_bytes, uint64_t mem_base,
       std::shared_ptr<PodTransport> tr)
      : chips(topo.chips()),
        fabric(topo.chips(), kLinks, wiring(topo), latency, kBpr),
        transport(std::move(tr)),
        look(latency, fabric.window()) {
    local.assign(chips.size(), true);
    if (transport) {
      const uint32_t K = transport->ranks();
      if (K == 0 || K > chips.size() || transport->rank() >= K) {
        throw std::invalid_argument("PodRtl: " + std::to_string(K) + " ranks for " +
                                    std::to_string(chips.size()) +
                                    " chips (expected 1 .. chips ranks)");
      }
      for (uint32_t r = 0; r < chips.size(); ++r) {
        local[r] = pod_rank_of(r, count(), K) == transport->rank();
      }
      fabric.set_local(local);
    }
    for (uint32_t r = 0; r < chips.size(); ++r) {
      chips[r].base = mem_base;
      if (!local[r]) continue;
      chips[r].ctx = std::make_unique<VerilatedContext>();
      chips[r].m = std::make_unique<Vtpu_pod_core>(chips[r].ctx.get());
      chips[r].mem.assign(mem_bytes, 0);
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

  // One cycle of the local chips: every chip evaluated with its links' inputs, the deadlock
  // rule's decision applied to the waiting chips, then every clock edge (states: each chip's).
  void eval_chips(bool deadlock) {
    states.assign(chips.size(), IciFabric::ChipState::Stopped);
    for (uint32_t r = 0; r < chips.size(); ++r) {
      if (!local[r]) continue;
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
      if (!local[r]) continue;
      Vtpu_pod_core& m = *chips[r].m;
      observe_links(r);
      const bool aw = m.s_axil_awvalid_i && m.s_axil_awready_o;
      const bool w = m.s_axil_wvalid_i && m.s_axil_wready_o;
      clock_edge(r);
      if (aw) m.s_axil_awvalid_i = 0;
      if (w) m.s_axil_wvalid_i = 0;
    }
  }

  // One cycle of the whole pod in one process (the fabric's deadlock rule decides).
  void step() {
    const bool deadlock = fabric.deadlock();
    if (deadlock) {
      fabric.clear_deadlock();
      ++deadlocks;
    }
    eval_chips(deadlock);
    fabric.step(states);
    ++cycles;
  }

  // Distributed: one lookahead window of at most `max_w` cycles (>= 1) of the local chips,
  // `after_step` after each, then the exchange with every rank (link events to the ranks of
  // their halves, every rank's deadlock bits and its count of chips still running, from
  // `running_here`). Returns the chips still running pod-wide.
  uint32_t window(uint64_t max_w, const std::function<void()>& after_step,
                  const std::function<uint32_t()>& running_here) {
    const bool fire = look.fire();
    if (fire) ++deadlocks;
    const uint64_t w = std::min(max_w, look.next_window());
    std::vector<uint8_t> bits;
    for (uint64_t k = 0; k < w; ++k) {
      eval_chips(fire && k == 0);
      const IciFabric::CycleBits b = fabric.step_local(states);
      bits.push_back(
          static_cast<uint8_t>((b.moved ? 1 : 0) | (b.waiting ? 2 : 0) | (b.running ? 4 : 0)));
      ++cycles;
      after_step();
    }
    const uint32_t K = transport->ranks();
    std::vector<Writer> to(K);
    std::vector<uint32_t> n_events(K, 0);
    for (const IciFabric::Outgoing& o : fabric.outbox()) {
      const uint32_t dest = o.event.to_tx() ? o.chip : fabric.peer(o.chip, o.link)->chip;
      ++n_events[pod_rank_of(dest, count(), K)];
    }
    const uint32_t here = running_here();
    for (uint32_t q = 0; q < K; ++q) {
      to[q].put<uint32_t>(here);
      to[q].put<uint64_t>(w);
      for (uint8_t b : bits) to[q].put<uint8_t>(b);
      to[q].put<uint32_t>(n_events[q]);
    }
    for (const IciFabric::Outgoing& o : fabric.outbox()) {
      const uint32_t dest = o.event.to_tx() ? o.chip : fabric.peer(o.chip, o.link)->chip;
      put_event(to[pod_rank_of(dest, count(), K)], o);
    }
    fabric.outbox().clear();
    std::vector<std::string> out;
    for (Writer& t : to) out.push_back(std::move(t.str()));
    const std::vector<std::string> from = transport->exchange(out);
    uint32_t running = 0;
    for (uint32_t q = 0; q < K; ++q) {
      Reader rd(from.at(q));
      running += rd.get<uint32_t>();
      if (rd.get<uint64_t>() != w) throw std::runtime_error("PodRtl: ranks out of step");
      for (uint64_t k = 0; k < w; ++k) bits[k] |= rd.get<uint8_t>();
      const auto n = rd.get<uint32_t>();
      for (uint32_t i = 0; i < n; ++i) fabric.deliver(get_event(rd));
    }
    for (uint8_t b : bits) look.record((b & 1) != 0, (b & 2) != 0, (b & 4) != 0);
    return running;
  }

  // Distributed: `n` more cycles (whole windows) with no one watching the chips.
  void advance(uint64_t n) {
    while (n > 0) {
      uint64_t done = 0;
      window(
          n, [&done] { ++done; }, [] { return 0u; });
      n -= done;
    }
  }

#ifdef TPU_POD_COVERAGE
  ~Impl() {
    for (Chip& c : chips) {
      if (c.ctx) PodCoverage::get().add(*c.ctx);
    }
  }
#endif

  uint32_t count() const { return static_cast<uint32_t>(chips.size()); }

  std::vector<Chip> chips;
  IciFabric fabric;
  std::shared_ptr<PodTransport> transport;  // null: every chip here, lock step
  PodLookahead look;                        // the deadlock rule over windows (distributed)
  std::vector<bool> local;
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
      impl_(std::make_unique<Impl>(topology, latency, mem_bytes, mem_base, nullptr)) {}

PodRtl::PodRtl(const PodTopology& topology, uint32_t latency,
               std::shared_ptr<PodTransport> transport, uint64_t mem_bytes, uint64_t mem_base)
    : topology_(checked(topology, latency, mem_bytes, mem_base)),
      impl_(std::make_unique<Impl>(
          topology, latency, mem_bytes, mem_base,
          transport ? std::move(transport)
                    : throw std::invalid_argument("PodRtl: a null transport"))) {}

PodRtl::~PodRtl() = default;

uint32_t PodRtl::chips() const { return static_cast<uint32_t>(impl_->chips.size()); }
std::vector<uint8_t>& PodRtl::memory(uint32_t r) { return impl_->chips.at(r).mem; }
uint64_t PodRtl::cycles() const { return impl_->cycles; }
bool PodRtl::local(uint32_t r) const { return impl_->local.at(r); }
uint64_t PodRtl::memory_base() const { return impl_->chips.front().base; }

void PodRtl::set_assertions(bool on) {
  for (Chip& c : impl_->chips) {
    if (c.ctx) c.ctx->assertOn(on);
  }
}

namespace {
Vtpu_pod_core& local_model(std::vector<Chip>& chips, uint32_t r) {
  Chip& c = chips.at(r);
  if (!c.m) {
    throw std::logic_error("PodRtl: chip " + std::to_string(r) + " is simulated by another rank");
  }
  return *c.m;
}
}  // namespace

void PodRtl::write_reg(uint32_t r, uint32_t addr, uint32_t value) {
  Vtpu_pod_core& m = local_model(impl_->chips, r);
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
  Vtpu_pod_core& m = local_model(impl_->chips, r);
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
    if (!p.local[r]) continue;
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
  // Every run starts on empty links (on every rank: each resets the halves it steps).
  p.fabric.reset_links();
  for (Chip& c : p.chips) {  // START on every chip in the same cycle
    if (!c.m) continue;
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
  uint32_t running_here = 0;
  for (uint32_t r = 0; r < p.chips.size(); ++r) running_here += p.local[r] ? 1 : 0;
  const auto watch = [&] {
    for (uint32_t r = 0; r < p.chips.size(); ++r) {
      if (!p.local[r]) continue;
      const bool busy = p.chips[r].m->trace_run_o;
      if (busy) seen_run[r] = true;
      if (seen_run[r] && !busy && !stopped[r]) {
        stopped[r] = true;
        res.chips[r].cycles = p.cycles - start;
        --running_here;
      }
    }
  };
  bool limit = false;
  if (!p.transport) {
    while (running_here > 0) {
      if (p.cycles - start >= max_cycles) {
        limit = true;
        break;
      }
      p.step();
      watch();
    }
    res.cycles = p.cycles - start;
    for (int i = 0; i < 2; ++i) p.step();  // STATUS.DONE / ERROR follow BUSY by a cycle
  } else {
    // Lookahead windows until no chip runs pod-wide (decided at a window's end, so the local
    // chips may step a few cycles past the last stop: the cycles come from the stops).
    uint32_t running = static_cast<uint32_t>(p.chips.size());
    while (running > 0) {
      if (p.cycles - start >= max_cycles) {
        limit = true;
        break;
      }
      running = p.window(max_cycles - (p.cycles - start), watch, [&] { return running_here; });
    }
    p.advance(2);
  }
  finish_run(res, stopped, limit, max_cycles, beats0, deadlocks0);
  return res;
}

// Every chip's outcome after a run (gathered from every rank when distributed).
void PodRtl::finish_run(PodRtlResult& res, std::vector<bool>& stopped, bool limit,
                        uint64_t max_cycles, uint64_t beats0, uint64_t deadlocks0) {
  Impl& p = *impl_;
  uint64_t beats = p.beats - beats0;
  std::vector<std::string> axi_error(p.chips.size());
  for (uint32_t r = 0; r < p.chips.size(); ++r) {
    if (!p.local[r]) continue;
    PodRtlChipOutcome& o = res.chips[r];
    o.done = (read_reg(r, kStatus) & kStatusDone) != 0;
    o.err_code = read_reg(r, kErrCode);
    o.err_pc = read_reg(r, kErrPc);
    axi_error[r] = p.chips[r].axi_error;
  }
  if (p.transport) {
    Writer w;
    w.put<uint64_t>(beats);
    for (uint32_t r = 0; r < p.chips.size(); ++r) {
      if (!p.local[r]) continue;
      const PodRtlChipOutcome& o = res.chips[r];
      w.put<uint8_t>(o.done ? 1 : 0);
      w.put<uint32_t>(o.err_code);
      w.put<uint32_t>(o.err_pc);
      w.put<uint64_t>(o.cycles);
      w.put<uint8_t>(stopped[r] ? 1 : 0);
      w.put_string(axi_error[r]);
    }
    const std::vector<std::string> from =
        p.transport->exchange(std::vector<std::string>(p.transport->ranks(), w.str()));
    beats = 0;
    for (uint32_t q = 0; q < from.size(); ++q) {
      Reader rd(from[q]);
      beats += rd.get<uint64_t>();
      for (uint32_t r = 0; r < p.chips.size(); ++r) {
        if (pod_rank_of(r, chips(), p.transport->ranks()) != q) continue;
        PodRtlChipOutcome& o = res.chips[r];
        o.done = rd.get<uint8_t>() != 0;
        o.err_code = rd.get<uint32_t>();
        o.err_pc = rd.get<uint32_t>();
        o.cycles = rd.get<uint64_t>();
        stopped[r] = rd.get<uint8_t>() != 0;
        axi_error[r] = rd.get_string();
      }
    }
    res.cycles = 0;
    for (uint32_t r = 0; r < p.chips.size(); ++r) {
      res.cycles = std::max(res.cycles, stopped[r] ? res.chips[r].cycles : max_cycles);
    }
  }
  if (limit) {
    res.status = PodRtlStatus::CycleLimit;
    res.message =
        "the pod did not stop within " + std::to_string(max_cycles) + " cycles; still running:";
    for (uint32_t r = 0; r < p.chips.size(); ++r) {
      if (!stopped[r]) res.message += " chip " + std::to_string(r);
    }
  }
  for (uint32_t r = 0; r < p.chips.size(); ++r) {
    if (!axi_error[r].empty() && res.status == PodRtlStatus::Stopped) {
      res.status = PodRtlStatus::AxiError;
      res.message = "chip " + std::to_string(r) + ": " + axi_error[r];
    }
  }
  res.link_beats = beats;
  res.deadlocks = p.deadlocks - deadlocks0;
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
    ProgramBuilder b(params());
    if (rows > 0) b.read_vmem(row, rows, host_addr);
    programs.push_back(b.finish());
    if (!local(r)) continue;
    std::vector<uint8_t>& mem = memory(r);
    const uint64_t base = memory_base();
    if (v.size() % N != 0 || host_addr < base || host_addr - base + 4 * v.size() > mem.size()) {
      throw std::invalid_argument("PodRtl::load_vmem: chip " + std::to_string(r) +
                                  ": not whole rows or beyond the host memory");
    }
    std::memcpy(mem.data() + (host_addr - base), v.data(), 4 * v.size());
  }
  expect_halted(run(programs), "load_vmem");
}

std::vector<std::vector<uint32_t>> PodRtl::dump_vmem(uint32_t row, uint32_t rows,
                                                     uint32_t host_addr) {
  std::vector<std::vector<Instruction>> programs;
  for (uint32_t r = 0; r < chips(); ++r) {
    if (host_addr < memory_base() || host_addr - memory_base() + uint64_t{rows} * 4 * N >
                                         (local(r) ? memory(r).size() : ~0ull)) {
      throw std::invalid_argument("PodRtl::dump_vmem: beyond the host memory");
    }
    ProgramBuilder b(params());
    if (rows > 0) b.write_vmem(row, rows, host_addr);
    programs.push_back(b.finish());
  }
  expect_halted(run(programs), "dump_vmem");
  std::vector<std::vector<uint32_t>> out(chips());
  for (uint32_t r = 0; r < chips(); ++r) {
    if (!local(r)) continue;
    out[r].resize(size_t{rows} * N);
    std::memcpy(out[r].data(), memory(r).data() + (host_addr - memory_base()), 4 * out[r].size());
  }
  if (impl_->transport) {  // every rank gets every chip's rows
    Writer w;
    for (uint32_t r = 0; r < chips(); ++r) {
      if (!local(r)) continue;
      for (uint32_t v : out[r]) w.put<uint32_t>(v);
    }
    PodTransport& t = *impl_->transport;
    const std::vector<std::string> from = t.exchange(std::vector<std::string>(t.ranks(), w.str()));
    for (uint32_t r = 0; r < chips(); ++r) {
      if (local(r)) continue;
      Reader rd(from.at(pod_rank_of(r, chips(), t.ranks())));
      // The rows of the chips before r on its rank come first.
      for (uint32_t q = 0; q < r; ++q) {
        if (pod_rank_of(q, chips(), t.ranks()) != pod_rank_of(r, chips(), t.ranks())) continue;
        for (size_t i = 0; i < size_t{rows} * N; ++i) rd.get<uint32_t>();
      }
      out[r].resize(size_t{rows} * N);
      for (uint32_t& v : out[r]) v = rd.get<uint32_t>();
    }
  }
  return out;
}

}  // namespace tpu::sim

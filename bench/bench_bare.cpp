// SPDX-License-Identifier: Apache-2.0
// Simulator benchmark, bare C++ harness: tpu_core Verilated WITHOUT SystemC (class
// Vtpu_core_bare), clocked by hand, with a minimal AXI4 memory responder and AXI4-Lite
// register master on its pins. Runs the same workload as bench_sc (workload.h).
//
// The AXI4 responder reproduces the SystemC testbench cycle for cycle (sim/axi4_tlm_bridge.h +
// sim/host_memory_model.h with the default ChipConfig: 10 cycles latency per burst, 16 bytes
// per cycle on one shared port, registered outputs, up to 4 bursts accepted per direction, no
// backpressure), so the chip's CYCLES counter matches the SystemC run exactly and the
// difference in wall time is the testbench's cost alone.
//
// Two evals per cycle: rising edge (flops sample the inputs the responder drove last cycle),
// then the new inputs with the clock low (combinational paths settle before they are sampled).
//
//   bench_bare_n<N> [--cycles C] [--rows-per-tile R] [--warmup W] [--vcd FILE] (trace build)
//                   [--write-image FILE]   (host memory image for the Icarus testbench)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "Vtpu_core_bare.h"
#include "registers.h"
#include "verilated.h"
#if VM_TRACE
#include "verilated_vcd_c.h"
#endif
#include "workload.h"

namespace {

using tpu::bench::Workload;

// ---- pins of any width <-> little-endian bytes ----
template <class T>
void pin_from_bytes(T& pin, const uint8_t* b, unsigned n) {
  if constexpr (std::is_integral_v<T>) {
    T v = 0;
    for (unsigned i = 0; i < n; ++i) v |= T(b[i]) << (8 * i);
    pin = v;
  } else {  // VlWide<words>
    for (unsigned w = 0; w * 4 < n; ++w) {
      uint32_t v = 0;
      for (unsigned i = 0; i < 4 && w * 4 + i < n; ++i) v |= uint32_t(b[w * 4 + i]) << (8 * i);
      pin[w] = v;
    }
  }
}
template <class T>
void pin_to_bytes(const T& pin, uint8_t* b, unsigned n) {
  if constexpr (std::is_integral_v<T>) {
    for (unsigned i = 0; i < n; ++i) b[i] = uint8_t(uint64_t(pin) >> (8 * i));
  } else {
    for (unsigned i = 0; i < n; ++i) b[i] = uint8_t(pin[i / 4] >> (8 * (i % 4)));
  }
}

// Flat host memory over [base, base + size).
struct HostMemory {
  uint32_t base = 0;
  std::vector<uint8_t> bytes;
  bool inside(uint64_t a, uint64_t len) const {
    return a >= base && a + len <= base + bytes.size();
  }
  uint8_t* at(uint64_t a) { return &bytes[a - base]; }
};

constexpr unsigned kBeatBytes = (8 * TPU_BENCH_N < 128 ? 8 * TPU_BENCH_N : 128) / 8;

// What the responder and the register master need from the chip's outputs, sampled before
// the rising edge.
struct Sampled {
  bool arvalid, rready, awvalid, wvalid, wlast, bready, irq;
  uint32_t araddr, arlen, awaddr, awlen;
  uint8_t wdata[kBeatBytes];
  uint32_t wstrb;
  bool s_awready, s_wready, s_bvalid, s_arready, s_rvalid;
  uint32_t s_bresp, s_rdata, s_rresp;
};

// sim/axi4_tlm_bridge.h + host_memory_model.h timing, without SystemC.
class AxiResponder {
 public:
  AxiResponder(HostMemory& mem, uint32_t latency, uint32_t bytes_per_cycle)
      : mem_(mem), latency_(latency), bpc_(bytes_per_cycle) {}

  void on_clock(const Sampled& s, bool rst_n, Vtpu_core_bare& m) {
    ++cycle_;
    if (!rst_n) {
      reads_.clear();
      write_addrs_.clear();
      write_data_.clear();
      write_resps_.clear();
      w_cur_ = {};
      arready_q_ = rvalid_q_ = awready_q_ = wready_q_ = bvalid_q_ = false;
      m.m_axi_arready_i = 0;
      m.m_axi_rvalid_i = 0;
      m.m_axi_rlast_i = 0;
      m.m_axi_rresp_i = 0;
      m.m_axi_awready_i = 0;
      m.m_axi_wready_i = 0;
      m.m_axi_bvalid_i = 0;
      m.m_axi_bresp_i = 0;
      return;
    }
    const bool ar_fire = arready_q_ && s.arvalid;
    const bool r_fire = rvalid_q_ && s.rready;
    const bool aw_fire = awready_q_ && s.awvalid;
    const bool w_fire = wready_q_ && s.wvalid;
    const bool b_fire = bvalid_q_ && s.bready;
    if (r_fire) {
      ReadBurst& b = reads_.front();
      if (++b.next_beat == b.beats) reads_.pop_front();
      rvalid_q_ = false;
    }
    if (b_fire) {
      write_resps_.pop_front();
      bvalid_q_ = false;
    }
    if (ar_fire) accept_read(s.araddr, s.arlen);
    if (aw_fire) write_addrs_.push_back({s.awaddr, s.awlen + 1});
    if (w_fire) {
      w_cur_.data.insert(w_cur_.data.end(), s.wdata, s.wdata + kBeatBytes);
      for (unsigned i = 0; i < kBeatBytes; ++i) w_cur_.enable.push_back((s.wstrb >> i) & 1);
      ++w_cur_.beats;
      if (s.wlast || w_cur_.beats == 256) {
        write_data_.push_back(std::move(w_cur_));
        w_cur_ = {};
      }
    }
    issue_writes();

    arready_q_ = reads_.size() < 4;
    awready_q_ = write_addrs_.size() + write_resps_.size() < 4;
    wready_q_ = write_data_.size() < 4;
    m.m_axi_arready_i = arready_q_;
    m.m_axi_awready_i = awready_q_;
    m.m_axi_wready_i = wready_q_;
    if (!rvalid_q_ && !reads_.empty()) {
      const ReadBurst& b = reads_.front();
      const unsigned beats_after = b.beats - 1 - b.next_beat;
      const uint64_t ready = b.last_beat_cycle > b.accepted_cycle + beats_after
                                 ? b.last_beat_cycle - beats_after
                                 : b.accepted_cycle;
      if (cycle_ >= ready) {
        pin_from_bytes(m.m_axi_rdata_i, &b.data[size_t(b.next_beat) * kBeatBytes], kBeatBytes);
        m.m_axi_rresp_i = b.resp;
        m.m_axi_rlast_i = b.next_beat + 1 == b.beats;
        rvalid_q_ = true;
      }
    }
    m.m_axi_rvalid_i = rvalid_q_;
    if (!bvalid_q_ && !write_resps_.empty() && cycle_ >= write_resps_.front().ready_cycle) {
      m.m_axi_bresp_i = write_resps_.front().resp;
      bvalid_q_ = true;
    }
    m.m_axi_bvalid_i = bvalid_q_;
  }

 private:
  struct ReadBurst {
    std::vector<uint8_t> data;
    uint32_t resp = 0;
    unsigned beats = 0, next_beat = 0;
    uint64_t accepted_cycle = 0, last_beat_cycle = 0;
  };
  struct WriteAddr {
    uint32_t addr;
    unsigned beats;
  };
  struct WriteData {
    std::vector<uint8_t> data, enable;
    unsigned beats = 0;
  };
  struct WriteResp {
    uint32_t resp;
    uint64_t ready_cycle;
  };

  // HostMemoryModel::b_transport: returns the completion delay in cycles.
  uint64_t transport_delay(uint64_t len) {
    const uint64_t start = std::max(cycle_, port_free_);
    const uint64_t transfer = bpc_ == 0 ? 0 : (len + bpc_ - 1) / bpc_;
    port_free_ = start + transfer;
    return start + transfer + latency_ - cycle_;
  }

  void accept_read(uint32_t addr, uint32_t len) {
    ReadBurst b;
    b.beats = len + 1;
    b.data.assign(size_t(b.beats) * kBeatBytes, 0);
    const uint32_t a = addr & ~(kBeatBytes - 1);
    if (mem_.inside(a, b.data.size())) {
      std::memcpy(b.data.data(), mem_.at(a), b.data.size());
    } else {
      b.resp = 3;  // DECERR
    }
    const uint64_t delay = transport_delay(b.data.size());
    b.accepted_cycle = cycle_;
    b.last_beat_cycle = cycle_ + delay;
    reads_.push_back(std::move(b));
  }

  void issue_writes() {
    while (!write_addrs_.empty() && !write_data_.empty()) {
      const WriteAddr a = write_addrs_.front();
      write_addrs_.pop_front();
      WriteData d = std::move(write_data_.front());
      write_data_.pop_front();
      const size_t len = size_t(a.beats) * kBeatBytes;
      d.data.resize(len, 0);
      d.enable.resize(len, 0);
      const uint32_t base = a.addr & ~(kBeatBytes - 1);
      uint32_t resp = 0;
      if (mem_.inside(base, len)) {
        for (size_t i = 0; i < len; ++i)
          if (d.enable[i]) *mem_.at(base + i) = d.data[i];
      } else {
        resp = 3;
      }
      write_resps_.push_back({resp, cycle_ + transport_delay(len)});
    }
  }

  HostMemory& mem_;
  uint32_t latency_, bpc_;
  uint64_t cycle_ = 0, port_free_ = 0;
  std::deque<ReadBurst> reads_;
  std::deque<WriteAddr> write_addrs_;
  WriteData w_cur_;
  std::deque<WriteData> write_data_;
  std::deque<WriteResp> write_resps_;
  bool arready_q_ = false, rvalid_q_ = false, awready_q_ = false, wready_q_ = false,
       bvalid_q_ = false;
};

class Harness {
 public:
  Harness(const Workload& w, const std::string& vcd) : ctx_(std::make_unique<VerilatedContext>()) {
#if VM_TRACE
    if (!vcd.empty()) ctx_->traceEverOn(true);
#else
    if (!vcd.empty())
      throw std::invalid_argument("--vcd needs the trace build (bench_bare_trace_n<N>)");
#endif
    m_ = std::make_unique<Vtpu_core_bare>(ctx_.get(), "tpu_core");
    mem_.base = tpu::bench::mem_base(w);
    mem_.bytes.assign(tpu::bench::mem_end(w) - mem_.base, 0);
    for (const auto& [addr, bytes] : w.init) std::memcpy(mem_.at(addr), bytes.data(), bytes.size());
    axi_ = std::make_unique<AxiResponder>(mem_, 10, 16);
#if VM_TRACE
    if (!vcd.empty()) {
      vcd_ = std::make_unique<VerilatedVcdC>();
      m_->trace(vcd_.get(), 99);
      vcd_->open(vcd.c_str());
    }
#endif
    m_->clk_i = 0;
    m_->rst_ni = 0;
    m_->eval();
  }
  ~Harness() {
#if VM_TRACE
    if (vcd_) vcd_->close();
#endif
    m_->final();
  }

  // One clock cycle (see the header comment).
  void tick() {
    Sampled s;
    Vtpu_core_bare& m = *m_;
    s.arvalid = m.m_axi_arvalid_o;
    s.araddr = m.m_axi_araddr_o;
    s.arlen = m.m_axi_arlen_o;
    s.rready = m.m_axi_rready_o;
    s.awvalid = m.m_axi_awvalid_o;
    s.awaddr = m.m_axi_awaddr_o;
    s.awlen = m.m_axi_awlen_o;
    s.wvalid = m.m_axi_wvalid_o;
    s.wlast = m.m_axi_wlast_o;
    if (s.wvalid) pin_to_bytes(m.m_axi_wdata_o, s.wdata, kBeatBytes);
    s.wstrb = uint32_t(m.m_axi_wstrb_o);
    s.bready = m.m_axi_bready_o;
    s.irq = m.irq_o;
    s.s_awready = m.s_axil_awready_o;
    s.s_wready = m.s_axil_wready_o;
    s.s_bvalid = m.s_axil_bvalid_o;
    s.s_bresp = m.s_axil_bresp_o;
    s.s_arready = m.s_axil_arready_o;
    s.s_rvalid = m.s_axil_rvalid_o;
    s.s_rdata = m.s_axil_rdata_o;
    s.s_rresp = m.s_axil_rresp_o;
    irq_ = s.irq;

    m.clk_i = 1;
    m.eval();
#if VM_TRACE
    if (vcd_) vcd_->dump(ctx_->time());
    ctx_->timeInc(1);
#endif
    axi_->on_clock(s, m.rst_ni, m);
    lite_on_clock(s);
    m.clk_i = 0;
    m.eval();
#if VM_TRACE
    if (vcd_) vcd_->dump(ctx_->time());
    ctx_->timeInc(1);
#endif
    ++cycle_;
  }

  void reset() {
    m_->rst_ni = 0;
    for (int i = 0; i < 8; ++i) tick();
    m_->rst_ni = 1;
    m_->eval();
    tick();
    tick();
  }

  uint32_t read_reg(uint32_t addr) {
    lite_ = {true, false, addr, 0, false, false, false, 0, 0};
    m_->s_axil_araddr_i = addr;
    m_->s_axil_arvalid_i = 1;
    m_->s_axil_rready_i = 1;
    m_->eval();
    finish_lite(addr);
    return lite_.data;
  }
  void write_reg(uint32_t addr, uint32_t value) {
    lite_ = {true, true, addr, value, false, false, false, 0, 0};
    m_->s_axil_awaddr_i = addr;
    m_->s_axil_awvalid_i = 1;
    m_->s_axil_wdata_i = value;
    m_->s_axil_wstrb_i = 0xF;
    m_->s_axil_wvalid_i = 1;
    m_->s_axil_bready_i = 1;
    m_->eval();
    finish_lite(addr);
  }

  bool irq() const { return irq_; }
  uint64_t cycle() const { return cycle_; }
  HostMemory& memory() { return mem_; }

 private:
  struct LiteOp {
    bool busy, write;
    uint32_t addr, data;
    bool addr_done, data_done, done;
    uint32_t resp, pad;
  };

  void finish_lite(uint32_t addr) {
    for (int i = 0; i < 1000 && !lite_.done; ++i) tick();
    if (!lite_.done)
      throw std::runtime_error("register access timed out at " + std::to_string(addr));
    if (lite_.resp != 0)
      throw std::runtime_error("register access answered SLVERR at " + std::to_string(addr));
  }

  // AXI4-Lite master: handshakes sampled before the edge, valids dropped after it.
  void lite_on_clock(const Sampled& s) {
    if (!lite_.busy) return;
    Vtpu_core_bare& m = *m_;
    if (lite_.write) {
      if (!lite_.addr_done && m.s_axil_awvalid_i && s.s_awready) {
        lite_.addr_done = true;
        m.s_axil_awvalid_i = 0;
      }
      if (!lite_.data_done && m.s_axil_wvalid_i && s.s_wready) {
        lite_.data_done = true;
        m.s_axil_wvalid_i = 0;
      }
      if (s.s_bvalid && m.s_axil_bready_i) {
        lite_.resp = s.s_bresp;
        m.s_axil_bready_i = 0;
        lite_.done = true;
        lite_.busy = false;
      }
    } else {
      if (!lite_.addr_done && m.s_axil_arvalid_i && s.s_arready) {
        lite_.addr_done = true;
        m.s_axil_arvalid_i = 0;
      }
      if (s.s_rvalid && m.s_axil_rready_i) {
        lite_.data = s.s_rdata;
        lite_.resp = s.s_rresp;
        m.s_axil_rready_i = 0;
        lite_.done = true;
        lite_.busy = false;
      }
    }
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_core_bare> m_;
#if VM_TRACE
  std::unique_ptr<VerilatedVcdC> vcd_;
#endif
  HostMemory mem_;
  std::unique_ptr<AxiResponder> axi_;
  LiteOp lite_{};
  bool irq_ = false;
  uint64_t cycle_ = 0;
};

// Register map: sim/registers.h (generated from docs/registers.csv).
using namespace tpu::sim::reg;
uint64_t counter(Harness& h, unsigned i) {
  const uint64_t lo = h.read_reg(counter_lo(i));
  return lo | (uint64_t(h.read_reg(counter_hi(i))) << 32);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Verilated::commandArgs(argc, argv);
    const tpu::bench::Options opt = tpu::bench::parse_options(argc, argv);
    const Workload w = tpu::bench::make_workload(TPU_BENCH_N, opt.target_cycles, opt.rows_per_tile);
    if (opt.has("--write-image")) {
      tpu::bench::write_readmemh(w, opt.get("--write-image"));
      std::printf(
          "IMAGE n=%u mem_base=%u mem_words=%u cmd_addr=%u cmd_count=%u out_addr=%u "
          "out_bytes=%zu tiles=%u rows_per_tile=%u warmup=%llu\n",
          w.n, tpu::bench::mem_base(w),
          (tpu::bench::mem_end(w) - tpu::bench::mem_base(w)) / w.axi_bytes, w.cmd_addr, w.cmd_count,
          w.out_addr, w.expected.size(), w.tiles, w.rows_per_tile,
          (unsigned long long)w.warmup_cycles);
      // Expected result bytes, one hex byte per line.
      FILE* f = std::fopen((opt.get("--write-image") + ".expected").c_str(), "w");
      if (!f) throw std::runtime_error("cannot write the expected file");
      for (uint8_t b : w.expected) std::fprintf(f, "%02x\n", b);
      std::fclose(f);
      return 0;
    }
    const uint64_t warmup = opt.warmup >= 0 ? uint64_t(opt.warmup) : w.warmup_cycles;

    Harness h(w, opt.get("--vcd"));
    h.reset();
    h.write_reg(kIrqStatus, kIrqDone | kIrqError);
    h.write_reg(kCmdAddr, w.cmd_addr);
    h.write_reg(kCmdCount, w.cmd_count);
    h.write_reg(kCtrl, kCtrlStart);
    const uint64_t start_cycle = h.cycle();
    const auto t_setup = std::chrono::steady_clock::now();
    const uint64_t limit = uint64_t(1) << 40;
    while (!h.irq() && h.cycle() < start_cycle + warmup) h.tick();
    // MXU busy over the timed part (as bench_sc: low words of CYCLES and MXU_BUSY).
    uint32_t cycles0 = 0, busy0 = 0;
    if (!h.irq()) {
      cycles0 = h.read_reg(counter_lo(kCounterCycles));
      busy0 = h.read_reg(counter_lo(kCounterMxuBusy));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = h.cycle();
    while (!h.irq() && h.cycle() < limit) h.tick();
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t measured = h.cycle() - c0;
    const uint32_t status = h.read_reg(kStatus);
    if (!(status & kStatusDone)) {
      std::fprintf(stderr, "bench_bare: the chip stopped with STATUS %#x, error %u at %u\n", status,
                   h.read_reg(kErrCode), h.read_reg(kErrPc));
      return 1;
    }
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    const double warm_secs = std::chrono::duration<double>(t0 - t_setup).count();
    const uint64_t cycles = counter(h, 0), busy = counter(h, 1), wstall = counter(h, 3);
    std::vector<uint8_t> got(w.expected.size());
    std::memcpy(got.data(), h.memory().at(w.out_addr), got.size());
    const size_t bad = tpu::bench::count_mismatches(w, got);
    std::printf(
        "RESULT harness=%s n=%u tiles=%u rows_per_tile=%u counter_cycles=%llu "
        "mxu_busy=%llu busy_pct=%.1f timed_busy_pct=%.1f weight_stall=%llu "
        "start_cycle=%llu warmup=%llu "
        "warmup_s=%.4f measured_cycles=%llu seconds=%.4f cps=%.1f mismatches=%zu\n",
        TPU_BENCH_HARNESS, TPU_BENCH_N, w.tiles, w.rows_per_tile, (unsigned long long)cycles,
        (unsigned long long)busy, 100.0 * double(busy) / double(cycles),
        100.0 * double(busy - busy0) / double(cycles - cycles0), (unsigned long long)wstall,
        (unsigned long long)start_cycle, (unsigned long long)warmup, warm_secs,
        (unsigned long long)measured, secs, double(measured) / secs, bad);
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_bare: %s\n", e.what());
    return 1;
  }
}

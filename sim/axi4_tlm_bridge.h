// SPDX-License-Identifier: Apache-2.0
// Pin-level AXI4 slave that forwards the chip's master port to a TLM-2.0 target (host memory).
//
// Scope (what tpu_core's m_axi_* port uses): INCR bursts of 1..256 beats, every beat the full
// data width, no IDs, responses in order. Each burst becomes one b_transport call when its
// address (reads) or its last data beat (writes) is accepted; the TLM delay annotation decides
// when the data/response appears on the pins:
//   * read burst of B beats completing after d cycles: beat i is presented no earlier than
//     cycle accept + d - (B - 1 - i), i.e. the beats stream at one per cycle and the last
//     one lands when the memory says the transfer is complete;
//   * write: BVALID no earlier than d cycles after the last W beat.
// The TLM response maps to RRESP/BRESP: OK -> OKAY(0), ADDRESS_ERROR -> DECERR(3),
// anything else -> SLVERR(2); a failing read burst returns zero data on every beat.
//
// All outputs are registered (driven on the rising clock edge, like RTL), so the chip sees a
// minimum latency of one cycle. Random backpressure (seeded): each cycle ARREADY, AWREADY and
// WREADY are independently held low with probability p, and a ready RVALID/BVALID is delayed by
// a cycle with probability p. Once raised, RVALID/BVALID stay high until accepted (AXI rule).
//
// While nothing is in flight, no backpressure is configured and ARVALID, AWVALID and WVALID are
// low, a rising edge changes nothing but the cycle count, so the clocked process sleeps until
// one of those (or RST_N) changes or set_backpressure() is called, and then catches up with the
// edges it slept through (clock_period must be the period of clk). A pure speed measure:
// outputs, timing and checks are those of a process that runs on every edge.
//
// The bridge checks the master's side of the protocol (burst type, size, alignment, 4 KiB
// boundary, WLAST position, AR/AW held stable until accepted) and records violations instead
// of throwing from inside the SystemC kernel; the owner polls protocol_violations().
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <deque>
#include <sstream>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "axi_types.h"
#include "pin_types.h"
#include "random_stall.h"

namespace tpu::sim {

inline uint32_t axi_resp_from_tlm(tlm::tlm_response_status status) {
  if (status == tlm::TLM_OK_RESPONSE) return kAxiOkay;
  if (status == tlm::TLM_ADDRESS_ERROR_RESPONSE) return kAxiDecErr;
  return kAxiSlvErr;
}

template <unsigned W>
class Axi4ToTlmBridge : public sc_core::sc_module {
  static_assert(W >= 8 && W <= 512 && (W & (W - 1)) == 0,
                "AXI data width must be a power of two between 8 and 512 bits");

 public:
  using Data = PinType_t<W>;
  using Strb = PinType_t<W / 8>;
  static constexpr unsigned kBeatBytes = W / 8;
  static constexpr unsigned kMaxBurstBeats = 256;

  sc_core::sc_in<bool> clk;
  sc_core::sc_in<bool> rst_n;
  // read address
  sc_core::sc_in<uint32_t> araddr, arlen, arsize, arburst;
  sc_core::sc_in<bool> arvalid;
  sc_core::sc_out<bool> arready;
  // read data
  sc_core::sc_out<Data> rdata;
  sc_core::sc_out<uint32_t> rresp;
  sc_core::sc_out<bool> rlast, rvalid;
  sc_core::sc_in<bool> rready;
  // write address
  sc_core::sc_in<uint32_t> awaddr, awlen, awsize, awburst;
  sc_core::sc_in<bool> awvalid;
  sc_core::sc_out<bool> awready;
  // write data
  sc_core::sc_in<Data> wdata;
  sc_core::sc_in<Strb> wstrb;
  sc_core::sc_in<bool> wlast, wvalid;
  sc_core::sc_out<bool> wready;
  // write response
  sc_core::sc_out<uint32_t> bresp;
  sc_core::sc_out<bool> bvalid;
  sc_core::sc_in<bool> bready;

  tlm_utils::simple_initiator_socket<Axi4ToTlmBridge> socket;

  SC_HAS_PROCESS(Axi4ToTlmBridge);
  Axi4ToTlmBridge(sc_core::sc_module_name name, sc_core::sc_time clock_period)
      : sc_core::sc_module(name),
        clk("clk"),
        rst_n("rst_n"),
        araddr("araddr"),
        arlen("arlen"),
        arsize("arsize"),
        arburst("arburst"),
        arvalid("arvalid"),
        arready("arready"),
        rdata("rdata"),
        rresp("rresp"),
        rlast("rlast"),
        rvalid("rvalid"),
        rready("rready"),
        awaddr("awaddr"),
        awlen("awlen"),
        awsize("awsize"),
        awburst("awburst"),
        awvalid("awvalid"),
        awready("awready"),
        wdata("wdata"),
        wstrb("wstrb"),
        wlast("wlast"),
        wvalid("wvalid"),
        wready("wready"),
        bresp("bresp"),
        bvalid("bvalid"),
        bready("bready"),
        socket("socket"),
        clock_period_(clock_period) {
    SC_METHOD(on_clock);
    sensitive << clk.pos();
    dont_initialize();
  }

  // Probability in [0, 1) that a channel stalls in a given cycle; the seed fixes the pattern.
  void set_backpressure(double probability, uint64_t seed) {
    stall_.configure(probability, seed);
    if (asleep_) wake_.notify(sc_core::SC_ZERO_TIME);  // a stalling bridge draws every cycle
  }
  // Bursts the bridge accepts before it holds ARREADY (reads) / AWREADY (writes) low.
  void set_max_outstanding(unsigned reads, unsigned writes) {
    max_reads_ = reads ? reads : 1;
    max_writes_ = writes ? writes : 1;
  }

  // Sleeping (see the file comment) since an edge before `t`: until ARVALID, AWVALID, WVALID or
  // RST_N changes, the bridge does nothing at the edges, and the outputs it wrote before falling
  // asleep have reached the pins (at the edge it falls asleep, its last writes are still on
  // their way while processes of that edge run).
  bool asleep_before(const sc_core::sc_time& t) const { return asleep_ && slept_at_ < t; }

  const std::vector<std::string>& protocol_violations() const { return violations_; }
  void clear_protocol_violations() { violations_.clear(); }
  const AxiBridgeStats& stats() const { return stats_; }
  // True while any burst is queued or in flight on either direction.
  bool busy() const {
    return !reads_.empty() || !write_addrs_.empty() || !write_data_.empty() ||
           !write_resps_.empty() || w_current_.beats != 0;
  }

 private:
  struct ReadBurst {
    std::vector<uint8_t> data;
    uint32_t resp = kAxiOkay;
    unsigned beats = 0;
    unsigned next_beat = 0;
    uint64_t accepted_cycle = 0;
    uint64_t last_beat_cycle = 0;  // earliest cycle the last beat may be presented
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
  struct AddrPhase {  // AR/AW as seen last cycle, for the stability rule
    bool waiting = false;
    uint32_t addr = 0, len = 0, size = 0, burst = 0;
  };

  static constexpr uint32_t size_code() {
    uint32_t s = 0;
    while ((1u << s) < kBeatBytes) ++s;
    return s;
  }

  static std::string hex(uint64_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
  }

  void violation(const std::string& what) {
    if (violations_.size() < 64)
      violations_.push_back(std::string(name()) + " cycle " + std::to_string(cycle_) + ": " + what);
  }

  uint64_t delay_cycles(const sc_core::sc_time& delay) const {
    const uint64_t d = delay.value(), p = clock_period_.value();
    return (d + p - 1) / p;
  }

  void check_burst(const char* ch, uint32_t addr, uint32_t len, uint32_t size, uint32_t burst) {
    if (burst != 1)
      violation(std::string(ch) + "BURST=" + std::to_string(burst) + " at " + hex(addr) +
                " (only INCR=1 is supported)");
    if (size != size_code())
      violation(std::string(ch) + "SIZE=" + std::to_string(size) + " at " + hex(addr) +
                " but the data bus is " + std::to_string(W) + " bits (expected " +
                std::to_string(size_code()) + ")");
    if (addr % kBeatBytes != 0)
      violation(std::string(ch) + "ADDR=" + hex(addr) + " is not aligned to the " +
                std::to_string(kBeatBytes) + "-byte beat");
    const uint64_t bytes = static_cast<uint64_t>(len + 1) * kBeatBytes;
    if ((addr & 0xFFFu) + bytes > 4096)
      violation(std::string(ch) + " burst " + hex(addr) + " + " + std::to_string(bytes) +
                " bytes crosses a 4 KiB boundary");
  }

  void check_stable(const char* ch, AddrPhase& prev, bool valid, bool fired, uint32_t addr,
                    uint32_t len, uint32_t size, uint32_t burst) {
    if (prev.waiting) {
      if (!valid)
        violation(std::string(ch) + "VALID dropped before " + ch + "READY (burst at " +
                  hex(prev.addr) + ")");
      else if (addr != prev.addr || len != prev.len || size != prev.size || burst != prev.burst)
        violation(std::string(ch) + " payload changed while " + ch + "VALID waited for " + ch +
                  "READY (" + hex(prev.addr) + " -> " + hex(addr) + ")");
    }
    prev = {valid && !fired, addr, len, size, burst};
  }

  std::pair<uint32_t, uint64_t> transport(tlm::tlm_command cmd, uint32_t addr, uint8_t* data,
                                          unsigned len, uint8_t* enable) {
    tlm::tlm_generic_payload t;
    t.set_command(cmd);
    t.set_address(addr);
    t.set_data_ptr(data);
    t.set_data_length(len);
    t.set_streaming_width(len);
    t.set_byte_enable_ptr(enable);
    t.set_byte_enable_length(enable ? len : 0);
    t.set_dmi_allowed(false);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(t, delay);
    const uint32_t resp = axi_resp_from_tlm(t.get_response_status());
    if (resp != kAxiOkay) ++stats_.error_responses;
    return {resp, delay_cycles(delay)};
  }

  void accept_read(uint32_t addr, uint32_t len, uint32_t size, uint32_t burst) {
    check_burst("AR", addr, len, size, burst);
    ReadBurst b;
    b.beats = len + 1;
    b.data.assign(static_cast<size_t>(b.beats) * kBeatBytes, 0);
    const uint32_t aligned = addr & ~(kBeatBytes - 1);
    auto [resp, delay] = transport(tlm::TLM_READ_COMMAND, aligned, b.data.data(),
                                   static_cast<unsigned>(b.data.size()), nullptr);
    b.resp = resp;
    if (resp != kAxiOkay) std::fill(b.data.begin(), b.data.end(), 0);
    b.accepted_cycle = cycle_;
    b.last_beat_cycle = cycle_ + delay;
    reads_.push_back(std::move(b));
    ++stats_.read_bursts;
  }

  void accept_write_beat() {
    const size_t off = w_current_.data.size();
    w_current_.data.resize(off + kBeatBytes);
    w_current_.enable.resize(off + kBeatBytes);
    pin_to_bytes(wdata.read(), &w_current_.data[off], kBeatBytes);
    const uint64_t strb = static_cast<uint64_t>(wstrb.read());
    for (unsigned i = 0; i < kBeatBytes; ++i)
      w_current_.enable[off + i] = ((strb >> i) & 1) ? TLM_BYTE_ENABLED : TLM_BYTE_DISABLED;
    ++w_current_.beats;
    ++stats_.write_beats;
    const bool last = wlast.read();
    if (!last && w_current_.beats == kMaxBurstBeats)
      violation("no WLAST after " + std::to_string(kMaxBurstBeats) + " write beats");
    if (last || w_current_.beats == kMaxBurstBeats) {
      write_data_.push_back(std::move(w_current_));
      w_current_ = WriteData{};
    }
  }

  // Pair complete W bursts with their addresses, in order, and perform them.
  void issue_writes() {
    while (!write_addrs_.empty() && !write_data_.empty()) {
      const WriteAddr a = write_addrs_.front();
      write_addrs_.pop_front();
      WriteData d = std::move(write_data_.front());
      write_data_.pop_front();
      if (d.beats != a.beats)
        violation("write burst at " + hex(a.addr) + " has AWLEN+1=" + std::to_string(a.beats) +
                  " beats but WLAST came with beat " + std::to_string(d.beats));
      // The address phase is authoritative: pad missing beats with disabled bytes.
      const size_t len = static_cast<size_t>(a.beats) * kBeatBytes;
      d.data.resize(len, 0);
      d.enable.resize(len, TLM_BYTE_DISABLED);
      auto [resp, delay] = transport(tlm::TLM_WRITE_COMMAND, a.addr & ~(kBeatBytes - 1),
                                     d.data.data(), static_cast<unsigned>(len), d.enable.data());
      write_resps_.push_back({resp, cycle_ + delay});
      ++stats_.write_bursts;
    }
  }

  void reset_state() {
    reads_.clear();
    write_addrs_.clear();
    write_data_.clear();
    write_resps_.clear();
    w_current_ = WriteData{};
    arready_q_ = rvalid_q_ = awready_q_ = wready_q_ = bvalid_q_ = false;
    ar_prev_ = aw_prev_ = AddrPhase{};
    arready.write(false);
    rvalid.write(false);
    rlast.write(false);
    rresp.write(kAxiOkay);
    awready.write(false);
    wready.write(false);
    bvalid.write(false);
    bresp.write(kAxiOkay);
  }

  void end_of_elaboration() override {
    wake_up_on_ = arvalid.value_changed_event() | awvalid.value_changed_event() |
                  wvalid.value_changed_event() | rst_n.value_changed_event() | wake_;
  }

  void on_clock() {
    if (asleep_) {
      // Woken (see the file comment): the edges slept through did nothing. Back on the clock.
      asleep_ = false;
      next_trigger();
      const uint64_t edges = (sc_core::sc_time_stamp() - slept_at_).value() / clock_period_.value();
      // Woken in the very delta of a rising edge: that edge is handled below, as usual.
      const bool edge_now = clk->posedge();
      cycle_ += edges - (edge_now ? 1 : 0);
      if (!edge_now) return;
    }
    ++cycle_;
    if (!rst_n.read()) {
      reset_state();
      return;
    }
    // 1. Handshakes of the cycle that just ended (inputs still hold their pre-edge values).
    const bool ar_valid = arvalid.read(), aw_valid = awvalid.read();
    const bool ar_fire = arready_q_ && ar_valid;
    const bool r_fire = rvalid_q_ && rready.read();
    const bool aw_fire = awready_q_ && aw_valid;
    const bool w_fire = wready_q_ && wvalid.read();
    const bool b_fire = bvalid_q_ && bready.read();

    if (ar_valid || ar_prev_.waiting)
      check_stable("AR", ar_prev_, ar_valid, ar_fire, araddr.read(), arlen.read(), arsize.read(),
                   arburst.read());
    if (aw_valid || aw_prev_.waiting)
      check_stable("AW", aw_prev_, aw_valid, aw_fire, awaddr.read(), awlen.read(), awsize.read(),
                   awburst.read());

    if (r_fire) {
      ReadBurst& b = reads_.front();
      ++stats_.read_beats;
      if (++b.next_beat == b.beats) reads_.pop_front();
      rvalid_q_ = false;
    }
    if (b_fire) {
      write_resps_.pop_front();
      bvalid_q_ = false;
    }
    if (ar_fire) accept_read(araddr.read(), arlen.read(), arsize.read(), arburst.read());
    if (aw_fire) {
      const uint32_t addr = awaddr.read(), len = awlen.read();
      check_burst("AW", addr, len, awsize.read(), awburst.read());
      write_addrs_.push_back({addr, len + 1});
    }
    if (w_fire) accept_write_beat();
    issue_writes();

    // 2. Outputs for the next cycle.
    arready_q_ = reads_.size() < max_reads_ && !stall_.stall();
    awready_q_ = write_addrs_.size() + write_resps_.size() < max_writes_ && !stall_.stall();
    wready_q_ = write_data_.size() < max_writes_ && !stall_.stall();
    arready.write(arready_q_);
    awready.write(awready_q_);
    wready.write(wready_q_);

    if (!rvalid_q_ && !reads_.empty()) {
      const ReadBurst& b = reads_.front();
      const unsigned beats_after = b.beats - 1 - b.next_beat;
      const uint64_t ready = b.last_beat_cycle > b.accepted_cycle + beats_after
                                 ? b.last_beat_cycle - beats_after
                                 : b.accepted_cycle;
      if (cycle_ >= ready && !stall_.stall()) {
        Data beat{};
        pin_from_bytes(&b.data[static_cast<size_t>(b.next_beat) * kBeatBytes], kBeatBytes, beat);
        rdata.write(beat);
        rresp.write(b.resp);
        rlast.write(b.next_beat + 1 == b.beats);
        rvalid_q_ = true;
      }
    }
    rvalid.write(rvalid_q_);

    if (!bvalid_q_ && !write_resps_.empty() && cycle_ >= write_resps_.front().ready_cycle &&
        !stall_.stall()) {
      bresp.write(write_resps_.front().resp);
      bvalid_q_ = true;
    }
    bvalid.write(bvalid_q_);

    // Idle: the next edges repeat these outputs until a valid rises (see the file comment).
    if (stall_.probability() == 0.0 && !busy() && !rvalid_q_ && !bvalid_q_ && !ar_prev_.waiting &&
        !aw_prev_.waiting) {
      asleep_ = true;
      slept_at_ = sc_core::sc_time_stamp();
      next_trigger(wake_up_on_);
    }
  }

  sc_core::sc_time clock_period_;
  RandomStall stall_;
  unsigned max_reads_ = 4, max_writes_ = 4;
  uint64_t cycle_ = 0;
  // Idle sleep (see the file comment): since the edge at slept_at_, waiting for wake_up_on_.
  bool asleep_ = false;
  sc_core::sc_time slept_at_;
  sc_core::sc_event wake_;
  sc_core::sc_event_or_list wake_up_on_;

  std::deque<ReadBurst> reads_;
  std::deque<WriteAddr> write_addrs_;
  WriteData w_current_;
  std::deque<WriteData> write_data_;
  std::deque<WriteResp> write_resps_;

  // Registered outputs as the chip sees them this cycle.
  bool arready_q_ = false, rvalid_q_ = false, awready_q_ = false, wready_q_ = false,
       bvalid_q_ = false;
  AddrPhase ar_prev_, aw_prev_;
  std::vector<std::string> violations_;
  AxiBridgeStats stats_;
};

}  // namespace tpu::sim

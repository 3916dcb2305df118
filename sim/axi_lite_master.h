// SPDX-License-Identifier: Apache-2.0
// Pin-level AXI4-Lite master: the host CPU's register port into the chip (s_axil_*).
//
// The host posts one request at a time (post_read / post_write); the clocked process drives
// it onto the pins on the following rising edges and records the response. on_complete runs
// inside the SystemC kernel when the response handshake happens (the Chip uses it to pause
// sc_start, so a register access costs only the cycles it really takes).
//
// Between requests (idle, every output low) the clocked process sleeps until the next post_*()
// instead of running on every edge; being woken does nothing but put it back on the clock.
//
// With backpressure p > 0, AWVALID and WVALID each start 0..2 cycles late (independently, so
// both orders occur) and RREADY/BREADY are held low with probability p per cycle.
#pragma once

#include <cstdint>
#include <functional>
#include <systemc>

#include "random_stall.h"

namespace tpu::sim {

class AxiLiteMaster : public sc_core::sc_module {
 public:
  struct Response {
    uint32_t data = 0;  // read data (0 for writes)
    uint32_t resp = 0;  // RRESP / BRESP
  };

  sc_core::sc_in<bool> clk;
  sc_core::sc_in<bool> rst_n;
  sc_core::sc_out<uint32_t> awaddr;
  sc_core::sc_out<bool> awvalid;
  sc_core::sc_in<bool> awready;
  sc_core::sc_out<uint32_t> wdata, wstrb;
  sc_core::sc_out<bool> wvalid;
  sc_core::sc_in<bool> wready;
  sc_core::sc_in<uint32_t> bresp;
  sc_core::sc_in<bool> bvalid;
  sc_core::sc_out<bool> bready;
  sc_core::sc_out<uint32_t> araddr;
  sc_core::sc_out<bool> arvalid;
  sc_core::sc_in<bool> arready;
  sc_core::sc_in<uint32_t> rdata, rresp;
  sc_core::sc_in<bool> rvalid;
  sc_core::sc_out<bool> rready;

  std::function<void()> on_complete;

  SC_HAS_PROCESS(AxiLiteMaster);
  explicit AxiLiteMaster(sc_core::sc_module_name name);

  void set_backpressure(double probability, uint64_t seed) { stall_.configure(probability, seed); }

  // Throws std::logic_error if a request is still pending.
  void post_read(uint32_t addr);
  void post_write(uint32_t addr, uint32_t data, uint32_t strb = 0xF);
  bool pending() const { return state_ != State::kIdle; }
  bool complete() const { return complete_; }
  // Idle and sleeping until post_*(): every output low, nothing done at the edges (it falls
  // asleep only at an edge where its outputs were low already, writing nothing).
  bool asleep() const { return asleep_; }
  const Response& response() const { return response_; }
  // Which handshakes an unfinished request still waits for, e.g. "AW W B" (for timeouts).
  std::string waiting_for() const;
  // Give up on the pending request (after a timeout): valids drop on the next edge.
  void abandon();

 private:
  enum class State { kIdle, kRead, kWrite };

  void on_clock();
  void drive_idle();

  RandomStall stall_;
  State state_ = State::kIdle;
  bool complete_ = false;
  Response response_;
  uint32_t addr_ = 0, data_ = 0, strb_ = 0;
  // Progress of the current request; *_q_ mirror what the pins show this cycle.
  bool addr_done_ = false, data_done_ = false;
  unsigned addr_delay_ = 0, data_delay_ = 0;
  bool awvalid_q_ = false, wvalid_q_ = false, arvalid_q_ = false, rready_q_ = false,
       bready_q_ = false;
  // Idle sleep: set while on_clock waits for wake_ (notified by post_*) instead of the clock.
  bool asleep_ = false;
  sc_core::sc_event wake_;
};

}  // namespace tpu::sim

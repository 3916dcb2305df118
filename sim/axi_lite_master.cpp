// SPDX-License-Identifier: Apache-2.0
#include "axi_lite_master.h"

#include <stdexcept>
#include <string>

namespace tpu::sim {

AxiLiteMaster::AxiLiteMaster(sc_core::sc_module_name name)
    : sc_core::sc_module(name),
      clk("clk"),
      rst_n("rst_n"),
      awaddr("awaddr"),
      awvalid("awvalid"),
      awready("awready"),
      wdata("wdata"),
      wstrb("wstrb"),
      wvalid("wvalid"),
      wready("wready"),
      bresp("bresp"),
      bvalid("bvalid"),
      bready("bready"),
      araddr("araddr"),
      arvalid("arvalid"),
      arready("arready"),
      rdata("rdata"),
      rresp("rresp"),
      rvalid("rvalid"),
      rready("rready") {
  SC_METHOD(on_clock);
  sensitive << clk.pos();
  dont_initialize();
}

void AxiLiteMaster::post_read(uint32_t addr) {
  if (pending()) throw std::logic_error("AxiLiteMaster::post_read: a request is still pending");
  state_ = State::kRead;
  complete_ = false;
  response_ = {};
  addr_ = addr;
  addr_done_ = false;
  data_done_ = true;  // reads have no data phase
  addr_delay_ = static_cast<unsigned>(stall_.stall()) + static_cast<unsigned>(stall_.stall());
  data_delay_ = 0;
  if (asleep_) wake_.notify(sc_core::SC_ZERO_TIME);
}

void AxiLiteMaster::post_write(uint32_t addr, uint32_t data, uint32_t strb) {
  if (pending()) throw std::logic_error("AxiLiteMaster::post_write: a request is still pending");
  state_ = State::kWrite;
  complete_ = false;
  response_ = {};
  addr_ = addr;
  data_ = data;
  strb_ = strb;
  addr_done_ = data_done_ = false;
  addr_delay_ = static_cast<unsigned>(stall_.stall()) + static_cast<unsigned>(stall_.stall());
  data_delay_ = static_cast<unsigned>(stall_.stall()) + static_cast<unsigned>(stall_.stall());
  if (asleep_) wake_.notify(sc_core::SC_ZERO_TIME);
}

std::string AxiLiteMaster::waiting_for() const {
  std::string s;
  if (state_ == State::kRead) s = addr_done_ ? "R" : "AR R";
  if (state_ == State::kWrite) {
    if (!addr_done_) s += "AW ";
    if (!data_done_) s += "W ";
    s += "B";
  }
  return s;
}

void AxiLiteMaster::abandon() {
  state_ = State::kIdle;
  complete_ = false;
}

void AxiLiteMaster::drive_idle() {
  awvalid_q_ = wvalid_q_ = arvalid_q_ = rready_q_ = bready_q_ = false;
  awvalid.write(false);
  wvalid.write(false);
  arvalid.write(false);
  rready.write(false);
  bready.write(false);
}

void AxiLiteMaster::on_clock() {
  if (asleep_) {  // woken by post_*(), between edges: back on the clock for the next one
    asleep_ = false;
    next_trigger();
    return;
  }
  if (!rst_n.read()) {
    // A request cannot survive a reset of the slave; the host side sees a timeout.
    state_ = State::kIdle;
    drive_idle();
    return;
  }
  if (state_ == State::kIdle) {
    if (awvalid_q_ || wvalid_q_ || arvalid_q_ || rready_q_ || bready_q_) {
      drive_idle();
    } else {
      // Idle with every output low: the next edges would do nothing (a reset neither: it
      // only forces this state). Sleep until post_*() has a request.
      asleep_ = true;
      next_trigger(wake_);
    }
    return;
  }

  // Handshakes of the cycle that just ended.
  if (arvalid_q_ && arready.read()) {
    addr_done_ = true;
    arvalid_q_ = false;
  }
  if (awvalid_q_ && awready.read()) {
    addr_done_ = true;
    awvalid_q_ = false;
  }
  if (wvalid_q_ && wready.read()) {
    data_done_ = true;
    wvalid_q_ = false;
  }
  const bool read_done = state_ == State::kRead && rready_q_ && rvalid.read();
  const bool write_done = state_ == State::kWrite && bready_q_ && bvalid.read();
  if (read_done || write_done) {
    response_.data = read_done ? rdata.read() : 0;
    response_.resp = read_done ? rresp.read() : bresp.read();
    state_ = State::kIdle;
    complete_ = true;
    drive_idle();
    if (on_complete) on_complete();
    return;
  }

  // Outputs for the next cycle.
  if (!addr_done_ && !(state_ == State::kRead ? arvalid_q_ : awvalid_q_)) {
    if (addr_delay_ > 0) {
      --addr_delay_;
    } else if (state_ == State::kRead) {
      araddr.write(addr_);
      arvalid_q_ = true;
    } else {
      awaddr.write(addr_);
      awvalid_q_ = true;
    }
  }
  if (state_ == State::kWrite && !data_done_ && !wvalid_q_) {
    if (data_delay_ > 0) {
      --data_delay_;
    } else {
      wdata.write(data_);
      wstrb.write(strb_);
      wvalid_q_ = true;
    }
  }
  const bool response_phase = addr_done_ && data_done_;
  rready_q_ = state_ == State::kRead && response_phase && !stall_.stall();
  bready_q_ = state_ == State::kWrite && response_phase && !stall_.stall();
  arvalid.write(arvalid_q_);
  awvalid.write(awvalid_q_);
  wvalid.write(wvalid_q_);
  rready.write(rready_q_);
  bready.write(bready_q_);
}

}  // namespace tpu::sim

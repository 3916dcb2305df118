// SPDX-License-Identifier: Apache-2.0
// One direction of an inter-chip link (issue 31, docs/pod.md "The RTL pod"): the wire from a
// chip's out stream (rtl/tpu_ici.sv tx_*) to its neighbour's in stream (rx_*), cycle by cycle.
//
// * Latency: a beat the sender hands over at the clock edge ending cycle t is on the
//   receiver's rx_* from cycle t + latency; the receiver's posted want (tpu_ici_rx: its row
//   count while a receive waits for its message) reaches the sender `latency` cycles after it
//   is posted (the rendezvous: a message starts only against a posted receive, so a transfer
//   costs a round trip when the receive is posted after the send is issued).
// * Bandwidth: one beat of IciWidth bits per cycle; credit flow control with `capacity` beats
//   of buffering at the receiving end, a credit returning `latency` cycles after the receiver
//   took the beat (capacity >= 2 * latency + 1 keeps a ready receiver at one beat per cycle).
// * A receive dropped before its message's first beat arrived (its chip stopped: the want
//   falls to 0 without a first beat taken) withdraws its posted want, so no message starts
//   against it.
// * Sizes: the sender's first beat is checked against the posted want by the sender itself
//   (ERR_ICI_SIZE); the channel delivers that beat all the same, so the receiver checks it too.
//
// The caller evaluates both chips with tx_ready() / tx_want() / rx_valid() / rx_beat() as
// their inputs, then calls step() with what they did in that cycle (before the next cycle).
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <vector>

namespace tpu::sim {

struct IciBeat {
  bool first = false;
  uint32_t rows = 0;           // the message's row count (the header, on the first beat)
  std::vector<uint32_t> data;  // IciWidth / 32 words, word k = bits [32k +: 32]
};

class IciChannel {
 public:
  // beats_per_row = 32 N / IciWidth (the message length is rows * beats_per_row beats).
  IciChannel(uint32_t latency, uint32_t beats_per_row, uint32_t capacity = 0)
      : latency_(latency),
        beats_per_row_(beats_per_row),
        capacity_(capacity != 0 ? capacity : 2 * latency + 2) {
    if (latency == 0) throw std::invalid_argument("IciChannel: latency must be >= 1 cycle");
    if (beats_per_row == 0) throw std::invalid_argument("IciChannel: beats_per_row must be >= 1");
  }

  // ---- the sender's inputs in the current cycle
  uint32_t tx_want() const {
    if (in_msg_ || tokens_.empty() || tokens_.front().at > now_) return 0;
    return tokens_.front().want;
  }
  bool tx_ready() const { return credits_ > 0 && (in_msg_ || tx_want() != 0); }

  // ---- the receiver's inputs in the current cycle
  bool rx_valid() const { return !fwd_.empty() && fwd_.front().at <= now_; }
  const IciBeat& rx_beat() const { return fwd_.front().beat; }

  // The clock edge ending the current cycle: whether the sender's beat was handed over
  // (tx_valid && tx_ready, with the beat), whether the receiver took its beat (rx_valid &&
  // rx_ready), and the receiver's want output in this cycle.
  void step(bool tx_fire, const IciBeat& tx_beat, bool rx_fire, uint32_t rx_want) {
    fwd_first_ = false;
    if (rx_fire) {
      if (!rx_valid()) throw std::logic_error("IciChannel: receiver took a beat that is not there");
      fwd_first_ = fwd_.front().beat.first;
      fwd_.pop_front();
      returns_.push_back(now_ + latency_);
      ++delivered_;
    }
    if (tx_fire) {
      if (!tx_ready()) throw std::logic_error("IciChannel: sender handed over without ready");
      if (tx_beat.first != !in_msg_) throw std::logic_error("IciChannel: message framing");
      if (tx_beat.first) {
        const uint32_t want = tx_want();
        tokens_.pop_front();
        // A size mismatch: the sender faults; only this header beat travels.
        in_msg_ = want == tx_beat.rows;
        left_ = in_msg_ ? uint64_t{tx_beat.rows} * beats_per_row_ - 1 : 0;
        if (left_ == 0) in_msg_ = false;
      } else if (--left_ == 0) {
        in_msg_ = false;
      }
      --credits_;
      fwd_.push_back({tx_beat, now_ + latency_});
      ++sent_;
    }
    if (rx_fire && fwd_first_) first_taken_ = true;
    if (rx_want != 0 && last_want_ == 0) {
      tokens_.push_back({rx_want, now_ + latency_});
      first_taken_ = false;
    } else if (rx_want == 0 && last_want_ != 0 && !first_taken_) {
      // The receive was dropped before its message came (its chip stopped): the posted want
      // is withdrawn (the only one in flight: earlier receives have taken their messages).
      tokens_.clear();
    }
    last_want_ = rx_want;
    ++now_;
    while (!returns_.empty() && returns_.front() <= now_) {
      returns_.pop_front();
      ++credits_;
    }
  }

  // The sender's chip dropped its instruction mid-message (a fault): the rest never comes.
  void abandon_message() {
    in_msg_ = false;
    left_ = 0;
  }
  // Nothing on the wire (beats or posted receives still travelling).
  bool quiet() const {
    return fwd_.empty() && (tokens_.empty() || tokens_.front().at <= now_) && !in_msg_;
  }
  uint64_t beats_sent() const { return sent_; }
  uint64_t beats_delivered() const { return delivered_; }
  uint32_t latency() const { return latency_; }

 private:
  struct InFlight {
    IciBeat beat;
    uint64_t at;
  };
  struct Token {
    uint32_t want;
    uint64_t at;
  };
  uint32_t latency_;
  uint32_t beats_per_row_;
  uint32_t capacity_;
  uint64_t now_ = 0;
  int64_t credits_ = capacity_;
  std::deque<InFlight> fwd_;
  std::deque<uint64_t> returns_;
  std::deque<Token> tokens_;
  uint32_t last_want_ = 0;
  bool fwd_first_ = false;    // the beat the receiver took in this cycle was a first beat
  bool first_taken_ = false;  // the posted receive has taken its message's first beat
  bool in_msg_ = false;
  uint64_t left_ = 0;
  uint64_t sent_ = 0;
  uint64_t delivered_ = 0;
};

}  // namespace tpu::sim

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
//   falls to 0 without a first beat taken) stays posted (docs/isa.md "Errors of the link
//   instructions"): the receiving end takes the message that comes for it off the wire itself
//   and discards it (one beat per cycle, credits returned as usual), so the sender completes
//   whenever it starts and however long the message is, as in the golden pod. No event tells
//   the sender that the receiving chip stopped: the outcome cannot depend on when it learns.
// * reset() empties both halves (tpu::sim::PodRtl at the start of every run: a message left for
//   a stopped chip, a receive posted by one, or the rest of a message cut by a fault does not
//   reach the next run).
// * Sizes: the sender's first beat is checked against the posted want by the sender itself
//   (ERR_ICI_SIZE); the channel delivers that beat all the same, so the receiver checks it too.
//
// Lookahead (docs/pod.md "The distributed pod"): the channel is two halves, IciTx at the sender
// and IciRx at the receiver, which only talk through IciEvents that take effect `latency`
// cycles after they were made (beats one way; credits and wants the other). So
// nothing a chip does reaches its neighbour sooner than `latency` cycles later, and the halves
// may live in different processes (sim/pod_rtl.h with a PodTransport) as long as each half gets
// the other's events before its clock reaches their time.
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

// What one half of a channel tells the other; it takes effect at cycle `at` (made at `at` -
// latency).
struct IciEvent {
  enum class Kind : uint8_t { Beat, Credit, Want };
  Kind kind = Kind::Beat;
  uint64_t at = 0;
  uint32_t want = 0;  // Want: the posted receive's rows
  IciBeat beat;       // Beat
  bool to_tx() const { return kind != Kind::Beat; }
};

// The sender's half: posted wants that reached it, credits, the message it is sending.
class IciTx {
 public:
  IciTx(uint32_t latency, uint32_t beats_per_row, uint32_t capacity)
      : latency_(latency), beats_per_row_(beats_per_row), capacity_(capacity), credits_(capacity) {}

  uint32_t tx_want() const {
    if (in_msg_ || tokens_.empty() || tokens_.front().at > now_) return 0;
    return tokens_.front().want;
  }
  bool tx_ready() const { return credits_ > 0 && (in_msg_ || tx_want() != 0); }

  // The clock edge ending the current cycle; a beat handed over goes to `out`.
  void step(bool tx_fire, const IciBeat& tx_beat, std::vector<IciEvent>& out) {
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
      IciEvent e;
      e.kind = IciEvent::Kind::Beat;
      e.at = now_ + latency_;
      e.beat = tx_beat;
      out.push_back(std::move(e));
      ++sent_;
    }
    ++now_;
    settle();
  }

  // An event of the receiver's half (in the order it made them, before its time comes).
  void deliver(const IciEvent& e) {
    if (e.at < now_) throw std::logic_error("IciChannel: a link event arrived after its time");
    switch (e.kind) {
      case IciEvent::Kind::Credit:
        returns_.push_back(e.at);
        break;
      case IciEvent::Kind::Want:
        tokens_.push_back({e.want, e.at});
        break;
      case IciEvent::Kind::Beat:
        throw std::logic_error("IciChannel: a beat sent to the sender");
    }
    settle();
  }

  void abandon_message() {
    in_msg_ = false;
    left_ = 0;
  }
  // Empty: no wants, no credits on their way, no message (the clock and counts stay).
  void reset() {
    tokens_.clear();
    returns_.clear();
    credits_ = capacity_;
    abandon_message();
  }
  bool quiet() const { return (tokens_.empty() || tokens_.front().at <= now_) && !in_msg_; }
  uint64_t beats_sent() const { return sent_; }

 private:
  // Credits whose time has come are back.
  void settle() {
    while (!returns_.empty() && returns_.front() <= now_) {
      returns_.pop_front();
      ++credits_;
    }
  }
  struct Token {
    uint32_t want;
    uint64_t at;
  };
  uint32_t latency_;
  uint32_t beats_per_row_;
  int64_t capacity_;
  uint64_t now_ = 0;
  int64_t credits_;
  std::deque<uint64_t> returns_;
  std::deque<Token> tokens_;
  bool in_msg_ = false;
  uint64_t left_ = 0;
  uint64_t sent_ = 0;
};

// The receiver's half: beats on their way, the receive's posted want, and the message of a
// receive its chip dropped (taken off the wire here and discarded).
class IciRx {
 public:
  IciRx(uint32_t latency, uint32_t beats_per_row)
      : latency_(latency), beats_per_row_(beats_per_row) {}

  // What the chip sees: nothing while a dropped receive's message is being discarded.
  bool rx_valid() const {
    return orphan_ == 0 && drain_ == 0 && !fwd_.empty() && fwd_.front().at <= now_;
  }
  const IciBeat& rx_beat() const { return fwd_.front().beat; }

  // The clock edge ending the current cycle; credits and wants go to `out`.
  void step(bool rx_fire, uint32_t rx_want, std::vector<IciEvent>& out) {
    bool first = false;
    if (rx_fire) {
      if (!rx_valid()) throw std::logic_error("IciChannel: receiver took a beat that is not there");
      first = fwd_.front().beat.first;
      fwd_.pop_front();
      out.push_back(event(IciEvent::Kind::Credit, 0));
      ++delivered_;
    } else {
      discard(out);
    }
    if (rx_fire && first) first_taken_ = true;
    if (rx_want != 0 && last_want_ == 0) {
      out.push_back(event(IciEvent::Kind::Want, rx_want));
      first_taken_ = false;
    } else if (rx_want == 0 && last_want_ != 0 && !first_taken_) {
      // The receive was dropped before its message came (its chip stopped): it stays posted,
      // and its message is discarded here when it comes.
      orphan_ = last_want_;
    }
    last_want_ = rx_want;
    ++now_;
  }

  // A beat of the sender's half (in order, before its time comes).
  void deliver(IciEvent e) {
    if (e.kind != IciEvent::Kind::Beat || e.at < now_) {
      throw std::logic_error("IciChannel: a link event for the receiver out of place");
    }
    fwd_.push_back({std::move(e.beat), e.at});
  }

  // Empty: no beats, no posted or dropped receive (the clock and counts stay).
  void reset() {
    fwd_.clear();
    last_want_ = 0;
    first_taken_ = false;
    orphan_ = 0;
    drain_ = 0;
  }
  bool quiet() const { return fwd_.empty(); }
  uint64_t beats_delivered() const { return delivered_; }
  uint64_t beats_discarded() const { return discarded_; }

 private:
  // A dropped receive's message: its beat of this cycle taken off the wire and discarded (the
  // header alone when its row count is not the receive's: the sender faults ERR_ICI_SIZE and
  // sends nothing more).
  void discard(std::vector<IciEvent>& out) {
    if ((orphan_ == 0 && drain_ == 0) || fwd_.empty() || fwd_.front().at > now_) return;
    const IciBeat& b = fwd_.front().beat;
    if (drain_ == 0) {
      if (!b.first) throw std::logic_error("IciChannel: message framing at a dropped receive");
      drain_ = b.rows == orphan_ ? uint64_t{b.rows} * beats_per_row_ : 1;
      orphan_ = 0;
    }
    --drain_;
    fwd_.pop_front();
    out.push_back(event(IciEvent::Kind::Credit, 0));
    ++discarded_;
  }
  IciEvent event(IciEvent::Kind kind, uint32_t want) const {
    IciEvent e;
    e.kind = kind;
    e.at = now_ + latency_;
    e.want = want;
    return e;
  }
  struct InFlight {
    IciBeat beat;
    uint64_t at;
  };
  uint32_t latency_;
  uint32_t beats_per_row_;
  uint64_t now_ = 0;
  std::deque<InFlight> fwd_;
  uint32_t last_want_ = 0;
  bool first_taken_ = false;  // the posted receive has taken its message's first beat
  uint32_t orphan_ = 0;       // a dropped receive's rows, its message not yet begun
  uint64_t drain_ = 0;        // beats of a dropped receive's message still to discard
  uint64_t delivered_ = 0;
  uint64_t discarded_ = 0;
};

// Both halves in one process, the events handed over at once.
class IciChannel {
 public:
  // beats_per_row = 32 N / IciWidth (the message length is rows * beats_per_row beats).
  IciChannel(uint32_t latency, uint32_t beats_per_row, uint32_t capacity = 0)
      : latency_(checked(latency, beats_per_row)),
        tx_(latency, beats_per_row, capacity != 0 ? capacity : 2 * latency + 2),
        rx_(latency, beats_per_row) {}

  // ---- the sender's inputs in the current cycle
  uint32_t tx_want() const { return tx_.tx_want(); }
  bool tx_ready() const { return tx_.tx_ready(); }

  // ---- the receiver's inputs in the current cycle
  bool rx_valid() const { return rx_.rx_valid(); }
  const IciBeat& rx_beat() const { return rx_.rx_beat(); }

  // The clock edge ending the current cycle: whether the sender's beat was handed over
  // (tx_valid && tx_ready, with the beat), whether the receiver took its beat (rx_valid &&
  // rx_ready), and the receiver's want output in this cycle.
  void step(bool tx_fire, const IciBeat& tx_beat, bool rx_fire, uint32_t rx_want) {
    events_.clear();
    rx_.step(rx_fire, rx_want, events_);
    tx_.step(tx_fire, tx_beat, events_);
    for (IciEvent& e : events_) {
      if (e.to_tx()) {
        tx_.deliver(e);
      } else {
        rx_.deliver(std::move(e));
      }
    }
  }

  // The halves alone (sim/ici_fabric.h steps them when the two ends live in different
  // processes).
  IciTx& tx() { return tx_; }
  IciRx& rx() { return rx_; }

  // The sender's chip dropped its instruction mid-message (a fault): the rest never comes.
  void abandon_message() { tx_.abandon_message(); }
  // Both halves empty (a new run).
  void reset() {
    tx_.reset();
    rx_.reset();
  }
  // Nothing on the wire (beats or posted receives still travelling).
  bool quiet() const { return rx_.quiet() && tx_.quiet(); }
  uint64_t beats_sent() const { return tx_.beats_sent(); }
  uint64_t beats_delivered() const { return rx_.beats_delivered(); }
  uint32_t latency() const { return latency_; }

 private:
  static uint32_t checked(uint32_t latency, uint32_t beats_per_row) {
    if (latency == 0) throw std::invalid_argument("IciChannel: latency must be >= 1 cycle");
    if (beats_per_row == 0) throw std::invalid_argument("IciChannel: beats_per_row must be >= 1");
    return latency;
  }
  uint32_t latency_;
  IciTx tx_;
  IciRx rx_;
  std::vector<IciEvent> events_;
};

}  // namespace tpu::sim

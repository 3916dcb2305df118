// SPDX-License-Identifier: Apache-2.0
// The links of a pod and its deadlock rule (issue 31, docs/pod.md "The RTL link unit"),
// independent of what the chips are (the block test's link units, later whole Verilated
// chips): one sim/ici_channel.h per connected link direction, wired as the caller says
// (docs/isa.md "Wiring of the pod"; driver/pod.h PodTopology::peer gives it), stepped once per
// cycle with what every chip did on its link pins.
//
// Deadlock (docs/isa.md ERR_ICI_DEADLOCK): a cycle is quiet when no beat moved on any link
// and every chip is either waiting on a link (its link engines busy and nothing else it could
// do) or stopped (halted or faulted). After more than `window()` quiet cycles in a row nothing
// can move any more: a posted receive reaches its sender within one latency, a beat its
// receiver within another, and a send engine fetches its first row within a few cycles, so
// any transfer that could still start or continue would have moved a beat. deadlock() then
// names the waiting chips, which the caller makes fault (tpu_ici deadlock_i).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ici_channel.h"

namespace tpu::sim {

class IciFabric {
 public:
  struct End {
    uint32_t chip = 0;
    uint32_t link = 0;
  };
  enum class ChipState { Running, Waiting, Stopped };

  // peers[c * links + l]: the (chip, link) link l of chip c is joined to, or nullopt (down).
  // The wiring must be symmetric.
  IciFabric(uint32_t chips, uint32_t links, std::vector<std::optional<End>> peers, uint32_t latency,
            uint32_t beats_per_row)
      : chips_(chips),
        links_(links),
        latency_(latency),
        bpr_(beats_per_row),
        peers_(std::move(peers)) {
    if (peers_.size() != size_t{chips} * links) {
      throw std::invalid_argument("IciFabric: one peer entry per chip and link expected");
    }
    out_.reserve(peers_.size());
    for (size_t i = 0; i < peers_.size(); ++i) {
      const auto& p = peers_[i];
      if (p && (p->chip >= chips || p->link >= links || !peers_[index(p->chip, p->link)] ||
                index(peers_[index(p->chip, p->link)]->chip,
                      peers_[index(p->chip, p->link)]->link) != i)) {
        throw std::invalid_argument("IciFabric: link " + std::to_string(i % links) + " of chip " +
                                    std::to_string(i / links) + " is not wired symmetrically");
      }
      out_.emplace_back(latency, beats_per_row);
    }
    pins_.resize(peers_.size());
    local_.assign(chips, true);
  }

  bool up(uint32_t c, uint32_t l) const { return peers_[index(c, l)].has_value(); }
  const std::optional<End>& peer(uint32_t c, uint32_t l) const { return peers_[index(c, l)]; }
  // The direction leaving link l of chip c (only when up).
  IciChannel& out(uint32_t c, uint32_t l) { return out_[index(c, l)]; }
  // The direction arriving at link l of chip c (only when up).
  IciChannel& in(uint32_t c, uint32_t l) {
    const End& e = *peers_[index(c, l)];
    return out_[index(e.chip, e.link)];
  }

  // What link l of chip c did in the current cycle (set for every up link before step()).
  struct Pins {
    bool tx_fire = false;  // tx_valid && tx_ready
    IciBeat beat;          // the beat handed over (when tx_fire)
    bool rx_fire = false;  // rx_valid && rx_ready
    uint32_t rx_want = 0;  // the receive engine's want output
  };
  Pins& pins(uint32_t c, uint32_t l) { return pins_[index(c, l)]; }

  // The clock edge: every channel steps, and the deadlock rule looks at this cycle.
  void step(const std::vector<ChipState>& states) {
    if (!all_local_) throw std::logic_error("IciFabric::step: some chips live elsewhere");
    bool moved = false;
    for (uint32_t c = 0; c < chips_; ++c) {
      for (uint32_t l = 0; l < links_; ++l) {
        if (!up(c, l)) continue;
        const End& e = *peers_[index(c, l)];
        const Pins& tx = pins_[index(c, l)];
        const Pins& rx = pins_[index(e.chip, e.link)];
        out_[index(c, l)].step(tx.tx_fire, tx.beat, rx.rx_fire, rx.rx_want);
        moved = moved || tx.tx_fire || rx.rx_fire;
      }
    }
    for (Pins& p : pins_) p = Pins{};
    const CycleBits b = bits(moved, states);
    quiet_ = (!b.moved && b.waiting && !b.running) ? quiet_ + 1 : 0;
    beats_ += moved ? 1 : 0;
  }

  // ---- The pod split over processes (docs/pod.md "The distributed pod"): only the chips
  // marked local are simulated here. A link direction's sender half (IciTx) steps where its
  // sender lives, its receiver half (IciRx) where its receiver lives; an event for a half that
  // lives elsewhere goes to outbox() and comes back through deliver() in the other process
  // (before its time: every event takes effect `latency` cycles after it was made).
  struct Outgoing {
    uint32_t chip = 0;  // the direction leaving link `link` of chip `chip`
    uint32_t link = 0;
    IciEvent event;
  };
  void set_local(std::vector<bool> local) {
    if (local.size() != chips_) throw std::invalid_argument("IciFabric: one flag per chip");
    local_ = std::move(local);
    all_local_ = true;
    for (bool b : local_) all_local_ = all_local_ && b;
  }
  bool local(uint32_t c) const { return local_[c]; }
  // What this process's chips did on the links in one cycle (OR them over the processes for
  // the deadlock rule).
  struct CycleBits {
    bool moved = false;    // a beat moved on a link end here
    bool waiting = false;  // a chip here waits on a link
    bool running = false;  // a chip here runs
  };
  // The clock edge of the local halves (`states` of the local chips; the others are ignored).
  CycleBits step_local(const std::vector<ChipState>& states) {
    bool moved = false;
    for (uint32_t c = 0; c < chips_; ++c) {
      for (uint32_t l = 0; l < links_; ++l) {
        if (!up(c, l)) continue;
        const End& e = *peers_[index(c, l)];
        IciChannel& ch = out_[index(c, l)];
        events_.clear();
        if (local_[e.chip]) {
          const Pins& rx = pins_[index(e.chip, e.link)];
          ch.rx().step(rx.rx_fire, rx.rx_want, events_);
          moved = moved || rx.rx_fire;
        }
        if (local_[c]) {
          const Pins& tx = pins_[index(c, l)];
          ch.tx().step(tx.tx_fire, tx.beat, events_);
          moved = moved || tx.tx_fire;
        }
        for (IciEvent& ev : events_) {
          const bool here = local_[ev.to_tx() ? c : e.chip];
          if (here) {
            deliver_to(ch, std::move(ev));
          } else {
            outbox_.push_back({c, l, std::move(ev)});
          }
        }
      }
    }
    for (Pins& p : pins_) p = Pins{};
    std::vector<ChipState> mine(states.size(), ChipState::Stopped);
    for (uint32_t c = 0; c < chips_ && c < states.size(); ++c) {
      if (local_[c]) mine[c] = states[c];
    }
    const CycleBits b = bits(moved, mine);
    beats_ += moved ? 1 : 0;
    return b;
  }
  std::vector<Outgoing>& outbox() { return outbox_; }
  void deliver(Outgoing o) {
    if (!up(o.chip, o.link)) throw std::invalid_argument("IciFabric: an event on a down link");
    deliver_to(out_[index(o.chip, o.link)], std::move(o.event));
  }

  // Every link empty and the deadlock rule's count back to 0 (a new run: what an earlier run
  // left on a link, e.g. a message for a chip that stopped, is dropped).
  void reset_links() {
    for (IciChannel& ch : out_) ch.reset();
    quiet_ = 0;
  }

  // Quiet cycles after which the pod is deadlocked.
  uint64_t window() const { return 2 * uint64_t{latency_} + 2 * uint64_t{bpr_} + 16; }
  bool deadlock() const { return quiet_ > window(); }
  void clear_deadlock() { quiet_ = 0; }
  uint64_t cycles_with_traffic() const { return beats_; }

 private:
  size_t index(uint32_t c, uint32_t l) const { return size_t{c} * links_ + l; }
  static CycleBits bits(bool moved, const std::vector<ChipState>& states) {
    CycleBits b;
    b.moved = moved;
    for (ChipState s : states) {
      b.waiting = b.waiting || s == ChipState::Waiting;
      b.running = b.running || s == ChipState::Running;
    }
    return b;
  }
  static void deliver_to(IciChannel& ch, IciEvent e) {
    if (e.to_tx()) {
      ch.tx().deliver(e);
    } else {
      ch.rx().deliver(std::move(e));
    }
  }
  uint32_t chips_, links_, latency_, bpr_;
  std::vector<std::optional<End>> peers_;
  std::vector<IciChannel> out_;
  std::vector<Pins> pins_;
  std::vector<bool> local_;
  bool all_local_ = true;
  std::vector<IciEvent> events_;
  std::vector<Outgoing> outbox_;
  uint64_t quiet_ = 0;
  uint64_t beats_ = 0;
};

}  // namespace tpu::sim

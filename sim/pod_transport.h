// SPDX-License-Identifier: Apache-2.0
// How the processes of a distributed RTL pod talk (docs/pod.md "The distributed pod"): every
// process (rank) simulates some of the pod's chips (sim/pod_rtl.h), and at each lookahead
// window's end all of them exchange their link events and deadlock bits through a
// PodTransport. tools/tpusim's MPI ranks are one (sim/pod_mpi.h); tests use threads.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpu::sim {

// A rank that stopped answering (died, or hangs): the exchange gave up after its timeout.
class PodRankLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PodTransport {
 public:
  virtual ~PodTransport() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t ranks() const = 0;
  // Every rank calls it at the same point of the run: to[q] goes to rank q (to[rank()] comes
  // back as it is); returns from[q], what rank q sent this one. Throws PodRankLost naming the
  // rank when one does not answer within the transport's timeout (never a hang).
  virtual std::vector<std::string> exchange(const std::vector<std::string>& to) = 0;
};

// Which rank simulates chip `chip` of `chips` over `ranks` ranks: consecutive blocks.
inline uint32_t pod_rank_of(uint32_t chip, uint32_t chips, uint32_t ranks) {
  return static_cast<uint32_t>(uint64_t{chip} * ranks / chips);
}

// The deadlock rule of sim/ici_fabric.h over windows (the distributed pod): the pod's quiet
// streak from the OR of every rank's per-cycle bits, and the next window's length, at most the
// link latency and short enough that the rule can only fire at a window's first cycle, where
// every rank knows it.
class PodLookahead {
 public:
  PodLookahead(uint32_t latency, uint64_t deadlock_window)
      : latency_(latency), window_(deadlock_window) {
    if (latency == 0) throw std::invalid_argument("PodLookahead: latency must be >= 1 cycle");
  }
  // At a window's start: whether the rule fires in its first cycle (then the streak restarts).
  bool fire() {
    if (quiet_ <= window_) return false;
    quiet_ = 0;
    return true;
  }
  // The next window's cycles (>= 1): it must not reach a cycle where the rule could fire.
  uint64_t next_window() const {
    const uint64_t room = window_ + 1 - quiet_;  // quiet_ <= window_ after fire()
    return room < latency_ ? room : latency_;
  }
  // One cycle of the whole pod, in order (the OR over the ranks).
  void record(bool moved, bool waiting, bool running) {
    quiet_ = (!moved && waiting && !running) ? quiet_ + 1 : 0;
  }
  uint64_t quiet() const { return quiet_; }

 private:
  uint32_t latency_;
  uint64_t window_;
  uint64_t quiet_ = 0;
};

}  // namespace tpu::sim

// SPDX-License-Identifier: Apache-2.0
// Ranks as threads of one process for the distributed RTL pod's tests (tests/pod
// pod_dist_test, pod_train_rtl_test): a sim/pod_transport.h PodTransport over in-memory
// mailboxes, one string per exchange and rank pair.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pod_transport.h"

namespace pod_thread_transport {

// Mailboxes between threads: box[to][from], one string per exchange.
struct Hub {
  explicit Hub(uint32_t k) : box(k, std::vector<std::deque<std::string>>(k)) {}
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::vector<std::deque<std::string>>> box;
};

class ThreadTransport : public tpu::sim::PodTransport {
 public:
  ThreadTransport(std::shared_ptr<Hub> hub, uint32_t rank) : hub_(std::move(hub)), rank_(rank) {}
  uint32_t rank() const override { return rank_; }
  uint32_t ranks() const override { return static_cast<uint32_t>(hub_->box.size()); }
  std::vector<std::string> exchange(const std::vector<std::string>& to) override {
    std::unique_lock<std::mutex> lock(hub_->m);
    for (uint32_t q = 0; q < ranks(); ++q) hub_->box[q][rank_].push_back(to[q]);
    hub_->cv.notify_all();
    std::vector<std::string> from(ranks());
    for (uint32_t q = 0; q < ranks(); ++q) {
      if (!hub_->cv.wait_for(lock, std::chrono::seconds(60),
                             [&] { return !hub_->box[rank_][q].empty(); })) {
        throw tpu::sim::PodRankLost("thread rank " + std::to_string(q) + " did not answer");
      }
      from[q] = std::move(hub_->box[rank_][q].front());
      hub_->box[rank_][q].pop_front();
    }
    return from;
  }

 private:
  std::shared_ptr<Hub> hub_;
  uint32_t rank_;
};

}  // namespace pod_thread_transport

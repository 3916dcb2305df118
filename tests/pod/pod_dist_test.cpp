// SPDX-License-Identifier: Apache-2.0
// The distributed RTL pod in one process (labels pod, rtl): K "ranks" as threads, each a
// sim/pod_rtl.h pod simulating its block of chips, talking through an in-memory PodTransport;
// against the one-process pod (tests/pod/pod_dist_scenarios.h), for K = 1 (the windowed loop
// alone), 2, and as many ranks as chips. The lookahead rule itself (sim/pod_transport.h
// PodLookahead) against sim/ici_fabric.h's deadlock rule on random quiet streaks.
#include <gtest/gtest.h>

#include <thread>

#include "ici_fabric.h"
#include "pod_dist_scenarios.h"
#include "thread_transport.h"

namespace {

using namespace pod_dist_test;  // NOLINT(build/namespaces)
using pod_thread_transport::Hub;
using pod_thread_transport::ThreadTransport;

void check_over_threads(uint32_t ranks) {
  for (const Scenario& s : scenarios()) {
    if (ranks > s.topo.chips()) continue;
    const Outcome one = run_scenario(s, nullptr);
    auto hub = std::make_shared<Hub>(ranks);
    std::vector<Outcome> dist(ranks);
    std::vector<std::string> errors(ranks);
    std::vector<std::thread> threads;
    for (uint32_t k = 0; k < ranks; ++k) {
      threads.emplace_back([&, k] {
        try {
          dist[k] = run_scenario(s, std::make_shared<ThreadTransport>(hub, k));
        } catch (const std::exception& e) {
          errors[k] = e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (uint32_t k = 0; k < ranks; ++k) {
      ASSERT_EQ(errors[k], "") << s.name << ": rank " << k;
      expect_same(s, one, dist[k], std::to_string(ranks) + " ranks, rank " + std::to_string(k));
    }
  }
}

TEST(PodDist, OneRankWindowsMatchLockStep) { check_over_threads(1); }
TEST(PodDist, TwoRanksMatchOneProcess) { check_over_threads(2); }
TEST(PodDist, ChipPerRankMatchesOneProcess) { check_over_threads(4); }

// The scenarios do exercise the deadlock rule and the windows' ends.
TEST(PodDist, ScenariosCoverDeadlocksAndFaults) {
  for (const Scenario& s : scenarios()) {
    const Outcome one = run_scenario(s, nullptr);
    if (s.name == "fault" || s.name == "receive with nothing sent") {
      EXPECT_GE(one.res.deadlocks, 1u) << s.name;
      EXPECT_EQ(one.res.chips[1].err_code, static_cast<uint32_t>(tpu::ErrorCode::ERR_ICI_DEADLOCK))
          << s.name;
    } else if (s.name == "cycle limit") {
      EXPECT_EQ(one.res.status, tpu::sim::PodRtlStatus::CycleLimit);
    } else {
      EXPECT_TRUE(one.res.ok()) << s.name << ": " << one.res.message;
      EXPECT_GT(one.res.link_beats, 0u) << s.name;
    }
  }
}

// PodLookahead fires exactly where the fabric's rule does, and only at a window's start.
TEST(PodDist, LookaheadFiresWhereTheFabricDoes) {
  std::mt19937 rng(7);
  for (uint32_t latency : {1u, 3u, 16u, 64u}) {
    // Two chips joined by one link, no traffic: chip 0 waits or (now and then) runs.
    tpu::sim::IciFabric fabric(
        2, 1, {tpu::sim::IciFabric::End{1, 0}, tpu::sim::IciFabric::End{0, 0}}, latency, 1);
    tpu::sim::PodLookahead look(latency, fabric.window());
    uint64_t cycle = 0, fired_fabric = 0, fired_look = 0;
    std::vector<tpu::sim::IciFabric::ChipState> states(2);
    while (cycle < 20000) {
      // A window: the lookahead decides at its start and its length.
      const bool fire = look.fire();
      const uint64_t w = look.next_window();
      ASSERT_GE(w, 1u);
      ASSERT_LE(w, latency);
      for (uint64_t k = 0; k < w; ++k, ++cycle) {
        const bool f = fabric.deadlock();
        if (f) fabric.clear_deadlock();
        EXPECT_EQ(f, fire && k == 0) << "latency " << latency << " cycle " << cycle;
        fired_fabric += f ? 1 : 0;
        fired_look += (fire && k == 0) ? 1 : 0;
        const bool running = rng() % 500 == 0;  // long quiet streaks with breaks
        states[0] = running ? tpu::sim::IciFabric::ChipState::Running
                            : tpu::sim::IciFabric::ChipState::Waiting;
        states[1] = tpu::sim::IciFabric::ChipState::Stopped;
        fabric.step(states);
        look.record(false, !running, running);
      }
    }
    EXPECT_GT(fired_fabric, 10u) << "latency " << latency;
    EXPECT_EQ(fired_fabric, fired_look);
  }
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The distributed RTL pod over MPI ranks (label mpi; run by `mpirun -np K pod_mpi_test`,
// tests/pod/CMakeLists.txt): every rank simulates its block of chips through
// sim/pod_mpi.h's transport, and checks the whole pod's outcome, stop cycles, cycles, link
// beats, deadlocks and final VMEM, and its own chips' output bytes, against the one-process
// pod (tests/pod/pod_dist_scenarios.h). With TPU_POD_MPI_FAULT set (a rank that exits or stops
// answering) it checks instead that the others stop with a named error (PodRankLost) within
// the transport's timeout, then ends the job.
#include "pod_mpi.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "pod_dist_scenarios.h"

namespace {

using namespace pod_dist_test;  // NOLINT(build/namespaces)

std::shared_ptr<tpu::sim::PodMpiTransport> transport() {
  static auto t = std::make_shared<tpu::sim::PodMpiTransport>();
  return t;
}

TEST(PodMpi, RanksMatchOneProcess) {
  if (std::getenv("TPU_POD_MPI_FAULT") != nullptr) GTEST_SKIP() << "fault injection run";
  const auto t = transport();
  uint32_t ran = 0;
  for (const Scenario& s : scenarios()) {
    if (t->ranks() > s.topo.chips()) continue;
    const Outcome one = run_scenario(s, nullptr);
    const Outcome dist = run_scenario(s, t);
    expect_same(s, one, dist,
                std::to_string(t->ranks()) + " MPI ranks, rank " + std::to_string(t->rank()));
    ++ran;
  }
  EXPECT_GE(ran, t->ranks() <= 2 ? 6u : 3u);  // 3 of the scenarios have 4 chips
}

// A rank that dies or hangs: the others throw PodRankLost naming it, then end the job.
TEST(PodMpi, LostRankIsNamed) {
  if (std::getenv("TPU_POD_MPI_FAULT") == nullptr) GTEST_SKIP() << "needs TPU_POD_MPI_FAULT";
  const auto t = transport();
  const Scenario s = scenarios().front();
  try {
    run_scenario(s, t);
    ADD_FAILURE() << "rank " << t->rank() << ": the run ended although a rank was lost";
  } catch (const tpu::sim::PodRankLost& e) {
    std::fprintf(stderr, "rank %u: %s\n", t->rank(), e.what());
    tpu::sim::PodMpiTransport::abort_all(4);
  }
}

}  // namespace

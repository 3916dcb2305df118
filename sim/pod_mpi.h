// SPDX-License-Identifier: Apache-2.0
// The distributed RTL pod's transport over MPI (docs/pod.md "The distributed pod"): one rank
// of MPI_COMM_WORLD per block of chips (sim/pod_rtl.h with this PodTransport), point to point
// messages to every rank at each lookahead window's end, polled against a timeout so a rank
// that died or hangs is named (PodRankLost) instead of hanging the others. Built when CMake
// finds MPI (library tpu_pod_mpi, sim/pod_rtl.cmake).
//
// Fault injection (tests/pod/CMakeLists.txt, label mpi): TPU_POD_MPI_FAULT=exit:R:K makes rank
// R exit with code 3 at its K-th exchange, hang:R:K makes it stop answering (sleep) there.
// TPU_POD_MPI_TIMEOUT=S sets the timeout in seconds (default 120).
#pragma once

#include <string>
#include <vector>

#include "pod_transport.h"

namespace tpu::sim {

class PodMpiTransport : public PodTransport {
 public:
  // Initializes MPI if nobody did (MPI_Finalize at exit). Throws std::runtime_error when
  // MPI_Init fails.
  PodMpiTransport();
  uint32_t rank() const override { return rank_; }
  uint32_t ranks() const override { return ranks_; }
  std::vector<std::string> exchange(const std::vector<std::string>& to) override;
  double timeout_seconds() const { return timeout_; }
  // Ends every rank of the job (MPI_Abort) after a failure on this one.
  static void abort_all(int code);

 private:
  uint32_t rank_ = 0;
  uint32_t ranks_ = 1;
  double timeout_ = 120;
  uint64_t exchanges_ = 0;
  // Fault injection (TPU_POD_MPI_FAULT).
  enum class Fault { None, Exit, Hang };
  Fault fault_ = Fault::None;
  uint64_t fault_at_ = 0;
};

}  // namespace tpu::sim

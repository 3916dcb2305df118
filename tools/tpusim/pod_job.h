// SPDX-License-Identifier: Apache-2.0
// The RTL pod's transport for this process (docs/pod.md "The distributed pod"), shared by
// `allreduce --backend rtl` (cmd_allreduce_rtl.cpp) and `train --chips P --backend rtl`
// (cmd_train_rtl.cpp). Under mpirun / srun with more than one rank and the MPI transport built
// in (TPUSIM_POD_MPI, library tpu_pod_mpi), the pod runs over the job's ranks; otherwise in
// this one process (a null transport).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "pod_rtl.h"
#include "sharding.h"
#ifdef TPUSIM_POD_MPI
#include "pod_mpi.h"
#endif

namespace tpusim {

// The job's transport, made once per process; null when one process simulates the whole pod.
inline std::shared_ptr<tpu::sim::PodTransport> pod_job_transport() {
  static const std::shared_ptr<tpu::sim::PodTransport> t =
      []() -> std::shared_ptr<tpu::sim::PodTransport> {
    if (!launched_by_mpi()) return nullptr;
#ifdef TPUSIM_POD_MPI
    auto mpi = std::make_shared<tpu::sim::PodMpiTransport>();
    if (mpi->ranks() > 1) return mpi;
    return nullptr;
#else
    throw std::runtime_error(
        "started by mpirun / srun, but this tpusim has no MPI transport for the RTL pod (built "
        "without MPI: install libopenmpi-dev and reconfigure)");
#endif
  }();
  return t;
}
inline uint32_t pod_job_rank() { return pod_job_transport() ? pod_job_transport()->rank() : 0; }
inline uint32_t pod_job_ranks() { return pod_job_transport() ? pod_job_transport()->ranks() : 1; }

}  // namespace tpusim

// SPDX-License-Identifier: Apache-2.0
// `tpusim train --chips P --backend rtl`: registers the RTL pod (sim/pod_train_rtl.h,
// tpu_pod_rtl_n4), linked into `tpusim` only (tools/tpusim/CMakeLists.txt).
#include "cmd_train_rtl.h"

#include <stdexcept>

#include "pod_rtl.h"
#include "pod_train_rtl.h"
#include "sharding.h"
#ifdef TPUSIM_POD_MPI
#include "pod_mpi.h"
#endif

namespace {

// The job's transport under mpirun with more than one rank, else null (one process).
std::shared_ptr<tpu::sim::PodTransport> transport() {
  static const std::shared_ptr<tpu::sim::PodTransport> t =
      []() -> std::shared_ptr<tpu::sim::PodTransport> {
    if (!tpusim::launched_by_mpi()) return nullptr;
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
uint32_t rank() { return transport() ? transport()->rank() : 0; }
uint32_t ranks() { return transport() ? transport()->ranks() : 1; }

tpusim::PodTrainRtl::Made make(bool golden) {
  auto check = std::make_shared<tpu::sim::PodTrainRtlCheck>();
  tpusim::PodTrainRtl::Made m;
  m.maker = tpu::sim::pod_rtl_backend(golden, check, transport());
  m.set_step = [check](uint64_t step) { check->step = step; };
  m.report = [check, golden]() {
    tpusim::PodTrainRtlReport r;
    r.golden = golden;
    r.matches = check->matches;
    r.mismatch_step = check->mismatch_step;
    r.mismatch = check->mismatch;
    r.rtl_cycles = check->rtl_cycles;
    r.golden_cycles = check->golden_cycles;
    r.golden_step_cycles = check->golden_step_cycles;
    r.sim_seconds = check->sim_seconds;
    return r;
  };
  return m;
}

const tpusim::PodTrainRtl kPod{&tpu::sim::PodRtl::params,
                               tpu::sim::PodRtl::ici_width_bits() / 8,
                               &tpu::sim::check_pod_rtl_fits,
                               &make,
                               &rank,
                               &ranks};

[[maybe_unused]] const bool registered = (tpusim::pod_train_rtl() = &kPod, true);

}  // namespace

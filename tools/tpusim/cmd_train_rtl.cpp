// SPDX-License-Identifier: Apache-2.0
// `tpusim train --chips P --backend rtl`: registers the RTL pod (sim/pod_train_rtl.h,
// tpu_pod_rtl_n4), linked into `tpusim` only (tools/tpusim/CMakeLists.txt).
#include "cmd_train_rtl.h"

#include <stdexcept>

#include "pod_job.h"
#include "pod_rtl.h"
#include "pod_train_rtl.h"
#include "sharding.h"

namespace {

tpusim::PodTrainRtl::Made make(bool golden) {
  auto check = std::make_shared<tpu::sim::PodTrainRtlCheck>();
  tpusim::PodTrainRtl::Made m;
  m.maker = tpu::sim::pod_rtl_backend(golden, check, tpusim::pod_job_transport());
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

const tpusim::PodTrainRtl kPod{
    &tpu::sim::PodRtl::params,     tpu::sim::PodRtl::ici_width_bits() / 8,
    &tpu::sim::check_pod_rtl_fits, &make,
    &tpusim::pod_job_rank,         &tpusim::pod_job_ranks};

[[maybe_unused]] const bool registered = (tpusim::pod_train_rtl() = &kPod, true);

}  // namespace

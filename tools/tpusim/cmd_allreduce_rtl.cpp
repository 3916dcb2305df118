// SPDX-License-Identifier: Apache-2.0
// `tpusim allreduce --backend rtl`: the collective's chip programs on the pod of Verilated RTL
// chips (sim/pod_rtl.h, tpu_pod_rtl_n4), linked into `tpusim` only (tools/tpusim/CMakeLists.txt).
// Under mpirun / srun with the MPI transport built in (tpu_pod_mpi: TPUSIM_POD_MPI), the pod
// runs over the job's ranks (docs/pod.md "The distributed pod").
#include <chrono>
#include <memory>

#include "cmd_allreduce.h"
#include "pod_job.h"
#include "pod_rtl.h"
#include "sharding.h"

namespace {

constexpr uint32_t kStage = 1u << 16;  // host staging area of the VMEM loads and dumps

tpusim::PodRtlRun run_pod(const tpu::PodTopology& topology, uint32_t latency,
                          const std::vector<std::vector<uint32_t>>& in,
                          const std::vector<std::vector<tpu::Instruction>>& programs,
                          uint32_t rows) {
  const tpu::ChipParams p = tpu::sim::PodRtl::params();
  const uint64_t mem = kStage + uint64_t{p.vmem_rows} * 4 * p.N;
  const std::shared_ptr<tpu::sim::PodTransport> t = tpusim::pod_job_transport();
  std::unique_ptr<tpu::sim::PodRtl> owner =
      t ? std::make_unique<tpu::sim::PodRtl>(topology, latency, t, mem)
        : std::make_unique<tpu::sim::PodRtl>(topology, latency, mem);
  tpu::sim::PodRtl& pod = *owner;
  pod.load_vmem(0, in, kStage);
  const auto t0 = std::chrono::steady_clock::now();
  const tpu::sim::PodRtlResult res = pod.run(programs);
  tpusim::PodRtlRun out;
  out.sim_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.cycles = res.cycles;
  out.link_beats = res.link_beats;
  if (!res.ok()) {
    out.error = res.message;
    for (size_t r = 0; r < res.chips.size(); ++r) {
      if (!res.chips[r].done) {
        out.error += (out.error.empty() ? "" : "; ") + std::string("chip ") + std::to_string(r) +
                     ": ERR_CODE " + std::to_string(res.chips[r].err_code) + " at instruction " +
                     std::to_string(res.chips[r].err_pc);
      }
    }
    return out;
  }
  out.vmem = pod.dump_vmem(0, rows, kStage);
  return out;
}

const tpusim::PodRtlBackend kBackend{&tpu::sim::PodRtl::params,
                                     tpu::sim::PodRtl::ici_width_bits() / 8, &run_pod,
                                     &tpusim::pod_job_rank, &tpusim::pod_job_ranks};

[[maybe_unused]] const bool registered = (tpusim::pod_rtl_backend() = &kBackend, true);

}  // namespace

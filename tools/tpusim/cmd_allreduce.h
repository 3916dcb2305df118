// SPDX-License-Identifier: Apache-2.0
// The RTL pod backend of `tpusim allreduce` (docs/pod.md "The RTL pod"): cmd_allreduce_rtl.cpp
// registers it in the binaries that link the pod of Verilated chips (tpu_pod_rtl_n4: `tpusim`);
// elsewhere `--backend rtl` says it is not built into that binary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa.h"
#include "pod.h"

namespace tpusim {

struct PodRtlRun {
  uint64_t cycles = 0;                      // START to the last chip stopping (the collective)
  std::vector<std::vector<uint32_t>> vmem;  // every chip's rows [0, rows) afterwards
  std::string error;                        // a fault or a cycle limit, naming the chips
  double sim_seconds = 0;                   // wall time of the collective's run
  uint64_t link_beats = 0;                  // beats handed over on every link direction
};

// Under mpirun / srun (docs/pod.md "The distributed pod") the backend runs the pod over the
// job's ranks, each simulating its block of chips; every rank gets the same results and only
// rank 0 prints. rank / ranks are null in builds without the MPI transport (one process).
struct PodRtlBackend {
  tpu::ChipParams (*params)();  // the Verilated chip's
  uint32_t bytes_per_cycle;     // its links' (IciWidth / 8)
  // Loads in[r] into chip r's VMEM from row 0, runs programs[r] on chip r, returns the rows.
  PodRtlRun (*run)(const tpu::PodTopology& topology, uint32_t latency,
                   const std::vector<std::vector<uint32_t>>& in,
                   const std::vector<std::vector<tpu::Instruction>>& programs, uint32_t rows);
  // This process's rank and the ranks the pod runs over (1 without mpirun). Under mpirun they
  // start MPI, so the subcommand calls them only after its options were checked.
  uint32_t (*rank)() = nullptr;
  uint32_t (*ranks)() = nullptr;
};

// The registered backend, or nullptr.
const PodRtlBackend*& pod_rtl_backend();

}  // namespace tpusim

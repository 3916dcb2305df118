// SPDX-License-Identifier: Apache-2.0
// `tpusim train --chips P --backend rtl`: the RTL pod (sim/pod_train_rtl.h, tpu_pod_rtl_n4) is
// linked into `tpusim` only (cmd_train_rtl.cpp registers it); cmd_train.cpp reaches it here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pod_trainer.h"

namespace tpusim {

// What the RTL pod did and how it compared with the golden pod (read after training).
struct PodTrainRtlReport {
  bool golden = true;          // checked against the golden pod (matches_golden is null if not)
  bool matches = true;         // every run's device memory and every read bit-equal
  uint64_t mismatch_step = 0;  // the step of the first difference
  std::string mismatch;        // what differed first
  uint64_t rtl_cycles = 0;     // the RTL pod's cycles, every run (test passes included)
  uint64_t golden_cycles = 0;  // the golden pod's estimate of the same runs
  std::vector<uint64_t> golden_step_cycles;  // its estimate of each step (test passes left out)
  double sim_seconds = 0;                    // wall time of the RTL runs
};

struct PodTrainRtl {
  tpu::ChipParams (*params)();  // the Verilated pod chip's
  uint32_t bytes_per_cycle;     // its links' (IciWidth / 8)
  // Throws std::invalid_argument naming what does not fit the built pod.
  void (*check)(const tpu::ChipParams&, const tpu::PodTopology&, const tpu::LinkTiming&);
  // A maker for PodTrainer::set_backend (checked against the golden pod when `golden`); `step`
  // says which step runs (for the mismatch's step); `report` what happened so far.
  struct Made {
    tpu::train::PodBackendMaker maker;
    std::function<void(uint64_t)> set_step;
    std::function<PodTrainRtlReport()> report;
  };
  Made (*make)(bool golden);
  // Under mpirun / srun (docs/pod.md "The distributed pod"): this process's rank and the
  // ranks the pod runs over (1 without mpirun; null in builds without the MPI transport).
  // Every rank trains the same way; only rank 0 prints and writes files.
  uint32_t (*rank)() = nullptr;
  uint32_t (*ranks)() = nullptr;
};

// The registered RTL pod, or nullptr (the binaries other than tpusim).
const PodTrainRtl*& pod_train_rtl();

}  // namespace tpusim

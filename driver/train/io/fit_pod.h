// SPDX-License-Identifier: Apache-2.0
// fit_pod(): fit() (fit.h) for data-parallel training on a pod of golden models (issue 31,
// pod_trainer.h): the same epochs of steps over a TrainSet in a BatchOrder, each step's global
// batch split over the chips; besides FitResult, each step's all-reduce cycles and link
// traffic, and whether every chip ends with the same weights bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "fit.h"
#include "pod_trainer.h"

namespace tpu::train {

struct PodFitResult {
  FitResult fit;                           // losses: the global mean of each step
  std::vector<uint64_t> allreduce_cycles;  // per step
  std::vector<double> link_utilization;    // per step (PodStepResult::link_utilization)
  uint64_t link_bytes = 0;                 // over all steps
  // After every step every chip's weights and loss equal chip 0's, bit for bit (checked after
  // each step); otherwise the first step after which they differ.
  bool chips_identical = false;
  uint64_t chips_differ_step = 0;
};

// Trains: t.init() first, then the epochs (FitOptions::timeline is not supported: false).
// Throws std::invalid_argument for a batch larger than the set.
PodFitResult fit_pod(PodTrainer& t, const TrainSet& train, const TrainSet* test,
                     const FitOptions& opt, uint32_t batch, const FitCallbacks& cb = {});

}  // namespace tpu::train

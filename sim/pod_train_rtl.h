// SPDX-License-Identifier: Apache-2.0
// The RTL pod as a PodTrainer's pod (driver/train/pod_trainer.h PodBackend; issue 31,
// docs/pod.md "Data-parallel training on the RTL pod"): every program of the training step
// runs on the pod of Verilated chips (sim/pod_rtl.h) and, unless told not to, in lockstep on
// the pod of golden models with the same chips, wiring and programs. After every run each
// chip's device memory (weights, optimizer state, gradients, loss: everything the programs
// write; nothing of the pod's training step stays in VMEM across runs) is compared bit for bit
// with the golden chip's, and every read (loss, weights) too; the first difference is kept.
// The RTL's cycles are the step's (measured); a run that has not stopped after 8x the golden
// pod's estimate + 10^6 cycles is an error (never a hang), a pod deadlock faults the waiting
// chips ERR_ICI_DEADLOCK (the fabric's rule), reported as an error naming the chips.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pod_trainer.h"
#include "pod_transport.h"

namespace tpu::sim {

// What the RTL pod did and how it compared (shared with the caller, read after training).
struct PodTrainRtlCheck {
  bool golden = true;          // checked against the golden pod
  bool matches = true;         // every run's device memory and every read bit-equal so far
  uint64_t step = 0;           // set by the caller: the step being run (for `mismatch_step`)
  uint64_t mismatch_step = 0;  // the step of the first difference
  std::string mismatch;        // what differed first
  uint64_t runs = 0;           // pod runs
  uint64_t rtl_cycles = 0;     // summed over the runs (the RTL pod's)
  uint64_t golden_cycles = 0;  // the golden pod's estimate of the same runs
  // The golden pod's estimate of each step's runs (index step - 1; the forward passes of the
  // test accuracy, `what` = "forward", are not a step's).
  std::vector<uint64_t> golden_step_cycles;
  double sim_seconds = 0;  // wall time of the RTL runs
};

// Throws std::invalid_argument naming what does not fit when `chip` is not the Verilated
// pod chip's (PodRtl::params(): N, VMEM, UB, accumulator rows, links), the topology needs more
// links than it has, the link bandwidth is not the build's (IciWidth / 8) or the latency is 0.
void check_pod_rtl_fits(const ChipParams& chip, const PodTopology& topo, const LinkTiming& timing);

// A maker for PodTrainer::set_backend: the RTL pod (tpu_pod_rtl_n4), checked against the golden
// pod when `golden`; `check` is filled as the pods run.
train::PodBackendMaker pod_rtl_backend(bool golden, std::shared_ptr<PodTrainRtlCheck> check);
// The same over the ranks of `transport` (docs/pod.md "The distributed pod"): every rank runs
// the same trainer; each simulates its block of chips, a read of a chip's memory comes from
// the rank that simulates it (to every rank), and each rank compares its own chips' memory
// with the golden pod's after every run (every read on every rank).
train::PodBackendMaker pod_rtl_backend(bool golden, std::shared_ptr<PodTrainRtlCheck> check,
                                       std::shared_ptr<PodTransport> transport);

}  // namespace tpu::sim

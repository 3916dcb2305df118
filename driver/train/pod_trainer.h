// SPDX-License-Identifier: Apache-2.0
// PodTrainer: data-parallel training of a float ONNX model on a pod of golden models (issue
// 31, docs/training.md "Data-parallel training on a pod"). The model is compiled once for a
// chip's slice of batch / P examples with the gradient all-reduce pass
// (compiler/allreduce.h); each chip of the pod (driver/pod.h, PodModel) holds its own copy of
// the weights and optimizer state in its own device memory. A step places slice r of the
// global batch on chip r and runs three pod runs: forward + loss + backward (no links), the
// all-reduces of every gradient and of the loss, and the optimizer update. Every chip then
// holds the same weights, bit for bit, and the global batch's mean loss.
//
// Cycles are the pod model's estimate (pod.h: units one after another, links by bandwidth and
// latency), not ModelDevice's (which overlaps the units), so compare them with each other.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pod.h"
#include "trainer.h"

namespace tpu::train {

struct PodStepResult {
  float loss = 0;                  // the global batch's mean loss (chip 0's, after all-reduce)
  std::vector<float> chip_losses;  // each chip's copy of it (equal when the pod is correct)
  uint64_t cycles = 0;             // the three runs' pod cycles, summed
  uint64_t allreduce_cycles = 0;   // the all-reduce run's
  uint64_t link_bytes = 0;         // bytes moved over all links in the step
  uint64_t link_busy_cycles = 0;   // sum over link directions of cycles transmitting
  // link_busy_cycles / (allreduce_cycles * chips): the share of the all-reduce's time a chip's
  // sending link transmits, on average (these algorithms send on one link at a time).
  double link_utilization = 0;
};

// One pod run's figures.
struct PodRunFigures {
  uint64_t cycles = 0;            // the pod's (START to the last chip stopping)
  uint64_t link_bytes = 0;        // bytes moved over all links
  uint64_t link_busy_cycles = 0;  // sum over link directions of cycles transmitting
};

// The pod a PodTrainer's programs run on: by default the pod of golden models (PodModel);
// sim/pod_train_rtl.h's is the RTL pod checked against the golden pod.
class PodBackend {
 public:
  virtual ~PodBackend() = default;
  // Maps device memory [base, base + bytes) on every chip and opens the DMA window on it.
  virtual void map(uint32_t base, uint32_t bytes) = 0;
  virtual void load(uint32_t chip, uint32_t addr, const std::vector<uint8_t>& bytes) = 0;
  virtual std::vector<uint8_t> dump(uint32_t chip, uint32_t addr, size_t bytes) = 0;
  // Runs programs[r] on chip r; std::runtime_error naming the chip and `what` if a chip faults.
  virtual PodRunFigures run(const std::vector<std::vector<Instruction>>& programs,
                            const char* what) = 0;
};

// Makes the pod of init(): each chip's parameters (with its links), the wiring, the timing.
using PodBackendMaker = std::function<std::unique_ptr<PodBackend>(
    const ChipParams&, const PodTopology&, const LinkTiming&)>;

class PodTrainerImpl;

class PodTrainer {
 public:
  // opt.batch is the GLOBAL batch; it must be a multiple of pod.chips() (std::invalid_argument
  // otherwise). chip.ici_links is raised to pod.links_needed() when it is lower
  // (a pod of one chip too: PodModel wants the links wired).
  PodTrainer(const std::string& onnx_path_or_bytes, const TrainOptions& opt, const ChipParams& chip,
             const PodTopology& pod, const LinkTiming& timing = {});
  ~PodTrainer();
  PodTrainer(PodTrainer&&) noexcept;
  PodTrainer& operator=(PodTrainer&&) noexcept;

  uint32_t chips() const;
  uint32_t classes() const;
  std::array<uint32_t, 3> input_chw() const;
  const ChipParams& chip_params() const;  // each chip's (with its links)

  // The pod init() makes (default, or an empty maker: the pod of golden models).
  void set_backend(PodBackendMaker maker);
  // Weights and optimizer state -> every chip's device memory (a new pod of chips).
  void init();
  // One step on the global batch (opt.batch images, NCHW, and their labels); chip r trains on
  // images [r*B/P, (r+1)*B/P). std::runtime_error naming the chip if the pod faults.
  PodStepResult step(const float* images, const int32_t* labels);
  // Initializer name -> fp32 values, read from chip `chip`'s device memory.
  std::map<std::string, std::vector<float>> weights(uint32_t chip) const;
  // Logits of `count` images by chip 0's forward program (batch B/P at a time).
  std::vector<float> logits(const float* images, uint32_t count);

 private:
  std::unique_ptr<PodTrainerImpl> impl_;
};

}  // namespace tpu::train

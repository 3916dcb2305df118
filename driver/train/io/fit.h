// SPDX-License-Identifier: Apache-2.0
// fit(): the training loop of tpusim train and of the Python module's fit (docs/training.md
// "tpusim train"), on top of the Trainer (trainer.h): epochs of steps over a TrainSet in a
// BatchOrder, the chip's loss of every step, the mean loss and the test accuracy (forward pass
// on the chip) after each epoch, a stop at the first step whose loss or updated weights are not
// finite, and, given a second device running the golden model, the same programs run there in
// lockstep and compared bit for bit (every loss, the final weights).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "train_data.h"
#include "trainer.h"

namespace tpu::train {

struct FitOptions {
  uint32_t epochs = 5;
  uint32_t steps_per_epoch = 0;          // 0: the whole set / batch (at least 1)
  std::optional<uint64_t> shuffle_seed;  // none: file order
  uint32_t test_images = 0;              // first images of the test set (0: no accuracy)
  bool check_weights = true;             // read the weights after every step (divergence)
  bool timeline = false;                 // record the first step's instruction timeline
};

struct EpochResult {
  double loss = 0;                      // mean of the epoch's step losses
  std::optional<double> test_accuracy;  // after the epoch
};

// Where the golden model first disagreed with the device.
struct GoldenMismatch {
  uint64_t step = 0;  // 1-based; 0 = the final weights
  std::string what;   // "loss 0.5 (0x3f000000) vs 0.5000001 (...)" or "dense.weight[12] ..."
};

struct FitResult {
  std::vector<float> losses;          // every step's loss as the chip computed it
  std::vector<uint64_t> step_cycles;  // every step's cycles
  std::vector<EpochResult> epochs;    // completed epochs
  std::optional<double> initial_test_accuracy, test_accuracy;
  uint64_t cycles_total = 0;
  uint32_t steps_per_epoch = 0;  // as used
  // Divergence: the step (1-based) whose loss or updated weights were not finite.
  bool diverged = false;
  uint64_t diverged_step = 0;
  std::string divergence;  // "step 7 (epoch 1): the loss is nan"
  // With a golden device: whether every loss and the final weights were bit-identical.
  std::optional<bool> matches_golden;
  std::optional<GoldenMismatch> golden_mismatch;
  std::vector<InstrEvent> timeline;            // the first step's last program, when recorded
  double wall_seconds = 0, train_seconds = 0;  // all, and the steps alone
};

struct StepInfo {
  uint64_t step = 0, steps = 0;    // 1-based, of all epochs
  uint32_t epoch = 0, epochs = 0;  // 1-based
  float loss = 0;
  uint64_t cycles = 0;
  double images_per_second = 0;  // over the steps so far
};

struct FitCallbacks {
  std::function<void(const StepInfo&)> on_step;
  std::function<void(uint32_t epoch, const EpochResult&)> on_epoch;
  // Before each test-accuracy pass (epoch 0: before the first step), with its image count: the
  // forward pass over the test images can take minutes on the rtl backend.
  std::function<void(uint32_t epoch, uint32_t images)> on_test;
};

// Fraction of the first `count` images of `set` whose largest logit (the first one on ties) is
// their label; the forward pass on the chip.
double test_accuracy(Trainer& t, Device& dev, const TrainSet& set, uint32_t count);

// Trains: t.init(dev) first (and golden->init(*golden_dev)), then the epochs. `test` may be
// null (no accuracy). Throws std::invalid_argument for a batch larger than the set; errors of
// the chip (ChipError, TimeoutError) propagate. A divergence is not an exception: the result
// says so and training stops after that step.
FitResult fit(Trainer& t, Device& dev, const TrainSet& train, const TrainSet* test,
              const FitOptions& opt, uint32_t batch, const FitCallbacks& cb = {},
              Trainer* golden = nullptr, Device* golden_dev = nullptr);

}  // namespace tpu::train

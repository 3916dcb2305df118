// SPDX-License-Identifier: Apache-2.0
#include "fit_pod.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tpu::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double pod_accuracy(PodTrainer& t, const TrainSet& set, uint32_t count) {
  count = std::min(count, set.count);
  if (count == 0) return 0;
  const std::vector<float> images = set.first_images(count);
  const std::vector<float> logits = t.logits(images.data(), count);
  const uint32_t classes = t.classes();
  uint32_t correct = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const float* z = logits.data() + size_t(i) * classes;
    uint32_t best = 0;
    for (uint32_t c = 1; c < classes; ++c)
      if (z[c] > z[best]) best = c;
    correct += int32_t(best) == set.labels[i];
  }
  return double(correct) / count;
}

bool same_bits(const std::map<std::string, std::vector<float>>& a,
               const std::map<std::string, std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, va] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.size() != va.size() ||
        std::memcmp(va.data(), it->second.data(), va.size() * 4) != 0)
      return false;
  }
  return true;
}

std::string non_finite(const std::map<std::string, std::vector<float>>& w) {
  for (const auto& [name, v] : w)
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        return "weight " + name + "[" + std::to_string(i) + "] is not finite after the update";
  return "";
}

// Every chip's loss and weights equal chip 0's (w0), bit for bit.
bool chips_agree(PodTrainer& t, const PodStepResult& sr,
                 const std::map<std::string, std::vector<float>>& w0) {
  for (float l : sr.chip_losses)
    if (std::memcmp(&l, &sr.chip_losses[0], sizeof l) != 0) return false;
  for (uint32_t c = 1; c < t.chips(); ++c)
    if (!same_bits(w0, t.weights(c))) return false;
  return true;
}

}  // namespace

PodFitResult fit_pod(PodTrainer& t, const TrainSet& train, const TrainSet* test,
                     const FitOptions& opt, uint32_t batch, const FitCallbacks& cb) {
  const auto t0 = Clock::now();
  if (batch == 0 || batch > train.count)
    throw std::invalid_argument("batch " + std::to_string(batch) + " is larger than the " +
                                std::to_string(train.count) + " images of " + train.name);
  PodFitResult p;
  FitResult& r = p.fit;
  r.steps_per_epoch = opt.steps_per_epoch ? opt.steps_per_epoch : train.count / batch;
  t.init();
  const bool testing = test && opt.test_images > 0;
  if (testing && cb.on_test) cb.on_test(0, std::min(opt.test_images, test->count));
  if (testing) r.initial_test_accuracy = pod_accuracy(t, *test, opt.test_images);
  BatchOrder order(train.count, opt.shuffle_seed);
  std::vector<uint32_t> idx(batch);
  std::vector<float> images(size_t(batch) * train.image_size());
  std::vector<int32_t> labels(batch);
  const uint64_t steps = uint64_t(opt.epochs) * r.steps_per_epoch;
  uint64_t step = 0;
  for (uint32_t epoch = 1; epoch <= opt.epochs && !r.diverged; ++epoch) {
    double sum = 0;
    for (uint32_t s = 0; s < r.steps_per_epoch; ++s) {
      ++step;
      order.next(batch, idx.data());
      train.gather(idx.data(), batch, images.data(), labels.data());
      const auto ts = Clock::now();
      const PodStepResult sr = t.step(images.data(), labels.data());
      r.train_seconds += seconds_since(ts);
      r.losses.push_back(sr.loss);
      r.step_cycles.push_back(sr.cycles);
      r.cycles_total += sr.cycles;
      p.allreduce_cycles.push_back(sr.allreduce_cycles);
      p.link_utilization.push_back(sr.link_utilization);
      p.link_bytes += sr.link_bytes;
      sum += double(sr.loss);
      const auto w0 = t.weights(0);
      if (p.chips_differ_step == 0 && !chips_agree(t, sr, w0)) p.chips_differ_step = step;
      std::string bad = std::isfinite(sr.loss) ? "" : "the loss is not finite";
      if (bad.empty() && opt.check_weights) bad = non_finite(w0);
      if (cb.on_step) {
        StepInfo info{step, steps, epoch, opt.epochs, sr.loss, sr.cycles, 0};
        info.images_per_second = r.train_seconds > 0 ? double(step) * batch / r.train_seconds : 0;
        cb.on_step(info);
      }
      if (!bad.empty()) {
        r.diverged = true;
        r.diverged_step = step;
        r.divergence = "step " + std::to_string(step) + " (epoch " + std::to_string(epoch) +
                       "): " + bad + " (training diverged; try a lower learning rate)";
        break;
      }
    }
    if (r.diverged) break;
    EpochResult e;
    e.loss = sum / r.steps_per_epoch;
    if (testing && cb.on_test) cb.on_test(epoch, std::min(opt.test_images, test->count));
    if (testing) e.test_accuracy = pod_accuracy(t, *test, opt.test_images);
    r.epochs.push_back(e);
    if (cb.on_epoch) cb.on_epoch(epoch, e);
  }
  if (testing && !r.epochs.empty()) r.test_accuracy = r.epochs.back().test_accuracy;
  if (testing && r.epochs.empty() && !r.diverged) r.test_accuracy = r.initial_test_accuracy;
  const auto w0 = t.weights(0);
  for (uint32_t c = 1; c < t.chips() && p.chips_differ_step == 0; ++c)
    if (!same_bits(w0, t.weights(c))) p.chips_differ_step = step;
  p.chips_identical = p.chips_differ_step == 0;
  r.wall_seconds = seconds_since(t0);
  return p;
}

}  // namespace tpu::train

// SPDX-License-Identifier: Apache-2.0
#include "fit.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tpu::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

std::string float_text(float f) {
  char s[64];
  std::snprintf(s, sizeof s, "%.9g (0x%08x)", double(f), float_bits(f));
  return s;
}

// "" if every weight is finite, else which one is not.
std::string non_finite_weight(const std::map<std::string, std::vector<float>>& w) {
  for (const auto& [name, v] : w)
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        return "weight " + name + "[" + std::to_string(i) + "] is " +
               (std::isnan(v[i]) ? "nan" : "inf") + " after the update";
  return "";
}

// "" if a and b hold the same tensors with the same bits, else the first difference.
std::string first_weight_difference(const std::map<std::string, std::vector<float>>& a,
                                    const std::map<std::string, std::vector<float>>& b) {
  if (a.size() != b.size()) return "the two devices report different weight tensors";
  for (const auto& [name, va] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.size() != va.size())
      return "weight " + name + " differs in shape";
    for (size_t i = 0; i < va.size(); ++i)
      if (float_bits(va[i]) != float_bits(it->second[i]))
        return "weight " + name + "[" + std::to_string(i) + "]: " + float_text(va[i]) +
               " vs the golden model's " + float_text(it->second[i]);
  }
  return "";
}

}  // namespace

double test_accuracy(Trainer& t, Device& dev, const TrainSet& set, uint32_t count) {
  count = std::min(count, set.count);
  if (count == 0) return 0;
  const std::vector<float> images = set.first_images(count);
  const std::vector<float> logits = t.logits(dev, images.data(), count);
  const uint32_t classes = t.classes();
  if (logits.size() != size_t(count) * classes)
    throw std::runtime_error("Trainer::logits returned " + std::to_string(logits.size()) +
                             " values for " + std::to_string(count) + " images of " +
                             std::to_string(classes) + " classes");
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

FitResult fit(Trainer& t, Device& dev, const TrainSet& train, const TrainSet* test,
              const FitOptions& opt, uint32_t batch, const FitCallbacks& cb, Trainer* golden,
              Device* golden_dev) {
  const auto t0 = Clock::now();
  if (batch == 0 || batch > train.count)
    throw std::invalid_argument("batch " + std::to_string(batch) + " is larger than the " +
                                std::to_string(train.count) + " images of " + train.name);
  FitResult r;
  r.steps_per_epoch = opt.steps_per_epoch ? opt.steps_per_epoch : train.count / batch;
  const bool with_golden = golden && golden_dev;
  t.init(dev);
  if (with_golden) golden->init(*golden_dev);
  const bool testing = test && opt.test_images > 0;
  if (testing && cb.on_test) cb.on_test(0, std::min(opt.test_images, test->count));
  if (testing) r.initial_test_accuracy = test_accuracy(t, dev, *test, opt.test_images);

  BatchOrder order(train.count, opt.shuffle_seed);
  std::vector<uint32_t> idx(batch);
  std::vector<float> images(size_t(batch) * train.image_size());
  std::vector<int32_t> labels(batch);
  const uint64_t steps = uint64_t(opt.epochs) * r.steps_per_epoch;
  double train_seconds = 0;
  uint64_t step = 0;
  for (uint32_t epoch = 1; epoch <= opt.epochs && !r.diverged; ++epoch) {
    double sum = 0;
    for (uint32_t s = 0; s < r.steps_per_epoch; ++s) {
      ++step;
      order.next(batch, idx.data());
      train.gather(idx.data(), batch, images.data(), labels.data());
      const auto ts = Clock::now();
      const bool record = opt.timeline && step == 1;
      if (record) dev.record_timeline(true);
      const StepResult sr = t.step(dev, images.data(), labels.data());
      if (record) {
        r.timeline = dev.timeline();
        dev.record_timeline(false);
      }
      train_seconds += seconds_since(ts);
      r.losses.push_back(sr.loss);
      r.step_cycles.push_back(sr.cycles);
      r.cycles_total += sr.cycles;
      sum += double(sr.loss);
      if (with_golden && !r.golden_mismatch) {
        const StepResult g = golden->step(*golden_dev, images.data(), labels.data());
        if (float_bits(g.loss) != float_bits(sr.loss))
          r.golden_mismatch = GoldenMismatch{
              step, "loss " + float_text(sr.loss) + " vs the golden model's " + float_text(g.loss)};
      }
      std::string bad;
      if (!std::isfinite(sr.loss))
        bad = std::string("the loss is ") + (std::isnan(sr.loss) ? "nan" : "inf");
      if (bad.empty() && opt.check_weights) bad = non_finite_weight(t.weights(dev));
      if (cb.on_step) {
        StepInfo info{step, steps, epoch, opt.epochs, sr.loss, sr.cycles, 0};
        info.images_per_second = train_seconds > 0 ? double(step) * batch / train_seconds : 0;
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
    if (testing) e.test_accuracy = test_accuracy(t, dev, *test, opt.test_images);
    r.epochs.push_back(e);
    if (cb.on_epoch) cb.on_epoch(epoch, e);
  }
  if (testing && !r.epochs.empty()) r.test_accuracy = r.epochs.back().test_accuracy;
  if (testing && r.epochs.empty() && !r.diverged) r.test_accuracy = r.initial_test_accuracy;
  if (with_golden) {
    if (!r.golden_mismatch && !r.diverged) {
      const std::string d = first_weight_difference(t.weights(dev), golden->weights(*golden_dev));
      if (!d.empty()) r.golden_mismatch = GoldenMismatch{0, "final " + d};
    }
    r.matches_golden = !r.golden_mismatch.has_value();
  }
  r.train_seconds = train_seconds;
  r.wall_seconds = seconds_since(t0);
  return r;
}

}  // namespace tpu::train

// SPDX-License-Identifier: Apache-2.0
#include "train_data.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "dataset.h"
#include "image_dataset.h"
#include "network.h"

namespace tpu::train {

void TrainSet::gather(const uint32_t* idx, uint32_t n, float* out, int32_t* labels_out) const {
  const size_t size = image_size();
  for (uint32_t k = 0; k < n; ++k) {
    const size_t i = idx[k];
    if (i >= count)
      throw std::out_of_range(name + ": image index " + std::to_string(i) + " past the set");
    float* dst = out + k * size;
    if (!pixels8.empty()) {
      const uint8_t* src = pixels8.data() + i * size;
      for (size_t p = 0; p < size; ++p) dst[p] = float(src[p]) / 255.0f;  // pixels_to_float
    } else {
      std::memcpy(dst, pixels.data() + i * size, size * sizeof(float));
    }
    if (labels_out) labels_out[k] = labels[i];
  }
}

std::vector<float> TrainSet::first_images(uint32_t n) const {
  n = std::min(n, count);
  std::vector<uint32_t> idx(n);
  for (uint32_t i = 0; i < n; ++i) idx[i] = i;
  std::vector<float> out(size_t(n) * image_size());
  gather(idx.data(), n, out.data(), nullptr);
  return out;
}

std::string TrainSet::describe(uint32_t i) const {
  std::string s = "image " + std::to_string(i);
  if (i < files.size()) s += " (" + files[i] + ")";
  return s;
}

namespace {

TrainSet from_image_set(const cnn::ImageSet& s, const std::string& name) {
  TrainSet t;
  t.name = name;
  t.chw = {1, uint32_t(s.rows), uint32_t(s.cols)};
  t.count = uint32_t(s.count);
  t.pixels8 = s.pixels;
  if (s.labels.size() != size_t(s.count))
    throw std::runtime_error(name + ": " + std::to_string(s.labels.size()) + " labels for " +
                             std::to_string(s.count) + " images");
  t.labels.assign(s.labels.begin(), s.labels.end());
  return t;
}

}  // namespace

TrainSet load_idx_set(const std::string& images_path, const std::string& labels_path,
                      const std::string& name) {
  try {
    return from_image_set(cnn::load_idx(images_path, labels_path), name);
  } catch (const cnn::Error& e) {
    throw std::runtime_error(name + ": " + e.what());
  }
}

TrainSet load_fashion_mnist_set(const std::string& dir, bool train) {
  const std::string stem = dir + (train ? "/train" : "/t10k");
  const std::string name =
      std::string("Fashion-MNIST ") + (train ? "training" : "test") + " set (" + dir + ")";
  // Debian's dataset-fashion-mnist ships the files gzip-compressed; plain ones are read too.
  auto pick = [](const std::string& base) {
    std::error_code ec;
    return std::filesystem::exists(base + ".gz", ec) || !std::filesystem::exists(base, ec)
               ? base + ".gz"
               : base;
  };
  try {
    TrainSet t = from_image_set(
        cnn::load_idx(pick(stem + "-images-idx3-ubyte"), pick(stem + "-labels-idx1-ubyte")), name);
    t.classes = cnn::fashion_mnist_classes();
    return t;
  } catch (const cnn::Error& e) {
    throw std::runtime_error(
        std::string(e.what()) +
        " (Fashion-MNIST: apt-get install dataset-fashion-mnist, or give --data DIR)");
  }
}

TrainSet load_folder_set(const std::string& dir, const std::array<uint32_t, 3>& chw) {
  try {
    const cnn::ImageFolder folder = cnn::scan_image_folder(dir);
    cnn::Shape3 shape;
    shape.c = int(chw[0]);
    shape.h = int(chw[1]);
    shape.w = int(chw[2]);
    const cnn::FloatImageSet set = cnn::load_image_folder(folder, cnn::Preprocess{}, shape);
    TrainSet t;
    t.name = dir;
    t.chw = chw;
    t.count = uint32_t(set.count());
    t.pixels.reserve(size_t(t.count) * t.image_size());
    for (const auto& img : set.images) t.pixels.insert(t.pixels.end(), img.begin(), img.end());
    t.labels.assign(set.labels.begin(), set.labels.end());
    t.files = folder.files;
    t.classes = folder.classes;
    return t;
  } catch (const cnn::Error& e) {
    throw std::runtime_error(e.what());
  }
}

void check_set(const TrainSet& set, uint32_t classes, const std::array<uint32_t, 3>& chw,
               const std::string& option) {
  const std::string what = option.empty() ? set.name : option + " " + set.name;
  if (set.count == 0) throw std::invalid_argument(what + ": the data set is empty (no images)");
  if (set.chw != chw)
    throw std::invalid_argument(what + ": images are " + std::to_string(set.chw[0]) + "x" +
                                std::to_string(set.chw[1]) + "x" + std::to_string(set.chw[2]) +
                                " (CxHxW), the model's input is " + std::to_string(chw[0]) + "x" +
                                std::to_string(chw[1]) + "x" + std::to_string(chw[2]));
  for (uint32_t i = 0; i < set.count; ++i) {
    const int32_t l = set.labels[i];
    if (l < 0 || uint32_t(l) >= classes)
      throw std::invalid_argument(what + ": " + set.describe(i) + " has label " +
                                  std::to_string(l) + ", outside the model's " +
                                  std::to_string(classes) + " classes 0.." +
                                  std::to_string(classes - 1));
  }
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

BatchOrder::BatchOrder(uint32_t count, std::optional<uint64_t> seed)
    : count_(count), seed_(seed), state_(seed.value_or(0)) {
  if (count == 0) throw std::invalid_argument("BatchOrder: an empty data set");
  pass_.resize(count);
  pos_ = count;  // the first next() starts a pass
}

void BatchOrder::new_pass() {
  for (uint32_t i = 0; i < count_; ++i) pass_[i] = i;
  if (seed_) {
    for (uint32_t i = count_ - 1; i > 0; --i) {
      const uint64_t j = splitmix64(state_) % (uint64_t(i) + 1);
      std::swap(pass_[i], pass_[size_t(j)]);
    }
  }
  pos_ = 0;
}

void BatchOrder::next(uint32_t n, uint32_t* out) {
  for (uint32_t k = 0; k < n; ++k) {
    if (pos_ == count_) new_pass();
    out[k] = pass_[pos_++];
  }
  taken_ += n;
}

}  // namespace tpu::train

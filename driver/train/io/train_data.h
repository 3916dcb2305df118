// SPDX-License-Identifier: Apache-2.0
// Training data for tpusim train (docs/training.md "tpusim train"): a labelled image set held
// in memory (Fashion-MNIST's idx files, pixel / 255, or an ImageFolder decoded through
// driver/cnn's image loader), the checks the host makes before it places a batch on the chip
// (labels in range, a non-empty set, a batch that fits the set), and the order in which the
// images are taken (file order, or a seeded shuffle per pass), continuing from epoch to epoch.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpu::train {

// A labelled image set, NCHW float per image.
struct TrainSet {
  std::string name;                  // "Fashion-MNIST train (DIR)", or the folder
  std::array<uint32_t, 3> chw{};     // channels, height, width of one image
  uint32_t count = 0;                // images
  std::vector<uint8_t> pixels8;      // idx sets: count * C*H*W bytes (image = byte / 255)
  std::vector<float> pixels;         // folder sets: count * C*H*W floats
  std::vector<int32_t> labels;       // count
  std::vector<std::string> files;    // folder sets: the image file of each index
  std::vector<std::string> classes;  // class names (folder names, or Fashion-MNIST's)

  size_t image_size() const { return size_t(chw[0]) * chw[1] * chw[2]; }
  // Copies the images idx[0..n) into out (n * image_size() floats, NCHW) and their labels.
  void gather(const uint32_t* idx, uint32_t n, float* out, int32_t* labels_out) const;
  // The first `n` images (all when n >= count) as one NCHW block, and their labels.
  std::vector<float> first_images(uint32_t n) const;
  // "image 17" or "image 17 (DIR/cat/x.png)": for messages.
  std::string describe(uint32_t i) const;
};

// An idx3 image file and its idx1 label file (gzip or plain), pixel / 255 (as run-cnn's
// pixels_to_float). Throws std::runtime_error naming the file (missing, malformed, no images).
TrainSet load_idx_set(const std::string& images_path, const std::string& labels_path,
                      const std::string& name);
// Fashion-MNIST's training set (train-images-idx3-ubyte(.gz), 60,000 images) or test set
// (t10k-*, 10,000) in `dir`.
TrainSet load_fashion_mnist_set(const std::string& dir, bool train);
// An ImageFolder (DIR/<class>/<image>.png|.jpg), each image converted to `chw[0]` channels and
// scaled to chw[1] x chw[2], / 255 (driver/cnn/image_dataset.h). Throws std::runtime_error
// naming DIR (no class folders, no images) or the image (undecodable).
TrainSet load_folder_set(const std::string& dir, const std::array<uint32_t, 3>& chw);

// The host's checks before training (std::invalid_argument, naming what is wrong):
//  * the set holds at least one image ("<name>: the data set is empty");
//  * every label is in [0, classes) ("<name>: image 7 has label 12, outside the model's 10
//    classes 0..9");
//  * the images have the model's shape.
void check_set(const TrainSet& set, uint32_t classes, const std::array<uint32_t, 3>& chw,
               const std::string& option);

// SplitMix64 (Steele, Lea, Flood 2014): the PRNG of --seed and --shuffle. state += 0x9E37...;
// z = state; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB;
// return z ^ z >> 31.
uint64_t splitmix64(uint64_t& state);

// The order in which training images are taken: a stream of passes over the set, each pass in
// file order (no seed) or a Fisher-Yates permutation (for i = count-1 down to 1: swap i with
// j = splitmix64() mod (i + 1), one SplitMix64 stream seeded with the seed across all passes).
// Each step takes the next `batch` indices of the stream, so a batch may span two passes and
// each epoch continues where the last one stopped (Keras' fit with steps_per_epoch).
class BatchOrder {
 public:
  BatchOrder(uint32_t count, std::optional<uint64_t> seed);
  void next(uint32_t n, uint32_t* out);
  uint64_t taken() const { return taken_; }  // indices handed out so far

 private:
  void new_pass();
  uint32_t count_;
  std::optional<uint64_t> seed_;
  uint64_t state_ = 0, taken_ = 0;
  std::vector<uint32_t> pass_;
  uint32_t pos_ = 0;
};

}  // namespace tpu::train

// SPDX-License-Identifier: Apache-2.0
// Image data sets in the idx format of MNIST / Fashion-MNIST (gzip-compressed or plain; read
// with zlib), e.g. Debian's dataset-fashion-mnist in /usr/share/datasets/fashion-mnist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpu::cnn {

struct ImageSet {
  int count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, image after image, row-major
  std::vector<uint8_t> labels;  // count (empty if no label file)
  const uint8_t* image(int i) const {
    return pixels.data() + size_t(i) * size_t(rows) * size_t(cols);
  }
};

// Reads an idx3 image file and (if `labels_path` is not empty) its idx1 label file.
// Throws cnn::Error on a missing, truncated or malformed file.
ImageSet load_idx(const std::string& images_path, const std::string& labels_path);

// $TPU_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist.
std::string fashion_mnist_dir();
// The test (t10k, 10,000 images) or training (60,000) set of Fashion-MNIST in `dir`.
ImageSet load_fashion_mnist(const std::string& dir, bool train);
// "T-shirt/top", "Trouser", ... (10 names).
const std::vector<std::string>& fashion_mnist_classes();

}  // namespace tpu::cnn

// SPDX-License-Identifier: Apache-2.0
#include "dataset.h"

#include <zlib.h>

#include <cstdlib>

#include "network.h"

namespace tpu::cnn {

namespace {

std::vector<uint8_t> read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw Error(path + ": cannot open the file");
  std::vector<uint8_t> data;
  uint8_t buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int errnum = 0;
      const std::string msg = gzerror(f, &errnum);
      gzclose(f);
      throw Error(path + ": read error (" + msg + ")");
    }
    if (n == 0) break;
    data.insert(data.end(), buf, buf + n);
  }
  gzclose(f);
  return data;
}

uint32_t be32(const std::vector<uint8_t>& d, size_t at) {
  return uint32_t(d[at]) << 24 | uint32_t(d[at + 1]) << 16 | uint32_t(d[at + 2]) << 8 | d[at + 3];
}

}  // namespace

ImageSet load_idx(const std::string& images_path, const std::string& labels_path) {
  ImageSet s;
  const auto img = read_gz(images_path);
  if (img.size() < 16 || be32(img, 0) != 0x803)
    throw Error(images_path + ": not an idx3 image file (bad magic or too short)");
  s.count = int(be32(img, 4));
  s.rows = int(be32(img, 8));
  s.cols = int(be32(img, 12));
  const size_t need = size_t(s.count) * size_t(s.rows) * size_t(s.cols);
  if (img.size() - 16 < need)
    throw Error(images_path + ": truncated (" + std::to_string(img.size() - 16) +
                " pixel bytes, header says " + std::to_string(need) + ")");
  s.pixels.assign(img.begin() + 16, img.begin() + 16 + long(need));
  if (!labels_path.empty()) {
    const auto lab = read_gz(labels_path);
    if (lab.size() < 8 || be32(lab, 0) != 0x801)
      throw Error(labels_path + ": not an idx1 label file");
    const size_t n = be32(lab, 4);
    if (n != size_t(s.count) || lab.size() - 8 < n)
      throw Error(labels_path + ": " + std::to_string(n) + " labels for " +
                  std::to_string(s.count) + " images (or truncated)");
    s.labels.assign(lab.begin() + 8, lab.begin() + 8 + long(n));
  }
  return s;
}

std::string fashion_mnist_dir() {
  const char* e = std::getenv("TPU_FASHION_MNIST_DIR");
  return e && *e ? e : "/usr/share/datasets/fashion-mnist";
}

ImageSet load_fashion_mnist(const std::string& dir, bool train) {
  const std::string p = dir + (train ? "/train" : "/t10k");
  try {
    return load_idx(p + "-images-idx3-ubyte.gz", p + "-labels-idx1-ubyte.gz");
  } catch (const Error& e) {
    throw Error(
        std::string(e.what()) +
        " (Fashion-MNIST: apt-get install dataset-fashion-mnist, or set TPU_FASHION_MNIST_DIR)");
  }
}

const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

}  // namespace tpu::cnn

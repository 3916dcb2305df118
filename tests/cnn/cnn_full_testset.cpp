// SPDX-License-Identifier: Apache-2.0
// The whole Fashion-MNIST test set (10,000 images) through each bundled model on the RTL chip
// (label slow): every image's int8 logits equal the integer reference, and the chip's accuracy
// is within 1 percentage point of the float model's. The seed CNN at batch 8, the branching
// ones (ResNet, MobileNetV2, SqueezeNet) at batch 16; set TPU_CNN_FULL_IMAGES to run fewer
// images. One test per model (ctest runs each in its own process: one chip per process).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "cnn_models.h"
#include "device_rtl.h"
#include "reference.h"

namespace {

using namespace cnn_test;

void full_testset(const std::string& model, uint32_t batch) {
  const Network net = load_onnx(model);
  const ImageSet train = load_fashion_mnist(fashion_mnist_dir(), true);
  std::vector<std::vector<float>> cal;
  for (int i = 0; i < 200; ++i)
    cal.push_back(pixels_to_float(train.image(i), train.rows * train.cols));
  const QuantNetwork q = quantize_model(net, cal);
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  const char* env = std::getenv("TPU_CNN_FULL_IMAGES");
  const int count = env ? std::min(test.count, std::atoi(env)) : test.count;
  tpu::RtlDevice dev;
  ChipRunner runner(dev, q, batch);
  int float_ok = 0, chip_ok = 0, mismatches = 0;
  uint64_t cycles = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i0 = 0; i0 < count; i0 += int(batch)) {
    const int b = std::min<int>(int(batch), count - i0);
    std::vector<std::vector<int32_t>> images;
    for (int i = i0; i < i0 + b; ++i) {
      images.emplace_back(784);
      q.quantize_pixels(test.image(i), images.back().data());
    }
    const auto r = runner.run(pointers(images));
    cycles += r.stats.cycles;
    for (int j = 0; j < b; ++j) {
      const int label = test.labels[size_t(i0 + j)];
      if (r.outputs[size_t(j)] != int_forward(q, images[size_t(j)].data())) ++mismatches;
      chip_ok += argmax(r.outputs[size_t(j)]) == label;
      const auto x = pixels_to_float(test.image(i0 + j), 784);
      float_ok += argmax(float_forward(net, x.data())) == label;
    }
    if ((i0 / int(batch)) % 125 == 0)
      std::fprintf(stderr, "%d/%d images, chip accuracy so far %.4f\n", i0 + b, count,
                   double(chip_ok) / (i0 + b));
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s: images %d: float accuracy %.4f, chip accuracy %.4f, mismatches %d, %.0f cycles/image, "
      "%.3f s/image\n",
      model.c_str(), count, double(float_ok) / count, double(chip_ok) / count, mismatches,
      double(cycles) / count, secs / count);
  EXPECT_EQ(mismatches, 0);
  EXPECT_NEAR(double(chip_ok) / count, double(float_ok) / count, 0.01);
}

std::string model_path(const std::string& name) {
  return std::string(TPU_CNN_SOURCE_DIR) + "/models/" + name + ".onnx";
}

TEST(CnnChipFull, FashionTestSetAccuracyAndBitExact) { full_testset(bundled_model(), 8); }
TEST(CnnChipFull, ResnetTestSetAccuracyAndBitExact) { full_testset(model_path("resnet"), 16); }
TEST(CnnChipFull, MobilenetTestSetAccuracyAndBitExact) {
  full_testset(model_path("mobilenet"), 16);
}
TEST(CnnChipFull, SqueezenetTestSetAccuracyAndBitExact) {
  full_testset(model_path("squeezenet"), 16);
}

}  // namespace

// CNNs on the RTL chip ("rtl" Device backend): the chip's int8 logits equal the integer
// reference of the quantized network exactly. Each test case runs in its own process (one
// chip per process).
#include <gtest/gtest.h>

#include "cnn_models.h"
#include "device_rtl.h"
#include "reference.h"

namespace {

using namespace cnn_test;

tpu::RtlDevice& device(double backpressure = 0.0) {
  static tpu::RtlDevice* d = [&] {
    tpu::RtlOptions o;
    o.backpressure = backpressure;
    o.seed = 7;
    return new tpu::RtlDevice(o);
  }();
  return *d;
}

// Runs `images` in batches on the chip, checks every output against the reference; returns
// how many argmax outputs equal `labels` (if given).
int run_and_compare(const QuantNetwork& q, const std::vector<std::vector<int32_t>>& images, uint32_t batch,
                    const std::vector<uint8_t>* labels = nullptr, double backpressure = 0.0) {
  ChipRunner runner(device(backpressure), q, batch);
  int correct = 0;
  uint64_t cycles = 0;
  for (size_t i0 = 0; i0 < images.size(); i0 += batch) {
    const auto ptrs = pointers(images, i0, batch);
    const auto r = runner.run(ptrs);
    cycles += r.stats.cycles;
    for (size_t j = 0; j < ptrs.size(); ++j) {
      const auto ref = int_forward(q, ptrs[j]);
      EXPECT_EQ(r.outputs[j], ref) << "image " << i0 + j;
      if (labels) correct += argmax(r.outputs[j]) == (*labels)[i0 + j];
    }
  }
  std::printf("%zu images at batch %u: %.0f cycles per image\n", images.size(), batch, double(cycles) / double(images.size()));
  return correct;
}

std::vector<std::vector<int32_t>> fashion_images(const QuantNetwork& q, const ImageSet& set, int first, int count) {
  std::vector<std::vector<int32_t>> v;
  for (int i = first; i < first + count; ++i) {
    v.emplace_back(size_t(q.input.size()));
    q.quantize_pixels(set.image(i), v.back().data());
  }
  return v;
}

TEST(CnnChip, Fashion100ImagesBitExact) {
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  const auto images = fashion_images(q, test, 0, 100);
  const int correct = run_and_compare(q, images, 10, &test.labels);
  EXPECT_GE(correct, 85);
}

TEST(CnnChip, FashionBatchOneAndLayerProfile) {
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  const auto images = fashion_images(q, test, 100, 3);
  run_and_compare(q, images, 1);
  ChipRunner runner(device(), q, 1);
  const auto profile = runner.profile(pointers(images, 0, 1));
  ASSERT_EQ(profile.size(), 4u);
  const auto full = runner.run(pointers(images, 0, 1));
  uint64_t sum = 0;
  for (const auto& l : profile) {
    std::printf("%-12s %8lu cycles %6.1f%%\n", l.name.c_str(), (unsigned long)l.cycles, 100 * l.utilization);
    EXPECT_GT(l.cycles, 0u) << l.name;
    EXPECT_GT(l.utilization, 0.0) << l.name;
    EXPECT_LE(l.utilization, 1.0) << l.name;
    sum += l.cycles;
  }
  EXPECT_LE(sum, full.stats.cycles);
  EXPECT_GE(sum + 200, full.stats.cycles);  // only the output write after the last layer
}

TEST(CnnChip, FashionUnderAxiBackpressure) {
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  run_and_compare(q, fashion_images(q, test, 200, 6), 3, nullptr, 0.3);
}

TEST(CnnChip, CifarConvNetRandomWeightsBitExact) {
  const Network net = cifar_convnet(21);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 20, 22));
  run_and_compare(q, quantize_images(q, random_images(net.input, 2, 23)), 2);
}

TEST(CnnChip, ThreeConvNetRandomWeightsBitExact) {
  const Network net = three_conv_net(31);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 20, 32));
  run_and_compare(q, quantize_images(q, random_images(net.input, 2, 33)), 2);
}

}  // namespace

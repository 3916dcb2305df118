// SPDX-License-Identifier: Apache-2.0
// The ImageNet-size zoo networks (driver/cnn/zoo.h) at 224x224x3, seeded random weights,
// bit-exact against the integer reference: ResNet-50 on the golden ISA model (about a minute),
// and ResNet-18, ResNet-50 and MobileNetV2 on the RTL chip (default N), 2 images each, batch 1
// (label slow; one chip per process: ctest runs each test case in its own process).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "cnn_models.h"
#include "device_model.h"
#include "device_rtl.h"
#include "reference.h"
#include "zoo.h"

namespace {

using namespace cnn_test;

void check_zoo(const std::string& name, const std::string& backend, int images) {
  const auto t0 = std::chrono::steady_clock::now();
  const Network net = zoo_network(name, 1);
  const QuantNetwork q = quantize_model(net, zoo_images(net.input, 1, 11));
  const auto x = quantize_images(q, zoo_images(net.input, images, 12));
  auto dev = tpu::open_device(backend);
  ChipRunner runner(*dev, q, 1);
  EXPECT_TRUE(runner.compiled().spill);
  uint64_t cycles = 0;
  for (int i = 0; i < images; ++i) {
    const auto r = runner.run(pointers(x, size_t(i), 1));
    const auto want = int_forward(q, x[size_t(i)].data());
    EXPECT_EQ(r.outputs[0], want) << name << " on " << backend << ": image " << i;
    int distinct = 0;
    for (size_t k = 1; k < want.size(); ++k) distinct += want[k] != want[0];
    EXPECT_GT(distinct, 100) << name << ": the logits hardly vary";
    cycles += r.stats.cycles;
  }
  std::printf("%s on %s: %d images, %llu cycles, %.1f s\n", name.c_str(), backend.c_str(), images,
              static_cast<unsigned long long>(cycles),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST(ZooModel, ResNet50) { check_zoo("resnet50", "model", 1); }
TEST(ZooChip, ResNet18) { check_zoo("resnet18", "rtl", 2); }
TEST(ZooChip, ResNet50) { check_zoo("resnet50", "rtl", 2); }
TEST(ZooChip, MobileNetV2) { check_zoo("mobilenetv2", "rtl", 2); }

}  // namespace

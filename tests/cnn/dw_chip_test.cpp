// SPDX-License-Identifier: Apache-2.0
// The depthwise chip (tpu_sim_dw_n16, issue 33) through its rtl Device backend
// (tpu_device_rtl_dw_n16): a small MobileNet compiled for the chip the backend reports (its
// depthwise unit, DwWidth TPU_SIM_DW_WIDTH) runs its depthwise convolutions as dwconv on the
// Verilated unit; every image's outputs equal the golden model's (model backend, same chip
// parameters) and the integer reference's. One chip per process (gtest_discover_tests).
#include <gtest/gtest.h>

#include <variant>

#include "cnn_models.h"
#include "device_model.h"
#include "device_rtl.h"
#include "reference.h"

namespace {

using namespace cnn_test;

size_t count_dwconv(const tpu::cnn::Program& p) {
  size_t n = 0;
  for (const auto& ins : p.instructions) n += std::holds_alternative<tpu::DwConv>(ins) ? 1 : 0;
  return n;
}

TEST(DwChipCnn, BackendReportsTheDepthwiseUnit) {
  EXPECT_EQ(tpu::RtlDevice::compiled_params().dw_width, unsigned(TPU_SIM_DW_WIDTH));
  tpu::RtlDevice rtl;
  EXPECT_EQ(rtl.params().dw_width, unsigned(TPU_SIM_DW_WIDTH));
  EXPECT_EQ(rtl.params(), tpu::RtlDevice::compiled_params());
}

TEST(DwChipCnn, SmallMobileNetBitExactWithModelAndReference) {
  const Network net = small_mobilenet(71);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 8, 72));
  const auto images = quantize_images(q, random_images(net.input, 4, 73));
  constexpr uint32_t kBatch = 2;
  tpu::RtlDevice rtl;
  tpu::ModelDevice model(rtl.params());
  ChipRunner on_rtl(rtl, q, kBatch);
  ChipRunner on_model(model, q, kBatch);
  ASSERT_GT(count_dwconv(on_rtl.program(kBatch)), 0u) << "no depthwise convolution ran as dwconv";
  uint64_t cycles = 0;
  for (size_t i0 = 0; i0 < images.size(); i0 += kBatch) {
    const auto ptrs = pointers(images, i0, kBatch);
    const auto r = on_rtl.run(ptrs);
    const auto m = on_model.run(ptrs);
    cycles += r.stats.cycles;
    EXPECT_FALSE(r.stats.cycles_estimated);
    for (size_t j = 0; j < ptrs.size(); ++j) {
      EXPECT_EQ(r.outputs[j], m.outputs[j]) << "image " << i0 + j << ": rtl vs model";
      EXPECT_EQ(r.outputs[j], int_forward(q, ptrs[j]))
          << "image " << i0 + j << ": rtl vs int_forward";
    }
  }
  std::printf("%zu images at batch %u on the depthwise chip: %.0f cycles per image\n",
              images.size(), kBatch, double(cycles) / double(images.size()));
}

}  // namespace

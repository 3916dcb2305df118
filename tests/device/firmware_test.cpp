// SPDX-License-Identifier: Apache-2.0
// firmware/*.s, assembled at build time into TPU_FIRMWARE_DIR/*.bin, run on both backends with
// random inputs at the addresses their headers document, checked against C++
// (tpu::reference_matmul, layer by layer), and round-tripped through the disassembler.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "assembler.h"
#include "device_model.h"
#include "device_rtl.h"
#include "firmware_inputs.h"
#include "tiled_ops.h"

namespace {

using namespace tpu;
constexpr uint32_t N = TPU_SIM_N;

std::vector<Instruction> load_firmware(const std::string& name) {
  return decode_program(load_binary(std::string(TPU_FIRMWARE_DIR) + "/" + name + ".bin"));
}

std::string read_source(const std::string& name) {
  std::ifstream in(std::string(TPU_FIRMWARE_SRC_DIR) + "/" + name + ".s");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

using namespace tpu::firmware;

class FirmwareTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "rtl") {
      dev = std::make_unique<RtlDevice>();
    } else {
      dev = std::make_unique<ModelDevice>(ChipParams::with_n(N));
    }
    for (uint32_t addr : {kX, kW, kQuant, kOut}) dev->register_buffer(addr, 0x10000, "fw");
  }
  std::unique_ptr<Device> dev;
};

INSTANTIATE_TEST_SUITE_P(Backends, FirmwareTest, ::testing::Values("rtl", "model"),
                         [](const auto& p) { return p.param; });

TEST_P(FirmwareTest, MatmulTile) {
  std::mt19937 rng(1);
  const std::vector<uint8_t> x = random_bytes(rng, 16 * N);
  Layer l = random_layer(rng, 16, N, N, ActFunc::Identity);
  dev->write(kX, x);
  dev->write(kW, pack_weights(l.w, N, N, N));
  dev->write(kQuant, pack_quant(l.spec, N));
  dev->run(load_firmware("matmul_tile"), 100'000);
  EXPECT_EQ(dev->read(kOut, 16 * N), reference_matmul(l.spec, x, l.w));
}

TEST_P(FirmwareTest, DenseRelu) {
  std::mt19937 rng(2);
  const std::vector<uint8_t> x = random_bytes(rng, 24 * 2 * N);
  Layer l = random_layer(rng, 24, 2 * N, 2 * N, ActFunc::Relu);
  dev->write(kX, pack_rows(x, 24, 2 * N, N));
  dev->write(kW, pack_weights(l.w, 2 * N, 2 * N, N));
  ASSERT_EQ(quant_images(l.spec, N), 2u);
  dev->write(kQuant, pack_quant(l.spec, N));
  dev->run(load_firmware("dense_relu"), 100'000);
  const std::vector<uint8_t> out = unpack_rows(dev->read(kOut, 24 * 2 * N), 24, 2 * N, N);
  const std::vector<uint8_t> ref = reference_matmul(l.spec, x, l.w);
  EXPECT_EQ(out, ref);
  int zeros = 0;
  for (uint8_t v : ref) zeros += v == 0;
  EXPECT_GT(zeros, 0) << "ReLU should clip something";
  EXPECT_LT(zeros, int(ref.size())) << "not everything";
}

TEST_P(FirmwareTest, Mlp) {
  std::mt19937 rng(3);
  const uint32_t m = 32;
  const std::vector<uint8_t> x = random_bytes(rng, m * 2 * N);
  Layer l1 = random_layer(rng, m, 2 * N, 2 * N, ActFunc::Relu);
  Layer l2 = random_layer(rng, m, 2 * N, 2 * N, ActFunc::Relu);
  Layer l3 = random_layer(rng, m, 2 * N, N, ActFunc::Identity);
  dev->write(kX, pack_rows(x, m, 2 * N, N));
  dev->write(0x20000, pack_weights(l1.w, 2 * N, 2 * N, N));
  dev->write(0x24000, pack_weights(l2.w, 2 * N, 2 * N, N));
  dev->write(0x28000, pack_weights(l3.w, 2 * N, N, N));
  std::vector<uint8_t> q = pack_quant(l1.spec, N);
  for (const Layer* l : {&l2, &l3}) {
    const auto more = pack_quant(l->spec, N);
    q.insert(q.end(), more.begin(), more.end());
  }
  ASSERT_EQ(q.size(), 5u * 12 * N);
  dev->write(kQuant, q);
  const RunStats s = dev->run(load_firmware("mlp"), 200'000);
  const auto h1 = reference_matmul(l1.spec, x, l1.w);
  const auto h2 = reference_matmul(l2.spec, h1, l2.w);
  const auto y = reference_matmul(l3.spec, h2, l3.w);
  EXPECT_EQ(dev->read(kOut, m * N), y);
  EXPECT_EQ(s.counters.mxu_busy, 10u * m);  // 4 + 4 + 2 matmuls of 32 rows
  EXPECT_EQ(s.counters.dma_wr_bytes, m * N);
}

// Every firmware file: the build's .bin is the assembly of the source, and disassembling it
// gives text that assembles back to exactly the same bytes.
TEST(Firmware, AsmDisasmRoundTrip) {
  for (const char* name : {"matmul_tile", "dense_relu", "mlp"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bin =
        load_binary(std::string(TPU_FIRMWARE_DIR) + "/" + name + ".bin");
    EXPECT_EQ(encode_program(assemble(read_source(name), name)), bin);
    const std::string text = disassemble_program(bin);
    EXPECT_EQ(encode_program(assemble(text)), bin);
    EXPECT_GT(bin.size(), 0u);
  }
}

}  // namespace

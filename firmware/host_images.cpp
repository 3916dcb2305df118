// SPDX-License-Identifier: Apache-2.0
// tpu_firmware_images N DIR: writes, for the chip of array size N, a host memory image for
// every program of firmware/ (the blocks its header documents, with deterministic random
// inputs and a zero output buffer) and the image the run must leave behind (the output block
// filled from tpu::reference_matmul, layer by layer):
//
//   DIR/<program>.n<N>.mem            tpusim run firmware/<program>.s --hostmem-in this
//   DIR/<program>.n<N>.expected.mem   what --hostmem-out writes after the run, byte for byte
//
// The build writes them for every N of TPU_SIM_N_LIST into <build>/firmware and installs them
// beside the programs; firmware/*.n16.mem are the N = 16 inputs kept in the source tree for the
// README's commands (tests/cli checks that they equal what this program writes).
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "firmware_inputs.h"
#include "host_image.h"
#include "output_file.h"
#include "tiled_ops.h"

namespace {

using tpu::ActFunc;
using tpu::HostImage;
using tpu::MatmulSpec;

using namespace tpu::firmware;

struct Job {
  std::string program, what;
  HostImage in;              // inputs and a zero output block (named out)
  std::vector<uint8_t> out;  // the expected output block
};

void add(HostImage& img, uint32_t addr, const char* name, std::vector<uint8_t> bytes) {
  img.blocks.push_back({addr, name, std::move(bytes)});
}

Job matmul_tile(uint32_t n) {
  std::mt19937 rng(1);
  Job j{"matmul_tile", "OUT = requant(X . W), 16 x N by N x N", {}, {}};
  const std::vector<uint8_t> x = random_bytes(rng, 16 * n);
  const Layer l = random_layer(rng, 16, n, n, ActFunc::Identity);
  add(j.in, kX, "x", x);
  add(j.in, kW, "w", tpu::pack_weights(l.w, n, n, n));
  add(j.in, kQuant, "quant", tpu::pack_quant(l.spec, n));
  j.out = tpu::reference_matmul(l.spec, x, l.w);
  return j;
}

Job dense_relu(uint32_t n) {
  std::mt19937 rng(2);
  Job j{"dense_relu", "OUT = relu(requant(X . W + bias)), 24 x 2N by 2N x 2N", {}, {}};
  const std::vector<uint8_t> x = random_bytes(rng, 24 * 2 * n);
  const Layer l = random_layer(rng, 24, 2 * n, 2 * n, ActFunc::Relu);
  add(j.in, kX, "x", tpu::pack_rows(x, 24, 2 * n, n));
  add(j.in, kW, "w", tpu::pack_weights(l.w, 2 * n, 2 * n, n));
  add(j.in, kQuant, "quant", tpu::pack_quant(l.spec, n));
  j.out = tpu::pack_rows(tpu::reference_matmul(l.spec, x, l.w), 24, 2 * n, n);
  return j;
}

Job mlp(uint32_t n) {
  std::mt19937 rng(3);
  const uint32_t m = 32;
  Job j{"mlp", "three layers, 32 x 2N -> 2N -> 2N -> N", {}, {}};
  const std::vector<uint8_t> x = random_bytes(rng, m * 2 * n);
  const Layer l1 = random_layer(rng, m, 2 * n, 2 * n, ActFunc::Relu);
  const Layer l2 = random_layer(rng, m, 2 * n, 2 * n, ActFunc::Relu);
  const Layer l3 = random_layer(rng, m, 2 * n, n, ActFunc::Identity);
  add(j.in, kX, "x", tpu::pack_rows(x, m, 2 * n, n));
  add(j.in, 0x20000, "w1", tpu::pack_weights(l1.w, 2 * n, 2 * n, n));
  add(j.in, 0x24000, "w2", tpu::pack_weights(l2.w, 2 * n, 2 * n, n));
  add(j.in, 0x28000, "w3", tpu::pack_weights(l3.w, 2 * n, n, n));
  std::vector<uint8_t> q;
  for (const Layer* l : {&l1, &l2, &l3}) {
    const std::vector<uint8_t> more = tpu::pack_quant(l->spec, n);
    q.insert(q.end(), more.begin(), more.end());
  }
  add(j.in, kQuant, "quant", q);
  const std::vector<uint8_t> h1 = tpu::reference_matmul(l1.spec, x, l1.w);
  const std::vector<uint8_t> h2 = tpu::reference_matmul(l2.spec, h1, l2.w);
  j.out = tpu::reference_matmul(l3.spec, h2, l3.w);
  return j;
}

// The input image as text: a header, the input blocks, and the output block as size= only.
std::string input_text(const Job& j, uint32_t n) {
  std::string s = "# Host memory for firmware/" + j.program +
                  ".s on the chip of N = " + std::to_string(n) + ": " + j.what + ".\n" +
                  "# Written by tpu_firmware_images (firmware/host_images.cpp). From the folder "
                  "that holds firmware/:\n" +
                  "#   tpusim run firmware/" + j.program + ".s --hostmem-in firmware/" + j.program +
                  ".n" + std::to_string(n) + ".mem --hostmem-out out.mem\n";
  const std::string blocks = tpu::format_host_image(j.in);
  s += blocks.substr(blocks.find('\n') + 1);  // without format_host_image's own first line
  char line[64];
  std::snprintf(line, sizeof line, "@0x%08x size=%zu name=out\n", kOut, j.out.size());
  return s + line;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tpu_firmware_images N DIR\n");
    return 2;
  }
  const long n = std::strtol(argv[1], nullptr, 10);
  if (n < 4 || n > 64 || (n & (n - 1)) != 0) {
    std::fprintf(stderr,
                 "tpu_firmware_images: N = %s (expected a power of two, 4..64: the "
                 "firmware's limit)\n",
                 argv[1]);
    return 2;
  }
  const uint32_t nn = static_cast<uint32_t>(n);
  try {
    for (const Job& j : {matmul_tile(nn), dense_relu(nn), mlp(nn)}) {
      const std::string stem = std::string(argv[2]) + "/" + j.program + ".n" + argv[1];
      tpu::write_file_atomically(stem + ".mem", input_text(j, nn));
      HostImage after = j.in;
      after.blocks.push_back({kOut, "out", j.out});
      tpu::save_host_image(stem + ".expected.mem", after);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tpu_firmware_images: %s\n", e.what());
    return 1;
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// A host program on the driver: an int8 matmul with bias and ReLU on the simulated chip,
// checked against plain C++. The driver tiles it for the chip (any M x K x N).
//
//   hello_matmul [rtl|model]      rtl: the Verilated chip (default); model: the golden model
#include <cstdio>
#include <random>
#include <string>

#include "device_rtl.h"  // tpu::open_device
#include "tiled_ops.h"   // tpu::MatmulSpec, run_matmul, reference_matmul

int main(int argc, char** argv) {
  try {
    auto chip = tpu::open_device(argc > 1 ? argv[1] : "rtl");

    // out = relu(round((A . W + 300) / 2^9)), int8, for a 100 x 70 by 70 x 40 product.
    tpu::MatmulSpec spec;
    spec.m = 100;
    spec.k = 70;
    spec.n = 40;
    spec.bias.assign(spec.n, 300);
    spec.shift = {9};
    spec.func = tpu::ActFunc::Relu;

    std::mt19937 rng(1);
    std::vector<uint8_t> a(spec.m * spec.k), w(spec.k * spec.n);  // int8 values as bytes
    for (auto& v : a) v = static_cast<uint8_t>(rng());
    for (auto& v : w) v = static_cast<uint8_t>(rng());

    const tpu::MatmulRun run = tpu::run_matmul(*chip, spec, a, w);
    const bool ok = run.out == tpu::reference_matmul(spec, a, w);

    std::printf("out[0][0..9] =");
    for (int c = 0; c < 10; ++c) std::printf(" %d", static_cast<int8_t>(run.out[c]));
    std::printf("\n%u x %u x %u on %s (N = %u): %s, %llu cycles%s, %zu instructions\n", spec.m,
                spec.k, spec.n, std::string(chip->backend()).c_str(), chip->params().N,
                ok ? "matches C++" : "MISMATCH", (unsigned long long)run.stats.cycles,
                run.stats.cycles_estimated ? " (estimate)" : "", run.instructions);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hello_matmul: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: Apache-2.0
// The inputs firmware/*.s are run with: the host addresses their headers document and the
// deterministic random int8 layers. Shared by the host-image generator (host_images.cpp) and
// the firmware tests (tests/device/firmware_test.cpp), so both feed the programs the same data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "tiled_ops.h"

namespace tpu::firmware {

// The addresses of the firmware headers.
constexpr uint32_t kX = 0x10000, kW = 0x20000, kQuant = 0x30000, kOut = 0x40000;

struct Layer {
  MatmulSpec spec;
  std::vector<uint8_t> w;
};

inline std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// An int8 layer m x k -> n with random per-column bias / mult / shift that keep the outputs
// spread over the int8 range.
inline Layer random_layer(std::mt19937& rng, uint32_t m, uint32_t k, uint32_t n, ActFunc func) {
  Layer l;
  l.spec.m = m;
  l.spec.k = k;
  l.spec.n = n;
  l.spec.func = func;
  l.spec.bias.resize(n);
  l.spec.mult.resize(n);
  l.spec.shift.resize(n);
  unsigned base = 0;
  while ((1u << base) < k) ++base;
  for (uint32_t c = 0; c < n; ++c) {
    l.spec.bias[c] = static_cast<int32_t>(rng() % 20001) - 10000;
    l.spec.mult[c] = static_cast<int32_t>(1024 + rng() % 1024);
    l.spec.shift[c] = static_cast<uint8_t>(base + 13 + rng() % 3);
  }
  l.w = random_bytes(rng, size_t{k} * n);
  return l;
}

}  // namespace tpu::firmware

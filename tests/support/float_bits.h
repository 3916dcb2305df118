// SPDX-License-Identifier: Apache-2.0
// Float values as their bit patterns, for tests that compare trained weights bit for bit (a
// NaN equals itself and -0 differs from +0, which comparing floats would get wrong).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace tpu::test {

inline uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Every named tensor's values as bit patterns.
inline std::map<std::string, std::vector<uint32_t>> as_bits(
    const std::map<std::string, std::vector<float>>& w) {
  std::map<std::string, std::vector<uint32_t>> r;
  for (const auto& [k, v] : w)
    for (float f : v) r[k].push_back(bits(f));
  return r;
}

}  // namespace tpu::test

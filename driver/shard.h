// SPDX-License-Identifier: Apache-2.0
// Static sharding, the one implementation used by tpusim run-cnn / run-onnx (--jobs, --shard,
// MPI ranks) and the random regression (tpu_random --shard, scripts/regress.sh): K shards split
// `units` work units (batches of images, data sets, seeds) into K contiguous ranges, shard I
// taking units [ceil(I * units / K), ceil((I + 1) * units / K)). The ranges depend only on (units,
// K), so every process of a run agrees on them without talking, and they cover every unit once.
// (Rounded up: shard 0 always holds unit 0, e.g. the batch that is profiled, when units > 0.)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tpu {

struct ShardSpec {
  uint32_t index = 0;  // I: 0..count-1
  uint32_t count = 1;  // K
  bool sharded() const { return count > 1; }
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "I/K" with 0 <= I < K <= 65536. Throws std::invalid_argument saying what was wrong.
inline ShardSpec parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [&](const std::string& s, const char* what) -> uint64_t {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("--shard " + text + ": " + what + " '" + s +
                                  "' is not a number (expected I/K, e.g. 0/4)");
    return std::stoull(s);
  };
  if (slash == std::string::npos)
    throw std::invalid_argument("--shard " + text + ": expected I/K (shard I of K, 0 <= I < K)");
  const uint64_t i = number(text.substr(0, slash), "I");
  const uint64_t k = number(text.substr(slash + 1), "K");
  if (k < 1 || k > 65536 || i >= k)
    throw std::invalid_argument("--shard " + text +
                                ": expected 0 <= I < K <= 65536 (shard I of K shards)");
  return ShardSpec{uint32_t(i), uint32_t(k)};
}

struct ShardRange {
  uint64_t begin = 0, end = 0;  // [begin, end)
  uint64_t size() const { return end - begin; }
};

// Shard `s`'s contiguous part of `units` units.
inline ShardRange shard_range(uint64_t units, const ShardSpec& s) {
  const auto at = [&](uint64_t i) {  // ceil(i * units / K), without overflow
    return units / s.count * i + ((units % s.count) * i + s.count - 1) / s.count;
  };
  return ShardRange{at(s.index), at(uint64_t(s.index) + 1)};
}

}  // namespace tpu

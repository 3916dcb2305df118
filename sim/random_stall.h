// SPDX-License-Identifier: Apache-2.0
// Seeded coin used by the pin-level models to insert random backpressure (ready low, valid late).
// A fixed seed makes a failing run reproducible; probability 0 never consumes random numbers,
// so turning backpressure off gives exactly the same schedule whatever the seed.
#pragma once

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

namespace tpu::sim {

class RandomStall {
 public:
  // `probability` is the chance per cycle and channel that the model stalls. It must be < 1,
  // otherwise a channel could stall forever.
  void configure(double probability, uint64_t seed) {
    if (!(probability >= 0.0 && probability < 1.0))
      throw std::invalid_argument("backpressure probability must be in [0, 1), got " +
                                  std::to_string(probability));
    probability_ = probability;
    // 2^64 * p, computed in long double so p close to 1 does not overflow.
    threshold_ =
        static_cast<uint64_t>(static_cast<long double>(probability) * 18446744073709551616.0L);
    rng_.seed(seed);
  }
  bool stall() { return threshold_ != 0 && rng_() < threshold_; }
  double probability() const { return probability_; }

 private:
  double probability_ = 0.0;
  uint64_t threshold_ = 0;
  std::mt19937_64 rng_{1};
};

}  // namespace tpu::sim

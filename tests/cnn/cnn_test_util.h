// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the CNN test programs: the message of an Error a call throws, and the
// compiled program of a quantized network on the golden ISA model checked image by image
// against the integer reference.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "device_model.h"
#include "network.h"
#include "reference.h"
#include "runner.h"

namespace cnn_test {

// The message of the tpu::cnn::Error f throws, "(no error)" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tpu::cnn::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs `images` in batches of `batch` on the golden model (N = n; max_micro_batch 0 = as many
// as fit) and requires every image's outputs to equal int_forward's.
inline void expect_bit_exact(const tpu::cnn::QuantNetwork& q,
                             const std::vector<std::vector<int32_t>>& images, uint32_t batch,
                             uint32_t max_micro_batch = 0, uint32_t n = 16) {
  tpu::ModelDevice dev(tpu::ChipParams::with_n(n));
  tpu::cnn::ProgramOptions opt;
  opt.max_micro_batch = max_micro_batch;
  tpu::cnn::ChipRunner runner(dev, q, batch, opt);
  for (size_t i0 = 0; i0 < images.size(); i0 += batch) {
    std::vector<const int32_t*> ptrs;
    for (size_t i = i0; i < images.size() && ptrs.size() < batch; ++i)
      ptrs.push_back(images[i].data());
    const auto r = runner.run(ptrs);
    for (size_t j = 0; j < ptrs.size(); ++j)
      ASSERT_EQ(r.outputs[j], tpu::cnn::int_forward(q, ptrs[j]))
          << q.name << ": image " << i0 + j << ", batch " << batch << ", N " << n;
  }
}

}  // namespace cnn_test

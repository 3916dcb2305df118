// SPDX-License-Identifier: Apache-2.0
// Post-training quantization of a float network: per-output-channel symmetric int8 weights,
// int32 biases, per-tensor activation scale and zero point from calibration images
// (uint8 with zero point 0 after ReLU, asymmetric int8 otherwise). Tensors concatenated into
// one layer's input share one quantization (the union of their ranges), so a Concat costs
// nothing on the chip; a standalone MaxPool keeps its input's quantization; an Add weighs its
// operands by the ratio of their scales (int8 weights, docs/cnn.md). Quantization parameters that
// came with the model (QDQ / QLinear* files) are used as they are.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "network.h"

namespace tpu::cnn {

// Observed value range of one tensor over the calibration images.
// NaN and infinities are not part of the range: the first one is kept in `non_finite`, and
// quantize() refuses the tensor.
struct Range {
  float lo = 0.0f, hi = 0.0f;
  bool seen = false;
  bool has_non_finite = false;
  float non_finite = 0.0f;  // the first NaN / Inf seen
  void add(float v) {
    if (!std::isfinite(v)) {
      if (!has_non_finite) non_finite = v, has_non_finite = true;
      return;
    }
    if (!seen) lo = hi = v, seen = true;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
};

struct Calibration {
  Range input;                // after preprocessing
  std::vector<Range> layers;  // every layer's output (after activation and pooling)
  std::vector<Range> pre;     // every layer's values before its activation (for LUT inputs)
  int images = 0;
};

// Runs the float network on `images` (each one NCHW float image of net.input.size() values).
Calibration calibrate(const Network& net, const std::vector<std::vector<float>>& images);

// True if every activation quantization is given by the model (no calibration needed).
bool fully_quantized(const Network& net);

// Quantizes `net`. `calib` may be null only when fully_quantized(net). Throws Error if a
// parameter does not fit (e.g. a bias outside int32), or if a calibrated range is not finite
// (the float model gives NaN / Inf on the calibration images) or has no normal float scale
// (a range of 3e38 overflows, a subnormal range underflows), naming the tensor.
QuantNetwork quantize(const Network& net, const Calibration* calib);

// A fully quantized model as it is; otherwise calibrated on `images` (needed then, non-empty).
QuantNetwork quantize_model(const Network& net, const std::vector<std::vector<float>>& images);

}  // namespace tpu::cnn

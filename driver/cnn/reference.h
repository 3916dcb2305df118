// SPDX-License-Identifier: Apache-2.0
// Plain-loop references of a network, independent of the chip, of its data layout and of the
// golden ISA model:
//  * float_forward: the float network (as imported), used for calibration and float accuracy;
//  * int_forward: the quantized network, defined by QLayer's comment in network.h. The chip's
//    int8 logits must equal it exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "network.h"

namespace tpu::cnn {

// One image, NCHW float (input.size() values, already in the model's input contract, i.e.
// pixels / 255). Returns the last layer's output (out.size() values). If `layer_outputs` is not
// null it receives every layer's output (after activation and pooling); `input_after_pre`
// receives the input after the preprocessing affine.
// `pre_activations` (optional) receives every layer's values before its activation and pooling.
std::vector<float> float_forward(const Network& net, const float* x,
                                 std::vector<std::vector<float>>* layer_outputs = nullptr,
                                 std::vector<float>* input_after_pre = nullptr,
                                 std::vector<std::vector<float>>* pre_activations = nullptr);

// One float layer on its inputs (one per LayerGeometry::inputs entry).
std::vector<float> float_layer(const Layer& layer,
                               const std::vector<const std::vector<float>*>& ins,
                               std::vector<float>* pre_activation = nullptr);

// One image of quantized input values (input.size() values in input_q's range). Returns the
// last layer's quantized output; `layer_outputs` (optional) receives every layer's output.
std::vector<int32_t> int_forward(const QuantNetwork& net, const int32_t* q,
                                 std::vector<std::vector<int32_t>>* layer_outputs = nullptr);

// One quantized layer on its inputs (one per LayerGeometry::inputs entry; exposed for tests).
std::vector<int32_t> int_layer(const QLayer& layer,
                               const std::vector<const std::vector<int32_t>*>& ins);
std::vector<int32_t> int_layer(const QLayer& layer, const std::vector<int32_t>& in);

// Index of the largest value (the first one on ties).
template <typename T>
int argmax(const std::vector<T>& v) {
  int best = 0;
  for (int i = 1; i < int(v.size()); ++i)
    if (v[size_t(i)] > v[size_t(best)]) best = i;
  return best;
}

}  // namespace tpu::cnn

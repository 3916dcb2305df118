// SPDX-License-Identifier: Apache-2.0
// IR -> IR passes over the float network (network.h Network), run by the frontend after the
// converters (frontend/importer.cpp) and testable on any hand-built Network
// (tests/cnn/passes_test.cpp). The quantization pass, Network -> QuantNetwork, is quantize()
// (quantize.h).
#pragma once

#include "network.h"

namespace tpu::cnn::passes {

// A graph whose input is uint8 / int8 with no QuantizeLinear or QLinear op declaring its
// quantization takes the integers themselves (scale 1, zero point 0, `is_unsigned` from the
// input's type); every Copy layer (max-pooling, Identity, ...) without activation whose inputs
// share one known quantization keeps it, in layer order. No-op when net.input_quant is set.
void quantize_integer_input(Network& net, bool is_unsigned);

// MatMulInteger / ConvInteger layers (Layer::raw_out) compute int32 results the chip writes
// unrequantized: each must be the network's output layer, read by no other layer, with no
// activation and no pooling. Throws Error naming the layer otherwise.
void check_raw_outputs(const Network& net);

}  // namespace tpu::cnn::passes

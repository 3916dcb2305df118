// SPDX-License-Identifier: Apache-2.0
// QDQ rules on the IR: what giving a tensor a quantization (a QuantizeLinear, a QLinear op's or
// a DequantizeLinear's declared input quantization) does to the layers computing it. The
// frontend asks it on the network as converted so far (an annotation where nothing is
// quantized otherwise), QDQ pairing (passes/pair_qdq.h) on the network as fused so far; it
// knows nothing of ONNX.
#pragma once

#include <vector>

#include "network.h"

namespace tpu::cnn::passes {

// Whether layer li of net copies its inputs exactly (a Copy without activation, e.g. a
// standalone max-pool, whose quantization is each input's): requantizing its output is the same
// as requantizing its inputs.
bool exact_copy(const Network& net, int li);

enum class Requantization {
  Annotate,  // every part takes the quantization (none had another)
  InPlace,   // the one part, an exact copy only this tensor's readers read, is requantized
  Copy,      // a Copy layer of the parts requantizes them
};
// What quantization q of the tensor computed by `parts` of net (layers, or kNetworkInput)
// takes: Annotate when no part is quantized otherwise, else InPlace when `parts` is one exact
// copy and `sole_reader` (nothing else reads its output), else Copy. (The network input
// quantized otherwise is an error the caller reports.)
Requantization requantization(const Network& net, const std::vector<int>& parts, bool sole_reader,
                              const TensorQuant& q);

}  // namespace tpu::cnn::passes

// SPDX-License-Identifier: Apache-2.0
// QDQ pairing, the step of the fusion walk (passes/fuse_layers.h) that resolves a QuantizeLinear
// whose tensor is quantized otherwise already. The importer pairs a QuantizeLinear with the
// DequantizeLinear after it and the QLinear ops' declared inputs with what produced them as it
// converts (frontend/qdq.cpp): where the tensor had no other quantization, the producing layers
// simply take it; otherwise it leaves a Copy layer of its own holding a Quantize step
// (network.h's PendingStep) and this decides, in layer order on the network as fused so far,
// whether the step annotates, requantizes an exact copy in place or stays a requantizing Copy
// (the rule of passes/requantize.h). Fusion and pairing depend on each other (a requantizing
// Copy is a layer later activations join; whether a max-pool is an exact copy depends on what
// it joined), hence one walk. Tested on hand-built networks (tests/cnn/pair_qdq_test.cpp).
#pragma once

#include <vector>

#include "network.h"
#include "passes/requantize.h"

namespace tpu::cnn::passes {

struct QdqPairing {
  Requantization how = Requantization::Annotate;
  // The layers of the network computing the step's output when the step left it (Annotate,
  // InPlace: its inputs); empty when it stays (Copy).
  std::vector<int> parts;
};

// Resolves Quantize step c (a Copy layer holding it), whose inputs are layers of `net` (the
// network fused so far) or kNetworkInput: Annotate gives each input the quantization
// c.step.quant, InPlace gives it to the one input (an exact copy nothing else reads), and both
// leave c out of the network; Copy keeps c, a Copy layer requantizing its inputs (the caller
// appends it). Throws Error naming layer c when it would requantize the network input (the
// importer refuses that first, naming the node).
QdqPairing pair_qdq(Network& net, const Layer& c);

}  // namespace tpu::cnn::passes

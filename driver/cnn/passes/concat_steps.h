// SPDX-License-Identifier: Apache-2.0
// The concatenation steps of the fusion walk (passes/fuse_layers.h), beside QDQ pairing
// (passes/pair_qdq.h): the converters import a QLinearConcat and a value read as one tensor 1:1,
// each a Copy layer holding a pending step (network.h's PendingStep), and these decide, in layer
// order on the network as fused so far, whether the Copy stays:
//  * QuantizeConcat (quantize_concat): a QLinearConcat requantizes its parts (a Copy) unless
//    each, as fused, has its output quantization; then it leaves and its readers read the parts
//    in place (a max-pool that only it reads joins each part, when each is a layer's output only
//    the concatenation reads).
//  * OneTensor (read_as_one_tensor): an Add (or a per-channel PRelu) reads a value as one tensor;
//    a value that, as fused, is several parts (a max-pool that joined each part of a
//    concatenation, a QLinearConcat that left) is copied into one first, else the step leaves.
// Whether a part is a layer of its own or was joined depends on the fusion walk before it, and
// later steps join what these leave, hence steps of the one walk. Tested on hand-built networks
// and through the importer (tests/cnn/concat_steps_test.cpp).
#pragma once

#include <vector>

#include "network.h"

namespace tpu::cnn::passes {

// How a concatenation step resolves.
struct ConcatStep {
  bool stays = false;  // the Copy layer stays (the caller appends it)
  // When it leaves: the layers of the network (or kNetworkInput) computing its output, which its
  // readers read in its place.
  std::vector<int> parts;
};

// Resolves QuantizeConcat step c (a Copy layer holding it) whose inputs are layers of `net`, the
// network fused so far, or kNetworkInput: it leaves (parts: its inputs) when each input's
// quantization is c.step.quant, else it stays, a Copy requantizing them (also with one input).
ConcatStep quantize_concat(const Network& net, const Layer& c);

// Resolves OneTensor step c (a Copy layer holding it) whose inputs are as fused: it leaves (parts:
// its one input) when it reads one layer or the network input, else it stays, a Copy of them.
ConcatStep read_as_one_tensor(const Layer& c);

}  // namespace tpu::cnn::passes

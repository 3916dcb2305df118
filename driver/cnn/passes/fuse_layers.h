// SPDX-License-Identifier: Apache-2.0
// Layer fusion, the pass after conversion: Network -> Network. The converters make every
// activation (Relu, Clip, the LUT functions) and every MaxPool a Copy layer of its own, 1:1,
// holding the step (Layer::step, network.h) and the layers it may join: those whose outputs it
// reads with nothing else reading them. In layer order (the graph's node order), each step joins
// them when the fusion rules (passes/fusion.h) allow, and leaves the network; the layers reading
// it read the layer it joined. Otherwise it stays, a Copy layer (an activation after a layer that
// has a LUT already, a max-pool whose padding activate's fields cannot hold, ...). A Quantize
// step (a QuantizeLinear of a tensor quantized otherwise already) is resolved in the same walk by
// the QDQ pairing step (passes/pair_qdq.h): it annotates or requantizes its inputs and leaves,
// or stays a requantizing Copy that later steps may join; so are a QLinearConcat's output
// quantization and a value an Add reads as one tensor, by the concatenation steps
// (passes/concat_steps.h). Tested on hand-built networks (tests/cnn/fuse_layers_test.cpp,
// pair_qdq_test.cpp, concat_steps_test.cpp).
#pragma once

#include <optional>
#include <vector>

#include "network.h"

namespace tpu::cnn::passes {

// The fused network and where each layer of the network given went.
struct FusedNetwork {
  Network net;  // no layer has a pending step left
  // Layer i of the network given -> the layers of `net` computing its output: itself, the layer
  // it joined, or (a max-pool of a concatenation joining each part, a QLinearConcat that left)
  // the parts.
  std::vector<std::vector<int>> parts_of;
  // Layer i of the network given left it as parts that steps reading it may not join (a
  // Quantize step of a tensor others read, annotating its inputs; a QLinearConcat that left,
  // unless each part is a layer's output only it reads; a pooled concatenation).
  std::vector<bool> closed;
};

// Fuses every pending step of `net`, in layer order (the fold pass, passes/fold_affine.h, has
// folded the Fold steps; one left is an internal error). An activation joins its one source when
// can_fuse_activation allows (the step's output quantization becomes the layer's: it was
// requantized after the activation); a max-pool joins every source when each allows
// can_fuse_max_pool (a quantization given to its output becomes theirs); a max-pool of a
// QLinearConcat that left as its parts joins each part the same way, unless closed. A step whose
// source is -1 or (otherwise) a layer that became several parts stays. A Quantize step is
// resolved by pair_qdq (in place only when its source is not closed), a QuantizeConcat or
// OneTensor step by passes/concat_steps.h.
// Throws Error naming the max-pool's node when the pooled layer's shapes do not fit
// ("<net>: node '<name>' (MaxPool): ...").
FusedNetwork fuse_steps(Network net);
// fuse_steps(net).net.
Network fuse_layers(Network net);

// Layers `parts` of f's input network (or kNetworkInput) as the layers of f.net computing them.
std::vector<int> parts_in(const FusedNetwork& f, const std::vector<int>& parts);

// The passes of the pending steps in order: fold_affine (passes/fold_affine.h), then fuse_steps;
// parts_of maps each layer of `net` to the layers of the result computing it.
FusedNetwork resolve_steps(Network net);

// ---- The query of the fold pass: what a layer will be once fused -------------------------
// The fold pass (passes/fold_affine.h) refuses a bias or BatchNormalization after an activation
// or a max-pool naming what it follows as this pass will leave it. (The frontend asks nothing:
// what it used to ask, QLinearConcat's requantization and the Copy of a pooled concatenation
// an Add reads, are steps of the walk, passes/concat_steps.h.)

struct FusedView {
  std::optional<FusedNetwork> fused;  // the pass run on the network so far, when it was needed
  std::vector<int> parts;             // the layers of net(...) computing the parts asked about
  // The network `parts` index: the fused one, or the network asked about (`unfused`).
  const Network& net(const Network& unfused) const { return fused ? fused->net : unfused; }
  // The one layer computing the parts asked about; nullptr when they are several (or the
  // network input).
  const Layer* single(const Network& unfused) const;
};

// Layers `parts` of `net` (or kNetworkInput) as fuse_steps will leave them: `parts` of `net`
// itself when none of them holds a pending step, else the layers of resolve_steps(net)
// computing them.
FusedView view_as_fused(const Network& net, const std::vector<int>& parts);

}  // namespace tpu::cnn::passes

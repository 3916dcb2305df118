// SPDX-License-Identifier: Apache-2.0
// Folding of biases, scales and BatchNormalizations, the pass after conversion and before layer
// fusion: Network -> Network. The converters make every Add / Sub of a constant (a bias), Mul /
// Div by a constant (a per-channel scale) and BatchNormalization that reads the output of a
// layer nothing else reads a Copy layer of its own, 1:1, holding a Fold step (Layer::step,
// network.h): its constants per channel and that layer. In layer order (the graph's node order),
// each folds into that layer's weights and bias (passes/fusion.h's scale_output_channel and
// fold_batch_norm) and leaves the network; the layers and steps reading it read the layer it
// folded into. A fold that cannot be folded is refused: after an activation, a max-pool or a
// requantization (a pending step of the fusion pass, or one already fused into the layer), after
// a layer without weights, a second bias to a layer with a quantized bias, a scale of quantized
// weights, a division by zero, a constant divided by (or minus) the layer. Tested on hand-built
// networks (tests/cnn/fold_affine_test.cpp).
#pragma once

#include "network.h"
#include "passes/fuse_layers.h"

namespace tpu::cnn::passes {

// Folds every Fold step of `net`, in layer order, into the Conv/Dense layer it reads (through
// earlier folds). parts_of: each layer of `net` as the layer of the result computing its output
// (a fold: the layer it folded into); layers' inputs and the other steps' sources are renumbered.
// Throws Error naming the fold's node ("<net>: node '<name>' (<op>): ...") when it cannot fold:
// what it follows then is named as the fusion pass will leave it (passes::view_as_fused).
FusedNetwork fold_affine(Network net);

}  // namespace tpu::cnn::passes

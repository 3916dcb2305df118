// SPDX-License-Identifier: Apache-2.0
// Pass 4 of the training compiler (after append_update): fusion. A Conv whose only forward
// reader is a MaxPool whose windows tile its output lines (window = stride, no pads, the conv's
// output lines a whole number of windows), optionally followed by a ReLU that is the pool's
// only reader, becomes one ConvPool node computed band by band (docs/training.md "conv and
// pooling fused band by band"): per band of pooled lines the conv (without bias) into a band
// buffer in VMEM, the max pool from it, the bias added to the pooled band, the ReLU in place;
// so the conv output and the pooled tensor before the ReLU never exist whole or in device
// memory. Its gradients (ReluGrad, MaxPoolGrad, ConvGradW, BiasGrad) become one ConvPoolGrad
// node, band by band too: the ReLU's mask from its output, the bias gradient of the pooled
// gradient, the pool's gradient into a band buffer, dW accumulated in ACC across the bands.
// The conv must read the graph input (no dX: a first layer) and the batch be a multiple of N.
//
// This changes the order of the fp32 operations (the bias after pooling; db summed over the
// pooled gradient), documented in docs/training.md "The training compiler".
#pragma once

#include "compiler/graph.h"
#include "isa.h"

namespace tpu::train::compiler {

// Returns the number of convolutions fused (0: the graph is unchanged).
int fuse_conv_pool(Graph& g);
// The same on a chip: the graph stays unfused when the fused one does not place on it (a
// fused band needs whole pool windows of conv lines; a VMEM too small for them still trains
// the layers apart, in bands of single lines) while the unfused one does.
int fuse_conv_pool(Graph& g, const ChipParams& chip);

// A weight's DenseGradW whose dW only its update reads, and that update (AdamUpdate or
// SgdUpdate), become one DenseUpdate node in the update's place (after AdamBegin): per chunk of
// K, dW = X^T.dY of the chunk into VMEM and the optimizer on the chunk of W (and its state) at
// once, so dW is never written to device memory and read back. The same kernels in the same
// order on the same values: bit-identical. Returns the number of nodes fused.
int fuse_dense_update(Graph& g);

}  // namespace tpu::train::compiler

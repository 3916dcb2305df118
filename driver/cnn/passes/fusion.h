// SPDX-License-Identifier: Apache-2.0
// Fusion rules on the IR: what it takes for an elementwise step (an activation, a max-pool, a
// BatchNormalization, a per-channel scale) to join the layer that computes its input, and the
// layer that results. The fusion pass (passes/fuse_layers.h) applies the activation and max-pool
// rules; the fold pass (passes/fold_affine.h) folds a BatchNormalization or a per-channel scale
// into the Conv/Gemm whose output only it reads. They know nothing of ONNX.
#pragma once

#include <vector>

#include "network.h"

namespace tpu::cnn::passes {

// Whether activation `a` (LUT function `f`) can follow layer l's own in its activate: one LUT
// at most, and a LUT after a max-pool only if it is monotonic (pooling then commutes with it).
bool can_fuse_activation(const Layer& l, Activation a, LutFunc f);
// Layer l with activation `a` after its own (p0, p1: Clip's bounds, or the LUT function's alpha
// and beta). ReLU and Clip combine into one clamp (ReLU when it is [0, +inf)); the output is
// requantized once, after them (out_quant reset). A LUT's input quantization is the layer's
// given output quantization (pre_quant).
void fuse_activation(Layer& l, Activation a, LutFunc f, float p0, float p1);

// Whether max-pool w can be layer l's fused pooling: l pools nothing yet, is not Dense, has no
// per-pixel divisors, no non-monotonic LUT, the pool's padding fits activate's fields, and the
// pooled size comes out as w's.
bool can_fuse_max_pool(const Layer& l, const MaxPoolWindow& w);
// Layer l pooled by w (shapes recomputed; throws Error if they do not fit).
void fuse_max_pool(Layer& l, const MaxPoolWindow& w);

// A BatchNormalization after Conv/Dense layer l folded into its weights and bias:
// w' = w * s, b' = (b - mean) * s + shift, s = scale / sqrt(var + eps), per output channel.
void fold_batch_norm(Layer& l, const std::vector<double>& scale, const std::vector<double>& shift,
                     const std::vector<double>& mean, const std::vector<double>& var, double eps);
// Output channel oc of Conv/Dense layer l multiplied by s (its weights and bias).
void scale_output_channel(Layer& l, int oc, double s);

}  // namespace tpu::cnn::passes

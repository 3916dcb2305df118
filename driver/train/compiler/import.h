// SPDX-License-Identifier: Apache-2.0
// Pass 1 of the training compiler: a float ONNX model -> the forward nodes of a training graph
// (graph.h), one ONNX node at a time through a table of op converters (import.cpp), which is
// also the one list of the ops training supports (supported_train_ops(), the error messages
// and the table of docs/training.md). Initializers read by a Gemm / MatMul (and the Add of a
// bias after a MatMul) become the trainable parameters, their values the initial weights.
#pragma once

#include <string>

#include "compiler/graph.h"

namespace onnx {
class ModelProto;
}

namespace tpu::train::compiler {

// Imports `model` for batches of `batch` examples. Throws std::invalid_argument for what
// training does not support, naming the node and its op ("node 'bn1' (BatchNormalization):
// not supported for training; supported: ..."), for a model without a trainable weight, for
// a graph output that is not [batch, classes] logits, and for non-float or non-finite
// initializers.
// `n`: the chip's N (image and conv-input layouts depend on it).
Graph import_onnx(const onnx::ModelProto& model, uint32_t batch, uint32_t n);
// The same from a file path or the serialized model.
Graph import_onnx(const std::string& path_or_bytes, uint32_t batch, uint32_t n);

// "Add, Flatten, Gemm, ..." in table order.
std::string supported_train_ops();

}  // namespace tpu::train::compiler

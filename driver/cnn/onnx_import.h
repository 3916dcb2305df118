// SPDX-License-Identifier: Apache-2.0
// ONNX model import (Debian's libonnx-dev protobuf classes): a CNN graph (any DAG of the
// supported ops) into the fused-layer Network of network.h, with shape inference and clear
// errors.
//
// Conv / Gemm / MatMul (or their QLinear forms) become layers; Add of a per-channel constant
// (bias), BatchNormalization, Mul / Div by constants, Relu, Clip, the LUT activations and an
// unpadded MaxPool fuse into the layer before when nothing else reads its output; Add of two
// tensors, padded pooling, unfusable activations and differently quantized concatenations
// become Add and Copy layers; AveragePool and GlobalAveragePool / ReduceMean become grouped
// Conv / Dense layers; a Concat feeding Conv/Dense layers is read in place; Flatten / Reshape /
// Squeeze / Pad / Identity / Dropout need no layer; Sub / Mul / Div / Add by constants on the
// graph input are preprocessing; QuantizeLinear / DequantizeLinear pairs (QDQ models) give
// scales and zero points instead of calibration; a final Softmax runs on the host
// (docs/cnn.md has the table). Anything else is refused with an Error naming the node, its op
// type (and attribute) and the supported ops. The graph input is float32 (or uint8 / int8,
// already quantized) [N, C, H, W], [N, C, L] (an image of one row), [N, features] or [N].
#pragma once

#include <string>
#include <vector>

#include "network.h"

namespace tpu::cnn {

// Reads and imports a .onnx file. Throws Error (unreadable, truncated or corrupt file,
// unsupported op, inconsistent shapes, ...).
Network load_onnx(const std::string& path);
// The same from the serialized bytes; `name` is used in messages.
Network import_onnx_bytes(const std::string& bytes, const std::string& name);

// "Conv (groups, depthwise, dilations), QLinearConv, ..." (for messages and --help), generated
// from the converter table (frontend/op_table.h).
std::string supported_ops();
// Every op of the converter table: "Conv", ..., "com.microsoft.QLinearAdd", ...
std::vector<std::string> supported_op_names();

}  // namespace tpu::cnn

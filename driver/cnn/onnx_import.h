// ONNX model import (Debian's libonnx-dev protobuf classes): a sequential CNN graph into the
// fused-layer Network of network.h, with shape inference and clear errors.
//
// Accepted graphs are chains: Conv / Gemm / MatMul (or their QLinear forms) each followed by
// any of: Add of a per-channel constant (bias), Relu, Clip, MaxPool; Flatten / Reshape between
// the convolutional and the dense part; Identity / Dropout anywhere; Sub / Mul / Div / Add by
// constants on the graph input (preprocessing); QuantizeLinear / DequantizeLinear pairs (QDQ
// models: their scales and zero points are used instead of calibration, DequantizeLinear of a
// constant gives quantized weights). Anything else is refused with an Error naming the node,
// its op type and the supported ops. The graph input is float32 (or uint8 / int8, already
// quantized) [N, C, H, W], [N, C, L] (an image of one row), [N, features] or [N].
#pragma once

#include <string>

#include "network.h"

namespace tpu::cnn {

// Reads and imports a .onnx file. Throws Error (unreadable, truncated or corrupt file,
// unsupported op, inconsistent shapes, ...).
Network load_onnx(const std::string& path);
// The same from the serialized bytes; `name` is used in messages.
Network import_onnx_bytes(const std::string& bytes, const std::string& name);

// "Conv, QLinearConv, Gemm, ..." (for messages and --help).
std::string supported_ops();

}  // namespace tpu::cnn

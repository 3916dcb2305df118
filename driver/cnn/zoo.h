// SPDX-License-Identifier: Apache-2.0
// ImageNet-size networks with torchvision's architectures and seeded random weights, built in
// C++ with the ONNX protobuf API (onnx_export.h): nothing large is committed, and the graph is
// what PyTorch's exporter writes for the torchvision model (Conv without bias + BatchNorm,
// ReLU / ReLU6 as Clip, MaxPool, Add, GlobalAveragePool, Flatten, Gemm).
//  * resnet18: torchvision.models.resnet18 (BasicBlock, [2, 2, 2, 2]), 1.8 GMACs
//  * resnet50: torchvision.models.resnet50 (Bottleneck v1.5, stride on the 3x3, [3, 4, 6, 3]),
//    4.1 GMACs
//  * mobilenetv2: torchvision.models.mobilenet_v2 (width 1.0), 0.3 GMACs
// Input [1, 3, 224, 224] (the size is a parameter), 1000 classes. Weights are He-normal,
// BatchNorm statistics random around identity, so activations neither die nor explode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "network.h"

namespace tpu::cnn {

// The names zoo_onnx accepts: "resnet18", "resnet50", "mobilenetv2".
std::vector<std::string> zoo_names();
// The serialized ONNX model; throws Error for an unknown name (listing the known ones).
std::string zoo_onnx(const std::string& name, uint32_t seed = 1, int image_size = 224);
// The same imported (import_onnx_bytes).
Network zoo_network(const std::string& name, uint32_t seed = 1, int image_size = 224);
// `count` random images of the network's input shape, pixels in [0, 1] (calibration, tests).
std::vector<std::vector<float>> zoo_images(const Shape3& input, int count, uint32_t seed);

}  // namespace tpu::cnn

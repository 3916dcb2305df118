// SPDX-License-Identifier: Apache-2.0
// A host program on the CNN library (tpu_cnn, docs/cnn.md): an ONNX model imported, quantized
// to int8 on a few calibration images, compiled for the chip and run on it for one batch of
// images; every image's logits are checked bit-exactly against the integer reference.
//
//   cnn_classify MODEL.onnx [rtl|model] [IMAGES]
//
// The images are deterministic pseudo-random pixels (the model's input shape, values / 255),
// so the program needs no data set; the bundled models are in models/ of the source tree and
// in share/tpu_rtl/models of an install.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "device_rtl.h"   // tpu::open_device
#include "onnx_import.h"  // tpu::cnn::load_onnx
#include "quantize.h"     // tpu::cnn::quantize_model
#include "reference.h"    // tpu::cnn::int_forward, argmax
#include "runner.h"       // tpu::cnn::ChipRunner

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: cnn_classify MODEL.onnx [rtl|model] [IMAGES (1..64)]\n");
    return 2;
  }
  try {
    const std::string model = argv[1], backend = argc > 2 ? argv[2] : "rtl";
    const int count = argc > 3 ? std::atoi(argv[3]) : 4;
    if (count < 1 || count > 64) {
      std::fprintf(stderr, "cnn_classify: IMAGES = %s (expected 1..64)\n", argv[3]);
      return 2;
    }
    const tpu::cnn::Network net = tpu::cnn::load_onnx(model);

    // Pixels / 255 in the model's input shape: the images also calibrate the quantization.
    std::mt19937 rng(1);
    std::vector<std::vector<float>> images(size_t(count), std::vector<float>(net.input.size()));
    for (auto& image : images)
      for (float& v : image) v = float(rng() % 256) / 255.0f;
    const tpu::cnn::QuantNetwork q = tpu::cnn::quantize_model(net, images);

    auto chip = tpu::open_device(backend);
    tpu::cnn::ChipRunner runner(*chip, q, uint32_t(count));
    std::vector<std::vector<int32_t>> inputs(images.size(), std::vector<int32_t>(q.input.size()));
    std::vector<const int32_t*> batch;
    for (size_t i = 0; i < images.size(); ++i) {
      q.quantize_input(images[i].data(), inputs[i].data());
      batch.push_back(inputs[i].data());
    }
    const tpu::cnn::ChipRunner::Result result = runner.run(batch);

    int mismatches = 0;
    std::printf("classes:");
    for (size_t i = 0; i < images.size(); ++i) {
      const std::vector<int32_t> ref = tpu::cnn::int_forward(q, inputs[i].data());
      if (result.outputs[i] != ref) ++mismatches;
      std::printf(" %d", tpu::cnn::argmax(result.outputs[i]));
    }
    std::printf(
        "\n%d images of %s on %s (N = %u): %s, %llu cycles%s\n", count, net.name.c_str(),
        std::string(chip->backend()).c_str(), chip->params().N,
        mismatches ? "MISMATCH with the integer reference" : "logits match the integer reference",
        (unsigned long long)result.stats.cycles,
        result.stats.cycles_estimated ? " (estimate)" : "");
    return mismatches ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnn_classify: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness: the ONNX model loader of the CNN stack (tpu::cnn::import_onnx_bytes,
// driver/cnn/onnx_import.h) on arbitrary bytes. It must return a Network or throw
// tpu::cnn::Error for anything it cannot use; any other exception, crash, leak or sanitizer
// report is a bug. Seeds: fuzz/corpus/onnx_loader/ (small models, see make_onnx_seeds.cpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tpu::cnn::Network net = tpu::cnn::import_onnx_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
    (void)net;
  } catch (const tpu::cnn::Error&) {
  }
  return 0;
}

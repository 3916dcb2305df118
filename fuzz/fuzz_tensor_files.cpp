// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness: the tensor file readers (tpu::cnn::parse_npy and parse_tensor_proto,
// driver/cnn/tensor_io.h) on arbitrary bytes. Each must return a Tensor whose bytes match its
// dtype and shape, and that survives a write and a read back unchanged, or throw
// tpu::cnn::Error; any other exception, crash, huge allocation, leak or sanitizer report is a
// bug. Seeds: fuzz/corpus/tensor_files/ (small .npy and .pb files).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (int npy = 0; npy < 2; ++npy) {
    try {
      const tpu::cnn::Tensor t = npy ? tpu::cnn::parse_npy(bytes, "fuzz.npy")
                                     : tpu::cnn::parse_tensor_proto(bytes, "fuzz.pb");
      if (t.data.size() != size_t(t.numel()) * tpu::cnn::dtype_size(t.dtype)) __builtin_trap();
      const tpu::cnn::Tensor r =
          npy ? tpu::cnn::parse_npy(tpu::cnn::serialize_npy(t), "again.npy")
              : tpu::cnn::parse_tensor_proto(tpu::cnn::serialize_tensor_proto(t), "again.pb");
      if (r.dtype != t.dtype || r.shape != t.shape || r.data != t.data) __builtin_trap();
    } catch (const tpu::cnn::Error&) {
    }
  }
  return 0;
}

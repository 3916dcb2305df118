// SPDX-License-Identifier: Apache-2.0
// Test rig of the training kernels: a golden-model device with VMEM, tensors streamed from
// host buffers into VMEM, kernels emitted, results streamed back and unpacked.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device_model.h"
#include "kernels.h"
#include "reference.h"

namespace tpu::train::test {

class Rig {
 public:
  explicit Rig(uint32_t n, uint32_t vmem_rows = 4096)
      : dev_(params(n, vmem_rows)), pb_(dev_.params()), arena_(n, 0, vmem_rows) {}

  uint32_t n() const { return dev_.params().N; }
  ProgramBuilder& pb() { return pb_; }
  VmemArena& arena() { return arena_; }
  Device& dev() { return dev_; }

  // A host buffer holding m's packed image of `values` (row-major bit patterns).
  uint32_t host(const VMat& m, const std::vector<uint32_t>& values);
  // Host buffer + read_vmem of it into m.
  uint32_t put(const VMat& m, const std::vector<uint32_t>& values);
  // A host buffer holding raw lanes (already laid out, N per VMEM row).
  uint32_t host_rows(const std::vector<uint32_t>& lanes);
  // Raw lanes (already laid out) into VMEM rows starting at `row`.
  void put_rows(uint32_t row, const std::vector<uint32_t>& lanes);
  // write_vmem of m into a new host buffer, read back after run().
  void want(const VMat& m);
  void run();
  std::vector<uint32_t> got(const VMat& m);        // unpacked, row-major
  std::vector<uint32_t> got_image(const VMat& m);  // packed lanes, padding included
  void new_program() {
    pb_ = ProgramBuilder(dev_.params());
    outputs_.clear();
  }

 private:
  static ChipParams params(uint32_t n, uint32_t vmem_rows);
  struct Output {
    VMat m;
    uint32_t addr;
  };
  ModelDevice dev_;
  ProgramBuilder pb_;
  VmemArena arena_;
  std::vector<Output> outputs_;
  int buffers_ = 0;
};

// Random fp32 values in [-scale, scale] (deterministic per seed), as bit patterns.
std::vector<uint32_t> random_values(size_t count, float scale, uint32_t seed);
ref::Mat random_mat(uint32_t rows, uint32_t cols, float scale, uint32_t seed);
// A random NCHW tensor of values in [-scale, scale].
ref::Tensor random_tensor(uint32_t b, uint32_t c, uint32_t h, uint32_t w, float scale,
                          uint32_t seed);
// The tensor in the image layout of docs/training.md: row (y*w + x)*b + i, column = channel.
std::vector<uint32_t> to_image(const ref::Tensor& t);
// Fails the test (naming `what`, the first 5 differing elements) unless got == want bit for bit.
void expect_bits(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                 const char* what);

}  // namespace tpu::train::test

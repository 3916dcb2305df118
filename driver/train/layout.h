// SPDX-License-Identifier: Apache-2.0
// How the training kernels (kernels.h) place tensors in VMEM (docs/training.md "VMEM layout").
//
// A matrix of `rows` x `cols` fp32 values is stored in column blocks of N lanes: block b
// (columns b*N .. b*N+N-1) is `pitch` consecutive VMEM rows from base + b*pitch, row r lane j
// holding element (r, b*N + j). Lanes past `cols` and rows past `rows` (up to `pitch`) are
// padding and must hold +0.0 (the kernels never write them, and read them only where a zero
// weight row or column makes them irrelevant, see docs/training.md). Host memory holds the
// same image (4N bytes per VMEM row), so one read_vmem / write_vmem moves a whole matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "program.h"

namespace tpu::train {

struct VMat {
  uint32_t base = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t pitch = 0;  // VMEM rows per column block, >= rows

  uint32_t blocks(uint32_t n) const { return (cols + n - 1) / n; }
  uint32_t block(uint32_t b) const { return base + b * pitch; }
  uint32_t span(uint32_t n) const { return blocks(n) * pitch; }  // VMEM rows used
};

inline uint32_t round_up(uint32_t x, uint32_t n) { return (x + n - 1) / n * n; }

// A bump allocator of VMEM rows (every tensor of a training program is placed once).
class VmemArena {
 public:
  VmemArena(uint32_t n, uint32_t first_row, uint32_t vmem_rows)
      : n_(n), next_(first_row), end_(vmem_rows) {}
  // `rows` x `cols`, pitch rounded up to a multiple of N (the transpose unit's blocks).
  VMat matrix(uint32_t rows, uint32_t cols);
  // One row per column block (a bias, a per-column constant): pitch 1.
  VMat row_vector(uint32_t cols);
  // `rows` contiguous VMEM rows (scratch); returns the first.
  uint32_t rows(uint32_t count);
  uint32_t used_end() const { return next_; }
  uint32_t n() const { return n_; }

 private:
  uint32_t n_, next_, end_;
};

// Host image of a VMat: rows x cols row-major floats -> span(N) * N lanes (padding +0.0).
std::vector<float> pack(const VMat& m, uint32_t n, const std::vector<float>& values);
std::vector<float> unpack(const VMat& m, uint32_t n, const std::vector<float>& image);

// Stream a whole VMat between host memory (its packed image at host_addr) and VMEM.
void load(ProgramBuilder& pb, const VMat& m, uint32_t host_addr);
void store(ProgramBuilder& pb, const VMat& m, uint32_t host_addr);
// Writes +0.0 into m's padding rows (rows .. pitch-1 of every block; one `vector and`), so a
// tensor computed on the chip never carries stale VMEM contents into a transpose or an update.
void clear_padding_rows(ProgramBuilder& pb, const VMat& m);

}  // namespace tpu::train

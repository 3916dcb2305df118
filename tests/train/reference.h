// SPDX-License-Identifier: Apache-2.0
// An independent host reference of the training kernels (driver/train/kernels.h), written from
// docs/isa.md ("Floating point", the bf16 matmul summation order, the lane / row reduction
// orders, "Function sequences: definitions and error") and docs/training.md (the order each
// kernel applies them in). Every fp32 operation is the native-float reference of
// tests/driver/fp_reference.h (double arithmetic + one rounding, DAZ / FTZ / canonical NaN by
// bit tests); nothing here calls driver/fp*.cpp or the golden model. Values are fp32 bit
// patterns; matrices are row-major, unpadded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpu::train::ref {

using Bits = uint32_t;

struct Mat {
  uint32_t rows = 0, cols = 0;
  std::vector<Bits> v;  // rows * cols
  Bits at(uint32_t r, uint32_t c) const { return v[std::size_t{r} * cols + c]; }
  Bits& at(uint32_t r, uint32_t c) { return v[std::size_t{r} * cols + c]; }
};
Mat zeros(uint32_t rows, uint32_t cols);
Mat transposed(const Mat& a);

// fp32 operations of the contract and the isa.md function sequences, on one lane.
Bits add(Bits a, Bits b);
Bits sub(Bits a, Bits b);
Bits mul(Bits a, Bits b);
Bits fmax(Bits a, Bits b);
Bits to_bf16(Bits a);  // fp32 -> bf16 -> fp32 (the MXU's input rounding)
Bits exp(Bits x);
Bits log(Bits x);
Bits rcp(Bits x);
Bits rsqrt(Bits x);
Bits sqrt(Bits x);
// The lane-reduction tree over the n lanes of `x` (sum or max).
Bits lane_sum(std::vector<Bits> x);
Bits lane_max(std::vector<Bits> x);

// out = A . B as the MXU computes it with the contraction split into N-row tiles taken in
// order (tile sums from +0.0, k in order, bf16 products; the first tile overwrites ACC, the
// others are added to it).
Mat matmul_tiled(const Mat& a, const Mat& b, uint32_t n);
Mat add_row(const Mat& y, const std::vector<Bits>& bias);
std::vector<Bits> column_sums(const Mat& dy);  // from -0.0, rows in order
Mat relu(const Mat& x);
Mat relu_backward(const Mat& x, const Mat& dy);

struct SoftmaxCeResult {
  Bits loss = 0;
  Mat dlogits;
};
// logits M x C (C <= n), labels in [0, C).
SoftmaxCeResult softmax_cross_entropy(const Mat& logits, const std::vector<int32_t>& labels,
                                      uint32_t n);

struct Sgd {
  float lr = 0, momentum = 0, weight_decay = 0;
};
void sgd(const Sgd& h, std::vector<Bits>& p, const std::vector<Bits>& g, std::vector<Bits>& vel);

struct Adam {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  Bits beta1_pow = 0x3F800000u, beta2_pow = 0x3F800000u;  // b^t, 1.0 before the first step
};
// begin_step advances the powers; update applies to one tensor.
void adam_begin_step(Adam& h, Bits& step_size, Bits& rsqrt_bc2);
void adam_update(const Adam& h, Bits step_size, Bits rsqrt_bc2, std::vector<Bits>& p,
                 const std::vector<Bits>& g, std::vector<Bits>& m, std::vector<Bits>& v);

Bits bits(float f);
float value(Bits b);

}  // namespace tpu::train::ref

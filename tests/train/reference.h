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
// begin_step advances the powers and gives the step's two rows (docs/training.md "The Adam
// update"); update applies to one tensor, whose moments m, v are kept scaled (m / (1 - beta1),
// v / (1 - beta2)).
void adam_begin_step(Adam& h, Bits& update_scale, Bits& eps_term);
void adam_update(const Adam& h, Bits update_scale, Bits eps_term, std::vector<Bits>& p,
                 const std::vector<Bits>& g, std::vector<Bits>& m, std::vector<Bits>& v);

// ---- Convolution and pooling (docs/training.md "Convolution", "Pooling"). Tensors are NCHW;
// output positions are taken in the order (oy, ox, b) (the image layout's row order), which is
// the order the chip sums over positions (dW) in tiles of n.
struct Tensor {
  uint32_t b = 0, c = 0, h = 0, w = 0;
  std::vector<Bits> v;  // NCHW
  Bits at(uint32_t i, uint32_t ch, uint32_t y, uint32_t x) const {
    return v[((std::size_t{i} * c + ch) * h + y) * w + x];
  }
  Bits& at(uint32_t i, uint32_t ch, uint32_t y, uint32_t x) {
    return v[((std::size_t{i} * c + ch) * h + y) * w + x];
  }
};
Tensor tensor(uint32_t b, uint32_t c, uint32_t h, uint32_t w);
struct Window {
  uint32_t kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  uint32_t ho(uint32_t h) const { return (h + pt + pb - kh) / sh + 1; }
  uint32_t wo(uint32_t w) const { return (w + pl + pr - kw) / sw + 1; }
};
// Conv with K-tiles of n: the contraction index is (tap, channel) with `cin_stride` channels
// per tap (1 for cin = 1: taps in the lanes; round_up(cin, n) otherwise, zero channels between).
Tensor conv2d(const Tensor& x, const Tensor& w_oihw, const std::vector<Bits>& bias, const Window& k,
              uint32_t cin_stride, uint32_t n);
Tensor conv2d_dw(const Tensor& x, const Tensor& dy, const Window& k, uint32_t cin_stride,
                 uint32_t n);  // OIHW
Tensor conv2d_dx(const Tensor& dy, const Tensor& w_oihw, const Window& k, uint32_t h, uint32_t w,
                 uint32_t n);
struct MaxPoolResult {
  Tensor y, argmax;  // argmax: the tap ky*kw + kx as fp32 (docs/training.md)
};
MaxPoolResult maxpool(const Tensor& x, const Window& k);
Tensor maxpool_dx(const Tensor& argmax, const Tensor& dy, const Window& k, uint32_t h, uint32_t w);
Tensor avgpool(const Tensor& x, const Window& k);
Tensor avgpool_dx(const Tensor& dy, const Window& k, uint32_t h, uint32_t w);
Tensor gap(const Tensor& x);
Tensor gap_dx(const Tensor& dy, uint32_t h, uint32_t w);

Bits bits(float f);
float value(Bits b);

}  // namespace tpu::train::ref

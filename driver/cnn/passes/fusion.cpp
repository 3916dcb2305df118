// SPDX-License-Identifier: Apache-2.0
#include "passes/fusion.h"

#include <algorithm>
#include <cmath>

namespace tpu::cnn::passes {

bool can_fuse_activation(const Layer& l, Activation a, LutFunc f) {
  const bool can = l.act == Activation::None || (a != Activation::Lut && l.act != Activation::Lut);
  const bool pool_ok = l.pool_k == 1 || a != Activation::Lut || lut_func_monotonic(f);
  return can && pool_ok;
}

void fuse_activation(Layer& l, Activation a, LutFunc f, float p0, float p1) {
  if (a == Activation::Lut) {
    l.act = Activation::Lut;
    l.lut = f;
    l.lut_alpha = p0;
    l.lut_beta = p1;
    // Its input's quantization (QDQ before it, or a QLinear op's input) feeds the LUT.
    l.pre_quant = l.out_quant;
    l.out_quant.reset();
    return;
  }
  float lo = p0, hi = p1;
  if (l.act == Activation::None) {
    l.act = a;
    l.clip_lo = lo;
    l.clip_hi = hi;
  } else if (a == Activation::Relu) {
    if (l.act == Activation::Clip)
      l.clip_lo = std::max(l.clip_lo, 0.0f), l.clip_hi = std::max(l.clip_hi, 0.0f);
  } else {
    if (l.act == Activation::Relu)
      lo = std::max(lo, 0.0f), hi = std::max(hi, 0.0f);
    else
      lo = std::max(lo, l.clip_lo), hi = std::min(hi, l.clip_hi);
    l.act = Activation::Clip;
    l.clip_lo = lo;
    l.clip_hi = std::max(lo, hi);
  }
  if (l.act == Activation::Clip && l.clip_lo == 0.0f && l.clip_hi >= 3.0e38f)
    l.act = Activation::Relu;
  l.out_quant.reset();  // requantized once, to the quantization after the activation
}

bool can_fuse_max_pool(const Layer& l, const MaxPoolWindow& w) {
  const auto& pads = w.pads;
  return (!w.padded || w.chip_pads) && l.pool_k == 1 && l.kind != LayerKind::Dense &&
         !l.per_pixel_divisor() && (l.act != Activation::Lut || lut_func_monotonic(l.lut)) &&
         (l.conv_out.h + pads[0] + pads[2] - w.k) / w.s + 1 == w.oh &&
         (l.conv_out.w + pads[1] + pads[3] - w.k) / w.s + 1 == w.ow;
}

void fuse_max_pool(Layer& l, const MaxPoolWindow& w) {
  l.pool_k = w.k;
  l.pool_s = w.s;
  l.pool_pad_t = w.pads[0];
  l.pool_pad_l = w.pads[1];
  l.pool_pad_b = w.pads[2];
  l.pool_pad_r = w.pads[3];
  l.infer_shapes();
}

void fold_batch_norm(Layer& l, const std::vector<double>& scale, const std::vector<double>& shift,
                     const std::vector<double>& mean, const std::vector<double>& var, double eps) {
  const int64_t k = l.fan_in();
  for (int oc = 0; oc < l.cout(); ++oc) {
    const double s = scale[size_t(oc)] / std::sqrt(var[size_t(oc)] + eps);
    for (int64_t i = 0; i < k; ++i)
      l.weight[size_t(oc * k + i)] = float(l.weight[size_t(oc * k + i)] * s);
    l.bias[size_t(oc)] = float((l.bias[size_t(oc)] - mean[size_t(oc)]) * s + shift[size_t(oc)]);
  }
}

void scale_output_channel(Layer& l, int oc, double s) {
  const int64_t k = l.fan_in();
  for (int64_t i = 0; i < k; ++i)
    l.weight[size_t(oc * k + i)] = float(l.weight[size_t(oc * k + i)] * s);
  l.bias[size_t(oc)] = float(l.bias[size_t(oc)] * s);
}

}  // namespace tpu::cnn::passes

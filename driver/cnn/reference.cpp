// SPDX-License-Identifier: Apache-2.0
#include "reference.h"

#include <algorithm>
#include <limits>

namespace tpu::cnn {

namespace {

// The concatenation (on channels) of a layer's inputs: channel ic of the result.
template <typename T>
std::vector<T> concat_inputs(const LayerGeometry& l,
                             const std::vector<const std::vector<T>*>& ins) {
  if (ins.size() == 1) return *ins[0];
  std::vector<T> x;
  x.reserve(size_t(l.in.size()));
  for (const auto* v : ins) x.insert(x.end(), v->begin(), v->end());
  return x;
}

// The outputs o in [0, n) whose tap o * stride + offset lies in [0, limit): [lo, hi).
struct TapRange {
  int lo, hi;
};
TapRange tap_range(int n, int stride, int offset, int limit) {
  const int lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int hi = std::min(n, limit - offset <= 0 ? 0 : (limit - offset - 1) / stride + 1);
  return {std::min(lo, hi), hi};
}

// Adds tap (ky, kx) of every output pixel of one input channel to acc (a plane of conv_out):
// acc[oy][ox] += term(x[iy][ix], w) for the pixels whose input (iy, ix) lies inside the image
// (zero padding adds nothing). Called in the order (input channel, ky, kx), this adds to each
// output the same terms in the same order as a loop over its window would.
template <typename Acc, typename X, typename Term>
void add_tap(const LayerGeometry& l, const Shape3& o, const X* xc, int ky, int kx, Acc* acc,
             Term term) {
  const TapRange ry = tap_range(o.h, l.sh, ky * l.dh - l.pad_t, l.in.h);
  const TapRange rx = tap_range(o.w, l.sw, kx * l.dw - l.pad_l, l.in.w);
  for (int oy = ry.lo; oy < ry.hi; ++oy) {
    const X* xr = xc + int64_t(oy * l.sh + ky * l.dh - l.pad_t) * l.in.w + (kx * l.dw - l.pad_l);
    Acc* ar = acc + int64_t(oy) * o.w;
    if (l.sw == 1) {
      for (int ox = rx.lo; ox < rx.hi; ++ox) ar[ox] += term(xr[ox]);
    } else {
      for (int ox = rx.lo; ox < rx.hi; ++ox) ar[ox] += term(xr[int64_t(ox) * l.sw]);
    }
  }
}

// Max-pooling of `y` (conv_out) into `out`; `valid` (may be null) marks the values that take
// part (Copy's padding does not).
template <typename T>
std::vector<T> max_pool(const std::vector<T>& x, const std::vector<char>* valid,
                        const LayerGeometry& l) {
  const Shape3 in = l.conv_out, out = l.out;
  const int k = l.pool_k, s = l.pool_s;
  if (k == 1 && s == 1 && !valid) return x;
  std::vector<T> y(size_t(out.size()));
  for (int c = 0; c < out.c; ++c)
    for (int oy = 0; oy < out.h; ++oy)
      for (int ox = 0; ox < out.w; ++ox) {
        bool any = false;
        T m{};
        for (int dy = 0; dy < k; ++dy)
          for (int dx = 0; dx < k; ++dx) {
            // Taps in the pooling padding are skipped (ONNX MaxPool pads with -inf).
            const int iy = oy * s + dy - l.pool_pad_t, ix = ox * s + dx - l.pool_pad_l;
            if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
            const size_t i = size_t((int64_t(c) * in.h + iy) * in.w + ix);
            if (valid && !(*valid)[i]) continue;
            if (!any || x[i] > m) m = x[i];
            any = true;
          }
        y[size_t((int64_t(c) * out.h + oy) * out.w + ox)] = m;
      }
  return y;
}

// Which positions of a Copy layer's padded image hold input values.
std::vector<char> copy_valid(const LayerGeometry& l) {
  const Shape3 o = l.conv_out;
  std::vector<char> v(size_t(o.size()), 0);
  for (int c = 0; c < o.c; ++c)
    for (int y = 0; y < l.in.h; ++y)
      for (int x = 0; x < l.in.w; ++x)
        v[size_t((int64_t(c) * o.h + y + l.pad_t) * o.w + x + l.pad_l)] = 1;
  return v;
}

// ---- float ------------------------------------------------------------------------------

// The linear part (before activation and pooling) of a float layer.
std::vector<float> float_linear(const Layer& l, const std::vector<const std::vector<float>*>& ins) {
  const Shape3 o = l.conv_out;
  std::vector<float> y(size_t(o.size()), 0.0f);
  if (l.kind == LayerKind::Add) {
    const int64_t plane = int64_t(o.h) * o.w;
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = (*ins[0])[i] +
             (*ins[1])[i] *
                 (l.channel_scale.empty() ? 1.0f : l.channel_scale[size_t(int64_t(i) / plane)]);
    return y;
  }
  const std::vector<float> x = concat_inputs(l, ins);
  if (l.kind == LayerKind::Copy) {
    for (int c = 0; c < o.c; ++c)
      for (int yy = 0; yy < l.in.h; ++yy)
        for (int xx = 0; xx < l.in.w; ++xx)
          y[size_t((int64_t(c) * o.h + yy + l.pad_t) * o.w + xx + l.pad_l)] =
              x[size_t((int64_t(c) * l.in.h + yy) * l.in.w + xx)] *
              (l.channel_scale.empty() ? 1.0f : l.channel_scale[size_t(c)]);
    return y;
  }
  const int64_t k = l.fan_in();
  if (l.kind == LayerKind::Dense) {
    const int per_group = o.c / l.group;
    for (int oc = 0; oc < o.c; ++oc) {
      const float* w = &l.weight[size_t(oc * k)];
      const float* in = &x[size_t((oc / per_group) * k)];
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += double(w[i]) * in[i];
      y[size_t(oc)] = float(s) + (l.bias.empty() ? 0.0f : l.bias[size_t(oc)]);
    }
    return y;
  }
  // Convolution, one output channel at a time: each output's double sum gets the products of
  // its window in the order (input channel, ky, kx), as a loop over the window would add them
  // (add_tap), so the result does not depend on this loop order.
  const int cin_g = l.in.c / l.group, cout_g = o.c / l.group;
  const int64_t plane_in = int64_t(l.in.h) * l.in.w;
  std::vector<double> acc(size_t(o.h) * size_t(o.w));
  for (int oc = 0; oc < o.c; ++oc) {
    const int g = oc / cout_g;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int icg = 0; icg < cin_g; ++icg) {
      const float* xc = &x[size_t((g * cin_g + icg) * plane_in)];
      for (int ky = 0; ky < l.kh; ++ky)
        for (int kx = 0; kx < l.kw; ++kx) {
          const double w = l.weight[size_t(((int64_t(oc) * cin_g + icg) * l.kh + ky) * l.kw + kx)];
          add_tap(l, o, xc, ky, kx, acc.data(), [w](float v) { return w * v; });
        }
    }
    for (int oy = 0; oy < o.h; ++oy)
      for (int ox = 0; ox < o.w; ++ox) {
        double s = acc[size_t(oy * o.w + ox)];
        if (l.per_pixel_divisor()) s /= double(l.avg_lines[size_t(oy)] * l.avg_cols[size_t(ox)]);
        y[size_t((int64_t(oc) * o.h + oy) * o.w + ox)] =
            float(s) + (l.bias.empty() ? 0.0f : l.bias[size_t(oc)]);
      }
  }
  return y;
}

// ---- integer ----------------------------------------------------------------------------

int64_t saturate(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// round_half_away_from_zero(p / 2^s): the magnitude rounded half up, sign restored.
int64_t rounding_shift(int64_t p, unsigned s) {
  if (s == 0) return p;
  const uint64_t mag = p < 0 ? uint64_t(0) - uint64_t(p) : uint64_t(p);
  const uint64_t r = (mag >> s) + ((mag >> (s - 1)) & 1u);
  return p < 0 ? -int64_t(r) : int64_t(r);
}

int32_t requant(const QLayer& l, int oc, int64_t acc, int divisor = 0) {
  const int64_t v = saturate(acc + l.bias[size_t(oc)], std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
  if (l.raw) return int32_t(v);  // MatMulInteger / ConvInteger: the int32 itself
  const size_t at = size_t(divisor) * size_t(l.cout()) + size_t(oc);
  const int64_t p = v * int64_t(l.mult[at]);
  const int zp = l.act == Activation::Lut ? l.pre_q.zero_point : l.out_q.zero_point;
  int64_t y = saturate(rounding_shift(p, l.shift[at]) + zp, l.out_q.qmin(), l.out_q.qmax());
  if (l.act == Activation::Relu) y = std::max<int64_t>(y, l.out_q.zero_point);
  if (l.act == Activation::Clip) y = std::min<int64_t>(std::max<int64_t>(y, l.lo), l.hi);
  if (l.act == Activation::Lut) y = l.lut[size_t(y - l.out_q.qmin())];
  return int32_t(y);
}

}  // namespace

std::vector<float> float_layer(const Layer& l, const std::vector<const std::vector<float>*>& ins,
                               std::vector<float>* pre_activation) {
  std::vector<float> y = float_linear(l, ins);
  if (pre_activation) *pre_activation = y;
  for (float& v : y) {
    if (l.act == Activation::Relu) v = std::max(v, 0.0f);
    if (l.act == Activation::Clip) v = std::min(std::max(v, l.clip_lo), l.clip_hi);
    if (l.act == Activation::Lut) v = lut_func_apply(l.lut, l.lut_alpha, l.lut_beta, v);
  }
  if (l.kind == LayerKind::Copy) {
    const std::vector<char> valid = copy_valid(l);
    return max_pool(y, &valid, l);
  }
  return max_pool(y, static_cast<const std::vector<char>*>(nullptr), l);
}

std::vector<float> float_forward(const Network& net, const float* x,
                                 std::vector<std::vector<float>>* layer_outputs,
                                 std::vector<float>* input_after_pre,
                                 std::vector<std::vector<float>>* pre_activations) {
  std::vector<float> in(x, x + net.input.size());
  if (!net.pre_scale.empty()) {
    const int64_t plane = int64_t(net.input.h) * net.input.w;
    for (int c = 0; c < net.input.c; ++c)
      for (int64_t i = 0; i < plane; ++i)
        in[size_t(c * plane + i)] =
            in[size_t(c * plane + i)] * net.pre_scale[size_t(c)] + net.pre_shift[size_t(c)];
  }
  if (input_after_pre) *input_after_pre = in;
  std::vector<std::vector<float>> outs(net.layers.size());
  if (pre_activations) pre_activations->assign(net.layers.size(), {});
  for (size_t li = 0; li < net.layers.size(); ++li) {
    const Layer& l = net.layers[li];
    std::vector<const std::vector<float>*> ins;
    for (int i : l.inputs) ins.push_back(i == kNetworkInput ? &in : &outs[size_t(i)]);
    outs[li] = float_layer(l, ins, pre_activations ? &(*pre_activations)[li] : nullptr);
  }
  std::vector<float> result = outs.empty() ? in : outs.back();
  if (layer_outputs) *layer_outputs = std::move(outs);
  return result;
}

std::vector<int32_t> int_layer(const QLayer& l,
                               const std::vector<const std::vector<int32_t>*>& ins) {
  const Shape3 o = l.conv_out;
  std::vector<int32_t> y(size_t(o.size()));
  if (l.kind == LayerKind::Add) {
    const int za = l.in_qs[0].zero_point, zb = l.in_qs[1].zero_point;
    const int64_t plane = int64_t(o.h) * o.w;
    for (int c = 0; c < o.c; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        const size_t i = size_t(c * plane + p);
        const int64_t acc = int64_t(l.add_weight(c, 0)) * ((*ins[0])[i] - za) +
                            int64_t(l.add_weight(c, 1)) * ((*ins[1])[i] - zb);
        y[i] = requant(l, c, acc);
      }
    return max_pool(y, static_cast<const std::vector<char>*>(nullptr), l);
  }
  const std::vector<int32_t> x = concat_inputs(l, ins);
  std::vector<int> zp(size_t(l.in.c));
  for (int ic = 0; ic < l.in.c; ++ic) zp[size_t(ic)] = l.zero_point_of(ic);
  if (l.kind == LayerKind::Copy) {
    const std::vector<char> valid = copy_valid(l);
    for (int c = 0; c < o.c; ++c)
      for (int yy = 0; yy < l.in.h; ++yy)
        for (int xx = 0; xx < l.in.w; ++xx)
          y[size_t((int64_t(c) * o.h + yy + l.pad_t) * o.w + xx + l.pad_l)] = requant(
              l, c, int64_t(x[size_t((int64_t(c) * l.in.h + yy) * l.in.w + xx)]) - zp[size_t(c)]);
    return max_pool(y, &valid, l);
  }
  const int64_t k = l.fan_in();
  if (l.kind == LayerKind::Dense) {
    const int per_group = o.c / l.group;
    const int64_t plane = int64_t(l.in.h) * l.in.w;
    for (int oc = 0; oc < o.c; ++oc) {
      const int64_t first = (oc / per_group) * k;
      const int8_t* w = &l.weight[size_t(oc * k)];
      int64_t acc = 0;
      // Input element first + i belongs to channel (first + i) / plane: walk it channel by channel.
      for (int64_t i = 0; i < k;) {
        const int64_t c = (first + i) / plane;
        const int32_t z = zp[size_t(c)];
        const int64_t end = std::min(k, (c + 1) * plane - first);
        for (; i < end; ++i) acc += int64_t(x[size_t(first + i)] - z) * w[i];
      }
      y[size_t(oc)] = requant(l, oc, acc);
    }
    return max_pool(y, static_cast<const std::vector<char>*>(nullptr), l);
  }
  const int cin_g = l.in.c / l.group, cout_g = o.c / l.group;
  std::vector<int> divisor_at(size_t(o.h) * size_t(o.w), 0);  // per pixel: its mult/shift
  if (l.per_pixel_divisor())
    for (int oy = 0; oy < o.h; ++oy)
      for (int ox = 0; ox < o.w; ++ox) divisor_at[size_t(oy * o.w + ox)] = l.divisor_index(oy, ox);
  // Zero padding is a real 0 (add_tap skips it), not the zero point.
  const int64_t plane_in = int64_t(l.in.h) * l.in.w;
  std::vector<int64_t> acc(size_t(o.h) * size_t(o.w));
  for (int oc = 0; oc < o.c; ++oc) {
    const int g = oc / cout_g;
    std::fill(acc.begin(), acc.end(), 0);
    for (int icg = 0; icg < cin_g; ++icg) {
      const int ic = g * cin_g + icg;
      const int32_t* xc = &x[size_t(ic * plane_in)];
      const int32_t z = zp[size_t(ic)];
      for (int ky = 0; ky < l.kh; ++ky)
        for (int kx = 0; kx < l.kw; ++kx) {
          const int64_t w = l.weight[size_t(((int64_t(oc) * cin_g + icg) * l.kh + ky) * l.kw + kx)];
          add_tap(l, o, xc, ky, kx, acc.data(), [w, z](int32_t v) { return int64_t(v - z) * w; });
        }
    }
    for (int p = 0; p < o.h * o.w; ++p)
      y[size_t(int64_t(oc) * o.h * o.w + p)] =
          requant(l, oc, acc[size_t(p)], divisor_at[size_t(p)]);
  }
  return max_pool(y, static_cast<const std::vector<char>*>(nullptr), l);
}

std::vector<int32_t> int_layer(const QLayer& layer, const std::vector<int32_t>& in) {
  return int_layer(layer, std::vector<const std::vector<int32_t>*>{&in});
}

std::vector<int32_t> int_forward(const QuantNetwork& net, const int32_t* q,
                                 std::vector<std::vector<int32_t>>* layer_outputs) {
  const std::vector<int32_t> in(q, q + net.input.size());
  std::vector<std::vector<int32_t>> outs(net.layers.size());
  for (size_t li = 0; li < net.layers.size(); ++li) {
    const QLayer& l = net.layers[li];
    std::vector<const std::vector<int32_t>*> ins;
    for (int i : l.inputs) ins.push_back(i == kNetworkInput ? &in : &outs[size_t(i)]);
    outs[li] = int_layer(l, ins);
  }
  std::vector<int32_t> result = outs.empty() ? in : outs.back();
  if (layer_outputs) *layer_outputs = std::move(outs);
  return result;
}

}  // namespace tpu::cnn

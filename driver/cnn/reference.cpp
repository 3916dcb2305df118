#include "reference.h"

#include <algorithm>
#include <limits>

namespace tpu::cnn {

namespace {

// Output columns [lo, hi) whose input column ox * sw + kx - pad_l lies inside the image
// (the others read the zero padding, a real 0).
void valid_columns(const LayerGeometry& l, int in_w, int out_w, int kx, int* lo, int* hi) {
  *lo = 0;
  while (*lo < out_w && *lo * l.sw + kx - l.pad_l < 0) ++*lo;
  *hi = out_w;
  while (*hi > *lo && (*hi - 1) * l.sw + kx - l.pad_l >= in_w) --*hi;
}

// ---- float ------------------------------------------------------------------------------

// Convolution (or dense, as a 1x1 "image") before activation and pooling.
std::vector<float> float_linear(const Layer& l, const std::vector<float>& x) {
  const Shape3 o = l.conv_out;
  std::vector<float> y(size_t(o.size()));
  const int64_t plane = int64_t(o.h) * o.w;
  if (l.kind == LayerKind::Dense) {
    const int64_t k = l.fan_in();
    for (int oc = 0; oc < o.c; ++oc) {
      const float* w = &l.weight[size_t(oc * k)];
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += double(w[i]) * x[size_t(i)];
      y[size_t(oc)] = float(s) + (l.bias.empty() ? 0.0f : l.bias[size_t(oc)]);
    }
    return y;
  }
  const Shape3 in = l.in;
  for (int oc = 0; oc < o.c; ++oc) {
    float* out = &y[size_t(oc * plane)];
    std::fill(out, out + plane, l.bias.empty() ? 0.0f : l.bias[size_t(oc)]);
    for (int ic = 0; ic < in.c; ++ic) {
      const float* src = &x[size_t(int64_t(ic) * in.h * in.w)];
      for (int ky = 0; ky < l.kh; ++ky) {
        for (int kx = 0; kx < l.kw; ++kx) {
          const float w = l.weight[size_t(((int64_t(oc) * in.c + ic) * l.kh + ky) * l.kw + kx)];
          for (int oy = 0; oy < o.h; ++oy) {
            const int iy = oy * l.sh + ky - l.pad_t;
            if (iy < 0 || iy >= in.h) continue;
            const float* row = src + int64_t(iy) * in.w;
            float* orow = out + int64_t(oy) * o.w;
            int lo, hi;
            valid_columns(l, in.w, o.w, kx, &lo, &hi);
            const int off = kx - l.pad_l;
            if (l.sw == 1) {
              for (int ox = lo; ox < hi; ++ox) orow[ox] += w * row[ox + off];
            } else {
              for (int ox = lo; ox < hi; ++ox) orow[ox] += w * row[ox * l.sw + off];
            }
          }
        }
      }
    }
  }
  return y;
}

template <typename T>
std::vector<T> max_pool(const std::vector<T>& x, Shape3 in, Shape3 out, int k, int s) {
  if (k == 1 && s == 1) return x;
  std::vector<T> y(size_t(out.size()));
  for (int c = 0; c < out.c; ++c)
    for (int oy = 0; oy < out.h; ++oy)
      for (int ox = 0; ox < out.w; ++ox) {
        T m = x[size_t((int64_t(c) * in.h + oy * s) * in.w + ox * s)];
        for (int dy = 0; dy < k; ++dy)
          for (int dx = 0; dx < k; ++dx)
            m = std::max(m, x[size_t((int64_t(c) * in.h + oy * s + dy) * in.w + ox * s + dx)]);
        y[size_t((int64_t(c) * out.h + oy) * out.w + ox)] = m;
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

int32_t requant(const QLayer& l, int oc, int64_t acc) {
  const int64_t v = saturate(acc + l.bias[size_t(oc)], std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
  const int64_t p = v * int64_t(l.mult[size_t(oc)]);
  int64_t y = saturate(rounding_shift(p, l.shift[size_t(oc)]) + l.out_q.zero_point,
                       l.out_q.qmin(), l.out_q.qmax());
  if (l.act == Activation::Relu) y = std::max<int64_t>(y, l.out_q.zero_point);
  if (l.act == Activation::Clip) y = std::min<int64_t>(std::max<int64_t>(y, l.lo), l.hi);
  return int32_t(y);
}

}  // namespace

std::vector<float> float_forward(const Network& net, const float* x,
                                 std::vector<std::vector<float>>* layer_outputs,
                                 std::vector<float>* input_after_pre) {
  std::vector<float> cur(x, x + net.input.size());
  if (!net.pre_scale.empty()) {
    const int64_t plane = int64_t(net.input.h) * net.input.w;
    for (int c = 0; c < net.input.c; ++c)
      for (int64_t i = 0; i < plane; ++i)
        cur[size_t(c * plane + i)] = cur[size_t(c * plane + i)] * net.pre_scale[size_t(c)] + net.pre_shift[size_t(c)];
  }
  if (input_after_pre) *input_after_pre = cur;
  if (layer_outputs) layer_outputs->clear();
  for (const Layer& l : net.layers) {
    std::vector<float> y = float_linear(l, cur);
    for (float& v : y) {
      if (l.act == Activation::Relu) v = std::max(v, 0.0f);
      if (l.act == Activation::Clip) v = std::min(std::max(v, l.clip_lo), l.clip_hi);
    }
    cur = max_pool(y, l.conv_out, l.out, l.pool_k, l.pool_s);
    if (layer_outputs) layer_outputs->push_back(cur);
  }
  return cur;
}

std::vector<int32_t> int_layer(const QLayer& l, const std::vector<int32_t>& x) {
  const Shape3 o = l.conv_out, in = l.in;
  const int zp = l.in_q.zero_point;
  std::vector<int32_t> y(size_t(o.size()));
  if (l.kind == LayerKind::Dense) {
    const int64_t k = l.fan_in();
    for (int oc = 0; oc < o.c; ++oc) {
      int64_t acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += int64_t(x[size_t(i)] - zp) * l.weight[size_t(oc * k + i)];
      y[size_t(oc)] = requant(l, oc, acc);
    }
  } else {
    std::vector<int64_t> acc(size_t(int64_t(o.h) * o.w));
    for (int oc = 0; oc < o.c; ++oc) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int ic = 0; ic < in.c; ++ic)
        for (int ky = 0; ky < l.kh; ++ky)
          for (int kx = 0; kx < l.kw; ++kx) {
            const int64_t w = l.weight[size_t(((int64_t(oc) * in.c + ic) * l.kh + ky) * l.kw + kx)];
            for (int oy = 0; oy < o.h; ++oy) {
              const int iy = oy * l.sh + ky - l.pad_t;
              if (iy < 0 || iy >= in.h) continue;  // zero padding: a real 0 contributes nothing
              int lo, hi;
              valid_columns(l, in.w, o.w, kx, &lo, &hi);
              const int32_t* row = &x[size_t((int64_t(ic) * in.h + iy) * in.w)];
              int64_t* arow = &acc[size_t(oy * o.w)];
              for (int ox = lo; ox < hi; ++ox) arow[ox] += int64_t(row[ox * l.sw + kx - l.pad_l] - zp) * w;
            }
          }
      for (int64_t p = 0; p < int64_t(acc.size()); ++p)
        y[size_t(oc * int64_t(acc.size()) + p)] = requant(l, oc, acc[size_t(p)]);
    }
  }
  return max_pool(y, o, l.out, l.pool_k, l.pool_s);
}

std::vector<int32_t> int_forward(const QuantNetwork& net, const int32_t* q,
                                 std::vector<std::vector<int32_t>>* layer_outputs) {
  std::vector<int32_t> cur(q, q + net.input.size());
  if (layer_outputs) layer_outputs->clear();
  for (const QLayer& l : net.layers) {
    cur = int_layer(l, cur);
    if (layer_outputs) layer_outputs->push_back(cur);
  }
  return cur;
}

}  // namespace tpu::cnn

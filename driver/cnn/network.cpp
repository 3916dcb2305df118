// SPDX-License-Identifier: Apache-2.0
#include "network.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tpu::cnn {

std::string Shape3::str() const {
  return "[" + std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + "]";
}

bool operator==(const Shape3& a, const Shape3& b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

std::string TensorQuant::str() const {
  std::ostringstream s;
  s << (is_unsigned ? "uint8" : "int8") << " scale " << scale << " zp " << zero_point;
  return s.str();
}

bool operator==(const TensorQuant& a, const TensorQuant& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.is_unsigned == b.is_unsigned;
}

void LayerGeometry::infer_shapes() {
  const std::string where = "layer '" + name + "' (" + op + "): ";
  if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 || pad_t < 0 || pad_l < 0 ||
      pad_b < 0 || pad_r < 0)
    throw Error(where + "bad kernel, stride, dilation or padding");
  if (group < 1) throw Error(where + "bad group count " + std::to_string(group));
  switch (kind) {
    case LayerKind::Conv: {
      const int cout = conv_out.c;
      if (cout <= 0) throw Error(where + "no output channels");
      if (in.c % group != 0 || cout % group != 0)
        throw Error(where + "group " + std::to_string(group) + " does not divide the " +
                    std::to_string(in.c) + " input and " + std::to_string(cout) +
                    " output channels");
      const int hp = in.h + pad_t + pad_b, wp = in.w + pad_l + pad_r;
      const int ekh = dh * (kh - 1) + 1, ekw = dw * (kw - 1) + 1;
      if (hp < ekh || wp < ekw)
        throw Error(where + "a " + std::to_string(kh) + "x" + std::to_string(kw) + " kernel" +
                    (dh > 1 || dw > 1 ? " (dilated)" : "") + " does not fit the padded input " +
                    in.str());
      conv_out = {cout, (hp - ekh) / sh + 1, (wp - ekw) / sw + 1};
      break;
    }
    case LayerKind::Dense: {
      const int cout = conv_out.c;
      if (cout <= 0) throw Error(where + "no output channels");
      if (in.size() % group != 0 || cout % group != 0)
        throw Error(where + "group " + std::to_string(group) +
                    " does not divide the inputs and outputs");
      conv_out = {cout, 1, 1};
      break;
    }
    case LayerKind::Add:
      conv_out = in;
      break;
    case LayerKind::Copy:
      conv_out = {in.c, in.h + pad_t + pad_b, in.w + pad_l + pad_r};
      if (std::max(std::max(pad_t, pad_b), std::max(pad_l, pad_r)) >= std::max(pool_k, 1) &&
          (pad_t || pad_b || pad_l || pad_r))
        throw Error(where + "padding must be smaller than the pooling window");
      break;
  }
  if (pool_k < 1 || pool_s < 1) throw Error(where + "bad pooling");
  if (std::min({pool_pad_t, pool_pad_l, pool_pad_b, pool_pad_r}) < 0 ||
      std::max({pool_pad_t, pool_pad_l, pool_pad_b, pool_pad_r}) >= std::min(pool_k, 8))
    throw Error(where + "max-pool padding " + std::to_string(pool_pad_t) + "," +
                std::to_string(pool_pad_l) + "," + std::to_string(pool_pad_b) + "," +
                std::to_string(pool_pad_r) + ": each must be below the window " +
                std::to_string(pool_k) + " and at most 7");
  const int ph = conv_out.h + pool_pad_t + pool_pad_b, pw = conv_out.w + pool_pad_l + pool_pad_r;
  if (pool_k > ph || pool_k > pw)
    throw Error(where + "max-pool window " + std::to_string(pool_k) + " is larger than its input " +
                conv_out.str());
  out = {conv_out.c, (ph - pool_k) / pool_s + 1, (pw - pool_k) / pool_s + 1};
}

const char* lut_func_name(LutFunc f) {
  switch (f) {
    case LutFunc::Sigmoid:
      return "Sigmoid";
    case LutFunc::Tanh:
      return "Tanh";
    case LutFunc::LeakyRelu:
      return "LeakyRelu";
    case LutFunc::HardSigmoid:
      return "HardSigmoid";
    case LutFunc::HardSwish:
      return "HardSwish";
  }
  return "?";
}

float lut_func_apply(LutFunc f, float alpha, float beta, float x) {
  switch (f) {
    case LutFunc::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case LutFunc::Tanh:
      return std::tanh(x);
    case LutFunc::LeakyRelu:
      return x >= 0 ? x : alpha * x;
    case LutFunc::HardSigmoid:
      return std::max(0.0f, std::min(1.0f, alpha * x + beta));
    case LutFunc::HardSwish:
      return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
  }
  return x;
}

bool lut_func_monotonic(LutFunc f) { return f != LutFunc::HardSwish; }

int QLayer::zero_point_of(int ic) const { return quant_of(ic).zero_point; }

const TensorQuant& QLayer::quant_of(int ic) const {
  if (kind == LayerKind::Add || in_qs.size() <= 1 || input_channels.size() != in_qs.size())
    return in_q;
  int c = ic;
  for (size_t j = 0; j < in_qs.size(); ++j) {
    if (c < input_channels[j]) return in_qs[j];
    c -= input_channels[j];
  }
  return in_qs.back();
}

namespace {
std::string act_name(Activation a) {
  switch (a) {
    case Activation::None:
      return "";
    case Activation::Relu:
      return " + ReLU";
    case Activation::Clip:
      return " + Clip";
    case Activation::Lut:
      return " + LUT";
  }
  return "";
}
std::string geometry_line(const LayerGeometry& l, Activation act) {
  std::ostringstream s;
  s << l.name << " (" << l.op << "): ";
  if (l.kind == LayerKind::Conv) {
    s << "conv " << l.kh << "x" << l.kw << "/" << l.sh;
    if (l.group > 1)
      s << (l.group == l.in.c && l.group == l.conv_out.c ? " depthwise"
                                                         : " group " + std::to_string(l.group));
    if (l.dh > 1 || l.dw > 1) s << " dilation " << l.dh;
    if (l.pad_t || l.pad_l || l.pad_b || l.pad_r) s << " pad " << l.pad_t;
    s << " " << l.in.str() << " -> " << l.conv_out.str();
  } else if (l.kind == LayerKind::Dense) {
    s << "dense " << l.fan_in() << (l.group > 1 ? " x " + std::to_string(l.group) + " groups" : "")
      << " -> " << l.conv_out.c;
  } else if (l.kind == LayerKind::Add) {
    s << "add " << l.in.str();
  } else {
    s << "copy " << l.in.str();
    if (l.pad_t || l.pad_l || l.pad_b || l.pad_r)
      s << " pad " << l.pad_t << "," << l.pad_l << "," << l.pad_b << "," << l.pad_r;
  }
  if (l.inputs.size() > 1 || (l.inputs.size() == 1 && l.inputs[0] != kNetworkInput)) {
    s << " <- ";
    for (size_t i = 0; i < l.inputs.size(); ++i)
      s << (i ? "," : "")
        << (l.inputs[i] == kNetworkInput ? std::string("input")
                                         : "#" + std::to_string(l.inputs[i]));
  }
  s << act_name(act);
  if (l.pool_k > 1 || l.pool_s > 1) {
    s << " + maxpool " << l.pool_k << "/" << l.pool_s;
    if (l.pool_padded())
      s << " pad " << l.pool_pad_t << "," << l.pool_pad_l << "," << l.pool_pad_b << ","
        << l.pool_pad_r;
    s << " -> " << l.out.str();
  }
  s << ", " << l.macs() << " MACs";
  return s.str();
}
}  // namespace

std::string Network::summary() const {
  std::string s = name + ": input " + input_name + " " + input.str() + "\n";
  for (const auto& l : layers) s += "  " + geometry_line(l, l.act) + "\n";
  return s;
}

std::string QuantNetwork::summary() const {
  std::string s = name + ": input " + input.str() + " " + input_q.str() + "\n";
  for (const auto& l : layers)
    s += "  " + geometry_line(l, l.act) + ", out " + l.out_q.str() + "\n";
  return s;
}

int32_t round_clamp(double v, int32_t lo, int32_t hi) {
  if (std::isnan(v)) return lo;
  const double r = v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
  if (r < lo) return lo;
  if (r > hi) return hi;
  return int32_t(r);
}

void QuantNetwork::quantize_input(const float* x, int32_t* q) const {
  const int64_t plane = int64_t(input.h) * input.w;
  for (int c = 0; c < input.c; ++c) {
    const double a = pre_scale.empty() ? 1.0 : double(pre_scale[c]);
    const double b = pre_shift.empty() ? 0.0 : double(pre_shift[c]);
    for (int64_t i = 0; i < plane; ++i) {
      const double v = double(x[c * plane + i]) * a + b;
      q[c * plane + i] = round_clamp(v / double(input_q.scale) + input_q.zero_point, input_q.qmin(),
                                     input_q.qmax());
    }
  }
}

void QuantNetwork::quantize_pixels(const uint8_t* pixels, int32_t* q) const {
  const int64_t n = input.size();
  if (pre_scale.empty() && input_q.is_unsigned && input_q.zero_point == 0 &&
      input_q.scale == 1.0f / 255.0f) {
    for (int64_t i = 0; i < n; ++i) q[i] = pixels[i];
    return;
  }
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(pixels[i]) / 255.0f;
  quantize_input(x.data(), q);
}

void quantize_multiplier(double m, int32_t* mult, uint8_t* shift) {
  if (!(m >= 0) || std::isinf(m))
    throw Error("requantization multiplier " + std::to_string(m) +
                " is not a finite non-negative number");
  if (m == 0) {
    *mult = 0;
    *shift = 0;
    return;
  }
  int e = 0;
  const double f = std::frexp(m, &e);  // m = f * 2^e, f in [0.5, 1)
  // mult = round(f * 2^31), shift = 31 - e.
  int s = 31 - e;
  int64_t q = int64_t(std::llround(f * double(int64_t(1) << 31)));
  if (q == (int64_t(1) << 31)) {  // rounding carried into the next power of two
    q >>= 1;
    --s;
  }
  while (s > 63) {  // tiny multiplier: give up precision
    q = (q + 1) >> 1;
    --s;
  }
  if (s < 0)
    throw Error("requantization multiplier " + std::to_string(m) + " is too large (> 2^31)");
  *mult = int32_t(q);
  *shift = uint8_t(s);
}

}  // namespace tpu::cnn

namespace tpu::cnn {
void quantize_multiplier_signed(double m, int32_t* mult, uint8_t* shift) {
  quantize_multiplier(m < 0 ? -m : m, mult, shift);
  if (m < 0) *mult = -*mult;
}
}  // namespace tpu::cnn

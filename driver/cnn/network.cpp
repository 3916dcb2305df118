#include "network.h"

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
  const int cout = conv_out.c;
  if (cout <= 0) throw Error("layer '" + name + "': no output channels");
  if (kind == LayerKind::Dense) {
    conv_out = {cout, 1, 1};
  } else {
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || pad_t < 0 || pad_l < 0 || pad_b < 0 || pad_r < 0)
      throw Error("layer '" + name + "': bad kernel, stride or padding");
    const int hp = in.h + pad_t + pad_b, wp = in.w + pad_l + pad_r;
    if (hp < kh || wp < kw)
      throw Error("layer '" + name + "' (" + op + "): a " + std::to_string(kh) + "x" +
                  std::to_string(kw) + " kernel does not fit the padded input " + in.str());
    conv_out = {cout, (hp - kh) / sh + 1, (wp - kw) / sw + 1};
  }
  if (pool_k < 1 || pool_s < 1) throw Error("layer '" + name + "': bad pooling");
  if (pool_k > conv_out.h || pool_k > conv_out.w)
    throw Error("layer '" + name + "': max-pool window " + std::to_string(pool_k) +
                " is larger than its input " + conv_out.str());
  out = {cout, (conv_out.h - pool_k) / pool_s + 1, (conv_out.w - pool_k) / pool_s + 1};
}

namespace {
std::string act_name(Activation a) {
  switch (a) {
    case Activation::None: return "";
    case Activation::Relu: return " + ReLU";
    case Activation::Clip: return " + Clip";
  }
  return "";
}
std::string geometry_line(const LayerGeometry& l, Activation act) {
  std::ostringstream s;
  s << l.name << " (" << l.op << "): ";
  if (l.kind == LayerKind::Conv) {
    s << "conv " << l.kh << "x" << l.kw << "/" << l.sh;
    if (l.pad_t || l.pad_l || l.pad_b || l.pad_r) s << " pad " << l.pad_t;
    s << " " << l.in.str() << " -> " << l.conv_out.str();
  } else {
    s << "dense " << l.fan_in() << " -> " << l.conv_out.c;
  }
  s << act_name(act);
  if (l.pool_k > 1 || l.pool_s > 1) s << " + maxpool " << l.pool_k << "/" << l.pool_s << " -> " << l.out.str();
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
  for (const auto& l : layers) s += "  " + geometry_line(l, l.act) + ", out " + l.out_q.str() + "\n";
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
      q[c * plane + i] = round_clamp(v / double(input_q.scale) + input_q.zero_point,
                                     input_q.qmin(), input_q.qmax());
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
  if (!(m >= 0) || std::isinf(m)) throw Error("requantization multiplier " + std::to_string(m) + " is not a finite non-negative number");
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
  if (s < 0) throw Error("requantization multiplier " + std::to_string(m) + " is too large (> 2^31)");
  *mult = int32_t(q);
  *shift = uint8_t(s);
}

}  // namespace tpu::cnn

// SPDX-License-Identifier: Apache-2.0
#include "reference.h"

#include <cmath>
#include <cstring>

#include "fp_reference.h"

namespace tpu::train::ref {

namespace fr = tpu::fp::reference;

namespace {

constexpr Bits kNegZero = 0x80000000u;
constexpr Bits kOne = 0x3F800000u;
// isa.md "Function sequences: definitions and error", constants.
constexpr Bits kLog2e = 0x3FB8AA3Bu, kLn2Hi = 0x3F317200u, kLn2Lo = 0x35BFBE8Eu;
constexpr Bits kSqrtH = 0x3F3504F3u, kRcpMagic = 0x7EF311C3u, kRsqrtMagic = 0x5F3759DFu;
constexpr Bits kExpC[8] = {0x3F800000u, 0x3F800000u, 0x3F000000u, 0x3E2AAAABu,
                           0x3D2AAAABu, 0x3C088889u, 0x3AB60B61u, 0x39500D01u};
constexpr Bits kLogQ[10] = {0x3F800000u, 0xBEFFFFFCu, 0x3EAAAAA8u, 0xBE800214u, 0x3E4CD23Bu,
                            0xBE2A13D3u, 0x3E113437u, 0xBE079618u, 0x3E043DCFu, 0xBD9C7055u};

// The integer lane operations (two's complement, wrapping).
Bits iadd(Bits a, Bits b) { return a + b; }
Bits isub(Bits a, Bits b) { return a - b; }
Bits sra(Bits a, unsigned s) {
  return static_cast<Bits>(static_cast<int32_t>(a) >> s);  // arithmetic on every C++17 target
}
Bits f2i(Bits a) { return static_cast<Bits>(fr::rto_int(a)); }
Bits i2f(Bits a) { return bits(static_cast<float>(static_cast<int32_t>(a))); }  // RNE
Bits fmin(Bits a, Bits b) { return fr::rmax(a, b, false); }
Bits fsubr(Bits a, Bits b) { return sub(b, a); }

}  // namespace

Bits bits(float f) { return fr::rbits(f); }
float value(Bits b) { return fr::rfloat(b); }
Bits add(Bits a, Bits b) { return fr::radd(a, b); }
Bits sub(Bits a, Bits b) { return fr::rsub(a, b); }
Bits mul(Bits a, Bits b) { return fr::rmul(a, b); }
Bits fmax(Bits a, Bits b) { return fr::rmax(a, b, true); }
Bits to_bf16(Bits a) { return Bits{fr::rto_bf16(a)} << 16; }

Bits exp(Bits x) {
  Bits X = fmin(x, bits(89.0f));
  X = fmax(X, bits(-104.0f));
  Bits T = mul(X, kLog2e);
  Bits K = f2i(T);
  T = i2f(K);
  Bits H = mul(T, kLn2Hi);
  X = sub(X, H);
  H = mul(T, kLn2Lo);
  X = sub(X, H);
  Bits P = add(mul(X, kExpC[7]), kExpC[6]);
  for (int c = 5; c >= 0; --c) P = add(mul(P, X), kExpC[c]);
  T = sra(K, 1);
  K = isub(K, T);
  T = iadd(T, 127) << 23;
  P = mul(P, T);
  K = iadd(K, 127) << 23;
  return mul(P, K);
}

Bits log(Bits x) {
  Bits I = isub(x, kSqrtH);
  Bits E = sra(I, 23);
  I = iadd(I & 0x007FFFFFu, kSqrtH);
  const Bits F = sub(I, kOne);
  Bits Q = add(mul(F, kLogQ[9]), kLogQ[8]);
  for (int q = 7; q >= 0; --q) Q = add(mul(Q, F), kLogQ[q]);
  Q = mul(Q, F);
  E = i2f(E);
  Q = add(Q, mul(E, kLn2Lo));
  return add(mul(E, kLn2Hi), Q);
}

Bits rcp(Bits x) {
  const Bits S = x & 0x80000000u, A = x & 0x7FFFFFFFu;
  Bits Y = iadd(A ^ 0xFFFFFFFFu, kRcpMagic + 1);
  for (int i = 0; i < 3; ++i) Y = mul(Y, fsubr(mul(A, Y), bits(2.0f)));
  Bits E = fsubr(mul(A, Y), kOne);
  Y = add(Y, mul(E, Y));
  return Y | S;
}

Bits rsqrt(Bits x) {
  Bits Y = iadd((x >> 1) ^ 0xFFFFFFFFu, kRsqrtMagic + 1);
  for (int i = 0; i < 3; ++i) {
    Bits E = mul(mul(x, Y), Y);
    E = mul(mul(fsubr(E, kOne), Y), bits(0.5f));
    Y = add(Y, E);
  }
  return Y;
}

Bits sqrt(Bits x) { return mul(x, rsqrt(fmax(x, 0x00800000u))); }

Bits lane_sum(std::vector<Bits> x) {
  for (size_t h = x.size() / 2; h >= 1; h /= 2) {
    for (size_t j = 0; j < h; ++j) x[j] = add(x[j], x[j + h]);
  }
  return x[0];
}

Bits lane_max(std::vector<Bits> x) {
  for (size_t h = x.size() / 2; h >= 1; h /= 2) {
    for (size_t j = 0; j < h; ++j) x[j] = fmax(x[j], x[j + h]);
  }
  return x[0];
}

Mat zeros(uint32_t rows, uint32_t cols) {
  return Mat{rows, cols, std::vector<Bits>(size_t{rows} * cols, 0)};
}

Mat transposed(const Mat& a) {
  Mat t = zeros(a.cols, a.rows);
  for (uint32_t r = 0; r < a.rows; ++r) {
    for (uint32_t c = 0; c < a.cols; ++c) t.at(c, r) = a.at(r, c);
  }
  return t;
}

Mat matmul_tiled(const Mat& a, const Mat& b, uint32_t n) {
  Mat out = zeros(a.rows, b.cols);
  const uint32_t tiles = (a.cols + n - 1) / n;
  for (uint32_t i = 0; i < a.rows; ++i) {
    for (uint32_t j = 0; j < b.cols; ++j) {
      Bits acc = 0;
      for (uint32_t t = 0; t < tiles; ++t) {
        Bits s = 0;  // +0.0
        for (uint32_t k = t * n; k < t * n + n; ++k) {
          const Bits x = k < a.cols ? to_bf16(a.at(i, k)) : 0u;
          const Bits w = k < a.cols ? to_bf16(b.at(k, j)) : 0u;
          s = add(s, mul(x, w));
        }
        acc = t == 0 ? s : add(acc, s);
      }
      out.at(i, j) = acc;
    }
  }
  return out;
}

Mat add_row(const Mat& y, const std::vector<Bits>& bias) {
  Mat out = y;
  for (uint32_t r = 0; r < y.rows; ++r) {
    for (uint32_t c = 0; c < y.cols; ++c) out.at(r, c) = add(y.at(r, c), bias[c]);
  }
  return out;
}

std::vector<Bits> column_sums(const Mat& dy) {
  std::vector<Bits> s(dy.cols, kNegZero);
  for (uint32_t r = 0; r < dy.rows; ++r) {
    for (uint32_t c = 0; c < dy.cols; ++c) s[c] = add(s[c], dy.at(r, c));
  }
  return s;
}

Mat relu(const Mat& x) {
  Mat y = x;
  for (Bits& b : y.v) b = fmax(b, 0u);
  return y;
}

Mat relu_backward(const Mat& x, const Mat& dy) {
  Mat dx = dy;
  for (size_t i = 0; i < x.v.size(); ++i) {
    const bool le_zero = !fr::rnan(x.v[i]) && fr::rval(x.v[i]) <= 0.0;
    if (le_zero) dx.v[i] = 0u;
  }
  return dx;
}

SoftmaxCeResult softmax_cross_entropy(const Mat& logits, const std::vector<int32_t>& labels,
                                      uint32_t n) {
  const uint32_t m = logits.rows;
  const Bits inv_m = bits(1.0f / static_cast<float>(m));
  const Bits neg_inf = 0xFF800000u;
  SoftmaxCeResult out{kNegZero, zeros(m, logits.cols)};
  for (uint32_t r = 0; r < m; ++r) {
    std::vector<Bits> s(n);  // z + pad (+0 or -inf), lanes of one VMEM row
    for (uint32_t j = 0; j < n; ++j)
      s[j] = add(j < logits.cols ? logits.at(r, j) : 0u, j < logits.cols ? 0u : neg_inf);
    const Bits mx = lane_max(s);
    std::vector<Bits> e(n), pick(n, 0u);
    for (uint32_t j = 0; j < n; ++j) {
      s[j] = sub(s[j], mx);
      e[j] = exp(s[j]);
      if (static_cast<int32_t>(j) == labels[r]) pick[j] = s[j];
    }
    const Bits sum = lane_sum(e);
    const Bits loss_r = sub(log(sum), lane_sum(pick));
    out.loss = add(out.loss, loss_r);
    const Bits inv_sum = rcp(sum);
    for (uint32_t j = 0; j < logits.cols; ++j) {
      const Bits onehot = static_cast<int32_t>(j) == labels[r] ? kOne : 0u;
      out.dlogits.at(r, j) = mul(sub(mul(e[j], inv_sum), onehot), inv_m);
    }
  }
  out.loss = mul(out.loss, inv_m);
  return out;
}

namespace {

// g + wd * p, or g when wd = 0.
Bits decayed(float wd, Bits p, Bits g) { return wd == 0.0f ? g : add(g, mul(p, bits(wd))); }

}  // namespace

void sgd(const Sgd& h, std::vector<Bits>& p, const std::vector<Bits>& g, std::vector<Bits>& vel) {
  for (size_t i = 0; i < p.size(); ++i) {
    Bits d = decayed(h.weight_decay, p[i], g[i]);
    if (h.momentum != 0.0f) {
      vel[i] = add(mul(vel[i], bits(h.momentum)), d);
      d = vel[i];
    }
    p[i] = sub(p[i], mul(d, bits(h.lr)));
  }
}

// docs/training.md "The Adam update": C_u, C_e in double from the fp32 hyper-parameters, rounded
// once; the denominator 2^13 sqrt(v) + eps_term by the listed Newton steps, then its
// reciprocal from RCP_MAGIC by three Newton steps.
void adam_begin_step(Adam& h, Bits& update_scale, Bits& eps_term) {
  const double c1 = 1.0 - double{h.beta1}, c2 = 1.0 - double{h.beta2};
  const Bits cu = bits(static_cast<float>(8192.0 * h.lr * c1 / std::sqrt(c2)));
  const Bits ce = bits(static_cast<float>(8192.0 * h.eps / std::sqrt(c2)));
  h.beta1_pow = mul(h.beta1_pow, bits(h.beta1));
  h.beta2_pow = mul(h.beta2_pow, bits(h.beta2));
  const Bits s2 = sqrt(fsubr(h.beta2_pow, kOne));
  update_scale = mul(mul(rcp(fsubr(h.beta1_pow, kOne)), s2), cu);
  eps_term = mul(s2, ce);
}

void adam_update(const Adam& h, Bits update_scale, Bits eps_term, std::vector<Bits>& p,
                 const std::vector<Bits>& g, std::vector<Bits>& m, std::vector<Bits>& v) {
  const Bits b1 = bits(h.beta1), b2 = bits(h.beta2);
  for (size_t i = 0; i < p.size(); ++i) {
    const Bits d = decayed(h.weight_decay, p[i], g[i]);
    m[i] = add(mul(m[i], b1), d);
    v[i] = add(mul(v[i], b2), mul(d, d));
    const Bits x = v[i];
    Bits y = isub(0x5F3759DFu, x >> 1);
    y = mul(y, fsubr(mul(mul(x, y), y), bits(3.0f)));   // y = 2 / sqrt(x)
    y = mul(y, fsubr(mul(mul(x, y), y), bits(12.0f)));  // y = 16 / sqrt(x)
    const Bits xy = mul(x, y);
    const Bits den = add(mul(xy, fsubr(mul(xy, y), bits(768.0f))), eps_term);  // 2^13 sqrt(x) + e
    Bits r = isub(0x7EF311C3u, den);
    for (int k = 0; k < 3; ++k) r = mul(r, fsubr(mul(den, r), bits(2.0f)));
    p[i] = sub(p[i], mul(mul(m[i], r), update_scale));
  }
}

Tensor tensor(uint32_t b, uint32_t c, uint32_t h, uint32_t w) {
  return Tensor{b, c, h, w, std::vector<Bits>(std::size_t{b} * c * h * w, 0u)};
}

namespace {

// The input pixel of output (oy, ox) at tap (ky, kx), or false if it is in the padding.
bool tap_pixel(const Window& k, uint32_t h, uint32_t w, uint32_t oy, uint32_t ox, uint32_t ky,
               uint32_t kx, uint32_t& iy, uint32_t& ix) {
  const int64_t y = int64_t{oy} * k.sh + ky - k.pt, x = int64_t{ox} * k.sw + kx - k.pl;
  if (y < 0 || x < 0 || y >= h || x >= w) return false;
  iy = static_cast<uint32_t>(y);
  ix = static_cast<uint32_t>(x);
  return true;
}

// Rows: output positions (oy, ox, b); cols: (tap, channel) with cin_stride channels per tap.
Mat patches(const Tensor& x, const Window& k, uint32_t cs) {
  const uint32_t ho = k.ho(x.h), wo = k.wo(x.w);
  Mat p = zeros(ho * wo * x.b, k.kh * k.kw * cs);
  for (uint32_t oy = 0; oy < ho; ++oy)
    for (uint32_t ox = 0; ox < wo; ++ox)
      for (uint32_t b = 0; b < x.b; ++b)
        for (uint32_t t = 0; t < k.kh * k.kw; ++t) {
          uint32_t iy, ix;
          if (!tap_pixel(k, x.h, x.w, oy, ox, t / k.kw, t % k.kw, iy, ix)) continue;
          for (uint32_t c = 0; c < x.c; ++c)
            p.at((oy * wo + ox) * x.b + b, t * cs + c) = x.at(b, c, iy, ix);
        }
  return p;
}

Mat weight_matrix(const Tensor& w, uint32_t cs) {  // rows (tap, channel), cols cout
  Mat m = zeros(w.h * w.w * cs, w.b);
  for (uint32_t o = 0; o < w.b; ++o)
    for (uint32_t c = 0; c < w.c; ++c)
      for (uint32_t t = 0; t < w.h * w.w; ++t) m.at(t * cs + c, o) = w.at(o, c, t / w.w, t % w.w);
  return m;
}

Mat positions(const Tensor& y) {  // rows (y, x, b), cols channels
  Mat m = zeros(y.h * y.w * y.b, y.c);
  for (uint32_t b = 0; b < y.b; ++b)
    for (uint32_t c = 0; c < y.c; ++c)
      for (uint32_t i = 0; i < y.h; ++i)
        for (uint32_t j = 0; j < y.w; ++j) m.at((i * y.w + j) * y.b + b, c) = y.at(b, c, i, j);
  return m;
}

Tensor from_positions(const Mat& m, uint32_t b, uint32_t h, uint32_t w) {
  Tensor t = tensor(b, m.cols, h, w);
  for (uint32_t i = 0; i < b; ++i)
    for (uint32_t c = 0; c < m.cols; ++c)
      for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) t.at(i, c, y, x) = m.at((y * w + x) * b + i, c);
  return t;
}

bool le(Bits a, Bits b) {  // fp compare a <= b: DAZ, -0 = +0, NaN false
  return !fr::rnan(a) && !fr::rnan(b) && fr::rval(a) <= fr::rval(b);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const std::vector<Bits>& bias, const Window& k,
              uint32_t cs, uint32_t n) {
  Mat y = matmul_tiled(patches(x, k, cs), weight_matrix(w, cs), n);
  if (!bias.empty()) y = add_row(y, bias);
  return from_positions(y, x.b, k.ho(x.h), k.wo(x.w));
}

Tensor conv2d_dw(const Tensor& x, const Tensor& dy, const Window& k, uint32_t cs, uint32_t n) {
  const Mat dwm = matmul_tiled(transposed(patches(x, k, cs)), positions(dy), n);
  Tensor dw = tensor(dy.c, x.c, k.kh, k.kw);
  for (uint32_t o = 0; o < dy.c; ++o)
    for (uint32_t c = 0; c < x.c; ++c)
      for (uint32_t t = 0; t < k.kh * k.kw; ++t)
        dw.at(o, c, t / k.kw, t % k.kw) = dwm.at(t * cs + c, o);
  return dw;
}

Tensor conv2d_dx(const Tensor& dy, const Tensor& w, const Window& k, uint32_t h, uint32_t wd,
                 uint32_t n) {
  const Mat d = positions(dy);
  Tensor dx = tensor(dy.b, w.c, h, wd);  // +0
  for (uint32_t t = 0; t < k.kh * k.kw; ++t) {
    Mat wt = zeros(w.b, w.c);  // W_tap^T: cout x cin
    for (uint32_t o = 0; o < w.b; ++o)
      for (uint32_t c = 0; c < w.c; ++c) wt.at(o, c) = w.at(o, c, t / k.kw, t % k.kw);
    const Mat part = matmul_tiled(d, wt, n);  // positions x cin, over cout in tiles of n
    for (uint32_t oy = 0; oy < dy.h; ++oy)
      for (uint32_t ox = 0; ox < dy.w; ++ox) {
        uint32_t iy, ix;
        if (!tap_pixel(k, h, wd, oy, ox, t / k.kw, t % k.kw, iy, ix)) continue;
        for (uint32_t b = 0; b < dy.b; ++b)
          for (uint32_t c = 0; c < w.c; ++c)
            dx.at(b, c, iy, ix) = add(dx.at(b, c, iy, ix), part.at((oy * dy.w + ox) * dy.b + b, c));
      }
  }
  return dx;
}

MaxPoolResult maxpool(const Tensor& x, const Window& k) {
  const uint32_t ho = k.ho(x.h), wo = k.wo(x.w);
  MaxPoolResult r{tensor(x.b, x.c, ho, wo), tensor(x.b, x.c, ho, wo)};
  for (Bits& v : r.y.v) v = 0xFF800000u;  // -inf
  // argmax: +0 (tap 0), then max(argmax, t) at every tap t that is a new strict maximum.
  for (uint32_t t = 0; t < k.kh * k.kw; ++t)
    for (uint32_t b = 0; b < x.b; ++b)
      for (uint32_t c = 0; c < x.c; ++c)
        for (uint32_t oy = 0; oy < ho; ++oy)
          for (uint32_t ox = 0; ox < wo; ++ox) {
            uint32_t iy, ix;
            if (!tap_pixel(k, x.h, x.w, oy, ox, t / k.kw, t % k.kw, iy, ix)) continue;
            const Bits v = x.at(b, c, iy, ix);
            Bits& y = r.y.at(b, c, oy, ox);
            Bits& a = r.argmax.at(b, c, oy, ox);
            a = fmax(a, le(v, y) ? 0u : bits(static_cast<float>(t)));  // not <=: greater or NaN
            y = fmax(v, y);
          }
  return r;
}

Tensor maxpool_dx(const Tensor& argmax, const Tensor& dy, const Window& k, uint32_t h, uint32_t w) {
  const bool tiles = k.kh == k.sh && k.kw == k.sw && k.pt + k.pl + k.pb + k.pr == 0;
  Tensor dx = tensor(dy.b, dy.c, h, w);
  for (uint32_t t = 0; t < k.kh * k.kw; ++t)
    for (uint32_t b = 0; b < dy.b; ++b)
      for (uint32_t c = 0; c < dy.c; ++c)
        for (uint32_t oy = 0; oy < dy.h; ++oy)
          for (uint32_t ox = 0; ox < dy.w; ++ox) {
            uint32_t iy, ix;
            if (!tap_pixel(k, h, w, oy, ox, t / k.kw, t % k.kw, iy, ix)) continue;
            const Bits g =
                argmax.at(b, c, oy, ox) == bits(static_cast<float>(t)) ? dy.at(b, c, oy, ox) : 0u;
            // Windows that tile the input (window = stride, no padding) write each input
            // pixel once; overlapping ones add to it, taps in order.
            dx.at(b, c, iy, ix) = tiles ? g : add(dx.at(b, c, iy, ix), g);
          }
  return dx;
}

Tensor avgpool(const Tensor& x, const Window& k) {
  const uint32_t ho = k.ho(x.h), wo = k.wo(x.w);
  const Bits inv = bits(1.0f / static_cast<float>(k.kh * k.kw));
  Tensor y = tensor(x.b, x.c, ho, wo);
  for (uint32_t b = 0; b < x.b; ++b)
    for (uint32_t c = 0; c < x.c; ++c)
      for (uint32_t oy = 0; oy < ho; ++oy)
        for (uint32_t ox = 0; ox < wo; ++ox) {
          Bits s = x.at(b, c, oy * k.sh, ox * k.sw);  // tap 0
          for (uint32_t t = 1; t < k.kh * k.kw; ++t)
            s = add(s, x.at(b, c, oy * k.sh + t / k.kw, ox * k.sw + t % k.kw));
          y.at(b, c, oy, ox) = mul(s, inv);
        }
  return y;
}

Tensor avgpool_dx(const Tensor& dy, const Window& k, uint32_t h, uint32_t w) {
  const Bits inv = bits(1.0f / static_cast<float>(k.kh * k.kw));
  Tensor dx = tensor(dy.b, dy.c, h, w);
  for (uint32_t t = 0; t < k.kh * k.kw; ++t)
    for (uint32_t b = 0; b < dy.b; ++b)
      for (uint32_t c = 0; c < dy.c; ++c)
        for (uint32_t oy = 0; oy < dy.h; ++oy)
          for (uint32_t ox = 0; ox < dy.w; ++ox) {
            Bits& d = dx.at(b, c, oy * k.sh + t / k.kw, ox * k.sw + t % k.kw);
            d = add(d, mul(dy.at(b, c, oy, ox), inv));
          }
  return dx;
}

Tensor gap(const Tensor& x) {
  const Bits inv = bits(1.0f / static_cast<float>(x.h * x.w));
  Tensor y = tensor(x.b, x.c, 1, 1);
  for (uint32_t b = 0; b < x.b; ++b)
    for (uint32_t c = 0; c < x.c; ++c) {
      Bits s = kNegZero;
      for (uint32_t p = 0; p < x.h * x.w; ++p) s = add(s, x.at(b, c, p / x.w, p % x.w));
      y.at(b, c, 0, 0) = mul(s, inv);
    }
  return y;
}

Tensor gap_dx(const Tensor& dy, uint32_t h, uint32_t w) {
  const Bits inv = bits(1.0f / static_cast<float>(h * w));
  Tensor dx = tensor(dy.b, dy.c, h, w);
  for (uint32_t b = 0; b < dy.b; ++b)
    for (uint32_t c = 0; c < dy.c; ++c)
      for (uint32_t p = 0; p < h * w; ++p) dx.at(b, c, p / w, p % w) = mul(dy.at(b, c, 0, 0), inv);
  return dx;
}

}  // namespace tpu::train::ref

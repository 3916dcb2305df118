// SPDX-License-Identifier: Apache-2.0
// Conv2D forward / dW / dX on the golden model against the host reference (NCHW tensors,
// reference.h), bit for bit; the image layout conversion here is the test's own.
#include <gtest/gtest.h>

#include <cmath>

#include "rig.h"

namespace tpu::train::test {
namespace {

class Conv : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Conv, ::testing::Values(4u, 16u));

void expect_bits(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: chip 0x" << std::hex << got[i] << " ("
                    << ref::value(got[i]) << "), reference 0x" << want[i] << " ("
                    << ref::value(want[i]) << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

ref::Tensor random_tensor(uint32_t b, uint32_t c, uint32_t h, uint32_t w, float scale,
                          uint32_t seed) {
  ref::Tensor t = ref::tensor(b, c, h, w);
  t.v = random_values(t.v.size(), scale, seed);
  return t;
}

// Image layout (docs/training.md): row (y*w + x)*b + i, column = channel.
std::vector<uint32_t> to_image(const ref::Tensor& t) {
  std::vector<uint32_t> v(t.v.size());
  for (uint32_t i = 0; i < t.b; ++i)
    for (uint32_t c = 0; c < t.c; ++c)
      for (uint32_t y = 0; y < t.h; ++y)
        for (uint32_t x = 0; x < t.w; ++x)
          v[((y * t.w + x) * t.b + i) * t.c + c] = t.at(i, c, y, x);
  return v;
}
ref::Tensor from_image(const std::vector<uint32_t>& v, uint32_t b, uint32_t c, uint32_t h,
                       uint32_t w) {
  ref::Tensor t = ref::tensor(b, c, h, w);
  for (uint32_t i = 0; i < b; ++i)
    for (uint32_t ch = 0; ch < c; ++ch)
      for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) t.at(i, ch, y, x) = v[((y * w + x) * b + i) * c + ch];
  return t;
}
std::vector<uint32_t> as_bits(const std::vector<float>& f) {
  std::vector<uint32_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i) b[i] = ref::bits(f[i]);
  return b;
}
std::vector<float> as_floats(const std::vector<uint32_t>& b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i) f[i] = ref::value(b[i]);
  return f;
}

ref::Window window(const ConvGeom& g) {
  return ref::Window{g.kh, g.kw, g.sh, g.sw, g.pad_top, g.pad_left, g.pad_bottom, g.pad_right};
}

struct Case {
  ConvGeom g;
  uint32_t acc;  // first ACC row: a late one forces bands of few output lines
};

// Forward (with bias), dW, db and (cin > 1) dX of one convolution against the reference.
void check_conv(uint32_t n, const Case& cs, uint32_t seed) {
  const ConvGeom& g = cs.g;
  Rig rig(n, 32768);
  const uint32_t cstride = g.packed() ? 1 : round_up(g.cin, n);
  const ref::Tensor x = random_tensor(g.batch, g.cin, g.h, g.w, 1.0f, seed);
  const ref::Tensor w = random_tensor(g.cout, g.cin, g.kh, g.kw, 0.5f, seed + 1);
  const std::vector<uint32_t> bias = random_values(g.cout, 0.5f, seed + 2);
  const ref::Tensor dy = random_tensor(g.batch, g.cout, g.ho(), g.wo(), 1.0f, seed + 3);
  VMat vx = conv_input_matrix(rig.arena(), g);
  VMat vw = rig.arena().matrix(g.weight_rows(n), g.cout), vb = rig.arena().row_vector(g.cout);
  VMat vy = rig.arena().matrix(g.ho() * g.wo() * g.batch, g.cout);
  VMat vdy = rig.arena().matrix(vy.rows, g.cout), vdw = rig.arena().matrix(vw.rows, g.cout);
  VMat vdb = rig.arena().row_vector(g.cout);
  VMat vdx = rig.arena().matrix(g.h * g.w * g.batch, g.cin);
  const uint32_t scratch = rig.arena().rows(conv_scratch_rows(g, rig.dev().params(), cs.acc));
  rig.put(vx, as_bits(conv_input_values(g, n, as_floats(x.v))));
  rig.put(vw, as_bits(conv_weight_values(g, n, as_floats(w.v))));
  rig.put(vb, bias);
  rig.put(vdy, to_image(dy));
  // Stale NaN where results and scratch go: nothing may leak into them.
  const uint32_t stale_from = vy.base, stale_rows = rig.arena().used_end() - vy.base;
  rig.put_rows(stale_from, std::vector<uint32_t>(size_t{stale_rows} * n, 0x7FC00000u));
  rig.put(vdy, to_image(dy));
  conv2d_forward(rig.pb(), g, vx, vw, &vb, vy, scratch, cs.acc);
  conv2d_backward_weights(rig.pb(), g, vx, vdy, vdw, scratch, 0);  // needs weight_rows ACC rows
  bias_grad(rig.pb(), vdy, vdb);
  if (!g.packed()) conv2d_backward_input(rig.pb(), g, vdy, vw, vdx, scratch, cs.acc);
  rig.want(vy);
  rig.want(vdw);
  rig.want(vdb);
  if (!g.packed()) rig.want(vdx);
  rig.run();
  const ref::Window k = window(g);
  expect_bits(from_image(rig.got(vy), g.batch, g.cout, g.ho(), g.wo()).v,
              ref::conv2d(x, w, bias, k, cstride, n).v, "Y");
  expect_bits(as_bits(conv_weight_oihw(g, n, as_floats(rig.got(vdw)))),
              ref::conv2d_dw(x, dy, k, cstride, n).v, "dW");
  const ref::Tensor dyt = dy;
  std::vector<uint32_t> db(g.cout, 0x80000000u);
  for (uint32_t c = 0; c < g.cout; ++c)
    for (uint32_t p = 0; p < g.ho() * g.wo(); ++p)
      for (uint32_t b = 0; b < g.batch; ++b)
        db[c] = ref::add(db[c], dyt.at(b, c, p / g.wo(), p % g.wo()));  // rows in order
  expect_bits(rig.got(vdb), db, "db");
  if (!g.packed()) {
    expect_bits(from_image(rig.got(vdx), g.batch, g.cin, g.h, g.w).v,
                ref::conv2d_dx(dy, w, k, g.h, g.w, n).v, "dX");
  }
  // Padding rows and lanes of Y and dW are +0.
  for (const VMat* m : {&vy, &vdw}) {
    const std::vector<uint32_t> image = rig.got_image(*m);
    for (uint32_t r = 0; r < m->span(n); ++r)
      for (uint32_t j = 0; j < n; ++j)
        if (r % m->pitch >= m->rows || r / m->pitch * n + j >= m->cols) {
          EXPECT_EQ(image[size_t{r} * n + j], 0u) << r;
        }
  }
}

ConvGeom geom(uint32_t batch, uint32_t cin, uint32_t cout, uint32_t h, uint32_t w, uint32_t k,
              uint32_t s, uint32_t pad) {
  ConvGeom g;
  g.batch = batch;
  g.cin = cin;
  g.cout = cout;
  g.h = h;
  g.w = w;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
  return g;
}

// The Keras example's layer (3x3, valid, cin = 1) on a small image, taps in the lanes.
TEST_P(Conv, OneChannel3x3ValidMatchesReference) {
  const uint32_t n = GetParam();
  check_conv(n, {geom(n, 1, n + 3, 7, 6, 3, 1, 0), 0}, 31);
}

// The same in bands of 2 output lines (ACC rows near the end).
TEST_P(Conv, OneChannelInBandsMatchesReference) {
  const uint32_t n = GetParam();
  const ConvGeom g = geom(2 * n, 1, n + 1, 8, 7, 3, 1, 0);
  check_conv(n, {g, 2048 - 2 * g.wo() * g.batch - 3}, 41);
}

// resnet.onnx's first conv: 3x3, pad 1; and stride 2 with padding.
TEST_P(Conv, OneChannelPaddedAndStridedMatchesReference) {
  const uint32_t n = GetParam();
  check_conv(n, {geom(n, 1, 5, 6, 6, 3, 1, 1), 0}, 51);
  check_conv(n, {geom(n, 1, 3, 7, 8, 3, 2, 1), 0}, 52);
}

// fashion_cnn.onnx's second conv shape class (cin > 1, valid), in bands.
TEST_P(Conv, ManyChannelsValidMatchesReference) {
  const uint32_t n = GetParam();
  const ConvGeom g = geom(n, n + 2, n + 1, 6, 5, 3, 1, 0);
  check_conv(n, {g, 0}, 61);
  check_conv(n, {g, 2048 - g.wo() * g.batch}, 62);
}

// resnet.onnx's blocks: 3x3 pad 1 stride 1 and 2, and the 1x1 stride-2 shortcut.
TEST_P(Conv, ManyChannelsPaddedStridedMatchesReference) {
  const uint32_t n = GetParam();
  check_conv(n, {geom(n, 3, 2, 5, 6, 3, 1, 1), 0}, 71);
  check_conv(n, {geom(n, n + 1, 3, 7, 7, 3, 2, 1), 0}, 72);
  check_conv(n, {geom(n, 2 * n, n, 7, 7, 1, 2, 0), 0}, 73);
}

TEST_P(Conv, ShapeErrorsAreNamed) {
  const uint32_t n = GetParam();
  Rig rig(n, 32768);
  const ConvGeom g = geom(n, 1, 4, 6, 6, 3, 1, 0);
  VMat vx = conv_input_matrix(rig.arena(), g), vw = rig.arena().matrix(g.weight_rows(n), 4);
  VMat bad_y = rig.arena().matrix(5, 4);
  try {
    conv2d_forward(rig.pb(), g, vx, vw, nullptr, bad_y, 0, 0);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_forward: Y 5x4, expected"), std::string::npos)
        << e.what();
  }
  ConvGeom big = g;
  big.kh = 9;
  EXPECT_THROW(conv2d_forward(rig.pb(), big, vx, vw, nullptr, bad_y, 0, 0), std::invalid_argument);
  ConvGeom odd = g;
  odd.batch = n + 1;  // dW needs the batch in multiples of N
  EXPECT_THROW(conv2d_backward_weights(rig.pb(), odd, vx, bad_y, vw, 0, 0), std::invalid_argument);
  VMat vdy = rig.arena().matrix(g.ho() * g.wo() * g.batch, 4);
  try {
    conv2d_backward_input(rig.pb(), g, vdy, vw, rig.arena().matrix(36 * n, 1), 0, 0);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_backward_input: cin = 1"), std::string::npos)
        << e.what();
  }
}

// Reference vs double: the conv output within 2^-20 * sum |products| of the exact sum of the
// bf16-rounded products (as the Dense reference).
TEST_P(Conv, ReferenceIsCloseToExactConvolution) {
  const uint32_t n = GetParam();
  const ref::Window k{3, 3, 1, 1, 1, 1, 1, 1};
  const ref::Tensor x = random_tensor(2, 3, 5, 5, 1.0f, 81),
                    w = random_tensor(4, 3, 3, 3, 0.5f, 82);
  const ref::Tensor y = ref::conv2d(x, w, {}, k, round_up(3, n), n);
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t o = 0; o < 4; ++o)
      for (uint32_t oy = 0; oy < 5; ++oy)
        for (uint32_t ox = 0; ox < 5; ++ox) {
          double exact = 0, mag = 0;
          for (uint32_t c = 0; c < 3; ++c)
            for (uint32_t ky = 0; ky < 3; ++ky)
              for (uint32_t kx = 0; kx < 3; ++kx) {
                const int iy = int(oy + ky) - 1, ix = int(ox + kx) - 1;
                if (iy < 0 || ix < 0 || iy >= 5 || ix >= 5) continue;
                const double p = double{ref::value(ref::to_bf16(x.at(b, c, iy, ix)))} *
                                 ref::value(ref::to_bf16(w.at(o, c, ky, kx)));
                exact += p;
                mag += std::fabs(p);
              }
          EXPECT_LE(std::fabs(ref::value(y.at(b, o, oy, ox)) - exact), std::ldexp(mag, -20));
        }
}

}  // namespace
}  // namespace tpu::train::test

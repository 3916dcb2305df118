// SPDX-License-Identifier: Apache-2.0
// MaxPool, AveragePool, GlobalAveragePool, Add and Flatten (+ Dense) on the golden model
// against the host reference (NCHW, reference.h), bit for bit.
#include <gtest/gtest.h>

#include <cmath>

#include "rig.h"

namespace tpu::train::test {
namespace {

class Pool : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Pool, ::testing::Values(4u, 16u));

struct Imgs {
  VMat x, y;
};
Imgs place(Rig& rig, const PoolGeom& g) {
  return {rig.arena().matrix(g.h * g.w * g.batch, g.c),
          rig.arena().matrix(g.ho() * g.wo() * g.batch, g.c)};
}
ref::Window window(const PoolGeom& g) {
  return ref::Window{g.kh, g.kw, g.sh, g.sw, g.pad_top, g.pad_left, g.pad_bottom, g.pad_right};
}
PoolGeom pool(uint32_t batch, uint32_t c, uint32_t h, uint32_t w, uint32_t k, uint32_t s,
              uint32_t pad) {
  PoolGeom g;
  g.batch = batch;
  g.c = c;
  g.h = h;
  g.w = w;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
  return g;
}

void check_maxpool(uint32_t n, const PoolGeom& g, uint32_t seed) {
  Rig rig(n, 32768);
  ref::Tensor x = random_tensor(g.batch, g.c, g.h, g.w, 1.0f, seed);
  // Ties (equal taps), -0 against +0, and a NaN.
  x.v[0] = x.v[1] = ref::bits(0.75f);
  x.v[g.w] = x.v[g.w + 1] = ref::bits(0.75f);
  x.v[2 * g.w + 2] = 0x80000000u;
  x.v[2 * g.w + 3] = 0u;
  x.v[3 * g.w] = 0x7FC00000u;
  const ref::Tensor dy = random_tensor(g.batch, g.c, g.ho(), g.wo(), 1.0f, seed + 1);
  const Imgs m = place(rig, g);
  VMat am = rig.arena().matrix(m.y.rows, g.c), vdy = rig.arena().matrix(m.y.rows, g.c);
  VMat vdx = rig.arena().matrix(m.x.rows, g.c);
  const uint32_t scratch = rig.arena().rows(pool_scratch_rows(g, n));
  rig.put_rows(m.y.base, std::vector<uint32_t>(size_t{rig.arena().used_end() - m.y.base} * n,
                                               0x7FC00000u));  // stale NaN
  rig.put(m.x, to_image(x));
  rig.put(vdy, to_image(dy));
  maxpool_forward(rig.pb(), g, m.x, m.y, am, scratch);
  maxpool_backward(rig.pb(), g, am, vdy, vdx, scratch);
  rig.want(m.y);
  rig.want(am);
  rig.want(vdx);
  rig.run();
  const ref::MaxPoolResult want = ref::maxpool(x, window(g));
  expect_bits(rig.got(m.y), to_image(want.y), "Y");
  expect_bits(rig.got(am), to_image(want.argmax), "argmax");
  expect_bits(rig.got(vdx), to_image(ref::maxpool_dx(want.argmax, dy, window(g), g.h, g.w)), "dX");
  // Padding rows and lanes +0 over the stale NaN (argmax's padding lanes hold the tap of the
  // zeros there: an internal tensor, only dY's zero lanes meet it).
  for (const VMat& v : {m.y, vdx}) {
    const std::vector<uint32_t> image = rig.got_image(v);
    for (uint32_t r = 0; r < v.span(n); ++r)
      for (uint32_t j = 0; j < n; ++j)
        if (r % v.pitch >= v.rows || r / v.pitch * n + j >= v.cols) {
          EXPECT_EQ(image[size_t{r} * n + j], 0u) << r;
        }
  }
}

// The Keras example's MaxPooling2D(2, 2), on an odd input (the last line / column unused).
TEST_P(Pool, MaxPool2x2MatchesReference) {
  const uint32_t n = GetParam();
  check_maxpool(n, pool(n, n + 3, 7, 6, 2, 2, 0), 91);
  check_maxpool(n, pool(3, 2, 6, 6, 2, 2, 0), 92);  // batch not a multiple of N
}

// resnet.onnx's MaxPool 3x3 / 2 with padding 1 (overlapping windows: gradients add up).
TEST_P(Pool, MaxPool3x3Stride2PaddedMatchesReference) {
  const uint32_t n = GetParam();
  check_maxpool(n, pool(n, 5, 7, 8, 3, 2, 1), 93);
}

TEST_P(Pool, AvgPoolAndGlobalAveragePoolMatchReference) {
  const uint32_t n = GetParam();
  Rig rig(n, 32768);
  const PoolGeom g = pool(n, n + 1, 6, 5, 2, 2, 0);
  const ref::Tensor x = random_tensor(g.batch, g.c, g.h, g.w, 1.0f, 101);
  const ref::Tensor dy = random_tensor(g.batch, g.c, g.ho(), g.wo(), 1.0f, 102);
  const ref::Tensor dg = random_tensor(g.batch, g.c, 1, 1, 1.0f, 103);
  const Imgs m = place(rig, g);
  VMat vdy = rig.arena().matrix(m.y.rows, g.c), vdx = rig.arena().matrix(m.x.rows, g.c);
  VMat gy = rig.arena().matrix(g.batch, g.c), gdy = rig.arena().matrix(g.batch, g.c);
  VMat gdx = rig.arena().matrix(m.x.rows, g.c);
  const uint32_t scratch = rig.arena().rows(pool_scratch_rows(g, n));
  rig.put_rows(m.y.base,
               std::vector<uint32_t>(size_t{rig.arena().used_end() - m.y.base} * n, 0x7FC00000u));
  rig.put(m.x, to_image(x));
  rig.put(vdy, to_image(dy));
  rig.put(gdy, to_image(dg));
  avgpool_forward(rig.pb(), g, m.x, m.y);
  avgpool_backward(rig.pb(), g, vdy, vdx, scratch);
  gap_forward(rig.pb(), g, m.x, gy);
  gap_backward(rig.pb(), g, gdy, gdx);
  for (const VMat v : {m.y, vdx, gy, gdx}) rig.want(v);
  rig.run();
  const ref::Window k = window(g);
  expect_bits(rig.got(m.y), to_image(ref::avgpool(x, k)), "AvgPool Y");
  expect_bits(rig.got(vdx), to_image(ref::avgpool_dx(dy, k, g.h, g.w)), "AvgPool dX");
  expect_bits(rig.got(gy), to_image(ref::gap(x)), "GAP Y");
  expect_bits(rig.got(gdx), to_image(ref::gap_dx(dg, g.h, g.w)), "GAP dX");
  const std::vector<uint32_t> image = rig.got_image(gy);
  for (uint32_t r = 0; r < gy.span(n); ++r)
    for (uint32_t j = 0; j < n; ++j)
      if (r % gy.pitch >= gy.rows || r / gy.pitch * n + j >= gy.cols) {
        EXPECT_EQ(image[size_t{r} * n + j], 0u) << r;
      }
}

TEST_P(Pool, AddAndGradientAccumulation) {
  const uint32_t n = GetParam();
  Rig rig(n);
  const uint32_t rows = 3 * n + 2, cols = n + 1;
  const ref::Mat a = random_mat(rows, cols, 1.0f, 111), b = random_mat(rows, cols, 1.0f, 112);
  VMat va = rig.arena().matrix(rows, cols), vb = rig.arena().matrix(rows, cols);
  VMat vy = rig.arena().matrix(rows, cols);
  rig.put(va, a.v);
  rig.put(vb, b.v);
  add_forward(rig.pb(), va, vb, vy);
  grad_accumulate(rig.pb(), va, vb);
  rig.want(vy);
  rig.want(va);
  rig.run();
  std::vector<uint32_t> sum(a.v.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = ref::add(a.v[i], b.v[i]);
  expect_bits(rig.got(vy), sum, "Y");
  expect_bits(rig.got(va), sum, "accumulated gradient");
}

// Flatten without a copy: Dense over the pooled image activation, with the Dense weight rows
// placed at flatten_feature(c, p) (ONNX's NCHW flatten c*h*w + p), equals Dense on the ONNX
// flatten with the contraction taken in the chip's feature order.
TEST_P(Pool, FlattenViewFeedsDense) {
  const uint32_t n = GetParam();
  Rig rig(n, 32768);
  const uint32_t batch = 2 * n, c = n + 2, h = 3, w = 2, hw = h * w, out = 5;
  const ref::Tensor x = random_tensor(batch, c, h, w, 1.0f, 121);
  const ref::Mat wo = random_mat(c * hw, out, 0.5f, 122);  // rows: ONNX flatten index
  VMat vx = rig.arena().matrix(hw * batch, c);
  const VMat flat = flatten_view(vx, hw, batch, n);
  ASSERT_EQ(flat.cols, (c + n - 1) / n * n * hw);
  ref::Mat wchip = ref::zeros(flat.cols, out);
  ref::Mat xchip = ref::zeros(batch, flat.cols);
  for (uint32_t ch = 0; ch < c; ++ch) {
    for (uint32_t p = 0; p < hw; ++p) {
      const uint32_t f = (ch / n * hw + p) * n + ch % n;  // docs/training.md "Flatten"
      EXPECT_EQ(flatten_feature(ch, p, hw, n), f);
      for (uint32_t o = 0; o < out; ++o) wchip.at(f, o) = wo.at(ch * hw + p, o);
      for (uint32_t b = 0; b < batch; ++b) xchip.at(b, f) = x.at(b, ch, p / w, p % w);
    }
  }
  VMat vw = rig.arena().matrix(flat.cols, out), vy = rig.arena().matrix(batch, out);
  VMat vdy = rig.arena().matrix(batch, out), vdw = rig.arena().matrix(flat.cols, out);
  VMat vdx = rig.arena().matrix(hw * batch, c);  // dX in the image layout, through the view
  const uint32_t xt = rig.arena().rows(flat.span(n));
  const ref::Mat dy = random_mat(batch, out, 1.0f, 123);
  rig.put(vx, to_image(x));
  rig.put(vw, wchip.v);
  rig.put(vdy, dy.v);
  dense_forward(rig.pb(), flat, vw, nullptr, vy, 0);
  dense_backward_weights(rig.pb(), flat, vdy, vdw, xt, 0);
  dense_backward_input(rig.pb(), vdy, vw, flatten_view(vdx, hw, batch, n), 0);
  rig.want(vy);
  rig.want(vdw);
  rig.want(vdx);
  rig.run();
  expect_bits(rig.got(vy), ref::matmul_tiled(xchip, wchip, n).v, "Y");
  expect_bits(rig.got(vdw), ref::matmul_tiled(ref::transposed(xchip), dy, n).v, "dW");
  const ref::Mat dxf = ref::matmul_tiled(dy, ref::transposed(wchip), n);
  ref::Tensor dxt = ref::tensor(batch, c, h, w);
  for (uint32_t ch = 0; ch < c; ++ch)
    for (uint32_t p = 0; p < hw; ++p)
      for (uint32_t b = 0; b < batch; ++b)
        dxt.at(b, ch, p / w, p % w) = dxf.at(b, (ch / n * hw + p) * n + ch % n);
  expect_bits(rig.got(vdx), to_image(dxt), "dX");
  EXPECT_THROW(flatten_view(rig.arena().matrix(hw * 3, c), hw, 3, n), std::invalid_argument);
}

TEST_P(Pool, ShapeErrorsAreNamed) {
  const uint32_t n = GetParam();
  Rig rig(n, 32768);
  const PoolGeom g = pool(n, 3, 6, 6, 2, 2, 0);
  const Imgs m = place(rig, g);
  VMat wrong = rig.arena().matrix(5, 3);
  try {
    maxpool_forward(rig.pb(), g, m.x, wrong, wrong, 0);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("maxpool_forward: Y 5x3, expected"), std::string::npos)
        << e.what();
  }
  PoolGeom padded = g;
  padded.pad_top = 1;
  EXPECT_THROW(avgpool_forward(rig.pb(), padded, m.x, m.y), std::invalid_argument);
  PoolGeom too_big = g;
  too_big.pad_left = 2;
  EXPECT_THROW(maxpool_forward(rig.pb(), too_big, m.x, m.y, m.y, 0), std::invalid_argument);
  EXPECT_THROW(gap_forward(rig.pb(), g, m.x, m.y), std::invalid_argument);
  EXPECT_THROW(add_forward(rig.pb(), m.x, m.y, m.x), std::invalid_argument);
}

// AveragePool and GlobalAveragePool of the reference against double: within 2^-22 * (sum |x|)
// / count of the exact mean (count - 1 fp32 adds and one multiply by the rounded 1/count).
TEST(PoolReference, AveragesAreCloseToExact) {
  const ref::Tensor x = random_tensor(2, 3, 6, 4, 1.0f, 181);
  const ref::Window k{2, 2, 2, 2, 0, 0, 0, 0};
  const ref::Tensor a = ref::avgpool(x, k), g = ref::gap(x);
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t c = 0; c < 3; ++c) {
      double e = 0, m = 0;
      for (uint32_t p = 0; p < 24; ++p) {
        e += ref::value(x.at(b, c, p / 4, p % 4));
        m += std::fabs(ref::value(x.at(b, c, p / 4, p % 4)));
      }
      EXPECT_LE(std::fabs(ref::value(g.at(b, c, 0, 0)) - e / 24), std::ldexp(m / 24, -19));
      for (uint32_t oy = 0; oy < 3; ++oy)
        for (uint32_t ox = 0; ox < 2; ++ox) {
          double s = 0, sm = 0;
          for (uint32_t t = 0; t < 4; ++t) {
            const double v = ref::value(x.at(b, c, oy * 2 + t / 2, ox * 2 + t % 2));
            s += v;
            sm += std::fabs(v);
          }
          EXPECT_LE(std::fabs(ref::value(a.at(b, c, oy, ox)) - s / 4), std::ldexp(sm / 4, -21));
        }
    }
}

}  // namespace
}  // namespace tpu::train::test

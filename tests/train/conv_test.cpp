// SPDX-License-Identifier: Apache-2.0
// Conv2D forward / dW / dX on the golden model against the host reference (NCHW tensors,
// reference.h), bit for bit; the image layout conversion here is the test's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "rig.h"

namespace tpu::train::test {
namespace {

class Conv : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(N, Conv, ::testing::Values(4u, 16u));

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
  // Batch 2N: a kernel row's taps by one align each run (source rows B/N = 2 apart); batch 16N:
  // B/N = 16 is above the vector inner-stride field, one align per tap (build_tap_rows).
  check_conv(n, {geom(2 * n, 1, 3, 5, 4, 3, 1, 0), 0}, 33);
  check_conv(n, {geom(16 * n, 1, 3, 4, 4, 3, 1, 0), 0}, 34);
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

// ONNX's asymmetric pads (SAME_UPPER at stride 2: bottom / right only) and non-square kernels
// and strides.
TEST_P(Conv, AsymmetricPadsAndRectangularKernels) {
  const uint32_t n = GetParam();
  ConvGeom g = geom(n, 3, 5, 6, 7, 3, 2, 0);
  g.pad_bottom = g.pad_right = 1;
  check_conv(n, {g, 0}, 141);
  ConvGeom r = geom(n, 1, 3, 5, 8, 1, 1, 0);
  r.kw = 3;
  r.sw = 2;
  r.pad_left = 2;
  check_conv(n, {r, 0}, 142);
  ConvGeom d = geom(n, n + 1, 2, 6, 5, 2, 1, 0);
  d.kw = 3;
  d.sh = 2;
  d.pad_top = 1;
  check_conv(n, {d, 0}, 143);
}

// A layer done in bands of output lines (views of X, Y and dY; dW accumulated in ACC across
// the calls) equals the whole layer bit for bit: how a layer too big for VMEM is streamed.
void check_bands(uint32_t n, const ConvGeom& g, uint32_t split, uint32_t seed) {
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
  const uint32_t scratch = rig.arena().rows(conv_scratch_rows(g, rig.dev().params(), 0));
  rig.put(vx, as_bits(conv_input_values(g, n, as_floats(x.v))));
  rig.put(vw, as_bits(conv_weight_values(g, n, as_floats(w.v))));
  rig.put(vb, bias);
  rig.put(vdy, to_image(dy));
  const uint32_t line = g.wo() * g.batch;
  for (uint32_t oy0 = 0; oy0 < g.ho(); oy0 += split) {
    const uint32_t l = std::min(split, g.ho() - oy0);
    ConvGeom band = g;  // a valid conv over the stored (padded) input lines of the band
    band.h = (l - 1) * g.sh + g.kh;
    band.w = g.wp();
    band.pad_top = band.pad_left = band.pad_bottom = band.pad_right = 0;
    const uint32_t first = oy0 * g.sh * g.wp() * g.batch;  // first input row of the band
    ASSERT_EQ(first % n, 0u);
    const VMat bx{vx.base + (g.packed() ? first / n : first), band.input_rows(n), vx.cols,
                  vx.pitch};
    const VMat by{vy.base + oy0 * line, l * line, g.cout, vy.pitch};
    const VMat bdy{vdy.base + oy0 * line, l * line, g.cout, vdy.pitch};
    conv2d_forward(rig.pb(), band, bx, vw, &vb, by, scratch, 0);
    conv2d_backward_weights(rig.pb(), band, bx, bdy, vdw, scratch, 2048 - conv_dw_acc_rows(g, n),
                            oy0 > 0);
  }
  clear_padding_rows(rig.pb(), vy);
  rig.want(vy);
  rig.want(vdw);
  rig.run();
  const ref::Window k = window(g);
  expect_bits(from_image(rig.got(vy), g.batch, g.cout, g.ho(), g.wo()).v,
              ref::conv2d(x, w, bias, k, cstride, n).v, "Y");
  expect_bits(as_bits(conv_weight_oihw(g, n, as_floats(rig.got(vdw)))),
              ref::conv2d_dw(x, dy, k, cstride, n).v, "dW");
}

TEST_P(Conv, LayerInBandsOfLinesMatchesWholeLayer) {
  const uint32_t n = GetParam();
  check_bands(n, geom(n, 1, n + 1, 9, 6, 3, 1, 0), 3, 131);  // Keras-like, taps in lanes
  check_bands(n, geom(n, n + 2, 3, 8, 5, 3, 1, 1), 4, 132);  // cin > 1, padded
  check_bands(n, geom(2 * n, 1, 4, 9, 9, 3, 2, 1), 2, 133);  // strided, padded
}

// dW alone in a given orientation (docs/training.md "Conv dW reoriented"), whole (over stale
// NaN in dW and scratch; into a dW with padding rows and one at pitch = rows) and in bands of
// `split` output lines (dW accumulated in ACC across the calls), against the reference; dW's
// padding rows and lanes +0.
void check_dw(uint32_t n, const ConvGeom& g, uint32_t split, ConvDwOrient o, uint32_t seed) {
  Rig rig(n, 32768);
  const uint32_t cstride = g.packed() ? 1 : round_up(g.cin, n);
  const ref::Tensor x = random_tensor(g.batch, g.cin, g.h, g.w, 1.0f, seed);
  const ref::Tensor dy = random_tensor(g.batch, g.cout, g.ho(), g.wo(), 1.0f, seed + 1);
  VMat vx = conv_input_matrix(rig.arena(), g);
  VMat vdy = rig.arena().matrix(g.ho() * g.wo() * g.batch, g.cout);
  VMat whole = rig.arena().matrix(g.weight_rows(n), g.cout);
  VMat banded = rig.arena().matrix(g.weight_rows(n), g.cout);
  const uint32_t wr = g.weight_rows(n);  // and a dW packed at pitch = rows (as in device memory)
  VMat tight{rig.arena().rows(wr * banded.blocks(n)), wr, g.cout, wr};
  const uint32_t scratch = rig.arena().rows(conv_dw_scratch_rows(g, rig.dev().params(), o));
  rig.put_rows(whole.base,
               std::vector<uint32_t>(size_t{rig.arena().used_end() - whole.base} * n, 0x7FC00000u));
  rig.put(vx, as_bits(conv_input_values(g, n, as_floats(x.v))));
  rig.put(vdy, to_image(dy));
  conv2d_backward_weights(rig.pb(), g, vx, vdy, whole, scratch, 0, false, o);
  conv2d_backward_weights(rig.pb(), g, vx, vdy, tight, scratch, 0, false, o);
  const uint32_t line = g.wo() * g.batch, acc = 2048 - conv_dw_acc_rows(g, n, o);
  // (cin > 1 with dY stationary accumulates one output block per call: whole layer only)
  const bool bands = g.packed() || o == ConvDwOrient::XStationary || g.cout <= n;
  for (uint32_t oy0 = 0; bands && oy0 < g.ho(); oy0 += split) {
    const uint32_t l = std::min(split, g.ho() - oy0);
    ConvGeom band = g;
    band.h = (l - 1) * g.sh + g.kh;
    band.w = g.wp();
    band.pad_top = band.pad_left = band.pad_bottom = band.pad_right = 0;
    const uint32_t first = oy0 * g.sh * g.wp() * g.batch;
    const VMat bx{vx.base + (g.packed() ? first / n : first), band.input_rows(n), vx.cols,
                  vx.pitch};
    const VMat bdy{vdy.base + oy0 * line, l * line, g.cout, vdy.pitch};
    conv2d_backward_weights(rig.pb(), band, bx, bdy, banded, scratch, acc, oy0 > 0, o);
  }
  rig.want(whole);
  rig.want(tight);
  if (bands) rig.want(banded);
  rig.run();
  const ref::Tensor want = ref::conv2d_dw(x, dy, window(g), cstride, n);
  for (const VMat* m : {&whole, &tight, &banded}) {
    if (m == &banded && !bands) continue;
    expect_bits(as_bits(conv_weight_oihw(g, n, as_floats(rig.got(*m)))), want.v, "dW");
    const std::vector<uint32_t> image = rig.got_image(*m);
    for (uint32_t r = 0; r < m->span(n); ++r)
      for (uint32_t j = 0; j < n; ++j)
        if (r % m->pitch >= m->rows || r / m->pitch * n + j >= m->cols) {
          EXPECT_EQ(image[size_t{r} * n + j], 0u) << r;
        }
  }
}

// Both orientations on odd geometries: taps in lanes (valid, stride 2 with padding, 5x5 with
// more taps than N at N = 4), cin > N (padded, strided, 1x1), a batch of 2N, couts that are not
// a multiple of N; each whole and in bands.
TEST_P(Conv, DwBothOrientationsMatchReference) {
  const uint32_t n = GetParam();
  ConvGeom asym = geom(n, n + 1, 2 * n + 1, 6, 7, 3, 2, 0);
  asym.pad_bottom = asym.pad_right = 1;
  asym.kw = 2;
  const ConvGeom cases[] = {
      geom(n, 1, 2 * n + 3, 7, 6, 3, 1, 0),          // the Keras layer's class, cout 2N + 3
      geom(2 * n, 1, n + 2, 9, 8, 3, 2, 1),          // stride 2, padding, batch 2N
      geom(n, 1, 3 * n, 8, 7, 5, 1, 1),              // 25 taps: two K-tiles at N = 4 and 16
      geom(n, n + 2, 2 * n + 1, 6, 5, 3, 1, 1),      // cin > N, padded
      geom(n, 2 * n + 1, 3 * n + 1, 7, 7, 1, 2, 0),  // cin > N, 1x1 stride 2
      asym,                                          // cin > N, 3x2 kernel, stride 2, pads
  };
  uint32_t seed = 181;
  for (const ConvGeom& g : cases) {
    for (ConvDwOrient o : {ConvDwOrient::DyStationary, ConvDwOrient::XStationary}) {
      SCOPED_TRACE("cin " + std::to_string(g.cin) + " cout " + std::to_string(g.cout) + " k " +
                   std::to_string(g.kh) + "x" + std::to_string(g.kw) + " orientation " +
                   std::to_string(static_cast<int>(o)));
      check_dw(n, g, 2, o, seed);
      seed += 2;
    }
  }
}

// The orientation Auto takes, from the geometry alone, at the chip's unit rates: the Keras conv
// (9 taps, cin 1, 64 outputs) keeps dY stationary (per chunk 4 tiles of N cycles each against
// 4 transposes of 2N + 1 for X stationary), and so do the other classes.
TEST(ConvDw, OrientationFromTheGeometry) {
  ConvGeom keras = geom(32, 1, 64, 28, 28, 3, 1, 0);
  EXPECT_EQ(conv_dw_orientation(keras, 16), ConvDwOrient::DyStationary);
  keras.cout = 16;
  EXPECT_EQ(conv_dw_orientation(keras, 16), ConvDwOrient::DyStationary);
  EXPECT_EQ(conv_dw_orientation(geom(32, 16, 64, 14, 14, 3, 1, 1), 16), ConvDwOrient::DyStationary);
  EXPECT_EQ(conv_dw_orientation(geom(32, 16, 64, 14, 14, 1, 1, 0), 16), ConvDwOrient::DyStationary);
  EXPECT_EQ(conv_dw_orientation(geom(32, 1, 64, 28, 28, 7, 1, 0), 16), ConvDwOrient::DyStationary);
  // ACC rows: cout blocks x K-tiles x N (cin > 1 with dY stationary: one block's).
  keras.cout = 64;
  EXPECT_EQ(conv_dw_acc_rows(keras, 16, ConvDwOrient::XStationary), 64u);
  EXPECT_EQ(conv_dw_acc_rows(keras, 16, ConvDwOrient::DyStationary), 64u);
  const ConvGeom many = geom(32, 17, 20, 8, 8, 3, 1, 0);
  EXPECT_EQ(conv_dw_acc_rows(many, 16, ConvDwOrient::XStationary), 2u * 18 * 16);
  EXPECT_EQ(conv_dw_acc_rows(many, 16, ConvDwOrient::DyStationary), 18u * 16);
}

// Instructions: X stationary is one load_weights, one matmul_bf16 (cout rows) and one
// transpose per chunk of N positions; dY stationary one tile (4 per load_weights) and one
// matmul_bf16 per chunk and output block.
TEST(ConvDw, KerasLayerInstructionCounts) {
  const uint32_t n = 16;
  const ConvGeom g = geom(32, 1, 64, 6, 28, 3, 1, 0);  // 4 output lines of the Keras layer
  const uint32_t chunks = g.ho() * g.wo() * g.batch / n;
  for (ConvDwOrient o : {ConvDwOrient::DyStationary, ConvDwOrient::XStationary}) {
    Rig rig(n, 32768);
    VMat vx = conv_input_matrix(rig.arena(), g);
    VMat vdy = rig.arena().matrix(g.ho() * g.wo() * g.batch, g.cout);
    VMat vdw = rig.arena().matrix(g.weight_rows(n), g.cout);
    const uint32_t scratch = rig.arena().rows(conv_dw_scratch_rows(g, rig.dev().params(), o));
    conv2d_backward_weights(rig.pb(), g, vx, vdy, vdw, scratch, 0, false, o);
    uint64_t lw = 0, lwi = 0, mm = 0, rows = 0, tr = 0;
    for (const Instruction& in : rig.pb().instructions()) {
      if (const auto* l = std::get_if<LoadWeights>(&in)) {
        lw += l->tiles;
        ++lwi;
      }
      if (const auto* m = std::get_if<MatmulBf16>(&in)) {
        ++mm;
        rows += uint64_t{m->inner} * m->outer;
      }
      if (std::get_if<Transpose>(&in) != nullptr) ++tr;
    }
    const bool xs = o == ConvDwOrient::XStationary;
    EXPECT_EQ(lw, xs ? chunks : 4u * chunks);
    EXPECT_EQ(lwi, xs ? chunks : 4u * (chunks / 4));  // 4 tiles each (104 chunks per band)
    EXPECT_EQ(mm, xs ? chunks : 4u * chunks);
    EXPECT_EQ(rows, xs ? 64u * chunks : 4u * 9 * chunks);
    EXPECT_EQ(tr, xs ? chunks + 4 : 0u);  // dY^T per chunk, dW^T -> dW per output block
  }
}

// A layer's output (image layout, no border) padded on the chip by conv_pad_input over stale
// NaN, then convolved: equals the reference's padded convolution.
TEST_P(Conv, PadInputOnTheChip) {
  const uint32_t n = GetParam();
  Rig rig(n, 32768);
  ConvGeom g = geom(n, n + 3, 4, 5, 6, 3, 1, 1);
  g.pad_bottom = 2;
  const ref::Tensor x = random_tensor(g.batch, g.cin, g.h, g.w, 1.0f, 151);
  const ref::Tensor w = random_tensor(g.cout, g.cin, 3, 3, 0.5f, 152);
  VMat src = rig.arena().matrix(g.h * g.w * g.batch, g.cin);
  VMat vx = conv_input_matrix(rig.arena(), g), vw = rig.arena().matrix(g.weight_rows(n), g.cout);
  VMat vy = rig.arena().matrix(g.ho() * g.wo() * g.batch, g.cout);
  const uint32_t scratch = rig.arena().rows(conv_scratch_rows(g, rig.dev().params(), 0));
  rig.put_rows(vx.base, std::vector<uint32_t>(size_t{vx.span(n)} * n, 0x7FC00000u));
  rig.put(src, to_image(x));
  rig.put(vw, as_bits(conv_weight_values(g, n, as_floats(w.v))));
  conv_pad_input(rig.pb(), g, src, vx);
  conv2d_forward(rig.pb(), g, vx, vw, nullptr, vy, scratch, 0);
  rig.want(vy);
  rig.run();
  expect_bits(from_image(rig.got(vy), g.batch, g.cout, g.ho(), g.wo()).v,
              ref::conv2d(x, w, {}, window(g), round_up(g.cin, n), n).v, "Y");
}

// The Keras front (conv 3x3 cin 1 -> maxpool 2) scheduled band by band with only a band of the
// conv output in VMEM: per band of 2 conv lines, conv into a band buffer, pool it into the
// pooled tensor's band (views); the bias added after pooling (bias_add); backward per band:
// maxpool_backward into the band buffer, conv dW accumulated in ACC. Equals the reference of
// conv (no bias) -> maxpool -> + bias on the whole tensors; db = column sums of dPooled.
TEST_P(Conv, ConvPoolBandsWithoutTheWholeConvOutput) {
  const uint32_t n = GetParam();
  Rig rig(n, 32768);
  const ConvGeom g = geom(n, 1, n + 1, 10, 9, 3, 1, 0);  // 8 x 7 conv output
  PoolGeom pg;
  pg.batch = n;
  pg.c = g.cout;
  pg.h = g.ho();
  pg.w = g.wo();  // 4 x 3 pooled (the last conv column unused)
  const uint32_t pline = pg.wo() * n, cline = g.wo() * n;
  const ref::Tensor x = random_tensor(n, 1, g.h, g.w, 1.0f, 161);
  const ref::Tensor w = random_tensor(g.cout, 1, 3, 3, 0.5f, 162);
  const std::vector<uint32_t> bias = random_values(g.cout, 0.5f, 163);
  const ref::Tensor dp = random_tensor(n, g.cout, pg.ho(), pg.wo(), 1.0f, 164);
  VmemArena& ar = rig.arena();
  VMat vx = conv_input_matrix(ar, g), vw = ar.matrix(g.weight_rows(n), g.cout);
  VMat vb = ar.row_vector(g.cout), vdb = ar.row_vector(g.cout);
  VMat pooled = ar.matrix(pg.ho() * pline, g.cout), am = ar.matrix(pooled.rows, g.cout);
  VMat dpooled = ar.matrix(pooled.rows, g.cout), vdw = ar.matrix(vw.rows, g.cout);
  VMat buf = ar.matrix(2 * cline, g.cout);  // one band of the conv output (or its gradient)
  const uint32_t scratch = ar.rows(conv_scratch_rows(g, rig.dev().params(), 0));
  const uint32_t pscratch = ar.rows(pool_scratch_rows(pg, n));
  rig.put(vx, as_bits(conv_input_values(g, n, as_floats(x.v))));
  rig.put(vw, as_bits(conv_weight_values(g, n, as_floats(w.v))));
  rig.put(vb, bias);
  rig.put(dpooled, to_image(dp));
  const uint32_t dw_acc = 2048 - conv_dw_acc_rows(g, n);
  for (int pass = 0; pass < 2; ++pass) {  // forward over all bands, then backward
    for (uint32_t py = 0; py < pg.ho(); ++py) {
      ConvGeom band = g;
      band.h = 2 + g.kh - 1;  // input lines of conv lines 2py, 2py + 1
      const VMat bx{vx.base + 2 * py * g.wp() * n / n, band.input_rows(n), n, vx.pitch};
      PoolGeom pb = pg;
      pb.h = 2;
      const VMat pv{pooled.base + py * pline, pline, g.cout, pooled.pitch};
      const VMat av{am.base + py * pline, pline, g.cout, am.pitch};
      const VMat dv{dpooled.base + py * pline, pline, g.cout, dpooled.pitch};
      if (pass == 0) {
        conv2d_forward(rig.pb(), band, bx, vw, nullptr, buf, scratch, 0);
        maxpool_forward(rig.pb(), pb, buf, pv, av, pscratch);
      } else {
        maxpool_backward(rig.pb(), pb, av, dv, buf, pscratch);
        conv2d_backward_weights(rig.pb(), band, bx, buf, vdw, scratch, dw_acc, py > 0);
      }
    }
    if (pass == 0) bias_add(rig.pb(), pooled, vb);
  }
  bias_grad(rig.pb(), dpooled, vdb);
  rig.want(pooled);
  rig.want(vdw);
  rig.want(vdb);
  rig.run();
  const ref::Window ck = window(g), pk{2, 2, 2, 2, 0, 0, 0, 0};
  const ref::Tensor y1 = ref::conv2d(x, w, {}, ck, 1, n);
  const ref::MaxPoolResult p = ref::maxpool(y1, pk);
  ref::Tensor want = p.y;
  for (uint32_t b = 0; b < n; ++b)
    for (uint32_t c = 0; c < g.cout; ++c)
      for (uint32_t i = 0; i < pg.ho() * pg.wo(); ++i) {
        uint32_t& v = want.at(b, c, i / pg.wo(), i % pg.wo());
        v = ref::add(v, bias[c]);
      }
  expect_bits(rig.got(pooled), to_image(want), "pooled + bias");
  const ref::Tensor dy1 = ref::maxpool_dx(p.argmax, dp, pk, g.ho(), g.wo());
  expect_bits(as_bits(conv_weight_oihw(g, n, as_floats(rig.got(vdw)))),
              ref::conv2d_dw(x, dy1, ck, 1, n).v, "dW");
  std::vector<uint32_t> db(g.cout, 0x80000000u);
  for (uint32_t i = 0; i < pg.ho() * pg.wo(); ++i)
    for (uint32_t b = 0; b < n; ++b)
      for (uint32_t c = 0; c < g.cout; ++c)
        db[c] = ref::add(db[c], dp.at(b, c, i / pg.wo(), i % pg.wo()));
  expect_bits(rig.got(vdb), db, "db");
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
  // Reusing the im2col needs cin = 1 and the layer in one band of ACC rows (here ACC room for
  // one output line of the four).
  VMat vy = rig.arena().matrix(g.ho() * g.wo() * g.batch, 4);
  const uint32_t one_line = rig.dev().params().acc_rows - g.wo() * g.batch;
  try {
    conv2d_forward(rig.pb(), g, vx, vw, nullptr, vy, 0, one_line, true);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("im2col_ready needs cin = 1 and the layer in one band"),
              std::string::npos)
        << e.what();
  }
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

// dW and dX of the reference against double: within 2^-20 * sum |products| of the exact sums of
// the bf16-rounded products (dX: the taps' partial sums are fp32 adds of such sums).
TEST_P(Conv, ReferenceGradientsAreCloseToExact) {
  const uint32_t n = GetParam();
  const ref::Window k{3, 3, 2, 2, 1, 1, 1, 1};
  const ref::Tensor x = random_tensor(3, 5, 7, 6, 1.0f, 171),
                    w = random_tensor(4, 5, 3, 3, 0.5f, 172);
  const uint32_t ho = k.ho(7), wo = k.wo(6);
  const ref::Tensor dy = random_tensor(3, 4, ho, wo, 1.0f, 173);
  const ref::Tensor dw = ref::conv2d_dw(x, dy, k, round_up(5, n), n);
  const ref::Tensor dx = ref::conv2d_dx(dy, w, k, 7, 6, n);
  auto bf = [](uint32_t b) { return double{ref::value(ref::to_bf16(b))}; };
  std::vector<double> ex(dx.v.size(), 0.0), mag(dx.v.size(), 0.0);
  for (uint32_t o = 0; o < 4; ++o)
    for (uint32_t c = 0; c < 5; ++c)
      for (uint32_t t = 0; t < 9; ++t) {
        double e = 0, m = 0;
        for (uint32_t b = 0; b < 3; ++b)
          for (uint32_t oy = 0; oy < ho; ++oy)
            for (uint32_t ox = 0; ox < wo; ++ox) {
              const int iy = int(oy * 2 + t / 3) - 1, ix = int(ox * 2 + t % 3) - 1;
              if (iy < 0 || ix < 0 || iy >= 7 || ix >= 6) continue;
              const double p = bf(x.at(b, c, iy, ix)) * bf(dy.at(b, o, oy, ox));
              e += p;
              m += std::fabs(p);
              const double q = bf(dy.at(b, o, oy, ox)) * bf(w.at(o, c, t / 3, t % 3));
              const size_t i = ((size_t{b} * 5 + c) * 7 + iy) * 6 + ix;
              ex[i] += q;
              mag[i] += std::fabs(q);
            }
        EXPECT_LE(std::fabs(ref::value(dw.at(o, c, t / 3, t % 3)) - e), std::ldexp(m, -20));
      }
  for (size_t i = 0; i < dx.v.size(); ++i) {
    EXPECT_LE(std::fabs(ref::value(dx.v[i]) - ex[i]), std::ldexp(mag[i], -20)) << i;
  }
}

}  // namespace
}  // namespace tpu::train::test

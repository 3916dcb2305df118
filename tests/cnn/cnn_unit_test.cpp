// SPDX-License-Identifier: Apache-2.0
// CNN library tests that need no RTL: ONNX import and its errors, quantization, the integer
// reference against the chip's arithmetic (arith.h), quantized model round trips, and the
// compiled programs on the golden ISA model ("model" Device backend), bit-exact against the
// integer reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <typeinfo>

#include "arith.h"
#include "cnn_models.h"
#include "cnn_test_util.h"
#include "device_model.h"
#include "evaluate.h"
#include "mini_parse.h"
#include "reference.h"
#include "report.h"
#include "temp_dir.h"
#include "xml_text.h"

namespace {

using namespace cnn_test;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// ---- import --------------------------------------------------------------------------------

TEST(OnnxImport, BundledModel) {
  const Network net = load_onnx(bundled_model());
  EXPECT_EQ(net.input, (Shape3{1, 28, 28}));
  EXPECT_EQ(net.file_batch, 1);
  ASSERT_EQ(net.layers.size(), 4u);
  EXPECT_EQ(net.layers[0].kind, LayerKind::Conv);
  EXPECT_EQ(net.layers[0].out, (Shape3{32, 13, 13}));
  EXPECT_EQ(net.layers[0].act, Activation::Relu);
  EXPECT_EQ(net.layers[1].out, (Shape3{64, 5, 5}));
  EXPECT_EQ(net.layers[2].kind, LayerKind::Dense);
  EXPECT_EQ(net.layers[2].fan_in(), 1600);
  EXPECT_EQ(net.layers[3].out, (Shape3{10, 1, 1}));
  EXPECT_EQ(net.classes(), 10);
}

TEST(OnnxImport, UnsupportedOpNamesNodeOpAndSupportedList) {
  OnnxGraph g("bad");
  g.input("input", {1, 1, 8, 8});
  g.init_float("w", {4, 1, 3, 3}, std::vector<float>(36, 0.1f));
  g.node("Conv", {"input", "w"}, {"c"}, {}, "conv_a");
  g.node("LRN", {"c"}, {"s"}, {OnnxAttr::Int("size", 3)}, "my_lrn");
  g.output("s");
  const std::string e = error_of([&] { import_onnx_bytes(g.serialize(), "bad.onnx"); });
  EXPECT_NE(e.find("my_lrn"), std::string::npos) << e;
  EXPECT_NE(e.find("LRN"), std::string::npos) << e;
  EXPECT_NE(e.find("not supported"), std::string::npos) << e;
  EXPECT_NE(e.find("Supported ops: Conv"), std::string::npos) << e;
  EXPECT_NE(e.find("MaxPool"), std::string::npos) << e;
}

// A tensor read by two nodes stays live across the branch: a residual Add reads it again.
TEST(OnnxImport, BranchingGraphImportsAsADag) {
  OnnxGraph g("branch");
  g.input("input", {1, 1, 8, 8});
  g.init_float("w", {1, 1, 1, 1}, {1.0f});
  g.node("Conv", {"input", "w"}, {"a"}, {}, "c1");
  g.node("Conv", {"a", "w"}, {"b"}, {}, "c2");
  g.node("Add", {"a", "b"}, {"sum"}, {}, "residual_add");
  g.output("sum");
  const Network net = import_onnx_bytes(g.serialize(), "branch.onnx");
  ASSERT_EQ(net.layers.size(), 3u);
  EXPECT_EQ(net.layers[1].inputs, std::vector<int>{0});
  EXPECT_EQ(net.layers[2].kind, LayerKind::Add);
  EXPECT_EQ(net.layers[2].inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(net.layers[2].name, "residual_add");
}

// Reading a tensor nothing defines names it.
TEST(OnnxImport, UndefinedTensorIsNamed) {
  OnnxGraph g("undef");
  g.input("input", {1, 4});
  g.node("Gemm", {"input", "W"}, {"y"}, {}, "fc");
  g.output("y");
  const std::string e = error_of([&] { import_onnx_bytes(g.serialize(), "undef.onnx"); });
  EXPECT_NE(e.find("'W'"), std::string::npos) << e;
  EXPECT_NE(e.find("not defined"), std::string::npos) << e;
}

TEST(OnnxImport, TruncatedFileIsAClearError) {
  const std::string bytes = read_file(bundled_model());
  ASSERT_GT(bytes.size(), 100000u);
  for (double f : {0.0, 0.001, 0.1, 0.5, 0.9, 0.999}) {
    const std::string cut = bytes.substr(0, size_t(double(bytes.size()) * f));
    const std::string e = error_of([&] { import_onnx_bytes(cut, "cut.onnx"); });
    SCOPED_TRACE("truncated to " + std::to_string(cut.size()) + " bytes");
    EXPECT_NE(e, "(no error)");
    EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("empty") != std::string::npos ||
                e.find("missing") != std::string::npos)
        << e;
  }
  // The same through a file, and a file that is not there.
  const std::string path = test_support::temp_dir() + "/truncated.onnx";
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_NE(error_of([&] { load_onnx(path); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { load_onnx(path + ".missing"); }).find("cannot open"), std::string::npos);
}

// Random corruption of the bundled model: the importer either accepts the file or throws
// cnn::Error (no crash, no other exception type). Small models are mutated too, so that the
// graph part (not only weight bytes) is hit.
TEST(OnnxImport, CorruptFilesGiveErrorsNotCrashes) {
  OnnxGraph g("small");
  g.input("input", {1, 1, 8, 8});
  g.init_float("w", {4, 1, 3, 3}, std::vector<float>(36, 0.1f));
  g.init_float("b", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  g.node("Conv", {"input", "w", "b"}, {"c"}, {OnnxAttr::Ints("pads", {1, 1, 1, 1})}, "conv");
  g.node("Relu", {"c"}, {"r"});
  g.node("MaxPool", {"r"}, {"p"},
         {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})});
  g.node("Flatten", {"p"}, {"f"});
  g.init_float("w2", {3, 64}, std::vector<float>(192, 0.01f));
  g.node("Gemm", {"f", "w2"}, {"logits"}, {OnnxAttr::Int("transB", 1)});
  g.output("logits");
  const std::string small = g.serialize();
  const std::string big = read_file(bundled_model());
  std::mt19937 rng(17);
  int errors = 0;
  for (int i = 0; i < 400; ++i) {
    std::string m = i % 4 == 0 ? big : small;
    const int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f) m[rng() % m.size()] = char(rng() & 0xFF);
    try {
      import_onnx_bytes(m, "corrupt.onnx");
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << ": " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(errors, 50);
}

TEST(OnnxImport, WrongInputShapeIsAClearError) {
  // A model whose declared input does not match its first convolution.
  OnnxGraph g("mismatch");
  g.input("input", {1, 1, 32, 32});
  g.init_float("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.1f));
  g.node("Conv", {"input", "w"}, {"c"}, {}, "first_conv");
  g.output("c");
  std::string e = error_of([&] { import_onnx_bytes(g.serialize(), "mismatch.onnx"); });
  EXPECT_NE(e.find("first_conv"), std::string::npos) << e;
  EXPECT_NE(e.find("wrong input shape"), std::string::npos) << e;
  // A 3x32x32 model fed with 1x28x28 Fashion-MNIST images.
  const Network cifar = cifar_convnet(1);
  e = error_of([&] { check_input_shape(cifar.input, "cifar.onnx", 1, 28, 28, "Fashion-MNIST"); });
  EXPECT_NE(e.find("wrong input shape"), std::string::npos) << e;
  EXPECT_NE(e.find("[3, 32, 32]"), std::string::npos) << e;
  EXPECT_NE(e.find("[1, 28, 28]"), std::string::npos) << e;
  EXPECT_NO_THROW(check_input_shape(load_onnx(bundled_model()).input, "m", 1, 28, 28, "d"));
  // Not NCHW at all (rank 5).
  OnnxGraph h("5d");
  h.input("input", {1, 2, 28, 28, 4});
  h.init_float("w", {1, 1}, {1.0f});
  h.node("MatMul", {"input", "w"}, {"y"});
  h.output("y");
  e = error_of([&] { import_onnx_bytes(h.serialize(), "5d.onnx"); });
  EXPECT_NE(e.find("NCHW"), std::string::npos) << e;
  // Rank 3 is [N, C, L] (one row per channel): a MatMul of it needs a Flatten first.
  OnnxGraph h3("3d");
  h3.input("input", {1, 28, 28});
  h3.init_float("w", {1, 1}, {1.0f});
  h3.node("MatMul", {"input", "w"}, {"y"});
  h3.output("y");
  e = error_of([&] { import_onnx_bytes(h3.serialize(), "3d.onnx"); });
  EXPECT_NE(e.find("MatMul needs a 2-D [N, features] input (Flatten first)"), std::string::npos)
      << e;
}

TEST(OnnxImport, DynamicBatchAndPreprocessingAndFoldedBias) {
  // Symbolic batch, normalization inside the model, MatMul + Add bias, Clip, Reshape.
  OnnxGraph g("pre");
  g.input("input", {-1, 2, 6, 6});
  g.init_float("mean", {1, 2, 1, 1}, {0.5f, 0.25f});
  g.init_float("std", {1, 2, 1, 1}, {0.5f, 2.0f});
  g.node("Sub", {"input", "mean"}, {"a"});
  g.node("Div", {"a", "std"}, {"b"});
  std::vector<float> w(4 * 2 * 9);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) * 0.1f;
  g.init_float("w", {4, 2, 3, 3}, w);
  g.node("Conv", {"b", "w"}, {"c"},
         {OnnxAttr::Ints("strides", {2, 2}), OnnxAttr::Ints("pads", {1, 0, 1, 0})});
  g.init_float("cb", {1, 4, 1, 1}, {0.1f, -0.2f, 0.3f, 0.0f});
  g.node("Add", {"c", "cb"}, {"d"});
  g.init_float("lo", {}, {0.0f});
  g.init_float("hi", {}, {6.0f});
  g.node("Clip", {"d", "lo", "hi"}, {"e"});
  g.init_int64("shape", {2}, {-1, 4 * 3 * 2});
  g.node("Reshape", {"e", "shape"}, {"f"});
  std::vector<float> m(24 * 5, 0.05f);
  g.init_float("m", {24, 5}, m);
  g.node("MatMul", {"f", "m"}, {"g"});
  g.init_float("mb", {5}, {1, 2, 3, 4, 5});
  g.node("Add", {"g", "mb"}, {"logits"});
  g.output("logits");
  const Network net = import_onnx_bytes(g.serialize(), "pre.onnx");
  EXPECT_EQ(net.file_batch, 0);
  ASSERT_EQ(net.pre_scale.size(), 2u);
  EXPECT_FLOAT_EQ(net.pre_scale[0], 2.0f);
  EXPECT_FLOAT_EQ(net.pre_shift[0], -1.0f);
  EXPECT_FLOAT_EQ(net.pre_scale[1], 0.5f);
  EXPECT_FLOAT_EQ(net.pre_shift[1], -0.125f);
  ASSERT_EQ(net.layers.size(), 2u);
  EXPECT_EQ(net.layers[0].out, (Shape3{4, 3, 2}));
  EXPECT_EQ(net.layers[0].act, Activation::Clip);
  EXPECT_FLOAT_EQ(net.layers[0].bias[1], -0.2f);
  EXPECT_FLOAT_EQ(net.layers[1].bias[4], 5.0f);
}

// ---- arithmetic ------------------------------------------------------------------------------

TEST(Quantize, MultiplierRepresentsTheRatio) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> e(-30, 5);
  for (int i = 0; i < 1000; ++i) {
    const double m = std::pow(2.0, e(rng));
    int32_t mult;
    uint8_t shift;
    quantize_multiplier(m, &mult, &shift);
    ASSERT_LE(shift, 63);
    EXPECT_NEAR(double(mult) / std::pow(2.0, shift), m, m * 1e-9);
  }
}

// The reference's requantization (its own rounding) equals the chip's (arith.h), which the RTL
// is tested against: the integer reference and the chip agree by construction of the format.
TEST(Reference, RequantizationMatchesTheChipArithmetic) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> acc(-3000000, 3000000), bias(-100000, 100000), zp(-20, 20);
  std::uniform_real_distribution<double> scale(1e-6, 0.05);
  for (int i = 0; i < 20000; ++i) {
    QLayer l;
    l.kind = LayerKind::Dense;
    l.in = {1, 1, 1};
    l.conv_out.c = 1;
    l.infer_shapes();
    l.in_q = {1.0f, 0, true};
    l.out_q = {0.1f, zp(rng), i % 2 == 0};
    if (l.out_q.is_unsigned) l.out_q.zero_point += 20;
    l.weight = {1};
    l.bias = {bias(rng)};
    l.mult.resize(1);
    l.shift.resize(1);
    quantize_multiplier(scale(rng), &l.mult[0], &l.shift[0]);
    l.act = Activation(i % 3);
    l.lo = l.out_q.zero_point - 3;
    l.hi = l.out_q.zero_point + 90;
    if (l.out_q.is_unsigned) l.lo = std::max(l.lo, 0), l.hi = std::min(l.hi, 255);
    const int32_t a = acc(rng);
    const int ref = int_layer(l, std::vector<int32_t>{a})[0];
    const uint32_t misc = uint32_t(l.shift[0]) | (uint32_t(l.out_q.zero_point) & 0xFF) << 8 |
                          (uint32_t(l.lo) & 0xFF) << 16 | (uint32_t(l.hi) & 0xFF) << 24;
    const tpu::ActFunc f = l.act == Activation::None   ? tpu::ActFunc::Identity
                           : l.act == Activation::Relu ? tpu::ActFunc::Relu
                                                       : tpu::ActFunc::Clamp;
    const int chip =
        tpu::requantize(a, l.bias[0], l.mult[0], misc, f, l.out_q.is_unsigned, nullptr);
    ASSERT_EQ(ref, chip) << "acc " << a << " bias " << l.bias[0] << " mult " << l.mult[0]
                         << " shift " << int(l.shift[0]);
  }
}

// A random convolution geometry (strides, dilations, padding, groups) whose kernel fits.
template <typename L>
bool random_conv_geometry(std::mt19937& rng, L* l) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  l->kind = LayerKind::Conv;
  l->group = pick(1, 3);
  l->in = {l->group * pick(1, 3), pick(1, 12), pick(1, 12)};
  l->conv_out.c = l->group * pick(1, 3);
  l->kh = pick(1, 5), l->kw = pick(1, 5);
  l->sh = pick(1, 3), l->sw = pick(1, 3);
  l->dh = pick(1, 2), l->dw = pick(1, 2);
  l->pad_t = pick(0, 3), l->pad_l = pick(0, 3), l->pad_b = pick(0, 3), l->pad_r = pick(0, 3);
  if (l->in.h + l->pad_t + l->pad_b < l->dh * (l->kh - 1) + 1 ||
      l->in.w + l->pad_l + l->pad_r < l->dw * (l->kw - 1) + 1)
    return false;
  l->infer_shapes();
  return true;
}

// float_layer / int_layer (reference.cpp loop over taps, innermost over output pixels) against
// the direct sum over each output's window: the float sums bit for bit (same terms, same
// order, padding taps left out), the integer ones exactly.
TEST(Reference, ConvolutionIsTheDirectSumOverEachWindow) {
  std::mt19937 rng(11);
  std::normal_distribution<float> real(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127), divisor(1, 9);
  int float_cases = 0, int_cases = 0;
  for (int i = 0; i < 400; ++i) {
    Layer l;
    if (!random_conv_geometry(rng, &l)) continue;
    const Shape3 o = l.conv_out;
    const int cin_g = l.in.c / l.group, cout_g = o.c / l.group;
    l.weight.resize(size_t(o.c) * cin_g * l.kh * l.kw);
    for (auto& w : l.weight) w = real(rng);
    if (i % 2) {
      l.bias.resize(size_t(o.c));
      for (auto& b : l.bias) b = real(rng);
    }
    if (i % 3 == 0) {  // an average pool's per-pixel divisors
      l.avg_lines.resize(size_t(o.h));
      l.avg_cols.resize(size_t(o.w));
      for (auto& d : l.avg_lines) d = divisor(rng);
      for (auto& d : l.avg_cols) d = divisor(rng);
    }
    std::vector<float> x(size_t(l.in.size()));
    for (auto& v : x) v = real(rng);
    const std::vector<float> got = float_layer(l, {&x});
    ASSERT_EQ(got.size(), size_t(o.size()));
    for (int oc = 0; oc < o.c; ++oc)
      for (int oy = 0; oy < o.h; ++oy)
        for (int ox = 0; ox < o.w; ++ox) {
          double s = 0;
          for (int icg = 0; icg < cin_g; ++icg)
            for (int ky = 0; ky < l.kh; ++ky)
              for (int kx = 0; kx < l.kw; ++kx) {
                const int iy = oy * l.sh + ky * l.dh - l.pad_t,
                          ix = ox * l.sw + kx * l.dw - l.pad_l;
                if (iy < 0 || iy >= l.in.h || ix < 0 || ix >= l.in.w) continue;
                const int ic = oc / cout_g * cin_g + icg;
                s += double(l.weight[size_t(((oc * cin_g + icg) * l.kh + ky) * l.kw + kx)]) *
                     x[size_t((ic * l.in.h + iy) * l.in.w + ix)];
              }
          if (l.per_pixel_divisor()) s /= double(l.avg_lines[size_t(oy)] * l.avg_cols[size_t(ox)]);
          const float want = float(s) + (l.bias.empty() ? 0.0f : l.bias[size_t(oc)]);
          const float have = got[size_t((oc * o.h + oy) * o.w + ox)];
          ASSERT_EQ(std::memcmp(&want, &have, sizeof want), 0)
              << "case " << i << " output (" << oc << ", " << oy << ", " << ox << "): " << have
              << " instead of " << want;
        }
    ++float_cases;

    QLayer q;
    if (!random_conv_geometry(rng, &q)) continue;
    const Shape3 qo = q.conv_out;
    const int qcin_g = q.in.c / q.group, qcout_g = qo.c / q.group;
    q.raw = true;  // the output is saturate(acc + bias) itself
    q.in_q = {0.1f, byte(rng), true};
    q.in_qs = {q.in_q};
    q.out_q = {1.0f, 0, false};
    q.weight.resize(size_t(qo.c) * qcin_g * q.kh * q.kw);
    for (auto& w : q.weight) w = int8_t(weight(rng));
    q.bias.resize(size_t(qo.c));
    for (auto& b : q.bias) b = weight(rng) * 1000;
    std::vector<int32_t> qx(size_t(q.in.size()));
    for (auto& v : qx) v = byte(rng);
    const std::vector<int32_t> qgot = int_layer(q, qx);
    ASSERT_EQ(qgot.size(), size_t(qo.size()));
    for (int oc = 0; oc < qo.c; ++oc)
      for (int oy = 0; oy < qo.h; ++oy)
        for (int ox = 0; ox < qo.w; ++ox) {
          int64_t acc = q.bias[size_t(oc)];
          for (int icg = 0; icg < qcin_g; ++icg)
            for (int ky = 0; ky < q.kh; ++ky)
              for (int kx = 0; kx < q.kw; ++kx) {
                const int iy = oy * q.sh + ky * q.dh - q.pad_t,
                          ix = ox * q.sw + kx * q.dw - q.pad_l;
                if (iy < 0 || iy >= q.in.h || ix < 0 || ix >= q.in.w) continue;  // a real 0
                const int ic = oc / qcout_g * qcin_g + icg;
                acc += int64_t(qx[size_t((ic * q.in.h + iy) * q.in.w + ix)] - q.in_q.zero_point) *
                       q.weight[size_t(((oc * qcin_g + icg) * q.kh + ky) * q.kw + kx)];
              }
          ASSERT_EQ(qgot[size_t((oc * qo.h + oy) * qo.w + ox)], int32_t(acc))
              << "case " << i << " output (" << oc << ", " << oy << ", " << ox << ")";
        }
    ++int_cases;
  }
  EXPECT_GT(float_cases, 200);
  EXPECT_GT(int_cases, 150);
}

// int_layer's Dense over two concatenated inputs with their own zero points (each input element
// minus the zero point of its channel), against the direct sum.
TEST(Reference, DenseSubtractsEachChannelsZeroPoint) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127), size(1, 5);
  for (int i = 0; i < 50; ++i) {
    QLayer q;
    q.kind = LayerKind::Dense;
    q.input_channels = {size(rng), size(rng)};
    q.in = {q.input_channels[0] + q.input_channels[1], size(rng), size(rng)};
    q.conv_out.c = size(rng);
    q.infer_shapes();
    q.raw = true;
    q.in_qs = {{0.1f, byte(rng), true}, {0.2f, byte(rng), true}};
    q.in_q = q.in_qs[0];
    q.out_q = {1.0f, 0, false};
    const int64_t k = q.fan_in(), plane = int64_t(q.in.h) * q.in.w;
    ASSERT_EQ(k, q.in.size());
    q.weight.resize(size_t(q.conv_out.c * k));
    for (auto& w : q.weight) w = int8_t(weight(rng));
    q.bias.assign(size_t(q.conv_out.c), 0);
    std::vector<int32_t> a(size_t(q.input_channels[0] * plane)),
        b(size_t(q.input_channels[1] * plane));
    for (auto& v : a) v = byte(rng);
    for (auto& v : b) v = byte(rng);
    const std::vector<int32_t> got = int_layer(q, std::vector<const std::vector<int32_t>*>{&a, &b});
    ASSERT_EQ(got.size(), size_t(q.conv_out.c));
    for (int oc = 0; oc < q.conv_out.c; ++oc) {
      int64_t acc = 0;
      for (int64_t j = 0; j < k; ++j) {
        const bool first = j < int64_t(a.size());
        const int32_t v = first ? a[size_t(j)] : b[size_t(j - int64_t(a.size()))];
        acc += int64_t(v - q.in_qs[first ? 0 : 1].zero_point) * q.weight[size_t(oc * k + j)];
      }
      ASSERT_EQ(got[size_t(oc)], int32_t(acc)) << "case " << i << " output " << oc;
    }
  }
}

// ---- quantization ------------------------------------------------------------------------------

TEST(Quantize, FashionModelKeepsItsAccuracy) {
  const Network net = load_onnx(bundled_model());
  const QuantNetwork q = fashion_quantized();
  EXPECT_EQ(q.input_q.scale, 1.0f / 255.0f);  // pixels exactly
  EXPECT_TRUE(q.layers[0].out_q.is_unsigned);
  EXPECT_FALSE(q.layers.back().out_q.is_unsigned);
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  int f_ok = 0, q_ok = 0;
  const int n = 500;
  for (int i = 0; i < n; ++i) {
    const auto x = pixels_to_float(test.image(i), 784);
    std::vector<int32_t> qi(784);
    q.quantize_pixels(test.image(i), qi.data());
    f_ok += argmax(float_forward(net, x.data())) == test.labels[size_t(i)];
    q_ok += argmax(int_forward(q, qi.data())) == test.labels[size_t(i)];
  }
  EXPECT_GT(f_ok, n * 85 / 100);
  EXPECT_NEAR(double(q_ok) / n, double(f_ok) / n, 0.02);
}

// A quantized model exported as QDQ or QLinear ONNX imports back into the same integer network.
TEST(Quantize, QdqAndQLinearModelsRoundTrip) {
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  for (int form = 0; form < 2; ++form) {
    SCOPED_TRACE(form == 0 ? "QDQ" : "QLinear");
    const std::string bytes = form == 0 ? export_qdq_onnx(q) : export_qlinear_onnx(q);
    const Network net = import_onnx_bytes(bytes, "exported.onnx");
    ASSERT_TRUE(fully_quantized(net));
    const QuantNetwork r = quantize_model(net, {});
    ASSERT_EQ(r.layers.size(), q.layers.size());
    EXPECT_EQ(r.input_q, q.input_q);
    for (size_t l = 0; l < q.layers.size(); ++l) {
      EXPECT_EQ(r.layers[l].weight, q.layers[l].weight) << l;
      EXPECT_EQ(r.layers[l].bias, q.layers[l].bias) << l;
      EXPECT_EQ(r.layers[l].mult, q.layers[l].mult) << l;
      EXPECT_EQ(r.layers[l].shift, q.layers[l].shift) << l;
      EXPECT_EQ(r.layers[l].out_q, q.layers[l].out_q) << l;
    }
    for (int i = 0; i < 20; ++i) {
      std::vector<int32_t> qi(784);
      q.quantize_pixels(test.image(i), qi.data());
      EXPECT_EQ(int_forward(r, qi.data()), int_forward(q, qi.data()));
    }
  }
}

// ---- compiled programs on the golden ISA model ------------------------------------------------

TEST(GoldenModel, FashionBitExactAtSeveralBatchSizes) {
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  std::vector<std::vector<int32_t>> images;
  for (int i = 0; i < 40; ++i) {
    images.emplace_back(784);
    q.quantize_pixels(test.image(i), images.back().data());
  }
  expect_bit_exact(q, images, 1);
  expect_bit_exact(q, images, 8);
  expect_bit_exact(q, images, 7, 3);  // several micro-batches per program
  expect_bit_exact(q, images, 40);
}

// The compiler reads the chip's parameters: other MXU sizes work unchanged.
TEST(GoldenModel, FashionOnOtherArraySizes) {
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  std::vector<std::vector<int32_t>> images;
  for (int i = 0; i < 6; ++i) {
    images.emplace_back(784);
    q.quantize_pixels(test.image(i), images.back().data());
  }
  for (uint32_t n : {4u, 8u, 32u}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    expect_bit_exact(q, images, 3, 0, n);
  }
}

TEST(GoldenModel, CifarConvNetBitExact) {
  const Network net = cifar_convnet(7);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 20, 8));
  const auto images = quantize_images(q, random_images(net.input, 4, 9));
  // Random logits are not degenerate.
  const auto o = int_forward(q, images[0].data());
  EXPECT_GT(*std::max_element(o.begin(), o.end()) - *std::min_element(o.begin(), o.end()), 10);
  expect_bit_exact(q, images, 1);
  expect_bit_exact(q, images, 4);
}

TEST(GoldenModel, ThreeConvNetBitExact) {
  const Network net = three_conv_net(11);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 20, 12));
  const auto images = quantize_images(q, random_images(net.input, 4, 13));
  expect_bit_exact(q, images, 2);
}

// Stride 2, asymmetric padding, Clip, preprocessing with a non-zero input zero point, an
// uneven channel count, a conv output layer and a first dense layer (MLP).
TEST(GoldenModel, UnusualGeometriesBitExact) {
  {
    OnnxGraph g("odd");
    g.input("input", {1, 3, 13, 11});
    g.init_float("mean", {1, 3, 1, 1}, {0.5f, 0.4f, 0.3f});
    g.node("Sub", {"input", "mean"}, {"x"});
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0, 0.3f);
    auto rnd = [&](size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = d(rng);
      return v;
    };
    g.init_float("w1", {20, 3, 5, 5}, rnd(20 * 75));
    g.init_float("b1", {20}, rnd(20));
    g.node("Conv", {"x", "w1", "b1"}, {"c1"},
           {OnnxAttr::Ints("strides", {2, 2}), OnnxAttr::Ints("pads", {2, 1, 1, 2})});
    g.init_float("lo", {}, {0.0f});
    g.init_float("hi", {}, {1.5f});
    g.node("Clip", {"c1", "lo", "hi"}, {"r1"});
    g.init_float("w2", {17, 20, 3, 2}, rnd(17 * 120));
    g.node("Conv", {"r1", "w2"}, {"c2"}, {OnnxAttr::Ints("pads", {1, 1, 1, 1})});
    g.node("MaxPool", {"c2"}, {"p2"},
           {OnnxAttr::Ints("kernel_shape", {3, 3}), OnnxAttr::Ints("strides", {2, 2})});
    g.init_float("w3", {9, 17, 1, 1}, rnd(9 * 17));
    g.node("Conv", {"p2", "w3"}, {"logits"});
    g.output("logits");
    const Network net = import_onnx_bytes(g.serialize(), "odd.onnx");
    const QuantNetwork q = quantize_model(net, random_images(net.input, 10, 2));
    EXPECT_FALSE(q.input_q.is_unsigned);  // preprocessing makes the input signed
    const auto images = quantize_images(q, random_images(net.input, 3, 3));
    expect_bit_exact(q, images, 3);
  }
  {
    OnnxGraph g("mlp");
    g.input("input", {1, 1, 28, 28});
    g.node("Flatten", {"input"}, {"f"});
    std::mt19937 rng(4);
    std::normal_distribution<float> d(0, 0.05f);
    std::vector<float> w1(784 * 40), w2(40 * 10);
    for (auto& x : w1) x = d(rng);
    for (auto& x : w2) x = d(rng) * 4;
    g.init_float("w1", {40, 784}, w1);
    g.node("Gemm", {"f", "w1"}, {"h"}, {OnnxAttr::Int("transB", 1)});
    g.node("Relu", {"h"}, {"r"});
    g.init_float("w2", {40, 10}, w2);
    g.node("MatMul", {"r", "w2"}, {"logits"});
    g.output("logits");
    const Network net = import_onnx_bytes(g.serialize(), "mlp.onnx");
    const QuantNetwork q = quantize_model(net, random_images(net.input, 10, 5));
    const auto images = quantize_images(q, random_images(net.input, 5, 6));
    expect_bit_exact(q, images, 5);
  }
}

// ---- layer of every instruction, reports (report.h) ---------------------------------------

// Program::instr_layer: one entry per instruction; the first micro-batch's layer l runs between
// layer_end[l - 1] and layer_end[l], and its matmuls and activates are attributed to l.
TEST(Compiler, EveryInstructionKnowsItsLayer) {
  const QuantNetwork q = fashion_quantized();
  const CompiledNetwork cn = compile_network(q, tpu::ChipParams::with_n(16));
  ProgramOptions exact;
  exact.max_micro_batch = 3;
  exact.overlap_layers = false;  // layer_end cuts exactly
  const Program p = emit_program(cn, 5, 0x1000'0000, 0x2000'0000, 0x3000'0000, exact);
  ASSERT_EQ(p.instr_layer.size(), p.instructions.size());
  ASSERT_EQ(p.layer_end.size(), q.layers.size());
  EXPECT_EQ(p.instr_layer.back(), -1);  // halt
  size_t begin = 0;
  for (size_t l = 0; l < q.layers.size(); ++l) {
    int work = 0;
    for (size_t i = begin; i < p.layer_end[l]; ++i) {
      const uint8_t op = tpu::opcode_byte(p.instructions[i]);
      if (op == uint8_t(tpu::Opcode::Matmul) || op == uint8_t(tpu::Opcode::Activate)) {
        EXPECT_EQ(p.instr_layer[i], int(l))
            << "instruction " << i << ": " << tpu::disassemble(p.instructions[i]);
        ++work;
      }
    }
    EXPECT_GT(work, 0) << "layer " << l;
    begin = p.layer_end[l];
  }
  for (int l : p.instr_layer) {
    EXPECT_GE(l, -1);
    EXPECT_LT(l, int(q.layers.size()));
  }
  // Overlapping layers moves activates, not their attribution: each layer keeps its work.
  ProgramOptions overlap = exact;
  overlap.overlap_layers = true;
  const Program o = emit_program(cn, 5, 0x1000'0000, 0x2000'0000, 0x3000'0000, overlap);
  auto work = [](const Program& prog) {
    std::map<int, std::pair<int, int>> w;
    for (size_t i = 0; i < prog.instructions.size(); ++i) {
      const uint8_t op = tpu::opcode_byte(prog.instructions[i]);
      if (op == uint8_t(tpu::Opcode::Matmul)) ++w[prog.instr_layer[i]].first;
      if (op == uint8_t(tpu::Opcode::Activate)) ++w[prog.instr_layer[i]].second;
    }
    return w;
  };
  EXPECT_EQ(work(o), work(p));
  EXPECT_EQ(o.instructions.size(), p.instructions.size());
}

// Per-layer cycles from a timeline: cut where a matmul of another layer starts; start-up to the
// first layer, the tail to the last; micro-batches add up; totals equal the run.
TEST(Profile, FromTimelineCutsAtTheFirstMatmulOfEachLayer) {
  const QuantNetwork q = fashion_quantized();
  using tpu::ExecUnit;
  auto ev = [](uint32_t pc, ExecUnit u, uint64_t start, uint64_t end) {
    tpu::InstrEvent e;
    e.pc = pc;
    e.unit = u;
    e.start = start;
    e.end = end;
    return e;
  };
  // pc:        0   1   2   3   4   5   6   7   8   9
  // layer:    -1   0   0   0   1   1   2   3   0   1   (then layers 2, 3 of micro-batch 2)
  const std::vector<int> layer = {-1, 0, 0, 0, 1, 1, 2, 3, 0, 1, 2, 3, -1};
  const std::vector<tpu::InstrEvent> events = {
      ev(0, ExecUnit::ReadHost, 0, 50),     ev(1, ExecUnit::Matmul, 50, 150),
      ev(2, ExecUnit::Activate, 150, 260),  ev(3, ExecUnit::Matmul, 150, 250),
      ev(4, ExecUnit::Matmul, 300, 400),    ev(5, ExecUnit::Activate, 420, 500),
      ev(6, ExecUnit::Matmul, 500, 520),    ev(7, ExecUnit::Matmul, 530, 540),
      ev(8, ExecUnit::Matmul, 600, 700),    ev(9, ExecUnit::Matmul, 710, 800),
      ev(10, ExecUnit::Matmul, 810, 820),   ev(11, ExecUnit::Matmul, 830, 840),
      ev(12, ExecUnit::WriteHost, 850, 870)};
  const auto p = profile_from_timeline(q, 16, 2, 900, events, layer);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].cycles, 300u + 110u);  // [0, 300) and [600, 710)
  EXPECT_EQ(p[1].cycles, 200u + 100u);  // [300, 500) and [710, 810)
  EXPECT_EQ(p[2].cycles, 30u + 20u);    // [500, 530) and [810, 830)
  EXPECT_EQ(p[3].cycles, 70u + 70u);    // [530, 600) and [830, 900)
  uint64_t sum = 0;
  for (const auto& l : p) {
    EXPECT_EQ(l.images, 2u);
    sum += l.cycles;
  }
  EXPECT_EQ(sum, 900u);
  EXPECT_DOUBLE_EQ(p[1].utilization, double(q.layers[1].macs()) * 2 / (300.0 * 256));
  // A matmul outside the program, or of no layer, is an error, not a silent misattribution.
  EXPECT_THROW(profile_from_timeline(q, 16, 2, 900, {ev(40, ExecUnit::Matmul, 0, 1)}, layer),
               Error);
  EXPECT_THROW(profile_from_timeline(q, 16, 2, 900, {ev(0, ExecUnit::Matmul, 0, 1)}, layer), Error);
}

Evaluation model_evaluation(bool profile) {
  const Network net = load_onnx(bundled_model());
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  EvalOptions o;
  o.count = 6;
  o.batch = 3;
  o.profile = profile;
  Evaluation e = evaluate(dev, net, q, test, o);
  e.model = "/some/dir/fashion_cnn.onnx";
  return e;
}

TEST(Report, EnergySvgHasEveryComponentAndLayerWithTheirValues) {
  const Evaluation e = model_evaluation(true);
  const std::string svg = energy_svg(e);
  ASSERT_NO_THROW(mini::check_xml(svg)) << svg;
  const tpu::Energy total = tpu::energy_of(e.actions, e.memories, e.energy_table);
  ASSERT_GT(total.total_pj(), 0);
  for (const auto& [name, pj] : total.components) {
    const std::string group = "<g class=\"layer\" data-layer=\"" + name + "\">";
    ASSERT_NE(svg.find(group), std::string::npos) << group;
    char value[64];
    std::snprintf(value, sizeof value, ": %.3g</title>", pj / e.images / 1e6);
    EXPECT_NE(svg.find(name + ", energy per image" + value), std::string::npos) << name << value;
  }
  for (const auto& l : e.layer_names)
    EXPECT_NE(svg.find("data-layer=\"" + l + "\""), std::string::npos) << l;
  EXPECT_NE(svg.find("table horowitz_45nm"), std::string::npos);
}

// The one XML escaper (driver/xml_text.h) of the reports and tpusim's SVG plots: the five
// entities, control characters XML forbids dropped, UTF-8 kept; the result parses as XML.
TEST(Report, XmlEscapeGivesWellFormedText) {
  const std::string raw = "a<b & c>\"d\" 'e'\x01\x1f\tf\n\xc3\xa9";
  const std::string e = tpu::xml_escape(raw);
  EXPECT_EQ(e, "a&lt;b &amp; c&gt;&quot;d&quot; &apos;e&apos;\tf\n\xc3\xa9");
  EXPECT_EQ(mini::check_xml("<t a=\"" + e + "\">" + e + "</t>").at("t"), 1);
}

TEST(Report, UtilizationSvgIsWellFormedWithOneBarGroupPerLayer) {
  const Evaluation e = model_evaluation(true);
  ASSERT_EQ(e.layers.size(), 4u);
  const std::string svg = utilization_svg(e);
  std::map<std::string, int> elements;
  ASSERT_NO_THROW(elements = mini::check_xml(svg)) << svg;
  EXPECT_EQ(elements["svg"], 1);
  size_t groups = 0;
  for (size_t at = svg.find("<g class=\"layer\""); at != std::string::npos;
       at = svg.find("<g class=\"layer\"", at + 1))
    ++groups;
  EXPECT_EQ(groups, 2 * e.layers.size());  // cycles panel and utilization panel
  for (const auto& l : e.layers) {
    const std::string group = "<g class=\"layer\" data-layer=\"" + l.name + "\">";
    ASSERT_NE(svg.find(group), std::string::npos) << group;
    // Three bars in the cycles panel: measured, SCALE-Sim, ideal (with their values as tooltips).
    const size_t body = svg.find(group), end = svg.find("</g>", body);
    size_t bars = 0;
    for (size_t at = svg.find("<rect", body); at < end; at = svg.find("<rect", at + 1)) ++bars;
    EXPECT_EQ(bars, 3u) << l.name;
  }
  EXPECT_NE(svg.find("fashion_cnn.onnx on tpu-rtl: N = 16, batch 3"), std::string::npos);
  EXPECT_NE(svg.find("cycles estimated"), std::string::npos);  // the model backend
  EXPECT_NE(svg.find("SCALE-Sim WS estimate"), std::string::npos);
  EXPECT_NE(report_html(e).find("<img src=\"utilization.svg\""), std::string::npos);
  EXPECT_NE(report_html(e).find("<img src=\"energy.svg\""), std::string::npos);

  EXPECT_NE(error_of([] { utilization_svg(model_evaluation(false)); }).find("no per-layer profile"),
            std::string::npos);
}

// The timeline JSON of a hand-made run: three matmuls in flight at once, a serial unit, a sync.
TEST(Report, TimelineJsonHasOneCompleteEventPerInstruction) {
  using tpu::ExecUnit;
  using tpu::InstrEvent;
  Evaluation e;
  e.model = "net.onnx";
  e.backend = "rtl";
  e.chip_n = 16;
  e.batch = e.micro_batch = 2;
  RunTimeline& t = e.timeline;
  tpu::Matmul mm;
  mm.outer = 30;
  mm.switch_weights = true;
  t.program = {tpu::ReadWeights{3, 0x8000'0000},
               mm,
               mm,
               mm,
               tpu::Sync{},
               tpu::Activate{tpu::ActFunc::Relu, false, 0, 100, 30, 1, 1, 1, 0, 0},
               tpu::Halt{}};
  t.instr_layer = {0, 0, 0, 1, -1, 1, -1};
  t.layer_names = {"/conv1/Conv", "/fc \"x\""};
  t.cycles = 2500;
  t.images = 2;
  auto ev = [](uint32_t pc, ExecUnit u, tpu::Opcode op, uint64_t s, uint64_t en) {
    InstrEvent x;
    x.pc = pc;
    x.unit = u;
    x.opcode = op;
    x.start = s;
    x.end = en;
    return x;
  };
  t.events = {ev(0, ExecUnit::ReadWeights, tpu::Opcode::ReadWeights, 17, 1200),
              ev(1, ExecUnit::Matmul, tpu::Opcode::Matmul, 20, 1300),
              ev(2, ExecUnit::Matmul, tpu::Opcode::Matmul, 50, 1330),
              ev(3, ExecUnit::Matmul, tpu::Opcode::Matmul, 80, 1360),
              ev(4, ExecUnit::Control, tpu::Opcode::Sync, 1360, 1360),
              ev(5, ExecUnit::Activate, tpu::Opcode::Activate, 1361, 2499)};
  const std::string text = timeline_json(e);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
  EXPECT_EQ(j.at("displayTimeUnit").get<std::string>(), "ns");
  EXPECT_EQ(j.at("otherData").at("events").get<double>(), 6);
  EXPECT_EQ(j.at("otherData").at("cycles").get<double>(), 2500);
  std::map<double, std::string> track;  // tid -> thread_name
  std::map<double, std::vector<std::pair<uint64_t, uint64_t>>>
      slices;  // tid -> [start, end) in cycles
  int complete = 0;
  for (const nlohmann::json& x : j.at("traceEvents")) {
    const std::string ph = x.at("ph").get<std::string>();
    if (ph == "M" && x.at("name").get<std::string>() == "thread_name")
      track[x.at("tid").get<double>()] = x.at("args").at("name").get<std::string>();
    if (ph != "X") continue;
    ++complete;
    const auto& a = x.at("args");
    const size_t pc = size_t(a.at("pc").get<double>());
    ASSERT_LT(pc, t.events.size());
    const InstrEvent& want = t.events[pc];
    // ts and dur: microseconds at 1 ns per cycle, written exactly.
    // The event's line of the text (one event per line) holds ts as written.
    const size_t at = text.find("\"args\":{\"pc\":" + std::to_string(pc) + ",");
    ASSERT_NE(at, std::string::npos) << pc;
    const size_t line = text.rfind('\n', at) + 1;
    EXPECT_NE(text.substr(line, at - line)
                  .find(",\"ts\":" + std::to_string(want.start / 1000) + "." +
                        std::string(3 - std::to_string(want.start % 1000).size(), '0') +
                        std::to_string(want.start % 1000) + ","),
              std::string::npos)
        << text.substr(line, at - line);
    EXPECT_EQ(uint64_t(std::llround(x.at("ts").get<double>() * 1000)), want.start);
    EXPECT_EQ(uint64_t(std::llround(x.at("dur").get<double>() * 1000)), want.end - want.start);
    EXPECT_EQ(a.at("start_cycle").get<double>(), double(want.start));
    EXPECT_EQ(a.at("end_cycle").get<double>(), double(want.end));
    std::string dis = tpu::disassemble(t.program[pc]);
    dis.erase(
        std::unique(dis.begin(), dis.end(), [](char p, char q) { return p == ' ' && q == ' '; }),
        dis.end());
    EXPECT_EQ(a.at("instruction").get<std::string>(), dis);
    const int l = t.instr_layer[pc];
    EXPECT_EQ(a.at("layer").get<std::string>(), l >= 0 ? t.layer_names[size_t(l)] : "(no layer)");
    EXPECT_EQ(x.at("cat").get<std::string>(), std::string(tpu::mnemonic(want.opcode)));
    slices[x.at("tid").get<double>()].push_back({want.start, want.end});
  }
  EXPECT_EQ(complete, 6);
  // Every track is named after its unit; slices on one track never overlap.
  for (auto& [tid, v] : slices) {
    ASSERT_TRUE(track.count(tid)) << "tid " << tid << " has no thread_name";
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i].first, v[i - 1].second) << track[tid];
  }
  std::set<std::string> names;
  for (const auto& [tid, name] : track) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"read_weights", "matmul", "matmul 2", "matmul 3",
                                          "control", "activate"}));

  Evaluation none;
  EXPECT_NE(error_of([&] { timeline_json(none); }).find("no instruction timeline"),
            std::string::npos);
}

// The model backend has no timing: asking for a timeline is a clear error.
TEST(Report, ModelBackendHasNoTimeline) {
  const Network net = load_onnx(bundled_model());
  const QuantNetwork q = fashion_quantized();
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  EvalOptions o;
  o.count = 2;
  o.profile = false;
  o.timeline = true;
  try {
    evaluate(dev, net, q, test, o);
    FAIL() << "no error";
  } catch (const tpu::DeviceError& err) {
    EXPECT_NE(std::string(err.what()).find("no instruction timeline"), std::string::npos)
        << err.what();
  }
}

}  // namespace

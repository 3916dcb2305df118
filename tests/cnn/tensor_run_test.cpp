// SPDX-License-Identifier: Apache-2.0
// A model on tensors (driver/cnn/tensor_run.h) on the golden ISA model: the graph signature,
// input checks and their messages, batches, dequantized outputs against the integer reference,
// the comparison rule, and ONNX's test layout.
#include "tensor_run.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "cnn_models.h"
#include "cnn_test_util.h"
#include "device_model.h"
#include "reference.h"
#include "temp_dir.h"

namespace {

using namespace cnn_test;

// `count` Fashion-MNIST test images from `first` as one float32 [count, 1, 28, 28] tensor.
Tensor fashion_tensor(int first, int count) {
  const ImageSet test = load_fashion_mnist(fashion_mnist_dir(), false);
  std::vector<float> v;
  for (int i = first; i < first + count; ++i) {
    const auto x = pixels_to_float(test.image(i), 28 * 28);
    v.insert(v.end(), x.begin(), x.end());
  }
  return Tensor::from_float({count, 1, 28, 28}, v);
}

TEST(TensorRun, Signature) {
  const GraphSignature sig = read_graph_signature(bundled_model());
  ASSERT_EQ(sig.inputs.size(), 1u);
  ASSERT_EQ(sig.outputs.size(), 1u);
  const TensorModel m(bundled_model());
  EXPECT_EQ(sig.inputs[0].name, m.network().input_name);
  EXPECT_EQ(sig.inputs[0].type_str(), "float32");
  ASSERT_EQ(sig.inputs[0].dims.size(), 4u);
  EXPECT_EQ(sig.inputs[0].dims[1], 1);
  EXPECT_EQ(sig.inputs[0].dims[2], 28);
  EXPECT_EQ(sig.outputs[0].name, m.network().output_name);
  EXPECT_TRUE(m.needs_calibration());
}

TEST(TensorRun, InputChecks) {
  const TensorModel m(bundled_model());
  const std::string in = m.input_spec().name;
  const std::string want = m.input_spec().describe();
  // Wrong dtype: float64.
  Tensor t = Tensor::from_int(DType::Float64, {2, 1, 28, 28}, std::vector<int64_t>(2 * 784, 0));
  std::string e = error_of([&] { m.images(t, "--input x.npy"); });
  EXPECT_NE(e.find("--input x.npy: input '" + in +
                   "' is float32, but the tensor is float64 [2, 1, 28, 28]; expected " + want),
            std::string::npos)
      << e;
  // Wrong rank and wrong image size.
  e = error_of([&] {
    m.images(Tensor::from_float({2, 28, 28}, std::vector<float>(2 * 784)), "f");
  });
  EXPECT_NE(e.find("f: input '" + in + "' has shape " + m.input_spec().shape_str() +
                   ", but the tensor is float32 [2, 28, 28]; expected " + want),
            std::string::npos)
      << e;
  e = error_of([&] {
    m.images(Tensor::from_float({1, 1, 28, 27}, std::vector<float>(28 * 27)), "f");
  });
  EXPECT_NE(e.find("but the tensor is float32 [1, 1, 28, 27]"), std::string::npos) << e;
  // Unknown and missing names.
  e = error_of([&] { m.images(std::map<std::string, Tensor>{{"pixels", fashion_tensor(0, 1)}}); });
  EXPECT_NE(e.find("input 'pixels': the model " + bundled_model() +
                   " has no such input; its inputs: '" + in + "'"),
            std::string::npos)
      << e;
  e = error_of([&] { m.images(std::map<std::string, Tensor>{}); });
  EXPECT_NE(e.find("input '" + in + "' (" + want + ") of " + bundled_model() + " is not given"),
            std::string::npos)
      << e;
  // Any batch in the first dimension.
  EXPECT_EQ(m.images(fashion_tensor(0, 5), "f").size(), 5u);
}

// The run's outputs are the integer reference's, dequantized, in a [B, 10] float32 tensor; the
// batch is split into runs of --batch images.
TEST(TensorRun, OutputsAreTheDequantizedReference) {
  TensorModel m(bundled_model());
  const Tensor in = fashion_tensor(10, 7);
  const auto images = m.images(in, "in");
  const std::string how = m.quantize(images);
  EXPECT_EQ(how, "post-training int8, calibrated on 7 images");
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const TensorModel::Run r = m.run(dev, images, 3, 4.0);
  EXPECT_EQ(r.runs, 3u);
  EXPECT_EQ(r.images, 7);
  EXPECT_TRUE(r.matches_reference());
  ASSERT_EQ(r.outputs.size(), 1u);
  const Tensor& out = r.outputs[0];
  EXPECT_EQ(out.name, m.network().output_name);
  EXPECT_EQ(out.describe(), "float32 [7, 10]");
  // The reference: quantize with the same calibration via the pipeline's calls, int_forward.
  const Network net = load_onnx(bundled_model());
  const QuantNetwork q = quantize_model(net, images);
  const auto& oq = q.output_q();
  for (int i = 0; i < 7; ++i) {
    std::vector<int32_t> qi(784);
    q.quantize_input(images[size_t(i)].data(), qi.data());
    const auto ref = int_forward(q, qi.data());
    for (int c = 0; c < 10; ++c)
      EXPECT_EQ(out.value(i * 10 + c),
                double(float(double(oq.scale) * (ref[size_t(c)] - oq.zero_point))))
          << i << " " << c;
  }
  EXPECT_DOUBLE_EQ(r.tolerances[0], 4.0 * double(oq.scale));
  EXPECT_GT(r.cycles, 0u);
  EXPECT_GT(r.mxu_utilization, 0.0);
}

// The tolerance rule against the float model: the chip's dequantized outputs stay within
// 4 output quantization steps of the float reference when calibrated on the images themselves.
TEST(TensorRun, FloatModelWithinTolerance) {
  TensorModel m(bundled_model());
  const auto images = m.images(fashion_tensor(0, 64), "in");
  m.quantize(images);
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const TensorModel::Run r = m.run(dev, images, 16, 4.0);
  std::vector<float> expect;
  for (const auto& x : images) {
    const auto y = float_forward(m.network(), x.data());
    expect.insert(expect.end(), y.begin(), y.end());
  }
  const OutputCheck c =
      compare_tensors(r.outputs[0], Tensor::from_float({64, 10}, expect), r.tolerances[0]);
  std::printf("float model vs chip: max abs error %.4g = %.2f output steps (tolerance 4 steps)\n",
              c.max_abs_error, c.max_abs_error / m.quantized().output_q().scale);
  EXPECT_TRUE(c.pass) << c.detail << " max " << c.max_abs_error << " ("
                      << c.max_abs_error / m.quantized().output_q().scale << " steps)";
  EXPECT_GT(c.max_abs_error, 0.0);
}

// A model whose graph output is the quantized tensor itself (uint8 from QLinearConv): the
// output tensor holds the chip's integers, equal to the integer reference and to a plain
// double-precision evaluation of the convolution within one rounding step.
TEST(TensorRun, IntegerOutput) {
  const std::vector<int8_t> w = {12, -7, 3, 0, 25, -30, 8, 1, -2, -5, 9, 14, -11, 6, 0, 4, -8, 20};
  const std::vector<int32_t> bias = {100, -250};
  const float x_scale = 1.0f / 255, w_scale = 0.05f, y_scale = 0.02f;
  const uint8_t y_zp = 128;
  OnnxGraph g("int_out");
  g.input("x", {1, 1, 6, 6});
  g.init_float("x_scale", {}, {x_scale});
  g.init_uint8("x_zp", {}, {0});
  g.init_int8("w", {2, 1, 3, 3}, w);
  g.init_float("w_scale", {}, {w_scale});
  g.init_int8("w_zp", {}, {0});
  g.init_float("y_scale", {}, {y_scale});
  g.init_uint8("y_zp", {}, {y_zp});
  g.init_int32("b", {2}, bias);
  g.node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"xq"}, {}, "quant");
  g.node("QLinearConv", {"xq", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "b"},
         {"y"}, {}, "conv");
  g.output("y", {1, 2, 4, 4});
  onnx::ModelProto mp;
  ASSERT_TRUE(mp.ParseFromString(g.serialize()));
  mp.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::UINT8);
  const std::string path = test_support::temp_dir() + "/int_out.onnx";
  std::ofstream(path, std::ios::binary) << mp.SerializeAsString();

  TensorModel m(path);
  EXPECT_FALSE(m.needs_calibration());
  EXPECT_EQ(m.quantize({}), "quantized in the model file");
  std::vector<float> px;
  for (int i = 0; i < 2 * 36; ++i) px.push_back(float((i * 37) % 256) / 255.0f);
  const auto images = m.images(Tensor::from_float({2, 1, 6, 6}, px), "x");
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const TensorModel::Run r = m.run(dev, images, 2, 4.0);
  EXPECT_TRUE(r.matches_reference());
  const Tensor& y = r.outputs[0];
  EXPECT_EQ(y.describe(), "uint8 [2, 2, 4, 4]");
  EXPECT_EQ(r.tolerances[0], 0.0);
  for (int b = 0; b < 2; ++b)
    for (int oc = 0; oc < 2; ++oc)
      for (int oy = 0; oy < 4; ++oy)
        for (int ox = 0; ox < 4; ++ox) {
          double acc = bias[size_t(oc)];
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx)
              acc += double((b * 36 + (oy + ky) * 6 + ox + kx) * 37 % 256) *
                     w[size_t(oc * 9 + ky * 3 + kx)];
          const double v =
              std::min(255.0, std::max(0.0, std::round(acc * x_scale * w_scale / y_scale) + y_zp));
          EXPECT_NEAR(y.value(((b * 2 + oc) * 4 + oy) * 4 + ox), v, 1.0)
              << b << " " << oc << " " << oy << " " << ox;
        }
  // Integers compare exactly.
  Tensor off = y;
  off.data[5] = uint8_t(off.data[5] + 1);
  EXPECT_TRUE(compare_tensors(y, y, 0.0).pass);
  EXPECT_FALSE(compare_tensors(y, off, 100.0).pass);
}

// Saves graph g with its input declared uint8 and its output int32 (MatMulInteger and
// ConvInteger models); returns the path.
std::string uint8_in_int32_out(OnnxGraph& g, const std::string& name) {
  onnx::ModelProto mp;
  EXPECT_TRUE(mp.ParseFromString(g.serialize()));
  mp.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::UINT8);
  mp.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT32);
  const std::string path = test_support::temp_dir() + "/" + name + ".onnx";
  std::ofstream(path, std::ios::binary) << mp.SerializeAsString();
  return path;
}

// ConvInteger and MatMulInteger: int32 outputs straight from the accumulators (activate raw),
// equal to a direct computation of (x - x_zp) * (w - w_zp) summed, with zero padding.
TEST(TensorRun, IntegerOpsGiveExactInt32) {
  std::vector<int8_t> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = int8_t(int(i * 53 % 200) - 100);
  const int x_zp = 7, w_zp = -3;
  OnnxGraph g("conv_integer");
  g.input("x", {1, 2, 5, 6});
  g.init_uint8("x_zp", {}, {uint8_t(x_zp)});
  g.init_int8("w", {3, 2, 3, 3}, w);
  g.init_int8("w_zp", {}, {int8_t(w_zp)});
  g.node("ConvInteger", {"x", "w", "x_zp", "w_zp"}, {"y"},
         {OnnxAttr::Ints("pads", {1, 1, 1, 1}), OnnxAttr::Ints("strides", {1, 2})}, "conv");
  g.output("y", {1, 3, 5, 3});
  TensorModel m(uint8_in_int32_out(g, "conv_integer"));
  EXPECT_EQ(m.quantize({}), "quantized in the model file");
  std::vector<int64_t> px;
  for (int i = 0; i < 2 * 60; ++i) px.push_back((i * 97 + 11) % 256);
  const auto images = m.images(Tensor::from_int(DType::UInt8, {2, 2, 5, 6}, px), "x");
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const TensorModel::Run r = m.run(dev, images, 2, 1.0);
  EXPECT_TRUE(r.matches_reference());
  const Tensor& y = r.outputs[0];
  ASSERT_EQ(y.describe(), "int32 [2, 3, 5, 3]");
  EXPECT_EQ(r.tolerances[0], 0.0);
  for (int b = 0; b < 2; ++b)
    for (int oc = 0; oc < 3; ++oc)
      for (int oy = 0; oy < 5; ++oy)
        for (int ox = 0; ox < 3; ++ox) {
          int64_t acc = 0;
          for (int ic = 0; ic < 2; ++ic)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int iy = oy + ky - 1, ix = ox * 2 + kx - 1;
                if (iy < 0 || iy >= 5 || ix < 0 || ix >= 6) continue;  // (x_zp - x_zp) * w
                acc += (px[size_t(((b * 2 + ic) * 5 + iy) * 6 + ix)] - x_zp) *
                       (w[size_t(((oc * 2 + ic) * 3 + ky) * 3 + kx)] - w_zp);
              }
          EXPECT_EQ(y.value(((b * 3 + oc) * 5 + oy) * 3 + ox), double(acc))
              << b << " " << oc << " " << oy << " " << ox;
        }

  // MatMulInteger: a per-tensor zero point on A, one per column on B; 40 features, 20 outputs
  // (more than N = 16: two output blocks), products large enough to need all 32 bits' care.
  const int k = 40, cols = 20, a_zp = 200;
  std::vector<uint8_t> bm(static_cast<size_t>(k * cols)), b_zp(static_cast<size_t>(cols));
  // b - b_zp must fit int8 (the MXU's weights): b_zp 127..129, b - b_zp in -127..126.
  for (int c = 0; c < cols; ++c) b_zp[size_t(c)] = uint8_t(127 + c % 3);
  for (int i = 0; i < k; ++i)
    for (int c = 0; c < cols; ++c)
      bm[size_t(i * cols + c)] = uint8_t(b_zp[size_t(c)] - 127 + (i * 31 + c * 7) % 254);
  OnnxGraph h("matmul_integer");
  h.input("a", {1, k});
  h.init_uint8("b", {k, cols}, bm);
  h.init_uint8("a_zp", {}, {uint8_t(a_zp)});
  h.init_uint8("b_zp", {cols}, b_zp);
  h.node("MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"y"}, {}, "mm");
  h.output("y", {1, cols});
  TensorModel mm(uint8_in_int32_out(h, "matmul_integer"));
  mm.quantize({});
  std::vector<int64_t> av;
  for (int i = 0; i < 3 * k; ++i) av.push_back((i * 41 + 5) % 256);
  const TensorModel::Run rm =
      mm.run(dev, mm.images(Tensor::from_int(DType::UInt8, {3, k}, av), "a"), 3, 1.0);
  EXPECT_TRUE(rm.matches_reference());
  ASSERT_EQ(rm.outputs[0].describe(), "int32 [3, 20]");
  for (int b = 0; b < 3; ++b)
    for (int c = 0; c < cols; ++c) {
      int64_t acc = 0;
      for (int i = 0; i < k; ++i)
        acc += (av[size_t(b * k + i)] - a_zp) * (int(bm[size_t(i * cols + c)]) - b_zp[size_t(c)]);
      EXPECT_EQ(rm.outputs[0].value(b * cols + c), double(acc)) << b << " " << c;
    }
}

// Weights whose value minus zero point leaves int8 (uint8 weights with a zero point) run as
// two or three int8 planes over the input read again: exact int32 results all the same.
TEST(TensorRun, WeightsOutsideInt8RunAsPlanes) {
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  // ConvInteger, uint8 weights 0..255 with zero point 3: w - zp in -3 .. 252 (two planes).
  std::vector<uint8_t> w(4 * 3 * 2 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t(i * 89 % 256);
  w[7] = 255;
  const int x_zp = 100, w_zp = 3;
  OnnxGraph g("conv_planes");
  g.input("x", {1, 3, 4, 4});
  g.init_uint8("w", {4, 3, 2, 2}, w);
  g.init_uint8("x_zp", {}, {uint8_t(x_zp)});
  g.init_uint8("w_zp", {}, {uint8_t(w_zp)});
  g.node("ConvInteger", {"x", "w", "x_zp", "w_zp"}, {"y"}, {}, "conv");
  g.output("y", {1, 4, 3, 3});
  TensorModel m(uint8_in_int32_out(g, "conv_planes"));
  m.quantize({});
  EXPECT_EQ(m.network().layers[0].in.c, 6);  // the input read twice
  std::vector<int64_t> px;
  for (int i = 0; i < 48; ++i) px.push_back((i * 71 + 3) % 256);
  const TensorModel::Run r =
      m.run(dev, m.images(Tensor::from_int(DType::UInt8, {1, 3, 4, 4}, px), "x"), 1, 1.0);
  EXPECT_TRUE(r.matches_reference());
  for (int oc = 0; oc < 4; ++oc)
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 3; ++ox) {
        int64_t acc = 0;
        for (int ic = 0; ic < 3; ++ic)
          for (int ky = 0; ky < 2; ++ky)
            for (int kx = 0; kx < 2; ++kx)
              acc += (px[size_t((ic * 4 + oy + ky) * 4 + ox + kx)] - x_zp) *
                     (int(w[size_t(((oc * 3 + ic) * 2 + ky) * 2 + kx)]) - w_zp);
        EXPECT_EQ(r.outputs[0].value((oc * 3 + oy) * 3 + ox), double(acc)) << oc << oy << ox;
      }
  // MatMulInteger, weights up to 255 with zero point 0 and down to -200 with one of 200 (per
  // column): three planes.
  const int k = 6, cols = 2;
  const std::vector<uint8_t> b = {255, 0, 254, 1, 128, 55, 7, 200, 0, 199, 33, 100};
  const std::vector<uint8_t> b_zp = {0, 200};
  OnnxGraph h("matmul_planes");
  h.input("a", {1, k});
  h.init_uint8("b", {k, cols}, b);
  h.init_uint8("b_zp", {cols}, b_zp);
  h.node("MatMulInteger", {"a", "b", "", "b_zp"}, {"y"}, {}, "mm");
  h.output("y", {1, cols});
  TensorModel mm(uint8_in_int32_out(h, "matmul_planes"));
  mm.quantize({});
  EXPECT_EQ(mm.network().layers[0].in.size(), 3 * k);
  const std::vector<int64_t> a = {255, 0, 17, 128, 254, 1, 3, 250, 99, 0, 255, 42};
  const TensorModel::Run rm =
      mm.run(dev, mm.images(Tensor::from_int(DType::UInt8, {2, k}, a), "a"), 2, 1.0);
  EXPECT_TRUE(rm.matches_reference());
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < cols; ++c) {
      int64_t acc = 0;
      for (int j = 0; j < k; ++j)
        acc += a[size_t(i * k + j)] * (int(b[size_t(j * cols + c)]) - b_zp[size_t(c)]);
      EXPECT_EQ(rm.outputs[0].value(i * cols + c), double(acc)) << i << " " << c;
    }
}

// A model ending in Softmax / LogSoftmax (run by the host on the dequantized logits): the
// output is that function of the integer reference's logits, and within the tolerance of the
// float model's.
TEST(TensorRun, HostSoftmax) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.0f, 0.3f);
    std::vector<float> w(5 * 16), b(5);
    for (auto& v : w) v = d(rng);
    for (auto& v : b) v = d(rng);
    OnnxGraph g("softmax");
    g.input("x", {1, 1, 4, 4});
    g.init_float("w", {5, 16}, w);
    g.init_float("b", {5}, b);
    g.node("Flatten", {"x"}, {"f"}, {OnnxAttr::Int("axis", 1)}, "flatten");
    g.node("Gemm", {"f", "w", "b"}, {"z"}, {OnnxAttr::Int("transB", 1)}, "fc");
    g.node(op, {"z"}, {"p"}, {OnnxAttr::Int("axis", 1)}, "sm");
    g.output("p", {1, 5});
    const std::string path = test_support::temp_dir() + "/host_" + op + ".onnx";
    g.save(path);
    TensorModel m(path);
    std::vector<float> px;
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int i = 0; i < 8 * 16; ++i) px.push_back(u(rng));
    const auto images = m.images(Tensor::from_float({8, 1, 4, 4}, px), "x");
    m.quantize(images);
    EXPECT_EQ(m.quantized().host_softmax, op);
    tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
    const TensorModel::Run r = m.run(dev, images, 8, 4.0);
    EXPECT_TRUE(r.matches_reference());
    const auto& q = m.quantized();
    const double step = q.output_q().scale;
    EXPECT_DOUBLE_EQ(r.tolerances[0], std::string(op) == "Softmax" ? 2.0 * step : 8.0 * step);
    std::vector<float> expect_float;
    for (int i = 0; i < 8; ++i) {
      std::vector<int32_t> qi(16);
      q.quantize_input(images[size_t(i)].data(), qi.data());
      const auto y = int_forward(q, qi.data());
      // Softmax / LogSoftmax of the dequantized logits, written out here.
      std::vector<double> z;
      for (int32_t v : y) z.push_back(double(q.output_q().scale) * (v - q.output_q().zero_point));
      double sum = 0;
      for (double v : z) sum += std::exp(v);
      for (int c = 0; c < 5; ++c) {
        const double want = std::string(op) == "Softmax" ? std::exp(z[size_t(c)]) / sum
                                                         : z[size_t(c)] - std::log(sum);
        EXPECT_NEAR(r.outputs[0].value(i * 5 + c), want, 1e-6) << op << " " << i << " " << c;
      }
      const auto f = float_forward(m.network(), images[size_t(i)].data());
      double fs = 0;
      for (float v : f) fs += std::exp(double(v));
      for (float v : f)
        expect_float.push_back(
            float(std::string(op) == "Softmax" ? std::exp(double(v)) / fs : v - std::log(fs)));
    }
    if (std::string(op) == "Softmax") {
      double s0 = 0;
      for (int c = 0; c < 5; ++c) s0 += r.outputs[0].value(c);
      EXPECT_NEAR(s0, 1.0, 1e-6);
    }
    const OutputCheck c =
        compare_tensors(r.outputs[0], Tensor::from_float({8, 5}, expect_float), r.tolerances[0]);
    EXPECT_TRUE(c.pass) << op << ": " << c.detail;
  }
}

// The default tolerance, one output step per rounding on the longest path (the input's and each
// quantized layer's), holds for the bundled branching models against their float models
// (calibrated on the images themselves).
TEST(TensorRun, BundledModelsWithinDepthSteps) {
  TensorModel fashion(bundled_model());
  EXPECT_EQ(fashion.depth(), int(fashion.network().layers.size()));  // a chain: every layer
  for (const char* name : {"resnet", "mobilenet", "squeezenet"}) {
    const std::string path = std::string(TPU_CNN_SOURCE_DIR) + "/models/" + name + ".onnx";
    TensorModel m(path);
    EXPECT_GT(m.depth(), 1) << name;
    EXPECT_LT(m.depth(), int(m.network().layers.size()) + 1) << name;
    const auto images = m.images(fashion_tensor(200, 24), "in");
    m.quantize(images);
    tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
    const TensorModel::Run r = m.run(dev, images, 24, m.default_tolerance_steps());
    EXPECT_TRUE(r.matches_reference()) << name;
    std::vector<float> expect;
    for (const auto& x : images) {
      const auto y = float_forward(m.network(), x.data());
      expect.insert(expect.end(), y.begin(), y.end());
    }
    const OutputCheck c =
        compare_tensors(r.outputs[0], Tensor::from_float({24, 10}, expect), r.tolerances[0]);
    EXPECT_TRUE(c.pass) << name << ": " << c.detail;
    std::printf("%s: depth %d, max abs error %.4g = %.2f output steps\n", name, m.depth(),
                c.max_abs_error, c.max_abs_error / m.quantized().output_q().scale);
  }
}

TEST(TensorRun, CompareRule) {
  const Tensor a = Tensor::from_float({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}, "y");
  OutputCheck c = compare_tensors(a, Tensor::from_float({2, 2}, {1.0f, 2.25f, 3.0f, 4.0f}), 0.25);
  EXPECT_TRUE(c.pass);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.25);
  c = compare_tensors(a, Tensor::from_float({2, 2}, {1.0f, 2.0f, 3.0f, 4.5f}), 0.25);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_NE(
      c.detail.find("1 of 4 values differ; first at [1, 1]: got 4, expected 4.5 (tolerance 0.25)"),
      std::string::npos)
      << c.detail;
  c = compare_tensors(a, Tensor::from_float({4}, {1, 2, 3, 4}), 1.0);
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.detail.find("shape [2, 2] differs from the expected [4]"), std::string::npos)
      << c.detail;
  c = compare_tensors(a, Tensor::from_float({2, 2}, {1.0f, NAN, 3.0f, 4.0f}), 1.0);
  EXPECT_FALSE(c.pass);
  // Integers: exact, whatever the tolerance.
  const Tensor i = Tensor::from_int(DType::Int8, {3}, {-5, 0, 7});
  EXPECT_TRUE(compare_tensors(i, Tensor::from_int(DType::Int32, {3}, {-5, 0, 7}), 9.0).pass);
  c = compare_tensors(i, Tensor::from_int(DType::Int8, {3}, {-5, 1, 7}), 9.0);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.tolerance, 0.0);
}

TEST(TensorRun, TestLayout) {
  namespace fs = std::filesystem;
  const std::string dir = test_support::temp_dir() + "/tensor_run_layout";
  fs::remove_all(dir);
  for (int s : {0, 1, 10}) {
    const std::string d = dir + "/test_data_set_" + std::to_string(s);
    fs::create_directories(d);
    Tensor in = fashion_tensor(s, 1);
    in.name = s == 1 ? "" : "input";
    save_tensor(d + "/input_0.pb", in);
    save_tensor(d + "/output_0.pb", Tensor::from_float({1, 2}, {float(s), 0}, "out"));
  }
  fs::create_directories(dir + "/not_a_set");
  const auto sets = read_test_data_sets(dir);
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(fs::path(sets[2].dir).filename(), "test_data_set_10");  // numeric order
  EXPECT_EQ(sets[2].outputs[0].value(0), 10.0);
  GraphSignature sig;
  sig.inputs.push_back(TensorSpec{});
  sig.inputs[0].name = "image";
  // By position when the TensorProto's name is not a graph input.
  std::map<std::string, std::string> sources;
  const auto named = name_inputs(sig, sets[1].inputs, sets[1].dir, &sources);
  ASSERT_EQ(named.count("image"), 1u);
  EXPECT_EQ(sources["image"], sets[1].dir + "/input_0.pb");
  EXPECT_NE(error_of([&] {
              name_inputs(sig, {sets[0].inputs[0], sets[1].inputs[0]}, "d");
            }).find("input_1.pb"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_test_data_sets(dir + "/not_a_set");
            }).find("no test_data_set_N directories"),
            std::string::npos);
}

TEST(TensorRun, FileNames) {
  EXPECT_EQ(tensor_file_name("/fc2/Gemm_output_0", ".npy"), "_fc2_Gemm_output_0.npy");
  EXPECT_EQ(tensor_file_name("logits", ".pb"), "logits.pb");
  EXPECT_EQ(tensor_file_name("..", ".npy"), "_.npy");
}

}  // namespace

namespace {
// Graph inputs that are parameters (as ONNX node tests give them): a Gemm whose weights and bias
// are graph inputs.
std::string gemm_with_parameter_inputs() {
  OnnxGraph g("params");
  g.input("x", {1, 4});
  g.input("w", {3, 4});
  g.input("b", {3});
  g.node("Gemm", {"x", "w", "b"}, {"y"}, {OnnxAttr::Int("transB", 1)}, "fc");
  g.output("y", {1, 3});
  return g.serialize();
}
}  // namespace

TEST(TensorRun, FoldInputsAsConstants) {
  const std::string bytes = gemm_with_parameter_inputs();
  const GraphSignature before = graph_signature_of_bytes(bytes, "params");
  ASSERT_EQ(before.inputs.size(), 3u);
  const std::vector<float> w = {0.5f, -1, 0.25f, 2, 1, 1, -1, -1, 0, 0.75f, 0, -0.5f};
  const std::map<std::string, Tensor> constants = {
      {"w", Tensor::from_float({3, 4}, w)}, {"b", Tensor::from_float({3}, {0.1f, -0.2f, 0.3f})}};
  const std::string folded = fold_inputs_as_constants(bytes, constants, "params");
  const GraphSignature after = graph_signature_of_bytes(folded, "params");
  ASSERT_EQ(after.inputs.size(), 1u);
  EXPECT_EQ(after.inputs[0].name, "x");
  const Network net = import_onnx_bytes(folded, "params");
  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].weight, w);
  EXPECT_EQ(net.layers[0].bias, (std::vector<float>{0.1f, -0.2f, 0.3f}));

  // Through TensorModel: the graph left has one input; the chip computes x * w^T + b.
  const std::string path = test_support::temp_dir() + "/params.onnx";
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_NE(error_of([&] { TensorModel m(path); }).find("the graph has 3 inputs ('x', 'w', 'b')"),
            std::string::npos);
  TensorModel m(path, constants);
  EXPECT_EQ(m.signature().inputs.size(), 1u);
  EXPECT_EQ(m.constants().size(), 2u);
  const auto images =
      m.images(Tensor::from_float({2, 4}, {1, 0.5f, -1, 0.25f, -0.5f, 1, 0.75f, 0}), "x");
  m.quantize(images);
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const TensorModel::Run r = m.run(dev, images, 2, 1.0);
  EXPECT_TRUE(r.matches_reference());
  const double tol = propagated_tolerance(m.quantized(), false);
  EXPECT_GE(tol, m.quantized().output_q().scale / 2);
  for (int b = 0; b < 2; ++b)
    for (int o = 0; o < 3; ++o) {
      double y = constants.at("b").value(o);
      for (int i = 0; i < 4; ++i) y += images[size_t(b)][size_t(i)] * w[size_t(o * 4 + i)];
      EXPECT_NEAR(r.outputs[0].value(b * 3 + o), y, tol) << b << " " << o;
    }

  // Errors name the input.
  EXPECT_NE(error_of([&] {
              fold_inputs_as_constants(bytes, {{"z", Tensor::from_float({1}, {0})}}, "params");
            }).find("cannot fold input 'z' as a constant: the graph has no such input"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              fold_inputs_as_constants(bytes, {{"w", Tensor::from_float({4, 3}, w)}}, "params");
            }).find("input 'w' is float32 [3, 4], but the tensor given for it is float32 [4, 3]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              fold_inputs_as_constants(
                  bytes, {{"b", Tensor::from_int(DType::Int32, {3}, {1, 2, 3})}}, "params");
            }).find("input 'b' is float32 [3], but the tensor given for it is int32 [3]"),
            std::string::npos);
}

// Inputs the node tests use: rank 3 ([N, C, L]: one row per channel), a graph that is the input
// itself (Identity), and a uint8 input (already quantized: the integers go through exactly).
TEST(TensorRun, Rank3IdentityAndIntegerInputs) {
  {
    OnnxGraph g("rank3");
    g.input("x", {-1, 4, 5});
    g.node("Relu", {"x"}, {"y"}, {}, "relu");
    g.output("y", {-1, 4, 5});
    const Network net = import_onnx_bytes(g.serialize(), "rank3");
    EXPECT_EQ(net.input.c, 4);
    EXPECT_EQ(net.input.h, 1);
    EXPECT_EQ(net.input.w, 5);
  }
  {
    OnnxGraph g("rank1");
    g.input("x", {3});
    g.node("Sigmoid", {"x"}, {"y"}, {}, "sig");
    g.output("y", {3});
    const Network net = import_onnx_bytes(g.serialize(), "rank1");  // [N]: N images of one value
    EXPECT_EQ(net.input.size(), 1);
  }
  {
    OnnxGraph g("identity");
    g.input("x", {1, 2, 3, 3});
    g.node("Identity", {"x"}, {"y"}, {}, "id");
    g.output("y", {1, 2, 3, 3});
    const Network net = import_onnx_bytes(g.serialize(), "identity");
    ASSERT_EQ(net.layers.size(), 1u);
    EXPECT_EQ(net.layers[0].kind, LayerKind::Copy);
  }
  {
    OnnxGraph g("u8");
    g.input("x", {1, 1, 4, 4});
    g.node("MaxPool", {"x"}, {"y"},
           {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
    g.output("y", {1, 1, 2, 2});
    onnx::ModelProto mp;
    ASSERT_TRUE(mp.ParseFromString(g.serialize()));
    mp.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::UINT8);
    mp.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::UINT8);
    const std::string path = test_support::temp_dir() + "/u8_pool.onnx";
    std::ofstream(path, std::ios::binary) << mp.SerializeAsString();
    TensorModel m(path);
    EXPECT_FALSE(m.needs_calibration());
    EXPECT_EQ(m.input_dtype(), DType::UInt8);
    m.quantize({});
    std::vector<int64_t> px;
    for (int i = 0; i < 16; ++i) px.push_back((i * 53) % 256);
    const auto images = m.images(Tensor::from_int(DType::UInt8, {1, 1, 4, 4}, px), "x");
    tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
    const TensorModel::Run r = m.run(dev, images, 1, 1.0);
    EXPECT_TRUE(r.matches_reference());
    ASSERT_EQ(r.outputs[0].describe(), "uint8 [1, 1, 2, 2]");
    for (int oy = 0; oy < 2; ++oy)
      for (int ox = 0; ox < 2; ++ox) {
        int64_t mx = 0;
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 2; ++kx)
            mx = std::max(mx, px[size_t((oy * 2 + ky) * 4 + ox * 2 + kx)]);
        EXPECT_EQ(r.outputs[0].value(oy * 2 + ox), double(mx));
      }
  }
}

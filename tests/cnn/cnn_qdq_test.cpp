// SPDX-License-Identifier: Apache-2.0
// The quantized forms of branching CNNs: a ResNet, a MobileNetV2, a SqueezeNet and the every-op
// network exported as QDQ and as QLinear (com.microsoft) ONNX import back into the identical
// integer network, which runs bit-exactly on the golden ISA model; QDQ graphs in ONNX
// Runtime's layout and QLinear graphs built node by node import as expected.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>

#include "cnn_models.h"
#include "cnn_test_util.h"
#include "device_model.h"
#include "reference.h"

namespace {

using namespace cnn_test;

// Random quantized images (any integer of the input's type).
std::vector<std::vector<int32_t>> random_qimages(const QuantNetwork& q, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(q.input_q.qmin(), q.input_q.qmax());
  std::vector<std::vector<int32_t>> v(size_t(count), std::vector<int32_t>(size_t(q.input.size())));
  for (auto& img : v)
    for (auto& x : img) x = d(rng);
  return v;
}

// r is q layer by layer: geometry, inputs, quantization, integers. ReLU into a tensor whose
// zero point is its minimum is the saturation itself, so QLinear forms may drop it.
void expect_same_network(const QuantNetwork& r, const QuantNetwork& q) {
  ASSERT_EQ(r.layers.size(), q.layers.size()) << "re-imported:\n"
                                              << r.summary() << "original:\n"
                                              << q.summary();
  EXPECT_EQ(r.input_q, q.input_q);
  EXPECT_EQ(r.host_softmax, q.host_softmax);
  for (size_t i = 0; i < q.layers.size(); ++i) {
    const QLayer& a = r.layers[i];
    const QLayer& b = q.layers[i];
    SCOPED_TRACE("layer " + std::to_string(i) + " '" + b.name + "' (" + b.op +
                 "), re-imported as '" + a.name + "' (" + a.op + ")");
    EXPECT_EQ(int(a.kind), int(b.kind));
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.in, b.in);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.conv_out, b.conv_out);
    EXPECT_EQ(a.group, b.group);
    if (a.kind == LayerKind::Conv) {
      EXPECT_EQ(std::vector<int>({a.kh, a.kw, a.sh, a.sw, a.dh, a.dw}),
                std::vector<int>({b.kh, b.kw, b.sh, b.sw, b.dh, b.dw}));
    }
    EXPECT_EQ(std::vector<int>({a.pad_t, a.pad_l, a.pad_b, a.pad_r, a.pool_k, a.pool_s}),
              std::vector<int>({b.pad_t, b.pad_l, b.pad_b, b.pad_r, b.pool_k, b.pool_s}));
    EXPECT_EQ(a.in_qs, b.in_qs);
    EXPECT_EQ(a.out_q, b.out_q);
    EXPECT_EQ(a.weight, b.weight);
    EXPECT_EQ(a.bias, b.bias);
    EXPECT_EQ(a.mult, b.mult);
    EXPECT_EQ(a.shift, b.shift);
    EXPECT_EQ(a.lo, b.lo);
    EXPECT_EQ(a.hi, b.hi);
    const bool implicit_relu = b.act == Activation::Relu && a.act == Activation::None &&
                               b.out_q.zero_point == b.out_q.qmin();
    if (!implicit_relu) {
      EXPECT_EQ(int(a.act), int(b.act));
    }
    if (b.act == Activation::Lut) {
      EXPECT_EQ(a.pre_q, b.pre_q);
      EXPECT_EQ(a.lut, b.lut);
      EXPECT_EQ(int(a.lut_func), int(b.lut_func));
    }
  }
}

const char* form_name(int form) { return form == 0 ? "QDQ" : "QLinear"; }

// q exported in both forms imports back bit-exactly; the re-imported network on the golden model.
void check_round_trip(const QuantNetwork& q, uint32_t seed) {
  const auto images = random_qimages(q, 12, seed);
  for (int form = 0; form < 2; ++form) {
    SCOPED_TRACE(std::string(form_name(form)) + " form of " + q.name);
    const std::string bytes = form == 0 ? export_qdq_onnx(q) : export_qlinear_onnx(q);
    const Network net =
        import_onnx_bytes(bytes, q.name + (form == 0 ? "_qdq.onnx" : "_qlinear.onnx"));
    ASSERT_TRUE(fully_quantized(net)) << net.summary();
    const QuantNetwork r = quantize(net, nullptr);
    expect_same_network(r, q);
    for (const auto& img : images)
      ASSERT_EQ(int_forward(r, img.data()), int_forward(q, img.data()));
    expect_bit_exact(r, images, 4);
  }
}

QuantNetwork calibrated(const Network& net, uint32_t seed) {
  return quantize_model(net, random_images(net.input, 16, seed));
}

TEST(OnnxQdqRoundTrip, ResNet) { check_round_trip(calibrated(small_resnet(41), 42), 43); }
TEST(OnnxQdqRoundTrip, MobileNetV2) { check_round_trip(calibrated(small_mobilenet(44), 45), 46); }
TEST(OnnxQdqRoundTrip, SqueezeNet) { check_round_trip(calibrated(small_squeezenet(47), 48), 49); }
TEST(OnnxQdqRoundTrip, EveryOp) { check_round_trip(calibrated(every_op_network(50), 51), 52); }
// AveragePool (QLinearAveragePool) with count_include_pad = 0 and ceil_mode.
TEST(OnnxQdqRoundTrip, BorderAveragePools) {
  check_round_trip(calibrated(border_average_network(55), 56), 57);
}

// The trained models in models/ (float ONNX files exported by PyTorch).
TEST(OnnxQdqRoundTrip, BundledModels) {
  for (const char* m : {"resnet", "mobilenet", "squeezenet", "fashion_cnn"})
    check_round_trip(
        calibrated(load_onnx(std::string(TPU_CNN_SOURCE_DIR) + "/models/" + m + ".onnx"), 62), 63);
}

// Forms the networks above do not have: LUT functions with max-pooling fused, an int8 Clip, a
// ReLU of a concatenation and of a tensor read twice (Copy layers), an Add with a sigmoid, a
// global pool read by a Conv.
Network more_forms_network(uint32_t seed) {
  GraphBuilder b("more_forms", {3, 16, 16}, seed);
  const std::string a =
      b.maxpool(b.op("Sigmoid", {b.conv("input", 3, 12, 3, 1, 1)}), 2, 2);  // [12, 8, 8]
  const std::string b1 = b.clip(b.conv(a, 12, 8, 1), -1.0f, 1.0f);
  const std::string b2 = b.op("Tanh", {b.conv(a, 12, 8, 3, 1, 1)});
  const std::string c = b.relu(b.concat({b1, b2}));  // [16, 8, 8]
  const std::string d =
      b.op("Sigmoid", {b.op("Add", {b.conv(c, 16, 16, 1), b.conv(c, 16, 16, 3, 1, 1)})});
  const std::string e = b.maxpool(
      b.op("LeakyRelu", {b.conv(d, 16, 16, 3, 1, 1)}, {OnnxAttr::Float("alpha", 0.1f)}), 2, 2);
  const std::string t = b.conv(e, 16, 16, 1);  // [16, 4, 4]
  const std::string u = b.op("Add", {b.relu(t), b.conv(t, 16, 16, 3, 1, 1)});
  const std::string f = b.relu(b.conv(b.op("GlobalAveragePool", {u}), 16, 8, 1));
  return import_onnx_bytes(b.serialize(b.gemm(b.op("Flatten", {f}), 8, 5)), "more_forms");
}

TEST(OnnxQdqRoundTrip, MoreForms) {
  const Network net = more_forms_network(54);
  int copies = 0, lut_pools = 0;
  for (const auto& l : net.layers) {
    copies += l.kind == LayerKind::Copy;
    lut_pools += l.act == Activation::Lut && l.pool_k > 1;
  }
  EXPECT_EQ(copies, 2) << net.summary();
  EXPECT_EQ(lut_pools, 2) << net.summary();
  check_round_trip(calibrated(net, 55), 56);
}

// A final Softmax runs on the host: every form ends with it.
TEST(OnnxQdqRoundTrip, HostSoftmax) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    GraphBuilder b("softmax", {2, 10, 10}, 57);
    const std::string x =
        b.op("Flatten", {b.op("GlobalAveragePool", {b.relu(b.conv("input", 2, 8, 3, 1, 1))})});
    const Network net = import_onnx_bytes(
        b.serialize(b.op(op, {b.gemm(x, 8, 6)}, {OnnxAttr::Int("axis", 1)})), "softmax.onnx");
    ASSERT_EQ(net.host_softmax, op);
    EXPECT_EQ(import_onnx_bytes(export_float_onnx(net), "float.onnx").host_softmax, op);
    check_round_trip(calibrated(net, 58), 59);
  }
}

// A per-channel PRelu network (two ReLU copies and an Add with per-channel factors).
Network prelu_network(uint32_t seed) {
  GraphBuilder b("prelu", {3, 9, 9}, seed);
  std::vector<float> slopes(12);
  for (size_t i = 0; i < slopes.size(); ++i) slopes[i] = -0.4f + 0.09f * float(i);
  const std::string x = b.prelu(b.conv("input", 3, 12, 3, 1, 1), slopes);
  return import_onnx_bytes(
      b.serialize(b.gemm(b.op("Flatten", {b.op("GlobalAveragePool", {x})}), 12, 5)), "prelu.onnx");
}

// The float export of the same networks imports back to the same layers and float function.
TEST(OnnxQdqRoundTrip, FloatExportOfGraphs) {
  for (const Network& net :
       {small_resnet(41), small_mobilenet(44), small_squeezenet(47), every_op_network(50),
        more_forms_network(54), prelu_network(60), border_average_network(55)}) {
    SCOPED_TRACE(net.name);
    const Network r = import_onnx_bytes(export_float_onnx(net), net.name + "_float.onnx");
    ASSERT_EQ(r.layers.size(), net.layers.size()) << r.summary() << net.summary();
    for (size_t i = 0; i < net.layers.size(); ++i) {
      EXPECT_EQ(int(r.layers[i].kind), int(net.layers[i].kind)) << i;
      EXPECT_EQ(r.layers[i].inputs, net.layers[i].inputs) << i;
      EXPECT_EQ(r.layers[i].out, net.layers[i].out) << i;
      EXPECT_EQ(int(r.layers[i].act), int(net.layers[i].act)) << i;
    }
    for (const auto& img : random_images(net.input, 3, 53))
      EXPECT_EQ(float_forward(r, img.data()), float_forward(net, img.data()));
  }
}

// What ONNX cannot say so that it imports back is an error naming the layer.
TEST(OnnxQdqExport, WhatHasNoOnnxFormIsAnError) {
  {
    // A Pad before an AveragePool with count_include_pad = 0: its zeros are counted.
    GraphBuilder b("pad_avg", {2, 9, 9}, 3);
    b.graph().init_int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    const std::string y = b.avgpool(b.op("Pad", {"input", "pads"}), 3, 2, 1, false);
    const Network net = import_onnx_bytes(b.serialize(y), "pad_avg.onnx");
    ASSERT_TRUE(net.layers[0].per_pixel_divisor());
    const QuantNetwork q = calibrated(net, 4);
    for (int form = 0; form < 3; ++form) {
      const std::string e = error_of([&] {
        form == 0   ? export_float_onnx(net)
        : form == 1 ? export_qdq_onnx(q)
                    : export_qlinear_onnx(q);
      });
      EXPECT_NE(e.find("(AveragePool): an AveragePool whose divisors count padding taps"),
                std::string::npos)
          << e;
    }
  }
  {
    QuantNetwork q = calibrated(small_squeezenet(47), 48);
    for (auto& l : q.layers)
      if (l.kind == LayerKind::Conv && l.inputs.size() == 2) {
        l.in_qs[1].scale *= 2.0f;  // the relative scale would be folded into the weights
        break;
      }
    for (int form = 0; form < 2; ++form) {
      const std::string e =
          error_of([&] { form == 0 ? export_qdq_onnx(q) : export_qlinear_onnx(q); });
      EXPECT_NE(e.find("(Conv): its concatenated inputs have different scales"), std::string::npos)
          << e;
    }
  }
  {
    QuantNetwork q = calibrated(every_op_network(50), 51);
    for (auto& l : q.layers)
      if (l.act == Activation::Lut && l.lut_func == LutFunc::HardSwish &&
          l.kind == LayerKind::Conv) {
        l.pool_k = l.pool_s = 2;
        break;
      }
    const std::string e = error_of([&] { export_qdq_onnx(q); });
    EXPECT_NE(e.find("max-pooling after HardSwish, which is not monotonic"), std::string::npos)
        << e;
  }
  {
    // The importer quantizes a per-channel PRelu's ReLU copies only by calibration.
    const QuantNetwork q = calibrated(prelu_network(60), 61);
    for (int form = 0; form < 2; ++form) {
      const std::string e =
          error_of([&] { form == 0 ? export_qdq_onnx(q) : export_qlinear_onnx(q); });
      EXPECT_NE(
          e.find("(PRelu): per-channel factors (a per-channel PRelu) have no quantized ONNX form"),
          std::string::npos)
          << e;
    }
  }
}

// ---- hand-built quantized graphs ---------------------------------------------------------------

// Builds quantized ONNX graphs node by node: random int8 weights, given activation parameters.
class QBuilder {
 public:
  QBuilder(const std::string& name, Shape3 in, uint32_t seed) : g_(name), rng_(seed), in_(in) {
    g_.input("input", {1, in.c, in.h, in.w});
  }
  OnnxGraph& graph() { return g_; }
  // Scale and zero point initializers `name`_scale, `name`_zp.
  std::string quant(const std::string& name, float scale, int zp, bool is_unsigned) {
    g_.init_float(name + "_scale", {}, {scale});
    if (is_unsigned)
      g_.init_uint8(name + "_zp", {}, {uint8_t(zp)});
    else
      g_.init_int8(name + "_zp", {}, {int8_t(zp)});
    return name;
  }
  std::vector<std::string> q3(const std::string& x, const std::string& q) {
    return {x, q + "_scale", q + "_zp"};
  }
  std::string node(const std::string& op, const std::vector<std::string>& ins,
                   const std::vector<OnnxAttr>& attrs = {}, const std::string& domain = "") {
    const std::string p = op + std::to_string(++id_);
    g_.node(op, ins, {p}, attrs, "/" + p, domain);
    return p;
  }
  std::string q(const std::string& x, const std::string& qp) {
    return node("QuantizeLinear", q3(x, qp));
  }
  std::string dq(const std::string& x, const std::string& qp) {
    return node("DequantizeLinear", q3(x, qp));
  }
  // Int8 weights [cout, cin, k, k] (or [cout, cin] when k = 0) with per-channel scales around
  // `scale`, and an int32 bias; names prefix_w{q,s,z}, prefix_b.
  void weights(const std::string& p, int cout, int cin, int k, float scale,
               bool transpose = false) {
    std::uniform_int_distribution<int> wd(-127, 127), bd(-2000, 2000);
    std::uniform_real_distribution<float> sd(0.5f, 1.5f);
    const int64_t n = int64_t(cout) * cin * std::max(k * k, 1);
    std::vector<int8_t> w(static_cast<size_t>(n));
    for (auto& v : w) v = int8_t(wd(rng_));
    std::vector<float> s(static_cast<size_t>(cout));
    for (auto& v : s) v = scale * sd(rng_);
    std::vector<int32_t> b(static_cast<size_t>(cout));
    for (auto& v : b) v = bd(rng_);
    std::vector<int64_t> dims =
        k ? std::vector<int64_t>{cout, cin, k, k} : std::vector<int64_t>{cout, cin};
    if (transpose) dims = {cin, cout};
    g_.init_int8(p + "_wq", dims, w);
    g_.init_float(p + "_ws", {cout}, s);
    g_.init_int8(p + "_wz", {cout}, std::vector<int8_t>(size_t(cout), 0));
    g_.init_int32(p + "_bq", {cout}, b);
    scales_[p] = s;
  }
  // DQ weights (axis 0) and a DQ bias at scale in_scale * weight scale.
  void dq_weights(const std::string& p, float in_scale) {
    g_.node("DequantizeLinear", {p + "_wq", p + "_ws", p + "_wz"}, {p + "_w"},
            {OnnxAttr::Int("axis", 0)});
    std::vector<float> bs;
    for (float s : scales_[p]) bs.push_back(float(double(in_scale) * double(s)));
    g_.init_float(p + "_bs", {int64_t(bs.size())}, bs);
    g_.node("DequantizeLinear", {p + "_bq", p + "_bs"}, {p + "_b"}, {OnnxAttr::Int("axis", 0)});
  }
  std::string serialize(const std::string& out) {
    g_.output(out);
    return g_.serialize();
  }

 private:
  OnnxGraph g_;
  std::mt19937 rng_;
  Shape3 in_;
  int id_ = 0;
  std::map<std::string, std::vector<float>> scales_;
};

std::vector<OnnxAttr> conv3x3() {
  return {OnnxAttr::Ints("kernel_shape", {3, 3}), OnnxAttr::Ints("pads", {1, 1, 1, 1})};
}

struct Expect {
  LayerKind kind;
  std::vector<int> inputs;
};
void expect_structure(const Network& net, const std::vector<Expect>& want) {
  ASSERT_EQ(net.layers.size(), want.size()) << net.summary();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(int(net.layers[i].kind), int(want[i].kind)) << "layer " << i << "\n" << net.summary();
    EXPECT_EQ(net.layers[i].inputs, want[i].inputs) << "layer " << i << "\n" << net.summary();
  }
}

// Imported, fully quantized, bit-exact on the golden model.
QuantNetwork check_quantized_model(const Network& net, uint32_t seed) {
  EXPECT_TRUE(fully_quantized(net)) << net.summary();
  const QuantNetwork q = quantize(net, nullptr);
  expect_bit_exact(q, random_qimages(q, 8, seed), 4);
  return q;
}

// ONNX Runtime's static quantizer's layout: DequantizeLinear on every input of Conv, Add,
// Concat, MaxPool, GlobalAveragePool and Gemm (one per consumer), QuantizeLinear after them;
// ReLU folded into a uint8 output with zero point 0; MaxPool keeping its input's parameters;
// Concat inputs of different scales requantized by its own QuantizeLinear.
TEST(OnnxQdqImport, OnnxRuntimeLayout) {
  QBuilder b("ort_qdq", {3, 12, 12}, 61);
  const std::string in = b.quant("in", 1.0f / 255.0f, 0, true);
  const std::string s1 = b.quant("s1", 0.05f, 0, true), s2 = b.quant("s2", 0.04f, -3, false);
  const std::string s3 = b.quant("s3", 0.06f, -20, false), s4 = b.quant("s4", 0.07f, -10, false);
  const std::string s5 = b.quant("s5", 0.03f, 5, false), s6 = b.quant("s6", 0.1f, 2, false);
  const std::string x = b.q("input", in);
  b.weights("c1", 8, 3, 3, 0.01f);
  b.dq_weights("c1", 1.0f / 255.0f);
  const std::string c1 = b.q(b.node("Conv", {b.dq(x, in), "c1_w", "c1_b"}, conv3x3()), s1);
  b.weights("c2", 8, 8, 1, 0.005f);
  b.dq_weights("c2", 0.05f);
  const std::string c2 = b.q(b.node("Conv", {b.dq(c1, s1), "c2_w", "c2_b"}), s2);
  const std::string mp =
      b.q(b.node("MaxPool", {b.dq(c1, s1)},
                 {OnnxAttr::Ints("kernel_shape", {3, 3}), OnnxAttr::Ints("pads", {1, 1, 1, 1})}),
          s1);
  const std::string add = b.q(b.node("Add", {b.dq(c2, s2), b.dq(mp, s1)}), s3);
  const std::string cat =
      b.q(b.node("Concat", {b.dq(add, s3), b.dq(c1, s1)}, {OnnxAttr::Int("axis", 1)}), s4);
  const std::string gap = b.q(b.node("GlobalAveragePool", {b.dq(cat, s4)}), s5);
  b.weights("fc", 5, 16, 0, 0.02f);
  b.dq_weights("fc", 0.03f);
  const std::string fc = b.q(b.node("Gemm", {b.node("Flatten", {b.dq(gap, s5)}), "fc_w", "fc_b"},
                                    {OnnxAttr::Int("transB", 1)}),
                             s6);
  const Network net = import_onnx_bytes(b.serialize(b.dq(fc, s6)), "ort_qdq.onnx");
  // conv1, conv2, the padded max-pool, the add, the concatenation's requantizing copy, the
  // global pool and the dense layer.
  expect_structure(net, {{LayerKind::Conv, {kNetworkInput}},
                         {LayerKind::Conv, {0}},
                         {LayerKind::Copy, {0}},
                         {LayerKind::Add, {1, 2}},
                         {LayerKind::Copy, {3, 0}},
                         {LayerKind::Dense, {4}},
                         {LayerKind::Dense, {5}}});
  EXPECT_EQ(net.layers[2].pool_k, 3);
  EXPECT_EQ(net.layers[5].group, 16);
  EXPECT_TRUE(net.layers[0].given && !net.layers[0].given->bias.empty());
  const QuantNetwork q = check_quantized_model(net, 62);
  EXPECT_EQ(q.layers[2].out_q, q.layers[0].out_q);  // the max-pool keeps its input's parameters
  EXPECT_EQ(q.layers[4].in_qs.size(), 2u);
  EXPECT_FALSE(q.layers[4].in_qs[0] == q.layers[4].in_qs[1]);
  // The QDQ and QLinear exports of the imported network round-trip too.
  check_round_trip(q, 63);
}

// The com.microsoft QLinear ops, with MaxPool on the integers.
TEST(OnnxQdqImport, ComMicrosoftQLinearOps) {
  QBuilder b("qlinear_ms", {3, 12, 12}, 71);
  const std::string ms = "com.microsoft";
  const std::string in = b.quant("in", 1.0f / 255.0f, 0, true);
  const std::string s1 = b.quant("s1", 0.05f, -128, false), s2 = b.quant("s2", 0.04f, -3, false);
  const std::string s3 = b.quant("s3", 0.06f, -20, false),
                    s4 = b.quant("s4", 1.0f / 256.0f, -128, false);
  const std::string s5 = b.quant("s5", 0.02f, -60, false), s6 = b.quant("s6", 0.003f, 10, false);
  const std::string s7 = b.quant("s7", 0.002f, -5, false), s8 = b.quant("s8", 0.1f, 2, false);
  auto cat = [](std::vector<std::string> a, const std::vector<std::string>& b2) {
    a.insert(a.end(), b2.begin(), b2.end());
    return a;
  };
  const std::string x = b.q("input", in);
  b.weights("c1", 8, 3, 3, 0.01f);
  const std::string c1 =
      b.node("QLinearConv",
             cat(cat(b.q3(x, in), {"c1_wq", "c1_ws", "c1_wz"}), {"s1_scale", "s1_zp", "c1_bq"}),
             conv3x3());
  b.weights("c2", 8, 8, 1, 0.005f);
  const std::string c2 = b.node("QLinearConv", cat(cat(b.q3(c1, s1), {"c2_wq", "c2_ws", "c2_wz"}),
                                                   {"s2_scale", "s2_zp", "c2_bq"}));
  const std::string mp =
      b.node("MaxPool", {c1},
             {OnnxAttr::Ints("kernel_shape", {3, 3}), OnnxAttr::Ints("pads", {1, 1, 1, 1})});
  const std::string add =
      b.node("QLinearAdd", cat(cat(b.q3(c2, s2), b.q3(mp, s1)), {"s3_scale", "s3_zp"}), {}, ms);
  const std::string sig =
      b.node("QLinearSigmoid", cat(b.q3(add, s3), {"s4_scale", "s4_zp"}), {}, ms);
  const std::string cc =
      b.node("QLinearConcat", cat(cat({"s5_scale", "s5_zp"}, b.q3(sig, s4)), b.q3(c1, s1)),
             {OnnxAttr::Int("axis", 1)}, ms);
  const std::string gap =
      b.node("QLinearGlobalAveragePool", cat(b.q3(cc, s5), {"s6_scale", "s6_zp"}),
             {OnnxAttr::Int("channels_last", 0)}, ms);
  const std::string lr = b.node("QLinearLeakyRelu", cat(b.q3(gap, s6), {"s7_scale", "s7_zp"}),
                                {OnnxAttr::Float("alpha", 0.1f)}, ms);
  b.weights("fc", 5, 16, 0, 0.02f, true);
  const std::string fc = b.node(
      "QLinearMatMul", cat(cat(b.q3(b.node("Flatten", {lr}), s7), {"fc_wq", "fc_ws", "fc_wz"}),
                           {"s8_scale", "s8_zp"}));
  const Network net = import_onnx_bytes(b.serialize(b.dq(fc, s8)), "qlinear_ms.onnx");
  // conv1, conv2, the max-pool (a copy on the integers), the add with its sigmoid, the
  // concatenation's requantizing copy, the global pool with its leaky ReLU, the dense layer.
  expect_structure(net, {{LayerKind::Conv, {kNetworkInput}},
                         {LayerKind::Conv, {0}},
                         {LayerKind::Copy, {0}},
                         {LayerKind::Add, {1, 2}},
                         {LayerKind::Copy, {3, 0}},
                         {LayerKind::Dense, {4}},
                         {LayerKind::Dense, {5}}});
  EXPECT_EQ(net.layers[3].act, Activation::Lut);
  EXPECT_EQ(net.layers[3].lut, LutFunc::Sigmoid);
  EXPECT_EQ(net.layers[5].act, Activation::Lut);
  EXPECT_EQ(net.layers[5].lut, LutFunc::LeakyRelu);
  const QuantNetwork q = check_quantized_model(net, 72);
  EXPECT_EQ(q.layers[3].pre_q, (TensorQuant{0.06f, -20, false}));
  EXPECT_EQ(q.layers[2].out_q, q.layers[0].out_q);
  check_round_trip(q, 73);
}

// QLinearConcat of inputs quantized differently: a Copy requantizes them into its output's
// parameters (bit-exact); with the same parameters the consumer reads them in place. The QDQ
// form (DequantizeLinear of each, Concat, QuantizeLinear) the same.
TEST(OnnxQdqImport, ConcatOfDifferentScales) {
  for (int form = 0; form < 2; ++form) {
    for (bool same : {false, true}) {
      SCOPED_TRACE(std::string(form_name(form)) + (same ? ", same scales" : ", different scales"));
      QBuilder b("concat", {2, 9, 9}, 81);
      const std::string in = b.quant("in", 1.0f / 255.0f, 0, true);
      const std::string s1 = b.quant("s1", 0.05f, -7, false),
                        s2 = b.quant("s2", same ? 0.05f : 0.02f, same ? -7 : 9, false);
      const std::string s3 = b.quant("s3", 0.05f, -7, false), s4 = b.quant("s4", 0.1f, 1, false);
      b.weights("a", 6, 2, 3, 0.01f);
      b.weights("b", 5, 2, 3, 0.01f);
      b.weights("c", 4, 11, 3, 0.005f);
      const std::string x = b.q("input", in);
      std::string y;
      if (form == 0) {
        b.dq_weights("a", 1.0f / 255.0f);
        b.dq_weights("b", 1.0f / 255.0f);
        b.dq_weights("c", 0.05f);
        const std::string a = b.q(b.node("Conv", {b.dq(x, in), "a_w", "a_b"}, conv3x3()), s1);
        const std::string c = b.q(b.node("Conv", {b.dq(x, in), "b_w", "b_b"}, conv3x3()), s2);
        const std::string cc =
            b.q(b.node("Concat", {b.dq(a, s1), b.dq(c, s2)}, {OnnxAttr::Int("axis", 1)}), s3);
        y = b.dq(b.q(b.node("Conv", {b.dq(cc, s3), "c_w", "c_b"}, conv3x3()), s4), s4);
      } else {
        auto conv = [&](const std::string& xi, const std::string& qi, const std::string& p,
                        const std::string& qo) {
          return b.node("QLinearConv",
                        {xi, qi + "_scale", qi + "_zp", p + "_wq", p + "_ws", p + "_wz",
                         qo + "_scale", qo + "_zp", p + "_bq"},
                        conv3x3());
        };
        const std::string a = conv(x, in, "a", s1), c = conv(x, in, "b", s2);
        const std::string cc = b.node(
            "QLinearConcat", {"s3_scale", "s3_zp", a, "s1_scale", "s1_zp", c, "s2_scale", "s2_zp"},
            {OnnxAttr::Int("axis", 1)}, "com.microsoft");
        y = b.dq(conv(cc, s3, "c", s4), s4);
      }
      const Network net = import_onnx_bytes(b.serialize(y), "concat.onnx");
      if (same) {
        expect_structure(net, {{LayerKind::Conv, {kNetworkInput}},
                               {LayerKind::Conv, {kNetworkInput}},
                               {LayerKind::Conv, {0, 1}}});
      } else {
        expect_structure(net, {{LayerKind::Conv, {kNetworkInput}},
                               {LayerKind::Conv, {kNetworkInput}},
                               {LayerKind::Copy, {0, 1}},
                               {LayerKind::Conv, {2}}});
        EXPECT_EQ(net.layers[2].out_quant, (TensorQuant{0.05f, -7, false}));
      }
      const QuantNetwork q = check_quantized_model(net, 82);
      check_round_trip(q, 83);
    }
  }
}

// A QuantizeLinear of a dequantized tensor with other parameters requantizes it (a Copy), rather
// than changing the parameters its producer was declared with.
TEST(OnnxQdqImport, RequantizationIsACopy) {
  QBuilder b("requant", {2, 9, 9}, 91);
  const std::string in = b.quant("in", 1.0f / 255.0f, 0, true);
  const std::string s1 = b.quant("s1", 0.05f, -7, false), s2 = b.quant("s2", 0.08f, 3, false),
                    s3 = b.quant("s3", 0.1f, 1, false);
  b.weights("a", 6, 2, 3, 0.01f);
  b.weights("b", 4, 6, 3, 0.005f);
  b.dq_weights("a", 1.0f / 255.0f);
  b.dq_weights("b", 0.08f);
  const std::string a =
      b.q(b.node("Conv", {b.dq(b.q("input", in), in), "a_w", "a_b"}, conv3x3()), s1);
  const std::string r = b.q(b.dq(a, s1), s2);
  const std::string y = b.dq(b.q(b.node("Conv", {b.dq(r, s2), "b_w", "b_b"}, conv3x3()), s3), s3);
  const Network net = import_onnx_bytes(b.serialize(y), "requant.onnx");
  expect_structure(
      net, {{LayerKind::Conv, {kNetworkInput}}, {LayerKind::Copy, {0}}, {LayerKind::Conv, {1}}});
  EXPECT_EQ(net.layers[0].out_quant, (TensorQuant{0.05f, -7, false}));
  EXPECT_EQ(net.layers[1].out_quant, (TensorQuant{0.08f, 3, false}));
  check_quantized_model(net, 92);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Branching CNNs (DAGs) without RTL: import of residual adds, concatenation, depthwise and
// grouped convolution, pooling of every kind and LUT activations; the compiled programs on the
// golden ISA model ("model" Device backend) bit-exact against the integer reference; and the
// dequantized integer network close to the float one (the integer semantics are the model's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

#include "cnn_models.h"
#include "cnn_test_util.h"
#include "device_model.h"
#include "reference.h"

namespace {

using namespace cnn_test;

// The integer network, dequantized, follows the float network: mean error below 8 % of the
// output range and the same argmax on most images.
void expect_close_to_float(const Network& net, const QuantNetwork& q,
                           const std::vector<std::vector<float>>& x) {
  double err = 0, range = 0;
  int agree = 0;
  size_t count = 0;
  for (const auto& img : x) {
    const auto f = float_forward(net, img.data());
    std::vector<int32_t> qi(size_t(q.input.size()));
    q.quantize_input(img.data(), qi.data());
    const auto y = int_forward(q, qi.data());
    ASSERT_EQ(f.size(), y.size());
    float lo = f[0], hi = f[0];
    for (size_t i = 0; i < f.size(); ++i) {
      const double d = double(q.output_q().scale) * (y[i] - q.output_q().zero_point);
      err += std::fabs(d - f[i]);
      lo = std::min(lo, f[i]);
      hi = std::max(hi, f[i]);
      ++count;
    }
    range += hi - lo;
    agree += argmax(f) == argmax(y);
  }
  const double mean_err = err / double(count), mean_range = range / double(x.size());
  EXPECT_LT(mean_err, 0.08 * mean_range)
      << net.name << ": mean error " << mean_err << " of a range " << mean_range;
  EXPECT_GE(agree, int(x.size()) * 6 / 10)
      << net.name << ": argmax agrees on " << agree << " of " << x.size();
}

int count_kind(const Network& net, LayerKind k) {
  int c = 0;
  for (const auto& l : net.layers) c += l.kind == k;
  return c;
}

void check_network(const Network& net, uint32_t seed) {
  const QuantNetwork q = quantize_model(net, random_images(net.input, 16, seed));
  const auto x = random_images(net.input, 20, seed + 1);
  expect_close_to_float(net, q, x);
  const auto images = quantize_images(q, x);
  expect_bit_exact(q, images, 1);
  expect_bit_exact(q, images, 8);
  expect_bit_exact(q, images, 6, 4);  // several micro-batches per program
}

TEST(Graph, ResidualNetwork) {
  const Network net = small_resnet(11);
  EXPECT_EQ(count_kind(net, LayerKind::Add), 3);
  // The padded stem max-pool fuses into the stem convolution (activate's pool padding).
  EXPECT_EQ(count_kind(net, LayerKind::Copy), 0);
  EXPECT_EQ(net.layers[0].pool_k, 3);
  EXPECT_EQ(net.layers[0].pool_pad_t, 1);
  // BatchNormalization folded: 1 stem + 3 blocks x 2 convs + 2 projections, the GAP, the dense.
  EXPECT_EQ(count_kind(net, LayerKind::Conv), 9);
  EXPECT_EQ(count_kind(net, LayerKind::Dense), 2);
  check_network(net, 20);
}

TEST(Graph, MobileNetInvertedResiduals) {
  const Network net = small_mobilenet(12);
  EXPECT_EQ(count_kind(net, LayerKind::Add), 2);
  int depthwise = 0;
  for (const auto& l : net.layers)
    depthwise += l.kind == LayerKind::Conv && l.group > 1 && l.group == l.in.c;
  EXPECT_EQ(depthwise, 3);
  check_network(net, 21);
}

TEST(Graph, SqueezeNetFireModules) {
  const Network net = small_squeezenet(13);
  // The concatenations are read in place: the second fire's squeeze conv reads two tensors,
  // and the ceil-mode max-pool copies the first fire's two halves into one tensor.
  int two_inputs = 0;
  for (const auto& l : net.layers) two_inputs += l.inputs.size() == 2 && l.kind != LayerKind::Add;
  EXPECT_EQ(two_inputs, 2);
  check_network(net, 22);
}

// The same networks at other array sizes (other block counts, tile splits).
TEST(Graph, OtherArraySizes) {
  for (uint32_t n : {8u, 32u}) {
    for (const Network& net : {small_resnet(31), small_mobilenet(32), small_squeezenet(33)}) {
      const QuantNetwork q = quantize_model(net, random_images(net.input, 8, 34));
      expect_bit_exact(q, quantize_images(q, random_images(net.input, 4, 35)), 4, 0, n);
    }
  }
}

// Everything else the importer claims, in one network with odd channel counts.
TEST(Graph, EveryOpBitExact) {
  const Network net = every_op_network(14);
  int luts = 0;
  for (const auto& l : net.layers) luts += l.act == Activation::Lut;
  EXPECT_EQ(luts, 7);  // Sigmoid, Tanh, LeakyRelu, HardSigmoid, x*HardSigmoid(x), HardSwish, PRelu
  check_network(net, 23);
}

// PRelu with a slope per channel: relu(x) and relu(-x) (a negative multiplier) added with
// per-channel operand weights; slopes of both signs and a zero slope.
TEST(Graph, PerChannelPRelu) {
  GraphBuilder b("prelu", {3, 9, 9}, 6);
  std::vector<float> slopes(20);
  for (size_t i = 0; i < slopes.size(); ++i) slopes[i] = -0.5f + 0.07f * float(i);
  std::string x = b.prelu(b.conv("input", 3, 20, 3, 1, 1), slopes);
  x = b.gemm(b.op("Flatten", {b.op("GlobalAveragePool", {x})}), 20, 5);
  const Network net = import_onnx_bytes(b.serialize(x), "prelu.onnx");
  ASSERT_EQ(net.layers.size(), 6u);  // conv, two copies, add, GAP, dense
  EXPECT_EQ(net.layers[3].kind, LayerKind::Add);
  check_network(net, 25);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 8, 26));
  EXPECT_LT(q.layers[2].mult[0], 0);  // relu(-x)
  // Per channel, x > 0 passes through and x < 0 is scaled by the slope (float reference).
  const auto img = random_images(net.input, 1, 27)[0];
  std::vector<std::vector<float>> outs;
  float_forward(net, img.data(), &outs);
  for (size_t i = 0; i < outs[0].size(); ++i) {
    const float v = outs[0][i], s = slopes[i / 81];
    ASSERT_NEAR(outs[3][i], v > 0 ? v : s * v, 1e-5f) << i;
  }
}

// A final Softmax runs on the host (the chip's logits have the same argmax); anywhere else it
// is an error.
TEST(Graph, FinalSoftmaxRunsOnTheHost) {
  {
    GraphBuilder b("softmax", {1, 8, 8}, 2);
    const std::string x = b.op("Flatten", {b.relu(b.conv("input", 1, 4, 3))});
    const std::string y = b.op("Softmax", {b.gemm(x, 4 * 6 * 6, 5)}, {OnnxAttr::Int("axis", 1)});
    const Network net = import_onnx_bytes(b.serialize(y), "softmax.onnx");
    EXPECT_EQ(net.host_softmax, "Softmax");
    EXPECT_EQ(net.layers.size(), 2u);
    EXPECT_EQ(quantize_model(net, random_images(net.input, 4, 3)).host_softmax, "Softmax");
  }
  {
    GraphBuilder b("softmax_mid", {1, 8, 8}, 2);
    const std::string x = b.op("Softmax", {b.conv("input", 1, 4, 3)});
    const std::string y = b.conv(x, 4, 4, 1);
    const std::string e = error_of([&] { import_onnx_bytes(b.serialize(y), "softmax_mid.onnx"); });
    EXPECT_NE(e.find("(Softmax): Softmax is supported only as the last node"), std::string::npos)
        << e;
  }
}

// The forms other exporters write: an explicit Pad before a Conv and an AveragePool
// (tf2onnx, Keras ZeroPadding2D), GlobalAveragePool then Squeeze, Unsqueeze back.
TEST(Graph, ExporterVariants) {
  GraphBuilder b("variants", {2, 12, 12}, 5);
  std::string x = b.op("Pad", {"input", "pads_a"});
  b.graph().init_int64("pads_a", {8}, {0, 0, 1, 2, 0, 0, 2, 1});
  x = b.relu(b.conv(x, 2, 16, 3, 2));
  b.graph().init_int64("pads_b", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  x = b.avgpool(b.op("Pad", {x, "pads_b"}), 3, 1);
  x = b.op("GlobalAveragePool", {x});
  x = b.op("Squeeze", {x, "axes"});
  b.graph().init_int64("axes", {2}, {2, 3});
  x = b.gemm(x, 16, 6);
  const Network net = import_onnx_bytes(b.serialize(x), "variants.onnx");
  ASSERT_EQ(net.layers.size(), 4u);
  EXPECT_EQ(net.layers[0].pad_t, 1);
  EXPECT_EQ(net.layers[0].pad_l, 2);
  EXPECT_EQ(net.layers[0].pad_b, 2);
  EXPECT_EQ(net.layers[0].pad_r, 1);
  EXPECT_EQ(net.layers[0].out, (Shape3{16, 7, 7}));  // (12 + 3 - 3) / 2 + 1
  EXPECT_EQ(net.layers[1].pad_t, 1);                 // the AveragePool's
  check_network(net, 24);

  GraphBuilder bad("pad_maxpool", {1, 8, 8}, 5);
  bad.graph().init_int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  const std::string y = bad.maxpool(bad.op("Pad", {bad.conv("input", 1, 4, 1), "pads"}), 2, 2);
  const std::string e = error_of([&] { import_onnx_bytes(bad.serialize(y), "pad.onnx"); });
  EXPECT_NE(e.find("(MaxPool): reads"), std::string::npos) << e;
  EXPECT_NE(e.find("a Pad is supported only before a Conv or an AveragePool"), std::string::npos)
      << e;
}

// Random graphs: every op with random geometry, branches (Add, Concat of earlier tensors),
// odd channel counts; the compiled program on the golden model equals the integer reference
// for every image, at N = 16 and N = 8, in one and in several micro-batches.
struct RandomTensor {
  std::string name;
  Shape3 s;
};

Network random_network(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const Shape3 in{pick(1, 5), pick(6, 13), pick(6, 13)};
  GraphBuilder b("random" + std::to_string(seed), in, seed);
  std::vector<RandomTensor> t{{"input", in}};
  const int steps = pick(4, 10);
  for (int step = 0; step < steps; ++step) {
    // Mostly extend the newest tensor; sometimes branch from an older one.
    const RandomTensor x =
        t[size_t(pick(0, 3) == 0 ? pick(0, int(t.size()) - 1) : int(t.size()) - 1)];
    const int kind = pick(0, 9);
    RandomTensor y = x;
    if (kind <= 2 || x.name == "input") {  // conv
      const int k = pick(1, 3), stride = pick(1, 2), pad = pick(0, k / 2 + 1),
                dil = k > 1 ? pick(1, 2) : 1;
      const int ek = dil * (k - 1) + 1;
      if (x.s.h + 2 * pad < ek || x.s.w + 2 * pad < ek) continue;
      int group = 1, cout = pick(1, 40);
      if (pick(0, 2) == 0) {  // grouped or depthwise
        group = x.s.c;
        cout = x.s.c * pick(1, 2);
      }
      y.name = b.conv(x.name, x.s.c, cout, k, stride, pad, group, dil);
      y.s = {cout, (x.s.h + 2 * pad - ek) / stride + 1, (x.s.w + 2 * pad - ek) / stride + 1};
      if (pick(0, 1)) y.name = b.relu(y.name);
    } else if (kind == 3) {  // activation
      static const char* ops[] = {"Relu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish"};
      y.name = pick(0, 3) == 0 ? b.clip(x.name, -0.5f, 2.0f) : b.op(ops[pick(0, 4)], {x.name});
    } else if (kind == 4) {  // max-pool
      const int k = pick(2, 3), stride = pick(1, 2), pad = pick(0, k - 1);
      const bool ceil = pick(0, 1) == 1;
      if (x.s.h + 2 * pad < k || x.s.w + 2 * pad < k) continue;
      auto out = [&](int n) {
        const int span = n + 2 * pad - k;
        int o = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
        if (ceil && (o - 1) * stride >= n + pad) --o;
        return o;
      };
      y.name = b.maxpool(x.name, k, stride, pad, ceil);
      y.s = {x.s.c, out(x.s.h), out(x.s.w)};
    } else if (kind == 5) {  // average pool
      const int k = pick(2, 3), stride = pick(1, 2), pad = pick(0, 1);
      if (x.s.h + 2 * pad < k || x.s.w + 2 * pad < k) continue;
      y.name = b.avgpool(x.name, k, stride, pad);
      y.s = {x.s.c, (x.s.h + 2 * pad - k) / stride + 1, (x.s.w + 2 * pad - k) / stride + 1};
    } else if (kind <= 7) {  // add or concat with an earlier tensor of the same H, W
      std::vector<RandomTensor> same;
      for (const auto& o : t)
        if (o.name != x.name && o.name != "input" && o.s.h == x.s.h && o.s.w == x.s.w &&
            (kind == 7 || o.s.c == x.s.c))
          same.push_back(o);
      if (same.empty()) continue;
      const RandomTensor o = same[size_t(pick(0, int(same.size()) - 1))];
      if (kind == 6) {
        y.name = b.op("Add", {x.name, o.name});
      } else {
        y.name = b.concat({x.name, o.name});
        y.s.c = x.s.c + o.s.c;
      }
    } else if (kind == 8) {  // BatchNormalization after a fresh conv
      y.name = b.bn(b.conv(x.name, x.s.c, x.s.c, 1), x.s.c);
    } else {  // per-channel PRelu
      std::vector<float> slope(size_t(x.s.c));
      for (auto& v : slope) v = float(pick(-50, 50)) / 100.0f;
      y.name = b.prelu(b.conv(x.name, x.s.c, x.s.c, 1), slope);
    }
    t.push_back(y);
  }
  const RandomTensor last = t.back();
  std::string out = pick(0, 1) ? b.op("GlobalAveragePool", {last.name}) : last.name;
  const int64_t features = out == last.name ? last.s.size() : last.s.c;
  out = b.gemm(b.op("Flatten", {out}), features, pick(2, 12));
  return import_onnx_bytes(b.serialize(out), "random" + std::to_string(seed) + ".onnx");
}

// TPU_RANDOM_GRAPHS=N runs N networks (default 40), TPU_RANDOM_GRAPHS_FIRST the first seed.
TEST(Graph, RandomNetworksBitExact) {
  int layers = 0;
  const char* count_env = std::getenv("TPU_RANDOM_GRAPHS");
  const char* first_env = std::getenv("TPU_RANDOM_GRAPHS_FIRST");
  const uint32_t count = count_env ? uint32_t(std::atoi(count_env)) : 40;
  const uint32_t first = first_env ? uint32_t(std::atoi(first_env)) : 1;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    const Network net = random_network(seed);
    layers += int(net.layers.size());
    const QuantNetwork q = quantize_model(net, random_images(net.input, 6, seed + 100));
    const auto images = quantize_images(q, random_images(net.input, 5, seed + 200));
    SCOPED_TRACE(net.summary());
    expect_bit_exact(q, images, 5);
    expect_bit_exact(q, images, 5, 2);
    expect_bit_exact(q, images, 3, 0, 8);
  }
  std::printf("%u random networks from seed %u, %d layers\n", count, first, layers);
}

TEST(Graph, UnsupportedVariantsAreOneLineErrors) {
  {
    GraphBuilder b("avg", {1, 8, 8}, 1);
    const std::string x =
        b.op("AveragePool", {b.conv("input", 1, 4, 1)},
             {OnnxAttr::Ints("kernel_shape", {3, 3}), OnnxAttr::Ints("pads", {1, 1, 1, 1})});
    const std::string e = error_of([&] { import_onnx_bytes(b.serialize(x), "avg.onnx"); });
    EXPECT_NE(e.find("(AveragePool)"), std::string::npos) << e;
    EXPECT_NE(e.find("count_include_pad = 0"), std::string::npos) << e;
  }
  {
    GraphBuilder b("sub", {1, 8, 8}, 1);
    const std::string c1 = b.conv("input", 1, 4, 1), c2 = b.conv("input", 1, 4, 1);
    const std::string x = b.op("Sub", {c1, c2});
    const std::string e = error_of([&] { import_onnx_bytes(b.serialize(x), "sub.onnx"); });
    EXPECT_NE(e.find("(Sub): Sub of two tensors is not supported"), std::string::npos) << e;
  }
  {
    GraphBuilder b("bn", {1, 8, 8}, 1);
    const std::string c = b.conv("input", 1, 4, 1);
    const std::string x = b.bn(b.relu(c), 4);
    const std::string e = error_of([&] { import_onnx_bytes(b.serialize(x), "bn.onnx"); });
    EXPECT_NE(e.find("(BatchNormalization)"), std::string::npos) << e;
  }
}

}  // namespace

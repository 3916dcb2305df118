// Branching CNNs (DAGs) without RTL: import of residual adds, concatenation, depthwise and
// grouped convolution, pooling of every kind and LUT activations; the compiled programs on the
// golden ISA model ("model" Device backend) bit-exact against the integer reference; and the
// dequantized integer network close to the float one (the integer semantics are the model's).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "cnn_models.h"
#include "device_model.h"
#include "reference.h"

namespace {

using namespace cnn_test;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_bit_exact(const QuantNetwork& q, const std::vector<std::vector<int32_t>>& images, uint32_t batch,
                      uint32_t max_micro_batch = 0, uint32_t n = 16) {
  tpu::ModelDevice dev(tpu::ChipParams::with_n(n));
  ProgramOptions opt;
  opt.max_micro_batch = max_micro_batch;
  ChipRunner runner(dev, q, batch, opt);
  for (size_t i0 = 0; i0 < images.size(); i0 += batch) {
    const auto ptrs = pointers(images, i0, batch);
    const auto r = runner.run(ptrs);
    for (size_t j = 0; j < ptrs.size(); ++j)
      ASSERT_EQ(r.outputs[j], int_forward(q, ptrs[j])) << q.name << ": image " << i0 + j << ", batch " << batch << ", N " << n;
  }
}

// The integer network, dequantized, follows the float network: mean error below 8 % of the
// output range and the same argmax on most images.
void expect_close_to_float(const Network& net, const QuantNetwork& q, const std::vector<std::vector<float>>& x) {
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
  EXPECT_LT(mean_err, 0.08 * mean_range) << net.name << ": mean error " << mean_err << " of a range " << mean_range;
  EXPECT_GE(agree, int(x.size()) * 6 / 10) << net.name << ": argmax agrees on " << agree << " of " << x.size();
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
  EXPECT_EQ(count_kind(net, LayerKind::Copy), 1);  // the padded stem max-pool
  // BatchNormalization folded: 1 stem + 3 blocks x 2 convs + 2 projections, the GAP, the dense.
  EXPECT_EQ(count_kind(net, LayerKind::Conv), 9);
  EXPECT_EQ(count_kind(net, LayerKind::Dense), 2);
  check_network(net, 20);
}

TEST(Graph, MobileNetInvertedResiduals) {
  const Network net = small_mobilenet(12);
  EXPECT_EQ(count_kind(net, LayerKind::Add), 2);
  int depthwise = 0;
  for (const auto& l : net.layers) depthwise += l.kind == LayerKind::Conv && l.group > 1 && l.group == l.in.c;
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
  GraphBuilder b("every_op", {3, 17, 15}, 14);
  std::string x = b.conv("input", 3, 20, 3, 1, 2, 1, 2);               // dilated, padded
  x = b.op("Sigmoid", {x});
  const std::string g = b.conv(x, 20, 20, 3, 2, 1, 4);                 // 4 groups, stride 2
  std::string t = b.op("Tanh", {g});
  std::string l = b.op("LeakyRelu", {b.conv(g, 20, 12, 1)}, {OnnxAttr::Float("alpha", 0.1f)});
  std::string c = b.concat({t, l});                                     // 32 channels, two parts
  c = b.maxpool(c, 3, 1, 1);                                            // padded, standalone
  std::string h = b.op("HardSigmoid", {b.conv(c, 32, 16, 1)});
  std::string s = b.conv(c, 32, 16, 1);
  s = b.op("Mul", {s, b.op("HardSigmoid", {s}, {OnnxAttr::Float("alpha", 1.0f / 6.0f), OnnxAttr::Float("beta", 0.5f)})});
  std::string a = b.op("Add", {h, s});                                  // operands of different scales
  a = b.avgpool(a, 3, 2, 1);                                            // padded, count_include_pad
  a = b.constant_op("Mul", b.conv(a, 16, 24, 1), 0.5f);
  a = b.constant_op("Div", a, 4.0f);
  a = b.op("HardSwish", {a});
  a = b.prelu(b.conv(a, 24, 24, 3, 1, 1), 0.2f);
  a = b.op("GlobalAveragePool", {a});
  a = b.gemm(b.op("Flatten", {a}), 24, 7);
  const Network net = import_onnx_bytes(b.serialize(a), "every_op");
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
    EXPECT_NE(e.find("(Softmax): Softmax is supported only as the last node"), std::string::npos) << e;
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
  EXPECT_EQ(net.layers[1].pad_t, 1);  // the AveragePool's
  check_network(net, 24);

  GraphBuilder bad("pad_maxpool", {1, 8, 8}, 5);
  bad.graph().init_int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  const std::string y = bad.maxpool(bad.op("Pad", {bad.conv("input", 1, 4, 1), "pads"}), 2, 2);
  const std::string e = error_of([&] { import_onnx_bytes(bad.serialize(y), "pad.onnx"); });
  EXPECT_NE(e.find("(MaxPool): reads"), std::string::npos) << e;
  EXPECT_NE(e.find("a Pad is supported only before a Conv or an AveragePool"), std::string::npos) << e;
}

TEST(Graph, UnsupportedVariantsAreOneLineErrors) {
  {
    GraphBuilder b("avg", {1, 8, 8}, 1);
    const std::string x = b.op("AveragePool", {b.conv("input", 1, 4, 1)},
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

// SPDX-License-Identifier: Apache-2.0
// Models for the CNN tests, built in C++ with the ONNX protobuf API (onnx_export.h) — no
// PyTorch at test time — and the bundled Fashion-MNIST model.
//
//  * CIFAR-10 ConvNet: 3x32x32, Conv 3x3x32 pad 1 -> ReLU -> MaxPool 2 -> Conv 3x3x64 pad 1 ->
//    ReLU -> MaxPool 2 -> Dense 4096->512 -> ReLU -> Dense 10.
//  * Three-conv net: 3x32x32, Conv 3x3x32 / 3x3x64 / 3x3x128 (pad 1) each + ReLU + MaxPool 2,
//    Dense 2048->128 + ReLU, Dense 10.
// Random weights are He-normal, biases small and uniform, so activations neither die nor explode.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dataset.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "quantize.h"
#include "runner.h"

namespace cnn_test {

using namespace tpu::cnn;

inline std::string bundled_model() {
  return std::string(TPU_CNN_SOURCE_DIR) + "/models/fashion_cnn.onnx";
}

struct ConvSpec {
  int cout, k, stride, pad;
  bool pool;
};

// An ONNX model (serialized) of convs (+ReLU, +MaxPool 2) then dense layers (+ReLU except the
// last), random weights from `seed`.
inline std::string random_cnn_onnx(const std::string& name, Shape3 in,
                                   const std::vector<ConvSpec>& convs,
                                   const std::vector<int>& dense, uint32_t seed) {
  std::mt19937 rng(seed);
  OnnxGraph g(name);
  g.input("input", {1, in.c, in.h, in.w});
  std::string x = "input";
  Shape3 s = in;
  auto weights = [&](size_t count, int64_t fan_in) {
    std::normal_distribution<float> d(0.0f, std::sqrt(2.0f / float(fan_in)));
    std::vector<float> w(count);
    for (auto& v : w) v = d(rng);
    return w;
  };
  auto biases = [&](int count) {
    std::uniform_real_distribution<float> d(-0.05f, 0.1f);
    std::vector<float> b(static_cast<size_t>(count));
    for (auto& v : b) v = d(rng);
    return b;
  };
  int i = 0;
  for (const auto& c : convs) {
    const std::string p = "conv" + std::to_string(++i);
    g.init_float(p + ".weight", {c.cout, s.c, c.k, c.k},
                 weights(size_t(c.cout) * s.c * c.k * c.k, int64_t(s.c) * c.k * c.k));
    g.init_float(p + ".bias", {c.cout}, biases(c.cout));
    g.node("Conv", {x, p + ".weight", p + ".bias"}, {p + "_out"},
           {OnnxAttr::Ints("kernel_shape", {c.k, c.k}),
            OnnxAttr::Ints("strides", {c.stride, c.stride}),
            OnnxAttr::Ints("pads", {c.pad, c.pad, c.pad, c.pad})},
           "/" + p + "/Conv");
    g.node("Relu", {p + "_out"}, {p + "_relu"}, {}, "/" + p + "/Relu");
    x = p + "_relu";
    s = {c.cout, (s.h + 2 * c.pad - c.k) / c.stride + 1, (s.w + 2 * c.pad - c.k) / c.stride + 1};
    if (c.pool) {
      g.node("MaxPool", {x}, {p + "_pool"},
             {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})},
             "/" + p + "/MaxPool");
      x = p + "_pool";
      s = {s.c, s.h / 2, s.w / 2};
    }
  }
  g.node("Flatten", {x}, {"flat"}, {OnnxAttr::Int("axis", 1)}, "/Flatten");
  x = "flat";
  int64_t k = s.size();
  i = 0;
  for (size_t d = 0; d < dense.size(); ++d) {
    const std::string p = "fc" + std::to_string(++i);
    g.init_float(p + ".weight", {dense[d], k}, weights(size_t(dense[d]) * size_t(k), k));
    g.init_float(p + ".bias", {dense[d]}, biases(dense[d]));
    const std::string out = d + 1 == dense.size() ? "logits" : p + "_out";
    g.node("Gemm", {x, p + ".weight", p + ".bias"}, {out}, {OnnxAttr::Int("transB", 1)},
           "/" + p + "/Gemm");
    x = out;
    if (d + 1 < dense.size()) {
      g.node("Relu", {x}, {p + "_relu"}, {}, "/" + p + "/Relu");
      x = p + "_relu";
    }
    k = dense[d];
  }
  g.output("logits", {1, dense.back()});
  return g.serialize();
}

inline Network cifar_convnet(uint32_t seed) {
  return import_onnx_bytes(
      random_cnn_onnx("cifar10_convnet", {3, 32, 32}, {{32, 3, 1, 1, true}, {64, 3, 1, 1, true}},
                      {512, 10}, seed),
      "cifar10_convnet");
}

inline Network three_conv_net(uint32_t seed) {
  return import_onnx_bytes(
      random_cnn_onnx("three_conv", {3, 32, 32},
                      {{32, 3, 1, 1, true}, {64, 3, 1, 1, true}, {128, 3, 1, 1, true}}, {128, 10},
                      seed),
      "three_conv");
}

inline std::vector<std::vector<float>> random_images(const Shape3& s, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.0f, 1.0f);
  std::vector<std::vector<float>> v(size_t(count), std::vector<float>(size_t(s.size())));
  for (auto& img : v)
    for (auto& x : img) x = d(rng);
  return v;
}

inline std::vector<std::vector<int32_t>> quantize_images(const QuantNetwork& q,
                                                         const std::vector<std::vector<float>>& x) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& img : x) {
    out.emplace_back(size_t(q.input.size()));
    q.quantize_input(img.data(), out.back().data());
  }
  return out;
}

inline std::vector<const int32_t*> pointers(const std::vector<std::vector<int32_t>>& v,
                                            size_t first = 0, size_t count = ~size_t{0}) {
  std::vector<const int32_t*> p;
  for (size_t i = first; i < v.size() && p.size() < count; ++i) p.push_back(v[i].data());
  return p;
}

// The bundled model quantized with the first `calibration` training images.
inline QuantNetwork fashion_quantized(int calibration = 200) {
  const Network net = load_onnx(bundled_model());
  const ImageSet train = load_fashion_mnist(fashion_mnist_dir(), true);
  std::vector<std::vector<float>> cal;
  for (int i = 0; i < calibration; ++i)
    cal.push_back(pixels_to_float(train.image(i), train.rows * train.cols));
  return quantize_model(net, cal);
}

}  // namespace cnn_test

namespace cnn_test {

// Builds ONNX graphs of the branching CNNs people deploy, with random He-normal weights:
// each method adds nodes after tensor `x` and returns the new tensor's name.
class GraphBuilder {
 public:
  GraphBuilder(const std::string& name, Shape3 in, uint32_t seed) : g_(name), rng_(seed) {
    g_.input("input", {1, in.c, in.h, in.w});
  }
  OnnxGraph& graph() { return g_; }

  std::string conv(const std::string& x, int cin, int cout, int k, int stride = 1, int pad = 0,
                   int group = 1, int dilation = 1, bool bias = true) {
    const std::string p = next("conv");
    g_.init_float(p + ".w", {cout, cin / group, k, k},
                  normal(size_t(cout) * (cin / group) * k * k, double(cin / group) * k * k));
    std::vector<std::string> ins{x, p + ".w"};
    if (bias) {
      g_.init_float(p + ".b", {cout}, uniform(size_t(cout), -0.05f, 0.1f));
      ins.push_back(p + ".b");
    }
    g_.node("Conv", ins, {p},
            {OnnxAttr::Ints("kernel_shape", {k, k}), OnnxAttr::Ints("strides", {stride, stride}),
             OnnxAttr::Ints("pads", {pad, pad, pad, pad}), OnnxAttr::Int("group", group),
             OnnxAttr::Ints("dilations", {dilation, dilation})},
            "/" + p);
    return p;
  }
  std::string bn(const std::string& x, int c) {
    const std::string p = next("bn");
    g_.init_float(p + ".scale", {c}, uniform(size_t(c), 0.5f, 1.5f));
    g_.init_float(p + ".bias", {c}, uniform(size_t(c), -0.2f, 0.2f));
    g_.init_float(p + ".mean", {c}, uniform(size_t(c), -0.1f, 0.1f));
    g_.init_float(p + ".var", {c}, uniform(size_t(c), 0.5f, 2.0f));
    g_.node("BatchNormalization", {x, p + ".scale", p + ".bias", p + ".mean", p + ".var"}, {p}, {},
            "/" + p);
    return p;
  }
  std::string op(const std::string& type, const std::vector<std::string>& ins,
                 const std::vector<OnnxAttr>& attrs = {}) {
    const std::string p = next(type);
    g_.node(type, ins, {p}, attrs, "/" + p);
    return p;
  }
  std::string relu(const std::string& x) { return op("Relu", {x}); }
  std::string clip(const std::string& x, float lo, float hi) {
    const std::string p = next("clip");
    g_.init_float(p + ".lo", {}, {lo});
    g_.init_float(p + ".hi", {}, {hi});
    g_.node("Clip", {x, p + ".lo", p + ".hi"}, {p}, {}, "/" + p);
    return p;
  }
  std::string constant_op(const std::string& type, const std::string& x, float v) {
    const std::string p = next(type);
    g_.init_float(p + ".c", {}, {v});
    g_.node(type, {x, p + ".c"}, {p}, {}, "/" + p);
    return p;
  }
  std::string prelu(const std::string& x, float slope) {
    return prelu(x, std::vector<float>{slope});
  }
  // One slope, or one per channel.
  std::string prelu(const std::string& x, const std::vector<float>& slope) {
    const std::string p = next("prelu");
    if (slope.size() == 1)
      g_.init_float(p + ".slope", {1}, slope);
    else
      g_.init_float(p + ".slope", {int64_t(slope.size()), 1, 1}, slope);
    g_.node("PRelu", {x, p + ".slope"}, {p}, {}, "/" + p);
    return p;
  }
  std::string maxpool(const std::string& x, int k, int s, int pad = 0, bool ceil = false) {
    return op(
        "MaxPool", {x},
        {OnnxAttr::Ints("kernel_shape", {k, k}), OnnxAttr::Ints("strides", {s, s}),
         OnnxAttr::Ints("pads", {pad, pad, pad, pad}), OnnxAttr::Int("ceil_mode", ceil ? 1 : 0)});
  }
  std::string avgpool(const std::string& x, int k, int s, int pad = 0) {
    return op(
        "AveragePool", {x},
        {OnnxAttr::Ints("kernel_shape", {k, k}), OnnxAttr::Ints("strides", {s, s}),
         OnnxAttr::Ints("pads", {pad, pad, pad, pad}), OnnxAttr::Int("count_include_pad", 1)});
  }
  std::string concat(const std::vector<std::string>& xs) {
    return op("Concat", xs, {OnnxAttr::Int("axis", 1)});
  }
  std::string gemm(const std::string& x, int64_t k, int n) {
    const std::string p = next("fc");
    g_.init_float(p + ".w", {n, k}, normal(size_t(n) * size_t(k), double(k)));
    g_.init_float(p + ".b", {n}, uniform(size_t(n), -0.05f, 0.1f));
    g_.node("Gemm", {x, p + ".w", p + ".b"}, {p}, {OnnxAttr::Int("transB", 1)}, "/" + p);
    return p;
  }
  std::string serialize(const std::string& out) {
    g_.output(out);
    return g_.serialize();
  }

  // Building blocks.
  std::string basic_block(const std::string& x, int cin, int cout, int stride) {
    std::string y = relu(bn(conv(x, cin, cout, 3, stride, 1, 1, 1, false), cout));
    y = bn(conv(y, cout, cout, 3, 1, 1, 1, 1, false), cout);
    const std::string sc =
        stride == 1 && cin == cout ? x : bn(conv(x, cin, cout, 1, stride, 0, 1, 1, false), cout);
    return relu(op("Add", {y, sc}));
  }
  std::string inverted_residual(const std::string& x, int cin, int cout, int stride, int t) {
    const int h = cin * t;
    std::string y = clip(conv(x, cin, h, 1), 0.0f, 6.0f);
    y = clip(conv(y, h, h, 3, stride, 1, h), 0.0f, 6.0f);
    y = conv(y, h, cout, 1);
    return stride == 1 && cin == cout ? op("Add", {x, y}) : y;
  }
  std::string fire(const std::string& x, int cin, int squeeze, int expand) {
    const std::string s = relu(conv(x, cin, squeeze, 1));
    return concat({relu(conv(s, squeeze, expand, 1)), relu(conv(s, squeeze, expand, 3, 1, 1))});
  }

 private:
  std::string next(const std::string& kind) { return kind + std::to_string(++id_); }
  std::vector<float> normal(size_t n, double fan_in) {
    std::normal_distribution<float> d(0.0f, float(std::sqrt(2.0 / fan_in)));
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng_);
    return v;
  }
  std::vector<float> uniform(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng_);
    return v;
  }
  OnnxGraph g_;
  std::mt19937 rng_;
  int id_ = 0;
};

// A small ResNet: stem conv + BN + ReLU, max-pool 3/2 pad 1, an identity block, two stride-2
// blocks with 1x1 projections, global average pooling, dense.
inline Network small_resnet(uint32_t seed) {
  GraphBuilder b("small_resnet", {1, 28, 28}, seed);
  std::string x = b.relu(b.bn(b.conv("input", 1, 16, 3, 1, 1, 1, 1, false), 16));
  x = b.maxpool(x, 3, 2, 1);
  x = b.basic_block(x, 16, 16, 1);
  x = b.basic_block(x, 16, 32, 2);
  x = b.basic_block(x, 32, 48, 2);
  x = b.op("GlobalAveragePool", {x});
  x = b.op("Flatten", {x});
  return import_onnx_bytes(b.serialize(b.gemm(x, 48, 10)), "small_resnet");
}

// A small MobileNetV2: ReLU6, inverted residuals with depthwise 3x3, ReduceMean over H and W.
inline Network small_mobilenet(uint32_t seed) {
  GraphBuilder b("small_mobilenet", {1, 28, 28}, seed);
  std::string x = b.clip(b.conv("input", 1, 16, 3, 2, 1), 0.0f, 6.0f);
  x = b.inverted_residual(x, 16, 16, 1, 3);
  x = b.inverted_residual(x, 16, 24, 2, 3);
  x = b.inverted_residual(x, 24, 24, 1, 3);
  x = b.op("ReduceMean", {x}, {OnnxAttr::Ints("axes", {2, 3}), OnnxAttr::Int("keepdims", 0)});
  return import_onnx_bytes(b.serialize(b.gemm(x, 24, 10)), "small_mobilenet");
}

// A small SqueezeNet: Fire modules (concatenation), max-pool with ceil_mode, a final 1x1
// classifier conv, global average pooling.
inline Network small_squeezenet(uint32_t seed) {
  GraphBuilder b("small_squeezenet", {1, 28, 28}, seed);
  std::string x = b.relu(b.conv("input", 1, 24, 3, 2, 1));
  x = b.fire(x, 24, 8, 16);
  x = b.maxpool(x, 3, 2, 0, true);
  x = b.fire(x, 32, 12, 20);
  x = b.relu(b.conv(x, 40, 10, 1));
  x = b.op("GlobalAveragePool", {x});
  return import_onnx_bytes(b.serialize(b.op("Flatten", {x})), "small_squeezenet");
}

// Everything else the importer claims, in one network with odd channel counts: dilated and
// grouped convolution, Sigmoid, Tanh, LeakyRelu, HardSigmoid, x * HardSigmoid(x), HardSwish,
// PRelu, a two-part concatenation max-pooled with padding, an Add of operands of different
// scales, a padded AveragePool, Mul/Div by constants, GlobalAveragePool.
inline Network every_op_network(uint32_t seed) {
  GraphBuilder b("every_op", {3, 17, 15}, seed);
  std::string x = b.conv("input", 3, 20, 3, 1, 2, 1, 2);  // dilated, padded
  x = b.op("Sigmoid", {x});
  const std::string g = b.conv(x, 20, 20, 3, 2, 1, 4);  // 4 groups, stride 2
  std::string t = b.op("Tanh", {g});
  std::string l = b.op("LeakyRelu", {b.conv(g, 20, 12, 1)}, {OnnxAttr::Float("alpha", 0.1f)});
  std::string c = b.concat({t, l});  // 32 channels, two parts
  c = b.maxpool(c, 3, 1, 1);         // padded: fuses into both parts of the concat
  std::string h = b.op("HardSigmoid", {b.conv(c, 32, 16, 1)});
  std::string s = b.conv(c, 32, 16, 1);
  s = b.op("Mul",
           {s, b.op("HardSigmoid", {s},
                    {OnnxAttr::Float("alpha", 1.0f / 6.0f), OnnxAttr::Float("beta", 0.5f)})});
  std::string a = b.op("Add", {h, s});  // operands of different scales
  a = b.avgpool(a, 3, 2, 1);            // padded, count_include_pad
  a = b.constant_op("Mul", b.conv(a, 16, 24, 1), 0.5f);
  a = b.constant_op("Div", a, 4.0f);
  a = b.op("HardSwish", {a});
  a = b.prelu(b.conv(a, 24, 24, 3, 1, 1), 0.2f);
  a = b.op("GlobalAveragePool", {a});
  a = b.gemm(b.op("Flatten", {a}), 24, 7);
  return import_onnx_bytes(b.serialize(a), "every_op");
}

}  // namespace cnn_test

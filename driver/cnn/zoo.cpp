// SPDX-License-Identifier: Apache-2.0
#include "zoo.h"

#include <cmath>
#include <random>

#include "onnx_export.h"
#include "onnx_import.h"

namespace tpu::cnn {

namespace {

// Adds torchvision-style nodes to an ONNX graph; each method returns its output tensor's name.
class Builder {
 public:
  Builder(const std::string& name, int size, uint32_t seed) : g_(name), rng_(seed) {
    g_.input("input", {1, 3, size, size});
  }

  std::string conv(const std::string& x, const std::string& p, int cin, int cout, int k, int stride,
                   int pad, int group = 1) {
    g_.init_float(
        p + ".weight", {cout, cin / group, k, k},
        normal(size_t(cout) * size_t(cin / group) * size_t(k * k), double(cin / group) * k * k));
    g_.node("Conv", {x, p + ".weight"}, {p + "_out"},
            {OnnxAttr::Ints("kernel_shape", {k, k}), OnnxAttr::Ints("strides", {stride, stride}),
             OnnxAttr::Ints("pads", {pad, pad, pad, pad}), OnnxAttr::Int("group", group)},
            "/" + p + "/Conv");
    return p + "_out";
  }
  std::string bn(const std::string& x, const std::string& p, int c) {
    g_.init_float(p + ".weight", {c}, uniform(size_t(c), 0.5f, 1.0f));
    g_.init_float(p + ".bias", {c}, uniform(size_t(c), -0.1f, 0.2f));
    g_.init_float(p + ".running_mean", {c}, uniform(size_t(c), -0.1f, 0.1f));
    g_.init_float(p + ".running_var", {c}, uniform(size_t(c), 0.8f, 1.5f));
    g_.node("BatchNormalization",
            {x, p + ".weight", p + ".bias", p + ".running_mean", p + ".running_var"}, {p + "_bn"},
            {}, "/" + p + "/BatchNormalization");
    return p + "_bn";
  }
  std::string relu(const std::string& x, const std::string& p) {
    g_.node("Relu", {x}, {p + "_relu"}, {}, "/" + p + "/Relu");
    return p + "_relu";
  }
  std::string relu6(const std::string& x, const std::string& p) {
    g_.init_float(p + ".min", {}, {0.0f});
    g_.init_float(p + ".max", {}, {6.0f});
    g_.node("Clip", {x, p + ".min", p + ".max"}, {p + "_clip"}, {}, "/" + p + "/Clip");
    return p + "_clip";
  }
  std::string add(const std::string& a, const std::string& b, const std::string& p) {
    g_.node("Add", {a, b}, {p + "_add"}, {}, "/" + p + "/Add");
    return p + "_add";
  }
  std::string maxpool(const std::string& x, const std::string& p, int k, int s, int pad) {
    g_.node("MaxPool", {x}, {p + "_pool"},
            {OnnxAttr::Ints("kernel_shape", {k, k}), OnnxAttr::Ints("strides", {s, s}),
             OnnxAttr::Ints("pads", {pad, pad, pad, pad})},
            "/" + p + "/MaxPool");
    return p + "_pool";
  }
  // Global average pooling, flatten and the classifier.
  std::string head(const std::string& x, int c, int classes) {
    g_.node("GlobalAveragePool", {x}, {"gap"}, {}, "/avgpool/GlobalAveragePool");
    g_.node("Flatten", {"gap"}, {"flat"}, {OnnxAttr::Int("axis", 1)}, "/Flatten");
    g_.init_float("fc.weight", {classes, c}, normal(size_t(classes) * size_t(c), double(c)));
    g_.init_float("fc.bias", {classes}, uniform(size_t(classes), -0.05f, 0.05f));
    g_.node("Gemm", {"flat", "fc.weight", "fc.bias"}, {"logits"}, {OnnxAttr::Int("transB", 1)},
            "/fc/Gemm");
    g_.output("logits", {1, classes});
    return g_.serialize();
  }

 private:
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
};

std::string resnet(const std::string& name, bool bottleneck, const std::vector<int>& blocks,
                   int size, uint32_t seed) {
  Builder b(name, size, seed);
  std::string x = b.relu(b.bn(b.conv("input", "conv1", 3, 64, 7, 2, 3), "bn1", 64), "relu");
  x = b.maxpool(x, "maxpool", 3, 2, 1);
  int cin = 64;
  const int expansion = bottleneck ? 4 : 1;
  for (size_t s = 0; s < blocks.size(); ++s) {
    const int planes = 64 << s;
    for (int i = 0; i < blocks[s]; ++i) {
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(i);
      const int stride = (i == 0 && s > 0) ? 2 : 1;
      const int cout = planes * expansion;
      std::string y;
      if (bottleneck) {
        y = b.relu(b.bn(b.conv(x, p + ".conv1", cin, planes, 1, 1, 0), p + ".bn1", planes),
                   p + ".1");
        y = b.relu(b.bn(b.conv(y, p + ".conv2", planes, planes, 3, stride, 1), p + ".bn2", planes),
                   p + ".2");
        y = b.bn(b.conv(y, p + ".conv3", planes, cout, 1, 1, 0), p + ".bn3", cout);
      } else {
        y = b.relu(b.bn(b.conv(x, p + ".conv1", cin, planes, 3, stride, 1), p + ".bn1", planes),
                   p + ".1");
        y = b.bn(b.conv(y, p + ".conv2", planes, planes, 3, 1, 1), p + ".bn2", planes);
      }
      std::string sc = x;
      if (stride != 1 || cin != cout)
        sc = b.bn(b.conv(x, p + ".downsample.0", cin, cout, 1, stride, 0), p + ".downsample.1",
                  cout);
      x = b.relu(b.add(y, sc, p), p);
      cin = cout;
    }
  }
  return b.head(x, cin, 1000);
}

std::string mobilenetv2(int size, uint32_t seed) {
  Builder b("mobilenetv2", size, seed);
  std::string x = b.relu6(b.bn(b.conv("input", "features.0.0", 3, 32, 3, 2, 1), "features.0.1", 32),
                          "features.0");
  int cin = 32, f = 1;
  // t (expansion), c (channels), n (blocks), s (stride of the first)
  const int settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& st : settings)
    for (int i = 0; i < st[2]; ++i, ++f) {
      const std::string p = "features." + std::to_string(f) + ".conv";
      const int stride = i == 0 ? st[3] : 1, hidden = cin * st[0], cout = st[1];
      std::string y = x;
      int j = 0;
      if (st[0] != 1) {
        const std::string q = p + "." + std::to_string(j++);
        y = b.relu6(b.bn(b.conv(y, q + ".0", cin, hidden, 1, 1, 0), q + ".1", hidden), q);
      }
      const std::string q = p + "." + std::to_string(j++);
      y = b.relu6(b.bn(b.conv(y, q + ".0", hidden, hidden, 3, stride, 1, hidden), q + ".1", hidden),
                  q);
      const std::string c1 = p + "." + std::to_string(j++), c2 = p + "." + std::to_string(j++);
      y = b.bn(b.conv(y, c1, hidden, cout, 1, 1, 0), c2, cout);
      x = stride == 1 && cin == cout ? b.add(x, y, "features." + std::to_string(f)) : y;
      cin = cout;
    }
  const std::string p = "features." + std::to_string(f);
  x = b.relu6(b.bn(b.conv(x, p + ".0", cin, 1280, 1, 1, 0), p + ".1", 1280), p);
  return b.head(x, 1280, 1000);
}

}  // namespace

std::vector<std::string> zoo_names() { return {"resnet18", "resnet50", "mobilenetv2"}; }

std::string zoo_onnx(const std::string& name, uint32_t seed, int image_size) {
  if (image_size < 32 || image_size > 1024)
    throw Error("zoo model " + name + ": image size " + std::to_string(image_size) +
                " outside 32..1024");
  if (name == "resnet18") return resnet(name, false, {2, 2, 2, 2}, image_size, seed);
  if (name == "resnet50") return resnet(name, true, {3, 4, 6, 3}, image_size, seed);
  if (name == "mobilenetv2") return mobilenetv2(image_size, seed);
  std::string known;
  for (const auto& n : zoo_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown zoo model '" + name + "' (expected one of: " + known + ")");
}

Network zoo_network(const std::string& name, uint32_t seed, int image_size) {
  return import_onnx_bytes(zoo_onnx(name, seed, image_size), name);
}

std::vector<std::vector<float>> zoo_images(const Shape3& s, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.0f, 1.0f);
  std::vector<std::vector<float>> v(size_t(count), std::vector<float>(size_t(s.size())));
  for (auto& img : v)
    for (auto& x : img) x = d(rng);
  return v;
}

}  // namespace tpu::cnn

// SPDX-License-Identifier: Apache-2.0
// The concatenation steps of the fusion walk (driver/cnn/passes/concat_steps.h): a QLinearConcat's
// output quantization (QuantizeConcat: the Copy requantizes unless every part, as fused, has it)
// and a value an Add reads as one tensor (OneTensor: a Copy only when it is several parts as
// fused). On hand-built networks (the Copy layers holding the steps, as the importer leaves them),
// then through the importer (a one-input QLinearConcat against ONNX's requantization computed
// here, a max-pool of a QLinearConcat, an Add reading it).
#include "passes/concat_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cnn_test_util.h"
#include "ir_builders.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "passes/fuse_layers.h"
#include "quantize.h"
#include "reference.h"

namespace {

using namespace tpu::cnn;
using namespace cnn_test;

// A 3x3 Conv (8x8 -> 8x8) with `cout` channels reading the network input, quantized `q` (if set).
Layer conv(const std::string& name, int cout, std::optional<TensorQuant> q) {
  Layer l = conv_layer(name, {kNetworkInput}, cout, 3);
  l.out_quant = q;
  return l;
}

// The Copy layer the importer makes of a QLinearConcat of layers `inputs` of `net` to `q`,
// `sources` the layers whose outputs only it reads (-1: read by others too).
Layer qconcat(const Network& net, const std::string& name, std::vector<int> inputs,
              const TensorQuant& q, std::vector<int> sources) {
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = "Concat";
  c.inputs = std::move(inputs);
  auto shape = [&](int p) { return p == kNetworkInput ? net.input : net.layers[size_t(p)].out; };
  c.in = shape(c.inputs[0]);
  c.in.c = 0;
  for (int p : c.inputs) {
    c.input_channels.push_back(shape(p).c);
    c.in.c += shape(p).c;
  }
  c.out_quant = q;
  c.step.kind = StepKind::QuantizeConcat;
  c.step.quant = q;
  c.step.sources = std::move(sources);
  c.infer_shapes();
  return c;
}

// The Copy layer of a pending 2x2/2 max-pool of layer `in` (8x8, `channels`) joining `source`.
Layer max_pool(const std::string& name, int in, int channels, int source) {
  Layer p;
  p.kind = LayerKind::Copy;
  p.name = name;
  p.op = "MaxPool";
  p.inputs = {in};
  p.input_channels = {channels};
  p.in = {channels, 8, 8};
  p.pool_k = p.pool_s = 2;
  p.infer_shapes();
  p.step.kind = StepKind::MaxPool;
  p.step.sources = {source};
  p.step.pool.k = p.step.pool.s = 2;
  p.step.pool.oh = p.step.pool.ow = 4;
  return p;
}

// The Copy holding the OneTensor step the importer puts before an Add reading layer `in`.
Layer one_tensor(const Network& net, const std::string& name, int in) {
  Layer c;
  c.kind = LayerKind::Copy;
  c.name = name;
  c.op = "Concat";
  c.inputs = {in};
  c.input_channels = {net.layers[size_t(in)].out.c};
  c.in = net.layers[size_t(in)].out;
  c.out_quant = net.layers[size_t(in)].out_quant;
  c.step.kind = StepKind::OneTensor;
  c.infer_shapes();
  return c;
}

Layer add(const Network& net, const std::string& name, int a, int b) {
  Layer l;
  l.kind = LayerKind::Add;
  l.name = name;
  l.op = "Add";
  l.inputs = {a, b};
  l.input_channels = {net.layers[size_t(a)].out.c, net.layers[size_t(b)].out.c};
  l.in = net.layers[size_t(a)].out;
  l.infer_shapes();
  return l;
}

const TensorQuant kQ = uint8_quant(0.5f), kOther = uint8_quant(0.25f);

// ---- quantize_concat on its own ---------------------------------------------------------------

TEST(QuantizeConcat, LeavesOnlyWhenEveryPartHasTheQuantization) {
  Network net = input_net();
  net.input_quant = kQ;
  net.layers.push_back(conv("a", 2, kQ));
  net.layers.push_back(conv("b", 3, kQ));
  net.layers.push_back(conv("c", 3, kOther));
  net.layers.push_back(conv("d", 3, std::nullopt));
  auto resolve = [&](std::vector<int> inputs) {
    return passes::quantize_concat(net, qconcat(net, "cat", std::move(inputs), kQ, {}));
  };
  const passes::ConcatStep same = resolve({0, 1, kNetworkInput});
  EXPECT_FALSE(same.stays);
  EXPECT_EQ(same.parts, (std::vector<int>{0, 1, kNetworkInput}));
  for (const std::vector<int>& in : {std::vector<int>{0, 2}, std::vector<int>{1, 3}}) {
    const passes::ConcatStep other = resolve(in);
    EXPECT_TRUE(other.stays);  // quantized otherwise, or not at all
    EXPECT_TRUE(other.parts.empty());
  }
  // One input quantized otherwise requantizes too (it used to be read as it was).
  EXPECT_TRUE(resolve({2}).stays);
  EXPECT_FALSE(resolve({1}).stays);
  net.input_quant = kOther;
  EXPECT_TRUE(resolve({0, kNetworkInput}).stays);
}

TEST(ReadAsOneTensor, ACopyOnlyOfSeveralParts) {
  Layer c;
  c.inputs = {3};
  EXPECT_FALSE(passes::read_as_one_tensor(c).stays);
  EXPECT_EQ(passes::read_as_one_tensor(c).parts, std::vector<int>{3});
  c.inputs = {kNetworkInput};
  EXPECT_FALSE(passes::read_as_one_tensor(c).stays);
  c.inputs = {1, 2};
  EXPECT_TRUE(passes::read_as_one_tensor(c).stays);
  EXPECT_TRUE(passes::read_as_one_tensor(c).parts.empty());
}

// ---- in the fusion walk ---------------------------------------------------------------------

// Parts quantized as the output: the Copy leaves and the conv after it reads the parts in place;
// one part quantized otherwise: the Copy stays, requantizing both.
TEST(QuantizeConcatStep, ReadersReadThePartsOrTheRequantizingCopy) {
  for (const bool same : {true, false}) {
    Network net = input_net();
    net.layers.push_back(conv("a", 2, kQ));
    net.layers.push_back(conv("b", 3, same ? kQ : kOther));
    net.layers.push_back(qconcat(net, "cat", {0, 1}, kQ, {0, 1}));
    net.layers.push_back(conv_layer("next", {2}, 2, 1));
    net.layers.back().input_channels = {5};
    net.layers.back().in = {5, 8, 8};
    net.layers.back().weight.assign(2 * 5, 1.0f);
    net.layers.back().infer_shapes();
    const passes::FusedNetwork f = passes::fuse_steps(net);
    const Layer& next = f.net.layers.back();
    if (same) {
      ASSERT_EQ(f.net.layers.size(), 3u);
      EXPECT_EQ(f.parts_of[2], (std::vector<int>{0, 1}));
      EXPECT_EQ(next.inputs, (std::vector<int>{0, 1}));
      EXPECT_EQ(next.input_channels, (std::vector<int>{2, 3}));
      continue;
    }
    ASSERT_EQ(f.net.layers.size(), 4u);
    const Layer& c = f.net.layers[2];
    EXPECT_EQ(c.kind, LayerKind::Copy);
    EXPECT_EQ(c.name, "cat");
    EXPECT_EQ(c.inputs, (std::vector<int>{0, 1}));
    EXPECT_EQ(c.out_quant, kQ);
    EXPECT_EQ(c.step.kind, StepKind::None);
    EXPECT_EQ(f.net.layers[1].out_quant, kOther);  // the part keeps its own
    EXPECT_EQ(next.inputs, std::vector<int>{2});
  }
}

// The parts as fused: a max-pool of a plain concatenation that joins each part gives them its
// quantization, so a QLinearConcat of that pooled concatenation (quantized alike) leaves though
// the convolutions had none before the walk.
TEST(QuantizeConcatStep, PartsAsFused) {
  Network net = input_net();
  net.layers.push_back(conv("a", 2, std::nullopt));
  net.layers.push_back(conv("b", 3, std::nullopt));
  Layer pool = max_pool("pool", 0, 5, 0);
  pool.inputs = {0, 1};
  pool.input_channels = {2, 3};
  pool.step.sources = {0, 1};
  pool.out_quant = kQ;
  net.layers.push_back(pool);
  net.layers.push_back(qconcat(net, "cat", {2}, kQ, {2}));
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 2u);
  for (int i : {0, 1}) {
    EXPECT_EQ(f.net.layers[size_t(i)].out_quant, kQ);
    EXPECT_EQ(f.net.layers[size_t(i)].pool_k, 2);
  }
  EXPECT_EQ(f.parts_of[3], (std::vector<int>{0, 1}));
}

// A max-pool reading only the QLinearConcat joins each part when the step leaves and each part
// is a layer's output only the concatenation reads; it joins the Copy when the step stays; it
// stays a Copy of the parts when a part is read by others too.
TEST(QuantizeConcatStep, AMaxPoolOfItJoinsThePartsOrTheCopy) {
  enum class Case { Leaves, Stays, Shared };
  for (const Case k : {Case::Leaves, Case::Stays, Case::Shared}) {
    SCOPED_TRACE(int(k));
    Network net = input_net();
    net.layers.push_back(conv("a", 2, kQ));
    net.layers.push_back(conv("b", 3, k == Case::Stays ? kOther : kQ));
    net.layers.push_back(qconcat(net, "cat", {0, 1}, kQ, {0, k == Case::Shared ? -1 : 1}));
    net.layers.push_back(max_pool("pool", 2, 5, 2));
    net.layers.back().out_quant = kQ;
    const passes::FusedNetwork f = passes::fuse_steps(net);
    if (k == Case::Leaves) {
      ASSERT_EQ(f.net.layers.size(), 2u);
      EXPECT_EQ(f.parts_of[3], (std::vector<int>{0, 1}));
      for (int i : {0, 1})
        EXPECT_EQ(f.net.layers[size_t(i)].fused, std::vector<std::string>{"MaxPool pool"});
      EXPECT_TRUE(f.closed[3]);
      continue;
    }
    ASSERT_EQ(f.net.layers.size(), 3u);
    const Layer& last = f.net.layers[2];
    EXPECT_EQ(last.pool_k, 2);
    if (k == Case::Stays) {
      EXPECT_EQ(last.name, "cat");  // the requantizing Copy pools
      EXPECT_EQ(last.fused, std::vector<std::string>{"MaxPool pool"});
    } else {
      EXPECT_TRUE(f.closed[2]);
      EXPECT_EQ(last.name, "pool");
      EXPECT_EQ(last.inputs, (std::vector<int>{0, 1}));
    }
  }
}

// A QLinearConcat of one exact copy (a standalone max-pool) leaves when it has the same
// quantization. A QuantizeLinear of other parameters after it requantizes that copy in place
// when only the concatenation reads it; when another layer reads it too, it must not (that
// reader reads it as it is): a Copy requantizes it.
TEST(QuantizeConcatStep, NoRequantizationInPlaceOfAPartOthersRead) {
  for (const bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared" : "only the concatenation reads the copy");
    Network net = input_net();
    net.layers.push_back(conv("a", 4, kQ));
    Layer copy = max_pool("pool", 0, 4, -1);
    copy.step = PendingStep();  // (a standalone max-pool, as fused: an exact copy)
    copy.out_quant = kQ;
    net.layers.push_back(copy);
    net.layers.push_back(qconcat(net, "cat", {1}, kQ, {shared ? -1 : 1}));
    Layer q;
    q.kind = LayerKind::Copy;
    q.name = "q";
    q.op = "QuantizeLinear";
    q.inputs = {2};
    q.input_channels = {4};
    q.in = {4, 4, 4};
    q.out_quant = kOther;
    q.step.kind = StepKind::Quantize;
    q.step.quant = kOther;
    q.step.sole_reader = true;  // nothing else reads the QLinearConcat's output
    q.step.sources = {2};
    q.infer_shapes();
    net.layers.push_back(q);
    net.layers.push_back(conv_layer("next", {3}, 2, 1));
    if (shared) net.layers.push_back(conv_layer("other", {1}, 2, 1));
    for (size_t i = 4; i < net.layers.size(); ++i) {
      net.layers[i].in = {4, 4, 4};
      net.layers[i].infer_shapes();
    }
    const passes::FusedNetwork f = passes::fuse_steps(net);
    EXPECT_EQ(f.parts_of[2], std::vector<int>{1});
    EXPECT_EQ(f.closed[2], shared);
    if (!shared) {
      ASSERT_EQ(f.net.layers.size(), 3u);
      EXPECT_EQ(f.net.layers[1].out_quant, kOther);  // requantized in place
      EXPECT_EQ(f.net.layers[2].inputs, std::vector<int>{1});
      continue;
    }
    ASSERT_EQ(f.net.layers.size(), 5u);
    EXPECT_EQ(f.net.layers[1].out_quant, kQ);  // as "other" reads it
    EXPECT_EQ(f.net.layers[2].op, "QuantizeLinear");
    EXPECT_EQ(f.net.layers[2].inputs, std::vector<int>{1});
    EXPECT_EQ(f.net.layers[2].out_quant, kOther);
    EXPECT_EQ(f.net.layers[3].inputs, std::vector<int>{2});
    EXPECT_EQ(f.net.layers[4].inputs, std::vector<int>{1});
  }
}

// An Add reading a max-pool that joins each part of a concatenation reads a Copy of the pooled
// parts; reading a Relu that joins its conv, it reads the conv (the step leaves).
TEST(OneTensorStep, ACopyOfAPooledConcatenationOnly) {
  Network net = input_net();
  net.layers.push_back(conv("a", 2, std::nullopt));
  net.layers.push_back(conv("b", 2, std::nullopt));
  Layer pool = max_pool("pool", 0, 4, 0);
  pool.inputs = {0, 1};
  pool.input_channels = {2, 2};
  pool.step.sources = {0, 1};
  net.layers.push_back(pool);                         // 2
  net.layers.push_back(one_tensor(net, "p", 2));      // 3
  net.layers.push_back(conv("c", 4, std::nullopt));   // 4
  net.layers.push_back(max_pool("pool_c", 4, 4, 4));  // 5: joins c
  net.layers.push_back(one_tensor(net, "pc", 5));     // 6
  net.layers.push_back(add(net, "add", 3, 6));        // 7
  const passes::FusedNetwork f = passes::fuse_steps(net);
  ASSERT_EQ(f.net.layers.size(), 5u);
  const Layer& copy = f.net.layers[2];
  EXPECT_EQ(copy.kind, LayerKind::Copy);
  EXPECT_EQ(copy.name, "p");
  EXPECT_EQ(copy.inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(copy.input_channels, (std::vector<int>{2, 2}));
  EXPECT_EQ(copy.out, (Shape3{4, 4, 4}));
  EXPECT_EQ(copy.step.kind, StepKind::None);
  EXPECT_EQ(f.net.layers[3].name, "c");
  EXPECT_EQ(f.parts_of[6], std::vector<int>{3});
  const Layer& sum = f.net.layers[4];
  EXPECT_EQ(sum.kind, LayerKind::Add);
  EXPECT_EQ(sum.inputs, (std::vector<int>{2, 3}));
}

// ---- through the importer ---------------------------------------------------------------------

// The scale `name`_s and zero point `name`_z (uint8) of a quantization.
void quantization(OnnxGraph& g, const std::string& name, float scale, uint8_t zp) {
  g.init_float(name + "_s", {}, {scale});
  g.init_uint8(name + "_z", {}, {zp});
}

// ONNX's QLinearConcat requantizes each input to Y's quantization, one input too: here a uint8
// image (scale 1/255) max-pooled on its integers, then Y of scale 3/255, zero point 180. Before
// the concatenation steps the importer read the pooled integers as they were (no Copy); this
// computes ONNX's y = saturate(round(x * x_scale / y_scale) + y_zp) (no ties: x / 3) and requires
// the integer reference and the chip's program (golden model) to give it.
TEST(QuantizeConcatImport, OneInputRequantizesToYsQuantization) {
  const float in_scale = 1.0f / 255.0f, y_scale = 3.0f / 255.0f;
  const int y_zp = 180;
  OnnxGraph g("one_input");
  g.input("x", {1, 2, 6, 6});
  quantization(g, "in", in_scale, 0);
  quantization(g, "y", y_scale, uint8_t(y_zp));
  g.node("QuantizeLinear", {"x", "in_s", "in_z"}, {"xq"}, {}, "quant");
  g.node("MaxPool", {"xq"}, {"p"},
         {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
  g.node("QLinearConcat", {"y_s", "y_z", "p", "in_s", "in_z"}, {"c"}, {OnnxAttr::Int("axis", 1)},
         "cat", "com.microsoft");
  g.node("DequantizeLinear", {"c", "y_s", "y_z"}, {"y"}, {}, "dequant");
  g.output("y");
  const Network net = import_onnx_bytes(g.serialize(), "one_input.onnx");
  ASSERT_EQ(net.layers.size(), 2u) << net.summary();
  EXPECT_EQ(net.layers[1].kind, LayerKind::Copy);
  EXPECT_EQ(net.layers[1].inputs, std::vector<int>{0});
  ASSERT_TRUE(fully_quantized(net)) << net.summary();
  const QuantNetwork q = quantize(net, nullptr);
  EXPECT_EQ(q.output_q(), (TensorQuant{y_scale, y_zp, true}));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pixel(0, 255);
  std::vector<std::vector<int32_t>> images;
  for (int n = 0; n < 4; ++n) {
    std::vector<int32_t> x(2 * 6 * 6);
    for (auto& v : x) v = pixel(rng);
    if (n == 0) x[0] = 255;  // (saturates: 85 + 180)
    images.push_back(x);
    std::vector<int32_t> want;
    for (int c = 0; c < 2; ++c)
      for (int oy = 0; oy < 3; ++oy)
        for (int ox = 0; ox < 3; ++ox) {
          int m = 0;
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx)
              m = std::max(m, x[size_t((c * 6 + 2 * oy + dy) * 6 + 2 * ox + dx)]);
          const double r = std::nearbyint(double(m) * double(in_scale) / double(y_scale));
          want.push_back(int32_t(std::min(255.0, std::max(0.0, r + y_zp))));
        }
    EXPECT_EQ(int_forward(q, x.data()), want) << "image " << n;
  }
  expect_bit_exact(q, images, 2);
}

// QLinearConvs quantized as Y, then a QLinearConcat and a MaxPool only it reads: the max-pool
// joins each convolution; an Add of the concatenation reads a Copy of the parts (a OneTensor
// step that stays), each convolution's output read in place.
TEST(QuantizeConcatImport, SameQuantizationPoolsInTheParts) {
  for (const bool add_after : {false, true}) {
    SCOPED_TRACE(add_after ? "Add" : "MaxPool");
    OnnxGraph g("qcat");
    g.input("x", {1, 2, 6, 6});
    quantization(g, "in", 1.0f / 255.0f, 0);
    quantization(g, "y", 0.05f, 128);
    g.init_int8("w", {2, 2, 1, 1}, {64, -32, 16, 127});
    g.init_float("w_s", {}, {0.01f});
    g.init_int8("w_z", {}, {0});
    g.node("QuantizeLinear", {"x", "in_s", "in_z"}, {"xq"}, {}, "quant");
    for (const char* c : {"a", "b"})
      g.node("QLinearConv", {"xq", "in_s", "in_z", "w", "w_s", "w_z", "y_s", "y_z"},
             {std::string(c)}, {}, c);
    g.node("QLinearConcat", {"y_s", "y_z", "a", "y_s", "y_z", "b", "y_s", "y_z"}, {"c"},
           {OnnxAttr::Int("axis", 1)}, "cat", "com.microsoft");
    if (add_after)
      g.node("QLinearAdd", {"c", "y_s", "y_z", "c", "y_s", "y_z", "y_s", "y_z"}, {"p"}, {}, "add",
             "com.microsoft");
    else
      g.node("MaxPool", {"c"}, {"p"},
             {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
    g.node("DequantizeLinear", {"p", "y_s", "y_z"}, {"y"}, {}, "dequant");
    g.output("y");
    const Network net = import_onnx_bytes(g.serialize(), "qcat.onnx");
    if (add_after) {
      ASSERT_EQ(net.layers.size(), 5u) << net.summary();
      for (int i : {2, 3}) {
        EXPECT_EQ(net.layers[size_t(i)].op, "Concat");
        EXPECT_EQ(net.layers[size_t(i)].inputs, (std::vector<int>{0, 1}));
      }
      EXPECT_EQ(net.layers[4].inputs, (std::vector<int>{2, 3}));
    } else {
      ASSERT_EQ(net.layers.size(), 3u) << net.summary();
      for (int i : {0, 1}) EXPECT_EQ(net.layers[size_t(i)].fused.back(), "MaxPool pool");
      EXPECT_EQ(net.layers[2].op, "Concat");  // the output, one tensor
      EXPECT_EQ(net.layers[2].inputs, (std::vector<int>{0, 1}));
    }
    ASSERT_TRUE(fully_quantized(net)) << net.summary();
    const QuantNetwork q = quantize(net, nullptr);
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> pixel(0, 255);
    std::vector<std::vector<int32_t>> images(4, std::vector<int32_t>(2 * 6 * 6));
    for (auto& x : images)
      for (auto& v : x) v = pixel(rng);
    expect_bit_exact(q, images, 2);
  }
}

}  // namespace

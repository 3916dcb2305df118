// SPDX-License-Identifier: Apache-2.0
// End to end on convolutional models: the Trainer trains two small CNNs on the golden model
// (the Keras example in miniature: Conv (one input channel) - MaxPool - Relu - Flatten - Dense;
// and two padded Convs - AveragePool - Relu - GlobalAveragePool - Dense), and every step's loss
// and every weight equal a host reference composed from tests/train/reference.h bit for bit.
#include <gtest/gtest.h>

#include "compiler/autodiff.h"
#include "compiler/fuse.h"
#include "compiler/import.h"
#include "compiler/optimizer.h"
#include "compiler/placement.h"
#include "device_model.h"
#include "onnx_export.h"
#include "reference.h"
#include "train_models.h"
#include "trainer.h"

namespace tpu::train::test {
namespace {

using cnn::OnnxAttr;
using ref::Bits;
using ref::Mat;
using ref::Tensor;

std::vector<Bits> to_bits(const std::vector<float>& v) {
  std::vector<Bits> b;
  for (float f : v) b.push_back(ref::bits(f));
  return b;
}
Tensor tensor(uint32_t b, uint32_t c, uint32_t h, uint32_t w, const std::vector<float>& v) {
  Tensor t = ref::tensor(b, c, h, w);
  t.v = to_bits(v);
  return t;
}
Mat flat(const Tensor& t) { return Mat{t.b, t.c * t.h * t.w, t.v}; }
Tensor unflat(const Mat& m, const Tensor& like) {
  Tensor t = like;
  t.v = m.v;
  return t;
}
Mat elementwise(const Tensor& t) { return Mat{1, static_cast<uint32_t>(t.v.size()), t.v}; }
Tensor relu(const Tensor& t) { return unflat(ref::relu(elementwise(t)), t); }
Tensor relu_backward(const Tensor& x, const Tensor& dy) {
  return unflat(ref::relu_backward(elementwise(x), elementwise(dy)), x);
}
// Rows (y, x, b), channels in columns: the order the chip sums a bias gradient in.
Mat positions(const Tensor& t) {
  Mat m = ref::zeros(t.h * t.w * t.b, t.c);
  for (uint32_t b = 0; b < t.b; ++b)
    for (uint32_t c = 0; c < t.c; ++c)
      for (uint32_t y = 0; y < t.h; ++y)
        for (uint32_t x = 0; x < t.w; ++x) m.at((y * t.w + x) * t.b + b, c) = t.at(b, c, y, x);
  return m;
}
uint32_t cin_stride(uint32_t cin, uint32_t n) { return cin == 1 ? 1 : (cin + n - 1) / n * n; }

// One trainable tensor in ONNX order, with its Adam state.
struct Weight {
  std::string name;
  std::vector<Bits> v, m, vv;
};

struct RefCnn {
  uint32_t n, batch;
  bool keras;                // model A (Keras in miniature) or B (two convs)
  bool padded_pool = false;  // model C: conv -> relu -> max-pool 3x3 stride 2 pads 1 -> dense
  // The compiler's band sizes of the (first) conv's dW and of model B's second conv's (0: whole);
  // banded or not, dW equals the whole layer's (the kernel keeps the partial dW in ACC).
  uint32_t conv_band = 0;
  uint32_t conv2_band = 0;
  bool fused = true;     // model A's conv, pool and relu run as one ConvPool (fuse.h)
  bool has_relu = true;  // model A has its relu after the pool
  std::map<std::string, Weight> w;
  ref::Adam adam;

  std::vector<Bits>& p(const char* name) { return w.at(name).v; }
  Tensor wt(const char* name, uint32_t o, uint32_t c, uint32_t kh, uint32_t kw) {
    Tensor t = ref::tensor(o, c, kh, kw);
    t.v = p(name);
    return t;
  }
  void update(const std::map<std::string, std::vector<Bits>>& g) {
    Bits scale = 0, eps_term = 0;
    ref::adam_begin_step(adam, scale, eps_term);
    for (auto& [name, x] : w) {
      if (x.m.empty()) x.m = x.vv = std::vector<Bits>(x.v.size(), 0);
      ref::adam_update(adam, scale, eps_term, x.v, g.at(name), x.m, x.vv);
    }
  }
  Bits step(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out = nullptr);
  Bits step_a(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out);
  Bits step_b(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out);
  Bits step_c(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out);
};

// Model C: conv 4x1x3x3 pad 1 + b on 8 x 8 -> relu -> maxpool 3x3 stride 2 pad 1 (overlapping
// windows) -> conv2 4x4x1x1 (no pads: reads the pooled image itself) -> flatten (4 x 4 x 4) ->
// dense [3, 64] (transB) + b.
Bits RefCnn::step_c(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out) {
  const ref::Window k3{3, 3, 1, 1, 1, 1, 1, 1}, kp{3, 3, 2, 2, 1, 1, 1, 1};
  const Tensor c1 = ref::conv2d(x, wt("conv.W", 4, 1, 3, 3), p("conv.b"), k3, 1, n);
  const Tensor r1 = relu(c1);
  const ref::MaxPoolResult mp = ref::maxpool(r1, kp);
  const ref::Window k1{1, 1, 1, 1, 0, 0, 0, 0};
  const Tensor r = ref::conv2d(mp.y, wt("conv2.W", 4, 4, 1, 1), {}, k1, cin_stride(4, n), n);
  const uint32_t hw = r.h * r.w, kk = (r.c + n - 1) / n * n * hw;
  Mat xc = ref::zeros(batch, kk), wc = ref::zeros(kk, 3);
  auto feature = [&](uint32_t c, uint32_t q) { return (c / n * hw + q) * n + c % n; };
  for (uint32_t c = 0; c < r.c; ++c)
    for (uint32_t q = 0; q < hw; ++q) {
      for (uint32_t o = 0; o < 3; ++o)
        wc.at(feature(c, q), o) = p("dense.W")[o * r.c * hw + c * hw + q];
      for (uint32_t b = 0; b < batch; ++b) xc.at(b, feature(c, q)) = r.at(b, c, q / r.w, q % r.w);
    }
  const Mat logits = ref::add_row(ref::matmul_tiled(xc, wc, n), p("dense.b"));
  if (logits_out != nullptr) {
    *logits_out = logits;
    return 0;
  }
  const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(logits, labels, n);
  const Mat dwc = ref::matmul_tiled(ref::transposed(xc), ce.dlogits, n);
  const Mat dxc = ref::matmul_tiled(ce.dlogits, ref::transposed(wc), n);
  std::vector<Bits> dw2(3 * r.c * hw);
  Tensor dr = ref::tensor(batch, r.c, r.h, r.w);
  for (uint32_t c = 0; c < r.c; ++c)
    for (uint32_t q = 0; q < hw; ++q) {
      for (uint32_t o = 0; o < 3; ++o) dw2[o * r.c * hw + c * hw + q] = dwc.at(feature(c, q), o);
      for (uint32_t b = 0; b < batch; ++b) dr.at(b, c, q / r.w, q % r.w) = dxc.at(b, feature(c, q));
    }
  const Tensor dmp = ref::conv2d_dx(dr, wt("conv2.W", 4, 4, 1, 1), k1, mp.y.h, mp.y.w, n);
  const Tensor dr1 = ref::maxpool_dx(mp.argmax, dmp, kp, r1.h, r1.w);
  const Tensor dc1 = relu_backward(c1, dr1);
  update({{"conv.W", ref::conv2d_dw(x, dc1, k3, 1, n).v},
          {"conv.b", ref::column_sums(positions(dc1))},
          {"conv2.W", ref::conv2d_dw(mp.y, dr, k1, cin_stride(4, n), n).v},
          {"dense.W", dw2},
          {"dense.b", ref::column_sums(ce.dlogits)}});
  return ce.loss;
}

// Model A: conv 5x1x3x3 + b -> maxpool 2 -> relu -> flatten (20) -> dense [3, 20] (transB) + b,
// in the order of the fused ConvPool (fuse.h): conv, max pool, + b, relu.
Bits RefCnn::step_a(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out) {
  const ref::Window k3{3, 3, 1, 1, 0, 0, 0, 0}, k2{2, 2, 2, 2, 0, 0, 0, 0};
  // Fused (ConvPool): the bias is added after pooling; else to the conv output.
  const Tensor y1 =
      ref::conv2d(x, wt("conv.W", 5, 1, 3, 3), fused ? std::vector<Bits>{} : p("conv.b"), k3, 1, n);
  const ref::MaxPoolResult mp = ref::maxpool(y1, k2);
  Tensor pooled = mp.y;
  for (uint32_t b = 0; b < pooled.b && fused; ++b)
    for (uint32_t c = 0; c < pooled.c; ++c)
      for (uint32_t i = 0; i < pooled.h * pooled.w; ++i) {
        Bits& v = pooled.at(b, c, i / pooled.w, i % pooled.w);
        v = ref::add(v, p("conv.b")[c]);
      }
  const Tensor r = has_relu ? relu(pooled) : pooled;
  // The Dense in the chip's feature order (flatten_feature), zero features for padding channels.
  const uint32_t hw = r.h * r.w, kk = (r.c + n - 1) / n * n * hw;
  Mat xc = ref::zeros(batch, kk), wc = ref::zeros(kk, 3);
  auto feature = [&](uint32_t c, uint32_t q) { return (c / n * hw + q) * n + c % n; };
  for (uint32_t c = 0; c < r.c; ++c)
    for (uint32_t q = 0; q < hw; ++q) {
      for (uint32_t o = 0; o < 3; ++o)
        wc.at(feature(c, q), o) = p("dense.W")[o * r.c * hw + c * hw + q];
      for (uint32_t b = 0; b < batch; ++b) xc.at(b, feature(c, q)) = r.at(b, c, q / r.w, q % r.w);
    }
  const Mat logits = ref::add_row(ref::matmul_tiled(xc, wc, n), p("dense.b"));
  if (logits_out != nullptr) {
    *logits_out = logits;
    return 0;
  }
  const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(logits, labels, n);
  const Mat dwc = ref::matmul_tiled(ref::transposed(xc), ce.dlogits, n);
  const Mat dxc = ref::matmul_tiled(ce.dlogits, ref::transposed(wc), n);
  std::vector<Bits> dw2(3 * r.c * hw);
  Tensor dr = ref::tensor(batch, r.c, r.h, r.w);
  for (uint32_t c = 0; c < r.c; ++c)
    for (uint32_t q = 0; q < hw; ++q) {
      for (uint32_t o = 0; o < 3; ++o) dw2[o * r.c * hw + c * hw + q] = dwc.at(feature(c, q), o);
      for (uint32_t b = 0; b < batch; ++b) dr.at(b, c, q / r.w, q % r.w) = dxc.at(b, feature(c, q));
    }
  const Tensor dp = has_relu ? relu_backward(pooled, dr) : dr;
  const Tensor dy1 = ref::maxpool_dx(mp.argmax, dp, k2, y1.h, y1.w);
  const std::vector<Bits> dw1 = ref::conv2d_dw(x, dy1, k3, 1, n).v;
  update({{"conv.W", dw1},
          {"conv.b", ref::column_sums(positions(fused ? dp : dy1))},
          {"dense.W", dw2},
          {"dense.b", ref::column_sums(ce.dlogits)}});
  return ce.loss;
}

// Model B: conv1 6x2x3x3 pad 1 + b -> relu -> conv2 5x6x3x3 pad 1 stride 2 -> avgpool 2 stride 1 ->
// relu
// -> global average pool -> flatten -> MatMul [5, 3] + Add b.
Bits RefCnn::step_b(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out) {
  const ref::Window k3{3, 3, 1, 1, 1, 1, 1, 1}, k2{2, 2, 1, 1, 0, 0, 0, 0};
  const ref::Window k3s2{3, 3, 2, 2, 1, 1, 1, 1};
  const Tensor c1 = ref::conv2d(x, wt("c1.W", 6, 2, 3, 3), p("c1.b"), k3, cin_stride(2, n), n);
  const Tensor r1 = relu(c1);
  const Tensor c2 = ref::conv2d(r1, wt("c2.W", 5, 6, 3, 3), {}, k3s2, cin_stride(6, n), n);
  const Tensor a = ref::avgpool(c2, k2);
  const Tensor r2 = relu(a);
  const Tensor gp = ref::gap(r2);
  const Mat w3{5, 3, p("fc.W")};
  const Mat logits = ref::add_row(ref::matmul_tiled(flat(gp), w3, n), p("fc.b"));
  if (logits_out != nullptr) {
    *logits_out = logits;
    return 0;
  }
  const ref::SoftmaxCeResult ce = ref::softmax_cross_entropy(logits, labels, n);
  const Mat dw3 = ref::matmul_tiled(ref::transposed(flat(gp)), ce.dlogits, n);
  const Tensor dg = unflat(ref::matmul_tiled(ce.dlogits, ref::transposed(w3), n), gp);
  const Tensor dr2 = ref::gap_dx(dg, r2.h, r2.w);
  const Tensor da = relu_backward(a, dr2);
  const Tensor dc2 = ref::avgpool_dx(da, k2, c2.h, c2.w);
  const Tensor dr1 = ref::conv2d_dx(dc2, wt("c2.W", 5, 6, 3, 3), k3s2, r1.h, r1.w, n);
  const Tensor dc1 = relu_backward(c1, dr1);
  update({{"c1.W", ref::conv2d_dw(x, dc1, k3, cin_stride(2, n), n).v},
          {"c1.b", ref::column_sums(positions(dc1))},
          {"c2.W", ref::conv2d_dw(r1, dc2, k3s2, cin_stride(6, n), n).v},
          {"fc.W", dw3.v},
          {"fc.b", ref::column_sums(ce.dlogits)}});
  return ce.loss;
}

Bits RefCnn::step(const Tensor& x, const std::vector<int32_t>& labels, Mat* logits_out) {
  if (padded_pool) return step_c(x, labels, logits_out);
  return keras ? step_a(x, labels, logits_out) : step_b(x, labels, logits_out);
}

// The two models as ONNX, and the reference with the same initial weights.
std::string cnn_onnx(bool keras, RefCnn& r) {
  cnn::OnnxGraph g(r.padded_pool ? "padded_pool" : keras ? "keras_mini" : "two_convs");
  auto init = [&](const std::string& name, std::vector<int64_t> dims, float scale, uint32_t seed) {
    size_t count = 1;
    for (int64_t d : dims) count *= static_cast<size_t>(d);
    const std::vector<float> v = uniform(count, scale, seed);
    g.init_float(name, dims, v);
    r.w[name] = Weight{name, to_bits(v), {}, {}};
  };
  const std::vector<int64_t> k3 = {3, 3}, pad1 = {1, 1, 1, 1};
  if (r.padded_pool) {
    g.input("input", {-1, 1, 8, 8});
    init("conv.W", {4, 1, 3, 3}, 0.5f, 41);
    init("conv.b", {4}, 0.1f, 42);
    init("dense.W", {3, 64}, 0.5f, 43);
    init("dense.b", {3}, 0.1f, 44);
    init("conv2.W", {4, 4, 1, 1}, 0.5f, 45);
    g.node("Conv", {"input", "conv.W", "conv.b"}, {"c"},
           {OnnxAttr::Ints("kernel_shape", k3), OnnxAttr::Ints("pads", pad1)}, "conv");
    g.node("Relu", {"c"}, {"r"}, {}, "relu");
    g.node("MaxPool", {"r"}, {"p"},
           {OnnxAttr::Ints("kernel_shape", k3), OnnxAttr::Ints("strides", {2, 2}),
            OnnxAttr::Ints("pads", pad1)},
           "pool");
    g.node("Conv", {"p", "conv2.W"}, {"c2"}, {OnnxAttr::Ints("kernel_shape", {1, 1})}, "conv2");
    g.node("Flatten", {"c2"}, {"f"}, {}, "flatten");
    g.node("Gemm", {"f", "dense.W", "dense.b"}, {"logits"}, {OnnxAttr::Int("transB", 1)}, "dense");
    g.output("logits", {-1, 3});
  } else if (keras) {
    g.input("input", {-1, 1, 6, 6});
    init("conv.W", {5, 1, 3, 3}, 0.5f, 11);
    init("conv.b", {5}, 0.1f, 12);
    init("dense.W", {3, 20}, 0.5f, 13);
    init("dense.b", {3}, 0.1f, 14);
    g.node("Conv", {"input", "conv.W", "conv.b"}, {"c"}, {OnnxAttr::Ints("kernel_shape", k3)},
           "conv");
    g.node("MaxPool", {"c"}, {"p"},
           {OnnxAttr::Ints("kernel_shape", {2, 2}), OnnxAttr::Ints("strides", {2, 2})}, "pool");
    if (r.has_relu) g.node("Relu", {"p"}, {"r"}, {}, "relu");
    g.node("Flatten", {r.has_relu ? "r" : "p"}, {"f"}, {}, "flatten");
    g.node("Gemm", {"f", "dense.W", "dense.b"}, {"logits"}, {OnnxAttr::Int("transB", 1)}, "dense");
    g.node("Softmax", {"logits"}, {"probs"}, {}, "softmax");
    g.output("probs", {-1, 3});
  } else {
    g.input("input", {-1, 2, 5, 5});
    init("c1.W", {6, 2, 3, 3}, 0.5f, 21);
    init("c1.b", {6}, 0.1f, 22);
    init("c2.W", {5, 6, 3, 3}, 0.3f, 23);
    init("fc.W", {5, 3}, 0.5f, 24);
    init("fc.b", {3}, 0.1f, 25);
    g.node("Conv", {"input", "c1.W", "c1.b"}, {"c1"},
           {OnnxAttr::Ints("kernel_shape", k3), OnnxAttr::Ints("pads", pad1)}, "conv1");
    g.node("Relu", {"c1"}, {"r1"}, {}, "relu1");
    g.node("Conv", {"r1", "c2.W"}, {"c2"},
           {OnnxAttr::Ints("kernel_shape", k3), OnnxAttr::Ints("pads", pad1),
            OnnxAttr::Ints("strides", {2, 2})},
           "conv2");
    g.node("AveragePool", {"c2"}, {"a"}, {OnnxAttr::Ints("kernel_shape", {2, 2})}, "avg");
    g.node("Relu", {"a"}, {"r2"}, {}, "relu2");
    g.node("GlobalAveragePool", {"r2"}, {"gp"}, {}, "gap");
    g.node("Flatten", {"gp"}, {"f"}, {}, "flatten");
    g.node("MatMul", {"f", "fc.W"}, {"m"}, {}, "fc");
    g.node("Add", {"m", "fc.b"}, {"logits"}, {}, "fc_bias");
    g.output("logits", {-1, 3});
  }
  return g.serialize();
}

struct CnnCase {
  const char* name;
  uint32_t n, batch;
  bool keras;
  uint32_t vmem_rows = 0;  // 0: ChipParams::training's
  bool padded_pool = false;
  bool fused = false;  // the compiler fuses conv, pool (and relu) into ConvPool
  bool relu = true;
};

class TrainerCnn : public ::testing::TestWithParam<CnnCase> {};
const CnnCase kCnnCases[] = {
    {"KerasMini_N4", 4, 8, true, 0, false, true},
    {"KerasMini_N16", 16, 16, true, 0, false, true},
    // Fused without a relu after the pool; and on 704 VMEM rows, the smallest VMEM where the
    // fused band (one pooled line) fits: one output-channel block per pass.
    {"KerasMiniNoRelu_N4", 4, 8, true, 0, false, true, false},
    {"KerasMini_N4_FusedGroups", 4, 8, true, 704, false, true},
    // 1100 VMEM rows: two fused bands of one pooled line, double-buffered (forward and backward;
    // the forward's conv band buffer a set per job).
    {"KerasMini_N4_FusedDoubleBuffered", 4, 8, true, 1100, false, true},
    {"TwoConvs_N4", 4, 8, false},
    // 400 VMEM rows: the conv, its dW, the max-pool and its gradient run in bands of output
    // lines (one line each), not fused (a fused band needs two conv lines).
    {"KerasMini_N4_Bands", 4, 8, true, 400},
    // 1000 VMEM rows: both convs, their dW, conv2's padded input (ConvPad) and dX (ConvGradX,
    // per input-channel block) run in bands.
    {"TwoConvs_N4_Bands", 4, 8, false, 1000},
    // A max-pool with pads and overlapping windows (3x3, stride 2, pads 1), whole and in bands
    // (on 600 VMEM rows: the forward pass in bands of output lines, the gradient in bands of
    // input lines).
    {"PaddedPool_N4", 4, 8, false, 0, true},
    {"PaddedPool_N4_Bands", 4, 8, false, 600, true},
};
INSTANTIATE_TEST_SUITE_P(Steps, TrainerCnn, ::testing::ValuesIn(kCnnCases),
                         [](const ::testing::TestParamInfo<CnnCase>& i) {
                           return std::string(i.param.name);
                         });

TEST_P(TrainerCnn, LossesAndWeightsMatchReferenceAndLossDecreases) {
  const CnnCase& c = GetParam();
  RefCnn r{c.n, c.batch, c.keras, c.padded_pool, 0, 0, c.fused, c.relu, {}, {}};
  TrainOptions o;
  o.lr = c.padded_pool ? 0.005f : 0.02f;
  o.batch = c.batch;
  r.adam = ref::Adam{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay};
  ChipParams chip = ChipParams::training(c.n);
  if (c.vmem_rows != 0) chip.vmem_rows = c.vmem_rows;
  const std::string model = cnn_onnx(c.keras, r);
  Trainer t(model, o, chip);
  {  // which nodes run in bands
    compiler::Graph g = compiler::import_onnx(model, c.batch, c.n);
    compiler::append_backward(g);
    compiler::append_update(g, o);
    compiler::Graph fused = g;
    EXPECT_EQ(compiler::fuse_conv_pool(fused, chip) > 0, c.fused);
    if (c.fused) {
      const compiler::Placement pf = compiler::place(fused, chip);
      for (size_t i = 0; i < fused.nodes.size(); ++i) {
        if (fused.nodes[i].op != compiler::Op::ConvPool) continue;
        EXPECT_EQ(fused.nodes[i].relu, c.relu);
        EXPECT_EQ(pf.group[i], c.vmem_rows == 704 ? 1u : (5 + c.n - 1) / c.n) << "blocks per pass";
        if (c.vmem_rows == 1100) {  // two bands, double-buffered (DMA spread over compute)
          EXPECT_EQ(pf.depth[i], 2u);
          EXPECT_EQ(pf.chunk[i], 1u);
        }
      }
    }
    const compiler::Placement p = compiler::place(g, chip);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const compiler::Node& nd = g.nodes[i];
      if (c.padded_pool) {
        EXPECT_NE(nd.op, compiler::Op::ConvPad) << "conv2 (1x1, no pads) reads the pooled image";
      }
      if (nd.op == compiler::Op::ConvGradW)
        (nd.name == "conv2" ? r.conv2_band : r.conv_band) = p.chunk[i];
      const bool bands = nd.op == compiler::Op::Conv || nd.op == compiler::Op::ConvGradW ||
                         nd.op == compiler::Op::MaxPool || nd.op == compiler::Op::MaxPoolGrad ||
                         nd.op == compiler::Op::ConvPad || nd.op == compiler::Op::ConvGradX;
      const bool optional =
          (nd.op == compiler::Op::Conv && nd.name == "conv1") ||
          (c.padded_pool && nd.op != compiler::Op::MaxPool && nd.op != compiler::Op::MaxPoolGrad);
      if (c.vmem_rows != 0 && !c.fused && bands && !optional) {
        EXPECT_GT(p.chunk[i], 0u) << nd.name << " " << compiler::op_name(nd.op);
      }
    }
    if (c.vmem_rows != 0 && !c.padded_pool && !c.fused) {
      EXPECT_GT(r.conv_band, 0u);
      EXPECT_LT(r.conv_band, c.keras ? 4u : 5u);  // fewer than the conv's output lines
    }
  }
  ModelDevice dev(chip);
  t.init(dev);
  const std::array<uint32_t, 3> chw = t.input_chw();
  const uint32_t pixels = chw[0] * chw[1] * chw[2];
  const std::vector<float> x = uniform(size_t{c.batch} * pixels, 1.0f, 31);
  std::vector<int32_t> labels(c.batch);
  for (uint32_t i = 0; i < c.batch; ++i) labels[i] = static_cast<int32_t>((i * 7 + 1) % 3);
  const Tensor xt = tensor(c.batch, chw[0], chw[1], chw[2], x);
  std::vector<float> losses;
  for (int step = 0; step < 6; ++step) {
    const StepResult s = t.step(dev, x.data(), labels.data());
    const Bits want = r.step(xt, labels);
    ASSERT_EQ(ref::bits(s.loss), want)
        << "step " << step << ": chip " << s.loss << ", reference " << ref::value(want);
    for (const auto& [name, v] : t.weights(dev)) {
      ASSERT_EQ(to_bits(v), r.w.at(name).v) << name << " after step " << step;
    }
    losses.push_back(s.loss);
  }
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << i;
  // The forward pass on the chip with the trained weights.
  Mat want;
  r.step(xt, labels, &want);
  EXPECT_EQ(to_bits(t.logits(dev, x.data(), c.batch)), want.v);
}

}  // namespace
}  // namespace tpu::train::test

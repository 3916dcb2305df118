// SPDX-License-Identifier: Apache-2.0
// The CNN intermediate representation shared by the ONNX importer, the float and integer
// references, the quantizer and the chip compiler.
//
// A network is a directed acyclic graph of fused layers in topological order. Each layer reads
// the outputs of earlier layers (or the network input) and computes one tensor: exactly what
// one pass of the chip's MXU into the accumulators plus one activate per image computes.
//  * Conv: a convolution (groups incl. depthwise, dilations, zero padding); average pooling is
//    a depthwise Conv of ones. Several inputs are concatenated on channels (ONNX Concat).
//  * Dense: a Gemm/MatMul of the flattened input (C, H, W order, as ONNX Flatten); grouped
//    (each output reads one group of input channels): global average pooling is a Dense with
//    one group per channel. Several inputs are concatenated on channels.
//  * Add: the elementwise sum of two tensors of one shape, each with its own quantization.
//  * Copy: each channel as it is (several inputs concatenated), with padding that max-pooling
//    skips: a standalone MaxPool (pads, strides, ceil_mode), an activation that cannot be fused
//    into its producer, or a Concat whose parts are quantized differently.
// Every layer then adds its bias, applies an optional activation (ReLU, Clip, or a function
// through the chip's 256-entry LUT) and an optional max-pool. Tensors are NCHW; one image.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tpu::cnn {

// Every error the CNN library reports about a model, its input or its data.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One image: channels, height, width.
struct Shape3 {
  int c = 0, h = 0, w = 0;
  int64_t size() const { return int64_t(c) * h * w; }
  std::string str() const;  // "[C, H, W]"
};
bool operator==(const Shape3& a, const Shape3& b);
inline bool operator!=(const Shape3& a, const Shape3& b) { return !(a == b); }

enum class LayerKind { Conv, Dense, Add, Copy };
enum class Activation { None, Relu, Clip, Lut };
// Functions the activation unit computes through its LUT (Activation::Lut).
enum class LutFunc { Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish };
const char* lut_func_name(LutFunc f);
// The float function: LeakyRelu uses alpha; HardSigmoid alpha and beta.
float lut_func_apply(LutFunc f, float alpha, float beta, float x);
// Whether f(x) is non-decreasing (max-pooling commutes with it).
bool lut_func_monotonic(LutFunc f);

// The network input as a layer input.
constexpr int kNetworkInput = -1;

// Per-tensor affine quantization: real = scale * (q - zero_point), q in int8 or uint8.
struct TensorQuant {
  float scale = 1.0f;
  int zero_point = 0;
  bool is_unsigned = false;
  int qmin() const { return is_unsigned ? 0 : -128; }
  int qmax() const { return is_unsigned ? 255 : 127; }
  std::string str() const;  // "uint8 scale 0.0039 zp 0"
};
bool operator==(const TensorQuant& a, const TensorQuant& b);

// Quantized parameters that came with the model file (QDQ or QLinear* models).
struct GivenQuant {
  std::vector<int8_t> weight;       // same layout as Layer::weight (weight zero point removed)
  std::vector<float> weight_scale;  // per output channel
  std::vector<int32_t> bias;        // in units of input scale * weight_scale[oc]; empty if none
};

// Geometry of a fused layer: shared by the float and the quantized forms.
struct LayerGeometry {
  LayerKind kind = LayerKind::Conv;
  std::string name;                // ONNX node name (or output tensor name) of the Conv/Gemm
  std::string op;                  // ONNX op type of the main node ("Conv", "Gemm", ...)
  std::vector<std::string> fused;  // "Relu /Relu", "MaxPool /MaxPool", ... (for messages)
  // Producing layers (kNetworkInput for the network input). Conv, Dense and Copy read their
  // inputs concatenated on channels; Add reads exactly two and sums them.
  std::vector<int> inputs{kNetworkInput};
  std::vector<int> input_channels;  // channels of each input (Conv/Dense/Copy: they add up to in.c)
  Shape3 in;                        // input image (the concatenation; for Add, each operand's)
  Shape3 conv_out;                  // before pooling
  Shape3 out;                       // after pooling
  int kh = 1, kw = 1, sh = 1, sw = 1;
  int dh = 1, dw = 1;  // Conv dilations
  int group = 1;       // Conv/Dense groups (depthwise: group = in.c)
  // Conv: zero padding. Copy: padding max-pooling skips (it never wins the max).
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int pool_k = 1, pool_s = 1;  // 1, 1 = no pooling (square window, floor)
  // Padding of the fused max-pool (the activate instruction's pad fields): window taps in it are
  // skipped (ONNX's -inf); each < pool_k and <= 7. ceil_mode is a larger bottom/right pad.
  int pool_pad_t = 0, pool_pad_l = 0, pool_pad_b = 0, pool_pad_r = 0;
  bool pool_padded() const { return pool_pad_t || pool_pad_l || pool_pad_b || pool_pad_r; }
  // AveragePool whose divisor changes from pixel to pixel (count_include_pad = 0 with padding,
  // or a partial ceil-mode window): per output line (column), the number of window lines
  // (columns) that are averaged. Empty (the usual case): the divisor is the whole window, folded
  // into the weights. Otherwise the Conv's weights are 1 (it sums) and output pixel (y, x) is
  // divided by avg_lines[y] * avg_cols[x] (no max-pool follows it).
  std::vector<int> avg_lines, avg_cols;
  bool per_pixel_divisor() const { return !avg_lines.empty(); }
  // The distinct divisors avg_lines[y] * avg_cols[x], ascending ({1} without per-pixel ones),
  // and the index in them of pixel (y, x)'s.
  std::vector<int> divisors() const;
  int divisor_index(int y, int x) const;
  // Convolution output lines (columns) [first, last) that the pooled lines (columns)
  // [p0, p1) read: windows start at p*pool_s - pool_pad_t and are clipped to the image.
  std::pair<int, int> conv_lines_of(int p0, int p1) const {
    return {std::max(0, p0 * pool_s - pool_pad_t),
            std::min(conv_out.h, (p1 - 1) * pool_s - pool_pad_t + pool_k)};
  }
  std::pair<int, int> conv_cols_of(int p0, int p1) const {
    return {std::max(0, p0 * pool_s - pool_pad_l),
            std::min(conv_out.w, (p1 - 1) * pool_s - pool_pad_l + pool_k)};
  }

  int cin() const { return kind == LayerKind::Dense ? int(in.size()) : in.c; }
  int cout() const { return out.c; }
  // Number of weights per output channel: Conv (Cin/group)*kh*kw, Dense the flattened input
  // size / group, Add 2 (one per operand), Copy 1.
  int64_t fan_in() const {
    switch (kind) {
      case LayerKind::Conv:
        return int64_t(in.c / group) * kh * kw;
      case LayerKind::Dense:
        return in.size() / group;
      case LayerKind::Add:
        return 2;
      case LayerKind::Copy:
        return 1;
    }
    return 1;
  }
  // Whether this layer multiplies with weights (Conv, Dense) rather than moving data.
  bool has_weights() const { return kind == LayerKind::Conv || kind == LayerKind::Dense; }
  // Multiply-accumulates of one image: every convolution output that max-pooling reads (a
  // floor-mode pool never reads the last line/column when the window does not fit, and neither
  // the references nor the chip need it). Not the chip's padded count.
  // Add and Copy have none.
  int64_t macs() const {
    if (!has_weights()) return 0;
    const auto ys = conv_lines_of(0, out.h);
    const auto xs = conv_cols_of(0, out.w);
    return int64_t(conv_out.c) * (ys.second - ys.first) * (xs.second - xs.first) * fan_in();
  }
  // The same counting every convolution output (the usual figure for the model).
  int64_t model_macs() const { return has_weights() ? conv_out.size() * fan_in() : 0; }
  // Recomputes conv_out and out from in and the attributes; throws Error if they do not fit.
  void infer_shapes();
};

// A MaxPool window and its output size; the padding as the chip pools with it (ceil_mode as
// extra bottom/right padding) and whether activate's pad fields hold it.
struct MaxPoolWindow {
  int k = 1, s = 1, oh = 0, ow = 0;
  std::array<int, 4> pads{};  // top, left, bottom, right
  bool padded = false, chip_pads = false;
};

// An elementwise step the importer converted 1:1 into a Copy layer of its own: a bias, scale or
// BatchNormalization (Fold) that the fold pass (passes/fold_affine.h) folds into the Conv/Dense
// computing its input, or an activation or max-pool that the fusion pass (passes/fuse_layers.h)
// merges into the layers computing its input when the fusion rules (passes/fusion.h) allow, or
// (Quantize) the QDQ pairing step (passes/pair_qdq.h) resolves, or a QLinearConcat's output
// quantization (QuantizeConcat) or a value read as one tensor (OneTensor) that the concatenation
// steps (passes/concat_steps.h) resolve. Only between conversion and those passes; kind None
// after them.
enum class StepKind { None, Activation, MaxPool, Quantize, Fold, QuantizeConcat, OneTensor };
struct PendingStep {
  StepKind kind = StepKind::None;
  // Per part of the step's input: the layer whose output it is when no other op reads that
  // tensor (nor any tensor between, such as a Flatten or a QuantizeLinear of it), from the
  // graph's tensor uses; -1 when another op reads it too, or it is the network input. A max-pool
  // of a concatenation that only it reads has one source per part (it joins each of them).
  std::vector<int> sources;
  // Activation: the op's activation and its parameters (Clip's bounds, or the LUT function's
  // alpha and beta), as passes::fuse_activation takes them.
  Activation act = Activation::None;
  LutFunc lut = LutFunc::Sigmoid;
  float p0 = 0.0f, p1 = 0.0f;
  MaxPoolWindow pool;  // MaxPool
  // Quantize: a QuantizeLinear (or a QLinear op's declared input quantization) giving the
  // tensor the layer's inputs compute quantization `quant` where they are quantized otherwise
  // already; `sole_reader` when nothing else reads that tensor (sources: as an activation's,
  // the one layer later steps reading this one may join, -1 for none).
  // QuantizeConcat: a QLinearConcat of the layer's inputs (its parts) to quantization `quant`,
  // a Copy layer requantizing them unless every part, as fused, has `quant` already (then it
  // leaves: its readers read the parts in place). sources: per part, the layer whose output only
  // the concatenation reads (-1 otherwise): a max-pool reading only the concatenation joins them
  // when it leaves.
  // OneTensor: a value an Add or a per-channel PRelu reads as one tensor, its one input a layer
  // holding a pending step: it leaves when that input, as fused, is one layer, else it stays a
  // Copy of the parts (a max-pool that joined each part of a concatenation, a QLinearConcat that
  // left).
  TensorQuant quant;
  bool sole_reader = false;
  // Fold (the layer's op says which): Add / Sub (a bias) or Mul / Div (a per-channel scale) by
  // `values`, one per channel, the constant the first operand when `constant_first`;
  // BatchNormalization: its scale, B, input_mean and input_var per channel (`batch_norm`, in that
  // order, with their shapes in the file for messages) and epsilon. sources: the one layer whose
  // output only this step reads (the converter refuses a fold of anything else).
  std::vector<double> values;
  bool constant_first = false;
  std::array<std::vector<double>, 4> batch_norm;
  std::array<std::string, 4> batch_norm_shapes;
  double epsilon = 0.0;
};

// A float layer: weights [cout][cin/group][kh][kw] (conv) or [cout][fan_in] (dense), bias
// [cout] (Conv and Dense; Add and Copy have neither).
struct Layer : LayerGeometry {
  std::vector<float> weight;
  std::vector<float> bias;
  Activation act = Activation::None;
  float clip_lo = 0.0f, clip_hi = 0.0f;  // Activation::Clip
  LutFunc lut = LutFunc::Sigmoid;        // Activation::Lut
  float lut_alpha = 0.0f, lut_beta = 0.0f;
  // Per-channel factors (empty = 1): Copy computes x * channel_scale[c]; Add computes
  // a + b * channel_scale[c] (a per-channel PRelu is relu(x) + (-slope) * relu(-x)).
  std::vector<float> channel_scale;
  std::optional<TensorQuant> pre_quant;  // Lut: the function's input quantization from the file
  std::optional<GivenQuant> given;       // quantized weights/bias from the file
  std::optional<TensorQuant> out_quant;  // output quantization from the file
  // MatMulInteger / ConvInteger: the output is the exact int32 saturate(acc + bias), not
  // requantized (the chip's raw activate); only the network's output layer.
  bool raw_out = false;
  PendingStep step;  // the importer's output only (see PendingStep)
};

// The float network as imported.
struct Network {
  std::string name;  // file name or graph name
  std::string input_name, output_name;
  Shape3 input;        // one image
  int file_batch = 0;  // batch dimension in the file (0 = symbolic)
  // Per-channel affine preprocessing at the graph input (Sub/Div/Mul/Add by constants):
  // x' = x * pre_scale[c] + pre_shift[c]. Empty = identity.
  std::vector<float> pre_scale, pre_shift;
  std::optional<TensorQuant> input_quant;  // from a QuantizeLinear on the input
  // A final Softmax (or LogSoftmax) of the logits: not on the chip (its LUT maps one byte to
  // one byte and cannot normalize over a vector); applied by the host to dequantized outputs.
  // The class (argmax) is the same with or without it.
  std::string host_softmax;   // "", "Softmax" or "LogSoftmax"
  std::vector<Layer> layers;  // topological order; the last one is the output
  int classes() const { return layers.empty() ? 0 : int(layers.back().out.size()); }
  std::string summary() const;  // one line per layer
};

// A quantized layer: the integer network the chip runs and the integer reference defines.
// With zp(ic) the zero point of the input that channel ic comes from:
//   Conv:  acc[oc][p] = sum over the window and the group's channels of (x_q - zp(ic)) * weight
//                       (zero padding is a real 0, i.e. x_q = zp(ic))
//   Dense: acc[oc]    = sum over the group's inputs of (x_q - zp) * weight
//   Add:   acc[c][p]  = wa(c) * (a_q - zp_a) + wb(c) * (b_q - zp_b)
//                       (weight = {wa, wb}, or per channel {wa(0), wb(0), wa(1), ...})
//   Copy:  acc[c][p]  = x_q - zp(c)
//   v           = saturate_int32(acc + bias[oc])
//   y           = saturate_out(round_half_away_from_zero(v * mult[oc] / 2^shift[oc]) + zp)
//                 (zp = out.zero_point; for Lut: pre_q.zero_point; with per-pixel divisors,
//                 pixel (y, x) uses mult/shift[d * cout + oc], d = divisor_index(y, x))
//   y           = Relu: max(y, out.zp); Clip: min(max(y, lo), hi); Lut: lut[y - qmin]
//   output      = max-pool of y (floor; Copy: its padding never wins)
//   raw:  output = v, an int32 (MatMulInteger / ConvInteger; no pooling, no activation)
struct QLayer : LayerGeometry {
  std::vector<TensorQuant> in_qs;   // per input
  TensorQuant in_q, out_q;          // in_q = in_qs[0]
  std::vector<int8_t> weight;       // layout as Layer::weight; Add: the operand weights
  std::vector<float> weight_scale;  // per output channel: acc unit = in_q.scale * weight_scale
  std::vector<int32_t> bias;        // per output channel
  std::vector<int32_t> mult;        // per (divisor, output channel) (negative: a Copy that negates)
  std::vector<uint8_t> shift;       // per (divisor, output channel), 0..63
  Activation act = Activation::None;
  int lo = -128, hi = 127;              // Clip bounds in the output's integer domain
  TensorQuant pre_q;                    // Lut: the LUT's input (same signedness as out_q)
  std::vector<int32_t> lut;             // Lut: 256 output values, index y - qmin
  LutFunc lut_func = LutFunc::Sigmoid;  // Lut: the function the table holds (for exports)
  float lut_alpha = 0.0f, lut_beta = 0.0f;
  bool raw = false;  // the output is v, int32 (Layer::raw_out)
  // Add: operand j's weight for channel c.
  int add_weight(int c, int j) const {
    return weight.size() == 2 ? weight[size_t(j)] : weight[size_t(2 * c + j)];
  }
  // Zero point of input channel ic (of the concatenated input).
  int zero_point_of(int ic) const;
  const TensorQuant& quant_of(int ic) const;
};

struct QuantNetwork {
  std::string name;
  Shape3 input;
  std::vector<float> pre_scale, pre_shift;  // as Network
  TensorQuant input_q;
  std::string host_softmax;    // as Network
  std::vector<QLayer> layers;  // topological order; the last one is the output
  int classes() const { return layers.empty() ? 0 : int(layers.back().out.size()); }
  const TensorQuant& output_q() const { return layers.back().out_q; }
  // Quantization of layer l's output (kNetworkInput: the input).
  const TensorQuant& quant_of(int l) const {
    return l == kNetworkInput ? input_q : layers[size_t(l)].out_q;
  }
  std::string summary() const;

  // Host-side input quantization (preprocessing, then q = round(x / scale) + zp, saturated):
  // `x` is one NCHW float image of input.size() values.
  void quantize_input(const float* x, int32_t* q) const;
  // A uint8 pixel image scaled to [0, 1] (pixel / 255) then quantized; exact (q = pixel) when
  // there is no preprocessing and input_q is uint8 with scale 1/255 and zero point 0.
  void quantize_pixels(const uint8_t* pixels, int32_t* q) const;
};

// The real multiplier m as mult * 2^-shift with mult in [2^30, 2^31) when possible
// (shift <= 63; mult = 0 for m == 0). Throws Error for m < 0 or m too large for int32.
void quantize_multiplier(double m, int32_t* mult, uint8_t* shift);
// The same for any sign: mult = -quantize_multiplier(-m) for m < 0.
void quantize_multiplier_signed(double m, int32_t* mult, uint8_t* shift);

// Round half away from zero of a double, saturated to [lo, hi].
int32_t round_clamp(double v, int32_t lo, int32_t hi);

}  // namespace tpu::cnn

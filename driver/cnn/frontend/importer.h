// SPDX-License-Identifier: Apache-2.0
// The ONNX importer (frontend/): the graph's nodes in order, each converted by its entry of the
// converter table (op_table.h) into layers of the IR (network.h), after the constant folding
// pass (passes/fold_constants.h) has evaluated the nodes that read only constants. Internal to
// driver/cnn: the public interface is onnx_import.h.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/onnx_tensor.h"
#include "network.h"

namespace onnx {
class GraphProto;
class ModelProto;
}  // namespace onnx

namespace tpu::cnn::frontend {

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string name);

  Network run();

  // ---- converters: the converter table (op_table.cpp) calls them for their ops

  // Pad with zeros on H and W (tf2onnx and Keras write it before a Conv): the Conv or
  // AveragePool reading it takes it as its padding.
  void pad(const onnx::NodeProto& n);
  // Squeeze / Unsqueeze of the 1x1 spatial dimensions ([N, C, 1, 1] <-> [N, C]).
  void squeeze(const onnx::NodeProto& n);
  // A Softmax of the logits that produces the graph output runs on the host (docs/cnn.md).
  void softmax(const onnx::NodeProto& n);
  void alias(const onnx::NodeProto& n);
  // Shape of a data tensor: a constant (the folding pass then evaluates what reads it).
  void shape_of(const onnx::NodeProto& n);
  void quantize_linear(const onnx::NodeProto& n);
  void dequantize_linear(const onnx::NodeProto& n);
  void conv(const onnx::NodeProto& n);
  void dense(const onnx::NodeProto& n);
  // Add/Sub/Mul/Div: of two tensors (Add), x * HardSigmoid(x), or with a constant (a bias or
  // scale: a Fold step the fold pass folds into the layer before; or input preprocessing).
  void arith(const onnx::NodeProto& n);
  // Add of two tensors (QLinearAdd: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp).
  void add(const onnx::NodeProto& n, bool ql);
  // Concat on channels: the parts are read where they are (a virtual tensor); QLinearConcat
  // (Y_scale, Y_zp, then X, X_scale, X_zp per input): a Copy layer of the parts holding a
  // QuantizeConcat step (passes/concat_steps.h: it stays, requantizing, unless every part as
  // fused has Y's quantization).
  void concat(const onnx::NodeProto& n, bool ql);
  // BatchNormalization after a Conv/Gemm read by nothing else: a Fold step the fold pass folds
  // into its weights and bias.
  void batch_norm(const onnx::NodeProto& n);
  // Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, PRelu (one slope), and
  // com.microsoft QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zp, Y_scale, Y_zp).
  void activation(const onnx::NodeProto& n, bool ql);
  void maxpool(const onnx::NodeProto& n);
  // AveragePool (QLinearAveragePool: X, x_scale, x_zp, y_scale, y_zp): a depthwise Conv of
  // ones / window size. Padding counts as 0. Where the divisor changes at the borders
  // (count_include_pad = 0 with padding: only the input's taps are counted; a partial ceil-mode
  // window: only the taps inside the padded input), the Conv's weights are 1 and every output
  // pixel is divided by its own count (LayerGeometry::avg_lines / avg_cols); a ceil-mode
  // window's part beyond the padded input is more zero padding. A Pad before it is data:
  // always counted. The QLinear form has the float weights too: quantize() gives them the
  // integers it gives the float model's (the same network from a QDQ, QLinear or float model).
  void average_pool(const onnx::NodeProto& n, bool ql);
  // GlobalAveragePool / QLinearGlobalAveragePool / ReduceMean over H and W: a Dense with one
  // group per channel (weights 1 / pixels; the QLinear form too, as average_pool).
  void global_pool(const onnx::NodeProto& n, bool ql);
  void flatten(const onnx::NodeProto& n);

 private:
  // A data tensor of the graph: the outputs of some layers (or the network input) concatenated
  // on channels, with its shape (one image) and, between QuantizeLinear and DequantizeLinear,
  // its quantization.
  struct Value {
    std::vector<int> parts;
    Shape3 shape;
    bool flat = false;  // [N, features] (flattened in C, H, W order)
    bool is_int = false;
    std::optional<TensorQuant> quant;
    int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;  // a Pad with zeros the next Conv absorbs
    bool padded() const { return pad_t || pad_l || pad_b || pad_r; }
  };

  bool int_input_ = false, int_input_unsigned_ = false, input_rank3_ = false;
  // Concat outputs -> the names of their inputs, each one layer's whole output (max-pooling of
  // the concatenation fuses into those layers).
  std::map<std::string, std::vector<std::string>> concat_inputs_;

  // A MaxPool's window, output size and padding (network.h).
  MaxPoolWindow maxpool_window(const onnx::NodeProto& n, const Value& v) const;

  [[noreturn]] void fail_model(const std::string& msg) const;
  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& msg) const;
  static std::string node_name(const onnx::NodeProto& n);

  void find_input(const onnx::GraphProto& g);

  bool is_const(const std::string& name) const;
  const Const& konst(const onnx::NodeProto& n, int i, const char* what) const;
  const Const* opt_konst(const onnx::NodeProto& n, int i, const char* what) const;
  // The data tensor read by input i.
  const Value& data(const onnx::NodeProto& n, int i) const;
  int channels_of(int part) const;

  // ---- the per-node dispatcher ------------------------------------------------------------
  void node(const onnx::NodeProto& n);

  // ---- values and fusion --------------------------------------------------------------------
  // The layer whose latest output `name` is, when nothing else reads it: later elementwise
  // steps (bias, activation, max-pool) fuse into that layer. -1 otherwise.
  int fusable(const std::string& name) const;
  // Defines node output 0 as value v; `from` (a fusable input name) passes the layer's tail on.
  void define(const onnx::NodeProto& n, const Value& v, const std::string& from = "");
  void new_layer_output(const onnx::NodeProto& n, int layer, bool flat);
  // A layer reading value v (its parts concatenated on channels).
  Layer start_layer(const onnx::NodeProto& n, LayerKind kind, const Value& v);
  int push_layer(const onnx::NodeProto& n, Layer&& l);
  // The single layer computing v: a concatenation of several is copied into one tensor; a
  // layer holding a pending step is read through a Copy holding a OneTensor step, which the
  // fusion walk keeps only when that layer leaves as several parts (passes/concat_steps.h).
  int materialize(const Value& v, const std::string& name);
  // A Copy of v's parts into one tensor, quantized as v.quant (a requantization when its parts
  // are quantized otherwise).
  int copy_layer(const Value& v, const std::string& name, const std::string& op);

  // ---- quantization annotations -----------------------------------------------------------
  TensorQuant tensor_quant(const onnx::NodeProto& n, const Const& s, const Const* z) const;

  std::optional<TensorQuant>& quant_ref(int p);
  const std::optional<TensorQuant>& quant_ref(int p) const;
  // Value v (tensor `name`, read by node n) gets quantization q: its producing layers' outputs
  // (or the input). Where they are quantized otherwise already (a Q/DQ pair, then another Q),
  // v becomes a Copy layer holding a Quantize step and its index is returned (the QDQ pairing
  // step, passes/pair_qdq.h, decides in the fusion walk whether it requantizes them, requantizes
  // an exact copy in place or annotates); -1 otherwise.
  int annotate(const onnx::NodeProto& n, Value& v, const TensorQuant& q, const std::string& name);

  // The input of a QLinear op: declared quantization must match what produced it.
  Value int_input(const onnx::NodeProto& n, int i, int si, int zi);
  Value float_input(const onnx::NodeProto& n, int i, const std::string& alternative);
  // The integer input of MatMulInteger / ConvInteger: its values minus the zero point input
  // `zi` (optional, per tensor) are what the op multiplies; scale 1.
  Value integer_input(const onnx::NodeProto& n, int i, int zi);
  // The weights of MatMulInteger / ConvInteger (input `wi`) with their zero point (input `zi`,
  // optional: per tensor, or per output channel along `oc_axis`), scale 1.
  Const integer_weights(const onnx::NodeProto& n, int wi, int zi, int oc_axis) const;
  // MatMulInteger / ConvInteger: the output is the exact int32 sum (scale 1, no zero point),
  // written by a raw activate; only the graph output may be one.
  void make_raw(Layer& l) const;
  std::optional<TensorQuant> out_quant(const onnx::NodeProto& n, bool ql, int si, int zi);
  void finish_int_output(const onnx::NodeProto& n, int layer, bool ql);

  // ---- layers ------------------------------------------------------------------------------
  // Weight planes: a quantized weight minus its zero point can be outside int8 (uint8 weights
  // with a zero point, as older quantizers write: -255 .. 255). The MXU takes int8 weights, so
  // such a layer reads its input `planes` times (a concatenation of the input with itself,
  // which costs no copy: Conv and Dense read the parts in place) with weights split into
  // `planes` int8 parts that sum to the value: sum_i x_i * v_i = sum_p sum_i x_i * part_p(v_i).
  static constexpr int kMaxWeightPlanes = 3;  // |v| <= 255 needs at most 3 (255 = 85 * 3)
  // Part p of v split evenly into `planes` parts (floor(v / planes), the remainder spread).
  static int64_t weight_part(int64_t v, int planes, int p);
  // The fewest planes whose parts all fit int8.
  int weight_planes(const onnx::NodeProto& n, const Const& w) const;
  // Layer l reads its input `planes` times (input channels / features repeated).
  static void repeat_input(Layer& l, int planes);
  // Float weights of a quantized constant in the plane layout: w[oc][p * k + i] is part p of
  // (q - zp) at index(oc, i), times its scale.
  static std::vector<float> plane_floats(const Const& w, int cout, int64_t k, int planes,
                                         const std::function<int64_t(int, int64_t)>& index);
  // Integer weights of a quantized constant: w[oc][p * k + i] = part p of (q - zp) at
  // index(oc, i) (one plane: q - zp itself), one scale per oc.
  GivenQuant given_weights(const onnx::NodeProto& n, const Const& w, int cout, int64_t k,
                           int oc_axis, const std::function<int64_t(int, int64_t)>& index,
                           int planes = 1) const;

  // Integer biases when a quantized bias constant has the scale input_scale * weight_scale.
  void given_bias(const Const* b, Layer& l, const std::optional<TensorQuant>& in_q) const;

  // A weight tensor of a QLinear op: its integers, scale and zero point as a quantized Const.
  Const qlinear_weights(const onnx::NodeProto& n, int wi, int si, int zi, int oc_axis) const;

  static void pads_from(const onnx::NodeProto& n, const std::string& ap,
                        const std::vector<int64_t>& pads, LayerGeometry* l, int kh, int kw, int dh,
                        int dw, const Importer& self);
  static void absorb_pad(const Value& v, LayerGeometry* l);
  void strides_from(const onnx::NodeProto& n, LayerGeometry* l) const;

  // A per-channel constant operand: scalar, [C], [1, C], [C, 1, 1] or [1, C, 1, 1].
  std::vector<double> per_channel(const onnx::NodeProto& n, const Const& c, const Value& v) const;

  // PRelu with a slope per channel (one LUT cannot): relu(x) + (-slope) * relu(-x), two
  // Copy layers with ReLU (the second negates) and an Add with per-channel operand weights.
  void prelu_per_channel(const onnx::NodeProto& n, const std::vector<double>& slope);

  // A bias, scale or BatchNormalization (node n, reading value v, the output of layer `li` that
  // nothing else reads): a Copy layer holding Fold step `step`, which the fold pass
  // (passes/fold_affine.h) folds into layer li, or refuses.
  void fold_step(const onnx::NodeProto& n, const Value& v, int li, PendingStep step);

  // An activation on tensor `in`: a Copy layer holding the step, which the fusion pass merges
  // into the layer computing `in` when it can.
  void fused_activation(const onnx::NodeProto& n, const std::string& in, Activation a, LutFunc f,
                        float p0, float p1, bool ql = false);

  const onnx::ModelProto& model_;
  Network net_;
  // The nodes still to convert and the constants (initializers, folded values).
  Graph graph_;
  std::map<std::string, Value> values_;
  std::map<std::string, int> uses_;     // node inputs (and the graph output) reading each name
  std::map<std::string, int> tail_of_;  // names that are a layer's latest output
  std::map<std::string, std::string> hard_sigmoid_of_;  // HardSigmoid(x) output -> x (HardSwish)
  std::string input_tail_;                              // the input after preprocessing so far
  int64_t opset_ = 13;
};

}  // namespace tpu::cnn::frontend

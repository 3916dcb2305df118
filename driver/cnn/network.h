// The CNN intermediate representation shared by the ONNX importer, the float and integer
// references, the quantizer and the chip compiler.
//
// A network is a chain of fused layers. Each layer is one Conv or Dense (Gemm/MatMul) with its
// bias, an optional activation (ReLU or Clip) and an optional max-pool: exactly what one pass of
// the chip's MXU plus one activate instruction computes. Tensors are NCHW; a layer's input is
// one image of shape (C, H, W) (a dense layer flattens it in C, H, W order, as ONNX Flatten does).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
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

enum class LayerKind { Conv, Dense };
enum class Activation { None, Relu, Clip };

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
  std::string name;                 // ONNX node name (or output tensor name) of the Conv/Gemm
  std::string op;                   // ONNX op type of the main node ("Conv", "Gemm", ...)
  std::vector<std::string> fused;   // "Relu /Relu", "MaxPool /MaxPool", ... (for messages)
  Shape3 in;                        // input image
  Shape3 conv_out;                  // before pooling
  Shape3 out;                       // after pooling
  int kh = 1, kw = 1, sh = 1, sw = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int pool_k = 1, pool_s = 1;       // 1, 1 = no pooling (square window, no padding, floor)

  int cin() const { return kind == LayerKind::Conv ? in.c : int(in.size()); }
  int cout() const { return out.c; }
  // Number of weights per output channel (Cin*kh*kw, or the flattened input size).
  int64_t fan_in() const { return kind == LayerKind::Conv ? int64_t(in.c) * kh * kw : in.size(); }
  // Multiply-accumulates of one image: every convolution output that max-pooling reads (a
  // floor-mode pool never reads the last line/column when the window does not fit, and neither
  // the references nor the chip need it). Not the chip's padded count.
  int64_t macs() const {
    return int64_t(conv_out.c) * ((out.h - 1) * pool_s + pool_k) * ((out.w - 1) * pool_s + pool_k) * fan_in();
  }
  // The same counting every convolution output (the usual figure for the model).
  int64_t model_macs() const { return conv_out.size() * fan_in(); }
  // Recomputes conv_out and out from in and the attributes; throws Error if they do not fit.
  void infer_shapes();
};

// A float layer: weights [cout][cin][kh][kw] (conv) or [cout][fan_in] (dense), bias [cout].
struct Layer : LayerGeometry {
  std::vector<float> weight;
  std::vector<float> bias;
  Activation act = Activation::None;
  float clip_lo = 0.0f, clip_hi = 0.0f;  // Activation::Clip
  std::optional<GivenQuant> given;        // quantized weights/bias from the file
  std::optional<TensorQuant> out_quant;   // output quantization from the file
};

// The float network as imported.
struct Network {
  std::string name;                  // file name or graph name
  std::string input_name, output_name;
  Shape3 input;                      // one image
  int file_batch = 0;                // batch dimension in the file (0 = symbolic)
  // Per-channel affine preprocessing at the graph input (Sub/Div/Mul/Add by constants):
  // x' = x * pre_scale[c] + pre_shift[c]. Empty = identity.
  std::vector<float> pre_scale, pre_shift;
  std::optional<TensorQuant> input_quant;  // from a QuantizeLinear on the input
  std::vector<Layer> layers;
  int classes() const { return layers.empty() ? 0 : int(layers.back().out.size()); }
  std::string summary() const;  // one line per layer
};

// A quantized layer: the integer network the chip runs and the integer reference defines.
//   acc[oc][p]  = sum over the window of (x_q - in.zero_point) * weight[oc][...]
//                 (zero padding is a real 0, i.e. x_q = in.zero_point)
//   v           = saturate_int32(acc + bias[oc])
//   y           = saturate_out(round_half_away_from_zero(v * mult[oc] / 2^shift[oc]) + out.zp)
//   y           = Relu: max(y, out.zp); Clip: min(max(y, lo), hi)
//   output      = max-pool of y (floor, no padding)
struct QLayer : LayerGeometry {
  TensorQuant in_q, out_q;
  std::vector<int8_t> weight;        // layout as Layer::weight
  std::vector<float> weight_scale;   // per output channel
  std::vector<int32_t> bias;         // per output channel
  std::vector<int32_t> mult;         // per output channel, >= 0
  std::vector<uint8_t> shift;        // per output channel, 0..63
  Activation act = Activation::None;
  int lo = -128, hi = 127;           // Clip bounds in the output's integer domain
};

struct QuantNetwork {
  std::string name;
  Shape3 input;
  std::vector<float> pre_scale, pre_shift;  // as Network
  TensorQuant input_q;
  std::vector<QLayer> layers;
  int classes() const { return layers.empty() ? 0 : int(layers.back().out.size()); }
  const TensorQuant& output_q() const { return layers.back().out_q; }
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

// Round half away from zero of a double, saturated to [lo, hi].
int32_t round_clamp(double v, int32_t lo, int32_t hi);

}  // namespace tpu::cnn

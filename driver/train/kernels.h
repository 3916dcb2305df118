// SPDX-License-Identifier: Apache-2.0
// Training kernels: each appends to a ProgramBuilder the instructions of one layer's forward,
// backward or update on tensors placed in VMEM (layout.h). docs/training.md describes what
// each emits and the order of every fp32 operation (the host reference in tests/train
// reproduces it bit for bit from docs/isa.md).
//
// Every kernel checks its shapes and throws std::invalid_argument naming the kernel and the
// mismatch; the ProgramBuilder checks every instruction against the chip (ProgramError).
#pragma once

#include <cstdint>

#include "layout.h"

namespace tpu::train {

// ---- Dense / Gemm (dense.cpp). `acc` is the first of the ACC rows the kernel may use
// (rows, or K for dense_backward_weights; at most AccRows - acc).
// Y = X . W (+ bias): X rows x K, W K x Nout, Y rows x Nout; bias a row_vector or nullptr.
// Uses ACC rows [acc, acc + NT * rows) (NT = Nout's column blocks).
void dense_forward(ProgramBuilder& pb, const VMat& x, const VMat& w, const VMat* bias,
                   const VMat& y, uint32_t acc);
// The same in pieces, for a layer streamed through VMEM in chunks of K (each a multiple of N
// but the last): ACC rows acc + nt*rows (+)= X_c . W_c for each chunk c in order
// (`accumulate` false for the first), then dense_forward_finish moves ACC to Y and adds the
// bias. The result is bit-identical to dense_forward on the whole X and W.
// `tile_group` > 1: the weight tiles loaded up to that many per load_weights (the same bits).
void dense_forward_partial(ProgramBuilder& pb, const VMat& x, const VMat& w, uint32_t acc,
                           bool accumulate, uint32_t tile_group = 1);
void dense_forward_finish(ProgramBuilder& pb, uint32_t acc, const VMat* bias, const VMat& y);
// dX = dY . W^T (W through load_weights transpose). With `acc_end` > acc + dY's rows the ACC
// rows [acc, acc_end) are used in two halves of dY.rows-row slots, one K-block per slot: the
// matmuls of one half run while the other half moves to VMEM (one `acc_to_vmem` per half
// when dX's blocks are contiguous), bit-identical to acc_end = 0 (one slot at acc).
// `tile_group` as for dense_forward_partial.
void dense_backward_input(ProgramBuilder& pb, const VMat& dy, const VMat& w, const VMat& dx,
                          uint32_t acc, uint32_t acc_end = 0, uint32_t tile_group = 1);
// dW = X^T . dY (X^T by the transpose unit into `xt`: x.span(N) scratch rows).
void dense_backward_weights(ProgramBuilder& pb, const VMat& x, const VMat& dy, const VMat& dw,
                            uint32_t xt, uint32_t acc);
// db = sum over rows of dY (per lane, rows in order, seeded with -0.0): a row_vector.
void bias_grad(ProgramBuilder& pb, const VMat& dy, const VMat& db);

// ---- ReLU and softmax cross-entropy (activation.cpp).
// Y = max(X, +0) over the whole span (padding stays +0).
void relu_forward(ProgramBuilder& pb, const VMat& x, const VMat& y);
// dX = X > 0 ? dY : +0 (X the forward input); `scratch`: x.span(N) rows.
void relu_backward(ProgramBuilder& pb, const VMat& x, const VMat& dy, const VMat& dx,
                   uint32_t scratch);

// Softmax cross-entropy with integer labels, mean over the batch.
struct SoftmaxCe {
  VMat logits;           // rows = batch M, cols = classes C <= N
  uint32_t labels = 0;   // ceil(M / N) rows of int32 labels, N per row (label m: row m/N, lane m%N)
  uint32_t pad_row = 0;  // constant row: +0.0 in lanes < C, -inf in the others (pad_row_lanes)
  VMat dlogits;          // M x C: (softmax - onehot) / M (mean_over)
  uint32_t loss = 0;     // one row: the mean loss in every lane
  uint32_t scratch = 0;  // softmax_ce_scratch_rows(M, N) rows
  // The mean's divisor (0: M): a pod's global batch, so that the chips' losses and gradients
  // sum to the global batch's (compiler/allreduce.h).
  uint32_t mean_over = 0;
};
uint32_t softmax_ce_scratch_rows(uint32_t m, uint32_t n);
std::vector<float> pad_row_lanes(uint32_t classes, uint32_t n);
void softmax_cross_entropy(ProgramBuilder& pb, const SoftmaxCe& k);

// ---- optimizer updates over flat fp32 tensors of `rows` VMEM rows (optimizer.cpp).
// Hyper-parameters are fp32 immediates fixed before training starts.
struct SgdParams {
  float lr = 0.01f;
  float momentum = 0.0f;      // 0: plain SGD (no velocity tensor)
  float weight_decay = 0.0f;  // L2 added to the gradient: g + wd * p
};
// p -= lr * g' (g' = g + wd*p); with momentum v = mu*v + g', p -= lr * v (PyTorch's SGD).
// `velocity` is ignored without momentum. `scratch`: 2 * rows rows.
void sgd_update(ProgramBuilder& pb, const SgdParams& h, uint32_t param, uint32_t grad,
                uint32_t velocity, uint32_t rows, uint32_t scratch);

struct AdamParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-7f;
  float weight_decay = 0.0f;  // L2 added to the gradient (PyTorch Adam's weight_decay)
};
// Adam keeps its moments scaled: m' = m / (1 - beta1) and v' = v / (1 - beta2) of the textbook
// m, v (so m' = b1*m' + g', v' = b2*v' + g'^2 need no multiply by 1 - beta), and folds every
// per-step factor into two rows computed once per step (docs/training.md "The Adam update").
// Four rows of Adam's per-step state: beta1^t, beta2^t (set to 1.0 before the first step),
// and the rows adam_begin_step derives from them.
struct AdamState {
  uint32_t first = 0;
  uint32_t beta1_pow() const { return first; }
  uint32_t beta2_pow() const { return first + 1; }
  // C_u * sqrt(1 - beta2^t) / (1 - beta1^t): the update is this times m' / d
  uint32_t update_scale() const { return first + 2; }
  // C_e * sqrt(1 - beta2^t): d = 2^13 * sqrt(v') + this
  uint32_t eps_term() const { return first + 3; }
  static constexpr uint32_t kRows = 4;
};
// The denominator's exact power-of-two scale: d = 2^13 * (sqrt(v') + eps * sqrt(1 - beta2^t) /
// sqrt(1 - beta2)), which the Newton steps' constants carry for free.
constexpr int kAdamSqrtScaleLog2 = 13;
// The two fp32 immediates of adam_begin_step, each computed in double from the fp32
// hyper-parameters and rounded once: C_u = 2^13 * lr * (1 - beta1) / sqrt(1 - beta2),
// C_e = 2^13 * eps / sqrt(1 - beta2). std::invalid_argument unless both are normal and finite.
struct AdamConstants {
  float update = 0.0f, eps = 0.0f;
};
AdamConstants adam_constants(const AdamParams& h);
// Once per step, before the adam_update calls: t += 1 and the two per-step rows, on the chip.
// `scratch`: 4 rows.
void adam_begin_step(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t scratch);
// m' = b1*m' + g'; v' = b2*v' + g'^2 (g' = g + wd*p); d = 2^13 sqrt(v') + eps_term;
// p -= update_scale * m' * rcp(d), the square root and reciprocal by Newton steps of their own
// (docs/training.md "The Adam update": 33 vector passes, 31 with `decayed`, 2 more with weight
// decay; the textbook lr * m_hat / (sqrt(v_hat) + eps) up to rounding). `scratch`: 4 * rows.
// `decayed`: adam_decay_moments already did m' = b1*m' and v' = b2*v' on these rows (it needs
// no gradient, so it can run earlier, beside other units' work): the same operations, the
// same bits.
void adam_update(ProgramBuilder& pb, const AdamParams& h, const AdamState& s, uint32_t param,
                 uint32_t grad, uint32_t m, uint32_t v, uint32_t rows, uint32_t scratch,
                 bool decayed = false);
// m' = b1*m', v' = b2*v': adam_update's first two passes (then called with `decayed`).
void adam_decay_moments(ProgramBuilder& pb, const AdamParams& h, uint32_t m, uint32_t v,
                        uint32_t rows);

// Cycles of one N x N block of a `transpose` on the training chip's move unit when the VMEM
// ports grant (rtl/tpu_vmem_move.sv: blocks pipelined, the next one reading while this one
// writes; docs/isa.md "transpose"): the compiler's cost models use it.
constexpr uint64_t transpose_block_cycles(uint64_t n) { return n + 3; }

// ---- Convolution, pooling, residual Add (conv.cpp, pool.cpp). An image activation
// [batch, C, H, W] is a VMat (docs/training.md "Image layout"): rows = (y, x, b), pixel-major with
// the batch innermost, row (y*W + x)*batch + b; cols = C (channel blocks of N lanes).
struct ConvGeom {
  uint32_t batch = 1, cin = 1, cout = 1;
  uint32_t h = 1, w = 1;    // input height / width (without padding)
  uint32_t kh = 1, kw = 1;  // kernel
  uint32_t sh = 1, sw = 1;  // strides
  uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  uint32_t hp() const { return h + pad_top + pad_bottom; }
  uint32_t wp() const { return w + pad_left + pad_right; }
  uint32_t ho() const { return (hp() - kh) / sh + 1; }
  uint32_t wo() const { return (wp() - kw) / sw + 1; }
  uint32_t taps() const { return kh * kw; }
  // cin == 1: the taps go into the lanes (im2col built on the chip, K = taps);
  // cin > 1: K-tiles of (tap, channel block), K = taps * round_up(cin, N).
  bool packed() const { return cin == 1; }
  uint32_t cin_stride(uint32_t n) const { return packed() ? 1 : round_up(cin, n); }
  uint32_t weight_rows(uint32_t n) const { return taps() * cin_stride(n); }
  // VMEM rows of the input: cin > 1: hp*wp*batch (a VMat with its zero border);
  // cin == 1: the flat image, N values per row, plus the tail the taps read (+0).
  uint32_t input_rows(uint32_t n) const;
};
// Checks the geometry (kernel fits the padded input, counts >= 1); throws naming `kernel`.
void check_conv_geom(const ConvGeom& g, const char* kernel);
// The input tensor of a convolution in VMEM: cin > 1: input_rows x cin; cin == 1:
// input_rows x N (one block, lane j of row r = flat value r*N + j).
VMat conv_input_matrix(VmemArena& arena, const ConvGeom& g);
// Its row-major values (for pack) from NCHW values: the zero border included.
std::vector<float> conv_input_values(const ConvGeom& g, uint32_t n, const std::vector<float>& nchw);
// The weight matrix (weight_rows x cout; row tap*cin_stride + c, tap = ky*kw + kx) from ONNX's
// W[cout][cin][kh][kw], and back (padding rows dropped).
std::vector<float> conv_weight_values(const ConvGeom& g, uint32_t n,
                                      const std::vector<float>& oihw);
std::vector<float> conv_weight_oihw(const ConvGeom& g, uint32_t n,
                                    const std::vector<float>& values);
// Scratch rows conv2d_forward / conv2d_backward_weights / conv2d_backward_input need with
// ACC rows [acc, AccRows).
uint32_t conv_scratch_rows(const ConvGeom& g, const ChipParams& p, uint32_t acc);
// How conv2d_backward_weights puts dW = patches^T . dY on the MXU, per chunk of N positions
// (docs/training.md "Conv dW reoriented"):
// DyStationary: the dY chunk is the weight tile (one per output block), the patch rows stream
// through it (taps rows for cin = 1, N channel rows per K-tile for cin > 1);
// XStationary: the patch rows are the weight tile (one per K-tile), the dY^T rows (one per
// output channel, N positions each, made by the transpose unit) stream through it, giving dW^T
// in ACC, transposed into dW at the end. The same products summed in the same order: the
// two give the same bits. Auto: conv_dw_orientation.
enum class ConvDwOrient { Auto, DyStationary, XStationary };
// The orientation Auto takes: XStationary iff its busiest unit takes fewer cycles per chunk of
// N positions, at the training chip's rates (a load_weights tile N cycles, a transpose block
// 2N + 1, an MXU fold max(streamed rows, N)): DyStationary = cout_blocks * max(K rows, N);
// XStationary = max(ktiles * N, cout_blocks * (2N + 1), ktiles * cout_blocks * N), K rows =
// taps (cin = 1) or taps * round_up(cin, N), ktiles = ceil(taps / N) (cin = 1) or taps *
// ceil(cin / N). A function of (taps, cin, cout, N) only, so every band of a layer takes the
// same one. On this chip the transposes make XStationary the slower one for every geometry
// tried (docs/training.md "Conv dW reoriented"); it stays for explicit use.
ConvDwOrient conv_dw_orientation(const ConvGeom& g, uint32_t n);
// The scratch rows conv2d_backward_weights alone needs (cin = 1: the tap rows, and with
// XStationary the dY^T ring; fewer than conv_scratch_rows, which covers the forward pass's
// im2col too).
uint32_t conv_dw_scratch_rows(const ConvGeom& g, const ChipParams& p,
                              ConvDwOrient orient = ConvDwOrient::Auto);
// Y = conv(X, W) + bias: X conv_input_matrix, W weight_rows x cout, bias a row_vector or
// nullptr, Y ho*wo*batch x cout. Uses ACC rows [acc, AccRows) and `scratch` rows.
// `im2col_ready` (cin = 1, the layer one band of ACC rows): the im2col rows a previous call
// with the same g, X and scratch left in scratch are reused (the same layer's other output
// channels), not built again.
void conv2d_forward(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& w,
                    const VMat* bias, const VMat& y, uint32_t scratch, uint32_t acc,
                    bool im2col_ready = false);
// dW = patches^T . dY (batch a multiple of N). The bias gradient is bias_grad(dY).
// `accumulate`: add to the partial dW this kernel left in ACC rows [acc, ..) (a layer done in
// bands of output lines, each band a call with the same orientation; nothing else may use
// those ACC rows between the calls): bit-identical to the whole layer in one call.
// ACC rows conv2d_backward_weights uses from `acc`: cout blocks * ktiles * N (ktiles =
// ceil(taps/N) for cin == 1, taps * ceil(cin/N) otherwise), except with cin > 1 and
// DyStationary ktiles * N (one output block after the other, so `accumulate` there needs one
// output block per call).
// XStationary writes dW's rows up to round_up(weight_rows, N) - 1 of each block when its pitch
// holds them (else only the weight rows, through scratch).
uint32_t conv_dw_acc_rows(const ConvGeom& g, uint32_t n, ConvDwOrient orient = ConvDwOrient::Auto);
// Whether a caller doing a layer in bands should give conv2d_backward_weights all of g's output
// blocks in one call (Auto): it can accumulate them (cin = 1, XStationary, or one block), in
// conv_dw_acc_rows(g, n) rows = the blocks' one-block rows side by side. With XStationary
// that is what makes the tiles long (per chunk one tile for all the output channels).
bool conv_dw_group(const ConvGeom& g, uint32_t n);
void conv2d_backward_weights(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& dy,
                             const VMat& dw, uint32_t scratch, uint32_t acc,
                             bool accumulate = false, ConvDwOrient orient = ConvDwOrient::Auto);
// dX (h*w*batch x cin, without the border) = col2im(dY . W_tap^T), cin > 1 only.
void conv2d_backward_input(ProgramBuilder& pb, const ConvGeom& g, const VMat& dy, const VMat& w,
                           const VMat& dx, uint32_t scratch, uint32_t acc);
// Copies an image activation (h x w, image layout) into the interior of a conv input with
// g's zero border (cin > 1), writing the border rows +0.
void conv_pad_input(ProgramBuilder& pb, const ConvGeom& g, const VMat& src, const VMat& x);

struct PoolGeom {
  uint32_t batch = 1, c = 1, h = 1, w = 1;
  uint32_t kh = 2, kw = 2, sh = 2, sw = 2;
  uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  uint32_t ho() const { return (h + pad_top + pad_bottom - kh) / sh + 1; }
  uint32_t wo() const { return (w + pad_left + pad_right - kw) / sw + 1; }
};
// Y = max over the window (padding taps skipped, as ONNX MaxPool); `argmax`: a tensor of Y's
// shape holding the first maximal tap (ky*kw + kx) as fp32 (docs/training.md, `maxpool_forward`).
void maxpool_forward(ProgramBuilder& pb, const PoolGeom& g, const VMat& x, const VMat& y,
                     const VMat& argmax, uint32_t scratch);
// dX (x's shape) = dY scattered to each window's argmax tap (added, taps in order).
void maxpool_backward(ProgramBuilder& pb, const PoolGeom& g, const VMat& argmax, const VMat& dy,
                      const VMat& dx, uint32_t scratch);
// Y (an image activation) += bias (a row_vector): a conv's bias added after a later step
// (e.g. after max pooling, on 1/4 of the rows; see docs/training.md).
void bias_add(ProgramBuilder& pb, const VMat& y, const VMat& bias);
// Scratch rows of maxpool_* and avgpool_backward: one row per output element, + kh*kw.
uint32_t pool_scratch_rows(const PoolGeom& g, uint32_t n);
// AveragePool without padding (count = kh*kw): Y = (x_tap0 + x_tap1 + ...) * (1/(kh*kw)).
void avgpool_forward(ProgramBuilder& pb, const PoolGeom& g, const VMat& x, const VMat& y);
void avgpool_backward(ProgramBuilder& pb, const PoolGeom& g, const VMat& dy, const VMat& dx,
                      uint32_t scratch);
// GlobalAveragePool: Y (batch x c) = (-0 + x_p0 + x_p1 + ...) * (1/(h*w)); backward spreads
// dY * (1/(h*w)) to every pixel.
void gap_forward(ProgramBuilder& pb, const PoolGeom& g, const VMat& x, const VMat& y);
void gap_backward(ProgramBuilder& pb, const PoolGeom& g, const VMat& dy, const VMat& dx);

// Residual Add: Y = A + B (same shape and pitch); fan-out gradient: acc = acc + g.
void add_forward(ProgramBuilder& pb, const VMat& a, const VMat& b, const VMat& y);
void grad_accumulate(ProgramBuilder& pb, const VMat& acc, const VMat& g);

// Flatten: the Dense input over an image activation (h*w pixels, channel blocks), without a
// copy: rows = batch, cols = blocks*N*h*w, feature (cb*h*w + p)*N + j = channel cb*N + j of
// pixel p. Needs a.pitch == h*w*batch. flatten_feature gives the row of the Dense weight
// matrix for ONNX's NCHW flatten index c*h*w + p.
VMat flatten_view(const VMat& a, uint32_t hw, uint32_t batch, uint32_t n);
uint32_t flatten_feature(uint32_t c, uint32_t p, uint32_t hw, uint32_t n);

// The fp32 bit pattern of f (an immediate).
uint32_t imm(float f);

}  // namespace tpu::train

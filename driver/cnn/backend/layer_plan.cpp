// SPDX-License-Identifier: Apache-2.0
// Per layer: the chip's limits on its geometry (strides, widths, accumulator rows, pooling
// windows), its LUT in the constants, its weight tiles and chip biases (weight_tiles.cpp).
#include "backend/backend.h"

namespace tpu::cnn::backend {

namespace {

// Output blocks, the convolution lines and columns pooling reads, and the limits on them.
void plan_geometry(const CompiledNetwork& cn, const QLayer& l, CompiledNetwork::LayerPlan* p) {
  const std::string where = "layer '" + l.name + "' (" + l.op + "): ";
  const uint32_t half = half_acc(cn);
  p->obs = int(ceil_div(uint64_t(l.cout()), cn.chip.N));
  if (conv_like(l)) {
    p->lines_used = l.conv_lines_of(0, l.out.h).second;  // from line 0, as pooling reads
    p->cols_used = l.conv_cols_of(0, l.out.w).second;
    if (l.sw > 255)
      throw Error(where + "horizontal stride " + std::to_string(l.sw) +
                  " > 255 (matmul inner_stride)");
    if (p->cols_used > 4095)
      throw Error(where + "output width " + std::to_string(p->cols_used) + " > 4095");
    if (uint32_t(conv_lines(l, 1)) * uint32_t(p->cols_used) > half)
      throw Error(where + "one pooled output line needs " +
                  std::to_string(conv_lines(l, 1) * p->cols_used) +
                  " accumulator rows, more than the " + std::to_string(half) + " available");
  } else {
    p->lines_used = p->cols_used = 1;
  }
  if (l.pool_k > 15 || l.pool_s > 15)
    throw Error(where + "max-pool window or stride > 15 (activate pool_k/pool_s are 4 bits)");
}

// A LUT layer's table: LUT byte (y & 0xFF) holds lut[y - qmin].
void add_lut(CompiledNetwork& cn, const QLayer& l, CompiledNetwork::LayerPlan* p) {
  const uint32_t at = uint32_t(cn.constants.size());
  cn.constants.resize(cn.constants.size() + 256, 0);
  const int qmin = l.out_q.qmin();
  for (int y = qmin; y < qmin + 256; ++y)
    cn.constants[at + uint32_t(y & 0xFF)] = uint8_t(l.lut[size_t(y - qmin)] & 0xFF);
  p->lut = int(cn.luts.size());
  cn.luts.push_back(at);
}

// Whether the depthwise unit computes layer l (isa.md "Depthwise configuration"): a Conv whose
// every output channel reads only its own input channel, one input in UB with borders, kernel
// and stride the unit takes, no dilation. The unit reads the tensor's stored border (no pad).
bool dw_eligible(const CompiledNetwork& cn, const QLayer& l, const CompiledNetwork::LayerPlan& p) {
  constexpr int kMaxDwKernel = 3, kMaxDwField = 4095;
  if (!cn.chip.has_dw() || p.packed || l.kind != LayerKind::Conv || l.inputs.size() != 1)
    return false;
  if (l.group != l.in.c || l.group != l.conv_out.c) return false;
  if (l.kh < 1 || l.kh > kMaxDwKernel || l.kw < 1 || l.kw > kMaxDwKernel) return false;
  if (l.dh != 1 || l.dw != 1 || l.sh != l.sw || (l.sh != 1 && l.sh != 2)) return false;
  const int width = (p.cols_used - 1) * l.sw + l.kw;
  const int height = (p.lines_used - 1) * l.sh + l.kh;
  return width <= kMaxDwField && height <= kMaxDwField;
}

// The tap rows of a depthwise layer: the diagonals of its (tap, block) tiles, a zero row after.
void add_dw_rows(CompiledNetwork& cn, const QLayer& l, CompiledNetwork::LayerPlan* p) {
  const uint32_t n = cn.chip.N;
  const uint32_t taps = uint32_t(l.kh * l.kw);
  constexpr size_t kDmaAlign = 16;
  for (const auto& terms : p->terms) {
    std::vector<uint8_t> rows(size_t(taps + 1) * n, 0);
    for (const auto& t : terms)
      for (uint32_t k = 0; k < n; ++k)
        rows[size_t(t.tap) * n + k] = cn.constants[t.tile + size_t(k) * n + k];
    const size_t at = (cn.constants.size() + kDmaAlign - 1) / kDmaAlign * kDmaAlign;
    cn.constants.resize(at, 0);
    cn.constants.insert(cn.constants.end(), rows.begin(), rows.end());
    p->dw_rows.push_back(uint32_t(at));
  }
  cn.constants.resize((cn.constants.size() + kDmaAlign - 1) / kDmaAlign * kDmaAlign, 0);
}

}  // namespace

void plan_layers(CompiledNetwork& cn) {
  for (size_t li = 0; li < cn.net.layers.size(); ++li) {
    const QLayer& l = cn.net.layers[li];
    CompiledNetwork::LayerPlan p;
    p.packed = li == 0 && cn.packed_input;
    plan_geometry(cn, l, &p);
    if (l.act == Activation::Lut) add_lut(cn, l, &p);
    build_terms(cn, li, &p);
    if (dw_eligible(cn, l, p)) add_dw_rows(cn, l, &p);
    cn.layers.push_back(std::move(p));
  }
}

}  // namespace tpu::cnn::backend

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

}  // namespace

void plan_layers(CompiledNetwork& cn) {
  for (size_t li = 0; li < cn.net.layers.size(); ++li) {
    const QLayer& l = cn.net.layers[li];
    CompiledNetwork::LayerPlan p;
    p.packed = li == 0 && cn.packed_input;
    plan_geometry(cn, l, &p);
    if (l.act == Activation::Lut) add_lut(cn, l, &p);
    build_terms(cn, li, &p);
    cn.layers.push_back(std::move(p));
  }
}

}  // namespace tpu::cnn::backend

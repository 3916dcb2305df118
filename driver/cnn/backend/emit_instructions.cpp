// SPDX-License-Identifier: Apache-2.0
// The instructions of a unit: its matmul terms, its activates (bias, requantization, activation,
// max-pool), border fills, parameter and LUT loads, and the input images' DMA.
#include <algorithm>
#include <array>
#include <tuple>

#include "backend/backend.h"
#include "backend/emitter.h"

namespace tpu::cnn::backend {

void Emitter::op(const Instruction& i, uint32_t tile) {
  ops_.push_back(Op{i, tile, -1, cur_layer_});
}

void Emitter::load_generation(int g) {
  if (loaded_gen_ == g) return;
  const auto& gen = cn_.generations[size_t(g)];
  op(ReadHost{HostDest::Param, 0, uint32_t(gen.slots) * 12, caddr_ + gen.offset});
  loaded_gen_ = g;
}

void Emitter::load_lut(int lut) {
  if (lut < 0 || loaded_lut_ == lut) return;
  op(ReadHost{HostDest::Lut, 0, 256 / n_, caddr_ + cn_.luts[size_t(lut)]});
  loaded_lut_ = lut;
}

void Emitter::fill_borders(size_t l, uint32_t m) {
  fill_borders(cn_.tensors[l], tensor_base(int(l)), m);
  if (cn_.has_shadow(int(l))) fill_borders(cn_.shadows[l], shadow_base(l), m);
}

void Emitter::fill_borders(const CompiledNetwork::Tensor& t, uint32_t base, uint32_t m) {
  if (!t.padded()) return;
  const uint32_t z = cn_.fill_rows, zacc = cn_.chip.acc_rows - z;
  const uint8_t slot = uint8_t(cn_.fill_slot(t.fill, t.is_unsigned));
  auto act = [&](uint32_t ub, uint32_t width, uint32_t height, uint32_t stride) {
    if (!fill_slots_loaded_) {
      op(ReadHost{HostDest::Param, uint32_t(cn_.chip.qp_slots - cn_.fill_slots.size()) * 12,
                  uint32_t(cn_.fill_slots.size()) * 12, caddr_ + cn_.fill_slots_offset});
      fill_slots_loaded_ = true;
    }
    Activate a;
    a.func = ActFunc::Identity;
    a.out_unsigned = t.is_unsigned;
    a.acc_addr = uint16_t(zacc);
    a.ub_addr = ub;
    a.width = uint16_t(width);
    a.height = uint16_t(height);
    a.ub_stride = stride;
    a.slot = slot;
    op(a);
  };
  auto run = [&](uint32_t start, uint32_t len) {
    while (len > 0) {
      const uint32_t c = std::min(len, std::min<uint32_t>(z, 4095));
      act(start, c, 1, 0);
      start += c;
      len -= c;
    }
  };
  const uint32_t wp = t.wp(), br = t.block_rows();
  const uint32_t top = uint32_t(t.pt) * wp + uint32_t(t.pl);
  const uint32_t gap = uint32_t(t.pl + t.pr);
  const uint32_t bottom = uint32_t(t.pr) + uint32_t(t.pb) * wp;
  const uint32_t blocks = m * uint32_t(t.blocks);
  if (gap > z) throw Error("internal: padding wider than the fill source");
  run(base, top);
  for (uint32_t q = 0; q < blocks; ++q) {
    const uint32_t b0 = base + q * br;
    if (gap > 0)
      for (uint32_t y = 0; y + 1 < uint32_t(t.h);) {
        const uint32_t h = std::min<uint32_t>(uint32_t(t.h) - 1 - y, z / gap);
        act(b0 + (uint32_t(t.pt) + y) * wp + uint32_t(t.pl + t.w), gap, h, wp);
        y += h;
      }
    run(b0 + (uint32_t(t.pt + t.h) - 1) * wp + uint32_t(t.pl + t.w),
        bottom + (q + 1 < blocks ? top : 0));
  }
}

void Emitter::stage_input(uint32_t i0, uint32_t g0, uint32_t g, uint32_t buf) {
  read_images(staging_base(buf), i0 + g0, g);
}

void Emitter::read_images(uint32_t ub, uint32_t first, uint32_t count) {
  if (cn_.input_bytes() == cn_.input_rows * n_) {
    op(ReadHost{HostDest::Ub, ub, count * cn_.input_rows, iaddr_ + first * cn_.input_bytes()});
    return;
  }
  for (uint32_t j = 0; j < count; ++j)
    op(ReadHost{HostDest::Ub, ub + j * cn_.input_rows, cn_.input_rows,
                iaddr_ + (first + j) * cn_.input_bytes()});
}

uint32_t Emitter::dw_reserved() const {
  for (const auto& p : cn_.layers)
    if (!p.dw_rows.empty()) return kDwSlots * kDwSlotRows + dw_bottom();
  return 0;
}

uint32_t Emitter::dw_bottom() const {
  if (cn_.spill) return 0;
  for (const auto& p : cn_.layers)
    if (!p.dw_rows.empty()) return kDwSlots * kDwSlotRows;
  return 0;
}

uint32_t Emitter::dw_tap_slot(size_t li, int ob, bool top) {
  const bool bottom = !top && dw_bottom() > 0;
  const uint32_t side = bottom ? 1 : 0;
  const uint32_t first = bottom ? 0 : cn_.chip.ub_rows - kDwSlots * kDwSlotRows;
  auto& held = dw_held_[side];
  for (uint32_t k = 0; k < kDwSlots; ++k)
    if (held[k].layer == int(li) && held[k].ob == ob) return first + k * kDwSlotRows;
  const QLayer& l = cn_.net.layers[li];
  const uint32_t k = dw_slot_[side];
  dw_slot_[side] = (k + 1) % kDwSlots;
  held[k] = DwHeld{int(li), ob};
  const uint32_t slot = first + k * kDwSlotRows;
  op(ReadHost{HostDest::Ub, slot, uint32_t(l.kh * l.kw) + 1,
              caddr_ + cn_.layers[li].dw_rows[size_t(ob)]});
  return slot;
}

void Emitter::dw_conv(size_t li, const Unit& u, uint32_t line0, uint32_t slot, uint32_t acc) {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  const auto& in = cn_.input_of(int(li), l.inputs[0]);
  DwConv d;
  d.a_unsigned = in.is_unsigned;
  d.stride2 = l.sh == 2;
  d.kernel_h = uint8_t(l.kh);
  d.kernel_w = uint8_t(l.kw);
  d.ub_addr = line0 + uint32_t(in.pl - l.pad_l);
  d.acc_addr = uint16_t(acc);
  d.width = uint16_t((p.cols_used - 1) * l.sw + l.kw);
  d.height = uint16_t((u.y1 - u.y0 - 1) * l.sh + l.kh);
  d.w_addr = slot;
  d.ub_stride = uint16_t(in.wp());
  op(d);
}

void Emitter::dw_convs(size_t li, const Unit& u) {
  const QLayer& l = cn_.net.layers[li];
  const int in_layer = l.inputs[0];
  const auto& in = cn_.input_of(int(li), in_layer);
  const uint32_t in_base = input_base(int(li), in_layer);
  // The output (and its shadow) below the input: taps at the top, else at the bottom.
  uint32_t out_end = tensor_base(int(li)) + mb_ * cn_.tensors[li].image_rows();
  if (cn_.has_shadow(int(li)))
    out_end = std::max(out_end, shadow_base(li) + mb_ * cn_.shadows[li].image_rows());
  const uint32_t slot = dw_tap_slot(li, u.ob, out_end <= in_base);
  for (uint32_t j = 0; j < u.g; ++j)
    dw_conv(li, u,
            in_base + (u.g0 + j) * in.image_rows() + uint32_t(u.ob) * in.block_rows() +
                uint32_t(u.y0 * l.sh + in.pt - l.pad_t) * in.wp(),
            slot, u.acc + j * u.rows);
}

void Emitter::matmuls(size_t li, const Unit& u) {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  if (!p.dw_rows.empty()) {
    dw_convs(li, u);
    return;
  }
  for (const auto& t : p.terms[size_t(u.ob)]) {
    const uint32_t tile = caddr_ + t.tile;
    const int in_layer = p.packed ? kNetworkInput : l.inputs[size_t(t.input)];
    const auto& in = p.packed ? cn_.input_tensor : cn_.input_of(int(li), in_layer);
    const uint32_t in_base =
        p.packed ? staging_base(u.group_index % 2) : input_base(int(li), in_layer);
    Matmul mm;
    mm.accumulate = &t != &p.terms[size_t(u.ob)].front();
    mm.a_unsigned = in.is_unsigned;
    mm.w_unsigned = false;
    if (l.kind == LayerKind::Dense) {
      // One row per image: image stride apart.
      const uint32_t img0 = p.packed ? 0 : u.g0;
      const uint32_t pix =
          p.packed ? 0
                   : (uint32_t(t.tap / in.w + in.pt) * in.wp() + uint32_t(t.tap % in.w + in.pl));
      mm.switch_weights = t.switch_weights;
      mm.ub_addr = in_base + img0 * in.image_rows() + uint32_t(t.ib) * in.block_rows() + pix;
      mm.acc_addr = uint16_t(u.acc);
      mm.inner = 1;
      mm.inner_stride = 1;
      mm.outer = uint16_t(u.g);
      mm.outer_stride = in.image_rows();
      op(mm, mm.switch_weights ? tile : 0);
      mxu_rows_ += u.g;
      continue;
    }
    for (uint32_t j = 0; j < u.g; ++j) {
      mm.switch_weights = j == 0 && t.switch_weights;
      if (p.packed) {
        mm.ub_addr = in_base + j * in.image_rows() + uint32_t(t.ib) * in.block_rows() +
                     uint32_t(u.y0) * uint32_t(p.cols_used);
        mm.inner_stride = 1;
        mm.outer_stride = uint32_t(p.cols_used);
      } else {
        const int ky = t.tap / l.kw, kx = t.tap % l.kw;
        mm.ub_addr = in_base + (u.g0 + j) * in.image_rows() + uint32_t(t.ib) * in.block_rows() +
                     uint32_t(u.y0 * l.sh + ky * l.dh + in.pt - l.pad_t) * in.wp() +
                     uint32_t(kx * l.dw + in.pl - l.pad_l);
        mm.inner_stride = uint8_t(l.sw);
        mm.outer_stride = uint32_t(l.sh) * in.wp();
      }
      mm.acc_addr = uint16_t(u.acc + j * u.rows);
      mm.inner = uint16_t(p.cols_used);
      mm.outer = uint16_t(u.y1 - u.y0);
      op(mm, mm.switch_weights ? tile : 0);
      mxu_rows_ += uint64_t(mm.inner) * mm.outer;
    }
  }
}

void Emitter::activates(size_t li, const Unit& u) {
  load_generation(u.gen);
  load_lut(cn_.layers[li].lut);
  activates(li, u, cn_.tensors[li], tensor_base(int(li)));
  if (cn_.has_shadow(int(li))) activates(li, u, cn_.shadows[li], shadow_base(li));
}

void Emitter::activates(size_t li, const Unit& u, const CompiledNetwork::Tensor& out, uint32_t base,
                        int out_line0) {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  Activate a;
  a.func = chip_func(l.act);
  a.out_unsigned = out.is_unsigned;
  a.raw = l.raw;
  a.slot = uint8_t(u.slot);
  if (l.kind == LayerKind::Dense) {
    a.acc_addr = uint16_t(u.acc);
    a.ub_addr = base + u.g0 * out.image_rows() + uint32_t(u.ob) * out.block_rows() +
                uint32_t(out.pt) * out.wp() + uint32_t(out.pl);
    a.width = 1;
    a.height = uint16_t(u.g);
    a.ub_stride = out.image_rows();
    op(a);
    return;
  }
  a.pool_k = uint8_t(l.pool_k);
  a.pool_s = uint8_t(l.pool_s);
  a.width = uint16_t(p.cols_used);
  a.height = uint16_t(u.y1 - u.y0);
  // The pooling windows of the band's lines [py0, py1) start at py*pool_s - pool_pad_t: what
  // lies outside the computed lines [y0, y1) (and columns [0, cols_used)) is padding.
  a.pad_top = uint8_t(u.y0 - (u.py0 * l.pool_s - l.pool_pad_t));
  a.pad_bottom = uint8_t((u.py1 - 1) * l.pool_s - l.pool_pad_t + l.pool_k - u.y1);
  a.pad_left = uint8_t(l.pool_pad_l);
  a.pad_right = uint8_t((l.out.w - 1) * l.pool_s - l.pool_pad_l + l.pool_k - p.cols_used);
  a.ub_stride = out.wp();
  if (l.per_pixel_divisor()) {
    divisor_activates(l, u, a, out, base, out_line0);
    return;
  }
  for (uint32_t j = 0; j < u.g; ++j) {
    a.acc_addr = uint16_t(u.acc + j * u.rows);
    a.ub_addr = base + (u.g0 + j) * out.image_rows() + uint32_t(u.ob) * out.block_rows() +
                uint32_t(u.py0 - out_line0 + out.pt) * out.wp() + uint32_t(out.pl);
    op(a);
  }
}

void Emitter::divisor_activates(const QLayer& l, const Unit& u, Activate a,
                                const CompiledNetwork::Tensor& out, uint32_t base, int out_line0) {
  const int w = l.out.w;
  std::vector<std::pair<int, int>> col_runs;  // [x0, x1) with one avg_cols value
  for (int x = 0; x < w;) {
    int x1 = x + 1;
    while (x1 < w && l.avg_cols[size_t(x1)] == l.avg_cols[size_t(x)]) ++x1;
    col_runs.push_back({x, x1});
    x = x1;
  }
  const bool whole_lines = col_runs.size() == 1;
  for (uint32_t j = 0; j < u.g; ++j)
    for (int y = u.py0; y < u.py1;) {
      int y1 = y + 1;
      while (whole_lines && y1 < u.py1 && l.avg_lines[size_t(y1)] == l.avg_lines[size_t(y)]) ++y1;
      for (const auto& [x0, x1] : col_runs) {
        a.slot = uint8_t(u.slot + l.divisor_index(y, x0));
        a.width = uint16_t(x1 - x0);
        a.height = uint16_t(y1 - y);
        a.acc_addr = uint16_t(u.acc + j * u.rows + uint32_t(y - u.y0) * uint32_t(w) + uint32_t(x0));
        a.ub_addr = base + (u.g0 + j) * out.image_rows() + uint32_t(u.ob) * out.block_rows() +
                    uint32_t(y - out_line0 + out.pt) * out.wp() + uint32_t(out.pl + x0);
        op(a);
      }
      y = y1;
    }
}

}  // namespace tpu::cnn::backend

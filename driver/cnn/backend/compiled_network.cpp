// SPDX-License-Identifier: Apache-2.0
// The compiled network's host side: how the host packs input images and unpacks outputs, and
// the lookups of the plan.
#include <algorithm>

#include "backend/backend.h"
#include "compiler.h"

namespace tpu::cnn {

using backend::ceil_div;

bool CompiledNetwork::reads_shadow(int consumer, int producer) const {
  if (!has_shadow(producer)) return false;
  const QLayer& c = net.layers[size_t(consumer)];
  return c.kind == LayerKind::Copy && (c.pad_t || c.pad_l || c.pad_b || c.pad_r);
}

int CompiledNetwork::fill_slot(int value, bool is_unsigned) const {
  for (size_t i = 0; i < fill_slots.size(); ++i)
    if (fill_slots[i].first == value && fill_slots[i].second == is_unsigned)
      return int(chip.qp_slots) - int(fill_slots.size()) + int(i);
  throw Error("internal: no fill slot for value " + std::to_string(value));
}

void CompiledNetwork::pack_input(const int32_t* q, uint8_t* bytes) const {
  const uint32_t n = chip.N;
  const Tensor& t = input_tensor;
  std::fill(bytes, bytes + input_bytes(), uint8_t(0));
  if (!packed_input) {
    // A tensor like the others: channel blocks of padded pixels, the border holding its fill.
    const Shape3 s = net.input;
    for (int b = 0; b < t.blocks; ++b)
      for (uint32_t y = 0; y < t.hp(); ++y)
        for (uint32_t x = 0; x < t.wp(); ++x) {
          uint8_t* row = bytes + (size_t(b) * t.block_rows() + y * t.wp() + x) * n;
          const int iy = int(y) - t.pt, ix = int(x) - t.pl;
          const bool inside = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
          for (uint32_t j = 0; j < n; ++j) {
            const int c = b * int(n) + int(j);
            if (c >= s.c) break;
            const int32_t v = inside ? q[(int64_t(c) * s.h + iy) * s.w + ix] : t.fill;
            row[j] = uint8_t(v & 0xFF);
          }
        }
    return;
  }
  const QLayer& l = net.layers.front();
  const int64_t fan_in = l.fan_in();
  const uint32_t pixels = t.block_rows();
  for (int kb = 0; kb < t.blocks; ++kb) {
    for (uint32_t p = 0; p < pixels; ++p) {
      uint8_t* row = bytes + (size_t(kb) * pixels + p) * n;
      for (uint32_t j = 0; j < n; ++j) {
        const int64_t k = int64_t(kb) * n + j;
        if (k >= fan_in) break;
        int32_t v;
        if (l.kind == LayerKind::Dense) {
          v = q[k];
        } else {
          const int oy = int(p) / t.w, ox = int(p) % t.w;
          const int ic = int(k / (l.kh * l.kw)), ky = int(k / l.kw % l.kh), kx = int(k % l.kw);
          const int iy = oy * l.sh + ky * l.dh - l.pad_t, ix = ox * l.sw + kx * l.dw - l.pad_l;
          v = (iy < 0 || iy >= l.in.h || ix < 0 || ix >= l.in.w)
                  ? l.in_q.zero_point
                  : q[(int64_t(ic) * l.in.h + iy) * l.in.w + ix];
        }
        row[j] = uint8_t(v & 0xFF);
      }
    }
  }
}

std::vector<int32_t> CompiledNetwork::unpack_output(const uint8_t* bytes) const {
  const Tensor& t = tensors.back();
  const uint32_t n = chip.N;
  std::vector<int32_t> out(size_t(int64_t(t.channels) * t.h * t.w));
  if (t.pixel_rows != 1) {  // raw int32: pixel x of a line at rows 4x .. 4x + 3 (no border)
    for (int c = 0; c < t.channels; ++c)
      for (int y = 0; y < t.h; ++y)
        for (int x = 0; x < t.w; ++x) {
          const size_t at = (size_t(uint32_t(c) / n) * t.block_rows() + size_t(y) * t.wp() +
                             size_t(x) * t.pixel_rows) *
                                n +
                            4 * size_t(uint32_t(c) % n);
          const uint32_t v = uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 |
                             uint32_t(bytes[at + 2]) << 16 | uint32_t(bytes[at + 3]) << 24;
          out[size_t((int64_t(c) * t.h + y) * t.w + x)] = int32_t(v);
        }
    return out;
  }
  for (int c = 0; c < t.channels; ++c)
    for (int y = 0; y < t.h; ++y)
      for (int x = 0; x < t.w; ++x) {
        const uint32_t row = uint32_t(c / int(n)) * t.block_rows() + uint32_t(y + t.pt) * t.wp() +
                             uint32_t(x + t.pl);
        const uint8_t b = bytes[size_t(row) * n + uint32_t(c) % n];
        out[size_t((int64_t(c) * t.h + y) * t.w + x)] =
            t.is_unsigned ? int32_t(b) : int32_t(int8_t(b));
      }
  return out;
}

}  // namespace tpu::cnn

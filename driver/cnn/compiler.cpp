// SPDX-License-Identifier: Apache-2.0
#include "compiler.h"

#include <algorithm>
#include <array>
#include <limits>
#include <tuple>

namespace tpu::cnn {

namespace {

uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + size_t(i)] = uint8_t(x >> (8 * i));
}

ActFunc chip_func(Activation a) {
  switch (a) {
    case Activation::None:
      return ActFunc::Identity;
    case Activation::Relu:
      return ActFunc::Relu;
    case Activation::Clip:
      return ActFunc::Clamp;
    case Activation::Lut:
      return ActFunc::Lut;
  }
  return ActFunc::Identity;
}

// The accumulator lines one image of a conv-like layer needs for `pooled` output lines.
// The most convolution output lines that `pooled` consecutive pooled lines read.
int conv_lines(const LayerGeometry& l, int pooled) {
  return std::min(l.conv_out.h, (pooled - 1) * l.pool_s + l.pool_k);
}

// Conv, Add and Copy compute an image of accumulator rows; Dense one row per image.
bool conv_like(const LayerGeometry& l) { return l.kind != LayerKind::Dense; }

// The packed first layer: the host lays out its receptive fields (im2col).
bool packable(const QuantNetwork& net) {
  const QLayer& l = net.layers.front();
  if (!l.has_weights() || l.group != 1 || l.inputs.size() != 1 || l.inputs[0] != kNetworkInput)
    return false;
  for (size_t i = 1; i < net.layers.size(); ++i)
    for (int in : net.layers[i].inputs)
      if (in == kNetworkInput) return false;
  return true;
}

// Channel offset of input j in the concatenated input of layer l.
int input_offset(const QLayer& l, size_t j) {
  int c = 0;
  for (size_t i = 0; i < j; ++i) c += l.input_channels[i];
  return c;
}

}  // namespace

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

namespace {

// Builds the tensors (layouts and borders) of a compiled network.
class TensorPlanner {
 public:
  TensorPlanner(CompiledNetwork& cn) : cn_(cn), n_(cn.chip.N) {}

  void run() {
    const QuantNetwork& net = cn_.net;
    const size_t nl = net.layers.size();
    cn_.packed_input = packable(net);
    cn_.tensors.resize(nl);
    for (size_t l = 0; l < nl; ++l) cn_.tensors[l] = plain(net.layers[l].out, net.layers[l].out_q);
    const QLayer& first = net.layers.front();
    if (cn_.packed_input) {
      CompiledNetwork::Tensor in;
      in.channels = int(first.fan_in());
      in.blocks = int(ceil_div(uint64_t(first.fan_in()), n_));
      if (first.kind == LayerKind::Conv) {
        in.h = first.conv_lines_of(0, first.out.h).second;
        in.w = first.conv_cols_of(0, first.out.w).second;
      } else {
        in.h = in.w = 1;
      }
      in.is_unsigned = first.in_q.is_unsigned;
      in.zero_point = first.in_q.zero_point;
      cn_.input_tensor = in;
    } else {
      cn_.input_tensor = plain(net.input, net.input_q);
    }
    // Borders: as wide as the widest consumer pads; the fill its consumers need: a real zero
    // for convolutions, the minimum for max-pools (kind 0 and 1 below).
    std::vector<std::array<CompiledNetwork::Tensor, 2>> pads(nl + 1);
    std::vector<int> fill_kind(nl + 1,
                               0);  // bit 1: a real zero (conv), bit 2: never wins (max-pool)
    cn_.last_use.assign(nl + 1, -1);
    for (size_t l = 0; l < nl; ++l) {
      const QLayer& c = net.layers[l];
      for (int in : c.inputs) {
        cn_.last_use[size_t(in + 1)] = int(l);
        if (in == kNetworkInput && cn_.packed_input) continue;
        if (c.kind != LayerKind::Conv && c.kind != LayerKind::Copy) continue;
        if (!(c.pad_t || c.pad_l || c.pad_b || c.pad_r)) continue;
        const int kind = c.kind == LayerKind::Conv ? 0 : 1;
        CompiledNetwork::Tensor& t = pads[size_t(in + 1)][size_t(kind)];
        t.pt = std::max(t.pt, c.pad_t);
        t.pl = std::max(t.pl, c.pad_l);
        t.pb = std::max(t.pb, c.pad_b);
        t.pr = std::max(t.pr, c.pad_r);
        fill_kind[size_t(in + 1)] |= 1 << kind;
      }
    }
    cn_.shadows.assign(nl, CompiledNetwork::Tensor{});
    for (size_t i = 0; i <= nl; ++i) {
      CompiledNetwork::Tensor& t = i == 0 ? cn_.input_tensor : cn_.tensors[i - 1];
      if (!fill_kind[i]) continue;
      const int qmin = t.is_unsigned ? 0 : -128;
      auto widen = [](CompiledNetwork::Tensor& to, const CompiledNetwork::Tensor& p) {
        to.pt = std::max(to.pt, p.pt);
        to.pl = std::max(to.pl, p.pl);
        to.pb = std::max(to.pb, p.pb);
        to.pr = std::max(to.pr, p.pr);
      };
      if (fill_kind[i] == 3 && !at_least_zero_point(int(i) - 1)) {
        if (i == 0)
          throw Error(
              "the input is padded by a convolution (with its zero point) and by a max-pool (with "
              "its "
              "minimum); only one of them may read it directly");
        // Two copies: the convolutions' (zero point) and the max-pools' (minimum).
        CompiledNetwork::Tensor& sh = cn_.shadows[i - 1];
        sh = t;
        widen(sh, pads[i][1]);
        sh.fill = qmin;
        widen(t, pads[i][0]);
        t.fill = t.zero_point;
        continue;
      }
      widen(t, pads[i][0]);
      widen(t, pads[i][1]);
      t.fill = fill_kind[i] == 2 ? qmin : t.zero_point;
    }
    cn_.input_rows = cn_.input_tensor.image_rows();
    cn_.output_rows = cn_.tensors.back().image_rows();
  }

 private:
  CompiledNetwork::Tensor plain(const Shape3& s, const TensorQuant& q) const {
    CompiledNetwork::Tensor t;
    t.channels = s.c;
    t.blocks = int(ceil_div(uint64_t(s.c), n_));
    t.h = s.h;
    t.w = s.w;
    t.is_unsigned = q.is_unsigned;
    t.zero_point = q.zero_point;
    t.fill = q.zero_point;
    return t;
  }
  // Whether every value of layer l's output is >= its zero point (ReLU, or a clamp above it).
  bool at_least_zero_point(int l) const {
    if (l < 0) return false;
    const QLayer& q = cn_.net.layers[size_t(l)];
    return q.act == Activation::Relu || (q.act == Activation::Clip && q.lo >= q.out_q.zero_point);
  }

  CompiledNetwork& cn_;
  const uint32_t n_;
};

}  // namespace

namespace {

// The weight tiles (matmul terms) and chip biases of one layer.
class TermBuilder {
 public:
  TermBuilder(CompiledNetwork& cn, size_t li)
      : cn_(cn), n_(cn.chip.N), li_(li), l_(cn.net.layers[li]) {}

  void run(CompiledNetwork::LayerPlan* p) {
    p_ = p;
    p->terms.resize(size_t(p->obs));
    std::vector<uint8_t> tile(size_t(n_) * n_), prev;
    for (int ob = 0; ob < p->obs; ++ob) {
      auto& terms = p->terms[size_t(ob)];
      prev.clear();
      for_each_term(ob, [&](const CompiledNetwork::Term& t0) {
        std::fill(tile.begin(), tile.end(), uint8_t(0));
        if (!fill_tile(ob, t0, tile.data())) return;
        CompiledNetwork::Term t = t0;
        if (!prev.empty() && tile == prev) {
          t.switch_weights = false;
          t.tile = terms.back().tile;
        } else {
          t.tile = uint32_t(cn_.constants.size());
          cn_.constants.insert(cn_.constants.end(), tile.begin(), tile.end());
          prev = tile;
        }
        terms.push_back(t);
      });
      if (terms.empty()) {  // every weight of the block is 0: one zero tile still writes the
                            // accumulators
        CompiledNetwork::Term t;
        for_each_term(ob, [&](const CompiledNetwork::Term& t0) {
          if (terms.empty()) t = t0, terms.push_back(t);
        });
        if (terms.empty()) throw Error("internal: layer '" + l_.name + "' has no input block");
        terms[0].tile = uint32_t(cn_.constants.size());
        cn_.constants.resize(cn_.constants.size() + size_t(n_) * n_, 0);
      }
    }
    chip_bias();
  }

 private:
  // Calls f for every candidate term of output block ob, in emission order.
  template <typename F>
  void for_each_term(int ob, F f) {
    CompiledNetwork::Term t;
    if (p_->packed) {
      const int blocks = cn_.input_tensor.blocks;
      for (int ib = 0; ib < blocks; ++ib) t.ib = ib, f(t);
      return;
    }
    switch (l_.kind) {
      case LayerKind::Conv:
        for (int tap = 0; tap < l_.kh * l_.kw; ++tap)
          for (size_t j = 0; j < l_.inputs.size(); ++j)
            for (int ib = 0; ib < cn_.tensor_of(l_.inputs[j]).blocks; ++ib)
              t.input = int(j), t.ib = ib, t.tap = tap, f(t);
        return;
      case LayerKind::Dense:
        for (size_t j = 0; j < l_.inputs.size(); ++j) {
          const auto& in = cn_.tensor_of(l_.inputs[j]);
          for (int tap = 0; tap < in.h * in.w; ++tap)
            for (int ib = 0; ib < in.blocks; ++ib) t.input = int(j), t.ib = ib, t.tap = tap, f(t);
        }
        return;
      case LayerKind::Add:
        for (int j = 0; j < 2; ++j) t.input = j, t.ib = ob, f(t);
        return;
      case LayerKind::Copy:
        for (size_t j = 0; j < l_.inputs.size(); ++j)
          for (int ib = 0; ib < cn_.tensor_of(l_.inputs[j]).blocks; ++ib)
            t.input = int(j), t.ib = ib, f(t);
        return;
    }
  }

  // Weight from input channel `ic` (of the concatenated input; Dense: flattened input k) to
  // output channel oc at tap `tap`; 0 where there is no connection.
  int weight(int oc, int64_t ic, int tap) const {
    const int64_t k = l_.fan_in();
    switch (l_.kind) {
      case LayerKind::Conv: {
        const int cin_g = l_.in.c / l_.group, cout_g = l_.cout() / l_.group;
        const int g = oc / cout_g;
        if (ic / cin_g != g) return 0;
        return l_.weight[size_t((int64_t(oc) * cin_g + ic % cin_g) * l_.kh * l_.kw + tap)];
      }
      case LayerKind::Dense: {
        const int64_t f = ic;  // flattened index
        const int64_t g = oc / (l_.cout() / l_.group);
        if (f / k != g) return 0;
        return l_.weight[size_t(oc * k + f % k)];
      }
      case LayerKind::Add:
        return ic == oc ? l_.add_weight(oc, tap) : 0;
      case LayerKind::Copy:
        return ic == oc ? 1 : 0;
    }
    return 0;
  }

  // The tile of term t of output block ob; false if it is all zero.
  bool fill_tile(int ob, const CompiledNetwork::Term& t, uint8_t* tile) const {
    bool any = false;
    const int64_t k = l_.fan_in();
    for (uint32_t kk = 0; kk < n_; ++kk)
      for (uint32_t nn = 0; nn < n_; ++nn) {
        const int oc = ob * int(n_) + int(nn);
        if (oc >= l_.cout()) continue;
        int w = 0;
        if (p_->packed) {
          const int64_t c = int64_t(t.ib) * n_ + kk;
          if (c < k) w = l_.weight[size_t(oc * k + c)];
        } else {
          const auto& in = cn_.tensor_of(l_.inputs[size_t(t.input)]);
          const int c = t.ib * int(n_) + int(kk);
          if (c >= in.channels) continue;
          const int64_t ic = input_offset(l_, size_t(t.input)) + c;
          if (l_.kind == LayerKind::Dense)
            w = weight(oc, ic * in.h * in.w + t.tap, 0);
          else if (l_.kind == LayerKind::Add)
            w = c == oc ? l_.add_weight(oc, t.input) : 0;
          else
            w = weight(oc, ic, t.tap);
        }
        tile[kk * n_ + nn] = uint8_t(w);
        any |= w != 0;
      }
    return any;
  }

  // bias - sum over the inputs of zp * weight: the chip multiplies the raw input bytes.
  void chip_bias() {
    const std::string where = "layer '" + l_.name + "' (" + l_.op + "): ";
    const int cout = l_.cout();
    const int64_t k = l_.fan_in();
    const int64_t worst = k * 255 * 128;
    p_->chip_bias.resize(size_t(cout));
    for (int oc = 0; oc < cout; ++oc) {
      int64_t zw = 0;
      switch (l_.kind) {
        case LayerKind::Conv: {
          const int cin_g = l_.in.c / l_.group, g = oc / (cout / l_.group);
          for (int64_t i = 0; i < k; ++i)
            zw += int64_t(l_.zero_point_of(g * cin_g + int(i / (l_.kh * l_.kw)))) *
                  l_.weight[size_t(oc * k + i)];
          break;
        }
        case LayerKind::Dense: {
          const int64_t plane = int64_t(l_.in.h) * l_.in.w, first = (oc / (cout / l_.group)) * k;
          for (int64_t i = 0; i < k; ++i)
            zw +=
                int64_t(l_.zero_point_of(int((first + i) / plane))) * l_.weight[size_t(oc * k + i)];
          break;
        }
        case LayerKind::Add:
          zw = int64_t(l_.in_qs[0].zero_point) * l_.add_weight(oc, 0) +
               int64_t(l_.in_qs[1].zero_point) * l_.add_weight(oc, 1);
          break;
        case LayerKind::Copy:
          zw = l_.zero_point_of(oc);
          break;
      }
      const int64_t b = int64_t(l_.bias[size_t(oc)]) - zw;
      if (b < std::numeric_limits<int32_t>::min() || b > std::numeric_limits<int32_t>::max() ||
          worst + (b < 0 ? -b : b) > std::numeric_limits<int32_t>::max())
        throw Error(where + "accumulator range exceeds int32 (fan-in " + std::to_string(k) +
                    ", bias " + std::to_string(b) + ")");
      p_->chip_bias[size_t(oc)] = int32_t(b);
    }
  }

  CompiledNetwork& cn_;
  const uint32_t n_;
  const size_t li_;
  const QLayer& l_;
  CompiledNetwork::LayerPlan* p_ = nullptr;
};

}  // namespace

CompiledNetwork compile_network(const QuantNetwork& net, const ChipParams& chip) {
  chip.validate();
  if (net.layers.empty()) throw Error(net.name + ": no layers");
  for (size_t l = 0; l < net.layers.size(); ++l)
    for (int in : net.layers[l].inputs)
      if (in < kNetworkInput || in >= int(l))
        throw Error("internal: layer '" + net.layers[l].name + "' reads layer " +
                    std::to_string(in) + " (not an earlier one)");
  CompiledNetwork cn;
  cn.net = net;
  cn.chip = chip;
  const uint32_t n = chip.N;
  const size_t nl = net.layers.size();
  TensorPlanner(cn).run();

  // Fill sources for padded tensors (the host writes the input's border).
  for (size_t i = 0; i < 2 * nl; ++i) {
    const auto& t = i < nl ? cn.tensors[i] : cn.shadows[i - nl];
    if (!t.padded()) continue;
    const std::pair<int, bool> key{t.fill, t.is_unsigned};
    if (std::find(cn.fill_slots.begin(), cn.fill_slots.end(), key) == cn.fill_slots.end())
      cn.fill_slots.push_back(key);
  }
  cn.fill_rows = cn.fill_slots.empty() ? 0 : std::min<uint32_t>(128, chip.acc_rows / 8);
  const uint32_t half = (chip.acc_rows - cn.fill_rows) / 2;
  if (int(cn.fill_slots.size()) >= int(chip.qp_slots))
    throw Error("too many distinct border values for the quantization slots");
  const int regular_slots = int(chip.qp_slots) - int(cn.fill_slots.size());

  // ---- layers: geometry checks, weight tiles, chip biases
  for (size_t li = 0; li < nl; ++li) {
    const QLayer& l = net.layers[li];
    CompiledNetwork::LayerPlan p;
    const std::string where = "layer '" + l.name + "' (" + l.op + "): ";
    p.packed = li == 0 && cn.packed_input;
    p.obs = int(ceil_div(uint64_t(l.cout()), n));
    if (conv_like(l)) {
      p.lines_used = l.conv_lines_of(0, l.out.h).second;  // from line 0, as pooling reads
      p.cols_used = l.conv_cols_of(0, l.out.w).second;
      if (l.sw > 255)
        throw Error(where + "horizontal stride " + std::to_string(l.sw) +
                    " > 255 (matmul inner_stride)");
      if (p.cols_used > 4095)
        throw Error(where + "output width " + std::to_string(p.cols_used) + " > 4095");
      if (uint32_t(conv_lines(l, 1)) * uint32_t(p.cols_used) > half)
        throw Error(where + "one pooled output line needs " +
                    std::to_string(conv_lines(l, 1) * p.cols_used) +
                    " accumulator rows, more than the " + std::to_string(half) + " available");
    } else {
      p.lines_used = p.cols_used = 1;
    }
    if (l.pool_k > 15 || l.pool_s > 15)
      throw Error(where + "max-pool window or stride > 15 (activate pool_k/pool_s are 4 bits)");
    if (l.act == Activation::Lut) {
      // LUT byte (y & 0xFF) holds lut[y - qmin].
      const uint32_t at = uint32_t(cn.constants.size());
      cn.constants.resize(cn.constants.size() + 256, 0);
      const int qmin = l.out_q.qmin();
      for (int y = qmin; y < qmin + 256; ++y)
        cn.constants[at + uint32_t(y & 0xFF)] = uint8_t(l.lut[size_t(y - qmin)] & 0xFF);
      p.lut = int(cn.luts.size());
      cn.luts.push_back(at);
    }
    TermBuilder(cn, li).run(&p);
    cn.layers.push_back(std::move(p));
  }

  // ---- quantization slots: generations of (layer, output block) slots
  std::vector<std::vector<std::pair<int, int>>> gens(1);  // (layer, ob)
  for (size_t li = 0; li < nl; ++li) {
    auto& p = cn.layers[li];
    int ob = 0;
    while (ob < p.obs) {
      if (int(gens.back().size()) == regular_slots ||
          (p.obs - ob <= regular_slots && int(gens.back().size()) + (p.obs - ob) > regular_slots))
        gens.emplace_back();
      const int room = regular_slots - int(gens.back().size());
      const int take = std::min(room, p.obs - ob);
      CompiledNetwork::LayerPlan::Chunk c;
      c.ob_begin = ob;
      c.ob_end = ob + take;
      c.generation = int(gens.size()) - 1;
      c.slot_base = int(gens.back().size());
      for (int o = ob; o < ob + take; ++o) gens.back().push_back({int(li), o});
      p.chunks.push_back(c);
      ob += take;
    }
  }
  auto write_slot = [&](size_t at, const int32_t* bias, const int32_t* mult, const uint32_t* misc) {
    for (uint32_t c = 0; c < n; ++c) {
      put32(cn.constants, at + 4 * c, uint32_t(bias[c]));
      put32(cn.constants, at + 4 * (n + c), uint32_t(mult[c]));
      put32(cn.constants, at + 4 * (2 * n + c), misc[c]);
    }
  };
  std::vector<int32_t> bias(n), mult(n);
  std::vector<uint32_t> misc(n);
  for (const auto& g : gens) {
    CompiledNetwork::Generation gen;
    gen.offset = uint32_t(cn.constants.size());
    gen.slots = int(g.size());
    cn.constants.resize(cn.constants.size() + g.size() * 12 * n, 0);
    for (size_t s = 0; s < g.size(); ++s) {
      const QLayer& l = net.layers[size_t(g[s].first)];
      const auto& p = cn.layers[size_t(g[s].first)];
      const int ob = g[s].second;
      const int out_zp = l.act == Activation::Lut ? l.pre_q.zero_point : l.out_q.zero_point;
      for (uint32_t c = 0; c < n; ++c) {
        const int oc = ob * int(n) + int(c);
        const uint32_t zp = uint32_t(out_zp) & 0xFF;
        if (oc < l.cout()) {
          bias[c] = p.chip_bias[size_t(oc)];
          mult[c] = l.mult[size_t(oc)];
          misc[c] = uint32_t(l.shift[size_t(oc)]) | zp << 8 | (uint32_t(l.lo) & 0xFF) << 16 |
                    (uint32_t(l.hi) & 0xFF) << 24;
        } else {  // padding channels: the zero point (the next layer's weights there are 0)
          bias[c] = 0;
          mult[c] = 0;
          misc[c] = (uint32_t(l.out_q.zero_point) & 0xFF) << 8 | (uint32_t(l.lo) & 0xFF) << 16 |
                    (uint32_t(l.hi) & 0xFF) << 24;
        }
      }
      write_slot(gen.offset + s * 12 * n, bias.data(), mult.data(), misc.data());
    }
    cn.generations.push_back(gen);
  }
  cn.fill_slots_offset = uint32_t(cn.constants.size());
  cn.constants.resize(cn.constants.size() + cn.fill_slots.size() * 12 * n, 0);
  for (size_t z = 0; z < cn.fill_slots.size(); ++z) {
    std::fill(bias.begin(), bias.end(), 0);
    std::fill(mult.begin(), mult.end(), 0);
    std::fill(misc.begin(), misc.end(), (uint32_t(cn.fill_slots[z].first) & 0xFF) << 8);
    write_slot(cn.fill_slots_offset + z * 12 * n, bias.data(), mult.data(), misc.data());
  }
  // 16-byte alignment of everything in constants holds: tiles are N*N, slots 12*N, LUTs 256 bytes.
  return cn;
}

// ---------------------------------------------------------------------------------------------

namespace {

struct Op {
  Instruction ins;
  uint32_t tile = 0;  // host address of the tile a switching matmul makes active
  int marker = -1;    // >= 0: end of layer `marker` in the first micro-batch (no instruction)
  int layer = -1;     // the layer it works for (Program::instr_layer)
};

class Emitter {
 public:
  Emitter(const CompiledNetwork& cn, uint32_t batch, uint32_t caddr, uint32_t iaddr, uint32_t oaddr,
          const ProgramOptions& opt)
      : cn_(cn),
        n_(cn.chip.N),
        batch_(batch),
        caddr_(caddr),
        iaddr_(iaddr),
        oaddr_(oaddr),
        overlap_(opt.overlap_layers) {
    half_ = (cn.chip.acc_rows - cn.fill_rows) / 2;
    plan_memory(opt);
  }

  Program run() {
    Program prog;
    prog.batch = batch_;
    prog.micro_batch = mb_;
    // Parameters (fill slots once; a slot generation when it changes) are loaded right after
    // the first input images, not before: the first matmul needs only those, and the parameter
    // DMA then overlaps it (measured: the array starts 230 cycles earlier).
    const size_t nl = cn_.layers.size();
    for (uint32_t i0 = 0; i0 < batch_; i0 += mb_) {
      const uint32_t m = std::min(mb_, batch_ - i0);
      if (!cn_.packed_input) {
        cur_layer_ = 0;
        read_images(base_[0], i0, m);
      }
      for (size_t l = 0; l < nl; ++l) {
        cur_layer_ = int(l);
        layer(l, i0, m);
        if (i0 == 0) ops_.push_back(Op{Nop{}, 0, int(l), int(l)});
      }
      flush_pending();
      cur_layer_ = -1;
      if (cn_.output_bytes() == cn_.output_rows * n_) {
        op(WriteHost{base_[nl], m * cn_.output_rows, oaddr_ + i0 * cn_.output_bytes()});
      } else {  // one per image: each starts at a 16-byte aligned host address
        for (uint32_t j = 0; j < m; ++j)
          op(WriteHost{base_[nl] + j * cn_.output_rows, cn_.output_rows,
                       oaddr_ + (i0 + j) * cn_.output_bytes()});
      }
    }
    finish(prog);
    return prog;
  }

 private:
  void op(const Instruction& i, uint32_t tile = 0) { ops_.push_back(Op{i, tile, -1, cur_layer_}); }

  // ---- unified buffer plan: every tensor (the input, then each layer's output) gets rows for
  // the micro-batch from its producer to its last consumer, first fit; the packed input is
  // staged in two buffers of g0 images while the first layer runs.
  struct Item {
    int birth = 0, death = 0;
    uint64_t rows = 0, base = 0;
  };
  static bool overlap(const Item& a, const Item& b) {
    return a.birth <= b.death && b.birth <= a.death;
  }

  bool place(uint32_t m, uint32_t g0, std::vector<uint32_t>* bases, uint64_t* peak) const {
    const size_t nl = cn_.layers.size();
    std::vector<Item> items(nl + 1);
    items[0].birth = cn_.packed_input ? 0 : -1;
    items[0].death = cn_.packed_input ? 0 : std::max(0, cn_.last_use[0]);
    items[0].rows = cn_.packed_input ? 2ull * g0 * cn_.input_rows : uint64_t(m) * cn_.input_rows;
    for (size_t l = 0; l < nl; ++l) {
      items[l + 1].birth = int(l);
      // A layer's last activates may still run during the next layer (overlap_layers): its
      // output lives at least until then, even if nothing reads it.
      items[l + 1].death = l + 1 == nl ? int(nl) : std::max(int(l) + 1, cn_.last_use[l + 1]);
      items[l + 1].rows = uint64_t(m) * cn_.tensors[l].image_rows();
    }
    for (size_t l = 0; l < nl; ++l) {  // shadows: live until their last max-pool reads them
      if (!cn_.has_shadow(int(l))) continue;
      Item it;
      it.birth = int(l);
      it.death = int(l) + 1;
      for (size_t c = l + 1; c < nl; ++c)
        if (cn_.reads_shadow(int(c), int(l))) it.death = int(c);
      it.rows = uint64_t(m) * cn_.shadows[l].image_rows();
      items.push_back(it);
      shadow_item_[l] = items.size() - 1;
    }
    // Largest first, each at the lowest rows free during its whole life (first fit by
    // decreasing size packs interval lifetimes tighter than placing in program order).
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return items[a].rows > items[b].rows; });
    std::vector<char> placed(items.size(), 0);
    *peak = 0;
    for (size_t i : order) {
      std::vector<std::pair<uint64_t, uint64_t>> taken;
      for (size_t j = 0; j < items.size(); ++j)
        if (placed[j] && overlap(items[i], items[j]))
          taken.push_back({items[j].base, items[j].base + items[j].rows});
      std::sort(taken.begin(), taken.end());
      uint64_t at = 0;
      for (const auto& t : taken) {
        if (at + items[i].rows <= t.first) break;
        at = std::max(at, t.second);
      }
      items[i].base = at;
      placed[i] = 1;
      *peak = std::max(*peak, at + items[i].rows);
    }
    if (*peak > cn_.chip.ub_rows) return false;
    bases->clear();
    for (const auto& it : items) bases->push_back(uint32_t(it.base));
    return true;
  }

  void plan_memory(const ProgramOptions& opt) {
    shadow_item_.assign(cn_.layers.size(), 0);
    uint32_t g0max = 1;
    if (cn_.packed_input) {
      const auto& l0 = cn_.layers.front();
      const uint32_t rows0 = uint32_t(l0.lines_used) * uint32_t(l0.cols_used);
      g0max = std::max<uint32_t>(1, rows0 <= half_ ? half_ / rows0 : 1);
    }
    uint32_t cap = std::min<uint32_t>(batch_, 4095);
    if (opt.max_micro_batch) cap = std::min(cap, opt.max_micro_batch);
    uint64_t peak = 0;
    for (uint32_t m = cap; m >= 1; --m) {
      const uint32_t g0 = std::min(m, g0max);
      if (place(m, g0, &base_, &peak)) {
        mb_ = m;
        g0_ = g0;
        return;
      }
    }
    uint64_t largest = 0;
    for (const auto& t : cn_.tensors) largest = std::max<uint64_t>(largest, t.image_rows());
    throw Error(cn_.net.name + ": one image does not fit in the unified buffer (" +
                std::to_string(cn_.chip.ub_rows) + " rows): the live tensors need " +
                std::to_string(peak) + " rows at their peak (input " +
                std::to_string(cn_.input_rows) + " rows, largest tensor " +
                std::to_string(largest) + " rows)");
  }
  // UB base of layer l's output (kNetworkInput: the input), and of its shadow.
  uint32_t tensor_base(int l) const { return base_[size_t(l + 1)]; }
  uint32_t shadow_base(size_t l) const { return base_[shadow_item_[l]]; }
  // Where layer `consumer` reads input `producer`.
  uint32_t input_base(int consumer, int producer) const {
    return cn_.reads_shadow(consumer, producer) ? shadow_base(size_t(producer))
                                                : tensor_base(producer);
  }

  void load_generation(int g) {
    if (loaded_gen_ == g) return;
    const auto& gen = cn_.generations[size_t(g)];
    op(ReadHost{HostDest::Param, 0, uint32_t(gen.slots) * 12, caddr_ + gen.offset});
    loaded_gen_ = g;
  }

  void load_lut(int lut) {
    if (lut < 0 || loaded_lut_ == lut) return;
    op(ReadHost{HostDest::Lut, 0, 256 / n_, caddr_ + cn_.luts[size_t(lut)]});
    loaded_lut_ = lut;
  }

  // Writes the fill value into every border row of layer l's output and shadow (m images).
  void fill_borders(size_t l, uint32_t m) {
    fill_borders(cn_.tensors[l], tensor_base(int(l)), m);
    if (cn_.has_shadow(int(l))) fill_borders(cn_.shadows[l], shadow_base(l), m);
  }
  void fill_borders(const CompiledNetwork::Tensor& t, uint32_t base, uint32_t m) {
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

  struct Unit {
    uint32_t g0 = 0, g = 0;  // images [g0, g0 + g) of the micro-batch
    int ob = 0, slot = 0, gen = 0;
    int py0 = 0, py1 = 0;  // pooled output lines (conv-like)
    int y0 = 0, y1 = 0;    // conv output lines computed
    uint32_t acc = 0;      // ACC base
    uint32_t rows = 0;     // ACC rows per image
    bool first_of_group = false;
    uint32_t group_index = 0;
    uint32_t next_group_g0 = 0, next_group_g = 0;  // the group after this one (g = 0: none)
  };

  void layer(size_t li, uint32_t i0, uint32_t m) {
    const QLayer& l = cn_.net.layers[li];
    const auto& p = cn_.layers[li];
    if (!p.packed) fill_borders(li, m);  // the packed first layer: after its input DMA
    // Group size and bands.
    uint32_t g;
    std::vector<std::pair<int, int>> bands;  // pooled lines
    if (conv_like(l)) {
      const uint32_t rows = uint32_t(p.lines_used) * uint32_t(p.cols_used);
      if (rows <= half_) {
        g = std::max<uint32_t>(1, std::min(m, half_ / rows));
        bands.push_back({0, l.out.h});
      } else {
        g = 1;
        int per = 1;
        while (per < l.out.h && uint32_t(conv_lines(l, per + 1)) * uint32_t(p.cols_used) <= half_)
          ++per;
        for (int y = 0; y < l.out.h; y += per) bands.push_back({y, std::min(l.out.h, y + per)});
      }
    } else {
      g = std::min(m, half_);
      bands.push_back({0, 1});
    }
    if (p.packed) g = std::min(g, g0_);
    std::vector<Unit> units;
    for (const auto& c : p.chunks) {
      uint32_t gi = 0;
      for (uint32_t s = 0; s < m; s += g, ++gi) {
        bool first = true;
        for (int ob = c.ob_begin; ob < c.ob_end; ++ob)
          for (const auto& b : bands) {
            Unit u;
            u.g0 = s;
            u.g = std::min(g, m - s);
            u.ob = ob;
            u.slot = c.slot_base + (ob - c.ob_begin);
            u.gen = c.generation;
            u.py0 = b.first;
            u.py1 = b.second;
            if (conv_like(l)) {
              std::tie(u.y0, u.y1) = l.conv_lines_of(b.first, b.second);
              u.rows = uint32_t(u.y1 - u.y0) * uint32_t(p.cols_used);
            } else {
              u.rows = 1;
            }
            u.first_of_group = first;
            u.group_index = gi;
            if (s + g < m) {
              u.next_group_g0 = s + g;
              u.next_group_g = std::min(g, m - s - g);
            }
            first = false;
            units.push_back(u);
          }
      }
    }
    const Unit* prev = nullptr;
    uint32_t prev_rows = 0;
    for (Unit& u : units) {
      const uint32_t rows = conv_like(l) ? u.g * u.rows : u.g;
      u.acc = acc_alloc(rows);
      // The previous unit's activates read its accumulators; they can only move in among this
      // unit's matmuls if this unit writes other rows (the ring may wrap onto them).
      const bool disjoint = !prev || u.acc >= prev->acc + prev_rows || prev->acc >= u.acc + rows;
      if (prev && !disjoint) activates(li, *prev);
      // The previous layer's last unit: the same, and this unit must not read its images.
      bool carry = false;
      if (!prev && pending_.valid) {
        const Unit& q = pending_.unit;
        const bool acc_free = u.acc >= q.acc + pending_.rows || q.acc >= u.acc + rows;
        bool reads = false;
        for (int in : l.inputs) reads |= in == int(pending_.layer);
        const bool images_free = u.g0 + u.g <= q.g0 || q.g0 + q.g <= u.g0;
        carry = acc_free && (!reads || images_free) && !p.packed;
        if (!carry) flush_pending();
      }
      if (p.packed && u.first_of_group) {
        if (u.group_index == 0) {
          stage_input(i0, u.g0, u.g, 0);
          if (&u == &units.front()) {
            load_generation(u.gen);
            fill_borders(li, m);
          }
        }
      }
      const size_t mm_begin = ops_.size();
      matmuls(li, u);
      if (p.packed && u.first_of_group && u.next_group_g)
        stage_input(i0, u.next_group_g0, u.next_group_g, (u.group_index + 1) % 2);
      if (prev && disjoint) {
        const size_t act_begin = ops_.size();
        activates(li, *prev);
        interleave(mm_begin, act_begin);
      }
      if (carry) {
        const size_t act_begin = ops_.size();
        const int layer = cur_layer_;
        cur_layer_ = int(pending_.layer);
        activates(pending_.layer, pending_.unit);
        cur_layer_ = layer;
        pending_.valid = false;
        interleave(mm_begin, act_begin);
      }
      prev = &u;
      prev_rows = rows;
    }
    if (prev) {
      if (overlap_)
        pending_ = Pending{li, *prev, prev_rows, true};
      else
        activates(li, *prev);
    }
  }

  // The last unit's activates of a layer wait here for the next layer's first matmuls.
  struct Pending {
    size_t layer = 0;
    Unit unit;
    uint32_t rows = 0;
    bool valid = false;
  };
  void flush_pending() {
    if (!pending_.valid) return;
    const int layer = cur_layer_;
    cur_layer_ = int(pending_.layer);
    activates(pending_.layer, pending_.unit);
    cur_layer_ = layer;
    pending_.valid = false;
  }

  // Spreads the instructions ops_[act_begin, end) evenly among ops_[mm_begin, act_begin), in
  // order, none before the first matmul. The chip issues in order: a run of activates (one per
  // image, each as long as the act unit takes for it) would otherwise hold back the matmuls
  // queued behind it while the act unit works through them one by one, and the array would
  // idle (measured on the bundled CNN: ~100 cycles per activate at conv2, 6,500 cycles a batch
  // of 16). Spread out, each activate issues while the array is busy with matmuls.
  void interleave(size_t mm_begin, size_t act_begin) {
    const size_t m = act_begin - mm_begin, a = ops_.size() - act_begin;
    if (m == 0 || a == 0) return;
    std::vector<Op> merged;
    merged.reserve(m + a);
    size_t next_act = 0;
    for (size_t i = 0; i < m; ++i) {
      merged.push_back(ops_[mm_begin + i]);
      // Activate k goes after matmul-block element ceil((k + 1) * m / (a + 1)) (1-based).
      while (next_act < a && (i + 1) * (a + 1) >= (next_act + 1) * m)
        merged.push_back(ops_[act_begin + next_act++]);
    }
    while (next_act < a) merged.push_back(ops_[act_begin + next_act++]);
    std::copy(merged.begin(), merged.end(), ops_.begin() + long(mm_begin));
  }

  // Accumulator space is a ring: each unit takes the next free rows and wraps to 0 when the end
  // is reached, so the oldest unit's rows are reused first. A unit is at most half the ring, so
  // there are always at least two buffers; small units (the first conv: 676 rows) get three, and
  // then the next matmul never waits for the activate that is still reading the unit before
  // last (measured: that wait cost ~40 cycles per unit when matmul and activate are as long).
  // The chip's hazard checks keep any reuse correct; this only decides how soon it can happen.
  uint32_t acc_alloc(uint32_t rows) {
    const uint32_t ring = cn_.chip.acc_rows - cn_.fill_rows;
    if (acc_next_ + rows > ring) acc_next_ = 0;
    const uint32_t at = acc_next_;
    acc_next_ += rows;
    return at;
  }

  uint32_t staging_base(uint32_t buf) const { return base_[0] + buf * g0_ * cn_.input_rows; }

  void stage_input(uint32_t i0, uint32_t g0, uint32_t g, uint32_t buf) {
    read_images(staging_base(buf), i0 + g0, g);
  }

  // Input images [first, first + count) of the batch to UB rows from `ub` on: one DMA, or one
  // per image when the host stride holds a gap (N < 16).
  void read_images(uint32_t ub, uint32_t first, uint32_t count) {
    if (cn_.input_bytes() == cn_.input_rows * n_) {
      op(ReadHost{HostDest::Ub, ub, count * cn_.input_rows, iaddr_ + first * cn_.input_bytes()});
      return;
    }
    for (uint32_t j = 0; j < count; ++j)
      op(ReadHost{HostDest::Ub, ub + j * cn_.input_rows, cn_.input_rows,
                  iaddr_ + (first + j) * cn_.input_bytes()});
  }

  void matmuls(size_t li, const Unit& u) {
    const QLayer& l = cn_.net.layers[li];
    const auto& p = cn_.layers[li];
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

  void activates(size_t li, const Unit& u) {
    load_generation(u.gen);
    load_lut(cn_.layers[li].lut);
    activates(li, u, cn_.tensors[li], tensor_base(int(li)));
    if (cn_.has_shadow(int(li))) activates(li, u, cn_.shadows[li], shadow_base(li));
  }
  void activates(size_t li, const Unit& u, const CompiledNetwork::Tensor& out, uint32_t base) {
    const QLayer& l = cn_.net.layers[li];
    const auto& p = cn_.layers[li];
    Activate a;
    a.func = chip_func(l.act);
    a.out_unsigned = out.is_unsigned;
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
    for (uint32_t j = 0; j < u.g; ++j) {
      a.acc_addr = uint16_t(u.acc + j * u.rows);
      a.ub_addr = base + (u.g0 + j) * out.image_rows() + uint32_t(u.ob) * out.block_rows() +
                  uint32_t(u.py0 + out.pt) * out.wp() + uint32_t(out.pl);
      op(a);
    }
  }

  // Inserts the read_weights: every tile is pushed before the matmul that switches to it, at most
  // WFifoTiles + 2 wait at once, and pushes run ahead (refilling when half the room is free).
  void finish(Program& prog) {
    std::vector<uint32_t> tiles;
    std::vector<int> tile_layer;
    for (const Op& o : ops_)
      if (o.marker < 0 && o.tile) {
        tiles.push_back(o.tile);
        tile_layer.push_back(o.layer);
      }
    const uint32_t cap = cn_.chip.wfifo_tiles + 2, tile_bytes = n_ * n_;
    // Refill when half the room is free: each read_weights costs a burst latency, so pushing one
    // tile at a time is slower (measured on the chip: 1 tile 45, 3 tiles 28 cycles per tile).
    const uint32_t refill = cap / 2;
    size_t next = 0, switched = 0;
    uint32_t pending = 0;
    auto& out = prog.instructions;
    auto& layer_of = prog.instr_layer;
    auto fill = [&]() {
      while (pending < cap && next < tiles.size()) {
        uint32_t cnt = 1;
        while (pending + cnt < cap && next + cnt < tiles.size() &&
               tiles[next + cnt] == tiles[next] + cnt * tile_bytes)
          ++cnt;
        out.push_back(ReadWeights{cnt, tiles[next]});
        layer_of.push_back(tile_layer[next]);
        prog.weight_bytes += uint64_t(cnt) * tile_bytes;
        pending += cnt;
        next += cnt;
      }
    };
    fill();
    for (const Op& o : ops_) {
      if (o.marker >= 0) {
        if (prog.layer_end.size() <= size_t(o.marker)) prog.layer_end.resize(size_t(o.marker) + 1);
        prog.layer_end[size_t(o.marker)] = out.size();
        continue;
      }
      if (o.tile) {
        if (next <= switched) fill();
        out.push_back(o.ins);
        layer_of.push_back(o.layer);
        ++switched;
        --pending;
        if (pending + refill <= cap) fill();
        continue;
      }
      out.push_back(o.ins);
      layer_of.push_back(o.layer);
    }
    out.push_back(Halt{});
    layer_of.push_back(-1);
    for (const auto& i : out) {
      if (const auto* r = std::get_if<ReadHost>(&i)) {
        prog.dma_in_bytes += uint64_t(r->rows) * n_;
        if (r->dest == HostDest::Ub) prog.input_data_bytes += uint64_t(r->rows) * n_;
      } else if (const auto* w = std::get_if<ReadWeights>(&i)) {
        prog.dma_in_bytes += uint64_t(w->tiles) * tile_bytes;
      } else if (const auto* wh = std::get_if<WriteHost>(&i)) {
        prog.dma_out_bytes += uint64_t(wh->rows) * n_;
      }
    }
    prog.dma_in_bytes += out.size() * kInstrBytes;
    prog.mxu_rows = mxu_rows_;
  }

  const CompiledNetwork& cn_;
  const uint32_t n_;
  const uint32_t batch_, caddr_, iaddr_, oaddr_;
  uint32_t half_ = 0, mb_ = 1, g0_ = 1;
  std::vector<uint32_t>
      base_;  // UB base of the input (or its staging), each layer's output, shadows
  mutable std::vector<size_t>
      shadow_item_;  // per layer: index of its shadow in base_ (set by place)
  int loaded_gen_ = -1, loaded_lut_ = -1;
  bool fill_slots_loaded_ = false;
  int cur_layer_ = -1;  // the layer being emitted (Op::layer)
  const bool overlap_;
  Pending pending_;
  uint32_t acc_next_ = 0;
  uint64_t mxu_rows_ = 0;
  std::vector<Op> ops_;
};

}  // namespace

Program emit_program(const CompiledNetwork& cn, uint32_t batch, uint32_t constants_addr,
                     uint32_t input_addr, uint32_t output_addr, const ProgramOptions& options) {
  if (batch < 1) throw Error("batch must be at least 1");
  return Emitter(cn, batch, constants_addr, input_addr, output_addr, options).run();
}

}  // namespace tpu::cnn

// SPDX-License-Identifier: Apache-2.0
// Weight tiles: every layer, per block of N output channels, as a sum of matmul terms (input
// block, kernel tap or pixel) each with an N x N tile in the constants; consecutive equal tiles
// are loaded once. Chip biases fold the input zero points in.
#include <limits>

#include "backend/backend.h"

namespace tpu::cnn::backend {

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

void build_terms(CompiledNetwork& cn, size_t li, CompiledNetwork::LayerPlan* p) {
  TermBuilder(cn, li).run(p);
}

}  // namespace tpu::cnn::backend

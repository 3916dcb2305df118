// SPDX-License-Identifier: Apache-2.0
// Tensor layouts: channel blocks of padded pixel rows, borders with the fill their consumers
// need, shadows, the packed input.
#include <array>

#include "backend/backend.h"

namespace tpu::cnn::backend {

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
    for (size_t l = 0; l < nl; ++l) {
      cn_.tensors[l] = plain(net.layers[l].out, net.layers[l].out_q);
      if (net.layers[l].raw) cn_.tensors[l].pixel_rows = Activate::kRawRowsPerPixel;
    }
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

void plan_tensors(CompiledNetwork& cn) { TensorPlanner(cn).run(); }

}  // namespace tpu::cnn::backend

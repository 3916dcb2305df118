// SPDX-License-Identifier: Apache-2.0
// Weights and geometry attributes of Conv / Dense layers: weight planes of quantized weights,
// given (file) quantization, pads and strides.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/importer.h"

namespace tpu::cnn::frontend {

int64_t Importer::weight_part(int64_t v, int planes, int p) {
  const int64_t base = v >= 0 ? v / planes : -((-v + planes - 1) / planes);
  return base + (p < v - base * planes ? 1 : 0);
}

int Importer::weight_planes(const onnx::NodeProto& n, const Const& w) const {
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t v = w.q[size_t(i)] - w.zp[w.channel_of(i)];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  for (int planes = 1; planes <= kMaxWeightPlanes; ++planes)
    if (weight_part(lo, planes, planes - 1) >= -128 && weight_part(hi, planes, 0) <= 127)
      return planes;
  fail(n, "weight minus zero point spans " + std::to_string(lo) + " .. " + std::to_string(hi) +
              "; the MXU takes int8 weights (split into at most " +
              std::to_string(kMaxWeightPlanes) + " planes: -384 .. 381)");
}

void Importer::repeat_input(Layer& l, int planes) {
  const std::vector<int> parts = l.inputs;
  const std::vector<int> channels = l.input_channels;
  for (int p = 1; p < planes; ++p) {
    l.inputs.insert(l.inputs.end(), parts.begin(), parts.end());
    l.input_channels.insert(l.input_channels.end(), channels.begin(), channels.end());
  }
  l.in.c *= planes;
}

std::vector<float> Importer::plane_floats(const Const& w, int cout, int64_t k, int planes,
                                          const std::function<int64_t(int, int64_t)>& index) {
  std::vector<float> f(size_t(int64_t(cout) * planes * k));
  for (int oc = 0; oc < cout; ++oc)
    for (int p = 0; p < planes; ++p)
      for (int64_t i = 0; i < k; ++i) {
        const int64_t flat = index(oc, i);
        const size_t ch = w.channel_of(flat);
        const int64_t part = weight_part(w.q[size_t(flat)] - w.zp[ch], planes, p);
        f[size_t((int64_t(oc) * planes + p) * k + i)] = float(double(part) * w.scale[ch]);
      }
  return f;
}

GivenQuant Importer::given_weights(const onnx::NodeProto& n, const Const& w, int cout, int64_t k,
                                   int oc_axis, const std::function<int64_t(int, int64_t)>& index,
                                   int planes) const {
  if (w.scale.size() > 1 && w.axis != oc_axis)
    fail(n, "weights are quantized per channel along axis " + std::to_string(w.axis) +
                "; only per-tensor or per-output-channel (axis " + std::to_string(oc_axis) +
                ") is supported");
  GivenQuant g;
  g.weight.resize(size_t(int64_t(cout) * planes * k));
  g.weight_scale.resize(size_t(cout));
  for (int oc = 0; oc < cout; ++oc) {
    for (int64_t i = 0; i < k; ++i) {
      const int64_t flat = index(oc, i);
      const size_t ch = w.channel_of(flat);
      const int64_t v = w.q[size_t(flat)] - w.zp[ch];
      for (int p = 0; p < planes; ++p) {
        const int64_t part = weight_part(v, planes, p);
        if (part < -128 || part > 127)
          fail(n, "weight minus zero point (" + std::to_string(v) +
                      ") does not fit in int8; the MXU takes int8 weights");
        g.weight[size_t((int64_t(oc) * planes + p) * k + i)] = int8_t(part);
      }
      if (i == 0) g.weight_scale[size_t(oc)] = float(w.scale[ch]);
    }
  }
  return g;
}

void Importer::given_bias(const Const* b, Layer& l, const std::optional<TensorQuant>& in_q) const {
  if (!b || !b->quantized || !l.given || !in_q) return;
  std::vector<int32_t> bias(size_t(l.cout()));
  for (int oc = 0; oc < l.cout(); ++oc) {
    const size_t ch = b->channel_of(oc);
    const double want = double(in_q->scale) * double(l.given->weight_scale[size_t(oc)]);
    if (b->zp[ch] != 0 || std::fabs(b->scale[ch] - want) > 1e-6 * want)
      return;  // requantize the float bias
    bias[size_t(oc)] = int32_t(b->q[size_t(oc)]);
  }
  l.given->bias = std::move(bias);
}

Const Importer::qlinear_weights(const onnx::NodeProto& n, int wi, int si, int zi,
                                int oc_axis) const {
  Const w = konst(n, wi, "weights");
  const Const& s = konst(n, si, "weight scale");
  const Const& z = konst(n, zi, "weight zero point");
  if (s.numel() != 1 && (oc_axis >= int(w.dims.size()) || s.numel() != w.dims[size_t(oc_axis)]))
    fail(n, "weight scale of shape " + dims_str(s.dims) +
                " matches neither per-tensor nor per-output-channel");
  w.quantized = true;
  w.axis = oc_axis;
  w.scale = s.v;
  w.zp.assign(z.v.begin(), z.v.end());
  if (w.zp.size() == 1 && w.scale.size() > 1) w.zp.assign(w.scale.size(), w.zp[0]);
  if (w.zp.size() != w.scale.size()) fail(n, "weight zero point and scale have different sizes");
  w.q.assign(w.v.begin(), w.v.end());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const size_t ch = w.channel_of(i);
    w.v[size_t(i)] = double(float(double(w.q[size_t(i)] - w.zp[ch])) * float(w.scale[ch]));
  }
  return w;
}

void Importer::pads_from(const onnx::NodeProto& n, const std::string& ap,
                         const std::vector<int64_t>& pads, LayerGeometry* l, int kh, int kw, int dh,
                         int dw, const Importer& self) {
  if (ap == "NOTSET") {
    if (!pads.empty()) {
      if (pads.size() != 4) self.fail(n, "pads must have 4 values");
      l->pad_t = int(pads[0]);
      l->pad_l = int(pads[1]);
      l->pad_b = int(pads[2]);
      l->pad_r = int(pads[3]);
    }
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    auto same = [&](int in, int k, int s, int d, int* lo, int* hi) {
      const int out = (in + s - 1) / s;
      const int total = std::max(0, (out - 1) * s + d * (k - 1) + 1 - in);
      *lo = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      *hi = total - *lo;
    };
    same(l->in.h, kh, l->sh, dh, &l->pad_t, &l->pad_b);
    same(l->in.w, kw, l->sw, dw, &l->pad_l, &l->pad_r);
  } else if (ap != "VALID") {
    self.fail(n, "auto_pad '" + ap + "' is not supported");
  }
}

void Importer::absorb_pad(const Value& v, LayerGeometry* l) {
  l->pad_t += v.pad_t;
  l->pad_l += v.pad_l;
  l->pad_b += v.pad_b;
  l->pad_r += v.pad_r;
}

void Importer::strides_from(const onnx::NodeProto& n, LayerGeometry* l) const {
  const auto st = attr_ints(n, "strides");
  if (!st.empty()) {
    if (st.size() != 2) fail(n, "strides must have 2 values");
    l->sh = int(st[0]);
    l->sw = int(st[1]);
  }
}

}  // namespace tpu::cnn::frontend

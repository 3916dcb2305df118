// SPDX-License-Identifier: Apache-2.0
// Converters of MaxPool, AveragePool, GlobalAveragePool / ReduceMean and their QLinear forms.
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

MaxPoolWindow Importer::maxpool_window(const onnx::NodeProto& n, const Value& v) const {
  if (v.flat) fail(n, "its input is flattened");
  const auto ks = attr_ints(n, "kernel_shape");
  if (ks.size() != 2 || ks[0] != ks[1])
    fail(n, "kernel_shape " + dims_str(ks) + ": only square 2-D windows are supported");
  auto st = attr_ints(n, "strides");
  if (st.empty()) st = {1, 1};
  if (st.size() != 2 || st[0] != st[1])
    fail(n, "strides " + dims_str(st) + ": only equal strides are supported");
  for (int64_t d : attr_ints(n, "dilations"))
    if (d != 1) fail(n, "dilated max-pooling is not supported");
  const int k = int(ks[0]), s = int(st[0]);
  if (k > 15 || s > 15)
    fail(n, "kernel_shape " + dims_str(ks) + " / strides " + dims_str(st) +
                ": window and stride must be <= 15");
  LayerGeometry g;
  g.in = v.shape;
  g.sh = g.sw = s;
  pads_from(n, attr_string(n, "auto_pad", "NOTSET"), attr_ints(n, "pads"), &g, k, k, 1, 1, *this);
  const bool ceil = attr_int(n, "ceil_mode", 0) != 0;
  // Output size (PyTorch/ONNX): floor or ceil of (H + pads - k) / s + 1; a window may not
  // start in the bottom/right padding.
  auto out_size = [&](int in, int lo, int hi) {
    const int span = in + lo + hi - k;
    if (span < 0)
      fail(n,
           "the window " + std::to_string(k) + " is larger than the padded input " + v.shape.str());
    int o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + lo) --o;
    return o;
  };
  MaxPoolWindow w;
  w.k = k;
  w.s = s;
  w.oh = out_size(v.shape.h, g.pad_t, g.pad_b);
  w.ow = out_size(v.shape.w, g.pad_l, g.pad_r);
  // The chip's pooling is floor without padding: extend the bottom/right padding so it is.
  const int extra_b = std::max(0, (w.oh - 1) * s + k - (v.shape.h + g.pad_t + g.pad_b));
  const int extra_r = std::max(0, (w.ow - 1) * s + k - (v.shape.w + g.pad_l + g.pad_r));
  w.padded = g.pad_t || g.pad_l || g.pad_b || g.pad_r || extra_b || extra_r;
  // The activate instruction pools with up to 7 lines/columns of padding on each side.
  w.pads = {g.pad_t, g.pad_l, g.pad_b + extra_b, g.pad_r + extra_r};
  w.chip_pads = *std::max_element(w.pads.begin(), w.pads.end()) < std::min(k, 8);
  return w;
}

void Importer::maxpool(const onnx::NodeProto& n) {
  for (int i = 1; i < n.output_size(); ++i)
    if (!n.output(i).empty()) fail(n, "the Indices output is not supported");
  const Value v = data(n, 0);
  const MaxPoolWindow w = maxpool_window(n, v);
  // A Copy layer holding the step, 1:1: pooled with activate's padding when it fits its fields,
  // else over a padded copy of the image (a border of pixels the maximum skips). The fusion pass
  // (passes/fuse_layers.h) merges it into the layer computing its input, or into every part of
  // a concatenation that only this pool reads (pooling works channel by channel).
  Layer c = start_layer(n, LayerKind::Copy, v);
  if (w.chip_pads) {
    c.pool_pad_t = w.pads[0];
    c.pool_pad_l = w.pads[1];
    c.pool_pad_b = w.pads[2];
    c.pool_pad_r = w.pads[3];
  } else {
    c.pad_t = w.pads[0];
    c.pad_l = w.pads[1];
    c.pad_b = w.pads[2];
    c.pad_r = w.pads[3];
  }
  c.pool_k = w.k;
  c.pool_s = w.s;
  if (v.quant) c.out_quant = v.quant;  // of a (de)quantized tensor: an exact copy
  c.step.kind = StepKind::MaxPool;
  c.step.pool = w;
  const auto parts = concat_inputs_.find(n.input(0));
  if (parts != concat_inputs_.end() && uses_[n.input(0)] == 1) {
    for (const std::string& part : parts->second) c.step.sources.push_back(fusable(part));
  } else {
    c.step.sources = {fusable(n.input(0))};
  }
  const int li = push_layer(n, std::move(c));
  new_layer_output(n, li, false);
  Value& out = values_[n.output(0)];
  // Max-pooling integers (a QLinear model's) keeps their quantization.
  if (v.is_int) {
    out.is_int = true;
    out.quant = v.quant;
  }
}

void Importer::average_pool(const onnx::NodeProto& n, bool ql) {
  const Value v = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearAveragePool");
  if (v.flat) fail(n, "its input is flattened");
  if (ql && attr_int(n, "channels_last", 0) != 0) fail(n, "channels_last = 1 is not supported");
  const auto ks = attr_ints(n, "kernel_shape");
  if (ks.size() != 2) fail(n, "kernel_shape " + dims_str(ks) + ": a 2-D window is expected");
  for (int64_t d : attr_ints(n, "dilations"))
    if (d != 1) fail(n, "dilated average pooling is not supported");
  Layer l = start_layer(n, LayerKind::Conv, v);
  l.group = v.shape.c;
  l.kh = int(ks[0]);
  l.kw = int(ks[1]);
  strides_from(n, &l);
  pads_from(n, attr_string(n, "auto_pad", "NOTSET"), attr_ints(n, "pads"), &l, l.kh, l.kw, 1, 1,
            *this);
  const bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
  const bool ceil = attr_int(n, "ceil_mode", 0) != 0;
  // The counted region of each axis, in input coordinates: [lo, hi).
  const int lo_y = -v.pad_t - (include_pad ? l.pad_t : 0);
  const int hi_y = v.shape.h + v.pad_b + (include_pad ? l.pad_b : 0);
  const int lo_x = -v.pad_l - (include_pad ? l.pad_l : 0);
  const int hi_x = v.shape.w + v.pad_r + (include_pad ? l.pad_r : 0);
  absorb_pad(v, &l);  // a Pad before it: real zeros, always counted
  if (ceil) {
    // PyTorch/ONNX: ceil of (H + pads - k) / s + 1 windows, none starting in the bottom/right
    // padding; the chip's convolution is floor, so the padding grows to fit them.
    auto grow = [&](int in, int k, int st, int lo, int* hi) {
      const int span = in + lo + *hi - k;
      if (span < 0) return;
      int o = (span + st - 1) / st + 1;
      if ((o - 1) * st >= in + lo) --o;
      *hi += std::max(0, (o - 1) * st + k - (in + lo + *hi));
    };
    grow(v.shape.h, l.kh, l.sh, l.pad_t, &l.pad_b);
    grow(v.shape.w, l.kw, l.sw, l.pad_l, &l.pad_r);
  }
  l.conv_out.c = v.shape.c;
  try {
    l.infer_shapes();
  } catch (const Error& e) {
    fail(n, e.what());
  }
  // Taps counted by each output line (column): the window clipped to the counted region.
  auto counts = [](int outs, int k, int st, int pad, int lo, int hi) {
    std::vector<int> c(static_cast<size_t>(outs));
    for (int o = 0; o < outs; ++o) {
      const int a = o * st - pad;
      c[size_t(o)] = std::max(0, std::min(a + k, hi) - std::max(a, lo));
    }
    return c;
  };
  const std::vector<int> lines = counts(l.conv_out.h, l.kh, l.sh, l.pad_t, lo_y, hi_y);
  const std::vector<int> cols = counts(l.conv_out.w, l.kw, l.sw, l.pad_l, lo_x, hi_x);
  auto whole = [](const std::vector<int>& c, int k) {
    return std::all_of(c.begin(), c.end(), [k](int x) { return x == k; });
  };
  for (size_t i = 0; i < lines.size() + cols.size(); ++i)
    if ((i < lines.size() ? lines[i] : cols[i - lines.size()]) == 0)
      fail(n, "a window lies entirely in the padding (nothing to average)");
  if (whole(lines, l.kh) && whole(cols, l.kw)) {
    l.weight.assign(size_t(v.shape.c) * l.kh * l.kw, 1.0f / float(l.kh * l.kw));
  } else {
    l.avg_lines = lines;
    l.avg_cols = cols;
    l.weight.assign(size_t(v.shape.c) * l.kh * l.kw, 1.0f);
    try {
      l.infer_shapes();  // checks the divisors
    } catch (const Error& e) {
      fail(n, e.what());
    }
  }
  l.bias.assign(size_t(v.shape.c), 0.0f);
  l.out_quant = out_quant(n, ql, 3, 4);
  const int id = push_layer(n, std::move(l));
  new_layer_output(n, id, false);
  finish_int_output(n, id, ql);
}

void Importer::global_pool(const onnx::NodeProto& n, bool ql) {
  const std::string& op = n.op_type();
  const Value v = ql ? int_input(n, 0, 1, 2) : float_input(n, 0, "QLinearGlobalAveragePool");
  if (v.flat) fail(n, "its input is flattened");
  bool keep = true;
  if (ql && attr_int(n, "channels_last", 0) != 0) fail(n, "channels_last = 1 is not supported");
  if (op == "ReduceMean") {
    std::vector<int64_t> axes = attr_ints(n, "axes");
    if (n.input_size() > 1 && !n.input(1).empty()) {
      const Const& a = konst(n, 1, "axes");
      axes.assign(a.v.begin(), a.v.end());
    }
    for (auto& a : axes)
      if (a < 0) a += 4;
    std::sort(axes.begin(), axes.end());
    if (axes != std::vector<int64_t>{2, 3})
      fail(n, "axes " + dims_str(axes) + ": only the mean over H and W (axes 2, 3) is supported");
    keep = attr_int(n, "keepdims", 1) != 0;
  }
  Layer l = start_layer(n, LayerKind::Dense, v);
  l.group = v.shape.c;
  l.conv_out.c = v.shape.c;
  const int64_t pixels = int64_t(v.shape.h) * v.shape.w;
  l.weight.assign(size_t(v.shape.c * pixels), 1.0f / float(pixels));
  l.bias.assign(size_t(v.shape.c), 0.0f);
  l.out_quant = out_quant(n, ql, 3, 4);
  const int id = push_layer(n, std::move(l));
  new_layer_output(n, id, !keep);
  finish_int_output(n, id, ql);
}

}  // namespace tpu::cnn::frontend

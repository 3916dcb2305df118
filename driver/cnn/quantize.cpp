// SPDX-License-Identifier: Apache-2.0
#include "quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>

#include "reference.h"

namespace tpu::cnn {

Calibration calibrate(const Network& net, const std::vector<std::vector<float>>& images) {
  Calibration c;
  c.layers.resize(net.layers.size());
  c.pre.resize(net.layers.size());
  std::vector<std::vector<float>> outs, pre;
  std::vector<float> in;
  for (const auto& img : images) {
    if (int64_t(img.size()) != net.input.size())
      throw Error("calibration image has " + std::to_string(img.size()) +
                  " values, the model input " + net.input.str() + " needs " +
                  std::to_string(net.input.size()));
    float_forward(net, img.data(), &outs, &in, &pre);
    for (float v : in) c.input.add(v);
    for (size_t l = 0; l < outs.size(); ++l) {
      for (float v : outs[l]) c.layers[l].add(v);
      if (net.layers[l].act == Activation::Lut)
        for (float v : pre[l]) c.pre[l].add(v);
    }
    ++c.images;
  }
  return c;
}

bool fully_quantized(const Network& net) {
  if (!net.input_quant) return false;
  for (const auto& l : net.layers) {
    if (!l.out_quant) return false;
    if (l.act == Activation::Lut && !l.pre_quant) return false;
  }
  return true;
}

namespace {

// Activation quantization from an observed range. Non-negative tensors (after ReLU, or
// a Clip with a non-negative lower bound) are uint8 with zero point 0, others asymmetric int8.
TensorQuant from_range(float lo, float hi, bool non_negative) {
  TensorQuant q;
  if (non_negative || lo >= 0.0f) {
    q.is_unsigned = true;
    q.zero_point = 0;
    q.scale = hi > 0.0f ? hi / 255.0f : 1.0f;
    return q;
  }
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  q.is_unsigned = false;
  q.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  q.zero_point = round_clamp(-128.0 - double(lo) / double(q.scale), -128, 127);
  return q;
}

std::string float_text(float v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(v));
  return b;
}

// A calibrated range must be finite and give a scale that is a normal float: the chip's
// requantization multipliers are ratios of scales.
void check_calibrated(const Range& r, const TensorQuant& q, const std::string& tensor) {
  if (r.has_non_finite)
    throw Error(tensor + ": the float model gives " + float_text(r.non_finite) +
                " on the calibration images (expected finite values; a non-finite calibrated "
                "range cannot be quantized)");
  if (!(std::isfinite(q.scale) && q.scale >= std::numeric_limits<float>::min()))
    throw Error(tensor + ": calibrated range [" + float_text(r.lo) + ", " + float_text(r.hi) +
                "] gives the int8 scale " + float_text(q.scale) +
                " (expected a range whose scale, its width / 255, is a finite normal float: "
                "at most about 3.4e38 wide (the largest float32) and at least about 3e-36)");
}

// Asymmetric quantization of [lo, hi] in the given type (a LUT's input has its output's type).
TensorQuant from_range_typed(float lo, float hi, bool is_unsigned) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  TensorQuant q;
  q.is_unsigned = is_unsigned;
  q.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  q.zero_point = round_clamp(double(q.qmin()) - double(lo) / double(q.scale), q.qmin(), q.qmax());
  return q;
}

// Groups of layers whose outputs are concatenated into one Conv/Dense input: they share a
// quantization. find() gives a representative.
struct ConcatGroups {
  std::vector<int> parent;
  explicit ConcatGroups(const Network& net) : parent(net.layers.size()) {
    std::iota(parent.begin(), parent.end(), 0);
    for (const auto& l : net.layers) {
      if (l.inputs.size() < 2 || l.kind == LayerKind::Add) continue;
      for (int i : l.inputs) {
        if (i == l.inputs[0]) continue;  // the same tensor again (weight planes)
        if (i == kNetworkInput || l.inputs[0] == kNetworkInput)
          throw Error("layer '" + l.name +
                      "': concatenating the network input with other tensors is not supported");
        unite(l.inputs[0], i);
      }
    }
  }
  int find(int x) {
    return parent[size_t(x)] == x ? x : parent[size_t(x)] = find(parent[size_t(x)]);
  }
  void unite(int a, int b) { parent[size_t(find(a))] = find(b); }
};

void set_multiplier(const Layer& l, int at, double m, QLayer* ql) {
  try {
    quantize_multiplier(m, &ql->mult[size_t(at)], &ql->shift[size_t(at)]);
  } catch (const Error& e) {
    throw Error("layer '" + l.name + "': " + e.what());
  }
}

// Input channel of weight `i` of output channel `oc` (Conv and Dense).
int weight_channel(const QLayer& l, int oc, int64_t i) {
  if (l.kind == LayerKind::Conv) {
    const int cin_g = l.in.c / l.group, cout_g = l.cout() / l.group;
    return (oc / cout_g) * cin_g + int(i / (int64_t(l.kh) * l.kw));
  }
  const int per_group = l.cout() / l.group;
  const int64_t plane = int64_t(l.in.h) * l.in.w;
  return int(((oc / per_group) * l.fan_in() + i) / plane);
}

// Weights, biases and multipliers of a Conv or Dense layer.
void quantize_weights(const Layer& l, double out_scale, QLayer* ql) {
  const int cout = l.cout();
  const int64_t k = l.fan_in();
  const double s_ref = ql->in_q.scale;
  bool mixed = false;
  for (const auto& q : ql->in_qs) mixed |= q.scale != ql->in_q.scale;
  if (mixed && l.given)
    throw Error(
        "layer '" + l.name +
        "': its concatenated inputs have different scales and its weights are given quantized");
  ql->weight.resize(size_t(cout * k));
  std::vector<double> wr(static_cast<size_t>(k));
  for (int oc = 0; oc < cout; ++oc) {
    float ws;
    if (l.given) {
      ws = l.given->weight_scale[size_t(oc)];
      std::copy_n(&l.given->weight[size_t(oc * k)], k, &ql->weight[size_t(oc * k)]);
    } else {
      // Each input's scale relative to the first one's is folded into the weights.
      double m = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double rel =
            mixed ? double(ql->quant_of(weight_channel(*ql, oc, i)).scale) / s_ref : 1.0;
        wr[size_t(i)] = double(l.weight[size_t(oc * k + i)]) * rel;
        m = std::max(m, std::fabs(wr[size_t(i)]));
      }
      ws = m > 0.0 ? float(m / 127.0) : 1.0f;
      for (int64_t i = 0; i < k; ++i)
        ql->weight[size_t(oc * k + i)] = int8_t(round_clamp(wr[size_t(i)] / double(ws), -127, 127));
    }
    ql->weight_scale[size_t(oc)] = ws;
    const double acc_scale = s_ref * double(ws);
    if (l.given && !l.given->bias.empty()) {
      ql->bias[size_t(oc)] = l.given->bias[size_t(oc)];
    } else {
      const double b = l.bias.empty() ? 0.0 : double(l.bias[size_t(oc)]) / acc_scale;
      if (std::fabs(b) > 2147483647.0)
        throw Error("layer '" + l.name + "': bias of channel " + std::to_string(oc) +
                    " does not fit in int32 at scale " + std::to_string(acc_scale));
      ql->bias[size_t(oc)] =
          round_clamp(b, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
    }
    // Per-pixel divisors (an AveragePool that averages fewer taps at the borders): one
    // multiplier per divisor, the sum's scale over it.
    const std::vector<int> divisors = l.divisors();
    for (size_t d = 0; d < divisors.size(); ++d)
      set_multiplier(l, int(d) * cout + oc, acc_scale / (out_scale * double(divisors[d])), ql);
  }
}

// An Add weighs its operands by the ratio of their scales: the larger gets 127 (per channel
// when operand b has per-channel factors, as a per-channel PRelu has).
void quantize_add(const Layer& l, double out_scale, QLayer* ql) {
  const double sa = ql->in_qs[0].scale, sb = ql->in_qs[1].scale;
  const bool per_channel = !l.channel_scale.empty();
  ql->weight.assign(per_channel ? size_t(2 * l.cout()) : 2, 0);
  for (int c = 0; c < l.cout(); ++c) {
    const double rb = sb * (per_channel ? double(l.channel_scale[size_t(c)]) : 1.0);
    const double big = std::max(sa, std::fabs(rb));
    const size_t at = per_channel ? size_t(2 * c) : 0;
    ql->weight[at] = int8_t(round_clamp(127.0 * sa / big, -127, 127));
    ql->weight[at + 1] = int8_t(round_clamp(127.0 * rb / big, -127, 127));
    const double acc_scale = big / 127.0;
    ql->weight_scale[size_t(c)] = float(acc_scale / sa);
    ql->bias[size_t(c)] = 0;
    set_multiplier(l, c, acc_scale / out_scale, ql);
  }
}

// A Copy passes each channel through, rescaled from its input's scale to the output's.
void quantize_copy(const Layer& l, double out_scale, QLayer* ql) {
  ql->weight = {1};
  for (int c = 0; c < l.cout(); ++c) {
    const double s = ql->quant_of(c).scale *
                     (l.channel_scale.empty() ? 1.0 : double(l.channel_scale[size_t(c)]));
    ql->weight_scale[size_t(c)] = float(s / ql->in_q.scale);
    ql->bias[size_t(c)] = 0;
    try {
      quantize_multiplier_signed(s / out_scale, &ql->mult[size_t(c)], &ql->shift[size_t(c)]);
    } catch (const Error& e) {
      throw Error("layer '" + l.name + "': " + e.what());
    }
  }
}

// The LUT of a layer: each representable input value through the function, quantized.
std::vector<int32_t> build_lut(const Layer& l, const TensorQuant& pre, const TensorQuant& out) {
  std::vector<int32_t> lut;
  for (int q = pre.qmin(); q <= pre.qmax(); ++q) {
    const float x = pre.scale * float(q - pre.zero_point);
    const float y = lut_func_apply(l.lut, l.lut_alpha, l.lut_beta, x);
    lut.push_back(
        round_clamp(double(y) / double(out.scale) + out.zero_point, out.qmin(), out.qmax()));
  }
  return lut;
}

// The network input's quantization: the model's own, pixels / 255 as uint8, or calibrated.
TensorQuant input_quant(const Network& net, const Calibration* calib) {
  if (net.input_quant) return *net.input_quant;
  if (net.pre_scale.empty() && calib->input.lo >= 0.0f && calib->input.hi <= 1.0f) {
    // The input contract: pixels / 255. uint8 with scale 1/255 represents them exactly.
    return TensorQuant{1.0f / 255.0f, 0, true};
  }
  return from_range(calib->input.lo, calib->input.hi, false);
}

// Calibrated output ranges, merged over concatenation groups (indexed by group).
struct GroupRanges {
  std::vector<Range> merged;
  std::vector<char> non_negative;  // every layer of the group ends in ReLU or a Clip from >= 0
};
GroupRanges group_ranges(const Network& net, const Calibration* calib, ConcatGroups& groups) {
  GroupRanges out;
  out.merged.resize(net.layers.size());
  out.non_negative.assign(net.layers.size(), 1);
  if (!calib) return out;
  for (size_t li = 0; li < net.layers.size(); ++li) {
    const Layer& l = net.layers[li];
    Range r = calib->layers[li];
    if (l.act == Activation::Clip && r.seen) {
      r.lo = std::max(r.lo, l.clip_lo);
      r.hi = std::min(r.hi, l.clip_hi);
    }
    const size_t g = size_t(groups.find(int(li)));
    Range& m = out.merged[g];
    if (r.seen) m.add(r.lo), m.add(r.hi);
    if (r.has_non_finite) m.add(r.non_finite);
    const bool non_negative =
        l.act == Activation::Relu || (l.act == Activation::Clip && l.clip_lo >= 0.0f);
    if (!non_negative) out.non_negative[g] = 0;
  }
  return out;
}

// A LUT layer: the quantization of the function's input and the table.
void quantize_lut(const Layer& l, size_t li, const Calibration* calib, QLayer& ql) {
  if (l.pre_quant) {
    ql.pre_q = *l.pre_quant;
    if (ql.pre_q.is_unsigned != ql.out_q.is_unsigned)
      throw Error("layer '" + l.name + "': " + lut_func_name(l.lut) + " input (" + ql.pre_q.str() +
                  ") and output (" + ql.out_q.str() +
                  ") must both be int8 or both uint8 (the chip's LUT maps a byte to a byte)");
  } else {
    ql.pre_q = from_range_typed(calib->pre[li].lo, calib->pre[li].hi, ql.out_q.is_unsigned);
    check_calibrated(calib->pre[li], ql.pre_q,
                     "layer '" + l.name + "' input of its " + lut_func_name(l.lut));
  }
  ql.lut = build_lut(l, ql.pre_q, ql.out_q);
  ql.lut_func = l.lut;
  ql.lut_alpha = l.lut_alpha;
  ql.lut_beta = l.lut_beta;
}

// The weights, biases and multipliers of a layer whose linear part produces `pre_scale`; then
// its output bounds (a Clip's, else the output type's).
void quantize_parameters(const Layer& l, double pre_scale, QLayer& ql) {
  const int cout = l.cout();
  ql.weight_scale.resize(size_t(cout));
  ql.bias.resize(size_t(cout));
  ql.mult.resize(size_t(cout) * l.divisors().size());
  ql.shift.resize(size_t(cout) * l.divisors().size());
  switch (l.kind) {
    case LayerKind::Conv:
    case LayerKind::Dense:
      quantize_weights(l, pre_scale, &ql);
      break;
    case LayerKind::Add:
      quantize_add(l, pre_scale, &ql);
      break;
    case LayerKind::Copy:
      quantize_copy(l, pre_scale, &ql);
      break;
  }
  if (l.act == Activation::Clip) {
    ql.lo = round_clamp(double(l.clip_lo) / ql.out_q.scale + ql.out_q.zero_point, ql.out_q.qmin(),
                        ql.out_q.qmax());
    ql.hi = round_clamp(double(l.clip_hi) / ql.out_q.scale + ql.out_q.zero_point, ql.out_q.qmin(),
                        ql.out_q.qmax());
  } else {
    ql.lo = ql.out_q.qmin();
    ql.hi = ql.out_q.qmax();
  }
}

// Layer li of `net`, its inputs quantized as in `q` (the layers before it).
QLayer quantize_layer(const Network& net, size_t li, const QuantNetwork& q,
                      const Calibration* calib, ConcatGroups& groups, const GroupRanges& ranges) {
  const Layer& l = net.layers[li];
  QLayer ql;
  static_cast<LayerGeometry&>(ql) = l;
  for (int i : l.inputs) ql.in_qs.push_back(q.quant_of(i));
  ql.in_q = ql.in_qs.at(0);
  ql.act = l.act;
  ql.raw = l.raw_out;
  const bool plain_copy = l.kind == LayerKind::Copy && l.inputs.size() == 1 &&
                          l.act == Activation::None && l.channel_scale.empty();
  if (l.out_quant) {
    ql.out_q = *l.out_quant;
  } else if (plain_copy) {
    ql.out_q = ql.in_q;  // a standalone max-pool keeps its input's quantization
  } else {
    const size_t g = size_t(groups.find(int(li)));
    const Range& r = ranges.merged[g];
    ql.out_q = from_range(r.lo, r.hi, ranges.non_negative[g] != 0);
    check_calibrated(r, ql.out_q, "layer '" + l.name + "' output");
  }
  double pre_scale = ql.out_q.scale;
  if (l.act == Activation::Lut) {
    quantize_lut(l, li, calib, ql);
    pre_scale = ql.pre_q.scale;
  }
  quantize_parameters(l, pre_scale, ql);
  return ql;
}

}  // namespace

QuantNetwork quantize(const Network& net, const Calibration* calib) {
  if (!calib && !fully_quantized(net))
    throw Error("model '" + net.name + "' is not fully quantized: calibration images are needed");
  if (calib && calib->layers.size() != net.layers.size())
    throw Error("calibration does not match the network");
  QuantNetwork q;
  q.name = net.name;
  q.input = net.input;
  q.pre_scale = net.pre_scale;
  q.pre_shift = net.pre_shift;
  q.host_softmax = net.host_softmax;
  q.input_q = input_quant(net, calib);
  if (calib && !net.input_quant) check_calibrated(calib->input, q.input_q, "the network input");
  ConcatGroups groups(net);
  const GroupRanges ranges = group_ranges(net, calib, groups);
  for (size_t li = 0; li < net.layers.size(); ++li)
    q.layers.push_back(quantize_layer(net, li, q, calib, groups, ranges));
  return q;
}

QuantNetwork quantize_model(const Network& net, const std::vector<std::vector<float>>& images) {
  if (fully_quantized(net)) return quantize(net, nullptr);
  if (images.empty())
    throw Error(net.name + ": calibration images are needed to quantize a float model");
  const Calibration c = calibrate(net, images);
  return quantize(net, &c);
}

}  // namespace tpu::cnn

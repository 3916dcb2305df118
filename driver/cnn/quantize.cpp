#include "quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference.h"

namespace tpu::cnn {

Calibration calibrate(const Network& net, const std::vector<std::vector<float>>& images) {
  Calibration c;
  c.layers.resize(net.layers.size());
  std::vector<std::vector<float>> outs;
  std::vector<float> in;
  for (const auto& img : images) {
    if (int64_t(img.size()) != net.input.size())
      throw Error("calibration image has " + std::to_string(img.size()) + " values, the model input " +
                  net.input.str() + " needs " + std::to_string(net.input.size()));
    float_forward(net, img.data(), &outs, &in);
    for (float v : in) c.input.add(v);
    for (size_t l = 0; l < outs.size(); ++l)
      for (float v : outs[l]) c.layers[l].add(v);
    ++c.images;
  }
  return c;
}

bool fully_quantized(const Network& net) {
  if (!net.input_quant) return false;
  for (const auto& l : net.layers)
    if (!l.out_quant) return false;
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

}  // namespace

QuantNetwork quantize(const Network& net, const Calibration* calib) {
  if (!calib && !fully_quantized(net))
    throw Error("model '" + net.name + "' is not fully quantized: calibration images are needed");
  if (calib && calib->layers.size() != net.layers.size()) throw Error("calibration does not match the network");
  QuantNetwork q;
  q.name = net.name;
  q.input = net.input;
  q.pre_scale = net.pre_scale;
  q.pre_shift = net.pre_shift;
  if (net.input_quant) {
    q.input_q = *net.input_quant;
  } else if (net.pre_scale.empty() && calib->input.lo >= 0.0f && calib->input.hi <= 1.0f) {
    // The input contract: pixels / 255. uint8 with scale 1/255 represents them exactly.
    q.input_q = TensorQuant{1.0f / 255.0f, 0, true};
  } else {
    q.input_q = from_range(calib->input.lo, calib->input.hi, false);
  }

  TensorQuant in_q = q.input_q;
  for (size_t li = 0; li < net.layers.size(); ++li) {
    const Layer& l = net.layers[li];
    QLayer ql;
    static_cast<LayerGeometry&>(ql) = l;
    ql.in_q = in_q;
    ql.act = l.act;
    if (l.out_quant) {
      ql.out_q = *l.out_quant;
    } else {
      const Range& r = calib->layers[li];
      float lo = r.lo, hi = r.hi;
      bool non_negative = l.act == Activation::Relu || (l.act == Activation::Clip && l.clip_lo >= 0.0f);
      if (l.act == Activation::Clip) {
        lo = std::max(lo, l.clip_lo);
        hi = std::min(hi, l.clip_hi);
      }
      ql.out_q = from_range(lo, hi, non_negative);
    }
    const int cout = l.cout();
    const int64_t k = l.fan_in();
    ql.weight.resize(size_t(cout * k));
    ql.weight_scale.resize(size_t(cout));
    ql.bias.resize(size_t(cout));
    ql.mult.resize(size_t(cout));
    ql.shift.resize(size_t(cout));
    for (int oc = 0; oc < cout; ++oc) {
      float ws;
      if (l.given) {
        ws = l.given->weight_scale[size_t(oc)];
        std::copy_n(&l.given->weight[size_t(oc * k)], k, &ql.weight[size_t(oc * k)]);
      } else {
        float m = 0.0f;
        for (int64_t i = 0; i < k; ++i) m = std::max(m, std::fabs(l.weight[size_t(oc * k + i)]));
        ws = m > 0.0f ? m / 127.0f : 1.0f;
        for (int64_t i = 0; i < k; ++i)
          ql.weight[size_t(oc * k + i)] =
              int8_t(round_clamp(double(l.weight[size_t(oc * k + i)]) / double(ws), -127, 127));
      }
      ql.weight_scale[size_t(oc)] = ws;
      const double acc_scale = double(in_q.scale) * double(ws);
      if (l.given && !l.given->bias.empty()) {
        ql.bias[size_t(oc)] = l.given->bias[size_t(oc)];
      } else {
        const double b = l.bias.empty() ? 0.0 : double(l.bias[size_t(oc)]) / acc_scale;
        if (std::fabs(b) > 2147483647.0)
          throw Error("layer '" + l.name + "': bias of channel " + std::to_string(oc) +
                      " does not fit in int32 at scale " + std::to_string(acc_scale));
        ql.bias[size_t(oc)] = round_clamp(b, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      }
      try {
        quantize_multiplier(acc_scale / double(ql.out_q.scale), &ql.mult[size_t(oc)], &ql.shift[size_t(oc)]);
      } catch (const Error& e) {
        throw Error("layer '" + l.name + "': " + e.what());
      }
    }
    if (l.act == Activation::Clip) {
      ql.lo = round_clamp(double(l.clip_lo) / ql.out_q.scale + ql.out_q.zero_point, ql.out_q.qmin(), ql.out_q.qmax());
      ql.hi = round_clamp(double(l.clip_hi) / ql.out_q.scale + ql.out_q.zero_point, ql.out_q.qmin(), ql.out_q.qmax());
    } else {
      ql.lo = ql.out_q.qmin();
      ql.hi = ql.out_q.qmax();
    }
    in_q = ql.out_q;
    q.layers.push_back(std::move(ql));
  }
  return q;
}

QuantNetwork quantize_model(const Network& net, const std::vector<std::vector<float>>& images) {
  if (fully_quantized(net)) return quantize(net, nullptr);
  if (images.empty()) throw Error(net.name + ": calibration images are needed to quantize a float model");
  const Calibration c = calibrate(net, images);
  return quantize(net, &c);
}

}  // namespace tpu::cnn

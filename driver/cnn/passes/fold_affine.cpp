// SPDX-License-Identifier: Apache-2.0
#include "passes/fold_affine.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "passes/fusion.h"

namespace tpu::cnn::passes {
namespace {

[[noreturn]] void refuse(const Network& net, const Layer& c, const std::string& msg) {
  throw Error(net.name + ": node '" + c.name + "' (" + c.op + "): " + msg);
}

bool is_batch_norm(const Layer& c) { return c.op == "BatchNormalization"; }

// The message of a fold of something other than one Conv/Dense layer's output.
std::string not_after_a_layer(const Layer& c) {
  if (is_batch_norm(c))
    return "BatchNormalization is supported right after a Conv or Gemm whose output nothing else "
           "reads (it is folded into it)";
  return c.op +
         " by a constant is supported after a Conv/Gemm/MatMul read by nothing else, or on the "
         "input";
}

// The layer of `net` that fold step c (its source renumbered) folds into; refuses with the
// message naming what c follows, as the fusion pass will leave it, when that is not a Conv/Dense
// without an activation, pooling or requantization after it.
Layer& fold_target(Network& net, const Layer& c) {
  const int src = c.step.sources.empty() ? -1 : c.step.sources[0];
  const Layer* t = nullptr;
  bool after_step = false;
  std::optional<FusedView> view;
  // (a QLinearConcat, a Copy or its parts, is no layer to fold into)
  if (src >= 0 && net.layers.at(size_t(src)).step.kind != StepKind::QuantizeConcat) {
    const Layer& s = net.layers.at(size_t(src));
    after_step = s.step.kind != StepKind::None;
    if (after_step) {
      // (a pooled concatenation: its parts, read by no single layer)
      view = view_as_fused(net, {src});
      t = view->single(net);
    } else {
      t = &s;
    }
  }
  if (!t) refuse(net, c, not_after_a_layer(c));
  if (!t->has_weights()) {
    if (is_batch_norm(c)) refuse(net, c, not_after_a_layer(c));
    refuse(net, c, c.op + " by a constant after " + t->op + " '" + t->name + "' is not supported");
  }
  if (after_step || t->act != Activation::None || t->pool_k > 1)
    refuse(net, c,
           (is_batch_norm(c) ? std::string("BatchNormalization") : c.op + " by a constant") +
               " after an activation or pooling is not supported");
  return net.layers[size_t(src)];
}

void fold_batch_norm_step(const Network& net, const Layer& c, Layer& l) {
  if (l.given)
    refuse(net, c, "BatchNormalization after a layer with quantized weights is not supported");
  const PendingStep& s = c.step;
  for (size_t i = 0; i < s.batch_norm.size(); ++i)
    if (int64_t(s.batch_norm[i].size()) != l.cout())
      refuse(net, c,
             "parameter of shape " + s.batch_norm_shapes[i] + " for " + std::to_string(l.cout()) +
                 " channels");
  fold_batch_norm(l, s.batch_norm[0], s.batch_norm[1], s.batch_norm[2], s.batch_norm[3], s.epsilon);
}

// Add / Sub (a bias) or Mul / Div (a scale) by c.step.values, per output channel of l.
void fold_arith_step(const Network& net, const Layer& c, Layer& l) {
  const std::string& op = c.op;
  const PendingStep& s = c.step;
  if (l.given && !l.given->bias.empty() && (op == "Add" || op == "Sub"))
    refuse(net, c, "adds a second bias to a layer with a quantized bias");
  if (l.given && (op == "Mul" || op == "Div"))
    refuse(net, c, "scales a layer with quantized weights");
  if (s.values.size() < size_t(l.cout()))
    refuse(net, c,
           "internal: " + std::to_string(s.values.size()) + " constants for " +
               std::to_string(l.cout()) + " channels");
  for (int ch = 0; ch < l.cout(); ++ch) {
    const double x = s.values[size_t(ch)];
    if (op == "Add") {
      l.bias[size_t(ch)] += float(x);
    } else if (op == "Sub" && !s.constant_first) {
      l.bias[size_t(ch)] -= float(x);
    } else if (op == "Mul" || (op == "Div" && !s.constant_first)) {
      if (op == "Div" && x == 0) refuse(net, c, "division by zero");
      scale_output_channel(l, ch, op == "Mul" ? x : 1.0 / x);
    } else {
      refuse(net, c, op + " with the constant first is not supported after a layer");
    }
  }
}

// Layer l's inputs and its step's sources as layers of r.net (each layer of the network given is
// one layer of r.net).
void renumber(Layer& l, const FusedNetwork& r) {
  for (int& p : l.inputs)
    if (p != kNetworkInput) p = r.parts_of.at(size_t(p)).at(0);
  for (int& s : l.step.sources)
    if (s >= 0) s = r.parts_of.at(size_t(s)).at(0);
}

}  // namespace

FusedNetwork fold_affine(Network net) {
  std::vector<Layer> layers = std::move(net.layers);
  FusedNetwork r;
  r.net = std::move(net);
  r.net.layers.clear();
  r.parts_of.resize(layers.size());
  r.closed.assign(layers.size(), false);
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer& c = layers[i];
    renumber(c, r);
    if (c.step.kind != StepKind::Fold) {
      r.net.layers.push_back(std::move(c));
      r.parts_of[i] = {int(r.net.layers.size()) - 1};
      continue;
    }
    Layer& l = fold_target(r.net, c);
    if (is_batch_norm(c))
      fold_batch_norm_step(r.net, c, l);
    else
      fold_arith_step(r.net, c, l);
    l.fused.push_back(c.op + " " + c.name);
    // Its output's quantization (a QuantizeLinear after it) is the layer's.
    l.out_quant = c.out_quant;
    r.parts_of[i] = {c.step.sources[0]};
  }
  return r;
}

}  // namespace tpu::cnn::passes

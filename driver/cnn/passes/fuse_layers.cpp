// SPDX-License-Identifier: Apache-2.0
#include "passes/fuse_layers.h"

#include <algorithm>
#include <utility>

#include "passes/concat_steps.h"
#include "passes/fold_affine.h"
#include "passes/fusion.h"
#include "passes/pair_qdq.h"

namespace tpu::cnn::passes {
namespace {

// Layer l's inputs (layers of the network given) as layers of r.net: a part that became several
// (a pooled concatenation) is read as those, each with its channels.
void remap_inputs(Layer& l, const FusedNetwork& r) {
  std::vector<int> inputs, channels;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const int p = l.inputs[k];
    const int ch = k < l.input_channels.size() ? l.input_channels[k] : 0;
    if (p == kNetworkInput) {
      inputs.push_back(p);
      channels.push_back(ch);
      continue;
    }
    const std::vector<int>& parts = r.parts_of.at(size_t(p));
    if (parts.size() == 1) {
      inputs.push_back(parts[0]);
      channels.push_back(ch);
      continue;
    }
    for (int q : parts) {
      inputs.push_back(q);
      channels.push_back(q == kNetworkInput ? r.net.input.c : r.net.layers[size_t(q)].out.c);
    }
  }
  l.inputs = std::move(inputs);
  if (!l.input_channels.empty()) l.input_channels = std::move(channels);
}

// The layers of r.net that steps with `sources` may join: each source's one layer; empty when a
// source is -1, became several parts or the network input, or is closed.
std::vector<int> joinable(const std::vector<int>& sources, const FusedNetwork& r) {
  std::vector<int> targets;
  for (int s : sources) {
    if (s < 0 || r.parts_of.at(size_t(s)).size() != 1 || r.parts_of[size_t(s)][0] < 0 ||
        r.closed.at(size_t(s)))
      return {};
    targets.push_back(r.parts_of[size_t(s)][0]);
  }
  return targets;
}

// The layers of r.net a step joins: joinable(step.sources); a max-pool whose one source is a
// QLinearConcat that left as several parts (not closed: each a layer's output only it reads)
// joins each of them.
std::vector<int> targets_of(const PendingStep& step, const FusedNetwork& r) {
  if (step.kind == StepKind::MaxPool && step.sources.size() == 1 && step.sources[0] >= 0) {
    const std::vector<int>& parts = r.parts_of.at(size_t(step.sources[0]));
    if (parts.size() > 1) {
      const bool joins = !r.closed.at(size_t(step.sources[0])) &&
                         std::all_of(parts.begin(), parts.end(), [](int p) { return p >= 0; });
      return joins ? parts : std::vector<int>{};
    }
  }
  return joinable(step.sources, r);
}

bool can_join(const Layer& c, const std::vector<int>& targets, const Network& net) {
  if (targets.empty()) return false;
  const PendingStep& step = c.step;
  if (step.kind == StepKind::Activation)
    return targets.size() == 1 &&
           can_fuse_activation(net.layers[size_t(targets[0])], step.act, step.lut);
  return std::all_of(targets.begin(), targets.end(),
                     [&](int t) { return can_fuse_max_pool(net.layers[size_t(t)], step.pool); });
}

// Step c merged into the layers `targets` of net.
void join(const Layer& c, const std::vector<int>& targets, Network& net) {
  const PendingStep& step = c.step;
  for (int t : targets) {
    Layer& l = net.layers[size_t(t)];
    if (step.kind == StepKind::Activation) {
      fuse_activation(l, step.act, step.lut, step.p0, step.p1);
      // Requantized after the activation: as the step's output (a QuantizeLinear after it, a
      // QLinear op's Y_scale), or not at all.
      l.out_quant = c.out_quant;
      l.fused.insert(l.fused.end(), c.fused.begin(), c.fused.end());
      continue;
    }
    try {
      fuse_max_pool(l, step.pool);
    } catch (const Error& e) {
      throw Error(net.name + ": node '" + c.name + "' (" + c.op + "): " + e.what());
    }
    if (c.out_quant) l.out_quant = c.out_quant;  // a copy: its quantization is its input's
    l.fused.push_back("MaxPool " + c.name);
  }
}

// Resolves layer i's pending step on r, the network fused so far (l's inputs remapped): true
// when the step left the network (r.parts_of[i] and r.closed[i] set), false when l stays.
bool step_leaves(Layer& l, size_t i, FusedNetwork& r) {
  ConcatStep c;
  switch (l.step.kind) {
    case StepKind::Quantize: {
      // In place only when the one layer computing the tensor is no part others read.
      const int src = l.step.sources.empty() ? -1 : l.step.sources[0];
      if (src < 0 || r.closed.at(size_t(src))) l.step.sole_reader = false;
      QdqPairing p = pair_qdq(r.net, l);
      if (p.how == Requantization::Copy) return false;
      r.closed[i] = src < 0 || r.closed[size_t(src)];
      r.parts_of[i] = std::move(p.parts);
      return true;
    }
    case StepKind::QuantizeConcat:
      c = quantize_concat(r.net, l);
      // (steps reading it may join the parts when each is a layer's output only it reads)
      r.closed[i] = !c.stays && joinable(l.step.sources, r) != c.parts;
      break;
    case StepKind::OneTensor:
      c = read_as_one_tensor(l);
      r.closed[i] = !c.stays;  // (only the Add or PRelu it was made for reads it)
      break;
    case StepKind::Activation:
    case StepKind::MaxPool: {
      const std::vector<int> targets = targets_of(l.step, r);
      if (!can_join(l, targets, r.net)) return false;
      join(l, targets, r.net);
      r.closed[i] = targets.size() > 1;  // (a pooled concatenation: no one layer)
      r.parts_of[i] = targets;
      return true;
    }
    case StepKind::Fold:
      throw Error(r.net.name + ": internal: layer '" + l.name + "' (" + l.op +
                  "): a fold step left for the fusion pass (passes/fold_affine.h first)");
    case StepKind::None:
      return false;
  }
  if (c.stays) return false;
  r.parts_of[i] = std::move(c.parts);
  return true;
}

}  // namespace

FusedNetwork fuse_steps(Network net) {
  std::vector<Layer> layers = std::move(net.layers);
  FusedNetwork r;
  r.net = std::move(net);
  r.net.layers.clear();
  r.parts_of.resize(layers.size());
  r.closed.assign(layers.size(), false);
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer& l = layers[i];
    remap_inputs(l, r);
    if (step_leaves(l, i, r)) continue;
    l.step = PendingStep();
    r.net.layers.push_back(std::move(l));
    r.parts_of[i] = {int(r.net.layers.size()) - 1};
  }
  return r;
}

Network fuse_layers(Network net) { return fuse_steps(std::move(net)).net; }

std::vector<int> parts_in(const FusedNetwork& f, const std::vector<int>& parts) {
  std::vector<int> out;
  for (int p : parts) {
    if (p == kNetworkInput) {
      out.push_back(p);
      continue;
    }
    const std::vector<int>& to = f.parts_of.at(size_t(p));
    out.insert(out.end(), to.begin(), to.end());
  }
  return out;
}

FusedNetwork resolve_steps(Network net) {
  FusedNetwork folded = fold_affine(std::move(net));
  FusedNetwork r = fuse_steps(std::move(folded.net));
  std::vector<bool> closed(folded.parts_of.size(), false);
  for (size_t i = 0; i < folded.parts_of.size(); ++i) {
    closed[i] = r.closed.at(size_t(folded.parts_of[i].at(0)));
    folded.parts_of[i] = parts_in(r, folded.parts_of[i]);
  }
  r.parts_of = std::move(folded.parts_of);
  r.closed = std::move(closed);
  return r;
}

const Layer* FusedView::single(const Network& unfused) const {
  if (parts.size() != 1 || parts[0] == kNetworkInput) return nullptr;
  return &net(unfused).layers.at(size_t(parts[0]));
}

FusedView view_as_fused(const Network& net, const std::vector<int>& parts) {
  FusedView view;
  const bool pending = std::any_of(parts.begin(), parts.end(), [&](int p) {
    return p != kNetworkInput && net.layers.at(size_t(p)).step.kind != StepKind::None;
  });
  if (!pending) {
    view.parts = parts;
    return view;
  }
  view.fused = resolve_steps(net);
  view.parts = parts_in(*view.fused, parts);
  return view;
}

}  // namespace tpu::cnn::passes

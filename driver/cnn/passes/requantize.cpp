// SPDX-License-Identifier: Apache-2.0
#include "passes/requantize.h"

namespace tpu::cnn::passes {
namespace {

const std::optional<TensorQuant>& quant_of(const Network& net, int p) {
  return p == kNetworkInput ? net.input_quant : net.layers[size_t(p)].out_quant;
}

}  // namespace

bool exact_copy(const Network& net, int li) {
  const Layer& l = net.layers[size_t(li)];
  if (l.kind != LayerKind::Copy || l.act != Activation::None || !l.out_quant) return false;
  for (int p : l.inputs) {
    const std::optional<TensorQuant>& q = quant_of(net, p);
    if (!q || !(*q == *l.out_quant)) return false;
  }
  return true;
}

Requantization requantization(const Network& net, const std::vector<int>& parts, bool sole_reader,
                              const TensorQuant& q) {
  bool differs = false;
  for (int p : parts) {
    const std::optional<TensorQuant>& have = quant_of(net, p);
    differs |= have && !(*have == q);
  }
  if (!differs) return Requantization::Annotate;
  if (parts.size() == 1 && parts[0] != kNetworkInput && sole_reader && exact_copy(net, parts[0]))
    return Requantization::InPlace;
  return Requantization::Copy;
}

}  // namespace tpu::cnn::passes

// SPDX-License-Identifier: Apache-2.0
#include "passes/network_passes.h"

namespace tpu::cnn::passes {

void quantize_integer_input(Network& net, bool is_unsigned) {
  if (net.input_quant) return;
  TensorQuant q;
  q.is_unsigned = is_unsigned;
  net.input_quant = q;
  auto quant_of = [&](int p) -> const std::optional<TensorQuant>& {
    return p == kNetworkInput ? net.input_quant : net.layers[size_t(p)].out_quant;
  };
  // Copies (max pooling, Identity ...) of integers keep their quantization.
  for (auto& l : net.layers) {
    if (l.kind != LayerKind::Copy || l.out_quant || l.act != Activation::None) continue;
    std::optional<TensorQuant> in;
    bool same = true;
    for (int p : l.inputs) {
      const std::optional<TensorQuant> h = quant_of(p);
      if (!h || (in && !(*in == *h)))
        same = false;
      else
        in = h;
    }
    if (same && in) l.out_quant = in;
  }
}

void check_raw_outputs(const Network& net) {
  for (size_t li = 0; li < net.layers.size(); ++li) {
    const Layer& l = net.layers[li];
    if (!l.raw_out) continue;
    bool read = false;
    for (const Layer& c : net.layers)
      for (int p : c.inputs) read |= p == int(li);
    if (read || li + 1 != net.layers.size() || l.act != Activation::None || l.pool_k != 1)
      throw Error(net.name + ": layer '" + l.name +
                  "' computes an int32 result (MatMulInteger / ConvInteger): it must be the graph "
                  "output itself, not read by other ops, pooled or activated");
  }
}

}  // namespace tpu::cnn::passes

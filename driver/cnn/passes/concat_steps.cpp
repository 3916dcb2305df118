// SPDX-License-Identifier: Apache-2.0
#include "passes/concat_steps.h"

namespace tpu::cnn::passes {

ConcatStep quantize_concat(const Network& net, const Layer& c) {
  ConcatStep r;
  for (int p : c.inputs) {
    const std::optional<TensorQuant>& have =
        p == kNetworkInput ? net.input_quant : net.layers.at(size_t(p)).out_quant;
    if (!have || !(*have == c.step.quant)) r.stays = true;
  }
  if (!r.stays) r.parts = c.inputs;
  return r;
}

ConcatStep read_as_one_tensor(const Layer& c) {
  ConcatStep r;
  r.stays = c.inputs.size() != 1;
  if (!r.stays) r.parts = c.inputs;
  return r;
}

}  // namespace tpu::cnn::passes

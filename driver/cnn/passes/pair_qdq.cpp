// SPDX-License-Identifier: Apache-2.0
#include "passes/pair_qdq.h"

#include <string>

namespace tpu::cnn::passes {

QdqPairing pair_qdq(Network& net, const Layer& c) {
  const TensorQuant& q = c.step.quant;
  for (int p : c.inputs)
    if (p == kNetworkInput && net.input_quant && !(*net.input_quant == q))
      throw Error(net.name + ": layer '" + c.name + "' (" + c.op +
                  "): requantizes the input with different parameters (" + q.str() + " vs " +
                  net.input_quant->str() + ")");
  QdqPairing r;
  r.how = requantization(net, c.inputs, c.step.sole_reader, q);
  if (r.how == Requantization::Copy) return r;
  r.parts = c.inputs;
  for (int p : c.inputs)
    (p == kNetworkInput ? net.input_quant : net.layers[size_t(p)].out_quant) = q;
  return r;
}

}  // namespace tpu::cnn::passes

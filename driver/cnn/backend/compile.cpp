// SPDX-License-Identifier: Apache-2.0
// compile_network and emit_program (compiler.h): the backend's pipeline. Each pass fills in its
// part of the CompiledNetwork, in this order (backend.h); emission is the Emitter's (emitter.h).
#include "backend/backend.h"
#include "backend/emitter.h"

namespace tpu::cnn {

CompiledNetwork compile_network(const QuantNetwork& net, const ChipParams& chip) {
  chip.validate();
  backend::check_network(net);
  CompiledNetwork cn;
  cn.net = net;
  cn.chip = chip;
  backend::plan_tensors(cn);
  backend::plan_fill_slots(cn);
  backend::plan_layers(cn);
  backend::assign_quant_slots(cn);
  // 16-byte alignment of everything in constants holds: tiles are N*N, slots 12*N, LUTs 256 bytes.
  backend::plan_scratch(cn);
  return cn;
}

Program emit_program(const CompiledNetwork& cn, uint32_t batch, uint32_t constants_addr,
                     uint32_t input_addr, uint32_t output_addr, const ProgramOptions& options) {
  if (batch < 1) throw Error("batch must be at least 1");
  return backend::Emitter(cn, batch, constants_addr, input_addr, output_addr, options).run();
}

namespace backend {

void check_network(const QuantNetwork& net) {
  if (net.layers.empty()) throw Error(net.name + ": no layers");
  for (size_t l = 0; l < net.layers.size(); ++l)
    for (int in : net.layers[l].inputs)
      if (in < kNetworkInput || in >= int(l))
        throw Error("internal: layer '" + net.layers[l].name + "' reads layer " +
                    std::to_string(in) + " (not an earlier one)");
}

}  // namespace backend

}  // namespace tpu::cnn

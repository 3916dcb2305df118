// SPDX-License-Identifier: Apache-2.0
// The backend's passes (driver/cnn/backend/): compile_network runs them in order over the
// CompiledNetwork (compiler.h), each filling in its part of the plan; emit_program then
// schedules and emits one program per batch (emitter.h). Internal to driver/cnn.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "compiler.h"
#include "program.h"

namespace tpu::cnn::backend {

// ---- the compile passes, in the order compile_network runs them
// Refuses a network with no layers or a layer reading a later one.
void check_network(const QuantNetwork& net);
// Tensor layouts (tensor_plan.cpp): channel blocks, borders as wide as their consumers pad
// with the fill they need, shadows for max-pools of zero-point-padded tensors, the packed
// input, last uses.
void plan_tensors(CompiledNetwork& cn);
// The fill sources of padded tensors (quant_slots.cpp): one slot per (border value, signedness)
// at the top of the slots, and the accumulator rows they read.
void plan_fill_slots(CompiledNetwork& cn);
// Per layer (layer_plan.cpp): the chip's limits on its geometry, its LUT, its weight tiles
// (matmul terms; weight_tiles.cpp) and its chip biases, appended to the constants.
void plan_layers(CompiledNetwork& cn);
// Quantization slots (quant_slots.cpp): every (layer, output block, divisor) a slot, in
// generations that are reloaded as the program reaches them; the slot images and the fill
// slots appended to the constants.
void assign_quant_slots(CompiledNetwork& cn);
// Spilling (memory_plan.cpp): when one image's live tensors do not fit the unified buffer,
// every tensor gets a place in a host scratch area.
void plan_scratch(CompiledNetwork& cn);

// Layer li's weight tiles and chip biases into p (weight_tiles.cpp).
void build_terms(CompiledNetwork& cn, size_t li, CompiledNetwork::LayerPlan* p);
// Whether one image's live tensors fit the unified buffer (memory_plan.cpp).
bool fits_without_spill(const CompiledNetwork& cn);
// Accumulator rows of half the ring (the most one unit may take).
inline uint32_t half_acc(const CompiledNetwork& cn) {
  return (cn.chip.acc_rows - cn.fill_rows) / 2;
}

// ---- tensor placement (memory_plan.cpp)
// A tensor that lives from layer `birth` to layer `death` (both included) in `rows` UB rows.
struct LiveRange {
  int birth = 0, death = 0;
  uint64_t rows = 0, base = 0;
  // The item lives again from `again` on (the next micro-batch's copy, read while this one
  // ends): it also overlaps every item alive then.
  int again = std::numeric_limits<int>::max();
};
// Sets every item's base: largest first, each at the lowest rows free during its whole life.
// Returns the peak (rows used).
uint64_t place_first_fit(std::vector<LiveRange>& items);

// ---- the last steps of emission (weight_prefetch.cpp)
struct Op;
// The scheduled instructions `ops` into prog.instructions (ending with halt), with the
// read_weights that push every switched-to tile ahead of its matmul: at most WFifoTiles + 2
// tiles wait at once, and pushes run ahead (refilling when half the room is free). Also
// prog.instr_layer, layer_end and weight_bytes.
void insert_weight_loads(const std::vector<Op>& ops, const ChipParams& chip, Program& prog);
// Every instruction through ProgramBuilder's argument checks (program.h), DMA inside `ranges`;
// throws Error ("internal: ...") naming the instruction and argument otherwise.
void check_program(const std::vector<Instruction>& program, const ChipParams& chip,
                   std::vector<HostRange> ranges);
// The program's DMA bytes (instruction fetch included in dma_in_bytes), in total and per layer
// (Program::layer_dma); reads and writes in [scratch_addr, + scratch_bytes) are spills, reads
// into the unified buffer from the constants at `constants_addr` (depthwise tap rows) the
// layer's weights (not input_data_bytes; weight_bytes stays the read_weights bytes).
void count_dma(const CompiledNetwork& cn, uint32_t constants_addr, uint32_t scratch_addr,
               Program& prog);

// ---- helpers
inline uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

inline void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + size_t(i)] = uint8_t(x >> (8 * i));
}

inline ActFunc chip_func(Activation a) {
  switch (a) {
    case Activation::None:
      return ActFunc::Identity;
    case Activation::Relu:
      return ActFunc::Relu;
    case Activation::Clip:
      return ActFunc::Clamp;
    case Activation::Lut:
      return ActFunc::Lut;
  }
  return ActFunc::Identity;
}

// The accumulator lines one image of a conv-like layer needs for `pooled` output lines.
// The most convolution output lines that `pooled` consecutive pooled lines read.
inline int conv_lines(const LayerGeometry& l, int pooled) {
  return std::min(l.conv_out.h, (pooled - 1) * l.pool_s + l.pool_k);
}

// Conv, Add and Copy compute an image of accumulator rows; Dense one row per image.
inline bool conv_like(const LayerGeometry& l) { return l.kind != LayerKind::Dense; }

// The packed first layer: the host lays out its receptive fields (im2col).
inline bool packable(const QuantNetwork& net) {
  const QLayer& l = net.layers.front();
  if (!l.has_weights() || l.group != 1 || l.inputs.size() != 1 || l.inputs[0] != kNetworkInput)
    return false;
  for (size_t i = 1; i < net.layers.size(); ++i)
    for (int in : net.layers[i].inputs)
      if (in == kNetworkInput) return false;
  return true;
}

// Channel offset of input j in the concatenated input of layer l.
inline int input_offset(const QLayer& l, size_t j) {
  int c = 0;
  for (size_t i = 0; i < j; ++i) c += l.input_channels[i];
  return c;
}

}  // namespace tpu::cnn::backend

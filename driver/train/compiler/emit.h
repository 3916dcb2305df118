// SPDX-License-Identifier: Apache-2.0
// Pass 6 of the training compiler: emission. The nodes of a schedule, in order, as one program
// through the training kernels (kernels.h) and ProgramBuilder's checks (every instruction
// checked against the chip, every DMA inside the device buffer): per node and chunk, read_vmem
// of its operands from their homes (placement.h), the kernel, write_vmem of its results.
#pragma once

#include <cstddef>
#include <vector>

#include "compiler/graph.h"
#include "compiler/placement.h"
#include "isa.h"
#include "trainer.h"

namespace tpu::train::compiler {

struct Emitted {
  std::vector<Instruction> program;  // ends with halt
  struct Range {
    int node;
    size_t begin, end;  // instructions [begin, end) of the program
  };
  std::vector<Range> ranges;  // per scheduled node, in order
};

// `device_base`: the byte address of the device buffer holding every home.
Emitted emit(const Graph& g, const Placement& p, const std::vector<int>& order,
             const TrainOptions& opt, const ChipParams& chip, uint32_t device_base);

// The resident tensors (residency.h) from their homes into VMEM (load: after init), or back
// to their homes (store: before the host reads them). Ends with halt.
std::vector<Instruction> emit_residency(const Graph& g, const Placement& p, const ChipParams& chip,
                                        uint32_t device_base, bool store);

}  // namespace tpu::train::compiler

namespace tpu::train::compiler {

// The work of one instruction in cycles of its unit, as ModelDevice estimates a run (a DMA's
// bytes at half an AXI beat per cycle, one cycle per VMEM or ACC row an MXU or vector
// instruction walks, N per loaded tile or transposed block; 1 for the others).
uint64_t instruction_work(const Instruction& in, const ChipParams& chip);
// The step's `total` cycles split over the layers (forward nodes, in order; then "loss" and,
// with Adam, "adam") by the work of the instructions each node emitted: exact in sum, an
// estimate per layer (the units overlap on the chip).
std::vector<LayerCycles> layer_cycles(const Graph& g, const Emitted& step, const ChipParams& chip,
                                      uint64_t total);

}  // namespace tpu::train::compiler

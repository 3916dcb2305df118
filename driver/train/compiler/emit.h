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
  // per scheduled node, in order; two nodes run beside each other (overlap.h) give a range
  // per run of one node's instructions, alternating
  std::vector<Range> ranges;
};

// Weight tiles per load_weights of a Dense's and a DenseGradX's matmuls with
// TrainOptions::dense_tile_groups (kernels.h tile_group; without it 1): WFifoTiles + 2 = 6 may
// wait, so the next group of 4 is loaded after the second matmul of a group. Measured
// 2026-11-29 for the Keras step (N = 16, batch 32): 2 tiles 463,328 cycles, 3 454,778, 4
// 454,878, 5 454,760, 6 458,006; one per tile 465,007.
constexpr uint32_t kDenseTileGroup = 4;

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
// bytes at half an AXI beat per cycle, with or without the VMEM port (cycles.cpp says why), one
// cycle per VMEM or ACC row an MXU or vector instruction walks, N per loaded tile or transposed
// block; 1 for the others).
uint64_t instruction_work(const Instruction& in, const ChipParams& chip);
// The step's `total` cycles split over the layers (forward nodes, in order; then "loss" and,
// with Adam, "adam") by the work of the instructions each node emitted: exact in sum, an
// estimate per layer (the units overlap on the chip).
std::vector<LayerCycles> layer_cycles(const Graph& g, const Emitted& step, const ChipParams& chip,
                                      uint64_t total);
// The same measured from the step's instruction timeline (Device::timeline of a run of
// step.program): a node's cycles run from the issue of its first instruction to the issue of
// the next node's first (the last node's to the timeline's end); `measured` set.
std::vector<LayerCycles> layer_cycles(const Graph& g, const Emitted& step, const ChipParams& chip,
                                      const std::vector<InstrEvent>& timeline);

// The analytical bound. SCALE-Sim's weight-stationary cycles of an M x K by K x C matmul on
// the N x N array: ceil(K / N) * ceil(C / N) folds of (2N + N + M - 2) cycles each (load the
// weights, stream M rows, fill and drain).
uint64_t scale_sim_ws_cycles(uint64_t m, uint64_t k, uint64_t c, uint32_t n);
// The matmuls a node computes, as (M, K, C): Dense X.W; dX = dY.W^T; dW = X^T.dY; a Conv's
// im2col (M = outputs x batch, K = taps x cin); its dW and dX likewise.
struct MatmulShape {
  uint64_t m, k, c;
};
std::vector<MatmulShape> node_matmuls(const Graph& g, const Node& nd);
// The device-memory port's peak bytes per cycle for read_vmem / write_vmem (the VMEM port's
// width, or the AXI data width without one: ChipParams::vmem_dma_bytes_per_cycle).
uint32_t port_bytes_per_cycle(const ChipParams& chip);
// Fills bound_mxu, bound_dma and bound of each layer of `layers` (as layer_cycles made them)
// from the graph's matmuls and the step program's DMA bytes per node.
void add_bounds(const Graph& g, const Emitted& step, const ChipParams& chip,
                std::vector<LayerCycles>& layers);

}  // namespace tpu::train::compiler

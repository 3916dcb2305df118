// SPDX-License-Identifier: Apache-2.0
// Pass 4b of the training compiler: residency (after place, before schedule). The tensors that
// live across steps (weights, their optimizer state, Adam's state rows, the softmax pad row)
// and fit stay in VMEM from init to the end: they take rows at the top of VMEM
// (Placement::vmem, resident_rows), the node layouts use the rows below, and the emitter reads
// and updates them there (no read_vmem / write_vmem in the step). Their homes in device memory
// are written only by the store program (emit_residency), which the Trainer runs before the
// host reads weights; the load program fills VMEM after init. Chosen by reuse (the nodes that
// read or write a tensor per step: a Dense weight is read by the forward pass and dX and
// updated, its moments only updated), then by size, while the resident rows stay within
// kResidentShare of VMEM and every node still fits the rest. Not on a pod: the gradient
// all-reduce uses all of VMEM (allreduce.h).
#pragma once

#include <vector>

#include "compiler/graph.h"
#include "compiler/placement.h"
#include "isa.h"

namespace tpu::train::compiler {

// The most VMEM the resident tensors may take (the rest stays for the nodes' chunks). The
// Keras example at N = 16 on the RTL: 0.5 keeps the Dense weight resident (1,570,619 cycles per
// step), 0.7 also its first moment (1,403,358; the second does not fit beside them).
constexpr double kResidentShare = 0.7;

// Sets p.vmem / p.resident_rows and re-chooses every node's chunks (choose_chunks).
void place_resident(const Graph& g, Placement& p, const ChipParams& chip);
// The same with the tensors of `streamed_only` left out (overlap.h makes room that way).
void place_resident(const Graph& g, Placement& p, const ChipParams& chip,
                    const std::vector<int>& streamed_only);

// The tensors that may stay resident, best first (reuse, then size): what place_resident tries.
std::vector<int> residency_candidates(const Graph& g, const Placement& p);

}  // namespace tpu::train::compiler

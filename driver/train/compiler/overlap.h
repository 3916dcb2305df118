// SPDX-License-Identifier: Apache-2.0
// Pass 5b of the training compiler (after schedule): an optimizer update beside a backward
// node. A DenseUpdate (fuse.h: a Dense weight's dW and its optimizer, chunk by chunk) needs
// only X from the forward pass, dY from the loss, its weight and its state; the conv layer's
// fused backward pass before it (ConvPoolGrad) keeps the MXU's weight loads and VMEM read
// port 0 busy, the update the vector unit and the VMEM write port. Run one after the other,
// each leaves the other's units idle; overlap_updates() pairs them: the update runs beside
// the backward node (emit merges the two nodes' instructions, interleave.h merge_beside), its
// layout in VMEM rows above the backward node's (Placement::vmem_lo) and its dW in the upper
// half of ACC (acc_lo), so no instruction of one touches a row of the other. Every result
// is the same bits (the merge keeps each node's order and never moves an instruction past
// one it shares a VMEM, ACC or host row with).
#pragma once

#include <vector>

#include "compiler/graph.h"
#include "compiler/placement.h"
#include "compiler/schedule.h"
#include "isa.h"

namespace tpu::train::compiler {

struct Overlap {
  int main = -1, side = -1;  // node ids: side's instructions merged into main's
  int lead = -1;             // a DenseGradX whose instructions go ahead of main's (-1: none)
};

// Whether two nodes touch a common tensor (a view counts as its image) where one of them
// writes it: then their order matters.
bool nodes_conflict(const Graph& g, const Node& a, const Node& b);

// Pairs each DenseUpdate with the ConvPoolGrad before it in the step when the update depends
// on neither it nor the nodes between them that do (those that do not, e.g. AdamBegin, move
// ahead of the backward node), and when the update still runs in chunks of at least half its
// blocks in the VMEM rows above the backward node's layout (where it does not, its own
// optimizer state stops being resident to make room: `resident` as place_resident ran) and
// the backward node's dW partial sums fit the lower half of ACC. Reorders `s.step` (the side
// right after its main), sets p.vmem_lo / acc_lo / beside and the side's chunks.
// Not on a pod (the all-reduce between the gradients and the updates).
//
// With `lead`, the DenseGradX nearest before the ConvPoolGrad (the nodes between them that
// do not conflict with it move ahead of it; none may) leads the merged stream: its
// instructions, then the ConvPoolGrad's, with the update beside both (Placement::lead). Its
// dX matmuls use only the MXU and ACC, where the update's first chunks want the DMA, the
// transpose and the vector unit; its W reads and the update's W writes are ordered row by
// row by merge_beside. Its ACC stays below the update's dW (Placement::acc_hi) and its layout
// below the update's (its chunk made smaller where it would reach past Placement::vmem_lo).
std::vector<Overlap> overlap_updates(const Graph& g, Placement& p, Schedule& s,
                                     const ChipParams& chip, bool resident, bool lead = true);

// A Dense right after the ConvPool whose Y is its X (the Flatten view, the same image): its K
// chunks become Y's column blocks (kb = Y's rows per block / X's), its VMEM rows go above the
// ConvPool's layout (Placement::vmem_lo), and the ConvPool copies each pooled band of column
// block c < the Dense's buffer sets into set c (one `or` pass, the same bits) besides writing
// Y out (Placement::x_kept): the Dense reads only its later chunks from device memory
// (TrainOptions::dense_x_in_vmem). Only where the Dense's layout still fits VMEM. Returns the
// Dense nodes so placed.
std::vector<int> place_x_in_vmem(const Graph& g, Placement& p, const std::vector<int>& step,
                                 const ChipParams& chip);

}  // namespace tpu::train::compiler

// SPDX-License-Identifier: Apache-2.0
// Instruction placement inside one emitted job (emit.cpp): where a job's DMA goes among its
// compute instructions. Pure functions over instruction lists, so each can be tested alone.
// The chip issues in program order and holds an instruction while its unit is busy, so where
// an instruction sits decides what runs beside what; no placement here changes a result (the
// chip orders every access to the same VMEM rows or host bytes in program order).
#pragma once

#include <cstddef>
#include <vector>

#include "isa.h"

namespace tpu::train::compiler {

// For each of `count` DMA reads, the index of the instruction of `compute` it goes right
// after: the first at `from`, the others spread evenly over the matmul_bf16 instructions after
// it (read i after the matmul that starts the i-th of `count` equal shares of them), so each
// read has the matmuls of a share to finish under before the next one is issued (a read issued
// while the one before it still runs holds every instruction behind it). Nondecreasing; all
// `from` when no matmul follows it. `from` < compute.size().
std::vector<size_t> spread_reads(const std::vector<Instruction>& compute, size_t from,
                                 size_t count);
// For a DenseUpdate chunk's `count` DMA reads (the next chunk's X, then its W and optimizer
// state), the index of the instruction of `compute` each goes right after: the first after
// the first matmul_bf16 (the next chunk's transpose needs X), read k >= 1 after vector pass
// floor(k * P / count) of the P vector passes after the last acc_to_vmem (the update's, on
// dW): the state reads run beside the update's dependent chain of passes instead of holding
// the VMEM write port when the dW acc_to_vmem needs it (a read_vmem writes VMEM through that
// port and goes first; the acc_to_vmem and every pass behind it wait, and in the merged stream
// every instruction behind them). Empty when compute has no matmul, no acc_to_vmem after it
// or no vector pass after that (then the caller places them as before).
std::vector<size_t> update_read_anchors(const std::vector<Instruction>& compute, size_t count);

// The instructions in a new order: each run of load_weights / matmul_bf16 (with at least one
// matmul) that comes right after a run of vector instructions goes ahead of that run when no
// vector instruction of it writes a VMEM row the loads or matmuls read (bounding intervals;
// matmuls write only ACC, which vector instructions do not touch, and the loads' order among
// themselves and the matmuls' switches is kept): the same results. In a fused conv + pool
// (ConvPool) that starts the next job's first matmul, which waits for nothing of the pool,
// while the last acc_to_vmem moves ACC out ahead of the pool's vector passes (they wait for
// it: it holds the VMEM write port), where in order it would wait for them.
std::vector<Instruction> hoist_matmuls(const std::vector<Instruction>& in);
// `side` (a later job's vector passes, no VMEM rows in common with `main`'s) spread over
// `main` (a job's load_weights and matmuls), both in their own order: side instruction i right
// after the main instruction at which main's estimated progress reaches the estimated end of
// side instruction i - 1 (the first after main's first instruction), the rest after main.
// Estimates (instruction_work): main's progress max(load_weights work, matmul work) + the
// others' work (the weight loads and the matmuls overlap); a vector instruction its rows /
// kOverlayVectorRows. The vector unit then works while the MXU does, where in program order
// it would wait for the job's last load_weights to issue. With the VMEM arbiter that grants
// the vector unit only when no narrow client (DMA, move, load_weights, matmul feeder) uses a
// read port, a side instruction runs in the gaps and, when it is slower than estimated, the
// next one holds the issue until it ends (the MXU's queue drains, the ports free up): no worse
// than one after the other by more than that drain; with grants per bank it runs beside them,
// and with two groups in R (rtl/tpu_vpu.sv) at VpuRows - 1 rows per cycle beside a narrow
// client: 7 at N = 16 (the Keras step: 4 gave 372,840 cycles, 7 368,851, 8 to 16 the same).
constexpr uint64_t kOverlayVectorRows = 7;
std::vector<Instruction> overlay(const std::vector<Instruction>& main,
                                 const std::vector<Instruction>& side, const ChipParams& chip);

}  // namespace tpu::train::compiler

namespace tpu::train::compiler {

// Two nodes' instructions merged into one stream (overlap.h): `side` spread over `main`,
// each in its own order. An entry is (true, i): side[i], or (false, i): main[i].
struct Merged {
  bool side = false;
  size_t index = 0;
};
// Where the chip's units would start each instruction, estimated in program order: one unit
// per kind (read_vmem, load_weights with write_vmem (both read through VMEM read port 0: a
// write_vmem holds the weight loads until it ends), matmul_bf16, the move unit's acc_to_vmem
// and transpose, vector), each busy for the cycles the training chip's timeline shows at
// N = 16 (a VMEM-port DMA two per row, the vector unit kMergeVectorRows rows per cycle, a
// weight tile N + 4, a matmul its rows + 2N, a transposed block N + 3), an instruction issued
// when its unit is free, not before the one ahead of it and not before the instructions of
// the last 256 placed that it shares a row with end (the chip's scoreboard), a matmul with
// switch not before the tile it makes active is loaded. The merge takes side's next
// instruction ahead of main's when it would start no later (a unit main leaves idle; ties to
// the side: 574,173 against 575,743 cycles for the Keras step when it was introduced; the
// shared port 0, the scoreboard and 3 vector rows per cycle took the Keras step with the
// DenseGradX leading (overlap.h) from 481,901 to 465,007; with the vector unit's two groups in
// R, 4 and 5 rows per cycle gave 373,250 and 375,029 cycles against 3's 372,840), and only
// where that keeps every result:
// * never ahead of a main instruction it shares a row with (VMEM, ACC or host bytes, bounding
//   intervals as isa.md "Ordering"; one of the two writing it);
// * the weight FIFO: side's loads and matmuls only as a whole, from a load to the matmul that
//   makes its last tile active, at a point of main with no tile of its own pending and whose
//   next matmul switches (so no main matmul ever takes a side tile or the other way round).
// Unknown instructions (none in a node's stream) are never jumped.
constexpr uint64_t kMergeVectorRows = 3;
std::vector<Merged> merge_beside(const std::vector<Instruction>& main,
                                 const std::vector<Instruction>& side, const ChipParams& chip);
// Whether instructions a and b touch no common row: no VMEM, ACC or host range that one
// writes and the other reads or writes (bounding intervals; false for an instruction whose
// ranges are not listed). The weight FIFO is not a row: merge_beside orders it apart.
bool rows_disjoint(const Instruction& a, const Instruction& b, uint32_t n);

// The instructions reordered by a greedy list scheduler over a sliding window of `window`
// not yet placed instructions: next comes the one the in-order issue estimate (IssueModel's
// units, the chip's scoreboard: an instruction waits for every earlier one it shares a row
// with, a vector pass kScheduleVectorRows rows per cycle) starts first, ties to program order.
// Only instructions with no common row (rows_disjoint) and not both using the weight FIFO
// change their order, so every result is the same (the same operations per element in the
// same order); an instruction whose ranges are unknown keeps its place.
// With `feed_transposes` (TrainOptions::im2col_build_first) a vector pass that writes rows a
// transpose among the next `window` instructions reads (a ConvPool band's tap rows, which its
// im2col transpose reads) ties like the other units' instructions, so it goes ahead of vector
// passes that would start at the same estimated cycle (the previous band's pool passes, ahead
// of it in program order): the move unit, which runs acc_to_vmem and transpose and binds the
// conv forward, then finds the transpose ready when its moves before it end.
// (With the vector unit's two groups in R, the Keras step: 3 gave 374,990 cycles against 4's
// 368,851 with kOverlayVectorRows 8; 6 and 8 gave 373,186 and 376,200 against 372,840 with 4.)
constexpr uint64_t kScheduleVectorRows = 4;
constexpr size_t kScheduleWindow = 128;
std::vector<Instruction> list_schedule(const std::vector<Instruction>& in, const ChipParams& chip,
                                       size_t window, bool feed_transposes = false);

}  // namespace tpu::train::compiler

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

}  // namespace tpu::train::compiler

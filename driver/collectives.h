// SPDX-License-Identifier: Apache-2.0
// Collectives as chip programs over the inter-chip links (docs/pod.md): reduce-scatter,
// all-gather and all-reduce on a ring, and their two-dimensional algorithms on a torus, of fp32
// or int32 vectors held in VMEM, built with ProgramBuilder's ici_send / ici_recv. The reduction is
// ici_recv's reduce (isa.md): no scratch rows, no vector pass.
//
// The buffer is `rows` VMEM rows from `base` on every chip (N 32-bit lanes a row; a vector
// of E elements takes ceil(E / N) rows, the last one padded). A ring of n chips splits it
// into n chunks of whole rows, chunk c = rows [c*rows/n, (c+1)*rows/n) (floor), so chunk
// sizes differ by at most one row and may be 0 (then nothing is sent for it).
//
// Summation order (docs/pod.md "Summation order"): ring reduce-scatter chains the chips of a
// ring starting at the chunk's first chip s: acc = x[s]; acc = add(x[s+1], acc); ...
// acc = add(x[s+n-1], acc) (indices mod n; add = isa.md fp32 add or wrapping int32). The torus
// X x Y algorithms do that along x, then along y on the x-partial sums. reference_* compute
// the same chains on the host from these formulas (driver/fp.h), independently of the
// programs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "isa.h"
#include "pod.h"
#include "program.h"

namespace tpu {

enum class CollectiveDtype { Fp32, Int32 };
std::string_view dtype_name(CollectiveDtype t);  // "fp32", "int32"

// Chunk c of `rows` rows split into `parts`: rows [first, first + count).
struct Chunk {
  uint32_t first = 0;
  uint32_t count = 0;
};
Chunk chunk_of(uint32_t rows, uint32_t parts, uint32_t c);

// A chip's place on one ring: its index (0..size-1), the ring's size, and the links to the
// next chip (send) and from the previous one (receive).
struct RingPosition {
  uint32_t index = 0;
  uint32_t size = 1;
  uint32_t send_link = kLinkXPlus;
  uint32_t recv_link = kLinkXMinus;
};

// The x ring (links 0 / 1) and the y ring (links 2 / 3) through chip r of the topology.
RingPosition x_ring(const PodTopology& topo, uint32_t chip);
RingPosition y_ring(const PodTopology& topo, uint32_t chip);

// Ring reduce-scatter of rows [base, base + rows): afterwards the chip at ring index i holds
// chunk (i + final_offset) mod n fully reduced (chain start: chip (c - final_offset + 1)).
void ring_reduce_scatter(ProgramBuilder& b, const RingPosition& ring, uint32_t base, uint32_t rows,
                         CollectiveDtype dtype, uint32_t final_offset);
// Ring all-gather: the chip at ring index i owns chunk (i + owned_offset) mod n; afterwards
// every chip holds every chunk (copied bit for bit).
void ring_all_gather(ProgramBuilder& b, const RingPosition& ring, uint32_t base, uint32_t rows,
                     uint32_t owned_offset);

// The rows chip `chip` owns in reduce-scatter (its reduced block) and all-gather (the block it
// contributes): on a torus X x Y (a ring is P x 1), chip r = y*X + x owns block (x, y) = sub-chunk
// y of x-chunk x: chunk_of(c.count, Y, y) shifted by c.first, with c = chunk_of(rows, X, x). On a
// ring that is chunk r. In row order the blocks go x-major: chip r's block is the (x*Y + y)-th.
Chunk scatter_block(const PodTopology& topo, uint32_t rows, uint32_t chip);

// Whole programs for chip `chip` (ending with halt). The builder's params need
// ici_links >= topo.links_needed().
// All-reduce: ring (torus P x 1) or the 2-D algorithm (reduce-scatter along x, all-reduce
// along y on the chip's x-chunk, all-gather along x). Every chip ends with the same buffer.
std::vector<Instruction> all_reduce_program(const PodTopology& topo, const ChipParams& params,
                                            uint32_t chip, uint32_t base, uint32_t rows,
                                            CollectiveDtype dtype);
// Reduce-scatter: chip r ends with its scatter_block reduced. On a torus: ring reduce-scatter
// along x (chip x ends with x-chunk x, chain start x + 1), then along y within that x-chunk
// (chip y ends with sub-chunk y, chain start y + 1). Rows outside the block hold partial sums.
std::vector<Instruction> reduce_scatter_program(const PodTopology& topo, const ChipParams& params,
                                                uint32_t chip, uint32_t base, uint32_t rows,
                                                CollectiveDtype dtype);
// All-gather: chip r contributes its scatter_block; every chip ends with all blocks. On a torus
// the inverse order: all-gather along y within x-chunk x, then along x.
std::vector<Instruction> all_gather_program(const PodTopology& topo, const ChipParams& params,
                                            uint32_t chip, uint32_t base, uint32_t rows);

// ---- host references. inputs[r] = chip r's buffer (rows * n lanes, rows = size / n).
// The all-reduce result (the same for every chip).
std::vector<uint32_t> reference_all_reduce(const PodTopology& topo, uint32_t n,
                                           const std::vector<std::vector<uint32_t>>& inputs,
                                           CollectiveDtype dtype);
// The reduce-scatter result: every chip's block reduced (what chip r holds in its
// scatter_block): element e of chip (x, y)'s block is chain_y(start y + 1, p_y) with
// p_y = chain_x(start x + 1, inputs[y*X + x'][e]).
std::vector<uint32_t> reference_reduce_scatter(const PodTopology& topo, uint32_t n,
                                               const std::vector<std::vector<uint32_t>>& inputs,
                                               CollectiveDtype dtype);
// The all-gather result: chip r's scatter_block taken from chip r.
std::vector<uint32_t> reference_all_gather(const PodTopology& topo, uint32_t n,
                                           const std::vector<std::vector<uint32_t>>& inputs);

// nccl-tests' bus bandwidth factor (its PERFORMANCE.md): all-reduce 2(n-1)/n, reduce-scatter
// and all-gather (n-1)/n.
enum class CollectiveKind { AllReduce, ReduceScatter, AllGather };
double busbw_factor(CollectiveKind kind, uint32_t chips);

}  // namespace tpu

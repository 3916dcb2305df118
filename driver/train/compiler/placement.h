// SPDX-License-Identifier: Apache-2.0
// Pass 4 of the training compiler: memory placement. Every tensor of the graph gets a home in
// device memory (host memory as the chip's DMA sees it, standing in for HBM): its packed image
// in the kernels' layout (layout.h), at a byte offset of one device buffer. Nothing lives in
// VMEM between nodes: each node streams its operands in (read_vmem), runs its kernel and
// streams its results out (write_vmem). A node whose operands do not fit VMEM at once runs in
// chunks: a Dense (and its gradients) over chunks of K (the contraction of the forward pass,
// multiples of N; dense_forward_partial accumulates them in ACC bit-identically), the
// element-wise nodes and the optimizer updates over chunks of VMEM rows. place() picks for each
// node the largest chunk that fits VMEM and ACC; node_layout() is where each operand of one
// chunk sits in VMEM (the emitter uses it, place() tries it).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/graph.h"
#include "isa.h"
#include "layout.h"

namespace tpu::train::compiler {

struct Home {
  uint32_t addr = 0;  // byte offset in device memory
  VMat geom;          // the tensor's geometry (base unused): rows, cols, pitch
  uint32_t rows = 0;  // VMEM rows of its packed image (4N bytes each)
};

struct Placement {
  uint32_t n = 0;
  std::vector<Home> homes;      // per tensor
  // per node: K blocks (Dense ops), VMEM rows (element-wise, updates), rows per column block
  // (BiasGrad) or output lines (banded Conv / pool nodes) per chunk; 0: whole
  std::vector<uint32_t> chunk;
  uint32_t device_bytes = 0;
};

// Where the operands of one chunk of a node sit in VMEM (the largest chunk's extent).
struct NodeLayout {
  std::vector<uint32_t> in, out;  // first VMEM row of each operand (outputs of updates = inputs)
  uint32_t scratch = 0;
  uint32_t end = 0;  // one past the last row used
};

// Bands (convolutions and pools whose tensors do not fit VMEM whole): a band is `lines`
// output lines from line oy0, computed from the input lines it reads as a convolution / pool of
// its own (the sub-geometry: the band's padded input lines, no padding of its own).
// Whether node n can run in bands (else 0 = whole only), and its band geometry.
bool bandable(const Graph& g, const Node& n);
ConvGeom conv_band(const ConvGeom& g, uint32_t oy0, uint32_t lines);
PoolGeom pool_band(const PoolGeom& g, uint32_t oy0, uint32_t lines);
// The first input line (padded coordinates) of the band from output line oy0.
inline uint32_t band_input_line(uint32_t oy0, uint32_t stride) { return oy0 * stride; }
// The output lines a band node computes (its ho).
uint32_t band_lines_total(const Node& n);

// The K dimension a Dense-type node chunks over (0: the node chunks over rows or not at all).
uint32_t k_of(const Graph& g, const Node& n);
// The VMEM rows an element-wise / update node walks (0 for the other nodes).
uint32_t flat_rows_of(const Graph& g, const Placement& p, const Node& n);

// The VMEM of one band of `lines` output lines of a banded node (node_layout with chunk != 0).
void band_layout(const Graph& g, const Placement& p, const Node& nd, uint32_t lines,
                 const ChipParams& chip, VmemArena& a, NodeLayout& L);

// Throws std::invalid_argument naming the node when even its smallest chunk does not fit VMEM
// or ACC, or the logits have more classes than N.
Placement place(const Graph& g, const ChipParams& chip);
// Throws std::invalid_argument (VmemArena) when the chunk does not fit.
NodeLayout node_layout(const Graph& g, const Placement& p, int node, uint32_t chunk,
                       const ChipParams& chip);

}  // namespace tpu::train::compiler

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

#include <algorithm>
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
  std::vector<Home> homes;  // per tensor
  // per node: K blocks (Dense ops), VMEM rows (element-wise, updates), rows per column block
  // (BiasGrad) or output lines (banded Conv / pool nodes) per chunk; 0: whole
  std::vector<uint32_t> chunk;
  // per node: ConvPool / ConvPoolGrad: output-channel blocks per pass over a band (0: all)
  std::vector<uint32_t> group;
  // per node: buffer sets of the streamed operands (emit.h: the next chunk's read_vmem goes
  // out before the current chunk's compute, into the other set; 1: no double buffering)
  std::vector<uint32_t> depth;
  uint32_t device_bytes = 0;
  // Residency (residency.h): per tensor, the first VMEM row of the copy that stays in VMEM
  // across nodes and steps (-1: it streams from its home); the rows at the top of VMEM those
  // copies hold (node layouts use the rows below).
  std::vector<int32_t> vmem;
  uint32_t resident_rows = 0;
  int32_t resident(int t) const {
    return static_cast<size_t>(t) < vmem.size() ? vmem[static_cast<size_t>(t)] : -1;
  }
  // VMEM rows a node's layout may use.
  uint32_t work_rows(const ChipParams& chip) const { return chip.vmem_rows - resident_rows; }
  // Overlap (overlap.h): per node, the first VMEM row and the first ACC row its layout and its
  // kernels may use (empty or 0: from row 0), and the node whose instructions its own run
  // beside (-1: none; emit merges the two nodes' instructions, interleave.h merge_beside).
  std::vector<uint32_t> vmem_lo, acc_lo;
  std::vector<int> beside;
  // Per node: one past the last ACC row its kernels may use (0: AccRows; a DenseGradX that
  // leads a merged stream stays below the side's dW), and the node whose instructions go
  // ahead of its own in the merged stream the side runs beside (-1: none; overlap.h).
  std::vector<uint32_t> acc_hi;
  std::vector<int> lead;
  uint32_t vmem_lo_of(int node) const { return at_or_0(vmem_lo, node); }
  uint32_t acc_lo_of(int node) const { return at_or_0(acc_lo, node); }
  uint32_t acc_hi_of(int node, const ChipParams& chip) const {
    const uint32_t h = at_or_0(acc_hi, node);
    return h != 0 ? h : chip.acc_rows;
  }
  // Per node (overlap.h place_x_in_vmem): a ConvPool's Dense whose first K chunks (one per
  // buffer set) it copies its Y column blocks into, and that Dense's ConvPool (-1: none).
  std::vector<int> x_kept;
  int x_kept_of(int node) const { return at_or_minus_1(x_kept, node); }
  int beside_of(int node) const { return at_or_minus_1(beside, node); }
  int lead_of(int node) const { return at_or_minus_1(lead, node); }

 private:
  static uint32_t at_or_0(const std::vector<uint32_t>& v, int i) {
    return static_cast<size_t>(i) < v.size() ? v[static_cast<size_t>(i)] : 0;
  }
  static int at_or_minus_1(const std::vector<int>& v, int i) {
    return static_cast<size_t>(i) < v.size() ? v[static_cast<size_t>(i)] : -1;
  }
};

// Where the operands of one chunk of a node sit in VMEM (the largest chunk's extent).
// ConvPool: in X band, W, [b]; out Y band, argmax band, conv band buffer. ConvPoolGrad: in X
// band, argmax band, Y band, dY band; out dW, [db], conv-gradient band buffer (bands of `group`
// channel blocks).
struct NodeLayout {
  std::vector<uint32_t> in, out;  // first VMEM row of each operand (outputs of updates = inputs)
  // Rows from one buffer set of a streamed operand to the next (0: one set): set s of in[i]
  // is at in[i] + s * in_step[i] (depth sets, Placement::depth).
  std::vector<uint32_t> in_step, out_step;
  uint32_t scratch = 0;
  // ConvPoolGrad double-buffered: the dW kernel's scratch (its tap rows), one set per job in
  // flight (set s at dw_scratch + s * dw_scratch_step), apart from `scratch` (the ReLU mask
  // and the pool gradient's), so the next job's vector passes run beside this job's matmuls.
  uint32_t dw_scratch = 0, dw_scratch_step = 0;
  // ConvPool: a copy of the bias (a row per output block) and the pool's scratch (its mask
  // and constant rows), right below the Y and argmax sets: a pass that reads the mask with
  // the argmax, or the bias with Y, spans no conv band row in the chip's ordering (bounding
  // intervals, isa.md "Ordering"), so it runs beside the next job's acc_to_vmem into the
  // other band buffer set.
  uint32_t pool_scratch = 0;
  uint32_t end = 0;  // one past the last row used
};

// Bands (convolutions and pools whose tensors do not fit VMEM whole): a band is `lines`
// output lines from line oy0, computed from the input lines it reads as a convolution / pool of
// its own (the sub-geometry: the band's padded input lines, no padding of its own).
// Whether node n can run in bands (else 0 = whole only), and its band geometry.
bool bandable(const Graph& g, const Node& n);
ConvGeom conv_band(const ConvGeom& g, uint32_t oy0, uint32_t lines);
struct LineBand;
PoolGeom pool_sub(const PoolGeom& g, const LineBand& b);  // the band's own pool
// The input lines a band of output lines [oy0, oy0 + count) of a convolution or pool reads:
// real lines [r0, r0 + h) and the padding lines above and below them (the band's own sub-
// geometry: h, pad_top, pad_bottom).
struct LineBand {
  uint32_t oy0 = 0, oy_count = 0, r0 = 0, h = 0, pad_top = 0, pad_bottom = 0;
};
template <typename G>
LineBand out_band(const G& g, uint32_t oy0, uint32_t count) {
  LineBand b;
  b.oy0 = oy0;
  b.oy_count = count;
  const int64_t pt = g.pad_top, p0 = int64_t{oy0} * g.sh,
                p1 = int64_t{oy0 + count - 1} * g.sh + g.kh;
  const int64_t real0 = std::max<int64_t>(p0, pt), real1 = std::min<int64_t>(p1, pt + g.h);
  b.r0 = static_cast<uint32_t>(real0 - pt);
  b.h = static_cast<uint32_t>(std::max<int64_t>(0, real1 - real0));
  b.pad_top = static_cast<uint32_t>(real0 - p0);
  b.pad_bottom = static_cast<uint32_t>(p1 - std::max(real1, real0));
  return b;
}
// The output lines that reach input lines [iy0, iy1) (oy_count 0: none) and what they read.
template <typename G>
LineBand in_band(const G& g, uint32_t iy0, uint32_t iy1) {
  const int64_t pt = g.pad_top, kh = g.kh, sh = g.sh;
  const int64_t lo = std::max<int64_t>(0, iy0 + pt - kh + 1);
  const int64_t oy_lo = (lo + sh - 1) / sh;
  const int64_t oy_hi = std::min<int64_t>(int64_t{g.ho()} - 1, (iy1 - 1 + pt) / sh);
  if (oy_lo > oy_hi) return LineBand{};
  return out_band(g, static_cast<uint32_t>(oy_lo), static_cast<uint32_t>(oy_hi - oy_lo + 1));
}

// A conv dX (ConvGradX) runs in bands of its input lines [iy0, iy1): the output lines that
// reach them (oy0, count) and the sub-convolution over the padded lines those read, whose real
// lines start at input line r0 (its dX holds every contribution to lines [iy0, iy1)).
struct DxBand {
  uint32_t oy0 = 0, oy_count = 0, r0 = 0;
  ConvGeom sub;
};
DxBand dx_band(const ConvGeom& g, uint32_t iy0, uint32_t iy1);

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
// or ACC, or the logits have more classes than N. Nothing is resident (residency.h adds that).
Placement place(const Graph& g, const ChipParams& chip);
// Each node's chunk, group and depth (place()'s second half) for the VMEM rows below the
// resident ones; throws as place().
void choose_chunks(const Graph& g, Placement& p, const ChipParams& chip);
// The same for one node (its VMEM rows from Placement::vmem_lo, its ACC rows from acc_lo).
void choose_node_chunks(const Graph& g, Placement& p, int node, const ChipParams& chip);
// Throws std::invalid_argument (VmemArena) when the chunk does not fit.
NodeLayout node_layout(const Graph& g, const Placement& p, int node, uint32_t chunk,
                       const ChipParams& chip);

}  // namespace tpu::train::compiler

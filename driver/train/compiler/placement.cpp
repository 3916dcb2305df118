// SPDX-License-Identifier: Apache-2.0
#include "compiler/placement.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels.h"

namespace tpu::train::compiler {

namespace {

constexpr uint32_t kAlign = 64;                // bytes between homes
constexpr uint32_t kMaxMatmulRows = 4095;      // matmul_bf16 inner count
constexpr uint32_t kMaxVecOuterStride = 2047;  // vector a_outer_stride (11 bits)

VMat geometry(const Graph& g, const Tensor& t, uint32_t n) {
  switch (t.kind) {
    case TensorKind::Labels: {
      const uint32_t r = (g.batch + n - 1) / n;  // N int32 labels per row
      return VMat{0, r, n, r};
    }
    case TensorKind::AdamState:
      return VMat{0, AdamState::kRows, 1, AdamState::kRows};
    default:
      break;
  }
  if (t.row_vector) return VMat{0, 1, t.cols, 1};
  return VMat{0, t.rows, t.cols, round_up(t.rows, n)};
}

[[noreturn]] void fail(const Node& nd, const std::string& what) {
  throw std::invalid_argument("place: node '" + nd.name + "' (" + op_name(nd.op) + "): " + what);
}

bool fits(const Graph& g, const Placement& p, int node, uint32_t chunk, const ChipParams& chip) {
  try {
    node_layout(g, p, node, chunk, chip);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The largest chunk in [1, most] that fits VMEM (fits() is monotone in the chunk); 0 if none.
uint32_t largest_fit(const Graph& g, const Placement& p, int node, uint32_t most,
                     const ChipParams& chip) {
  if (fits(g, p, node, most, chip)) return most;
  uint32_t lo = 0, hi = most;  // fits(lo) (or lo = 0), !fits(hi)
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    (fits(g, p, node, mid, chip) ? lo : hi) = mid;
  }
  return lo;
}

// ACC rows a Dense-type node needs whatever the chunk; the most K blocks a chunk may have.
uint32_t acc_limit_blocks(const Graph& g, const Placement& p, const Node& nd,
                          const ChipParams& chip) {
  const uint32_t n = p.n;
  const uint32_t m = g.batch;
  const auto& out = p.homes[static_cast<size_t>(nd.out[0])].geom;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(nd, what + " (AccRows = " + std::to_string(chip.acc_rows) + ")");
  };
  const uint32_t kb = (k_of(g, nd) + n - 1) / n;
  switch (nd.op) {
    case Op::Dense:
      need(m <= kMaxMatmulRows && uint64_t{out.blocks(n)} * m <= chip.acc_rows,
           "batch x output blocks = " + std::to_string(out.blocks(n) * m) + " ACC rows do not fit");
      return kb;
    case Op::DenseGradX:
      // (overlap.h: a DenseGradX ahead of a merged pair uses the rows below the side's dW)
      need(m <= kMaxMatmulRows && m <= p.acc_hi_of(static_cast<int>(&nd - g.nodes.data()), chip),
           "the batch does not fit ACC");
      return kb;
    case Op::DenseGradW:
    case Op::DenseUpdate: {
      // ACC from the node's first row (overlap.h: a node beside another uses the upper rows)
      const uint32_t acc = chip.acc_rows - p.acc_lo_of(static_cast<int>(&nd - g.nodes.data()));
      need(acc >= n, "not one block of K fits ACC");
      return std::min({kb, acc / n, kMaxMatmulRows / n});
    }
    default:
      return 0;
  }
}

// VMEM rows of `rows` image rows in each of t's column blocks (the pitch rounded to N).
uint32_t band_rows(const Placement& p, int t, uint32_t rows) {
  return p.homes[static_cast<size_t>(t)].geom.blocks(p.n) * round_up(rows, p.n);
}

}  // namespace

namespace {

// ConvPool / ConvPoolGrad: a band of `lines` pooled lines, `group` output-channel blocks.
// `depth` sets of VMEM rows for a streamed operand of `rows` rows: the first set's base, the
// step recorded in `steps`.
uint32_t sets(VmemArena& a, uint32_t rows, uint32_t depth, std::vector<uint32_t>& steps) {
  steps.push_back(depth > 1 ? rows : 0);
  return a.rows(rows * std::max(1u, depth));
}

void fused_layout(const Placement& p, const Node& nd, uint32_t lines, uint32_t group,
                  uint32_t depth, const ChipParams& chip, VmemArena& a, NodeLayout& L) {
  const uint32_t n = p.n;
  ConvGeom b = conv_band(nd.conv, 0, lines * nd.pool.kh);
  const uint32_t blocks = (b.cout + n - 1) / n;
  const uint32_t gb = group == 0 ? blocks : std::min(group, blocks);
  const uint32_t x_rows =
      b.packed() ? b.input_rows(n) : band_rows(p, nd.in[0], b.h * b.w * b.batch);
  const uint32_t prows = round_up(lines * nd.pool.wo() * b.batch, n);
  const uint32_t crows = round_up(lines * nd.pool.kh * b.wo() * b.batch, n);
  PoolGeom pg = nd.pool;
  pg.h = lines * nd.pool.kh;
  pg.c = std::min(gb * n, b.cout);
  L.in = {sets(a, x_rows, depth, L.in_step)};
  uint32_t scratch = pool_scratch_rows(pg, n);
  if (nd.op == Op::ConvPool) {
    for (size_t i = 1; i < nd.in.size(); ++i) {  // W[, b]: resident, or read once
      const int t = nd.in[i];
      if (p.resident(t) >= 0) {
        L.in.push_back(static_cast<uint32_t>(p.resident(t)));
        L.in_step.push_back(0);
      } else {
        L.in.push_back(sets(a, p.homes[static_cast<size_t>(t)].rows, 1, L.in_step));
      }
    }
    // The conv band buffer: with depth > 1 a set per job in flight, set 0 below the pool's
    // scratch and the Y / argmax sets, set 1 above them, so a job's pool passes (bounding
    // intervals from their band set to Y) span no row the next job's acc_to_vmem writes.
    const uint32_t band0 = a.rows(gb * crows);
    L.pool_scratch = a.rows(blocks + std::max(1u, scratch));  // a copy of b, then the pool's
    L.out = {sets(a, gb * prows, depth, L.out_step), sets(a, gb * prows, depth, L.out_step)};
    L.out.push_back(band0);
    L.out_step.push_back(depth > 1 ? a.rows(gb * crows) - band0 : 0);
    b.cout = pg.c;
  } else {
    for (int i = 0; i < 3; ++i) L.in.push_back(sets(a, gb * prows, depth, L.in_step));
    for (int t : nd.out)
      L.out.push_back(sets(a, p.homes[static_cast<size_t>(t)].rows, 1, L.out_step));
    // dW a group per call (conv_dw_group) or one block at a time; each block's partial in
    // ACC rows of its own across the bands
    b.cout = std::min(gb * n, b.cout);
    if (!conv_dw_group(b, n)) b.cout = std::min(n, b.cout);
    if (uint64_t{(blocks * n + b.cout - 1) / b.cout} * conv_dw_acc_rows(b, n) > chip.acc_rows) {
      throw std::invalid_argument(
          "band_layout: the partial dW of every output block does not fit ACC");
    }
    scratch = std::max(scratch, gb * prows);  // relu_backward's mask
  }
  // The conv output's (gradient's) band: the gradient's a set per job in flight
  const bool grad = nd.op == Op::ConvPoolGrad;
  if (grad) L.out.push_back(sets(a, gb * crows, depth, L.out_step));
  if (!grad) {  // the conv's im2col stays for the band's other groups
    L.scratch = a.rows(std::max(1u, conv_scratch_rows(b, chip, 0)));
  } else if (depth > 1) {  // relu mask and pool scratch; the dW's tap rows, a set per job
    L.scratch = a.rows(std::max(1u, scratch));
    L.dw_scratch_step = std::max(1u, conv_dw_scratch_rows(b, chip));
    L.dw_scratch = a.rows(depth * L.dw_scratch_step);
  } else {  // relu mask, pool scratch, then the dW's tap rows: one at a time
    L.scratch = a.rows(std::max({1u, scratch, conv_dw_scratch_rows(b, chip)}));
    L.dw_scratch = L.scratch;
  }
}

}  // namespace

void band_layout(const Graph& g, const Placement& p, const Node& nd, uint32_t lines,
                 const ChipParams& chip, VmemArena& a, NodeLayout& L) {
  (void)g;
  const uint32_t n = p.n;
  if (nd.op == Op::ConvPool || nd.op == Op::ConvPoolGrad) {
    const size_t id = static_cast<size_t>(&nd - g.nodes.data());
    fused_layout(p, nd, lines, id < p.group.size() ? p.group[id] : 0,
                 id < p.depth.size() ? p.depth[id] : 1, chip, a, L);
    return;
  }
  if (nd.op == Op::ConvPad) {  // one channel block of `lines` source lines at a time
    L.in = {a.rows(round_up(lines * nd.conv.w * nd.conv.batch, n))};
    return;
  }
  if (nd.op == Op::ConvGradX) {  // one input-channel block: the largest band's dY, W, dX
    uint32_t dy = 1, dx = 1, scratch = 1;
    const ConvGeom& cg = nd.conv;
    for (uint32_t iy0 = 0; iy0 < cg.h; iy0 += lines) {
      DxBand d = dx_band(cg, iy0, std::min(cg.h, iy0 + lines));
      if (d.oy_count == 0 || d.sub.h == 0) continue;
      d.sub.cin = std::min(n, cg.cin);
      dy = std::max(dy, round_up(d.oy_count * cg.wo() * cg.batch, n));
      dx = std::max(dx, round_up(d.sub.h * cg.w * cg.batch, n));
      scratch = std::max(scratch, conv_scratch_rows(d.sub, chip, 0));
    }
    const uint32_t cout_blocks = p.homes[static_cast<size_t>(nd.in[1])].geom.blocks(n);
    L.in = {a.rows(p.homes[static_cast<size_t>(nd.in[0])].geom.blocks(n) * dy),
            a.rows(cout_blocks * cg.taps() * n)};
    L.out = {a.rows(dx)};
    L.scratch = a.rows(scratch);
    return;
  }
  if (nd.op == Op::Conv || nd.op == Op::ConvGradW) {
    ConvGeom b = conv_band(nd.conv, 0, lines);
    const uint32_t x_rows =
        b.packed() ? b.input_rows(n) : band_rows(p, nd.in[0], b.h * b.w * b.batch);
    L.in.push_back(a.rows(x_rows));
    if (nd.op == Op::Conv) {
      for (size_t i = 1; i < nd.in.size(); ++i)
        L.in.push_back(a.rows(p.homes[static_cast<size_t>(nd.in[i])].rows));
      L.out = {a.rows(band_rows(p, nd.out[0], lines * b.wo() * b.batch))};
    } else {  // dW one output-channel block at a time: dY's block; dW (each block's partial in
      // its own ACC rows across the bands)
      const uint32_t blocks = p.homes[static_cast<size_t>(nd.out[0])].geom.blocks(n);
      b.cout = std::min(n, b.cout);
      if (uint64_t{blocks} * conv_dw_acc_rows(b, n) > chip.acc_rows) {
        throw std::invalid_argument(
            "band_layout: the partial dW of every output block does not fit ACC");
      }
      L.in.push_back(a.rows(round_up(lines * b.wo() * b.batch, n)));
      L.out = {0, a.rows(p.homes[static_cast<size_t>(nd.out[0])].rows)};
    }
    L.scratch = a.rows(std::max(1u, conv_scratch_rows(b, chip, 0)));
    return;
  }
  // A pool's band runs one channel block at a time (channels are independent); the gradient's
  // bands are of input lines, the forward pass's of output lines.
  uint32_t x_rows = 1, y_rows = 1;
  PoolGeom one = nd.pool;
  one.c = std::min(n, one.c);
  uint32_t scratch = 1;
  const uint32_t total = band_lines_total(nd);
  for (uint32_t l0 = 0; l0 < total; l0 += lines) {
    const uint32_t l1 = std::min(total, l0 + lines);
    const LineBand lb =
        nd.op == Op::MaxPool ? out_band(nd.pool, l0, l1 - l0) : in_band(nd.pool, l0, l1);
    if (lb.oy_count == 0 || lb.h == 0) continue;
    const PoolGeom sb = pool_sub(one, lb);
    x_rows = std::max(x_rows, round_up(lb.h * sb.w * sb.batch, n));
    y_rows = std::max(y_rows, round_up(lb.oy_count * sb.wo() * sb.batch, n));
    scratch = std::max(scratch, pool_scratch_rows(sb, n));
  }
  if (nd.op == Op::MaxPool) {
    L.in = {a.rows(x_rows)};
    L.out = {a.rows(y_rows), a.rows(y_rows)};
  } else {
    L.in = {a.rows(y_rows), a.rows(y_rows)};
    L.out = {a.rows(x_rows)};
  }
  L.scratch = a.rows(scratch);
}

bool bandable(const Graph& g, const Node& n) {
  const uint32_t nn = g.chip_n;
  switch (n.op) {
    case Op::Conv:
    case Op::ConvGradW:
      // A band's input starts at a whole row of the flat (cin = 1) or blocked image.
      return !n.conv.packed() || (n.conv.wp() * n.conv.batch) % nn == 0;
    case Op::MaxPool:      // bands of output lines
    case Op::MaxPoolGrad:  // bands of input lines
      return true;
    case Op::ConvGradX:  // bands of input lines, one channel block at a time (not of 1 channel)
      return n.conv.cin % nn != 1;
    case Op::ConvPad:   // bands of source lines, copied by DMA
    case Op::ConvPool:  // bands of pooled lines (fuse.h checked the conv)
    case Op::ConvPoolGrad:
      return true;
    default:
      return false;
  }
}

ConvGeom conv_band(const ConvGeom& g, uint32_t oy0, uint32_t lines) {
  (void)oy0;
  ConvGeom b = g;
  b.h = (lines - 1) * g.sh + g.kh;
  b.w = g.wp();
  b.pad_top = b.pad_left = b.pad_bottom = b.pad_right = 0;
  return b;
}

PoolGeom pool_sub(const PoolGeom& g, const LineBand& b) {
  PoolGeom s = g;
  s.h = b.h;
  s.pad_top = b.pad_top;
  s.pad_bottom = b.pad_bottom;
  return s;
}

uint32_t band_lines_total(const Node& n) {
  if (n.op == Op::ConvPool || n.op == Op::ConvPoolGrad) return n.pool.ho();
  if (n.op == Op::ConvGradX || n.op == Op::ConvPad) return n.conv.h;
  if (n.op == Op::MaxPoolGrad) return n.pool.h;
  return n.op == Op::Conv || n.op == Op::ConvGradW ? n.conv.ho() : n.pool.ho();
}

DxBand dx_band(const ConvGeom& g, uint32_t iy0, uint32_t iy1) {
  const LineBand b = in_band(g, iy0, iy1);
  DxBand d;
  if (b.oy_count == 0) return d;  // no output line reaches these lines: their dX is +0
  d.oy0 = b.oy0;
  d.oy_count = b.oy_count;
  d.r0 = b.r0;
  d.sub = g;
  d.sub.h = b.h;
  d.sub.pad_top = b.pad_top;
  d.sub.pad_bottom = b.pad_bottom;
  return d;
}

uint32_t k_of(const Graph& g, const Node& n) {
  switch (n.op) {
    case Op::Dense:
    case Op::DenseGradW:
    case Op::DenseUpdate:
      return g.tensors[static_cast<size_t>(n.in[0])].cols;  // X's features
    case Op::DenseGradX:
      return g.tensors[static_cast<size_t>(n.out[0])].cols;
    default:
      return 0;
  }
}

uint32_t flat_rows_of(const Graph& g, const Placement& p, const Node& n) {
  (void)g;
  switch (n.op) {
    case Op::Relu:
    case Op::Add:
    case Op::ReluGrad:
    case Op::AddGrad:
    case Op::SgdUpdate:
    case Op::AdamUpdate:
      return p.homes[static_cast<size_t>(n.in[0])].rows;
    default:
      return 0;
  }
}

namespace {

// Places the operands of one node in a VMEM arena: a resident operand (Placement::vmem) takes
// no rows of the arena, its operand row is its resident copy's (step 0).
class LayoutBuilder {
 public:
  LayoutBuilder(const Graph& graph, const Placement& placement, int node, const ChipParams& chip)
      : g(graph),
        p(placement),
        nd(graph.nodes[static_cast<size_t>(node)]),
        a(placement.n, placement.vmem_lo_of(node), placement.work_rows(chip)) {
    const size_t i = static_cast<size_t>(node);
    depth = i < placement.depth.size() ? placement.depth[i] : 1;
  }
  VMat geom(int t) const { return p.homes[static_cast<size_t>(t)].geom; }
  uint32_t rows_of(int t) const { return p.homes[static_cast<size_t>(t)].rows; }
  // Tensor t's operand rows: its resident copy, else `rows` rows in `d` buffer sets.
  uint32_t place(int t, uint32_t rows, uint32_t d, std::vector<uint32_t>& steps) {
    if (p.resident(t) >= 0) {
      steps.push_back(0);
      return static_cast<uint32_t>(p.resident(t));
    }
    return sets(a, rows, d, steps);
  }
  void in(int t, uint32_t rows, uint32_t d) { L.in.push_back(place(t, rows, d, L.in_step)); }
  void out(int t, uint32_t rows, uint32_t d) { L.out.push_back(place(t, rows, d, L.out_step)); }
  uint32_t whole(int t) {
    std::vector<uint32_t> steps;
    return place(t, rows_of(t), 1, steps);
  }
  void dense(uint32_t chunk);  // Dense, DenseGradX, DenseGradW, DenseUpdate
  void flat(uint32_t chunk);   // Relu, Add, AddGrad, ReluGrad, SgdUpdate, AdamUpdate

  const Graph& g;
  const Placement& p;
  const Node& nd;
  VmemArena a;
  uint32_t depth = 1;
  NodeLayout L;
};

void LayoutBuilder::dense(uint32_t chunk) {
  const uint32_t n = p.n;
  const auto act_chunk = [&](int t) { return geom(t).pitch * chunk; };        // kb blocks of K
  const auto w_chunk = [&](int t) { return geom(t).blocks(n) * chunk * n; };  // kb*N per block
  switch (nd.op) {
    case Op::Dense:
      in(nd.in[0], act_chunk(nd.in[0]), depth);
      in(nd.in[1], w_chunk(nd.in[1]), depth);
      if (nd.in.size() > 2) in(nd.in[2], rows_of(nd.in[2]), 1);
      out(nd.out[0], rows_of(nd.out[0]), 1);
      break;
    case Op::DenseGradX:
      in(nd.in[0], rows_of(nd.in[0]), 1);
      in(nd.in[1], w_chunk(nd.in[1]), depth);
      out(nd.out[0], act_chunk(nd.out[0]), depth);
      break;
    case Op::DenseGradW:
      in(nd.in[0], act_chunk(nd.in[0]), depth);
      in(nd.in[1], rows_of(nd.in[1]), 1);
      out(nd.out[0], w_chunk(nd.out[0]), depth);
      L.scratch = a.rows(geom(nd.in[0]).pitch * chunk);
      break;
    default: {  // DenseUpdate: X chunk, dY; W, m, v (or velocity) chunks in place; state
      const bool adam = nd.in.size() == 6;
      in(nd.in[0], act_chunk(nd.in[0]), depth);
      in(nd.in[1], rows_of(nd.in[1]), 1);
      const uint32_t wrows = w_chunk(nd.in[2]);
      for (size_t i = 2; i < nd.in.size(); ++i) {
        const bool state = adam && i == 5;
        in(nd.in[i], state ? rows_of(nd.in[i]) : wrows, state ? 1 : depth);
      }
      for (size_t i = 0; i < nd.out.size(); ++i) {
        L.out.push_back(L.in[2 + i]);
        L.out_step.push_back(L.in_step[2 + i]);
      }
      // scratch: the chunk's dW, then X^T (dense_backward_weights) or the update's rows
      L.scratch = a.rows(wrows + std::max(geom(nd.in[0]).pitch * chunk, (adam ? 6 : 2) * wrows));
      break;
    }
  }
}

void LayoutBuilder::flat(uint32_t chunk) {
  switch (nd.op) {
    case Op::SgdUpdate:  // in place: the outputs are the inputs' sets
      for (int t : nd.in) in(t, chunk, depth);
      L.out = {L.in[0]};
      L.out_step = {L.in_step[0]};
      if (nd.in.size() > 2) {
        L.out.push_back(L.in[2]);
        L.out_step.push_back(L.in_step[2]);
      }
      L.scratch = a.rows(2 * chunk);
      break;
    case Op::AdamUpdate:
      for (size_t i = 0; i < 4; ++i) in(nd.in[i], chunk, depth);
      in(nd.in[4], rows_of(nd.in[4]), 1);
      L.out = {L.in[0], L.in[2], L.in[3]};
      L.out_step = {L.in_step[0], L.in_step[2], L.in_step[3]};
      L.scratch = a.rows(6 * chunk);
      break;
    default:  // Relu, Add, AddGrad, ReluGrad
      for (int t : nd.in) in(t, chunk, depth);
      out(nd.out[0], chunk, depth);
      if (nd.op == Op::ReluGrad) L.scratch = a.rows(chunk);
      break;
  }
}

void whole_layout(const Placement& p, LayoutBuilder& b, const ChipParams& chip) {
  const Node& nd = b.nd;
  for (int t : nd.in) b.L.in.push_back(b.whole(t));
  for (int t : nd.out) b.L.out.push_back(b.whole(t));
  if (nd.op == Op::Conv || nd.op == Op::ConvGradW || nd.op == Op::ConvGradX) {
    b.L.scratch = b.a.rows(std::max(1u, conv_scratch_rows(nd.conv, chip, 0)));
  } else if (nd.op == Op::MaxPool || nd.op == Op::MaxPoolGrad || nd.op == Op::AvgPoolGrad) {
    b.L.scratch = b.a.rows(pool_scratch_rows(nd.pool, p.n));
  }
}

}  // namespace

NodeLayout node_layout(const Graph& g, const Placement& p, int node, uint32_t chunk,
                       const ChipParams& chip) {
  LayoutBuilder b(g, p, node, chip);
  const Node& nd = b.nd;
  NodeLayout& L = b.L;
  switch (nd.op) {
    case Op::Dense:
    case Op::DenseGradX:
    case Op::DenseGradW:
    case Op::DenseUpdate:
      b.dense(chunk);
      break;
    case Op::BiasGrad:  // db first: rsum's checked extent (dst + inner - 1) stays inside VMEM
      b.out(nd.out[0], b.rows_of(nd.out[0]), 1);
      b.in(nd.in[0], chunk == 0 ? b.rows_of(nd.in[0]) : b.geom(nd.in[0]).blocks(p.n) * chunk, 1);
      break;
    case Op::Relu:
    case Op::Add:
    case Op::AddGrad:
    case Op::ReluGrad:
    case Op::SgdUpdate:
    case Op::AdamUpdate:
      b.flat(chunk);
      break;
    case Op::ConvPool:
    case Op::ConvPoolGrad:
      band_layout(g, p, nd, chunk != 0 ? chunk : band_lines_total(nd), chip, b.a, L);
      break;
    case Op::AllReduce:  // VMEM is all its own (allreduce.h): no layout
      break;
    case Op::AdamBegin:
      L.in = {b.whole(nd.in[0])};
      L.out = {L.in[0]};
      L.scratch = b.a.rows(4);
      break;
    case Op::Conv:
    case Op::ConvGradW:
    case Op::ConvGradX:
    case Op::ConvPad:
    case Op::MaxPool:
    case Op::MaxPoolGrad:
      if (chunk != 0) {
        band_layout(g, p, nd, chunk, chip, b.a, L);
        break;
      }
      [[fallthrough]];
    case Op::AvgPool:
    case Op::AvgPoolGrad:
    case Op::GlobalAvgPool:
    case Op::GlobalAvgPoolGrad:
      whole_layout(p, b, chip);
      break;
    case Op::SoftmaxCe:
      L.in = {b.whole(nd.in[0]), b.whole(nd.in[1]), b.whole(nd.in[2])};
      L.out = {b.whole(nd.out[0]), b.whole(nd.out[1])};
      L.scratch = b.a.rows(softmax_ce_scratch_rows(g.batch, p.n));
      break;
  }
  L.end = b.a.used_end();
  return L;
}

namespace {

// Nodes whose chunks the emitter double-buffers (Placement::depth); those updating in place.
bool streams(const Node& nd) {
  switch (nd.op) {
    case Op::Dense:
    case Op::DenseGradX:
    case Op::DenseGradW:
    case Op::Relu:
    case Op::Add:
    case Op::AddGrad:
    case Op::ReluGrad:
    case Op::SgdUpdate:
    case Op::AdamUpdate:
    case Op::DenseUpdate:
      return true;
    default:
      return false;
  }
}
bool in_place(const Node& nd) {
  return nd.op == Op::SgdUpdate || nd.op == Op::AdamUpdate || nd.op == Op::DenseUpdate;
}

// Double-buffered if that fits (a band's DMA then overlaps the previous band's compute), with
// the most output-channel blocks per pass (all if they fit), then the most pooled lines.
void place_fused(const Graph& g, Placement& p, int ni, const ChipParams& chip) {
  const Node& nd = g.nodes[static_cast<size_t>(ni)];
  const size_t i = static_cast<size_t>(ni);
  for (uint32_t depth : {2u, 1u}) {
    for (uint32_t gb = (nd.conv.cout + p.n - 1) / p.n; gb >= 1; --gb) {
      p.group[i] = gb;
      p.depth[i] = depth;
      p.chunk[i] = largest_fit(g, p, ni, band_lines_total(nd), chip);
      if (p.chunk[i] != 0) return;
    }
  }
  fail(nd, "not even one pooled line of one channel block fits VMEM (" +
               std::to_string(p.work_rows(chip)) + " rows)");
}

}  // namespace

Placement place(const Graph& g, const ChipParams& chip) {
  if (!chip.has_vmem())
    throw std::invalid_argument("place: the chip has no VMEM (use ChipParams::training)");
  Placement p;
  p.n = chip.N;
  if (g.classes > chip.N) {
    throw std::invalid_argument("place: " + std::to_string(g.classes) +
                                " classes exceed N = " + std::to_string(chip.N) +
                                " (softmax cross-entropy takes one column block)");
  }
  // Tensors no node reads or writes (the conv output and pooled tensor of a fused ConvPool,
  // their gradients) get no device memory.
  std::vector<bool> used(g.tensors.size(), false);
  for (const Node& nd : g.nodes) {
    for (int t : nd.in) used[static_cast<size_t>(t)] = true;
    for (int t : nd.out) used[static_cast<size_t>(t)] = true;
  }
  for (size_t i = g.tensors.size(); i-- > 0;) {
    const int base = g.tensors[i].view_of;
    if (used[i] && base >= 0) used[static_cast<size_t>(base)] = true;
  }
  for (size_t ti = 0; ti < g.tensors.size(); ++ti) {
    const Tensor& t = g.tensors[ti];
    Home h;
    h.geom = geometry(g, t, p.n);
    h.rows = h.geom.span(p.n);
    if (t.view_of >= 0) {  // a flattened image: the image's memory, pitch = batch
      h.geom.pitch = t.rows;
      h.rows = h.geom.span(p.n);
      h.addr = p.homes[static_cast<size_t>(t.view_of)].addr;
      p.homes.push_back(h);
      continue;
    }
    if (!used[ti] && ti != static_cast<size_t>(g.input)) {
      p.homes.push_back(h);  // addr 0: never read or written
      continue;
    }
    h.addr = p.device_bytes;
    const uint64_t end = uint64_t{h.addr} + uint64_t{h.rows} * 4 * p.n;
    if (end > 0x40000000u)
      throw std::invalid_argument("place: device memory beyond 1 GiB for '" + t.name + "'");
    p.device_bytes = static_cast<uint32_t>((end + kAlign - 1) / kAlign * kAlign);
    p.homes.push_back(h);
  }
  p.vmem.assign(g.tensors.size(), -1);
  choose_chunks(g, p, chip);
  return p;
}

void choose_chunks(const Graph& g, Placement& p, const ChipParams& chip) {
  p.chunk.assign(g.nodes.size(), 0);
  p.group.assign(g.nodes.size(), 0);
  p.depth.assign(g.nodes.size(), 1);
  for (size_t i = 0; i < g.nodes.size(); ++i) choose_node_chunks(g, p, static_cast<int>(i), chip);
}

void choose_node_chunks(const Graph& g, Placement& p, int ni, const ChipParams& chip) {
  const size_t i = static_cast<size_t>(ni);
  p.chunk[i] = 0;
  p.group[i] = 0;
  p.depth[i] = 1;
  const Node& nd = g.nodes[i];
  if (nd.op == Op::ConvPool || nd.op == Op::ConvPoolGrad) {
    place_fused(g, p, ni, chip);
    return;
  }
  if (nd.op == Op::ConvGradW && g.batch % p.n != 0) {
    fail(nd, "the batch (" + std::to_string(g.batch) + ") must be a multiple of N = " +
                 std::to_string(p.n) + " for a convolution's weight gradient");
  }
  uint32_t most = acc_limit_blocks(g, p, nd, chip);
  if (most == 0) most = flat_rows_of(g, p, nd);
  if (nd.op == Op::BiasGrad) {
    // Whole, bias_grad's rsum steps over dY's blocks with its pitch (an 11-bit field); in
    // chunks, the chunk's rows are the step.
    const VMat& dy = p.homes[static_cast<size_t>(nd.in[0])].geom;
    if (dy.pitch > kMaxVecOuterStride || !fits(g, p, ni, 0, chip))
      most = std::min(dy.rows, kMaxVecOuterStride);
  }
  if (most == 0 && bandable(g, nd) && !fits(g, p, ni, 0, chip)) most = band_lines_total(nd);
  if (most == 0) {
    if (!fits(g, p, ni, 0, chip)) {
      fail(nd, "its operands do not fit VMEM (" + std::to_string(p.work_rows(chip)) + " rows" +
                   (bandable(g, nd) ? ")" : "; this node does not run in bands)"));
    }
    return;
  }
  p.chunk[i] = largest_fit(g, p, ni, most, chip);
  if (p.chunk[i] == 0) fail(nd, "not even one chunk of its operands fits VMEM");
  if (p.chunk[i] < most && streams(nd)) {  // several chunks: double-buffer them if that fits
    p.depth[i] = in_place(nd) ? 3 : 2;     // in place: a set is free again two chunks later
    const uint32_t c = largest_fit(g, p, ni, most, chip);
    if (c != 0) {
      p.chunk[i] = c;
    } else {
      p.depth[i] = 1;
    }
  }
}

}  // namespace tpu::train::compiler

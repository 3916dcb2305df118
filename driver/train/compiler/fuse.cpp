// SPDX-License-Identifier: Apache-2.0
#include "compiler/fuse.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/placement.h"

namespace tpu::train::compiler {

namespace {

// The nodes of one fusion: forward conv, pool, relu (-1: none); backward nodes of them.
struct Group {
  int conv = -1, pool = -1, relu = -1;
  int relu_grad = -1, pool_grad = -1, conv_grad_w = -1, bias_grad = -1;
};

std::vector<int> forward_readers(const Graph& g, int t) {
  std::vector<int> r;
  for (int i : g.readers(t))
    if (g.nodes[static_cast<size_t>(i)].phase == Phase::Forward) r.push_back(i);
  return r;
}

bool pool_tiles_conv(const Node& c, const Node& p) {
  const PoolGeom& q = p.pool;
  return q.kh == q.sh && q.kw == q.sw && q.pad_top == 0 && q.pad_left == 0 && q.pad_bottom == 0 &&
         q.pad_right == 0 && c.conv.ho() == q.ho() * q.kh;
}

// The group of conv node `ci`, or conv = -1 when it does not fuse.
Group match(const Graph& g, int ci) {
  Group grp;
  const Node& c = g.nodes[static_cast<size_t>(ci)];
  if (c.op != Op::Conv || c.in[0] != g.input || g.batch % g.chip_n != 0) return grp;
  if (c.conv.packed() && (c.conv.wp() * c.conv.batch) % g.chip_n != 0) return grp;
  const std::vector<int> pr = forward_readers(g, c.out[0]);
  if (pr.size() != 1) return grp;
  const Node& p = g.nodes[static_cast<size_t>(pr[0])];
  if (p.op != Op::MaxPool || !pool_tiles_conv(c, p)) return grp;
  grp.pool = pr[0];
  const std::vector<int> rr = forward_readers(g, p.out[0]);
  if (rr.size() == 1 && g.nodes[static_cast<size_t>(rr[0])].op == Op::Relu && p.out[0] != g.logits)
    grp.relu = rr[0];
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.phase != Phase::Backward) continue;
    const int id = static_cast<int>(i);
    if (n.layer == ci && n.op == Op::ConvGradW) grp.conv_grad_w = id;
    if (n.layer == ci && n.op == Op::BiasGrad) grp.bias_grad = id;
    if (n.layer == ci && n.op == Op::ConvGradX) return Group{};
    if (n.layer == grp.pool && n.op == Op::MaxPoolGrad) grp.pool_grad = id;
    if (grp.relu >= 0 && n.layer == grp.relu && n.op == Op::ReluGrad) grp.relu_grad = id;
  }
  const bool has_bias = c.in.size() > 2;
  if (grp.conv_grad_w < 0 || grp.pool_grad < 0 || has_bias != (grp.bias_grad >= 0) ||
      (grp.relu >= 0 && grp.relu_grad < 0))
    return Group{};
  grp.conv = ci;
  return grp;
}

// Drops the nodes marked in `drop`, renumbering layers (a dropped layer becomes `fused`'s, by
// its old index).
void drop_nodes(Graph& g, const std::vector<bool>& drop, int fused_old) {
  std::vector<int> index(g.nodes.size(), -1);
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (drop[i]) continue;
    index[i] = static_cast<int>(kept.size());
    kept.push_back(g.nodes[i]);
  }
  const int fused = fused_old >= 0 ? index[static_cast<size_t>(fused_old)] : -1;
  for (Node& n : kept) {
    if (n.layer < 0) continue;
    const int l = index[static_cast<size_t>(n.layer)];
    n.layer = l >= 0 ? l : fused;  // the dropped pool / relu layers are the fused node's
  }
  g.nodes = std::move(kept);
}

// Rewrites one group: the conv node becomes ConvPool, the first of its backward nodes
// ConvPoolGrad; the others are dropped (layer indices renumbered).
void rewrite(Graph& g, const Group& grp) {
  const Node c = g.nodes[static_cast<size_t>(grp.conv)];
  const Node p = g.nodes[static_cast<size_t>(grp.pool)];
  const bool relu = grp.relu >= 0;
  const int y = relu ? g.nodes[static_cast<size_t>(grp.relu)].out[0] : p.out[0];
  const int argmax = p.out[1];
  // The gradient of Y: what ReluGrad (or MaxPoolGrad) reads.
  const int dy = relu ? g.nodes[static_cast<size_t>(grp.relu_grad)].in[1]
                      : g.nodes[static_cast<size_t>(grp.pool_grad)].in[1];
  Node f = c;
  f.op = Op::ConvPool;
  f.onnx_op = c.onnx_op + "+" + p.onnx_op +
              (relu ? "+" + g.nodes[static_cast<size_t>(grp.relu)].onnx_op : "");
  f.out = {y, argmax};
  f.pool = p.pool;
  f.relu = relu;
  Node b =
      make_node(Op::ConvPoolGrad, c.name, f.onnx_op, Phase::Backward, c.layer,
                {c.in[0], argmax, y, dy}, {g.nodes[static_cast<size_t>(grp.conv_grad_w)].out[0]});
  if (grp.bias_grad >= 0) b.out.push_back(g.nodes[static_cast<size_t>(grp.bias_grad)].out[0]);
  b.conv = c.conv;
  b.pool = p.pool;
  b.relu = relu;
  const int first_bwd = relu ? grp.relu_grad : grp.pool_grad;
  std::vector<bool> drop(g.nodes.size(), false);
  for (int i : {grp.pool, grp.relu, grp.pool_grad, grp.conv_grad_w, grp.bias_grad, grp.relu_grad})
    if (i >= 0 && i != first_bwd) drop[static_cast<size_t>(i)] = true;
  g.nodes[static_cast<size_t>(grp.conv)] = f;
  g.nodes[static_cast<size_t>(first_bwd)] = b;
  drop_nodes(g, drop, grp.conv);
}

}  // namespace

int fuse_dense_update(Graph& g) {
  int fused = 0;
  for (size_t ui = 0; ui < g.nodes.size(); ++ui) {
    const Node u = g.nodes[ui];
    if (u.op != Op::AdamUpdate && u.op != Op::SgdUpdate) continue;
    const int grad = u.in[1];
    const std::vector<int> readers = g.readers(grad);
    if (readers.size() != 1) continue;
    int producer = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int t : g.nodes[i].out)
        if (t == grad) producer = static_cast<int>(i);
    if (producer < 0 || g.nodes[static_cast<size_t>(producer)].op != Op::DenseGradW) continue;
    const Node& d = g.nodes[static_cast<size_t>(producer)];
    Node f = u;
    f.op = Op::DenseUpdate;
    f.in = {d.in[0], d.in[1]};
    for (size_t i = 0; i < u.in.size(); ++i)
      if (i != 1) f.in.push_back(u.in[i]);
    g.nodes[ui] = f;
    std::vector<bool> drop(g.nodes.size(), false);
    drop[static_cast<size_t>(producer)] = true;
    drop_nodes(g, drop, -1);
    ui = 0;  // indices moved: scan again (fused nodes are not updates any more)
    ++fused;
  }
  return fused;
}

int fuse_conv_pool(Graph& g) {
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Group grp = match(g, static_cast<int>(i));
    if (grp.conv < 0) continue;
    rewrite(g, grp);
    ++fused;
  }
  return fused;
}

int fuse_conv_pool(Graph& g, const ChipParams& chip) {
  Graph fused = g;
  const int count = fuse_conv_pool(fused);
  if (count == 0) return 0;
  try {
    place(fused, chip);
  } catch (const std::invalid_argument&) {
    try {
      place(g, chip);
      return 0;  // only the unfused graph fits
    } catch (const std::invalid_argument&) {
      // neither fits: the fused graph's error is the one place() reports
    }
  }
  g = std::move(fused);
  return count;
}

}  // namespace tpu::train::compiler

// SPDX-License-Identifier: Apache-2.0
#include "compiler/overlap.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/residency.h"
#include "kernels.h"

namespace tpu::train::compiler {

namespace {

int memory_of(const Graph& g, int t) {
  while (g.tensors[static_cast<size_t>(t)].view_of >= 0)
    t = g.tensors[static_cast<size_t>(t)].view_of;
  return t;
}

bool touches(const Graph& g, const std::vector<int>& ts, int t) {
  return std::any_of(ts.begin(), ts.end(), [&](int u) { return memory_of(g, u) == t; });
}

// The ACC rows the backward node's dW partial sums take (emit.cpp conv_pool_grad: output block
// cb's at cb * conv_dw_acc_rows of a one-block band).
uint32_t main_acc_rows(const Node& nd, uint32_t n) {
  ConvGeom one = conv_band(nd.conv, 0, nd.pool.kh);
  one.cout = n;
  return (nd.conv.cout + n - 1) / n * conv_dw_acc_rows(one, n);
}

// The step order with `side` right after `main`: the nodes between them that do not depend on
// main (nor on a node staying after it) go ahead of main, the others after side. Empty when
// side depends on main or on a node that stays after main.
std::vector<int> reorder(const Graph& g, const std::vector<int>& step, size_t mi, size_t si) {
  const Node& main = g.nodes[static_cast<size_t>(step[mi])];
  const Node& side = g.nodes[static_cast<size_t>(step[si])];
  if (nodes_conflict(g, main, side)) return {};
  std::vector<int> ahead, after;
  for (size_t k = mi + 1; k < si; ++k) {
    const Node& nd = g.nodes[static_cast<size_t>(step[k])];
    bool stays = nodes_conflict(g, nd, main);
    for (int a : after) stays = stays || nodes_conflict(g, nd, g.nodes[static_cast<size_t>(a)]);
    if (stays && nodes_conflict(g, nd, side)) return {};
    (stays ? after : ahead).push_back(step[k]);
  }
  std::vector<int> r(step.begin(), step.begin() + static_cast<std::ptrdiff_t>(mi));
  r.insert(r.end(), ahead.begin(), ahead.end());
  r.push_back(step[mi]);
  r.push_back(step[si]);
  r.insert(r.end(), after.begin(), after.end());
  r.insert(r.end(), step.begin() + static_cast<std::ptrdiff_t>(si) + 1, step.end());
  return r;
}

// Gives `side` the VMEM rows above main's layout and the upper half of ACC, and chooses its
// chunks there; false (p unchanged) when its chunk would be less than half of `alone`.
bool place_beside(const Graph& g, Placement& p, int main, int side, uint32_t alone,
                  const ChipParams& chip) {
  Placement q = p;
  q.vmem_lo.resize(g.nodes.size(), 0);
  q.acc_lo.resize(g.nodes.size(), 0);
  q.beside.resize(g.nodes.size(), -1);
  try {
    const NodeLayout lm = node_layout(g, q, main, q.chunk[static_cast<size_t>(main)], chip);
    q.vmem_lo[static_cast<size_t>(side)] = lm.end;
    q.acc_lo[static_cast<size_t>(side)] = chip.acc_rows / 2;
    choose_node_chunks(g, q, side, chip);
  } catch (const std::invalid_argument&) {
    return false;
  }
  if (2 * q.chunk[static_cast<size_t>(side)] < alone) return false;
  q.beside[static_cast<size_t>(side)] = main;
  p = std::move(q);
  return true;
}

// The position of the DenseGradX nearest before main (at mi) in `order`, when none of the
// nodes between them conflicts with it (they go ahead of it); `mi` when there is none.
size_t lead_position(const Graph& g, const std::vector<int>& order, size_t mi) {
  size_t li = mi;
  while (li > 0 && g.nodes[static_cast<size_t>(order[li - 1])].op != Op::DenseGradX) --li;
  if (li == 0) return mi;
  --li;
  const Node& ln = g.nodes[static_cast<size_t>(order[li])];
  for (size_t k = li + 1; k < mi; ++k) {
    if (nodes_conflict(g, g.nodes[static_cast<size_t>(order[k])], ln)) return mi;
  }
  return li;
}

// Makes `lead` (a DenseGradX) lead main's merged stream with `side` beside it: its ACC below
// the side's, its layout below the side's VMEM rows (its chunk the largest that fits there).
// False (p unchanged) when even one K block does not fit.
bool place_lead(const Graph& g, Placement& p, int lead, int main, int side,
                const ChipParams& chip) {
  const size_t li = static_cast<size_t>(lead);
  Placement q = p;
  q.acc_hi.resize(g.nodes.size(), 0);
  q.lead.resize(g.nodes.size(), -1);
  q.acc_hi[li] = q.acc_lo_of(side);
  if (g.batch > q.acc_hi[li]) return false;
  const uint32_t top = q.vmem_lo_of(side);
  auto fits = [&](uint32_t chunk) {
    try {
      return node_layout(g, q, lead, chunk, chip).end <= top;
    } catch (const std::invalid_argument&) {
      return false;
    }
  };
  uint32_t c = q.chunk[li] != 0 ? q.chunk[li] : (k_of(g, g.nodes[li]) + q.n - 1) / q.n;
  if (!fits(c)) {
    uint32_t lo = 0, hi = c;  // fits(lo) (or lo = 0), !fits(hi)
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    if (lo == 0) return false;
    c = lo;
  }
  q.chunk[li] = c;
  q.lead[static_cast<size_t>(main)] = lead;
  p = std::move(q);
  return true;
}

// `order` with the node at li right before the one at mi: those between them go ahead of it.
std::vector<int> lead_order(const std::vector<int>& order, size_t li, size_t mi) {
  std::vector<int> r(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(li));
  r.insert(r.end(), order.begin() + static_cast<std::ptrdiff_t>(li) + 1,
           order.begin() + static_cast<std::ptrdiff_t>(mi));
  r.push_back(order[li]);
  r.insert(r.end(), order.begin() + static_cast<std::ptrdiff_t>(mi), order.end());
  return r;
}

}  // namespace

bool nodes_conflict(const Graph& g, const Node& a, const Node& b) {
  for (int t : a.out) {
    const int m = memory_of(g, t);
    if (touches(g, b.in, m) || touches(g, b.out, m)) return true;
  }
  for (int t : b.out) {
    if (touches(g, a.in, memory_of(g, t))) return true;
  }
  return false;
}

std::vector<Overlap> overlap_updates(const Graph& g, Placement& p, Schedule& s,
                                     const ChipParams& chip, bool resident, bool lead) {
  std::vector<Overlap> pairs;
  if (g.pod.chips() > 1) return pairs;
  for (size_t si = 0; si < s.step.size(); ++si) {
    const int side = s.step[si];
    const Node& sn = g.nodes[static_cast<size_t>(side)];
    if (sn.op != Op::DenseUpdate || p.beside_of(side) >= 0) continue;
    size_t mi = si;
    while (mi > 0 && g.nodes[static_cast<size_t>(s.step[mi - 1])].op != Op::ConvPoolGrad) --mi;
    if (mi == 0) continue;
    --mi;
    const int main = s.step[mi];
    const Node& mn = g.nodes[static_cast<size_t>(main)];
    const bool taken =
        std::any_of(pairs.begin(), pairs.end(), [&](const Overlap& o) { return o.main == main; });
    if (taken || main_acc_rows(mn, p.n) > chip.acc_rows / 2) continue;  // one side per main
    std::vector<int> order = reorder(g, s.step, mi, si);
    if (order.empty()) continue;
    const uint32_t alone = p.chunk[static_cast<size_t>(side)];
    bool placed = place_beside(g, p, main, side, alone, chip);
    if (!placed && resident) {
      // Make room: the update's own optimizer state streams through its chunks instead.
      // DenseUpdate's inputs: X, dY, W, then m, v and Adam's rows, or the velocity.
      const size_t end = sn.in.size() == 6 ? 5 : sn.in.size();
      std::vector<int> state(sn.in.begin() + 3, sn.in.begin() + static_cast<std::ptrdiff_t>(end));
      Placement q = p;
      place_resident(g, q, chip, state);
      // every other node keeps its chunks (the rows freed are the side's)
      q.chunk = p.chunk;
      q.group = p.group;
      q.depth = p.depth;
      q.vmem_lo = p.vmem_lo;
      q.acc_lo = p.acc_lo;
      q.beside = p.beside;
      placed = place_beside(g, q, main, side, alone, chip);
      if (placed) p = std::move(q);
    }
    if (!placed) continue;
    Overlap o{main, side};
    const size_t pm =
        static_cast<size_t>(std::find(order.begin(), order.end(), main) - order.begin());
    const size_t li = lead ? lead_position(g, order, pm) : pm;
    if (li != pm && place_lead(g, p, order[li], main, side, chip)) {
      o.lead = order[li];
      order = lead_order(order, li, pm);
    }
    s.step = std::move(order);
    pairs.push_back(o);
  }
  check_order(g, s.step, "step");
  return pairs;
}

std::vector<int> place_x_in_vmem(const Graph& g, Placement& p, const std::vector<int>& step,
                                 const ChipParams& chip) {
  std::vector<int> kept;
  for (size_t k = 1; k < step.size(); ++k) {
    const int id = step[k], prev = step[k - 1];
    const Node& nd = g.nodes[static_cast<size_t>(id)];
    const Node& pn = g.nodes[static_cast<size_t>(prev)];
    if (nd.op != Op::Dense || pn.op != Op::ConvPool || p.vmem_lo_of(id) != 0 ||
        p.beside_of(prev) >= 0 || memory_of(g, nd.in[0]) != memory_of(g, pn.out[0])) {
      continue;
    }
    // X (the Flatten view) has Y's image: K chunk c of kb blocks is Y's column block c
    const Home& x = p.homes[static_cast<size_t>(nd.in[0])];
    const Home& y = p.homes[static_cast<size_t>(pn.out[0])];
    if (x.addr != y.addr || y.geom.rows != y.geom.pitch || x.geom.pitch == 0 ||
        y.geom.pitch % x.geom.pitch != 0 ||
        x.geom.blocks(p.n) != y.geom.blocks(p.n) * (y.geom.pitch / x.geom.pitch)) {
      continue;
    }
    Placement q = p;
    q.vmem_lo.resize(g.nodes.size(), 0);
    q.x_kept.resize(g.nodes.size(), -1);
    q.chunk[static_cast<size_t>(id)] = y.geom.pitch / x.geom.pitch;
    try {
      q.vmem_lo[static_cast<size_t>(id)] =
          node_layout(g, q, prev, q.chunk[static_cast<size_t>(prev)], chip).end;
      node_layout(g, q, id, q.chunk[static_cast<size_t>(id)], chip);  // throws if it won't fit
    } catch (const std::invalid_argument&) {
      continue;
    }
    q.x_kept[static_cast<size_t>(id)] = prev;
    q.x_kept[static_cast<size_t>(prev)] = id;
    p = std::move(q);
    kept.push_back(id);
  }
  return kept;
}

}  // namespace tpu::train::compiler

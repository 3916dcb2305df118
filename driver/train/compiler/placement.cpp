// SPDX-License-Identifier: Apache-2.0
#include "compiler/placement.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels.h"

namespace tpu::train::compiler {

namespace {

constexpr uint32_t kAlign = 64;             // bytes between homes
constexpr uint32_t kMaxMatmulRows = 4095;   // matmul_bf16 inner count

VMat geometry(const Graph& g, const Tensor& t, uint32_t n) {
  switch (t.kind) {
    case TensorKind::Labels: {
      const uint32_t r = (g.batch + n - 1) / n;  // N int32 labels per row
      return VMat{0, r, n, r};
    }
    case TensorKind::AdamState: return VMat{0, AdamState::kRows, 1, AdamState::kRows};
    default: break;
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
uint32_t acc_limit_blocks(const Graph& g, const Placement& p, const Node& nd, const ChipParams& chip) {
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
      need(m <= kMaxMatmulRows && m <= chip.acc_rows, "the batch does not fit ACC");
      return kb;
    case Op::DenseGradW:
      need(chip.acc_rows >= n, "not one block of K fits ACC");
      return std::min({kb, chip.acc_rows / n, kMaxMatmulRows / n});
    default: return 0;
  }
}

}  // namespace

uint32_t k_of(const Graph& g, const Node& n) {
  switch (n.op) {
    case Op::Dense:
    case Op::DenseGradW: return g.tensors[static_cast<size_t>(n.in[0])].cols;  // X's features
    case Op::DenseGradX: return g.tensors[static_cast<size_t>(n.out[0])].cols;
    default: return 0;
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
    case Op::AdamUpdate: return p.homes[static_cast<size_t>(n.in[0])].rows;
    default: return 0;
  }
}

NodeLayout node_layout(const Graph& g, const Placement& p, int node, uint32_t chunk,
                       const ChipParams& chip) {
  const uint32_t n = p.n;
  VmemArena a(n, 0, chip.vmem_rows);
  const Node& nd = g.nodes[static_cast<size_t>(node)];
  auto geom = [&](int t) { return p.homes[static_cast<size_t>(t)].geom; };
  auto whole = [&](int t) { return a.rows(p.homes[static_cast<size_t>(t)].rows); };
  auto act_chunk = [&](int t) { return a.rows(geom(t).pitch * chunk); };  // kb blocks of K
  auto w_chunk = [&](int t) { return a.rows(geom(t).blocks(n) * chunk * n); };  // kb*N rows per block
  NodeLayout L;
  switch (nd.op) {
    case Op::Dense:
      L.in = {act_chunk(nd.in[0]), w_chunk(nd.in[1])};
      if (nd.in.size() > 2) L.in.push_back(whole(nd.in[2]));
      L.out = {whole(nd.out[0])};
      break;
    case Op::DenseGradX:
      L.in = {whole(nd.in[0]), w_chunk(nd.in[1])};
      L.out = {act_chunk(nd.out[0])};
      break;
    case Op::DenseGradW:
      L.in = {act_chunk(nd.in[0]), whole(nd.in[1])};
      L.out = {w_chunk(nd.out[0])};
      L.scratch = a.rows(geom(nd.in[0]).pitch * chunk);
      break;
    case Op::BiasGrad:
      L.in = {whole(nd.in[0])};
      L.out = {whole(nd.out[0])};
      break;
    case Op::Relu:
    case Op::Add:
    case Op::AddGrad:
    case Op::ReluGrad:
      for (size_t i = 0; i < nd.in.size(); ++i) L.in.push_back(a.rows(chunk));
      L.out = {a.rows(chunk)};
      if (nd.op == Op::ReluGrad) L.scratch = a.rows(chunk);
      break;
    case Op::SgdUpdate:
      for (size_t i = 0; i < nd.in.size(); ++i) L.in.push_back(a.rows(chunk));
      L.out = {L.in[0]};
      if (nd.in.size() > 2) L.out.push_back(L.in[2]);
      L.scratch = a.rows(2 * chunk);
      break;
    case Op::AdamUpdate:
      for (size_t i = 0; i < 4; ++i) L.in.push_back(a.rows(chunk));
      L.in.push_back(whole(nd.in[4]));
      L.out = {L.in[0], L.in[2], L.in[3]};
      L.scratch = a.rows(6 * chunk);
      break;
    case Op::AdamBegin:
      L.in = {whole(nd.in[0])};
      L.out = {L.in[0]};
      L.scratch = a.rows(4);
      break;
    case Op::SoftmaxCe:
      L.in = {whole(nd.in[0]), whole(nd.in[1]), whole(nd.in[2])};
      L.out = {whole(nd.out[0]), whole(nd.out[1])};
      L.scratch = a.rows(softmax_ce_scratch_rows(g.batch, n));
      break;
  }
  L.end = a.used_end();
  return L;
}

Placement place(const Graph& g, const ChipParams& chip) {
  if (!chip.has_vmem()) throw std::invalid_argument("place: the chip has no VMEM (use ChipParams::training)");
  Placement p;
  p.n = chip.N;
  if (g.classes > chip.N) {
    throw std::invalid_argument("place: " + std::to_string(g.classes) + " classes exceed N = " +
                                std::to_string(chip.N) + " (softmax cross-entropy takes one column block)");
  }
  for (const Tensor& t : g.tensors) {
    Home h;
    h.geom = geometry(g, t, p.n);
    h.rows = h.geom.span(p.n);
    h.addr = p.device_bytes;
    const uint64_t end = uint64_t{h.addr} + uint64_t{h.rows} * 4 * p.n;
    if (end > 0x40000000u) throw std::invalid_argument("place: device memory beyond 1 GiB for '" + t.name + "'");
    p.device_bytes = static_cast<uint32_t>((end + kAlign - 1) / kAlign * kAlign);
    p.homes.push_back(h);
  }
  p.chunk.assign(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& nd = g.nodes[i];
    const int ni = static_cast<int>(i);
    uint32_t most = acc_limit_blocks(g, p, nd, chip);
    if (most == 0) most = flat_rows_of(g, p, nd);
    if (most == 0) {
      if (!fits(g, p, ni, 0, chip)) fail(nd, "its operands do not fit VMEM");
      continue;
    }
    p.chunk[i] = largest_fit(g, p, ni, most, chip);
    if (p.chunk[i] == 0) fail(nd, "not even one chunk of its operands fits VMEM");
  }
  return p;
}

}  // namespace tpu::train::compiler

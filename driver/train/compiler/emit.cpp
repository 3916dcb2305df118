// SPDX-License-Identifier: Apache-2.0
#include "compiler/emit.h"

#include <algorithm>

#include "kernels.h"

namespace tpu::train::compiler {

namespace {

class Emitter {
 public:
  Emitter(const Graph& g, const Placement& p, const TrainOptions& o, const ChipParams& chip,
          uint32_t base)
      : g_(g), p_(p), o_(o), chip_(chip), base_(base), n_(chip.N), pb_(chip) {
    pb_.set_host_ranges({HostRange{base, p.device_bytes, "training device memory"}});
  }
  void node(int id);
  Emitted finish() {
    out_.program = pb_.finish();
    return std::move(out_);
  }
  size_t size() const { return pb_.size(); }
  Emitted out_;

 private:
  const Home& home(int t) const { return p_.homes[static_cast<size_t>(t)]; }
  uint32_t addr(int t, uint32_t row) const { return base_ + home(t).addr + row * 4 * n_; }
  // `rows` VMEM rows at `vmem` <-> tensor t's image from image row `row`.
  void in(int t, uint32_t vmem, uint32_t rows, uint32_t row = 0) { pb_.read_vmem(vmem, rows, addr(t, row)); }
  void out(int t, uint32_t vmem, uint32_t rows, uint32_t row = 0) { pb_.write_vmem(vmem, rows, addr(t, row)); }
  VMat at(int t, uint32_t base) const {
    VMat m = home(t).geom;
    m.base = base;
    return m;
  }
  // Rows kc (from K row k0) of weight-like tensor t, all its column blocks: VMat at `base`.
  VMat w_chunk(int t, uint32_t base, uint32_t k0, uint32_t kc, bool load);
  void store_w_chunk(int t, const VMat& c, uint32_t k0);
  void dense(const Node& nd, const NodeLayout& L, uint32_t kb);
  void dense_grad_x(const Node& nd, const NodeLayout& L, uint32_t kb);
  void dense_grad_w(const Node& nd, const NodeLayout& L, uint32_t kb);
  void flat(const Node& nd, const NodeLayout& L, uint32_t chunk);
  void flat_chunk(const Node& nd, const NodeLayout& L, uint32_t r0, uint32_t rc);
  void softmax_ce(const Node& nd, const NodeLayout& L);

  const Graph& g_;
  const Placement& p_;
  const TrainOptions& o_;
  const ChipParams& chip_;
  uint32_t base_, n_;
  ProgramBuilder pb_;
};

VMat Emitter::w_chunk(int t, uint32_t base, uint32_t k0, uint32_t kc, bool load) {
  const VMat w = home(t).geom;
  const VMat c{base, kc, w.cols, round_up(kc, n_)};
  if (load) {
    for (uint32_t nt = 0; nt < w.blocks(n_); ++nt) in(t, c.block(nt), c.pitch, nt * w.pitch + k0);
  }
  return c;
}

void Emitter::store_w_chunk(int t, const VMat& c, uint32_t k0) {
  const VMat w = home(t).geom;
  for (uint32_t nt = 0; nt < w.blocks(n_); ++nt) out(t, c.block(nt), c.pitch, nt * w.pitch + k0);
}

// Chunks of kb column blocks of K: [first block, blocks, K columns from, columns].
struct KChunk {
  uint32_t b0, blocks, k0, cols;
};
std::vector<KChunk> k_chunks(uint32_t k, uint32_t kb, uint32_t n) {
  std::vector<KChunk> r;
  const uint32_t total = (k + n - 1) / n;
  for (uint32_t b = 0; b < total; b += kb) {
    const uint32_t blocks = std::min(kb, total - b);
    r.push_back(KChunk{b, blocks, b * n, std::min(blocks * n, k - b * n)});
  }
  return r;
}

void Emitter::dense(const Node& nd, const NodeLayout& L, uint32_t kb) {
  const int x = nd.in[0], w = nd.in[1], y = nd.out[0];
  const uint32_t pitch = home(x).geom.pitch;
  bool first = true;
  for (const KChunk& c : k_chunks(home(x).geom.cols, kb, n_)) {
    const VMat xc{L.in[0], home(x).geom.rows, c.cols, pitch};
    in(x, xc.base, pitch * c.blocks, pitch * c.b0);
    const VMat wc = w_chunk(w, L.in[1], c.k0, c.cols, true);
    dense_forward_partial(pb_, xc, wc, 0, !first);
    first = false;
  }
  VMat bias;
  if (nd.in.size() > 2) {
    bias = at(nd.in[2], L.in[2]);
    in(nd.in[2], bias.base, home(nd.in[2]).rows);
  }
  dense_forward_finish(pb_, 0, nd.in.size() > 2 ? &bias : nullptr, at(y, L.out[0]));
  out(y, L.out[0], home(y).rows);
}

void Emitter::dense_grad_x(const Node& nd, const NodeLayout& L, uint32_t kb) {
  const int dy = nd.in[0], w = nd.in[1], dx = nd.out[0];
  in(dy, L.in[0], home(dy).rows);
  const uint32_t pitch = home(dx).geom.pitch;
  for (const KChunk& c : k_chunks(home(dx).geom.cols, kb, n_)) {
    const VMat wc = w_chunk(w, L.in[1], c.k0, c.cols, true);
    const VMat dxc{L.out[0], home(dx).geom.rows, c.cols, pitch};
    dense_backward_input(pb_, at(dy, L.in[0]), wc, dxc, 0);
    clear_padding_rows(pb_, dxc);
    out(dx, dxc.base, pitch * c.blocks, pitch * c.b0);
  }
}

void Emitter::dense_grad_w(const Node& nd, const NodeLayout& L, uint32_t kb) {
  const int x = nd.in[0], dy = nd.in[1], dw = nd.out[0];
  in(dy, L.in[1], home(dy).rows);
  const uint32_t pitch = home(x).geom.pitch;
  for (const KChunk& c : k_chunks(home(x).geom.cols, kb, n_)) {
    const VMat xc{L.in[0], home(x).geom.rows, c.cols, pitch};
    in(x, xc.base, pitch * c.blocks, pitch * c.b0);
    const VMat dwc = w_chunk(dw, L.out[0], c.k0, c.cols, false);
    dense_backward_weights(pb_, xc, at(dy, L.in[1]), dwc, L.scratch, 0);
    store_w_chunk(dw, dwc, c.k0);
  }
}

void Emitter::flat_chunk(const Node& nd, const NodeLayout& L, uint32_t r0, uint32_t rc) {
  const bool adam = nd.op == Op::AdamUpdate;
  for (size_t i = 0; i < nd.in.size(); ++i) {
    if (adam && i == 4) {
      in(nd.in[i], L.in[i], AdamState::kRows);
    } else {
      in(nd.in[i], L.in[i], rc, r0);
    }
  }
  const VMat a{L.in[0], rc, n_, rc};
  switch (nd.op) {
    case Op::Relu: relu_forward(pb_, a, VMat{L.out[0], rc, n_, rc}); break;
    case Op::ReluGrad:
      relu_backward(pb_, a, VMat{L.in[1], rc, n_, rc}, VMat{L.out[0], rc, n_, rc}, L.scratch);
      break;
    case Op::Add:
    case Op::AddGrad: pb_.vop(VecFunc::FAdd, L.out[0], L.in[0], L.in[1], rc); break;
    case Op::SgdUpdate:
      sgd_update(pb_, SgdParams{o_.lr, o_.momentum, o_.weight_decay}, L.in[0], L.in[1],
                 nd.in.size() > 2 ? L.in[2] : 0, rc, L.scratch);
      break;
    case Op::AdamUpdate: {
      const AdamParams h{o_.lr, o_.beta1, o_.beta2, o_.eps, o_.weight_decay};
      adam_update(pb_, h, AdamState{L.in[4]}, L.in[0], L.in[1], L.in[2], L.in[3], rc, L.scratch);
      break;
    }
    default: break;
  }
  for (size_t i = 0; i < nd.out.size(); ++i) out(nd.out[i], L.out[i], rc, r0);
}

void Emitter::flat(const Node& nd, const NodeLayout& L, uint32_t chunk) {
  const uint32_t total = home(nd.in[0]).rows;
  for (uint32_t r0 = 0; r0 < total; r0 += chunk) flat_chunk(nd, L, r0, std::min(chunk, total - r0));
}

void Emitter::softmax_ce(const Node& nd, const NodeLayout& L) {
  for (size_t i = 0; i < 3; ++i) in(nd.in[i], L.in[i], home(nd.in[i]).rows);
  SoftmaxCe k;
  k.logits = at(nd.in[0], L.in[0]);
  k.labels = L.in[1];
  k.pad_row = L.in[2];
  k.dlogits = at(nd.out[0], L.out[0]);
  k.loss = L.out[1];
  k.scratch = L.scratch;
  softmax_cross_entropy(pb_, k);
  clear_padding_rows(pb_, k.dlogits);
  for (size_t i = 0; i < 2; ++i) out(nd.out[i], L.out[i], home(nd.out[i]).rows);
}

void Emitter::node(int id) {
  const Node& nd = g_.nodes[static_cast<size_t>(id)];
  const uint32_t chunk = p_.chunk[static_cast<size_t>(id)];
  const NodeLayout L = node_layout(g_, p_, id, chunk, chip_);
  const size_t begin = pb_.size();
  switch (nd.op) {
    case Op::Dense: dense(nd, L, chunk); break;
    case Op::DenseGradX: dense_grad_x(nd, L, chunk); break;
    case Op::DenseGradW: dense_grad_w(nd, L, chunk); break;
    case Op::BiasGrad:
      in(nd.in[0], L.in[0], home(nd.in[0]).rows);
      bias_grad(pb_, at(nd.in[0], L.in[0]), at(nd.out[0], L.out[0]));
      out(nd.out[0], L.out[0], home(nd.out[0]).rows);
      break;
    case Op::SoftmaxCe: softmax_ce(nd, L); break;
    case Op::AdamBegin: {
      const AdamParams h{o_.lr, o_.beta1, o_.beta2, o_.eps, o_.weight_decay};
      in(nd.in[0], L.in[0], AdamState::kRows);
      adam_begin_step(pb_, h, AdamState{L.in[0]}, L.scratch);
      out(nd.out[0], L.out[0], AdamState::kRows);
      break;
    }
    case Op::Relu:
    case Op::Add:
    case Op::ReluGrad:
    case Op::AddGrad:
    case Op::SgdUpdate:
    case Op::AdamUpdate: flat(nd, L, chunk); break;
  }
  out_.ranges.push_back(Emitted::Range{id, begin, pb_.size()});
}

}  // namespace

Emitted emit(const Graph& g, const Placement& p, const std::vector<int>& order,
             const TrainOptions& opt, const ChipParams& chip, uint32_t device_base) {
  Emitter e(g, p, opt, chip, device_base);
  for (int id : order) e.node(id);
  return e.finish();
}

}  // namespace tpu::train::compiler

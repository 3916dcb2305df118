// SPDX-License-Identifier: Apache-2.0
#include "compiler/emit.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

#include "compiler/allreduce.h"
#include "compiler/interleave.h"
#include "kernels.h"

namespace tpu::train::compiler {

namespace {

// The index of the first instruction of type T (compute.size() if none).
template <typename T>
size_t first_of(const std::vector<Instruction>& compute) {
  size_t i = 0;
  while (i < compute.size() && !std::holds_alternative<T>(compute[i])) ++i;
  return i;
}

// Set s of operand i (NodeLayout's in_step / out_step).
uint32_t set_of(const std::vector<uint32_t>& base, const std::vector<uint32_t>& step, size_t i,
                size_t s) {
  return base[i] + (i < step.size() ? step[i] : 0) * static_cast<uint32_t>(s);
}

class Emitter {
 public:
  Emitter(const Graph& g, const Placement& p, const TrainOptions& o, const ChipParams& chip,
          uint32_t base)
      : g_(g), p_(p), o_(o), chip_(chip), base_(base), n_(chip.N), pb_(chip) {
    pb_.set_host_ranges({HostRange{base, p.device_bytes, "training device memory"}});
  }
  // Node id's instructions (with the node beside it merged in, overlap.h) and its ranges.
  void node(int id);
  Emitted finish() {
    out_.program = pb_.finish();
    return std::move(out_);
  }
  size_t size() const { return pb_.size(); }
  Emitted out_;

 private:
  void body(int id);  // node id's instructions
  // overlap.h place_x_in_vmem: the Dense's X sets a ConvPool copies its first `sets` column
  // blocks of Y into (block c at base + c * step); sets = 0: none.
  struct KeptX {
    uint32_t sets = 0, base = 0, step = 0;
  };
  KeptX kept_x(int conv) const;
  // Weight tiles per load_weights of a Dense's and a DenseGradX's matmuls (kernels.h).
  uint32_t tile_group() const { return o_.dense_tile_groups ? kDenseTileGroup : 1; }
  const Home& home(int t) const { return p_.homes[static_cast<size_t>(t)]; }
  uint32_t addr(int t, uint32_t row) const { return base_ + home(t).addr + row * 4 * n_; }
  int32_t res(int t) const { return p_.resident(t); }
  // `rows` VMEM rows at `vmem` <-> tensor t's image from image row `row`. A resident tensor
  // (residency.h) is its VMEM copy: nothing to move when `vmem` is that copy's row, else a
  // vector copy (bitwise or with 0: every bit kept).
  void in(int t, uint32_t vmem, uint32_t rows, uint32_t row = 0) {
    if (res(t) < 0) {
      pb_.read_vmem(vmem, rows, addr(t, row));
    } else if (vmem != static_cast<uint32_t>(res(t)) + row) {
      pb_.vop_imm(VecFunc::Or, vmem, static_cast<uint32_t>(res(t)) + row, 0, rows);
    }
  }
  void out(int t, uint32_t vmem, uint32_t rows, uint32_t row = 0) {
    if (res(t) < 0) {
      pb_.write_vmem(vmem, rows, addr(t, row));
    } else if (vmem != static_cast<uint32_t>(res(t)) + row) {
      pb_.vop_imm(VecFunc::Or, static_cast<uint32_t>(res(t)) + row, vmem, 0, rows);
    }
  }
  VMat at(int t, uint32_t base) const {
    VMat m = home(t).geom;
    m.base = base;
    return m;
  }
  // Rows kc (from K row k0) of weight-like tensor t, all its column blocks: VMat at `base`.
  VMat w_chunk(int t, uint32_t base, uint32_t k0, uint32_t kc, bool load);
  void store_w_chunk(int t, const VMat& c, uint32_t k0);
  // The K-chunks and row chunks below are double-buffered with depth > 1 (pipeline()).
  void dense(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth);
  void dense_grad_x(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth);
  void dense_grad_w(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth);
  void flat(const Node& nd, const NodeLayout& L, uint32_t chunk, uint32_t depth);
  // DenseUpdate (fuse.h): per K-chunk dW into VMEM, then the optimizer on the chunk.
  void dense_update(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth);
  // The element-wise kernel of a flat node on `rows` rows of each operand (at in[i] / out[i]).
  void flat_compute(const Node& nd, const NodeLayout& L, const std::vector<uint32_t>& in,
                    const std::vector<uint32_t>& out, uint32_t rows);
  // Chunks 0 .. chunks-1: read(0); then per chunk c compute(c) with read(c + 1) and write(c - 1)
  // spread over it (depth > 1: their buffer sets differ from c's), else read, compute, write.
  // `dense_dw`: a DenseUpdate's chunks (dW by transpose and matmuls first): their DMA goes
  // by place_dma() instead of interleave().
  void pipeline(size_t chunks, uint32_t depth, const std::function<void(size_t)>& read,
                const std::function<void(size_t)>& compute,
                const std::function<void(size_t)>& write, bool dense_dw = false);
  void softmax_ce(const Node& nd, const NodeLayout& L);
  // Conv, pools and their gradients: whole tensors in, the kernel, whole tensors out.
  void image_node(const Node& nd, const NodeLayout& L);
  // The same in bands of output lines (placement.h).
  void band_node(const Node& nd, const NodeLayout& L, uint32_t lines);
  void conv_pad_bands(const Node& nd, const NodeLayout& L, uint32_t lines);
  // ConvPool / ConvPoolGrad (fuse.h) in bands of `lines` pooled lines, `group` blocks per pass.
  void conv_pool(const Node& nd, const NodeLayout& L, uint32_t lines, uint32_t group,
                 uint32_t depth);
  void conv_pool_grad(const Node& nd, const NodeLayout& L, uint32_t lines, uint32_t group,
                      uint32_t depth);
  // ConvPoolGrad's jobs 0..jobs-1 emitted from read(j) (job j's operands in) and compute(j)
  // (its vector passes, then its load_weights and matmuls), in order at depth 1, else
  // software-pipelined over depth 2's sets.
  void pipeline_grad_jobs(size_t jobs, uint32_t depth, const std::function<void(size_t)>& read,
                          const std::function<void(size_t)>& compute);
  // A fused band's conv (cin = 1, no bias) one output line and column block per call, the calls
  // alternating between two ACC regions; false (nothing emitted) where that does not apply.
  // With `pair` (line_pairs): one im2col per two lines, in scratch set (set0 + pair) % 2, the
  // first line's matmuls through pair->lo, the second's through pair->hi.
  struct PairW {
    VMat lo, hi;  // the group's W copies, taps + kw rows per block (line_pairs)
  };
  bool conv_by_lines(const ConvGeom& bg, const VMat& xb, const VMat& w, const VMat& y,
                     uint32_t scratch, uint32_t scratch_rows, bool im2col_kept,
                     const PairW* pair = nullptr, uint32_t set0 = 0);
  // TrainOptions::conv_line_pairs for a ConvPool: whether every job's band takes one im2col per
  // two output lines (cin = 1, stride 1, an even number of lines, (kh + 1) * kw < N: a lane of
  // +0 after the second line's taps; two such im2col sets and 2 * blocks * N rows more fit the
  // conv scratch); if so the W copies (W then kw rows of +0; kw rows of +0 then W) are emitted
  // into the scratch above the two sets and their base returned (else -1).
  int64_t line_pairs(const Node& nd, const NodeLayout& L, const VMat& w, uint32_t lines,
                     uint32_t group);
  // The instructions f emits, not appended to the program (checked by a builder of their own).
  template <typename F>
  std::vector<Instruction> capture(F f);
  // Appends `compute` with the DMA instructions of `dma` (a later chunk's reads, an earlier
  // chunk's writes: no data in common with `compute`) spread over it, each one when the
  // estimated work of the compute before it has covered the previous DMA of its direction (the
  // chip issues in order and holds an instruction while its unit is busy: a DMA issued back
  // to back with another stalls everything behind it). What remains is appended after.
  void interleave(const std::vector<Instruction>& compute, const std::vector<Instruction>& dma);
  // A fused conv band's compute with its DMA: each load_weights ahead of the acc_to_vmem before
  // it, the reads after the first matmul_bf16 and the writes after the last (interleave() when
  // the compute has no matmul).
  void place_around_matmuls(std::vector<Instruction> compute, const std::vector<Instruction>& dma);
  // compute with the DMA reads right after instruction reads_after and the writes right after
  // writes_after (in their order; interleave() when either is past the end). The reads one
  // per matmul from there, or with `spread` evenly over the matmuls (spread_reads).
  void place_dma(const std::vector<Instruction>& compute, const std::vector<Instruction>& dma,
                 size_t reads_after, size_t writes_after, bool spread = false);
  // compute with read k of dma right after instruction read_at[k] (the last of read_at for any
  // further read), the other DMA right after writes_after.
  void place_dma_at(const std::vector<Instruction>& compute, const std::vector<Instruction>& dma,
                    const std::vector<size_t>& read_at, size_t writes_after);
  // The conv input rows band b (from output line oy0) reads, streamed to `base`.
  VMat x_band(int x, uint32_t base, const ConvGeom& b, uint32_t oy0);
  // db (row vector at `db`, `blocks` blocks) = db + column sums of `rows` rows of each block of
  // m (rows in order, chained 255 at a time), or seeded with -0.0 (`seed`).
  void rsum_rows(uint32_t db, const VMat& m, uint32_t rows, bool seed);
  void conv_dx_bands(const Node& nd, const NodeLayout& L, uint32_t lines);
  // `rows` image rows from image row `row` of each column block of t <-> VMat m's blocks.
  void in_rows(int t, const VMat& m, uint32_t row, uint32_t rows);
  void out_rows(int t, const VMat& m, uint32_t row, uint32_t rows);
  void bias_grad_chunks(const Node& nd, const NodeLayout& L, uint32_t rows);
  // One channel block of a max-pool's (or its gradient's) band.
  void pool_band_block(const Node& nd, const NodeLayout& L, uint32_t oy0, uint32_t lines,
                       uint32_t cb);

  const Graph& g_;
  const Placement& p_;
  const TrainOptions& o_;
  const ChipParams& chip_;
  uint32_t base_, n_;
  ProgramBuilder pb_;
};

VMat Emitter::w_chunk(int t, uint32_t base, uint32_t k0, uint32_t kc, bool load) {
  const VMat w = home(t).geom;
  if (res(t) >= 0) return VMat{static_cast<uint32_t>(res(t)) + k0, kc, w.cols, w.pitch};
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

void Emitter::pipeline(size_t chunks, uint32_t depth, const std::function<void(size_t)>& read,
                       const std::function<void(size_t)>& compute,
                       const std::function<void(size_t)>& write, bool dense_dw) {
  if (chunks == 0) return;
  read(0);
  std::vector<Instruction> writes;
  for (size_t c = 0; c < chunks; ++c) {
    if (depth == 1) {
      if (c != 0) read(c);
      compute(c);
      write(c);
      continue;
    }
    std::vector<Instruction> dma;
    if (c + 1 < chunks) dma = capture([&] { read(c + 1); });
    dma.insert(dma.end(), writes.begin(), writes.end());
    const std::vector<Instruction> work = capture([&] { compute(c); });
    if (dense_dw) {
      // Writes (VMEM read port 0) beside X^T's transpose (port 1 and the write port), reads
      // (the write port) beside the matmuls (port 1): neither holds the vector unit.
      // With TrainOptions::update_reads_in_adam the next chunk's state reads go beside this
      // chunk's Adam passes instead (interleave.h update_read_anchors).
      const size_t t = first_of<Transpose>(work), m = first_of<MatmulBf16>(work);
      const size_t reads =
          static_cast<size_t>(std::count_if(dma.begin(), dma.end(), [](const auto& d) {
            return std::holds_alternative<ReadVmem>(d);
          }));
      const std::vector<size_t> at =
          o_.update_reads_in_adam ? update_read_anchors(work, reads) : std::vector<size_t>{};
      if (!at.empty() && t < work.size()) {
        place_dma_at(work, dma, at, t);
      } else {
        place_dma(work, dma, m, t < work.size() ? t : m);
      }
    } else {
      interleave(work, dma);
    }
    writes = capture([&] { write(c); });
  }
  for (const Instruction& i : writes) pb_.append(i);
}

Emitter::KeptX Emitter::kept_x(int conv) const {
  const int d = p_.x_kept_of(conv);
  if (d < 0) return KeptX{};
  const size_t di = static_cast<size_t>(d);
  const NodeLayout L = node_layout(g_, p_, d, p_.chunk[di], chip_);
  const uint32_t depth = p_.depth.empty() ? 1 : std::max(1u, p_.depth[di]);
  const uint32_t chunks =
      static_cast<uint32_t>(k_chunks(home(g_.nodes[di].in[0]).geom.cols, p_.chunk[di], n_).size());
  return KeptX{std::min(depth, chunks), L.in[0], L.in_step.empty() ? 0 : L.in_step[0]};
}

void Emitter::dense(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth) {
  const int x = nd.in[0], w = nd.in[1], y = nd.out[0];
  const uint32_t pitch = home(x).geom.pitch;
  const std::vector<KChunk> ch = k_chunks(home(x).geom.cols, kb, n_);
  // overlap.h place_x_in_vmem: the ConvPool left chunks 0 .. depth-1 in their sets
  const size_t kept = p_.x_kept_of(static_cast<int>(&nd - g_.nodes.data())) >= 0 ? depth : 0;
  auto set = [&](size_t i, size_t c) { return set_of(L.in, L.in_step, i, c % depth); };
  auto xc = [&](size_t c) { return VMat{set(0, c), home(x).geom.rows, ch[c].cols, pitch}; };
  pipeline(
      ch.size(), depth,
      [&](size_t c) {
        if (c >= kept) in(x, xc(c).base, pitch * ch[c].blocks, pitch * ch[c].b0);
        w_chunk(w, set(1, c), ch[c].k0, ch[c].cols, true);
      },
      [&](size_t c) {
        const VMat wc = w_chunk(w, set(1, c), ch[c].k0, ch[c].cols, false);
        dense_forward_partial(pb_, xc(c), wc, 0, c != 0, tile_group());
      },
      [](size_t) {});
  VMat bias;
  if (nd.in.size() > 2) {
    bias = at(nd.in[2], L.in[2]);
    in(nd.in[2], bias.base, home(nd.in[2]).rows);
  }
  dense_forward_finish(pb_, 0, nd.in.size() > 2 ? &bias : nullptr, at(y, L.out[0]));
  out(y, L.out[0], home(y).rows);
}

void Emitter::dense_grad_x(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth) {
  const int dy = nd.in[0], w = nd.in[1], dx = nd.out[0];
  // overlap.h: ahead of a merged pair, below the side's dW in ACC
  const uint32_t acc_end = p_.acc_hi_of(static_cast<int>(&nd - g_.nodes.data()), chip_);
  in(dy, L.in[0], home(dy).rows);
  const uint32_t pitch = home(dx).geom.pitch;
  const std::vector<KChunk> ch = k_chunks(home(dx).geom.cols, kb, n_);
  auto dxc = [&](size_t c) {
    return VMat{set_of(L.out, L.out_step, 0, c % depth), home(dx).geom.rows, ch[c].cols, pitch};
  };
  auto wbase = [&](size_t c) { return set_of(L.in, L.in_step, 1, c % depth); };
  pipeline(
      ch.size(), depth, [&](size_t c) { w_chunk(w, wbase(c), ch[c].k0, ch[c].cols, true); },
      [&](size_t c) {
        const VMat wc = w_chunk(w, wbase(c), ch[c].k0, ch[c].cols, false);
        dense_backward_input(pb_, at(dy, L.in[0]), wc, dxc(c), 0, acc_end, tile_group());
        clear_padding_rows(pb_, dxc(c));
      },
      [&](size_t c) { out(dx, dxc(c).base, pitch * ch[c].blocks, pitch * ch[c].b0); });
}

void Emitter::dense_grad_w(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth) {
  const int x = nd.in[0], dy = nd.in[1], dw = nd.out[0];
  in(dy, L.in[1], home(dy).rows);
  const uint32_t pitch = home(x).geom.pitch;
  const std::vector<KChunk> ch = k_chunks(home(x).geom.cols, kb, n_);
  auto xc = [&](size_t c) {
    return VMat{set_of(L.in, L.in_step, 0, c % depth), home(x).geom.rows, ch[c].cols, pitch};
  };
  auto dwc = [&](size_t c) {
    return w_chunk(dw, set_of(L.out, L.out_step, 0, c % depth), ch[c].k0, ch[c].cols, false);
  };
  pipeline(
      ch.size(), depth,
      [&](size_t c) { in(x, xc(c).base, pitch * ch[c].blocks, pitch * ch[c].b0); },
      [&](size_t c) { dense_backward_weights(pb_, xc(c), at(dy, L.in[1]), dwc(c), L.scratch, 0); },
      [&](size_t c) { store_w_chunk(dw, dwc(c), ch[c].k0); });
}

void Emitter::dense_update(const Node& nd, const NodeLayout& L, uint32_t kb, uint32_t depth) {
  const bool adam = nd.in.size() == 6;
  const int x = nd.in[0], dy = nd.in[1];
  const uint32_t acc = p_.acc_lo_of(static_cast<int>(&nd - g_.nodes.data()));  // overlap.h
  in(dy, L.in[1], home(dy).rows);
  if (adam) in(nd.in[5], L.in[5], AdamState::kRows);
  const uint32_t pitch = home(x).geom.pitch;
  const std::vector<KChunk> ch = k_chunks(home(x).geom.cols, kb, n_);
  auto xc = [&](size_t c) {
    return VMat{set_of(L.in, L.in_step, 0, c % depth), home(x).geom.rows, ch[c].cols, pitch};
  };
  const size_t states = adam ? 3 : nd.in.size() - 2;  // W, m, v | W[, velocity]
  auto wc = [&](size_t i, size_t c, bool load) {
    return w_chunk(nd.in[2 + i], set_of(L.in, L.in_step, 2 + i, c % depth), ch[c].k0, ch[c].cols,
                   load);
  };
  pipeline(
      ch.size(), depth,
      [&](size_t c) {
        in(x, xc(c).base, pitch * ch[c].blocks, pitch * ch[c].b0);
        for (size_t i = 0; i < states; ++i) wc(i, c, true);
      },
      [&](size_t c) {
        const VMat w = wc(0, c, false);
        const VMat dw{L.scratch, w.rows, w.cols, round_up(w.rows, n_)};
        const uint32_t scratch = L.scratch + dw.span(n_);
        // The update element by element: over the chunk's rows at once when every operand
        // has dW's pitch, else block by block (a resident operand has its whole tensor's).
        std::vector<VMat> st;
        for (size_t i = 1; i < states; ++i) st.push_back(wc(i, c, false));
        bool same = w.pitch == dw.pitch;
        for (const VMat& m : st) same = same && m.pitch == dw.pitch;
        const uint32_t parts = same ? 1 : dw.blocks(n_), rows = same ? dw.span(n_) : dw.pitch;
        const AdamParams h{o_.lr, o_.beta1, o_.beta2, o_.eps, o_.weight_decay};
        // Adam's moment decays need no dW: ahead of it, beside X^T's transpose.
        for (uint32_t b = 0; adam && b < parts; ++b)
          adam_decay_moments(pb_, h, st[0].block(b), st[1].block(b), rows);
        dense_backward_weights(pb_, xc(c), at(dy, L.in[1]), dw, scratch, acc);
        for (uint32_t b = 0; b < parts; ++b) {
          auto at_b = [&](const VMat& m) { return m.block(b); };
          if (adam) {
            adam_update(pb_, h, AdamState{L.in[5]}, at_b(w), at_b(dw), at_b(st[0]), at_b(st[1]),
                        rows, scratch, true);
          } else {
            sgd_update(pb_, SgdParams{o_.lr, o_.momentum, o_.weight_decay}, at_b(w), at_b(dw),
                       states > 1 ? at_b(st[0]) : 0, rows, scratch);
          }
        }
      },
      [&](size_t c) {
        for (size_t i = 0; i < states; ++i) store_w_chunk(nd.in[2 + i], wc(i, c, false), ch[c].k0);
      },
      true);
}

void Emitter::flat_compute(const Node& nd, const NodeLayout& L, const std::vector<uint32_t>& in,
                           const std::vector<uint32_t>& out, uint32_t rc) {
  auto I = [&](size_t i) { return in[i]; };
  const uint32_t o = out[0];
  const VMat a{I(0), rc, n_, rc};
  switch (nd.op) {
    case Op::Relu:
      relu_forward(pb_, a, VMat{o, rc, n_, rc});
      break;
    case Op::ReluGrad:
      relu_backward(pb_, a, VMat{I(1), rc, n_, rc}, VMat{o, rc, n_, rc}, L.scratch);
      break;
    case Op::Add:
    case Op::AddGrad:
      pb_.vop(VecFunc::FAdd, o, I(0), I(1), rc);
      break;
    case Op::SgdUpdate:
      sgd_update(pb_, SgdParams{o_.lr, o_.momentum, o_.weight_decay}, I(0), I(1),
                 nd.in.size() > 2 ? I(2) : 0, rc, L.scratch);
      break;
    case Op::AdamUpdate: {
      const AdamParams h{o_.lr, o_.beta1, o_.beta2, o_.eps, o_.weight_decay};
      adam_update(pb_, h, AdamState{L.in[4]}, I(0), I(1), I(2), I(3), rc, L.scratch);
      break;
    }
    default:
      break;
  }
}

// Chunks of rows of every operand (one packing: a row range is the same elements of each);
// Adam's state rows once.
void Emitter::flat(const Node& nd, const NodeLayout& L, uint32_t chunk, uint32_t depth) {
  const uint32_t total = home(nd.in[0]).rows;
  const bool adam = nd.op == Op::AdamUpdate;
  if (adam) in(nd.in[4], L.in[4], AdamState::kRows);
  const size_t chunks = (total + chunk - 1) / chunk;
  auto rows = [&](size_t c) { return std::min(chunk, total - static_cast<uint32_t>(c) * chunk); };
  // Chunk c of operand t: at its buffer set, or in place in its resident copy.
  auto at_c = [&](int t, const std::vector<uint32_t>& base, const std::vector<uint32_t>& step,
                  size_t i, size_t c) {
    const uint32_t row = static_cast<uint32_t>(c) * chunk;
    return res(t) >= 0 ? static_cast<uint32_t>(res(t)) + row
                       : set_of(base, step, i, static_cast<uint32_t>(c % depth));
  };
  auto ins = [&](size_t c) {
    std::vector<uint32_t> r;
    for (size_t i = 0; i < nd.in.size(); ++i)
      r.push_back(adam && i == 4 ? L.in[4] : at_c(nd.in[i], L.in, L.in_step, i, c));
    return r;
  };
  auto outs = [&](size_t c) {
    std::vector<uint32_t> r;
    for (size_t i = 0; i < nd.out.size(); ++i)
      r.push_back(at_c(nd.out[i], L.out, L.out_step, i, c));
    return r;
  };
  pipeline(
      chunks, depth,
      [&](size_t c) {
        const std::vector<uint32_t> v = ins(c);
        for (size_t i = 0; i < nd.in.size(); ++i)
          if (!(adam && i == 4)) in(nd.in[i], v[i], rows(c), static_cast<uint32_t>(c) * chunk);
      },
      [&](size_t c) { flat_compute(nd, L, ins(c), outs(c), rows(c)); },
      [&](size_t c) {
        const std::vector<uint32_t> v = outs(c);
        for (size_t i = 0; i < nd.out.size(); ++i)
          out(nd.out[i], v[i], rows(c), static_cast<uint32_t>(c) * chunk);
      });
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
  k.mean_over = g_.loss_batch;
  softmax_cross_entropy(pb_, k);
  clear_padding_rows(pb_, k.dlogits);
  for (size_t i = 0; i < 2; ++i) out(nd.out[i], L.out[i], home(nd.out[i]).rows);
}

void Emitter::image_node(const Node& nd, const NodeLayout& L) {
  for (size_t i = 0; i < nd.in.size(); ++i) in(nd.in[i], L.in[i], home(nd.in[i]).rows);
  auto I = [&](size_t i) { return at(nd.in[i], L.in[i]); };
  auto O = [&](size_t i) { return at(nd.out[i], L.out[i]); };
  switch (nd.op) {
    case Op::Conv: {
      const VMat bias = nd.in.size() > 2 ? I(2) : VMat{};
      conv2d_forward(pb_, nd.conv, I(0), I(1), nd.in.size() > 2 ? &bias : nullptr, O(0), L.scratch,
                     0);
      break;
    }
    case Op::ConvPad:
      conv_pad_input(pb_, nd.conv, I(0), O(0));
      break;
    case Op::ConvGradW:
      conv2d_backward_weights(pb_, nd.conv, I(0), I(1), O(0), L.scratch, 0);
      break;
    case Op::ConvGradX:
      conv2d_backward_input(pb_, nd.conv, I(0), I(1), O(0), L.scratch, 0);
      break;
    case Op::MaxPool:
      maxpool_forward(pb_, nd.pool, I(0), O(0), O(1), L.scratch);
      break;
    case Op::MaxPoolGrad:
      maxpool_backward(pb_, nd.pool, I(0), I(1), O(0), L.scratch);
      break;
    case Op::AvgPool:
      avgpool_forward(pb_, nd.pool, I(0), O(0));
      break;
    case Op::AvgPoolGrad:
      avgpool_backward(pb_, nd.pool, I(0), O(0), L.scratch);
      break;
    case Op::GlobalAvgPool:
      gap_forward(pb_, nd.pool, I(0), O(0));
      break;
    case Op::GlobalAvgPoolGrad:
      gap_backward(pb_, nd.pool, I(0), O(0));
      break;
    default:
      break;
  }
  for (size_t i = 0; i < nd.out.size(); ++i) {
    clear_padding_rows(pb_, O(i));
    out(nd.out[i], L.out[i], home(nd.out[i]).rows);
  }
}

void Emitter::in_rows(int t, const VMat& m, uint32_t row, uint32_t rows) {
  for (uint32_t cb = 0; cb < m.blocks(n_); ++cb)
    in(t, m.block(cb), rows, cb * home(t).geom.pitch + row);
}

void Emitter::out_rows(int t, const VMat& m, uint32_t row, uint32_t rows) {
  for (uint32_t cb = 0; cb < m.blocks(n_); ++cb)
    out(t, m.block(cb), rows, cb * home(t).geom.pitch + row);
}

// A band's VMat of `rows` rows of tensor t's columns at `base`.
VMat band(const VMat& home, uint32_t base, uint32_t rows, uint32_t n) {
  return VMat{base, rows, home.cols, round_up(rows, n)};
}

void Emitter::conv_pad_bands(const Node& nd, const NodeLayout& L, uint32_t lines_per_band) {
  // The padded input's border is never written: +0 from the device buffer's allocation.
  const ConvGeom& g = nd.conv;
  const int src = nd.in[0], x = nd.out[0];
  const uint32_t line = g.w * g.batch;
  for (uint32_t cb = 0; cb * n_ < g.cin; ++cb) {
    for (uint32_t iy0 = 0; iy0 < g.h; iy0 += lines_per_band) {
      const uint32_t lines = std::min(lines_per_band, g.h - iy0);
      in(src, L.in[0], lines * line, cb * home(src).geom.pitch + iy0 * line);
      for (uint32_t l = 0; l < lines; ++l) {
        const uint32_t row = ((iy0 + l + g.pad_top) * g.wp() + g.pad_left) * g.batch;
        out(x, L.in[0] + l * line, line, cb * home(x).geom.pitch + row);
      }
    }
  }
}

// dX in bands of input lines, one input-channel block at a time (the columns of dX are
// independent: the block's rows of W, tap by tap, make the block's own convolution).
void Emitter::conv_dx_bands(const Node& nd, const NodeLayout& L, uint32_t lines_per_band) {
  const ConvGeom& g = nd.conv;
  const int dy = nd.in[0], w = nd.in[1], dx = nd.out[0];
  const VMat wh = home(w).geom;
  const uint32_t line = g.w * g.batch, out_line = g.wo() * g.batch;
  for (uint32_t ci = 0; ci * n_ < g.cin; ++ci) {
    const uint32_t cin = std::min(n_, g.cin - ci * n_);
    const VMat wb{L.in[1], g.taps() * n_, g.cout, g.taps() * n_};  // rows tap*N + c
    for (uint32_t co = 0; co < wh.blocks(n_); ++co) {
      for (uint32_t t = 0; t < g.taps(); ++t) {
        in(w, wb.block(co) + t * n_, n_, co * wh.pitch + t * g.cin_stride(n_) + ci * n_);
      }
    }
    for (uint32_t iy0 = 0; iy0 < g.h; iy0 += lines_per_band) {
      const uint32_t iy1 = std::min(g.h, iy0 + lines_per_band);
      DxBand d = dx_band(g, iy0, iy1);
      if (d.oy_count == 0 || d.sub.h == 0) continue;  // lines no output reaches stay +0
      d.sub.cin = cin;
      const VMat dyb = band(home(dy).geom, L.in[0], d.oy_count * out_line, n_);
      in_rows(dy, dyb, d.oy0 * out_line, dyb.rows);
      const VMat dxb{L.out[0], d.sub.h * line, cin, round_up(d.sub.h * line, n_)};
      conv2d_backward_input(pb_, d.sub, dyb, wb, dxb, L.scratch, 0);
      const uint32_t lo = std::max(iy0, d.r0), hi = std::min(iy1, d.r0 + d.sub.h);
      out(dx, dxb.base + (lo - d.r0) * line, (hi - lo) * line,
          ci * home(dx).geom.pitch + lo * line);
    }
  }
}

template <typename F>
std::vector<Instruction> Emitter::capture(F f) {
  ProgramBuilder side(chip_);
  side.set_host_ranges(pb_.host_ranges());
  std::swap(pb_, side);
  f();
  std::swap(pb_, side);
  return side.instructions();
}

void Emitter::interleave(const std::vector<Instruction>& compute,
                         const std::vector<Instruction>& dma) {
  size_t next_in = 0, next_out = 0;
  uint64_t t = 0, free_in = 0, free_out = 0;
  auto is_read = [](const Instruction& i) { return std::holds_alternative<ReadVmem>(i); };
  // The next DMA of one direction (reads or writes, each in program order), if its unit is free.
  auto issue = [&](bool reads, size_t& next, uint64_t& free_at, bool force) {
    while (next < dma.size() && is_read(dma[next]) != reads) ++next;
    if (next == dma.size() || (!force && free_at > t)) return false;
    pb_.append(dma[next]);
    free_at = std::max(free_at, t) + instruction_work(dma[next], chip_);
    ++next;
    return true;
  };
  for (const Instruction& c : compute) {
    while (issue(true, next_in, free_in, false)) {
    }
    while (issue(false, next_out, free_out, false)) {
    }
    pb_.append(c);
    t += instruction_work(c, chip_);
  }
  while (issue(true, next_in, free_in, true)) {
  }
  while (issue(false, next_out, free_out, true)) {
  }
}

VMat Emitter::x_band(int x, uint32_t base, const ConvGeom& b, uint32_t oy0) {
  const uint32_t line0 = band_input_line(oy0, b.sh) * b.w * b.batch;  // image row of the band
  if (b.packed()) {  // the flat image: N values per row
    const VMat xb{base, b.input_rows(n_), n_, round_up(b.input_rows(n_), n_)};
    in(x, xb.base, xb.rows, line0 / n_);
    return xb;
  }
  const VMat xb = band(home(x).geom, base, b.h * b.w * b.batch, n_);
  in_rows(x, xb, line0, xb.rows);
  return xb;
}

void Emitter::rsum_rows(uint32_t db, const VMat& m, uint32_t rows, bool seed) {
  constexpr uint32_t kMaxInner = 255;
  for (uint32_t cb = 0; cb < m.blocks(n_); ++cb) {
    for (uint32_t first = 0; first < rows; first += kMaxInner) {
      const bool s = seed && first == 0;
      Vector v;
      v.func = static_cast<uint8_t>(VecFunc::RSum);
      v.bmode = s ? BMode::Imm : BMode::RowDst;
      v.dst = static_cast<uint16_t>(db + cb);
      v.a = static_cast<uint16_t>(m.block(cb) + first);
      v.inner = static_cast<uint8_t>(std::min(kMaxInner, rows - first));
      v.outer = 1;
      v.a_inner_stride = 1;
      v.dst_outer_stride = 1;
      v.b = s ? 0x80000000u : db + cb;  // -0.0, the identity of an fp sum
      pb_.vector(v);
    }
  }
}

// A ConvPool / ConvPoolGrad job: one band of pooled lines, one group of output-channel blocks.
struct FusedJob {
  uint32_t band, py0, lines, g0, cols;
  bool first_of_band;
};
std::vector<FusedJob> fused_jobs(const Node& nd, uint32_t lines_per_band, uint32_t group,
                                 uint32_t n) {
  std::vector<FusedJob> jobs;
  const uint32_t blocks = (nd.conv.cout + n - 1) / n;
  uint32_t band = 0;
  for (uint32_t py0 = 0; py0 < nd.pool.ho(); py0 += lines_per_band, ++band) {
    const uint32_t lines = std::min(lines_per_band, nd.pool.ho() - py0);
    for (uint32_t g0 = 0; g0 < blocks; g0 += group)
      jobs.push_back(
          FusedJob{band, py0, lines, g0, std::min(group * n, nd.conv.cout - g0 * n), g0 == 0});
  }
  return jobs;
}

// One output line of a stride-1 band (conv_band(.., 1)) with a kernel row more: the im2col of
// two consecutive lines (TrainOptions::conv_line_pairs).
ConvGeom pair_geom(const ConvGeom& g1) {
  ConvGeom g = g1;
  g.kh += 1;
  g.h += 1;
  return g;
}

// Per band of pooled lines and group of output-channel blocks: the conv without bias into the
// band buffer, the max pool into the pooled band, + bias, ReLU in place; Y and argmax out.
// Double-buffered (depth 2): the next band's input rows are read before this band's compute,
// and Y / argmax alternate between two sets, so DMA overlaps the conv and the pool.
void Emitter::conv_pool(const Node& nd, const NodeLayout& L, uint32_t lines_per_band,
                        uint32_t group, uint32_t depth) {
  for (size_t i = 1; i < nd.in.size(); ++i) in(nd.in[i], L.in[i], home(nd.in[i]).rows);
  const int y = nd.out[0], am = nd.out[1];
  const VMat w = at(nd.in[1], L.in[1]);
  const uint32_t kh = nd.pool.kh, B = nd.conv.batch;
  const uint32_t pline = nd.pool.wo() * B, cline = nd.conv.wo() * B;
  const std::vector<FusedJob> jobs = fused_jobs(nd, lines_per_band, group, n_);
  const KeptX kept = kept_x(static_cast<int>(&nd - g_.nodes.data()));
  auto read_x = [&](const FusedJob& j) {
    const ConvGeom b = conv_band(nd.conv, j.py0 * kh, j.lines * kh);
    return x_band(nd.in[0], set_of(L.in, L.in_step, 0, j.band % depth), b, j.py0 * kh);
  };
  std::vector<VMat> xbs(jobs.back().band + 1);
  const uint32_t blocks = (nd.conv.cout + n_ - 1) / n_;
  // b copied (the same bits) next to Y: the bias passes then span no band buffer row
  if (nd.in.size() > 2) pb_.vop_imm(VecFunc::Or, L.pool_scratch, L.in[2], 0, blocks);
  const int64_t pairs = line_pairs(nd, L, w, lines_per_band, group);  // the W copies' base
  // The jobs' instructions, then the next job's first matmuls ahead of each job's pool
  // (hoist_matmuls).
  const std::vector<Instruction> all = capture([&] {
    xbs[0] = read_x(jobs[0]);
    std::vector<Instruction> writes;  // the previous job's (depth 2: spread over this job)
    for (size_t ji = 0; ji < jobs.size(); ++ji) {
      const FusedJob& j = jobs[ji];
      if (j.first_of_band && depth == 1 && ji != 0) xbs[j.band] = read_x(j);
      std::vector<Instruction> dma;
      if (j.first_of_band && depth > 1) {  // prefetch the next band's input lines
        for (size_t k = ji + 1; k < jobs.size(); ++k) {
          if (jobs[k].first_of_band) {
            dma = capture([&] { xbs[jobs[k].band] = read_x(jobs[k]); });
            break;
          }
        }
      }
      dma.insert(dma.end(), writes.begin(), writes.end());
      const VMat& xb = xbs[j.band];
      ConvGeom bg = conv_band(nd.conv, j.py0 * kh, j.lines * kh);
      bg.cout = j.cols;
      const uint32_t crows = j.lines * kh * cline, rows = j.lines * pline;
      const uint32_t s = static_cast<uint32_t>(ji % depth);
      const VMat yb{set_of(L.out, L.out_step, 0, s), rows, bg.cout, round_up(rows, n_)};
      const VMat ab{set_of(L.out, L.out_step, 1, s), rows, bg.cout, round_up(rows, n_)};
      auto compute = [&] {
        const VMat wv{w.block(j.g0), w.rows, bg.cout, w.pitch};
        const VMat buf{set_of(L.out, L.out_step, 2, s), crows, bg.cout, round_up(crows, n_)};
        // The band's later groups reuse its im2col (cin = 1, the band one matmul of ACC rows).
        const bool reuse =
            !j.first_of_band && bg.packed() && bg.ho() * bg.wo() * bg.batch <= chip_.acc_rows;
        const uint32_t conv_scratch = std::max(1u, conv_scratch_rows(bg, chip_, 0));
        const PairW pw{
            VMat{static_cast<uint32_t>(pairs) + j.g0 * n_, w.rows + nd.conv.kw, bg.cout, n_},
            VMat{static_cast<uint32_t>(pairs) + (blocks + j.g0) * n_, w.rows + nd.conv.kw, bg.cout,
                 n_}};
        if (!conv_by_lines(bg, xb, wv, buf, L.scratch, conv_scratch, !j.first_of_band,
                           pairs >= 0 ? &pw : nullptr, j.band))
          conv2d_forward(pb_, bg, xb, wv, nullptr, buf, L.scratch, 0, reuse);
        PoolGeom pg = nd.pool;
        pg.h = j.lines * kh;
        pg.c = bg.cout;
        maxpool_forward(pb_, pg, buf, yb, ab, L.pool_scratch + blocks);
        if (nd.in.size() > 2) bias_add(pb_, yb, VMat{L.pool_scratch + j.g0, 1, bg.cout, 1});
        if (nd.relu) relu_forward(pb_, yb, yb);
        for (uint32_t k = 0; k < yb.blocks(n_) && j.g0 + k < kept.sets; ++k) {
          pb_.vop_imm(VecFunc::Or, kept.base + (j.g0 + k) * kept.step + j.py0 * pline, yb.block(k),
                      0, rows);  // overlap.h place_x_in_vmem: the same bits
        }
      };
      auto write = [&] {
        for (uint32_t k = 0; k < yb.blocks(n_); ++k) {
          out(y, yb.block(k), rows, (j.g0 + k) * home(y).geom.pitch + j.py0 * pline);
          out(am, ab.block(k), rows, (j.g0 + k) * home(am).geom.pitch + j.py0 * pline);
        }
      };
      if (depth > 1) {
        place_around_matmuls(capture(compute), dma);
        writes = capture(write);
      } else {
        compute();
        write();
      }
    }
    for (const Instruction& i : writes) pb_.append(i);
  });
  // Double-buffered (a conv band buffer set per job): list-scheduled, so one job's pool passes
  // run beside the next job's matmuls and acc_to_vmem (docs/training.md "Conv forward
  // list-scheduled").
  const std::vector<Instruction> hoisted = hoist_matmuls(all);
  for (const Instruction& i :
       depth > 1 ? list_schedule(hoisted, chip_, kScheduleWindow, o_.im2col_build_first) : hoisted)
    pb_.append(i);
}

// The DMA units and the MXU's weight loads share VMEM read port 0 (the DMA first): a
// write_vmem issued next to a load_weights holds the load, and the matmul waiting for its
// tile, for the whole transfer; a read_vmem holds the vector unit's and the move unit's
// writes. While a band's matmuls stream (read port 1) and their acc_to_vmem moves ACC out,
// port 0 is free and, before the move, so is the write port: the reads go right after the
// first matmul, the writes right after the last (by then every load has been served). A load
// moved ahead of an acc_to_vmem touches other VMEM rows (checked) and keeps its place in the
// weight FIFO's order, so every result is the same.
void Emitter::place_around_matmuls(std::vector<Instruction> compute,
                                   const std::vector<Instruction>& dma) {
  for (size_t i = 1; i < compute.size(); ++i) {
    const auto* lw = std::get_if<LoadWeights>(&compute[i]);
    for (size_t k = i; lw != nullptr && k > 0; --k) {
      const auto* mv = std::get_if<AccToVmem>(&compute[k - 1]);
      if (mv == nullptr ||
          (lw->last_row() >= mv->vmem_addr && lw->vmem_addr < uint64_t{mv->vmem_addr} + mv->rows)) {
        break;
      }
      std::swap(compute[k - 1], compute[k]);
    }
  }
  size_t last = compute.size();
  for (size_t i = 0; i < compute.size(); ++i) {
    if (std::holds_alternative<MatmulBf16>(compute[i])) last = i;
  }
  place_dma(compute, dma, first_of<MatmulBf16>(compute), last);
}

void Emitter::place_dma(const std::vector<Instruction>& compute,
                        const std::vector<Instruction>& dma, size_t reads_after,
                        size_t writes_after, bool spread) {
  if (reads_after >= compute.size() || writes_after >= compute.size()) {
    return interleave(compute, dma);
  }
  // One read per matmul from reads_after on (a read_vmem waits for the one before it: issued
  // back to back, the second would hold the next matmul's issue), the rest after the last.
  std::vector<size_t> anchors;
  for (size_t i = reads_after; i < compute.size(); ++i) {
    if (i == reads_after || std::holds_alternative<MatmulBf16>(compute[i])) anchors.push_back(i);
  }
  const size_t count = static_cast<size_t>(std::count_if(
      dma.begin(), dma.end(), [](const auto& d) { return std::holds_alternative<ReadVmem>(d); }));
  if (spread) anchors = spread_reads(compute, reads_after, count);
  place_dma_at(compute, dma, anchors, writes_after);
}

void Emitter::place_dma_at(const std::vector<Instruction>& compute,
                           const std::vector<Instruction>& dma, const std::vector<size_t>& read_at,
                           size_t writes_after) {
  std::vector<std::vector<Instruction>> after(compute.size());
  size_t reads = 0;
  for (const Instruction& d : dma) {
    if (std::holds_alternative<ReadVmem>(d)) {
      after[read_at[std::min(reads++, read_at.size() - 1)]].push_back(d);
    }
  }
  for (const Instruction& d : dma) {
    if (!std::holds_alternative<ReadVmem>(d)) after[writes_after].push_back(d);
  }
  for (size_t i = 0; i < compute.size(); ++i) {
    pb_.append(compute[i]);
    for (const Instruction& d : after[i]) pb_.append(d);
  }
}

// One ACC region for the whole band serializes the MXU and the move unit (a block's matmuls
// wait for the previous block's acc_to_vmem to read ACC out); with two regions of one output
// line each, the matmuls of one call run while the previous call's acc_to_vmem moves its
// region to VMEM. Each line's im2col (built by its first block's call, in one of two scratch
// sets when both fit) serves the line's other blocks, and the band's later groups when every
// line kept its own set. The same matmuls on the same rows: bit-identical to one call.
// With `pair` (TrainOptions::conv_line_pairs) an im2col of kh + 1 kernel rows serves two
// lines: line 2p's tile is W with +0 rows under it (lanes of row 2p + kh times +0), line
// 2p + 1's is W below kw rows of +0 (lanes of row 2p times +0). Each lane's product with +0
// is a zero; the partial sum enters as +0, so zeros ahead of the taps leave it +0, and a zero
// after them changes only a zero sum's sign, which the lanes of +0 after them (kh + 1) * kw < N
// set to +0 as before: the same sums bit for bit, half the transposes. (For finite inputs: an
// infinite or NaN pixel times +0 is NaN, so it then also reaches the pair's other line.)
bool Emitter::conv_by_lines(const ConvGeom& bg, const VMat& xb, const VMat& w, const VMat& y,
                            uint32_t scratch, uint32_t scratch_rows, bool im2col_kept,
                            const PairW* pair, uint32_t set0) {
  const ConvGeom g1 = conv_band(bg, 0, 1);
  const uint32_t cline = g1.ho() * g1.wo() * g1.batch, line_in = bg.sh * bg.w * bg.batch;
  if (!bg.packed() || bg.ho() < 2 || 2 * cline > chip_.acc_rows || line_in % n_ != 0) return false;
  const uint32_t per = pair != nullptr ? 2 : 1;  // output lines per im2col
  const ConvGeom gi = pair != nullptr ? pair_geom(g1) : g1;
  const uint32_t s1 = conv_scratch_rows(gi, chip_, cline);
  if (s1 > scratch_rows || bg.ho() % per != 0) return false;
  const uint32_t sets = 2 * s1 <= scratch_rows ? 2 : 1, units = bg.ho() / per;
  const uint32_t in_rows = gi.input_rows(n_);
  // Per im2col: its build (the instructions before the first load_weights: vector and
  // transpose on its scratch set) and its matmuls. With two sets, im2col u's build goes ahead
  // of u - 1's matmuls (u - 2, which read the same set, is done by then), so the move unit's
  // transpose runs beside the MXU.
  std::vector<std::vector<Instruction>> prep(units), mm(units);
  uint32_t calls = 0;
  for (uint32_t u = 0; u < units; ++u) {
    const VMat x1{xb.base + u * per * line_in / n_, in_rows, n_, round_up(in_rows, n_)};
    const uint32_t set = (pair != nullptr ? set0 + u : u) % sets;
    for (uint32_t k = 0; k < per; ++k) {
      const uint32_t l = u * per + k;
      for (uint32_t cob = 0; cob < y.blocks(n_); ++cob, ++calls) {
        ConvGeom gc = gi;
        gc.cout = std::min(n_, bg.cout - cob * n_);
        const VMat& wk = pair == nullptr ? w : k == 0 ? pair->lo : pair->hi;
        const VMat wv{wk.block(cob), wk.rows, gc.cout, wk.pitch};
        const VMat yv{y.block(cob) + l * cline, cline, gc.cout, y.pitch};
        const bool ready = cob > 0 || k > 0 || (im2col_kept && units <= sets);
        const std::vector<Instruction> c = capture([&] {
          conv2d_forward(pb_, gc, x1, wv, nullptr, yv, scratch + set * s1, (calls % 2) * cline,
                         ready);
        });
        size_t i = 0;
        while (i < c.size() && !std::holds_alternative<LoadWeights>(c[i])) ++i;
        auto& to = mm[u].empty() ? prep[u] : mm[u];
        to.insert(to.end(), c.begin(), c.begin() + static_cast<std::ptrdiff_t>(i));
        mm[u].insert(mm[u].end(), c.begin() + static_cast<std::ptrdiff_t>(i), c.end());
      }
    }
  }
  auto emit_all = [&](const std::vector<Instruction>& v) {
    for (const Instruction& i : v) pb_.append(i);
  };
  for (uint32_t u = 0; u < units; ++u) {
    if (sets == 1 || u == 0) emit_all(prep[u]);
    if (sets == 2 && u + 1 < units) emit_all(prep[u + 1]);
    emit_all(mm[u]);
  }
  return true;
}

int64_t Emitter::line_pairs(const Node& nd, const NodeLayout& L, const VMat& w, uint32_t lines,
                            uint32_t group) {
  if (!o_.conv_line_pairs) return -1;
  const uint32_t kh = nd.pool.kh, blocks = w.blocks(n_);
  uint32_t s2 = 0;
  for (const FusedJob& j : fused_jobs(nd, lines, group, n_)) {
    ConvGeom bg = conv_band(nd.conv, j.py0 * kh, j.lines * kh);
    bg.cout = j.cols;
    const ConvGeom g1 = conv_band(bg, 0, 1);
    const uint32_t cline = g1.wo() * g1.batch;
    if (!bg.packed() || bg.sh != 1 || bg.ho() % 2 != 0 || (bg.kh + 1) * bg.kw >= n_ ||
        2 * cline > chip_.acc_rows || (bg.w * bg.batch) % n_ != 0) {
      return -1;
    }
    s2 = conv_scratch_rows(pair_geom(g1), chip_, cline);
    if (2 * s2 + 2 * blocks * n_ > std::max(1u, conv_scratch_rows(bg, chip_, 0))) return -1;
  }
  const uint32_t taps = nd.conv.taps(), kw = nd.conv.kw, base = L.scratch + 2 * s2;
  for (uint32_t cb = 0; cb < blocks; ++cb) {
    const uint32_t lo = base + cb * n_, hi = base + (blocks + cb) * n_;
    pb_.vop_imm(VecFunc::Or, lo, w.block(cb), 0, taps);      // the same bits
    pb_.vop_imm(VecFunc::And, lo + taps, lo + taps, 0, kw);  // +0
    pb_.vop_imm(VecFunc::And, hi, hi, 0, kw);
    pb_.vop_imm(VecFunc::Or, hi + kw, w.block(cb), 0, taps);
  }
  return base;
}

// Per band and group: argmax, Y, dY in; the ReLU's gradient (mask from Y: Y > 0 iff its input
// was) in place, db += its column sums, the pool's gradient into the band buffer, dW += the
// band's (per block, in ACC across the bands). Double-buffered (depth 2): the next job's
// operands are read before this job's compute.
void Emitter::conv_pool_grad(const Node& nd, const NodeLayout& L, uint32_t lines_per_band,
                             uint32_t group, uint32_t depth) {
  const int am = nd.in[1], y = nd.in[2], dy = nd.in[3];
  const VMat dw = home(nd.out[0]).geom;
  const uint32_t kh = nd.pool.kh, B = nd.conv.batch;
  const uint32_t pline = nd.pool.wo() * B, cline = nd.conv.wo() * B;
  const bool bias = nd.out.size() > 1;
  const std::vector<FusedJob> jobs = fused_jobs(nd, lines_per_band, group, n_);
  std::vector<VMat> xbs(jobs.back().band + 1);
  // Reads job ji's operands into their sets (the X band with the band's first job).
  auto read = [&](size_t ji) {
    const FusedJob& j = jobs[ji];
    const uint32_t s = static_cast<uint32_t>(ji % depth), rows = j.lines * pline;
    if (j.first_of_band) {
      const ConvGeom b = conv_band(nd.conv, j.py0 * kh, j.lines * kh);
      xbs[j.band] = x_band(nd.in[0], set_of(L.in, L.in_step, 0, j.band % depth), b, j.py0 * kh);
    }
    const uint32_t pitch = round_up(rows, n_);
    for (uint32_t k = 0; k * n_ < j.cols; ++k) {
      auto row = [&](int t) { return (j.g0 + k) * home(t).geom.pitch + j.py0 * pline; };
      in(am, set_of(L.in, L.in_step, 1, s) + k * pitch, rows, row(am));
      if (nd.relu) in(y, set_of(L.in, L.in_step, 2, s) + k * pitch, rows, row(y));
      in(dy, set_of(L.in, L.in_step, 3, s) + k * pitch, rows, row(dy));
    }
  };
  // Job ji's compute: its vector passes, then dW (tap rows in dW scratch set ji % depth).
  auto compute = [&](size_t ji) {
    const FusedJob& j = jobs[ji];
    const VMat& xb = xbs[j.band];
    const uint32_t s = static_cast<uint32_t>(ji % depth), rows = j.lines * pline;
    const ConvGeom b = conv_band(nd.conv, j.py0 * kh, j.lines * kh);
    const VMat ab{set_of(L.in, L.in_step, 1, s), rows, j.cols, round_up(rows, n_)};
    const VMat yb{set_of(L.in, L.in_step, 2, s), rows, j.cols, ab.pitch};
    const VMat dyb{set_of(L.in, L.in_step, 3, s), rows, j.cols, ab.pitch};
    if (nd.relu) relu_backward(pb_, yb, dyb, dyb, L.scratch);  // dY of the pool, in place
    if (bias) rsum_rows(L.out[1] + j.g0, dyb, rows, j.py0 == 0);
    PoolGeom pg = nd.pool;
    pg.h = j.lines * kh;
    pg.c = j.cols;
    const uint32_t crows = j.lines * kh * cline;
    const VMat buf{set_of(L.out, L.out_step, L.out.size() - 1, s), crows, j.cols,
                   round_up(crows, n_)};
    maxpool_backward(pb_, pg, ab, dyb, buf, L.scratch);
    // dW of the job's output blocks in one call where the kernel can accumulate them all
    // (conv_dw_group: the band's tap rows built once for all of them), each block's partial
    // in ACC rows of its own across the bands, as one block per call would.
    const uint32_t taps = L.dw_scratch + s * L.dw_scratch_step;
    ConvGeom all = b;
    all.cout = j.cols;
    if (conv_dw_group(all, n_)) {
      ConvGeom one = b;
      one.cout = n_;
      const VMat sum{L.out[0] + j.g0 * dw.pitch, dw.rows, j.cols, dw.pitch};
      conv2d_backward_weights(pb_, all, xb, buf, sum, taps, j.g0 * conv_dw_acc_rows(one, n_),
                              j.py0 != 0);
    }
    for (uint32_t k = 0; !conv_dw_group(all, n_) && k < buf.blocks(n_); ++k) {
      const uint32_t cb = j.g0 + k;
      ConvGeom bb = b;
      bb.cout = std::min(n_, b.cout - cb * n_);
      const VMat dyc{buf.block(k), crows, bb.cout, buf.pitch};
      const VMat sum{L.out[0] + cb * dw.pitch, dw.rows, bb.cout, dw.pitch};
      conv2d_backward_weights(pb_, bb, xb, dyc, sum, taps, cb * conv_dw_acc_rows(bb, n_),
                              j.py0 != 0);
    }
  };
  pipeline_grad_jobs(jobs.size(), depth, read, compute);
  const VMat sum = at(nd.out[0], L.out[0]);
  clear_padding_rows(pb_, sum);
  out(nd.out[0], sum.base, home(nd.out[0]).rows);
  if (bias) out(nd.out[1], L.out[1], home(nd.out[1]).rows);
}

void Emitter::pipeline_grad_jobs(size_t jobs, uint32_t depth,
                                 const std::function<void(size_t)>& read,
                                 const std::function<void(size_t)>& compute) {
  read(0);
  if (depth == 1) {
    for (size_t ji = 0; ji < jobs; ++ji) {
      if (ji != 0) read(ji);
      compute(ji);
    }
    return;
  }
  // Software-pipelined: job ji + 1's vector passes (ReLU and pool gradients, the tap rows: the
  // instructions before its first load_weights, into its own sets of the band buffer and the
  // tap rows) spread over job ji's load_weights and matmuls (overlay), job ji + 2's reads over
  // them too (spread_reads); job 0's passes alone, job 1's reads before them.
  auto split = [&](size_t ji) {
    std::vector<Instruction> c = capture([&] { compute(ji); });
    const auto k = static_cast<std::ptrdiff_t>(first_of<LoadWeights>(c));
    return std::make_pair(std::vector<Instruction>(c.begin(), c.begin() + k),
                          std::vector<Instruction>(c.begin() + k, c.end()));
  };
  if (jobs > 1) read(1);
  auto cur = split(0);
  for (const Instruction& i : cur.first) pb_.append(i);
  for (size_t ji = 0; ji < jobs; ++ji) {
    std::vector<Instruction> dma;
    if (ji + 2 < jobs) dma = capture([&] { read(ji + 2); });
    std::pair<std::vector<Instruction>, std::vector<Instruction>> next;
    if (ji + 1 < jobs) next = split(ji + 1);
    const std::vector<Instruction> work = overlay(cur.second, next.first, chip_);
    const size_t m = first_of<MatmulBf16>(work);
    place_dma(work, dma, m, m, true);
    cur = std::move(next);
  }
}

void Emitter::band_node(const Node& nd, const NodeLayout& L, uint32_t lines_per_band) {
  if (nd.op == Op::ConvPad) return conv_pad_bands(nd, L, lines_per_band);
  if (nd.op == Op::ConvGradX) return conv_dx_bands(nd, L, lines_per_band);
  const bool conv = nd.op == Op::Conv || nd.op == Op::ConvGradW;
  const uint32_t total = band_lines_total(nd);
  if (nd.op == Op::Conv) {
    for (size_t i = 1; i < nd.in.size(); ++i) in(nd.in[i], L.in[i], home(nd.in[i]).rows);
  }
  for (uint32_t oy0 = 0; oy0 < total; oy0 += lines_per_band) {
    const uint32_t lines = std::min(lines_per_band, total - oy0);
    if (conv) {
      const ConvGeom b = conv_band(nd.conv, oy0, lines);
      const VMat xb = x_band(nd.in[0], L.in[0], b, oy0);
      const uint32_t out0 = oy0 * b.wo() * b.batch, rows = lines * b.wo() * b.batch;
      if (nd.op == Op::Conv) {
        const VMat yb = band(home(nd.out[0]).geom, L.out[0], rows, n_);
        const VMat bias = nd.in.size() > 2 ? at(nd.in[2], L.in[2]) : VMat{};
        conv2d_forward(pb_, b, xb, at(nd.in[1], L.in[1]), nd.in.size() > 2 ? &bias : nullptr, yb,
                       L.scratch, 0);
        out_rows(nd.out[0], yb, out0, rows);
      } else {  // dW per output-channel block, each block's partial dW kept in its own ACC
        // rows across the bands (accumulate): bit-identical to the whole layer
        const VMat dw = home(nd.out[0]).geom;
        for (uint32_t cb = 0; cb < dw.blocks(n_); ++cb) {
          ConvGeom bb = b;
          bb.cout = std::min(n_, b.cout - cb * n_);
          const VMat dyb{L.in[1], rows, bb.cout, round_up(rows, n_)};
          in(nd.in[1], dyb.base, rows, cb * home(nd.in[1]).geom.pitch + out0);
          const VMat sum{L.out[1] + cb * dw.pitch, dw.rows, bb.cout, dw.pitch};
          conv2d_backward_weights(pb_, bb, xb, dyb, sum, L.scratch, cb * conv_dw_acc_rows(bb, n_),
                                  oy0 != 0);
        }
      }
    } else {
      for (uint32_t cb = 0; cb * n_ < nd.pool.c; ++cb) pool_band_block(nd, L, oy0, lines, cb);
    }
  }
  if (nd.op == Op::ConvGradW) {
    const VMat sum = at(nd.out[0], L.out[1]);
    clear_padding_rows(pb_, sum);
    out(nd.out[0], sum.base, home(nd.out[0]).rows);
  }
}

void Emitter::pool_band_block(const Node& nd, const NodeLayout& L, uint32_t oy0, uint32_t lines,
                              uint32_t cb) {
  // Forward: output lines [l0, l0 + lines); gradient: input lines [l0, l0 + lines).
  const bool fwd = nd.op == Op::MaxPool;
  const uint32_t l0 = oy0;
  const LineBand lb = fwd ? out_band(nd.pool, l0, lines) : in_band(nd.pool, l0, l0 + lines);
  if (lb.oy_count == 0 || lb.h == 0) return;  // input lines no window reaches: dX stays +0
  PoolGeom b = pool_sub(nd.pool, lb);
  b.c = std::min(n_, nd.pool.c - cb * n_);
  const int x = fwd ? nd.in[0] : nd.out[0];
  const int t0 = fwd ? nd.out[0] : nd.in[0], t1 = fwd ? nd.out[1] : nd.in[1];
  const uint32_t line = b.w * b.batch, line0 = lb.r0 * line;
  const uint32_t out0 = lb.oy0 * b.wo() * b.batch, rows = lb.oy_count * b.wo() * b.batch;
  const uint32_t x_rows = lb.h * line;
  const VMat xb{fwd ? L.in[0] : L.out[0], x_rows, b.c, round_up(x_rows, n_)};
  const VMat y0{fwd ? L.out[0] : L.in[0], rows, b.c, round_up(rows, n_)};
  const VMat y1{fwd ? L.out[1] : L.in[1], rows, b.c, round_up(rows, n_)};
  auto row = [&](int t, uint32_t r) { return cb * home(t).geom.pitch + r; };
  if (fwd) {
    in(x, xb.base, x_rows, row(x, line0));
    maxpool_forward(pb_, b, xb, y0, y1, L.scratch);
    out(t0, y0.base, rows, row(t0, out0));
    out(t1, y1.base, rows, row(t1, out0));
  } else {  // in: argmax, dY; out: dX over the band's input lines
    in(t0, y0.base, rows, row(t0, out0));
    in(t1, y1.base, rows, row(t1, out0));
    maxpool_backward(pb_, b, y0, y1, xb, L.scratch);
    const uint32_t lo = std::max(l0, lb.r0), hi = std::min(l0 + lines, lb.r0 + lb.h);
    out(x, xb.base + (lo - lb.r0) * line, (hi - lo) * line, row(x, lo * line));
  }
}

// db = column sums of dY, rows in order from -0.0, over chunks of `rows` rows of every column
// block: each chunk's row sums continue from db (bmode dst), as detail::row_sum chains them.
void Emitter::bias_grad_chunks(const Node& nd, const NodeLayout& L, uint32_t rows) {
  constexpr uint32_t kMaxInner = 255;
  const VMat dy = home(nd.in[0]).geom;
  const uint32_t db = L.out[0];
  for (uint32_t r0 = 0; r0 < dy.rows; r0 += rows) {
    const uint32_t rc = std::min(rows, dy.rows - r0);
    const VMat c{L.in[0], rc, dy.cols, rc};
    in_rows(nd.in[0], c, r0, rc);
    for (uint32_t first = 0; first < rc; first += kMaxInner) {
      const bool seed = r0 == 0 && first == 0;
      Vector v;
      v.func = static_cast<uint8_t>(VecFunc::RSum);
      v.bmode = seed ? BMode::Imm : BMode::RowDst;
      v.dst = static_cast<uint16_t>(db);
      v.a = static_cast<uint16_t>(c.base + first);
      v.inner = static_cast<uint8_t>(std::min(kMaxInner, rc - first));
      v.outer = static_cast<uint16_t>(c.blocks(n_));
      v.a_inner_stride = 1;
      v.a_outer_stride = static_cast<uint16_t>(rc);
      v.dst_outer_stride = 1;
      v.b = seed ? 0x80000000u : db;  // -0.0, the identity of an fp sum
      pb_.vector(v);
    }
  }
  out(nd.out[0], db, home(nd.out[0]).rows);
}

void Emitter::node(int id) {
  int side = -1;
  bool leads = false;
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    if (p_.beside_of(static_cast<int>(k)) == id) side = static_cast<int>(k);
    leads = leads || p_.lead_of(static_cast<int>(k)) == id;
  }
  // merged into its main node's instructions (a lead: emitted ahead of them, right after it)
  if (p_.beside_of(id) >= 0 || leads) return;
  if (side < 0) {
    const size_t begin = pb_.size();
    body(id);
    out_.ranges.push_back(Emitted::Range{id, begin, pb_.size()});
    return;
  }
  // overlap.h: the nodes' instructions merged (side beside the lead's and main's, in that
  // order), a range per run of one node's
  const int lead = p_.lead_of(id);
  std::vector<Instruction> m;
  if (lead >= 0) m = capture([&] { body(lead); });
  const size_t lead_end = m.size();
  for (const Instruction& i : capture([&] { body(id); })) m.push_back(i);
  const std::vector<Instruction> s = capture([&] { body(side); });
  for (const Merged& x : merge_beside(m, s, chip_)) {
    const int owner = x.side ? side : (x.index < lead_end ? lead : id);
    if (out_.ranges.empty() || out_.ranges.back().node != owner ||
        out_.ranges.back().end != pb_.size())
      out_.ranges.push_back(Emitted::Range{owner, pb_.size(), pb_.size()});
    pb_.append(x.side ? s[x.index] : m[x.index]);
    out_.ranges.back().end = pb_.size();
  }
}

void Emitter::body(int id) {
  const Node& nd = g_.nodes[static_cast<size_t>(id)];
  const uint32_t chunk = p_.chunk[static_cast<size_t>(id)];
  const NodeLayout L = node_layout(g_, p_, id, chunk, chip_);
  const uint32_t depth = p_.depth.empty() ? 1 : std::max(1u, p_.depth[static_cast<size_t>(id)]);
  switch (nd.op) {
    case Op::Dense:
      dense(nd, L, chunk, depth);
      break;
    case Op::DenseGradX:
      dense_grad_x(nd, L, chunk, depth);
      break;
    case Op::DenseGradW:
      dense_grad_w(nd, L, chunk, depth);
      break;
    case Op::DenseUpdate:
      dense_update(nd, L, chunk, depth);
      break;
    case Op::BiasGrad:
      if (chunk != 0) {
        bias_grad_chunks(nd, L, chunk);
        break;
      }
      in(nd.in[0], L.in[0], home(nd.in[0]).rows);
      bias_grad(pb_, at(nd.in[0], L.in[0]), at(nd.out[0], L.out[0]));
      out(nd.out[0], L.out[0], home(nd.out[0]).rows);
      break;
    case Op::SoftmaxCe:
      softmax_ce(nd, L);
      break;
    case Op::AllReduce:  // allreduce.h
      emit_all_reduce(pb_, g_.pod, g_.pod_chip, addr(nd.in[0], 0), home(nd.in[0]).rows);
      break;
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
    case Op::AdamUpdate:
      flat(nd, L, chunk, depth);
      break;
    case Op::ConvPool:
    case Op::ConvPoolGrad: {
      const uint32_t lines = chunk != 0 ? chunk : band_lines_total(nd);
      const uint32_t group = p_.group.empty() ? 0 : p_.group[static_cast<size_t>(id)];
      const uint32_t gb = group != 0 ? group : (nd.conv.cout + n_ - 1) / n_;
      if (nd.op == Op::ConvPool) {
        conv_pool(nd, L, lines, gb, depth);
      } else {
        conv_pool_grad(nd, L, lines, gb, depth);
      }
      break;
    }
    case Op::Conv:
    case Op::ConvPad:
    case Op::ConvGradW:
    case Op::ConvGradX:
    case Op::MaxPool:
    case Op::MaxPoolGrad:
    case Op::AvgPool:
    case Op::AvgPoolGrad:
    case Op::GlobalAvgPool:
    case Op::GlobalAvgPoolGrad:
      if (chunk != 0) {
        band_node(nd, L, chunk);
      } else {
        image_node(nd, L);
      }
      break;
  }
}

}  // namespace

Emitted emit(const Graph& g, const Placement& p, const std::vector<int>& order,
             const TrainOptions& opt, const ChipParams& chip, uint32_t device_base) {
  Emitter e(g, p, opt, chip, device_base);
  for (int id : order) {
    try {
      e.node(id);
    } catch (const std::invalid_argument& err) {  // a kernel's shape check: name the node
      const Node& n = g.nodes[static_cast<size_t>(id)];
      throw std::invalid_argument("emit: node '" + n.name + "' (" + op_name(n.op) +
                                  "): " + err.what());
    }
  }
  return e.finish();
}

std::vector<Instruction> emit_residency(const Graph& g, const Placement& p, const ChipParams& chip,
                                        uint32_t device_base, bool store) {
  ProgramBuilder pb(chip);
  pb.set_host_ranges({HostRange{device_base, p.device_bytes, "training device memory"}});
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const int32_t v = p.resident(static_cast<int>(t));
    if (v < 0) continue;
    const uint32_t addr = device_base + p.homes[t].addr, rows = p.homes[t].rows;
    if (store) {
      pb.write_vmem(static_cast<uint32_t>(v), rows, addr);
    } else {
      pb.read_vmem(static_cast<uint32_t>(v), rows, addr);
    }
  }
  return pb.finish();
}

}  // namespace tpu::train::compiler

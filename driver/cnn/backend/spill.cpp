// SPDX-License-Identifier: Apache-2.0
// Spilling (compiler.h): every tensor in host memory, each layer image by image in tiles of output
// lines, double-buffered DMA of the tiles' input windows and output blocks; with the depthwise
// unit a 1x1 convolution and the depthwise Conv that alone reads it run fused, band by band (the
// convolution's output stays in the unified buffer).
#include <algorithm>
#include <array>
#include <tuple>

#include "backend/backend.h"
#include "backend/emitter.h"

namespace tpu::cnn::backend {

Program Emitter::run_spill() {
  Program prog;
  prog.batch = batch_;
  prog.micro_batch = 1;
  mb_ = 1;
  const size_t nl = cn_.layers.size();
  for (uint32_t i = 0; i < batch_; ++i)
    for (size_t l = 0; l < nl; ++l) {
      cur_layer_ = int(l);
      if (fuses_with_next(l)) {
        spill_fused(l, i);
        if (i == 0) ops_.push_back(Op{Nop{}, 0, int(l), int(l)});
        ++l;
      } else {
        spill_layer(l, i);
      }
      if (i == 0) ops_.push_back(Op{Nop{}, 0, int(l), int(l)});
    }
  cur_layer_ = -1;
  finish(prog);
  return prog;
}

uint32_t Emitter::host_of(int l, uint32_t img, bool shadow) const {
  if (l == kNetworkInput) return iaddr_ + img * cn_.input_bytes();
  if (shadow) return saddr_ + uint32_t(cn_.shadow_offset[size_t(l)]);
  if (size_t(l) + 1 == cn_.layers.size()) return oaddr_ + img * cn_.output_bytes();
  return saddr_ + uint32_t(cn_.spill_offset[size_t(l)]);
}

void Emitter::spill_windows(size_t li, int y0, int y1, std::vector<SpillSrc>& srcs) const {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  for (auto& s : srcs) {
    if (!conv_like(l)) {
      s.line0 = 0;
      s.lines = s.t->hp();
    } else if (p.packed) {
      s.line0 = uint32_t(y0);
      s.lines = uint32_t(y1 - y0);
    } else {
      s.line0 = uint32_t(y0 * l.sh + s.t->pt - l.pad_t);
      s.lines = uint32_t((y1 - y0 - 1) * l.sh + (l.kh - 1) * l.dh + 1);
    }
  }
}

Emitter::SpillPlan Emitter::plan_spill(size_t li, uint32_t img) const {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  const std::string where = "layer '" + l.name + "' (" + l.op + "): ";
  std::vector<SpillSrc> srcs;
  if (p.packed) {
    srcs.push_back({&cn_.input_tensor, host_of(kNetworkInput, img, false)});
  } else {
    for (int in : l.inputs)
      srcs.push_back({&cn_.input_of(int(li), in), host_of(in, img, cn_.reads_shadow(int(li), in))});
  }
  std::vector<const CompiledNetwork::Tensor*> outs{&cn_.tensors[li]};
  if (cn_.has_shadow(int(li))) outs.push_back(&cn_.shadows[li]);
  bool blockwise = !p.packed && conv_like(l);
  for (int ob = 0; ob < p.obs && blockwise; ++ob)
    for (const auto& t : p.terms[size_t(ob)]) blockwise &= t.ib == ob;
  const int out_h = conv_like(l) ? l.out.h : 1;
  // UB rows of one input buffer and one output buffer for tiles of `per` pooled lines.
  auto in_rows = [&](int per) {
    std::vector<SpillSrc> w = srcs;
    spill_windows(li, 0, conv_like(l) ? conv_lines(l, per) : 1, w);
    uint64_t r = 0;
    for (const auto& s : w) r += uint64_t(blockwise ? 1 : s.t->blocks) * s.block_rows();
    return r;
  };
  auto out_rows = [&](int per) {
    uint64_t r = 0;
    for (const auto* o : outs)
      r += conv_like(l) ? uint64_t(per + o->pt + o->pb) * o->wp() : o->block_rows();
    return r;
  };
  // The depthwise unit's tap slots keep their rows at the top of the unified buffer.
  const uint64_t taps = dw_reserved();
  const uint64_t ub = cn_.chip.ub_rows > taps ? cn_.chip.ub_rows - taps : 0;
  const uint64_t one = in_rows(1) + kOutBufs * out_rows(1);
  if (one > ub)
    throw Error(where + "one output line of one image needs " + std::to_string(one) +
                " unified-buffer rows (its input lines with the halo" +
                (blockwise ? "" : ", all channel blocks") +
                ", and three one-block output buffers), more than the " + std::to_string(ub) +
                " rows of the chip" +
                (taps ? " left beside the " + std::to_string(taps) + " depthwise tap-slot rows"
                      : std::string()) +
                ", by " + std::to_string(one - ub) + " rows");
  // The tallest tile with `nb` input buffers.
  auto tallest = [&](uint32_t nb) {
    int per = 1;
    if (conv_like(l))
      while (per < out_h && uint32_t(conv_lines(l, per + 1)) * uint32_t(p.cols_used) <= half_ &&
             nb * in_rows(per + 1) + kOutBufs * out_rows(per + 1) <= ub)
        ++per;
    return per;
  };
  // Each tile streams the layer's weights again and reads its input window: the DMA rows
  // per image. One input buffer allows taller tiles (fewer weight passes) but its reads
  // stall the array: they count twice.
  uint64_t weight_rows = 0;
  for (const auto& terms : p.terms)
    for (const auto& t : terms) weight_rows += t.switch_weights ? n_ : 0;
  auto dma_rows = [&](uint32_t nb) {
    const int per = tallest(nb);
    const uint64_t tiles = uint64_t((out_h + per - 1) / per);
    return tiles * (weight_rows + (nb == 1 ? 2 : 1) * in_rows(per));
  };
  uint32_t nbuf = 2;
  if (2 * in_rows(1) + kOutBufs * out_rows(1) > ub || (!blockwise && dma_rows(1) < dma_rows(2)))
    nbuf = 1;
  const int per = tallest(nbuf);
  SpillPlan plan{outs, blockwise, nbuf, uint32_t(in_rows(per)), uint32_t(out_rows(per)), {}};
  plan.tiles = spill_tiles(li, srcs, outs, per, blockwise);
  return plan;
}

std::vector<Emitter::SpillTile> Emitter::spill_tiles(
    size_t li, const std::vector<SpillSrc>& srcs,
    const std::vector<const CompiledNetwork::Tensor*>& outs, int per, bool blockwise) const {
  const QLayer& l = cn_.net.layers[li];
  const int out_h = conv_like(l) ? l.out.h : 1;
  std::vector<SpillTile> tiles;
  for (int py = 0; py < out_h; py += per) {
    SpillTile t;
    t.py0 = py;
    t.py1 = std::min(out_h, py + per);
    t.y0 = 0;
    t.y1 = 1;
    if (conv_like(l)) std::tie(t.y0, t.y1) = l.conv_lines_of(t.py0, t.py1);
    t.srcs = srcs;
    spill_windows(li, t.y0, t.y1, t.srcs);
    uint32_t at = 0;
    for (auto& s : t.srcs) {
      s.offset = at;
      at += (blockwise ? 1 : uint32_t(s.t->blocks)) * s.block_rows();
    }
    for (const auto* o : outs) {
      CompiledNetwork::Tensor b = *o;
      b.blocks = 1;
      uint32_t line0 = 0;
      if (conv_like(l)) {
        const bool first = t.py0 == 0, last = t.py1 == out_h;
        b.h = t.py1 - t.py0;
        b.pt = first ? o->pt : 0;
        b.pb = last ? o->pb : 0;
        line0 = first ? 0 : uint32_t(t.py0 + o->pt);
      }
      t.outs.push_back(b);
      t.out_line0.push_back(line0);
    }
    tiles.push_back(std::move(t));
  }
  return tiles;
}

std::vector<Emitter::SpillWork> Emitter::spill_work(size_t li,
                                                    const std::vector<SpillTile>& tiles) const {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  std::vector<SpillWork> work;
  auto add = [&](uint32_t k, const CompiledNetwork::LayerPlan::Chunk& c, int ob) {
    SpillWork w;
    w.tile = k;
    w.index = uint32_t(work.size());
    Unit& u = w.u;
    u.g0 = 0;
    u.g = 1;
    u.ob = ob;
    u.slot = c.slot_base + (ob - c.ob_begin) * p.divisors;
    u.gen = c.generation;
    u.py0 = tiles[k].py0;
    u.py1 = tiles[k].py1;
    u.y0 = tiles[k].y0;
    u.y1 = tiles[k].y1;
    u.rows = conv_like(l) ? uint32_t(u.y1 - u.y0) * uint32_t(p.cols_used) : 1;
    work.push_back(w);
  };
  // A depthwise layer on the unit (a unit reads only its own block) runs block by block, each
  // block's tiles in a row, so each block's tap rows are read once (dw_tap_slot).
  if (!p.dw_rows.empty()) {
    for (const auto& c : p.chunks)
      for (int ob = c.ob_begin; ob < c.ob_end; ++ob)
        for (uint32_t k = 0; k < tiles.size(); ++k) add(k, c, ob);
    return work;
  }
  for (uint32_t k = 0; k < tiles.size(); ++k)
    for (const auto& c : p.chunks)
      for (int ob = c.ob_begin; ob < c.ob_end; ++ob) add(k, c, ob);
  return work;
}

void Emitter::spill_layer(size_t li, uint32_t img) {
  const auto& p = cn_.layers[li];
  const SpillPlan plan = plan_spill(li, img);
  const std::vector<SpillTile>& tiles = plan.tiles;
  const auto& outs = plan.outs;
  const bool blockwise = plan.blockwise;
  const uint32_t nbuf = plan.nbuf, in_buf = plan.in_buf, out_buf = plan.out_buf;
  // A depthwise layer on the unit keeps its output buffers below its input buffers: the hull
  // of a dwconv's input and tap rows (the top slots) then leaves them out (dw_tap_slot).
  const bool outs_first = !p.dw_rows.empty();
  const uint32_t in0 = outs_first ? kOutBufs * out_buf : 0, out0 = outs_first ? 0 : nbuf * in_buf;
  auto in_base = [&](uint32_t k) { return in0 + (k % nbuf) * in_buf; };
  auto out_base = [&](uint32_t k) { return out0 + (k % kOutBufs) * out_buf; };
  // Input DMA: a tile's every block (into buffer k), or one unit's block ob.
  auto read = [&](const SpillTile& t, uint32_t buf, int ob) {
    for (const auto& s : t.srcs)
      for (int b = 0; b < s.t->blocks; ++b) {
        if (blockwise && b != ob) continue;
        op(ReadHost{
            HostDest::Ub, in_base(buf) + s.offset + (blockwise ? 0 : uint32_t(b)) * s.block_rows(),
            s.block_rows(), s.host + (uint32_t(b) * s.t->block_rows() + s.line0 * s.t->wp()) * n_});
      }
  };
  std::vector<SpillWork> work = spill_work(li, tiles);
  auto finish_unit = [&](const SpillWork& w) {  // activates into its output buffer, then its DMA
    const SpillTile& t = tiles[w.tile];
    load_generation(w.u.gen);
    load_lut(p.lut);
    Unit a = w.u;
    a.ob = 0;
    uint32_t at = out_base(w.index);
    for (size_t k = 0; k < t.outs.size(); ++k) {
      activates(li, a, t.outs[k], at, t.py0);
      const auto* o = outs[k];
      op(WriteHost{at, t.outs[k].block_rows(),
                   host_of(int(li), img, k == 1) +
                       (uint32_t(w.u.ob) * o->block_rows() + t.out_line0[k] * o->wp()) * n_});
      at += t.outs[k].block_rows();
    }
  };
  // The borders each output buffer holds (skip refilling the same ones).
  std::array<std::array<int, 4>, kOutBufs> filled;
  for (auto& f : filled) f = {-1, -1, -1, -1};
  auto buf_of = [&](const SpillWork& w) { return blockwise ? w.index : w.tile; };
  read(tiles[0], 0, work.front().u.ob);
  const SpillWork* prev = nullptr;
  for (auto& w : work) {
    const SpillTile& t = tiles[w.tile];
    const bool first_of_tile = &w == &work.front() || (&w - 1)->tile != w.tile;
    if (nbuf == 1 && &w != &work.front() && (blockwise || first_of_tile))
      read(t, buf_of(w), w.u.ob);
    const std::array<int, 4> key{int(li), t.outs[0].pt, t.outs[0].pb, t.outs[0].h};
    if (filled[w.index % kOutBufs] != key) {
      uint32_t at = out_base(w.index);
      for (const auto& o : t.outs) {
        fill_borders(o, at, 1);
        at += o.block_rows();
      }
      filled[w.index % kOutBufs] = key;
    }
    w.u.acc = acc_alloc(w.u.rows);
    // The previous unit's activates move in among these matmuls only if the ring gave this
    // unit other accumulator rows (it may wrap onto them).
    if (prev && !(w.u.acc >= prev->u.acc + prev->u.rows || prev->u.acc >= w.u.acc + w.u.rows)) {
      finish_unit(*prev);
      prev = nullptr;
    }
    const size_t mm_begin = ops_.size();
    spill_matmuls(li, t, w.u, in_base(buf_of(w)), blockwise);
    const size_t act_begin = ops_.size();
    if (prev) finish_unit(*prev);
    if (nbuf == 2) {  // prefetch the next buffer's inputs
      const SpillWork* next = &w + 1 <= &work.back() ? &w + 1 : nullptr;
      if (next && blockwise) read(tiles[next->tile], buf_of(*next), next->u.ob);
      if (next && !blockwise && first_of_tile && w.tile + 1 < tiles.size())
        read(tiles[w.tile + 1], w.tile + 1, 0);
    }
    interleave(mm_begin, act_begin);
    prev = &w;
  }
  if (prev) finish_unit(*prev);
}

void Emitter::spill_matmuls(size_t li, const SpillTile& tl, const Unit& u, uint32_t buf,
                            bool blockwise) {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  if (!p.dw_rows.empty() && blockwise) {  // the window of block u.ob from the buffer's start
    dw_conv(li, u, buf + tl.srcs[0].offset, dw_tap_slot(li, u.ob), u.acc);
    return;
  }
  const auto& terms = p.terms[size_t(u.ob)];
  for (const auto& t : terms) {
    const SpillSrc& s = tl.srcs[p.packed ? 0 : size_t(t.input)];
    const auto& in = *s.t;
    const uint32_t base = buf + s.offset + (blockwise ? 0 : uint32_t(t.ib) * s.block_rows());
    Matmul mm;
    mm.accumulate = &t != &terms.front();
    mm.a_unsigned = in.is_unsigned;
    mm.w_unsigned = false;
    mm.switch_weights = t.switch_weights;
    mm.acc_addr = uint16_t(u.acc);
    if (l.kind == LayerKind::Dense) {
      const uint32_t pix =
          p.packed ? 0
                   : (uint32_t(t.tap / in.w + in.pt) * in.wp() + uint32_t(t.tap % in.w + in.pl));
      mm.ub_addr = base + pix;
      mm.inner = 1;
      mm.inner_stride = 1;
      mm.outer = 1;
      mm.outer_stride = in.image_rows();
      op(mm, mm.switch_weights ? caddr_ + t.tile : 0);
      mxu_rows_ += 1;
      continue;
    }
    if (p.packed) {
      mm.ub_addr = base;
      mm.inner_stride = 1;
      mm.outer_stride = uint32_t(p.cols_used);
    } else {
      const int ky = t.tap / l.kw, kx = t.tap % l.kw;
      mm.ub_addr = base + uint32_t(ky * l.dh) * in.wp() + uint32_t(kx * l.dw + in.pl - l.pad_l);
      mm.inner_stride = uint8_t(l.sw);
      mm.outer_stride = uint32_t(l.sh) * in.wp();
    }
    mm.inner = uint16_t(p.cols_used);
    mm.outer = uint16_t(u.y1 - u.y0);
    op(mm, mm.switch_weights ? caddr_ + t.tile : 0);
    mxu_rows_ += uint64_t(mm.inner) * mm.outer;
  }
}

bool Emitter::fuses_with_next(size_t li) const {
  const size_t di = li + 1;
  if (!fuse_dw_ || li == 0 || di >= cn_.layers.size() || cn_.layers[di].dw_rows.empty())
    return false;
  const QLayer& e = cn_.net.layers[li];
  const QLayer& d = cn_.net.layers[di];
  if (cn_.layers[li].packed || e.kind != LayerKind::Conv || e.inputs.size() != 1) return false;
  if (e.kh != 1 || e.kw != 1 || e.sh != 1 || e.sw != 1 || e.pad_t || e.pad_l || e.pad_b ||
      e.pad_r || e.pool_k != 1 || e.per_pixel_divisor())
    return false;
  if (d.inputs.size() != 1 || d.inputs[0] != int(li) || d.pool_k != 1 || d.per_pixel_divisor())
    return false;
  if (cn_.last_use[li + 1] != int(di) || cn_.has_shadow(int(li)) ||
      cn_.reads_shadow(int(di), int(li)))
    return false;
  return plan_fused(li).per > 0;
}

Emitter::FusedPlan Emitter::plan_fused(size_t li) const {
  const size_t di = li + 1;
  const QLayer& d = cn_.net.layers[di];
  const auto& pe = cn_.layers[li];
  const auto& pd = cn_.layers[di];
  const auto& t = cn_.tensors[li];
  const auto& x = cn_.input_of(int(li), cn_.net.layers[li].inputs[0]);
  std::vector<const CompiledNetwork::Tensor*> outs{&cn_.tensors[di]};
  if (cn_.has_shadow(int(di))) outs.push_back(&cn_.shadows[di]);
  FusedPlan plan;
  for (const auto& c : pe.chunks) plan.mids = std::max(plan.mids, uint32_t(c.ob_end - c.ob_begin));
  const uint64_t taps = dw_reserved();
  const uint64_t ub = cn_.chip.ub_rows > taps ? cn_.chip.ub_rows - taps : 0;
  auto window = [&](int per) { return uint32_t((per - 1) * d.sh + d.kh); };
  auto out_rows = [&](int per) {
    uint64_t r = 0;
    for (const auto* o : outs) r += uint64_t(per + o->pt + o->pb) * o->wp();
    return r;
  };
  // Pipelined (spill_fused), the accumulators hold the matmuls of kFusedAhead + 1 blocks
  // and the dwconvs of two, each in rows of its own.
  const uint64_t ring = cn_.chip.acc_rows - cn_.fill_rows;
  auto e_rows = [&](int per) {
    return std::min<uint64_t>(window(per), uint64_t(t.h)) * uint64_t(pe.cols_used);
  };
  auto d_rows = [&](int per) { return uint64_t(per) * uint64_t(pd.cols_used); };
  auto fits = [&](int per) {
    if (plan.pipelined && (kFusedAhead + 1) * e_rows(per) + 2 * d_rows(per) > ring) return false;
    return e_rows(per) <= half_ && d_rows(per) <= half_ &&
           2 * uint64_t(window(per)) * x.wp() * uint64_t(x.blocks) +
                   plan.mids * uint64_t(window(per)) * t.wp() + kOutBufs * out_rows(per) <=
               ub;
  };
  plan.pipelined = pipe_fused_;
  if (plan.pipelined && !fits(1)) plan.pipelined = false;  // then as before, unpipelined
  if (!fits(1)) return plan;
  int per = 1;
  while (per < d.out.h && fits(per + 1)) ++per;
  plan.per = per;
  plan.e_rows = uint32_t(e_rows(per));
  plan.d_rows = uint32_t(d_rows(per));
  plan.x_buf = window(per) * x.wp() * uint32_t(x.blocks);
  plan.mid_buf = window(per) * t.wp();
  plan.out_buf = uint32_t(out_rows(per));
  plan.tiles = spill_tiles(di, {SpillSrc{&t, 0}}, outs, per, true);
  return plan;
}

std::vector<Emitter::FusedBlock> Emitter::fused_blocks(size_t li, const FusedPlan& plan) const {
  const size_t di = li + 1;
  const auto& pe = cn_.layers[li];
  const auto& pd = cn_.layers[di];
  const auto& t = cn_.tensors[li];
  std::vector<FusedBlock> blocks;
  for (uint32_t k = 0; k < plan.tiles.size(); ++k) {
    const SpillTile& dt = plan.tiles[k];
    const SpillSrc& w = dt.srcs[0];  // the band's window: padded lines of the fused tensor
    const int r0 = std::max(0, int(w.line0) - t.pt);
    const int r1 = std::min(t.h, int(w.line0 + w.lines) - t.pt);
    for (const auto& c : pe.chunks)
      for (int ob = c.ob_begin; ob < c.ob_end; ++ob) {
        FusedBlock b;
        b.band = k;
        b.first_of_band = blocks.empty() || blocks.back().band != k;
        b.first_of_chunk = ob == c.ob_begin;
        // Pipelined, the window buffers go down from the top, so the buffer the next block's
        // activates write lies below the hull of this block's dwconv (window up to tap slot).
        const uint32_t m = uint32_t(ob - c.ob_begin);
        b.mid = uint32_t(plan.pipelined ? plan.mids - 1 - m : m);
        Unit& e = b.e;
        e.g = 1;
        e.ob = ob;
        e.slot = c.slot_base + (ob - c.ob_begin) * pe.divisors;
        e.gen = c.generation;
        e.py0 = e.y0 = r0;
        e.py1 = e.y1 = r1;
        e.rows = uint32_t(r1 - r0) * uint32_t(pe.cols_used);
        const auto* dc = &pd.chunks.front();
        for (const auto& c2 : pd.chunks)
          if (ob >= c2.ob_begin && ob < c2.ob_end) dc = &c2;
        Unit& d = b.d;
        d.g = 1;
        d.ob = ob;
        d.slot = dc->slot_base + (ob - dc->ob_begin) * pd.divisors;
        d.gen = dc->generation;
        d.py0 = dt.py0;
        d.py1 = dt.py1;
        d.y0 = dt.y0;
        d.y1 = dt.y1;
        d.rows = uint32_t(d.y1 - d.y0) * uint32_t(pd.cols_used);
        blocks.push_back(b);
      }
  }
  return blocks;
}

void Emitter::fused_read_x(const FusedRun& r, uint32_t band) {
  cur_layer_ = int(r.li);
  const SpillSrc& s = r.xts[band].srcs[0];
  for (int b = 0; b < s.t->blocks; ++b)
    op(ReadHost{HostDest::Ub, r.x_base(band) + uint32_t(b) * s.block_rows(), s.block_rows(),
                s.host + (uint32_t(b) * s.t->block_rows() + s.line0 * s.t->wp()) * n_});
}

void Emitter::fused_expand_mm(FusedRun& r, FusedBlock& b) {
  cur_layer_ = int(r.li);
  b.e.acc = r.plan.pipelined ? uint32_t(r.e_count++ % (kFusedAhead + 1)) * r.plan.e_rows
                             : acc_alloc(b.e.rows);
  spill_matmuls(r.li, r.xts[b.band], b.e, r.x_base(b.band), false);
}

void Emitter::fused_expand_act(FusedRun& r, const FusedBlock& b) {
  cur_layer_ = int(r.li);
  const auto& t = cn_.tensors[r.li];
  const SpillSrc& w = r.plan.tiles[b.band].srcs[0];
  CompiledNetwork::Tensor win = t;  // one block's window: padded lines of the band
  win.blocks = 1;
  win.h = b.e.y1 - b.e.y0;
  win.pt = std::max(0, t.pt - int(w.line0));
  win.pb = std::max(0, int(w.line0 + w.lines) - t.pt - t.h);
  const uint32_t at = r.mid0 + b.mid * r.plan.mid_buf;
  const std::array<int, 3> key{win.pt, win.pb, win.h};
  if (!r.plan.pipelined || r.mid_filled[b.mid] != key) fill_borders(win, at, 1);
  r.mid_filled[b.mid] = key;
  load_generation(b.e.gen);
  load_lut(cn_.layers[r.li].lut);
  Unit a = b.e;
  a.ob = 0;
  activates(r.li, a, win, at, b.e.y0);
}

void Emitter::fused_depthwise(FusedRun& r, FusedBlock& b) {
  const size_t di = r.li + 1;
  cur_layer_ = int(di);
  b.d.acc = r.plan.pipelined ? uint32_t(kFusedAhead + 1) * r.plan.e_rows +
                                   uint32_t(r.d_count++ % 2) * r.plan.d_rows
                             : acc_alloc(b.d.rows);
  dw_conv(di, b.d, r.mid0 + b.mid * r.plan.mid_buf, dw_tap_slot(di, b.d.ob), b.d.acc);
}

void Emitter::fused_depthwise_act(FusedRun& r, const FusedBlock& b) {
  const size_t di = r.li + 1;
  cur_layer_ = int(di);
  const SpillTile& dt = r.plan.tiles[b.band];
  load_generation(b.d.gen);
  load_lut(cn_.layers[di].lut);
  Unit a = b.d;
  a.ob = 0;
  const uint32_t k = r.ring++ % kOutBufs;
  uint32_t at = r.out0 + k * r.plan.out_buf;
  // The borders depend on whether the band is the first or the last (and on its height).
  const std::array<int, 3> key{dt.py0 == 0, dt.py1 == cn_.net.layers[di].out.h, dt.py1 - dt.py0};
  const bool fill = !r.plan.pipelined || r.out_filled[k] != key;
  r.out_filled[k] = key;
  for (size_t j = 0; j < dt.outs.size(); ++j) {
    const auto* o = j == 0 ? &cn_.tensors[di] : &cn_.shadows[di];  // the output, its shadow
    if (fill) fill_borders(dt.outs[j], at, 1);
    activates(di, a, dt.outs[j], at, dt.py0);
    op(WriteHost{at, dt.outs[j].block_rows(),
                 host_of(int(di), r.img, j == 1) +
                     (uint32_t(b.d.ob) * o->block_rows() + dt.out_line0[j] * o->wp()) * n_});
    at += dt.outs[j].block_rows();
  }
}

void Emitter::spill_fused(size_t li, uint32_t img) {
  FusedRun r;
  r.li = li;
  r.img = img;
  r.plan = plan_fused(li);
  const int xin = cn_.net.layers[li].inputs[0];
  const auto& t = cn_.tensors[li];
  // From the bottom: the output ring, the two input windows, the window buffers (then the
  // tap slots at the top), so the hull of a dwconv's window and tap rows (dw_tap_slot) holds
  // neither the output buffers its activates write nor the input windows the next DMA fills.
  r.out0 = 0;
  r.x0 = kOutBufs * r.plan.out_buf;
  r.mid0 = r.x0 + 2 * r.plan.x_buf;
  r.mid_filled.assign(r.plan.mids, {-1, -1, -1});
  for (auto& f : r.out_filled) f = {-1, -1, -1};
  std::vector<FusedBlock> blocks = fused_blocks(li, r.plan);
  // The band's input window (every block of the convolution's input) into buffer band % 2.
  r.xts.resize(r.plan.tiles.size());
  for (size_t k = 0; k < r.xts.size(); ++k) {
    const SpillSrc& w = r.plan.tiles[k].srcs[0];
    r.xts[k].srcs = {
        SpillSrc{&cn_.input_of(int(li), xin), host_of(xin, img, cn_.reads_shadow(int(li), xin))}};
    spill_windows(li, std::max(0, int(w.line0) - t.pt),
                  std::min(t.h, int(w.line0 + w.lines) - t.pt), r.xts[k].srcs);
  }
  if (!r.plan.pipelined) {  // per band and chunk: all the convolution's blocks, then the dwconvs
    for (size_t i = 0; i < blocks.size();) {
      if (blocks[i].first_of_band) fused_read_x(r, blocks[i].band);
      size_t e = i + 1;
      while (e < blocks.size() && !blocks[e].first_of_chunk) ++e;
      for (size_t j = i; j < e; ++j) {
        fused_expand_mm(r, blocks[j]);
        fused_expand_act(r, blocks[j]);
      }
      for (size_t j = i; j < e; ++j) {
        fused_depthwise(r, blocks[j]);
        fused_depthwise_act(r, blocks[j]);
      }
      i = e;
    }
    return;
  }
  // Software-pipelined: block j's convolution activates and dwconv follow block j + 1's
  // matmuls, and block j - 1's depthwise activates follow block j's dwconv, so the array, the
  // activation unit and the depthwise unit work on three blocks at once (the chip runs each
  // unit concurrently; the window buffers and accumulator rows of the blocks in flight differ).
  // The next band's input is read after this band's first matmuls.
  size_t mm = 0;  // blocks whose matmuls are emitted
  for (size_t j = 0; j < blocks.size(); ++j) {
    for (; mm <= j + kFusedAhead && mm < blocks.size(); ++mm) {
      if (mm == 0) fused_read_x(r, 0);
      fused_expand_mm(r, blocks[mm]);
      if (blocks[mm].first_of_band && blocks[mm].band + 1 < r.plan.tiles.size())
        fused_read_x(r, blocks[mm].band + 1);
    }
    fused_expand_act(r, blocks[j]);
    fused_depthwise(r, blocks[j]);
    if (j > 0) fused_depthwise_act(r, blocks[j - 1]);
  }
  fused_depthwise_act(r, blocks.back());
  acc_next_ = uint32_t(kFusedAhead + 1) * r.plan.e_rows + 2 * r.plan.d_rows;
}

}  // namespace tpu::cnn::backend

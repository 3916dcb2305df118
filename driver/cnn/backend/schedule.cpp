// SPDX-License-Identifier: Apache-2.0
// Scheduling: a micro-batch's layers as units (a group of images, an output block, a band of
// output lines), each unit's matmuls with the previous unit's activates spread among them, the
// first two layers interleaved image by image, and the accumulator ring.
#include <algorithm>
#include <array>
#include <tuple>

#include "backend/backend.h"
#include "backend/emitter.h"

namespace tpu::cnn::backend {

Emitter::Emitter(const CompiledNetwork& cn, uint32_t batch, uint32_t caddr, uint32_t iaddr,
                 uint32_t oaddr, const ProgramOptions& opt)
    : cn_(cn),
      n_(cn.chip.N),
      batch_(batch),
      caddr_(caddr),
      iaddr_(iaddr),
      oaddr_(oaddr),
      overlap_(opt.overlap_layers),
      fuse_dw_(opt.fuse_depthwise),
      pipe_fused_(opt.pair_depthwise),
      saddr_(opt.scratch_addr) {
  half_ = (cn.chip.acc_rows - cn.fill_rows) / 2;
  if (cn.spill) {
    if (!saddr_)
      throw Error(cn.net.name + ": the network spills to host memory: the program needs " +
                  std::to_string(cn.scratch_bytes) +
                  " bytes of scratch (ProgramOptions::scratch_addr), none given");
    shadow_item_.assign(cn_.layers.size(), 0);
    return;
  }
  pair_first_ = overlap_ && opt.pair_first_layers && pairs_first_layers();
  pair_dw_.assign(cn.layers.size(), 0);
  if (overlap_ && opt.pair_depthwise)
    for (size_t li = pair_first_ ? 2 : 0; li + 1 < cn.layers.size(); ++li)
      if ((li == 0 || !pair_dw_[li - 1]) && pairs_with_depthwise(li)) pair_dw_[li] = 1;
  plan_memory(opt);
}

Program Emitter::run() {
  if (cn_.spill) return run_spill();
  Program prog;
  prog.batch = batch_;
  prog.micro_batch = mb_;
  // Parameters (fill slots once; a slot generation when it changes) are loaded right after
  // the first input images, not before: the first matmul needs only those, and the parameter
  // DMA then overlaps it (measured: the array starts 230 cycles earlier).
  const size_t nl = cn_.layers.size();
  for (uint32_t i0 = 0; i0 < batch_; i0 += mb_) {
    const uint32_t m = std::min(mb_, batch_ - i0);
    if (!cn_.packed_input && !input_ready_) {
      cur_layer_ = 0;
      read_images(base_[0], i0, m);
    }
    if (!cn_.packed_input) input_ready_ = false;
    for (size_t l = 0; l < nl; ++l) {
      if (int(l) == input_ahead_ && i0 + m < batch_)
        prefetch_input(i0 + m, std::min(mb_, batch_ - i0 - m));
      cur_layer_ = int(l);
      if (pair_first_ && l == 0) {
        first_layers_paired(i0, m);
        if (i0 == 0) ops_.push_back(Op{Nop{}, 0, 0, 0});
        ++l;
      } else if (pair_dw_[l]) {
        depthwise_paired(l, i0, m);
        if (i0 == 0) ops_.push_back(Op{Nop{}, 0, int(l), int(l)});
        cur_layer_ = int(++l);
      } else {
        layer(l, i0, m);
      }
      if (i0 == 0) ops_.push_back(Op{Nop{}, 0, int(l), int(l)});
    }
    flush_pending();
    cur_layer_ = -1;
    if (cn_.output_bytes() == cn_.output_rows * n_) {
      op(WriteHost{base_[nl], m * cn_.output_rows, oaddr_ + i0 * cn_.output_bytes()});
    } else {  // one per image: each starts at a 16-byte aligned host address
      for (uint32_t j = 0; j < m; ++j)
        op(WriteHost{base_[nl] + j * cn_.output_rows, cn_.output_rows,
                     oaddr_ + (i0 + j) * cn_.output_bytes()});
    }
  }
  finish(prog);
  return prog;
}

void Emitter::prefetch_input(uint32_t first, uint32_t m) {
  cur_layer_ = 0;
  if (cn_.packed_input)
    stage_input(first, 0, make_units(0, m, 0).front().g, 0);
  else
    read_images(base_[0], first, m);
  input_ready_ = true;
}

void Emitter::layer(size_t li, uint32_t i0, uint32_t m) {
  std::vector<Unit> units = make_units(li, m, 0);
  emit_units(units, i0, m);
}

bool Emitter::pairs_first_layers() const {
  if (cn_.layers.size() < 3 || !cn_.packed_input) return false;
  const QLayer &a = cn_.net.layers[0], &b = cn_.net.layers[1];
  const auto &pa = cn_.layers[0], &pb = cn_.layers[1];
  if (a.kind != LayerKind::Conv || b.kind != LayerKind::Conv || a.pool_k < 2) return false;
  if (b.inputs != std::vector<int>{0} || pa.chunks.size() != 1 || pb.chunks.size() != 1 ||
      pa.chunks[0].generation != pb.chunks[0].generation || pa.lut >= 0 || pb.lut >= 0)
    return false;
  if (uint32_t(pa.lines_used) * uint32_t(pa.cols_used) > half_ ||
      uint32_t(pb.lines_used) * uint32_t(pb.cols_used) > half_)
    return false;
  uint64_t act_rows = 0, mm_rows = 0;  // per image, over the output blocks
  for (int ob = 0; ob < pa.obs; ++ob) {
    act_rows += uint64_t(a.out.h) * uint64_t(a.out.w) * uint64_t(a.pool_k) * uint64_t(a.pool_k);
    mm_rows += uint64_t(pa.lines_used) * uint64_t(pa.cols_used) * pa.terms[size_t(ob)].size();
  }
  return act_rows > mm_rows;
}

void Emitter::first_layers_paired(uint32_t i0, uint32_t m) {
  const std::vector<Unit> first = make_units(0, m, 0), second = make_units(1, m, 1);
  std::vector<Unit> units;
  auto second_of = [&](uint32_t g0, uint32_t g) {
    for (const Unit& u : second)
      if (u.g0 >= g0 && u.g0 < g0 + g) units.push_back(u);
  };
  uint32_t prev_g0 = 0, prev_g = 0;
  for (size_t k = 0; k < first.size();) {
    const uint32_t g0 = first[k].g0, g = first[k].g;
    for (; k < first.size() && first[k].g0 == g0; ++k) units.push_back(first[k]);
    if (prev_g) second_of(prev_g0, prev_g);
    prev_g0 = g0;
    prev_g = g;
  }
  second_of(prev_g0, prev_g);
  emit_units(units, i0, m);
}

bool Emitter::pairs_with_depthwise(size_t li) const {
  const size_t di = li + 1;
  if (cn_.spill || di >= cn_.layers.size() || cn_.layers[di].dw_rows.empty()) return false;
  const QLayer& e = cn_.net.layers[li];
  const QLayer& d = cn_.net.layers[di];
  const auto &pe = cn_.layers[li], &pd = cn_.layers[di];
  if (pe.packed || e.kind != LayerKind::Conv || !pe.dw_rows.empty() || e.pool_k != 1 ||
      e.per_pixel_divisor() || d.inputs != std::vector<int>{int(li)} || d.pool_k != 1 ||
      d.per_pixel_divisor())
    return false;
  // Chunk by chunk in one generation each, the same output blocks (assign_quant_slots).
  if (cn_.last_use[li + 1] != int(di) || cn_.has_shadow(int(li)) ||
      pe.chunks.size() != pd.chunks.size() || pe.lut >= 0 || pd.lut >= 0)
    return false;
  for (size_t c = 0; c < pe.chunks.size(); ++c)
    if (pe.chunks[c].generation != pd.chunks[c].generation ||
        pe.chunks[c].ob_begin != pd.chunks[c].ob_begin ||
        pe.chunks[c].ob_end != pd.chunks[c].ob_end)
      return false;
  return uint32_t(pe.lines_used) * uint32_t(pe.cols_used) <= half_ &&
         uint32_t(pd.lines_used) * uint32_t(pd.cols_used) <= half_;
}

void Emitter::depthwise_paired(size_t li, uint32_t i0, uint32_t m) {
  const std::vector<Unit> conv = make_units(li, m, 1), dw = make_units(li + 1, m, 1);
  auto of_image = [](const std::vector<Unit>& from, uint32_t img) {
    std::vector<Unit> r;
    for (const Unit& u : from)
      if (u.g0 == img) r.push_back(u);
    return r;
  };
  // Chunk by chunk (each in one slot generation, pairs_with_depthwise): its units of the
  // convolution's image 0, then per image k its dwconvs of image k with its convolution units
  // of image k + 1 spread evenly among them.
  std::vector<Unit> units;
  for (const auto& c : cn_.layers[li].chunks) {
    auto in_chunk = [&c](const std::vector<Unit>& from) {
      std::vector<Unit> r;
      for (const Unit& u : from)
        if (u.ob >= c.ob_begin && u.ob < c.ob_end) r.push_back(u);
      return r;
    };
    const std::vector<Unit> cc = in_chunk(conv), cd = in_chunk(dw);
    for (const Unit& u : of_image(cc, 0)) units.push_back(u);
    for (uint32_t k = 0; k < m; ++k) {
      const std::vector<Unit> a = of_image(cd, k), b = of_image(cc, k + 1);
      size_t next_b = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        units.push_back(a[i]);
        while (next_b < b.size() && (next_b + 1) * a.size() <= (i + 1) * b.size())
          units.push_back(b[next_b++]);
      }
      while (next_b < b.size()) units.push_back(b[next_b++]);
    }
  }
  emit_units(units, i0, m);
}

std::vector<Emitter::Unit> Emitter::make_units(size_t li, uint32_t m,
                                               uint32_t images_per_unit) const {
  const QLayer& l = cn_.net.layers[li];
  const auto& p = cn_.layers[li];
  // Group size and bands.
  uint32_t g;
  std::vector<std::pair<int, int>> bands;  // pooled lines
  if (conv_like(l)) {
    const uint32_t rows = uint32_t(p.lines_used) * uint32_t(p.cols_used);
    if (rows <= half_) {
      g = std::max<uint32_t>(1, std::min(m, half_ / rows));
      bands.push_back({0, l.out.h});
    } else {
      g = 1;
      int per = 1;
      while (per < l.out.h && uint32_t(conv_lines(l, per + 1)) * uint32_t(p.cols_used) <= half_)
        ++per;
      for (int y = 0; y < l.out.h; y += per) bands.push_back({y, std::min(l.out.h, y + per)});
    }
  } else {
    g = std::min(m, half_);
    bands.push_back({0, 1});
  }
  if (p.packed) g = std::min(g, g0_);
  if (images_per_unit) g = std::min(g, images_per_unit);
  std::vector<Unit> units;
  for (const auto& c : p.chunks) {
    uint32_t gi = 0;
    for (uint32_t s = 0; s < m; s += g, ++gi) {
      bool first = true;
      for (int ob = c.ob_begin; ob < c.ob_end; ++ob)
        for (const auto& b : bands) {
          Unit u;
          u.li = li;
          u.g0 = s;
          u.g = std::min(g, m - s);
          u.ob = ob;
          u.slot = c.slot_base + (ob - c.ob_begin) * p.divisors;
          u.gen = c.generation;
          u.py0 = b.first;
          u.py1 = b.second;
          if (conv_like(l)) {
            std::tie(u.y0, u.y1) = l.conv_lines_of(b.first, b.second);
            u.rows = uint32_t(u.y1 - u.y0) * uint32_t(p.cols_used);
          } else {
            u.rows = 1;
          }
          u.first_of_group = first;
          u.group_index = gi;
          if (s + g < m) {
            u.next_group_g0 = s + g;
            u.next_group_g = std::min(g, m - s - g);
          }
          first = false;
          units.push_back(u);
        }
    }
  }
  return units;
}

void Emitter::unit_activates(const Unit& u) {
  const int layer = cur_layer_;
  cur_layer_ = int(u.li);
  activates(u.li, u);
  cur_layer_ = layer;
}

void Emitter::emit_units(std::vector<Unit>& units, uint32_t i0, uint32_t m) {
  // The unit among whose matmuls each layer's output borders are written: its first; in a
  // paired emission the second layer's last (its first units wait for the first layer's
  // pooling activates: fills there would hold the array back, at the end they fit).
  std::vector<const Unit*> fill_at(cn_.layers.size(), nullptr);
  for (const Unit& u : units)
    if (!fill_at[u.li] || (u.li != units.front().li)) fill_at[u.li] = &u;
  const Unit* prev = nullptr;
  uint32_t prev_rows = 0;
  for (Unit& u : units) {
    const size_t li = u.li;
    const QLayer& l = cn_.net.layers[li];
    const auto& p = cn_.layers[li];
    cur_layer_ = int(li);
    const uint32_t rows = conv_like(l) ? u.g * u.rows : u.g;
    u.acc = acc_alloc(rows);
    // The previous unit's activates read its accumulators; they can only move in among this
    // unit's matmuls if this unit writes other rows (the ring may wrap onto them).
    const bool disjoint = !prev || u.acc >= prev->acc + prev_rows || prev->acc >= u.acc + rows;
    // (In a paired emission the previous unit may be of the layer this one reads: then its
    // activates must come first if they write images this unit reads.)
    // (A dwconv unit reads only its own block of its input.)
    bool reads_prev = false;
    if (prev && prev->li != li)
      for (int in : l.inputs)
        reads_prev |= in == int(prev->li) && u.g0 < prev->g0 + prev->g && prev->g0 < u.g0 + u.g &&
                      (p.dw_rows.empty() || prev->ob == u.ob);
    if (prev && (!disjoint || reads_prev)) unit_activates(*prev);
    // The previous layer's last unit: the same, and this unit must not read its images.
    bool carry = false;
    if (!prev && pending_.valid) {
      const Unit& q = pending_.unit;
      const bool acc_free = u.acc >= q.acc + pending_.rows || q.acc >= u.acc + rows;
      // (A dwconv unit reads only its own block of its input.)
      bool reads = false;
      for (int in : l.inputs) reads |= in == int(q.li) && (p.dw_rows.empty() || q.ob == u.ob);
      const bool images_free = u.g0 + u.g <= q.g0 || q.g0 + q.g <= u.g0;
      carry = acc_free && (!reads || images_free) && !p.packed;
      if (!carry) flush_pending();
    }
    if (p.packed && u.first_of_group) {
      if (u.group_index == 0) {
        if (!input_ready_) stage_input(i0, u.g0, u.g, 0);
        input_ready_ = false;
        if (&u == &units.front()) load_generation(u.gen);
      }
    }
    const size_t mm_begin = ops_.size();
    matmuls(li, u);
    if (p.packed && u.first_of_group && u.next_group_g)
      stage_input(i0, u.next_group_g0, u.next_group_g, (u.group_index + 1) % 2);
    // Paired layers (first_layers_paired): the other layer's unit, whose activates are ready
    // now, starts them right after this unit's first matmul (the array and the activation
    // unit both busy at once; spread later, its results would hold back the next unit of
    // its own layer; first, they would wait for its last matmul and the array with them).
    // A dwconv unit's activates of the other layer go after its dwconv (and its tap rows'
    // read_host before it): ahead of it they would hold the dwconv until the activation unit
    // is free, and the depthwise unit with it (pair_depthwise).
    const bool other_layer = prev && disjoint && !reads_prev && prev->li != li;
    if (other_layer) {
      const size_t act_begin = ops_.size();
      unit_activates(*prev);
      if (p.dw_rows.empty())
        std::rotate(ops_.begin() + long(mm_begin) + 1, ops_.begin() + long(act_begin), ops_.end());
    }
    if (prev && disjoint && !reads_prev && !other_layer) {
      const size_t act_begin = ops_.size();
      unit_activates(*prev);
      interleave(mm_begin, act_begin);
    }
    if (carry) {
      const size_t act_begin = ops_.size();
      unit_activates(pending_.unit);
      pending_.valid = false;
      interleave(mm_begin, act_begin);
    }
    // The layer's output borders: only its consumers read them, so they too go among a
    // unit's matmuls rather than before them (a run of activates would hold the matmuls
    // back while the activation unit still drains the previous layer).
    if (fill_at[li] == &u) {
      const size_t act_begin = ops_.size();
      fill_borders(li, m);
      interleave(mm_begin, act_begin);
    }
    prev = &u;
    prev_rows = rows;
  }
  if (prev) {
    if (overlap_)
      pending_ = Pending{*prev, prev_rows, true};
    else
      unit_activates(*prev);
  }
}

void Emitter::flush_pending() {
  if (!pending_.valid) return;
  unit_activates(pending_.unit);
  pending_.valid = false;
}

void interleave(std::vector<Op>& ops, size_t mm_begin, size_t act_begin) {
  const size_t m = act_begin - mm_begin, a = ops.size() - act_begin;
  if (m == 0 || a == 0) return;
  std::vector<Op> merged;
  merged.reserve(m + a);
  size_t next_act = 0;
  for (size_t i = 0; i < m; ++i) {
    merged.push_back(ops[mm_begin + i]);
    // Activate k goes after matmul-block element ceil((k + 1) * m / (a + 1)) (1-based).
    while (next_act < a && (i + 1) * (a + 1) >= (next_act + 1) * m)
      merged.push_back(ops[act_begin + next_act++]);
  }
  while (next_act < a) merged.push_back(ops[act_begin + next_act++]);
  std::copy(merged.begin(), merged.end(), ops.begin() + long(mm_begin));
}

void Emitter::interleave(size_t mm_begin, size_t act_begin) {
  backend::interleave(ops_, mm_begin, act_begin);
}

uint32_t Emitter::acc_alloc(uint32_t rows) {
  const uint32_t ring = cn_.chip.acc_rows - cn_.fill_rows;
  if (acc_next_ + rows > ring) acc_next_ = 0;
  const uint32_t at = acc_next_;
  acc_next_ += rows;
  return at;
}

}  // namespace tpu::cnn::backend

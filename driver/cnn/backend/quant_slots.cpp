// SPDX-License-Identifier: Apache-2.0
// Quantization slots: the fill sources of padded tensors at the top of the slots, and every
// (layer, output block, divisor) a slot in generations that the program reloads as it reaches
// them (read_host to PARAM). Slot images (bias, multiplier, shift / zero point / clamp per
// channel) go into the constants.
#include "backend/backend.h"

namespace tpu::cnn::backend {

namespace {

// A slot of a generation: layer `layer`'s output block `ob`, divisor `divisor`.
struct SlotOf {
  int layer, ob, divisor;
};

// The slots left for layers (the fill slots take the top ones).
int regular_slots(const CompiledNetwork& cn) {
  return int(cn.chip.qp_slots) - int(cn.fill_slots.size());
}

// Layer li's output blocks ob .. ob + take - 1 (each with its `divisors` slots) as a chunk of p
// in the last generation.
void add_chunk(std::vector<std::vector<SlotOf>>& gens, size_t li, CompiledNetwork::LayerPlan& p,
               int ob, int take, int divisors) {
  CompiledNetwork::LayerPlan::Chunk c;
  c.ob_begin = ob;
  c.ob_end = ob + take;
  c.generation = int(gens.size()) - 1;
  c.slot_base = int(gens.back().size());
  for (int o = ob; o < ob + take; ++o)
    for (int d = 0; d < divisors; ++d) gens.back().push_back({int(li), o, d});
  p.chunks.push_back(c);
}

// Layer li's chunks of output blocks, appended to the generations (a new one when the rest of
// the layer does not fit the current one).
void chunk_layer(const CompiledNetwork& cn, size_t li, std::vector<std::vector<SlotOf>>& gens,
                 CompiledNetwork::LayerPlan& p) {
  const QLayer& l = cn.net.layers[li];
  const int slots = regular_slots(cn);
  const int nd = int(l.divisors().size());
  if (nd > slots)
    throw Error("layer '" + l.name + "' (" + l.op + "): " + std::to_string(nd) +
                " different averaging divisors at its borders need " + std::to_string(nd) +
                " quantization slots; the chip has " + std::to_string(slots) + " for layers");
  p.divisors = nd;
  int ob = 0;
  while (ob < p.obs) {
    const int used = int(gens.back().size());
    if (used + nd > slots || (p.obs - ob <= slots / nd && used + (p.obs - ob) * nd > slots))
      gens.emplace_back();
    const int room = (slots - int(gens.back().size())) / nd;
    const int take = std::min(room, p.obs - ob);
    add_chunk(gens, li, p, ob, take, nd);
    ob += take;
  }
}

// One slot image (12*N bytes: bias[N], mult[N], misc[N], int32 little-endian) at `at`.
void write_slot(CompiledNetwork& cn, size_t at, const int32_t* bias, const int32_t* mult,
                const uint32_t* misc) {
  const uint32_t n = cn.chip.N;
  for (uint32_t c = 0; c < n; ++c) {
    put32(cn.constants, at + 4 * c, uint32_t(bias[c]));
    put32(cn.constants, at + 4 * (n + c), uint32_t(mult[c]));
    put32(cn.constants, at + 4 * (2 * n + c), misc[c]);
  }
}

// The slot of (layer, output block, divisor) s at `at`.
void write_layer_slot(CompiledNetwork& cn, const SlotOf& s, size_t at) {
  const uint32_t n = cn.chip.N;
  std::vector<int32_t> bias(n), mult(n);
  std::vector<uint32_t> misc(n);
  const QLayer& l = cn.net.layers[size_t(s.layer)];
  const auto& p = cn.layers[size_t(s.layer)];
  const size_t requant_at = size_t(s.divisor) * size_t(l.cout());
  const int out_zp = l.act == Activation::Lut ? l.pre_q.zero_point : l.out_q.zero_point;
  for (uint32_t c = 0; c < n; ++c) {
    const int oc = s.ob * int(n) + int(c);
    const uint32_t zp = uint32_t(out_zp) & 0xFF;
    if (oc < l.cout()) {
      bias[c] = p.chip_bias[size_t(oc)];
      mult[c] = l.mult[requant_at + size_t(oc)];
      misc[c] = uint32_t(l.shift[requant_at + size_t(oc)]) | zp << 8 |
                (uint32_t(l.lo) & 0xFF) << 16 | (uint32_t(l.hi) & 0xFF) << 24;
    } else {  // padding channels: the zero point (the next layer's weights there are 0)
      bias[c] = 0;
      mult[c] = 0;
      misc[c] = (uint32_t(l.out_q.zero_point) & 0xFF) << 8 | (uint32_t(l.lo) & 0xFF) << 16 |
                (uint32_t(l.hi) & 0xFF) << 24;
    }
  }
  write_slot(cn, at, bias.data(), mult.data(), misc.data());
}

// The fill slots: bias 0, multiplier 0, the border value as the zero point.
void write_fill_slots(CompiledNetwork& cn) {
  const uint32_t n = cn.chip.N;
  std::vector<int32_t> zeros(n, 0);
  cn.fill_slots_offset = uint32_t(cn.constants.size());
  cn.constants.resize(cn.constants.size() + cn.fill_slots.size() * 12 * n, 0);
  for (size_t z = 0; z < cn.fill_slots.size(); ++z) {
    const std::vector<uint32_t> misc(n, (uint32_t(cn.fill_slots[z].first) & 0xFF) << 8);
    write_slot(cn, cn.fill_slots_offset + z * 12 * n, zeros.data(), zeros.data(), misc.data());
  }
}

}  // namespace

void plan_fill_slots(CompiledNetwork& cn) {
  // Fill sources for padded tensors (the host writes the input's border).
  const size_t nl = cn.net.layers.size();
  for (size_t i = 0; i < 2 * nl; ++i) {
    const auto& t = i < nl ? cn.tensors[i] : cn.shadows[i - nl];
    if (!t.padded()) continue;
    const std::pair<int, bool> key{t.fill, t.is_unsigned};
    if (std::find(cn.fill_slots.begin(), cn.fill_slots.end(), key) == cn.fill_slots.end())
      cn.fill_slots.push_back(key);
  }
  cn.fill_rows = cn.fill_slots.empty() ? 0 : std::min<uint32_t>(128, cn.chip.acc_rows / 8);
  if (int(cn.fill_slots.size()) >= int(cn.chip.qp_slots))
    throw Error("too many distinct border values for the quantization slots");
}

namespace {

// Whether layer li is a convolution whose only reader, li + 1, is a depthwise layer on the unit
// (so ProgramOptions::pair_depthwise may run them interleaved; it pairs chunks of one
// generation). Never on a chip without the depthwise unit.
bool feeds_depthwise(const CompiledNetwork& cn, size_t li) {
  const size_t di = li + 1;
  return di < cn.net.layers.size() && !cn.layers[di].dw_rows.empty() &&
         cn.layers[li].dw_rows.empty() && cn.net.layers[di].inputs == std::vector<int>{int(li)};
}

size_t slots_of(const CompiledNetwork& cn, size_t li) {
  return size_t(cn.layers[li].obs) * cn.net.layers[li].divisors().size();
}

// The two fit one generation together but not the rest of the current one: li starts a new one.
bool new_generation_for_pair(const CompiledNetwork& cn, size_t li, size_t used) {
  const size_t both = slots_of(cn, li) + slots_of(cn, li + 1);
  const size_t slots = size_t(regular_slots(cn));
  return used > 0 && both <= slots && used + both > slots;
}

// The two do not fit one generation together but have the same output blocks: chunks of both
// layers' blocks ob .. ob + k - 1 share a generation each, so each chunk pairs (a depthwise
// block reads only the same block of its input). False (nothing assigned) if not possible.
bool chunk_pair(CompiledNetwork& cn, size_t li, std::vector<std::vector<SlotOf>>& gens) {
  auto& pe = cn.layers[li];
  auto& pd = cn.layers[li + 1];
  const int ne = int(cn.net.layers[li].divisors().size());
  const int nd = int(cn.net.layers[li + 1].divisors().size());
  const int slots = regular_slots(cn);
  const int most = slots / (ne + nd);
  if (pe.obs != pd.obs || most < 1 || (ne + nd) * pe.obs <= slots) return false;
  const int chunks = (pe.obs + most - 1) / most, k = (pe.obs + chunks - 1) / chunks;  // balanced
  pe.divisors = ne;
  pd.divisors = nd;
  for (int ob = 0; ob < pe.obs; ob += k) {
    if (!gens.back().empty()) gens.emplace_back();
    const int take = std::min(k, pe.obs - ob);
    add_chunk(gens, li, pe, ob, take, ne);
    add_chunk(gens, li + 1, pd, ob, take, nd);
  }
  return true;
}

}  // namespace

void assign_quant_slots(CompiledNetwork& cn) {
  // Generations of (layer, output block, divisor) slots; a layer with per-pixel divisors
  // (compiler.h) has one slot per divisor for each output block.
  std::vector<std::vector<SlotOf>> gens(1);
  for (size_t li = 0; li < cn.net.layers.size(); ++li) {
    if (feeds_depthwise(cn, li) && chunk_pair(cn, li, gens)) {
      ++li;  // the depthwise layer's chunks too
      continue;
    }
    if (feeds_depthwise(cn, li) && new_generation_for_pair(cn, li, gens.back().size()))
      gens.emplace_back();
    chunk_layer(cn, li, gens, cn.layers[li]);
  }
  const uint32_t n = cn.chip.N;
  for (const auto& g : gens) {
    CompiledNetwork::Generation gen;
    gen.offset = uint32_t(cn.constants.size());
    gen.slots = int(g.size());
    cn.constants.resize(cn.constants.size() + g.size() * 12 * n, 0);
    for (size_t s = 0; s < g.size(); ++s) write_layer_slot(cn, g[s], gen.offset + s * 12 * n);
    cn.generations.push_back(gen);
  }
  write_fill_slots(cn);
}

}  // namespace tpu::cnn::backend

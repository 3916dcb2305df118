// SPDX-License-Identifier: Apache-2.0
// Tensor placement in the unified buffer: every tensor of a micro-batch gets rows from its
// producer to its last consumer (first fit, largest first); the micro-batch is the most images
// whose tensors fit.
#include <algorithm>
#include <array>
#include <tuple>

#include "backend/backend.h"
#include "backend/emitter.h"

namespace tpu::cnn::backend {

uint64_t place_first_fit(std::vector<LiveRange>& items) {
  auto overlap = [](const LiveRange& a, const LiveRange& b) {
    return (a.birth <= b.death && b.birth <= a.death) || a.again <= b.death || b.again <= a.death;
  };
  // Largest first, each at the lowest rows free during its whole life (first fit by
  // decreasing size packs interval lifetimes tighter than placing in program order).
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return items[a].rows > items[b].rows; });
  std::vector<char> placed(items.size(), 0);
  uint64_t peak = 0;
  for (size_t i : order) {
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (size_t j = 0; j < items.size(); ++j)
      if (placed[j] && overlap(items[i], items[j]))
        taken.push_back({items[j].base, items[j].base + items[j].rows});
    std::sort(taken.begin(), taken.end());
    uint64_t at = 0;
    for (const auto& t : taken) {
      if (at + items[i].rows <= t.first) break;
      at = std::max(at, t.second);
    }
    items[i].base = at;
    placed[i] = 1;
    peak = std::max(peak, at + items[i].rows);
  }
  return peak;
}

bool Emitter::place(uint32_t m, uint32_t g0, int ahead, std::vector<uint32_t>* bases,
                    uint64_t* peak) const {
  const size_t nl = cn_.layers.size();
  std::vector<LiveRange> items(nl + 1);
  items[0].birth = cn_.packed_input ? 0 : -1;
  // (Paired first layers: the staged input lives while layer 1 runs too.)
  items[0].death = cn_.packed_input ? (pair_first_ ? 1 : 0) : std::max(0, cn_.last_use[0]);
  items[0].rows = cn_.packed_input ? 2ull * g0 * cn_.input_rows : uint64_t(m) * cn_.input_rows;
  // The next micro-batch's input, read while this one's layers from `ahead` on still run.
  if (ahead >= 0) items[0].again = ahead;
  for (size_t l = 0; l < nl; ++l) {
    items[l + 1].birth = int(l);
    // A layer's last activates may still run during the next layer (overlap_layers): its
    // output lives at least until then, even if nothing reads it.
    items[l + 1].death = l + 1 == nl ? int(nl) : std::max(int(l) + 1, cn_.last_use[l + 1]);
    items[l + 1].rows = uint64_t(m) * cn_.tensors[l].image_rows();
  }
  // Paired with a depthwise layer (depthwise_paired): the inputs of layer l live while l + 1
  // runs (its units of the next image follow the dwconvs).
  for (size_t l = 0; l + 1 < nl; ++l)
    if (pair_dw_[l])
      for (int in : cn_.net.layers[l].inputs) {
        LiveRange& it = items[size_t(in + 1)];
        it.death = std::max(it.death, int(l) + 1);
      }
  for (size_t l = 0; l < nl; ++l) {  // shadows: live until their last max-pool reads them
    if (!cn_.has_shadow(int(l))) continue;
    LiveRange it;
    it.birth = int(l);
    it.death = int(l) + 1;
    for (size_t c = l + 1; c < nl; ++c)
      if (cn_.reads_shadow(int(c), int(l))) it.death = int(c);
    it.rows = uint64_t(m) * cn_.shadows[l].image_rows();
    items.push_back(it);
    shadow_item_[l] = items.size() - 1;
  }
  *peak = place_first_fit(items);
  if (*peak + dw_reserved() > cn_.chip.ub_rows) return false;
  bases->clear();
  for (const auto& it : items) bases->push_back(uint32_t(it.base) + dw_bottom());
  return true;
}

void Emitter::plan_memory(const ProgramOptions& opt) {
  shadow_item_.assign(cn_.layers.size(), 0);
  uint32_t g0max = 1;
  if (cn_.packed_input) {
    const auto& l0 = cn_.layers.front();
    const uint32_t rows0 = uint32_t(l0.lines_used) * uint32_t(l0.cols_used);
    g0max = std::max<uint32_t>(1, rows0 <= half_ ? half_ / rows0 : 1);
  }
  uint32_t cap = std::min<uint32_t>(batch_, 4095);
  if (opt.max_micro_batch) cap = std::min(cap, opt.max_micro_batch);
  uint64_t peak = 0;
  const std::vector<int> ahead = input_ahead_candidates();
  for (uint32_t m = cap; m >= 1; --m) {
    const uint32_t g0 = std::min(m, g0max);
    // The earliest read-ahead of the next input that keeps m images, else none.
    input_ahead_ = -1;
    bool fits = false;
    if (m < batch_)
      for (int e : ahead)
        if (place(m, g0, e, &base_, &peak)) {
          input_ahead_ = e;
          fits = true;
          break;
        }
    if (fits || place(m, g0, -1, &base_, &peak)) {
      mb_ = m;
      g0_ = g0;
      return;
    }
  }
  uint64_t largest = 0;
  for (const auto& t : cn_.tensors) largest = std::max<uint64_t>(largest, t.image_rows());
  throw Error(cn_.net.name + ": one image does not fit in the unified buffer (" +
              std::to_string(cn_.chip.ub_rows) + " rows): the live tensors need " +
              std::to_string(peak) + " rows at their peak (input " +
              std::to_string(cn_.input_rows) + " rows, largest tensor " + std::to_string(largest) +
              " rows)");
}

std::vector<int> Emitter::input_ahead_candidates() const {
  const int nl = int(cn_.layers.size());
  int e0 = std::max(cn_.packed_input ? (pair_first_ ? 2 : 1) : cn_.last_use[0] + 1, 1);
  for (int l = 0; l < nl; ++l)
    if (!cn_.layers[size_t(l)].dw_rows.empty()) e0 = std::max(e0, l + 1);
  std::vector<int> r;
  for (int e = e0; e < nl; ++e)
    if (!pair_dw_[size_t(e - 1)] && !(pair_first_ && e == 1)) r.push_back(e);
  return r;
}

uint32_t Emitter::tensor_base(int l) const { return base_[size_t(l + 1)]; }

uint32_t Emitter::shadow_base(size_t l) const { return base_[shadow_item_[l]]; }

uint32_t Emitter::input_base(int consumer, int producer) const {
  return cn_.reads_shadow(consumer, producer) ? shadow_base(size_t(producer))
                                              : tensor_base(producer);
}

uint32_t Emitter::staging_base(uint32_t buf) const { return base_[0] + buf * g0_ * cn_.input_rows; }

bool fits_without_spill(const CompiledNetwork& cn) {
  try {
    Emitter(cn, 1, 0, 0, 0, ProgramOptions{});
    return true;
  } catch (const Error&) {
    return false;
  }
}

void plan_scratch(CompiledNetwork& cn) {
  cn.spill = !fits_without_spill(cn);
  if (!cn.spill) return;
  const uint32_t n = cn.chip.N;
  const size_t nl = cn.net.layers.size();
  if (n < 16)
    throw Error(cn.net.name + ": one image does not fit in the unified buffer (" +
                std::to_string(cn.chip.ub_rows) +
                " rows) and spilling to host memory needs N >= 16 (16-byte aligned DMA of "
                "single rows), but N = " +
                std::to_string(n));
  uint64_t at = 0;
  auto take = [&](const CompiledNetwork::Tensor& t) {
    const uint64_t off = at;
    at += (uint64_t(t.image_rows()) * n + 15) / 16 * 16;
    return off;
  };
  cn.spill_offset.assign(nl, 0);
  cn.shadow_offset.assign(nl, 0);
  for (size_t l = 0; l < nl; ++l) {
    if (l + 1 < nl) cn.spill_offset[l] = take(cn.tensors[l]);
    if (cn.has_shadow(int(l))) cn.shadow_offset[l] = take(cn.shadows[l]);
  }
  cn.scratch_bytes = at;
}

}  // namespace tpu::cnn::backend

// SPDX-License-Identifier: Apache-2.0
#include "tiled_ops.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <functional>
#include <stdexcept>

#include "text.h"

namespace tpu {

namespace {

using detail::format;

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + i] = static_cast<uint8_t>(x >> (8 * i));
}

}  // namespace

// ---- spec

void MatmulSpec::validate() const {
  auto bad = [](const std::string& s) { throw std::invalid_argument("matmul spec: " + s); };
  if (m == 0 || k == 0 || n == 0) bad(format("m, k, n = %u, %u, %u (each must be >= 1)", m, k, n));
  if (!bias.empty() && bias.size() != n) {
    bad(format("bias has %zu values (expected 0 or n = %u)", bias.size(), n));
  }
  if (mult.size() > 1 && mult.size() != n) {
    bad(format("mult has %zu values (expected 0, 1 or n = %u)", mult.size(), n));
  }
  if (shift.size() > 1 && shift.size() != n) {
    bad(format("shift has %zu values (expected 0, 1 or n = %u)", shift.size(), n));
  }
  for (size_t i = 0; i < shift.size(); ++i) {
    if (shift[i] > 63) bad(format("shift[%zu] = %u (allowed 0..63)", i, shift[i]));
  }
  const int lo = out_unsigned ? 0 : -128, hi = out_unsigned ? 255 : 127;
  const char* type = out_unsigned ? "uint8" : "int8";
  if (zero_point < lo || zero_point > hi) {
    bad(format("zero_point = %d (allowed %d..%d for %s output)", zero_point, lo, hi, type));
  }
  if (func == ActFunc::Clamp) {
    if (clamp_lo < lo || clamp_lo > hi)
      bad(format("clamp_lo = %d (allowed %d..%d for %s output)", clamp_lo, lo, hi, type));
    if (clamp_hi < lo || clamp_hi > hi)
      bad(format("clamp_hi = %d (allowed %d..%d for %s output)", clamp_hi, lo, hi, type));
  }
  if (func == ActFunc::Lut && lut.size() != 256) {
    bad(format("func = lut needs a 256-byte lut (got %zu bytes)", lut.size()));
  }
  if (static_cast<unsigned>(func) > 3) bad("func is not identity, relu, clamp or lut");
  if (raw) {  // isa.md: a raw activate has func 0 and a signed output; mult and misc unused
    if (func != ActFunc::Identity)
      bad("raw (int32 output) with func = " + std::string(act_func_name(func)) +
          " (expected identity)");
    if (out_unsigned) bad("raw (int32 output) with out_unsigned (expected a signed output)");
    if (zero_point != 0)
      bad(format("raw (int32 output) with zero_point = %d (expected 0)", zero_point));
    if (!mult.empty() || !shift.empty())
      bad(
          format("raw (int32 output) with %zu mult and %zu shift values (expected none: raw "
                 "output is not requantized)",
                 mult.size(), shift.size()));
  }
}

int32_t MatmulSpec::bias_at(uint32_t col) const { return bias.empty() ? 0 : bias[col]; }
int32_t MatmulSpec::mult_at(uint32_t col) const {
  return mult.empty() ? 1 : mult.size() == 1 ? mult[0] : mult[col];
}
unsigned MatmulSpec::shift_at(uint32_t col) const {
  return shift.empty() ? 0 : shift.size() == 1 ? shift[0] : shift[col];
}
uint32_t MatmulSpec::misc_at(uint32_t col) const {
  const bool clamp = func == ActFunc::Clamp;
  const uint32_t lo = static_cast<uint8_t>(clamp ? clamp_lo : 0);
  const uint32_t hi = static_cast<uint8_t>(clamp ? clamp_hi : 0);
  return (shift_at(col) & 63u) | uint32_t{static_cast<uint8_t>(zero_point)} << 8 | lo << 16 |
         hi << 24;
}

// ---- packing

std::vector<uint8_t> pack_rows(const std::vector<uint8_t>& a, uint32_t m, uint32_t k,
                               uint32_t tile) {
  if (a.size() != size_t{m} * k) {
    throw std::invalid_argument(format("pack_rows: %zu bytes for a %u x %u matrix (expected %zu)",
                                       a.size(), m, k, size_t{m} * k));
  }
  const size_t row = size_t{ceil_div(k, tile)} * tile;
  std::vector<uint8_t> out(size_t{m} * row, 0);
  for (size_t r = 0; r < m; ++r) std::copy_n(&a[r * k], k, &out[r * row]);
  return out;
}

std::vector<uint8_t> unpack_rows(const std::vector<uint8_t>& padded, uint32_t m, uint32_t cols,
                                 uint32_t tile) {
  const size_t row = size_t{ceil_div(cols, tile)} * tile;
  if (padded.size() < size_t{m} * row) {
    throw std::invalid_argument(
        format("unpack_rows: %zu bytes for %u rows of %zu", padded.size(), m, row));
  }
  std::vector<uint8_t> out(size_t{m} * cols);
  for (size_t r = 0; r < m; ++r) std::copy_n(&padded[r * row], cols, &out[r * cols]);
  return out;
}

std::vector<uint8_t> pack_weights(const std::vector<uint8_t>& w, uint32_t k, uint32_t n,
                                  uint32_t tile) {
  if (w.size() != size_t{k} * n) {
    throw std::invalid_argument(
        format("pack_weights: %zu bytes for a %u x %u matrix (expected %zu)", w.size(), k, n,
               size_t{k} * n));
  }
  const uint32_t kt = ceil_div(k, tile), nt = ceil_div(n, tile);
  const size_t tb = size_t{tile} * tile;
  std::vector<uint8_t> out(size_t{kt} * nt * tb, 0);
  for (uint32_t j = 0; j < nt; ++j) {
    for (uint32_t t = 0; t < kt; ++t) {
      uint8_t* dst = &out[(size_t{j} * kt + t) * tb];
      for (uint32_t r = 0; r < tile && t * tile + r < k; ++r) {
        const uint32_t kk = t * tile + r;
        const uint32_t cols = std::min(tile, n - j * tile);
        std::copy_n(&w[size_t{kk} * n + size_t{j} * tile], cols, &dst[size_t{r} * tile]);
      }
    }
  }
  return out;
}

namespace {

// Every column has the same bias, mult and misc: one slot image serves every block.
bool quant_uniform(const MatmulSpec& spec) {
  for (uint32_t c = 1; c < spec.n; ++c) {
    if (spec.bias_at(c) != spec.bias_at(0) || spec.mult_at(c) != spec.mult_at(0) ||
        spec.misc_at(c) != spec.misc_at(0)) {
      return false;
    }
  }
  return true;
}

}  // namespace

uint32_t quant_images(const MatmulSpec& spec, uint32_t tile) {
  return quant_uniform(spec) ? 1 : ceil_div(spec.n, tile);
}

std::vector<uint8_t> pack_quant(const MatmulSpec& spec, uint32_t tile) {
  const bool uniform = quant_uniform(spec);
  const uint32_t images = quant_images(spec, tile);
  std::vector<uint8_t> out(size_t{images} * 12 * tile, 0);
  for (uint32_t j = 0; j < images; ++j) {
    const size_t base = size_t{j} * 12 * tile;
    for (uint32_t c = 0; c < tile; ++c) {
      // The image of a uniform spec serves every block: all its columns are column 0's.
      const uint32_t col = uniform ? 0 : j * tile + c;
      if (col >= spec.n) continue;  // padding columns: bias = mult = misc = 0
      put32(out, base + 4 * c, static_cast<uint32_t>(spec.bias_at(col)));
      put32(out, base + 4 * (tile + c), static_cast<uint32_t>(spec.mult_at(col)));
      put32(out, base + 4 * (2 * tile + c), spec.misc_at(col));
    }
  }
  return out;
}

// ---- planning

std::string MatmulPlan::describe() const {
  std::string sizes;
  for (size_t i = 0; i < chunk_sizes.size(); ++i) {
    if (i > 0 && chunk_sizes[i] == chunk_sizes[i - 1] && i + 1 < chunk_sizes.size() &&
        chunk_sizes[i + 1] == chunk_sizes[i]) {
      if (sizes.size() < 4 || sizes.compare(sizes.size() - 4, 4, " ...") != 0) sizes += " ...";
      continue;
    }
    sizes += (sizes.empty() ? "" : " ") + std::to_string(chunk_sizes[i]);
  }
  std::string s = format("%u K tiles x %u column blocks, %u chunk%s of rows [%s]", kt, nt, chunks,
                         chunks == 1 ? "" : "s", sizes.c_str());
  s += format(", UB %u rows (%s), ACC %u rows (%u region%s), %u slot%s", ub_rows_used,
              double_buffered_ub ? "double-buffered" : "single", acc_rows_used, acc_buffers,
              acc_buffers == 1 ? "" : "s", slots_used, slots_used == 1 ? "" : "s");
  if (reload_quant) s += format(" (reloaded in batches of %u)", slot_batch);
  s += format(", %" PRIu64 " weight tiles, lookahead %u", weight_tiles_read(), weight_lookahead);
  return s;
}

namespace {

[[noreturn]] void bad_plan(const std::string& s) {
  throw std::invalid_argument("plan_matmul: " + s);
}

// Quantization slots: all the images at once, or reloaded in batches (two banks if they fit).
void plan_quant_slots(const MatmulSpec& spec, uint32_t n, uint32_t slots_avail, MatmulPlan& p) {
  p.quant_images = quant_images(spec, n);
  if (p.quant_images <= slots_avail) {
    p.slots_used = p.quant_images;
    return;
  }
  p.reload_quant = true;
  p.slot_banks = slots_avail >= 2 ? 2 : 1;
  p.slot_batch = slots_avail / p.slot_banks;
  p.slots_used = p.slot_banks * p.slot_batch;
}

// What bounds a chunk of rows of A.
struct ChunkLimits {
  uint32_t ub_avail = 0, acc_avail = 0;
  uint32_t out_rows_per_row = 0;  // UB rows of one output row
  uint64_t align = 1;             // every chunk but the last: a multiple of this many rows
  uint64_t max_rows = 0;
  uint64_t per_row = 0;  // UB rows per row (A + output)
  uint64_t acc_limit = 0;
  uint64_t floor_a(uint64_t v) const { return v / align * align; }
  uint64_t ceil_a(uint64_t v) const { return (v + align - 1) / align * align; }
};

// ACC regions, used by the column blocks in turn: while one block's activate reads its
// region, the next blocks' matmuls write the others. With one matmul per block (kt = 1) the
// activate unit is as busy as the MXU, so it gets three regions and runs two blocks behind.
// Fewer when the ACC space could not hold an aligned chunk per region while M needs chunks.
void plan_acc_regions(const MatmulSpec& spec, ChunkLimits& l, MatmulPlan& p) {
  l.acc_limit = 0;
  for (uint32_t regions : {p.kt == 1 ? 3u : 2u, 2u, 1u}) {
    p.acc_buffers = regions;
    l.acc_limit = l.acc_avail / regions;
    if (l.acc_limit > 0 &&
        (spec.m <= l.acc_limit || l.floor_a(std::min(l.acc_limit, l.max_rows)) > 0))
      break;
  }
  if (l.acc_limit == 0) {
    p.acc_buffers = 1;
    l.acc_limit = l.acc_avail;
  }
}

// Rows per chunk. Every chunk streams all kt*nt weight tiles again, so a chunk should have
// enough rows for its matmuls to cover the tile loads (about tile bytes / (AXI bytes / 2)
// cycles each); `edge` is twice that, the size of the first and the last chunk.
void plan_chunks(const ChipParams& params, const MatmulSpec& spec, const MatmulResources& res,
                 const ChunkLimits& l, MatmulPlan& p) {
  const uint64_t single_limit = std::min({l.max_rows, l.acc_limit, l.ub_avail / l.per_row});
  const uint64_t double_limit =
      l.floor_a(std::min({l.max_rows, l.acc_limit, l.ub_avail / (2 * l.per_row)}));
  const uint64_t edge =
      res.edge_chunk_rows
          ? res.edge_chunk_rows
          : std::max<uint64_t>(8, 2 * params.tile_bytes() / (params.axi_width / 16));
  // `rows` in chunks of at most `limit` (a multiple of align), all but the last aligned.
  auto balanced = [&](uint64_t rows, uint64_t limit) {
    const uint64_t size =
        std::min(limit, l.ceil_a((rows + ceil_div(rows, limit) - 1) / ceil_div(rows, limit)));
    for (uint64_t done = 0; done < rows; done += size) {
      p.chunk_sizes.push_back(static_cast<uint32_t>(std::min(size, rows - done)));
    }
  };
  if (double_limit >= 1 && spec.m > double_limit &&
      spec.m >= 3 * std::min(l.ceil_a(edge), double_limit)) {
    // Ramp, double-buffered: edge, balanced middle chunks, about edge.
    const uint64_t e = std::min(l.ceil_a(edge), double_limit);
    uint64_t middle = l.floor_a(spec.m - 2 * e);
    if (spec.m - e - middle > double_limit) middle += l.align;
    p.double_buffered_ub = true;
    p.chunk_sizes.push_back(static_cast<uint32_t>(e));
    if (middle > 0) balanced(middle, double_limit);
    p.chunk_sizes.push_back(static_cast<uint32_t>(spec.m - e - middle));
  } else if (spec.m <= single_limit) {
    p.chunk_sizes.push_back(spec.m);
  } else if (double_limit >= 1) {
    p.double_buffered_ub = true;
    balanced(spec.m, double_limit);
  } else if (l.floor_a(single_limit) >= 1) {
    balanced(spec.m, l.floor_a(single_limit));
  } else {
    bad_plan(format("the matmul does not fit: a chunk of rows needs kt + nt = %" PRIu64
                    " UB rows per row (%u K tiles + %u output rows) and at least %" PRIu64
                    " rows (16-byte aligned host addresses), but %u UB rows, %u ACC rows are "
                    "available",
                    l.per_row, p.kt, l.out_rows_per_row, l.align, l.ub_avail, l.acc_avail));
  }
  p.chunks = static_cast<uint32_t>(p.chunk_sizes.size());
  p.chunk_rows = *std::max_element(p.chunk_sizes.begin(), p.chunk_sizes.end());
}

// The UB regions of A and the output (one, or two of each when double-buffered) and the ACC
// regions.
void place_regions(const MatmulResources& res, uint32_t out_rows_per_row, MatmulPlan& p) {
  const uint32_t a_rows = p.chunk_rows * p.kt, out_rows = p.chunk_rows * out_rows_per_row;
  const uint32_t ub = res.ub_base;
  if (p.double_buffered_ub) {
    p.ub_a[0] = ub;
    p.ub_a[1] = ub + a_rows;
    p.ub_out[0] = ub + 2 * a_rows;
    p.ub_out[1] = ub + 2 * a_rows + out_rows;
    p.ub_rows_used = 2 * (a_rows + out_rows);
  } else {
    p.ub_a[0] = p.ub_a[1] = ub;
    p.ub_out[0] = p.ub_out[1] = ub + a_rows;
    p.ub_rows_used = a_rows + out_rows;
  }
  for (uint32_t i = 0; i < 3; ++i) {
    p.acc[i] = res.acc_base + (i < p.acc_buffers ? i * p.chunk_rows : 0);
  }
  p.acc_rows_used = p.acc_buffers * p.chunk_rows;
}

}  // namespace

MatmulPlan plan_matmul(const ChipParams& params, const MatmulSpec& spec,
                       const MatmulResources& res) {
  params.validate();
  spec.validate();
  auto span = [&](const char* what, uint32_t base, uint32_t count, uint32_t total) {
    if (base >= total) bad_plan(format("%s base %u is outside 0..%u", what, base, total - 1));
    if (count == 0) return total - base;
    if (uint64_t{base} + count > total) {
      bad_plan(format("%s %u..%u is outside 0..%u", what, base, base + count - 1, total - 1));
    }
    return count;
  };
  ChunkLimits l;
  l.ub_avail = span("UB rows", res.ub_base, res.ub_rows, params.ub_rows);
  l.acc_avail = span("ACC rows", res.acc_base, res.acc_rows, params.acc_rows);
  const uint32_t slots_avail =
      span("quantization slots", res.first_slot, res.slots, params.qp_slots);
  const uint32_t cap = params.wfifo_tiles + 2;
  if (res.weight_lookahead > cap) {
    bad_plan(
        format("weight_lookahead = %u (allowed 0..%u: WFifoTiles + 2)", res.weight_lookahead, cap));
  }

  MatmulPlan p;
  p.tile = params.N;
  p.kt = ceil_div(spec.k, params.N);
  p.nt = ceil_div(spec.n, params.N);
  // Default: as many tiles as the FIFO holds. More would make a read_weights wait for FIFO
  // space, and while it waits it holds up the in-order issue of the matmuls behind it.
  p.weight_lookahead = res.weight_lookahead
                           ? res.weight_lookahead
                           : std::min(cap, std::max<uint32_t>(2, params.wfifo_tiles));
  p.first_slot = res.first_slot;
  plan_quant_slots(spec, params.N, slots_avail, p);

  // Chunks start at 16-byte aligned host addresses (DMA needs it): with rows of kt*T and nt*T
  // bytes, every chunk but the last has a multiple of `align` rows (1 when T >= 16).
  auto gcd16 = [](uint64_t v) {
    uint64_t g = 16;
    while (v % g) g /= 2;
    return g;
  };
  l.out_rows_per_row = p.nt * spec.out_bytes();
  l.align = std::max(16 / gcd16(uint64_t{p.kt} * params.N),
                     16 / gcd16(uint64_t{l.out_rows_per_row} * params.N));
  constexpr uint64_t kMaxRows = 4095;  // matmul outer / activate height fields
  l.max_rows = res.max_chunk_rows ? std::min<uint64_t>(kMaxRows, res.max_chunk_rows) : kMaxRows;
  l.per_row = uint64_t{p.kt} + l.out_rows_per_row;
  plan_acc_regions(spec, l, p);
  plan_chunks(params, spec, res, l, p);
  place_regions(res, l.out_rows_per_row, p);
  return p;
}

// ---- emission

namespace {

// Instructions that must wait for the MXU are queued and emitted after the next `delay`
// matmuls, so that the chip's in-order issue does not stall the following matmul on them.
class Deferred {
 public:
  void add(int delay, std::function<void()> f) {
    if (delay <= 0) {
      f();
    } else {
      q_.push_back({delay, std::move(f)});
    }
  }
  // After a matmul: emit, in insertion order, everything whose delay has run out.
  void tick() {
    for (auto& e : q_) --e.delay;
    while (!q_.empty() && q_.front().delay <= 0) {
      auto f = std::move(q_.front().f);
      q_.pop_front();
      f();
    }
    // Entries behind a still-waiting one keep their place (insertion order is program order).
  }
  void flush() {
    while (!q_.empty()) {
      auto f = std::move(q_.front().f);
      q_.pop_front();
      f();
    }
  }

 private:
  struct Entry {
    int delay;
    std::function<void()> f;
  };
  std::deque<Entry> q_;
};

// Emits one matmul by its plan: the weight stream, the quantization batches, the A chunks, the
// matmuls, and their activates and output writes, each placed so that the chip's in-order
// issue does not stall.
class MatmulEmitter {
 public:
  MatmulEmitter(ProgramBuilder& b, const MatmulSpec& spec, const MatmulPlan& plan,
                const MatmulHostAddrs& addrs)
      : b_(b),
        spec_(spec),
        plan_(plan),
        addrs_(addrs),
        N_(b.params().N),
        kt_(plan.kt),
        nt_(plan.nt),
        px_(spec.out_bytes()),
        tiles_per_pass_(plan.kt * plan.nt),
        total_tiles_(plan.weight_tiles_read()),
        batch_(plan.reload_quant ? plan.slot_batch : plan.nt),
        batches_per_chunk_(ceil_div(plan.nt, batch_)),
        total_batches_(uint64_t{plan.chunks} * batches_per_chunk_),
        chunk_start_(plan.chunks + 1, 0),
        act_delay_(static_cast<int>(plan.acc_buffers) - 1) {
    for (uint32_t c = 0; c < plan.chunks; ++c)
      chunk_start_[c + 1] = chunk_start_[c] + plan.chunk_sizes[c];
    if (chunk_start_[plan.chunks] != spec.m) {
      throw std::invalid_argument(
          format("emit_matmul: the plan's chunks cover %u rows, the spec has %u",
                 chunk_start_[plan.chunks], spec.m));
    }
  }

  void emit() {
    // Prologue: LUT, the parameters (all, or the first batch), the first weights, chunk 0.
    if (spec_.func == ActFunc::Lut) b_.read_lut(addrs_.lut);
    if (!plan_.reload_quant) {
      b_.read_params(plan_.first_slot, plan_.quant_images, addrs_.quant);
    } else if (plan_.slot_banks == 2) {
      load_batch(0);
    }
    top_up();
    load_a(0);
    uint64_t block = 0;
    for (uint32_t c = 0; c < plan_.chunks; ++c) {
      for (uint32_t j = 0; j < nt_; ++j, ++block) {
        const uint32_t acc = plan_.acc[block % plan_.acc_buffers];
        const bool batch_start = j % batch_ == 0;  // batches restart with every chunk
        if (batch_start && block > 0) ++global_batch_;
        const uint32_t slot = plan_.reload_quant
                                  ? batch_slot0(global_batch_) + j % batch_
                                  : plan_.first_slot + (plan_.quant_images == 1 ? 0 : j);
        for (uint32_t t = 0; t < kt_; ++t) {
          matmul(c, t, acc);
          if (t == 0) after_first_tile(c, j, batch_start);
          if (t + 1 == kt_) finish_block(c, j, acc, slot);
          top_up();
        }
      }
    }
    later_.flush();
  }

 private:
  // Weight stream: tile s of the run is tile s % (kt*nt) of W, read plan.weight_lookahead
  // tiles ahead of the matmuls.
  void top_up() {
    const uint64_t want = std::min<uint64_t>(plan_.weight_lookahead, total_tiles_ - switched_);
    uint64_t need = want - std::min(want, pushed_ - switched_);
    while (need > 0) {
      const uint32_t idx = static_cast<uint32_t>(pushed_ % tiles_per_pass_);
      const uint32_t run = static_cast<uint32_t>(std::min<uint64_t>(need, tiles_per_pass_ - idx));
      b_.read_weights(run, addrs_.w + idx * N_ * N_);
      pushed_ += run;
      need -= run;
    }
  }

  // Quantization batches (when reload_quant): per chunk, blocks [j0, j0 + slot_batch).
  uint32_t batch_slot0(uint64_t global_batch) const {
    return plan_.first_slot +
           (plan_.slot_banks == 2 ? static_cast<uint32_t>(global_batch % 2) * batch_ : 0);
  }
  void load_batch(uint64_t global_batch) {
    const uint32_t j0 = static_cast<uint32_t>(global_batch % batches_per_chunk_) * batch_;
    const uint32_t count = std::min(batch_, nt_ - j0);
    b_.read_params(batch_slot0(global_batch), count, addrs_.quant + j0 * 12 * N_);
  }

  void load_a(uint32_t c) {
    b_.read_host(plan_.ub_a[c % 2], plan_.chunk_sizes[c] * kt_,
                 addrs_.a + chunk_start_[c] * kt_ * N_);
  }

  // K tile t of chunk c into accumulator region `acc`.
  void matmul(uint32_t c, uint32_t t, uint32_t acc) {
    const uint32_t rows = plan_.chunk_sizes[c];
    Matmul mm;
    mm.switch_weights = true;
    mm.accumulate = t > 0;
    mm.a_unsigned = spec_.a_unsigned;
    mm.w_unsigned = spec_.w_unsigned;
    mm.ub_addr = plan_.ub_a[c % 2] + t;
    mm.acc_addr = static_cast<uint16_t>(acc);
    if (kt_ == 1) {  // contiguous rows
      mm.inner = static_cast<uint16_t>(rows);
      mm.outer = 1;
    } else {  // row r, K tile t at ub_a + r*kt + t
      mm.inner = 1;
      mm.outer = static_cast<uint16_t>(rows);
      mm.outer_stride = kt_;
    }
    b_.matmul(mm);
    ++switched_;
    later_.tick();
  }

  // After block j's first matmul: the next quantization batch, the next chunk's rows.
  void after_first_tile(uint32_t c, uint32_t j, bool batch_start) {
    if (batch_start && plan_.reload_quant) {
      if (plan_.slot_banks == 2) {
        // Load the next batch into the other bank, after the last activate of the batch
        // that used it (emitted act_delay - 1 matmuls from now) and one matmul more.
        if (global_batch_ + 1 < total_batches_) {
          const uint64_t next = global_batch_ + 1;
          later_.add(act_delay_, [this, next] { load_batch(next); });
        }
      } else {
        // Single bank: right after the previous batch's last activate.
        later_.add(act_delay_ - 1, [this, gb = global_batch_] { load_batch(gb); });
      }
    }
    if (j == 0 && c + 1 < plan_.chunks && plan_.double_buffered_ub) load_a(c + 1);
  }

  // After block j's last matmul: its activate and, after the chunk's last block, the write of
  // the chunk's output. Block g's activate is emitted after the next acc_buffers - 1 matmuls:
  // late enough that it does not hold up their issue while it waits for block g's last row,
  // early enough to come before the matmul that overwrites its region.
  void finish_block(uint32_t c, uint32_t j, uint32_t acc, uint32_t slot) {
    const uint32_t rows = plan_.chunk_sizes[c], ub_out = plan_.ub_out[c % 2];
    Activate act;
    act.func = spec_.func;
    act.out_unsigned = spec_.out_unsigned;
    act.acc_addr = static_cast<uint16_t>(acc);
    act.slot = static_cast<uint8_t>(slot);
    act.raw = spec_.raw;
    if (nt_ == 1) {  // row r -> ub_out + r*px (raw: the 4 rows of pixel r are adjacent)
      act.ub_addr = ub_out;
      act.width = static_cast<uint16_t>(rows);
      act.height = 1;
    } else {  // row r of block j -> ub_out + (r*nt + j)*px
      act.ub_addr = ub_out + j * px_;
      act.width = 1;
      act.height = static_cast<uint16_t>(rows);
      act.ub_stride = nt_ * px_;
    }
    ProgramBuilder& b = b_;
    later_.add(act_delay_, [&b, act] { b.activate(act); });
    if (j + 1 != nt_) return;
    const uint32_t host = addrs_.out + chunk_start_[c] * nt_ * px_ * N_;
    later_.add(act_delay_ + 1, [&b, ub_out, rows, nt = nt_, px = px_, host] {
      b.write_host(ub_out, rows * nt * px, host);
    });
    // Single UB region: the next chunk's rows replace this one's, so they must be loaded
    // after this chunk's last matmul and before the next chunk's first.
    if (c + 1 < plan_.chunks && !plan_.double_buffered_ub) load_a(c + 1);
  }

  ProgramBuilder& b_;
  const MatmulSpec& spec_;
  const MatmulPlan& plan_;
  const MatmulHostAddrs& addrs_;
  const uint32_t N_, kt_, nt_;
  const uint32_t px_;  // UB rows per output pixel: 4 for raw int32, else 1
  const uint32_t tiles_per_pass_;
  const uint64_t total_tiles_;
  const uint32_t batch_, batches_per_chunk_;
  const uint64_t total_batches_;
  std::vector<uint32_t> chunk_start_;
  const int act_delay_;
  uint64_t pushed_ = 0, switched_ = 0, global_batch_ = 0;
  Deferred later_;
};

}  // namespace

void emit_matmul(ProgramBuilder& b, const MatmulSpec& spec, const MatmulPlan& plan,
                 const MatmulHostAddrs& addrs) {
  const ChipParams& prm = b.params();
  if (plan.tile != prm.N) {
    throw std::invalid_argument(
        format("emit_matmul: the plan is for N = %u, the builder for N = %u", plan.tile, prm.N));
  }
  if (b.pending_weight_tiles() != 0) {
    throw std::invalid_argument(
        format("emit_matmul: %u weight tiles are already pending; the "
               "matmul needs the weight FIFO to itself",
               b.pending_weight_tiles()));
  }
  MatmulEmitter(b, spec, plan, addrs).emit();
}

// ---- one call

MatmulRun run_matmul(Device& dev, const MatmulSpec& spec, const std::vector<uint8_t>& a,
                     const std::vector<uint8_t>& w, uint64_t max_cycles,
                     const MatmulResources& res) {
  const ChipParams& prm = dev.params();
  const MatmulPlan plan = plan_matmul(prm, spec, res);
  const uint32_t N = prm.N;
  if (a.size() != size_t{spec.m} * spec.k) {
    throw std::invalid_argument(format("run_matmul: A has %zu bytes (expected m*k = %zu)", a.size(),
                                       size_t{spec.m} * spec.k));
  }
  if (w.size() != size_t{spec.k} * spec.n) {
    throw std::invalid_argument(format("run_matmul: W has %zu bytes (expected k*n = %zu)", w.size(),
                                       size_t{spec.k} * spec.n));
  }
  const uint64_t out_bytes = uint64_t{spec.m} * plan.nt * N * spec.out_bytes();
  const uint64_t a_bytes = uint64_t{spec.m} * plan.kt * N;
  const uint64_t w_bytes = uint64_t{plan.kt} * plan.nt * N * N;
  if (a_bytes + w_bytes + out_bytes > (uint64_t{1} << 30)) {
    throw std::invalid_argument(format("run_matmul: the operands need %" PRIu64
                                       " bytes of host buffers (at most 1 GiB)",
                                       a_bytes + w_bytes + out_bytes));
  }
  ScopedBuffers bufs(dev);  // released whatever happens
  const std::vector<uint8_t> a_packed = pack_rows(a, spec.m, spec.k, N);
  const std::vector<uint8_t> w_packed = pack_weights(w, spec.k, spec.n, N);
  const std::vector<uint8_t> q_packed = pack_quant(spec, N);
  MatmulHostAddrs addrs;
  addrs.a = bufs.add(a_bytes, "matmul.a").addr;
  addrs.w = bufs.add(w_bytes, "matmul.w").addr;
  addrs.quant = bufs.add(q_packed.size(), "matmul.quant").addr;
  if (spec.func == ActFunc::Lut) addrs.lut = bufs.add(256, "matmul.lut").addr;
  addrs.out = bufs.add(out_bytes, "matmul.out").addr;
  dev.write(addrs.a, a_packed);
  dev.write(addrs.w, w_packed);
  dev.write(addrs.quant, q_packed);
  if (spec.func == ActFunc::Lut) dev.write(addrs.lut, spec.lut);

  ProgramBuilder b(prm);
  std::vector<HostRange> ranges;
  for (const HostBuffer& hb : bufs.list()) ranges.push_back({hb.addr, hb.size, hb.name});
  b.set_host_ranges(ranges);
  emit_matmul(b, spec, plan, addrs);
  const std::vector<Instruction> program = b.finish();

  MatmulRun r;
  r.plan = plan;
  r.instructions = program.size();
  r.stats = dev.run(program, max_cycles);
  const std::vector<uint8_t> out = dev.read(addrs.out, out_bytes);
  if (spec.raw) {  // m rows of nt*N little-endian int32
    r.out32.resize(size_t{spec.m} * spec.n);
    const size_t row = size_t{plan.nt} * N;
    for (size_t i = 0; i < spec.m; ++i) {
      for (size_t c = 0; c < spec.n; ++c) {
        const size_t at = 4 * (i * row + c);
        const uint32_t v = uint32_t{out[at]} | uint32_t{out[at + 1]} << 8 |
                           uint32_t{out[at + 2]} << 16 | uint32_t{out[at + 3]} << 24;
        r.out32[i * spec.n + c] = static_cast<int32_t>(v);
      }
    }
  } else {
    r.out = unpack_rows(out, spec.m, spec.n, N);
  }
  r.useful_macs = uint64_t{spec.m} * spec.k * spec.n;
  r.mxu_utilization =
      r.stats.cycles ? double(r.useful_macs) / (double(r.stats.cycles) * N * N) : 0.0;
  return r;
}

// ---- reference

std::vector<int32_t> reference_matmul_int32(const MatmulSpec& spec, const std::vector<uint8_t>& a,
                                            const std::vector<uint8_t>& w) {
  spec.validate();
  if (a.size() != size_t{spec.m} * spec.k || w.size() != size_t{spec.k} * spec.n) {
    throw std::invalid_argument("reference_matmul: A must be m*k and W k*n bytes");
  }
  auto av = [&](size_t i) {
    return spec.a_unsigned ? int64_t{a[i]} : int64_t{static_cast<int8_t>(a[i])};
  };
  auto wv = [&](size_t i) {
    return spec.w_unsigned ? int64_t{w[i]} : int64_t{static_cast<int8_t>(w[i])};
  };
  std::vector<int64_t> row(spec.n);
  std::vector<int32_t> out(size_t{spec.m} * spec.n);
  for (uint32_t r = 0; r < spec.m; ++r) {
    std::fill(row.begin(), row.end(), 0);
    for (uint32_t kk = 0; kk < spec.k; ++kk) {
      const int64_t x = av(size_t{r} * spec.k + kk);
      if (x == 0) continue;
      for (uint32_t c = 0; c < spec.n; ++c) row[c] += x * wv(size_t{kk} * spec.n + c);
    }
    for (uint32_t c = 0; c < spec.n; ++c) {
      // The accumulators wrap at 32 bits; the bias add saturates.
      const int64_t acc =
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(row[c])));
      out[size_t{r} * spec.n + c] =
          static_cast<int32_t>(std::clamp<int64_t>(acc + spec.bias_at(c), INT32_MIN, INT32_MAX));
    }
  }
  return out;
}

std::vector<uint8_t> reference_matmul(const MatmulSpec& spec, const std::vector<uint8_t>& a,
                                      const std::vector<uint8_t>& w) {
  if (spec.raw) {
    throw std::invalid_argument(
        "reference_matmul: the spec is raw (int32 output); use reference_matmul_int32");
  }
  const std::vector<int32_t> biased = reference_matmul_int32(spec, a, w);
  const int lo = spec.out_unsigned ? 0 : -128, hi = spec.out_unsigned ? 255 : 127;
  std::vector<uint8_t> out(biased.size());
  for (size_t i = 0; i < biased.size(); ++i) {
    const uint32_t c = static_cast<uint32_t>(i % spec.n);
    const int64_t p = int64_t{biased[i]} * spec.mult_at(c);  // |p| <= 2^62
    const unsigned s = spec.shift_at(c);
    int64_t q = p;
    if (s > 0) {  // round half away from zero: sign(p) * ((|p| + 2^(s-1)) >> s)
      const uint64_t mag = p < 0 ? uint64_t(-p) : uint64_t(p);
      const int64_t rounded = static_cast<int64_t>((mag + (uint64_t{1} << (s - 1))) >> s);
      q = p < 0 ? -rounded : rounded;
    }
    int64_t y = std::clamp<int64_t>(q + spec.zero_point, lo, hi);
    switch (spec.func) {
      case ActFunc::Identity:
        break;
      case ActFunc::Relu:
        y = std::max<int64_t>(y, spec.zero_point);
        break;
      case ActFunc::Clamp:
        y = std::min<int64_t>(std::max<int64_t>(y, spec.clamp_lo), spec.clamp_hi);
        break;
      case ActFunc::Lut: {
        const uint8_t v = spec.lut[static_cast<uint8_t>(y)];
        y = spec.out_unsigned ? v : static_cast<int8_t>(v);
        break;
      }
    }
    out[i] = static_cast<uint8_t>(y);
  }
  return out;
}

}  // namespace tpu

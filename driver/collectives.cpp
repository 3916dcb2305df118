// SPDX-License-Identifier: Apache-2.0
#include "collectives.h"

#include <stdexcept>

#include "fp.h"
#include "text.h"

namespace tpu {

using detail::format;

std::string_view dtype_name(CollectiveDtype t) {
  return t == CollectiveDtype::Fp32 ? "fp32" : "int32";
}

Chunk chunk_of(uint32_t rows, uint32_t parts, uint32_t c) {
  const auto at = [&](uint64_t k) { return static_cast<uint32_t>(k * rows / parts); };
  return Chunk{at(c), at(uint64_t{c} + 1) - at(c)};
}

RingPosition x_ring(const PodTopology& topo, uint32_t chip) {
  return RingPosition{chip % topo.x, topo.x, kLinkXPlus, kLinkXMinus};
}

RingPosition y_ring(const PodTopology& topo, uint32_t chip) {
  return RingPosition{chip / topo.x, topo.y, kLinkYPlus, kLinkYMinus};
}

namespace {

uint32_t mod(int64_t v, uint32_t n) { return static_cast<uint32_t>(((v % n) + n) % n); }

IciReduce reduce_of(CollectiveDtype t) {
  return t == CollectiveDtype::Fp32 ? IciReduce::FAdd : IciReduce::IAdd;
}

uint32_t combine(CollectiveDtype t, uint32_t local, uint32_t received) {
  return t == CollectiveDtype::Fp32 ? fp::add(local, received) : local + received;
}

}  // namespace

void ring_reduce_scatter(ProgramBuilder& b, const RingPosition& ring, uint32_t base, uint32_t rows,
                         CollectiveDtype dtype, uint32_t final_offset) {
  const uint32_t n = ring.size;
  const int64_t i = ring.index;
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const Chunk out = chunk_of(rows, n, mod(i + final_offset - 1 - s, n));
    const Chunk in = chunk_of(rows, n, mod(i + final_offset - 2 - s, n));
    if (out.count > 0) b.ici_send(ring.send_link, base + out.first, out.count);
    if (in.count > 0) b.ici_recv(ring.recv_link, base + in.first, in.count, reduce_of(dtype));
  }
}

void ring_all_gather(ProgramBuilder& b, const RingPosition& ring, uint32_t base, uint32_t rows,
                     uint32_t owned_offset) {
  const uint32_t n = ring.size;
  const int64_t i = ring.index;
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const Chunk out = chunk_of(rows, n, mod(i + owned_offset - s, n));
    const Chunk in = chunk_of(rows, n, mod(i + owned_offset - s - 1, n));
    if (out.count > 0) b.ici_send(ring.send_link, base + out.first, out.count);
    if (in.count > 0) b.ici_recv(ring.recv_link, base + in.first, in.count, IciReduce::None);
  }
}

namespace {

void check_buffer(const PodTopology& topo, const ChipParams& p, uint32_t chip, uint32_t base,
                  uint32_t rows) {
  if (chip >= topo.chips()) {
    throw std::invalid_argument(format("collective: chip %u (the pod has %u)", chip, topo.chips()));
  }
  if (rows == 0 || uint64_t{base} + rows > p.vmem_rows) {
    throw std::invalid_argument(
        format("collective: buffer of %u rows at VMEM row %u does not fit "
               "(expected 1..VmemRows = %u rows ending below %u)",
               rows, base, p.vmem_rows, p.vmem_rows));
  }
}

}  // namespace

std::vector<Instruction> all_reduce_program(const PodTopology& topo, const ChipParams& params,
                                            uint32_t chip, uint32_t base, uint32_t rows,
                                            CollectiveDtype dtype) {
  check_buffer(topo, params, chip, base, rows);
  ProgramBuilder b(params);
  const RingPosition xr = x_ring(topo, chip);
  const RingPosition yr = y_ring(topo, chip);
  if (xr.size > 1) ring_reduce_scatter(b, xr, base, rows, dtype, 1);
  const Chunk mine = chunk_of(rows, xr.size, (xr.index + 1) % xr.size);
  if (yr.size > 1 && mine.count > 0) {
    ring_reduce_scatter(b, yr, base + mine.first, mine.count, dtype, 1);
    ring_all_gather(b, yr, base + mine.first, mine.count, 1);
  }
  if (xr.size > 1) ring_all_gather(b, xr, base, rows, 1);
  return b.finish();
}

Chunk scatter_block(const PodTopology& topo, uint32_t rows, uint32_t chip) {
  if (chip >= topo.chips()) {
    throw std::invalid_argument(
        format("scatter_block: chip %u (the pod has %u)", chip, topo.chips()));
  }
  const Chunk xc = chunk_of(rows, topo.x, chip % topo.x);
  const Chunk yc = chunk_of(xc.count, topo.y, chip / topo.x);
  return Chunk{xc.first + yc.first, yc.count};
}

std::vector<Instruction> reduce_scatter_program(const PodTopology& topo, const ChipParams& params,
                                                uint32_t chip, uint32_t base, uint32_t rows,
                                                CollectiveDtype dtype) {
  check_buffer(topo, params, chip, base, rows);
  ProgramBuilder b(params);
  const RingPosition xr = x_ring(topo, chip);
  const RingPosition yr = y_ring(topo, chip);
  if (xr.size > 1) ring_reduce_scatter(b, xr, base, rows, dtype, 0);
  const Chunk mine = chunk_of(rows, xr.size, xr.index);  // x-chunk x, reduced along x
  if (yr.size > 1 && mine.count > 0) {
    ring_reduce_scatter(b, yr, base + mine.first, mine.count, dtype, 0);
  }
  return b.finish();
}

std::vector<Instruction> all_gather_program(const PodTopology& topo, const ChipParams& params,
                                            uint32_t chip, uint32_t base, uint32_t rows) {
  check_buffer(topo, params, chip, base, rows);
  ProgramBuilder b(params);
  const RingPosition xr = x_ring(topo, chip);
  const RingPosition yr = y_ring(topo, chip);
  const Chunk mine = chunk_of(rows, xr.size, xr.index);  // gathered along y first
  if (yr.size > 1 && mine.count > 0) ring_all_gather(b, yr, base + mine.first, mine.count, 0);
  if (xr.size > 1) ring_all_gather(b, xr, base, rows, 0);
  return b.finish();
}

// ---- host references, straight from the chains of docs/pod.md "Summation order".

namespace {

void check_inputs(uint32_t chips, uint32_t n, const std::vector<std::vector<uint32_t>>& inputs) {
  if (inputs.size() != chips || chips == 0) {
    throw std::invalid_argument(format("reference: %zu inputs for %u chips", inputs.size(), chips));
  }
  for (const auto& v : inputs) {
    if (v.size() != inputs[0].size() || v.size() % n != 0) {
      throw std::invalid_argument("reference: inputs must be equal whole rows of N lanes");
    }
  }
}

// The chain over a ring of `size` values starting at `start`: acc = v(start), then
// acc = combine(v(start + k), acc) for k = 1 .. size-1.
template <typename Get>
uint32_t chain(CollectiveDtype t, uint32_t size, uint32_t start, Get v) {
  uint32_t acc = v(start);
  for (uint32_t k = 1; k < size; ++k) acc = combine(t, v((start + k) % size), acc);
  return acc;
}

}  // namespace

std::vector<uint32_t> reference_all_reduce(const PodTopology& topo, uint32_t n,
                                           const std::vector<std::vector<uint32_t>>& inputs,
                                           CollectiveDtype dtype) {
  check_inputs(topo.chips(), n, inputs);
  const auto rows = static_cast<uint32_t>(inputs[0].size() / n);
  std::vector<uint32_t> out(inputs[0].size());
  for (uint32_t cx = 0; cx < topo.x; ++cx) {
    const Chunk xc = chunk_of(rows, topo.x, cx);
    for (uint32_t d = 0; d < topo.y; ++d) {
      const Chunk yc = chunk_of(xc.count, topo.y, d);
      for (uint32_t row = xc.first + yc.first; row < xc.first + yc.first + yc.count; ++row) {
        for (uint32_t j = 0; j < n; ++j) {
          const size_t e = size_t{row} * n + j;
          auto partial = [&](uint32_t y) {  // x-chain of line y, starting at x = cx
            return chain(dtype, topo.x, cx, [&](uint32_t x) { return inputs[y * topo.x + x][e]; });
          };
          out[e] = chain(dtype, topo.y, d, partial);
        }
      }
    }
  }
  return out;
}

std::vector<uint32_t> reference_reduce_scatter(const PodTopology& topo, uint32_t n,
                                               const std::vector<std::vector<uint32_t>>& inputs,
                                               CollectiveDtype dtype) {
  check_inputs(topo.chips(), n, inputs);
  const auto rows = static_cast<uint32_t>(inputs[0].size() / n);
  std::vector<uint32_t> out(inputs[0].size());
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    const uint32_t x = r % topo.x, y = r / topo.x;
    const Chunk blk = scatter_block(topo, rows, r);
    for (size_t e = size_t{blk.first} * n; e < size_t{blk.first + blk.count} * n; ++e) {
      auto partial = [&](uint32_t line) {  // x-chain of line y = line, starting at x + 1
        return chain(dtype, topo.x, (x + 1) % topo.x,
                     [&](uint32_t xx) { return inputs[line * topo.x + xx][e]; });
      };
      out[e] = chain(dtype, topo.y, (y + 1) % topo.y, partial);
    }
  }
  return out;
}

std::vector<uint32_t> reference_all_gather(const PodTopology& topo, uint32_t n,
                                           const std::vector<std::vector<uint32_t>>& inputs) {
  check_inputs(topo.chips(), n, inputs);
  const auto rows = static_cast<uint32_t>(inputs[0].size() / n);
  std::vector<uint32_t> out(inputs[0].size());
  for (uint32_t r = 0; r < topo.chips(); ++r) {
    const Chunk blk = scatter_block(topo, rows, r);
    for (size_t e = size_t{blk.first} * n; e < size_t{blk.first + blk.count} * n; ++e) {
      out[e] = inputs[r][e];
    }
  }
  return out;
}

double busbw_factor(CollectiveKind kind, uint32_t chips) {
  const double n = chips;
  return kind == CollectiveKind::AllReduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

}  // namespace tpu

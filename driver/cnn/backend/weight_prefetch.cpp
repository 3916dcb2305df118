// SPDX-License-Identifier: Apache-2.0
// The last steps of emission: the read_weights that push every tile ahead of the matmul that
// switches to it (weight prefetch), the instructions through ProgramBuilder's argument checks
// (program.h), and the program's DMA figures.
#include <string>

#include "backend/backend.h"
#include "backend/emitter.h"
#include "program.h"

namespace tpu::cnn::backend {

void insert_weight_loads(const std::vector<Op>& ops, const ChipParams& chip, Program& prog) {
  std::vector<uint32_t> tiles;
  std::vector<int> tile_layer;
  for (const Op& o : ops)
    if (o.marker < 0 && o.tile) {
      tiles.push_back(o.tile);
      tile_layer.push_back(o.layer);
    }
  const uint32_t cap = chip.wfifo_tiles + 2, tile_bytes = chip.tile_bytes();
  // Refill when half the room is free: each read_weights costs a burst latency, so pushing one
  // tile at a time is slower (measured on the chip: 1 tile 45, 3 tiles 28 cycles per tile).
  const uint32_t refill = cap / 2;
  size_t next = 0, switched = 0;
  uint32_t pending = 0;
  auto& out = prog.instructions;
  auto& layer_of = prog.instr_layer;
  auto fill = [&]() {
    while (pending < cap && next < tiles.size()) {
      uint32_t cnt = 1;
      while (pending + cnt < cap && next + cnt < tiles.size() &&
             tiles[next + cnt] == tiles[next] + cnt * tile_bytes)
        ++cnt;
      out.push_back(ReadWeights{cnt, tiles[next]});
      layer_of.push_back(tile_layer[next]);
      prog.weight_bytes += uint64_t(cnt) * tile_bytes;
      pending += cnt;
      next += cnt;
    }
  };
  fill();
  for (const Op& o : ops) {
    if (o.marker >= 0) {
      if (prog.layer_end.size() <= size_t(o.marker)) prog.layer_end.resize(size_t(o.marker) + 1);
      prog.layer_end[size_t(o.marker)] = out.size();
      continue;
    }
    if (o.tile && next <= switched) fill();  // its tile first
    out.push_back(o.ins);
    layer_of.push_back(o.layer);
    if (o.tile) {
      ++switched;
      --pending;
      if (pending + refill <= cap) fill();
    }
  }
  out.push_back(Halt{});
  layer_of.push_back(-1);
}

void check_program(const std::vector<Instruction>& program, const ChipParams& chip,
                   std::vector<HostRange> ranges) {
  ProgramBuilder b(chip);
  b.set_host_ranges(std::move(ranges));
  try {
    for (const Instruction& i : program) b.append(i);
  } catch (const ProgramError& e) {
    throw Error(std::string("internal: the compiled program fails the program builder's checks: ") +
                e.what());
  }
}

void count_dma(const CompiledNetwork& cn, uint32_t constants_addr, uint32_t scratch_addr,
               Program& prog) {
  const uint64_t n = cn.chip.N, tile_bytes = cn.chip.tile_bytes();
  const auto& out = prog.instructions;
  prog.dma_in_bytes += out.size() * kInstrBytes;  // instruction fetch
  prog.layer_dma.assign(cn.layers.size(), LayerDma{});
  // Per layer DMA bytes, by what they carry (the host ranges tell inputs from spills).
  const uint64_t s0 = scratch_addr, s1 = uint64_t(scratch_addr) + cn.scratch_bytes;
  auto scratch = [&](uint32_t a) { return cn.spill && a >= s0 && a < s1; };
  const uint64_t c0 = constants_addr, c1 = c0 + cn.constants.size();
  for (size_t k = 0; k < out.size(); ++k) {
    const int l = prog.instr_layer[k];
    LayerDma& d = l >= 0 ? prog.layer_dma[size_t(l)] : prog.other_dma;
    if (const auto* r = std::get_if<ReadHost>(&out[k])) {
      const uint64_t b = uint64_t(r->rows) * n;
      prog.dma_in_bytes += b;
      if (r->dest != HostDest::Ub) {
        d.params += b;
        continue;
      }
      if (r->host_addr >= c0 && r->host_addr < c1) {  // a depthwise layer's tap rows
        d.weights += b;
        continue;
      }
      prog.input_data_bytes += b;  // (every read into the unified buffer, spills included)
      if (scratch(r->host_addr))
        d.spill_in += b, prog.spill_in_bytes += b;
      else
        d.input += b;
    } else if (const auto* w = std::get_if<ReadWeights>(&out[k])) {
      prog.dma_in_bytes += uint64_t(w->tiles) * tile_bytes;
      d.weights += uint64_t(w->tiles) * tile_bytes;
    } else if (const auto* wh = std::get_if<WriteHost>(&out[k])) {
      const uint64_t b = uint64_t(wh->rows) * n;
      prog.dma_out_bytes += b;
      if (scratch(wh->host_addr))
        d.spill_out += b, prog.spill_out_bytes += b;
      else
        d.output += b;
    }
  }
}

void Emitter::finish(Program& prog) {
  insert_weight_loads(ops_, cn_.chip, prog);
  // The host buffers the program may DMA: the constants, the batch's inputs and outputs, the
  // scratch (the driver's view; ProgramBuilder checks every instruction's range against them).
  std::vector<HostRange> ranges;
  auto range = [&](uint32_t addr, uint64_t bytes, const char* name) {
    if (bytes) ranges.push_back(HostRange{addr, uint32_t(bytes), name});
  };
  range(caddr_, cn_.constants.size(), "constants");
  range(iaddr_, uint64_t(batch_) * cn_.input_bytes(), "input");
  range(oaddr_, uint64_t(batch_) * cn_.output_bytes(), "output");
  if (cn_.spill) range(saddr_, cn_.scratch_bytes, "scratch");
  check_program(prog.instructions, cn_.chip, std::move(ranges));
  prog.mxu_rows = mxu_rows_;
  count_dma(cn_, caddr_, saddr_, prog);
}

}  // namespace tpu::cnn::backend

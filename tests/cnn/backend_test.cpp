// SPDX-License-Identifier: Apache-2.0
// The backend's passes (driver/cnn/backend/) one at a time: tensor layouts, weight tiles,
// quantization slots, scratch planning, interleaving, weight prefetch, the program builder's
// checks and the DMA count. (The whole backend, program for program, is cnn_digest_tests; bit
// for bit on the golden model, cnn_unit_tests and the others.)
#include "backend/backend.h"

#include <gtest/gtest.h>

#include <set>

#include "backend/emitter.h"
#include "cnn_models.h"
#include "cnn_test_util.h"

namespace {

using namespace cnn_test;
using namespace tpu::cnn;
namespace be = tpu::cnn::backend;

QuantNetwork quantized(const Network& net) {
  return quantize_model(net, random_images(net.input, 2, 5));
}

// The passes compile_network runs, up to and including `upto` (1: tensors, 2: fill slots,
// 3: layers, 4: quantization slots).
CompiledNetwork run_passes(const QuantNetwork& q, const tpu::ChipParams& chip, int upto) {
  CompiledNetwork cn;
  cn.net = q;
  cn.chip = chip;
  be::check_network(q);
  if (upto >= 1) be::plan_tensors(cn);
  if (upto >= 2) be::plan_fill_slots(cn);
  if (upto >= 3) be::plan_layers(cn);
  if (upto >= 4) be::assign_quant_slots(cn);
  return cn;
}

// Borders are as wide as the widest consumer pads; a max-pool's border never wins (the type's
// minimum), a convolution's is a real zero (the zero point).
TEST(PlanTensors, BordersFromTheConsumers) {
  const QuantNetwork q = quantized(small_resnet(3));
  const CompiledNetwork cn = run_passes(q, tpu::ChipParams::with_n(16), 1);
  ASSERT_EQ(cn.tensors.size(), q.layers.size());
  EXPECT_TRUE(cn.packed_input);  // the stem conv reads the input alone: im2col by the host
  EXPECT_EQ(cn.input_tensor.channels, 9);
  for (size_t l = 0; l < q.layers.size(); ++l) {
    int want_pad = 0;
    bool conv = false, pool = false;
    for (size_t c = l + 1; c < q.layers.size(); ++c)
      for (int in : q.layers[c].inputs)
        if (in == int(l) &&
            (q.layers[c].kind == LayerKind::Conv || q.layers[c].kind == LayerKind::Copy)) {
          want_pad = std::max(want_pad, q.layers[c].pad_t);
          (q.layers[c].kind == LayerKind::Conv ? conv : pool) |= q.layers[c].pad_t > 0;
        }
    const auto& t = cn.tensors[l];
    EXPECT_EQ(t.blocks, (q.layers[l].out.c + 15) / 16) << l;
    EXPECT_EQ(std::max(t.pt, cn.has_shadow(int(l)) ? cn.shadows[l].pt : 0), want_pad) << l;
    if (conv && !pool) {
      EXPECT_EQ(t.fill, q.layers[l].out_q.zero_point) << l;
    }
    if (pool && !conv && !cn.has_shadow(int(l))) {
      EXPECT_EQ(t.fill, q.layers[l].out_q.qmin()) << l;
    }
  }
  EXPECT_EQ(cn.output_rows, cn.tensors.back().image_rows());
}

// Every weight of a layer lands in exactly one tile position of its terms.
TEST(WeightTiles, TilesHoldEveryWeight) {
  const QuantNetwork q = quantized(cifar_convnet(6));
  const CompiledNetwork cn = run_passes(q, tpu::ChipParams::with_n(16), 4);
  const uint32_t n = 16;
  ASSERT_EQ(cn.layers.size(), q.layers.size());
  for (size_t li = 1; li < q.layers.size(); ++li) {  // (layer 0 reads the packed input)
    const QLayer& l = q.layers[li];
    const auto& p = cn.layers[li];
    int64_t nonzero_tiles = 0, nonzero_weights = 0;
    for (int8_t w : l.weight) nonzero_weights += w != 0;
    for (const auto& terms : p.terms)
      for (const auto& t : terms) {
        ASSERT_LE(t.tile + n * n, cn.constants.size());
        if (!t.switch_weights) continue;  // the same tile as the term before
        for (uint32_t i = 0; i < n * n; ++i) nonzero_tiles += cn.constants[t.tile + i] != 0;
      }
    EXPECT_EQ(nonzero_tiles, nonzero_weights) << l.name;
    EXPECT_EQ(p.chip_bias.size(), size_t(l.cout()));
  }
}

// With few slots the layers' slots come in generations; every (layer, block) has one slot.
TEST(QuantSlots, GenerationsWhenTheSlotsRunOut) {
  const QuantNetwork q = quantized(three_conv_net(2));
  tpu::ChipParams chip = tpu::ChipParams::with_n(16);
  chip.qp_slots = 4;
  const CompiledNetwork cn = run_passes(q, chip, 4);
  EXPECT_GT(cn.generations.size(), 1u);
  std::set<std::pair<int, int>> slots;  // (generation, slot)
  for (size_t li = 0; li < cn.layers.size(); ++li) {
    int blocks = 0;
    for (const auto& c : cn.layers[li].chunks) {
      blocks += c.ob_end - c.ob_begin;
      for (int ob = c.ob_begin; ob < c.ob_end; ++ob) {
        const int slot = c.slot_base + (ob - c.ob_begin);
        EXPECT_LT(slot, cn.generations[size_t(c.generation)].slots);
        EXPECT_LT(slot, int(chip.qp_slots) - int(cn.fill_slots.size()));
        EXPECT_TRUE(slots.insert({c.generation, slot}).second);
      }
    }
    EXPECT_EQ(blocks, cn.layers[li].obs);
  }
  // The first slot of the first generation is layer 0's block 0: bias, mult, shift / zp.
  const QLayer& l0 = q.layers[0];
  const uint8_t* s = cn.constants.data() + cn.generations[0].offset;
  auto word = [&](int i) {
    return int32_t(s[4 * i] | s[4 * i + 1] << 8 | s[4 * i + 2] << 16 |
                   uint32_t(s[4 * i + 3]) << 24);
  };
  EXPECT_EQ(word(0), cn.layers[0].chip_bias[0]);
  EXPECT_EQ(word(16), l0.mult[0]);
  EXPECT_EQ(word(32) & 0xFF, l0.shift[0]);
}

TEST(PlanScratch, SpillsOnlyWhenOneImageDoesNotFit) {
  const QuantNetwork q = quantized(small_resnet(3));
  CompiledNetwork cn = compile_network(q, tpu::ChipParams::with_n(16));
  EXPECT_FALSE(cn.spill);
  EXPECT_EQ(cn.scratch_bytes, 0u);
  tpu::ChipParams small = tpu::ChipParams::with_n(16);
  small.ub_rows = 700;
  cn = compile_network(q, small);
  ASSERT_TRUE(cn.spill);
  for (size_t l = 0; l + 1 < cn.tensors.size(); ++l) {
    EXPECT_EQ(cn.spill_offset[l] % 16, 0u);
    EXPECT_LE(cn.spill_offset[l] + uint64_t(cn.tensors[l].image_rows()) * 16, cn.scratch_bytes);
  }
  small.N = 8;
  small.axi_width = 64;
  EXPECT_NE(
      error_of([&] { compile_network(q, small); }).find("spilling to host memory needs N >= 16"),
      std::string::npos);
}

// Tensors whose lives overlap never share rows; dead tensors' rows are reused.
TEST(PlaceFirstFit, LiveTensorsDisjointDeadOnesReused) {
  std::vector<be::LiveRange> items{{0, 1, 100}, {1, 2, 50}, {2, 3, 100}, {0, 3, 10}};
  const uint64_t peak = be::place_first_fit(items);
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = i + 1; j < items.size(); ++j)
      if (items[i].birth <= items[j].death && items[j].birth <= items[i].death) {
        EXPECT_TRUE(items[i].base + items[i].rows <= items[j].base ||
                    items[j].base + items[j].rows <= items[i].base)
            << i << " and " << j;
      }
  EXPECT_EQ(items[0].base, 0u);    // the largest first, at 0
  EXPECT_EQ(items[2].base, 0u);    // born after item 0 died: its rows again
  EXPECT_EQ(items[1].base, 100u);  // lives with both
  EXPECT_EQ(items[3].base, 150u);
  EXPECT_EQ(peak, 160u);
}

be::Op matmul_op(uint32_t tile, int layer) {
  tpu::Matmul m;
  m.switch_weights = tile != 0;
  return be::Op{m, tile, -1, layer};
}
be::Op activate_op(int layer) { return be::Op{tpu::Activate{}, 0, -1, layer}; }

TEST(Interleave, SpreadsActivatesEvenlyAmongMatmuls) {
  std::vector<be::Op> ops;
  for (int i = 0; i < 6; ++i) ops.push_back(matmul_op(0, 0));
  for (int i = 0; i < 2; ++i) ops.push_back(activate_op(1));
  be::interleave(ops, 0, 6);
  std::string order;
  for (const auto& o : ops) order += std::holds_alternative<tpu::Matmul>(o.ins) ? 'm' : 'a';
  EXPECT_EQ(order, "mmammamm");  // after matmul 2 and 4 (of 6), none before the first
  std::vector<be::Op> none{matmul_op(0, 0)};
  be::interleave(none, 0, 1);
  EXPECT_EQ(none.size(), 1u);
}

// Every switching matmul's tile is pushed before it, never more than WFifoTiles + 2 wait, and
// consecutive tiles go in one read_weights.
TEST(WeightPrefetch, TilesArePushedAheadWithinTheFifo) {
  const tpu::ChipParams chip = tpu::ChipParams::with_n(4);  // 16-byte tiles, 6 may wait
  std::vector<be::Op> ops;
  const uint32_t base = 0x1000;
  for (uint32_t t = 0; t < 20; ++t) ops.push_back(matmul_op(base + 16 * t, int(t / 10)));
  ops.push_back(be::Op{tpu::Nop{}, 0, 0, 0});  // end of layer 0 (a marker)
  tpu::cnn::Program prog;
  be::insert_weight_loads(ops, chip, prog);
  ASSERT_TRUE(std::holds_alternative<tpu::Halt>(prog.instructions.back()));
  ASSERT_EQ(prog.instr_layer.size(), prog.instructions.size());
  EXPECT_EQ(prog.weight_bytes, 20u * 16);
  uint32_t pushed_to = base, waiting = 0, reads = 0;
  for (const auto& i : prog.instructions) {
    if (const auto* r = std::get_if<tpu::ReadWeights>(&i)) {
      EXPECT_EQ(r->host_addr, pushed_to);  // in order, contiguous
      pushed_to += r->tiles * 16;
      waiting += r->tiles;
      EXPECT_LE(waiting, chip.wfifo_tiles + 2);
      ++reads;
    } else if (std::holds_alternative<tpu::Matmul>(i)) {
      ASSERT_GT(waiting, 0u);
      --waiting;
    }
  }
  EXPECT_EQ(pushed_to, base + 20 * 16);
  EXPECT_LT(reads, 20u);  // several tiles per read_weights
  ASSERT_EQ(prog.layer_end.size(), 1u);
  EXPECT_EQ(prog.layer_end[0], prog.instructions.size() - 1);  // the marker: before halt
  be::check_program(prog.instructions, chip, {});              // passes the builder's checks
}

TEST(CheckProgram, DmaOutsideTheBuffersIsAnInternalError) {
  const tpu::ChipParams chip = tpu::ChipParams::with_n(16);
  std::vector<tpu::Instruction> p{tpu::ReadHost{tpu::HostDest::Ub, 0, 2, 0x2000}, tpu::Halt{}};
  EXPECT_EQ(error_of([&] { be::check_program(p, chip, {{0x2000, 32, "input"}}); }), "(no error)");
  const std::string e = error_of([&] { be::check_program(p, chip, {{0x2000, 16, "input"}}); });
  EXPECT_EQ(
      e.rfind("internal: the compiled program fails the program builder's checks: read_host", 0),
      0u)
      << e;
}

TEST(CountDma, SplitsInputsSpillsWeightsAndParameters) {
  CompiledNetwork cn;
  cn.chip = tpu::ChipParams::with_n(16);
  cn.layers.resize(2);
  cn.spill = true;
  cn.scratch_bytes = 1024;
  const uint32_t scratch = 0x8000;
  tpu::cnn::Program prog;
  prog.instructions = {tpu::ReadHost{tpu::HostDest::Ub, 0, 4, 0x100},         // input, layer 0
                       tpu::ReadHost{tpu::HostDest::Param, 0, 12, 0x200},     // params, layer 0
                       tpu::ReadWeights{2, 0x300},                            // weights, layer 1
                       tpu::ReadHost{tpu::HostDest::Ub, 0, 3, scratch + 32},  // spill in, layer 1
                       tpu::WriteHost{0, 5, scratch},                         // spill out, layer 1
                       tpu::WriteHost{0, 1, 0x900},                           // output, none
                       tpu::ReadHost{tpu::HostDest::Ub, 8, 10, 0x10020},      // taps, layer 1
                       tpu::Halt{}};
  prog.instr_layer = {0, 0, 1, 1, 1, -1, 1, -1};
  cn.constants.resize(0x40);
  be::count_dma(cn, 0x10000, scratch, prog);
  EXPECT_EQ(prog.layer_dma[0].input, 64u);
  EXPECT_EQ(prog.layer_dma[0].params, 192u);
  EXPECT_EQ(prog.layer_dma[1].weights, 512u + 160u);  // a tile, a depthwise layer's tap rows
  EXPECT_EQ(prog.layer_dma[1].spill_in, 48u);
  EXPECT_EQ(prog.layer_dma[1].spill_out, 80u);
  EXPECT_EQ(prog.other_dma.output, 16u);
  EXPECT_EQ(prog.spill_in_bytes, 48u);
  EXPECT_EQ(prog.spill_out_bytes, 80u);
  EXPECT_EQ(prog.input_data_bytes, 64u + 48u);
  EXPECT_EQ(prog.dma_in_bytes, 64u + 192u + 512u + 48u + 160u + 8 * tpu::kInstrBytes);
  EXPECT_EQ(prog.dma_out_bytes, 96u);
}

}  // namespace

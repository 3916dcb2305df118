// SPDX-License-Identifier: Apache-2.0
// Networks larger than the unified buffer (compiler.h "Spilling") on the golden ISA model,
// bit-exact against the integer reference: the branching test networks compiled for chips
// with small unified buffers (so they spill, in tiles of a few lines with halos), the
// ImageNet-size zoo networks (zoo.h) at 224x224 on the default chip (ResNet-18 and
// MobileNetV2 here; ResNet-50 takes a minute: cnn_zoo_slow_test.cpp), and the error for a layer
// whose one output line does not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <variant>

#include "cnn_models.h"
#include "cnn_test_util.h"
#include "device_model.h"
#include "reference.h"
#include "zoo.h"

namespace {

using namespace cnn_test;

tpu::ChipParams small_chip(uint32_t ub_rows, uint32_t acc_rows = 2048) {
  tpu::ChipParams c = tpu::ChipParams::with_n(16);
  c.ub_rows = ub_rows;
  c.acc_rows = acc_rows;
  return c;
}

// Runs `images` one batch at a time on the model backend with chip `chip`; every output must
// equal int_forward's. Returns the compiled network's spill flag.
bool run_bit_exact(const QuantNetwork& q, const std::vector<std::vector<int32_t>>& images,
                   uint32_t batch, const tpu::ChipParams& chip,
                   const ProgramOptions& options = {}) {
  tpu::ModelDevice dev(chip);
  ChipRunner runner(dev, q, batch, options);
  for (size_t i0 = 0; i0 < images.size(); i0 += batch) {
    const auto ptrs = pointers(images, i0, batch);
    const auto r = runner.run(ptrs);
    for (size_t j = 0; j < ptrs.size(); ++j) {
      const auto want = int_forward(q, ptrs[j]);
      EXPECT_EQ(r.outputs[j], want) << q.name << ": image " << i0 + j << ", UB rows "
                                    << chip.ub_rows << ", ACC rows " << chip.acc_rows;
    }
  }
  return runner.compiled().spill;
}

void check_spills(const Network& net, uint32_t seed, uint32_t ub_rows, uint32_t acc_rows) {
  const QuantNetwork q = quantize_model(net, random_images(net.input, 8, seed));
  const auto images = quantize_images(q, random_images(net.input, 3, seed + 1));
  // The default chip holds it: no spilling.
  EXPECT_FALSE(compile_network(q, tpu::ChipParams::with_n(16)).spill) << net.name;
  EXPECT_TRUE(run_bit_exact(q, images, 2, small_chip(ub_rows, acc_rows))) << net.name;
}

// The depthwise unit (issue 33): a MobileNet compiled for a chip with DwWidth 2 runs its
// depthwise convolutions as dwconv (tap rows in UB) and matches the integer reference
// bit-exact on the golden model; for a chip without the unit no dwconv is emitted.
size_t count_dwconv(const QuantNetwork& q, const tpu::ChipParams& chip) {
  const auto cn = compile_network(q, chip);
  ProgramOptions o;
  o.scratch_addr = 0x4000'0000;  // (used only if the network spills)
  const auto prog = emit_program(cn, 2, 0x100000, 0x4000000, 0x5000000, o);
  size_t n = 0;
  for (const auto& ins : prog.instructions) n += std::holds_alternative<tpu::DwConv>(ins) ? 1 : 0;
  return n;
}

TEST(DepthwiseUnit, MobileNetBitExactWithDwconv) {
  const Network net = small_mobilenet(61);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 8, 62));
  const auto images = quantize_images(q, random_images(net.input, 4, 63));
  tpu::ChipParams dw = tpu::ChipParams::with_n(16);
  dw.dw_width = 2;
  EXPECT_GT(count_dwconv(q, dw), 0u);
  EXPECT_EQ(count_dwconv(q, tpu::ChipParams::with_n(16)), 0u);
  EXPECT_FALSE(run_bit_exact(q, images, 2, dw));
}

// The spill path with the depthwise unit: a MobileNet on a small unified buffer (every tensor
// in host memory, layers in tiles of lines) compiled with and without fusing each depthwise
// layer into the 1x1 convolution before it (ProgramOptions::fuse_depthwise).
struct DwSpillCounts {
  size_t blocks = 0, dwconvs = 0, tap_reads = 0, fused = 0;
  uint64_t tap_bytes = 0, dw_weights = 0, spill_bytes = 0;
};

DwSpillCounts dw_spill_counts(const CompiledNetwork& cn, uint32_t batch, bool fuse) {
  const uint32_t caddr = 0x100000;
  ProgramOptions o;
  o.scratch_addr = 0x4000'0000;
  o.fuse_depthwise = fuse;
  const Program prog = emit_program(cn, batch, caddr, 0x2000'0000, 0x3000'0000, o);
  DwSpillCounts c;
  for (const auto& ins : prog.instructions) {
    c.dwconvs += std::holds_alternative<tpu::DwConv>(ins) ? 1 : 0;
    const auto* r = std::get_if<tpu::ReadHost>(&ins);
    if (r && r->dest == tpu::HostDest::Ub && r->host_addr >= caddr &&
        r->host_addr < caddr + cn.constants.size())
      ++c.tap_reads, c.tap_bytes += uint64_t(r->rows) * cn.chip.N;
  }
  for (size_t li = 0; li < cn.layers.size(); ++li) {
    if (cn.layers[li].dw_rows.empty()) continue;
    c.blocks += cn.layers[li].dw_rows.size();
    c.dw_weights += prog.layer_dma[li].weights;
    // Fused: the depthwise layer's input never goes through host memory.
    c.fused += prog.layer_dma[li].spill_in == 0 && prog.layer_dma[li - 1].spill_out == 0;
  }
  c.spill_bytes = prog.spill_in_bytes + prog.spill_out_bytes;
  return c;
}

// The small MobileNet of the spilled depthwise tests, quantized, three images, and a chip whose
// unified buffer it does not fit, with the depthwise unit.
struct DwCase {
  Network net = small_mobilenet(4);
  QuantNetwork q = quantize_model(net, random_images(net.input, 8, 4));
  std::vector<std::vector<int32_t>> images = quantize_images(q, random_images(net.input, 3, 5));
  tpu::ChipParams dw = [] {
    tpu::ChipParams c = small_chip(540, 256);
    c.dw_width = 2;
    return c;
  }();
};

// Each depthwise layer by itself: one dwconv per tile and output block, each block's tap rows
// read once per image (not once per tile), counted as the layer's weights; bit-exact against
// the integer reference on the golden model. Without the unit the same chip emits no dwconv.
TEST(DepthwiseUnit, SpilledMobileNetBitExactWithDwconv) {
  const DwCase k;
  const CompiledNetwork cn = compile_network(k.q, k.dw);
  ASSERT_TRUE(cn.spill);
  const uint32_t batch = 2;
  const DwSpillCounts c = dw_spill_counts(cn, batch, false);
  ASSERT_GT(c.blocks, 0u) << "no layer takes the depthwise unit";
  EXPECT_EQ(c.fused, 0u);
  EXPECT_GT(c.dwconvs, c.blocks * batch) << "no depthwise layer ran in several tiles";
  EXPECT_GE(c.tap_reads, c.blocks);
  EXPECT_LE(c.tap_reads, c.blocks * batch);
  EXPECT_EQ(c.dw_weights, c.tap_bytes) << "tap rows are the depthwise layers' only weights";
  ProgramOptions o;
  o.fuse_depthwise = false;
  EXPECT_TRUE(run_bit_exact(k.q, k.images, batch, k.dw, o));
  EXPECT_EQ(count_dwconv(k.q, small_chip(540, 256)), 0u);
}

// Fused (the default): the depthwise layers whose input a 1x1 convolution alone produces take it
// from window buffers in the unified buffer, band by band: less spill traffic, bit-exact.
TEST(DepthwiseUnit, SpilledMobileNetFusesTheConvolutionBeforeDepthwise) {
  const DwCase k;
  const CompiledNetwork cn = compile_network(k.q, k.dw);
  const DwSpillCounts fused = dw_spill_counts(cn, 2, true);
  const DwSpillCounts alone = dw_spill_counts(cn, 2, false);
  EXPECT_GT(fused.fused, 0u) << "no depthwise layer fused with the convolution before it";
  EXPECT_LT(fused.spill_bytes, alone.spill_bytes);
  EXPECT_EQ(fused.dw_weights, fused.tap_bytes);
  EXPECT_TRUE(run_bit_exact(k.q, k.images, 2, k.dw));
  // A smaller unified buffer (shorter bands, one image a program): still bit-exact.
  tpu::ChipParams tight = k.dw;
  tight.ub_rows = 330;
  EXPECT_GT(dw_spill_counts(compile_network(k.q, tight), 1, true).fused, 0u);
  EXPECT_TRUE(run_bit_exact(k.q, k.images, 1, tight));
}

// Fused and pipelined (ProgramOptions::pair_depthwise, the default; Emitter::spill_fused): the
// 1x1 convolution's matmuls of a later block come between one dwconv of the depthwise layer and
// the next, so the array works while the depthwise unit does. Counts, over the fused depthwise
// layers of `prog`, their dwconvs (*dwconvs) and those followed by a matmul of the convolution
// before the next dwconv of any layer (the return value).
size_t dwconvs_followed_by_matmuls(const Program& prog, size_t* dwconvs) {
  size_t followed = 0;
  *dwconvs = 0;
  const auto& ins = prog.instructions;
  for (size_t i = 0; i < ins.size(); ++i) {
    const int li = prog.instr_layer[i];
    if (!std::holds_alternative<tpu::DwConv>(ins[i]) || li < 1 ||
        prog.layer_dma[size_t(li)].spill_in != 0)  // not fused: reads its input from the host
      continue;
    ++*dwconvs;
    for (size_t j = i + 1; j < ins.size() && !std::holds_alternative<tpu::DwConv>(ins[j]); ++j)
      if (prog.instr_layer[j] == li - 1 && std::holds_alternative<tpu::Matmul>(ins[j])) {
        ++followed;
        break;
      }
  }
  return followed;
}

TEST(DepthwiseUnit, SpilledFusedPairRunsTheNextMatmulsBesideEachDwconv) {
  const DwCase k;
  const CompiledNetwork cn = compile_network(k.q, k.dw);
  ASSERT_TRUE(cn.spill);
  const uint32_t batch = 2;
  ProgramOptions o;
  o.scratch_addr = 0x4000'0000;
  const Program on = emit_program(cn, batch, 0x100000, 0x2000'0000, 0x3000'0000, o);
  o.pair_depthwise = false;
  const Program off = emit_program(cn, batch, 0x100000, 0x2000'0000, 0x3000'0000, o);
  const size_t pairs = dw_spill_counts(cn, batch, true).fused;
  ASSERT_GT(pairs, 0u) << "no depthwise layer fused with the convolution before it";
  size_t n_on = 0, n_off = 0;
  const size_t f_on = dwconvs_followed_by_matmuls(on, &n_on);
  const size_t f_off = dwconvs_followed_by_matmuls(off, &n_off);
  ASSERT_GT(n_on, 2 * pairs * batch);
  // Pipelined: every dwconv but the last two of each pair and image.
  EXPECT_EQ(f_on, n_on - 2 * pairs * batch) << "of " << n_on << " dwconvs";
  // Not pipelined: only where a band or a chunk of blocks ends.
  EXPECT_LT(f_off, n_off / 2) << "of " << n_off << " dwconvs";
  // Both bit-exact against the integer reference (on is the default).
  EXPECT_TRUE(run_bit_exact(k.q, k.images, batch, k.dw, o));
  EXPECT_TRUE(run_bit_exact(k.q, k.images, batch, k.dw));
}

// The decoder's hazard range of a dwconv is ONE range, the hull of its input rows and tap rows
// (rtl/tpu_decoder.sv): an activate writing into it waits for the dwconv. For every dwconv of
// a program, the activates that read its accumulators (up to the next instruction writing
// them) write no UB row of that hull; returns how many such activates it checked.
size_t activates_outside_dwconv_hulls(const Program& prog, const std::string& what) {
  const auto& ins = prog.instructions;
  size_t checked = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const auto* d = std::get_if<tpu::DwConv>(&ins[i]);
    if (!d) continue;
    const uint64_t in_last = uint64_t{d->ub_addr} + uint64_t{d->height - 1u} * d->ub_stride +
                             d->width - 1u,
                   w_last = uint64_t{d->w_addr} + d->taps();
    const uint64_t lo = std::min<uint64_t>(d->ub_addr, d->w_addr), hi = std::max(in_last, w_last);
    const uint64_t a0 = d->acc_addr, a1 = a0 + d->output_pixels();
    auto overlaps = [&](uint64_t b0, uint64_t b1) { return b0 < a1 && a0 < b1; };
    for (size_t j = i + 1; j < ins.size(); ++j) {
      if (const auto* m = std::get_if<tpu::Matmul>(&ins[j]))
        if (overlaps(m->acc_addr, m->acc_addr + uint64_t{m->inner} * m->outer)) break;
      if (const auto* e = std::get_if<tpu::DwConv>(&ins[j]))
        if (overlaps(e->acc_addr, e->acc_addr + e->output_pixels())) break;
      const auto* a = std::get_if<tpu::Activate>(&ins[j]);
      if (!a || !overlaps(a->acc_addr, a->acc_addr + uint64_t{a->width} * a->height)) continue;
      ++checked;
      EXPECT_TRUE(a->last_ub_row() < lo || a->ub_addr > hi)
          << what << ": activate " << j << " writes UB rows " << a->ub_addr << ".."
          << a->last_ub_row() << " inside the hazard hull " << lo << ".." << hi << " of dwconv "
          << i;
    }
  }
  return checked;
}

// So the compiler puts each dwconv's tap slot on the side of its input away from its output
// (tap slots at the top and the bottom of the unified buffer, or, spilled, the output buffers
// below the input): the unit and the activates of the previous dwconv's output overlap.
TEST(DepthwiseUnit, ActivatesStayOutOfTheDwconvHazardHull) {
  const Network net = small_mobilenet(4);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 8, 4));
  tpu::ChipParams fits = tpu::ChipParams::with_n(16), spills = small_chip(540, 256);
  fits.dw_width = spills.dw_width = 2;
  ProgramOptions o;
  o.scratch_addr = 0x4000'0000;
  for (const bool fuse : {true, false}) {
    o.fuse_depthwise = fuse;
    for (const auto* chip : {&fits, &spills}) {
      const CompiledNetwork cn = compile_network(q, *chip);
      EXPECT_EQ(cn.spill, chip == &spills);
      const Program p = emit_program(cn, 2, 0x100000, 0x2000'0000, 0x3000'0000, o);
      const std::string what =
          std::string(cn.spill ? "spilled" : "fits") + (fuse ? ", fused" : ", unfused");
      EXPECT_GT(activates_outside_dwconv_hulls(p, what), 0u) << what;
    }
  }
}

// The first instruction index of layer li's dwconvs (or the program's size if none).
size_t first_dwconv(const Program& p, size_t li) {
  for (size_t i = 0; i < p.instructions.size(); ++i)
    if (p.instr_layer[i] == int(li) && std::holds_alternative<tpu::DwConv>(p.instructions[i]))
      return i;
  return p.instructions.size();
}

// A dwconv reads one block of its input, so the last activates of the 1x1 convolution before it
// (its last output block) run among the first dwconvs (those of other blocks), not all before
// them (the unit would wait for the activation unit: measured 11,714 -> 11,369 cycles per image
// on the bundled MobileNet, tpusim_dw_n16, batch 16).
TEST(DepthwiseUnit, TheLastActivatesOfTheLayerBeforeRunAmongTheFirstDwconvs) {
  const DwCase c;
  tpu::ChipParams fits = tpu::ChipParams::with_n(16);
  fits.dw_width = 2;
  const CompiledNetwork cn = compile_network(c.q, fits);
  ASSERT_FALSE(cn.spill);
  const Program p = emit_program(cn, 2, 0x100000, 0x2000'0000, 0x3000'0000);
  size_t dw_layers = 0;
  for (size_t li = 1; li < cn.layers.size(); ++li) {
    if (cn.layers[li].dw_rows.empty()) continue;
    ++dw_layers;
    const size_t first = first_dwconv(p, li);
    ASSERT_LT(first, p.instructions.size()) << "layer " << li;
    size_t after = 0;  // activates of the layer before, after the first dwconv
    for (size_t i = first; i < p.instructions.size(); ++i)
      after += p.instr_layer[i] == int(li) - 1 &&
               std::holds_alternative<tpu::Activate>(p.instructions[i]);
    EXPECT_GT(after, 0u) << "layer " << li << " (" << cn.layers[li].obs << " blocks)";
  }
  EXPECT_EQ(dw_layers, 3u);
}

// ProgramOptions::pair_depthwise (on by default since the depthwise unit has its own UB read
// and ACC write ports, docs/cnn.md): the 1x1 convolution's matmuls of the next image run among
// a depthwise layer's dwconvs, and the outputs stay bit-exact on the golden model, paired or not.
size_t paired_depthwise_layers(const CompiledNetwork& cn, const Program& p) {
  size_t paired = 0;  // depthwise layers with a matmul of the layer before among their dwconvs
  for (size_t li = 1; li < cn.layers.size(); ++li) {
    if (cn.layers[li].dw_rows.empty()) continue;
    size_t last = 0;
    for (size_t i = 0; i < p.instructions.size(); ++i)
      if (p.instr_layer[i] == int(li) && std::holds_alternative<tpu::DwConv>(p.instructions[i]))
        last = i;
    bool between = false;
    for (size_t i = first_dwconv(p, li); i < last; ++i)
      between |=
          p.instr_layer[i] == int(li) - 1 && std::holds_alternative<tpu::Matmul>(p.instructions[i]);
    paired += between;
  }
  return paired;
}

TEST(DepthwiseUnit, ConvolutionPairedWithTheDepthwiseLayerIsBitExact) {
  const DwCase c;
  tpu::ChipParams fits = tpu::ChipParams::with_n(16);
  fits.dw_width = 2;
  const CompiledNetwork cn = compile_network(c.q, fits);
  ProgramOptions o;
  o.pair_depthwise = true;
  const Program p = emit_program(cn, 3, 0x100000, 0x2000'0000, 0x3000'0000, o);
  EXPECT_GT(paired_depthwise_layers(cn, p), 0u);
  // On is the default: the same program as without the option.
  const Program d = emit_program(cn, 3, 0x100000, 0x2000'0000, 0x3000'0000);
  EXPECT_EQ(p.instructions, d.instructions);
  // Off: no layer is paired, and both are bit-exact.
  o.pair_depthwise = false;
  const Program q = emit_program(cn, 3, 0x100000, 0x2000'0000, 0x3000'0000, o);
  EXPECT_EQ(paired_depthwise_layers(cn, q), 0u);
  EXPECT_FALSE(run_bit_exact(c.q, c.images, 3, fits, o));
  o.pair_depthwise = true;
  EXPECT_FALSE(run_bit_exact(c.q, c.images, 3, fits, o));
}

// A convolution and its depthwise layer that do not fit one slot generation together (6
// quantization slots: 3 + 3 output blocks, less the fill slots) run paired chunk by chunk,
// the same output blocks of both in one generation each (assign_quant_slots), bit-exact.
TEST(DepthwiseUnit, PairSplitIntoGenerationChunksIsBitExact) {
  const DwCase c;
  tpu::ChipParams few = tpu::ChipParams::with_n(16);
  few.dw_width = 2;
  few.qp_slots = 6;
  const CompiledNetwork cn = compile_network(c.q, few);
  ASSERT_FALSE(cn.spill);
  size_t split = 0;  // depthwise layers in several chunks, each sharing its input's generation
  for (size_t li = 1; li < cn.layers.size(); ++li) {
    const auto &pd = cn.layers[li], &pe = cn.layers[li - 1];
    if (pd.dw_rows.empty() || pd.chunks.size() < 2 || pe.chunks.size() != pd.chunks.size())
      continue;
    for (size_t k = 0; k < pd.chunks.size(); ++k) {
      EXPECT_EQ(pe.chunks[k].generation, pd.chunks[k].generation);
      EXPECT_EQ(pe.chunks[k].ob_begin, pd.chunks[k].ob_begin);
      EXPECT_EQ(pe.chunks[k].ob_end, pd.chunks[k].ob_end);
    }
    ++split;
  }
  EXPECT_GT(split, 0u);
  const Program p = emit_program(cn, 3, 0x100000, 0x2000'0000, 0x3000'0000);
  EXPECT_GT(paired_depthwise_layers(cn, p), 0u);
  EXPECT_FALSE(run_bit_exact(c.q, c.images, 3, few));
  ProgramOptions off;
  off.pair_depthwise = false;
  EXPECT_FALSE(run_bit_exact(c.q, c.images, 3, few, off));
}

// Micro-batches: the next one's input is read while the current one's last layers run (before
// its output's write_host, which waits for the classifier), on UB rows that no tensor alive
// from then on uses (Emitter::prefetch_input), with the unit and without; bit-exact.
TEST(MicroBatches, TheNextInputIsReadAheadOnRowsOfItsOwn) {
  const DwCase c;
  tpu::ChipParams dw = tpu::ChipParams::with_n(16);
  dw.dw_width = 2;
  ProgramOptions o;
  o.max_micro_batch = 1;
  constexpr uint32_t kIn = 0x2000'0000, kOut = 0x3000'0000;
  for (const auto& chip : {dw, tpu::ChipParams::with_n(16)}) {
    const CompiledNetwork cn = compile_network(c.q, chip);
    ASSERT_FALSE(cn.spill);
    const Program p = emit_program(cn, 3, 0x100000, kIn, kOut, o);
    ASSERT_EQ(p.micro_batch, 1u);
    std::vector<size_t> reads, writes;  // the input's read_hosts, the output's write_hosts
    for (size_t i = 0; i < p.instructions.size(); ++i) {
      if (const auto* r = std::get_if<tpu::ReadHost>(&p.instructions[i]))
        if (r->dest == tpu::HostDest::Ub && r->host_addr >= kIn && r->host_addr < kOut)
          reads.push_back(i);
      if (std::holds_alternative<tpu::WriteHost>(p.instructions[i])) writes.push_back(i);
    }
    ASSERT_EQ(reads.size(), 3u);
    ASSERT_EQ(writes.size(), 3u);
    for (size_t k = 1; k < 3; ++k) {
      EXPECT_LT(reads[k], writes[k - 1]) << "micro-batch " << k << ", dw_width " << chip.dw_width;
      const auto& r = std::get<tpu::ReadHost>(p.instructions[reads[k]]);
      const auto& w = std::get<tpu::WriteHost>(p.instructions[writes[k - 1]]);
      EXPECT_TRUE(r.local_addr + r.rows <= w.ub_addr || w.ub_addr + w.rows <= r.local_addr)
          << "micro-batch " << k << ": input rows " << r.local_addr << " + " << r.rows
          << ", output rows " << w.ub_addr << " + " << w.rows;
    }
    EXPECT_FALSE(run_bit_exact(c.q, c.images, 3, chip, o));
  }
}

TEST(Spill, ResidualNetworkInSmallUnifiedBuffer) { check_spills(small_resnet(3), 3, 700, 2048); }

TEST(Spill, MobileNetInSmallUnifiedBuffer) { check_spills(small_mobilenet(4), 4, 500, 256); }

TEST(Spill, SqueezeNetInSmallUnifiedBuffer) { check_spills(small_squeezenet(5), 5, 600, 256); }

TEST(Spill, PackedFirstLayerAndDense) { check_spills(cifar_convnet(6), 6, 900, 256); }

TEST(Spill, EveryOpInSmallUnifiedBuffer) { check_spills(every_op_network(7), 7, 900, 512); }

// The ResNet's stem carries a fused max-pool 3/2 with padding 1; on a 700-row unified buffer it
// runs in several tiles, which share conv lines (the packed input of a shared line is read by
// both tiles) and whose first and last get the pool's padding. Bit-exact on two images.
TEST(Spill, PaddedPoolInSeveralTiles) {
  const Network net = small_resnet(3);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 8, 3));
  ASSERT_TRUE(q.layers[0].pool_padded()) << "the stem pool did not fuse";
  ASSERT_EQ(q.layers[0].pool_k, 3);
  const CompiledNetwork cn = compile_network(q, small_chip(700));
  ASSERT_TRUE(cn.spill);
  ProgramOptions o;
  o.scratch_addr = 0x4000'0000;
  const Program p = emit_program(cn, 1, 0x1000'0000, 0x2000'0000, 0x3000'0000, o);
  EXPECT_GT(p.layer_dma[0].input, uint64_t(cn.input_bytes())) << "the stem ran in one tile";
  const auto images = quantize_images(q, random_images(net.input, 2, 4));
  EXPECT_TRUE(run_bit_exact(q, images, 1, small_chip(700)));
}

TEST(Spill, ProgramsOfNetworksThatFitAreUnchanged) {
  // A network that fits compiles as before: no scratch, no spill traffic.
  const Network net = small_resnet(3);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 4, 3));
  const CompiledNetwork cn = compile_network(q, tpu::ChipParams::with_n(16));
  EXPECT_FALSE(cn.spill);
  EXPECT_EQ(cn.scratch_bytes, 0u);
  const Program p = emit_program(cn, 4, 0x1000'0000, 0x2000'0000, 0x3000'0000);
  EXPECT_EQ(p.spill_in_bytes + p.spill_out_bytes, 0u);
  ASSERT_EQ(p.layer_dma.size(), q.layers.size());
  uint64_t in = p.other_dma.in(), out = p.other_dma.out();
  for (const auto& d : p.layer_dma) in += d.in(), out += d.out();
  EXPECT_EQ(in + p.instructions.size() * tpu::kInstrBytes, p.dma_in_bytes);
  EXPECT_EQ(out, p.dma_out_bytes);
}

TEST(Spill, ALayerWhoseLineDoesNotFitIsOneError) {
  const Network net = small_resnet(3);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 4, 3));
  const std::string e = error_of([&] {
    tpu::ModelDevice dev(small_chip(120));
    ChipRunner runner(dev, q, 1);
  });
  EXPECT_NE(e.find("layer '"), std::string::npos) << e;
  EXPECT_NE(e.find("unified-buffer rows"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the 120 rows of the chip, by "), std::string::npos) << e;
}

// With the depthwise unit the tap slots' 40 rows are not the layers': the error says so.
TEST(DepthwiseUnit, ALayerWhoseLineDoesNotFitBesideTheTapSlotsIsOneError) {
  const Network net = small_mobilenet(4);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 4, 4));
  tpu::ChipParams dw = small_chip(120, 256);
  dw.dw_width = 2;
  const std::string e = error_of([&] {
    tpu::ModelDevice dev(dw);
    ChipRunner runner(dev, q, 1);
  });
  EXPECT_NE(e.find("more than the 80 rows of the chip left beside the 40 depthwise tap-slot "
                   "rows, by "),
            std::string::npos)
      << e;
}

TEST(Runner, ReleasesItsHostBuffersSoRunnersCanComeAndGo) {
  const Network net = small_resnet(3);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 4, 3));
  const auto images = quantize_images(q, random_images(net.input, 1, 4));
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const tpu::HostBuffer user = dev.alloc(100, "user");
  // 300 runners one after another: without the release the 8 DMA windows or the arena run out.
  std::vector<int32_t> first;
  for (int i = 0; i < 300; ++i) {
    ChipRunner runner(dev, q, 4);
    EXPECT_EQ(dev.buffers().size(), 4u);
    if (i % 100 == 0) {
      const auto out = runner.run(pointers(images, 0, 1)).outputs.at(0);
      if (first.empty()) first = out;
      EXPECT_EQ(out, first) << "runner " << i;
    }
  }
  ASSERT_EQ(dev.buffers().size(), 1u);
  EXPECT_EQ(dev.buffers()[0].name, "user");
  // The arena is back to just after `user`.
  EXPECT_EQ(dev.alloc(16, "next").addr, (user.addr + user.size + 63) / 64 * 64);
  // A caller that released everything first (the Python module does) is fine too.
  {
    ChipRunner runner(dev, q, 1);
    dev.release_all();
  }
  EXPECT_TRUE(dev.buffers().empty());
}

TEST(Runner, ABatchLargerThanHostMemoryIsAnErrorNotAWrap) {
  const Network net = small_resnet(3);
  const QuantNetwork q = quantize_model(net, random_images(net.input, 4, 3));
  tpu::ModelDevice dev(tpu::ChipParams::with_n(16));
  const std::string e = error_of([&] { ChipRunner runner(dev, q, 1u << 30); });
  EXPECT_NE(e.find("batch 1073741824 needs "), std::string::npos) << e;
  EXPECT_NE(e.find("more than the device's arena"), std::string::npos) << e;
  EXPECT_TRUE(dev.buffers().empty());
}

// A zoo network at 224x224 on the golden model, 1 image, against the integer reference.
void check_zoo(const std::string& name, uint32_t dw_width = 0) {
  const auto t0 = std::chrono::steady_clock::now();
  const Network net = zoo_network(name, 1);
  ASSERT_EQ(net.input, (Shape3{3, 224, 224}));
  ASSERT_EQ(net.classes(), 1000);
  const QuantNetwork q = quantize_model(net, zoo_images(net.input, 1, 11));
  const auto images = quantize_images(q, zoo_images(net.input, 1, 12));
  tpu::ChipParams chip = tpu::ChipParams::with_n(16);
  chip.dw_width = dw_width;
  tpu::ModelDevice dev(chip);
  ChipRunner runner(dev, q, 1);
  EXPECT_TRUE(runner.compiled().spill);
  ProgramOptions o;
  o.scratch_addr = 0x4000'0000;
  size_t dwconvs = 0;
  for (const auto& ins :
       emit_program(runner.compiled(), 1, 0x1000'0000, 0x2000'0000, 0x3000'0000, o).instructions)
    dwconvs += std::holds_alternative<tpu::DwConv>(ins) ? 1 : 0;
  EXPECT_EQ(dwconvs > 0, dw_width > 0) << name;
  const auto r = runner.run(pointers(images));
  const auto want = int_forward(q, images[0].data());
  EXPECT_EQ(r.outputs[0], want) << name;
  // Not a constant output: the logits vary.
  int distinct = 0;
  for (size_t i = 1; i < want.size(); ++i) distinct += want[i] != want[0];
  EXPECT_GT(distinct, 100) << name;
  std::printf("%s: %.1f s\n", name.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST(Zoo, MobileNetV2OnTheGoldenModel) { check_zoo("mobilenetv2"); }
TEST(Zoo, ResNet18OnTheGoldenModel) { check_zoo("resnet18"); }
// With the depthwise unit: spilled, the expansions fused with the depthwise layers (issue 33).
TEST(Zoo, MobileNetV2WithTheDepthwiseUnitOnTheGoldenModel) { check_zoo("mobilenetv2", 2); }

TEST(Zoo, UnknownNameIsAnError) {
  EXPECT_EQ(error_of([] { zoo_onnx("vgg16"); }),
            "unknown zoo model 'vgg16' (expected one of: resnet18, resnet50, mobilenetv2)");
}

}  // namespace
namespace {

// Every prefix of a MobileNet (each layer once the last, writing the output), two images in
// one program: the second image finds the accumulator ring where the first left it (a unit
// wrapping onto the previous unit's rows must wait for its activates).
TEST(Spill, EveryPrefixOfMobileNetTwoImages) {
  const Network net = small_mobilenet(4);
  const QuantNetwork q0 = quantize_model(net, random_images(net.input, 8, 4));
  const auto images = quantize_images(q0, random_images(net.input, 2, 5));
  for (size_t k = 1; k <= q0.layers.size(); ++k) {
    QuantNetwork q = q0;
    q.layers.resize(k);
    tpu::ModelDevice dev(small_chip(500, 256));
    ChipRunner runner(dev, q, 2);
    EXPECT_TRUE(runner.compiled().spill);
    const auto r = runner.run(pointers(images));
    for (size_t i = 0; i < 2; ++i)
      EXPECT_EQ(r.outputs[i], int_forward(q, images[i].data()))
          << "up to layer " << k << " (" << q.layers.back().name << "), image " << i;
  }
}

}  // namespace

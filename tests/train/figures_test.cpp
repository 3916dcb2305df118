// SPDX-License-Identifier: Apache-2.0
// The Keras example's layer kernels at batch 32, N = 16 (docs/training.md "Figures"): runs
// each on the golden model, checks the MXU rows against the formula of docs/isa.md
// "Bandwidth and what the design assumes" and prints instructions, MXU rows and the model's
// cycle estimate (device_model.h). VMEM holds at most 2^16 rows, so the 26x26x64 conv output
// (86,528 rows) is produced in two halves of 32 output channels, and the pooling layer in four
// slices of 16 channels; the figures are summed over the parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "rig.h"

namespace tpu::train::test {
namespace {

constexpr uint32_t kN = 16, kBatch = 32, kVmem = 65536;

struct Figures {
  uint64_t instructions = 0, mxu_rows = 0, cycles = 0;
  std::map<std::string, uint64_t> by_op;
};

void add_run(Rig& rig, Figures& f) {
  const std::vector<Instruction> program = rig.pb().finish();
  for (const Instruction& i : program) {
    ++f.by_op[std::string(mnemonic(static_cast<Opcode>(i.index())))];
  }
  const RunStats s = rig.dev().run(program);
  f.instructions += program.size() - 1;  // without the halt
  f.mxu_rows += s.counters.mxu_busy;
  f.cycles += s.cycles;
}

void print(const char* what, const Figures& f) {
  std::string ops;
  for (const auto& [op, count] : f.by_op) {
    if (op != "halt") ops += " " + op + " " + std::to_string(count);
  }
  std::printf("%-28s instructions %7llu  MXU rows %7llu  model cycles %8llu  (%s )\n", what,
              static_cast<unsigned long long>(f.instructions),
              static_cast<unsigned long long>(f.mxu_rows),
              static_cast<unsigned long long>(f.cycles), ops.c_str());
}

ConvGeom keras_conv(uint32_t cout) {
  ConvGeom g;
  g.batch = kBatch;
  g.cin = 1;
  g.cout = cout;
  g.h = g.w = 28;
  g.kh = g.kw = 3;
  return g;
}

std::vector<uint32_t> as_bits(const std::vector<float>& f) {
  std::vector<uint32_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i) b[i] = ref::bits(f[i]);
  return b;
}
std::vector<float> as_floats(const std::vector<uint32_t>& b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i) f[i] = ref::value(b[i]);
  return f;
}

// The layer at full size, also checked bit for bit (the first half) against the reference.
TEST(TrainFigures, KerasConvLayer) {
  Figures fwd, dw;
  for (int half = 0; half < 2; ++half) {
    Rig rig(kN, kVmem);
    const ConvGeom g = keras_conv(32);
    VMat x = conv_input_matrix(rig.arena(), g), w = rig.arena().matrix(g.weight_rows(kN), 32);
    VMat b = rig.arena().row_vector(32), y = rig.arena().matrix(g.ho() * g.wo() * kBatch, 32);
    VMat dw_m = rig.arena().matrix(g.weight_rows(kN), 32);
    const uint32_t scratch = rig.arena().rows(conv_scratch_rows(g, rig.dev().params(), 0));
    ref::Tensor xt = ref::tensor(kBatch, 1, 28, 28), wt = ref::tensor(32, 1, 3, 3);
    xt.v = random_values(xt.v.size(), 1.0f, 301 + half);
    wt.v = random_values(wt.v.size(), 0.5f, 303 + half);
    const std::vector<uint32_t> bias = random_values(32, 0.5f, 305 + half);
    rig.put(x, as_bits(conv_input_values(g, kN, as_floats(xt.v))));
    rig.put(w, as_bits(conv_weight_values(g, kN, as_floats(wt.v))));
    rig.put(b, bias);
    rig.run();  // the data, before the measured programs
    rig.new_program();
    conv2d_forward(rig.pb(), g, x, w, &b, y, scratch, 0);
    add_run(rig, fwd);
    rig.new_program();
    conv2d_backward_weights(rig.pb(), g, x, y, dw_m, scratch, 0);  // dY := Y
    add_run(rig, dw);
    if (half == 1) continue;
    rig.new_program();
    rig.want(y);
    rig.want(dw_m);
    rig.run();
    const ref::Window k{3, 3, 1, 1, 0, 0, 0, 0};
    const ref::Tensor want_y = ref::conv2d(xt, wt, bias, k, 1, kN);
    std::vector<uint32_t> got_y = rig.got(y), want_img(got_y.size());
    for (uint32_t i = 0; i < kBatch; ++i)
      for (uint32_t c = 0; c < 32; ++c)
        for (uint32_t p = 0; p < 26 * 26; ++p)
          want_img[(p * kBatch + i) * 32 + c] = want_y.at(i, c, p / 26, p % 26);
    EXPECT_TRUE(got_y == want_img) << "Y differs from the reference";
    const ref::Tensor want_dw = ref::conv2d_dw(xt, want_y, k, 1, kN);
    EXPECT_TRUE(as_bits(conv_weight_oihw(g, kN, as_floats(rig.got(dw_m)))) == want_dw.v)
        << "dW differs from the reference";
  }
  print("conv 3x3x1x64 forward", fwd);
  print("conv 3x3x1x64 dW", dw);
  // One K-tile (9 taps <= 16) per output column block: 26*26*32 rows x 4 blocks.
  EXPECT_EQ(fwd.mxu_rows, 26u * 26 * 32 * 4);
  // Per 16-position chunk and column block, 9 rows (the taps): 1352 chunks x 4 x 9 (dY
  // stationary, docs/training.md "Conv dW reoriented").
  EXPECT_EQ(conv_dw_orientation(keras_conv(32), kN), ConvDwOrient::DyStationary);
  EXPECT_EQ(dw.mxu_rows, 26u * 26 * 32 / 16 * 4 * 9);
}

// The conv and the pool fused band by band (docs/training.md "Layers that do not fit VMEM"):
// all 64 channels, 13 bands of 2 conv lines, bias after pooling; backward: pool gradient
// per band into the band buffer, conv dW accumulated in ACC, db from dPooled.
TEST(TrainFigures, KerasConvPoolFused) {
  const ConvGeom g = keras_conv(64);
  PoolGeom pg;
  pg.batch = kBatch;
  pg.c = 64;
  pg.h = pg.w = 26;
  const uint32_t pline = 13 * kBatch, cline = 26 * kBatch;
  Figures fwd, bwd;
  for (int pass = 0; pass < 2; ++pass) {
    Rig rig(kN, kVmem);
    VmemArena& ar = rig.arena();
    VMat x = conv_input_matrix(ar, g), w = ar.matrix(g.weight_rows(kN), 64);
    VMat b = ar.row_vector(64), pooled = ar.matrix(13 * pline, 64);
    VMat am = ar.matrix(pooled.rows, 64), buf = ar.matrix(2 * cline, 64);
    VMat dw = ar.matrix(g.weight_rows(kN), 64), db = ar.row_vector(64);
    const uint32_t scratch = ar.rows(conv_scratch_rows(g, rig.dev().params(), 0));
    PoolGeom band_pool = pg;
    band_pool.h = 2;  // one pooled line
    const uint32_t pscratch = ar.rows(pool_scratch_rows(band_pool, kN));
    for (uint32_t py = 0; py < 13; ++py) {
      ConvGeom band = g;
      band.h = 4;
      const VMat bx{x.base + 2 * py * 28 * kBatch / kN, band.input_rows(kN), kN, x.pitch};
      PoolGeom pb = pg;
      pb.h = 2;
      const VMat pv{pooled.base + py * pline, pline, 64, pooled.pitch};
      const VMat av{am.base + py * pline, pline, 64, am.pitch};
      if (pass == 0) {
        conv2d_forward(rig.pb(), band, bx, w, nullptr, buf, scratch, 0);
        maxpool_forward(rig.pb(), pb, buf, pv, av, pscratch);
      } else {  // dPooled := pooled (the figures do not depend on the values)
        maxpool_backward(rig.pb(), pb, av, pv, buf, pscratch);
        conv2d_backward_weights(rig.pb(), band, bx, buf, dw, scratch,
                                2048 - conv_dw_acc_rows(g, kN), py > 0);
      }
    }
    if (pass == 0) bias_add(rig.pb(), pooled, b);
    for (uint32_t cb = 0; pass == 1 && cb < 4; ++cb) {  // bias_grad's line stride is the
      // pitch (11 bits): one column block at a time (a one-block view, any pitch <= 2047)
      bias_grad(rig.pb(), VMat{pooled.block(cb), pooled.rows, kN, 1}, VMat{db.base + cb, 1, kN, 1});
    }
    add_run(rig, pass == 0 ? fwd : bwd);
  }
  print("conv+pool fused forward", fwd);
  print("conv+pool fused backward", bwd);
  EXPECT_EQ(fwd.mxu_rows, 26u * 26 * 32 * 4);
  EXPECT_EQ(bwd.mxu_rows, 26u * 26 * 32 / 16 * 4 * 9);
}

TEST(TrainFigures, KerasPoolAndDense) {
  Figures fwd, bwd;
  PoolGeom g;
  g.batch = kBatch;
  g.c = 16;
  g.h = g.w = 26;
  for (int slice = 0; slice < 4; ++slice) {
    Rig rig(kN, kVmem);
    VMat x = rig.arena().matrix(26 * 26 * kBatch, 16), y = rig.arena().matrix(13 * 13 * kBatch, 16);
    VMat am = rig.arena().matrix(y.rows, 16), dx = rig.arena().matrix(x.rows, 16);
    const uint32_t scratch = rig.arena().rows(pool_scratch_rows(g, kN));
    maxpool_forward(rig.pb(), g, x, y, am, scratch);
    add_run(rig, fwd);
    rig.new_program();
    maxpool_backward(rig.pb(), g, am, y, dx, scratch);
    add_run(rig, bwd);
  }
  print("maxpool 2x2 forward", fwd);
  print("maxpool 2x2 backward", bwd);
  EXPECT_EQ(fwd.mxu_rows, 0u);

  Figures dense;
  const uint32_t hw = 13 * 13;
  {  // forward and dW (X, W, dW and X^T fill VMEM), then dX in a second program
    Rig rig(kN, kVmem);
    VMat a = rig.arena().matrix(hw * kBatch, 64);
    const VMat flat = flatten_view(a, hw, kBatch, kN);
    VMat w = rig.arena().matrix(flat.cols, 10), y = rig.arena().matrix(kBatch, 10);
    VMat dw = rig.arena().matrix(flat.cols, 10);
    const uint32_t chunk = 128;  // K-tiles per dW chunk: K = 2048 rows fit ACC (one matmul)
    const uint32_t xt = rig.arena().rows(chunk * kBatch);
    dense_forward(rig.pb(), flat, w, nullptr, y, 0);
    for (uint32_t kt = 0; kt < flat.blocks(kN); kt += chunk) {  // dW split over K
      const uint32_t tiles = std::min(chunk, flat.blocks(kN) - kt);
      const VMat xc{flat.block(kt), kBatch, tiles * kN, kBatch};
      const VMat dwc{dw.base + kt * kN, tiles * kN, 10, tiles * kN};  // one column block
      dense_backward_weights(rig.pb(), xc, y, dwc, xt, 0);
    }
    add_run(rig, dense);
  }
  Rig rig(kN, kVmem);
  VMat dx = rig.arena().matrix(hw * kBatch, 64);
  VMat w = rig.arena().matrix(hw * 64, 10), dy = rig.arena().matrix(kBatch, 10);
  dense_backward_input(rig.pb(), dy, w, flatten_view(dx, hw, kBatch, kN), 0);
  add_run(rig, dense);
  print("flatten + dense 10816x10 f+b", dense);
  // Forward and dX: 676 K-tiles x 32 rows each; dW: 676 K-tiles x 2 batch tiles x 16 rows.
  EXPECT_EQ(dense.mxu_rows, 3u * 676 * 32);
}

}  // namespace
}  // namespace tpu::train::test

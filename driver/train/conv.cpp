// SPDX-License-Identifier: Apache-2.0
// Conv2D forward / backward on the MXU (docs/training.md "Convolution, pooling and Flatten").
// Activations are in the image layout (rows (y, x, b), channel blocks in lanes). cin == 1: the
// taps are put into the lanes on the chip (im2col: one `align` per tap builds tap-major rows,
// the transpose unit turns them into rows = positions, lanes = taps); cin > 1: each (tap,
// channel block) is a K-tile whose rows the matmul reads straight from the input with its 2-D
// row pattern.
#include <algorithm>
#include <string>

#include "detail.h"
#include "isa.h"
#include "kernels.h"
#include "vec2d.h"

namespace tpu::train {

namespace {

using detail::Pattern;
using detail::require;

constexpr uint32_t kMaxMatmulRows = 4095;  // matmul_bf16 inner / outer counts (12 bits)

std::string str(uint32_t v) { return std::to_string(v); }
uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

uint32_t ktiles(const ConvGeom& g, uint32_t n) {
  return g.packed() ? ceil_div(g.taps(), n) : g.taps() * ceil_div(g.cin, n);
}
// Rows of K-tile kt (the weight rows it loads).
uint32_t ktile_rows(const ConvGeom& g, uint32_t n, uint32_t kt) {
  if (g.packed()) return std::min(n, g.taps() - kt * n);
  const uint32_t cb = kt % ceil_div(g.cin, n);
  return std::min(n, g.cin - cb * n);
}
uint32_t tap_offset(const ConvGeom& g, uint32_t tap) {  // input rows from tap 0 to `tap`
  return ((tap / g.kw) * g.wp() + tap % g.kw) * g.batch;
}
// Index (rows of the flat image / of one input block) of output position (oy, 0, 0) at tap 0.
uint32_t line_start(const ConvGeom& g, uint32_t oy) { return oy * g.sh * g.wp() * g.batch; }

uint32_t acc_room(const ChipParams& p, uint32_t acc) {
  return acc < p.acc_rows ? std::min(kMaxMatmulRows, p.acc_rows - acc) : 0;
}
// Output lines per band: a band's positions fit the ACC rows and one matmul.
uint32_t band_lines(const ConvGeom& g, const ChipParams& p, uint32_t acc, const char* k) {
  const uint32_t line = g.wo() * g.batch;
  require(line <= acc_room(p, acc), k,
          "an output line of " + str(line) + " positions does not fit ACC rows from " + str(acc));
  return std::min(g.ho(), acc_room(p, acc) / line);
}

struct FlatRange {
  uint32_t r0, rows;  // flat image rows [r0, r0 + rows) a band of output lines reads at tap 0
};
FlatRange flat_range(const ConvGeom& g, uint32_t n, uint32_t oy0, uint32_t oy1) {
  const uint32_t q0 = line_start(g, oy0);
  const uint32_t q1 = line_start(g, oy1 - 1) + ((g.wo() - 1) * g.sw + 1) * g.batch;
  return {q0 / n, ceil_div(q1, n) - q0 / n};
}
uint32_t max_band_rows(const ConvGeom& g, uint32_t n, uint32_t lines) {
  uint32_t most = 0;
  for (uint32_t oy = 0; oy < g.ho(); oy += lines) {
    most = std::max(most, flat_range(g, n, oy, std::min(g.ho(), oy + lines)).rows);
  }
  return most;
}

void load_tile(ProgramBuilder& pb, uint32_t row, uint32_t rows, bool transpose) {
  LoadWeights lw;
  lw.transpose = transpose;
  lw.vmem_addr = static_cast<uint16_t>(row);
  lw.row_stride = 1;
  lw.tiles = 1;
  lw.rows = static_cast<uint16_t>(rows);
  pb.load_weights(lw);
}

void matmul(ProgramBuilder& pb, uint32_t vmem, uint32_t acc, uint32_t inner, uint32_t istride,
            uint32_t outer, uint32_t ostride, bool accumulate, bool switch_weights) {
  MatmulBf16 mm;
  mm.accumulate = accumulate;
  mm.switch_weights = switch_weights;
  mm.vmem_addr = static_cast<uint16_t>(vmem);
  mm.acc_addr = static_cast<uint16_t>(acc);
  mm.inner = static_cast<uint16_t>(inner);
  mm.inner_stride = static_cast<uint8_t>(istride);
  mm.outer = static_cast<uint16_t>(outer);
  require(istride <= 255 && ostride <= 65535, "conv2d",
          "matmul_bf16 row strides " + str(istride) + " / " + str(ostride) +
              " exceed the fields (255 / 65535)");
  mm.outer_stride = static_cast<uint16_t>(ostride);
  pb.matmul_bf16(mm);
}

// ACC rows [acc, acc + lines*wo*batch) (+)= the band's positions read from `src` (the row of
// position (0, 0, 0) at this K-tile; position (oy, ox, b) at src + line_start(oy) +
// ox*sw*batch + b) through the active tile (switch on the first matmul).
void band_matmuls(ProgramBuilder& pb, const ConvGeom& g, uint32_t src, uint32_t oy0, uint32_t lines,
                  uint32_t acc, bool accumulate) {
  const uint32_t line = g.wo() * g.batch;
  if (g.sw == 1) {  // a line's positions are consecutive rows: one matmul for the band
    matmul(pb, src + line_start(g, oy0), acc, line, 1, lines, g.sh * g.wp() * g.batch, accumulate,
           true);
    return;
  }
  for (uint32_t l = 0; l < lines; ++l) {
    matmul(pb, src + line_start(g, oy0 + l), acc + l * line, g.batch, 1, g.wo(), g.sw * g.batch,
           accumulate, l == 0);
  }
}

}  // namespace

uint32_t ConvGeom::input_rows(uint32_t n) const {
  if (!packed()) return hp() * wp() * batch;
  const uint32_t dmax = ((kh - 1) * wp() + kw - 1) * batch;
  return ceil_div(hp() * wp() * batch, n) + dmax / n + 1;
}

void check_conv_geom(const ConvGeom& g, const char* k) {
  require(g.batch >= 1 && g.cin >= 1 && g.cout >= 1 && g.h >= 1 && g.w >= 1 && g.kh >= 1 &&
              g.kw >= 1 && g.sh >= 1 && g.sw >= 1,
          k, "every count and stride of the convolution must be >= 1");
  require(g.kh <= g.hp() && g.kw <= g.wp(), k,
          "kernel " + str(g.kh) + "x" + str(g.kw) + " larger than the padded input " + str(g.hp()) +
              "x" + str(g.wp()));
}

VMat conv_input_matrix(VmemArena& arena, const ConvGeom& g) {
  return arena.matrix(g.input_rows(arena.n()), g.packed() ? arena.n() : g.cin);
}

std::vector<float> conv_input_values(const ConvGeom& g, uint32_t n,
                                     const std::vector<float>& nchw) {
  require(nchw.size() == size_t{g.batch} * g.cin * g.h * g.w, "conv_input_values",
          "expected " + str(g.batch * g.cin * g.h * g.w) + " NCHW values");
  const uint32_t cols = g.packed() ? n : g.cin;
  std::vector<float> v(size_t{g.input_rows(n)} * cols, 0.0f);
  for (uint32_t b = 0; b < g.batch; ++b) {
    for (uint32_t c = 0; c < g.cin; ++c) {
      for (uint32_t y = 0; y < g.h; ++y) {
        for (uint32_t x = 0; x < g.w; ++x) {
          const size_t pos =
              (size_t{y + g.pad_top} * g.wp() + x + g.pad_left) * g.batch + b;  // (y, x, b)
          const float f = nchw[((size_t{b} * g.cin + c) * g.h + y) * g.w + x];
          v[g.packed() ? pos : pos * cols + c] = f;  // packed: flat, N values per row
        }
      }
    }
  }
  return v;
}

std::vector<float> conv_weight_values(const ConvGeom& g, uint32_t n,
                                      const std::vector<float>& oihw) {
  require(oihw.size() == size_t{g.cout} * g.cin * g.taps(), "conv_weight_values",
          "expected " + str(g.cout * g.cin * g.taps()) + " OIHW values");
  std::vector<float> v(size_t{g.weight_rows(n)} * g.cout, 0.0f);
  for (uint32_t o = 0; o < g.cout; ++o) {
    for (uint32_t c = 0; c < g.cin; ++c) {
      for (uint32_t t = 0; t < g.taps(); ++t) {
        v[(size_t{t} * g.cin_stride(n) + c) * g.cout + o] =
            oihw[(size_t{o} * g.cin + c) * g.taps() + t];
      }
    }
  }
  return v;
}

std::vector<float> conv_weight_oihw(const ConvGeom& g, uint32_t n,
                                    const std::vector<float>& values) {
  require(values.size() == size_t{g.weight_rows(n)} * g.cout, "conv_weight_oihw",
          "expected " + str(g.weight_rows(n) * g.cout) + " values");
  std::vector<float> w(size_t{g.cout} * g.cin * g.taps());
  for (uint32_t o = 0; o < g.cout; ++o) {
    for (uint32_t c = 0; c < g.cin; ++c) {
      for (uint32_t t = 0; t < g.taps(); ++t) {
        w[(size_t{o} * g.cin + c) * g.taps() + t] =
            values[(size_t{t} * g.cin_stride(n) + c) * g.cout + o];
      }
    }
  }
  return w;
}

namespace {

uint32_t padded_input_span(const ConvGeom& g, uint32_t n) {
  return round_up(g.hp() * g.wp() * g.batch, n) * ceil_div(g.cin, n);
}

// A vector instruction's largest operand inner stride (isa.h's 4-bit field).
constexpr uint32_t kMaxVecInnerStride = static_cast<uint32_t>(field::kVecAInnerStride.max());

// Tap-major rows of a band (cin == 1): row sa + kt*rb*N + r*N + i, lane j = flat value
// (r0 + r)*N + j + offset(tap kt*N + i), by one `align` per run of taps: the taps of one kernel
// row in one tile share the shift when the batch is a multiple of N (their offsets B rows of
// the flat image apart, B/N VMEM rows, an inner stride of at most 15), so one instruction
// writes their rows side by side (consecutive VMEM banks) where one per tap wrote every N-th
// row, all in one bank: one row per cycle.
void build_tap_rows(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, uint32_t sa, uint32_t rb,
                    const FlatRange& fr, const char* k) {
  const uint32_t n = pb.params().N;
  for (uint32_t t = 0; t < g.taps();) {
    uint32_t run = 1;
    while (g.batch % n == 0 && g.batch / n <= kMaxVecInnerStride && t + run < g.taps() &&
           (t + run) % g.kw != 0 && (t + run) / n == t / n) {
      ++run;
    }
    const uint32_t d = tap_offset(g, t);
    detail::vec2d(pb, k, VecFunc::Align, Pattern{sa + (t / n) * rb * n + t % n, 1, n},
                  Pattern{x.base + fr.r0 + d / n, run > 1 ? g.batch / n : 1, 1}, BMode::Imm, d % n,
                  run, fr.rows);
    t += run;
  }
}

void check_forward(const ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& w,
                   const VMat& y) {
  const char* k = "conv2d_forward";
  const uint32_t n = pb.params().N;
  check_conv_geom(g, k);
  require(x.rows == g.input_rows(n) && x.cols == (g.packed() ? n : g.cin), k,
          "X " + str(x.rows) + "x" + str(x.cols) + " is not the input of this convolution (" +
              str(g.input_rows(n)) + "x" + str(g.packed() ? n : g.cin) + ")");
  require(w.rows == g.weight_rows(n) && w.cols == g.cout, k,
          "W " + str(w.rows) + "x" + str(w.cols) + ", expected " + str(g.weight_rows(n)) + "x" +
              str(g.cout));
  require(y.rows == g.ho() * g.wo() * g.batch && y.cols == g.cout, k,
          "Y " + str(y.rows) + "x" + str(y.cols) + ", expected " + str(g.ho() * g.wo() * g.batch) +
              "x" + str(g.cout));
}

}  // namespace

ConvDwOrient conv_dw_orientation(const ConvGeom& g, uint32_t n) {
  // Cycles per chunk of N positions at the training chip's unit rates, the busiest unit: a
  // load_weights tile N (tiles streamed), a transpose block transpose_block_cycles(N), a fold
  // max(rows, N) (the MXU overlaps consecutive folds' fill and drain).
  const uint64_t cobs = ceil_div(g.cout, n), kts = ktiles(g, n);
  const uint64_t k_rows = g.packed() ? g.taps() : uint64_t{g.taps()} * round_up(g.cin, n);
  const uint64_t dy_stationary = cobs * std::max<uint64_t>(k_rows, n);
  const uint64_t x_stationary =
      std::max({kts * n, cobs * transpose_block_cycles(n), kts * std::max<uint64_t>(cobs * n, n)});
  return x_stationary < dy_stationary ? ConvDwOrient::XStationary : ConvDwOrient::DyStationary;
}

namespace {

ConvDwOrient resolve(const ConvGeom& g, uint32_t n, ConvDwOrient o) {
  return o == ConvDwOrient::Auto ? conv_dw_orientation(g, n) : o;
}
// XStationary: dY^T of kDyRing chunks (cout_blocks * N rows each) in scratch, the transposes
// kDyAhead chunks ahead of the matmuls; then dW^T (ktiles * cout_blocks * N rows, from ACC).
constexpr uint32_t kDyAhead = 2, kDyRing = kDyAhead + 2;
uint32_t dyt_rows(const ConvGeom& g, uint32_t n) {  // the ring or dW^T, then dW (pitch KT*N)
  return (std::max(kDyRing, ktiles(g, n)) + ktiles(g, n)) * round_up(g.cout, n);
}
// Tap rows of the dW's bands (cin = 1; bands from ACC 0).
uint32_t dw_tap_rows(const ConvGeom& g, const ChipParams& p) {
  const uint32_t n = p.N;
  return ceil_div(g.taps(), n) * n * max_band_rows(g, n, band_lines(g, p, 0, "conv_dw_scratch"));
}

}  // namespace

uint32_t conv_scratch_rows(const ConvGeom& g, const ChipParams& p, uint32_t acc) {
  const uint32_t n = p.N;
  const uint32_t lines = band_lines(g, p, acc, "conv_scratch_rows");
  const bool xs = conv_dw_orientation(g, n) == ConvDwOrient::XStationary;
  if (g.packed()) {  // forward: tap rows + im2col rows per band; dW: tap rows, bands from ACC 0
    return std::max(ceil_div(g.taps(), n) * n * 2 * max_band_rows(g, n, lines),
                    dw_tap_rows(g, p) + (xs ? dyt_rows(g, n) : 0));
  }
  const uint32_t pad = g.hp() != g.h || g.wp() != g.w ? padded_input_span(g, n) : 0;
  return std::max(xs ? dyt_rows(g, n) : padded_input_span(g, n), lines * g.wo() * g.batch + pad);
}

uint32_t conv_dw_scratch_rows(const ConvGeom& g, const ChipParams& p, ConvDwOrient orient) {
  const uint32_t n = p.N;
  const bool xs = resolve(g, n, orient) == ConvDwOrient::XStationary;
  if (!g.packed()) return xs ? dyt_rows(g, n) : padded_input_span(g, n);  // dY^T or X^T
  return dw_tap_rows(g, p) + (xs ? dyt_rows(g, n) : 0);
}

void conv2d_forward(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& w,
                    const VMat* bias, const VMat& y, uint32_t scratch, uint32_t acc,
                    bool im2col_ready) {
  const char* k = "conv2d_forward";
  const uint32_t n = pb.params().N;
  check_forward(pb, g, x, w, y);
  require(bias == nullptr || (bias->cols == g.cout && bias->pitch == 1), k,
          "bias must be a row_vector of " + str(g.cout) + " columns");
  const uint32_t lines = band_lines(g, pb.params(), acc, k);
  const uint32_t kts = ktiles(g, n), line = g.wo() * g.batch;
  const uint32_t rb = g.packed() ? max_band_rows(g, n, lines) : 0;
  const uint32_t sa = scratch, sb = scratch + kts * rb * n;
  require(!im2col_ready || (g.packed() && lines >= g.ho()), k,
          "im2col_ready needs cin = 1 and the layer in one band of ACC rows");
  if (g.packed() && g.taps() % n != 0 && !im2col_ready) {  // lanes of the missing taps: +0
    const uint32_t i0 = g.taps() % n;
    const Pattern p{sa + (kts - 1) * rb * n + i0, 1, n};
    detail::vec2d(pb, k, VecFunc::And, p, p, BMode::Imm, 0, n - i0, rb);
  }
  for (uint32_t oy0 = 0; oy0 < g.ho(); oy0 += lines) {
    const uint32_t l = std::min(lines, g.ho() - oy0);
    const FlatRange fr = flat_range(g, n, oy0, oy0 + l);
    if (g.packed() && !im2col_ready) {
      build_tap_rows(pb, g, x, sa, rb, fr, k);
      for (uint32_t kt = 0; kt < kts; ++kt)
        pb.transpose(sa + kt * rb * n, sb + kt * rb * n, fr.rows);
    }
    for (uint32_t cob = 0; cob < y.blocks(n); ++cob) {
      for (uint32_t kt = 0; kt < kts; ++kt) {
        load_tile(pb, w.block(cob) + kt * n, ktile_rows(g, n, kt), false);
        const uint32_t src =
            g.packed() ? sb + kt * rb * n - fr.r0 * n
                       : x.block(kt % ceil_div(g.cin, n)) + tap_offset(g, kt / ceil_div(g.cin, n));
        band_matmuls(pb, g, src, oy0, l, acc, kt > 0);
      }
      pb.acc_to_vmem(acc, y.block(cob) + oy0 * line, l * line);
    }
  }
  if (bias != nullptr) bias_add(pb, y, *bias);
  detail::clear_own_padding(pb, y);
}

namespace {

// One N-position chunk of dY (rows c*N ..): its position (oy, ox, first b) as the index of
// the flat image / input block at tap 0.
uint32_t chunk_index(const ConvGeom& g, uint32_t n, uint32_t c) {
  const uint32_t row = c * n, b = row % g.batch, p = row / g.batch;
  return line_start(g, p / g.wo()) + (p % g.wo()) * g.sw * g.batch + b;
}

void check_backward_weights(const ProgramBuilder& pb, const ConvGeom& g, const VMat& x,
                            const VMat& dy, const VMat& dw, uint32_t acc, bool accumulate,
                            ConvDwOrient o) {
  const char* k = "conv2d_backward_weights";
  const uint32_t n = pb.params().N;
  check_conv_geom(g, k);
  require(g.batch % n == 0, k, "batch " + str(g.batch) + " must be a multiple of N = " + str(n));
  require(x.rows == g.input_rows(n) && x.cols == (g.packed() ? n : g.cin), k,
          "X is not the input of this convolution");
  require(dy.rows == g.ho() * g.wo() * g.batch && dy.cols == g.cout, k,
          "dY " + str(dy.rows) + "x" + str(dy.cols) + ", expected " +
              str(g.ho() * g.wo() * g.batch) + "x" + str(g.cout));
  require(dw.rows == g.weight_rows(n) && dw.cols == g.cout, k,
          "dW " + str(dw.rows) + "x" + str(dw.cols) + ", expected " + str(g.weight_rows(n)) + "x" +
              str(g.cout));
  require(!accumulate || o == ConvDwOrient::XStationary || g.packed() || dy.blocks(n) == 1, k,
          "accumulate with cin > 1 and dY stationary needs one output block per call");
  const uint32_t need = conv_dw_acc_rows(g, n, o);
  require(need <= acc_room(pb.params(), acc), k,
          str(need) + " ACC rows from " + str(acc) + " do not fit AccRows");
}

// DyStationary's tiles: chunk c's dY rows of block cob, for the chunks [c0, c1) in order.
// One load_weights brings kLwTiles consecutive chunks' tiles (tile_stride N: the unit fills a
// tile while the previous one drains, where separate commands each wait for the last one's
// drain): the first group's before chunk c0, each next group's after the matmuls of the second
// chunk of the group before it (then 2 + kLwTiles tiles wait: WFifoTiles + 2 with
// WFifoTiles = 4; else after the group's last chunk), so the unit loads while the MXU works.
// Called with `first` before the loop and after each chunk's matmuls.
constexpr uint32_t kLwTiles = 4;
void lw_group(ProgramBuilder& pb, const VMat& dy, uint32_t cob, uint32_t g0, uint32_t c1) {
  const uint32_t n = pb.params().N;
  LoadWeights lw;
  lw.vmem_addr = static_cast<uint16_t>(dy.block(cob) + g0 * n);
  lw.row_stride = 1;
  lw.tiles = static_cast<uint16_t>(std::min(kLwTiles, c1 - g0));
  lw.tile_stride = static_cast<uint16_t>(n);
  lw.rows = static_cast<uint16_t>(n);
  pb.load_weights(lw);
}
void load_chunk_tiles(ProgramBuilder& pb, const VMat& dy, uint32_t cob, uint32_t c, uint32_t c0,
                      uint32_t c1, bool first) {
  const uint32_t ahead = std::min(2u, kLwTiles);
  const bool lookahead = pb.params().wfifo_tiles + 2 >= kLwTiles + ahead;
  if (first) {
    lw_group(pb, dy, cob, c0, c1);
  } else if (lookahead && (c - c0) % kLwTiles == ahead - 1 && c + 1 - ahead + kLwTiles < c1) {
    lw_group(pb, dy, cob, c + 1 - ahead + kLwTiles, c1);
  } else if (!lookahead && (c + 1 - c0) % kLwTiles == 0 && c + 1 < c1) {
    lw_group(pb, dy, cob, c + 1, c1);
  }
}

// DyStationary (docs/training.md "Conv dW reoriented"): per chunk of N positions and output
// block, the dY chunk as the tile and the patch rows streamed; ACC rows = dW rows.
void dw_dy_stationary(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& dy,
                      const VMat& dw, uint32_t scratch, uint32_t acc, bool accumulate) {
  const char* k = "conv2d_backward_weights";
  const uint32_t n = pb.params().N;
  const uint32_t kts = ktiles(g, n), chunks_per_line = g.wo() * g.batch / n;
  if (g.packed()) {
    // ACC rows acc + (cob*KT + kt)*N + i = dW row kt*N + i of column block cob.
    const uint32_t lines = band_lines(g, pb.params(), 0, k);  // bands of the tap rows only
    const uint32_t rb = max_band_rows(g, n, lines);
    for (uint32_t oy0 = 0; oy0 < g.ho(); oy0 += lines) {
      const uint32_t l = std::min(lines, g.ho() - oy0);
      const FlatRange fr = flat_range(g, n, oy0, oy0 + l);
      build_tap_rows(pb, g, x, scratch, rb, fr, k);
      for (uint32_t cob = 0; cob < dy.blocks(n); ++cob) {
        const uint32_t c0 = oy0 * chunks_per_line, c1 = (oy0 + l) * chunks_per_line;
        load_chunk_tiles(pb, dy, cob, c0, c0, c1, true);
        for (uint32_t c = c0; c < c1; ++c) {
          for (uint32_t kt = 0; kt < kts; ++kt) {
            matmul(pb, scratch + kt * rb * n + chunk_index(g, n, c) - fr.r0 * n,
                   acc + (cob * kts + kt) * n, ktile_rows(g, n, kt), 1, 1, 0, accumulate || c > 0,
                   kt == 0);
          }
          load_chunk_tiles(pb, dy, cob, c, c0, c1, false);
        }
      }
    }
    for (uint32_t cob = 0; cob < dy.blocks(n); ++cob) {
      pb.acc_to_vmem(acc + cob * kts * n, dw.block(cob), dw.rows);
    }
    return;
  }
  // X^T: block (cb, row block) -> scratch + cb*xp + rows: rows = channels, lanes = rows.
  const uint32_t xp = round_up(x.rows, n);
  for (uint32_t cb = 0; cb < ceil_div(g.cin, n); ++cb) {
    pb.transpose(x.block(cb), scratch + cb * xp, xp / n);
  }
  const uint32_t cbs = ceil_div(g.cin, n);
  for (uint32_t cob = 0; cob < dy.blocks(n); ++cob) {  // ACC rows acc + kt*N + i, per block
    load_chunk_tiles(pb, dy, cob, 0, 0, dy.rows / n, true);
    for (uint32_t c = 0; c < dy.rows / n; ++c) {
      for (uint32_t kt = 0; kt < kts; ++kt) {  // all N channel rows: padding lanes give +0
        const uint32_t src =
            scratch + (kt % cbs) * xp + chunk_index(g, n, c) + tap_offset(g, kt / cbs);
        matmul(pb, src, acc + kt * n, n, 1, 1, 0, accumulate || c > 0, kt == 0);
      }
      load_chunk_tiles(pb, dy, cob, c, 0, dy.rows / n, false);
    }
    pb.acc_to_vmem(acc, dw.block(cob), dw.rows);
  }
}

// dY^T of chunk c (all output blocks, one transpose): row slot*CR + co, lane j = dY row c*N + j.
void transpose_dy_chunk(ProgramBuilder& pb, const VMat& dy, uint32_t c, uint32_t ring) {
  const uint32_t n = pb.params().N, cr = round_up(dy.cols, n);
  Transpose t;
  t.src = static_cast<uint16_t>(dy.block(0) + c * n);
  t.dst = static_cast<uint16_t>(ring + (c % kDyRing) * cr);
  t.blocks = static_cast<uint16_t>(dy.blocks(n));
  t.src_stride = static_cast<uint16_t>(dy.pitch);
  t.dst_stride = static_cast<uint16_t>(n);
  pb.transpose(t);
}

// XStationary: per chunk c (in order) and K-tile kt, the patch rows of the chunk's N positions
// as the tile (k = position, n = tap (cin = 1) or channel) and the chunk's dY^T rows (one per
// output channel) streamed: ACC rows acc + kt*CR + co = dW^T. The chunk's transpose is issued
// kDyAhead chunks before its matmuls, so the transpose unit works under the MXU.
void dw_x_stationary(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& dy,
                     const VMat& dw, uint32_t scratch, uint32_t acc, bool accumulate) {
  const char* k = "conv2d_backward_weights";
  const uint32_t n = pb.params().N;
  const uint32_t kts = ktiles(g, n), cr = round_up(g.cout, n), chunks = dy.rows / n;
  const uint32_t chunks_per_line = g.wo() * g.batch / n, cbs = ceil_div(g.cin, n);
  const uint32_t lines = g.packed() ? band_lines(g, pb.params(), 0, k) : g.ho();
  const uint32_t rb = g.packed() ? max_band_rows(g, n, lines) : 0;
  const uint32_t ring = scratch + (g.packed() ? kts * rb * n : 0);
  for (uint32_t c = 0; c < std::min(kDyAhead, chunks); ++c) transpose_dy_chunk(pb, dy, c, ring);
  for (uint32_t oy0 = 0; oy0 < g.ho(); oy0 += lines) {
    const uint32_t l = std::min(lines, g.ho() - oy0);
    const FlatRange fr = flat_range(g, n, oy0, oy0 + l);
    if (g.packed()) build_tap_rows(pb, g, x, scratch, rb, fr, k);
    for (uint32_t c = oy0 * chunks_per_line; c < (oy0 + l) * chunks_per_line; ++c) {
      if (c + kDyAhead < chunks) transpose_dy_chunk(pb, dy, c + kDyAhead, ring);
      for (uint32_t kt = 0; kt < kts; ++kt) {
        if (g.packed()) {  // the tap-major rows, transposed: W[k][n] = tap n at position k
          load_tile(pb, scratch + kt * rb * n + chunk_index(g, n, c) - fr.r0 * n,
                    ktile_rows(g, n, kt), true);
        } else {  // the input rows of the tap: W[k][n] = channel n at position k
          load_tile(pb, x.block(kt % cbs) + chunk_index(g, n, c) + tap_offset(g, kt / cbs), n,
                    false);
        }
        matmul(pb, ring + (c % kDyRing) * cr, acc + kt * cr, cr, 1, 1, 0, accumulate || c > 0,
               true);
      }
    }
  }
  // dW^T (ACC) -> scratch -> dW: block (kt, cob) of dW^T to dW block cob rows kt*N ... (N
  // rows each: straight into dW when its pitch holds them, else into scratch at pitch KT*N
  // and the weight rows copied from there, bit for bit).
  pb.acc_to_vmem(acc, ring, kts * cr);
  const bool direct = dw.pitch >= kts * n;
  const uint32_t staged = ring + std::max(kDyRing, kts) * cr;
  for (uint32_t cob = 0; cob < dw.blocks(n); ++cob) {
    Transpose t;
    t.src = static_cast<uint16_t>(ring + cob * n);
    t.dst = static_cast<uint16_t>(direct ? dw.block(cob) : staged + cob * kts * n);
    t.blocks = static_cast<uint16_t>(kts);
    t.src_stride = static_cast<uint16_t>(cr);
    t.dst_stride = static_cast<uint16_t>(n);
    pb.transpose(t);
  }
  for (uint32_t cob = 0; !direct && cob < dw.blocks(n); ++cob) {
    pb.vop_imm(VecFunc::Or, dw.block(cob), staged + cob * kts * n, 0, dw.rows);
  }
}

}  // namespace

uint32_t conv_dw_acc_rows(const ConvGeom& g, uint32_t n, ConvDwOrient orient) {
  if (resolve(g, n, orient) == ConvDwOrient::XStationary || g.packed())
    return ceil_div(g.cout, n) * ktiles(g, n) * n;
  return ktiles(g, n) * n;  // cin > 1, dY stationary: one output block at a time
}

bool conv_dw_group(const ConvGeom& g, uint32_t n) {
  return g.packed() || g.cout <= n || conv_dw_orientation(g, n) == ConvDwOrient::XStationary;
}

void conv2d_backward_weights(ProgramBuilder& pb, const ConvGeom& g, const VMat& x, const VMat& dy,
                             const VMat& dw, uint32_t scratch, uint32_t acc, bool accumulate,
                             ConvDwOrient orient) {
  const uint32_t n = pb.params().N;
  const ConvDwOrient o = resolve(g, n, orient);
  check_backward_weights(pb, g, x, dy, dw, acc, accumulate, o);
  if (o == ConvDwOrient::XStationary) {
    dw_x_stationary(pb, g, x, dy, dw, scratch, acc, accumulate);
  } else {
    dw_dy_stationary(pb, g, x, dy, dw, scratch, acc, accumulate);
  }
  detail::clear_own_padding(pb, dw);
}

void conv2d_backward_input(ProgramBuilder& pb, const ConvGeom& g, const VMat& dy, const VMat& w,
                           const VMat& dx, uint32_t scratch, uint32_t acc) {
  const char* k = "conv2d_backward_input";
  const uint32_t n = pb.params().N;
  check_conv_geom(g, k);
  require(!g.packed(), k, "cin = 1: the input comes from the host (a first layer), no dX");
  require(dy.rows == g.ho() * g.wo() * g.batch && dy.cols == g.cout, k,
          "dY " + str(dy.rows) + "x" + str(dy.cols) + " is not this convolution's output");
  require(w.rows == g.weight_rows(n) && w.cols == g.cout, k, "W is not this convolution's");
  require(dx.rows == g.h * g.w * g.batch && dx.cols == g.cin, k,
          "dX " + str(dx.rows) + "x" + str(dx.cols) + ", expected " + str(g.h * g.w * g.batch) +
              "x" + str(g.cin));
  const uint32_t lines = band_lines(g, pb.params(), acc, k), line = g.wo() * g.batch;
  const bool padded = g.hp() != g.h || g.wp() != g.w;
  const uint32_t part = scratch, cbs = ceil_div(g.cin, n);
  // dXp: the gradient of the padded input, zeroed, taps added in order.
  const uint32_t pitch = padded ? round_up(g.hp() * g.wp() * g.batch, n) : dx.pitch;
  const uint32_t dxp = padded ? scratch + lines * line : dx.base;
  for (uint32_t cb = 0; cb < cbs; ++cb) {
    pb.vop_imm(VecFunc::And, dxp + cb * pitch, dxp + cb * pitch, 0, g.hp() * g.wp() * g.batch);
  }
  for (uint32_t t = 0; t < g.taps(); ++t) {
    for (uint32_t cb = 0; cb < cbs; ++cb) {
      for (uint32_t oy0 = 0; oy0 < g.ho(); oy0 += lines) {
        const uint32_t l = std::min(lines, g.ho() - oy0);
        for (uint32_t cob = 0; cob < dy.blocks(n); ++cob) {
          load_tile(pb, w.block(cob) + (t * cbs + cb) * n, std::min(n, g.cin - cb * n), true);
          matmul(pb, dy.block(cob) + oy0 * line, acc, l * line, 1, 1, 0, cob > 0, true);
        }
        pb.acc_to_vmem(acc, part, l * line);
        for (uint32_t y = 0; y < l; ++y) {  // col2im: add the line to the tap's input rows
          const uint32_t d = dxp + cb * pitch + line_start(g, oy0 + y) + tap_offset(g, t);
          detail::vec2d(pb, k, VecFunc::FAdd, Pattern{d, 1, g.sw * g.batch},
                        Pattern{part + y * line, 1, g.batch}, BMode::RowDst, d, g.batch, g.wo());
        }
      }
    }
  }
  if (padded) {
    for (uint32_t cb = 0; cb < cbs; ++cb) {
      for (uint32_t iy = 0; iy < g.h; ++iy) {
        pb.vop_imm(VecFunc::Or, dx.block(cb) + iy * g.w * g.batch,
                   dxp + cb * pitch + ((iy + g.pad_top) * g.wp() + g.pad_left) * g.batch, 0,
                   g.w * g.batch);
      }
    }
  }
  detail::clear_own_padding(pb, dx);
}

void conv_pad_input(ProgramBuilder& pb, const ConvGeom& g, const VMat& src, const VMat& x) {
  const char* k = "conv_pad_input";
  const uint32_t n = pb.params().N;
  require(!g.packed() && x.rows == g.input_rows(n) && x.cols == g.cin, k,
          "X is not the input of this convolution (cin > 1)");
  require(src.rows == g.h * g.w * g.batch && src.cols == g.cin, k,
          "source " + str(src.rows) + "x" + str(src.cols) + ", expected " +
              str(g.h * g.w * g.batch) + "x" + str(g.cin));
  for (uint32_t cb = 0; cb < x.blocks(n); ++cb) {
    pb.vop_imm(VecFunc::And, x.block(cb), x.block(cb), 0, x.rows);
  }
  for (uint32_t cb = 0; cb < x.blocks(n); ++cb) {
    for (uint32_t iy = 0; iy < g.h; ++iy) {
      pb.vop_imm(VecFunc::Or, x.block(cb) + ((iy + g.pad_top) * g.wp() + g.pad_left) * g.batch,
                 src.block(cb) + iy * g.w * g.batch, 0, g.w * g.batch);
    }
  }
}

}  // namespace tpu::train

namespace tpu::train {

void bias_add(ProgramBuilder& pb, const VMat& y, const VMat& bias) {
  detail::require(bias.cols == y.cols && bias.pitch == 1, "bias_add",
                  "bias must be a row_vector of " + std::to_string(y.cols) + " columns");
  for (uint32_t b = 0; b < y.blocks(pb.params().N); ++b) {
    pb.vop_row(VecFunc::FAdd, y.block(b), y.block(b), bias.block(b), y.rows);
  }
}

}  // namespace tpu::train

// SPDX-License-Identifier: Apache-2.0
// MaxPool, AveragePool, GlobalAveragePool, residual Add and Flatten on the vector unit
// (docs/training.md "Convolution, pooling and Flatten"). Activations in the image layout: row
// (y*W + x)*batch + b, so one output line of a pooling tap is a 2-D `vector` pattern (inner:
// the batch, stride 1; outer: the pixels of the line, stride sw*batch on the input).
#include <algorithm>
#include <string>

#include "detail.h"
#include "kernels.h"
#include "vec2d.h"

namespace tpu::train {

namespace {

using detail::Pattern;
using detail::require;

constexpr uint32_t kAllOnes = 0xFFFFFFFFu;
constexpr uint32_t kNegInf = 0xFF800000u;

std::string str(uint32_t v) { return std::to_string(v); }

// The output pixels (oy, ox_lo .. ox_hi-1) whose tap (dy, dx) reads input line iy.
struct Segment {
  bool valid = false;
  uint32_t iy = 0, ix = 0, ox_lo = 0, count = 0;
};
Segment segment(const PoolGeom& g, uint32_t oy, uint32_t dy, uint32_t dx) {
  Segment s;
  const int64_t iy = int64_t{oy} * g.sh - g.pad_top + dy;
  if (iy < 0 || iy >= g.h) return s;
  uint32_t lo = 0;
  while (lo < g.wo() && int64_t{lo} * g.sw + dx < g.pad_left) ++lo;
  uint32_t hi = lo;
  while (hi < g.wo() && int64_t{hi} * g.sw + dx - g.pad_left < g.w) ++hi;
  if (hi == lo) return s;
  s.valid = true;
  s.iy = static_cast<uint32_t>(iy);
  s.ix = static_cast<uint32_t>(int64_t{lo} * g.sw + dx - g.pad_left);
  s.ox_lo = lo;
  s.count = hi - lo;
  return s;
}

void check_pool(const PoolGeom& g, const VMat& x, const VMat& y, const char* k) {
  require(g.batch >= 1 && g.c >= 1 && g.h >= 1 && g.w >= 1 && g.kh >= 1 && g.kw >= 1 && g.sh >= 1 &&
              g.sw >= 1,
          k, "every count and stride of the pooling must be >= 1");
  require(g.pad_top < g.kh && g.pad_bottom < g.kh && g.pad_left < g.kw && g.pad_right < g.kw, k,
          "pads must be smaller than the window");
  require(g.kh <= g.h + g.pad_top + g.pad_bottom && g.kw <= g.w + g.pad_left + g.pad_right, k,
          "window larger than the padded input");
  require(x.rows == g.h * g.w * g.batch && x.cols == g.c, k,
          "X " + str(x.rows) + "x" + str(x.cols) + ", expected " + str(g.h * g.w * g.batch) + "x" +
              str(g.c));
  require(y.rows == g.ho() * g.wo() * g.batch && y.cols == g.c, k,
          "Y " + str(y.rows) + "x" + str(y.cols) + ", expected " + str(g.ho() * g.wo() * g.batch) +
              "x" + str(g.c));
}

// Whole-tensor steps go block by block over `rows`, so a VMat that is a band of a larger
// tensor (pitch > rows) is safe: rows past `rows` are not touched.
void zero_rows(ProgramBuilder& pb, const VMat& m) {
  for (uint32_t cb = 0; cb < m.blocks(pb.params().N); ++cb) {
    pb.vop_imm(VecFunc::And, m.block(cb), m.block(cb), 0, m.rows);
  }
}
void scale_rows(ProgramBuilder& pb, const VMat& dst, const VMat& src, uint32_t factor) {
  for (uint32_t cb = 0; cb < src.blocks(pb.params().N); ++cb) {
    pb.vop_imm(VecFunc::FMul, dst.block(cb), src.block(cb), factor, src.rows);
  }
}

// Input rows of a segment in block `xb` (stride sw*batch) and output rows in block `yb`.
Pattern in_rows(const PoolGeom& g, uint32_t xb, const Segment& s) {
  return Pattern{xb + (s.iy * g.w + s.ix) * g.batch, 1, g.sw * g.batch};
}
Pattern out_rows(const PoolGeom& g, uint32_t yb, uint32_t oy, const Segment& s) {
  return Pattern{yb + (oy * g.wo() + s.ox_lo) * g.batch, 1, g.batch};
}

// For every tap (ky*kw + kx order) and output line with a segment: f(tap, oy, segment).
template <typename F>
void for_each_segment(const PoolGeom& g, F f) {
  for (uint32_t t = 0; t < g.kh * g.kw; ++t) {
    for (uint32_t oy = 0; oy < g.ho(); ++oy) {
      const Segment s = segment(g, oy, t / g.kw, t % g.kw);
      if (s.valid) f(t, oy, s);
    }
  }
}

}  // namespace

uint32_t pool_scratch_rows(const PoolGeom& g, uint32_t n) {
  return (g.c + n - 1) / n * round_up(g.ho() * g.wo() * g.batch, n) + g.kh * g.kw;
}

bool padded(const PoolGeom& g) {
  return g.pad_top != 0 || g.pad_left != 0 || g.pad_bottom != 0 || g.pad_right != 0;
}

// Windows that tile the input (window = stride, no padding): each input pixel is in at most
// one window.
bool tiled(const PoolGeom& g) { return g.kh == g.sh && g.kw == g.sw && !padded(g); }

void maxpool_forward(ProgramBuilder& pb, const PoolGeom& g, const VMat& x, const VMat& y,
                     const VMat& argmax, uint32_t scratch) {
  const char* k = "maxpool_forward";
  const uint32_t n = pb.params().N, taps = g.kh * g.kw;
  check_pool(g, x, y, k);
  require(argmax.rows == y.rows && argmax.cols == y.cols && argmax.pitch == y.pitch, k,
          "argmax must have Y's shape and pitch");
  const uint32_t ms_pitch = round_up(y.rows, n);  // scratch: M per block, then the tap rows
  const uint32_t tap_rows = scratch + y.blocks(n) * ms_pitch;
  for (uint32_t t = 0; t < taps; ++t) {  // row t: fp32 t in every lane
    pb.vop_imm(VecFunc::And, tap_rows + t, tap_rows + t, 0, 1);
    pb.vop_imm(VecFunc::Or, tap_rows + t, tap_rows + t, imm(static_cast<float>(t)), 1);
  }
  if (padded(g) || taps == 1) {  // Y = -inf, argmax = +0 before the first tap
    for (uint32_t cb = 0; cb < y.blocks(n); ++cb) {
      pb.vop_imm(VecFunc::And, y.block(cb), y.block(cb), 0, y.rows);
      pb.vop_imm(VecFunc::Or, y.block(cb), y.block(cb), kNegInf, y.rows);
      pb.vop_imm(VecFunc::And, argmax.block(cb), argmax.block(cb), 0, y.rows);
    }
  }
  for_each_segment(g, [&](uint32_t t, uint32_t oy, const Segment& s) {
    for (uint32_t cb = 0; cb < y.blocks(n); ++cb) {
      const Pattern xs = in_rows(g, x.block(cb), s), ys = out_rows(g, y.block(cb), oy, s);
      const Pattern as = out_rows(g, argmax.block(cb), oy, s);
      const Pattern ms = out_rows(g, scratch + cb * ms_pitch, oy, s);
      const bool first = !padded(g) && taps > 1;  // tap 0 reaches every output, tap 1 too
      if (t > 0 || !first) {
        // M = x_t <= Y; T = t & ~M (t where x_t is a new strict maximum, else +0);
        // argmax = max(argmax, T) (tap 1 without padding: argmax = T).
        detail::vec2d(pb, k, VecFunc::FLe, ms, xs, BMode::RowDst, ys.base, g.batch, s.count);
        const Pattern tap{tap_rows + t, 0, 0};
        const Pattern dst = first && t == 1 ? as : ms;
        detail::vec2d(pb, k, VecFunc::AndN, dst, tap, BMode::RowDst, ms.base, g.batch, s.count);
        if (!(first && t == 1)) {
          detail::vec2d(pb, k, VecFunc::FMax, as, as, BMode::RowA, ms.base, g.batch, s.count);
        }
      }
      if (t == 0 && first) {  // Y = max(x_0, -inf)
        detail::vec2d(pb, k, VecFunc::FMax, ys, xs, BMode::Imm, kNegInf, g.batch, s.count);
      } else {
        detail::vec2d(pb, k, VecFunc::FMax, ys, xs, BMode::RowDst, ys.base, g.batch, s.count);
      }
    }
  });
  detail::clear_own_padding(pb, y);
  detail::clear_own_padding(pb, argmax);
}

void maxpool_backward(ProgramBuilder& pb, const PoolGeom& g, const VMat& argmax, const VMat& dy,
                      const VMat& dx, uint32_t scratch) {
  const char* k = "maxpool_backward";
  const uint32_t n = pb.params().N;
  check_pool(g, dx, dy, k);
  require(argmax.rows == dy.rows && argmax.cols == dy.cols && argmax.pitch == dy.pitch, k,
          "argmax must have dY's shape and pitch");
  const uint32_t ms_pitch = round_up(dy.rows, n);  // scratch: M per block
  const bool covered = tiled(g) && g.ho() * g.sh == g.h && g.wo() * g.sw == g.w;
  if (!covered) zero_rows(pb, dx);
  uint32_t last_tap = ~0u;
  for_each_segment(g, [&](uint32_t t, uint32_t oy, const Segment& s) {
    for (uint32_t cb = 0; cb < dy.blocks(n) && t != last_tap; ++cb) {
      // M = the windows whose max is tap t (and dY there, if windows overlap)
      const uint32_t m = scratch + cb * ms_pitch;
      pb.vop_imm(VecFunc::FEq, m, argmax.block(cb), imm(static_cast<float>(t)), dy.rows);
      if (!tiled(g)) pb.vop(VecFunc::And, m, dy.block(cb), m, dy.rows);
    }
    last_tap = t;
    for (uint32_t cb = 0; cb < dy.blocks(n); ++cb) {
      const Pattern xs = in_rows(g, dx.block(cb), s);
      const Pattern ms = out_rows(g, scratch + cb * ms_pitch, oy, s);
      if (tiled(g)) {  // each input pixel once: dX = dY & M
        detail::vec2d(pb, k, VecFunc::And, xs, out_rows(g, dy.block(cb), oy, s), BMode::RowA,
                      ms.base, g.batch, s.count);
      } else {  // overlapping windows: dX += dY & M, taps in order
        detail::vec2d(pb, k, VecFunc::FAdd, xs, ms, BMode::RowDst, xs.base, g.batch, s.count);
      }
    }
  });
  detail::clear_own_padding(pb, dx);
}

namespace {

void require_no_pads(const PoolGeom& g, const char* k) {
  require(g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0, k,
          "AveragePool with padding is not supported");
}

}  // namespace

void avgpool_forward(ProgramBuilder& pb, const PoolGeom& g, const VMat& x, const VMat& y) {
  const char* k = "avgpool_forward";
  const uint32_t n = pb.params().N;
  check_pool(g, x, y, k);
  require_no_pads(g, k);
  for_each_segment(g, [&](uint32_t t, uint32_t oy, const Segment& s) {
    for (uint32_t cb = 0; cb < y.blocks(n); ++cb) {
      const Pattern xs = in_rows(g, x.block(cb), s), ys = out_rows(g, y.block(cb), oy, s);
      if (t == 0) {
        detail::vec2d(pb, k, VecFunc::Or, ys, xs, BMode::Imm, 0, g.batch, s.count);
      } else {
        detail::vec2d(pb, k, VecFunc::FAdd, ys, xs, BMode::RowDst, ys.base, g.batch, s.count);
      }
    }
  });
  scale_rows(pb, y, y, imm(1.0f / static_cast<float>(g.kh * g.kw)));
  detail::clear_own_padding(pb, y);
}

void avgpool_backward(ProgramBuilder& pb, const PoolGeom& g, const VMat& dy, const VMat& dx,
                      uint32_t scratch) {
  const char* k = "avgpool_backward";
  const uint32_t n = pb.params().N;
  check_pool(g, dx, dy, k);
  require_no_pads(g, k);
  const uint32_t gp = round_up(dy.rows, n);
  const VMat grad{scratch, dy.rows, dy.cols, gp};  // dY * (1/(kh*kw))
  scale_rows(pb, grad, dy, imm(1.0f / static_cast<float>(g.kh * g.kw)));
  zero_rows(pb, dx);
  for_each_segment(g, [&](uint32_t, uint32_t oy, const Segment& s) {
    for (uint32_t cb = 0; cb < dy.blocks(n); ++cb) {
      const Pattern xs = in_rows(g, dx.block(cb), s);
      detail::vec2d(pb, k, VecFunc::FAdd, xs, out_rows(g, grad.block(cb), oy, s), BMode::RowDst,
                    xs.base, g.batch, s.count);
    }
  });
  detail::clear_own_padding(pb, dx);
}

namespace {

void check_gap(const PoolGeom& g, const VMat& x, const VMat& y, const char* k) {
  require(x.rows == g.h * g.w * g.batch && x.cols == g.c, k,
          "X " + str(x.rows) + "x" + str(x.cols) + ", expected " + str(g.h * g.w * g.batch) + "x" +
              str(g.c));
  require(y.rows == g.batch && y.cols == g.c, k,
          "Y " + str(y.rows) + "x" + str(y.cols) + ", expected " + str(g.batch) + "x" + str(g.c));
}

}  // namespace

void gap_forward(ProgramBuilder& pb, const PoolGeom& g, const VMat& x, const VMat& y) {
  const char* k = "gap_forward";
  const uint32_t n = pb.params().N;
  check_gap(g, x, y, k);
  zero_rows(pb, y);
  for (uint32_t cb = 0; cb < y.blocks(n); ++cb) {
    pb.vop_imm(VecFunc::Or, y.block(cb), y.block(cb), detail::kNegZero, y.rows);
  }
  for (uint32_t cb = 0; cb < y.blocks(n); ++cb) {
    // Y += x_p for every pixel p in order: the destination line stride 0 revisits Y's rows.
    const Pattern ys{y.block(cb), 1, 0};
    detail::vec2d(pb, k, VecFunc::FAdd, ys, Pattern{x.block(cb), 1, g.batch}, BMode::RowDst,
                  ys.base, g.batch, g.h * g.w);
  }
  scale_rows(pb, y, y, imm(1.0f / static_cast<float>(g.h * g.w)));
  detail::clear_own_padding(pb, y);
}

void gap_backward(ProgramBuilder& pb, const PoolGeom& g, const VMat& dy, const VMat& dx) {
  const char* k = "gap_backward";
  const uint32_t n = pb.params().N;
  check_gap(g, dx, dy, k);
  const uint32_t inv = imm(1.0f / static_cast<float>(g.h * g.w));
  for (uint32_t cb = 0; cb < dy.blocks(n); ++cb) {
    pb.vop_imm(VecFunc::FMul, dx.block(cb), dy.block(cb), inv, g.batch);  // pixel 0
    if (g.h * g.w > 1) {  // pixels 1.. copy pixel 0 (A's line stride 0)
      detail::vec2d(pb, k, VecFunc::Or, Pattern{dx.block(cb) + g.batch, 1, g.batch},
                    Pattern{dx.block(cb), 1, 0}, BMode::Imm, 0, g.batch, g.h * g.w - 1);
    }
  }
  detail::clear_own_padding(pb, dx);
}

void add_forward(ProgramBuilder& pb, const VMat& a, const VMat& b, const VMat& y) {
  require(a.rows == b.rows && a.cols == b.cols && a.pitch == b.pitch && y.rows == a.rows &&
              y.cols == a.cols && y.pitch == a.pitch,
          "add_forward", "A, B and Y must have the same shape and pitch");
  for (uint32_t cb = 0; cb < a.blocks(pb.params().N); ++cb) {
    pb.vop(VecFunc::FAdd, y.block(cb), a.block(cb), b.block(cb), a.rows);
  }
}

void grad_accumulate(ProgramBuilder& pb, const VMat& acc, const VMat& g) {
  require(acc.rows == g.rows && acc.cols == g.cols && acc.pitch == g.pitch, "grad_accumulate",
          "the gradients must have the same shape and pitch");
  for (uint32_t cb = 0; cb < acc.blocks(pb.params().N); ++cb) {
    pb.vop(VecFunc::FAdd, acc.block(cb), acc.block(cb), g.block(cb), acc.rows);
  }
}

VMat flatten_view(const VMat& a, uint32_t hw, uint32_t batch, uint32_t n) {
  require(a.rows == hw * batch && a.pitch == hw * batch, "flatten_view",
          "the image activation must have rows = pitch = h*w*batch = " + str(hw * batch) +
              " (batch a multiple of N makes VmemArena::matrix's pitch equal)");
  return VMat{a.base, batch, a.blocks(n) * n * hw, batch};
}

uint32_t flatten_feature(uint32_t c, uint32_t p, uint32_t hw, uint32_t n) {
  return ((c / n) * hw + p) * n + c % n;
}

}  // namespace tpu::train

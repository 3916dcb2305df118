// SPDX-License-Identifier: Apache-2.0
// Dense / Gemm kernels: bf16 matmuls tiled over K (accumulated in ACC) and N (column blocks).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail.h"
#include "kernels.h"

namespace tpu::train {

namespace {

constexpr uint32_t kMaxMatmulRows = 4095;  // matmul_bf16 inner count (12 bits)

using detail::require;

std::string shape(const VMat& m) { return std::to_string(m.rows) + "x" + std::to_string(m.cols); }

void require_acc(const ProgramBuilder& pb, const char* kernel, uint32_t acc, uint32_t rows) {
  require(
      rows >= 1 && rows <= kMaxMatmulRows, kernel,
      "rows = " + std::to_string(rows) + " (allowed 1.." + std::to_string(kMaxMatmulRows) + ")");
  require(uint64_t{acc} + rows <= pb.params().acc_rows, kernel,
          "ACC rows " + std::to_string(acc) + " + " + std::to_string(rows) +
              " exceed AccRows = " + std::to_string(pb.params().acc_rows));
}

// One bf16 tile from `rows` (<= N) VMEM rows starting at `row`, made active by the next matmul.
void load_tile(ProgramBuilder& pb, uint32_t row, uint32_t rows, bool transpose) {
  LoadWeights lw;
  lw.transpose = transpose;
  lw.vmem_addr = static_cast<uint16_t>(row);
  lw.row_stride = 1;
  lw.tiles = 1;
  lw.tile_stride = 0;
  lw.rows = static_cast<uint16_t>(rows);
  pb.load_weights(lw);
}

// ACC rows [acc, acc + inner*outer) (+)= VMEM rows through the active tile (switch first).
void matmul(ProgramBuilder& pb, uint32_t vmem, uint32_t acc, uint32_t inner, uint32_t outer,
            uint32_t outer_stride, bool accumulate) {
  MatmulBf16 mm;
  mm.accumulate = accumulate;
  mm.switch_weights = true;
  mm.vmem_addr = static_cast<uint16_t>(vmem);
  mm.acc_addr = static_cast<uint16_t>(acc);
  mm.inner = static_cast<uint16_t>(inner);
  mm.outer = static_cast<uint16_t>(outer);
  mm.inner_stride = 1;
  mm.outer_stride = static_cast<uint16_t>(outer_stride);
  pb.matmul_bf16(mm);
}

uint32_t tile_rows(uint32_t total, uint32_t t, uint32_t n) { return std::min(n, total - t * n); }

// The weight tiles of a kernel's matmuls, in the order the matmuls switch to them, loaded by
// groups of up to `group` consecutive ones (the same rows, the same VMEM row step from one to
// the next: tile_stride) with one load_weights each (the unit fills a tile while the one
// before it drains: 81 cycles for 4 tiles at N = 16 against 33 for one). Group g + 1 is loaded
// after the matmul of group g's second tile when the tiles then waiting fit the FIFO
// (WFifoTiles + 2), else right before its first matmul; with group 1 every tile right before
// its matmul (one load per tile, tile_stride 0).
class TileFeed {
 public:
  struct Tile {
    uint32_t row, rows;
  };
  TileFeed(ProgramBuilder& pb, const std::vector<Tile>& tiles, bool transpose, uint32_t group)
      : pb_(pb), tiles_(tiles), transpose_(transpose) {
    constexpr uint32_t kMaxStride = 0xFFFF;  // tile_stride: 16 bits
    for (size_t i = 0; i < tiles.size(); ++i) {
      bool joins = !starts_.empty() && i - starts_.back() < group &&
                   tiles[i].rows == tiles[i - 1].rows && tiles[i].row > tiles[i - 1].row &&
                   tiles[i].row - tiles[i - 1].row <= kMaxStride;
      if (joins && i - starts_.back() >= 2) {
        joins = tiles[i].row - tiles[i - 1].row == tiles[i - 1].row - tiles[i - 2].row;
      }
      if (!joins) starts_.push_back(i);
    }
    starts_.push_back(tiles.size());
  }
  void before(size_t i) {  // before the matmul of tile i
    while (loaded_ + 1 < starts_.size() && starts_[loaded_] <= i) load(loaded_++);
  }
  void after(size_t i) {  // after it
    constexpr size_t kAhead = 2;
    // i's group if the next is not loaded yet (before(i) ran); else nothing to do
    const size_t g = loaded_ - 1;
    if (loaded_ + 1 >= starts_.size() || i + 1 < starts_[g] + kAhead) return;
    const size_t waiting = pb_.pending_weight_tiles() + (starts_[g + 2] - starts_[g + 1]);
    if (waiting <= pb_.weight_capacity() && starts_[g + 1] - starts_[g] > 1) load(loaded_++);
  }

 private:
  using Starts = std::vector<size_t>;
  void load(size_t g) {
    const uint32_t first = tiles_[starts_[g]].row;
    LoadWeights lw;
    lw.transpose = transpose_;
    lw.vmem_addr = static_cast<uint16_t>(first);
    lw.row_stride = 1;
    lw.tiles = static_cast<uint16_t>(starts_[g + 1] - starts_[g]);
    lw.tile_stride = static_cast<uint16_t>(lw.tiles > 1 ? tiles_[starts_[g] + 1].row - first : 0);
    lw.rows = static_cast<uint16_t>(tiles_[starts_[g]].rows);
    pb_.load_weights(lw);
  }
  ProgramBuilder& pb_;
  const std::vector<Tile>& tiles_;
  bool transpose_;
  Starts starts_;  // group g: tiles [starts_[g], starts_[g + 1])
  size_t loaded_ = 0;
};

}  // namespace

void dense_forward_partial(ProgramBuilder& pb, const VMat& x, const VMat& w, uint32_t acc,
                           bool accumulate, uint32_t tile_group) {
  const char* k = "dense_forward";
  const uint32_t n = pb.params().N;
  require(x.cols == w.rows, k, "X " + shape(x) + " . W " + shape(w) + " do not match");
  require_acc(pb, k, acc, x.rows);
  require_acc(pb, k, acc, w.blocks(n) * x.rows);
  std::vector<TileFeed::Tile> tiles;
  for (uint32_t nt = 0; nt < w.blocks(n); ++nt) {
    for (uint32_t kt = 0; kt < x.blocks(n); ++kt) {
      tiles.push_back({w.block(nt) + kt * n, tile_rows(w.rows, kt, n)});
    }
  }
  TileFeed feed(pb, tiles, false, tile_group);
  size_t t = 0;
  for (uint32_t nt = 0; nt < w.blocks(n); ++nt) {
    for (uint32_t kt = 0; kt < x.blocks(n); ++kt, ++t) {
      feed.before(t);
      matmul(pb, x.block(kt), acc + nt * x.rows, x.rows, 1, 0, accumulate || kt > 0);
      feed.after(t);
    }
  }
}

void dense_forward_finish(ProgramBuilder& pb, uint32_t acc, const VMat* bias, const VMat& y) {
  const uint32_t n = pb.params().N;
  require(bias == nullptr || (bias->cols == y.cols && bias->pitch == 1), "dense_forward",
          "bias must be a row_vector of " + std::to_string(y.cols) + " columns");
  for (uint32_t nt = 0; nt < y.blocks(n); ++nt) {
    pb.acc_to_vmem(acc + nt * y.rows, y.block(nt), y.rows);
    if (bias != nullptr) {
      pb.vop_row(VecFunc::FAdd, y.block(nt), y.block(nt), bias->block(nt), y.rows);
    }
  }
  clear_padding_rows(pb, y);
}

void dense_forward(ProgramBuilder& pb, const VMat& x, const VMat& w, const VMat* bias,
                   const VMat& y, uint32_t acc) {
  require(x.cols == w.rows && y.rows == x.rows && y.cols == w.cols, "dense_forward",
          "X " + shape(x) + " . W " + shape(w) + " -> Y " + shape(y) + " do not match");
  dense_forward_partial(pb, x, w, acc, false);
  dense_forward_finish(pb, acc, bias, y);
}

void dense_backward_input(ProgramBuilder& pb, const VMat& dy, const VMat& w, const VMat& dx,
                          uint32_t acc, uint32_t acc_end, uint32_t tile_group) {
  const char* k = "dense_backward_input";
  const uint32_t n = pb.params().N;
  require(dy.cols == w.cols && dx.rows == dy.rows && dx.cols == w.rows, k,
          "dY " + shape(dy) + " . W^T (W " + shape(w) + ") -> dX " + shape(dx) + " do not match");
  require_acc(pb, k, acc, dy.rows);
  require(acc_end == 0 || (acc_end > acc && acc_end <= pb.params().acc_rows), k,
          "acc_end = " + std::to_string(acc_end) + " (allowed 0 or acc+1..AccRows)");
  // Slots of dY.rows ACC rows in two halves; one slot (the old schedule) if only one fits.
  const uint32_t slots = (acc_end > acc ? acc_end - acc : dy.rows) / dy.rows;
  const uint32_t per_half = slots >= 2 ? slots / 2 : 1;
  const bool contiguous = dx.pitch == dx.rows;  // block kt + 1 right after block kt
  const uint32_t kts = dx.blocks(n);
  std::vector<TileFeed::Tile> tiles;
  for (uint32_t kt = 0; kt < kts; ++kt) {
    for (uint32_t nt = 0; nt < dy.blocks(n); ++nt) {
      tiles.push_back({w.block(nt) + kt * n, tile_rows(w.rows, kt, n)});
    }
  }
  TileFeed feed(pb, tiles, true, tile_group);
  size_t t = 0;
  uint32_t half = 0;
  for (uint32_t k0 = 0; k0 < kts; k0 += per_half, half ^= 1u) {
    const uint32_t run = std::min(per_half, kts - k0);
    const uint32_t base = slots >= 2 ? acc + half * per_half * dy.rows : acc;
    for (uint32_t i = 0; i < run; ++i) {
      for (uint32_t nt = 0; nt < dy.blocks(n); ++nt, ++t) {
        feed.before(t);
        matmul(pb, dy.block(nt), base + i * dy.rows, dy.rows, 1, 0, nt > 0);
        feed.after(t);
      }
      if (!contiguous) pb.acc_to_vmem(base + i * dy.rows, dx.block(k0 + i), dx.rows);
    }
    if (contiguous) pb.acc_to_vmem(base, dx.block(k0), run * dx.rows);
  }
}

void dense_backward_weights(ProgramBuilder& pb, const VMat& x, const VMat& dy, const VMat& dw,
                            uint32_t xt, uint32_t acc) {
  const char* k = "dense_backward_weights";
  const uint32_t n = pb.params().N;
  require(x.rows == dy.rows && dw.rows == x.cols && dw.cols == dy.cols, k,
          "X^T (X " + shape(x) + ") . dY " + shape(dy) + " -> dW " + shape(dw) + " do not match");
  require(x.pitch % n == 0, k, "X's pitch must be a multiple of N (VmemArena::matrix)");
  const uint32_t mt_count = x.pitch / n;
  const uint32_t kt_count = x.blocks(n);
  require_acc(pb, k, acc, kt_count * n);
  // X^T: block (kt, mt) of X (rows mt*N.., lanes kt*N..) -> xt + (kt*MT + mt)*N, rows = k.
  pb.transpose(x.base, xt, kt_count * mt_count);
  for (uint32_t nt = 0; nt < dy.blocks(n); ++nt) {
    for (uint32_t mt = 0; mt < mt_count; ++mt) {
      // Tile: dY rows mt*N.. (the batch is the contraction); padding rows are not loaded.
      load_tile(pb, dy.block(nt) + mt * n, tile_rows(dy.rows, mt, n), false);
      matmul(pb, xt + mt * n, acc, n, kt_count, mt_count * n, mt > 0);
    }
    pb.acc_to_vmem(acc, dw.block(nt), dw.rows);
  }
  clear_padding_rows(pb, dw);
}

void bias_grad(ProgramBuilder& pb, const VMat& dy, const VMat& db) {
  require(db.cols == dy.cols && db.pitch == 1, "bias_grad",
          "db must be a row_vector of " + std::to_string(dy.cols) + " columns");
  detail::row_sum(pb, db.base, dy.base, dy.rows, dy.blocks(pb.params().N), dy.pitch);
}

}  // namespace tpu::train

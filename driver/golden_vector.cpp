// SPDX-License-Identifier: Apache-2.0
// The golden model's training-configuration instructions (docs/isa.md "Training
// configuration"): VMEM DMA, load_weights, matmul_bf16, acc_to_vmem, transpose, vector.
// The float arithmetic is driver/fp.h's, bit by bit.
#include <algorithm>
#include <cinttypes>
#include <stdexcept>

#include "fp.h"
#include "golden_model.h"
#include "text.h"
#include "vector_unit.h"

namespace tpu {

namespace {

using detail::format;

uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

int32_t as_int(uint32_t x) { return static_cast<int32_t>(x); }
uint32_t as_bits(int32_t x) { return static_cast<uint32_t>(x); }
uint32_t mask(bool b) { return b ? fp::kMaskTrue : fp::kMaskFalse; }

}  // namespace

// ---- lane arithmetic (vector_unit.h)

uint32_t vector_lane(VecFunc f, uint32_t a, uint32_t b) {
  const uint32_t sh = b & 31u;
  switch (f) {
    case VecFunc::FAdd:
      return fp::add(a, b);
    case VecFunc::FSub:
      return fp::sub(a, b);
    case VecFunc::FSubR:
      return fp::sub(b, a);
    case VecFunc::FMul:
      return fp::mul(a, b);
    case VecFunc::FMax:
      return fp::max(a, b);
    case VecFunc::FMin:
      return fp::min(a, b);
    case VecFunc::FLt:
      return mask(fp::lt(a, b));
    case VecFunc::FLe:
      return mask(fp::le(a, b));
    case VecFunc::FEq:
      return mask(fp::eq(a, b));
    case VecFunc::IAdd:
      return a + b;
    case VecFunc::ISub:
      return a - b;
    case VecFunc::ISubR:
      return b - a;
    case VecFunc::And:
      return a & b;
    case VecFunc::Or:
      return a | b;
    case VecFunc::Xor:
      return a ^ b;
    case VecFunc::AndN:
      return a & ~b;
    case VecFunc::Shl:
      return a << sh;
    case VecFunc::Shr:
      return a >> sh;
    case VecFunc::Sra:
      return as_bits(as_int(a) >> sh);  // arithmetic (C++20; GCC since ever)
    case VecFunc::ILt:
      return mask(as_int(a) < as_int(b));
    case VecFunc::IEq:
      return mask(a == b);
    case VecFunc::F2I:
      return as_bits(fp::to_int32(a));
    case VecFunc::I2F:
      return fp::from_int32(as_int(a));
    case VecFunc::Bf16:
      return fp::round_bf16(a);
    default:
      break;
  }
  throw std::invalid_argument(
      format("vector_lane: func 0x%02x is not element-wise", static_cast<unsigned>(f)));
}

uint32_t reduce_step(VecFunc f, uint32_t s, uint32_t x) {
  switch (f) {
    case VecFunc::LSum:
    case VecFunc::RSum:
      return fp::add(s, x);
    case VecFunc::LMax:
    case VecFunc::RMax:
      return fp::max(s, x);
    case VecFunc::LMin:
    case VecFunc::RMin:
      return fp::min(s, x);
    default:
      break;
  }
  throw std::invalid_argument(
      format("reduce_step: func 0x%02x is not a reduction", static_cast<unsigned>(f)));
}

uint32_t lane_reduce(VecFunc f, uint32_t* x, unsigned n) {
  for (unsigned h = n / 2; h >= 1; h /= 2) {
    for (unsigned j = 0; j < h; ++j) x[j] = reduce_step(f, x[j], x[j + h]);
  }
  return x[0];
}

// ---- DMA

namespace {

// read_vmem / write_vmem move whole aligned blocks of `block` bytes (the VMEM port's beat,
// docs/isa.md "The VMEM port"): host memory must answer every block that holds bytes of a row
// (an error anywhere in it faults the instruction). Reading the block checks that.
bool block_answers(HostMemory& host, uint64_t addr, uint32_t len, uint32_t block) {
  if (block <= 1) return true;
  const uint64_t lo = addr / block * block;
  const uint64_t hi = (addr + len + block - 1) / block * block;
  std::vector<uint8_t> scratch(hi - lo);
  return host.read(lo, hi - lo, scratch.data());
}

}  // namespace

GoldenModel::Fault GoldenModel::exec(const ReadVmem& in) {
  const uint32_t n = params_.N;
  const uint32_t row_bytes = in.row_bytes(n);
  const uint32_t block = params_.vmem_dma_bytes_per_cycle();
  std::vector<uint8_t> data(size_t{in.rows} * row_bytes);
  for (uint32_t i = 0; i < in.rows; ++i) {
    const uint64_t addr = uint64_t{in.host_addr} + uint64_t{i} * in.step(n);
    if (!host_.read(addr, row_bytes, &data[size_t{i} * row_bytes]) ||
        !block_answers(host_, addr, row_bytes, block)) {
      return {ErrorCode::ERR_AXI_READ,
              format("read_vmem: host memory rejected the read of row %u at 0x%08" PRIx64
                     " (nothing written)",
                     i, addr)};
    }
  }
  for (uint32_t i = 0; i < in.rows; ++i) {
    uint32_t* dst = vmem_row_ptr(uint64_t{in.vmem_addr} + i);
    const uint8_t* src = &data[size_t{i} * row_bytes];
    for (uint32_t j = 0; j < n; ++j) {
      dst[j] = in.bf16 ? fp::from_bf16(static_cast<uint16_t>(src[2 * j] | src[2 * j + 1] << 8))
                       : le32(src + 4 * j);
    }
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const WriteVmem& in) {
  const uint32_t n = params_.N;
  const uint32_t row_bytes = in.row_bytes(n);
  const uint32_t block = params_.vmem_dma_bytes_per_cycle();
  std::vector<uint8_t> row(row_bytes);
  for (uint32_t i = 0; i < in.rows; ++i) {
    const uint32_t* src = vmem_row_ptr(uint64_t{in.vmem_addr} + i);
    for (uint32_t j = 0; j < n; ++j) {
      if (in.bf16) {
        const uint16_t h = fp::to_bf16(src[j]);
        row[2 * j] = static_cast<uint8_t>(h);
        row[2 * j + 1] = static_cast<uint8_t>(h >> 8);
      } else {
        for (uint32_t b = 0; b < 4; ++b) row[4 * j + b] = static_cast<uint8_t>(src[j] >> (8 * b));
      }
    }
    const uint64_t addr = uint64_t{in.host_addr} + uint64_t{i} * in.step(n);
    if (!block_answers(host_, addr, row_bytes, block) ||
        !host_.write(addr, row_bytes, row.data())) {
      return {
          ErrorCode::ERR_AXI_WRITE,
          format("write_vmem: host memory rejected the write of row %u at 0x%08" PRIx64, i, addr)};
    }
  }
  return {};
}

// ---- weights from VMEM, bf16 matrix unit, ACC -> VMEM, transpose

GoldenModel::Fault GoldenModel::exec(const LoadWeights& in) {
  if (pending_tiles_.size() + in.tiles > weight_capacity()) {
    return {ErrorCode::ERR_WEIGHT_OVERFLOW,
            format("load_weights: %u tiles with %zu already waiting exceed the %" PRIu32
                   " that can wait (WFifoTiles + 2); consume some with matmul switch first",
                   in.tiles, pending_tiles_.size(), weight_capacity())};
  }
  const uint32_t n = params_.N;
  for (uint32_t t = 0; t < in.tiles; ++t) {
    WeightTile tile;
    tile.bf16 = true;
    tile.bf16w.assign(size_t{n} * n, 0);
    for (uint32_t k = 0; k < in.rows; ++k) {
      const uint32_t* row = vmem_row_ptr(uint64_t{in.vmem_addr} + uint64_t{t} * in.tile_stride +
                                         uint64_t{k} * in.row_stride);
      for (uint32_t j = 0; j < n; ++j) {
        // block B[k][j]; the tile is W[k][j] = B[k][j], or W[j][k] = B[k][j] transposed
        const size_t at = in.transpose ? size_t{j} * n + k : size_t{k} * n + j;
        tile.bf16w[at] = fp::to_bf16(row[j]);
      }
    }
    pending_tiles_.push_back(std::move(tile));
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const MatmulBf16& in) {
  Fault f = check_weight_tile("matmul_bf16", in.switch_weights, true);
  if (f.code != ErrorCode::ERR_NONE) return f;
  take_weight_tile(in.switch_weights);
  const uint32_t n = params_.N;
  const uint16_t* w = active_tile_.bf16w.data();
  std::vector<uint16_t> a(n);
  for (uint32_t o = 0; o < in.outer; ++o) {
    for (uint32_t i = 0; i < in.inner; ++i) {
      const uint32_t* v = vmem_row_ptr(uint64_t{in.vmem_addr} + uint64_t{o} * in.outer_stride +
                                       uint64_t{i} * in.inner_stride);
      for (uint32_t k = 0; k < n; ++k) a[k] = fp::to_bf16(v[k]);
      int32_t* acc = &acc_[(size_t{in.acc_addr} + size_t{o} * in.inner + i) * n];
      for (uint32_t c = 0; c < n; ++c) {
        const uint32_t s = fp::bf16_dot(a.data(), w + c, n, n);
        const uint32_t old = static_cast<uint32_t>(acc[c]);
        acc[c] = static_cast<int32_t>(in.accumulate ? fp::add(old, s) : s);
      }
    }
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const AccToVmem& in) {
  const uint32_t n = params_.N;
  for (uint32_t i = 0; i < in.rows; ++i) {
    const int32_t* src = &acc_[(size_t{in.acc_addr} + i) * n];
    uint32_t* dst = vmem_row_ptr(uint64_t{in.vmem_addr} + i);
    for (uint32_t c = 0; c < n; ++c) dst[c] = static_cast<uint32_t>(src[c]);
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const Transpose& in) {
  const uint32_t n = params_.N;
  std::vector<uint32_t> block(size_t{n} * n);
  for (uint32_t b = 0; b < in.blocks; ++b) {
    for (uint32_t i = 0; i < n; ++i) {  // read the whole block first
      const uint32_t* row = vmem_row_ptr(uint64_t{in.src} + uint64_t{b} * in.src_stride +
                                         uint64_t{i} * in.src_row_stride);
      std::copy(row, row + n, &block[size_t{i} * n]);
    }
    for (uint32_t j = 0; j < n; ++j) {
      uint32_t* row = vmem_row_ptr(uint64_t{in.dst} + uint64_t{b} * in.dst_stride + j);
      for (uint32_t i = 0; i < n; ++i) row[i] = block[size_t{i} * n + j];
    }
  }
  return {};
}

// ---- vector unit

GoldenModel::Fault GoldenModel::exec(const Vector& in) {
  if (is_row_reduction(in.func)) {
    vector_row_reduction(in);
  } else {
    vector_elementwise(in);
  }
  return {};
}

void GoldenModel::vector_elementwise(const Vector& in) {
  const uint32_t n = params_.N;
  const VecFunc f = in.vec_func();
  std::vector<uint32_t> a(2 * size_t{n}), b(n), out(n);
  for (uint32_t o = 0; o < in.outer; ++o) {
    for (uint32_t i = 0; i < in.inner; ++i) {
      // Element rows run one at a time: read the operands, then write the result.
      const uint64_t a_row = in.a_row(o, i);
      std::copy(vmem_row_ptr(a_row), vmem_row_ptr(a_row) + n, a.begin());
      if (f == VecFunc::Align) {
        const uint32_t s = in.align_shift();
        if (s > 0) std::copy(vmem_row_ptr(a_row + 1), vmem_row_ptr(a_row + 1) + n, a.begin() + n);
        std::copy(a.begin() + s, a.begin() + s + n, out.begin());
      } else if (is_lane_reduction(in.func)) {
        std::fill(out.begin(), out.end(), lane_reduce(f, a.data(), n));
      } else {
        if (in.bmode == BMode::Imm) {
          std::fill(b.begin(), b.end(), in.b);
        } else if (!is_unary_vec_func(in.func)) {
          const uint32_t* row = vmem_row_ptr(in.b_row(o, i));
          std::copy(row, row + n, b.begin());
        }
        for (uint32_t j = 0; j < n; ++j) out[j] = vector_lane(f, a[j], b[j]);
      }
      std::copy(out.begin(), out.end(), vmem_row_ptr(in.dst_row(o, i)));
    }
  }
}

void GoldenModel::vector_row_reduction(const Vector& in) {
  const uint32_t n = params_.N;
  const VecFunc f = in.vec_func();
  std::vector<uint32_t> s(n);
  for (uint32_t o = 0; o < in.outer; ++o) {
    if (in.bmode == BMode::Imm) {
      std::fill(s.begin(), s.end(), in.b);
    } else {
      const uint32_t* row = vmem_row_ptr(in.b_row(o, 0));
      std::copy(row, row + n, s.begin());
    }
    for (uint32_t i = 0; i < in.inner; ++i) {
      const uint32_t* row = vmem_row_ptr(in.a_row(o, i));
      for (uint32_t j = 0; j < n; ++j) s[j] = reduce_step(f, s[j], row[j]);
    }
    std::copy(s.begin(), s.end(), vmem_row_ptr(in.dst_row(o, 0)));
  }
}

// ---- VMEM state access

size_t GoldenModel::vmem_index(uint32_t row, uint32_t lane) const {
  if (row >= params_.vmem_rows || lane >= params_.N) {
    throw std::out_of_range(format("VMEM[%u][%u] out of range (VmemRows = %u, N = %u)", row, lane,
                                   params_.vmem_rows, params_.N));
  }
  return size_t{row} * params_.N + lane;
}

uint32_t GoldenModel::vmem(uint32_t row, uint32_t lane) const {
  return vmem_[vmem_index(row, lane)];
}

void GoldenModel::set_vmem(uint32_t row, uint32_t lane, uint32_t value) {
  vmem_[vmem_index(row, lane)] = value;
}

std::vector<uint32_t> GoldenModel::vmem_rows(uint32_t first_row, uint32_t rows) const {
  if (rows == 0) return {};
  vmem_index(first_row + rows - 1, 0);
  auto begin = vmem_.begin() + static_cast<std::ptrdiff_t>(vmem_index(first_row, 0));
  return std::vector<uint32_t>(begin,
                               begin + static_cast<std::ptrdiff_t>(size_t{rows} * params_.N));
}

void GoldenModel::set_vmem_rows(uint32_t first_row, const std::vector<uint32_t>& lanes) {
  if (lanes.size() % params_.N != 0) {
    throw std::invalid_argument(format(
        "set_vmem_rows: %zu lanes is not a whole number of %u-lane rows", lanes.size(), params_.N));
  }
  if (lanes.empty()) return;
  vmem_index(first_row + static_cast<uint32_t>(lanes.size() / params_.N) - 1, 0);
  std::copy(lanes.begin(), lanes.end(),
            vmem_.begin() + static_cast<std::ptrdiff_t>(vmem_index(first_row, 0)));
}

}  // namespace tpu

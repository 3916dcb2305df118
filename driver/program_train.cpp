// SPDX-License-Identifier: Apache-2.0
// ProgramBuilder: the training configuration's instructions (docs/isa.md "Training
// configuration") and the function sequences (fp_sequences.h).
#include <algorithm>
#include <cinttypes>

#include "program.h"
#include "text.h"

namespace tpu {

namespace {

using detail::format;

constexpr uint32_t kMaxVecInner = 255;     // 8-bit inner count
constexpr uint32_t kMaxMatmulRows = 4095;  // 12-bit inner count

}  // namespace

void ProgramBuilder::check_vmem(const char* m) const {
  check_not_halted(m);
  if (!params_.has_vmem()) {
    fail(m, "",
         "needs the training configuration (VMEM), but this chip has VmemRows = 0 (the "
         "chip would fault with ERR_OPCODE)");
  }
}

void ProgramBuilder::check_fits(const char* m, const char* argument, uint64_t value,
                                BitField f) const {
  if (value > f.max()) {
    fail(m, argument,
         format("%s = %" PRIu64 " does not fit its %u-bit field (allowed 0..%" PRIu64 ")", argument,
                value, f.width, f.max()));
  }
}

void ProgramBuilder::check_tile_room(const char* m, uint32_t tiles) const {
  if (uint64_t{pending_weight_tiles()} + tiles > weight_capacity()) {
    fail(m, "tiles",
         format("tiles = %u with %u already waiting exceeds the %u tiles that may wait "
                "(WFifoTiles + 2): the chip would fault with ERR_WEIGHT_OVERFLOW; consume some "
                "with matmul switch first (allowed 1..%u here)",
                tiles, pending_weight_tiles(), weight_capacity(),
                weight_capacity() - pending_weight_tiles()));
  }
}

void ProgramBuilder::check_weight_tile(const char* m, bool switch_weights, bool want_bf16) const {
  if (switch_weights && pending_bf16_.empty()) {
    fail(m, "switch",
         "switch needs a weight tile, but every tile pushed by read_weights / load_weights has "
         "already been made active (the chip would fault with ERR_NO_WEIGHTS); push one first");
  }
  if (!switch_weights && !has_active_) {
    fail(m, "switch",
         "no weight tile is active yet (the chip would fault with ERR_NO_WEIGHTS); the first "
         "matmul after read_weights / load_weights needs switch (kSwitchWeights)");
  }
  const bool tile_bf16 = switch_weights ? pending_bf16_.front() : active_bf16_;
  if (tile_bf16 != want_bf16) {
    fail(m, "switch",
         format("the weight tile it would use is %s, but %s needs %s (the chip would fault "
                "with ERR_WEIGHT_TYPE)",
                tile_bf16 ? "a bf16 tile (load_weights)" : "an int8 tile (read_weights)", m,
                want_bf16 ? "a bf16 tile" : "an int8 tile"));
  }
}

void ProgramBuilder::take_weight_tile(bool switch_weights) {
  if (!switch_weights) return;
  active_bf16_ = pending_bf16_.front();
  pending_bf16_.pop_front();
  has_active_ = true;
}

// ---- DMA

void ProgramBuilder::check_vmem_dma(const char* m, const VmemDma& in) const {
  check_vmem(m);
  check_fits(m, "rows", in.rows, field::kVdmaRows);
  if (in.rows == 0) fail(m, "rows", "rows = 0 (allowed 1..VmemRows)");
  if (in.host_stride % 16 != 0) {
    fail(m, "host_stride", format("host_stride = %u is not a multiple of 16", in.host_stride));
  }
  check_host(m, "host_addr", in.host_addr, in.host_span(params_.N));
}

ProgramBuilder& ProgramBuilder::read_vmem(uint32_t vmem_row, uint32_t rows, uint32_t host_addr,
                                          bool bf16) {
  check_vmem("read_vmem");
  check_fits("read_vmem", "vmem_row", vmem_row, field::kVdmaVmemAddr);
  ReadVmem in;
  in.bf16 = bf16;
  in.vmem_addr = static_cast<uint16_t>(vmem_row);
  in.rows = rows;
  in.host_addr = host_addr;
  return read_vmem(in);
}

ProgramBuilder& ProgramBuilder::read_vmem(const ReadVmem& in) {
  const char* m = "read_vmem";
  check_vmem_dma(m, in);
  push(in, m);
  return *this;
}

ProgramBuilder& ProgramBuilder::write_vmem(uint32_t vmem_row, uint32_t rows, uint32_t host_addr,
                                           bool bf16) {
  check_vmem("write_vmem");
  check_fits("write_vmem", "vmem_row", vmem_row, field::kVdmaVmemAddr);
  WriteVmem in;
  in.bf16 = bf16;
  in.vmem_addr = static_cast<uint16_t>(vmem_row);
  in.rows = rows;
  in.host_addr = host_addr;
  return write_vmem(in);
}

ProgramBuilder& ProgramBuilder::write_vmem(const WriteVmem& in) {
  const char* m = "write_vmem";
  check_vmem_dma(m, in);
  push(in, m);
  return *this;
}

// ---- weights, matrix unit, ACC -> VMEM, transpose

ProgramBuilder& ProgramBuilder::load_weights(uint32_t vmem_row, uint32_t tiles, bool transpose) {
  const char* m = "load_weights";
  check_vmem(m);
  check_fits(m, "vmem_row", vmem_row, field::kLwVmemAddr);
  check_fits(m, "tiles", tiles, field::kLwTiles);
  LoadWeights in;
  in.transpose = transpose;
  in.vmem_addr = static_cast<uint16_t>(vmem_row);
  in.row_stride = 1;
  in.tiles = static_cast<uint16_t>(tiles);
  in.tile_stride = static_cast<uint16_t>(params_.N);
  in.rows = static_cast<uint16_t>(params_.N);
  return load_weights(in);
}

ProgramBuilder& ProgramBuilder::load_weights(const LoadWeights& in) {
  const char* m = "load_weights";
  check_vmem(m);
  if (in.tiles == 0) fail(m, "tiles", "tiles = 0 (allowed >= 1)");
  if (in.rows == 0 || in.rows > params_.N) {
    fail(m, "rows", format("rows = %u (allowed 1..N = %u)", in.rows, params_.N));
  }
  check_tile_room(m, in.tiles);
  push(in, m);
  for (uint32_t t = 0; t < in.tiles; ++t) pending_bf16_.push_back(true);
  return *this;
}

ProgramBuilder& ProgramBuilder::matmul_bf16(uint32_t vmem_row, uint32_t acc_addr, uint32_t rows,
                                            unsigned flags) {
  const char* m = "matmul_bf16";
  check_vmem(m);
  if (flags & ~unsigned{kAccumulate | kSwitchWeights}) {
    fail(m, "flags",
         format("flags = 0x%x: matmul_bf16 takes only kAccumulate, kSwitchWeights", flags));
  }
  check_fits(m, "vmem_row", vmem_row, field::kMmbVmemAddr);
  check_fits(m, "acc_addr", acc_addr, field::kMmbAccAddr);
  if (rows == 0 || rows > kMaxMatmulRows) {
    fail(m, "rows", format("rows = %u (allowed 1..4095, a 12-bit count; split larger ones)", rows));
  }
  MatmulBf16 in;
  in.accumulate = flags & kAccumulate;
  in.switch_weights = flags & kSwitchWeights;
  in.vmem_addr = static_cast<uint16_t>(vmem_row);
  in.acc_addr = static_cast<uint16_t>(acc_addr);
  in.inner = static_cast<uint16_t>(rows);
  return matmul_bf16(in);
}

ProgramBuilder& ProgramBuilder::matmul_bf16(const MatmulBf16& in) {
  const char* m = "matmul_bf16";
  check_vmem(m);
  check_fits(m, "inner", in.inner, field::kMmbInner);
  check_fits(m, "outer", in.outer, field::kMmbOuter);
  if (in.inner == 0 || in.outer == 0) fail(m, "inner", "inner and outer must be >= 1");
  std::string why;
  if (check(in, params_, &why) != ErrorCode::ERR_NONE) fail(m, "", why);
  check_weight_tile(m, in.switch_weights, true);
  push(in, m);
  take_weight_tile(in.switch_weights);
  return *this;
}

ProgramBuilder& ProgramBuilder::acc_to_vmem(uint32_t acc_addr, uint32_t vmem_row, uint32_t rows) {
  check_vmem("acc_to_vmem");
  check_fits("acc_to_vmem", "acc_addr", acc_addr, field::kAtvAccAddr);
  check_fits("acc_to_vmem", "vmem_row", vmem_row, field::kAtvVmemAddr);
  return acc_to_vmem(
      AccToVmem{static_cast<uint16_t>(acc_addr), static_cast<uint16_t>(vmem_row), rows});
}

ProgramBuilder& ProgramBuilder::acc_to_vmem(const AccToVmem& in) {
  const char* m = "acc_to_vmem";
  check_vmem(m);
  check_fits(m, "rows", in.rows, field::kAtvRows);
  push(in, m);
  return *this;
}

ProgramBuilder& ProgramBuilder::transpose(uint32_t src, uint32_t dst, uint32_t blocks) {
  const char* m = "transpose";
  check_vmem(m);
  check_fits(m, "src", src, field::kTrSrc);
  check_fits(m, "dst", dst, field::kTrDst);
  check_fits(m, "blocks", blocks, field::kTrBlocks);
  const auto n = static_cast<uint16_t>(params_.N);
  return transpose(Transpose{static_cast<uint16_t>(src), static_cast<uint16_t>(dst),
                             static_cast<uint16_t>(blocks), n, n, 1});
}

ProgramBuilder& ProgramBuilder::transpose(const Transpose& in) {
  check_vmem("transpose");
  push(in, "transpose");
  return *this;
}

// ---- vector unit

ProgramBuilder& ProgramBuilder::vector(const Vector& in) {
  const std::string_view name = vec_func_name(in.func);
  const std::string m = name.empty() ? std::string("vector") : std::string(name);
  check_vmem(m.c_str());
  check_fits(m.c_str(), "func", in.func, field::kVecFunc);
  check_fits(m.c_str(), "a_inner_stride", in.a_inner_stride, field::kVecAInnerStride);
  check_fits(m.c_str(), "a_outer_stride", in.a_outer_stride, field::kVecAOuterStride);
  check_fits(m.c_str(), "dst_inner_stride", in.dst_inner_stride, field::kVecDstInnerStride);
  check_fits(m.c_str(), "dst_outer_stride", in.dst_outer_stride, field::kVecDstOuterStride);
  check_fits(m.c_str(), "outer", in.outer, field::kVecOuter);
  push(in, m.c_str());
  return *this;
}

void ProgramBuilder::vop_tensor(VecFunc f, uint32_t dst, uint32_t a, BMode bmode, uint32_t b,
                                uint32_t rows) {
  const std::string m(vec_func_name(static_cast<uint8_t>(f)));
  check_vmem(m.c_str());
  if (rows == 0) fail(m.c_str(), "rows", "rows = 0 (allowed >= 1)");
  uint32_t done = 0;
  while (done < rows) {
    const uint32_t left = rows - done;
    const uint32_t inner = std::min(left, kMaxVecInner);
    const uint32_t outer =
        std::min<uint32_t>(left / inner, static_cast<uint32_t>(field::kVecOuter.max()));
    Vector v;
    v.func = static_cast<uint8_t>(f);
    v.bmode = bmode;
    v.inner = static_cast<uint8_t>(inner);
    v.outer = static_cast<uint16_t>(outer);
    v.a_inner_stride = 1;
    v.a_outer_stride = static_cast<uint16_t>(inner);
    v.dst_inner_stride = 1;
    v.dst_outer_stride = static_cast<uint16_t>(inner);
    check_fits(m.c_str(), "dst", uint64_t{dst} + done, field::kVecDst);
    check_fits(m.c_str(), "a", uint64_t{a} + done, field::kVecA);
    v.dst = static_cast<uint16_t>(dst + done);
    v.a = static_cast<uint16_t>(a + done);
    v.b = bmode == BMode::RowA ? b + done : b;
    if (is_unary_vec_func(v.func)) {
      v.bmode = BMode::RowA;
      v.b = 0;
    }
    vector(v);
    done += inner * outer;
  }
}

ProgramBuilder& ProgramBuilder::vop(VecFunc f, uint32_t dst, uint32_t a, uint32_t b,
                                    uint32_t rows) {
  vop_tensor(f, dst, a, BMode::RowA, b, rows);
  return *this;
}

ProgramBuilder& ProgramBuilder::vop_imm(VecFunc f, uint32_t dst, uint32_t a, uint32_t imm,
                                        uint32_t rows) {
  vop_tensor(f, dst, a, BMode::Imm, imm, rows);
  return *this;
}

ProgramBuilder& ProgramBuilder::vop_row(VecFunc f, uint32_t dst, uint32_t a, uint32_t b_row,
                                        uint32_t rows) {
  vop_tensor(f, dst, a, BMode::Fixed, b_row, rows);
  return *this;
}

ProgramBuilder& ProgramBuilder::vop_unary(VecFunc f, uint32_t dst, uint32_t a, uint32_t rows) {
  if (!is_unary_vec_func(static_cast<uint8_t>(f))) {
    fail("vector", "func",
         format("%s is not a unary function", std::string(vec_func_name(uint8_t(f))).c_str()));
  }
  vop_tensor(f, dst, a, BMode::RowA, 0, rows);
  return *this;
}

ProgramBuilder& ProgramBuilder::vselect(uint32_t dst, uint32_t mask, uint32_t x, uint32_t y,
                                        uint32_t rows, uint32_t scratch) {
  vop(VecFunc::And, scratch, x, mask, rows);
  vop(VecFunc::AndN, dst, y, mask, rows);
  vop(VecFunc::Or, dst, dst, scratch, rows);
  return *this;
}

ProgramBuilder& ProgramBuilder::vfunction(FpFunction f, uint32_t dst, uint32_t src, uint32_t rows,
                                          uint32_t scratch) {
  const FpSequence& seq = fp_sequence(f);
  const std::string m = "v" + std::string(seq.name);
  check_vmem(m.c_str());
  auto overlap = [&](uint64_t a, uint64_t an, uint64_t b, uint64_t bn) {
    return a < b + bn && b < a + an;
  };
  const uint64_t scratch_rows = uint64_t{seq.scratch} * rows;
  if ((dst != src && overlap(dst, rows, src, rows)) || overlap(scratch, scratch_rows, src, rows) ||
      overlap(scratch, scratch_rows, dst, rows)) {
    fail(m.c_str(), "scratch",
         format("dst %u, src %u (%u rows) and scratch %u (%" PRIu64
                " rows) overlap (allowed: dst == src, nothing else)",
                dst, src, rows, scratch, scratch_rows));
  }
  auto base = [&](SeqTensor t) -> uint32_t {
    switch (t) {
      case SeqTensor::X:
        return src;
      case SeqTensor::Y:
        return dst;
      default:
        return scratch + (static_cast<uint32_t>(t) - static_cast<uint32_t>(SeqTensor::S0)) * rows;
    }
  };
  for (const SeqStep& st : seq.steps) {
    if (is_unary_vec_func(static_cast<uint8_t>(st.func))) {
      vop_unary(st.func, base(st.dst), base(st.a), rows);
    } else if (st.b_is_imm) {
      vop_imm(st.func, base(st.dst), base(st.a), st.imm, rows);
    } else {
      vop(st.func, base(st.dst), base(st.a), base(st.b), rows);
    }
  }
  return *this;
}

}  // namespace tpu

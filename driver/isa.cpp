// SPDX-License-Identifier: Apache-2.0
#include "isa.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <tuple>

#include "text.h"

namespace tpu {

namespace {

using detail::format;

struct ErrorInfo {
  std::string_view name;
  std::string_view description;
};

constexpr ErrorInfo kErrorInfo[kNumErrorCodes] = {
    {"ERR_NONE", "no error"},
    {"ERR_OPCODE", "unknown opcode"},
    {"ERR_RESERVED", "a reserved field is not zero"},
    {"ERR_FIELD", "a count is zero, bad dest, bad pooling shape"},
    {"ERR_UB_RANGE", "UB row out of range"},
    {"ERR_ACC_RANGE", "ACC row out of range"},
    {"ERR_PARAM_RANGE", "PARAM/LUT row or quantization slot out of range"},
    {"ERR_ALIGN", "host address not 16-byte aligned"},
    {"ERR_HOST_RANGE", "host byte range wraps past 2^32, or lies outside every enabled DMA window"},
    {"ERR_AXI_READ", "host memory answered a read with SLVERR/DECERR"},
    {"ERR_AXI_WRITE", "host memory answered a write with SLVERR/DECERR"},
    {"ERR_CMD_OVERRUN", "the command buffer ended (CMD_COUNT instructions) without halt"},
    {"ERR_NO_WEIGHTS", "a matmul needs a weight tile that can never arrive"},
    {"ERR_WEIGHT_OVERFLOW",
     "read_weights cannot make progress: FIFO and both buffers full and nothing will drain them"},
    {"ERR_VMEM_RANGE", "VMEM row out of range"},
    {"ERR_WEIGHT_TYPE", "a matmul would use a bf16 tile, or a matmul_bf16 an int8 tile"},
    {"ERR_ICI_LINK", "a link instruction names a link >= IciLinks or one that is not connected"},
    {"ERR_ICI_SIZE", "a message's row count differs from the rows of the receive that takes it"},
    {"ERR_ICI_DEADLOCK",
     "a link instruction whose partner can never come (pod deadlock, detected and reported)"},
};

constexpr std::string_view kMnemonics[kNumOpcodes] = {
    "nop",         "read_host", "read_weights", "matmul",     "activate",     "write_host",
    "sync",        "halt",      "read_vmem",    "write_vmem", "load_weights", "matmul_bf16",
    "acc_to_vmem", "transpose", "vector",       "ici_send",   "ici_recv",     "dwconv"};

struct VecFuncInfo {
  VecFunc func;
  std::string_view name;
};
constexpr VecFuncInfo kVecFuncs[] = {
    {VecFunc::FAdd, "fadd"},   {VecFunc::FSub, "fsub"}, {VecFunc::FSubR, "fsubr"},
    {VecFunc::FMul, "fmul"},   {VecFunc::FMax, "fmax"}, {VecFunc::FMin, "fmin"},
    {VecFunc::FLt, "flt"},     {VecFunc::FLe, "fle"},   {VecFunc::FEq, "feq"},
    {VecFunc::IAdd, "iadd"},   {VecFunc::ISub, "isub"}, {VecFunc::ISubR, "isubr"},
    {VecFunc::And, "and"},     {VecFunc::Or, "or"},     {VecFunc::Xor, "xor"},
    {VecFunc::AndN, "andn"},   {VecFunc::Shl, "shl"},   {VecFunc::Shr, "shr"},
    {VecFunc::Sra, "sra"},     {VecFunc::ILt, "ilt"},   {VecFunc::IEq, "ieq"},
    {VecFunc::F2I, "f2i"},     {VecFunc::I2F, "i2f"},   {VecFunc::Bf16, "bf16"},
    {VecFunc::LSum, "lsum"},   {VecFunc::LMax, "lmax"}, {VecFunc::LMin, "lmin"},
    {VecFunc::RSum, "rsum"},   {VecFunc::RMax, "rmax"}, {VecFunc::RMin, "rmin"},
    {VecFunc::Align, "align"},
};

// Puts `value` into `f` of `word`, or throws naming the field (`what` = "matmul.inner").
void put(InstrBytes& word, BitField f, uint64_t value, const char* what) {
  if (value > f.max()) {
    throw std::invalid_argument(format("%s = %" PRIu64 " does not fit in %u bits (max %" PRIu64 ")",
                                       what, value, f.width, f.max()));
  }
  set_field(word, f, value);
}

bool bit_is_set(const InstrBytes& word, unsigned bit) { return (word[bit / 8] >> (bit % 8)) & 1; }

// Is bit `bit` (>= 8) covered by a field of `op`?
bool is_defined_bit(Opcode op, unsigned bit) {
  for (const FieldInfo& f : instruction_fields(op)) {
    if (bit >= f.bits.lo && bit <= f.bits.hi()) return true;
  }
  return false;
}

// If a reserved bit of `op` is set, describes the first reserved range that holds one.
bool find_reserved_violation(Opcode op, const InstrBytes& word, std::string* why) {
  unsigned bit = 8;
  while (bit < 128) {
    if (is_defined_bit(op, bit)) {
      ++bit;
      continue;
    }
    unsigned lo = bit;
    while (bit < 128 && !is_defined_bit(op, bit)) ++bit;
    unsigned hi = bit - 1;
    for (unsigned b = lo; b <= hi; ++b) {
      if (bit_is_set(word, b)) {
        *why = format("%s: reserved bits %u:%u must be zero, but bit %u is set",
                      std::string(mnemonic(op)).c_str(), hi, lo, b);
        return true;
      }
    }
  }
  return false;
}

std::string hex32(uint64_t v) { return format("0x%" PRIx64, v); }

// Mnemonic padded to the operand column of isa.md's examples.
std::string head(Opcode op) {
  std::string s(mnemonic(op));
  s.resize(std::max<size_t>(s.size(), 12), ' ');
  return s + ' ';
}

std::string_view host_dest_name(HostDest d) {
  switch (d) {
    case HostDest::Ub:
      return "ub";
    case HostDest::Param:
      return "param";
    case HostDest::Lut:
      return "lut";
  }
  return "";
}

// ---- static checks, one function per instruction; each checks codes in ascending order so
// the lowest applicable code wins.

struct Fault {
  ErrorCode code = ErrorCode::ERR_NONE;
  std::string why;
};

Fault fault(ErrorCode c, std::string why) { return Fault{c, std::move(why)}; }

// ERR_ALIGN / ERR_HOST_RANGE for a host transfer of `bytes` bytes at `addr`.
// `align`: the alignment host_addr needs (16, or read_weights' on a chip with a weight port).
Fault check_host_range(const char* op, uint32_t addr, uint64_t bytes, const DmaWindows& windows,
                       uint32_t align = 16) {
  if (addr % 16 != 0) {
    return fault(ErrorCode::ERR_ALIGN, format("%s: host_addr 0x%08" PRIx32
                                              " is not 16-byte aligned (expected low 4 bits 0)",
                                              op, addr));
  }
  if (addr % align != 0) {
    return fault(ErrorCode::ERR_ALIGN,
                 format("%s: host_addr 0x%08" PRIx32
                        " is not a multiple of the weight port's %u-byte beat (isa.md \"The "
                        "weight port\")",
                        op, addr, align));
  }
  uint64_t end = uint64_t{addr} + bytes;  // one past the last byte
  if (end > (uint64_t{1} << 32)) {
    return fault(ErrorCode::ERR_HOST_RANGE,
                 format("%s: host bytes 0x%08" PRIx32 " + %" PRIu64
                        " wrap past 2^32 (last byte must be <= 0xffffffff)",
                        op, addr, bytes));
  }
  if (!in_dma_windows(windows, addr, bytes)) {
    return fault(ErrorCode::ERR_HOST_RANGE,
                 format("%s: host bytes 0x%08" PRIx32 "..0x%08" PRIx64
                        " are not inside any enabled DMA window (expected a registered buffer)",
                        op, addr, end - 1));
  }
  return {};
}

// Rows first..first+count-1 of a memory with `limit` rows (count >= 1).
Fault check_rows(const char* op, const char* what, ErrorCode code, uint64_t first, uint64_t count,
                 uint64_t limit, const char* limit_name) {
  uint64_t last = first + count - 1;
  if (last >= limit) {
    return fault(code, format("%s: %s rows %" PRIu64 "..%" PRIu64 " out of range (%s = %" PRIu64
                              ", last row must be < %" PRIu64 ")",
                              op, what, first, last, limit_name, limit, limit));
  }
  return {};
}

Fault check_one(const ReadHost& in, const ChipParams& p, const DmaWindows& win) {
  if (in.dest != HostDest::Ub && in.dest != HostDest::Param && in.dest != HostDest::Lut) {
    return fault(ErrorCode::ERR_FIELD,
                 format("read_host: dest = %u is not a destination (expected 0 = ub, 1 = param, "
                        "2 = lut)",
                        static_cast<unsigned>(in.dest)));
  }
  if (in.rows == 0) return fault(ErrorCode::ERR_FIELD, "read_host: rows = 0 (expected >= 1)");
  Fault f;
  switch (in.dest) {
    case HostDest::Ub:
      f = check_rows("read_host", "UB", ErrorCode::ERR_UB_RANGE, in.local_addr, in.rows, p.ub_rows,
                     "UbRows");
      break;
    case HostDest::Param:
      f = check_rows("read_host", "PARAM", ErrorCode::ERR_PARAM_RANGE, in.local_addr, in.rows,
                     p.param_rows(), "QpSlots*12");
      break;
    case HostDest::Lut:
      f = check_rows("read_host", "LUT", ErrorCode::ERR_PARAM_RANGE, in.local_addr, in.rows,
                     p.lut_rows(), "256/N");
      break;
  }
  if (f.code != ErrorCode::ERR_NONE) return f;
  return check_host_range("read_host", in.host_addr, uint64_t{in.rows} * p.N, win);
}

Fault check_one(const WriteHost& in, const ChipParams& p, const DmaWindows& win) {
  if (in.rows == 0) return fault(ErrorCode::ERR_FIELD, "write_host: rows = 0 (expected >= 1)");
  Fault f = check_rows("write_host", "UB", ErrorCode::ERR_UB_RANGE, in.ub_addr, in.rows, p.ub_rows,
                       "UbRows");
  if (f.code != ErrorCode::ERR_NONE) return f;
  return check_host_range("write_host", in.host_addr, uint64_t{in.rows} * p.N, win);
}

Fault check_one(const ReadWeights& in, const ChipParams& p, const DmaWindows& win) {
  if (in.tiles == 0) return fault(ErrorCode::ERR_FIELD, "read_weights: tiles = 0 (expected >= 1)");
  return check_host_range("read_weights", in.host_addr, uint64_t{in.tiles} * p.tile_bytes(), win,
                          p.weight_align());
}

Fault check_one(const Matmul& in, const ChipParams& p, const DmaWindows&) {
  if (in.inner == 0 || in.outer == 0) {
    return fault(ErrorCode::ERR_FIELD,
                 format("matmul: inner = %u, outer = %u (both must be >= 1)", in.inner, in.outer));
  }
  uint64_t last_ub = uint64_t{in.ub_addr} + uint64_t{in.outer - 1u} * in.outer_stride +
                     uint64_t{in.inner - 1u} * in.inner_stride;
  if (last_ub >= p.ub_rows) {
    return fault(ErrorCode::ERR_UB_RANGE,
                 format("matmul: last UB row read ub + (outer-1)*outer_stride + "
                        "(inner-1)*inner_stride = %" PRIu64 " (UbRows = %u, must be < %u)",
                        last_ub, p.ub_rows, p.ub_rows));
  }
  return check_rows("matmul", "ACC", ErrorCode::ERR_ACC_RANGE, in.acc_addr,
                    uint64_t{in.inner} * in.outer, p.acc_rows, "AccRows");
}

Fault check_one(const Activate& in, const ChipParams& p, const DmaWindows&) {
  if (in.width == 0 || in.height == 0 || in.pool_k == 0 || in.pool_s == 0) {
    return fault(ErrorCode::ERR_FIELD,
                 format("activate: width = %u, height = %u, pool_k = %u, pool_s = %u (all must "
                        "be >= 1)",
                        in.width, in.height, in.pool_k, in.pool_s));
  }
  if (std::max({in.pad_top, in.pad_left, in.pad_bottom, in.pad_right}) >= in.pool_k) {
    return fault(ErrorCode::ERR_FIELD,
                 format("activate: pad_top = %u, pad_left = %u, pad_bottom = %u, pad_right = %u "
                        "(expected each < pool_k = %u)",
                        in.pad_top, in.pad_left, in.pad_bottom, in.pad_right, in.pool_k));
  }
  if (in.pool_k > in.padded_width() || in.pool_k > in.padded_height()) {
    return fault(ErrorCode::ERR_FIELD,
                 format("activate: pool_k = %u exceeds the padded width = %u or height = %u "
                        "(expected pool_k <= both)",
                        in.pool_k, in.padded_width(), in.padded_height()));
  }
  if (in.raw && (in.pool_k != 1 || in.pool_s != 1 || in.pad_top || in.pad_left || in.pad_bottom ||
                 in.pad_right || in.func != ActFunc::Identity || in.out_unsigned)) {
    return fault(ErrorCode::ERR_FIELD,
                 format("activate raw: pool_k = %u, pool_s = %u, pads %u/%u/%u/%u, func = %s, "
                        "out_unsigned = %u (a raw int32 output expects pool_k = pool_s = 1, no "
                        "pads, func = identity, a signed output)",
                        in.pool_k, in.pool_s, in.pad_top, in.pad_left, in.pad_bottom, in.pad_right,
                        std::string(act_func_name(in.func)).c_str(), unsigned{in.out_unsigned}));
  }
  const uint64_t last_ub = in.last_ub_row();
  if (last_ub >= p.ub_rows) {
    return fault(ErrorCode::ERR_UB_RANGE,
                 format("activate: last UB row written ub + (Ho-1)*ub_stride + Wo*%u-1 = %" PRIu64
                        " (Ho = %" PRIu64 ", Wo = %" PRIu64 "; UbRows = %u, must be < %u)",
                        in.ub_rows_per_pixel(), last_ub, in.output_height(), in.output_width(),
                        p.ub_rows, p.ub_rows));
  }
  Fault f = check_rows("activate", "ACC", ErrorCode::ERR_ACC_RANGE, in.acc_addr,
                       uint64_t{in.width} * in.height, p.acc_rows, "AccRows");
  if (f.code != ErrorCode::ERR_NONE) return f;
  if (in.slot >= p.qp_slots) {
    return fault(ErrorCode::ERR_PARAM_RANGE,
                 format("activate: slot = %u out of range (QpSlots = %u, must be < %u)", in.slot,
                        p.qp_slots, p.qp_slots));
  }
  return {};
}

// ---- training configuration

Fault check_vmem_rows(const char* op, const char* what, uint64_t last, const ChipParams& p) {
  if (last >= p.vmem_rows) {
    return fault(ErrorCode::ERR_VMEM_RANGE,
                 format("%s: last VMEM row %s = %" PRIu64 " out of range (VmemRows = %u, must "
                        "be < %u)",
                        op, what, last, p.vmem_rows, p.vmem_rows));
  }
  return {};
}

Fault check_vmem_dma(const char* op, const VmemDma& in, const ChipParams& p,
                     const DmaWindows& win) {
  if (in.rows == 0) return fault(ErrorCode::ERR_FIELD, format("%s: rows = 0 (expected >= 1)", op));
  if (in.host_stride % 16 != 0) {
    return fault(ErrorCode::ERR_ALIGN,
                 format("%s: host_stride = %" PRIu32 " is not a multiple of 16 (expected 0 for "
                        "contiguous rows, or a multiple of 16)",
                        op, in.host_stride));
  }
  Fault f = check_host_range(op, in.host_addr, in.host_span(p.N), win);
  if (f.code != ErrorCode::ERR_NONE) return f;
  return check_vmem_rows(op, "(vmem_addr + rows - 1)", uint64_t{in.vmem_addr} + in.rows - 1, p);
}

Fault check_one(const ReadVmem& in, const ChipParams& p, const DmaWindows& win) {
  return check_vmem_dma("read_vmem", in, p, win);
}

Fault check_one(const WriteVmem& in, const ChipParams& p, const DmaWindows& win) {
  return check_vmem_dma("write_vmem", in, p, win);
}

Fault check_one(const LoadWeights& in, const ChipParams& p, const DmaWindows&) {
  if (in.tiles == 0 || in.rows == 0 || in.rows > p.N) {
    return fault(ErrorCode::ERR_FIELD,
                 format("load_weights: tiles = %u, rows = %u (expected tiles >= 1 and rows in "
                        "1..N = %u)",
                        in.tiles, in.rows, p.N));
  }
  return check_vmem_rows("load_weights",
                         "read (vmem_addr + (tiles-1)*tile_stride + (rows-1)*row_stride)",
                         in.last_row(), p);
}

Fault check_one(const MatmulBf16& in, const ChipParams& p, const DmaWindows&) {
  if (in.inner == 0 || in.outer == 0) {
    return fault(ErrorCode::ERR_FIELD, format("matmul_bf16: inner = %u, outer = %u (both must be "
                                              ">= 1)",
                                              in.inner, in.outer));
  }
  Fault f = check_rows("matmul_bf16", "ACC", ErrorCode::ERR_ACC_RANGE, in.acc_addr,
                       uint64_t{in.inner} * in.outer, p.acc_rows, "AccRows");
  if (f.code != ErrorCode::ERR_NONE) return f;
  return check_vmem_rows("matmul_bf16",
                         "read (vmem_addr + (outer-1)*outer_stride + (inner-1)*inner_stride)",
                         in.last_vmem_row(), p);
}

Fault check_one(const AccToVmem& in, const ChipParams& p, const DmaWindows&) {
  if (in.rows == 0) return fault(ErrorCode::ERR_FIELD, "acc_to_vmem: rows = 0 (expected >= 1)");
  Fault f = check_rows("acc_to_vmem", "ACC", ErrorCode::ERR_ACC_RANGE, in.acc_addr, in.rows,
                       p.acc_rows, "AccRows");
  if (f.code != ErrorCode::ERR_NONE) return f;
  return check_vmem_rows("acc_to_vmem", "written (vmem_addr + rows - 1)",
                         uint64_t{in.vmem_addr} + in.rows - 1, p);
}

Fault check_one(const Transpose& in, const ChipParams& p, const DmaWindows&) {
  if (in.blocks == 0) return fault(ErrorCode::ERR_FIELD, "transpose: blocks = 0 (expected >= 1)");
  Fault f =
      check_vmem_rows("transpose", "read (src + (blocks-1)*src_stride + (N-1)*src_row_stride)",
                      in.last_src_row(p.N), p);
  if (f.code != ErrorCode::ERR_NONE) return f;
  return check_vmem_rows("transpose", "written (dst + (blocks-1)*dst_stride + N-1)",
                         in.last_dst_row(p.N), p);
}

Fault check_vector_fields(const Vector& in, const ChipParams& p) {
  if (in.inner == 0 || in.outer == 0) {
    return fault(ErrorCode::ERR_FIELD,
                 format("vector: inner = %u, outer = %u (both must be >= 1)", in.inner, in.outer));
  }
  if (!is_vec_func(in.func)) {
    return fault(ErrorCode::ERR_FIELD,
                 format("vector: func = 0x%02x is not a function (expected one of the isa.md "
                        "vector table)",
                        in.func));
  }
  const std::string name(vec_func_name(in.func));
  if (is_unary_vec_func(in.func) && (in.bmode != BMode::RowA || in.b != 0)) {
    return fault(ErrorCode::ERR_FIELD,
                 format("%s: a unary function has no operand B, but bmode = %u, b = %" PRIu32
                        " (expected both 0)",
                        name.c_str(), static_cast<unsigned>(in.bmode), in.b));
  }
  if (in.vec_func() == VecFunc::Align && (in.bmode != BMode::Imm || in.b >= p.N)) {
    return fault(ErrorCode::ERR_FIELD, format("align: bmode = %u, shift = %" PRIu32
                                              " (expected bmode = 3, imm, and a shift < N = %u)",
                                              static_cast<unsigned>(in.bmode), in.b, p.N));
  }
  return {};
}

Fault check_one(const Vector& in, const ChipParams& p, const DmaWindows&) {
  Fault f = check_vector_fields(in, p);
  if (f.code != ErrorCode::ERR_NONE) return f;
  const char* name = vec_func_name(in.func).data();
  const uint32_t o = in.outer - 1u, i = in.inner - 1u;
  f = check_vmem_rows(name,
                      "written (dst + (outer-1)*dst_outer_stride + (inner-1)*dst_inner_stride)",
                      in.dst_row(o, i), p);
  if (f.code != ErrorCode::ERR_NONE) return f;
  const bool align_next = in.vec_func() == VecFunc::Align && in.b > 0;
  f = check_vmem_rows(name,
                      align_next ? "read (a + (outer-1)*a_outer_stride + "
                                   "(inner-1)*a_inner_stride + 1)"
                                 : "read (a + (outer-1)*a_outer_stride + (inner-1)*a_inner_stride)",
                      in.a_row(o, i) + (align_next ? 1 : 0), p);
  if (f.code != ErrorCode::ERR_NONE || in.bmode == BMode::Imm || is_unary_vec_func(in.func)) {
    return f;
  }
  return check_vmem_rows(name, "of operand B", in.b_row(o, i), p);
}

// ici_send / ici_recv (isa.md "Errors of the link instructions"): ERR_FIELD, ERR_VMEM_RANGE,
// then ERR_ICI_LINK for a link the chip does not have. (Whether an existing link is connected
// is known only to the pod: driver/pod.cpp.)
Fault check_ici(const char* op, uint8_t link, uint32_t rows, uint64_t last_row,
                const ChipParams& p) {
  if (rows == 0) return fault(ErrorCode::ERR_FIELD, format("%s: rows = 0 (expected >= 1)", op));
  Fault f = check_vmem_rows(op, "(vmem_addr + rows - 1)", last_row, p);
  if (f.code != ErrorCode::ERR_NONE) return f;
  if (link >= p.ici_links) {
    return fault(ErrorCode::ERR_ICI_LINK,
                 format("%s: link = %u, but the chip has IciLinks = %u (expected 0..%u)", op, link,
                        p.ici_links, p.ici_links - 1));
  }
  return {};
}

Fault check_one(const IciSend& in, const ChipParams& p, const DmaWindows&) {
  return check_ici("ici_send", in.link, in.rows, in.last_row(), p);
}

Fault check_one(const IciRecv& in, const ChipParams& p, const DmaWindows&) {
  if (in.reduce > static_cast<uint8_t>(IciReduce::IAdd)) {
    return fault(
        ErrorCode::ERR_FIELD,
        format("ici_recv: reduce = %u (expected 0 = none, 1 = fadd, 2 = iadd)", in.reduce));
  }
  return check_ici("ici_recv", in.link, in.rows, in.last_row(), p);
}

// dwconv (isa.md "Depthwise configuration"): ERR_FIELD, ERR_UB_RANGE, ERR_ACC_RANGE. (ERR_OPCODE
// on a chip without the unit is check()'s, above every other code.)
Fault check_dw_fields(const DwConv& in) {
  if (in.width == 0 || in.height == 0 || in.kernel_h == 0 || in.kernel_w == 0) {
    return fault(ErrorCode::ERR_FIELD,
                 format("dwconv: width = %u, height = %u, kernel_h = %u, kernel_w = %u (all must "
                        "be >= 1)",
                        in.width, in.height, in.kernel_h, in.kernel_w));
  }
  if (std::max(in.pad_top, in.pad_bottom) >= in.kernel_h ||
      std::max(in.pad_left, in.pad_right) >= in.kernel_w) {
    return fault(
        ErrorCode::ERR_FIELD,
        format("dwconv: pad_top = %u, pad_bottom = %u (expected < kernel_h = %u), "
               "pad_left = %u, pad_right = %u (expected < kernel_w = %u)",
               in.pad_top, in.pad_bottom, in.kernel_h, in.pad_left, in.pad_right, in.kernel_w));
  }
  if (in.padded_height() < in.kernel_h || in.padded_width() < in.kernel_w) {
    return fault(ErrorCode::ERR_FIELD,
                 format("dwconv: padded image %u x %u (lines x columns) is smaller than the "
                        "%u x %u kernel (no output pixel)",
                        in.padded_height(), in.padded_width(), in.kernel_h, in.kernel_w));
  }
  return {};
}

Fault check_one(const DwConv& in, const ChipParams& p, const DmaWindows&) {
  Fault f = check_dw_fields(in);
  if (f.code != ErrorCode::ERR_NONE) return f;
  if (in.last_input_row() >= p.ub_rows) {
    return fault(ErrorCode::ERR_UB_RANGE,
                 format("dwconv: last input row ub + (height-1)*ub_stride + width-1 = %" PRIu64
                        " (UbRows = %u, must be < %u)",
                        in.last_input_row(), p.ub_rows, p.ub_rows));
  }
  if (in.zero_point_row() >= p.ub_rows) {
    return fault(ErrorCode::ERR_UB_RANGE,
                 format("dwconv: weight rows w = %u .. w + kh*kw = %" PRIu64
                        " (the last is the zero-point row; UbRows = %u, must be < %u)",
                        in.w_addr, in.zero_point_row(), p.ub_rows, p.ub_rows));
  }
  return check_rows("dwconv", "ACC", ErrorCode::ERR_ACC_RANGE, in.acc_addr, in.output_pixels(),
                    p.acc_rows, "AccRows");
}

Fault check_one(const Nop&, const ChipParams&, const DmaWindows&) { return {}; }
Fault check_one(const Sync&, const ChipParams&, const DmaWindows&) { return {}; }
Fault check_one(const Halt&, const ChipParams&, const DmaWindows&) { return {}; }

Fault check_one(const RawInstruction& in, const ChipParams& p, const DmaWindows& win) {
  DecodeResult d = decode(in.bytes, p);
  if (!d.ok()) return fault(d.error, d.why);
  if (std::holds_alternative<RawInstruction>(d.instr)) return {};  // unreachable; no recursion
  return std::visit([&](const auto& x) { return check_one(x, p, win); }, d.instr);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool is_valid_opcode(uint8_t value) { return value < kNumOpcodes; }
bool is_training_opcode(uint8_t value) {
  return value >= kFirstTrainingOpcode && value <= kLastTrainingOpcode;
}
bool is_ici_opcode(uint8_t value) { return value >= kFirstIciOpcode && value <= kLastIciOpcode; }
bool is_dw_opcode(uint8_t value) { return value == kDwOpcode; }

uint64_t DwConv::ub_reads(uint32_t dw_width) const {
  const int64_t p = std::max<uint32_t>(dw_width, 1);
  const int64_t s = stride();
  const int64_t ho = output_height();
  auto overlap = [](int64_t lo, int64_t count, int64_t limit) {  // |[lo, lo+count) ∩ [0, limit)|
    return std::max<int64_t>(0, std::min(lo + count, limit) - std::max<int64_t>(lo, 0));
  };
  const int64_t columns = int64_t{output_width() - 1} * s + kernel_w;  // Wc
  const int64_t cols_in = overlap(-int64_t{pad_left}, columns, width);
  uint64_t reads = taps() + 1u;
  for (int64_t first = 0; first < ho; first += p) {
    const int64_t rows = (std::min(p, ho - first) - 1) * s + kernel_h;  // R_g
    reads += static_cast<uint64_t>(overlap(first * s - pad_top, rows, height) * cols_in);
  }
  return reads;
}

uint64_t DwConv::unit_cycles(uint32_t dw_width) const {
  const uint64_t p = std::max<uint32_t>(dw_width, 1);
  const uint64_t ho = output_height();
  const uint64_t columns = uint64_t{output_width() - 1u} * stride() + kernel_w;  // Wc
  uint64_t cycles = taps() + 1u;
  for (uint64_t first = 0; first < ho; first += p) {
    const uint64_t lines = std::min(p, ho - first);            // P_g
    const uint64_t rows = (lines - 1u) * stride() + kernel_h;  // R_g
    cycles += rows * columns;
  }
  return cycles;
}

std::string_view ici_reduce_name(uint8_t reduce) {
  switch (reduce) {
    case 0:
      return "none";
    case 1:
      return "fadd";
    case 2:
      return "iadd";
    default:
      return {};
  }
}

std::string_view vec_func_name(uint8_t func) {
  for (const VecFuncInfo& f : kVecFuncs) {
    if (static_cast<uint8_t>(f.func) == func) return f.name;
  }
  return {};
}
bool is_vec_func(uint8_t func) { return !vec_func_name(func).empty(); }
bool is_lane_reduction(uint8_t func) {
  return func >= static_cast<uint8_t>(VecFunc::LSum) && func <= static_cast<uint8_t>(VecFunc::LMin);
}
bool is_row_reduction(uint8_t func) {
  return func >= static_cast<uint8_t>(VecFunc::RSum) && func <= static_cast<uint8_t>(VecFunc::RMin);
}
bool is_unary_vec_func(uint8_t func) {
  return is_lane_reduction(func) || (func >= static_cast<uint8_t>(VecFunc::F2I) &&
                                     func <= static_cast<uint8_t>(VecFunc::Bf16));
}
const std::vector<VecFunc>& all_vec_funcs() {
  static const std::vector<VecFunc> kAll = [] {
    std::vector<VecFunc> v;
    for (const VecFuncInfo& f : kVecFuncs) v.push_back(f.func);
    return v;
  }();
  return kAll;
}

std::string_view bmode_name(BMode m) {
  switch (m) {
    case BMode::RowA:
      return "a";
    case BMode::RowDst:
      return "dst";
    case BMode::Fixed:
      return "fixed";
    case BMode::Imm:
      return "imm";
  }
  return "?";
}

uint64_t Vector::b_row(uint32_t o, uint32_t i) const {
  switch (bmode) {
    case BMode::RowA:
      return uint64_t{b} + uint64_t{o} * a_outer_stride + uint64_t{i} * a_inner_stride;
    case BMode::RowDst:
      return uint64_t{b} + uint64_t{o} * dst_outer_stride + uint64_t{i} * dst_inner_stride;
    case BMode::Fixed:
    case BMode::Imm:
      break;
  }
  return b;
}

std::string_view mnemonic(Opcode op) {
  auto v = static_cast<uint8_t>(op);
  return is_valid_opcode(v) ? kMnemonics[v] : std::string_view("?");
}

std::string_view error_name(ErrorCode code) {
  auto v = static_cast<unsigned>(code);
  return v < kNumErrorCodes ? kErrorInfo[v].name : std::string_view("ERR_UNKNOWN");
}

std::string_view error_description(ErrorCode code) {
  auto v = static_cast<unsigned>(code);
  return v < kNumErrorCodes ? kErrorInfo[v].description
                            : std::string_view("not an error code of docs/isa.md");
}

bool is_static_error(ErrorCode code) {
  auto v = static_cast<unsigned>(code);
  return (v >= 1 && v <= 8) || code == ErrorCode::ERR_VMEM_RANGE || code == ErrorCode::ERR_ICI_LINK;
}

std::string_view act_func_name(ActFunc f) {
  switch (f) {
    case ActFunc::Identity:
      return "identity";
    case ActFunc::Relu:
      return "relu";
    case ActFunc::Clamp:
      return "clamp";
    case ActFunc::Lut:
      return "lut";
  }
  return "?";
}

ChipParams ChipParams::training(uint32_t n) {
  ChipParams p = with_n(n);
  p.vmem_rows = kTrainingVmemRows;
  p.vmem_port_bytes = 4 * n;
  return p;
}

ChipParams ChipParams::pod(uint32_t n, uint32_t links) {
  ChipParams p = training(n);
  p.ici_links = links;
  return p;
}

bool ChipParams::executes_training_op(uint8_t opcode) const {
  return has_vmem() && opcode >= kFirstTrainingOpcode &&
         opcode <= static_cast<uint8_t>(Opcode::Vector) &&
         ((training_ops >> (opcode - kFirstTrainingOpcode)) & 1u) != 0;
}

ChipParams ChipParams::with_n(uint32_t n) {
  ChipParams p;
  p.N = n;
  p.axi_width = std::min<uint32_t>(8 * n, 128);
  return p;
}

void ChipParams::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("ChipParams: " + what); };
  if (N < 4 || N > 256 || (N & (N - 1)) != 0) {
    bad(format("N = %u (expected a power of two in 4..256)", N));
  }
  if (ub_rows < 1 || ub_rows > (1u << 24)) bad(format("ub_rows = %u (expected 1..2^24)", ub_rows));
  if (acc_rows < 1 || acc_rows > (1u << 16)) {
    bad(format("acc_rows = %u (expected 1..2^16)", acc_rows));
  }
  if (qp_slots < 1 || qp_slots > 16) bad(format("qp_slots = %u (expected 1..16)", qp_slots));
  if (wfifo_tiles < 1) bad("wfifo_tiles = 0 (expected >= 1)");
  if (vmem_rows > (1u << 16)) {
    bad(format("vmem_rows = %u (expected 0 = no VMEM, or 1..2^16)", vmem_rows));
  }
  if ((axi_width != 32 && axi_width != 64 && axi_width != 128) || (8 * N) % axi_width != 0) {
    bad(format("axi_width = %u (expected 32, 64 or 128 dividing 8*N = %u)", axi_width, 8 * N));
  }
  if (weight_port_bytes != 0 && (weight_port_bytes < 16 || weight_port_bytes > N ||
                                 (weight_port_bytes & (weight_port_bytes - 1)) != 0)) {
    bad(
        format("weight_port_bytes = %u (expected 0 = no weight port, or a power of two in 16..N "
               "= %u)",
               weight_port_bytes, N));
  }
  if (ici_links > kMaxIciLinks) {
    bad(format("ici_links = %u (expected 0..%u)", ici_links, kMaxIciLinks));
  }
  if (dw_width > kMaxDwWidth) {
    bad(format("dw_width = %u (expected 0 = no depthwise unit, or 1..%u)", dw_width, kMaxDwWidth));
  }
  if (ici_links > 0 && vmem_rows == 0) {
    bad(format("ici_links = %u needs VMEM, but vmem_rows = 0 (the links move VMEM rows)",
               ici_links));
  }
}

bool operator==(const ChipParams& a, const ChipParams& b) {
  return std::tie(a.N, a.ub_rows, a.acc_rows, a.wfifo_tiles, a.qp_slots, a.axi_width, a.vmem_rows,
                  a.vmem_port_bytes, a.weight_port_bytes, a.training_ops, a.ici_links,
                  a.dw_width) ==
         std::tie(b.N, b.ub_rows, b.acc_rows, b.wfifo_tiles, b.qp_slots, b.axi_width, b.vmem_rows,
                  b.vmem_port_bytes, b.weight_port_bytes, b.training_ops, b.ici_links, b.dw_width);
}

namespace {

// The fields of the int8 core's formats; nullptr for the other opcodes.
const std::vector<FieldInfo>* int8_fields(Opcode op) {
  using namespace field;
  static const std::vector<FieldInfo> kReadHost = {{"dest", kHostDest},
                                                   {"local_addr", kHostLocalAddr},
                                                   {"rows", kHostRows},
                                                   {"host_addr", kHostAddr}};
  static const std::vector<FieldInfo> kWriteHost = {
      {"local_addr", kHostLocalAddr}, {"rows", kHostRows}, {"host_addr", kHostAddr}};
  static const std::vector<FieldInfo> kReadWeights = {{"tiles", kWeightsTiles},
                                                      {"host_addr", kWeightsHostAddr}};
  static const std::vector<FieldInfo> kMatmul = {{"acc", kMatmulAcc},
                                                 {"a_unsigned", kMatmulAUnsigned},
                                                 {"w_unsigned", kMatmulWUnsigned},
                                                 {"switch", kMatmulSwitch},
                                                 {"ub_addr", kMatmulUbAddr},
                                                 {"acc_addr", kMatmulAccAddr},
                                                 {"inner", kMatmulInner},
                                                 {"outer", kMatmulOuter},
                                                 {"inner_stride", kMatmulInnerStride},
                                                 {"outer_stride", kMatmulOuterStride}};
  static const std::vector<FieldInfo> kActivate = {
      {"func", kActFunc},         {"out_unsigned", kActOutUnsigned},
      {"raw", kActRaw},           {"acc_addr", kActAccAddr},
      {"ub_addr", kActUbAddr},    {"width", kActWidth},
      {"height", kActHeight},     {"pool_k", kActPoolK},
      {"pool_s", kActPoolS},      {"ub_stride", kActUbStride},
      {"slot", kActSlot},         {"pad_top", kActPadTop},
      {"pad_left", kActPadLeft},  {"pad_bottom", kActPadBottom},
      {"pad_right", kActPadRight}};
  switch (op) {
    case Opcode::ReadHost:
      return &kReadHost;
    case Opcode::WriteHost:
      return &kWriteHost;
    case Opcode::ReadWeights:
      return &kReadWeights;
    case Opcode::Matmul:
      return &kMatmul;
    case Opcode::Activate:
      return &kActivate;
    default:
      return nullptr;
  }
}

// The fields of the training (VMEM, bf16, vector unit) and inter-chip link formats; nullptr for
// the other opcodes.
const std::vector<FieldInfo>* training_fields(Opcode op) {
  using namespace field;
  static const std::vector<FieldInfo> kVmemDma = {{"bf16", kVdmaBf16},
                                                  {"vmem_addr", kVdmaVmemAddr},
                                                  {"rows", kVdmaRows},
                                                  {"host_addr", kVdmaHostAddr},
                                                  {"host_stride", kVdmaHostStride}};
  static const std::vector<FieldInfo> kLoadWeights = {
      {"transpose", kLwTranspose}, {"vmem_addr", kLwVmemAddr},     {"row_stride", kLwRowStride},
      {"tiles", kLwTiles},         {"tile_stride", kLwTileStride}, {"rows", kLwRows}};
  static const std::vector<FieldInfo> kMatmulBf16 = {{"acc", kMmbAcc},
                                                     {"switch", kMmbSwitch},
                                                     {"vmem_addr", kMmbVmemAddr},
                                                     {"acc_addr", kMmbAccAddr},
                                                     {"inner", kMmbInner},
                                                     {"outer", kMmbOuter},
                                                     {"inner_stride", kMmbInnerStride},
                                                     {"outer_stride", kMmbOuterStride}};
  static const std::vector<FieldInfo> kAccToVmem = {
      {"acc_addr", kAtvAccAddr}, {"vmem_addr", kAtvVmemAddr}, {"rows", kAtvRows}};
  static const std::vector<FieldInfo> kTranspose = {{"src", kTrSrc},
                                                    {"dst", kTrDst},
                                                    {"blocks", kTrBlocks},
                                                    {"src_stride", kTrSrcStride},
                                                    {"dst_stride", kTrDstStride},
                                                    {"src_row_stride", kTrSrcRowStride}};
  static const std::vector<FieldInfo> kVector = {{"func", kVecFunc},
                                                 {"bmode", kVecBMode},
                                                 {"dst", kVecDst},
                                                 {"a", kVecA},
                                                 {"inner", kVecInner},
                                                 {"outer", kVecOuter},
                                                 {"a_inner_stride", kVecAInnerStride},
                                                 {"a_outer_stride", kVecAOuterStride},
                                                 {"dst_inner_stride", kVecDstInnerStride},
                                                 {"dst_outer_stride", kVecDstOuterStride},
                                                 {"b", kVecB}};
  static const std::vector<FieldInfo> kIciSend = {
      {"link", kIciLink}, {"vmem_addr", kIciVmemAddr}, {"rows", kIciRows}};
  static const std::vector<FieldInfo> kIciRecv = {
      {"link", kIciLink}, {"reduce", kIciReduce}, {"vmem_addr", kIciVmemAddr}, {"rows", kIciRows}};
  static const std::vector<FieldInfo> kDwConv = {
      {"acc", kDwAcc},           {"a_unsigned", kDwAUnsigned}, {"w_unsigned", kDwWUnsigned},
      {"stride2", kDwStride2},   {"kernel_h", kDwKernelH},     {"kernel_w", kDwKernelW},
      {"ub_addr", kDwUbAddr},    {"acc_addr", kDwAccAddr},     {"width", kDwWidth},
      {"height", kDwHeight},     {"w_addr", kDwWAddr},         {"pad_top", kDwPadTop},
      {"pad_left", kDwPadLeft},  {"pad_bottom", kDwPadBottom}, {"pad_right", kDwPadRight},
      {"ub_stride", kDwUbStride}};
  switch (op) {
    case Opcode::DwConv:
      return &kDwConv;
    case Opcode::IciSend:
      return &kIciSend;
    case Opcode::IciRecv:
      return &kIciRecv;
    case Opcode::ReadVmem:
    case Opcode::WriteVmem:
      return &kVmemDma;
    case Opcode::LoadWeights:
      return &kLoadWeights;
    case Opcode::MatmulBf16:
      return &kMatmulBf16;
    case Opcode::AccToVmem:
      return &kAccToVmem;
    case Opcode::Transpose:
      return &kTranspose;
    case Opcode::Vector:
      return &kVector;
    default:
      return nullptr;
  }
}

}  // namespace

const std::vector<FieldInfo>& instruction_fields(Opcode op) {
  static const std::vector<FieldInfo> kNone;  // Nop, Sync, Halt
  if (const auto* f = int8_fields(op)) return *f;
  if (const auto* f = training_fields(op)) return *f;
  return kNone;
}

uint64_t get_field(const InstrBytes& word, BitField f) {
  uint64_t v = 0;
  for (unsigned i = 0; i < f.width; ++i) {
    if (bit_is_set(word, f.lo + i)) v |= uint64_t{1} << i;
  }
  return v;
}

void set_field(InstrBytes& word, BitField f, uint64_t value) {
  if (value > f.max()) {
    throw std::out_of_range(
        format("value %" PRIu64 " does not fit in bits %u:%u", value, f.hi(), f.lo));
  }
  for (unsigned i = 0; i < f.width; ++i) {
    unsigned bit = f.lo + i;
    auto mask = static_cast<uint8_t>(1u << (bit % 8));
    if ((value >> i) & 1) {
      word[bit / 8] |= mask;
    } else {
      word[bit / 8] &= static_cast<uint8_t>(~mask);
    }
  }
}

// ---- equality

bool operator==(const Nop&, const Nop&) { return true; }
bool operator==(const Sync&, const Sync&) { return true; }
bool operator==(const Halt&, const Halt&) { return true; }
bool operator==(const ReadHost& a, const ReadHost& b) {
  return std::tie(a.dest, a.local_addr, a.rows, a.host_addr) ==
         std::tie(b.dest, b.local_addr, b.rows, b.host_addr);
}
bool operator==(const WriteHost& a, const WriteHost& b) {
  return std::tie(a.ub_addr, a.rows, a.host_addr) == std::tie(b.ub_addr, b.rows, b.host_addr);
}
bool operator==(const ReadWeights& a, const ReadWeights& b) {
  return a.tiles == b.tiles && a.host_addr == b.host_addr;
}
bool operator==(const Matmul& a, const Matmul& b) {
  return std::tie(a.accumulate, a.a_unsigned, a.w_unsigned, a.switch_weights, a.ub_addr, a.acc_addr,
                  a.inner, a.outer, a.inner_stride, a.outer_stride) ==
         std::tie(b.accumulate, b.a_unsigned, b.w_unsigned, b.switch_weights, b.ub_addr, b.acc_addr,
                  b.inner, b.outer, b.inner_stride, b.outer_stride);
}
bool operator==(const Activate& a, const Activate& b) {
  return std::tie(a.func, a.out_unsigned, a.acc_addr, a.ub_addr, a.width, a.height, a.pool_k,
                  a.pool_s, a.ub_stride, a.slot, a.pad_top, a.pad_left, a.pad_bottom, a.pad_right,
                  a.raw) == std::tie(b.func, b.out_unsigned, b.acc_addr, b.ub_addr, b.width,
                                     b.height, b.pool_k, b.pool_s, b.ub_stride, b.slot, b.pad_top,
                                     b.pad_left, b.pad_bottom, b.pad_right, b.raw);
}
bool operator==(const RawInstruction& a, const RawInstruction& b) { return a.bytes == b.bytes; }
bool operator==(const VmemDma& a, const VmemDma& b) {
  return std::tie(a.bf16, a.vmem_addr, a.rows, a.host_addr, a.host_stride) ==
         std::tie(b.bf16, b.vmem_addr, b.rows, b.host_addr, b.host_stride);
}
bool operator==(const LoadWeights& a, const LoadWeights& b) {
  return std::tie(a.transpose, a.vmem_addr, a.row_stride, a.tiles, a.tile_stride, a.rows) ==
         std::tie(b.transpose, b.vmem_addr, b.row_stride, b.tiles, b.tile_stride, b.rows);
}
bool operator==(const MatmulBf16& a, const MatmulBf16& b) {
  return std::tie(a.accumulate, a.switch_weights, a.vmem_addr, a.acc_addr, a.inner, a.outer,
                  a.inner_stride, a.outer_stride) ==
         std::tie(b.accumulate, b.switch_weights, b.vmem_addr, b.acc_addr, b.inner, b.outer,
                  b.inner_stride, b.outer_stride);
}
bool operator==(const AccToVmem& a, const AccToVmem& b) {
  return std::tie(a.acc_addr, a.vmem_addr, a.rows) == std::tie(b.acc_addr, b.vmem_addr, b.rows);
}
bool operator==(const Transpose& a, const Transpose& b) {
  return std::tie(a.src, a.dst, a.blocks, a.src_stride, a.dst_stride, a.src_row_stride) ==
         std::tie(b.src, b.dst, b.blocks, b.src_stride, b.dst_stride, b.src_row_stride);
}
bool operator==(const Vector& a, const Vector& b) {
  return std::tie(a.func, a.bmode, a.dst, a.a, a.inner, a.outer, a.a_inner_stride, a.a_outer_stride,
                  a.dst_inner_stride, a.dst_outer_stride,
                  a.b) == std::tie(b.func, b.bmode, b.dst, b.a, b.inner, b.outer, b.a_inner_stride,
                                   b.a_outer_stride, b.dst_inner_stride, b.dst_outer_stride, b.b);
}

bool operator==(const IciSend& a, const IciSend& b) {
  return std::tie(a.link, a.vmem_addr, a.rows) == std::tie(b.link, b.vmem_addr, b.rows);
}
bool operator==(const IciRecv& a, const IciRecv& b) {
  return std::tie(a.link, a.reduce, a.vmem_addr, a.rows) ==
         std::tie(b.link, b.reduce, b.vmem_addr, b.rows);
}
bool operator==(const DwConv& a, const DwConv& b) {
  return std::tie(a.accumulate, a.a_unsigned, a.w_unsigned, a.stride2, a.kernel_h, a.kernel_w,
                  a.ub_addr, a.acc_addr, a.width, a.height, a.w_addr, a.pad_top, a.pad_left,
                  a.pad_bottom, a.pad_right, a.ub_stride) ==
         std::tie(b.accumulate, b.a_unsigned, b.w_unsigned, b.stride2, b.kernel_h, b.kernel_w,
                  b.ub_addr, b.acc_addr, b.width, b.height, b.w_addr, b.pad_top, b.pad_left,
                  b.pad_bottom, b.pad_right, b.ub_stride);
}

// ---- encode

namespace {

struct Encoder {
  InstrBytes w{};

  void op(Opcode o) { set_field(w, field::kOpcode, static_cast<uint8_t>(o)); }

  void operator()(const Nop&) { op(Opcode::Nop); }
  void operator()(const Sync&) { op(Opcode::Sync); }
  void operator()(const Halt&) { op(Opcode::Halt); }
  void operator()(const ReadHost& in) {
    op(Opcode::ReadHost);
    put(w, field::kHostDest, static_cast<uint8_t>(in.dest), "read_host.dest");
    put(w, field::kHostLocalAddr, in.local_addr, "read_host.local_addr");
    put(w, field::kHostRows, in.rows, "read_host.rows");
    put(w, field::kHostAddr, in.host_addr, "read_host.host_addr");
  }
  void operator()(const WriteHost& in) {
    op(Opcode::WriteHost);
    put(w, field::kHostLocalAddr, in.ub_addr, "write_host.ub_addr");
    put(w, field::kHostRows, in.rows, "write_host.rows");
    put(w, field::kHostAddr, in.host_addr, "write_host.host_addr");
  }
  void operator()(const ReadWeights& in) {
    op(Opcode::ReadWeights);
    put(w, field::kWeightsTiles, in.tiles, "read_weights.tiles");
    put(w, field::kWeightsHostAddr, in.host_addr, "read_weights.host_addr");
  }
  void operator()(const Matmul& in) {
    op(Opcode::Matmul);
    put(w, field::kMatmulAcc, in.accumulate, "matmul.acc");
    put(w, field::kMatmulAUnsigned, in.a_unsigned, "matmul.a_unsigned");
    put(w, field::kMatmulWUnsigned, in.w_unsigned, "matmul.w_unsigned");
    put(w, field::kMatmulSwitch, in.switch_weights, "matmul.switch");
    put(w, field::kMatmulUbAddr, in.ub_addr, "matmul.ub_addr");
    put(w, field::kMatmulAccAddr, in.acc_addr, "matmul.acc_addr");
    put(w, field::kMatmulInner, in.inner, "matmul.inner");
    put(w, field::kMatmulOuter, in.outer, "matmul.outer");
    put(w, field::kMatmulInnerStride, in.inner_stride, "matmul.inner_stride");
    put(w, field::kMatmulOuterStride, in.outer_stride, "matmul.outer_stride");
  }
  void operator()(const Activate& in) {
    op(Opcode::Activate);
    put(w, field::kActFunc, static_cast<uint8_t>(in.func), "activate.func");
    put(w, field::kActOutUnsigned, in.out_unsigned, "activate.out_unsigned");
    put(w, field::kActRaw, in.raw, "activate.raw");
    put(w, field::kActAccAddr, in.acc_addr, "activate.acc_addr");
    put(w, field::kActUbAddr, in.ub_addr, "activate.ub_addr");
    put(w, field::kActWidth, in.width, "activate.width");
    put(w, field::kActHeight, in.height, "activate.height");
    put(w, field::kActPoolK, in.pool_k, "activate.pool_k");
    put(w, field::kActPoolS, in.pool_s, "activate.pool_s");
    put(w, field::kActUbStride, in.ub_stride, "activate.ub_stride");
    put(w, field::kActSlot, in.slot, "activate.slot");
    put(w, field::kActPadTop, in.pad_top, "activate.pad_top");
    put(w, field::kActPadLeft, in.pad_left, "activate.pad_left");
    put(w, field::kActPadBottom, in.pad_bottom, "activate.pad_bottom");
    put(w, field::kActPadRight, in.pad_right, "activate.pad_right");
  }
  void vmem_dma(const VmemDma& in, const char* name) {
    const std::string n(name);
    put(w, field::kVdmaBf16, in.bf16, (n + ".bf16").c_str());
    put(w, field::kVdmaVmemAddr, in.vmem_addr, (n + ".vmem_addr").c_str());
    put(w, field::kVdmaRows, in.rows, (n + ".rows").c_str());
    put(w, field::kVdmaHostAddr, in.host_addr, (n + ".host_addr").c_str());
    put(w, field::kVdmaHostStride, in.host_stride, (n + ".host_stride").c_str());
  }
  void operator()(const ReadVmem& in) {
    op(Opcode::ReadVmem);
    vmem_dma(in, "read_vmem");
  }
  void operator()(const WriteVmem& in) {
    op(Opcode::WriteVmem);
    vmem_dma(in, "write_vmem");
  }
  void operator()(const LoadWeights& in) {
    op(Opcode::LoadWeights);
    put(w, field::kLwTranspose, in.transpose, "load_weights.transpose");
    put(w, field::kLwVmemAddr, in.vmem_addr, "load_weights.vmem_addr");
    put(w, field::kLwRowStride, in.row_stride, "load_weights.row_stride");
    put(w, field::kLwTiles, in.tiles, "load_weights.tiles");
    put(w, field::kLwTileStride, in.tile_stride, "load_weights.tile_stride");
    put(w, field::kLwRows, in.rows, "load_weights.rows");
  }
  void operator()(const MatmulBf16& in) {
    op(Opcode::MatmulBf16);
    put(w, field::kMmbAcc, in.accumulate, "matmul_bf16.acc");
    put(w, field::kMmbSwitch, in.switch_weights, "matmul_bf16.switch");
    put(w, field::kMmbVmemAddr, in.vmem_addr, "matmul_bf16.vmem_addr");
    put(w, field::kMmbAccAddr, in.acc_addr, "matmul_bf16.acc_addr");
    put(w, field::kMmbInner, in.inner, "matmul_bf16.inner");
    put(w, field::kMmbOuter, in.outer, "matmul_bf16.outer");
    put(w, field::kMmbInnerStride, in.inner_stride, "matmul_bf16.inner_stride");
    put(w, field::kMmbOuterStride, in.outer_stride, "matmul_bf16.outer_stride");
  }
  void operator()(const AccToVmem& in) {
    op(Opcode::AccToVmem);
    put(w, field::kAtvAccAddr, in.acc_addr, "acc_to_vmem.acc_addr");
    put(w, field::kAtvVmemAddr, in.vmem_addr, "acc_to_vmem.vmem_addr");
    put(w, field::kAtvRows, in.rows, "acc_to_vmem.rows");
  }
  void operator()(const Transpose& in) {
    op(Opcode::Transpose);
    put(w, field::kTrSrc, in.src, "transpose.src");
    put(w, field::kTrDst, in.dst, "transpose.dst");
    put(w, field::kTrBlocks, in.blocks, "transpose.blocks");
    put(w, field::kTrSrcStride, in.src_stride, "transpose.src_stride");
    put(w, field::kTrDstStride, in.dst_stride, "transpose.dst_stride");
    put(w, field::kTrSrcRowStride, in.src_row_stride, "transpose.src_row_stride");
  }
  void operator()(const Vector& in) {
    op(Opcode::Vector);
    put(w, field::kVecFunc, in.func, "vector.func");
    put(w, field::kVecBMode, static_cast<uint8_t>(in.bmode), "vector.bmode");
    put(w, field::kVecDst, in.dst, "vector.dst");
    put(w, field::kVecA, in.a, "vector.a");
    put(w, field::kVecInner, in.inner, "vector.inner");
    put(w, field::kVecOuter, in.outer, "vector.outer");
    put(w, field::kVecAInnerStride, in.a_inner_stride, "vector.a_inner_stride");
    put(w, field::kVecAOuterStride, in.a_outer_stride, "vector.a_outer_stride");
    put(w, field::kVecDstInnerStride, in.dst_inner_stride, "vector.dst_inner_stride");
    put(w, field::kVecDstOuterStride, in.dst_outer_stride, "vector.dst_outer_stride");
    put(w, field::kVecB, in.b, "vector.b");
  }
  void operator()(const IciSend& in) {
    op(Opcode::IciSend);
    put(w, field::kIciLink, in.link, "ici_send.link");
    put(w, field::kIciVmemAddr, in.vmem_addr, "ici_send.vmem_addr");
    put(w, field::kIciRows, in.rows, "ici_send.rows");
  }
  void operator()(const IciRecv& in) {
    op(Opcode::IciRecv);
    put(w, field::kIciLink, in.link, "ici_recv.link");
    put(w, field::kIciReduce, in.reduce, "ici_recv.reduce");
    put(w, field::kIciVmemAddr, in.vmem_addr, "ici_recv.vmem_addr");
    put(w, field::kIciRows, in.rows, "ici_recv.rows");
  }
  void operator()(const DwConv& in) {
    using namespace field;
    op(Opcode::DwConv);
    put(w, kDwAcc, in.accumulate, "dwconv.acc");
    put(w, kDwAUnsigned, in.a_unsigned, "dwconv.a_unsigned");
    put(w, kDwWUnsigned, in.w_unsigned, "dwconv.w_unsigned");
    put(w, kDwStride2, in.stride2, "dwconv.stride2");
    put(w, kDwKernelH, in.kernel_h, "dwconv.kernel_h");
    put(w, kDwKernelW, in.kernel_w, "dwconv.kernel_w");
    put(w, kDwUbAddr, in.ub_addr, "dwconv.ub_addr");
    put(w, kDwAccAddr, in.acc_addr, "dwconv.acc_addr");
    put(w, kDwWidth, in.width, "dwconv.width");
    put(w, kDwHeight, in.height, "dwconv.height");
    put(w, kDwWAddr, in.w_addr, "dwconv.w_addr");
    put(w, kDwPadTop, in.pad_top, "dwconv.pad_top");
    put(w, kDwPadLeft, in.pad_left, "dwconv.pad_left");
    put(w, kDwPadBottom, in.pad_bottom, "dwconv.pad_bottom");
    put(w, kDwPadRight, in.pad_right, "dwconv.pad_right");
    put(w, kDwUbStride, in.ub_stride, "dwconv.ub_stride");
  }
  void operator()(const RawInstruction& in) { w = in.bytes; }
};

}  // namespace

InstrBytes encode(const Instruction& instr) {
  Encoder e;
  std::visit(e, instr);
  return e.w;
}

uint8_t opcode_byte(const Instruction& instr) {
  if (const auto* raw = std::get_if<RawInstruction>(&instr)) return raw->bytes[0];
  return static_cast<uint8_t>(instr.index());  // alternatives 0..7 are in opcode order
}
static_assert(std::is_same_v<std::variant_alternative_t<3, Instruction>, Matmul> &&
                  std::is_same_v<std::variant_alternative_t<7, Instruction>, Halt> &&
                  std::is_same_v<std::variant_alternative_t<8, Instruction>, ReadVmem> &&
                  std::is_same_v<std::variant_alternative_t<14, Instruction>, Vector> &&
                  std::is_same_v<std::variant_alternative_t<15, Instruction>, IciSend> &&
                  std::is_same_v<std::variant_alternative_t<16, Instruction>, IciRecv> &&
                  std::is_same_v<std::variant_alternative_t<17, Instruction>, DwConv>,
              "Instruction alternatives must be listed in opcode order (opcode_byte relies on it)");

// ---- decode

namespace {

// ---- decode of the training instructions (reserved bits already checked)

template <typename T>
T narrow(uint64_t v) {
  return static_cast<T>(v);
}

VmemDma decode_vmem_dma(const InstrBytes& w) {
  using namespace field;
  VmemDma in;
  in.bf16 = get_field(w, kVdmaBf16);
  in.vmem_addr = narrow<uint16_t>(get_field(w, kVdmaVmemAddr));
  in.rows = narrow<uint32_t>(get_field(w, kVdmaRows));
  in.host_addr = narrow<uint32_t>(get_field(w, kVdmaHostAddr));
  in.host_stride = narrow<uint32_t>(get_field(w, kVdmaHostStride));
  return in;
}

Vector decode_vector(const InstrBytes& w) {
  using namespace field;
  Vector in;
  in.func = narrow<uint8_t>(get_field(w, kVecFunc));
  in.bmode = static_cast<BMode>(get_field(w, kVecBMode));
  in.dst = narrow<uint16_t>(get_field(w, kVecDst));
  in.a = narrow<uint16_t>(get_field(w, kVecA));
  in.inner = narrow<uint8_t>(get_field(w, kVecInner));
  in.outer = narrow<uint16_t>(get_field(w, kVecOuter));
  in.a_inner_stride = narrow<uint8_t>(get_field(w, kVecAInnerStride));
  in.a_outer_stride = narrow<uint16_t>(get_field(w, kVecAOuterStride));
  in.dst_inner_stride = narrow<uint8_t>(get_field(w, kVecDstInnerStride));
  in.dst_outer_stride = narrow<uint16_t>(get_field(w, kVecDstOuterStride));
  in.b = narrow<uint32_t>(get_field(w, kVecB));
  return in;
}

Instruction decode_training(Opcode op, const InstrBytes& w) {
  using namespace field;
  auto get16 = [&](BitField f) { return narrow<uint16_t>(get_field(w, f)); };
  switch (op) {
    case Opcode::ReadVmem:
      return ReadVmem{decode_vmem_dma(w)};
    case Opcode::WriteVmem:
      return WriteVmem{decode_vmem_dma(w)};
    case Opcode::LoadWeights: {
      LoadWeights in;
      in.transpose = get_field(w, kLwTranspose);
      in.vmem_addr = get16(kLwVmemAddr);
      in.row_stride = get16(kLwRowStride);
      in.tiles = get16(kLwTiles);
      in.tile_stride = get16(kLwTileStride);
      in.rows = get16(kLwRows);
      return in;
    }
    case Opcode::MatmulBf16: {
      MatmulBf16 in;
      in.accumulate = get_field(w, kMmbAcc);
      in.switch_weights = get_field(w, kMmbSwitch);
      in.vmem_addr = get16(kMmbVmemAddr);
      in.acc_addr = get16(kMmbAccAddr);
      in.inner = get16(kMmbInner);
      in.outer = get16(kMmbOuter);
      in.inner_stride = narrow<uint8_t>(get_field(w, kMmbInnerStride));
      in.outer_stride = get16(kMmbOuterStride);
      return in;
    }
    case Opcode::AccToVmem:
      return AccToVmem{get16(kAtvAccAddr), get16(kAtvVmemAddr),
                       narrow<uint32_t>(get_field(w, kAtvRows))};
    case Opcode::Transpose:
      return Transpose{get16(kTrSrc),       get16(kTrDst),       get16(kTrBlocks),
                       get16(kTrSrcStride), get16(kTrDstStride), get16(kTrSrcRowStride)};
    default:
      return decode_vector(w);
  }
}

// The int8 core's data-movement, matmul and activate formats (reserved bits already checked).
Instruction decode_int8(Opcode op, const InstrBytes& w) {
  using namespace field;
  auto get = [&](BitField f) { return get_field(w, f); };
  switch (op) {
    case Opcode::ReadHost: {
      ReadHost in;
      in.dest = static_cast<HostDest>(get(kHostDest));
      in.local_addr = static_cast<uint32_t>(get(kHostLocalAddr));
      in.rows = static_cast<uint32_t>(get(kHostRows));
      in.host_addr = static_cast<uint32_t>(get(kHostAddr));
      return in;
    }
    case Opcode::WriteHost: {
      WriteHost in;
      in.ub_addr = static_cast<uint32_t>(get(kHostLocalAddr));
      in.rows = static_cast<uint32_t>(get(kHostRows));
      in.host_addr = static_cast<uint32_t>(get(kHostAddr));
      return in;
    }
    case Opcode::ReadWeights: {
      ReadWeights in;
      in.tiles = static_cast<uint32_t>(get(kWeightsTiles));
      in.host_addr = static_cast<uint32_t>(get(kWeightsHostAddr));
      return in;
    }
    case Opcode::Matmul: {
      Matmul in;
      in.accumulate = get(kMatmulAcc);
      in.a_unsigned = get(kMatmulAUnsigned);
      in.w_unsigned = get(kMatmulWUnsigned);
      in.switch_weights = get(kMatmulSwitch);
      in.ub_addr = static_cast<uint32_t>(get(kMatmulUbAddr));
      in.acc_addr = static_cast<uint16_t>(get(kMatmulAccAddr));
      in.inner = static_cast<uint16_t>(get(kMatmulInner));
      in.outer = static_cast<uint16_t>(get(kMatmulOuter));
      in.inner_stride = static_cast<uint8_t>(get(kMatmulInnerStride));
      in.outer_stride = static_cast<uint32_t>(get(kMatmulOuterStride));
      return in;
    }
    case Opcode::Activate: {
      Activate in;
      in.func = static_cast<ActFunc>(get(kActFunc));
      in.out_unsigned = get(kActOutUnsigned);
      in.raw = get(kActRaw);
      in.acc_addr = static_cast<uint16_t>(get(kActAccAddr));
      in.ub_addr = static_cast<uint32_t>(get(kActUbAddr));
      in.width = static_cast<uint16_t>(get(kActWidth));
      in.height = static_cast<uint16_t>(get(kActHeight));
      in.pool_k = static_cast<uint8_t>(get(kActPoolK));
      in.pool_s = static_cast<uint8_t>(get(kActPoolS));
      in.ub_stride = static_cast<uint32_t>(get(kActUbStride));
      in.slot = static_cast<uint8_t>(get(kActSlot));
      in.pad_top = static_cast<uint8_t>(get(kActPadTop));
      in.pad_left = static_cast<uint8_t>(get(kActPadLeft));
      in.pad_bottom = static_cast<uint8_t>(get(kActPadBottom));
      in.pad_right = static_cast<uint8_t>(get(kActPadRight));
      return in;
    }
    default:
      break;
  }
  return RawInstruction{w};  // not an int8 data format (decode() dispatches only those)
}

// The inter-chip link formats (reserved bits already checked).
Instruction decode_ici(Opcode op, const InstrBytes& w) {
  using namespace field;
  auto get = [&](BitField f) { return get_field(w, f); };
  switch (op) {
    case Opcode::IciSend:
      return IciSend{static_cast<uint8_t>(get(kIciLink)), static_cast<uint16_t>(get(kIciVmemAddr)),
                     static_cast<uint32_t>(get(kIciRows))};
    default:  // Opcode::IciRecv
      return IciRecv{static_cast<uint8_t>(get(kIciLink)), static_cast<uint8_t>(get(kIciReduce)),
                     static_cast<uint16_t>(get(kIciVmemAddr)),
                     static_cast<uint32_t>(get(kIciRows))};
  }
}

// dwconv (no reserved bits).
Instruction decode_dw(const InstrBytes& w) {
  using namespace field;
  auto get = [&](BitField f) { return get_field(w, f); };
  DwConv d;
  d.accumulate = get(kDwAcc) != 0;
  d.a_unsigned = get(kDwAUnsigned) != 0;
  d.w_unsigned = get(kDwWUnsigned) != 0;
  d.stride2 = get(kDwStride2) != 0;
  d.kernel_h = static_cast<uint8_t>(get(kDwKernelH));
  d.kernel_w = static_cast<uint8_t>(get(kDwKernelW));
  d.ub_addr = static_cast<uint32_t>(get(kDwUbAddr));
  d.acc_addr = static_cast<uint16_t>(get(kDwAccAddr));
  d.width = static_cast<uint16_t>(get(kDwWidth));
  d.height = static_cast<uint16_t>(get(kDwHeight));
  d.w_addr = static_cast<uint32_t>(get(kDwWAddr));
  d.pad_top = static_cast<uint8_t>(get(kDwPadTop));
  d.pad_left = static_cast<uint8_t>(get(kDwPadLeft));
  d.pad_bottom = static_cast<uint8_t>(get(kDwPadBottom));
  d.pad_right = static_cast<uint8_t>(get(kDwPadRight));
  d.ub_stride = static_cast<uint16_t>(get(kDwUbStride));
  return d;
}

}  // namespace

DecodeResult decode(const InstrBytes& w, const ChipParams& params) {
  if (is_dw_opcode(w[0])) {
    if (params.has_dw()) return decode(w);
    DecodeResult r;
    r.error = ErrorCode::ERR_OPCODE;
    r.why = format(
        "opcode 0x%02x (dwconv) needs the depthwise unit, but this chip has none (DwWidth = 0)",
        w[0]);
    r.instr = RawInstruction{w};
    return r;
  }
  if (is_ici_opcode(w[0]) && params.has_vmem() && !params.has_ici()) {
    DecodeResult r;
    r.error = ErrorCode::ERR_OPCODE;
    r.why = format(
        "opcode 0x%02x (%s) needs the pod configuration, but this chip has no inter-chip links "
        "(IciLinks = 0; expected 0x00..0x0e)",
        w[0], std::string(mnemonic(static_cast<Opcode>(w[0]))).c_str());
    r.instr = RawInstruction{w};
    return r;
  }
  if (w[0] >= kFirstTrainingOpcode && !params.has_vmem()) {
    DecodeResult r;
    r.error = ErrorCode::ERR_OPCODE;
    r.why = is_training_opcode(w[0])
                ? format(
                      "opcode 0x%02x (%s) needs the training configuration, but this chip has "
                      "no VMEM (VmemRows = 0; expected 0x00..0x07)",
                      w[0], std::string(mnemonic(static_cast<Opcode>(w[0]))).c_str())
                : format("opcode 0x%02x is not an instruction (expected 0x00..0x07)", w[0]);
    r.instr = RawInstruction{w};
    return r;
  }
  if (is_training_opcode(w[0]) && !params.executes_training_op(w[0])) {
    DecodeResult r;
    r.error = ErrorCode::ERR_OPCODE;
    r.why = format(
        "opcode 0x%02x (%s) is not implemented by this chip (ChipParams::training_ops "
        "= 0x%02x)",
        w[0], std::string(mnemonic(static_cast<Opcode>(w[0]))).c_str(), params.training_ops);
    r.instr = RawInstruction{w};
    return r;
  }
  return decode(w);
}

DecodeResult decode(const uint8_t* bytes16) {
  InstrBytes w;
  std::copy(bytes16, bytes16 + kInstrBytes, w.begin());
  return decode(w);
}

DecodeResult decode(const InstrBytes& w) {
  DecodeResult r;
  uint8_t opbyte = w[0];
  if (!is_valid_opcode(opbyte)) {
    r.error = ErrorCode::ERR_OPCODE;
    r.why = format("opcode 0x%02x is not an instruction (expected 0x00..0x11)", opbyte);
    r.instr = RawInstruction{w};
    return r;
  }
  auto op = static_cast<Opcode>(opbyte);
  if (find_reserved_violation(op, w, &r.why)) {
    r.error = ErrorCode::ERR_RESERVED;
    r.instr = RawInstruction{w};
    return r;
  }
  switch (op) {
    case Opcode::Nop:
      r.instr = Nop{};
      break;
    case Opcode::Sync:
      r.instr = Sync{};
      break;
    case Opcode::Halt:
      r.instr = Halt{};
      break;
    case Opcode::ReadHost:
    case Opcode::WriteHost:
    case Opcode::ReadWeights:
    case Opcode::Matmul:
    case Opcode::Activate:
      r.instr = decode_int8(op, w);
      break;
    case Opcode::ReadVmem:
    case Opcode::WriteVmem:
    case Opcode::LoadWeights:
    case Opcode::MatmulBf16:
    case Opcode::AccToVmem:
    case Opcode::Transpose:
    case Opcode::Vector:
      r.instr = decode_training(op, w);
      break;
    case Opcode::IciSend:
    case Opcode::IciRecv:
      r.instr = decode_ici(op, w);
      break;
    case Opcode::DwConv:
      r.instr = decode_dw(w);
      break;
  }
  return r;
}

// ---- disassemble

namespace {

struct Disassembler {
  std::string operator()(const Nop&) const { return "nop"; }
  std::string operator()(const Sync&) const { return "sync"; }
  std::string operator()(const Halt&) const { return "halt"; }
  std::string operator()(const ReadHost& in) const {
    std::string s = head(Opcode::ReadHost);
    if (in.dest == HostDest::Ub) {
      s += format("ub=%u", in.local_addr);
    } else {
      std::string_view name = host_dest_name(in.dest);
      std::string dest =
          name.empty() ? std::to_string(static_cast<unsigned>(in.dest)) : std::string(name);
      s += format("dest=%s addr=%u", dest.c_str(), in.local_addr);
    }
    return s + format(" rows=%u host=%s", in.rows, hex32(in.host_addr).c_str());
  }
  std::string operator()(const WriteHost& in) const {
    return head(Opcode::WriteHost) +
           format("ub=%u rows=%u host=%s", in.ub_addr, in.rows, hex32(in.host_addr).c_str());
  }
  std::string operator()(const ReadWeights& in) const {
    return head(Opcode::ReadWeights) +
           format("tiles=%u host=%s", in.tiles, hex32(in.host_addr).c_str());
  }
  std::string operator()(const Matmul& in) const {
    std::string s =
        head(Opcode::Matmul) +
        format("ub=%u acc=%u inner=%u outer=%u inner_stride=%u outer_stride=%u", in.ub_addr,
               in.acc_addr, in.inner, in.outer, in.inner_stride, in.outer_stride);
    if (in.accumulate) s += " acc";
    if (in.a_unsigned) s += " a_unsigned";
    if (in.w_unsigned) s += " w_unsigned";
    if (in.switch_weights) s += " switch";
    return s;
  }
  std::string operator()(const Activate& in) const {
    std::string s =
        head(Opcode::Activate) +
        format("acc=%u ub=%u width=%u height=%u pool_k=%u pool_s=%u ub_stride=%u slot=%u func=%s",
               in.acc_addr, in.ub_addr, in.width, in.height, in.pool_k, in.pool_s, in.ub_stride,
               in.slot, std::string(act_func_name(in.func)).c_str());
    if (in.out_unsigned) s += " out_unsigned";
    if (in.raw) s += " raw";
    if (in.pad_top || in.pad_left || in.pad_bottom || in.pad_right)
      s += format(" pad_top=%u pad_left=%u pad_bottom=%u pad_right=%u", in.pad_top, in.pad_left,
                  in.pad_bottom, in.pad_right);
    return s;
  }
  std::string vmem_dma(Opcode op, const VmemDma& in) const {
    std::string s = head(op) + format("vmem=%u rows=%u host=%s", in.vmem_addr, in.rows,
                                      hex32(in.host_addr).c_str());
    if (in.host_stride != 0) s += format(" host_stride=%u", in.host_stride);
    if (in.bf16) s += " bf16";
    return s;
  }
  std::string operator()(const ReadVmem& in) const { return vmem_dma(Opcode::ReadVmem, in); }
  std::string operator()(const WriteVmem& in) const { return vmem_dma(Opcode::WriteVmem, in); }
  std::string operator()(const LoadWeights& in) const {
    return head(Opcode::LoadWeights) +
           format("vmem=%u tiles=%u rows=%u row_stride=%u tile_stride=%u", in.vmem_addr, in.tiles,
                  in.rows, in.row_stride, in.tile_stride) +
           (in.transpose ? " transpose" : "");
  }
  std::string operator()(const MatmulBf16& in) const {
    std::string s =
        head(Opcode::MatmulBf16) +
        format("vmem=%u acc=%u inner=%u outer=%u inner_stride=%u outer_stride=%u", in.vmem_addr,
               in.acc_addr, in.inner, in.outer, in.inner_stride, in.outer_stride);
    if (in.accumulate) s += " acc";
    if (in.switch_weights) s += " switch";
    return s;
  }
  std::string operator()(const AccToVmem& in) const {
    return head(Opcode::AccToVmem) +
           format("acc=%u vmem=%u rows=%u", in.acc_addr, in.vmem_addr, in.rows);
  }
  std::string operator()(const Transpose& in) const {
    return head(Opcode::Transpose) +
           format("src=%u dst=%u blocks=%u src_stride=%u dst_stride=%u src_row_stride=%u", in.src,
                  in.dst, in.blocks, in.src_stride, in.dst_stride, in.src_row_stride);
  }
  std::string operator()(const Vector& in) const {
    const std::string_view name = vec_func_name(in.func);
    std::string s;
    if (name.empty()) {
      s = head(Opcode::Vector) + format("func=%u ", in.func);
    } else {
      s = std::string(name);
      s.resize(std::max<size_t>(s.size(), 12), ' ');
      s += ' ';
    }
    s += format("dst=%u a=%u", in.dst, in.a);
    if (in.bmode == BMode::Imm) {
      s += format(" imm=0x%08x", in.b);
    } else if (!is_unary_vec_func(in.func) || in.b != 0 || in.bmode != BMode::RowA) {
      s += format(" b=%u bmode=%s", in.b, std::string(bmode_name(in.bmode)).c_str());
    }
    return s + format(
                   " inner=%u outer=%u a_inner_stride=%u a_outer_stride=%u "
                   "dst_inner_stride=%u dst_outer_stride=%u",
                   in.inner, in.outer, in.a_inner_stride, in.a_outer_stride, in.dst_inner_stride,
                   in.dst_outer_stride);
  }
  std::string operator()(const IciSend& in) const {
    return head(Opcode::IciSend) +
           format("link=%u vmem=%u rows=%u", in.link, in.vmem_addr, in.rows);
  }
  std::string operator()(const IciRecv& in) const {
    const std::string_view r = ici_reduce_name(in.reduce);
    return head(Opcode::IciRecv) +
           format("link=%u vmem=%u rows=%u reduce=", in.link, in.vmem_addr, in.rows) +
           (r.empty() ? format("%u", in.reduce) : std::string(r));
  }
  std::string operator()(const DwConv& in) const {
    std::string s =
        head(Opcode::DwConv) + format(
                                   "ub=%u acc=%u width=%u height=%u w=%u kh=%u kw=%u ub_stride=%u "
                                   "pad_top=%u pad_left=%u pad_bottom=%u pad_right=%u",
                                   in.ub_addr, in.acc_addr, in.width, in.height, in.w_addr,
                                   in.kernel_h, in.kernel_w, in.ub_stride, in.pad_top, in.pad_left,
                                   in.pad_bottom, in.pad_right);
    if (in.accumulate) s += " acc";
    if (in.a_unsigned) s += " a_unsigned";
    if (in.w_unsigned) s += " w_unsigned";
    if (in.stride2) s += " stride2";
    return s;
  }
  std::string operator()(const RawInstruction& in) const {
    std::string s = ".inst 0x";
    for (int i = kInstrBytes - 1; i >= 0; --i) s += format("%02x", in.bytes[i]);
    return s;
  }
};

}  // namespace

std::string disassemble(const Instruction& instr) { return std::visit(Disassembler{}, instr); }

// ---- check

bool in_dma_windows(const DmaWindows& windows, uint64_t addr, uint64_t bytes) {
  bool any_enabled = false;
  for (const DmaWindow& w : windows) {
    if (w.size == 0) continue;
    any_enabled = true;
    if (addr >= w.base && addr + bytes <= uint64_t{w.base} + w.size) return true;
  }
  return !any_enabled;
}

ErrorCode check(const Instruction& instr, const ChipParams& params, std::string* why) {
  return check(instr, params, DmaWindows{}, why);
}

ErrorCode check(const Instruction& instr, const ChipParams& params, const DmaWindows& windows,
                std::string* why) {
  return check(instr, params, windows, CommandBuffer{}, why);
}

ErrorCode check(const Instruction& instr, const ChipParams& params, const DmaWindows& windows,
                const CommandBuffer& cmd, std::string* why) {
  Fault f;
  const uint8_t opbyte = opcode_byte(instr);
  if (is_training_opcode(opbyte) && !params.executes_training_op(opbyte) &&
      !std::holds_alternative<RawInstruction>(instr)) {
    f = fault(ErrorCode::ERR_OPCODE,
              params.has_vmem()
                  ? format("%s (opcode 0x%02x) is not implemented by this chip "
                           "(ChipParams::training_ops = 0x%02x)",
                           std::string(mnemonic(static_cast<Opcode>(opbyte))).c_str(), opbyte,
                           params.training_ops)
                  : format("%s (opcode 0x%02x) needs the training configuration, but this chip "
                           "has no VMEM (VmemRows = 0)",
                           std::string(mnemonic(static_cast<Opcode>(opbyte))).c_str(), opbyte));
  } else {
    f = std::visit([&](const auto& x) { return check_one(x, params, windows); }, instr);
  }
  // The link instructions on a chip without links: ERR_OPCODE, above every other check.
  if (is_ici_opcode(opbyte) && !params.has_ici() &&
      !std::holds_alternative<RawInstruction>(instr)) {
    f = fault(ErrorCode::ERR_OPCODE,
              format("%s (opcode 0x%02x) needs the pod configuration, but this chip has no "
                     "inter-chip links (IciLinks = 0)",
                     std::string(mnemonic(static_cast<Opcode>(opbyte))).c_str(), opbyte));
  }
  // dwconv on a chip without the depthwise unit: ERR_OPCODE, above every other check.
  if (is_dw_opcode(opbyte) && !params.has_dw() && !std::holds_alternative<RawInstruction>(instr)) {
    f = fault(
        ErrorCode::ERR_OPCODE,
        "dwconv (opcode 0x11) needs the depthwise unit, but this chip has none (DwWidth = 0)");
  }
  // ERR_HOST_RANGE is the highest of the codes 1-8: it applies only when nothing else did.
  // (ERR_VMEM_RANGE, 14, is above it: write_vmem checks the command buffer first.)
  const auto* wh = std::get_if<WriteHost>(&instr);
  const auto* wv = std::get_if<WriteVmem>(&instr);
  const bool may_overlap =
      f.code == ErrorCode::ERR_NONE || (wv != nullptr && f.code == ErrorCode::ERR_VMEM_RANGE);
  if (may_overlap && (wh != nullptr || wv != nullptr) && cmd.count != 0) {
    const uint64_t lo = wh != nullptr ? wh->host_addr : wv->host_addr;
    // one past the last byte
    const uint64_t hi =
        lo + (wh != nullptr ? uint64_t{wh->rows} * params.N : wv->host_span(params.N));
    const uint64_t cmd_lo = cmd.addr;
    const uint64_t cmd_hi = cmd_lo + uint64_t{cmd.count} * 16;
    if (lo < cmd_hi && cmd_lo < hi) {
      f = fault(
          ErrorCode::ERR_HOST_RANGE,
          format("%s: host bytes 0x%08" PRIx64 "..0x%08" PRIx64
                 " overlap the command buffer 0x%08" PRIx64 "..0x%08" PRIx64
                 " (a program may not overwrite itself)",
                 wh != nullptr ? "write_host" : "write_vmem", lo, hi - 1, cmd_lo, cmd_hi - 1));
    }
  }
  if (why != nullptr) *why = f.code == ErrorCode::ERR_NONE ? std::string() : f.why;
  return f.code;
}

}  // namespace tpu

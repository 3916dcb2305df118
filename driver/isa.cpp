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
};

constexpr std::string_view kMnemonics[kNumOpcodes] = {
    "nop", "read_host", "read_weights", "matmul", "activate", "write_host", "sync", "halt"};

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
Fault check_host_range(const char* op, uint32_t addr, uint64_t bytes, const DmaWindows& windows) {
  if (addr % 16 != 0) {
    return fault(ErrorCode::ERR_ALIGN, format("%s: host_addr 0x%08" PRIx32
                                              " is not 16-byte aligned (expected low 4 bits 0)",
                                              op, addr));
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
  return check_host_range("read_weights", in.host_addr, uint64_t{in.tiles} * p.tile_bytes(), win);
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
  uint64_t ho = (in.padded_height() - in.pool_k) / in.pool_s + 1;
  uint64_t wo = (in.padded_width() - in.pool_k) / in.pool_s + 1;
  uint64_t last_ub = uint64_t{in.ub_addr} + (ho - 1) * in.ub_stride + wo - 1;
  if (last_ub >= p.ub_rows) {
    return fault(ErrorCode::ERR_UB_RANGE,
                 format("activate: last UB row written ub + (Ho-1)*ub_stride + Wo-1 = %" PRIu64
                        " (Ho = %" PRIu64 ", Wo = %" PRIu64 "; UbRows = %u, must be < %u)",
                        last_ub, ho, wo, p.ub_rows, p.ub_rows));
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

Fault check_one(const Nop&, const ChipParams&, const DmaWindows&) { return {}; }
Fault check_one(const Sync&, const ChipParams&, const DmaWindows&) { return {}; }
Fault check_one(const Halt&, const ChipParams&, const DmaWindows&) { return {}; }

Fault check_one(const RawInstruction& in, const ChipParams& p, const DmaWindows& win) {
  DecodeResult d = decode(in.bytes);
  if (!d.ok()) return fault(d.error, d.why);
  if (std::holds_alternative<RawInstruction>(d.instr)) return {};  // unreachable; no recursion
  return std::visit([&](const auto& x) { return check_one(x, p, win); }, d.instr);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool is_valid_opcode(uint8_t value) { return value < kNumOpcodes; }

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
  return v >= 1 && v <= 8;
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
  if ((axi_width != 32 && axi_width != 64 && axi_width != 128) || (8 * N) % axi_width != 0) {
    bad(format("axi_width = %u (expected 32, 64 or 128 dividing 8*N = %u)", axi_width, 8 * N));
  }
}

bool operator==(const ChipParams& a, const ChipParams& b) {
  return std::tie(a.N, a.ub_rows, a.acc_rows, a.wfifo_tiles, a.qp_slots, a.axi_width) ==
         std::tie(b.N, b.ub_rows, b.acc_rows, b.wfifo_tiles, b.qp_slots, b.axi_width);
}

const std::vector<FieldInfo>& instruction_fields(Opcode op) {
  using namespace field;
  static const std::vector<FieldInfo> kNone;
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
  static const std::vector<FieldInfo> kActivate = {{"func", kActFunc},
                                                   {"out_unsigned", kActOutUnsigned},
                                                   {"acc_addr", kActAccAddr},
                                                   {"ub_addr", kActUbAddr},
                                                   {"width", kActWidth},
                                                   {"height", kActHeight},
                                                   {"pool_k", kActPoolK},
                                                   {"pool_s", kActPoolS},
                                                   {"ub_stride", kActUbStride},
                                                   {"slot", kActSlot},
                                                   {"pad_top", kActPadTop},
                                                   {"pad_left", kActPadLeft},
                                                   {"pad_bottom", kActPadBottom},
                                                   {"pad_right", kActPadRight}};
  switch (op) {
    case Opcode::ReadHost:
      return kReadHost;
    case Opcode::WriteHost:
      return kWriteHost;
    case Opcode::ReadWeights:
      return kReadWeights;
    case Opcode::Matmul:
      return kMatmul;
    case Opcode::Activate:
      return kActivate;
    case Opcode::Nop:
    case Opcode::Sync:
    case Opcode::Halt:
      return kNone;
  }
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
                  a.pool_s, a.ub_stride, a.slot, a.pad_top, a.pad_left, a.pad_bottom,
                  a.pad_right) == std::tie(b.func, b.out_unsigned, b.acc_addr, b.ub_addr, b.width,
                                           b.height, b.pool_k, b.pool_s, b.ub_stride, b.slot,
                                           b.pad_top, b.pad_left, b.pad_bottom, b.pad_right);
}
bool operator==(const RawInstruction& a, const RawInstruction& b) { return a.bytes == b.bytes; }

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
                  std::is_same_v<std::variant_alternative_t<7, Instruction>, Halt>,
              "Instruction alternatives must be listed in opcode order (opcode_byte relies on it)");

// ---- decode

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
    r.why = format("opcode 0x%02x is not an instruction (expected 0x00..0x07)", opbyte);
    r.instr = RawInstruction{w};
    return r;
  }
  auto op = static_cast<Opcode>(opbyte);
  if (find_reserved_violation(op, w, &r.why)) {
    r.error = ErrorCode::ERR_RESERVED;
    r.instr = RawInstruction{w};
    return r;
  }
  using namespace field;
  auto get = [&](BitField f) { return get_field(w, f); };
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
    case Opcode::ReadHost: {
      ReadHost in;
      in.dest = static_cast<HostDest>(get(kHostDest));
      in.local_addr = static_cast<uint32_t>(get(kHostLocalAddr));
      in.rows = static_cast<uint32_t>(get(kHostRows));
      in.host_addr = static_cast<uint32_t>(get(kHostAddr));
      r.instr = in;
      break;
    }
    case Opcode::WriteHost: {
      WriteHost in;
      in.ub_addr = static_cast<uint32_t>(get(kHostLocalAddr));
      in.rows = static_cast<uint32_t>(get(kHostRows));
      in.host_addr = static_cast<uint32_t>(get(kHostAddr));
      r.instr = in;
      break;
    }
    case Opcode::ReadWeights: {
      ReadWeights in;
      in.tiles = static_cast<uint32_t>(get(kWeightsTiles));
      in.host_addr = static_cast<uint32_t>(get(kWeightsHostAddr));
      r.instr = in;
      break;
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
      r.instr = in;
      break;
    }
    case Opcode::Activate: {
      Activate in;
      in.func = static_cast<ActFunc>(get(kActFunc));
      in.out_unsigned = get(kActOutUnsigned);
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
      r.instr = in;
      break;
    }
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
    if (in.pad_top || in.pad_left || in.pad_bottom || in.pad_right)
      s += format(" pad_top=%u pad_left=%u pad_bottom=%u pad_right=%u", in.pad_top, in.pad_left,
                  in.pad_bottom, in.pad_right);
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
  Fault f = std::visit([&](const auto& x) { return check_one(x, params, windows); }, instr);
  // ERR_HOST_RANGE is the highest of the codes 1-8: it applies only when nothing else did.
  const auto* wh = std::get_if<WriteHost>(&instr);
  if (f.code == ErrorCode::ERR_NONE && wh != nullptr && cmd.count != 0) {
    uint64_t lo = wh->host_addr;
    uint64_t hi = lo + uint64_t{wh->rows} * params.N;  // one past the last byte
    uint64_t cmd_lo = cmd.addr;
    uint64_t cmd_hi = cmd_lo + uint64_t{cmd.count} * 16;
    if (lo < cmd_hi && cmd_lo < hi) {
      f = fault(ErrorCode::ERR_HOST_RANGE,
                format("write_host: host bytes 0x%08" PRIx64 "..0x%08" PRIx64
                       " overlap the command buffer 0x%08" PRIx64 "..0x%08" PRIx64
                       " (a program may not overwrite itself)",
                       lo, hi - 1, cmd_lo, cmd_hi - 1));
    }
  }
  if (why != nullptr) *why = f.code == ErrorCode::ERR_NONE ? std::string() : f.why;
  return f.code;
}

}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
#include "program.h"

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "text.h"

namespace tpu {

namespace {

using detail::format;

constexpr uint64_t k12 = (1u << 12) - 1;  // inner, outer, width, height
constexpr uint64_t k24 = (1u << 24) - 1;  // UB addresses, rows, strides
constexpr uint64_t k16 = (1u << 16) - 1;  // ACC addresses

}  // namespace

ProgramError::ProgramError(std::string instruction, std::string argument, const std::string& what)
    : std::invalid_argument(what),
      instruction_(std::move(instruction)),
      argument_(std::move(argument)) {}

ProgramBuilder::ProgramBuilder(const ChipParams& params) : params_(params) { params_.validate(); }

void ProgramBuilder::set_host_ranges(std::vector<HostRange> ranges) {
  host_ranges_ = std::move(ranges);
}

void ProgramBuilder::fail(const char* mnemonic, const char* argument,
                          const std::string& message) const {
  throw ProgramError(
      mnemonic, argument,
      format("%s (instruction %zu): %s", mnemonic, program_.size(), message.c_str()));
}

void ProgramBuilder::check_not_halted(const char* mnemonic) const {
  if (halted_) fail(mnemonic, "", "comes after halt and would never run");
}

// value must be in lo..hi; `what` names the argument or expression, `limit` explains hi.
#define TPU_CHECK_RANGE(mnemonic, argument, what, value, lo, hi, limit)                            \
  do {                                                                                             \
    const uint64_t v_ = (value), lo_ = (lo), hi_ = (hi);                                           \
    if (v_ < lo_ || v_ > hi_) {                                                                    \
      fail(mnemonic, argument,                                                                     \
           format("%s = %" PRIu64 " is out of range (allowed %" PRIu64 "..%" PRIu64 "%s%s)", what, \
                  v_, lo_, hi_, (limit)[0] ? ": " : "", limit));                                   \
    }                                                                                              \
  } while (0)

void ProgramBuilder::check_host(const char* mnemonic, const char* argument, uint32_t host_addr,
                                uint64_t bytes) const {
  if (host_addr % 16 != 0) {
    fail(mnemonic, argument,
         format("%s = 0x%08" PRIx32 " is not 16-byte aligned (DMA host addresses must be)",
                argument, host_addr));
  }
  const uint64_t end = uint64_t{host_addr} + bytes;
  if (end > (uint64_t{1} << 32)) {
    fail(mnemonic, argument,
         format("host bytes 0x%08" PRIx32 "..0x%" PRIx64 " run past the 32-bit address space",
                host_addr, end - 1));
  }
  if (host_ranges_.empty()) return;
  for (const HostRange& r : host_ranges_) {
    if (host_addr >= r.addr && end <= uint64_t{r.addr} + r.size) return;
  }
  std::string list;
  for (const HostRange& r : host_ranges_) {
    if (!list.empty()) list += ", ";
    list += format("%s 0x%08" PRIx32 "..0x%08" PRIx64, r.name.empty() ? "buffer" : r.name.c_str(),
                   r.addr, uint64_t{r.addr} + r.size - 1);
  }
  fail(mnemonic, argument,
       format("host bytes 0x%08" PRIx32 "..0x%08" PRIx64
              " are not inside one registered host buffer (%s)",
              host_addr, end - 1, list.c_str()));
}

void ProgramBuilder::push(const Instruction& instr, const char* mnemonic) {
  // The named checks above each call should have caught everything; tpu::check is the
  // reference implementation of the chip's static checks, so ask it too.
  std::string why;
  if (check(instr, params_, &why) != ErrorCode::ERR_NONE) fail(mnemonic, "", why);
  program_.push_back(instr);
}

ProgramBuilder& ProgramBuilder::read_host(uint32_t ub_row, uint32_t rows, uint32_t host_addr) {
  return read_host(ReadHost{HostDest::Ub, ub_row, rows, host_addr});
}

ProgramBuilder& ProgramBuilder::read_params(uint32_t first_slot, uint32_t slots,
                                            uint32_t host_addr) {
  const char* m = "read_host";
  check_not_halted(m);
  TPU_CHECK_RANGE(m, "first_slot", "first_slot", first_slot, 0, params_.qp_slots - 1,
                  format("QpSlots = %u", params_.qp_slots).c_str());
  TPU_CHECK_RANGE(m, "slots", "slots", slots, 1, params_.qp_slots - first_slot,
                  format("slots %u.. of QpSlots = %u", first_slot, params_.qp_slots).c_str());
  return read_host(ReadHost{HostDest::Param, first_slot * 12, slots * 12, host_addr});
}

ProgramBuilder& ProgramBuilder::read_lut(uint32_t host_addr) {
  return read_host(ReadHost{HostDest::Lut, 0, params_.lut_rows(), host_addr});
}

ProgramBuilder& ProgramBuilder::read_host(const ReadHost& in) {
  const char* m = "read_host";
  check_not_halted(m);
  uint32_t limit_rows = params_.ub_rows;
  std::string limit = format("UbRows = %u", params_.ub_rows);
  switch (in.dest) {
    case HostDest::Ub:
      break;
    case HostDest::Param:
      limit_rows = params_.param_rows();
      limit = format("PARAM rows: 12 per slot, QpSlots = %u", params_.qp_slots);
      break;
    case HostDest::Lut:
      limit_rows = params_.lut_rows();
      limit = format("LUT rows: 256/N = %u", params_.lut_rows());
      break;
    default:
      fail(m, "dest",
           format("dest = %u is not a destination (allowed 0 = UB, 1 = PARAM, 2 = LUT)",
                  static_cast<unsigned>(in.dest)));
  }
  TPU_CHECK_RANGE(m, "rows", "rows", in.rows, 1, k24, "24-bit field");
  TPU_CHECK_RANGE(m, "local_addr", "local_addr", in.local_addr, 0, limit_rows - 1, limit.c_str());
  TPU_CHECK_RANGE(m, "rows", "local_addr + rows - 1", uint64_t{in.local_addr} + in.rows - 1, 0,
                  limit_rows - 1, limit.c_str());
  check_host(m, "host_addr", in.host_addr, uint64_t{in.rows} * params_.N);
  push(in, m);
  return *this;
}

ProgramBuilder& ProgramBuilder::read_weights(uint32_t tiles, uint32_t host_addr) {
  const char* m = "read_weights";
  check_not_halted(m);
  TPU_CHECK_RANGE(m, "tiles", "tiles", tiles, 1, k24, "24-bit field");
  check_host(m, "host_addr", host_addr, uint64_t{tiles} * params_.tile_bytes());
  if (host_addr % params_.weight_align() != 0) {
    fail(m, "host_addr",
         format("host_addr = 0x%08" PRIx32 " is not a multiple of the weight port's %u-byte beat "
                "(isa.md \"The weight port\")",
                host_addr, params_.weight_align()));
  }
  check_tile_room(m, tiles);
  push(ReadWeights{tiles, host_addr}, m);
  for (uint32_t t = 0; t < tiles; ++t) pending_bf16_.push_back(false);
  return *this;
}

ProgramBuilder& ProgramBuilder::matmul(uint32_t ub_addr, uint32_t acc_addr, uint32_t rows,
                                       unsigned flags) {
  const char* m = "matmul";
  check_not_halted(m);
  if (flags & ~unsigned{kAccumulate | kAUnsigned | kWUnsigned | kSwitchWeights}) {
    fail(m, "flags", format("flags = 0x%x has bits that are not MatmulFlag values", flags));
  }
  TPU_CHECK_RANGE(m, "rows", "rows", rows, 1, k12, "12-bit inner count; split larger matmuls");
  TPU_CHECK_RANGE(m, "acc_addr", "acc_addr", acc_addr, 0, k16, "16-bit field");
  Matmul mm;
  mm.accumulate = flags & kAccumulate;
  mm.a_unsigned = flags & kAUnsigned;
  mm.w_unsigned = flags & kWUnsigned;
  mm.switch_weights = flags & kSwitchWeights;
  mm.ub_addr = ub_addr;
  mm.acc_addr = static_cast<uint16_t>(acc_addr);
  mm.inner = static_cast<uint16_t>(rows);
  mm.outer = 1;
  mm.inner_stride = 1;
  mm.outer_stride = 0;
  return matmul(mm);
}

ProgramBuilder& ProgramBuilder::matmul(const Matmul& in) {
  const char* m = "matmul";
  check_not_halted(m);
  TPU_CHECK_RANGE(m, "inner", "inner", in.inner, 1, k12, "12-bit field");
  TPU_CHECK_RANGE(m, "outer", "outer", in.outer, 1, k12, "12-bit field");
  TPU_CHECK_RANGE(m, "outer_stride", "outer_stride", in.outer_stride, 0, k24, "24-bit field");
  TPU_CHECK_RANGE(m, "ub_addr", "ub_addr", in.ub_addr, 0, params_.ub_rows - 1,
                  format("UbRows = %u", params_.ub_rows).c_str());
  const uint64_t last_ub = uint64_t{in.ub_addr} + uint64_t{in.outer - 1u} * in.outer_stride +
                           uint64_t{in.inner - 1u} * in.inner_stride;
  TPU_CHECK_RANGE(m, "ub_addr",
                  "last UB row read (ub_addr + (outer-1)*outer_stride + (inner-1)*inner_stride)",
                  last_ub, 0, params_.ub_rows - 1, format("UbRows = %u", params_.ub_rows).c_str());
  const uint64_t rows = uint64_t{in.inner} * in.outer;
  TPU_CHECK_RANGE(m, "acc_addr", "acc_addr", in.acc_addr, 0, params_.acc_rows - 1,
                  format("AccRows = %u", params_.acc_rows).c_str());
  TPU_CHECK_RANGE(m, "acc_addr", "acc_addr + inner*outer - 1", in.acc_addr + rows - 1, 0,
                  params_.acc_rows - 1, format("AccRows = %u", params_.acc_rows).c_str());
  check_weight_tile(m, in.switch_weights, false);
  push(in, m);
  take_weight_tile(in.switch_weights);
  return *this;
}

ProgramBuilder& ProgramBuilder::activate(uint32_t acc_addr, uint32_t ub_addr, uint32_t rows,
                                         uint32_t slot, ActFunc func, bool out_unsigned) {
  const char* m = "activate";
  check_not_halted(m);
  TPU_CHECK_RANGE(m, "rows", "rows", rows, 1, k12, "12-bit width field; split larger activates");
  TPU_CHECK_RANGE(m, "acc_addr", "acc_addr", acc_addr, 0, k16, "16-bit field");
  TPU_CHECK_RANGE(m, "slot", "slot", slot, 0, params_.qp_slots - 1,
                  format("QpSlots = %u", params_.qp_slots).c_str());
  Activate a;
  a.func = func;
  a.out_unsigned = out_unsigned;
  a.acc_addr = static_cast<uint16_t>(acc_addr);
  a.ub_addr = ub_addr;
  a.width = static_cast<uint16_t>(rows);
  a.height = 1;
  a.pool_k = 1;
  a.pool_s = 1;
  a.ub_stride = 0;
  a.slot = static_cast<uint8_t>(slot);
  return activate(a);
}

ProgramBuilder& ProgramBuilder::activate(const Activate& in) {
  const char* m = "activate";
  check_not_halted(m);
  if (static_cast<unsigned>(in.func) > 3) {
    fail(m, "func",
         format("func = %u is not a function (allowed 0..3: identity, relu, clamp, lut)",
                static_cast<unsigned>(in.func)));
  }
  TPU_CHECK_RANGE(m, "width", "width", in.width, 1, k12, "12-bit field");
  TPU_CHECK_RANGE(m, "height", "height", in.height, 1, k12, "12-bit field");
  TPU_CHECK_RANGE(m, "pool_k", "pool_k", in.pool_k, 1, 15, "4-bit field");
  TPU_CHECK_RANGE(m, "pool_s", "pool_s", in.pool_s, 1, 15, "4-bit field");
  const unsigned max_pad = std::min(7u, in.pool_k - 1u);
  const char* pad_range = "3-bit field, below pool_k";
  TPU_CHECK_RANGE(m, "pad_top", "pad_top", in.pad_top, 0, max_pad, pad_range);
  TPU_CHECK_RANGE(m, "pad_left", "pad_left", in.pad_left, 0, max_pad, pad_range);
  TPU_CHECK_RANGE(m, "pad_bottom", "pad_bottom", in.pad_bottom, 0, max_pad, pad_range);
  TPU_CHECK_RANGE(m, "pad_right", "pad_right", in.pad_right, 0, max_pad, pad_range);
  TPU_CHECK_RANGE(m, "pool_k", "pool_k", in.pool_k, 1,
                  std::min(in.padded_width(), in.padded_height()),
                  "at most the padded width and height");
  TPU_CHECK_RANGE(m, "ub_stride", "ub_stride", in.ub_stride, 0, k24, "24-bit field");
  TPU_CHECK_RANGE(m, "slot", "slot", in.slot, 0, params_.qp_slots - 1,
                  format("QpSlots = %u", params_.qp_slots).c_str());
  const uint64_t acc_rows = uint64_t{in.width} * in.height;
  TPU_CHECK_RANGE(m, "acc_addr", "acc_addr", in.acc_addr, 0, params_.acc_rows - 1,
                  format("AccRows = %u", params_.acc_rows).c_str());
  TPU_CHECK_RANGE(m, "acc_addr", "acc_addr + width*height - 1", in.acc_addr + acc_rows - 1, 0,
                  params_.acc_rows - 1, format("AccRows = %u", params_.acc_rows).c_str());
  if (in.raw) {
    const char* raw_only = "a raw int32 activate has no pooling";
    TPU_CHECK_RANGE(m, "pool_k", "pool_k", in.pool_k, 1, 1, raw_only);
    TPU_CHECK_RANGE(m, "pool_s", "pool_s", in.pool_s, 1, 1, raw_only);
    TPU_CHECK_RANGE(m, "pad_top", "pad_top + pad_left + pad_bottom + pad_right",
                    in.pad_top + in.pad_left + in.pad_bottom + in.pad_right, 0, 0, raw_only);
    if (in.func != ActFunc::Identity || in.out_unsigned) {
      fail(m, "func",
           format("func = %s, out_unsigned = %u: a raw int32 activate expects "
                  "func = identity and a signed output",
                  std::string(act_func_name(in.func)).c_str(), unsigned{in.out_unsigned}));
    }
  }
  TPU_CHECK_RANGE(m, "ub_addr", "ub_addr", in.ub_addr, 0, params_.ub_rows - 1,
                  format("UbRows = %u", params_.ub_rows).c_str());
  TPU_CHECK_RANGE(
      m, "ub_addr", "last UB row written (ub_addr + (Ho-1)*ub_stride + Wo*rows_per_pixel - 1)",
      in.last_ub_row(), 0, params_.ub_rows - 1, format("UbRows = %u", params_.ub_rows).c_str());
  push(in, m);
  return *this;
}

ProgramBuilder& ProgramBuilder::write_host(uint32_t ub_row, uint32_t rows, uint32_t host_addr) {
  return write_host(WriteHost{ub_row, rows, host_addr});
}

ProgramBuilder& ProgramBuilder::write_host(const WriteHost& in) {
  const char* m = "write_host";
  check_not_halted(m);
  TPU_CHECK_RANGE(m, "rows", "rows", in.rows, 1, k24, "24-bit field");
  TPU_CHECK_RANGE(m, "ub_row", "ub_row", in.ub_addr, 0, params_.ub_rows - 1,
                  format("UbRows = %u", params_.ub_rows).c_str());
  TPU_CHECK_RANGE(m, "rows", "ub_row + rows - 1", uint64_t{in.ub_addr} + in.rows - 1, 0,
                  params_.ub_rows - 1, format("UbRows = %u", params_.ub_rows).c_str());
  check_host(m, "host_addr", in.host_addr, uint64_t{in.rows} * params_.N);
  push(in, m);
  return *this;
}

ProgramBuilder& ProgramBuilder::sync() {
  check_not_halted("sync");
  push(Sync{}, "sync");
  return *this;
}

ProgramBuilder& ProgramBuilder::nop() {
  check_not_halted("nop");
  push(Nop{}, "nop");
  return *this;
}

ProgramBuilder& ProgramBuilder::halt() {
  check_not_halted("halt");
  push(Halt{}, "halt");
  halted_ = true;
  return *this;
}

ProgramBuilder& ProgramBuilder::append(const Instruction& instr) {
  struct Visitor {
    ProgramBuilder& b;
    void operator()(const Nop&) { b.nop(); }
    void operator()(const Sync&) { b.sync(); }
    void operator()(const Halt&) { b.halt(); }
    void operator()(const ReadHost& in) { b.read_host(in); }
    void operator()(const WriteHost& in) { b.write_host(in); }
    void operator()(const ReadWeights& in) { b.read_weights(in.tiles, in.host_addr); }
    void operator()(const Matmul& in) { b.matmul(in); }
    void operator()(const Activate& in) { b.activate(in); }
    void operator()(const ReadVmem& in) { b.read_vmem(in); }
    void operator()(const WriteVmem& in) { b.write_vmem(in); }
    void operator()(const LoadWeights& in) { b.load_weights(in); }
    void operator()(const MatmulBf16& in) { b.matmul_bf16(in); }
    void operator()(const AccToVmem& in) { b.acc_to_vmem(in); }
    void operator()(const Transpose& in) { b.transpose(in); }
    void operator()(const Vector& in) { b.vector(in); }
    void operator()(const IciSend& in) { b.ici_send(in); }
    void operator()(const IciRecv& in) { b.ici_recv(in); }
    void operator()(const DwConv& in) { b.dwconv(in); }
    void operator()(const RawInstruction& in) {
      DecodeResult d = decode(in.bytes, b.params_);
      if (!d.ok()) b.fail(".inst", "", "raw word does not decode: " + d.why);
      b.append(d.instr);
    }
  };
  std::visit(Visitor{*this}, instr);
  return *this;
}

std::vector<Instruction> ProgramBuilder::finish() {
  if (!halted_) halt();
  return program_;
}

#undef TPU_CHECK_RANGE

}  // namespace tpu

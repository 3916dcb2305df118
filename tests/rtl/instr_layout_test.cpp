// SPDX-License-Identifier: Apache-2.0
// The RTL's instruction formats (tpu_pkg::instr_t, packed structs and their union) and its
// decoder (tpu_decoder) against the driver's ISA (driver/isa.h), which is written from the
// same docs/isa.md independently:
//   * every format has exactly isa.h's fields, each at isa.h's bit position and width, and its
//     reserved fields are exactly the bits no isa.h field covers (one bit at a time);
//   * the decoder faults ERR_RESERVED for every reserved bit of every opcode;
//   * the decoder's unit command carries isa.h's field values (random instructions), and its
//     static check agrees with tpu::check().
// The training formats (issue 30: read_vmem / write_vmem, load_weights, matmul_bf16,
// acc_to_vmem, transpose, vector) likewise, through the training chip's decoder (VmemRows =
// 8192) against isa.h with ChipParams::training(16) at that VMEM size (training_decoder_params).
// The wrapper tests/rtl/tpu_instr_layout.sv exposes the formats and the decoder's output.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "Vtpu_instr_layout.h"
#include "isa.h"
#include "verilated.h"

namespace {

using tpu::BitField;
using tpu::InstrBytes;
using tpu::Opcode;

// A 128-bit value as four 32-bit words, word i = bits 32i+31 .. 32i.
using Word = std::array<uint32_t, 4>;

Word to_word(const InstrBytes& b) {
  Word w{};
  for (unsigned i = 0; i < 16; ++i) w[i / 4] |= uint32_t{b[i]} << (8 * (i % 4));
  return w;
}

Word bit_word(unsigned bit) {
  Word w{};
  w[bit / 32] = uint32_t{1} << (bit % 32);
  return w;
}

std::string hex(const Word& w) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", w[3], w[2], w[1], w[0]);
  return buf;
}

class Layout {
 public:
  Layout()
      : ctx_(std::make_unique<VerilatedContext>()),
        m_(std::make_unique<Vtpu_instr_layout>(ctx_.get())) {}
  Vtpu_instr_layout& operator*() { return *m_; }
  Vtpu_instr_layout* operator->() { return m_.get(); }
  void eval(const Word& w) {
    for (unsigned i = 0; i < 4; ++i) m_->word_i[i] = w[i];
    m_->eval();
  }
  template <typename W>
  static Word wide(const W& v) {
    return Word{v[0], v[1], v[2], v[3]};
  }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vtpu_instr_layout> m_;
};

// One format of the RTL: its named fields (isa.h names) and its reserved bits.
struct Format {
  Opcode op;
  std::vector<std::pair<std::string, const uint32_t*>> fields;
  Word (*rsvd)(Vtpu_instr_layout&);
};

std::vector<Format> formats(Vtpu_instr_layout& m) {
  return {
      {Opcode::ReadHost,
       {{"dest", &m.host_dest_o},
        {"local_addr", &m.host_local_addr_o},
        {"rows", &m.host_rows_o},
        {"host_addr", &m.host_host_addr_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.host_rsvd_o); }},
      {Opcode::ReadWeights,
       {{"tiles", &m.weights_tiles_o}, {"host_addr", &m.weights_host_addr_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.weights_rsvd_o); }},
      {Opcode::Matmul,
       {{"acc", &m.matmul_acc_o},
        {"a_unsigned", &m.matmul_a_unsigned_o},
        {"w_unsigned", &m.matmul_w_unsigned_o},
        {"switch", &m.matmul_switch_o},
        {"ub_addr", &m.matmul_ub_addr_o},
        {"acc_addr", &m.matmul_acc_addr_o},
        {"inner", &m.matmul_inner_o},
        {"outer", &m.matmul_outer_o},
        {"inner_stride", &m.matmul_inner_stride_o},
        {"outer_stride", &m.matmul_outer_stride_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.matmul_rsvd_o); }},
      {Opcode::Activate,
       {{"func", &m.activate_func_o},
        {"out_unsigned", &m.activate_out_unsigned_o},
        {"raw", &m.activate_raw_o},
        {"acc_addr", &m.activate_acc_addr_o},
        {"ub_addr", &m.activate_ub_addr_o},
        {"width", &m.activate_width_o},
        {"height", &m.activate_height_o},
        {"pool_k", &m.activate_pool_k_o},
        {"pool_s", &m.activate_pool_s_o},
        {"ub_stride", &m.activate_ub_stride_o},
        {"slot", &m.activate_slot_o},
        {"pad_top", &m.activate_pad_top_o},
        {"pad_left", &m.activate_pad_left_o},
        {"pad_bottom", &m.activate_pad_bottom_o},
        {"pad_right", &m.activate_pad_right_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.activate_rsvd_o); }},
      {Opcode::Nop, {}, [](Vtpu_instr_layout& v) { return Layout::wide(v.plain_rsvd_o); }},
      {Opcode::ReadVmem,
       {{"bf16", &m.vdma_bf16_o},
        {"vmem_addr", &m.vdma_vmem_addr_o},
        {"rows", &m.vdma_rows_o},
        {"host_addr", &m.vdma_host_addr_o},
        {"host_stride", &m.vdma_host_stride_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.vdma_rsvd_o); }},
      {Opcode::LoadWeights,
       {{"transpose", &m.lw_transpose_o},
        {"vmem_addr", &m.lw_vmem_addr_o},
        {"row_stride", &m.lw_row_stride_o},
        {"tiles", &m.lw_tiles_o},
        {"tile_stride", &m.lw_tile_stride_o},
        {"rows", &m.lw_rows_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.lw_rsvd_o); }},
      {Opcode::MatmulBf16,
       {{"acc", &m.mmb_acc_o},
        {"switch", &m.mmb_switch_o},
        {"vmem_addr", &m.mmb_vmem_addr_o},
        {"acc_addr", &m.mmb_acc_addr_o},
        {"inner", &m.mmb_inner_o},
        {"outer", &m.mmb_outer_o},
        {"inner_stride", &m.mmb_inner_stride_o},
        {"outer_stride", &m.mmb_outer_stride_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.mmb_rsvd_o); }},
      {Opcode::AccToVmem,
       {{"acc_addr", &m.atv_acc_addr_o},
        {"vmem_addr", &m.atv_vmem_addr_o},
        {"rows", &m.atv_rows_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.atv_rsvd_o); }},
      {Opcode::Transpose,
       {{"src", &m.tr_src_o},
        {"dst", &m.tr_dst_o},
        {"blocks", &m.tr_blocks_o},
        {"src_stride", &m.tr_src_stride_o},
        {"dst_stride", &m.tr_dst_stride_o},
        {"src_row_stride", &m.tr_src_row_stride_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.tr_rsvd_o); }},
      {Opcode::Vector,
       {{"func", &m.vec_func_o},
        {"bmode", &m.vec_bmode_o},
        {"dst", &m.vec_dst_o},
        {"a", &m.vec_a_o},
        {"inner", &m.vec_inner_o},
        {"outer", &m.vec_outer_o},
        {"a_inner_stride", &m.vec_a_inner_stride_o},
        {"a_outer_stride", &m.vec_a_outer_stride_o},
        {"dst_inner_stride", &m.vec_dst_inner_stride_o},
        {"dst_outer_stride", &m.vec_dst_outer_stride_o},
        {"b", &m.vec_b_o}},
       [](Vtpu_instr_layout& v) { return Layout::wide(v.vec_rsvd_o); }},
  };
}

const BitField* isa_field(Opcode op, const std::string& name) {
  for (const tpu::FieldInfo& f : tpu::instruction_fields(op)) {
    if (f.name == name) return &f.bits;
  }
  return nullptr;
}

bool isa_defined(Opcode op, unsigned bit) {
  if (bit < 8) return true;  // the opcode
  for (const tpu::FieldInfo& f : tpu::instruction_fields(op)) {
    if (bit >= f.bits.lo && bit <= f.bits.hi()) return true;
  }
  return false;
}

TEST(InstrLayout, FormatsHaveExactlyTheFieldsOfIsaH) {
  Layout m;
  for (const Format& f : formats(*m)) {
    std::set<std::string> rtl, isa;
    for (const auto& [name, out] : f.fields) rtl.insert(name);
    for (const tpu::FieldInfo& fi : tpu::instruction_fields(f.op)) isa.insert(std::string(fi.name));
    EXPECT_EQ(rtl, isa) << "format of opcode " << int(f.op)
                        << ": tpu_pkg's fields differ from instruction_fields() in isa.h";
  }
  // write_host uses the read_host format; its dest bits are reserved (checked below).
  for (const tpu::FieldInfo& fi : tpu::instruction_fields(Opcode::WriteHost)) {
    EXPECT_NE(isa_field(Opcode::ReadHost, std::string(fi.name)), nullptr)
        << "write_host." << fi.name << " is not a field of the read_host format";
  }
  // write_vmem uses the read_vmem format, field for field.
  const auto& rv = tpu::instruction_fields(Opcode::ReadVmem);
  const auto& wv = tpu::instruction_fields(Opcode::WriteVmem);
  ASSERT_EQ(rv.size(), wv.size());
  for (size_t i = 0; i < rv.size(); ++i) {
    EXPECT_EQ(rv[i].name, wv[i].name);
    EXPECT_EQ(rv[i].bits.lo, wv[i].bits.lo) << wv[i].name;
    EXPECT_EQ(rv[i].bits.width, wv[i].bits.width) << wv[i].name;
  }
}

// Each bit alone: it must come out of exactly the field isa.h puts it in, at the right place,
// or out of the format's reserved bits if isa.h has no field there.
TEST(InstrLayout, EveryBitLandsInIsaHsFieldOrInReserved) {
  Layout m;
  for (const Format& f : formats(*m)) {
    for (unsigned bit = 0; bit < 128; ++bit) {
      m.eval(bit_word(bit));
      const Word none{};
      EXPECT_EQ(m->opcode_o, bit < 8 ? uint32_t{1} << bit : 0u) << "bit " << bit;
      for (const auto& [name, out] : f.fields) {
        const BitField* b = isa_field(f.op, name);
        ASSERT_NE(b, nullptr) << name;
        uint32_t want = (bit >= b->lo && bit <= b->hi()) ? uint32_t{1} << (bit - b->lo) : 0u;
        EXPECT_EQ(*out, want) << "opcode " << int(f.op) << " field " << name << " (isa.h bits "
                              << b->hi() << ":" << b->lo << "), only bit " << bit << " set";
      }
      Word want_rsvd = isa_defined(f.op, bit) ? none : bit_word(bit);
      EXPECT_EQ(hex(f.rsvd(*m)), hex(want_rsvd))
          << "opcode " << int(f.op) << ": reserved bits of the format, only bit " << bit
          << " set (isa.h: " << (isa_defined(f.op, bit) ? "a field" : "reserved") << ")";
    }
  }
}

TEST(InstrLayout, AllOnesFillEveryFieldToItsWidth) {
  Layout m;
  m.eval(Word{~0u, ~0u, ~0u, ~0u});
  EXPECT_EQ(m->opcode_o, 0xFFu);
  for (const Format& f : formats(*m)) {
    for (const auto& [name, out] : f.fields) {
      EXPECT_EQ(*out, isa_field(f.op, name)->max()) << "opcode " << int(f.op) << " " << name;
    }
  }
}

// Legal instructions of every opcode (N = 16, the default sizes, no DMA window).
std::vector<tpu::Instruction> legal_examples() {
  tpu::Activate act;
  act.width = 1;
  act.height = 1;
  return {tpu::Nop{}, tpu::ReadHost{},  tpu::ReadWeights{}, tpu::Matmul{},
          act,        tpu::WriteHost{}, tpu::Sync{},        tpu::Halt{}};
}

TEST(InstrLayout, DecoderFaultsEveryReservedBit) {
  Layout m;
  for (const tpu::Instruction& instr : legal_examples()) {
    const InstrBytes bytes = tpu::encode(instr);
    const Opcode op = Opcode(bytes[0]);
    m.eval(to_word(bytes));
    ASSERT_EQ(m->dec_err_o, 0u) << tpu::disassemble(instr);
    for (unsigned bit = 8; bit < 128; ++bit) {
      if (isa_defined(op, bit)) continue;
      Word w = to_word(bytes);
      w[bit / 32] |= uint32_t{1} << (bit % 32);
      m.eval(w);
      EXPECT_EQ(m->dec_err_o, unsigned(tpu::ErrorCode::ERR_RESERVED))
          << tpu::disassemble(instr) << " with reserved bit " << bit << " set";
    }
  }
}

// Random values for every field (of any legality): the unit command must carry isa.h's
// values, the unit must be the opcode's, and the static check must agree with tpu::check().
TEST(InstrLayout, DecoderCommandsAndChecksMatchIsaH) {
  Layout m;
  std::mt19937_64 rng(15);
  auto bits = [&](unsigned w) { return uint32_t(rng() & ((uint64_t{1} << w) - 1)); };
  // Small values too, so that legal instructions are frequent.
  auto pick = [&](unsigned w, uint32_t small) {
    return (rng() % 2) ? bits(w) : uint32_t(rng() % (small + 1));
  };
  const tpu::ChipParams params;  // N = 16, as the wrapper's decoder
  unsigned legal = 0;
  for (int i = 0; i < 20000; ++i) {
    tpu::Instruction instr;
    switch (i % 8) {
      case 0: {
        tpu::ReadHost r;
        r.dest = tpu::HostDest(bits(2));
        r.local_addr = pick(24, 64);
        r.rows = pick(24, 8);
        r.host_addr = pick(32, 4096) & ~(rng() % 4 ? 15u : 0u);
        instr = r;
        break;
      }
      case 1: {
        tpu::ReadWeights r;
        r.tiles = pick(24, 7);
        r.host_addr = pick(32, 4096) & ~15u;
        instr = r;
        break;
      }
      case 2: {
        tpu::Matmul r;
        r.accumulate = bits(1);
        r.a_unsigned = bits(1);
        r.w_unsigned = bits(1);
        r.switch_weights = bits(1);
        r.ub_addr = pick(24, 100);
        r.acc_addr = uint16_t(pick(16, 100));
        r.inner = uint16_t(pick(12, 20));
        r.outer = uint16_t(pick(12, 20));
        r.inner_stride = uint8_t(bits(8));
        r.outer_stride = pick(24, 20);
        instr = r;
        break;
      }
      case 3: {
        tpu::Activate r;
        r.func = tpu::ActFunc(bits(2));
        r.out_unsigned = bits(1);
        r.acc_addr = uint16_t(pick(16, 100));
        r.ub_addr = pick(24, 100);
        r.width = uint16_t(pick(12, 20));
        r.height = uint16_t(pick(12, 20));
        r.pool_k = uint8_t(pick(4, 3));
        r.pool_s = uint8_t(pick(4, 3));
        r.ub_stride = pick(24, 20);
        r.slot = uint8_t(bits(4));
        if (r.pool_k > 1 && bits(1)) {  // max-pool padding below the window
          r.pad_top = uint8_t(bits(3) % r.pool_k);
          r.pad_left = uint8_t(bits(3) % r.pool_k);
          r.pad_bottom = uint8_t(bits(3) % r.pool_k);
          r.pad_right = uint8_t(bits(3) % r.pool_k);
        }
        if (bits(2) == 0) {  // raw int32 output, legal only without pooling and as identity
          r.raw = true;
          if (bits(1)) {
            r.func = tpu::ActFunc::Identity;
            r.out_unsigned = false;
            r.pool_k = r.pool_s = 1;
            r.pad_top = r.pad_left = r.pad_bottom = r.pad_right = 0;
          }
        }
        instr = r;
        break;
      }
      case 4: {
        tpu::WriteHost r;
        r.ub_addr = pick(24, 64);
        r.rows = pick(24, 8);
        r.host_addr = pick(32, 4096) & ~(rng() % 4 ? 15u : 0u);
        instr = r;
        break;
      }
      case 5:
        instr = tpu::Nop{};
        break;
      case 6:
        instr = tpu::Sync{};
        break;
      default:
        instr = tpu::Halt{};
        break;
    }
    m.eval(to_word(tpu::encode(instr)));
    const std::string what = tpu::disassemble(instr);
    std::string why;
    const tpu::ErrorCode want_err = tpu::check(instr, params, &why);
    EXPECT_EQ(m->dec_err_o, unsigned(want_err)) << what << " (isa.h: " << why << ")";
    legal += want_err == tpu::ErrorCode::ERR_NONE;
    // Unit codes: 0 read_host, 1 read_weights, 2 matmul, 3 activate, 4 write_host, 5 control.
    if (auto* rh = std::get_if<tpu::ReadHost>(&instr)) {
      EXPECT_EQ(m->dec_unit_o, 0u) << what;
      EXPECT_EQ(m->dmain_dest_o, unsigned(rh->dest)) << what;
      EXPECT_EQ(m->dmain_local_addr_o, rh->local_addr) << what;
      EXPECT_EQ(m->dmain_rows_o, rh->rows) << what;
      EXPECT_EQ(m->dmain_addr_o, rh->host_addr) << what;
    } else if (auto* rw = std::get_if<tpu::ReadWeights>(&instr)) {
      EXPECT_EQ(m->dec_unit_o, 1u) << what;
      EXPECT_EQ(m->wdma_tiles_o, rw->tiles) << what;
      EXPECT_EQ(m->wdma_addr_o, rw->host_addr) << what;
      EXPECT_EQ(m->wdma_rows_o, (rw->tiles * params.N) & 0xFFFFFFu) << what;
    } else if (auto* mm = std::get_if<tpu::Matmul>(&instr)) {
      EXPECT_EQ(m->dec_unit_o, 2u) << what;
      EXPECT_EQ(m->mm_acc_o, unsigned(mm->accumulate)) << what;
      EXPECT_EQ(m->mm_a_unsigned_o, unsigned(mm->a_unsigned)) << what;
      EXPECT_EQ(m->mm_w_unsigned_o, unsigned(mm->w_unsigned)) << what;
      EXPECT_EQ(m->mm_switch_o, unsigned(mm->switch_weights)) << what;
      EXPECT_EQ(m->mm_ub_addr_o, mm->ub_addr) << what;
      EXPECT_EQ(m->mm_acc_addr_o, mm->acc_addr) << what;
      EXPECT_EQ(m->mm_inner_o, mm->inner) << what;
      EXPECT_EQ(m->mm_outer_o, mm->outer) << what;
      EXPECT_EQ(m->mm_inner_stride_o, mm->inner_stride) << what;
      EXPECT_EQ(m->mm_outer_stride_o, mm->outer_stride) << what;
    } else if (auto* ac = std::get_if<tpu::Activate>(&instr)) {
      EXPECT_EQ(m->dec_unit_o, 3u) << what;
      EXPECT_EQ(m->act_func_o, unsigned(ac->func)) << what;
      EXPECT_EQ(m->act_out_unsigned_o, unsigned(ac->out_unsigned)) << what;
      EXPECT_EQ(m->act_raw_o, unsigned(ac->raw)) << what;
      EXPECT_EQ(m->act_acc_addr_o, ac->acc_addr) << what;
      EXPECT_EQ(m->act_ub_addr_o, ac->ub_addr) << what;
      EXPECT_EQ(m->act_width_o, ac->width) << what;
      EXPECT_EQ(m->act_height_o, ac->height) << what;
      EXPECT_EQ(m->act_pool_k_o, ac->pool_k) << what;
      EXPECT_EQ(m->act_pool_s_o, ac->pool_s) << what;
      EXPECT_EQ(m->act_ub_stride_o, ac->ub_stride) << what;
      EXPECT_EQ(m->act_slot_o, ac->slot) << what;
      EXPECT_EQ(m->act_pad_top_o, ac->pad_top) << what;
      EXPECT_EQ(m->act_pad_left_o, ac->pad_left) << what;
      EXPECT_EQ(m->act_pad_bottom_o, ac->pad_bottom) << what;
      EXPECT_EQ(m->act_pad_right_o, ac->pad_right) << what;
    } else if (auto* wh = std::get_if<tpu::WriteHost>(&instr)) {
      EXPECT_EQ(m->dec_unit_o, 4u) << what;
      EXPECT_EQ(m->dmaout_ub_addr_o, wh->ub_addr) << what;
      EXPECT_EQ(m->dmaout_rows_o, wh->rows) << what;
      EXPECT_EQ(m->dmaout_host_addr_o, wh->host_addr) << what;
    } else {
      EXPECT_EQ(m->dec_unit_o, 5u) << what;
      EXPECT_EQ(m->dec_is_sync_o, unsigned(std::holds_alternative<tpu::Sync>(instr))) << what;
      EXPECT_EQ(m->dec_is_halt_o, unsigned(std::holds_alternative<tpu::Halt>(instr))) << what;
    }
    if (HasFailure()) break;  // one instruction's report is enough
  }
  EXPECT_GT(legal, 5000u) << "too few legal instructions to test the decoder's commands";
}

// ---------------- the training chip's decoder (issue 30) ----------------

const std::vector<Opcode>& training_opcodes() {
  static const std::vector<Opcode> ops = {
      Opcode::ReadVmem,  Opcode::WriteVmem, Opcode::LoadWeights, Opcode::MatmulBf16,
      Opcode::AccToVmem, Opcode::Transpose, Opcode::Vector};
  return ops;
}

// The training decoder of tests/rtl/tpu_instr_layout.sv is built with VmemRows = 8192; isa.h's
// checks are for the training chip's parameters at that VMEM size.
tpu::ChipParams training_decoder_params() {
  tpu::ChipParams p = tpu::ChipParams::training(16);
  p.vmem_rows = 8192;
  return p;
}

// What isa.h says the training chip's decoder must report for `bytes`: decode()'s opcode and
// reserved-bit faults, then check()'s static checks.
tpu::ErrorCode isa_error(const InstrBytes& bytes, const tpu::ChipParams& params, std::string* why) {
  const tpu::DecodeResult d = tpu::decode(bytes, params);
  if (!d.ok()) {
    *why = d.why;
    return d.error;
  }
  return tpu::check(d.instr, params, why);
}

TEST(InstrLayout, TrainingDecoderFaultsEveryReservedBit) {
  Layout m;
  const tpu::ChipParams params = training_decoder_params();
  tpu::LoadWeights lw;
  lw.rows = 16;
  const std::vector<tpu::Instruction> legal = {
      tpu::ReadVmem{},  tpu::WriteVmem{}, lw,           tpu::MatmulBf16{},
      tpu::AccToVmem{}, tpu::Transpose{}, tpu::Vector{}};
  for (const tpu::Instruction& instr : legal) {
    const InstrBytes bytes = tpu::encode(instr);
    const Opcode op = Opcode(bytes[0]);
    ASSERT_EQ(tpu::check(instr, params), tpu::ErrorCode::ERR_NONE) << tpu::disassemble(instr);
    m.eval(to_word(bytes));
    ASSERT_EQ(m->t_err_o, 0u) << tpu::disassemble(instr);
    unsigned reserved = 0;
    for (unsigned bit = 8; bit < 128; ++bit) {
      if (isa_defined(op, bit)) continue;
      ++reserved;
      Word w = to_word(bytes);
      w[bit / 32] |= uint32_t{1} << (bit % 32);
      m.eval(w);
      EXPECT_EQ(m->t_err_o, unsigned(tpu::ErrorCode::ERR_RESERVED))
          << tpu::disassemble(instr) << " with reserved bit " << bit << " set";
    }
    // The int8 chip's decoder knows no training opcode, reserved bits or not.
    m.eval(to_word(bytes));
    EXPECT_EQ(m->dec_err_o, unsigned(tpu::ErrorCode::ERR_OPCODE)) << tpu::disassemble(instr);
    if (op == Opcode::Vector) {
      EXPECT_EQ(reserved, 0u);
    }
  }
}

// Every opcode byte: the training chip's decoder knows exactly the opcodes this test has
// formats for (0x00 - 0x0E); any other faults ERR_OPCODE, as isa.h's decode() says for a chip
// without inter-chip links. (An opcode the RTL learns fails here until its format is added.)
TEST(InstrLayout, TrainingDecoderKnowsExactlyTheTestedOpcodes) {
  Layout m;
  const tpu::ChipParams params = training_decoder_params();
  std::set<unsigned> tested;
  for (const Format& f : formats(*m)) tested.insert(unsigned(f.op));
  for (Opcode op : {Opcode::WriteHost, Opcode::Sync, Opcode::Halt, Opcode::WriteVmem})
    tested.insert(unsigned(op));
  for (unsigned op = 0; op < 256; ++op) {
    InstrBytes bytes{};
    bytes[0] = uint8_t(op);
    m.eval(to_word(bytes));
    const bool opcode_fault = m->t_err_o == unsigned(tpu::ErrorCode::ERR_OPCODE);
    EXPECT_EQ(opcode_fault, tested.count(op) == 0) << "opcode " << op;
    std::string why;
    EXPECT_EQ(opcode_fault, isa_error(bytes, params, &why) == tpu::ErrorCode::ERR_OPCODE)
        << "opcode " << op << " (isa.h: " << why << ")";
  }
}

// A random value for a field: one time in six any value of its width, else a small one (so
// that legal instructions are frequent), VMEM and ACC rows often just below the top, host addresses
// mostly 16-byte aligned.
uint64_t random_field(std::mt19937_64& rng, const tpu::FieldInfo& f) {
  const uint64_t any = rng() & f.bits.max();
  if (f.bits.width <= 2 || rng() % 6 == 0) return any;
  const std::string name(f.name);
  uint64_t v = rng() % 24;
  if (name.find("addr") != std::string::npos || name == "src" || name == "dst" || name == "a" ||
      name == "b") {
    v = rng() % 600;
    // Near the top of VMEM (8192 rows) or the ACC (2048 rows): the range checks' boundaries.
    if (rng() % 4 == 0) v = (name == "acc_addr" ? 2048u : 8192u) - 1 - rng() % 24;
  }
  if (name == "host_addr" || name == "host_stride")
    v = (rng() % 4096) & ~uint64_t{rng() % 4 ? 15u : 0u};
  if (name == "func" && rng() % 2) v = 0x20 + rng() % 0x19;  // conversions, reductions, align
  return v & f.bits.max();
}

// The decoded command's value of isa.h field `name` of opcode `op` (training chip's decoder).
uint32_t command_field(Vtpu_instr_layout& m, Opcode op, const std::string& name) {
  struct Map {
    Opcode op;
    const char* field;
    uint32_t (*out)(Vtpu_instr_layout&);
  };
  using V = Vtpu_instr_layout;
  static const Map kMap[] = {
      {Opcode::ReadVmem, "bf16", [](V& v) { return uint32_t(v.t_dmain_bf16_o); }},
      {Opcode::ReadVmem, "vmem_addr", [](V& v) { return uint32_t(v.t_dmain_local_addr_o); }},
      {Opcode::ReadVmem, "rows", [](V& v) { return uint32_t(v.t_dmain_rows_o); }},
      {Opcode::ReadVmem, "host_addr", [](V& v) { return uint32_t(v.t_dmain_addr_o); }},
      {Opcode::ReadVmem, "host_stride", [](V& v) { return uint32_t(v.t_dmain_stride_o); }},
      {Opcode::WriteVmem, "bf16", [](V& v) { return uint32_t(v.t_dmaout_bf16_o); }},
      {Opcode::WriteVmem, "vmem_addr", [](V& v) { return uint32_t(v.t_dmaout_ub_addr_o); }},
      {Opcode::WriteVmem, "rows", [](V& v) { return uint32_t(v.t_dmaout_rows_o); }},
      {Opcode::WriteVmem, "host_addr", [](V& v) { return uint32_t(v.t_dmaout_host_addr_o); }},
      {Opcode::WriteVmem, "host_stride", [](V& v) { return uint32_t(v.t_dmaout_stride_o); }},
      {Opcode::LoadWeights, "transpose", [](V& v) { return uint32_t(v.t_lw_transpose_o); }},
      {Opcode::LoadWeights, "vmem_addr", [](V& v) { return uint32_t(v.t_lw_vmem_addr_o); }},
      {Opcode::LoadWeights, "row_stride", [](V& v) { return uint32_t(v.t_lw_row_stride_o); }},
      {Opcode::LoadWeights, "tiles", [](V& v) { return uint32_t(v.t_lw_tiles_o); }},
      {Opcode::LoadWeights, "tile_stride", [](V& v) { return uint32_t(v.t_lw_tile_stride_o); }},
      {Opcode::LoadWeights, "rows", [](V& v) { return uint32_t(v.t_lw_rows_o); }},
      {Opcode::MatmulBf16, "acc", [](V& v) { return uint32_t(v.t_mm_acc_o); }},
      {Opcode::MatmulBf16, "switch", [](V& v) { return uint32_t(v.t_mm_switch_o); }},
      {Opcode::MatmulBf16, "vmem_addr", [](V& v) { return uint32_t(v.t_mm_ub_addr_o); }},
      {Opcode::MatmulBf16, "acc_addr", [](V& v) { return uint32_t(v.t_mm_acc_addr_o); }},
      {Opcode::MatmulBf16, "inner", [](V& v) { return uint32_t(v.t_mm_inner_o); }},
      {Opcode::MatmulBf16, "outer", [](V& v) { return uint32_t(v.t_mm_outer_o); }},
      {Opcode::MatmulBf16, "inner_stride", [](V& v) { return uint32_t(v.t_mm_inner_stride_o); }},
      {Opcode::MatmulBf16, "outer_stride", [](V& v) { return uint32_t(v.t_mm_outer_stride_o); }},
      {Opcode::AccToVmem, "acc_addr", [](V& v) { return uint32_t(v.t_move_src_o); }},
      {Opcode::AccToVmem, "vmem_addr", [](V& v) { return uint32_t(v.t_move_dst_o); }},
      {Opcode::AccToVmem, "rows", [](V& v) { return uint32_t(v.t_move_count_o); }},
      {Opcode::Transpose, "src", [](V& v) { return uint32_t(v.t_move_src_o); }},
      {Opcode::Transpose, "dst", [](V& v) { return uint32_t(v.t_move_dst_o); }},
      {Opcode::Transpose, "blocks", [](V& v) { return uint32_t(v.t_move_count_o); }},
      {Opcode::Transpose, "src_stride", [](V& v) { return uint32_t(v.t_move_src_stride_o); }},
      {Opcode::Transpose, "dst_stride", [](V& v) { return uint32_t(v.t_move_dst_stride_o); }},
      {Opcode::Transpose, "src_row_stride",
       [](V& v) { return uint32_t(v.t_move_src_row_stride_o); }},
  };
  for (const Map& e : kMap) {
    if (e.op == op && name == e.field) return e.out(m);
  }
  ADD_FAILURE() << "no decoder output for field " << name << " of opcode " << int(op);
  return 0;
}

// Random training instructions (every field random, of any legality): the unit, the static
// check (isa.h's decode() and check() for ChipParams::training(16)) and every field of the
// unit command. The vector unit's command is bits 127:8 of the word (tpu_vpu_pkg::vpu_cmd_t).
TEST(InstrLayout, TrainingDecoderCommandsAndChecksMatchIsaH) {
  Layout m;
  std::mt19937_64 rng(30);
  const tpu::ChipParams params = training_decoder_params();
  // Unit codes (tpu_pkg::unit_e): 0 read_host / read_vmem, 2 matmul, 4 write_host / write_vmem,
  // 6 the move unit, 7 the vector unit, 8 load_weights.
  auto unit_of = [](Opcode op) -> unsigned {
    switch (op) {
      case Opcode::ReadVmem:
        return 0;
      case Opcode::WriteVmem:
        return 4;
      case Opcode::MatmulBf16:
        return 2;
      case Opcode::AccToVmem:
      case Opcode::Transpose:
        return 6;
      case Opcode::Vector:
        return 7;
      default:
        return 8;  // load_weights
    }
  };
  std::map<unsigned, unsigned> legal, faults;
  std::map<unsigned, std::set<tpu::ErrorCode>> codes;  // per opcode, the codes isa.h gave
  for (int i = 0; i < 42000; ++i) {
    const Opcode op = training_opcodes()[size_t(i) % training_opcodes().size()];
    InstrBytes bytes{};
    bytes[0] = uint8_t(op);
    for (const tpu::FieldInfo& f : tpu::instruction_fields(op))
      tpu::set_field(bytes, f.bits, random_field(rng, f));
    m.eval(to_word(bytes));
    std::string why;
    const tpu::ErrorCode want = isa_error(bytes, params, &why);
    const std::string what = tpu::disassemble(tpu::decode(bytes).instr);
    EXPECT_EQ(m->t_err_o, unsigned(want)) << what << " (isa.h: " << why << ")";
    (want == tpu::ErrorCode::ERR_NONE ? legal : faults)[unsigned(op)]++;
    codes[unsigned(op)].insert(want);
    EXPECT_EQ(m->t_unit_o, unit_of(op)) << what;
    if (op == Opcode::Vector) {
      Word cmd = to_word(bytes);  // bits 127:8, shifted down by 8
      for (unsigned k = 0; k < 4; ++k) cmd[k] = (cmd[k] >> 8) | (k < 3 ? cmd[k + 1] << 24 : 0u);
      EXPECT_EQ(hex(Layout::wide(m->t_vec_cmd_o)), hex(cmd)) << what;
    } else {
      for (const tpu::FieldInfo& f : tpu::instruction_fields(op)) {
        EXPECT_EQ(command_field(*m, op, std::string(f.name)), tpu::get_field(bytes, f.bits))
            << what << ": field " << f.name;
      }
    }
    if (op == Opcode::ReadVmem) {
      EXPECT_EQ(m->t_dmain_vmem_o, 1u) << what;
    }
    if (op == Opcode::WriteVmem) {
      EXPECT_EQ(m->t_dmaout_vmem_o, 1u) << what;
    }
    if (op == Opcode::AccToVmem || op == Opcode::Transpose) {
      EXPECT_EQ(m->t_move_transpose_o, unsigned(op == Opcode::Transpose)) << what;
    }
    if (op == Opcode::MatmulBf16) {
      EXPECT_EQ(m->t_mm_bf16_o, 1u) << what;
      EXPECT_EQ(m->t_mm_a_unsigned_o + m->t_mm_w_unsigned_o, 0u) << what;
    }
    if (HasFailure()) break;  // one instruction's report is enough
  }
  for (Opcode op : training_opcodes()) {
    EXPECT_GT(legal[unsigned(op)], 500u) << "too few legal instructions of opcode " << int(op);
    EXPECT_GT(faults[unsigned(op)], 500u) << "too few faulting instructions of opcode " << int(op);
  }
  // Every static fault isa.md gives each training instruction was compared at least once.
  using E = tpu::ErrorCode;
  const std::map<Opcode, std::set<E>> want = {
      {Opcode::ReadVmem, {E::ERR_FIELD, E::ERR_ALIGN, E::ERR_HOST_RANGE, E::ERR_VMEM_RANGE}},
      {Opcode::WriteVmem, {E::ERR_FIELD, E::ERR_ALIGN, E::ERR_HOST_RANGE, E::ERR_VMEM_RANGE}},
      {Opcode::LoadWeights, {E::ERR_FIELD, E::ERR_VMEM_RANGE}},
      {Opcode::MatmulBf16, {E::ERR_FIELD, E::ERR_ACC_RANGE, E::ERR_VMEM_RANGE}},
      {Opcode::AccToVmem, {E::ERR_FIELD, E::ERR_ACC_RANGE, E::ERR_VMEM_RANGE}},
      {Opcode::Transpose, {E::ERR_FIELD, E::ERR_VMEM_RANGE}},
      {Opcode::Vector, {E::ERR_FIELD, E::ERR_VMEM_RANGE}},
  };
  for (const auto& [op, set] : want) {
    for (E e : set) {
      EXPECT_EQ(codes[unsigned(op)].count(e), 1u)
          << "no random instruction of opcode " << int(op) << " gave " << tpu::error_name(e);
    }
  }
}

// Every VMEM / ACC row field of a set of training instructions (each shape: strides, counts,
// align with and without its shift, every B mode) swept across the top of VMEM (8192 rows) and
// the ACC (2048 rows): the training decoder's code must be isa.h's at every value.
TEST(InstrLayout, TrainingDecoderRangeBoundaries) {
  Layout m;
  const tpu::ChipParams params = training_decoder_params();
  std::vector<tpu::Instruction> shapes;
  tpu::ReadVmem rv;
  rv.rows = 5;
  shapes.push_back(rv);
  tpu::WriteVmem wv;
  wv.rows = 3;
  wv.bf16 = true;
  shapes.push_back(wv);
  tpu::LoadWeights lw;
  lw.rows = 16;
  lw.tiles = 3;
  lw.row_stride = 2;
  lw.tile_stride = 5;
  shapes.push_back(lw);
  tpu::MatmulBf16 mb;
  mb.inner = 3;
  mb.outer = 2;
  mb.inner_stride = 2;
  mb.outer_stride = 7;
  shapes.push_back(mb);
  tpu::AccToVmem av;
  av.rows = 9;
  shapes.push_back(av);
  tpu::Transpose tr;
  tr.blocks = 2;
  tr.src_stride = 20;
  tr.dst_stride = 17;
  tr.src_row_stride = 2;
  shapes.push_back(tr);
  for (uint32_t shift : {0u, 1u, 15u}) {  // align: A + 1 is read when the shift is not 0
    tpu::Vector v;
    v.func = 0x38;
    v.bmode = tpu::BMode::Imm;
    v.b = shift;
    v.inner = 2;
    v.outer = 3;
    v.a_outer_stride = 4;
    shapes.push_back(v);
  }
  for (tpu::BMode mode : {tpu::BMode::RowA, tpu::BMode::RowDst, tpu::BMode::Fixed}) {
    tpu::Vector v;
    v.func = 0x01;  // a binary func
    v.bmode = mode;
    v.inner = 3;
    v.outer = 2;
    v.a_inner_stride = 2;
    v.a_outer_stride = 9;
    v.dst_inner_stride = 1;
    v.dst_outer_stride = 5;
    shapes.push_back(v);
  }
  unsigned checked = 0, faults = 0;
  for (const tpu::Instruction& shape : shapes) {
    const InstrBytes base = tpu::encode(shape);
    const Opcode op = Opcode(base[0]);
    const auto* vec = std::get_if<tpu::Vector>(&shape);
    const bool b_is_row = vec != nullptr && vec->bmode != tpu::BMode::Imm;  // else a shift
    for (const tpu::FieldInfo& f : tpu::instruction_fields(op)) {
      const std::string name(f.name);
      const bool acc = name == "acc_addr";
      const bool row = (name.find("addr") != std::string::npos && name != "host_addr") ||
                       name == "src" || name == "dst" || name == "a" || (name == "b" && b_is_row);
      if (!row) continue;
      const uint64_t top = acc ? 2048 : 8192;
      for (uint64_t v = top - 48; v <= top + 1 && v <= f.bits.max(); ++v) {
        InstrBytes bytes = base;
        tpu::set_field(bytes, f.bits, v);
        m.eval(to_word(bytes));
        std::string why;
        const tpu::ErrorCode want = isa_error(bytes, params, &why);
        EXPECT_EQ(m->t_err_o, unsigned(want))
            << tpu::disassemble(tpu::decode(bytes).instr) << " (isa.h: " << why << ")";
        ++checked;
        faults += want != tpu::ErrorCode::ERR_NONE;
      }
    }
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(faults, 200u);
  EXPECT_GT(checked - faults, 500u);
}

}  // namespace

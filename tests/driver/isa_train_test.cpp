// SPDX-License-Identifier: Apache-2.0
// The training configuration's instructions (docs/isa.md "Training configuration"): bit
// layout transcribed by hand from the isa.md tables (not from isa.h), reserved bits, encode /
// decode / disassemble / assemble round trips, and the static checks with their codes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "assembler.h"
#include "isa.h"

namespace tpu {
namespace {

struct HandField {
  const char* name;
  unsigned lo, width;
};

// The isa.md tables of the training opcodes.
std::vector<HandField> hand_fields(uint8_t op) {
  switch (op) {
    case 0x08:
    case 0x09:
      return {{"bf16", 8, 1},
              {"vmem_addr", 16, 16},
              {"rows", 32, 24},
              {"host_addr", 64, 32},
              {"host_stride", 96, 32}};
    case 0x0A:
      return {{"transpose", 8, 1}, {"vmem_addr", 16, 16},   {"row_stride", 32, 16},
              {"tiles", 48, 16},   {"tile_stride", 64, 16}, {"rows", 80, 9}};
    case 0x0B:
      return {{"acc", 8, 1},           {"switch", 11, 1},       {"vmem_addr", 16, 16},
              {"acc_addr", 32, 16},    {"inner", 48, 12},       {"outer", 60, 12},
              {"inner_stride", 72, 8}, {"outer_stride", 80, 16}};
    case 0x0C:
      return {{"acc_addr", 16, 16}, {"vmem_addr", 32, 16}, {"rows", 48, 24}};
    case 0x0D:
      return {{"src", 16, 16},        {"dst", 32, 16},        {"blocks", 48, 16},
              {"src_stride", 64, 16}, {"dst_stride", 80, 16}, {"src_row_stride", 96, 16}};
    default:  // 0x0E vector
      return {{"func", 8, 6},
              {"bmode", 14, 2},
              {"dst", 16, 16},
              {"a", 32, 16},
              {"inner", 48, 8},
              {"outer", 56, 10},
              {"a_inner_stride", 66, 4},
              {"a_outer_stride", 70, 11},
              {"dst_inner_stride", 81, 4},
              {"dst_outer_stride", 85, 11},
              {"b", 96, 32}};
  }
}

bool hand_defined(uint8_t op, unsigned bit) {
  for (const HandField& f : hand_fields(op)) {
    if (bit >= f.lo && bit < f.lo + f.width) return true;
  }
  return false;
}

TEST(IsaTrain, FieldsMatchTheIsaTables) {
  for (uint8_t op = 0x08; op <= 0x0E; ++op) {
    const auto& fields = instruction_fields(static_cast<Opcode>(op));
    const auto hand = hand_fields(op);
    ASSERT_EQ(fields.size(), hand.size()) << int(op);
    for (size_t i = 0; i < hand.size(); ++i) {
      EXPECT_EQ(fields[i].name, hand[i].name) << int(op);
      EXPECT_EQ(fields[i].bits.lo, hand[i].lo) << hand[i].name;
      EXPECT_EQ(fields[i].bits.width, hand[i].width) << hand[i].name;
    }
  }
}

TEST(IsaTrain, EveryReservedBitFaults) {
  for (uint8_t op = 0x08; op <= 0x0E; ++op) {
    for (unsigned bit = 8; bit < 128; ++bit) {
      InstrBytes w{};
      w[0] = op;
      w[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      const DecodeResult d = decode(w);
      if (hand_defined(op, bit)) {
        EXPECT_TRUE(d.ok()) << int(op) << " bit " << bit << ": " << d.why;
        EXPECT_EQ(encode(d.instr), w);
      } else {
        EXPECT_EQ(d.error, ErrorCode::ERR_RESERVED) << int(op) << " bit " << bit;
      }
    }
  }
}

uint64_t bits(std::mt19937_64& rng, unsigned w) { return rng() & ((uint64_t{1} << w) - 1); }

// A random training instruction with every field anywhere in its encodable range.
Instruction random_training(std::mt19937_64& rng) {
  InstrBytes w{};
  const auto op = static_cast<uint8_t>(0x08 + rng() % 7);
  w[0] = op;
  for (const HandField& f : hand_fields(op)) {
    uint64_t v = bits(rng, f.width);
    if (rng() % 4 == 0) v = 0;
    for (unsigned i = 0; i < f.width; ++i) {
      if ((v >> i) & 1) w[(f.lo + i) / 8] |= static_cast<uint8_t>(1u << ((f.lo + i) % 8));
    }
  }
  const DecodeResult d = decode(w);
  EXPECT_TRUE(d.ok()) << d.why;
  EXPECT_EQ(encode(d.instr), w);
  return d.instr;
}

TEST(IsaTrain, EncodeDecodeDisassembleAssembleRoundTrip) {
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 20000; ++i) {
    const Instruction in = random_training(rng);
    const InstrBytes w = encode(in);
    const DecodeResult d = decode(w);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d.instr == in);
    const std::string text = disassemble(in);
    const std::vector<Instruction> back = assemble(text);
    ASSERT_EQ(back.size(), 1u) << text;
    EXPECT_EQ(encode(back[0]), w) << text;
  }
}

TEST(IsaTrain, DisassemblyLooksLikeTheDocs) {
  ReadVmem rv;
  rv.vmem_addr = 3;
  rv.rows = 64;
  rv.host_addr = 0x8000;
  EXPECT_EQ(disassemble(rv), "read_vmem    vmem=3 rows=64 host=0x8000");
  rv.bf16 = true;
  rv.host_stride = 64;
  EXPECT_EQ(disassemble(rv), "read_vmem    vmem=3 rows=64 host=0x8000 host_stride=64 bf16");
  Vector v;
  v.func = static_cast<uint8_t>(VecFunc::FMul);
  v.bmode = BMode::Imm;
  v.b = 0x3F000000;
  v.inner = 16;
  EXPECT_EQ(disassemble(v),
            "fmul         dst=0 a=0 imm=0x3f000000 inner=16 outer=1 a_inner_stride=1 "
            "a_outer_stride=0 dst_inner_stride=1 dst_outer_stride=0");
  v.func = static_cast<uint8_t>(VecFunc::LSum);
  v.bmode = BMode::RowA;
  v.b = 0;
  EXPECT_EQ(disassemble(v),
            "lsum         dst=0 a=0 inner=16 outer=1 a_inner_stride=1 a_outer_stride=0 "
            "dst_inner_stride=1 dst_outer_stride=0");
  v.func = 0x3F;  // not a function: still disassembles, and the chip faults ERR_FIELD
  EXPECT_EQ(disassemble(v),
            "vector       func=63 dst=0 a=0 b=0 bmode=a inner=16 outer=1 a_inner_stride=1 "
            "a_outer_stride=0 dst_inner_stride=1 dst_outer_stride=0");
}

TEST(IsaTrain, AssemblySyntax) {
  auto one = [](const std::string& text) {
    const std::vector<Instruction> p = assemble(text);
    EXPECT_EQ(p.size(), 1u) << text;
    return p.at(0);
  };
  const auto v = std::get<Vector>(one("fmax dst=1 a=2 imm=-1.5 inner=16"));
  EXPECT_EQ(v.bmode, BMode::Imm);
  EXPECT_EQ(v.b, 0xBFC00000u);
  EXPECT_EQ(v.func, static_cast<uint8_t>(VecFunc::FMax));
  EXPECT_EQ(std::get<Vector>(one("iadd imm=-1")).b, 0xFFFFFFFFu);
  EXPECT_EQ(std::get<Vector>(one("iadd imm=127")).b, 127u);
  EXPECT_EQ(std::get<Vector>(one("fmul imm=-inf")).b, 0xFF800000u);
  EXPECT_EQ(std::get<Vector>(one("fmul imm=1e3")).b, 0x447A0000u);
  EXPECT_EQ(std::get<Vector>(one("fadd b=7 bmode=dst")).bmode, BMode::RowDst);
  EXPECT_EQ(std::get<Vector>(one("fadd b=7 bmode=fixed")).bmode, BMode::Fixed);
  EXPECT_EQ(std::get<Vector>(one("fadd b=7 bmode=imm")).b, 7u);
  EXPECT_EQ(std::get<Vector>(one("vector func=63")).func, 63u);
  const auto lw = std::get<LoadWeights>(one("load_weights vmem=5 rows=16 transpose"));
  EXPECT_TRUE(lw.transpose);
  EXPECT_EQ(lw.row_stride, 1u);
  EXPECT_EQ(lw.tiles, 1u);
  const auto mm = std::get<MatmulBf16>(one("matmul_bf16 vmem=4 acc=9 inner=3 acc switch"));
  EXPECT_TRUE(mm.accumulate && mm.switch_weights);
  EXPECT_EQ(mm.acc_addr, 9u);
  EXPECT_EQ(mm.inner_stride, 1u);
  const auto tr = std::get<Transpose>(one("transpose src=1 dst=2 blocks=3"));
  EXPECT_EQ(tr.src_row_stride, 1u);
  auto error = [](const std::string& text) {
    try {
      assemble(text);
    } catch (const AsmError& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("fadd imm=0.1"),
            "imm=0.1 is not a float that fp32 holds exactly (write its bit pattern as 0x...)");
  EXPECT_EQ(error("fadd imm=1 bmode=a"), "'bmode=a' contradicts 'imm=1' (imm= means bmode=imm)");
  EXPECT_EQ(error("fadd imm=1 b=2"),
            "'b=2' sets the same field as 'imm=1' at column 6 (each field at most once)");
  EXPECT_EQ(error("fadd imm=0x100000000"),
            "imm=0x100000000 is not a 32-bit immediate (expected 0x..., a decimal int32 or "
            "uint32, or an exact decimal float)");
  EXPECT_EQ(error("fadd bmode=x"),
            "bmode=x is not an operand-B mode (expected a, dst, fixed, imm or 0..3)");
  EXPECT_EQ(error("fadd inner=256"),
            "value 256 for 'inner' of fadd does not fit in 8 bits (expected 0..255)");
}

// ---- static checks

struct Case {
  Instruction in;
  ErrorCode code;
};

ChipParams small() {
  ChipParams p = ChipParams::training(16);
  p.vmem_rows = 100;
  p.acc_rows = 50;
  return p;
}

Vector vec(VecFunc f, uint16_t dst, uint16_t a, uint32_t b, BMode m = BMode::RowA) {
  Vector v;
  v.func = static_cast<uint8_t>(f);
  v.dst = dst;
  v.a = a;
  v.b = b;
  v.bmode = m;
  return v;
}

std::vector<Case> check_cases() {
  std::vector<Case> c;
  const auto E = ErrorCode::ERR_NONE;
  ReadVmem rv;
  rv.vmem_addr = 99;
  c.push_back({rv, E});
  rv.rows = 2;
  c.push_back({rv, ErrorCode::ERR_VMEM_RANGE});
  rv.rows = 0;
  c.push_back({rv, ErrorCode::ERR_FIELD});
  rv = ReadVmem{};
  rv.host_addr = 8;
  c.push_back({rv, ErrorCode::ERR_ALIGN});
  rv.host_addr = 0;
  rv.host_stride = 24;
  c.push_back({rv, ErrorCode::ERR_ALIGN});
  rv.host_stride = 0;
  rv.host_addr = 0xFFFFFFF0u;  // 64 bytes do not fit below 2^32
  c.push_back({rv, ErrorCode::ERR_HOST_RANGE});
  rv.bf16 = true;  // 32 bytes do not either
  c.push_back({rv, ErrorCode::ERR_HOST_RANGE});
  rv.host_addr = 0xFFFFFF00u;
  rv.vmem_addr = 100;  // the host range fits: ERR_VMEM_RANGE
  c.push_back({rv, ErrorCode::ERR_VMEM_RANGE});
  rv.host_addr = 0xFFFFFFF0u;  // 8 < 14: ERR_HOST_RANGE wins
  c.push_back({rv, ErrorCode::ERR_HOST_RANGE});
  WriteVmem wv;
  wv.rows = 101;
  c.push_back({wv, ErrorCode::ERR_VMEM_RANGE});
  LoadWeights lw;
  lw.rows = 16;
  c.push_back({lw, E});
  lw.rows = 17;
  c.push_back({lw, ErrorCode::ERR_FIELD});
  lw.rows = 0;
  c.push_back({lw, ErrorCode::ERR_FIELD});
  lw.rows = 16;
  lw.tiles = 0;
  c.push_back({lw, ErrorCode::ERR_FIELD});
  lw.tiles = 3;
  lw.tile_stride = 20;
  lw.row_stride = 4;
  lw.vmem_addr = 0;  // last row 40 + 60 = 100
  c.push_back({lw, ErrorCode::ERR_VMEM_RANGE});
  lw.vmem_addr = 0;
  lw.row_stride = 3;  // 40 + 45 = 85
  c.push_back({lw, E});
  MatmulBf16 mm;
  mm.inner = 0;
  c.push_back({mm, ErrorCode::ERR_FIELD});
  mm.inner = 10;
  mm.outer = 5;
  mm.outer_stride = 20;  // last row 80 + 9 = 89; ACC rows 0..49
  c.push_back({mm, E});
  mm.outer = 6;  // ACC 60 rows: ERR_ACC_RANGE (5) before ERR_VMEM_RANGE (14)
  mm.vmem_addr = 50;
  c.push_back({mm, ErrorCode::ERR_ACC_RANGE});
  mm.outer = 5;
  c.push_back({mm, ErrorCode::ERR_VMEM_RANGE});
  c.push_back({AccToVmem{0, 0, 50}, E});
  c.push_back({AccToVmem{1, 0, 50}, ErrorCode::ERR_ACC_RANGE});
  c.push_back({AccToVmem{0, 52, 49}, ErrorCode::ERR_VMEM_RANGE});
  c.push_back({AccToVmem{0, 0, 0}, ErrorCode::ERR_FIELD});
  c.push_back({Transpose{0, 84, 1, 0, 0, 1}, E});
  c.push_back({Transpose{0, 85, 1, 0, 0, 1}, ErrorCode::ERR_VMEM_RANGE});
  c.push_back({Transpose{0, 0, 0, 0, 0, 1}, ErrorCode::ERR_FIELD});
  c.push_back({Transpose{0, 0, 1, 0, 0, 6}, E});  // last source row 90
  c.push_back({Transpose{0, 0, 1, 0, 0, 7}, ErrorCode::ERR_VMEM_RANGE});
  c.push_back({Transpose{0, 0, 3, 10, 42, 1}, E});  // dst 84 + 15
  c.push_back({Transpose{0, 0, 3, 10, 43, 1}, ErrorCode::ERR_VMEM_RANGE});
  return c;
}

std::vector<Case> vector_cases() {
  std::vector<Case> c;
  const auto E = ErrorCode::ERR_NONE;
  c.push_back({vec(VecFunc::FAdd, 99, 99, 99), E});
  c.push_back({vec(VecFunc::FAdd, 100, 0, 0), ErrorCode::ERR_VMEM_RANGE});
  c.push_back({vec(VecFunc::FAdd, 0, 100, 0), ErrorCode::ERR_VMEM_RANGE});
  c.push_back({vec(VecFunc::FAdd, 0, 0, 100), ErrorCode::ERR_VMEM_RANGE});
  c.push_back({vec(VecFunc::FAdd, 0, 0, 100, BMode::Fixed), ErrorCode::ERR_VMEM_RANGE});
  c.push_back({vec(VecFunc::FAdd, 0, 0, 0xFFFFFFFFu, BMode::Imm), E});
  c.push_back({vec(VecFunc::FAdd, 0, 0, 0x10000u, BMode::RowDst), ErrorCode::ERR_VMEM_RANGE});
  Vector v = vec(VecFunc::FAdd, 0, 0, 0);
  v.func = 0x3F;
  c.push_back({v, ErrorCode::ERR_FIELD});
  v.func = 0x09;
  c.push_back({v, ErrorCode::ERR_FIELD});
  v = vec(VecFunc::FAdd, 0, 0, 0);
  v.inner = 0;
  c.push_back({v, ErrorCode::ERR_FIELD});
  c.push_back({vec(VecFunc::LSum, 0, 0, 1), ErrorCode::ERR_FIELD});
  c.push_back({vec(VecFunc::F2I, 0, 0, 0, BMode::Imm), ErrorCode::ERR_FIELD});
  c.push_back({vec(VecFunc::I2F, 0, 0, 0), E});
  c.push_back({vec(VecFunc::Align, 0, 0, 15, BMode::Imm), E});
  c.push_back({vec(VecFunc::Align, 0, 0, 16, BMode::Imm), ErrorCode::ERR_FIELD});
  c.push_back({vec(VecFunc::Align, 0, 0, 1), ErrorCode::ERR_FIELD});
  c.push_back({vec(VecFunc::Align, 0, 98, 1, BMode::Imm), E});  // reads 98 and 99
  c.push_back({vec(VecFunc::Align, 0, 99, 1, BMode::Imm), ErrorCode::ERR_VMEM_RANGE});
  c.push_back({vec(VecFunc::Align, 0, 99, 0, BMode::Imm), E});  // s = 0 reads one row
  // 2-D patterns: the last rows of dst, A, B.
  v = vec(VecFunc::FMul, 0, 0, 0);
  v.inner = 10;
  v.outer = 10;
  v.a_inner_stride = 1;
  v.a_outer_stride = 10;
  v.dst_outer_stride = 10;
  c.push_back({v, E});
  v.a_inner_stride = 2;  // A: 90 + 18 = 108
  c.push_back({v, ErrorCode::ERR_VMEM_RANGE});
  v.a_inner_stride = 1;
  v.dst_outer_stride = 11;  // dst: 99 + 9 = 108
  c.push_back({v, ErrorCode::ERR_VMEM_RANGE});
  v.dst_outer_stride = 10;
  v.dst_inner_stride = 2;  // dst: 90 + 18 = 108
  c.push_back({v, ErrorCode::ERR_VMEM_RANGE});
  v.dst_inner_stride = 0;  // every inner row writes row dst + 10 o: fine
  c.push_back({v, E});
  v.dst_inner_stride = 1;
  v.bmode = BMode::RowDst;
  v.b = 1;  // B on dst's pattern: 1 + 90 + 9 = 100
  c.push_back({v, ErrorCode::ERR_VMEM_RANGE});
  v.bmode = BMode::RowA;
  c.push_back({v, ErrorCode::ERR_VMEM_RANGE});
  v.b = 0;
  v.func = static_cast<uint8_t>(VecFunc::RSum);  // row reductions use the same bounding rule
  c.push_back({v, E});
  return c;
}

TEST(IsaTrain, StaticChecks) {
  const ChipParams p = small();
  std::vector<Case> cases = check_cases();
  const std::vector<Case> vc = vector_cases();
  cases.insert(cases.end(), vc.begin(), vc.end());
  for (const Case& c : cases) {
    std::string why;
    EXPECT_EQ(check(c.in, p, &why), c.code) << disassemble(c.in) << ": " << why;
    EXPECT_EQ(why.empty(), c.code == ErrorCode::ERR_NONE) << why;
    // Every training instruction is an unknown opcode for the int8 chip.
    EXPECT_EQ(check(c.in, ChipParams::with_n(16)), ErrorCode::ERR_OPCODE) << disassemble(c.in);
  }
}

TEST(IsaTrain, WriteVmemMayNotOverlapTheCommandBuffer) {
  const ChipParams p = small();
  WriteVmem wv;
  wv.host_addr = 0x1000;
  wv.rows = 2;
  wv.host_stride = 0x100;  // bytes 0x1000..0x113f
  const CommandBuffer cmd{0x1130, 4};
  EXPECT_EQ(check(wv, p, DmaWindows{}, cmd), ErrorCode::ERR_HOST_RANGE);
  EXPECT_EQ(check(wv, p, DmaWindows{}, CommandBuffer{0x1140, 4}), ErrorCode::ERR_NONE);
  ReadVmem rv;  // reading the command buffer is allowed
  rv.host_addr = 0x1130;
  EXPECT_EQ(check(rv, p, DmaWindows{}, cmd), ErrorCode::ERR_NONE);
  DmaWindows win{};
  win[0] = DmaWindow{0x1000, 0x100};
  EXPECT_EQ(check(wv, p, win), ErrorCode::ERR_HOST_RANGE);  // outside the window
  wv.host_stride = 0x40;
  EXPECT_EQ(check(wv, p, win), ErrorCode::ERR_NONE);
}

TEST(IsaTrain, ParamsValidateVmemRows) {
  ChipParams p = ChipParams::training(16);
  EXPECT_EQ(p.vmem_rows, ChipParams::kTrainingVmemRows);
  p.vmem_rows = 65536;
  EXPECT_NO_THROW(p.validate());
  p.vmem_rows = 65537;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  EXPECT_FALSE(ChipParams::with_n(16) == ChipParams::training(16));
}

}  // namespace
}  // namespace tpu

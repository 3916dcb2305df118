// SPDX-License-Identifier: Apache-2.0
// Encoding, decoding, disassembly of single instructions and the static checks, against
// docs/isa.md. Expected bit layouts are written out by hand here (not taken from isa.h) so a
// wrong constant in isa.h cannot make its own test pass.
#include "isa.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

namespace tpu {
namespace {

InstrBytes bytes_of(std::initializer_list<int> b) {
  InstrBytes w{};
  size_t i = 0;
  for (int v : b) w[i++] = static_cast<uint8_t>(v);
  return w;
}

// Reserved bit ranges [lo, hi] per opcode, transcribed from the isa.md tables.
std::vector<std::pair<unsigned, unsigned>> reserved_ranges(uint8_t opcode) {
  switch (opcode) {
    case 0x01:
      return {{10, 15}, {96, 127}};  // read_host
    case 0x02:
      return {{8, 15}, {16, 39}, {96, 127}};  // read_weights
    case 0x03:
      return {{12, 15}, {112, 127}};  // matmul
    case 0x04:
      return {{12, 15}};  // activate
    case 0x05:
      return {{8, 9}, {10, 15}, {96, 127}};  // write_host: dest is reserved
    default:
      return {{8, 127}};  // nop, sync, halt
  }
}

bool is_reserved_bit(uint8_t opcode, unsigned bit) {
  for (auto [lo, hi] : reserved_ranges(opcode)) {
    if (bit >= lo && bit <= hi) return true;
  }
  return false;
}

bool any_reserved_bit_set(const InstrBytes& w) {
  for (unsigned bit = 8; bit < 128; ++bit) {
    if (((w[bit / 8] >> (bit % 8)) & 1) && is_reserved_bit(w[0], bit)) return true;
  }
  return false;
}

// A random instruction with every field anywhere in its encodable range.
Instruction random_instruction(std::mt19937_64& rng) {
  auto bits = [&](unsigned width) { return rng() & ((uint64_t{1} << width) - 1); };
  auto flag = [&] { return (rng() & 1) != 0; };
  switch (rng() % 8) {
    case 0:
      return Nop{};
    case 1: {
      ReadHost in;
      in.dest = static_cast<HostDest>(bits(2));
      in.local_addr = static_cast<uint32_t>(bits(24));
      in.rows = static_cast<uint32_t>(bits(24));
      in.host_addr = static_cast<uint32_t>(bits(32));
      return in;
    }
    case 2: {
      ReadWeights in;
      in.tiles = static_cast<uint32_t>(bits(24));
      in.host_addr = static_cast<uint32_t>(bits(32));
      return in;
    }
    case 3: {
      Matmul in;
      in.accumulate = flag();
      in.a_unsigned = flag();
      in.w_unsigned = flag();
      in.switch_weights = flag();
      in.ub_addr = static_cast<uint32_t>(bits(24));
      in.acc_addr = static_cast<uint16_t>(bits(16));
      in.inner = static_cast<uint16_t>(bits(12));
      in.outer = static_cast<uint16_t>(bits(12));
      in.inner_stride = static_cast<uint8_t>(bits(8));
      in.outer_stride = static_cast<uint32_t>(bits(24));
      return in;
    }
    case 4: {
      Activate in;
      in.func = static_cast<ActFunc>(bits(2));
      in.out_unsigned = flag();
      in.raw = flag();
      in.acc_addr = static_cast<uint16_t>(bits(16));
      in.ub_addr = static_cast<uint32_t>(bits(24));
      in.width = static_cast<uint16_t>(bits(12));
      in.height = static_cast<uint16_t>(bits(12));
      in.pool_k = static_cast<uint8_t>(bits(4));
      in.pool_s = static_cast<uint8_t>(bits(4));
      in.ub_stride = static_cast<uint32_t>(bits(24));
      in.slot = static_cast<uint8_t>(bits(4));
      return in;
    }
    case 5: {
      WriteHost in;
      in.ub_addr = static_cast<uint32_t>(bits(24));
      in.rows = static_cast<uint32_t>(bits(24));
      in.host_addr = static_cast<uint32_t>(bits(32));
      return in;
    }
    case 6:
      return Sync{};
    default:
      return Halt{};
  }
}

TEST(Isa, MnemonicsAndOpcodes) {
  EXPECT_EQ(mnemonic(Opcode::Nop), "nop");
  EXPECT_EQ(mnemonic(Opcode::ReadHost), "read_host");
  EXPECT_EQ(mnemonic(Opcode::ReadWeights), "read_weights");
  EXPECT_EQ(mnemonic(Opcode::Matmul), "matmul");
  EXPECT_EQ(mnemonic(Opcode::Activate), "activate");
  EXPECT_EQ(mnemonic(Opcode::WriteHost), "write_host");
  EXPECT_EQ(mnemonic(Opcode::Sync), "sync");
  EXPECT_EQ(mnemonic(Opcode::Halt), "halt");
  EXPECT_EQ(mnemonic(Opcode::ReadVmem), "read_vmem");
  EXPECT_EQ(mnemonic(Opcode::WriteVmem), "write_vmem");
  EXPECT_EQ(mnemonic(Opcode::LoadWeights), "load_weights");
  EXPECT_EQ(mnemonic(Opcode::MatmulBf16), "matmul_bf16");
  EXPECT_EQ(mnemonic(Opcode::AccToVmem), "acc_to_vmem");
  EXPECT_EQ(mnemonic(Opcode::Transpose), "transpose");
  EXPECT_EQ(mnemonic(Opcode::Vector), "vector");
  EXPECT_EQ(mnemonic(Opcode::IciSend), "ici_send");
  EXPECT_EQ(mnemonic(Opcode::IciRecv), "ici_recv");
  EXPECT_EQ(mnemonic(Opcode::DwConv), "dwconv");
  EXPECT_EQ(mnemonic(static_cast<Opcode>(0x12)), "?");
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(is_valid_opcode(static_cast<uint8_t>(v)), v <= 17);
    EXPECT_EQ(is_training_opcode(static_cast<uint8_t>(v)), v >= 8 && v <= 14);
    EXPECT_EQ(is_ici_opcode(static_cast<uint8_t>(v)), v == 15 || v == 16);
  }
  EXPECT_EQ(opcode_byte(Vector{}), 0x0E);
  EXPECT_EQ(opcode_byte(ReadVmem{}), 0x08);
  EXPECT_EQ(opcode_byte(Matmul{}), 0x03);
  EXPECT_EQ(opcode_byte(Halt{}), 0x07);
  EXPECT_EQ(opcode_byte(RawInstruction{bytes_of({0xAB})}), 0xAB);
}

TEST(Isa, ErrorCodeNamesMatchTheTable) {
  const char* names[] = {
      "ERR_NONE",       "ERR_OPCODE",          "ERR_RESERVED",    "ERR_FIELD",
      "ERR_UB_RANGE",   "ERR_ACC_RANGE",       "ERR_PARAM_RANGE", "ERR_ALIGN",
      "ERR_HOST_RANGE", "ERR_AXI_READ",        "ERR_AXI_WRITE",   "ERR_CMD_OVERRUN",
      "ERR_NO_WEIGHTS", "ERR_WEIGHT_OVERFLOW", "ERR_VMEM_RANGE",  "ERR_WEIGHT_TYPE",
      "ERR_ICI_LINK",   "ERR_ICI_SIZE",        "ERR_ICI_DEADLOCK"};
  for (int code = 0; code < kNumErrorCodes; ++code) {
    auto e = static_cast<ErrorCode>(code);
    EXPECT_EQ(error_name(e), names[code]);
    EXPECT_FALSE(error_description(e).empty());
    EXPECT_EQ(is_static_error(e), (code >= 1 && code <= 8) || code == 14 || code == 16)
        << names[code];
  }
  EXPECT_EQ(static_cast<int>(ErrorCode::ERR_WEIGHT_OVERFLOW), 13);
  EXPECT_EQ(static_cast<int>(ErrorCode::ERR_VMEM_RANGE), 14);
  EXPECT_EQ(static_cast<int>(ErrorCode::ERR_WEIGHT_TYPE), 15);
  EXPECT_EQ(static_cast<int>(ErrorCode::ERR_ICI_LINK), 16);
  EXPECT_EQ(static_cast<int>(ErrorCode::ERR_ICI_SIZE), 17);
  EXPECT_EQ(static_cast<int>(ErrorCode::ERR_ICI_DEADLOCK), 18);
  EXPECT_EQ(error_name(static_cast<ErrorCode>(19)), "ERR_UNKNOWN");
  EXPECT_EQ(error_description(ErrorCode::ERR_UB_RANGE), "UB row out of range");
}

TEST(Isa, ChipParamsDefaults) {
  ChipParams p;
  EXPECT_EQ(p.N, 16u);
  EXPECT_EQ(p.ub_rows, 8192u);
  EXPECT_EQ(p.acc_rows, 2048u);
  EXPECT_EQ(p.wfifo_tiles, 4u);
  EXPECT_EQ(p.qp_slots, 16u);
  EXPECT_EQ(p.axi_width, 128u);
  EXPECT_EQ(p.param_rows(), 192u);
  EXPECT_EQ(p.lut_rows(), 16u);
  EXPECT_NO_THROW(p.validate());
  EXPECT_TRUE(ChipParams::with_n(16) == p);
  EXPECT_EQ(ChipParams::with_n(4).axi_width, 32u);
  EXPECT_EQ(ChipParams::with_n(8).axi_width, 64u);
  EXPECT_EQ(ChipParams::with_n(256).axi_width, 128u);
  EXPECT_EQ(ChipParams::with_n(256).lut_rows(), 1u);
}

TEST(Isa, ChipParamsValidateRejectsBadValues) {
  auto rejects = [](ChipParams p, const char* what) {
    try {
      p.validate();
      ADD_FAILURE() << "accepted " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  rejects(ChipParams::with_n(12), "N = 12");
  rejects(ChipParams::with_n(2), "N = 2");
  rejects(ChipParams::with_n(512), "N = 512");
  ChipParams p;
  p.axi_width = 256;
  rejects(p, "axi_width = 256");
  p = ChipParams::with_n(4);
  p.axi_width = 64;  // does not divide 8N = 32
  rejects(p, "axi_width = 64");
  p = ChipParams{};
  p.qp_slots = 17;
  rejects(p, "qp_slots = 17");
  p = ChipParams{};
  p.acc_rows = 70000;
  rejects(p, "acc_rows = 70000");
  p = ChipParams{};
  p.ub_rows = 0;
  rejects(p, "ub_rows = 0");
}

TEST(Isa, EncodeMatmulBitLayout) {
  Matmul m;
  m.accumulate = m.a_unsigned = m.w_unsigned = m.switch_weights = true;
  m.ub_addr = 0x123456;
  m.acc_addr = 0xABCD;
  m.inner = 0x321;
  m.outer = 0x654;
  m.inner_stride = 0x78;
  m.outer_stride = 0x9ABCDE;
  EXPECT_EQ(encode(m), bytes_of({0x03, 0x0F, 0x56, 0x34, 0x12, 0xCD, 0xAB, 0x21, 0x43, 0x65, 0x78,
                                 0xDE, 0xBC, 0x9A, 0x00, 0x00}));
  Matmul only_switch;
  only_switch.switch_weights = true;
  only_switch.inner = only_switch.outer = 1;
  only_switch.inner_stride = 0;
  EXPECT_EQ(encode(only_switch),
            bytes_of({0x03, 0x08, 0, 0, 0, 0, 0, 0x01, 0x10, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(Isa, EncodeActivateBitLayout) {
  Activate a;
  a.func = ActFunc::Clamp;
  a.out_unsigned = true;
  a.acc_addr = 0x1234;
  a.ub_addr = 0xABCDEF;
  a.width = 0x123;
  a.height = 0x456;
  a.pool_k = 3;
  a.pool_s = 2;
  a.ub_stride = 0x010203;
  a.slot = 0xA;
  EXPECT_EQ(encode(a), bytes_of({0x04, 0x06, 0x34, 0x12, 0xEF, 0xCD, 0xAB, 0x23, 0x61, 0x45, 0x23,
                                 0x03, 0x02, 0x01, 0x0A, 0x00}));
}

TEST(Isa, EncodeActivateRawIsBit11) {
  Activate a;
  a.raw = true;
  InstrBytes want{};
  want[0] = 0x04;
  want[1] = 0x08;   // bit 11
  want[10] = 0x11;  // pool_k = 1 (bits 83:80), pool_s = 1 (bits 87:84)
  EXPECT_EQ(encode(a), want);
  EXPECT_EQ(std::get<Activate>(decode(want).instr), a);
  a.width = 3;
  a.height = 2;
  a.ub_stride = 20;
  EXPECT_EQ(disassemble(a),
            "activate     acc=0 ub=0 width=3 height=2 pool_k=1 pool_s=1 ub_stride=20 slot=0 "
            "func=identity raw");
  EXPECT_EQ(a.last_ub_row(), 20u + 4 * 3 - 1);  // (H-1)*ub_stride + 4*W - 1
}

TEST(Isa, EncodeHostTransfersBitLayout) {
  ReadHost r;
  r.dest = HostDest::Param;
  r.local_addr = 0x000102;
  r.rows = 12;
  r.host_addr = 0x12345670;
  EXPECT_EQ(encode(r), bytes_of({0x01, 0x01, 0x02, 0x01, 0x00, 0x0C, 0x00, 0x00, 0x70, 0x56, 0x34,
                                 0x12, 0, 0, 0, 0}));
  WriteHost w;
  w.ub_addr = 0xFFFFFF;
  w.rows = 0x800001;
  w.host_addr = 0xFFFFFFF0;
  EXPECT_EQ(encode(w), bytes_of({0x05, 0x00, 0xFF, 0xFF, 0xFF, 0x01, 0x00, 0x80, 0xF0, 0xFF, 0xFF,
                                 0xFF, 0, 0, 0, 0}));
  ReadWeights rw;
  rw.tiles = 0x030201;
  rw.host_addr = 0x00003000;
  EXPECT_EQ(encode(rw),
            bytes_of({0x02, 0, 0, 0, 0, 0x01, 0x02, 0x03, 0x00, 0x30, 0x00, 0x00, 0, 0, 0, 0}));
  EXPECT_EQ(encode(Halt{}), bytes_of({0x07}));
  EXPECT_EQ(encode(Sync{}), bytes_of({0x06}));
  EXPECT_EQ(encode(Nop{}), bytes_of({0x00}));
}

TEST(Isa, EncodeRejectsValuesWiderThanTheirField) {
  auto rejects = [](const Instruction& in, const char* what) {
    try {
      encode(in);
      ADD_FAILURE() << "encoded " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  Matmul m;
  m.inner = 4096;
  rejects(m, "matmul.inner = 4096 does not fit in 12 bits (max 4095)");
  m = Matmul{};
  m.ub_addr = 1u << 24;
  rejects(m, "matmul.ub_addr");
  Activate a;
  a.pool_k = 16;
  rejects(a, "activate.pool_k");
  a = Activate{};
  a.slot = 16;
  rejects(a, "activate.slot");
  ReadHost r;
  r.dest = static_cast<HostDest>(4);
  rejects(r, "read_host.dest");
  WriteHost w;
  w.rows = 1u << 24;
  rejects(w, "write_host.rows");
}

TEST(Isa, RandomValidInstructionsRoundTrip) {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 20000; ++i) {
    Instruction in = random_instruction(rng);
    InstrBytes w = encode(in);
    DecodeResult d = decode(w);
    ASSERT_TRUE(d.ok()) << disassemble(in) << ": " << d.why;
    EXPECT_TRUE(d.instr == in) << disassemble(in) << " decoded as " << disassemble(d.instr);
    EXPECT_EQ(encode(d.instr), w);
    EXPECT_FALSE(any_reserved_bit_set(w)) << disassemble(in);
  }
}

TEST(Isa, EveryReservedBitFaultsAndEveryFieldBitDoesNot) {
  for (uint8_t op = 0; op < 8; ++op) {
    for (unsigned bit = 8; bit < 128; ++bit) {
      InstrBytes w{};
      w[0] = op;
      w[bit / 8] = static_cast<uint8_t>(w[bit / 8] | (1u << (bit % 8)));
      DecodeResult d = decode(w);
      if (is_reserved_bit(op, bit)) {
        EXPECT_EQ(d.error, ErrorCode::ERR_RESERVED) << "opcode " << int(op) << " bit " << bit;
        EXPECT_NE(d.why.find("bit " + std::to_string(bit) + " is set"), std::string::npos) << d.why;
      } else {
        EXPECT_TRUE(d.ok()) << "opcode " << int(op) << " bit " << bit << ": " << d.why;
      }
    }
  }
}

TEST(Isa, ReservedMessageNamesTheRange) {
  InstrBytes w = encode(Matmul{});
  w[15] = 0x80;  // bit 127
  DecodeResult d = decode(w);
  EXPECT_EQ(d.error, ErrorCode::ERR_RESERVED);
  EXPECT_EQ(d.why, "matmul: reserved bits 127:112 must be zero, but bit 127 is set");
  EXPECT_TRUE(std::holds_alternative<RawInstruction>(d.instr));
}

TEST(Isa, UnknownOpcodes) {
  for (int op = 18; op < 256; ++op) {
    InstrBytes w{};
    w[0] = static_cast<uint8_t>(op);
    DecodeResult d = decode(w);
    EXPECT_EQ(d.error, ErrorCode::ERR_OPCODE) << op;
    EXPECT_EQ(decode(w, ChipParams::training(16)).error, ErrorCode::ERR_OPCODE) << op;
  }
  InstrBytes w{};
  w[0] = 0x12;
  w[15] = 0xFF;  // reserved-looking bits too: the opcode is checked first
  EXPECT_EQ(decode(w).error, ErrorCode::ERR_OPCODE);
  EXPECT_EQ(decode(w).why, "opcode 0x12 is not an instruction (expected 0x00..0x11)");
}

// On a chip without VMEM (the int8 configuration, ChipParams::with_n) the training opcodes
// are unknown opcodes, exactly as before they existed, whatever the other bits hold.
TEST(Isa, TrainingOpcodesFaultOnTheInt8Chip) {
  const ChipParams int8 = ChipParams::with_n(16);
  EXPECT_EQ(int8.vmem_rows, 0u);
  for (int op = 8; op < 256; ++op) {
    InstrBytes w{};
    w[0] = static_cast<uint8_t>(op);
    for (uint8_t top : {uint8_t{0}, uint8_t{0xFF}}) {
      w[15] = top;
      DecodeResult d = decode(w, int8);
      EXPECT_EQ(d.error, ErrorCode::ERR_OPCODE) << op;
      if (op == 0x0F) {
        EXPECT_EQ(d.why, "opcode 0x0f is not an instruction (expected 0x00..0x07)");
      }
      EXPECT_EQ(check(RawInstruction{w}, int8), ErrorCode::ERR_OPCODE) << op;
    }
  }
  // A decoded training instruction checked for the int8 chip: ERR_OPCODE too.
  EXPECT_EQ(check(Vector{}, int8), ErrorCode::ERR_OPCODE);
  EXPECT_EQ(check(Vector{}, ChipParams::training(16)), ErrorCode::ERR_NONE);
}

TEST(Isa, RandomGarbageDecodesWithoutCrashingAndReportsTheRightError) {
  std::mt19937_64 rng(777);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 200000; ++i) {
    InstrBytes w;
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    // Bias towards valid opcodes and sparse words so that all three outcomes occur.
    if (i % 2 == 0) w[0] &= 7;
    if (i % 4 == 0) {
      for (size_t k = 1; k < w.size(); ++k) w[k] &= static_cast<uint8_t>(rng() & rng() & rng());
    }
    if (i % 8 == 0) {
      for (size_t k = 1; k < w.size(); ++k) {
        for (unsigned b = 0; b < 8; ++b) {
          if (is_reserved_bit(w[0] & 7, static_cast<unsigned>(8 * k + b))) {
            w[k] = static_cast<uint8_t>(w[k] & ~(1u << b));
          }
        }
      }
    }
    DecodeResult d = decode(w, ChipParams{});  // the int8 chip: opcodes above 7 are unknown
    if (w[0] > 7) {
      EXPECT_EQ(d.error, ErrorCode::ERR_OPCODE);
      ++counts[0];
    } else if (any_reserved_bit_set(w)) {
      EXPECT_EQ(d.error, ErrorCode::ERR_RESERVED);
      ++counts[1];
    } else {
      ASSERT_TRUE(d.ok()) << d.why;
      EXPECT_EQ(encode(d.instr), w);
      ++counts[2];
    }
    if (!d.ok()) {
      EXPECT_FALSE(d.why.empty());
      EXPECT_EQ(encode(d.instr), w);  // kept as the raw word
    }
    // Whatever it is, check() must not crash either.
    (void)check(d.instr, ChipParams{});
  }
  EXPECT_GT(counts[0], 1000);
  EXPECT_GT(counts[1], 1000);
  EXPECT_GT(counts[2], 1000);
}

TEST(Isa, DisassembleUsesTheAssemblySyntax) {
  Matmul m;
  m.ub_addr = 0;
  m.acc_addr = 0;
  m.inner = 16;
  m.accumulate = m.switch_weights = true;
  EXPECT_EQ(disassemble(m),
            "matmul       ub=0 acc=0 inner=16 outer=1 inner_stride=1 outer_stride=0 acc switch");
  Activate a;
  a.acc_addr = 0;
  a.ub_addr = 100;
  a.width = 16;
  a.height = 1;
  a.func = ActFunc::Relu;
  a.out_unsigned = true;
  EXPECT_EQ(disassemble(a),
            "activate     acc=0 ub=100 width=16 height=1 pool_k=1 pool_s=1 ub_stride=0 slot=0 "
            "func=relu out_unsigned");
  ReadHost r;
  r.rows = 16;
  r.host_addr = 0x1000;
  EXPECT_EQ(disassemble(r), "read_host    ub=0 rows=16 host=0x1000");
  r.dest = HostDest::Param;
  r.rows = 12;
  r.host_addr = 0x2000;
  EXPECT_EQ(disassemble(r), "read_host    dest=param addr=0 rows=12 host=0x2000");
  r.dest = static_cast<HostDest>(3);
  EXPECT_EQ(disassemble(r), "read_host    dest=3 addr=0 rows=12 host=0x2000");
  ReadWeights rw;
  rw.host_addr = 0x3000;
  EXPECT_EQ(disassemble(rw), "read_weights tiles=1 host=0x3000");
  WriteHost w;
  w.ub_addr = 100;
  w.rows = 16;
  w.host_addr = 0x4000;
  EXPECT_EQ(disassemble(w), "write_host   ub=100 rows=16 host=0x4000");
  EXPECT_EQ(disassemble(Halt{}), "halt");
  EXPECT_EQ(
      disassemble(RawInstruction{bytes_of({0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC0})}),
      ".inst 0xc000000000000000000000000000000f");
}

// ---- static checks

struct CheckCase {
  const char* name;
  Instruction instr;
  ErrorCode expected;
};

template <typename T, typename F>
Instruction make(F f) {
  T t;
  f(t);
  return t;
}

TEST(IsaCheck, EveryStaticErrorCodeIsReachable) {
  const ChipParams p;  // N = 16
  InstrBytes bad_opcode{};
  bad_opcode[0] = 0x42;
  InstrBytes reserved = encode(Sync{});
  reserved[8] = 1;
  const CheckCase cases[] = {
      {"nop", Nop{}, ErrorCode::ERR_NONE},
      {"halt", Halt{}, ErrorCode::ERR_NONE},
      {"opcode", RawInstruction{bad_opcode}, ErrorCode::ERR_OPCODE},
      {"reserved", RawInstruction{reserved}, ErrorCode::ERR_RESERVED},
      // ERR_FIELD
      {"read_host dest=3", make<ReadHost>([](auto& i) { i.dest = static_cast<HostDest>(3); }),
       ErrorCode::ERR_FIELD},
      {"read_host rows=0", make<ReadHost>([](auto& i) { i.rows = 0; }), ErrorCode::ERR_FIELD},
      {"write_host rows=0", make<WriteHost>([](auto& i) { i.rows = 0; }), ErrorCode::ERR_FIELD},
      {"read_weights tiles=0", make<ReadWeights>([](auto& i) { i.tiles = 0; }),
       ErrorCode::ERR_FIELD},
      {"matmul inner=0", make<Matmul>([](auto& i) { i.inner = 0; }), ErrorCode::ERR_FIELD},
      {"matmul outer=0", make<Matmul>([](auto& i) { i.outer = 0; }), ErrorCode::ERR_FIELD},
      {"activate defaults (width=height=0)", Activate{}, ErrorCode::ERR_FIELD},
      {"activate pool_k=0", make<Activate>([](auto& i) {
         i.width = i.height = 2;
         i.pool_k = 0;
       }),
       ErrorCode::ERR_FIELD},
      {"activate pool_s=0", make<Activate>([](auto& i) {
         i.width = i.height = 2;
         i.pool_s = 0;
       }),
       ErrorCode::ERR_FIELD},
      {"activate pool_k>width", make<Activate>([](auto& i) {
         i.width = 2;
         i.height = 3;
         i.pool_k = 3;
       }),
       ErrorCode::ERR_FIELD},
      {"activate pool_k>height", make<Activate>([](auto& i) {
         i.width = 3;
         i.height = 2;
         i.pool_k = 3;
       }),
       ErrorCode::ERR_FIELD},
      {"activate pool_k=width=height", make<Activate>([](auto& i) {
         i.width = 3;
         i.height = 3;
         i.pool_k = 3;
       }),
       ErrorCode::ERR_NONE},
      // ERR_UB_RANGE
      {"read_host last UB row", make<ReadHost>([](auto& i) { i.local_addr = 8191; }),
       ErrorCode::ERR_NONE},
      {"read_host past UB", make<ReadHost>([](auto& i) {
         i.local_addr = 8191;
         i.rows = 2;
       }),
       ErrorCode::ERR_UB_RANGE},
      {"write_host past UB", make<WriteHost>([](auto& i) { i.ub_addr = 8192; }),
       ErrorCode::ERR_UB_RANGE},
      {"matmul strided last row ok", make<Matmul>([](auto& i) {
         i.ub_addr = 8191 - 3 * 100 - 4 * 7;
         i.outer = 4;
         i.outer_stride = 100;
         i.inner = 5;
         i.inner_stride = 7;
       }),
       ErrorCode::ERR_NONE},
      {"matmul strided one past", make<Matmul>([](auto& i) {
         i.ub_addr = 8192 - 3 * 100 - 4 * 7;
         i.outer = 4;
         i.outer_stride = 100;
         i.inner = 5;
         i.inner_stride = 7;
       }),
       ErrorCode::ERR_UB_RANGE},
      {"matmul huge strides", make<Matmul>([](auto& i) {
         i.ub_addr = 0xFFFFFF;
         i.outer = 4095;
         i.outer_stride = 0xFFFFFF;
         i.inner = 4095;
         i.inner_stride = 255;
       }),
       ErrorCode::ERR_UB_RANGE},
      {"activate output ok",
       make<Activate>([](auto& i) {  // Ho = Wo = 2, last row = 8191
         i.width = i.height = 4;
         i.pool_k = i.pool_s = 2;
         i.ub_stride = 10;
         i.ub_addr = 8191 - 11;
       }),
       ErrorCode::ERR_NONE},
      {"activate output one past", make<Activate>([](auto& i) {
         i.width = i.height = 4;
         i.pool_k = i.pool_s = 2;
         i.ub_stride = 10;
         i.ub_addr = 8192 - 11;
       }),
       ErrorCode::ERR_UB_RANGE},
      {"activate raw output ok",
       make<Activate>([](auto& i) {  // last row = ub_addr + 1*10 + 4*4 - 1 = 8191
         i.raw = true;
         i.width = 4;
         i.height = 2;
         i.ub_stride = 10;
         i.ub_addr = 8191 - 25;
       }),
       ErrorCode::ERR_NONE},
      {"activate raw output one past", make<Activate>([](auto& i) {
         i.raw = true;
         i.width = 4;
         i.height = 2;
         i.ub_stride = 10;
         i.ub_addr = 8192 - 25;
       }),
       ErrorCode::ERR_UB_RANGE},
      {"activate raw with pooling", make<Activate>([](auto& i) {
         i.raw = true;
         i.width = i.height = 4;
         i.pool_k = i.pool_s = 2;
       }),
       ErrorCode::ERR_FIELD},
      {"activate raw unsigned", make<Activate>([](auto& i) {
         i.raw = true;
         i.width = i.height = 4;
         i.out_unsigned = true;
       }),
       ErrorCode::ERR_FIELD},
      // ERR_ACC_RANGE
      {"matmul last ACC row", make<Matmul>([](auto& i) { i.acc_addr = 2047; }),
       ErrorCode::ERR_NONE},
      {"matmul past ACC", make<Matmul>([](auto& i) {
         i.acc_addr = 2041;
         i.inner = 4;
         i.outer = 2;
         i.inner_stride = 0;
       }),
       ErrorCode::ERR_ACC_RANGE},
      {"activate ACC ok", make<Activate>([](auto& i) {
         i.acc_addr = 2048 - 12;
         i.width = 3;
         i.height = 4;
       }),
       ErrorCode::ERR_NONE},
      {"activate past ACC", make<Activate>([](auto& i) {
         i.acc_addr = 2048 - 11;
         i.width = 3;
         i.height = 4;
       }),
       ErrorCode::ERR_ACC_RANGE},
      // ERR_PARAM_RANGE
      {"read_host PARAM all", make<ReadHost>([](auto& i) {
         i.dest = HostDest::Param;
         i.rows = 192;
       }),
       ErrorCode::ERR_NONE},
      {"read_host past PARAM", make<ReadHost>([](auto& i) {
         i.dest = HostDest::Param;
         i.local_addr = 180;
         i.rows = 13;
       }),
       ErrorCode::ERR_PARAM_RANGE},
      {"read_host LUT all", make<ReadHost>([](auto& i) {
         i.dest = HostDest::Lut;
         i.rows = 16;
       }),
       ErrorCode::ERR_NONE},
      {"read_host past LUT", make<ReadHost>([](auto& i) {
         i.dest = HostDest::Lut;
         i.local_addr = 15;
         i.rows = 2;
       }),
       ErrorCode::ERR_PARAM_RANGE},
      // ERR_ALIGN
      {"read_host misaligned", make<ReadHost>([](auto& i) { i.host_addr = 0x1008; }),
       ErrorCode::ERR_ALIGN},
      {"write_host misaligned", make<WriteHost>([](auto& i) { i.host_addr = 0x1001; }),
       ErrorCode::ERR_ALIGN},
      {"read_weights misaligned", make<ReadWeights>([](auto& i) { i.host_addr = 0x100C; }),
       ErrorCode::ERR_ALIGN},
      // ERR_HOST_RANGE: the last byte may be 0xffffffff, not beyond.
      {"read_host ends at 2^32", make<ReadHost>([](auto& i) { i.host_addr = 0xFFFFFFF0; }),
       ErrorCode::ERR_NONE},
      {"read_host wraps", make<ReadHost>([](auto& i) {
         i.host_addr = 0xFFFFFFF0;
         i.rows = 2;
       }),
       ErrorCode::ERR_HOST_RANGE},
      {"write_host wraps", make<WriteHost>([](auto& i) {
         i.host_addr = 0xFFFFFF00;
         i.rows = 17;
       }),
       ErrorCode::ERR_HOST_RANGE},
      {"read_weights ends at 2^32", make<ReadWeights>([](auto& i) { i.host_addr = 0xFFFFFF00; }),
       ErrorCode::ERR_NONE},
      {"read_weights wraps", make<ReadWeights>([](auto& i) {
         i.host_addr = 0xFFFFFF00;
         i.tiles = 2;
       }),
       ErrorCode::ERR_HOST_RANGE},
  };
  std::set<ErrorCode> seen;
  for (const CheckCase& c : cases) {
    std::string why;
    ErrorCode got = check(c.instr, p, &why);
    EXPECT_EQ(got, c.expected) << c.name << ": got " << error_name(got) << " (" << why << ")";
    EXPECT_EQ(why.empty(), got == ErrorCode::ERR_NONE) << c.name << ": " << why;
    seen.insert(got);
  }
  for (int code = 0; code <= 8; ++code) {
    EXPECT_TRUE(seen.count(static_cast<ErrorCode>(code)))
        << "no case reaches " << error_name(static_cast<ErrorCode>(code));
  }
}

TEST(IsaCheck, SlotRangeDependsOnQpSlots) {
  ChipParams p;
  p.qp_slots = 8;
  Activate a;
  a.width = a.height = 1;
  a.slot = 7;
  EXPECT_EQ(check(a, p), ErrorCode::ERR_NONE);
  a.slot = 8;
  std::string why;
  EXPECT_EQ(check(a, p, &why), ErrorCode::ERR_PARAM_RANGE);
  EXPECT_EQ(why, "activate: slot = 8 out of range (QpSlots = 8, must be < 8)");
  ReadHost r;
  r.dest = HostDest::Param;
  r.local_addr = 95;  // 8 slots * 12 rows = 96 rows
  EXPECT_EQ(check(r, p), ErrorCode::ERR_NONE);
  r.local_addr = 96;
  EXPECT_EQ(check(r, p), ErrorCode::ERR_PARAM_RANGE);
}

TEST(IsaCheck, LimitsScaleWithN) {
  ChipParams p = ChipParams::with_n(4);
  ReadHost lut;
  lut.dest = HostDest::Lut;
  lut.rows = 64;  // 256 / 4
  EXPECT_EQ(check(lut, p), ErrorCode::ERR_NONE);
  lut.rows = 65;
  EXPECT_EQ(check(lut, p), ErrorCode::ERR_PARAM_RANGE);
  ReadWeights rw;
  rw.host_addr = 0xFFFFFFF0;  // one 4x4 tile = 16 bytes: ends exactly at 2^32
  EXPECT_EQ(check(rw, p), ErrorCode::ERR_NONE);
  rw.tiles = 2;
  EXPECT_EQ(check(rw, p), ErrorCode::ERR_HOST_RANGE);
}

TEST(IsaCheck, LowestCodeWinsWhenSeveralApply) {
  const ChipParams p;
  ReadHost r;
  r.rows = 0;
  r.host_addr = 0x1001;
  EXPECT_EQ(check(r, p), ErrorCode::ERR_FIELD);
  r.rows = 2;
  r.local_addr = 8191;
  EXPECT_EQ(check(r, p), ErrorCode::ERR_UB_RANGE);
  r.local_addr = 0;
  r.host_addr = 0xFFFFFFF1;  // misaligned and wrapping
  EXPECT_EQ(check(r, p), ErrorCode::ERR_ALIGN);
  Matmul m;
  m.ub_addr = 9000;
  m.acc_addr = 4000;
  EXPECT_EQ(check(m, p), ErrorCode::ERR_UB_RANGE);
  Activate a;
  a.width = a.height = 1;
  a.ub_addr = 9000;
  a.acc_addr = 4000;
  ChipParams few_slots;
  few_slots.qp_slots = 2;
  a.slot = 5;
  EXPECT_EQ(check(a, few_slots), ErrorCode::ERR_UB_RANGE);
  a.ub_addr = 0;
  EXPECT_EQ(check(a, few_slots), ErrorCode::ERR_ACC_RANGE);
  a.acc_addr = 0;
  EXPECT_EQ(check(a, few_slots), ErrorCode::ERR_PARAM_RANGE);
}

TEST(IsaCheck, DmaWindows) {
  const ChipParams p;
  DmaWindows win{};
  ReadHost r;
  r.host_addr = 0x1000;
  r.rows = 4;                                        // 64 bytes
  EXPECT_EQ(check(r, p, win), ErrorCode::ERR_NONE);  // all disabled: any address
  EXPECT_TRUE(in_dma_windows(win, 0xFFFFFFF0, 16));
  win[5] = DmaWindow{0x1000, 0x40};
  EXPECT_EQ(check(r, p, win), ErrorCode::ERR_NONE);  // exactly the window
  r.rows = 5;
  std::string why;
  EXPECT_EQ(check(r, p, win, &why), ErrorCode::ERR_HOST_RANGE);
  EXPECT_EQ(why,
            "read_host: host bytes 0x00001000..0x0000104f are not inside any enabled DMA "
            "window (expected a registered buffer)");
  r.rows = 1;
  r.host_addr = 0xFF0;
  EXPECT_EQ(check(r, p, win), ErrorCode::ERR_HOST_RANGE);  // starts before the window
  r.host_addr = 0x1008;
  EXPECT_EQ(check(r, p, win), ErrorCode::ERR_ALIGN);  // lower code first
  win[1] = DmaWindow{0x1040, 0x40};                   // adjacent: no straddling
  WriteHost w;
  w.host_addr = 0x1030;
  w.rows = 2;
  EXPECT_EQ(check(w, p, win), ErrorCode::ERR_HOST_RANGE);
  w.host_addr = 0x1040;
  EXPECT_EQ(check(w, p, win), ErrorCode::ERR_NONE);
  ReadWeights rw;
  rw.host_addr = 0x1040;  // a 256-byte tile does not fit a 64-byte window
  EXPECT_EQ(check(rw, p, win), ErrorCode::ERR_HOST_RANGE);
  Matmul m;  // no host access: windows do not matter
  EXPECT_EQ(check(m, p, win), ErrorCode::ERR_NONE);
  // A window reaching 2^32.
  DmaWindows top{};
  top[0] = DmaWindow{0xFFFFFF00, 0x100};
  EXPECT_TRUE(in_dma_windows(top, 0xFFFFFFF0, 16));
  EXPECT_FALSE(in_dma_windows(top, 0xFFFFFFF0, 17));
}

TEST(IsaCheck, MessagesSayWhatWhereAndWhatWasExpected) {
  const ChipParams p;
  std::string why;
  ReadHost r;
  r.local_addr = 8190;
  r.rows = 10;
  check(r, p, &why);
  EXPECT_EQ(why,
            "read_host: UB rows 8190..8199 out of range (UbRows = 8192, last row must be < 8192)");
  r = ReadHost{};
  r.host_addr = 0x1004;
  check(r, p, &why);
  EXPECT_EQ(why, "read_host: host_addr 0x00001004 is not 16-byte aligned (expected low 4 bits 0)");
  Matmul m;
  m.inner = 0;
  check(m, p, &why);
  EXPECT_EQ(why, "matmul: inner = 0, outer = 1 (both must be >= 1)");
}

// The command buffer rule (docs/isa.md write_host): a write_host overlapping
// [addr, addr + 16*count) is ERR_HOST_RANGE, one just outside it is not, and lower codes win.
TEST(IsaCheck, WriteHostIntoCommandBuffer) {
  const ChipParams p;  // N = 16
  const CommandBuffer cmd{0x10000, 8};
  std::string why;
  EXPECT_EQ(check(WriteHost{0, 1, 0x10000}, p, DmaWindows{}, cmd, &why), ErrorCode::ERR_HOST_RANGE);
  EXPECT_NE(why.find("overlap the command buffer"), std::string::npos) << why;
  EXPECT_EQ(check(WriteHost{0, 1, 0x10070}, p, DmaWindows{}, cmd), ErrorCode::ERR_HOST_RANGE);
  EXPECT_EQ(check(WriteHost{0, 2, 0xFFF0}, p, DmaWindows{}, cmd), ErrorCode::ERR_HOST_RANGE);
  EXPECT_EQ(check(WriteHost{0, 1, 0xFFF0}, p, DmaWindows{}, cmd), ErrorCode::ERR_NONE);
  EXPECT_EQ(check(WriteHost{0, 1, 0x10080}, p, DmaWindows{}, cmd), ErrorCode::ERR_NONE);
  EXPECT_EQ(check(WriteHost{0, 1, 0x10000}, p, DmaWindows{}, CommandBuffer{}), ErrorCode::ERR_NONE);
  // Reads of the command buffer are allowed; a lower code wins over the overlap.
  EXPECT_EQ(check(ReadHost{HostDest::Ub, 0, 1, 0x10000}, p, DmaWindows{}, cmd),
            ErrorCode::ERR_NONE);
  EXPECT_EQ(check(WriteHost{0, 1, 0x10004}, p, DmaWindows{}, cmd), ErrorCode::ERR_ALIGN);
  EXPECT_EQ(check(WriteHost{p.ub_rows, 1, 0x10000}, p, DmaWindows{}, cmd), ErrorCode::ERR_UB_RANGE);
}

// The chip's decoder computes activate's (Hp - pool_k) / pool_s without a divider
// (rtl/tpu_decoder.sv div_stride): x * ceil(2^16 / d) >> 16. The same table, checked for every
// dividend up to 4108 (the padded pooling span) and every 4-bit divisor. (Not exact for every
// 13-bit dividend: 6564 / 13 comes out 505.)
TEST(IsaCheck, PoolingDivisionByReciprocalIsExact) {
  const uint32_t kMaxDividend = 4095 + 7 + 7 - 1;  // Hp - pool_k: 12-bit H, two 3-bit pads
  const uint32_t table[16] = {0,    65536, 32768, 21846, 16384, 13108, 10923, 9363,
                              8192, 7282,  6554,  5958,  5462,  5042,  4682,  4370};
  for (uint32_t d = 1; d < 16; ++d) {
    EXPECT_EQ(table[d], (65536 + d - 1) / d);
    for (uint32_t x = 0; x <= kMaxDividend; ++x)
      ASSERT_EQ((x * table[d]) >> 16, x / d) << x << " / " << d;
  }
}

// The weight port (isa.md "The weight port"): its beat is a power of two in 16..N, and
// read_weights' host_addr must be a multiple of it (ERR_ALIGN), the 16-byte rule first.
TEST(Isa, WeightPortParamsAndAlignment) {
  ChipParams p = ChipParams::with_n(256);
  EXPECT_EQ(p.weight_port_bytes, 0u);
  EXPECT_EQ(p.weight_align(), 16u);
  EXPECT_EQ(p.weight_dma_bytes_per_cycle(), 16u);
  p.weight_port_bytes = 64;
  EXPECT_NO_THROW(p.validate());
  EXPECT_EQ(p.weight_align(), 64u);
  EXPECT_EQ(p.weight_dma_bytes_per_cycle(), 64u);
  EXPECT_FALSE(p == ChipParams::with_n(256));
  for (uint32_t bad : {8u, 48u, 512u}) {
    ChipParams q = p;
    q.weight_port_bytes = bad;
    EXPECT_THROW(q.validate(), std::invalid_argument) << bad;
  }
  std::string why;
  EXPECT_EQ(check(ReadWeights{1, 0x10000}, p, &why), ErrorCode::ERR_NONE) << why;
  EXPECT_EQ(check(ReadWeights{1, 0x10000 + 32}, p, &why), ErrorCode::ERR_ALIGN);
  EXPECT_NE(why.find("64-byte beat"), std::string::npos) << why;
  EXPECT_EQ(check(ReadWeights{1, 0x10000 + 8}, p, &why), ErrorCode::ERR_ALIGN);
  EXPECT_NE(why.find("16-byte"), std::string::npos) << why;
  // Only read_weights: read_host keeps the 16-byte rule.
  ReadHost rh;
  rh.host_addr = 0x10000 + 32;
  EXPECT_EQ(check(rh, p, &why), ErrorCode::ERR_NONE) << why;
  // Without a port the 16-byte rule alone.
  EXPECT_EQ(check(ReadWeights{1, 0x10000 + 32}, ChipParams::with_n(256), &why), ErrorCode::ERR_NONE)
      << why;
}

}  // namespace
}  // namespace tpu

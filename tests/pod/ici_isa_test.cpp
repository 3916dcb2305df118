// SPDX-License-Identifier: Apache-2.0
// ici_send / ici_recv (docs/isa.md "Inter-chip links"): encoding of every field, reserved
// bits, decode on chips with and without links, the static checks, the disassembler and the
// assembler (round trips), and every fault of ProgramBuilder::ici_send / ici_recv.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "assembler.h"
#include "isa.h"
#include "program.h"

namespace tpu {
namespace {

const ChipParams kPod = ChipParams::pod(16, 4);
// Its VMEM rows (ChipParams::kTrainingVmemRows) as the 16-bit row fields take them.
const uint16_t kLastRow = static_cast<uint16_t>(kPod.vmem_rows - 1);
const std::string kRowsText = std::to_string(kPod.vmem_rows);

// The bit pattern with only field f set to all ones.
InstrBytes only_field(Opcode op, BitField f) {
  InstrBytes w{};
  w[0] = static_cast<uint8_t>(op);
  set_field(w, f, f.max());
  return w;
}

TEST(IciIsa, FieldsAreTheIsaTables) {
  const auto& send = instruction_fields(Opcode::IciSend);
  ASSERT_EQ(send.size(), 3u);
  EXPECT_EQ(send[0].name, "link");
  EXPECT_EQ(send[0].bits.lo, 8u);
  EXPECT_EQ(send[0].bits.hi(), 11u);
  EXPECT_EQ(send[1].name, "vmem_addr");
  EXPECT_EQ(send[1].bits.lo, 16u);
  EXPECT_EQ(send[1].bits.hi(), 31u);
  EXPECT_EQ(send[2].name, "rows");
  EXPECT_EQ(send[2].bits.lo, 32u);
  EXPECT_EQ(send[2].bits.hi(), 55u);
  const auto& recv = instruction_fields(Opcode::IciRecv);
  ASSERT_EQ(recv.size(), 4u);
  EXPECT_EQ(recv[1].name, "reduce");
  EXPECT_EQ(recv[1].bits.lo, 12u);
  EXPECT_EQ(recv[1].bits.hi(), 13u);
  EXPECT_EQ(opcode_byte(IciSend{}), 0x0F);
  EXPECT_EQ(opcode_byte(IciRecv{}), 0x10);
}

TEST(IciIsa, EveryFieldEncodesAtItsBits) {
  IciRecv r;
  r.link = 0xF;
  r.reduce = 0;
  r.vmem_addr = 0;
  r.rows = 0;
  EXPECT_EQ(encode(r), only_field(Opcode::IciRecv, field::kIciLink));
  r = IciRecv{0, 3, 0, 0};
  EXPECT_EQ(encode(r), only_field(Opcode::IciRecv, field::kIciReduce));
  r = IciRecv{0, 0, 0xFFFF, 0};
  EXPECT_EQ(encode(r), only_field(Opcode::IciRecv, field::kIciVmemAddr));
  r = IciRecv{0, 0, 0, 0xFFFFFF};
  EXPECT_EQ(encode(r), only_field(Opcode::IciRecv, field::kIciRows));
  EXPECT_EQ(encode(IciSend{0xF, 0, 0}), only_field(Opcode::IciSend, field::kIciLink));
  EXPECT_EQ(encode(IciSend{0, 0xFFFF, 0}), only_field(Opcode::IciSend, field::kIciVmemAddr));
  EXPECT_EQ(encode(IciSend{0, 0, 0xFFFFFF}), only_field(Opcode::IciSend, field::kIciRows));
  // Little-endian bytes of one example: ici_recv link=3 reduce=fadd vmem=0x1234 rows=0x56.
  const InstrBytes w = encode(IciRecv{3, 1, 0x1234, 0x56});
  const InstrBytes want{0x10, 0x13, 0x34, 0x12, 0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(w, want);
}

TEST(IciIsa, ValuesThatDoNotFitAreRejected) {
  EXPECT_THROW(encode(IciSend{16, 0, 1}), std::invalid_argument);
  EXPECT_THROW(encode(IciSend{0, 0, 1u << 24}), std::invalid_argument);
  EXPECT_THROW(encode(IciRecv{0, 4, 0, 1}), std::invalid_argument);
}

TEST(IciIsa, RandomRoundTrips) {
  std::mt19937_64 rng(31);
  for (int k = 0; k < 2000; ++k) {
    IciSend s{static_cast<uint8_t>(rng() % 16), static_cast<uint16_t>(rng()),
              static_cast<uint32_t>(rng() % (1u << 24))};
    IciRecv r{static_cast<uint8_t>(rng() % 16), static_cast<uint8_t>(rng() % 4),
              static_cast<uint16_t>(rng()), static_cast<uint32_t>(rng() % (1u << 24))};
    for (const Instruction& in : {Instruction{s}, Instruction{r}}) {
      DecodeResult d = decode(encode(in));
      ASSERT_TRUE(d.ok()) << d.why;
      EXPECT_EQ(d.instr, in);
      // The disassembly assembles back to the same word.
      EXPECT_EQ(encode(assemble(disassemble(in)).at(0)), encode(in)) << disassemble(in);
    }
  }
}

TEST(IciIsa, ReservedBitsFault) {
  for (Opcode op : {Opcode::IciSend, Opcode::IciRecv}) {
    for (unsigned bit = 8; bit < 128; ++bit) {
      bool defined = false;
      for (const FieldInfo& f : instruction_fields(op)) {
        defined = defined || (bit >= f.bits.lo && bit <= f.bits.hi());
      }
      InstrBytes w{};
      w[0] = static_cast<uint8_t>(op);
      w[bit / 8] = static_cast<uint8_t>(w[bit / 8] | (1u << (bit % 8)));
      EXPECT_EQ(decode(w, kPod).error, defined ? ErrorCode::ERR_NONE : ErrorCode::ERR_RESERVED)
          << mnemonic(op) << " bit " << bit;
    }
  }
  InstrBytes w = encode(IciSend{});
  w[1] = 0x10;  // bit 12
  EXPECT_EQ(decode(w).why, "ici_send: reserved bits 15:12 must be zero, but bit 12 is set");
}

TEST(IciIsa, ChipsWithoutLinksFaultErrOpcode) {
  for (uint8_t op : {uint8_t{0x0F}, uint8_t{0x10}}) {
    InstrBytes w{};
    w[0] = op;
    w[15] = 0xFF;  // reserved bits: the opcode is checked first
    for (const ChipParams& p : {ChipParams::with_n(16), ChipParams::training(16)}) {
      DecodeResult d = decode(w, p);
      EXPECT_EQ(d.error, ErrorCode::ERR_OPCODE) << int(op);
      EXPECT_EQ(check(RawInstruction{w}, p), ErrorCode::ERR_OPCODE);
    }
    EXPECT_EQ(decode(w, kPod).error, ErrorCode::ERR_RESERVED);
  }
  std::string why;
  EXPECT_EQ(check(IciSend{}, ChipParams::training(16), &why), ErrorCode::ERR_OPCODE);
  EXPECT_NE(why.find("IciLinks = 0"), std::string::npos) << why;
  EXPECT_EQ(check(IciRecv{}, ChipParams::with_n(16)), ErrorCode::ERR_OPCODE);
  EXPECT_EQ(check(IciRecv{}, kPod), ErrorCode::ERR_NONE);
}

TEST(IciIsa, StaticChecksInIsaOrder) {
  std::string why;
  // rows = 0 and reduce = 3 are ERR_FIELD, before the VMEM range and the link.
  EXPECT_EQ(check(IciSend{15, 0xFFFF, 0}, kPod, &why), ErrorCode::ERR_FIELD);
  EXPECT_EQ(why, "ici_send: rows = 0 (expected >= 1)");
  EXPECT_EQ(check(IciRecv{15, 3, 0xFFFF, 5}, kPod, &why), ErrorCode::ERR_FIELD);
  EXPECT_NE(why.find("reduce = 3"), std::string::npos) << why;
  // The VMEM range before the link.
  EXPECT_EQ(check(IciSend{15, uint16_t(kLastRow - 1), 3}, kPod, &why), ErrorCode::ERR_VMEM_RANGE);
  EXPECT_EQ(check(IciRecv{0, 0, kLastRow, 1}, kPod), ErrorCode::ERR_NONE);
  EXPECT_EQ(check(IciRecv{0, 0, kLastRow, 2}, kPod), ErrorCode::ERR_VMEM_RANGE);
  // A link the chip does not have.
  EXPECT_EQ(check(IciSend{4, 0, 1}, kPod, &why), ErrorCode::ERR_ICI_LINK);
  EXPECT_EQ(why, "ici_send: link = 4, but the chip has IciLinks = 4 (expected 0..3)");
  EXPECT_EQ(check(IciRecv{3, 2, 0, 8192}, kPod), ErrorCode::ERR_NONE);
}

TEST(IciIsa, ChipParamsValidateLinks) {
  ChipParams p = ChipParams::pod(16, 2);
  EXPECT_NO_THROW(p.validate());
  EXPECT_EQ(p.ici_links, 2u);
  EXPECT_TRUE(p.has_ici());
  EXPECT_FALSE(ChipParams::training(16).has_ici());
  p.ici_links = 17;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  ChipParams q = ChipParams::with_n(16);
  q.ici_links = 2;  // links without VMEM
  EXPECT_THROW(q.validate(), std::invalid_argument);
  EXPECT_FALSE(ChipParams::pod(16, 2) == ChipParams::pod(16, 4));
}

TEST(IciIsa, Disassembly) {
  EXPECT_EQ(disassemble(IciSend{1, 64, 32}), "ici_send     link=1 vmem=64 rows=32");
  EXPECT_EQ(disassemble(IciRecv{2, 1, 0, 7}), "ici_recv     link=2 vmem=0 rows=7 reduce=fadd");
  EXPECT_EQ(disassemble(IciRecv{0, 0, 0, 1}), "ici_recv     link=0 vmem=0 rows=1 reduce=none");
  EXPECT_EQ(disassemble(IciRecv{0, 2, 0, 1}), "ici_recv     link=0 vmem=0 rows=1 reduce=iadd");
  EXPECT_EQ(disassemble(IciRecv{0, 3, 0, 1}), "ici_recv     link=0 vmem=0 rows=1 reduce=3");
}

TEST(IciIsa, AssemblerSyntaxAndDefaults) {
  auto p = assemble(
      "ici_send link=3 vmem=10 rows=4\n"
      "ici_recv vmem=5 reduce=iadd\n"
      "ici_recv link=1 reduce=3 rows=2\n"
      "ici_send\n");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(std::get<IciSend>(p[0]), (IciSend{3, 10, 4}));
  EXPECT_EQ(std::get<IciRecv>(p[1]), (IciRecv{0, 2, 5, 1}));
  EXPECT_EQ(std::get<IciRecv>(p[2]), (IciRecv{1, 3, 0, 2}));
  EXPECT_EQ(std::get<IciSend>(p[3]), (IciSend{0, 0, 1}));
  EXPECT_THROW(assemble("ici_recv reduce=fmul\n"), AsmError);
  EXPECT_THROW(assemble("ici_send link=16\n"), AsmError);
  EXPECT_THROW(assemble("ici_send reduce=fadd\n"), AsmError);  // no such field on a send
  try {
    assemble("ici_recv reduce=max\n");
  } catch (const AsmError& e) {
    EXPECT_NE(std::string(e.what()).find("expected none, fadd, iadd or a number 0..3"),
              std::string::npos)
        << e.what();
  }
}

// ---- ProgramBuilder

template <typename F>
void expect_error(F f, const std::string& argument, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no ProgramError (expected " << argument << ")";
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(IciBuilder, EmitsTheInstructions) {
  ProgramBuilder b(kPod);
  b.ici_send(1, 100, 8).ici_recv(2, 0, 8192, IciReduce::FAdd).ici_recv(3, 5, 1);
  const auto prog = b.finish();
  ASSERT_EQ(prog.size(), 4u);
  EXPECT_EQ(std::get<IciSend>(prog[0]), (IciSend{1, 100, 8}));
  EXPECT_EQ(std::get<IciRecv>(prog[1]), (IciRecv{2, 1, 0, 8192}));
  EXPECT_EQ(std::get<IciRecv>(prog[2]), (IciRecv{3, 0, 5, 1}));
  ProgramBuilder a(kPod);
  a.append(IciSend{0, 1, 2}).append(RawInstruction{encode(IciRecv{1, 2, 3, 4})});
  EXPECT_EQ(std::get<IciRecv>(a.instructions().at(1)), (IciRecv{1, 2, 3, 4}));
}

TEST(IciBuilder, EveryFault) {
  ProgramBuilder b(kPod);
  expect_error([&] { b.ici_send(4, 0, 1); }, "link", "IciLinks = 4");
  expect_error([&] { b.ici_recv(7, 0, 1); }, "link", "ERR_ICI_LINK");
  expect_error([&] { b.ici_send(0, 0, 0); }, "rows", "rows = 0");
  expect_error([&] { b.ici_send(0, 0, kPod.vmem_rows + 1); }, "rows", "1.." + kRowsText);
  expect_error([&] { b.ici_recv(0, uint16_t(kLastRow - 191), 193); }, "vmem_row",
               "vmem_row + rows - 1 = " + kRowsText);
  expect_error([&] { b.ici_recv(IciRecv{0, 3, 0, 1}); }, "reduce", "reduce = 3");
  expect_error([&] { b.ici_send(IciSend{0, kLastRow, 2}); }, "vmem_row", kRowsText);
  ProgramBuilder alone(ChipParams::training(16));
  expect_error([&] { alone.ici_send(0, 0, 1); }, "", "IciLinks = 0");
  expect_error([&] { alone.append(IciRecv{}); }, "", "ERR_OPCODE");
  ProgramBuilder h(kPod);
  h.halt();
  expect_error([&] { h.ici_send(0, 0, 1); }, "", "after halt");
  EXPECT_TRUE(b.instructions().empty());  // nothing was emitted by a failing call
}

}  // namespace
}  // namespace tpu

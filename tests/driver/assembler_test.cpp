// SPDX-License-Identifier: Apache-2.0
// The assembler and disassembler: the isa.md syntax, defaults, errors with file:line:col,
// and exact binary -> text -> binary round trips.
#include "assembler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "temp_dir.h"

namespace tpu {
namespace {

// Expects `text` to fail with exactly "prog.s:line:col: message".
void expect_error(const std::string& text, int line, int col, const std::string& message) {
  try {
    assemble(text, "prog.s");
    ADD_FAILURE() << "assembled without error: " << text;
  } catch (const AsmError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), col) << e.what();
    EXPECT_EQ(e.message(), message) << e.what();
    EXPECT_EQ(std::string(e.what()),
              "prog.s:" + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
  }
}

Instruction one(const std::string& text) {
  std::vector<Instruction> p = assemble(text);
  EXPECT_EQ(p.size(), 1u) << text;
  return p.empty() ? Instruction(Nop{}) : p[0];
}

TEST(Assembler, TheIsaMdExample) {
  const char* text = R"(# comment (also ';')
label:                         ; labels are allowed and ignored by the chip (no branches)
read_host    ub=0 rows=16 host=0x1000            ; dest=ub by default
read_host    dest=param addr=0 rows=12 host=0x2000
read_weights tiles=1 host=0x3000
matmul       ub=0 acc=0 inner=16 outer=1 inner_stride=1 outer_stride=0 acc a_unsigned w_unsigned switch
activate     acc=0 ub=100 width=16 height=1 pool_k=1 pool_s=1 ub_stride=0 slot=0 func=relu out_unsigned
write_host   ub=100 rows=16 host=0x4000
sync
nop
halt
)";
  std::vector<Instruction> p = assemble(text, "example.s");
  ASSERT_EQ(p.size(), 9u);
  ReadHost r0;
  r0.rows = 16;
  r0.host_addr = 0x1000;
  EXPECT_TRUE(p[0] == Instruction(r0));
  ReadHost r1;
  r1.dest = HostDest::Param;
  r1.rows = 12;
  r1.host_addr = 0x2000;
  EXPECT_TRUE(p[1] == Instruction(r1));
  ReadWeights rw;
  rw.host_addr = 0x3000;
  EXPECT_TRUE(p[2] == Instruction(rw));
  Matmul m;
  m.inner = 16;
  m.accumulate = m.a_unsigned = m.w_unsigned = m.switch_weights = true;
  EXPECT_TRUE(p[3] == Instruction(m));
  Activate a;
  a.ub_addr = 100;
  a.width = 16;
  a.height = 1;
  a.func = ActFunc::Relu;
  a.out_unsigned = true;
  EXPECT_TRUE(p[4] == Instruction(a));
  WriteHost w;
  w.ub_addr = 100;
  w.rows = 16;
  w.host_addr = 0x4000;
  EXPECT_TRUE(p[5] == Instruction(w));
  EXPECT_TRUE(std::holds_alternative<Sync>(p[6]));
  EXPECT_TRUE(std::holds_alternative<Nop>(p[7]));
  EXPECT_TRUE(std::holds_alternative<Halt>(p[8]));
}

TEST(Assembler, DefaultsFollowIsaMd) {
  // inner, outer, pool_k, pool_s, rows, tiles and inner_stride default to 1, the rest to 0.
  EXPECT_TRUE(one("matmul") == Instruction(Matmul{}));
  Matmul m = std::get<Matmul>(one("matmul"));
  EXPECT_EQ(m.inner, 1);
  EXPECT_EQ(m.outer, 1);
  EXPECT_EQ(m.inner_stride, 1);
  EXPECT_EQ(m.outer_stride, 0u);
  EXPECT_FALSE(m.accumulate);
  Activate a = std::get<Activate>(one("activate"));
  EXPECT_EQ(a.pool_k, 1);
  EXPECT_EQ(a.pool_s, 1);
  EXPECT_EQ(a.width, 0);
  EXPECT_EQ(a.height, 0);
  EXPECT_EQ(a.func, ActFunc::Identity);
  EXPECT_EQ(std::get<ReadHost>(one("read_host")).rows, 1u);
  EXPECT_EQ(std::get<ReadHost>(one("read_host")).dest, HostDest::Ub);
  EXPECT_EQ(std::get<WriteHost>(one("write_host")).rows, 1u);
  EXPECT_EQ(std::get<ReadWeights>(one("read_weights")).tiles, 1u);
}

TEST(Assembler, OperandsInAnyOrderAndNumberFormats) {
  Matmul m = std::get<Matmul>(
      one("matmul switch outer_stride=0X10 acc acc=0x7ff inner_stride=0 ub=123 w_unsigned"));
  EXPECT_TRUE(m.switch_weights);
  EXPECT_TRUE(m.accumulate);
  EXPECT_TRUE(m.w_unsigned);
  EXPECT_FALSE(m.a_unsigned);
  EXPECT_EQ(m.outer_stride, 16u);
  EXPECT_EQ(m.acc_addr, 0x7FF);
  EXPECT_EQ(m.inner_stride, 0);
  EXPECT_EQ(m.ub_addr, 123u);
  EXPECT_EQ(std::get<ReadHost>(one("read_host addr=7")).local_addr, 7u);
  EXPECT_EQ(std::get<ReadHost>(one("read_host ub=7")).local_addr, 7u);
  EXPECT_EQ(std::get<WriteHost>(one("write_host addr=0xABCDEF")).ub_addr, 0xABCDEFu);
  EXPECT_EQ(std::get<ReadHost>(one("read_host dest=lut")).dest, HostDest::Lut);
  EXPECT_EQ(std::get<ReadHost>(one("read_host dest=1")).dest, HostDest::Param);
  EXPECT_EQ(static_cast<int>(std::get<ReadHost>(one("read_host dest=3")).dest), 3);
  EXPECT_EQ(std::get<Activate>(one("activate func=lut")).func, ActFunc::Lut);
  EXPECT_EQ(std::get<Activate>(one("activate func=clamp")).func, ActFunc::Clamp);
  EXPECT_EQ(std::get<Activate>(one("activate func=identity")).func, ActFunc::Identity);
  // Field maxima.
  EXPECT_EQ(std::get<Matmul>(one("matmul ub=16777215")).ub_addr, 16777215u);
  EXPECT_EQ(std::get<ReadHost>(one("read_host host=0xffffffff")).host_addr, 0xFFFFFFFFu);
  EXPECT_EQ(std::get<Activate>(one("activate slot=15 pool_k=15")).slot, 15);
}

TEST(Assembler, LabelsCommentsBlankLinesAndCrlf) {
  std::vector<Instruction> p = assemble(
      "start:\n"
      "  loop: nop   # trailing comment\n"
      "\n"
      "a: b: sync;another\r\n"
      "\t; only a comment\n"
      "  .L_1.x:\n"
      "halt");  // no final newline
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<Nop>(p[0]));
  EXPECT_TRUE(std::holds_alternative<Sync>(p[1]));
  EXPECT_TRUE(std::holds_alternative<Halt>(p[2]));
  EXPECT_TRUE(assemble("").empty());
  EXPECT_TRUE(assemble("\n\n# nothing\n").empty());
}

TEST(Assembler, InstDirectivePlacesRawWords) {
  Instruction in = one(".inst 0xc000000000000000000000000000000f");
  ASSERT_TRUE(std::holds_alternative<RawInstruction>(in));
  InstrBytes w = encode(in);
  EXPECT_EQ(w[0], 0x0F);
  EXPECT_EQ(w[15], 0xC0);
  // A word that decodes becomes the instruction itself.
  EXPECT_TRUE(std::holds_alternative<Halt>(one(".inst 0x7")));
  EXPECT_TRUE(std::holds_alternative<Halt>(one(".inst 0x00000000000000000000000000000007")));
}

TEST(Assembler, ErrorsGiveFileLineColumnAndWhatWasExpected) {
  expect_error(
      "nop\n  matmull ub=0\n", 2, 3,
      "unknown mnemonic 'matmull' (expected one of: nop, read_host, read_weights, "
      "matmul, activate, write_host, sync, halt, read_vmem, write_vmem, load_weights, "
      "matmul_bf16, acc_to_vmem, transpose, vector, ici_send, ici_recv, dwconv, fadd, fsub, "
      "fsubr, fmul, fmax, fmin, "
      "flt, fle, feq, iadd, isub, isubr, and, or, xor, andn, shl, shr, sra, ilt, ieq, "
      "f2i, i2f, bf16, lsum, lmax, lmin, rsum, rmax, rmin, align, .inst)");
  expect_error("matmul ub=16777216", 1, 11,
               "value 16777216 for 'ub' of matmul does not fit in 24 bits (expected 0..16777215)");
  expect_error("matmul inner=4096", 1, 14,
               "value 4096 for 'inner' of matmul does not fit in 12 bits (expected 0..4095)");
  expect_error("matmul inner_stride=0x100", 1, 21,
               "value 0x100 for 'inner_stride' of matmul does not fit in 8 bits (expected 0..255)");
  expect_error("activate slot=16", 1, 15,
               "value 16 for 'slot' of activate does not fit in 4 bits (expected 0..15)");
  expect_error("read_host host=0x100000000", 1, 16,
               "value 0x100000000 for 'host' of read_host does not fit in 32 bits (expected "
               "0..4294967295)");
  expect_error("read_host dest=4", 1, 16,
               "value 4 for 'dest' of read_host does not fit in 2 bits (expected 0..3)");
  expect_error("matmul ub=12a", 1, 11,
               "'12a' is not a number for 'ub' (expected decimal or 0x hex, at most 2^64-1)");
  expect_error("matmul ub=-1", 1, 11,
               "'-1' is not a number for 'ub' (expected decimal or 0x hex, at most 2^64-1)");
  expect_error("matmul ub=0x", 1, 11,
               "'0x' is not a number for 'ub' (expected decimal or 0x hex, at most 2^64-1)");
  expect_error("matmul ub=99999999999999999999", 1, 11,
               "'99999999999999999999' is not a number for 'ub' (expected decimal or 0x hex, at "
               "most 2^64-1)");
  expect_error("matmul ub=", 1, 11, "'ub=' has no value");
  expect_error("matmul stride=1", 1, 8,
               "unknown operand 'stride' for matmul (expected one of: ub=, acc=, inner=, outer=, "
               "inner_stride=, outer_stride=, acc, a_unsigned, w_unsigned, switch)");
  expect_error("matmul switch=1", 1, 8,
               "'switch' is a flag: write it as a bare word, without '=1'");
  expect_error("matmul ub", 1, 8, "'ub' needs a value (expected ub=<value>)");
  expect_error("activate acc", 1, 10, "'acc' needs a value (expected acc=<value>)");
  expect_error("matmul ub=1 inner=2 ub=3", 1, 21,
               "'ub=3' sets the same field as 'ub=1' at column 8 (each field at most once)");
  expect_error("read_host addr=1 ub=2", 1, 18,
               "'ub=2' sets the same field as 'addr=1' at column 11 (each field at most once)");
  expect_error("matmul acc acc", 1, 12,
               "'acc' sets the same field as 'acc' at column 8 (each field at most once)");
  expect_error("halt now", 1, 6, "halt takes no operands, found 'now'");
  expect_error("write_host dest=param", 1, 12,
               "unknown operand 'dest' for write_host (expected one of: addr=, ub=, rows=, host=)");
  expect_error("activate func=tanh", 1, 15,
               "func=tanh is not a function (expected identity, relu, clamp or lut)");
  expect_error("read_host dest=dram", 1, 16,
               "dest=dram is not a destination (expected ub, param, lut or a number 0..3)");
  expect_error("1abc: nop", 1, 1,
               "invalid label '1abc:' (expected letters, digits, '_' or '.', not starting with a "
               "digit, then ':')");
  expect_error("\n\n\t.inst", 3, 7,
               ".inst takes exactly one operand (expected .inst 0x<1 to 32 hex digits>, bit 127 "
               "first)");
  expect_error(".inst 0x1 0x2", 1, 11,
               ".inst takes exactly one operand (expected .inst 0x<1 to 32 hex digits>, bit 127 "
               "first)");
  expect_error(".inst 1234", 1, 7,
               "'1234' is not a hex word (expected .inst 0x<1 to 32 hex digits>, bit 127 first)");
  expect_error(".inst 0x12g4", 1, 11,
               "'g' is not a hex digit (expected .inst 0x<1 to 32 hex digits>, bit 127 first)");
  expect_error(".inst 0x000000000000000000000000000000007", 1, 7,
               "'0x000000000000000000000000000000007' has 33 hex digits (expected .inst 0x<1 to "
               "32 hex digits>, bit 127 first)");
}

TEST(Assembler, DefaultFileNameInErrors) {
  try {
    assemble("bogus");
    FAIL();
  } catch (const AsmError& e) {
    EXPECT_STREQ(
        e.what(),
        "<input>:1:1: unknown mnemonic 'bogus' (expected one of: nop, read_host, "
        "read_weights, "
        "matmul, activate, write_host, sync, halt, read_vmem, write_vmem, load_weights, "
        "matmul_bf16, acc_to_vmem, transpose, vector, ici_send, ici_recv, dwconv, fadd, fsub, "
        "fsubr, fmul, fmax, fmin, "
        "flt, fle, feq, iadd, isub, isubr, and, or, xor, andn, shl, shr, sra, ilt, ieq, "
        "f2i, i2f, bf16, lsum, lmax, lmin, rsum, rmax, rmin, align, .inst)");
    EXPECT_EQ(e.file(), "<input>");
  }
}

TEST(Assembler, EncodeProgramConcatenates) {
  std::vector<uint8_t> b = encode_program(assemble("nop\nhalt\n"));
  ASSERT_EQ(b.size(), 32u);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[16], 0x07);
}

// Random instruction words, mostly valid, some with bad opcodes or reserved bits.
std::vector<uint8_t> random_program(std::mt19937_64& rng, size_t count) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < count; ++i) {
    InstrBytes w;
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    w[0] = (rng() % 10 == 0) ? w[0] : static_cast<uint8_t>(w[0] & 7);
    if (rng() % 3 != 0 && w[0] < 8) {
      // Clear the reserved bits so that the word decodes.
      InstrBytes clean{};
      clean[0] = w[0];
      for (const FieldInfo& f : instruction_fields(static_cast<Opcode>(w[0]))) {
        set_field(clean, f.bits, get_field(w, f.bits));
      }
      w = clean;
    }
    bytes.insert(bytes.end(), w.begin(), w.end());
  }
  return bytes;
}

TEST(Disassembler, RoundTripIsExactForAnyBytes) {
  std::mt19937_64 rng(4242);
  int raw_lines = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> bytes = random_program(rng, 50);
    std::string text = disassemble_program(bytes, "rand.bin");
    std::vector<uint8_t> again = encode_program(assemble(text, "rand.s"));
    ASSERT_EQ(again, bytes) << text;
    // decode_program agrees with disassemble_program.
    EXPECT_EQ(encode_program(decode_program(bytes)), bytes);
    for (size_t pos = text.find(".inst"); pos != std::string::npos;
         pos = text.find(".inst", pos + 1)) {
      ++raw_lines;
    }
  }
  EXPECT_GT(raw_lines, 100);  // the raw-word path was exercised
}

TEST(Disassembler, ProgramTextLooksLikeTheDocs) {
  std::vector<uint8_t> bytes =
      encode_program(assemble("read_host ub=0 rows=16 host=0x1000\nmatmul inner=16 switch\n.inst "
                              "0x8000000000000000000000000000007\n"));
  EXPECT_EQ(disassemble_program(bytes),
            "read_host    ub=0 rows=16 host=0x1000\n"
            "matmul       ub=0 acc=0 inner=16 outer=1 inner_stride=1 outer_stride=0 switch\n"
            ".inst 0x08000000000000000000000000000007  # ERR_RESERVED: halt: reserved bits 127:8 "
            "must be zero, but bit 123 is set\n");
  EXPECT_EQ(disassemble_program({}), "");
}

TEST(Disassembler, SizeNotAMultipleOf16IsAClearError) {
  std::vector<uint8_t> bytes(37, 0);
  try {
    disassemble_program(bytes, "prog.bin");
    FAIL();
  } catch (const BinaryError& e) {
    EXPECT_STREQ(e.what(),
                 "prog.bin: size 37 bytes is not a multiple of 16 (each instruction is 16 bytes; "
                 "5 trailing bytes after 2 instructions)");
  }
  EXPECT_THROW(decode_program(bytes), BinaryError);
}

TEST(Disassembler, LoadBinaryChecksTheFile) {
  std::string path = test_support::temp_dir() + "tpu_driver_load_binary_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    std::vector<uint8_t> b = encode_program(assemble("nop\nhalt"));
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  EXPECT_EQ(load_binary(path).size(), 32u);
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.put('\x01');
  }
  try {
    load_binary(path);
    FAIL();
  } catch (const BinaryError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": size 33 bytes is not a multiple of 16"),
              std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
  try {
    load_binary(path);
    FAIL();
  } catch (const BinaryError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open for reading");
  }
}

}  // namespace
}  // namespace tpu

namespace tpu {
namespace {

// Text that is not assembly text: the byte and its column; a leading UTF-8 byte-order mark is
// skipped; echoed tokens are cut to a readable length.
TEST(Assembler, BytesThatAreNotText) {
  expect_error(std::string("nop\nha\0lt\n", 10), 2, 3,
               "NUL byte (0x00): this is not assembly text (a binary file? expected a .s file of "
               "text lines)");
  expect_error(std::string("nop # \0\n", 8), 1, 7,
               "NUL byte (0x00): this is not assembly text (a binary file? expected a .s file of "
               "text lines)");
  expect_error(
      "halt\x01\n", 1, 5,
      "unexpected byte 0x01 (a control character) (expected printable ASCII outside comments)");
  expect_error("n\xc3\xa9p\n", 1, 2,
               "unexpected byte 0xc3 (not ASCII) (expected printable ASCII outside comments)");
  EXPECT_EQ(assemble("nop # caf\xc3\xa9 \t\n").size(), 1u);  // UTF-8 in a comment is fine
  EXPECT_EQ(assemble("\xEF\xBB\xBFnop\nhalt\n").size(), 2u);
  expect_error(
      "\xEF\xBB\xBF"
      "bogus\n",
      1, 1,
      "unknown mnemonic 'bogus' (expected one of: nop, read_host, read_weights, matmul, activate, "
      "write_host, sync, halt, read_vmem, write_vmem, load_weights, matmul_bf16, acc_to_vmem, "
      "transpose, vector, ici_send, ici_recv, dwconv, fadd, fsub, fsubr, fmul, fmax, fmin, flt, "
      "fle, feq, "
      "iadd, isub, isubr, "
      "and, or, xor, andn, shl, shr, sra, ilt, ieq, f2i, i2f, bf16, lsum, lmax, lmin, rsum, rmax, "
      "rmin, align, .inst)");
  expect_error("nop\n\xEF\xBB\xBFhalt\n", 2, 1,
               "unexpected byte 0xef (not ASCII) (expected printable ASCII outside comments)");
  const std::string token = "x" + std::string(200000, 'a') + "z";
  expect_error("nop " + token + "\n", 1, 5,
               "nop takes no operands, found 'xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaz (200002 "
               "characters)'");
}

// The size of a binary is checked before it is read.
TEST(Assembler, LoadBinaryRefusesDirectoriesAndHugeFiles) {
  try {
    load_binary(test_support::temp_dir());
    ADD_FAILURE() << "a directory was loaded";
  } catch (const BinaryError& e) {
    EXPECT_NE(std::string(e.what()).find(": is a directory (expected a binary program file)"),
              std::string::npos)
        << e.what();
  }
  const std::string big = test_support::temp_dir() + "/too_big.bin";
  {
    std::ofstream f(big, std::ios::binary);
    f.seekp(std::streamoff(kMaxProgramBytes) + 16 - 1);
    f.put('\0');
  }
  try {
    load_binary(big);
    ADD_FAILURE() << "a file over kMaxProgramBytes was loaded";
  } catch (const BinaryError& e) {
    EXPECT_EQ(std::string(e.what()),
              big +
                  ": 16777232 bytes is larger than any program (at most 16777216 bytes = "
                  "1048576 instructions, the command area)");
  }
  std::remove(big.c_str());
}

}  // namespace
}  // namespace tpu

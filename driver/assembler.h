// SPDX-License-Identifier: Apache-2.0
// Text <-> binary for tpu-rtl programs, in the assembly syntax of docs/isa.md.
//
// Beyond isa.md the assembler accepts one directive, `.inst 0x<up to 32 hex digits>`, which
// places a raw 128-bit instruction word (bit 127 first). The disassembler prints it for
// words that do not decode (bad opcode, reserved bits set), so that disassembly of any binary
// reassembles to exactly the same bytes, and so that firmware can exercise the chip's
// ERR_OPCODE / ERR_RESERVED paths.
//
// The assembler checks syntax and field widths only, never chip limits (rows = 0, UB ranges,
// ...): those are the chip's static checks (tpu::check), and programs that trip them on
// purpose must be writable.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "isa.h"

namespace tpu {

// A syntax error in assembly text. what() is "file:line:col: message".
class AsmError : public std::runtime_error {
 public:
  AsmError(std::string file, int line, int column, std::string message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }      // 1-based
  int column() const { return column_; }  // 1-based, in bytes (a tab counts as one)
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string message_;
};

// A binary program that is not a whole number of 16-byte instructions, or cannot be read.
// what() is "file: message".
class BinaryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Assembles a whole program. Throws AsmError at the first error.
std::vector<Instruction> assemble(std::string_view text, std::string_view filename = "<input>");

// Concatenated encode() of every instruction (16 bytes each).
std::vector<uint8_t> encode_program(const std::vector<Instruction>& program);

// Splits a binary into instructions; words that do not decode become RawInstruction.
// Throws BinaryError if bytes.size() is not a multiple of 16.
std::vector<Instruction> decode_program(const std::vector<uint8_t>& bytes,
                                        std::string_view filename = "<binary>");

// One line per instruction (disassemble()), words that do not decode as `.inst` with a
// comment giving the decode error. assemble(disassemble_program(b)) encodes to exactly b.
// Throws BinaryError if bytes.size() is not a multiple of 16.
std::string disassemble_program(const std::vector<uint8_t>& bytes,
                                std::string_view filename = "<binary>");

// The largest program: the device's command area (Device::kCmdEnd - kCmdBase), 1M instructions.
constexpr size_t kMaxProgramBytes = size_t{16} << 20;

// Reads a binary program file. Throws BinaryError if it is a directory, cannot be read, is
// larger than kMaxProgramBytes (checked before reading) or its size is not a multiple of 16.
std::vector<uint8_t> load_binary(const std::string& path);

}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness: the assembler (tpu::assemble) on arbitrary text.
// Invariants checked: assemble() either succeeds or throws AsmError (nothing else escapes);
// a program that assembles disassembles to text that assembles to exactly the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "assembler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<tpu::Instruction> program;
  try {
    program = tpu::assemble(text, "fuzz.s");
  } catch (const tpu::AsmError& e) {
    // Expected for most inputs; the message must name a position.
    if (e.line() < 1 || e.column() < 1) {
      std::fprintf(stderr, "AsmError without a position: %s\n", e.what());
      std::abort();
    }
    return 0;
  }
  const std::vector<uint8_t> bytes = tpu::encode_program(program);
  const std::string listing = tpu::disassemble_program(bytes, "fuzz.bin");
  const std::vector<uint8_t> again = tpu::encode_program(tpu::assemble(listing, "listing.s"));
  if (again != bytes) {
    std::fprintf(stderr, "assemble(disassemble(b)) != b for:\n%s\n", listing.c_str());
    std::abort();
  }
  return 0;
}

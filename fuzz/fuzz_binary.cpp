// SPDX-License-Identifier: Apache-2.0
// libFuzzer harness: a binary program, as tpusim and the driver load it.
//   * decode_program / disassemble_program accept any multiple of 16 bytes (else BinaryError),
//     and assemble(disassemble_program(b)) encodes to exactly b (the round trip of
//     driver/assembler.h);
//   * tpu::check() and tpu::decode() agree with each other on every word;
//   * the golden model runs the program (as a command buffer in host memory) to its end
//     without crashing. Small UB / ACC sizes bound the work of any one instruction.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "assembler.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  std::vector<tpu::Instruction> program;
  try {
    program = tpu::decode_program(bytes, "fuzz.bin");
  } catch (const tpu::BinaryError&) {
    if (size % 16 == 0) fail("BinaryError for a multiple of 16 bytes");
    try {
      tpu::disassemble_program(bytes, "fuzz.bin");
      fail("disassemble_program accepted a size that is not a multiple of 16");
    } catch (const tpu::BinaryError&) {
    }
    return 0;
  }
  if (size % 16 != 0) fail("decode_program accepted a size that is not a multiple of 16");
  const std::string listing = tpu::disassemble_program(bytes, "fuzz.bin");
  std::vector<uint8_t> again;
  try {
    again = tpu::encode_program(tpu::assemble(listing, "listing.s"));
  } catch (const tpu::AsmError& e) {
    fail(std::string("the disassembly does not assemble: ") + e.what() + "\n" + listing);
  }
  if (again != bytes) fail("assemble(disassemble_program(b)) != b:\n" + listing);

  tpu::ChipParams params = tpu::ChipParams::with_n(size > 0 && (data[0] & 1) ? 4 : 16);
  params.ub_rows = 96;
  params.acc_rows = 64;
  // Half the inputs on the training configuration (a small VMEM), half on the int8 chip,
  // where opcodes 0x08..0x0E are unknown.
  params.vmem_rows = size > 0 && (data[0] & 2) ? 64 : 0;
  for (size_t i = 0; i + 16 <= size; i += 16) {
    // decode for this chip: without VMEM the training opcodes are unknown (docs/isa.md).
    tpu::InstrBytes word;
    std::copy(data + i, data + i + 16, word.begin());
    const tpu::DecodeResult d = tpu::decode(word, params);
    const tpu::ErrorCode c = tpu::check(program[i / 16], params);
    if (!d.ok() && c != d.error)
      fail("check() and decode() disagree on word " + std::to_string(i / 16));
    if (d.ok() && tpu::encode(d.instr) != tpu::encode(program[i / 16])) fail("decode mismatch");
  }

  // Run it: the program at 0x1000, data around it; every address the program names is legal
  // to ask for (the memory model answers failures for unmapped ones).
  tpu::RegionMemory mem;
  mem.add_region(0x1000, 0x1000 + size);
  mem.add_region(0x10000, 0x10000);
  mem.load(0x1000, bytes);
  tpu::GoldenModel model(mem, params);
  if (size >= 32 && (data[1] & 1))
    model.set_dma_window(int(data[2] % 8), 0x1000, uint32_t(0x1000 + size));
  const uint32_t count = uint32_t(size / 16) + (size > 0 ? data[size - 1] % 3 : 0);
  (void)model.run(0x1000, count);
  (void)model.run(0x1000, count);  // state persists across runs
  return 0;
}

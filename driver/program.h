// SPDX-License-Identifier: Apache-2.0
// ProgramBuilder: emits tpu-rtl instructions one call at a time, checking every argument
// against the chip's parameters (ChipParams) before it can reach a chip.
//
// Everything the chip would reject at decode (docs/isa.md "Errors": field ranges, UB / ACC /
// PARAM / LUT rows, alignment, host ranges, weight-tile accounting) is rejected here with a
// ProgramError naming the instruction, the argument, its value and the allowed range.
// A program is just the std::vector<Instruction> that finish() returns; run it with
// Device::run (device.h). To write deliberately bad programs (tests of the chip's error
// paths), build the vector by hand or with the assembler instead.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa.h"

namespace tpu {

// An argument the chip would reject. what() is one line, e.g.
//   "matmul (instruction 7): acc_addr + rows - 1 = 2050 is out of range (allowed 0..2047: AccRows =
//   2048)"
class ProgramError : public std::invalid_argument {
 public:
  ProgramError(std::string instruction, std::string argument, const std::string& what);
  const std::string& instruction() const { return instruction_; }  // mnemonic, "read_host"
  const std::string& argument() const { return argument_; }        // "acc_addr"

 private:
  std::string instruction_;
  std::string argument_;
};

// A host byte range [addr, addr + size) a program may use for DMA (a registered host buffer).
struct HostRange {
  uint32_t addr = 0;
  uint32_t size = 0;
  std::string name;
};

// Flags of matmul(ub, acc, rows, flags); combine with |.
enum MatmulFlag : unsigned {
  kNoFlags = 0,
  kAccumulate = 1u << 0,     // add to the accumulators instead of overwriting them
  kAUnsigned = 1u << 1,      // activations are uint8 (else int8)
  kWUnsigned = 1u << 2,      // weights are uint8 (else int8)
  kSwitchWeights = 1u << 3,  // first make the next loaded weight tile active
};

class ProgramBuilder {
 public:
  // Throws std::invalid_argument if params are invalid (ChipParams::validate).
  explicit ProgramBuilder(const ChipParams& params);

  const ChipParams& params() const { return params_; }

  // Host ranges the program may DMA to/from: when not empty, every host byte range of an
  // instruction must lie inside one of them (the driver's view of the DMA windows).
  void set_host_ranges(std::vector<HostRange> ranges);
  const std::vector<HostRange>& host_ranges() const { return host_ranges_; }

  // ---- DMA in: host memory -> UB / quantization slots / LUT
  // UB rows [ub_row, ub_row + rows) <- host bytes [host_addr, host_addr + rows * N).
  ProgramBuilder& read_host(uint32_t ub_row, uint32_t rows, uint32_t host_addr);
  // Quantization slots [first_slot, first_slot + slots) <- `slots` consecutive slot images of
  // 12*N bytes (bias[N], mult[N], misc[N], int32 little-endian; isa.md read_host).
  ProgramBuilder& read_params(uint32_t first_slot, uint32_t slots, uint32_t host_addr);
  // The 256-byte activation LUT.
  ProgramBuilder& read_lut(uint32_t host_addr);
  // The general form (any dest, any rows).
  ProgramBuilder& read_host(const ReadHost& in);

  // ---- weights: `tiles` N x N tiles from host_addr (tile t at host_addr + t*N*N).
  ProgramBuilder& read_weights(uint32_t tiles, uint32_t host_addr);

  // ---- MXU. Contiguous form: UB rows [ub_addr, ub_addr + rows) -> ACC rows
  // [acc_addr, acc_addr + rows), rows in 1..4095. flags: MatmulFlag values.
  ProgramBuilder& matmul(uint32_t ub_addr, uint32_t acc_addr, uint32_t rows, unsigned flags);
  // The general 2-D form (isa.md matmul).
  ProgramBuilder& matmul(const Matmul& in);

  // ---- activation unit. Simple form: ACC rows [acc_addr, acc_addr + rows) through slot
  // `slot` and `func` -> UB rows [ub_addr, ub_addr + rows), no pooling, rows in 1..4095.
  ProgramBuilder& activate(uint32_t acc_addr, uint32_t ub_addr, uint32_t rows, uint32_t slot,
                           ActFunc func = ActFunc::Identity, bool out_unsigned = false);
  // The general form (image shape, pooling, UB stride).
  ProgramBuilder& activate(const Activate& in);

  // ---- DMA out: UB rows [ub_row, ub_row + rows) -> host bytes [host_addr, host_addr + rows*N).
  ProgramBuilder& write_host(uint32_t ub_row, uint32_t rows, uint32_t host_addr);
  ProgramBuilder& write_host(const WriteHost& in);

  ProgramBuilder& sync();
  ProgramBuilder& nop();
  ProgramBuilder& halt();

  // Any decoded instruction, through the same checks. RawInstruction is rejected.
  ProgramBuilder& append(const Instruction& instr);

  // ---- state
  // Tiles pushed by read_weights and not yet made active by a matmul with switch, and the
  // most that may wait (WFifoTiles + 2).
  uint32_t pending_weight_tiles() const { return pending_tiles_; }
  uint32_t weight_capacity() const { return params_.wfifo_tiles + 2; }
  bool has_active_weights() const { return has_active_; }
  bool halted() const { return halted_; }
  size_t size() const { return program_.size(); }
  const std::vector<Instruction>& instructions() const { return program_; }

  // The program, ending with halt (appended unless the last call was halt()).
  std::vector<Instruction> finish();

 private:
  // Final check through tpu::check (the reference of the static checks), then append.
  void push(const Instruction& instr, const char* mnemonic);
  void check_not_halted(const char* mnemonic) const;
  void check_host(const char* mnemonic, const char* argument, uint32_t host_addr,
                  uint64_t bytes) const;
  [[noreturn]] void fail(const char* mnemonic, const char* argument,
                         const std::string& message) const;

  ChipParams params_;
  std::vector<HostRange> host_ranges_;
  std::vector<Instruction> program_;
  uint32_t pending_tiles_ = 0;
  bool has_active_ = false;
  bool halted_ = false;
};

}  // namespace tpu

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
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp_sequences.h"
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

  // ---- training configuration (isa.md "Training configuration"; the chip needs VMEM,
  // params().vmem_rows > 0, else every call below fails). program_train.cpp.
  // VMEM rows [vmem_row, vmem_row + rows) <- / -> host rows of 4N bytes (bf16: 2N bytes),
  // contiguous from host_addr.
  ProgramBuilder& read_vmem(uint32_t vmem_row, uint32_t rows, uint32_t host_addr,
                            bool bf16 = false);
  ProgramBuilder& read_vmem(const ReadVmem& in);
  ProgramBuilder& write_vmem(uint32_t vmem_row, uint32_t rows, uint32_t host_addr,
                             bool bf16 = false);
  ProgramBuilder& write_vmem(const WriteVmem& in);
  // `tiles` bf16 tiles, tile t from the N contiguous VMEM rows at vmem_row + t*N (W[k][n] =
  // row k, lane n; transposed: W[k][n] = row n, lane k).
  ProgramBuilder& load_weights(uint32_t vmem_row, uint32_t tiles, bool transpose = false);
  ProgramBuilder& load_weights(const LoadWeights& in);
  // VMEM rows [vmem_row, vmem_row + rows) -> ACC rows [acc_addr, ...), rows in 1..4095;
  // flags: kAccumulate, kSwitchWeights.
  ProgramBuilder& matmul_bf16(uint32_t vmem_row, uint32_t acc_addr, uint32_t rows, unsigned flags);
  ProgramBuilder& matmul_bf16(const MatmulBf16& in);
  ProgramBuilder& acc_to_vmem(uint32_t acc_addr, uint32_t vmem_row, uint32_t rows);
  ProgramBuilder& acc_to_vmem(const AccToVmem& in);
  // `blocks` contiguous N x N blocks from src (block b at src + b*N) to dst (dst + b*N).
  ProgramBuilder& transpose(uint32_t src, uint32_t dst, uint32_t blocks);
  ProgramBuilder& transpose(const Transpose& in);
  ProgramBuilder& vector(const Vector& in);
  // Element-wise over contiguous tensors of `rows` rows (as many `vector` instructions of at
  // most 255 x 1023 rows as needed). B: the tensor at b (vop), the immediate in every lane
  // (vop_imm), one row for every row (vop_row); unary functions have no B.
  ProgramBuilder& vop(VecFunc f, uint32_t dst, uint32_t a, uint32_t b, uint32_t rows);
  ProgramBuilder& vop_imm(VecFunc f, uint32_t dst, uint32_t a, uint32_t imm, uint32_t rows);
  ProgramBuilder& vop_row(VecFunc f, uint32_t dst, uint32_t a, uint32_t b_row, uint32_t rows);
  ProgramBuilder& vop_unary(VecFunc f, uint32_t dst, uint32_t a, uint32_t rows);
  // dst = mask ? x : y per lane (mask lanes all-ones or zero, as the compares write):
  // or(and(x, mask), andn(y, mask)); `scratch` is a tensor of `rows` rows.
  ProgramBuilder& vselect(uint32_t dst, uint32_t mask, uint32_t x, uint32_t y, uint32_t rows,
                          uint32_t scratch);
  // dst = f(src) over `rows` rows by the isa.md sequence (fp_sequences.h). `scratch` holds
  // fp_sequence(f).scratch tensors of `rows` rows each, back to back; dst may equal src; no
  // other overlap is allowed.
  ProgramBuilder& vfunction(FpFunction f, uint32_t dst, uint32_t src, uint32_t rows,
                            uint32_t scratch);
  ProgramBuilder& vexp(uint32_t dst, uint32_t src, uint32_t rows, uint32_t scratch) {
    return vfunction(FpFunction::Exp, dst, src, rows, scratch);
  }
  ProgramBuilder& vlog(uint32_t dst, uint32_t src, uint32_t rows, uint32_t scratch) {
    return vfunction(FpFunction::Log, dst, src, rows, scratch);
  }
  ProgramBuilder& vrcp(uint32_t dst, uint32_t src, uint32_t rows, uint32_t scratch) {
    return vfunction(FpFunction::Rcp, dst, src, rows, scratch);
  }
  ProgramBuilder& vrsqrt(uint32_t dst, uint32_t src, uint32_t rows, uint32_t scratch) {
    return vfunction(FpFunction::Rsqrt, dst, src, rows, scratch);
  }
  ProgramBuilder& vsqrt(uint32_t dst, uint32_t src, uint32_t rows, uint32_t scratch) {
    return vfunction(FpFunction::Sqrt, dst, src, rows, scratch);
  }

  // ---- pod configuration (isa.md "Inter-chip links"; the chip needs links,
  // params().ici_links > 0). program_ici.cpp. Whether a link is connected is the pod's
  // business (pod.h): the builder checks only link < IciLinks.
  // VMEM rows [vmem_row, vmem_row + rows) as one message on `link`.
  ProgramBuilder& ici_send(uint32_t link, uint32_t vmem_row, uint32_t rows);
  ProgramBuilder& ici_send(const IciSend& in);
  // One message of `rows` rows from `link` into VMEM rows [vmem_row, vmem_row + rows),
  // copied or added (fp32 / int32) to what the rows hold.
  ProgramBuilder& ici_recv(uint32_t link, uint32_t vmem_row, uint32_t rows,
                           IciReduce reduce = IciReduce::None);
  ProgramBuilder& ici_recv(const IciRecv& in);

  // ---- depthwise configuration (isa.md "Depthwise configuration"; needs dw_width > 0)
  // dwconv: named errors for a chip without the unit, a kernel or pad out of range, an image
  // smaller than the kernel, input / weight rows past UbRows, output rows past AccRows.
  ProgramBuilder& dwconv(const DwConv& in);

  // Any decoded instruction, through the same checks. RawInstruction is rejected.
  ProgramBuilder& append(const Instruction& instr);

  // ---- state
  // Tiles pushed by read_weights and not yet made active by a matmul with switch, and the
  // most that may wait (WFifoTiles + 2).
  uint32_t pending_weight_tiles() const { return static_cast<uint32_t>(pending_bf16_.size()); }
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
  void check_vmem(const char* mnemonic) const;
  void check_ici(const char* mnemonic, uint32_t link, uint64_t vmem_row, uint64_t rows) const;
  // The field checks read_vmem and write_vmem share (rows, host_stride, host range).
  void check_vmem_dma(const char* mnemonic, const VmemDma& in) const;
  void check_fits(const char* mnemonic, const char* argument, uint64_t value, BitField f) const;
  // Weight-tile accounting of a matmul / matmul_bf16 (ERR_NO_WEIGHTS, ERR_WEIGHT_TYPE).
  void check_weight_tile(const char* mnemonic, bool switch_weights, bool want_bf16) const;
  void take_weight_tile(bool switch_weights);
  void check_tile_room(const char* mnemonic, uint32_t tiles) const;  // ERR_WEIGHT_OVERFLOW
  // One step of vop*: contiguous rows, B as `bmode` / `b`.
  void vop_tensor(VecFunc f, uint32_t dst, uint32_t a, BMode bmode, uint32_t b, uint32_t rows);

  ChipParams params_;
  std::vector<HostRange> host_ranges_;
  std::vector<Instruction> program_;
  std::deque<bool> pending_bf16_;  // tiles pushed, not yet active: is it a bf16 tile?
  bool has_active_ = false;
  bool active_bf16_ = false;
  bool halted_ = false;
};

}  // namespace tpu

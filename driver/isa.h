// SPDX-License-Identifier: Apache-2.0
// The tpu-rtl instruction set (docs/isa.md) as C++: opcodes, error codes, the bit layout of
// every field, one struct per instruction, encode/decode, disassembly of one instruction and
// the static checks (error codes 1-8).
//
// This header is the single source of truth for the encoding on the software side: the
// assembler, the golden model and the program builder all go through it, never through their
// own bit arithmetic.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tpu {

constexpr std::size_t kInstrBytes = 16;
// One instruction as stored in host memory: little-endian, byte 0 holds bits 7:0.
using InstrBytes = std::array<uint8_t, kInstrBytes>;

enum class Opcode : uint8_t {
  Nop = 0x00,
  ReadHost = 0x01,
  ReadWeights = 0x02,
  Matmul = 0x03,
  Activate = 0x04,
  WriteHost = 0x05,
  Sync = 0x06,
  Halt = 0x07,
  // Training configuration (isa.md "Training configuration"): only on a chip with VMEM
  // (ChipParams::vmem_rows > 0); otherwise they fault ERR_OPCODE like any unknown opcode.
  ReadVmem = 0x08,
  WriteVmem = 0x09,
  LoadWeights = 0x0A,
  MatmulBf16 = 0x0B,
  AccToVmem = 0x0C,
  Transpose = 0x0D,
  Vector = 0x0E,
  // Pod configuration (isa.md "Inter-chip links"): only on a chip with links
  // (ChipParams::ici_links > 0); otherwise they fault ERR_OPCODE like any unknown opcode.
  IciSend = 0x0F,
  IciRecv = 0x10,
  // Depthwise configuration (isa.md "Depthwise configuration"): only on a chip with the
  // depthwise unit (ChipParams::dw_width > 0); otherwise it faults ERR_OPCODE.
  DwConv = 0x11,
};
constexpr int kNumOpcodes = 18;
constexpr uint8_t kFirstTrainingOpcode = 0x08;
constexpr uint8_t kLastTrainingOpcode = 0x0E;
constexpr uint8_t kFirstIciOpcode = 0x0F;
constexpr uint8_t kLastIciOpcode = 0x10;
constexpr uint8_t kDwOpcode = 0x11;

// An opcode of the instruction set (0x00..0x11), whatever the chip's configuration.
bool is_valid_opcode(uint8_t value);
bool is_training_opcode(uint8_t value);  // 0x08..0x0E
bool is_ici_opcode(uint8_t value);       // 0x0F..0x10
bool is_dw_opcode(uint8_t value);        // 0x11
// Assembly mnemonic ("read_host"); "?" for a value that is not an opcode.
std::string_view mnemonic(Opcode op);

// Error codes exactly as numbered and named in the isa.md error table.
enum class ErrorCode : uint8_t {
  ERR_NONE = 0,
  ERR_OPCODE = 1,
  ERR_RESERVED = 2,
  ERR_FIELD = 3,
  ERR_UB_RANGE = 4,
  ERR_ACC_RANGE = 5,
  ERR_PARAM_RANGE = 6,
  ERR_ALIGN = 7,
  ERR_HOST_RANGE = 8,
  ERR_AXI_READ = 9,
  ERR_AXI_WRITE = 10,
  ERR_CMD_OVERRUN = 11,
  ERR_NO_WEIGHTS = 12,
  ERR_WEIGHT_OVERFLOW = 13,
  ERR_VMEM_RANGE = 14,
  ERR_WEIGHT_TYPE = 15,
  // Inter-chip links (isa.md "Errors of the link instructions"); ERR_CODE is 5 bits wide.
  ERR_ICI_LINK = 16,
  ERR_ICI_SIZE = 17,
  ERR_ICI_DEADLOCK = 18,
};
constexpr int kNumErrorCodes = 19;

// "ERR_UB_RANGE"; "ERR_UNKNOWN" for a value outside the table (e.g. read from a register).
std::string_view error_name(ErrorCode code);
// One line from the isa.md table, e.g. "UB row out of range".
std::string_view error_description(ErrorCode code);
// Codes 1-8, 14 and 16: detected when the instruction is decoded, before it has any effect.
bool is_static_error(ErrorCode code);

// Chip parameters (isa.md "Machine state"); the chip reports them in PARAM_* registers.
struct ChipParams {
  uint32_t N = 16;
  uint32_t ub_rows = 8192;
  uint32_t acc_rows = 2048;
  uint32_t wfifo_tiles = 4;
  uint32_t qp_slots = 16;
  uint32_t axi_width = 128;  // bits; default min(8*N, 128)
  // VMEM rows (isa.md "Training configuration"); 0 = the int8 configuration without the float
  // hardware (opcodes 0x08..0x0E fault ERR_OPCODE), which is what with_n() gives.
  uint32_t vmem_rows = 0;
  // 32768 rows (2 MiB at N = 16): the Keras example's pooled activation at batch 32 (21,632
  // rows) fits whole (docs/training.md). CMake TPU_SIM_TRAIN_VMEM_ROWS builds the RTL so.
  static constexpr uint32_t kTrainingVmemRows = 32768;
  // Bytes per cycle of the VMEM port, the training chip's second AXI4 master that carries
  // read_vmem / write_vmem (docs/architecture.md "The VMEM port"): one fp32 VMEM row, 4N, as
  // training() gives; 0 = no VMEM port (read_vmem / write_vmem would share the device-memory
  // port of axi_width bits). Timing only (the timing estimate, the training compiler's cost
  // model): results never depend on it.
  uint32_t vmem_port_bytes = 0;
  // The bytes per cycle read_vmem / write_vmem move: vmem_port_bytes, or without a VMEM port
  // the device-memory port's axi_width / 8.
  uint32_t vmem_dma_bytes_per_cycle() const {
    return vmem_port_bytes != 0 ? vmem_port_bytes : axi_width / 8;
  }
  // Bytes per cycle (one beat) of the weight port, read_weights' own AXI4 read master
  // (isa.md "The weight port", tpu_core WaxiDataWidth / 8): 16..N, a power of two; 0 = none
  // (read_weights shares the device-memory port of axi_width bits). With a port,
  // read_weights' host_addr must be a multiple of it (ERR_ALIGN). Results never depend on it.
  uint32_t weight_port_bytes = 0;
  // The alignment read_weights' host_addr needs: 16, or the weight port's beat.
  uint32_t weight_align() const { return weight_port_bytes > 16 ? weight_port_bytes : 16; }
  // The bytes per cycle read_weights moves: weight_port_bytes, or axi_width / 8.
  uint32_t weight_dma_bytes_per_cycle() const {
    return weight_port_bytes != 0 ? weight_port_bytes : axi_width / 8;
  }
  // Inter-chip links (isa.md "Inter-chip links"); 0 = a chip alone (opcodes 0x0F..0x10 fault
  // ERR_OPCODE). Links need VMEM.
  uint32_t ici_links = 0;
  static constexpr uint32_t kMaxIciLinks = 16;
  // The depthwise unit (isa.md "Depthwise configuration", tpu_dw DwWidth): output lines per
  // pass; 0 = no unit (opcode 0x11 faults ERR_OPCODE), what every other constructor gives.
  uint32_t dw_width = 0;
  static constexpr uint32_t kMaxDwWidth = 64;
  bool has_dw() const { return dw_width != 0; }
  // The training opcodes a chip with VMEM executes, bit k for opcode 0x08 + k; the others fault
  // ERR_OPCODE as on the int8 chip. The golden model executes all of them; an RTL build that
  // implements only some reports that set (driver/device_rtl.cpp, docs/isa.md "Status"), so
  // the golden model run with its parameters matches it.
  static constexpr uint8_t kAllTrainingOps = 0x7F;
  uint8_t training_ops = kAllTrainingOps;
  // True when `opcode` (0x08..0x0E) runs on this chip (VMEM present and its bit set).
  bool executes_training_op(uint8_t opcode) const;

  // The defaults for MXU size n (AxiDataWidth = min(8n, 128)).
  static ChipParams with_n(uint32_t n);
  // with_n(n) plus the training configuration's VMEM (kTrainingVmemRows rows).
  static ChipParams training(uint32_t n);
  // training(n) plus `links` inter-chip links (2 for a ring, 4 for a 2-D torus).
  static ChipParams pod(uint32_t n, uint32_t links);
  bool has_vmem() const { return vmem_rows != 0; }
  bool has_ici() const { return ici_links != 0; }

  uint32_t param_rows() const { return qp_slots * 12; }  // PARAM memory rows of N bytes
  uint32_t lut_rows() const { return 256 / N; }          // LUT rows of N bytes
  uint32_t tile_bytes() const { return N * N; }

  // Throws std::invalid_argument naming the bad parameter unless: N is a power of two in
  // 4..256, 1 <= ub_rows <= 2^24, 1 <= acc_rows <= 2^16, 1 <= qp_slots <= 16,
  // wfifo_tiles >= 1, axi_width is 32, 64 or 128 and divides 8*N, vmem_rows <= 2^16,
  // ici_links <= 16 and ici_links > 0 only with vmem_rows > 0, weight_port_bytes 0 or a power
  // of two in 16..N, dw_width <= kMaxDwWidth.
  void validate() const;
};
bool operator==(const ChipParams& a, const ChipParams& b);

// A field of the 128-bit instruction word: bits [lo + width - 1 : lo].
struct BitField {
  unsigned lo;
  unsigned width;
  constexpr unsigned hi() const { return lo + width - 1; }
  constexpr uint64_t max() const { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }
};

// Bit positions, exactly the tables of isa.md. Bits not covered by a field of an opcode are
// reserved for that opcode.
namespace field {
constexpr BitField kOpcode{0, 8};
// read_host (0x01) and write_host (0x05); write_host has no dest (its bits 9:8 are reserved).
constexpr BitField kHostDest{8, 2};
constexpr BitField kHostLocalAddr{16, 24};
constexpr BitField kHostRows{40, 24};
constexpr BitField kHostAddr{64, 32};
// read_weights (0x02)
constexpr BitField kWeightsTiles{40, 24};
constexpr BitField kWeightsHostAddr{64, 32};
// matmul (0x03)
constexpr BitField kMatmulAcc{8, 1};
constexpr BitField kMatmulAUnsigned{9, 1};
constexpr BitField kMatmulWUnsigned{10, 1};
constexpr BitField kMatmulSwitch{11, 1};
constexpr BitField kMatmulUbAddr{16, 24};
constexpr BitField kMatmulAccAddr{40, 16};
constexpr BitField kMatmulInner{56, 12};
constexpr BitField kMatmulOuter{68, 12};
constexpr BitField kMatmulInnerStride{80, 8};
constexpr BitField kMatmulOuterStride{88, 24};
// activate (0x04)
constexpr BitField kActFunc{8, 2};
constexpr BitField kActOutUnsigned{10, 1};
constexpr BitField kActRaw{11, 1};
constexpr BitField kActAccAddr{16, 16};
constexpr BitField kActUbAddr{32, 24};
constexpr BitField kActWidth{56, 12};
constexpr BitField kActHeight{68, 12};
constexpr BitField kActPoolK{80, 4};
constexpr BitField kActPoolS{84, 4};
constexpr BitField kActUbStride{88, 24};
constexpr BitField kActSlot{112, 4};
constexpr BitField kActPadTop{116, 3};
constexpr BitField kActPadLeft{119, 3};
constexpr BitField kActPadBottom{122, 3};
constexpr BitField kActPadRight{125, 3};
// read_vmem (0x08) and write_vmem (0x09)
constexpr BitField kVdmaBf16{8, 1};
constexpr BitField kVdmaVmemAddr{16, 16};
constexpr BitField kVdmaRows{32, 24};
constexpr BitField kVdmaHostAddr{64, 32};
constexpr BitField kVdmaHostStride{96, 32};
// load_weights (0x0A)
constexpr BitField kLwTranspose{8, 1};
constexpr BitField kLwVmemAddr{16, 16};
constexpr BitField kLwRowStride{32, 16};
constexpr BitField kLwTiles{48, 16};
constexpr BitField kLwTileStride{64, 16};
constexpr BitField kLwRows{80, 9};
// matmul_bf16 (0x0B)
constexpr BitField kMmbAcc{8, 1};
constexpr BitField kMmbSwitch{11, 1};
constexpr BitField kMmbVmemAddr{16, 16};
constexpr BitField kMmbAccAddr{32, 16};
constexpr BitField kMmbInner{48, 12};
constexpr BitField kMmbOuter{60, 12};
constexpr BitField kMmbInnerStride{72, 8};
constexpr BitField kMmbOuterStride{80, 16};
// acc_to_vmem (0x0C)
constexpr BitField kAtvAccAddr{16, 16};
constexpr BitField kAtvVmemAddr{32, 16};
constexpr BitField kAtvRows{48, 24};
// transpose (0x0D)
constexpr BitField kTrSrc{16, 16};
constexpr BitField kTrDst{32, 16};
constexpr BitField kTrBlocks{48, 16};
constexpr BitField kTrSrcStride{64, 16};
constexpr BitField kTrDstStride{80, 16};
constexpr BitField kTrSrcRowStride{96, 16};
// vector (0x0E)
constexpr BitField kVecFunc{8, 6};
constexpr BitField kVecBMode{14, 2};
constexpr BitField kVecDst{16, 16};
constexpr BitField kVecA{32, 16};
constexpr BitField kVecInner{48, 8};
constexpr BitField kVecOuter{56, 10};
constexpr BitField kVecAInnerStride{66, 4};
constexpr BitField kVecAOuterStride{70, 11};
constexpr BitField kVecDstInnerStride{81, 4};
constexpr BitField kVecDstOuterStride{85, 11};
constexpr BitField kVecB{96, 32};
// ici_send (0x0F) and ici_recv (0x10); reduce only for ici_recv
constexpr BitField kIciLink{8, 4};
constexpr BitField kIciReduce{12, 2};
constexpr BitField kIciVmemAddr{16, 16};
constexpr BitField kIciRows{32, 24};
// dwconv (0x11): every bit is a field (no reserved bits)
constexpr BitField kDwAcc{8, 1};
constexpr BitField kDwAUnsigned{9, 1};
constexpr BitField kDwWUnsigned{10, 1};
constexpr BitField kDwStride2{11, 1};
constexpr BitField kDwKernelH{12, 2};
constexpr BitField kDwKernelW{14, 2};
constexpr BitField kDwUbAddr{16, 24};
constexpr BitField kDwAccAddr{40, 16};
constexpr BitField kDwWidth{56, 12};
constexpr BitField kDwHeight{68, 12};
constexpr BitField kDwWAddr{80, 24};
constexpr BitField kDwPadTop{104, 2};
constexpr BitField kDwPadLeft{106, 2};
constexpr BitField kDwPadBottom{108, 2};
constexpr BitField kDwPadRight{110, 2};
constexpr BitField kDwUbStride{112, 16};
}  // namespace field

// A named field of one opcode, named as in the isa.md tables.
struct FieldInfo {
  std::string_view name;
  BitField bits;
};
// The non-reserved fields of `op` (not including the opcode byte), in bit order.
const std::vector<FieldInfo>& instruction_fields(Opcode op);

uint64_t get_field(const InstrBytes& word, BitField f);
// Throws std::out_of_range if `value` does not fit in f.width bits.
void set_field(InstrBytes& word, BitField f, uint64_t value);

// ---------------------------------------------------------------------------------------------
// One struct per instruction. Default values are those of the assembler (isa.md "Assembly
// syntax"), so `Matmul{}` is what `matmul` with no operands assembles to. Fields are
// unsigned integers of at least the field's width; encode() rejects values that do not fit.

enum class HostDest : uint8_t {
  Ub = 0,
  Param = 1,  // quantization slots
  Lut = 2,
  // 3 is encodable (so the chip's ERR_FIELD path can be tested) and faults ERR_FIELD.
};

enum class ActFunc : uint8_t { Identity = 0, Relu = 1, Clamp = 2, Lut = 3 };
std::string_view act_func_name(ActFunc f);  // "identity", "relu", "clamp", "lut"

struct Nop {};
struct Sync {};
struct Halt {};

struct ReadHost {
  HostDest dest = HostDest::Ub;
  uint32_t local_addr = 0;  // 24 bits: first UB / PARAM / LUT row
  uint32_t rows = 1;        // 24 bits
  uint32_t host_addr = 0;
};

struct WriteHost {
  uint32_t ub_addr = 0;  // 24 bits (isa.md: local_addr)
  uint32_t rows = 1;     // 24 bits
  uint32_t host_addr = 0;
};

struct ReadWeights {
  uint32_t tiles = 1;  // 24 bits
  uint32_t host_addr = 0;
};

struct Matmul {
  bool accumulate = false;  // asm flag `acc`
  bool a_unsigned = false;
  bool w_unsigned = false;
  bool switch_weights = false;  // asm flag `switch`
  uint32_t ub_addr = 0;         // 24 bits
  uint16_t acc_addr = 0;
  uint16_t inner = 1;  // 12 bits
  uint16_t outer = 1;  // 12 bits
  uint8_t inner_stride = 1;
  uint32_t outer_stride = 0;  // 24 bits
};

struct Activate {
  ActFunc func = ActFunc::Identity;
  bool out_unsigned = false;
  uint16_t acc_addr = 0;
  uint32_t ub_addr = 0;    // 24 bits
  uint16_t width = 0;      // 12 bits; isa.md: omitted numeric fields default to 0 (faults)
  uint16_t height = 0;     // 12 bits
  uint8_t pool_k = 1;      // 4 bits
  uint8_t pool_s = 1;      // 4 bits
  uint32_t ub_stride = 0;  // 24 bits
  uint8_t slot = 0;        // 4 bits
  // Max-pool padding (3 bits each, < pool_k): window taps in it are skipped (isa.md).
  uint8_t pad_top = 0;
  uint8_t pad_left = 0;
  uint8_t pad_bottom = 0;
  uint8_t pad_right = 0;
  // Raw int32 output (isa.md): saturate_int32(acc + bias) as four UB rows per ACC row; needs
  // pool_k = pool_s = 1, no pads, func identity, a signed output.
  bool raw = false;
  uint32_t padded_height() const { return uint32_t{height} + pad_top + pad_bottom; }
  uint32_t padded_width() const { return uint32_t{width} + pad_left + pad_right; }
  // Output lines and pixels per line: Ho, Wo of isa.md (pool_k <= the padded sizes).
  uint64_t output_height() const { return (padded_height() - pool_k) / pool_s + 1u; }
  uint64_t output_width() const { return (padded_width() - pool_k) / pool_s + 1u; }
  // UB rows per output pixel: 4 (int32 bytes) for raw, else 1.
  static constexpr uint32_t kRawRowsPerPixel = 4;
  uint32_t ub_rows_per_pixel() const { return raw ? kRawRowsPerPixel : 1u; }
  // The last UB row written: ub_addr + (Ho-1)*ub_stride + Wo*rows_per_pixel - 1.
  uint64_t last_ub_row() const {
    return uint64_t{ub_addr} + (output_height() - 1) * ub_stride +
           output_width() * ub_rows_per_pixel() - 1;
  }
  // Accumulator rows read (the activation unit's cycles, one row each): k^2 per output pixel,
  // raw: four per pixel (one UB row written per cycle).
  uint64_t unit_cycles() const {
    return raw ? uint64_t{width} * height * kRawRowsPerPixel
               : output_height() * output_width() * pool_k * pool_k;
  }
};

// ---- training configuration (isa.md "Training configuration")

// read_vmem (0x08) / write_vmem (0x09): host memory <-> VMEM rows.
struct VmemDma {
  bool bf16 = false;  // host rows are bf16 (2N bytes), else 32-bit lanes (4N bytes)
  uint16_t vmem_addr = 0;
  uint32_t rows = 1;  // 24 bits
  uint32_t host_addr = 0;
  uint32_t host_stride = 0;  // bytes between rows; 0 = contiguous
  // Bytes per host row and the step between rows.
  uint32_t row_bytes(uint32_t n) const { return bf16 ? 2 * n : 4 * n; }
  uint64_t step(uint32_t n) const { return host_stride != 0 ? host_stride : row_bytes(n); }
  // Bytes from host_addr to one past the last byte: (rows-1)*step + row_bytes.
  uint64_t host_span(uint32_t n) const { return uint64_t{rows - 1u} * step(n) + row_bytes(n); }
};
struct ReadVmem : VmemDma {};
struct WriteVmem : VmemDma {};

// load_weights (0x0A): N VMEM rows (rounded to bf16) -> a bf16 weight tile, optionally
// transposed, pushed into the weight FIFO.
struct LoadWeights {
  bool transpose = false;
  uint16_t vmem_addr = 0;
  uint16_t row_stride = 1;
  uint16_t tiles = 1;
  uint16_t tile_stride = 0;
  uint16_t rows = 0;  // 9 bits, 1..N rows per tile (the assembler cannot know N: 0 faults)
  uint64_t last_row() const {
    return uint64_t{vmem_addr} + uint64_t{tiles - 1u} * tile_stride +
           uint64_t{rows == 0 ? 0u : rows - 1u} * row_stride;
  }
};

// matmul_bf16 (0x0B): the matmul row pattern over VMEM, bf16 products, fp32 sums.
struct MatmulBf16 {
  bool accumulate = false;      // asm flag `acc`
  bool switch_weights = false;  // asm flag `switch`
  uint16_t vmem_addr = 0;
  uint16_t acc_addr = 0;
  uint16_t inner = 1;  // 12 bits
  uint16_t outer = 1;  // 12 bits
  uint8_t inner_stride = 1;
  uint16_t outer_stride = 0;
  uint64_t last_vmem_row() const {
    return uint64_t{vmem_addr} + uint64_t{outer - 1u} * outer_stride +
           uint64_t{inner - 1u} * inner_stride;
  }
};

// acc_to_vmem (0x0C): ACC rows -> VMEM rows, 32-bit patterns unchanged.
struct AccToVmem {
  uint16_t acc_addr = 0;
  uint16_t vmem_addr = 0;
  uint32_t rows = 1;  // 24 bits
};

// transpose (0x0D): N x N blocks of VMEM.
struct Transpose {
  uint16_t src = 0;
  uint16_t dst = 0;
  uint16_t blocks = 1;
  uint16_t src_stride = 0;
  uint16_t dst_stride = 0;
  uint16_t src_row_stride = 1;
  uint64_t last_src_row(uint32_t n) const {
    return uint64_t{src} + uint64_t{blocks - 1u} * src_stride + uint64_t{n - 1} * src_row_stride;
  }
  uint64_t last_dst_row(uint32_t n) const {
    return uint64_t{dst} + uint64_t{blocks - 1u} * dst_stride + n - 1;
  }
};

// The vector unit's operations (isa.md `vector` func table).
enum class VecFunc : uint8_t {
  FAdd = 0x00,
  FSub = 0x01,
  FSubR = 0x02,
  FMul = 0x03,
  FMax = 0x04,
  FMin = 0x05,
  FLt = 0x06,
  FLe = 0x07,
  FEq = 0x08,
  IAdd = 0x10,
  ISub = 0x11,
  ISubR = 0x12,
  And = 0x13,
  Or = 0x14,
  Xor = 0x15,
  AndN = 0x16,
  Shl = 0x17,
  Shr = 0x18,
  Sra = 0x19,
  ILt = 0x1A,
  IEq = 0x1B,
  F2I = 0x20,
  I2F = 0x21,
  Bf16 = 0x22,
  LSum = 0x28,
  LMax = 0x29,
  LMin = 0x2A,
  RSum = 0x30,
  RMax = 0x31,
  RMin = 0x32,
  Align = 0x38,
};
// "fadd", ...; empty for a value that is not a function (it faults ERR_FIELD).
std::string_view vec_func_name(uint8_t func);
bool is_vec_func(uint8_t func);
bool is_unary_vec_func(uint8_t func);  // f2i, i2f, bf16, lsum, lmax, lmin: no operand B
bool is_row_reduction(uint8_t func);   // rsum, rmax, rmin
bool is_lane_reduction(uint8_t func);  // lsum, lmax, lmin
// All functions, in table order.
const std::vector<VecFunc>& all_vec_funcs();

enum class BMode : uint8_t {
  RowA = 0,    // a row on A's pattern
  RowDst = 1,  // a row on the destination's pattern
  Fixed = 2,   // one row for every element row
  Imm = 3,     // the 32-bit immediate in every lane
};
std::string_view bmode_name(BMode m);  // "a", "dst", "fixed", "imm"

// vector (0x0E).
struct Vector {
  uint8_t func = 0;  // 6 bits; a VecFunc value (others fault ERR_FIELD)
  BMode bmode = BMode::RowA;
  uint16_t dst = 0;
  uint16_t a = 0;
  uint8_t inner = 1;              // 8 bits
  uint16_t outer = 1;             // 10 bits
  uint8_t a_inner_stride = 1;     // 4 bits
  uint16_t a_outer_stride = 0;    // 11 bits
  uint8_t dst_inner_stride = 1;   // 4 bits
  uint16_t dst_outer_stride = 0;  // 11 bits
  uint32_t b = 0;                 // B base row (bmode 0-2) or the immediate (bmode 3)

  VecFunc vec_func() const { return static_cast<VecFunc>(func); }
  uint64_t dst_row(uint32_t o, uint32_t i) const {
    return uint64_t{dst} + uint64_t{o} * dst_outer_stride + uint64_t{i} * dst_inner_stride;
  }
  uint64_t a_row(uint32_t o, uint32_t i) const {
    return uint64_t{a} + uint64_t{o} * a_outer_stride + uint64_t{i} * a_inner_stride;
  }
  // Row of operand B for bmode 0-2.
  uint64_t b_row(uint32_t o, uint32_t i) const;
  uint32_t align_shift() const { return b; }
};

// ---- pod configuration (isa.md "Inter-chip links")

// ici_recv's reduce field: how received lanes combine with the destination row.
enum class IciReduce : uint8_t {
  None = 0,  // copy
  FAdd = 1,  // fp32 add (isa.md "Floating point"), local row first
  IAdd = 2,  // int32 add, wrapping
  // 3 is encodable (so ERR_FIELD can be tested) and faults ERR_FIELD.
};
// "none", "fadd", "iadd"; empty for 3.
std::string_view ici_reduce_name(uint8_t reduce);

// ici_send (0x0F): VMEM rows [vmem_addr, vmem_addr + rows) as one message on `link`.
struct IciSend {
  uint8_t link = 0;  // 4 bits
  uint16_t vmem_addr = 0;
  uint32_t rows = 1;  // 24 bits
  uint64_t last_row() const { return uint64_t{vmem_addr} + (rows == 0 ? 0u : rows - 1u); }
};

// ici_recv (0x10): one message from `link` into VMEM rows [vmem_addr, vmem_addr + rows).
struct IciRecv {
  uint8_t link = 0;    // 4 bits
  uint8_t reduce = 0;  // 2 bits, an IciReduce value (3 faults ERR_FIELD)
  uint16_t vmem_addr = 0;
  uint32_t rows = 1;  // 24 bits
  uint64_t last_row() const { return uint64_t{vmem_addr} + (rows == 0 ? 0u : rows - 1u); }
};

// ---- depthwise configuration (isa.md "Depthwise configuration")

// dwconv (0x11): per-lane sum over a kh x kw window of (a - z[n]) * w[tap][n] into ACC rows.
struct DwConv {
  bool accumulate = false;  // asm flag `acc`
  bool a_unsigned = false;  // activations and zero points uint8
  bool w_unsigned = false;
  bool stride2 = false;
  uint8_t kernel_h = 1;  // 2 bits, 1..3 (0 faults ERR_FIELD)
  uint8_t kernel_w = 1;  // 2 bits, 1..3
  uint32_t ub_addr = 0;  // 24 bits: input pixel (0, 0)
  uint16_t acc_addr = 0;
  uint16_t width = 1;   // 12 bits: W, input pixels per line
  uint16_t height = 1;  // 12 bits: H, input lines
  uint32_t w_addr = 0;  // 24 bits: kh*kw tap rows, then the zero-point row
  uint8_t pad_top = 0;  // 2 bits each, < kh (top, bottom) or < kw (left, right)
  uint8_t pad_left = 0;
  uint8_t pad_bottom = 0;
  uint8_t pad_right = 0;
  uint16_t ub_stride = 0;  // UB row step between input lines

  uint32_t stride() const { return stride2 ? 2u : 1u; }
  uint32_t taps() const { return uint32_t{kernel_h} * kernel_w; }
  uint32_t padded_height() const { return uint32_t{height} + pad_top + pad_bottom; }
  uint32_t padded_width() const { return uint32_t{width} + pad_left + pad_right; }
  // Ho, Wo of isa.md (the padded sizes must be >= the kernel: check() guarantees it).
  uint32_t output_height() const { return (padded_height() - kernel_h) / stride() + 1u; }
  uint32_t output_width() const { return (padded_width() - kernel_w) / stride() + 1u; }
  uint64_t output_pixels() const { return uint64_t{output_height()} * output_width(); }
  // The last input row, ub_addr + (H-1)*ub_stride + W-1, and the zero-point row w_addr + kh*kw.
  uint64_t last_input_row() const {
    return uint64_t{ub_addr} + uint64_t{height - 1u} * ub_stride + width - 1u;
  }
  uint64_t zero_point_row() const { return uint64_t{w_addr} + taps(); }
  // The unit's busy cycles with DwWidth = `dw_width` (isa.md "Cycle cost"), without the tail of
  // the last writes: kh*kw + 1 + sum over line groups of R_g * Wc.
  uint64_t unit_cycles(uint32_t dw_width) const;
  // The UB rows it reads with DwWidth = `dw_width`: the weight and zero-point rows, then every
  // window position inside the image (padding positions are idle cycles, no read).
  uint64_t ub_reads(uint32_t dw_width) const;
};

// A raw 16-byte word, normally one that does not decode (unknown opcode or reserved bits
// set): decode() returns these on failure, and the assembler's `.inst` directive creates them
// so a program can exercise the chip's ERR_OPCODE / ERR_RESERVED paths. encode() returns the
// bytes unchanged; check() and the golden model decode them first.
struct RawInstruction {
  InstrBytes bytes{};
};

// Alternatives 0..17 are in opcode order (opcode_byte relies on it).
using Instruction = std::variant<Nop, ReadHost, ReadWeights, Matmul, Activate, WriteHost, Sync,
                                 Halt, ReadVmem, WriteVmem, LoadWeights, MatmulBf16, AccToVmem,
                                 Transpose, Vector, IciSend, IciRecv, DwConv, RawInstruction>;

// Field-by-field equality (so Instruction, a std::variant, compares with ==).
bool operator==(const Nop&, const Nop&);
bool operator==(const Sync&, const Sync&);
bool operator==(const Halt&, const Halt&);
bool operator==(const ReadHost& a, const ReadHost& b);
bool operator==(const WriteHost& a, const WriteHost& b);
bool operator==(const ReadWeights& a, const ReadWeights& b);
bool operator==(const Matmul& a, const Matmul& b);
bool operator==(const Activate& a, const Activate& b);
bool operator==(const RawInstruction& a, const RawInstruction& b);
bool operator==(const VmemDma& a, const VmemDma& b);
bool operator==(const LoadWeights& a, const LoadWeights& b);
bool operator==(const MatmulBf16& a, const MatmulBf16& b);
bool operator==(const AccToVmem& a, const AccToVmem& b);
bool operator==(const Transpose& a, const Transpose& b);
bool operator==(const Vector& a, const Vector& b);
bool operator==(const IciSend& a, const IciSend& b);
bool operator==(const IciRecv& a, const IciRecv& b);
bool operator==(const DwConv& a, const DwConv& b);

// The opcode byte of the instruction (for RawInstruction: byte 0, possibly not an Opcode).
uint8_t opcode_byte(const Instruction& instr);

// Throws std::invalid_argument ("matmul.inner = 5000 does not fit in 12 bits (max 4095)") if
// a field value does not fit its encoding.
InstrBytes encode(const Instruction& instr);

struct DecodeResult {
  ErrorCode error = ErrorCode::ERR_NONE;  // ERR_NONE, ERR_OPCODE or ERR_RESERVED
  Instruction instr;                      // meaningful only when ok()
  std::string why;                        // when !ok(): what was wrong, where
  bool ok() const { return error == ErrorCode::ERR_NONE; }
};
// Never fails on any 16 bytes: checks the opcode and that every reserved bit is zero.
// Field values (dest = 3, zero counts, ranges) are left to check().
DecodeResult decode(const InstrBytes& bytes);
DecodeResult decode(const uint8_t* bytes16);
// decode() on a chip with `params`: a training opcode (0x08..0x0E) on a chip without VMEM is
// ERR_OPCODE, before any reserved bit is looked at (as on the int8 chip, which never knew it).
DecodeResult decode(const InstrBytes& bytes, const ChipParams& params);

// One line of assembly (isa.md syntax, all fields explicit) that assembles back to exactly
// encode(instr). A RawInstruction prints as `.inst 0x<32 hex digits>` (bits 127..0).
std::string disassemble(const Instruction& instr);

// DMA windows (docs/architecture.md, registers WIN_BASE_i / WIN_SIZE_i): when at least one
// is enabled, every host byte range an instruction touches, and the command buffer, must lie
// inside one enabled window, else ERR_HOST_RANGE.
struct DmaWindow {
  uint32_t base = 0;
  uint32_t size = 0;  // bytes; 0 = disabled
};
constexpr int kNumDmaWindows = 8;
using DmaWindows = std::array<DmaWindow, kNumDmaWindows>;

// True if every window is disabled, or [addr, addr + bytes) lies inside one enabled window.
// (As in the chip, an empty range must still start inside the window: addr <= base + size.)
bool in_dma_windows(const DmaWindows& windows, uint64_t addr, uint64_t bytes);

// The static checks of isa.md (codes 1-8) for the chip `params` (and DMA `windows`; none
// enabled when omitted). Returns ERR_NONE or the error; when several apply, the lowest code
// wins. If `why` is not null it receives a one-line explanation (what, where, what was
// expected), or is cleared.
ErrorCode check(const Instruction& instr, const ChipParams& params, std::string* why = nullptr);
ErrorCode check(const Instruction& instr, const ChipParams& params, const DmaWindows& windows,
                std::string* why = nullptr);

// The command buffer of a run: CMD_COUNT 16-byte instructions at CMD_ADDR. A write_host whose
// host bytes overlap it faults with ERR_HOST_RANGE (docs/isa.md): the chip prefetches
// instructions, so such a write would change the program depending on timing.
struct CommandBuffer {
  uint32_t addr = 0;
  uint32_t count = 0;  // instructions; 0 = no command buffer to protect
};
// check() with that rule for the run's command buffer `cmd` as well.
ErrorCode check(const Instruction& instr, const ChipParams& params, const DmaWindows& windows,
                const CommandBuffer& cmd, std::string* why = nullptr);

}  // namespace tpu

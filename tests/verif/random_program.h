// SPDX-License-Identifier: Apache-2.0
// Constrained-random differential testing of tpu-rtl (docs/verification.md).
//
// generate_program(seed, options) turns one 64-bit seed into a complete, reproducible test
// case: a program (valid, or with one fault at a random place), the host memory image it
// runs on, and the run configuration (memory latency and bandwidth, AXI backpressure, DMA
// windows, host memory that answers SLVERR). Everything is derived from the seed alone, so a
// failing case is replayed from its seed (tests/verif/random_main.cpp, scripts/replay.sh).
//
// run_case() runs it on two backends (the Verilated chip and the golden ISA model) and
// compares every piece of architectural state:
//   * run 1, the program: STATUS (done/error), ERR_CODE, ERR_PC, INSTR_RETIRED, the counters
//     that follow from the program (MXU_BUSY, MXU_MACS, ACT_BUSY, DMA_WR_BYTES exactly,
//     DMA_RD_BYTES up to the instruction prefetch) and every byte of the host memory the
//     program can write;
//   * run 2, a dump program built from the golden model's state after run 1: write_host of the
//     whole UB window, and an exact check of every accumulator of the ACC window (see
//     build_dump_program(): the requantizer saturates to 8 bits, so the int32 values cannot be
//     read back with a fixed program; instead each ACC row r goes through a quantization slot
//     whose bias is ~golden[r][n] with mult = 1, shift = 0, so the byte written is 0xFF
//     exactly when the chip's value equals the golden value, and any other value otherwise).
// A mismatch report names the seed; find_first_difference() runs prefixes of the program to
// name the first instruction after which the two backends' state differs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "assembler.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"

namespace tpu::verif {

// Host memory layout shared by every case (both backends map exactly these regions).
constexpr uint32_t kCmdBase = 0x0001'0000, kCmdSize = 0x1'0000;    // command buffers
constexpr uint32_t kDataBase = 0x0010'0000, kDataSize = 0x1'0000;  // random input data
constexpr uint32_t kOutBase = 0x0040'0000, kOutSize = 0x4000;      // program results
constexpr uint32_t kSpareBase = 0x0060'0000, kSpareSize = 0x1000;  // mapped, never in a window
constexpr uint32_t kDumpBase = 0x0070'0000, kDumpSize = 0x8000;    // run 2 (dump) only
constexpr uint32_t kDumpVmemBase = 0x0074'0000, kDumpVmemSize = 0x1'0000;  // run 2: VMEM
constexpr uint32_t kUnmapped = 0x0800'0000;                                // DECERR
// The top of the host address space (the long-transfer mix, GenOptions::long_mix): float data
// read and results written by read_vmem / write_vmem, compared like kOut. The backends map it
// at their first run with RunConfig::high_region (other tests map memory up there themselves).
constexpr uint32_t kHighBase = 0xFFFC'0000, kHighSize = 0x4'0000;
// Inside kDump: the UB window, the ACC check rows, then the ACC check parameters.
constexpr uint32_t kDumpUb = kDumpBase, kDumpAcc = kDumpBase + 0x1000,
                   kDumpParams = kDumpBase + 0x2000;

struct ByteRange {
  uint32_t base = 0;
  uint32_t size = 0;
};

// How the testbench behaves during the program run.
struct RunConfig {
  uint32_t mem_latency = 10;          // cycles
  uint32_t mem_bytes_per_cycle = 16;  // 0 = unlimited
  double backpressure = 0.0;          // AXI ready/valid stall probability per cycle and channel
  uint64_t backpressure_seed = 1;
  DmaWindows windows{};           // all disabled = any address allowed
  std::vector<ByteRange> slverr;  // host memory that answers SLVERR (bus accesses only)
  bool vmem_dump = false;         // zero kDumpVmem before the run and return it (training)
  bool high_region = false;       // zero kHigh before the run and return it (long_mix)
};

enum class CaseKind {
  kValid,        // must run to its halt
  kStaticFault,  // one instruction that fails a static check (codes 1-8, 12-15)
  kAxiFault,     // host memory answers an error (SLVERR/DECERR) for some access
  kNoHalt,       // the command buffer ends without halt (ERR_CMD_OVERRUN)
};
const char* to_string(CaseKind kind);

struct GenOptions {
  uint32_t n = 16;           // MXU size the program is generated for
  uint32_t min_length = 10;  // random instructions after the prologue
  uint32_t max_length = 60;
  double fault_probability = 0.3;  // share of cases that carry a fault (kind != kValid)
  bool random_timing = true;       // random latency, bandwidth, backpressure
  // Every case an AXI fault with a younger AXI error right behind it (emit_error_pair(): two
  // errors in one cycle, issue 34); the same program as the seed's AXI-pair case would be.
  bool axi_pairs = false;
  // The training configuration (docs/isa.md "Training configuration"): 0 = the int8 chip (the
  // seeds give the programs they always gave); R > 0 = a chip with R VMEM rows
  // (ChipParams::training with vmem_rows = R, R <= 65000): the body then also emits the
  // training instructions of train_ops on a VMEM window filled with float corner cases, the
  // static faults of those instructions, and the dump reads the VMEM window back.
  uint32_t vmem_rows = 0;
  // The training opcodes the generator may emit, bit (opcode - 0x08): 0x7F = all seven
  // (read_vmem, write_vmem, load_weights, matmul_bf16, acc_to_vmem, transpose, vector), for a
  // chip that implements only some of them.
  uint32_t train_ops = 0x7F;
  // The pod configuration (docs/isa.md "Inter-chip links"; needs vmem_rows > 0): the chip's
  // IciLinks. A chip alone has every link down, so the generator emits link instructions only
  // as static faults: ERR_ICI_LINK, and ERR_RESERVED / ERR_FIELD / ERR_VMEM_RANGE first.
  uint32_t ici_links = 0;
  // The depthwise unit (docs/isa.md "Depthwise configuration"): 0 = none (the default: the
  // seeds give the programs they always gave); W > 0 = ChipParams::dw_width W, and the body
  // also emits valid dwconv instructions in the UB / ACC windows and their static faults
  // (TestCase::expect_error). The depthwise chip tpu_sim_dw_n16 runs them (random_dw_chip_test).
  uint32_t dw_width = 0;
  // The long-transfer mix (issue 30, toggle coverage; needs vmem_rows > 0; off by default: the
  // seeds give the programs they always gave). A VMEM window of 256 rows up to what kDumpVmem
  // holds (4096 rows at N = 4, 1024 at N = 16), at the top rows of VMEM in half the cases;
  // read_vmem / write_vmem of up to the whole window, also from / to the top of the host
  // address space (kHighBase); and in 70 % of the cases all eight DMA windows enabled with
  // random bases and sizes across the 32-bit range: the ones the program needs cover its
  // regions from a random base below them, the others lie anywhere that no planted
  // ERR_HOST_RANGE fault depends on (never over kSpare or the byte after kOut).
  bool long_mix = false;
};
// The train_ops bit of a training opcode.
constexpr uint32_t train_op_bit(Opcode op) { return 1u << (static_cast<unsigned>(op) - 0x08u); }

struct TestCase {
  uint64_t seed = 0;
  ChipParams params;
  CaseKind kind = CaseKind::kValid;
  std::string fault;                 // what fault was planted, for reports
  size_t prologue_length = 0;        // instructions that define the window state
  std::vector<Instruction> program;  // placed at kCmdBase
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> memory;  // host image before the run
  RunConfig config;
  // The part of the chip the program uses (every UB/ACC access lies inside these windows).
  uint32_t ub_base = 0, ub_rows = 0, acc_base = 0, acc_rows = 0;
  // Training configuration: the VMEM window (every VMEM access of a valid instruction lies in
  // it; 0 rows for the int8 chip), and for the static faults of the training instructions the
  // code the generator aimed at (ERR_NONE for the others) and its index.
  uint32_t vmem_base = 0, vmem_rows = 0;
  ErrorCode expect_error = ErrorCode::ERR_NONE;
  size_t expect_pc = 0;
};

TestCase generate_program(uint64_t seed, const GenOptions& options);

// The training generator's drawing of single instructions and float data, for random programs
// built elsewhere (tests/pod/random_pod_rtl_test.cpp: one per chip of a pod, link
// instructions in between): the same valid instructions and corner-case values the body of a
// training case draws, inside a VMEM window (>= 2N rows) and an ACC window of the chip.
class TrainDraw {
 public:
  // Throws std::invalid_argument if the chip has no VMEM or a window does not fit.
  TrainDraw(uint64_t seed, const ChipParams& params, uint32_t vmem_base, uint32_t vmem_rows,
            uint32_t acc_base, uint32_t acc_rows);
  ~TrainDraw();
  TrainDraw(const TrainDraw&) = delete;
  TrainDraw& operator=(const TrainDraw&) = delete;
  // One valid instruction of `op` (vector, read_vmem, write_vmem, load_weights, matmul_bf16,
  // transpose or acc_to_vmem) for a chip whose program so far is `program` (its weight tiles:
  // a load_weights only with room in the FIFO, a matmul_bf16 only on a bf16 tile); nullopt
  // when none fits. read_vmem / write_vmem address generate_program's host layout (kDataBase,
  // kOutBase).
  std::optional<Instruction> draw(Opcode op, const std::vector<Instruction>& program);
  // `rows` rows of N fp32 lanes (little-endian) as the float data of a training case: blocks of
  // 4 rows of ordinary values, corner cases (NaN payloads, infinities, signed zeros,
  // subnormals, values next to 2^128, bf16 rounding ties) or near-cancelling pairs.
  std::vector<uint8_t> float_rows(uint32_t rows);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The assembly listing, one line per instruction with its index.
std::string listing(const std::vector<Instruction>& program);
// Seed, kind, fault, timing, windows, then the listing.
std::string describe(const TestCase& tc);

// The performance counters that are a function of the program (docs/architecture.md): the
// chip backend reads them from the chip; the golden backend works them out from the
// instructions it retired (program_counters()). DMA_RD_BYTES includes the instruction fetch,
// which prefetches a timing-dependent number of words (at least those retired, at most the
// command buffer): the golden backend gives the bytes of its read_host / read_weights.
struct ProgramCounters {
  bool valid = false;  // read / worked out (not for a chip that hung)
  uint64_t mxu_busy = 0, mxu_macs = 0, act_busy = 0, dma_rd_bytes = 0, dma_wr_bytes = 0;
};
ProgramCounters program_counters(const std::vector<Instruction>& program, uint64_t retired,
                                 uint32_t n);

// What one run left behind.
struct Outcome {
  bool done = false;
  bool hung = false;  // no done/error within the cycle limit (chip only)
  uint32_t err_code = 0;
  uint32_t err_pc = 0;
  uint64_t retired = 0;       // INSTR_RETIRED
  ProgramCounters counters;   // (golden: DMA_RD_BYTES without the instruction fetch)
  std::vector<uint8_t> data;  // kData region after the run
  std::vector<uint8_t> out;   // kOut region after the run
  std::vector<uint8_t> dump;  // kDump region after the run
  std::vector<uint8_t> vmem;  // kDumpVmem region after the run (RunConfig::vmem_dump only)
  std::vector<uint8_t> high;  // kHigh region after the run (RunConfig::high_region only)
};

// One implementation of the ISA. Regions are mapped once at construction; state (UB, ACC,
// PARAM, LUT) persists between runs as on the chip.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Loads the memory image (after zeroing kData, kOut, kDump, kSpare) and applies `config`,
  // places `program` at kCmdBase, rings the doorbell and runs to the end.
  virtual Outcome run(const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& memory,
                      const RunConfig& config, const std::vector<Instruction>& program) = 0;
};

// The golden model behind the Backend interface. It also exposes its state (for the dump).
class GoldenBackend : public Backend {
 public:
  explicit GoldenBackend(const ChipParams& params);
  ~GoldenBackend() override;
  const char* name() const override { return "golden"; }
  Outcome run(const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& memory,
              const RunConfig& config, const std::vector<Instruction>& program) override;
  GoldenModel& model();
  std::string last_message() const { return last_message_; }
  // Maps more host memory (both backends must map the same); `memory` of run() may load it.
  void add_region(uint32_t base, uint32_t size);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string last_message_;
};

// Run 2: reads back the UB window and checks every accumulator of the ACC window against the
// golden model's current values (see the file comment). Memory image in `memory`.
struct DumpProgram {
  std::vector<Instruction> program;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> memory;
};
DumpProgram build_dump_program(const TestCase& tc, const GoldenModel& golden);

struct CaseResult {
  bool ok = true;
  std::string mismatch;        // the first difference found (empty when ok)
  bool valid_faulted = false;  // a kValid case did not reach its halt (a generator bug)
  Outcome golden, chip;        // of run 1
};

// Runs tc on both backends (run 1, then the dump run 2 unless an AXI error made the state
// undefined) and compares. Backends must have been constructed for tc.params.
CaseResult run_case(Backend& chip, GoldenBackend& golden, const TestCase& tc);

// For a failing case: runs growing prefixes of the program (each followed by halt, then the
// dump) on both backends and returns the index of the first instruction after which the
// state differs, with the mismatch, or -1 if every prefix matches.
struct FirstDifference {
  long index = -1;
  std::string mismatch;
};
// True when both report ERR_AXI_READ on an instruction fetch and the chip's ERR_PC lies in
// the burst that ends at the golden model's (host memory fails whole bursts; see
// docs/verification.md).
bool same_fetch_fault(const Outcome& chip, const Outcome& golden,
                      const std::string& golden_message);

FirstDifference find_first_difference(Backend& chip, GoldenBackend& golden, const TestCase& tc);

// The report of a failed case: "seed S: <mismatch>", then the first differing instruction when
// find_first_difference() finds one (the tests add their replay command and describe(tc)).
std::string mismatch_report(Backend& chip, GoldenBackend& golden, const TestCase& tc, uint64_t seed,
                            const std::string& mismatch);

// ---- coverage of the training generator (random_coverage.cpp)
//
// Named counters of what a set of cases exercised, worked out by replaying each case's
// program on a fresh golden model one instruction at a time (GoldenModel::execute) and
// looking at the operands before and the results after each training instruction:
//   op.<mnemonic>, <mnemonic>.<field feature> (bf16, strides, transpose, rows < N, acc, switch,
//   in place, bmode, ...), vector.<func>, vector.<func>.<bmode>, val.<func>.<class> (an
//   operand lane of that class reached an fp func: nan, inf, sub, negzero, big),
//   event.<name> (cancel, exact_cancel, overflow, ftz, invalid, bf16_overflow, f2i_saturate,
//   i2f_round, ...), fault.<ERR_NAME>.<mnemonic> (a planted training fault, as the golden
//   model reported it), axi.<mnemonic>, mixed (int8 and training instructions in one case).
using Coverage = std::map<std::string, uint64_t>;
// Adds `tc`'s counts; `golden` is run 1's outcome on the golden backend.
void cover_case(const TestCase& tc, const Outcome& golden, Coverage& cov);
// The counters the training generator must hit (its coverage contract) at N lanes: the
// instruction, field and float counters, and with `faults` also the planted faults of every
// training instruction and the AXI errors of read_vmem / write_vmem.
std::vector<std::string> required_coverage(uint32_t n, bool faults);

// FNV-1a of n bytes at p continuing from h (start: 0xCBF29CE484222325): the generators'
// digests that pin a seed's program and memory image.
inline uint64_t fnv1a(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

}  // namespace tpu::verif

// SPDX-License-Identifier: Apache-2.0
// A functional (untimed) model of one tpu-rtl core, written from docs/isa.md alone: it is the
// independent reference the RTL is compared against. Instructions run one after another, as
// isa.md says programs are written; the chip's concurrency is invisible except where isa.md
// makes it visible (weight FIFO capacity, see below).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "host_memory.h"
#include "isa.h"

namespace tpu {

enum class RunStatus { Done, Error };

// What STATUS / ERR_CODE / ERR_PC / INSTR_RETIRED would show after a run.
struct RunResult {
  RunStatus status = RunStatus::Done;
  ErrorCode error = ErrorCode::ERR_NONE;
  uint32_t err_pc = 0;   // index of the faulting instruction (only when status == Error)
  uint64_t retired = 0;  // instructions completed, including the halt
  std::string message;   // when status == Error: what went wrong, at which pc
  bool done() const { return status == RunStatus::Done; }
};

class GoldenModel {
 public:
  // `host` must outlive the model. Throws std::invalid_argument for invalid params.
  explicit GoldenModel(HostMemory& host, const ChipParams& params = ChipParams{});

  const ChipParams& params() const { return params_; }

  // START: empties the weight FIFO and buffers (see soft_reset()), checks the command buffer
  // [cmd_addr, cmd_addr + 16*count) (wrapping past 2^32 or outside the enabled DMA windows:
  // ERR_HOST_RANGE at pc 0, nothing fetched), then fetches the 16-byte instructions one at a
  // time, as executed, and runs them until halt or the first fault. A fetch that host memory
  // rejects is ERR_AXI_READ at that pc; reaching pc == count without halt is ERR_CMD_OVERRUN
  // with err_pc = count. UB, ACC, PARAM and LUT persist across runs, as on the chip.
  // Throws std::invalid_argument if cmd_addr is not 16-byte aligned (CMD_ADDR requires it).
  RunResult run(uint32_t cmd_addr, uint32_t count);

  // Executes one instruction: the static checks, then its effect. Returns ERR_NONE or the
  // fault, in which case nothing was written (`why` gets an explanation). halt and sync do
  // nothing here; run() stops at halt.
  ErrorCode execute(const Instruction& instr, std::string* why = nullptr);

  // SOFT_RESET: empties the weight FIFO and MXU buffers; UB, ACC, PARAM, LUT and the DMA
  // windows keep their contents. run() does the same at START, so a program never sees the
  // weight tiles of an earlier run (the chip's tile accounting restarts at START).
  void soft_reset();

  // The WIN_BASE_i / WIN_SIZE_i registers (all disabled at construction).
  void set_dma_window(int index, uint32_t base, uint32_t size);  // size 0 disables
  void set_dma_windows(const DmaWindows& windows) { windows_ = windows; }
  const DmaWindows& dma_windows() const { return windows_; }

  // ---- weight tiles. read_weights (int8 tiles) and load_weights (bf16 tiles) push tiles,
  // `matmul switch` / `matmul_bf16 switch` make the oldest pushed tile active (a tile of the
  // other type is ERR_WEIGHT_TYPE). The chip holds WFifoTiles tiles in the FIFO plus 2 MXU
  // buffers and 1 shift tile; one buffer holds the active tile, so at most WFifoTiles + 2
  // tiles can wait. A read_weights / load_weights that would make more wait is
  // ERR_WEIGHT_OVERFLOW before it reads anything (the chip decides it at issue from the same
  // count).
  uint32_t weight_capacity() const { return params_.wfifo_tiles + 2; }
  size_t pending_weight_tiles() const { return pending_tiles_.size(); }
  bool has_active_tile() const { return has_active_tile_; }
  // The active N x N tile, row-major (byte k*N + n). Throws std::logic_error if none, or if
  // the active tile is a bf16 tile (load_weights).
  const std::vector<uint8_t>& active_tile() const;
  // The active tile is a bf16 tile (pushed by load_weights); its N x N bf16 weights,
  // row-major (k*N + n). Throws std::logic_error if no bf16 tile is active.
  bool active_tile_is_bf16() const { return has_active_tile_ && active_tile_.bf16; }
  const std::vector<uint16_t>& active_tile_bf16() const;

  // ---- VMEM (training configuration; empty when params().vmem_rows == 0). Lanes are 32-bit
  // patterns (fp32 or int32). Out-of-range indices throw std::out_of_range.
  uint32_t vmem(uint32_t row, uint32_t lane) const;
  std::vector<uint32_t> vmem_rows(uint32_t first_row, uint32_t rows) const;    // rows * N lanes
  void set_vmem_rows(uint32_t first_row, const std::vector<uint32_t>& lanes);  // multiple of N
  void set_vmem(uint32_t row, uint32_t lane, uint32_t value);

  // ---- state access for tests. Out-of-range indices throw std::out_of_range.
  uint8_t ub_byte(uint32_t row, uint32_t col) const;
  std::vector<uint8_t> ub_rows(uint32_t first_row, uint32_t rows) const;    // rows * N bytes
  void set_ub_rows(uint32_t first_row, const std::vector<uint8_t>& bytes);  // multiple of N

  int32_t acc(uint32_t row, uint32_t col) const;
  std::vector<int32_t> acc_row(uint32_t row) const;
  void set_acc(uint32_t row, uint32_t col, int32_t value);

  // Quantization slot `slot`, column `col` (the PARAM memory layout of isa.md read_host).
  int32_t bias(uint32_t slot, uint32_t col) const;
  int32_t mult(uint32_t slot, uint32_t col) const;
  uint32_t misc(uint32_t slot, uint32_t col) const;
  void set_quant(uint32_t slot, uint32_t col, int32_t bias, int32_t mult, uint32_t misc);
  // The raw PARAM memory: QpSlots * 12 rows of N bytes.
  const std::vector<uint8_t>& param_memory() const { return param_; }

  const std::array<uint8_t, 256>& lut() const { return lut_; }
  void set_lut(const std::array<uint8_t, 256>& lut) { lut_ = lut; }

 private:
  struct Fault {
    ErrorCode code = ErrorCode::ERR_NONE;
    std::string why;
  };
  Fault exec(const Nop&) { return {}; }
  Fault exec(const Sync&) { return {}; }
  Fault exec(const Halt&) { return {}; }
  Fault exec(const RawInstruction&) { return {}; }  // unreachable: decoded or rejected first
  Fault exec(const ReadHost& in);
  Fault exec(const WriteHost& in);
  Fault exec(const ReadWeights& in);
  Fault exec(const Matmul& in);
  Fault exec(const Activate& in);
  // Training configuration: driver/golden_vector.cpp.
  Fault exec(const ReadVmem& in);
  Fault exec(const WriteVmem& in);
  Fault exec(const LoadWeights& in);
  Fault exec(const MatmulBf16& in);
  Fault exec(const AccToVmem& in);
  Fault exec(const Transpose& in);
  Fault exec(const Vector& in);
  // A chip alone has no connected link: ici_send / ici_recv fault ERR_ICI_LINK (the pod,
  // pod.h, executes them itself).
  Fault exec(const IciSend& in);
  Fault exec(const IciRecv& in);
  // Depthwise configuration (isa.md "Depthwise configuration"): decode faults ERR_OPCODE on a
  // chip without the unit (ChipParams::dw_width = 0), so this runs only on one with it.
  Fault exec(const DwConv& in);
  void vector_elementwise(const Vector& in);
  void vector_row_reduction(const Vector& in);
  // The weight tile a matmul would use (ERR_NO_WEIGHTS / ERR_WEIGHT_TYPE checks), and the
  // switch to it.
  Fault check_weight_tile(const char* op, bool switch_weights, bool want_bf16) const;
  void take_weight_tile(bool switch_weights);

  size_t ub_index(uint32_t row, uint32_t col) const;
  size_t vmem_index(uint32_t row, uint32_t lane) const;
  uint32_t* vmem_row_ptr(uint64_t row) { return &vmem_[row * params_.N]; }
  size_t acc_index(uint32_t row, uint32_t col) const;
  size_t quant_offset(uint32_t slot, uint32_t col,
                      uint32_t which) const;  // which: 0 bias, 1 mult, 2 misc
  uint32_t param_word(size_t offset) const;

  HostMemory& host_;
  ChipParams params_;
  std::vector<uint8_t> ub_;     // ub_rows x N
  std::vector<int32_t> acc_;    // acc_rows x N
  std::vector<uint8_t> param_;  // qp_slots * 12 rows x N bytes
  std::array<uint8_t, 256> lut_{};
  DmaWindows windows_{};
  CommandBuffer cmd_{};  // of the run in progress (write_host may not overlap it)
  // A weight tile: int8/uint8 bytes from read_weights, or bf16 weights from load_weights.
  struct WeightTile {
    bool bf16 = false;
    std::vector<uint8_t> bytes;   // N*N, when !bf16
    std::vector<uint16_t> bf16w;  // N*N, when bf16
  };
  std::deque<WeightTile> pending_tiles_;  // pushed, not yet active (oldest first)
  WeightTile active_tile_;
  bool has_active_tile_ = false;
  std::vector<uint32_t> vmem_;  // vmem_rows x N lanes
};

}  // namespace tpu

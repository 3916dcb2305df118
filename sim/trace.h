// SPDX-License-Identifier: Apache-2.0
// Instruction trace records of tpu::sim::Chip, decoded from tpu_core's trace side band
// (trace_run_o, trace_issue_o, trace_unit_o, trace_pc_o, trace_done_o; docs/architecture.md
// "Trace port").
#pragma once

#include <cstdint>

namespace tpu::sim {

// The unit an instruction was issued to: trace_unit_o, and the bit of trace_done_o.
enum class TraceUnit : uint8_t {
  kReadHost = 0,     // DMA in (read_host, also to PARAM / LUT)
  kReadWeights = 1,  // weight DMA
  kMatmul = 2,       // MXU
  kActivate = 3,     // activation unit
  kWriteHost = 4,    // DMA out
  kControl = 5,      // nop, sync: no unit, no duration
  // The training chip's units (tpu_core with VmemRows > 0):
  kMove = 6,         // acc_to_vmem, transpose: the VMEM move unit
  kVector = 7,       // vector: the vector unit
  kLoadWeights = 8,  // load_weights: VMEM -> bf16 weight tiles
};
constexpr int kTraceUnits = 9;
const char* to_string(TraceUnit unit);  // "read_host", "read_weights", ..., "control"

// One issued instruction. Cycles count from the run's first cycle (the first cycle STATUS.BUSY
// is set, i.e. the first cycle the CYCLES counter counts): the instruction was issued in cycle
// `issue` and was finished from cycle `done` on, so it held its unit during [issue, done).
struct TraceEvent {
  uint32_t pc = 0;  // index in the program
  TraceUnit unit = TraceUnit::kControl;
  uint64_t issue = 0;
  uint64_t done = 0;
  // false: no done pulse came before the run ended (an AXI error or soft reset abandoned it);
  // `done` is then the run's end (its CYCLES count).
  bool complete = true;
};

}  // namespace tpu::sim

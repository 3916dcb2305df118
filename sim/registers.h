// SPDX-License-Identifier: Apache-2.0
// Register map of tpu_core's AXI4-Lite slave (byte addresses), from docs/architecture.md.
#pragma once

#include <cstdint>

namespace tpu::sim::reg {

constexpr uint32_t kId = 0x000;  // reads kIdValue
constexpr uint32_t kParamN = 0x004;
constexpr uint32_t kParamUbRows = 0x008;
constexpr uint32_t kParamAccRows = 0x00C;
constexpr uint32_t kParamWFifoTiles = 0x010;
constexpr uint32_t kParamQpSlots = 0x014;
constexpr uint32_t kParamAxiWidth = 0x018;
constexpr uint32_t kCtrl = 0x020;
constexpr uint32_t kStatus = 0x024;
constexpr uint32_t kErrCode = 0x028;
constexpr uint32_t kErrPc = 0x02C;
constexpr uint32_t kIrqStatus = 0x030;  // RW1C
constexpr uint32_t kIrqEnable = 0x034;
constexpr uint32_t kCmdAddr = 0x040;
constexpr uint32_t kCmdCount = 0x044;
constexpr uint32_t kPc = 0x048;
constexpr uint32_t kCounterBase = 0x100;  // COUNTER_i low word at kCounterBase + 8i, high at +4

constexpr uint32_t kIdValue = 0x54505531;  // "TPU1"

constexpr uint32_t kCtrlStart = 1u << 0;
constexpr uint32_t kCtrlSoftReset = 1u << 1;
constexpr uint32_t kStatusBusy = 1u << 0;
constexpr uint32_t kStatusDone = 1u << 1;
constexpr uint32_t kStatusError = 1u << 2;
constexpr uint32_t kIrqDone = 1u << 0;
constexpr uint32_t kIrqError = 1u << 1;
constexpr uint32_t kIrqEnableResetValue = kIrqDone | kIrqError;

constexpr unsigned kNumCounters = 10;
constexpr uint32_t counter_lo(unsigned i) { return kCounterBase + 8 * i; }
constexpr uint32_t counter_hi(unsigned i) { return kCounterBase + 8 * i + 4; }

}  // namespace tpu::sim::reg

// SPDX-License-Identifier: Apache-2.0
// Small AXI vocabulary shared by the bridge, the Chip API and its users.
#pragma once

#include <cstdint>

namespace tpu::sim {

// AXI xRESP encodings.
enum AxiResp : uint32_t { kAxiOkay = 0, kAxiExOkay = 1, kAxiSlvErr = 2, kAxiDecErr = 3 };

// Traffic the bridge has seen (same for every width, so users need not know W).
struct AxiBridgeStats {
  uint64_t read_bursts = 0, read_beats = 0;    // accepted ARs / R handshakes
  uint64_t write_bursts = 0, write_beats = 0;  // performed write bursts / W handshakes
  uint64_t error_responses = 0;                // bursts answered SLVERR or DECERR
};

}  // namespace tpu::sim

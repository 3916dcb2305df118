// SPDX-License-Identifier: Apache-2.0
// A pod of golden models (docs/isa.md "Inter-chip links", docs/pod.md): P chips joined as a
// ring or a 2-D torus, each running its own program, the link instructions (ici_send /
// ici_recv) moving VMEM rows between them bit-exactly.
//
// Functional semantics, exactly isa.md's: every chip runs its program in order; a link
// instruction occupies its link's send or receive engine (one instruction each) until its
// partner is issued on the other chip (rendezvous) and the rows have moved; later
// instructions whose VMEM row ranges overlap an unfinished link instruction wait, as do sync
// and halt. The model steps every chip as far as it can, starts every transfer whose two
// ends are issued, and when no chip can move while some still wait, reports ERR_ICI_DEADLOCK
// on each waiting chip (never a hang). Mismatched sizes fault ERR_ICI_SIZE on both chips,
// a link that is not connected ERR_ICI_LINK.
//
// Cycles are the model's ESTIMATE, not a cycle-accurate simulation (the RTL pod will be):
// a transfer of B bytes starts when both ends are issued and the link is free, occupies the
// link for ceil(B / bytes_per_cycle) cycles and completes at the receiver `latency` cycles
// after that; every instruction takes one issue cycle, and an instruction other than a link
// instruction also the busy time of its unit (vector / transpose / VMEM rows walked, DMA bytes
// at AXI bytes / 2 per cycle, read_vmem / write_vmem at the VMEM port's bytes per cycle when
// the chip has one (ChipParams::vmem_port_bytes), matmul rows), one after another (no overlap
// between units).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "golden_model.h"
#include "isa.h"

namespace tpu {

// Link numbers of isa.md "Wiring of the pod".
constexpr uint32_t kLinkXPlus = 0;
constexpr uint32_t kLinkXMinus = 1;
constexpr uint32_t kLinkYPlus = 2;
constexpr uint32_t kLinkYMinus = 3;

// The pod's wiring: a ring of P chips is the torus P x 1.
struct PodTopology {
  uint32_t x = 1;
  uint32_t y = 1;
  bool is_torus = false;  // only how it is named ("ring" or "torus:XxY")

  static PodTopology ring(uint32_t chips);
  static PodTopology torus(uint32_t x, uint32_t y);
  // "ring" (chips in a ring) or "torus:XxY" (X*Y must equal chips). Throws
  // std::invalid_argument saying what was wrong and what is expected.
  static PodTopology parse(std::string_view text, uint32_t chips);
  uint32_t chips() const { return x * y; }
  std::string name() const;  // "ring" or "torus:2x4"
  // Links a chip needs: 2 (ring, torus X x 1), 4 (a torus with Y > 1).
  uint32_t links_needed() const { return y > 1 ? 4u : 2u; }

  struct End {
    uint32_t chip = 0;
    uint32_t link = 0;
  };
  // The chip and link at the other end of (chip, link); nullopt if that link is not connected
  // (a dimension of size 1, links >= 4).
  std::optional<End> peer(uint32_t chip, uint32_t link) const;
};

// The links' speed: bytes per cycle and direction (IciWidth / 8), and wire latency in cycles.
struct LinkTiming {
  uint32_t bytes_per_cycle = 16;
  uint32_t latency = 64;
};

struct PodResult {
  std::vector<RunResult> chips;       // one per chip, as GoldenModel::run reports
  std::vector<uint64_t> chip_cycles;  // estimated cycle at which each chip stopped
  uint64_t cycles = 0;                // estimate: the last chip's
  uint64_t transfers = 0;             // messages moved
  uint64_t link_bytes = 0;            // bytes moved over all links
  uint64_t link_busy_cycles = 0;      // sum over link directions of cycles transmitting
  bool ok() const;                    // every chip halted without a fault
  std::string message;                // when !ok(): the first fault of each failing chip
};

class PodModel {
 public:
  // Throws std::invalid_argument for invalid params, too few links for the topology
  // (params.ici_links < topology.links_needed()), a zero bytes_per_cycle or 0 chips.
  PodModel(const PodTopology& topology, const ChipParams& params, const LinkTiming& timing = {});
  ~PodModel();
  PodModel(const PodModel&) = delete;
  PodModel& operator=(const PodModel&) = delete;

  uint32_t chips() const;
  const PodTopology& topology() const { return topology_; }
  const ChipParams& params() const { return params_; }
  const LinkTiming& timing() const { return timing_; }
  // Chip r's golden model (VMEM and the other state persist across runs).
  GoldenModel& chip(uint32_t r);
  // Chip r's host memory (nothing mapped at construction: map the regions its DMA uses, and
  // open them with the chip's set_dma_window).
  RegionMemory& memory(uint32_t r);

  // Runs programs[r] on chip r (programs.size() == chips(); instructions as ProgramBuilder
  // or the assembler make them, RawInstruction words are decoded first). Each ends at its
  // halt; running past its end is ERR_CMD_OVERRUN. Never hangs.
  PodResult run(const std::vector<std::vector<Instruction>>& programs);

 private:
  struct Impl;
  PodTopology topology_;
  ChipParams params_;
  LinkTiming timing_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
// A pod of Verilated RTL chips in one process (issue 31, docs/pod.md "The RTL pod"): P
// instances of tpu_core built with inter-chip links (plain Verilator C++, no SystemC, so
// several live in one process), joined as a ring or a 2-D torus (driver/pod.h PodTopology,
// docs/isa.md "Wiring of the pod") by sim/ici_fabric.h: every link direction one
// sim/ici_channel.h wire with the configured latency and one IciWidth-bit beat per cycle
// (credit flow), cycle by cycle. Each chip has its own host memory (a byte vector from address
// 0) served on both of its AXI master ports, m_axi_* (commands, DMA) and m_vaxi_* (the VMEM
// port), by an always-ready slave (one beat per cycle, responses OKAY).
//
// Deadlock and faults: the fabric's deadlock rule (a cycle is quiet when no beat moves and
// every chip waits on a link or has stopped; after window() quiet cycles nothing can move)
// drives the waiting chips' ici_deadlock_i, so they fault ERR_ICI_DEADLOCK at their oldest
// link instruction, as the pod of golden models does. A chip that faults abandons its sends,
// so a neighbour waiting on one faults ERR_ICI_DEADLOCK within window() + a few cycles after
// the fault: a pod run always ends. Its posted receives stay posted, their messages discarded
// by the link (sim/ici_channel.h; docs/isa.md "Errors of the link instructions"), and every
// run starts on empty links. If it still has not ended after
// `max_cycles` (a chip that keeps running), run() returns PodRtlStatus::CycleLimit (never a
// hang).
//
// Distributed (docs/pod.md "The distributed pod"): constructed with a PodTransport
// (sim/pod_transport.h) of K ranks, each process simulates only its block of chips
// (pod_rank_of) and the ranks meet once per lookahead window of at most `latency` cycles to
// trade link events and deadlock bits; outcomes, cycles and link beats are identical to the
// one-process pod's. Every rank calls run / load_vmem / dump_vmem with the same arguments;
// results (PodRtlResult, dump_vmem) are the whole pod's on every rank; memory(r), write_reg
// and read_reg are for the local chips only.
//
// The Verilated chip is fixed at build time (CMake tpu_add_pod_rtl(): N, VmemRows, IciLinks,
// IciWidth, UbRows, AccRows; params() says which). One library per binary: the class names of
// the Verilated model are the same in every build.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa.h"
#include "pod.h"
#include "pod_transport.h"

namespace tpu::sim {

enum class PodRtlStatus {
  Stopped,     // every chip stopped (halted or faulted: see the chips' outcomes)
  CycleLimit,  // some chip still ran after max_cycles
  AxiError,    // a chip accessed host memory outside its vector (named in `message`)
};

struct PodRtlChipOutcome {
  bool done = false;      // STATUS.DONE (halted without a fault)
  uint32_t err_code = 0;  // ERR_CODE (0 when done)
  uint32_t err_pc = 0;    // ERR_PC
  uint64_t cycles = 0;    // pod cycle (from START) at which the chip stopped
};

struct PodRtlResult {
  PodRtlStatus status = PodRtlStatus::Stopped;
  std::vector<PodRtlChipOutcome> chips;
  uint64_t cycles = 0;      // from START to the last chip stopping
  uint64_t link_beats = 0;  // beats handed over on all link directions
  uint64_t deadlocks = 0;   // times the fabric's deadlock rule fired
  std::string message;      // when status != Stopped: what happened, naming the chips
  bool ok() const;          // Stopped and every chip done
};

class PodRtl {
 public:
  // The Verilated chip's parameters (ChipParams::pod(N, IciLinks) with its VMEM, UB and
  // accumulator rows) and its link width in bits.
  static ChipParams params();
  static uint32_t ici_width_bits();

  // Each chip's host memory is `mem_bytes` from address `mem_base`. Throws
  // std::invalid_argument when the topology needs more links than the chip has, the latency is
  // 0, the memory is not a multiple of 4 KiB in 64 KiB .. 1 GiB or the base not a multiple of
  // 4 KiB with the memory ending within 2^32 (the AXI addresses are 32 bits).
  PodRtl(const PodTopology& topology, uint32_t latency, uint64_t mem_bytes = 1u << 20,
         uint64_t mem_base = 0);
  // The pod over the ranks of `transport` (ranks <= chips): this process simulates the chips
  // of its rank. Throws std::invalid_argument as above, or when there are more ranks than
  // chips.
  PodRtl(const PodTopology& topology, uint32_t latency, std::shared_ptr<PodTransport> transport,
         uint64_t mem_bytes = 1u << 20, uint64_t mem_base = 0);
  ~PodRtl();
  PodRtl(const PodRtl&) = delete;
  PodRtl& operator=(const PodRtl&) = delete;

  uint32_t chips() const;
  // Whether chip r is simulated in this process (always, without a transport).
  bool local(uint32_t r) const;
  const PodTopology& topology() const { return topology_; }
  // Chip r's host memory (index i is address memory_base() + i; empty when r is not local).
  std::vector<uint8_t>& memory(uint32_t r);
  uint64_t memory_base() const;

  // AXI4-Lite register access of chip r alone (between runs).
  void write_reg(uint32_t r, uint32_t addr, uint32_t value);
  uint32_t read_reg(uint32_t r, uint32_t addr);

  // Places each chip's program at address `code_addr` of its memory (it must not overlap the
  // data the program uses), opens the DMA window on the whole memory, starts every chip in the same
  // cycle and runs the pod until every chip has stopped (or max_cycles). VMEM and the other
  // chip state persist across runs.
  PodRtlResult run(const std::vector<std::vector<Instruction>>& programs,
                   uint64_t max_cycles = 100000000, uint32_t code_addr = 0);

  uint64_t cycles() const;  // pod cycles since construction (reset included)

  // The RTL's assertions (rtl/tpu_assert.svh, on when built with TPU_SIM_ASSERT): a failing one
  // stops the process (Verilog $stop). Off only to get past a known assertion bug (docs/pod.md).
  void set_assertions(bool on);

  // VMEM through the chips' own VMEM port (read_vmem / write_vmem programs run on every chip
  // at once, staged in host memory from address `host_addr`): lanes[r] (a multiple of N 32-bit
  // lanes) into chip r's rows from `row`; and chip r's `rows` rows from `row` out. Throw
  // std::runtime_error naming the chip if a program does not halt.
  void load_vmem(uint32_t row, const std::vector<std::vector<uint32_t>>& lanes, uint32_t host_addr);
  std::vector<std::vector<uint32_t>> dump_vmem(uint32_t row, uint32_t rows, uint32_t host_addr);

 private:
  void finish_run(PodRtlResult& res, std::vector<bool>& stopped, bool limit, uint64_t max_cycles,
                  uint64_t beats0, uint64_t deadlocks0);
  struct Impl;
  PodTopology topology_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpu::sim

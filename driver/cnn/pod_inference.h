// SPDX-License-Identifier: Apache-2.0
// Inference across the chips of a pod (issue 31 item 5, docs/pod.md "Inference across chips",
// `tpusim run-cnn --chips P`): each batch is split over the pod's P chips, every chip runs the
// compiled int8 inference program (driver/cnn/compiler.h, the one-chip program for its slice)
// on its images, then a gather program moves every chip's logits over the inter-chip links to
// chip 0, and the host reads all the logits from chip 0's device memory only.
//
// The gather (gather_programs): the inference program leaves a chip's logits in its device
// memory (write_host from the unified buffer); the link instructions move VMEM rows (isa.md
// "Inter-chip links"), so each chip first brings its logits into VMEM with read_vmem (the
// bytes bit for bit, as rows of 4N bytes), into its own chunk of a gather buffer of P chunks,
// then the chunks travel to chip 0 along the ring (or the torus's x rings, then the y ring of
// column 0), store and forward, and chip 0 writes the whole buffer to its device memory with
// write_vmem.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evaluate.h"
#include "pod.h"

namespace tpu::cnn {

// The pod the programs run on: the pod of golden models (golden_inference_pod) or the RTL pod
// (tools/tpusim registers one where the binary has it).
class InferencePod {
 public:
  virtual ~InferencePod() = default;
  virtual const PodTopology& topology() const = 0;
  virtual const ChipParams& params() const = 0;  // every chip's (with its links)
  virtual std::string backend() const = 0;       // "model" or "rtl"
  virtual bool cycles_estimated() const = 0;     // the golden pod's are its estimate
  // Maps device memory [base, base + bytes) on every chip and opens the DMA window on it.
  virtual void map(uint32_t base, uint32_t bytes) = 0;
  virtual void load(uint32_t chip, uint32_t addr, const std::vector<uint8_t>& bytes) = 0;
  virtual std::vector<uint8_t> dump(uint32_t chip, uint32_t addr, size_t bytes) = 0;
  struct Run {
    uint64_t cycles = 0;                // the pod's: START to the last chip stopping
    std::vector<uint64_t> chip_cycles;  // the cycle at which each chip stopped
    uint64_t link_bytes = 0;            // bytes moved over all links
    double wall_seconds = 0;            // simulation time of the run
  };
  // Runs programs[r] on chip r. Throws std::runtime_error naming the chip, its error and `what`
  // if a chip faults (or the run does not end within max_cycles, where the pod has cycles).
  virtual Run run(const std::vector<std::vector<Instruction>>& programs, uint64_t max_cycles,
                  const std::string& what) = 0;
  uint32_t chips() const { return topology().chips(); }
};

// The pod of golden models (driver/pod.h PodModel). Throws std::invalid_argument as PodModel.
std::unique_ptr<InferencePod> golden_inference_pod(const PodTopology& topology,
                                                   const ChipParams& chip,
                                                   const LinkTiming& timing);

// Each chip's programs of the gather: chip r reads `chunk_rows` VMEM rows of 4N bytes from its
// device memory at `src_addr` (its logits) into rows [vmem_base + r * chunk_rows, ...), the
// chunks move to chip 0 over the links, and chip 0 writes rows [vmem_base, vmem_base + P *
// chunk_rows) to `dst_addr`. On a ring, chips 1..ceil((P-1)/2) send toward chip 0 on the -x
// link, each forwarding what it received from the chip after it together with its own chunk as
// one message; the others do the same on the +x link (around the ring's end). On a torus X x Y
// every x ring gathers to its chip at x = 0 that way, then column 0 gathers to chip 0 over the
// y links in blocks of X chunks. Throws Error if the buffer does not fit VMEM or the chip has
// too few links.
std::vector<std::vector<Instruction>> gather_programs(const ChipParams& chip,
                                                      const PodTopology& topology,
                                                      uint32_t vmem_base, uint32_t chunk_rows,
                                                      uint32_t src_addr, uint32_t dst_addr);

// Images per chip of a batch of `batch` images: chip r takes images
// [floor(r * batch / P), floor((r + 1) * batch / P)) (slices differ by at most one image; a
// chip has none when batch < P).
std::vector<uint32_t> pod_slices(uint32_t batch, uint32_t chips);

// The pod's figures of an evaluation (run-cnn --chips' JSON keys).
struct PodFigures {
  uint32_t chips = 0;
  std::string topology;
  uint32_t link_bytes_per_cycle = 0, link_latency = 0;
  uint64_t inference_cycles = 0;      // the inference runs' pod cycles, summed over the batches
  uint64_t gather_cycles = 0;         // the gather runs'
  std::vector<uint64_t> chip_cycles;  // per chip: its inference runs' cycles, summed
  std::vector<uint32_t> chip_images;  // per chip: the images it ran
  uint64_t gather_link_bytes = 0;     // bytes the gathers moved over the links
  uint32_t gather_chunk_rows = 0;     // VMEM rows per chip in the gather buffer
  uint64_t batches = 0;
  double gather_share() const {
    const uint64_t all = inference_cycles + gather_cycles;
    return all ? double(gather_cycles) / double(all) : 0.0;
  }
  // Adds the keys (chips, topology, gather_cycles, gather_share, chip_cycles, ...) to `j`, and
  // layers_from = null when it has none (no per-layer profile on the pod).
  void add_json(nlohmann::ordered_json& j) const;
};

// Runs the image set on the pod as run-cnn does on one chip (evaluate()): every batch of
// o.batch images is split with pod_slices, each chip runs the one-chip program for its slice
// (compiled for pod.params()), then the gather; the logits are read from chip 0 only and
// checked against the integer reference. cycles_total is the inference runs' plus the gathers'
// pod cycles. No per-layer profile and no timeline (o.profile and o.timeline are ignored; the
// profile is of one chip: run-cnn without --chips). DMA counters are those of the programs
// that ran (every instruction of a program that halts runs once), summed over the chips; the
// MXU's busy cycles and utilization are the chips' average (per chip, over the pod's cycles).
// `figures` receives the pod's.
Evaluation evaluate_pod(InferencePod& pod, const LinkTiming& timing, const Network& float_net,
                        const QuantNetwork& q, const ImageSet& set, const EvalOptions& o,
                        PodFigures& figures);
Evaluation evaluate_pod(InferencePod& pod, const LinkTiming& timing, const Network& float_net,
                        const QuantNetwork& q, const FloatImageSet& set, const EvalOptions& o,
                        PodFigures& figures);

}  // namespace tpu::cnn

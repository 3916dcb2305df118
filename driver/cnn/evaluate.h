// SPDX-License-Identifier: Apache-2.0
// Runs a labelled image set through a network on a Device and gathers everything tpusim
// run-cnn reports: accuracy (chip, float, integer reference), whether every image's logits
// equal the integer reference, cycles, MXU utilization, DMA bytes, per-layer profile, wall time.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataset.h"
#include "device.h"
#include "energy.h"
#include "network.h"
#include "runner.h"

namespace tpu::cnn {

struct ImageResult {
  int index = 0;            // in the image set
  int label = -1;           // -1 if the set has no labels
  int predicted = 0;        // argmax of the chip's logits
  int float_predicted = 0;  // argmax of the float model
  bool matches_reference = false;
  std::vector<int32_t> logits;  // the chip's quantized logits
};

struct EvalOptions {
  int offset = 0, count = 100;
  uint32_t batch = 1;
  // Per-layer cycles of the first batch: from its instruction timeline where the device has one
  // (rtl; no extra run), else from extra runs of the program cut after each layer (model).
  bool profile = true;
  uint64_t max_cycles = 0;
  // Record the instruction timeline of the first batch's run (Evaluation::timeline). Needs a
  // device with Device::has_timeline() (rtl); evaluate() throws DeviceError otherwise.
  bool timeline = false;
  // Called after each batch with the images of that batch (for per-image output and progress).
  std::function<void(const std::vector<ImageResult>&, int done, int total)> on_batch;
  // Energy per action (driver/energy.h); nullptr: the built-in EnergyTable::horowitz_45nm().
  const EnergyTable* energy_table = nullptr;
};

// One program run as the chip executed it, with what is needed to label it.
struct RunTimeline {
  std::vector<InstrEvent> events;    // Device::timeline() of the run
  std::vector<Instruction> program;  // what ran (events[i].pc indexes it)
  std::vector<int> instr_layer;      // per instruction: index into layer_names, -1 none
  std::vector<std::string> layer_names;
  uint64_t cycles = 0;  // the run's CYCLES
  uint32_t images = 0;  // images in the run
  // Nothing recorded (the program may be unknown: timeline_json then shows opcodes only).
  bool empty() const { return events.empty(); }
};

struct Evaluation {
  std::string model, backend;
  uint32_t chip_n = 0;
  int offset = 0, images = 0;
  uint32_t batch = 0, micro_batch = 0;
  size_t instructions_per_batch = 0;
  int correct = 0, float_correct = 0, reference_correct = 0, mismatches = 0;
  double accuracy() const { return images ? double(correct) / images : 0.0; }
  double float_accuracy() const { return images ? double(float_correct) / images : 0.0; }
  double reference_accuracy() const { return images ? double(reference_correct) / images : 0.0; }
  bool matches_reference() const { return mismatches == 0; }
  uint64_t cycles_total = 0;
  bool cycles_estimated = false;
  PerfCounters counters;       // summed over the batches
  int64_t macs_per_image = 0;  // the network's MACs
  double mxu_utilization = 0;  // macs / (cycles * N^2); NaN when cycles_estimated (no timing)
  double dma_in_per_image = 0, dma_out_per_image = 0;              // counters / images
  uint32_t input_bytes_per_image = 0, output_bytes_per_image = 0;  // the packed images, logits
  double wall_seconds = 0;           // the evaluation (setup, runs, references; not the profile)
  double run_seconds = 0;            // inside Device::run
  std::vector<LayerProfile> layers;  // per-image cycles of the profiled batch
  // Spilling (compiler.h): whether activations go through host memory, the scratch it takes,
  // and the DMA bytes per image of the program by kind (weights, spills, ...; from the program).
  bool spill = false;
  uint64_t scratch_bytes = 0;
  LayerDma program_dma;  // per image, summed over layers and the instructions of none
  // Host memory timing of the rtl backend (-1: not given, e.g. the model backend).
  int64_t mem_latency_cycles = -1, mem_bytes_per_cycle = -1;
  std::string layers_from;  // "timeline" (rtl) or "prefix_runs" (ChipRunner::profile)
  std::vector<ImageResult> results;
  std::string quantization;  // how the model was quantized (for the report)
  RunTimeline timeline;      // the first batch's run, with EvalOptions::timeline
  // Energy (driver/energy.h): the actions of every program run, in total, per layer (index of
  // layers' order in the network, as `layer_names`) and of instructions of no layer; the table
  // and the chip's memory sizes it is applied to.
  MemorySizes memories;
  EnergyTable energy_table;
  ActionCounts actions, other_actions;
  std::vector<ActionCounts> layer_actions;
  std::vector<std::string> layer_names;

  // One JSON object (the keys of the tpusim run-cnn --json contract).
  std::string to_json(bool with_images = true) const;
  // Its "energy" object (docs/energy.md).
  nlohmann::ordered_json energy_json() const;
};

// Images already in the model's input contract (NCHW float, e.g. decoded and preprocessed
// image files), with their labels (-1 = none).
struct FloatImageSet {
  Shape3 shape;
  std::vector<std::vector<float>> images;
  std::vector<int> labels;
  int count() const { return int(images.size()); }
};

// `float_net` is the imported model (float accuracy), `q` its quantization. Checks the image
// shape against the model (Error "wrong input shape ...").
Evaluation evaluate(Device& device, const Network& float_net, const QuantNetwork& q,
                    const ImageSet& set, const EvalOptions& options);
Evaluation evaluate(Device& device, const Network& float_net, const QuantNetwork& q,
                    const FloatImageSet& set, const EvalOptions& options);

}  // namespace tpu::cnn

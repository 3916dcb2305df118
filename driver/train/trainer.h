// SPDX-License-Identifier: Apache-2.0
// Trainer: trains a float ONNX model on the chip (issue 30; docs/training.md "The training
// compiler"). The constructor compiles the model once into a training-step program and a
// forward (logits) program through the training compiler's passes (compiler/); init() places
// the initial weights and the optimizer state in device memory (host memory as the chip's DMA
// sees it, standing in for HBM); step() places one batch and its labels there, runs the step
// program and reads back the loss the chip computed. The host computes nothing while training:
// the forward and backward passes, the loss and the optimizer update all run on the chip.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "isa.h"

namespace tpu::train {

enum class Optimizer { Sgd, Adam };

struct TrainOptions {
  Optimizer optimizer = Optimizer::Adam;
  float lr = 1e-3f, momentum = 0.0f, weight_decay = 0.0f;  // momentum: SGD only
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-7f;         // Keras' Adam defaults
  uint32_t batch = 32;
  // Weights and optimizer state that fit stay in VMEM across steps (compiler/residency.h);
  // false: everything streams from device memory every step (the same bits, more cycles).
  bool resident = true;
  // Run a Dense layer's fused dW and optimizer update beside the conv layer's backward pass
  // (compiler/overlap.h); false: one after the other. The same bits either way.
  bool overlap = true;
  // With `overlap`: the Dense's dX (DenseGradX) right before the conv's backward pass leads
  // the merged stream, the update beside both (compiler/overlap.h). The same bits either way.
  bool overlap_lead = true;
  // A Dense's and a DenseGradX's weight tiles (one per 32-row matmul in the Keras step) loaded
  // 4 per load_weights (kernels.h dense_forward_partial's tile_group): the load unit fills a
  // tile while the one before it drains, so VMEM read port 0 is held 81 cycles per 4 tiles
  // instead of 33 per tile. The same bits either way.
  bool dense_tile_groups = true;
  // A Dense right after the ConvPool that computes its X: the ConvPool copies the first column
  // blocks of Y into the Dense's VMEM buffer sets as it computes them, so the Dense reads only
  // its later K chunks back from device memory (compiler/overlap.h place_x_in_vmem). The same
  // bits either way.
  bool dense_x_in_vmem = true;
  // A DenseUpdate chunk's reads of the next chunk's weights and optimizer state spread over
  // its Adam passes (after its dW acc_to_vmem) instead of right after its dW matmuls, where
  // they held the VMEM write port the acc_to_vmem needs (compiler/interleave.h
  // update_read_anchors). The same bits either way.
  bool update_reads_in_adam = true;
  // A ConvPool's conv (cin = 1, one K-tile) builds one im2col for two consecutive output lines
  // (kernel rows + 1 taps in the lanes) where it built one per line: the second line's matmuls
  // take a copy of W shifted down by kw rows (compiler emit.cpp conv_by_lines), so the move
  // unit's transposes, which it shares with acc_to_vmem, halve. The same bits either way.
  bool conv_line_pairs = true;
  // A ConvPool's list schedule (compiler/interleave.h list_schedule) takes a band's tap-row
  // passes, which its im2col transpose reads, ahead of the previous band's pool passes that
  // would start at the same estimated cycle, so the move unit finds the transpose ready. The
  // same bits either way.
  bool im2col_build_first = true;
};

// Cycles of one layer in the last step (RunStats of the step's program, split by the
// instructions each layer's forward, backward and update emitted).
struct LayerCycles {
  std::string name, op;
  uint64_t forward = 0, backward = 0, update = 0;
  // true: forward / backward / update measured on the chip (the instruction timeline of the
  // recorded step: from the issue of a node's first instruction to the next node's); false:
  // the step's cycles split by the work model (compiler/emit.h instruction_work).
  bool measured = false;
  // The analytical bound (compiler/emit.h step_bound): the SCALE-Sim weight-stationary cycles
  // of the layer's matmuls, the cycles of its DMA bytes at the device-memory port's peak, and
  // the larger of the two (the units overlap).
  uint64_t bound_mxu = 0, bound_dma = 0, bound = 0;
};

struct StepResult {
  float loss;       // the batch's mean loss as the chip computed it
  uint64_t cycles;  // the step program's cycles (an estimate on the model backend)
};

// Instructions [begin, end) of the step program that one node of the compiled graph emitted:
// its layer (the ONNX node name; "loss", "adam"), the ONNX op and the phase.
struct ProgramSpan {
  size_t begin = 0, end = 0;
  std::string layer, op;
  std::string phase;  // "forward", "loss", "backward", "update"
};

class TrainerImpl;

// A training program compiled from a float ONNX model (initializers = initial weights; input
// [B, C, H, W] float, output = logits [B, classes]); compile errors are std::invalid_argument
// naming node and op.
class Trainer {
 public:
  // `onnx_path_or_bytes`: the path of an .onnx file, or the serialized ModelProto itself.
  Trainer(const std::string& onnx_path_or_bytes, const TrainOptions& opt, const ChipParams& chip);
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;

  uint32_t classes() const;
  std::array<uint32_t, 3> input_chw() const;

  // Weights (the model's initializers) and optimizer state (zeros; Adam's powers of beta 1.0)
  // -> device memory. `dev` must have the chip parameters given to the constructor. step(),
  // logits() and weights() then work on that device (std::logic_error on another, or before).
  void init(Device& dev);
  // One step on `batch` images (batch * C*H*W floats, NCHW) and their labels (each in
  // [0, classes), else std::invalid_argument): the chip computes; returns the chip's loss.
  StepResult step(Device& dev, const float* images, const int32_t* labels);
  // Logits of `count` images (count * classes floats), the forward pass on the chip, run in
  // batches of TrainOptions::batch (the last one padded).
  std::vector<float> logits(Device& dev, const float* images, uint32_t count);
  // Initializer name -> fp32 values in the initializer's shape and order, read from device memory.
  std::map<std::string, std::vector<float>> weights(Device& dev) const;
  // Per layer of the last step (empty before the first).
  std::vector<LayerCycles> layer_cycles() const;
  // The step's analytical bound: the layers' MXU and DMA bounds summed, and the larger.
  LayerCycles step_bound() const;

  // The compiled step program's instruction count and the compile time (for reports).
  size_t step_instructions() const;
  double compile_seconds() const;
  // The program every step() runs (it changes only in init(), when the device buffer lands
  // elsewhere than the compile-time address) and which node emitted which instructions.
  const std::vector<Instruction>& step_program() const;
  std::vector<ProgramSpan> step_program_spans() const;

 private:
  std::unique_ptr<TrainerImpl> impl_;
};

// Writes `weights` into a copy of the original model's initializers: float ONNX that run-cnn /
// run-onnx take. (Declared here as agreed in issue 30's Trainer API; defined with `tpusim
// train`'s model I/O, not in tpu_trainer.)
void export_trained_onnx(const std::string& original_model,
                         const std::map<std::string, std::vector<float>>& weights,
                         const std::string& out_path);

}  // namespace tpu::train

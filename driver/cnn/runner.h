// SPDX-License-Identifier: Apache-2.0
// Runs a compiled network on a tpu::Device (the "rtl" chip or the "model" golden ISA model):
// the host writes the packed input images, starts one program per batch and reads the logits.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler.h"
#include "device.h"
#include "network.h"

namespace tpu::cnn {

struct LayerProfile {
  std::string name, op;
  int64_t macs = 0;        // per image (the network's MACs)
  uint64_t cycles = 0;     // for the profiled images
  uint32_t images = 0;     // images the cycles are for
  double utilization = 0;  // macs * images / (cycles * N^2)
  // References, per image: the MXU doing nothing but useful MACs (macs / N^2), and the
  // SCALE-Sim weight-stationary stall-free estimate for the batch (folds run one after
  // another): ceil(Fh*Fw*C / N) * ceil(K / N) * (3N + E - 2) - 1 cycles, E = output pixels of
  // the batch (a dense layer: the batch), divided by the images.
  double ideal_cycles = 0;
  double scalesim_ws_cycles = 0;
  // DMA bytes per image of the layer's instructions (Program::layer_dma / batch): the network
  // input, activations read back from / spilled to host memory, weights, quantization
  // parameters and LUTs, the network output. Filled by add_layer_dma.
  LayerDma dma;  // whole-program bytes divided by the images of the program (rounded down)
};

// Sets each profile's `dma` from the program that ran `images` images.
void add_layer_dma(std::vector<LayerProfile>& layers, const Program& p, uint32_t images);

// One layer's figures for `cycles` spent on `images` images (utilization and the references).
LayerProfile layer_profile(const QLayer& layer, uint32_t n, uint32_t images, uint64_t cycles);

// Per-layer cycles of one real run, from its instruction timeline (Device::timeline): the array
// works on one layer at a time, so the run is cut where the first matmul of another layer
// starts, and each stretch goes to the layer whose matmuls it holds (the first stretch from
// cycle 0, the last to the end of the run; several micro-batches add up per layer). The layers'
// cycles add up to the run's. `instr_layer` is Program::instr_layer of the program that ran.
std::vector<LayerProfile> profile_from_timeline(const QuantNetwork& net, uint32_t n,
                                                uint32_t images, uint64_t run_cycles,
                                                const std::vector<InstrEvent>& events,
                                                const std::vector<int>& instr_layer);

class ChipRunner {
 public:
  // Compiles `net` for the device's chip and allocates host buffers for up to `max_batch`
  // images per run. Throws Error if the network does not fit the chip.
  ChipRunner(Device& device, const QuantNetwork& net, uint32_t max_batch,
             const ProgramOptions& options = {});
  // Releases the host buffers it allocated (those still registered: a caller may have
  // released them already, e.g. with Device::release_all), so the device's arena and DMA
  // windows are free for the next runner.
  ~ChipRunner();
  ChipRunner(const ChipRunner&) = delete;
  ChipRunner& operator=(const ChipRunner&) = delete;

  const CompiledNetwork& compiled() const { return cn_; }
  uint32_t max_batch() const { return max_batch_; }
  // The program for `batch` images (compiled on first use).
  const Program& program(uint32_t batch);

  struct Result {
    std::vector<std::vector<int32_t>> outputs;  // per image, quantized output values
    RunStats stats;
    const Program* program = nullptr;
  };
  // Runs 1..max_batch images, each net.input.size() quantized input values.
  Result run(const std::vector<const int32_t*>& images, uint64_t max_cycles = 0);

  // Per-layer cycles without a timeline (the model backend): runs the program of this batch
  // cut after each layer of its first micro-batch (the chip's counters are global) and takes
  // the differences. Each cut waits for its layer's last activates, which the full run
  // overlaps with the next layer, so a layer after a long drain can show more than 100 %.
  std::vector<LayerProfile> profile(const std::vector<const int32_t*>& images,
                                    uint64_t max_cycles = 0);

 private:
  void write_inputs(const std::vector<const int32_t*>& images);
  void release_buffers() noexcept;
  uint64_t cycle_limit(const Program& p, uint64_t given) const;

  Device& dev_;
  CompiledNetwork cn_;
  uint32_t max_batch_;
  ProgramOptions options_;
  HostBuffer constants_, input_, output_;
  HostBuffer scratch_;  // spilled activations (CompiledNetwork::spill)
  std::map<uint32_t, std::unique_ptr<Program>> programs_;
};

// NCHW float pixels / 255 of a uint8 image (the input contract).
std::vector<float> pixels_to_float(const uint8_t* pixels, int64_t count);

// Throws Error unless images of `channels` x `rows` x `cols` fit the model's input.
void check_input_shape(const Shape3& model_input, const std::string& model, int channels, int rows,
                       int cols, const std::string& data);

}  // namespace tpu::cnn

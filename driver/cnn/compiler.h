// The layer compiler: a quantized network (network.h QuantNetwork) into one chip program per
// batch size that runs every layer on the chip. The host writes the input images and reads the
// logits; nothing else crosses between them.
//
// Data layout on the chip (N = MXU size):
//  * An activation tensor of C channels, H x W, is ceil(C/N) channel blocks of (H + pads) x
//    (W + pads) unified-buffer rows: one row per pixel holding N channels, with a border of the
//    zero point when the consuming convolution pads. Images of a micro-batch follow each other.
//    Borders are written on chip each run by `activate` with multiplier 0 (output = zero point).
//  * The first layer's input is laid out by the host ("packed"): for a convolution one row per
//    output pixel holding its whole receptive field (Cin*kh*kw values, im2col) in
//    ceil(Cin*kh*kw / N) row blocks; for a dense layer the flattened input in N-value rows.
//  * A convolution is, per block of N output channels, a sum over (input channel block, kernel
//    position) of matmuls over the 2-D strided UB pattern (ub = base + ky*Wp + kx, inner = Wo,
//    inner_stride = stride, outer = Ho, outer_stride = stride*Wp) into the accumulators; one
//    activate per image applies bias, requantization, ReLU/clamp and max-pooling and writes the
//    next layer's layout (pooled pixels at the right stride inside the next border).
//  * A dense layer is a sum over (channel block, pixel) of one-row-per-image matmuls, flattening
//    in ONNX's C, H, W order by the choice of weight tiles; the output is ceil(Cout/N) rows per image.
//  * The accumulators are a ring of units (each at most half of it: the MXU fills one unit's
//    rows while the activation unit drains the previous one's); the previous unit's activates
//    are spread among the current unit's matmuls (in-order issue); a few rows at the top are
//    the zero source for borders.
//  * Quantization slots: one per (layer, output block); when they do not all fit, they are
//    reloaded in generations (read_host to PARAM) as the program reaches them.
//  * A batch is processed in micro-batches of as many images as the unified buffer holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa.h"
#include "network.h"

namespace tpu::cnn {

// Batch-independent part of a compiled network: weight tiles and quantization slots in host
// memory, and the data layouts.
struct CompiledNetwork {
  QuantNetwork net;
  ChipParams chip;
  std::vector<uint8_t> constants;  // weight tiles, then quantization slot generations

  // Per image: input rows the host writes, output rows the chip writes (N bytes each).
  uint32_t input_rows = 0, output_rows = 0;
  uint32_t input_bytes() const { return input_rows * chip.N; }
  uint32_t output_bytes() const { return output_rows * chip.N; }

  // The host side of the contract: one image of quantized input values (net.input.size(), in
  // input_q's range) into the `input_bytes()` the chip reads, and the chip's output bytes of
  // one image back into quantized output values (classes() values, NCHW order).
  void pack_input(const int32_t* q, uint8_t* bytes) const;
  std::vector<int32_t> unpack_output(const uint8_t* bytes) const;

  // ---- plan (filled by compile_network, used by emit_program)
  struct Tensor {  // one activation tensor's layout in UB
    int channels = 0, blocks = 0, h = 0, w = 0;
    int pt = 0, pl = 0, pb = 0, pr = 0;
    bool is_unsigned = false;
    int zero_point = 0;
    uint32_t hp() const { return uint32_t(pt + h + pb); }
    uint32_t wp() const { return uint32_t(pl + w + pr); }
    uint32_t block_rows() const { return hp() * wp(); }
    uint32_t image_rows() const { return uint32_t(blocks) * block_rows(); }
    bool padded() const { return pt || pl || pb || pr; }
  };
  struct LayerPlan {
    bool packed = false;       // reads the host-packed input
    int kin_blocks = 0;        // input row blocks per tap
    int taps = 0;              // kernel positions (conv) or pixels (dense); 1 when packed
    int obs = 0;               // output channel blocks
    int lines_used = 0, cols_used = 0;  // conv output lines / columns that pooling reads
    uint32_t tile_offset = 0;  // in constants: obs * tiles_per_ob() tiles
    int tiles_per_ob() const { return kin_blocks * taps; }
    struct Chunk {             // a range of output blocks sharing one slot generation
      int ob_begin = 0, ob_end = 0, generation = 0, slot_base = 0;
    };
    std::vector<Chunk> chunks;
    std::vector<int32_t> chip_bias;  // bias - zp_in * sum(weights), per output channel
  };
  std::vector<Tensor> tensors;     // tensors[l] is layer l's input (l >= 1), tensors[L] the output
  Tensor input_tensor;             // the packed input (blocks x pixels, no border)
  std::vector<LayerPlan> layers;
  struct Generation {
    uint32_t offset = 0;  // in constants
    int slots = 0;
  };
  std::vector<Generation> generations;
  uint32_t zero_slots_offset = 0;  // in constants: zero-source slots (bias 0, mult 0, misc zp)
  std::vector<std::pair<int, bool>> zero_slots;  // (zero point, unsigned), at slots qp_slots-k..
  int zero_slot(int zp, bool is_unsigned) const;
  uint32_t zero_rows = 0;          // ACC rows at the top used as the zero source
};

// Plans layouts and builds the constants. Throws Error if the network does not fit the chip
// (a layer too wide for the accumulators, a kernel stride > 255, a pooling window > 15, ...).
CompiledNetwork compile_network(const QuantNetwork& net, const ChipParams& chip);

struct ProgramOptions {
  uint32_t max_micro_batch = 0;  // 0 = as many as fit
};

// One program for `batch` images. Host addresses: `constants_addr` holds
// CompiledNetwork::constants, `input_addr` batch * input_bytes(), `output_addr` receives
// batch * output_bytes().
struct Program {
  std::vector<Instruction> instructions;  // ends with halt
  uint32_t batch = 0, micro_batch = 0;
  // For per-layer profiling: instructions [0, layer_end[l]) (plus a halt) run the first
  // micro-batch up to and including layer l.
  std::vector<size_t> layer_end;
  // Per instruction: the layer (index into net.layers) it works for, -1 for none (the
  // parameter loads at the start, the output write_host, halt). A read_weights counts for
  // the layer of its first tile.
  std::vector<int> instr_layer;
  uint32_t first_micro_batch() const { return micro_batch < batch ? micro_batch : batch; }
  // Bytes the program moves (instruction fetch included in dma_in_bytes).
  uint64_t dma_in_bytes = 0, dma_out_bytes = 0, input_data_bytes = 0, weight_bytes = 0;
  uint64_t mxu_rows = 0;  // matmul rows fed (each N x N MACs)
};
Program emit_program(const CompiledNetwork& cn, uint32_t batch, uint32_t constants_addr,
                     uint32_t input_addr, uint32_t output_addr, const ProgramOptions& options = {});

}  // namespace tpu::cnn

// SPDX-License-Identifier: Apache-2.0
// The layer compiler: a quantized network (network.h QuantNetwork, a DAG of fused layers) into
// one chip program per batch size that runs every layer on the chip. The host writes the input
// images and reads the output; nothing else crosses between them.
//
// Data layout on the chip (N = MXU size):
//  * An activation tensor of C channels, H x W, is ceil(C/N) channel blocks of (H + pads) x
//    (W + pads) unified-buffer rows: one row per pixel holding N channels, with a border as wide
//    as its consumers pad (the largest over them; each reads its own window of it). The border
//    holds the zero point (convolutions pad with a real 0) or the type's minimum (max-pooling
//    pads never win). Images of a micro-batch follow each other. Borders are written on chip
//    each run by `activate` with multiplier 0 (output = the slot's zero point).
//  * Tensors are placed in the unified buffer by liveness (first fit): a tensor's rows are
//    reused once its last consumer has been emitted; the chip's hazard checks order the reuse.
//  * The input is laid out by the host. When one Conv/Dense reads it and nothing else, it is
//    "packed": for a convolution one row per output pixel holding its whole receptive field
//    (Cin*kh*kw values, im2col) in ceil(Cin*kh*kw / N) row blocks; for a dense layer the
//    flattened input in N-value rows. Otherwise it is a tensor like the others, border included.
//  * Every layer is, per block of N output channels, a sum of matmul "terms" into the
//    accumulators, then one activate per image (bias, requantization, ReLU/clamp/LUT,
//    max-pooling) writing the layer's output tensor:
//    - Conv: per (kernel tap, input block) one matmul over the 2-D strided UB pattern (ub = base
//      + ky*dh*Wp + kx*dw, inner = Wo, inner_stride = stride, outer = Ho, outer_stride =
//      stride*Wp); tiles that are all zero (other groups of a grouped or depthwise convolution)
//      are skipped, so a depthwise 3x3 is 9 diagonal tiles per block. Concatenated inputs are
//      just more input blocks: a Concat feeding convolutions costs nothing.
//    - Dense: per (input block, pixel) one matmul with one row per image, flattening in ONNX's
//      C, H, W order by the choice of tiles (global average pooling: diagonal tiles).
//    - Add: two matmuls per block with diagonal tiles holding the operands' weights.
//    - Copy: one matmul per contributing input block with a (permuted) identity tile.
//    Consecutive terms with the same tile do not switch weights (no second load).
//  * The accumulators are a ring of units (each at most half of it: the MXU fills one unit's
//    rows while the activation unit drains the previous one's); the previous unit's activates
//    are spread among the current unit's matmuls (in-order issue); a few rows at the top are
//    the fill source for borders.
//  * An AveragePool whose divisor changes at the borders (count_include_pad = 0, partial
//    ceil-mode windows) sums like a Conv of ones and is requantized with one slot per divisor:
//    one activate per run of output lines with one divisor (per line and run of columns when
//    the divisor changes along the line).
//  * Quantization slots: one per (layer, output block); when they do not all fit, they are
//    reloaded in generations (read_host to PARAM) as the program reaches them. A LUT layer
//    loads its table (read_host to LUT) before its first activate.
//  * A layer's output borders are written among its first unit's matmuls (a run of them before
//    would hold the matmuls back while the activation unit drains the previous layer).
//  * A first layer whose max-pooling activates outlast its matmuls (ResNet's stem: 3x3 windows
//    at stride 2 read 2.25 accumulator rows per row computed) runs interleaved image by image
//    with the convolution after it: the stem's units of image k, then the second layer's of
//    image k-1, each unit's activates right after the next unit's first matmul, so the array
//    computes the second layer while the activation unit pools (ProgramOptions::
//    pair_first_layers; the second layer's borders go among its last unit's matmuls).
//  * A batch is processed in micro-batches of as many images as the unified buffer holds.
//  * Spilling (`CompiledNetwork::spill`): when one image's live tensors do not fit the unified
//    buffer, every tensor lives in host memory (a scratch area, `scratch_bytes`) in the same
//    layout, and each layer runs image by image in spatial tiles of output lines: per tile the
//    input lines it needs (its halo included) come in by read_host, the output blocks are
//    computed as above, and the tile's output lines (with their borders) go out by write_host.
//    Tiles are double-buffered: the next tile's input DMA and the previous tile's output DMA
//    run while the array works. A tile is as many output lines as the accumulators (half of
//    them) and the unified buffer (two input buffers, three one-block output buffers) allow;
//    every tile streams the layer's weights again, so a layer takes one input buffer (taller
//    tiles, unhidden reads) when that saves DMA rows. A fused max-pool's tile computes the
//    conv lines its pooled lines read, the pool's padding at the image's edges. A layer whose
//    one output line does not fit is an error naming it and the shortfall.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa.h"
#include "network.h"

namespace tpu::cnn {

// Batch-independent part of a compiled network: weight tiles, quantization slots and LUTs in
// host memory, and the data layouts.
struct CompiledNetwork {
  QuantNetwork net;
  ChipParams chip;
  std::vector<uint8_t> constants;  // weight tiles, quantization slot generations, fill slots, LUTs

  // Per image: input rows the host writes, output rows the chip writes (N bytes each).
  uint32_t input_rows = 0, output_rows = 0;
  // Per image in host memory: those rows, rounded up to the DMA's 16-byte alignment (images
  // follow each other at this stride; N < 16 and an odd number of rows leave a gap).
  uint32_t input_bytes() const { return (input_rows * chip.N + 15) / 16 * 16; }
  uint32_t output_bytes() const { return (output_rows * chip.N + 15) / 16 * 16; }

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
    int fill = 0;  // border value
    // UB rows per pixel: 1, or Activate::kRawRowsPerPixel for a raw layer's int32 output (a
    // pixel's N int32 in four rows; such a tensor has no border and no reader on the chip).
    uint32_t pixel_rows = 1;
    uint32_t hp() const { return uint32_t(pt + h + pb); }
    uint32_t wp() const { return uint32_t(pl + w + pr) * pixel_rows; }
    uint32_t block_rows() const { return hp() * wp(); }
    uint32_t image_rows() const { return uint32_t(blocks) * block_rows(); }
    bool padded() const { return pt || pl || pb || pr; }
  };
  // One matmul term of an output block: input `input` (index into the layer's inputs), its
  // channel block `ib`, kernel tap or pixel `tap`, weight tile at `tile` in constants.
  struct Term {
    int input = 0, ib = 0, tap = 0;
    uint32_t tile = 0;
    bool switch_weights = true;  // false: the same tile as the previous term (stays active)
  };
  struct LayerPlan {
    bool packed = false;                   // reads the host-packed input
    int obs = 0;                           // output channel blocks
    int lines_used = 0, cols_used = 0;     // conv output lines / columns that pooling reads
    std::vector<std::vector<Term>> terms;  // per output block
    struct Chunk {                         // a range of output blocks sharing one slot generation
      int ob_begin = 0, ob_end = 0, generation = 0, slot_base = 0;
    };
    std::vector<Chunk> chunks;
    // Slots per output block: 1, or one per divisor of a per-pixel-divisor AveragePool; output
    // block ob's slot for divisor d is slot_base + (ob - ob_begin) * divisors + d.
    int divisors = 1;
    std::vector<int32_t> chip_bias;  // bias - sum(zp_in * weights), per output channel
    int lut = -1;                    // index into luts
    // Depthwise unit (chip.dw_width > 0, a depthwise Conv dwconv takes): per output block the
    // constants offset of its kh*kw tap rows (lane n: channel ob*N + n) and a zero-point row of
    // zeros (the chip bias already holds the zero-point correction, as for the matmuls). Empty:
    // the layer runs as matmuls (diagonal tiles).
    std::vector<uint32_t> dw_rows;
  };
  Tensor input_tensor;  // the host-written input (packed, or a tensor with borders)
  bool packed_input = false;
  std::vector<Tensor> tensors;  // tensors[l] is layer l's output
  const Tensor& tensor_of(int l) const {
    return l == kNetworkInput ? input_tensor : tensors[size_t(l)];
  }
  // A second copy of layer l's output (blocks = 0: none) with the border its padded max-pools
  // need (the type's minimum), when convolutions pad the same tensor with its zero point and
  // its values may lie below it: the layer's activates write both.
  std::vector<Tensor> shadows;
  bool has_shadow(int l) const { return l >= 0 && shadows[size_t(l)].blocks > 0; }
  // Whether layer `consumer` reads `producer`'s shadow (a padded max-pool of a shadowed tensor).
  bool reads_shadow(int consumer, int producer) const;
  // The layout layer `consumer` reads input `producer` in.
  const Tensor& input_of(int consumer, int producer) const {
    return reads_shadow(consumer, producer) ? shadows[size_t(producer)] : tensor_of(producer);
  }
  std::vector<LayerPlan> layers;
  std::vector<int> last_use;  // per layer output (index l + 1; [0] the input): last consumer
  struct Generation {
    uint32_t offset = 0;  // in constants
    int slots = 0;
  };
  std::vector<Generation> generations;
  uint32_t fill_slots_offset = 0;  // in constants: fill-source slots (bias 0, mult 0, misc zp)
  std::vector<std::pair<int, bool>> fill_slots;  // (value, unsigned), at slots qp_slots-k..
  int fill_slot(int value, bool is_unsigned) const;
  uint32_t fill_rows = 0;      // ACC rows at the top used as the fill source
  std::vector<uint32_t> luts;  // offsets in constants of 256-byte LUTs

  // ---- spilling (see the top of this file)
  bool spill = false;
  uint64_t scratch_bytes = 0;           // host scratch the program needs (16-byte aligned)
  std::vector<uint64_t> spill_offset;   // per layer output in the scratch (last: unused)
  std::vector<uint64_t> shadow_offset;  // per layer shadow in the scratch
};

// Plans layouts and builds the constants. Throws Error if the network does not fit the chip
// (a layer too wide for the accumulators, a kernel stride > 255, a pooling window > 15, ...).
CompiledNetwork compile_network(const QuantNetwork& net, const ChipParams& chip);

struct ProgramOptions {
  uint32_t max_micro_batch = 0;  // 0 = as many as fit
  // A layer's last activates move in among the next layer's first matmuls when those read
  // other images (or other tensors) and other accumulator rows: the activation unit drains
  // one layer while the MXU starts the next. Off: every layer's instructions end before the
  // next layer's begin, so Program::layer_end cuts exactly (the model backend's profile).
  bool overlap_layers = true;
  // With overlap_layers: a first layer whose max-pooling activates outlast its matmuls (a
  // packed, pooled convolution such as ResNet's stem) runs interleaved image by image with
  // the convolution after it, so the array works on the second while the activation unit pools
  // the first.
  bool pair_first_layers = true;
  // Spilling with the depthwise unit: a 1x1 convolution whose only reader is a depthwise Conv
  // on the unit runs fused with it, band by band, so its output never goes to host memory
  // (Emitter::spill_fused). Off: each runs by itself (its output spilled).
  bool fuse_depthwise = true;
  // With overlap_layers, the depthwise unit and a network that fits: a 1x1 convolution whose
  // only reader is a depthwise Conv on the unit runs interleaved with it image by image (the
  // convolution's units of image k+1 among the dwconvs of image k), so the array works while
  // the unit does: the unit has its own UB read port and ACC write port (docs/isa.md
  // "dwconv", Ordering). Only layers on the unit pair, so programs for chips without it do not
  // change. On by default (the bundled MobileNet on the RTL chip: fewer cycles per image,
  // docs/cnn.md). Spilled, it software-pipelines each fused pair (fuse_depthwise,
  // Emitter::spill_fused): a block's dwconv runs beside the next block's matmuls
  // (MobileNetV2 on tpusim_dw_n16: 2,114,240 -> 1,789,685 cycles).
  bool pair_depthwise = true;
  // Host address of CompiledNetwork::scratch_bytes of scratch (needed when cn.spill).
  uint32_t scratch_addr = 0;
};

// DMA bytes of one layer's instructions (for the whole program; divide by the batch).
struct LayerDma {
  uint64_t input = 0;      // the network input (read_host from the input buffer)
  uint64_t spill_in = 0;   // activations read back from the scratch
  uint64_t weights = 0;    // read_weights
  uint64_t params = 0;     // quantization slots and LUTs
  uint64_t spill_out = 0;  // activations written to the scratch
  uint64_t output = 0;     // the network output (write_host to the output buffer)
  uint64_t in() const { return input + spill_in + weights + params; }
  uint64_t out() const { return spill_out + output; }
  LayerDma& operator+=(const LayerDma& o) {
    input += o.input, spill_in += o.spill_in, weights += o.weights;
    params += o.params, spill_out += o.spill_out, output += o.output;
    return *this;
  }
};

// One program for `batch` images. Host addresses: `constants_addr` holds
// CompiledNetwork::constants, `input_addr` batch * input_bytes(), `output_addr` receives
// batch * output_bytes().
struct Program {
  std::vector<Instruction> instructions;  // ends with halt
  uint32_t batch = 0, micro_batch = 0;
  // For per-layer profiling: instructions [0, layer_end[l]) (plus a halt) run the first
  // micro-batch up to and including layer l (exactly so with overlap_layers off).
  std::vector<size_t> layer_end;
  // Per instruction: the layer (index into net.layers) it works for, -1 for none (the
  // parameter loads at the start, the output write_host, halt). A read_weights counts for
  // the layer of its first tile.
  std::vector<int> instr_layer;
  uint32_t first_micro_batch() const { return micro_batch < batch ? micro_batch : batch; }
  // Bytes the program moves (instruction fetch included in dma_in_bytes).
  uint64_t dma_in_bytes = 0, dma_out_bytes = 0, input_data_bytes = 0, weight_bytes = 0;
  uint64_t mxu_rows = 0;  // matmul rows fed (each N x N MACs)
  // Per layer (index into net.layers) DMA bytes; `other_dma` for instructions of no layer.
  std::vector<LayerDma> layer_dma;
  LayerDma other_dma;
  uint64_t spill_in_bytes = 0, spill_out_bytes = 0;  // scratch traffic of the whole program
};
Program emit_program(const CompiledNetwork& cn, uint32_t batch, uint32_t constants_addr,
                     uint32_t input_addr, uint32_t output_addr, const ProgramOptions& options = {});

}  // namespace tpu::cnn

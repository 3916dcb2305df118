// SPDX-License-Identifier: Apache-2.0
// The emitter (backend/): one program for a batch from a compiled network. Internal to
// driver/cnn: the public interface is compiler.h (emit_program).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "compiler.h"

namespace tpu::cnn::backend {

// An instruction being scheduled, before the weight loads are inserted (weight_prefetch.cpp).
struct Op {
  Instruction ins;
  uint32_t tile = 0;  // host address of the tile a switching matmul makes active
  int marker = -1;    // >= 0: end of layer `marker` in the first micro-batch (no instruction)
  int layer = -1;     // the layer it works for (Program::instr_layer)
};

// Spreads ops[act_begin, end) evenly among ops[mm_begin, act_begin), in order, none before
// the first of them (see Emitter::interleave).
void interleave(std::vector<Op>& ops, size_t mm_begin, size_t act_begin);

class Emitter {
 public:
  Emitter(const CompiledNetwork& cn, uint32_t batch, uint32_t caddr, uint32_t iaddr, uint32_t oaddr,
          const ProgramOptions& opt);

  Program run();

 private:
  void op(const Instruction& i, uint32_t tile = 0);

  // ---- unified buffer plan: every tensor (the input, then each layer's output) gets rows for
  // the micro-batch from its producer to its last consumer, first fit; the packed input is
  // staged in two buffers of g0 images while the first layer runs. The bases (input, layers,
  // shadows) into *bases; false if they need more than the unified buffer.
  // `ahead` >= 0: the next micro-batch's input is read before layer `ahead` (prefetch_input),
  // so its rows are also taken from then on.
  bool place(uint32_t m, uint32_t g0, int ahead, std::vector<uint32_t>* bases,
             uint64_t* peak) const;
  // The layers before which the next micro-batch's input may be read: after the last reader
  // of the input and the last depthwise layer (its tap reads share the DMA), not inside a
  // pair; earliest first.
  std::vector<int> input_ahead_candidates() const;
  // The next micro-batch's input (its first staging group if packed), read ahead.
  void prefetch_input(uint32_t first, uint32_t m);

  void plan_memory(const ProgramOptions& opt);
  // UB base of layer l's output (kNetworkInput: the input), and of its shadow.
  uint32_t tensor_base(int l) const;
  uint32_t shadow_base(size_t l) const;
  // Where layer `consumer` reads input `producer`.
  uint32_t input_base(int consumer, int producer) const;

  void load_generation(int g);

  void load_lut(int lut);

  // Writes the fill value into every border row of layer l's output and shadow (m images).
  void fill_borders(size_t l, uint32_t m);
  void fill_borders(const CompiledNetwork::Tensor& t, uint32_t base, uint32_t m);

  struct Unit {
    size_t li = 0;           // the layer
    uint32_t g0 = 0, g = 0;  // images [g0, g0 + g) of the micro-batch
    int ob = 0, slot = 0, gen = 0;
    int py0 = 0, py1 = 0;  // pooled output lines (conv-like)
    int y0 = 0, y1 = 0;    // conv output lines computed
    uint32_t acc = 0;      // ACC base
    uint32_t rows = 0;     // ACC rows per image
    bool first_of_group = false;
    uint32_t group_index = 0;
    uint32_t next_group_g0 = 0, next_group_g = 0;  // the group after this one (g = 0: none)
  };

  void layer(size_t li, uint32_t i0, uint32_t m);

  // Whether the first layer is worth interleaving with the second, image by image: a packed
  // convolution whose fused max-pool makes its activates longer than its matmuls (each
  // pooling window reads its pool_k^2 accumulator rows: ResNet's stem, 3x3 stride 2, reads
  // 2.25 rows per row computed), followed by a convolution that reads only it. Emitted alone,
  // the array idles while the activation unit pools; interleaved, the first layer's activates
  // of image i run during the second layer's matmuls of image i-1 (and those activates during
  // the first layer's matmuls of image i+1). Both layers must use one slot generation and no
  // LUT (their activates alternate), and one unit per image and output block.
  bool pairs_first_layers() const;

  // Layers 0 and 1 interleaved (pairs_first_layers): layer 0's units of image group k, then
  // layer 1's units (one image each) of group k - 1, whose layer-0 activates are all emitted
  // by then (each unit's activates go among the next unit's matmuls).
  void first_layers_paired(uint32_t i0, uint32_t m);

  // Whether layer li (a convolution, not packed, no pooling) and li + 1 (a depthwise Conv on the
  // unit that alone reads it) can run interleaved image by image (ProgramOptions::
  // pair_depthwise): one image per unit fits half the accumulators for both, one slot
  // generation, no LUT.
  bool pairs_with_depthwise(size_t li) const;

  // Layers li and li + 1 interleaved (pairs_with_depthwise): li's units of image 0, then per
  // image k the dwconv units of image k spread among li's units of image k + 1 (which do not
  // depend on them), so the MXU and the depthwise unit have work at the same time.
  void depthwise_paired(size_t li, uint32_t i0, uint32_t m);

  // Layer li's units for a micro-batch of m images: per chunk of output blocks, groups of
  // images (at most `images_per_unit`, 0: as many as half the accumulators hold), per output
  // block, per band of output lines.
  std::vector<Unit> make_units(size_t li, uint32_t m, uint32_t images_per_unit) const;

  // The activates of unit u, tagged with its layer.
  void unit_activates(const Unit& u);

  // Emits units in order (of one layer, or of two paired layers): each unit's matmuls, with
  // the previous unit's activates spread among them when they read other accumulator rows.
  void emit_units(std::vector<Unit>& units, uint32_t i0, uint32_t m);

  // The last unit's activates of a layer wait here for the next layer's first matmuls.
  struct Pending {
    Unit unit;
    uint32_t rows = 0;
    bool valid = false;
  };
  void flush_pending();

  // Spreads the instructions ops_[act_begin, end) evenly among ops_[mm_begin, act_begin), in
  // order, none before the first matmul. The chip issues in order: a run of activates (one per
  // image, each as long as the act unit takes for it) would otherwise hold back the matmuls
  // queued behind it while the act unit works through them one by one, and the array would
  // idle (measured on the bundled CNN: ~100 cycles per activate at conv2, 6,500 cycles a batch
  // of 16). Spread out, each activate issues while the array is busy with matmuls.
  void interleave(size_t mm_begin, size_t act_begin);

  // Accumulator space is a ring: each unit takes the next free rows and wraps to 0 when the end
  // is reached, so the oldest unit's rows are reused first. A unit is at most half the ring, so
  // there are always at least two buffers; small units (the first conv: 676 rows) get three, and
  // then the next matmul never waits for the activate that is still reading the unit before
  // last (measured: that wait cost ~40 cycles per unit when matmul and activate are as long).
  // The chip's hazard checks keep any reuse correct; this only decides how soon it can happen.
  uint32_t acc_alloc(uint32_t rows);

  uint32_t staging_base(uint32_t buf) const;

  void stage_input(uint32_t i0, uint32_t g0, uint32_t g, uint32_t buf);

  // Input images [first, first + count) of the batch to UB rows from `ub` on: one DMA, or one
  // per image when the host stride holds a gap (N < 16).
  void read_images(uint32_t ub, uint32_t first, uint32_t count);

  void matmuls(size_t li, const Unit& u);

  // The depthwise unit's form of matmuls (LayerPlan::dw_rows): the block's tap rows in a UB
  // slot (dw_tap_slot), then per image one dwconv over the unit's output lines reading the
  // tensor with its border (no pad).
  void dw_convs(size_t li, const Unit& u);
  static constexpr uint32_t kDwSlots = 4, kDwSlotRows = 3 * 3 + 1;
  // UB rows reserved for the tap slots (both sides): 0 when no layer uses the unit.
  uint32_t dw_reserved() const;
  // UB rows reserved for the tap slots at the bottom of the unified buffer (rows [0, this));
  // the memory plan's tensors start above them. Spilled networks keep theirs only at the top.
  uint32_t dw_bottom() const;
  // The UB row of the slot holding layer li's tap rows of output block ob: a slot that still
  // holds them, else the next of kDwSlots slots, filled by a read_host (so the rows are read
  // once per block while its units follow one another). `top`: from the slots at the top of
  // the unified buffer, else those at the bottom. The decoder's hazard range of a dwconv is
  // the hull of its input and tap rows, so the caller takes the side that keeps the rows its
  // output activates write out of that hull: top when they lie below the input, bottom when
  // above (else every activate waits for the dwconv before it, and the next dwconv for it).
  uint32_t dw_tap_slot(size_t li, int ob, bool top = true);
  // One dwconv of layer li: conv lines [u.y0, u.y1) of one image's block from the window whose
  // first line (conv line u.y0's first input line) is at UB row `line0` (stride `wp`), taps in
  // UB row `slot`, into ACC rows from `acc`.
  void dw_conv(size_t li, const Unit& u, uint32_t line0, uint32_t slot, uint32_t acc);

  void activates(size_t li, const Unit& u);
  // `out` holds pooled lines from `out_line0` on (a spill tile's output buffer; 0: the whole
  // tensor).
  void activates(size_t li, const Unit& u, const CompiledNetwork::Tensor& out, uint32_t base,
                 int out_line0 = 0);

  // The activates of an AveragePool with per-pixel divisors (no pooling: output line y is ACC
  // line y - u.y0): one per run of lines with one divisor, each with its divisor's slot; where
  // the divisor also changes along a line, one per line and run of columns (an activate's ACC
  // rows are as wide as it is).
  void divisor_activates(const QLayer& l, const Unit& u, Activate a,
                         const CompiledNetwork::Tensor& out, uint32_t base, int out_line0);

  // ---- spilling (compiler.h): every tensor in host memory, layers in tiles of output lines.
  Program run_spill();

  // Host address of layer l's output (or shadow) of image `img` (kNetworkInput: the input).
  uint32_t host_of(int l, uint32_t img, bool shadow) const;

  struct SpillSrc {
    const CompiledNetwork::Tensor* t = nullptr;
    uint32_t host = 0;
    uint32_t lines = 0, line0 = 0;  // the window of padded lines a tile reads
    uint32_t offset = 0;            // of its window in an input buffer
    uint32_t block_rows() const { return lines * t->wp(); }
  };
  struct SpillTile {
    int py0 = 0, py1 = 0, y0 = 0, y1 = 0;  // pooled lines, conv lines
    std::vector<SpillSrc> srcs;
    std::vector<CompiledNetwork::Tensor> outs;  // one block of the tile's output (and shadow)
    std::vector<uint32_t> out_line0;            // first padded line written, per output
  };

  // The windows (padded lines) that conv lines [y0, y1) of layer li read of each input.
  void spill_windows(size_t li, int y0, int y1, std::vector<SpillSrc>& srcs) const;

  static constexpr uint32_t kOutBufs = 3;  // one-block output buffers of a spilled layer
  // How layer li runs spilled for image img: its outputs, tiles (with their input windows) and
  // buffers.
  struct SpillPlan {
    std::vector<const CompiledNetwork::Tensor*> outs;  // the output and its shadow
    bool blockwise = false;            // each output block reads only the same input block
    uint32_t nbuf = 2;                 // input buffers
    uint32_t in_buf = 0, out_buf = 0;  // UB rows of one input buffer, one output buffer
    std::vector<SpillTile> tiles;
  };
  SpillPlan plan_spill(size_t li, uint32_t img) const;
  // The tiles of `per` pooled lines, with their input windows and one-block outputs.
  std::vector<SpillTile> spill_tiles(size_t li, const std::vector<SpillSrc>& srcs,
                                     const std::vector<const CompiledNetwork::Tensor*>& outs,
                                     int per, bool blockwise) const;
  // One unit of a spilled layer: tile `tile`'s output block u.ob; `index` in the layer's order.
  struct SpillWork {
    Unit u;
    uint32_t tile = 0, index = 0;
  };
  // The units of a spilled layer: per tile, per output block.
  std::vector<SpillWork> spill_work(size_t li, const std::vector<SpillTile>& tiles) const;

  // A layer in tiles of output lines. Each unit (tile, output block) writes its output block
  // to host memory by itself (a ring of three one-block output buffers), so the unified buffer
  // holds the inputs: for a layer whose output block reads only the same input block (Add,
  // depthwise Conv, Copy) just that block's window per unit, else every input block's window
  // per tile; both double-buffered when two fit (the next one's DMA runs during this one's
  // matmuls). Tiles are as tall as the accumulators (half) and the unified buffer allow: the
  // fewer tiles, the fewer halo lines and weight passes (DMA bytes).
  void spill_layer(size_t li, uint32_t img);

  void spill_matmuls(size_t li, const SpillTile& tl, const Unit& u, uint32_t buf, bool blockwise);

  // ---- a 1x1 convolution fused with the depthwise layer after it (spilling, depthwise unit):
  // the convolution's output never leaves the chip. Per band of the depthwise layer's output
  // lines and per chunk of the convolution's output blocks (one slot generation): the
  // convolution's matmuls over the lines the band's windows read (the halo lines again in each
  // band) and its activates into one window buffer per block (with the border), then per block
  // the dwconv from its window and the depthwise activates into the output ring.
  // Whether layer li (the 1x1 convolution) and li + 1 run fused.
  bool fuses_with_next(size_t li) const;
  struct FusedPlan {
    int per = 0;                      // depthwise output lines per band
    uint32_t x_buf = 0, mid_buf = 0;  // UB rows of one input window, of one block's window
    uint32_t out_buf = 0, mids = 0;   // of one output buffer; window buffers
    std::vector<SpillTile> tiles;     // the depthwise layer's bands (windows into its input)
    bool pipelined = false;           // spill_fused software-pipelined (pair_depthwise)
    uint32_t e_rows = 0, d_rows = 0;  // ACC rows of one block's matmuls, of its dwconv
  };
  FusedPlan plan_fused(size_t li) const;
  // One block of the convolution's output in one band, and the depthwise layer's same block.
  struct FusedBlock {
    uint32_t band = 0;  // the depthwise layer's band (FusedPlan::tiles)
    bool first_of_band = false, first_of_chunk = false;
    uint32_t mid = 0;  // its window buffer
    Unit e, d;         // the convolution's unit (real lines), the dwconv's
  };
  // Per band, per chunk, per block.
  std::vector<FusedBlock> fused_blocks(size_t li, const FusedPlan& plan) const;
  // How many blocks ahead of its activates the convolution's matmuls run, pipelined (measured
  // on MobileNetV2, tpusim_dw_n16: 0 1,978,244 cycles, 1 1,789,685, 2 1,825,030; more blocks
  // ahead take more accumulator rows, so the bands get shorter).
  static constexpr size_t kFusedAhead = 1;
  // The state of one fused pair's emission.
  struct FusedRun {
    size_t li = 0;  // the convolution (li + 1: the depthwise layer)
    uint32_t img = 0;
    FusedPlan plan;
    uint32_t out0 = 0, x0 = 0, mid0 = 0;  // UB bases: output ring, input windows, window buffers
    std::vector<SpillTile> xts;           // per band: the convolution's input window
    std::vector<std::array<int, 3>> mid_filled;             // the borders each window buffer holds
    std::array<std::array<int, 3>, kOutBufs> out_filled{};  // and each output buffer
    uint32_t ring = 0;                                      // units written through the output ring
    size_t e_count = 0, d_count = 0;                        // blocks given accumulator rows
    uint32_t x_base(uint32_t band) const { return x0 + (band % 2) * plan.x_buf; }
  };
  void fused_read_x(const FusedRun& r, uint32_t band);
  // The convolution's matmuls of block b, its activates into b's window buffer (its borders
  // filled unless they already hold them), b's dwconv, and its activates into the output ring
  // with the write to host memory.
  void fused_expand_mm(FusedRun& r, FusedBlock& b);
  void fused_expand_act(FusedRun& r, const FusedBlock& b);
  void fused_depthwise(FusedRun& r, FusedBlock& b);
  void fused_depthwise_act(FusedRun& r, const FusedBlock& b);
  // Pipelined (FusedPlan::pipelined, ProgramOptions::pair_depthwise): block j + 1's matmuls,
  // block j's activates and dwconv, block j - 1's depthwise activates, so the array, the
  // activation unit and the depthwise unit each have work; else per band and chunk, all the
  // convolution's blocks, then their dwconvs.
  void spill_fused(size_t li, uint32_t img);

  // Inserts the read_weights: every tile is pushed before the matmul that switches to it, at most
  // WFifoTiles + 2 wait at once, and pushes run ahead (refilling when half the room is free).
  void finish(Program& prog);

  const CompiledNetwork& cn_;
  const uint32_t n_;
  const uint32_t batch_, caddr_, iaddr_, oaddr_;
  uint32_t half_ = 0, mb_ = 1, g0_ = 1;
  std::vector<uint32_t>
      base_;  // UB base of the input (or its staging), each layer's output, shadows
  mutable std::vector<size_t>
      shadow_item_;  // per layer: index of its shadow in base_ (set by place)
  int loaded_gen_ = -1, loaded_lut_ = -1;
  bool fill_slots_loaded_ = false;
  int cur_layer_ = -1;  // the layer being emitted (Op::layer)
  const bool overlap_;
  const bool fuse_dw_;         // ProgramOptions::fuse_depthwise
  const bool pipe_fused_;      // ProgramOptions::pair_depthwise, spilled: spill_fused pipelined
  int input_ahead_ = -1;       // the layer before which the next input is read (-1: none)
  bool input_ready_ = false;   // the micro-batch's input was read ahead
  bool pair_first_ = false;    // layers 0 and 1 run image-interleaved (pairs_first_layers)
  std::vector<char> pair_dw_;  // per layer li: li and li + 1 run paired (pairs_with_depthwise)
  const uint32_t saddr_;       // scratch (spilling)
  Pending pending_;
  uint32_t acc_next_ = 0;
  uint64_t mxu_rows_ = 0;
  std::array<uint32_t, 2> dw_slot_{};  // the next tap slot per side (dw_tap_slot: 0 top)
  struct DwHeld {
    int layer = -1, ob = -1;
  };
  std::array<std::array<DwHeld, kDwSlots>, 2> dw_held_{};  // the tap rows each slot holds
  std::vector<Op> ops_;
};

}  // namespace tpu::cnn::backend

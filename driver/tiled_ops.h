// SPDX-License-Identifier: Apache-2.0
// Tiled operations: an int8/uint8 matmul of any M x K x N with bias, requantization and an
// activation function, tiled over the chip's UB, accumulators, quantization slots and weight
// tiles, and scheduled so that weight and activation loads overlap the MXU.
//
//   out[r][c] = func(sat(round((sat32(sum_k a[r][k] * w[k][c]) + bias[c]) * mult[c] / 2^shift[c]) +
//   zp))
//
// exactly as docs/isa.md `activate` defines it (sum wraps to int32 like the accumulators).
// With `raw` the output is int32 instead: out[r][c] = sat32(wrap32(sum_k a[r][k] * w[k][c]) +
// bias[c]), the ISA's `activate raw` (no requantization, no function; ONNX MatMulInteger).
//
// Host layouts (T = the chip's N; kt = ceil(K/T) K tiles, nt = ceil(N/T) column blocks):
//   A    M rows of kt*T bytes: row-major, each row zero-padded to a multiple of T
//   W    kt*nt tiles of T*T bytes in consumption order: block j = 0..nt-1, then t = 0..kt-1;
//        tile (t, j) byte k*T + n = w[t*T + k][j*T + n] (0 outside K x N)
//   Q    quantization slot images of 12*T bytes (bias[T], mult[T], misc[T] int32), one per
//        column block, or a single one when every column has the same parameters
//   OUT  M rows of nt*T bytes, row-major padded: the A layout of a following layer;
//        raw: M rows of nt*T int32 (4*nt*T bytes, little-endian, columns in order)
//
// Schedule (emit_matmul): M is cut into chunks (`chunk_sizes`): a small first chunk so the
// MXU starts early, big middle chunks so each pass over the weights serves many rows, and a
// small last chunk so little is left to write back after the MXU is done. For each chunk,
// its A rows sit in UB (row r, K tile t at UB row base + r*kt + t); for each column block j
// the kt matmuls (switch, accumulate after the first) read UB with stride kt into an
// accumulator region, then one activate requantizes that region into the chunk's output rows
// (UB row out + r*nt + j), and one write_host sends the chunk back. UB regions for A and
// OUT are double-buffered across chunks and ACC regions rotate across column blocks, so the next
// chunk's A load, the previous block's activate and the previous chunk's write-back run
// while the MXU works; read_weights keep the weight FIFO topped up `weight_lookahead` tiles
// ahead. Each instruction that must wait for another (activate after its matmuls, write_host
// after its activates) is emitted one or two matmuls later, so it never holds up the
// in-order issue of the next matmul. No sync is needed: the chip tracks hazards itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device.h"
#include "isa.h"
#include "program.h"

namespace tpu {

// What to compute. Per-column vectors are empty (default), one value (every column) or n
// values; bias is empty or n values.
struct MatmulSpec {
  uint32_t m = 1, k = 1, n = 1;
  bool a_unsigned = false;     // A is uint8 (else int8)
  bool w_unsigned = false;     // W is uint8 (else int8)
  std::vector<int32_t> bias;   // default 0
  std::vector<int32_t> mult;   // default 1
  std::vector<uint8_t> shift;  // default 0; 0..63
  int zero_point = 0;          // in the output type
  ActFunc func = ActFunc::Identity;
  int clamp_lo = -128, clamp_hi = 127;  // func == Clamp, in the output type
  std::vector<uint8_t> lut;             // func == Lut: 256 bytes
  bool out_unsigned = false;            // output is uint8 (else int8)
  // int32 output (isa.md `activate raw`): sat32(wrap32(sum) + bias), 4 bytes each. Needs
  // func Identity, a signed output, zero_point 0 and no mult or shift (they do not apply).
  bool raw = false;

  // Throws std::invalid_argument naming the bad field and the allowed values.
  void validate() const;
  int32_t bias_at(uint32_t col) const;
  int32_t mult_at(uint32_t col) const;
  unsigned shift_at(uint32_t col) const;
  uint32_t misc_at(uint32_t col) const;  // the quantization slot's misc word for column col
  uint32_t out_bytes() const { return raw ? 4u : 1u; }  // bytes per output element
};

// The parts of the chip a tiled matmul may use (a layer compiler can reserve the rest).
// A count of 0 means "from base to the end".
struct MatmulResources {
  uint32_t ub_base = 0, ub_rows = 0;
  uint32_t acc_base = 0, acc_rows = 0;
  uint32_t first_slot = 0, slots = 0;
  uint32_t weight_lookahead =
      0;                        // tiles pushed ahead of the MXU (<= WFifoTiles + 2); 0 = WFifoTiles
  uint32_t max_chunk_rows = 0;  // cap on rows per chunk; 0 = as many as fit
  uint32_t edge_chunk_rows = 0;  // rows of the first and last chunk; 0 = chosen from N
};

struct MatmulPlan {
  uint32_t tile = 0;                  // the chip's N
  uint32_t kt = 0, nt = 0;            // K tiles, column blocks
  std::vector<uint32_t> chunk_sizes;  // rows of A per chunk, in order
  uint32_t chunk_rows = 0;            // the largest chunk (the size of each UB / ACC region)
  uint32_t chunks = 0;                // chunk_sizes.size()
  uint32_t ub_a[2] = {0, 0};          // UB base of the A rows of even / odd chunks
  uint32_t ub_out[2] = {0, 0};        // UB base of the output rows of even / odd chunks
  uint32_t acc[3] = {0, 0, 0};        // ACC regions, used by column blocks in turn
  uint32_t acc_buffers = 0;           // regions: 3 when kt = 1, else 2; 1 if ACC space is short
  bool double_buffered_ub = false;
  uint32_t quant_images = 0;  // 1 (all columns alike) or nt
  uint32_t first_slot = 0;
  bool reload_quant = false;  // more images than slots: loaded in batches while running
  uint32_t slot_batch = 0;    // images per batch (when reload_quant)
  uint32_t slot_banks = 0;    // 2 (load one bank while the other is used) or 1
  uint32_t weight_lookahead = 0;
  uint32_t ub_rows_used = 0, acc_rows_used = 0, slots_used = 0;

  uint64_t weight_tiles_read() const { return uint64_t{chunks} * kt * nt; }
  std::string describe() const;  // one line, for logs and tpusim
};

// Chooses the tiling. Throws std::invalid_argument if the spec is invalid or the matmul
// cannot fit in `res` (e.g. one row of A and of the output need more UB rows than allowed).
MatmulPlan plan_matmul(const ChipParams& params, const MatmulSpec& spec,
                       const MatmulResources& res = {});

// ---- host-side packing (T = the chip's N)
// a: m x k bytes row-major -> the A layout. Works for any row-major matrix (also OUT).
std::vector<uint8_t> pack_rows(const std::vector<uint8_t>& a, uint32_t m, uint32_t k,
                               uint32_t tile);
// The inverse: m rows of ceil(cols/T)*T bytes -> m x cols.
std::vector<uint8_t> unpack_rows(const std::vector<uint8_t>& padded, uint32_t m, uint32_t cols,
                                 uint32_t tile);
// w: k x n bytes row-major -> the W layout.
std::vector<uint8_t> pack_weights(const std::vector<uint8_t>& w, uint32_t k, uint32_t n,
                                  uint32_t tile);
// The Q layout for `spec` (quant_images(spec) images).
std::vector<uint8_t> pack_quant(const MatmulSpec& spec, uint32_t tile);
uint32_t quant_images(const MatmulSpec& spec, uint32_t tile);

// Host addresses of the operands in the layouts above.
struct MatmulHostAddrs {
  uint32_t a = 0, w = 0, quant = 0, lut = 0, out = 0;
};

// Appends the matmul's instructions (no halt) to `b`, which must have no weight tiles pending
// (the schedule owns the weight FIFO while it runs).
void emit_matmul(ProgramBuilder& b, const MatmulSpec& spec, const MatmulPlan& plan,
                 const MatmulHostAddrs& addrs);

// ---- one call: pack, allocate buffers on the device, build, run, read back, release.
struct MatmulRun {
  std::vector<uint8_t> out;    // m x n bytes row-major (int8 or uint8 per spec.out_unsigned)
  std::vector<int32_t> out32;  // spec.raw: m x n int32 row-major (then `out` is empty)
  RunStats stats;
  MatmulPlan plan;
  size_t instructions = 0;
  uint64_t useful_macs = 0;    // m*k*n
  double mxu_utilization = 0;  // useful_macs / (cycles * N^2)
};
// a: m x k, w: k x n, row-major bytes. Throws std::invalid_argument for bad arguments, and
// what Device::run throws.
MatmulRun run_matmul(Device& dev, const MatmulSpec& spec, const std::vector<uint8_t>& a,
                     const std::vector<uint8_t>& w, uint64_t max_cycles = Device::kDefaultMaxCycles,
                     const MatmulResources& res = {});

// The plain C++ reference: a triple loop and the isa.md output stage, m x n bytes. Throws
// std::invalid_argument for a raw spec (its output is int32: reference_matmul_int32).
std::vector<uint8_t> reference_matmul(const MatmulSpec& spec, const std::vector<uint8_t>& a,
                                      const std::vector<uint8_t>& w);
// The same triple loop up to the first step of the output stage: m x n int32
// sat32(wrap32(sum) + bias), the output of a raw spec (for any spec: what its requantization
// starts from).
std::vector<int32_t> reference_matmul_int32(const MatmulSpec& spec, const std::vector<uint8_t>& a,
                                            const std::vector<uint8_t>& w);

}  // namespace tpu

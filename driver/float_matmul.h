// SPDX-License-Identifier: Apache-2.0
// A float32 matmul of any M x K x N on the bf16 matrix unit of a chip with VMEM (docs/isa.md
// "Training configuration"), the float twin of tiled_ops.h's int8 run_matmul. The Python
// module's Device.matmul with float32 operands is this code (python/src/device.cpp).
//
//   out[r][c] = the chip's fp32 sum of bf16(a[r][k]) * bf16(w[k][c]), to the bit
//
// Numerics (docs/isa.md "Floating point"): a and w are rounded to bf16 (RNE, DAZ, canonical
// NaN), products are exact, sums are fp32 (RNE, FTZ). K is padded with +0 to kt = ceil(K/T) tiles
// (T = the chip's N); for each output element, K tile 0's column sum (isa.md "Matrix unit
// summation order") overwrites the accumulator and every later tile's sum is added to it in fp32
// (matmul_bf16 acc), tiles in order 0 .. kt-1.
//
// Transfer: with FloatTransfer::Float32 the operands travel as fp32 (read_vmem, 4T bytes per VMEM
// row) and the chip rounds them to bf16 itself (load_weights for w, matmul_bf16 for a). With
// FloatTransfer::Bfloat16 the host rounds them with the chip's function (fp::to_bf16) and they
// travel as bf16 (read_vmem bf16, 2T bytes per row: half the input DMA), widened exactly on the
// chip, where rounding a bf16 value again changes nothing: the same bits either way.
//
// Tiling, from the chip's parameters (PARAM registers on rtl): W stays in VMEM for the whole run
// when it fits in half of it, else it is streamed as pieces of `group` K tiles x one column block
// (two buffers). A is cut into chunks of rows (two buffers); each chunk's output block goes
// through one of two ACC regions and one of two VMEM output regions (acc_to_vmem, then
// write_vmem as fp32). The chip orders everything by its hazard rules (isa.md "Ordering"): the
// program needs no sync.
//
// Host layouts (A and W fp32 or bf16, OUT fp32): A chunk-major (chunk c: kt tiles of its rows,
// tile-major), W panel-major (column block j: kt*T rows of T lanes), OUT block-major (block j:
// m rows of T lanes). Every DMA is one tile of A or one piece of W, so the MXU starts on the
// first while the others arrive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device.h"
#include "program.h"

namespace tpu {

// How the operands travel to the chip (the result is the same bits either way).
enum class FloatTransfer { Float32, Bfloat16 };

struct FloatMatmulPlan {
  uint32_t tile = 0, kt = 0, nt = 0;  // the chip's N, K tiles, column blocks
  uint32_t group = 0, groups = 0;     // K tiles per A / W piece, pieces per column block
  bool w_resident = false;            // all of W in VMEM for the whole run
  FloatTransfer transfer = FloatTransfer::Float32;
  std::vector<uint32_t> chunk_sizes;  // rows of A per chunk, in order
  uint32_t chunk_rows = 0;            // the largest chunk
  uint32_t w_base = 0, w_rows = 0;    // VMEM W region (resident: all panels; else two buffers)
  uint32_t a_base[2] = {0, 0}, out_base[2] = {0, 0}, acc_base[2] = {0, 0};

  uint32_t in_bytes() const { return transfer == FloatTransfer::Bfloat16 ? 2u : 4u; }
  std::string describe() const;  // one line, e.g. "bf16 tile 16: 5 K tiles x 3 column blocks, ..."
};

// Throws DeviceError if `params` has no VMEM or no bf16 matrix unit (the int8 chip); `backend`
// names the device in the message.
void check_float_chip(const ChipParams& params, const std::string& backend);

// Chooses the tiling. Throws std::invalid_argument for m, k or n = 0, a bf16 transfer on a chip
// with N < 8 (a bf16 VMEM row must be a multiple of the 16-byte DMA alignment), or a chip too
// small for one row.
FloatMatmulPlan plan_float_matmul(const ChipParams& params, uint32_t m, uint32_t k, uint32_t n,
                                  FloatTransfer transfer = FloatTransfer::Float32);

// ---- host-side packing (the layouts above; +0 padding)
std::vector<float> pack_float_a(const std::vector<float>& a, uint32_t m, uint32_t k,
                                const FloatMatmulPlan& plan);
std::vector<float> pack_float_w(const std::vector<float>& w, uint32_t k, uint32_t n,
                                const FloatMatmulPlan& plan);
// The bytes the host sends: the fp32 values as they are, or rounded to bf16 (2 bytes each,
// little-endian), per plan.transfer.
std::vector<uint8_t> float_host_image(const std::vector<float>& packed,
                                      const FloatMatmulPlan& plan);

struct FloatMatmulHostAddrs {
  uint32_t a = 0, w = 0, out = 0;
};

// Appends the matmul's instructions (no halt) to `b`, which must have no weight tiles pending.
void emit_float_matmul(ProgramBuilder& b, const FloatMatmulPlan& plan, uint32_t m,
                       const FloatMatmulHostAddrs& addrs);

// ---- one call: pack, allocate buffers on the device, build, run, read back, release.
struct FloatMatmulRun {
  std::vector<float> out;  // m x n row-major
  RunStats stats;
  FloatMatmulPlan plan;
  size_t instructions = 0;
  uint64_t useful_macs = 0;    // m*k*n
  double mxu_utilization = 0;  // useful_macs / (cycles * N^2)
};
// a: m x k, w: k x n, row-major fp32. Throws DeviceError on the int8 chip, std::invalid_argument
// for bad arguments, and what Device::run throws.
FloatMatmulRun run_float_matmul(Device& dev, const std::vector<float>& a,
                                const std::vector<float>& w, uint32_t m, uint32_t k, uint32_t n,
                                FloatTransfer transfer = FloatTransfer::Float32,
                                uint64_t max_cycles = Device::kDefaultMaxCycles);

}  // namespace tpu

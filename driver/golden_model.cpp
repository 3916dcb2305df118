// SPDX-License-Identifier: Apache-2.0
#include "golden_model.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "arith.h"
#include "text.h"

namespace tpu {

namespace {

using detail::format;

std::string host_span(uint32_t addr, uint64_t bytes) {
  return format("0x%08" PRIx32 "..0x%08" PRIx64, addr, uint64_t{addr} + bytes - 1);
}

}  // namespace

GoldenModel::GoldenModel(HostMemory& host, const ChipParams& params)
    : host_(host), params_(params) {
  params_.validate();
  ub_.assign(size_t{params_.ub_rows} * params_.N, 0);
  acc_.assign(size_t{params_.acc_rows} * params_.N, 0);
  param_.assign(size_t{params_.param_rows()} * params_.N, 0);
  vmem_.assign(size_t{params_.vmem_rows} * params_.N, 0);
}

RunResult GoldenModel::run(uint32_t cmd_addr, uint32_t count) {
  if (cmd_addr % kInstrBytes != 0) {
    throw std::invalid_argument(format("GoldenModel::run: cmd_addr 0x%08" PRIx32
                                       " is not 16-byte aligned (CMD_ADDR requires it)",
                                       cmd_addr));
  }
  soft_reset();
  RunResult result;
  auto stop = [&](ErrorCode code, uint32_t pc, const std::string& why) {
    result.status = RunStatus::Error;
    result.error = code;
    result.err_pc = pc;
    result.message =
        format("pc %" PRIu32 ": %s: %s", pc, std::string(error_name(code)).c_str(), why.c_str());
    return result;
  };
  const uint64_t cmd_bytes = uint64_t{count} * kInstrBytes;
  if (uint64_t{cmd_addr} + cmd_bytes > (uint64_t{1} << 32)) {
    return stop(ErrorCode::ERR_HOST_RANGE, 0,
                format("command buffer 0x%08" PRIx32 " + %" PRIu32
                       " instructions wraps past 2^32 (nothing fetched)",
                       cmd_addr, count));
  }
  if (!in_dma_windows(windows_, cmd_addr, cmd_bytes)) {
    return stop(ErrorCode::ERR_HOST_RANGE, 0,
                format("command buffer 0x%08" PRIx32 " + %" PRIu32
                       " instructions is not inside any enabled DMA window (nothing fetched)",
                       cmd_addr, count));
  }
  cmd_ = CommandBuffer{cmd_addr, count};
  struct ForgetCmd {  // execute() outside a run has no command buffer
    CommandBuffer& cmd;
    ~ForgetCmd() { cmd = CommandBuffer{}; }
  } forget_cmd{cmd_};
  for (uint32_t pc = 0; pc < count; ++pc) {
    uint64_t addr = uint64_t{cmd_addr} + uint64_t{pc} * kInstrBytes;
    InstrBytes word;
    if (!host_.read(addr, kInstrBytes, word.data())) {
      return stop(ErrorCode::ERR_AXI_READ, pc,
                  format("instruction fetch at 0x%08" PRIx64 " failed", addr));
    }
    DecodeResult d = decode(word, params_);
    if (!d.ok()) return stop(d.error, pc, d.why);
    std::string why;
    ErrorCode code = execute(d.instr, &why);
    if (code != ErrorCode::ERR_NONE) return stop(code, pc, why);
    ++result.retired;
    if (std::holds_alternative<Halt>(d.instr)) return result;
  }
  return stop(
      ErrorCode::ERR_CMD_OVERRUN, count,
      format("the command buffer ended after CMD_COUNT = %" PRIu32 " instructions without halt",
             count));
}

ErrorCode GoldenModel::execute(const Instruction& instr, std::string* why) {
  if (const auto* raw = std::get_if<RawInstruction>(&instr)) {
    // Raw bytes that decode run as the instruction they encode; others fail in check().
    DecodeResult d = decode(raw->bytes, params_);
    if (d.ok()) return execute(d.instr, why);
  }
  Fault f;
  f.code = check(instr, params_, windows_, cmd_, &f.why);
  if (f.code == ErrorCode::ERR_NONE) {
    f = std::visit([this](const auto& in) { return exec(in); }, instr);
  }
  if (why != nullptr) *why = f.why;
  return f.code;
}

void GoldenModel::set_dma_window(int index, uint32_t base, uint32_t size) {
  if (index < 0 || index >= kNumDmaWindows) {
    throw std::out_of_range(format("set_dma_window: window %d does not exist (expected 0..%d)",
                                   index, kNumDmaWindows - 1));
  }
  windows_[static_cast<size_t>(index)] = DmaWindow{base, size};
}

void GoldenModel::soft_reset() {
  pending_tiles_.clear();
  active_tile_ = WeightTile{};
  has_active_tile_ = false;
}

// ---- instructions. Each runs after check() passed, detects its dynamic faults before
// writing anything, then writes.

GoldenModel::Fault GoldenModel::exec(const ReadHost& in) {
  const uint32_t n = params_.N;
  const size_t bytes = size_t{in.rows} * n;
  std::vector<uint8_t> data(bytes);
  if (!host_.read(in.host_addr, bytes, data.data())) {
    return {ErrorCode::ERR_AXI_READ, "read_host: host memory rejected the read of " +
                                         host_span(in.host_addr, bytes) + " (nothing written)"};
  }
  uint8_t* dst = nullptr;
  switch (in.dest) {
    case HostDest::Ub:
      dst = &ub_[size_t{in.local_addr} * n];
      break;
    case HostDest::Param:
      dst = &param_[size_t{in.local_addr} * n];
      break;
    case HostDest::Lut:
      dst = &lut_[size_t{in.local_addr} * n];
      break;
  }
  std::copy(data.begin(), data.end(), dst);
  return {};
}

GoldenModel::Fault GoldenModel::exec(const WriteHost& in) {
  const size_t bytes = size_t{in.rows} * params_.N;
  const uint8_t* src = &ub_[size_t{in.ub_addr} * params_.N];
  if (!host_.write(in.host_addr, bytes, src)) {
    return {ErrorCode::ERR_AXI_WRITE,
            "write_host: host memory rejected the write of " + host_span(in.host_addr, bytes)};
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const ReadWeights& in) {
  if (pending_tiles_.size() + in.tiles > weight_capacity()) {
    return {ErrorCode::ERR_WEIGHT_OVERFLOW,
            format("read_weights: %" PRIu32 " tiles with %zu already waiting exceed the %" PRIu32
                   " that can wait (WFifoTiles + 2); consume some with matmul switch first",
                   in.tiles, pending_tiles_.size(), weight_capacity())};
  }
  const size_t tile_bytes = params_.tile_bytes();
  std::vector<std::vector<uint8_t>> tiles(in.tiles, std::vector<uint8_t>(tile_bytes));
  for (size_t t = 0; t < in.tiles; ++t) {
    uint64_t addr = uint64_t{in.host_addr} + t * tile_bytes;
    if (!host_.read(addr, tile_bytes, tiles[t].data())) {
      return {ErrorCode::ERR_AXI_READ,
              format("read_weights: host memory rejected the read of tile %zu at %s (no tile "
                     "pushed)",
                     t, host_span(static_cast<uint32_t>(addr), tile_bytes).c_str())};
    }
  }
  for (auto& tile : tiles) pending_tiles_.push_back(WeightTile{false, std::move(tile), {}});
  return {};
}

GoldenModel::Fault GoldenModel::exec(const Matmul& in) {
  Fault f = check_weight_tile("matmul", in.switch_weights, false);
  if (f.code != ErrorCode::ERR_NONE) return f;
  take_weight_tile(in.switch_weights);
  const uint32_t n = params_.N;
  std::vector<int32_t> sum(n);
  for (uint32_t o = 0; o < in.outer; ++o) {
    for (uint32_t i = 0; i < in.inner; ++i) {
      const uint32_t r = o * in.inner + i;
      const size_t ub_row =
          size_t{in.ub_addr} + size_t{o} * in.outer_stride + size_t{i} * in.inner_stride;
      mxu_row(&ub_[ub_row * n], active_tile_.bytes.data(), n, in.a_unsigned, in.w_unsigned,
              sum.data());
      int32_t* acc = &acc_[(size_t{in.acc_addr} + r) * n];
      for (uint32_t c = 0; c < n; ++c) {
        acc[c] = in.accumulate ? wrapping_add_int32(acc[c], sum[c]) : sum[c];
      }
    }
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const DwConv& in) {
  const uint32_t n = params_.N;
  const uint32_t s = in.stride();
  auto value = [](uint8_t byte, bool is_unsigned) {
    return is_unsigned ? int32_t{byte} : int32_t{static_cast<int8_t>(byte)};
  };
  const uint8_t* zp = &ub_[in.zero_point_row() * n];
  const uint32_t wo = in.output_width();
  std::vector<int32_t> sum(n);
  for (uint32_t oy = 0; oy < in.output_height(); ++oy) {
    for (uint32_t ox = 0; ox < wo; ++ox) {
      std::fill(sum.begin(), sum.end(), 0);
      for (uint32_t ky = 0; ky < in.kernel_h; ++ky) {
        for (uint32_t kx = 0; kx < in.kernel_w; ++kx) {
          const int64_t y = int64_t{oy} * s - in.pad_top + ky;
          const int64_t x = int64_t{ox} * s - in.pad_left + kx;
          if (y < 0 || y >= in.height || x < 0 || x >= in.width) continue;  // padding: a real 0
          const uint8_t* a =
              &ub_[(in.ub_addr + static_cast<size_t>(y) * in.ub_stride + static_cast<size_t>(x)) *
                   n];
          const uint8_t* w = &ub_[(size_t{in.w_addr} + ky * in.kernel_w + kx) * n];
          for (uint32_t c = 0; c < n; ++c) {  // |sum| < 2^20: no wrap
            sum[c] += (value(a[c], in.a_unsigned) - value(zp[c], in.a_unsigned)) *
                      value(w[c], in.w_unsigned);
          }
        }
      }
      int32_t* acc = &acc_[(size_t{in.acc_addr} + size_t{oy} * wo + ox) * n];
      for (uint32_t c = 0; c < n; ++c) {
        acc[c] = in.accumulate ? wrapping_add_int32(acc[c], sum[c]) : sum[c];
      }
    }
  }
  return {};
}

GoldenModel::Fault GoldenModel::exec(const Activate& in) {
  const uint32_t n = params_.N;
  const uint32_t w = in.width;
  const auto ho = static_cast<uint32_t>(in.output_height());
  const auto wo = static_cast<uint32_t>(in.output_width());
  std::vector<int32_t> bias_v(n), mult_v(n);
  std::vector<uint32_t> misc_v(n);
  for (uint32_t c = 0; c < n; ++c) {
    bias_v[c] = bias(in.slot, c);
    mult_v[c] = mult(in.slot, c);
    misc_v[c] = misc(in.slot, c);
  }
  if (in.raw) {
    // Pixel (y, x): UB rows ub + y*ub_stride + 4x .. +3 hold its N int32, little-endian, in
    // column order (row j: columns j*N/4 ..).
    for (uint32_t y = 0; y < in.height; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        const size_t row = size_t{in.acc_addr} + size_t{y} * w + x;
        uint8_t* out = &ub_[(size_t{in.ub_addr} + size_t{y} * in.ub_stride +
                             size_t{x} * Activate::kRawRowsPerPixel) *
                            n];
        for (uint32_t c = 0; c < n; ++c) {
          const auto v = static_cast<uint32_t>(saturating_add_int32(acc_[row * n + c], bias_v[c]));
          for (uint32_t b = 0; b < 4; ++b) out[4 * c + b] = static_cast<uint8_t>(v >> (8 * b));
        }
      }
    }
    return {};
  }
  for (uint32_t oy = 0; oy < ho; ++oy) {
    for (uint32_t ox = 0; ox < wo; ++ox) {
      uint8_t* out = &ub_[(size_t{in.ub_addr} + size_t{oy} * in.ub_stride + ox) * n];
      for (uint32_t c = 0; c < n; ++c) {
        // Taps in the padding are skipped; every window holds at least one pixel (pads are
        // below pool_k).
        int best = std::numeric_limits<int>::min();
        for (uint32_t dy = 0; dy < in.pool_k; ++dy) {
          const int64_t y_in = int64_t{oy} * in.pool_s + dy - in.pad_top;
          if (y_in < 0 || y_in >= in.height) continue;
          for (uint32_t dx = 0; dx < in.pool_k; ++dx) {
            const int64_t x_in = int64_t{ox} * in.pool_s + dx - in.pad_left;
            if (x_in < 0 || x_in >= w) continue;
            const size_t row = size_t{in.acc_addr} + size_t(y_in) * w + size_t(x_in);
            int y = requantize(acc_[row * n + c], bias_v[c], mult_v[c], misc_v[c], in.func,
                               in.out_unsigned, lut_.data());
            best = std::max(best, y);  // compared in the output type
          }
        }
        out[c] = static_cast<uint8_t>(best & 0xFF);
      }
    }
  }
  return {};
}

// ---- state access

const std::vector<uint8_t>& GoldenModel::active_tile() const {
  if (!has_active_tile_) throw std::logic_error("GoldenModel::active_tile: no tile is active");
  if (active_tile_.bf16) {
    throw std::logic_error("GoldenModel::active_tile: the active tile is a bf16 tile");
  }
  return active_tile_.bytes;
}

const std::vector<uint16_t>& GoldenModel::active_tile_bf16() const {
  if (!active_tile_is_bf16()) {
    throw std::logic_error("GoldenModel::active_tile_bf16: no bf16 tile is active");
  }
  return active_tile_.bf16w;
}

GoldenModel::Fault GoldenModel::check_weight_tile(const char* op, bool switch_weights,
                                                  bool want_bf16) const {
  if (switch_weights && pending_tiles_.empty()) {
    return {ErrorCode::ERR_NO_WEIGHTS,
            format("%s switch: no weight tile is loaded or can still arrive (expected a "
                   "read_weights or load_weights before it that was not yet consumed)",
                   op)};
  }
  if (!switch_weights && !has_active_tile_) {
    return {ErrorCode::ERR_NO_WEIGHTS,
            format("%s without switch: no weight tile was ever made active (expected switch on "
                   "the first matmul after read_weights)",
                   op)};
  }
  const bool tile_bf16 = switch_weights ? pending_tiles_.front().bf16 : active_tile_.bf16;
  if (tile_bf16 != want_bf16) {
    return {ErrorCode::ERR_WEIGHT_TYPE,
            format("%s: the weight tile it would use is %s (expected %s)", op,
                   tile_bf16 ? "a bf16 tile from load_weights" : "an int8 tile from read_weights",
                   want_bf16 ? "a bf16 tile from load_weights" : "an int8 tile from read_weights")};
  }
  return {};
}

void GoldenModel::take_weight_tile(bool switch_weights) {
  if (!switch_weights) return;
  active_tile_ = std::move(pending_tiles_.front());
  pending_tiles_.pop_front();
  has_active_tile_ = true;
}

size_t GoldenModel::ub_index(uint32_t row, uint32_t col) const {
  if (row >= params_.ub_rows || col >= params_.N) {
    throw std::out_of_range(format("UB[%u][%u] out of range (UbRows = %u, N = %u)", row, col,
                                   params_.ub_rows, params_.N));
  }
  return size_t{row} * params_.N + col;
}

size_t GoldenModel::acc_index(uint32_t row, uint32_t col) const {
  if (row >= params_.acc_rows || col >= params_.N) {
    throw std::out_of_range(format("ACC[%u][%u] out of range (AccRows = %u, N = %u)", row, col,
                                   params_.acc_rows, params_.N));
  }
  return size_t{row} * params_.N + col;
}

uint8_t GoldenModel::ub_byte(uint32_t row, uint32_t col) const { return ub_[ub_index(row, col)]; }

std::vector<uint8_t> GoldenModel::ub_rows(uint32_t first_row, uint32_t rows) const {
  if (rows == 0) return {};
  ub_index(first_row + rows - 1, 0);  // range check of the last row
  auto begin = ub_.begin() + static_cast<std::ptrdiff_t>(ub_index(first_row, 0));
  return std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(size_t{rows} * params_.N));
}

void GoldenModel::set_ub_rows(uint32_t first_row, const std::vector<uint8_t>& bytes) {
  if (bytes.size() % params_.N != 0) {
    throw std::invalid_argument(format(
        "set_ub_rows: %zu bytes is not a whole number of %u-byte rows", bytes.size(), params_.N));
  }
  if (bytes.empty()) return;
  ub_index(first_row + static_cast<uint32_t>(bytes.size() / params_.N) - 1, 0);
  std::copy(bytes.begin(), bytes.end(),
            ub_.begin() + static_cast<std::ptrdiff_t>(ub_index(first_row, 0)));
}

int32_t GoldenModel::acc(uint32_t row, uint32_t col) const { return acc_[acc_index(row, col)]; }

std::vector<int32_t> GoldenModel::acc_row(uint32_t row) const {
  auto begin = acc_.begin() + static_cast<std::ptrdiff_t>(acc_index(row, 0));
  return std::vector<int32_t>(begin, begin + params_.N);
}

void GoldenModel::set_acc(uint32_t row, uint32_t col, int32_t value) {
  acc_[acc_index(row, col)] = value;
}

size_t GoldenModel::quant_offset(uint32_t slot, uint32_t col, uint32_t which) const {
  if (slot >= params_.qp_slots || col >= params_.N) {
    throw std::out_of_range(
        format("quantization slot %u column %u out of range (QpSlots = %u, "
               "N = %u)",
               slot, col, params_.qp_slots, params_.N));
  }
  // A slot is the int32 arrays bias[N], mult[N], misc[N] back to back: 12 rows of N bytes.
  return size_t{slot} * 12 * params_.N + size_t{which} * 4 * params_.N + size_t{col} * 4;
}

uint32_t GoldenModel::param_word(size_t offset) const {
  return uint32_t{param_[offset]} | uint32_t{param_[offset + 1]} << 8 |
         uint32_t{param_[offset + 2]} << 16 | uint32_t{param_[offset + 3]} << 24;
}

int32_t GoldenModel::bias(uint32_t slot, uint32_t col) const {
  return static_cast<int32_t>(param_word(quant_offset(slot, col, 0)));
}
int32_t GoldenModel::mult(uint32_t slot, uint32_t col) const {
  return static_cast<int32_t>(param_word(quant_offset(slot, col, 1)));
}
uint32_t GoldenModel::misc(uint32_t slot, uint32_t col) const {
  return param_word(quant_offset(slot, col, 2));
}

void GoldenModel::set_quant(uint32_t slot, uint32_t col, int32_t bias_value, int32_t mult_value,
                            uint32_t misc_value) {
  const uint32_t words[3] = {static_cast<uint32_t>(bias_value), static_cast<uint32_t>(mult_value),
                             misc_value};
  for (uint32_t which = 0; which < 3; ++which) {
    size_t off = quant_offset(slot, col, which);
    for (int b = 0; b < 4; ++b) param_[off + b] = static_cast<uint8_t>(words[which] >> (8 * b));
  }
}

GoldenModel::Fault GoldenModel::exec(const IciSend& in) {
  return {
      ErrorCode::ERR_ICI_LINK,
      format("ici_send: link %u is not connected (a chip alone: run it in a pod, pod.h)", in.link)};
}

GoldenModel::Fault GoldenModel::exec(const IciRecv& in) {
  return {
      ErrorCode::ERR_ICI_LINK,
      format("ici_recv: link %u is not connected (a chip alone: run it in a pod, pod.h)", in.link)};
}

}  // namespace tpu

// SPDX-License-Identifier: Apache-2.0
// Device.matmul for float32 operands (docs/python.md "Float matmul"): out = a . w on the bf16
// matrix unit of a chip with VMEM (docs/isa.md "Training configuration"), any m x k x n.
//
// The operands travel as fp32 (read_vmem, 4N bytes per VMEM row) and the chip rounds them to
// bf16 itself (load_weights for w, matmul_bf16 for a: RNE, DAZ, canonical NaN), or with
// `bf16_transfer` the host rounds them with the same function (tpu::fp::to_bf16) and they travel
// as bf16 (read_vmem bf16, 2N bytes per row: half the input DMA), widened exactly on the chip,
// where rounding a bf16 value again changes nothing: the same bits either way. The chip
// multiplies exactly and adds in fp32 in the documented order. K is padded with +0 to kt =
// ceil(k/N) tiles; for each output element, K tile 0's column sum overwrites the accumulator and
// every later tile's sum is added to it in fp32 (matmul_bf16 acc), tiles in order 0 .. kt-1. The
// accumulators go to VMEM (acc_to_vmem) and back to the host as fp32 (write_vmem).
//
// Tiling, from the chip's parameters (PARAM registers on rtl): W stays in VMEM for the whole
// run when it fits in half of it, else it is streamed as panels of g K tiles x one column
// block (two buffers). A is cut into chunks of rows (two buffers), each chunk's output block
// goes through one of two ACC regions and one of two VMEM output regions. The chip orders
// everything by its hazard rules (isa.md "Ordering"): the program needs no sync.
#include <algorithm>
#include <cstring>
#include <deque>
#include <sstream>
#include <string>
#include <string_view>

#include "bind.h"
#include "fp.h"
#include "program.h"

namespace tpu_py {

namespace {

constexpr uint32_t kMaxMatmulRows = 4095;  // matmul_bf16 contiguous form (12-bit counts)
constexpr uint64_t kMaxHostBytes = uint64_t{1} << 30;

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

struct FloatPlan {
  uint32_t tile = 0, kt = 0, nt = 0;
  uint32_t group = 0, groups = 0;  // K tiles per A / W piece, pieces per column block
  bool w_resident = false;         // all of W in VMEM for the whole run
  bool bf16_in = false;            // A and W travel as bf16
  std::vector<uint32_t> chunk_sizes;
  uint32_t chunk_rows = 0;
  uint32_t w_base = 0, w_rows = 0;  // W region (resident: all panels; else two buffers)
  uint32_t a_base[2] = {0, 0}, out_base[2] = {0, 0}, acc_base[2] = {0, 0};

  std::string describe() const {
    std::ostringstream s;
    s << "bf16 tile " << tile << ": " << kt << " K tiles x " << nt << " column blocks, "
      << chunk_sizes.size() << " row chunks of <= " << chunk_rows << ", W "
      << (w_resident ? "resident in VMEM" : "streamed") << " (" << group << " K tiles per piece)"
      << (bf16_in ? ", bf16 transfer" : "");
    return s.str();
  }
};

FloatPlan plan_float(const tpu::ChipParams& p, uint32_t m, uint32_t k, uint32_t n) {
  FloatPlan pl;
  const uint32_t T = p.N, V = p.vmem_rows;
  pl.tile = T;
  pl.kt = ceil_div(k, T);
  pl.nt = ceil_div(n, T);
  const uint64_t w_all = uint64_t{pl.kt} * pl.nt * T;
  if (w_all <= V / 2) {
    pl.w_resident = true;
    pl.group = pl.kt;
    pl.w_rows = static_cast<uint32_t>(w_all);
  } else {
    pl.group = std::min(pl.kt, std::max(1u, V / 4 / T));
    pl.w_rows = 2 * pl.group * T;
  }
  pl.groups = ceil_div(pl.kt, pl.group);
  const uint64_t rest = V > pl.w_rows ? V - pl.w_rows : 0;
  const uint64_t rows = std::min<uint64_t>(
      {uint64_t{m}, kMaxMatmulRows, p.acc_rows / 2, rest / (2 * uint64_t{pl.group} + 2)});
  if (rows == 0)
    throw std::invalid_argument(
        "matmul (float32): the chip is too small for one row: VmemRows = " + std::to_string(V) +
        ", AccRows = " + std::to_string(p.acc_rows) + " (need W pieces of " +
        std::to_string(pl.w_rows) + " rows plus 2 * (" + std::to_string(pl.group) +
        " + 1) rows of A and output, and 2 ACC rows)");
  const uint32_t chunks = ceil_div(m, rows);
  for (uint32_t c = 0; c < chunks; ++c) pl.chunk_sizes.push_back(m / chunks + (c < m % chunks));
  pl.chunk_rows = pl.chunk_sizes.front();
  const uint32_t a_rows = pl.chunk_rows * pl.group;
  pl.w_base = 0;
  pl.a_base[0] = pl.w_rows;
  pl.a_base[1] = pl.a_base[0] + a_rows;
  pl.out_base[0] = pl.a_base[1] + a_rows;
  pl.out_base[1] = pl.out_base[0] + pl.chunk_rows;
  pl.acc_base[1] = pl.chunk_rows;
  return pl;
}

// Pushes bf16 weight tiles into the weight FIFO as far ahead as it holds, merging runs of
// tiles N rows apart into one load_weights.
class TileFeeder {
 public:
  explicit TileFeeder(tpu::ProgramBuilder& b) : b_(b) {}
  void add(uint32_t vmem_row) { ready_.push_back(vmem_row); }
  void feed() {
    const uint32_t T = b_.params().N;
    while (!ready_.empty() && b_.pending_weight_tiles() < b_.weight_capacity()) {
      const uint32_t room = b_.weight_capacity() - b_.pending_weight_tiles();
      uint32_t count = 1;
      while (count < room && count < ready_.size() && count < 0xFFFF &&
             ready_[count] == ready_[0] + count * T)
        ++count;
      tpu::LoadWeights lw;
      lw.vmem_addr = static_cast<uint16_t>(ready_[0]);
      lw.row_stride = 1;
      lw.tiles = static_cast<uint16_t>(count);
      lw.tile_stride = static_cast<uint16_t>(T);
      lw.rows = static_cast<uint16_t>(T);
      b_.load_weights(lw);
      ready_.erase(ready_.begin(), ready_.begin() + count);
    }
  }

 private:
  tpu::ProgramBuilder& b_;
  std::deque<uint32_t> ready_;
};

struct HostAddrs {
  uint32_t a = 0, w = 0, out = 0;
  bool bf16 = false;  // A and W are bf16 on the host (2N bytes per VMEM row)
};

// Host layouts (T = N; A and W fp32 or bf16, OUT fp32): A chunk-major (chunk c: kt tiles of its
// rows, tile-major), W panel-major (column block j: kt*T rows of T lanes), OUT block-major (block
// j: m rows). Every DMA is one tile of A or one panel (piece) of W, so the MXU starts on the first
// while the others arrive; a resident W panel and the next chunk's A are read one step ahead.
class FloatEmitter {
 public:
  FloatEmitter(tpu::ProgramBuilder& b, const FloatPlan& pl, uint32_t m, const HostAddrs& h)
      : b_(b),
        pl_(pl),
        m_(m),
        h_(h),
        feeder_(b),
        row_bytes_(4 * pl.tile),
        in_bytes_((h.bf16 ? 2 : 4) * pl.tile) {
    uint32_t m0 = 0;
    for (uint32_t mc : pl.chunk_sizes) {
      chunk_m0_.push_back(m0);
      m0 += mc;
    }
  }

  void emit() {
    emit_blocks();
    emit_deferred(true);
  }

 private:
  struct Deferred {
    bool moved = false;  // acc_to_vmem emitted; write_vmem next
    uint32_t acc = 0, out = 0, rows = 0, host = 0;
    uint64_t after = 0;  // emit the next step once this many matmuls are emitted
  };
  void emit_deferred(bool all) {
    while (!deferred_.empty() && (all || matmuls_ >= deferred_.front().after)) {
      Deferred& d = deferred_.front();
      if (!d.moved) {
        b_.acc_to_vmem(d.acc, d.out, d.rows);
        d.moved = true;
        d.after = matmuls_ + 1;
        if (!all) return;  // one step per matmul
      } else {
        b_.write_vmem(d.out, d.rows, d.host);
        deferred_.pop_front();
      }
    }
  }

  void emit_blocks() {
    const uint32_t chunks = static_cast<uint32_t>(pl_.chunk_sizes.size());
    uint32_t next_a = 0;  // chunk c+1's A buffer, read ahead (one K piece only)
    for (uint32_t c = 0; c < chunks; ++c) {
      const uint32_t mc = pl_.chunk_sizes[c];
      uint32_t a_buf = next_a;
      for (uint32_t j = 0; j < pl_.nt; ++j) {
        const uint64_t block = uint64_t{c} * pl_.nt + j;
        if (pl_.w_resident) {
          read_panel(j);
          read_panel(j + 1);
          enqueue_resident(block + 2);
        }
        for (uint32_t g = 0; g < pl_.groups; ++g) {
          const uint32_t t0 = g * pl_.group, gt = std::min(pl_.group, pl_.kt - t0);
          if (pl_.groups > 1 || (c == 0 && j == 0)) a_buf = read_a(c, t0, gt);
          if (pl_.groups == 1 && j + 1 == pl_.nt && c + 1 < chunks) next_a = read_a(c + 1, 0, gt);
          if (!pl_.w_resident) read_pieces_to((block * pl_.groups + g) + 2);
          for (uint32_t t = 0; t < gt; ++t) {
            feeder_.feed();
            const unsigned flags = tpu::kSwitchWeights | (t0 + t > 0 ? tpu::kAccumulate : 0u);
            b_.matmul_bf16(a_buf + t * mc, pl_.acc_base[block % 2], mc, flags);
            ++matmuls_;
            emit_deferred(false);
          }
        }
        // The block's move to VMEM waits for its last matmul, the write-back for the move:
        // emitted one and two matmuls later, they never hold up the in-order issue of the next
        // block's matmuls (both still come before the next use of their ACC / VMEM region,
        // two blocks on).
        Deferred d;
        d.acc = pl_.acc_base[block % 2];
        d.out = pl_.out_base[block % 2];
        d.rows = mc;
        d.host = h_.out + (j * m_ + chunk_m0_[c]) * row_bytes_;
        d.after = matmuls_ + 1;
        deferred_.push_back(d);
      }
    }
  }

  // Tiles t0 .. t0+gt-1 of chunk c's A into the next A buffer, one read per tile.
  uint32_t read_a(uint32_t c, uint32_t t0, uint32_t gt) {
    const uint32_t buf = pl_.a_base[a_loads_++ % 2], mc = pl_.chunk_sizes[c];
    const uint32_t host = h_.a + chunk_m0_[c] * pl_.kt * in_bytes_;
    for (uint32_t t = 0; t < gt; ++t)
      b_.read_vmem(buf + t * mc, mc, host + (t0 + t) * mc * in_bytes_, h_.bf16);
    return buf;
  }
  // Resident W: panel j (all K tiles of column block j), read once.
  void read_panel(uint32_t j) {
    if (j != panels_read_ || j >= pl_.nt) return;
    const uint32_t rows = pl_.kt * pl_.tile;
    b_.read_vmem(pl_.w_base + j * rows, rows, h_.w + j * rows * in_bytes_, h_.bf16);
    ++panels_read_;
  }
  // Resident W: the tiles of blocks (c, j) before `upto` (c * nt + j) whose panel is read.
  void enqueue_resident(uint64_t upto) {
    const uint64_t total = uint64_t{pl_.nt} * pl_.chunk_sizes.size();
    while (enqueued_ < std::min(upto, total) && enqueued_ % pl_.nt < panels_read_) {
      const uint32_t j = static_cast<uint32_t>(enqueued_ % pl_.nt);
      for (uint32_t t = 0; t < pl_.kt; ++t) feeder_.add(pl_.w_base + (j * pl_.kt + t) * pl_.tile);
      ++enqueued_;
    }
  }
  // Streamed W: the pieces before `upto` in the order of use ((c * nt + j) * groups + g), so
  // that the next piece arrives while the MXU works on this one. Its buffer held the piece
  // before this one, whose tiles are all in the weight FIFO by now.
  void read_pieces_to(uint64_t upto) {
    const uint64_t total = uint64_t{pl_.nt} * pl_.groups * pl_.chunk_sizes.size();
    for (; pieces_read_ < std::min(upto, total); ++pieces_read_) {
      const uint32_t g = static_cast<uint32_t>(pieces_read_ % pl_.groups);
      const uint32_t j = static_cast<uint32_t>(pieces_read_ / pl_.groups % pl_.nt);
      const uint32_t t0 = g * pl_.group;
      read_piece(j, t0, std::min(pl_.group, pl_.kt - t0));
    }
  }
  // Streamed W: column block j, tiles t0 .. t0+gt-1, into the next W buffer.
  void read_piece(uint32_t j, uint32_t t0, uint32_t gt) {
    const uint32_t T = pl_.tile, buf = pl_.w_base + (w_loads_++ % 2) * pl_.group * T;
    b_.read_vmem(buf, gt * T, h_.w + (j * pl_.kt + t0) * T * in_bytes_, h_.bf16);
    for (uint32_t t = 0; t < gt; ++t) feeder_.add(buf + t * T);
  }

  tpu::ProgramBuilder& b_;
  const FloatPlan& pl_;
  uint32_t m_;
  HostAddrs h_;
  TileFeeder feeder_;
  uint32_t row_bytes_;  // an fp32 VMEM row on the host (the output)
  uint32_t in_bytes_;   // an input VMEM row on the host (fp32 or bf16)
  std::vector<uint32_t> chunk_m0_;
  uint32_t a_loads_ = 0, w_loads_ = 0, panels_read_ = 0;
  uint64_t enqueued_ = 0, pieces_read_ = 0;
  uint64_t matmuls_ = 0;
  std::deque<Deferred> deferred_;
};

// The host images of A and W in the layouts above (+0 padding).
std::vector<float> pack_a(const float* a, uint32_t m, uint32_t k, const FloatPlan& pl) {
  const uint32_t T = pl.tile;
  std::vector<float> out(size_t{m} * pl.kt * T, 0.0f);
  size_t at = 0;
  uint32_t m0 = 0;
  for (uint32_t mc : pl.chunk_sizes) {
    for (uint32_t t = 0; t < pl.kt; ++t)
      for (uint32_t r = 0; r < mc; ++r, at += T)
        for (uint32_t l = 0; l < T && t * T + l < k; ++l)
          out[at + l] = a[size_t{m0 + r} * k + t * T + l];
    m0 += mc;
  }
  return out;
}

std::vector<float> pack_w(const float* w, uint32_t k, uint32_t n, const FloatPlan& pl) {
  const uint32_t T = pl.tile;
  std::vector<float> out(size_t{pl.nt} * pl.kt * T * T, 0.0f);
  for (uint32_t j = 0; j < pl.nt; ++j)
    for (uint32_t kk = 0; kk < k; ++kk)
      for (uint32_t l = 0; l < T && j * T + l < n; ++l)
        out[(size_t{j} * pl.kt * T + kk) * T + l] = w[size_t{kk} * n + j * T + l];
  return out;
}

void check_float_chip(const tpu::ChipParams& p, std::string_view backend) {
  bool ok = p.has_vmem();
  for (uint8_t op = 0x08; op <= 0x0C; ++op) ok = ok && p.executes_training_op(op);
  if (!ok)
    throw tpu::DeviceError("matmul (float32): this " + std::string(backend) +
                           " Device is the int8 chip (VmemRows = " + std::to_string(p.vmem_rows) +
                           ": no VMEM and no bf16 matrix unit); open the training chip with "
                           "tpu_rtl.Device(backend, n, training=True)");
}

}  // namespace

// The host image of packed fp32 values: as they are, or rounded to bf16 (2 bytes each).
std::vector<uint8_t> host_image(const std::vector<float>& v, bool bf16) {
  std::vector<uint8_t> out(v.size() * (bf16 ? 2 : 4));
  if (!bf16) {
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = tpu::fp::to_bf16(tpu::fp::bits_of(v[i]));
    out[2 * i] = static_cast<uint8_t>(h & 0xFF);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
  return out;
}

FloatMatmulRun run_float_matmul(tpu::Device& dev, const float* a, const float* w, uint32_t m,
                                uint32_t k, uint32_t n, bool bf16_transfer, uint64_t max_cycles) {
  const tpu::ChipParams& p = dev.params();
  check_float_chip(p, dev.backend());
  if (bf16_transfer && (2 * p.N) % 16 != 0)
    throw std::invalid_argument(
        "matmul (float32): transfer='bfloat16' needs N >= 8 (a bf16 "
        "VMEM row of 2N bytes must be a multiple of the 16-byte DMA "
        "alignment); N = " +
        std::to_string(p.N) + ": use transfer='float32'");
  FloatPlan pl = plan_float(p, m, k, n);
  pl.bf16_in = bf16_transfer;
  const uint32_t T = pl.tile, in_size = bf16_transfer ? 2 : 4;
  const uint64_t a_bytes = uint64_t{m} * pl.kt * T * in_size,
                 w_bytes = uint64_t{pl.nt} * pl.kt * T * T * in_size,
                 out_bytes = uint64_t{pl.nt} * m * T * 4;
  if (a_bytes + w_bytes + out_bytes > kMaxHostBytes)
    throw std::invalid_argument("matmul (float32): the operands need " +
                                std::to_string(a_bytes + w_bytes + out_bytes) +
                                " bytes of host buffers (at most 1 GiB)");
  dev.release_all();
  struct Release {
    tpu::Device& d;
    ~Release() {
      try {
        d.release_all();
      } catch (...) {
      }
    }
  } release{dev};
  HostAddrs h;
  h.a = dev.alloc(static_cast<uint32_t>(a_bytes), "matmul.a").addr;
  h.w = dev.alloc(static_cast<uint32_t>(w_bytes), "matmul.w").addr;
  h.out = dev.alloc(static_cast<uint32_t>(out_bytes), "matmul.out").addr;
  h.bf16 = bf16_transfer;
  dev.write(h.a, host_image(pack_a(a, m, k, pl), bf16_transfer));
  dev.write(h.w, host_image(pack_w(w, k, n, pl), bf16_transfer));

  tpu::ProgramBuilder b(p);
  std::vector<tpu::HostRange> ranges;
  for (const tpu::HostBuffer& hb : dev.buffers()) ranges.push_back({hb.addr, hb.size, hb.name});
  b.set_host_ranges(ranges);
  FloatEmitter(b, pl, m, h).emit();
  const std::vector<tpu::Instruction> program = b.finish();

  FloatMatmulRun r;
  r.plan = pl.describe();
  r.instructions = program.size();
  r.stats = dev.run(program, max_cycles);
  std::vector<float> packed(size_t{pl.nt} * m * T);
  dev.read(h.out, packed.data(), out_bytes);
  r.out.resize(size_t{m} * n);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t c = 0; c < n; ++c)
      r.out[size_t{i} * n + c] = packed[(size_t{c / T} * m + i) * T + c % T];
  r.useful_macs = uint64_t{m} * k * n;
  r.mxu_utilization =
      r.stats.cycles ? double(r.useful_macs) / (double(r.stats.cycles) * T * T) : 0.0;
  return r;
}

}  // namespace tpu_py

// SPDX-License-Identifier: Apache-2.0
// The float32 matmul on the bf16 matrix unit (float_matmul.h).
#include "float_matmul.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <sstream>
#include <stdexcept>

#include "fp.h"
#include "text.h"

namespace tpu {

namespace {

using detail::format;

constexpr uint32_t kMaxMatmulRows = 4095;  // matmul_bf16 contiguous form (12-bit counts)
constexpr uint64_t kMaxHostBytes = uint64_t{1} << 30;
constexpr uint8_t kFirstBf16Op = 0x08, kLastBf16Op = 0x0C;  // read_vmem .. acc_to_vmem

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

// Pushes bf16 weight tiles into the weight FIFO as far ahead as it holds, merging runs of
// tiles N rows apart into one load_weights.
class TileFeeder {
 public:
  explicit TileFeeder(ProgramBuilder& b) : b_(b) {}
  void add(uint32_t vmem_row) { ready_.push_back(vmem_row); }
  void feed() {
    const uint32_t T = b_.params().N;
    while (!ready_.empty() && b_.pending_weight_tiles() < b_.weight_capacity()) {
      const uint32_t room = b_.weight_capacity() - b_.pending_weight_tiles();
      uint32_t count = 1;
      while (count < room && count < ready_.size() && count < 0xFFFF &&
             ready_[count] == ready_[0] + count * T)
        ++count;
      LoadWeights lw;
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
  ProgramBuilder& b_;
  std::deque<uint32_t> ready_;
};

// Emits the program in the host layouts of float_matmul.h: every DMA is one tile of A or one
// piece of W, so the MXU starts on the first while the others arrive; a resident W panel and
// the next chunk's A are read one step ahead.
class FloatEmitter {
 public:
  FloatEmitter(ProgramBuilder& b, const FloatMatmulPlan& pl, uint32_t m,
               const FloatMatmulHostAddrs& h)
      : b_(b),
        pl_(pl),
        m_(m),
        h_(h),
        feeder_(b),
        row_bytes_(4 * pl.tile),
        in_bytes_(pl.in_bytes() * pl.tile),
        bf16_(pl.transfer == FloatTransfer::Bfloat16) {
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
            const unsigned flags = kSwitchWeights | (t0 + t > 0 ? kAccumulate : 0u);
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
      b_.read_vmem(buf + t * mc, mc, host + (t0 + t) * mc * in_bytes_, bf16_);
    return buf;
  }
  // Resident W: panel j (all K tiles of column block j), read once.
  void read_panel(uint32_t j) {
    if (j != panels_read_ || j >= pl_.nt) return;
    const uint32_t rows = pl_.kt * pl_.tile;
    b_.read_vmem(pl_.w_base + j * rows, rows, h_.w + j * rows * in_bytes_, bf16_);
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
    b_.read_vmem(buf, gt * T, h_.w + (j * pl_.kt + t0) * T * in_bytes_, bf16_);
    for (uint32_t t = 0; t < gt; ++t) feeder_.add(buf + t * T);
  }

  ProgramBuilder& b_;
  const FloatMatmulPlan& pl_;
  uint32_t m_;
  FloatMatmulHostAddrs h_;
  TileFeeder feeder_;
  uint32_t row_bytes_;  // an fp32 VMEM row on the host (the output)
  uint32_t in_bytes_;   // an input VMEM row on the host (fp32 or bf16)
  bool bf16_;           // A and W travel as bf16
  std::vector<uint32_t> chunk_m0_;
  uint32_t a_loads_ = 0, w_loads_ = 0, panels_read_ = 0;
  uint64_t enqueued_ = 0, pieces_read_ = 0;
  uint64_t matmuls_ = 0;
  std::deque<Deferred> deferred_;
};

}  // namespace

std::string FloatMatmulPlan::describe() const {
  std::ostringstream s;
  s << "bf16 tile " << tile << ": " << kt << " K tiles x " << nt << " column blocks, "
    << chunk_sizes.size() << " row chunks of <= " << chunk_rows << ", W "
    << (w_resident ? "resident in VMEM" : "streamed") << " (" << group << " K tiles per piece)"
    << (transfer == FloatTransfer::Bfloat16 ? ", bf16 transfer" : "");
  return s.str();
}

void check_float_chip(const ChipParams& p, const std::string& backend) {
  bool ok = p.has_vmem();
  for (uint8_t op = kFirstBf16Op; op <= kLastBf16Op; ++op) ok = ok && p.executes_training_op(op);
  if (!ok)
    throw DeviceError("matmul (float32): this " + backend +
                      " Device is the int8 chip (VmemRows = " + std::to_string(p.vmem_rows) +
                      ": no VMEM and no bf16 matrix unit); open the training chip "
                      "(ChipParams::training(n), the rtl training chip; in Python "
                      "tpu_rtl.Device(backend, n, training=True))");
}

FloatMatmulPlan plan_float_matmul(const ChipParams& p, uint32_t m, uint32_t k, uint32_t n,
                                  FloatTransfer transfer) {
  if (m == 0 || k == 0 || n == 0)
    throw std::invalid_argument(
        format("matmul (float32): m, k, n = %u, %u, %u (each must be >= 1)", m, k, n));
  if (transfer == FloatTransfer::Bfloat16 && (2 * p.N) % 16 != 0)
    throw std::invalid_argument(
        "matmul (float32): transfer='bfloat16' needs N >= 8 (a bf16 VMEM row of 2N bytes must "
        "be a multiple of the 16-byte DMA alignment); N = " +
        std::to_string(p.N) + ": use transfer='float32'");
  FloatMatmulPlan pl;
  pl.transfer = transfer;
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

std::vector<float> pack_float_a(const std::vector<float>& a, uint32_t m, uint32_t k,
                                const FloatMatmulPlan& pl) {
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

std::vector<float> pack_float_w(const std::vector<float>& w, uint32_t k, uint32_t n,
                                const FloatMatmulPlan& pl) {
  const uint32_t T = pl.tile;
  std::vector<float> out(size_t{pl.nt} * pl.kt * T * T, 0.0f);
  for (uint32_t j = 0; j < pl.nt; ++j)
    for (uint32_t kk = 0; kk < k; ++kk)
      for (uint32_t l = 0; l < T && j * T + l < n; ++l)
        out[(size_t{j} * pl.kt * T + kk) * T + l] = w[size_t{kk} * n + j * T + l];
  return out;
}

std::vector<uint8_t> float_host_image(const std::vector<float>& v, const FloatMatmulPlan& plan) {
  const bool bf16 = plan.transfer == FloatTransfer::Bfloat16;
  std::vector<uint8_t> out(v.size() * plan.in_bytes());
  if (!bf16) {
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = fp::to_bf16(fp::bits_of(v[i]));
    out[2 * i] = static_cast<uint8_t>(h & 0xFF);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
  return out;
}

void emit_float_matmul(ProgramBuilder& b, const FloatMatmulPlan& plan, uint32_t m,
                       const FloatMatmulHostAddrs& addrs) {
  FloatEmitter(b, plan, m, addrs).emit();
}

FloatMatmulRun run_float_matmul(Device& dev, const std::vector<float>& a,
                                const std::vector<float>& w, uint32_t m, uint32_t k, uint32_t n,
                                FloatTransfer transfer, uint64_t max_cycles) {
  const ChipParams& p = dev.params();
  check_float_chip(p, std::string(dev.backend()));
  const FloatMatmulPlan pl = plan_float_matmul(p, m, k, n, transfer);
  if (a.size() != size_t{m} * k)
    throw std::invalid_argument(
        format("run_float_matmul: A has %zu values (expected m*k = %zu)", a.size(), size_t{m} * k));
  if (w.size() != size_t{k} * n)
    throw std::invalid_argument(
        format("run_float_matmul: W has %zu values (expected k*n = %zu)", w.size(), size_t{k} * n));
  const uint32_t T = pl.tile;
  const uint64_t a_bytes = uint64_t{m} * pl.kt * T * pl.in_bytes(),
                 w_bytes = uint64_t{pl.nt} * pl.kt * T * T * pl.in_bytes(),
                 out_bytes = uint64_t{pl.nt} * m * T * 4;
  if (a_bytes + w_bytes + out_bytes > kMaxHostBytes)
    throw std::invalid_argument(format("matmul (float32): the operands need %" PRIu64
                                       " bytes of host buffers (at most 1 GiB)",
                                       a_bytes + w_bytes + out_bytes));
  ScopedBuffers bufs(dev);  // released whatever happens
  FloatMatmulHostAddrs h;
  h.a = bufs.add(a_bytes, "matmul.a").addr;
  h.w = bufs.add(w_bytes, "matmul.w").addr;
  h.out = bufs.add(out_bytes, "matmul.out").addr;
  dev.write(h.a, float_host_image(pack_float_a(a, m, k, pl), pl));
  dev.write(h.w, float_host_image(pack_float_w(w, k, n, pl), pl));

  ProgramBuilder b(p);
  std::vector<HostRange> ranges;
  for (const HostBuffer& hb : bufs.list()) ranges.push_back({hb.addr, hb.size, hb.name});
  b.set_host_ranges(ranges);
  emit_float_matmul(b, pl, m, h);
  const std::vector<Instruction> program = b.finish();

  FloatMatmulRun r;
  r.plan = pl;
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

}  // namespace tpu

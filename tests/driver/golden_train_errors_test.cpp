// SPDX-License-Identifier: Apache-2.0
// Error paths of the training instructions on the golden model, run as programs (issue 30,
// docs/isa.md "Training configuration" and "Errors"): for every fault of every training
// instruction and every field that can cause it, a program [setup..., faulting instruction,
// halt] must stop with that ERR_CODE at that ERR_PC, and leave exactly the state the setup
// alone leaves (VMEM, ACC, UB, host memory, weight tiles): the faulting instruction writes
// nothing. Each fault's boundary is pinned by the last legal value, which must run. When
// several checks fail, the documented order decides (codes 1-8, then 14, then 13 / 12, then
// 15). The expected codes are written from isa.md, not taken from driver/isa.cpp's checks.
// (tests/driver/isa_train_test.cpp checks the same rules on check() alone, and the random
// generator, tests/verif/random_train_test.cpp, plants them at random places.)
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "assembler.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"

namespace tpu {
namespace {

constexpr uint32_t kCmd = 0x1000;  // command buffer (up to 16 instructions)
constexpr uint32_t kHost = 0x10000, kHostSize = 0x10000;
constexpr uint32_t kVmemRows = 256, kAccRows = 128;
constexpr uint32_t kUnmapped = 0x900000;

using E = ErrorCode;

struct Case {
  std::string what;
  std::vector<Instruction> setup;  // run first (must not fault)
  Instruction in;
  ErrorCode code;  // ERR_NONE: the boundary value that must run
  DmaWindows windows{};
};

class TrainErrors : public ::testing::TestWithParam<uint32_t> {
 protected:
  uint32_t n() const { return GetParam(); }
  ChipParams params() const {
    ChipParams p = ChipParams::training(n());
    p.vmem_rows = kVmemRows;
    p.acc_rows = kAccRows;
    p.ub_rows = 64;
    return p;
  }
  // A model over fresh memory with the same random state every time.
  struct Rig {
    RegionMemory mem;
    std::unique_ptr<GoldenModel> model;
  };
  std::unique_ptr<Rig> rig() const {
    auto r = std::make_unique<Rig>();
    r->mem.add_region(kCmd, 0x1000);
    r->mem.add_region(kHost, kHostSize);
    r->model = std::make_unique<GoldenModel>(r->mem, params());
    std::mt19937_64 rng(7);
    std::vector<uint8_t> host(kHostSize);
    for (auto& b : host) b = uint8_t(rng());
    r->mem.load(kHost, host);
    std::vector<uint32_t> v(size_t{kVmemRows} * n());
    for (auto& x : v) x = uint32_t(rng());
    r->model->set_vmem_rows(0, v);
    for (uint32_t row = 0; row < kAccRows; ++row) {
      for (uint32_t c = 0; c < n(); ++c) r->model->set_acc(row, c, int32_t(rng()));
    }
    std::vector<uint8_t> ub(size_t{64} * n());
    for (auto& b : ub) b = uint8_t(rng());
    r->model->set_ub_rows(0, ub);
    return r;
  }
  static RunResult run(Rig& r, std::vector<Instruction> prog, const DmaWindows& w) {
    prog.push_back(Halt{});
    r.mem.load(kCmd, encode_program(prog));
    r.model->set_dma_windows(w);
    return r.model->run(kCmd, uint32_t(prog.size()));
  }
  // Everything an instruction could write.
  std::string state(const Rig& r) const {
    std::string s;
    auto add = [&s](const void* p, size_t len) { s.append(static_cast<const char*>(p), len); };
    const std::vector<uint32_t> v = r.model->vmem_rows(0, kVmemRows);
    add(v.data(), v.size() * 4);
    for (uint32_t row = 0; row < kAccRows; ++row) {
      const std::vector<int32_t> a = r.model->acc_row(row);
      add(a.data(), a.size() * 4);
    }
    const std::vector<uint8_t> ub = r.model->ub_rows(0, 64);
    add(ub.data(), ub.size());
    const std::vector<uint8_t> h = r.mem.dump(kHost, kHostSize);
    add(h.data(), h.size());
    s += std::to_string(r.model->pending_weight_tiles()) +
         (r.model->has_active_tile() ? "A" : "-") + (r.model->active_tile_is_bf16() ? "B" : "I");
    return s;
  }

  void check(const Case& c) {
    SCOPED_TRACE(c.what + ": " + disassemble(c.in));
    auto a = rig(), b = rig();
    std::vector<Instruction> prog = c.setup;
    prog.push_back(c.in);
    const RunResult ra = run(*a, prog, c.windows);
    if (c.code == E::ERR_NONE) {
      EXPECT_TRUE(ra.done()) << ra.message;
      return;
    }
    ASSERT_FALSE(ra.done());
    EXPECT_EQ(error_name(ra.error), error_name(c.code)) << ra.message;
    EXPECT_EQ(ra.err_pc, c.setup.size()) << ra.message;
    EXPECT_EQ(ra.retired, c.setup.size());
    const bool axi = c.code == E::ERR_AXI_READ || c.code == E::ERR_AXI_WRITE;
    if (axi) return;  // isa.md: the destination is undefined after an AXI error
    const RunResult rb = run(*b, c.setup, c.windows);
    ASSERT_TRUE(rb.done()) << "setup: " << rb.message;
    EXPECT_TRUE(state(*a) == state(*b)) << "the faulting instruction changed state";
  }
  void check_all(const std::vector<Case>& cases) {
    for (const Case& c : cases) check(c);
  }

  // A valid setup instruction that writes VMEM row 0 (so ERR_PC = 1 and the comparison
  // includes an executed instruction).
  static Instruction touch() {
    Vector v;
    v.func = uint8_t(VecFunc::FAdd);
    v.bmode = BMode::Imm;
    v.b = 0x3F800000;
    v.a = 1;
    return v;
  }
};

VmemDma dma(uint16_t vmem, uint32_t rows, uint32_t host, uint32_t stride = 0, bool bf16 = false) {
  VmemDma d;
  d.vmem_addr = vmem;
  d.rows = rows;
  d.host_addr = host;
  d.host_stride = stride;
  d.bf16 = bf16;
  return d;
}
Instruction as(bool write, const VmemDma& d) {
  return write ? Instruction(WriteVmem{d}) : Instruction(ReadVmem{d});
}

TEST_P(TrainErrors, ReadVmemAndWriteVmem) {
  const uint32_t r32 = 4 * n();
  for (bool write : {false, true}) {
    const std::string m = write ? "write_vmem " : "read_vmem ";
    const std::vector<Instruction> s = {touch()};
    DmaWindows win{};
    win[3] = {kCmd, 0x1000};
    win[5] = {kHost, kHostSize};
    std::vector<Case> c = {
        {m + "rows = 0", s, as(write, dma(0, 0, kHost)), E::ERR_FIELD},
        {m + "host_addr + 8", s, as(write, dma(0, 1, kHost + 8)), E::ERR_ALIGN},
        {m + "host_addr + 1", s, as(write, dma(0, 2, kHost + 1, 0, true)), E::ERR_ALIGN},
        {m + "host_stride 8", s, as(write, dma(0, 2, kHost, 8)), E::ERR_ALIGN},
        {m + "host_stride 24 (rows 1: still checked)", s, as(write, dma(0, 1, kHost, 24)),
         E::ERR_ALIGN},
        {m + "host_stride 16 (overlapping rows)", s, as(write, dma(0, 3, kHost, 16)), E::ERR_NONE},
        {m + "wraps past 2^32", s, as(write, dma(0, 2, 0xFFFFFFF0u)), E::ERR_HOST_RANGE},
        {m + "wraps past 2^32 through the stride", s, as(write, dma(0, 2, 0xFFFF0000u, 0x10000)),
         E::ERR_HOST_RANGE},
        {m + "ends at 2^32 exactly (bf16 N/8 rows of 2N bytes)", s,
         as(write, dma(0, 1, 0xFFFFFFF0u, 0, true)),
         n() <= 8 ? E::ERR_AXI_READ : E::ERR_HOST_RANGE},
        {m + "outside the DMA windows", s, as(write, dma(0, 1, kHost + kHostSize)),
         E::ERR_HOST_RANGE, win},
        {m + "across the end of a window", s, as(write, dma(0, 2, kHost + kHostSize - r32)),
         E::ERR_HOST_RANGE, win},
        {m + "the last row of a window", s, as(write, dma(0, 1, kHost + kHostSize - r32)),
         E::ERR_NONE, win},
        {m + "last VMEM row", s, as(write, dma(uint16_t(kVmemRows - 3), 3, kHost)), E::ERR_NONE},
        {m + "one VMEM row past the end", s, as(write, dma(uint16_t(kVmemRows - 2), 3, kHost)),
         E::ERR_VMEM_RANGE},
        {m + "vmem_addr 0xFFFF", s, as(write, dma(0xFFFF, 1, kHost)), E::ERR_VMEM_RANGE},
        {m + "rows 2^24 - 1", s, as(write, dma(0, (1u << 24) - 1, kHost, 16)), E::ERR_VMEM_RANGE},
        {m + "rows 0 and misaligned: FIELD first", s, as(write, dma(0, 0, kHost + 4)),
         E::ERR_FIELD},
        {m + "misaligned and wrapping: ALIGN first", s, as(write, dma(0, 4, 0xFFFFFFF4u)),
         E::ERR_ALIGN},
        {m + "wrapping and VMEM range: HOST_RANGE first", s, as(write, dma(0xFFFF, 4, 0xFFFFFFF0u)),
         E::ERR_HOST_RANGE},
        {m + "unmapped host memory", s, as(write, dma(0, 2, kUnmapped)),
         write ? E::ERR_AXI_WRITE : E::ERR_AXI_READ},
    };
    if (!write) c[8].code = n() <= 8 ? E::ERR_AXI_READ : E::ERR_HOST_RANGE;
    if (write) c[8].code = n() <= 8 ? E::ERR_AXI_WRITE : E::ERR_HOST_RANGE;
    if (write) {
      c.push_back({m + "into its own command buffer", s, as(write, dma(0, 1, kCmd + 16)),
                   E::ERR_HOST_RANGE});
      c.push_back({m + "into the halt", s, as(write, dma(0, 1, kCmd + 32)), E::ERR_HOST_RANGE});
      c.push_back(
          {m + "just past the command buffer", s, as(write, dma(0, 1, kCmd + 48)), E::ERR_NONE});
    }
    check_all(c);
  }
}

LoadWeights lw(uint16_t vmem, uint16_t tiles, uint16_t rows, uint16_t row_stride = 1,
               uint16_t tile_stride = 0, bool transpose = false) {
  LoadWeights w;
  w.vmem_addr = vmem;
  w.tiles = tiles;
  w.rows = rows;
  w.row_stride = row_stride;
  w.tile_stride = tile_stride;
  w.transpose = transpose;
  return w;
}

TEST_P(TrainErrors, LoadWeights) {
  const auto nn = uint16_t(n());
  const auto cap = uint16_t(params().wfifo_tiles + 2);
  const std::vector<Instruction> s = {touch()};
  ReadWeights two;
  two.tiles = 2;
  two.host_addr = kHost;
  const std::vector<Instruction> s2 = {touch(), two};
  const auto last = uint16_t(kVmemRows - 1);
  check_all({
      {"tiles = 0", s, lw(0, 0, nn), E::ERR_FIELD},
      {"rows = 0", s, lw(0, 1, 0), E::ERR_FIELD},
      {"rows = N + 1", s, lw(0, 1, uint16_t(nn + 1)), E::ERR_FIELD},
      {"rows = 511", s, lw(0, 1, 511), E::ERR_FIELD},
      {"rows = N", s, lw(0, 1, nn, 1, 0, true), E::ERR_NONE},
      {"rows = 1, row_stride 0xFFFF (unused)", s, lw(last, 1, 1, 0xFFFF), E::ERR_NONE},
      {"last row through vmem_addr", s, lw(uint16_t(kVmemRows - nn), 1, nn), E::ERR_NONE},
      {"one past through vmem_addr", s, lw(uint16_t(kVmemRows - nn + 1), 1, nn), E::ERR_VMEM_RANGE},
      {"one past through row_stride", s, lw(0, 1, 2, uint16_t(kVmemRows)), E::ERR_VMEM_RANGE},
      {"last row through row_stride", s, lw(0, 1, 2, uint16_t(kVmemRows - 1)), E::ERR_NONE},
      {"one past through tile_stride", s, lw(0, 2, 1, 1, uint16_t(kVmemRows)), E::ERR_VMEM_RANGE},
      {"last row through tile_stride", s, lw(0, 2, 1, 1, uint16_t(kVmemRows - 1)), E::ERR_NONE},
      {"WFifoTiles + 2 tiles", s, lw(0, cap, nn), E::ERR_NONE},
      {"one tile more than can wait", s, lw(0, uint16_t(cap + 1), nn), E::ERR_WEIGHT_OVERFLOW},
      {"behind two int8 tiles: room - 2 fits", s2, lw(0, uint16_t(cap - 2), nn), E::ERR_NONE},
      {"behind two int8 tiles: one more overflows", s2, lw(0, uint16_t(cap - 1), nn),
       E::ERR_WEIGHT_OVERFLOW},
      {"tiles 0xFFFF", s, lw(0, 0xFFFF, nn), E::ERR_WEIGHT_OVERFLOW},
      {"tiles = 0 and VMEM range: FIELD first", s, lw(0xFFFF, 0, nn), E::ERR_FIELD},
      {"VMEM range and overflow: VMEM_RANGE first", s, lw(0xFFFF, uint16_t(cap + 1), nn),
       E::ERR_VMEM_RANGE},
  });
}

MatmulBf16 mb(uint16_t vmem, uint16_t acc, uint16_t inner, uint16_t outer = 1,
              uint8_t inner_stride = 1, uint16_t outer_stride = 0, bool sw = true) {
  MatmulBf16 m;
  m.vmem_addr = vmem;
  m.acc_addr = acc;
  m.inner = inner;
  m.outer = outer;
  m.inner_stride = inner_stride;
  m.outer_stride = outer_stride;
  m.switch_weights = sw;
  return m;
}

TEST_P(TrainErrors, MatmulBf16) {
  const auto nn = uint16_t(n());
  const std::vector<Instruction> s = {touch(), lw(0, 1, nn)};  // one bf16 tile waiting
  const auto acc = uint16_t(kAccRows);
  check_all({
      {"inner = 0", s, mb(0, 0, 0), E::ERR_FIELD},
      {"outer = 0", s, mb(0, 0, 1, 0), E::ERR_FIELD},
      {"last ACC row", s, mb(0, uint16_t(acc - 6), 3, 2), E::ERR_NONE},
      {"one ACC row past the end", s, mb(0, uint16_t(acc - 5), 3, 2), E::ERR_ACC_RANGE},
      {"acc_addr 0xFFFF", s, mb(0, 0xFFFF, 1), E::ERR_ACC_RANGE},
      {"inner * outer > AccRows", s, mb(0, 0, 4095, 4095, 0, 0), E::ERR_ACC_RANGE},
      {"last VMEM row through inner_stride", s, mb(0, 0, 2, 1, uint8_t(255)), E::ERR_NONE},
      {"one past through vmem_addr", s, mb(uint16_t(kVmemRows - 2), 0, 3), E::ERR_VMEM_RANGE},
      {"one past through outer_stride", s, mb(0, 0, 1, 2, 1, uint16_t(kVmemRows)),
       E::ERR_VMEM_RANGE},
      {"last row through outer_stride", s, mb(0, 0, 1, 2, 1, uint16_t(kVmemRows - 1)), E::ERR_NONE},
      {"ACC and VMEM range: ACC_RANGE first", s, mb(0xFFFF, 0xFFFF, 2), E::ERR_ACC_RANGE},
      {"no tile was pushed", {touch()}, mb(0, 0, 1), E::ERR_NO_WEIGHTS},
      {"no tile active, no switch", {touch()}, mb(0, 0, 1, 1, 1, 0, false), E::ERR_NO_WEIGHTS},
      {"every pushed tile used",
       {touch(), lw(0, 1, nn), mb(0, 0, 1)},
       mb(0, 0, 1),
       E::ERR_NO_WEIGHTS},
      {"VMEM range before no weights", {touch()}, mb(0xFFFF, 0, 2), E::ERR_VMEM_RANGE},
  });
}

TEST_P(TrainErrors, WeightTypes) {
  const auto nn = uint16_t(n());
  ReadWeights rw;
  rw.host_addr = kHost;
  Matmul mm;
  mm.switch_weights = true;
  Matmul mm_stay = mm;
  mm_stay.switch_weights = false;
  check_all({
      {"matmul_bf16 switch onto an int8 tile", {touch(), rw}, mb(0, 0, 1), E::ERR_WEIGHT_TYPE},
      {"matmul_bf16 on the active int8 tile",
       {touch(), rw, mm},
       mb(0, 0, 1, 1, 1, 0, false),
       E::ERR_WEIGHT_TYPE},
      {"matmul switch onto a bf16 tile", {touch(), lw(0, 1, nn)}, mm, E::ERR_WEIGHT_TYPE},
      {"matmul on the active bf16 tile",
       {touch(), lw(0, 1, nn), mb(0, 0, 1)},
       mm_stay,
       E::ERR_WEIGHT_TYPE},
      {"int8 then bf16 in push order", {touch(), rw, lw(0, 1, nn), mm}, mb(0, 0, 1), E::ERR_NONE},
      {"ACC range before the type", {touch(), rw}, mb(0, 0xFFFF, 1), E::ERR_ACC_RANGE},
  });
}

AccToVmem atv(uint16_t acc, uint16_t vmem, uint32_t rows) {
  AccToVmem a;
  a.acc_addr = acc;
  a.vmem_addr = vmem;
  a.rows = rows;
  return a;
}

TEST_P(TrainErrors, AccToVmem) {
  const std::vector<Instruction> s = {touch()};
  check_all({
      {"rows = 0", s, atv(0, 0, 0), E::ERR_FIELD},
      {"last ACC and VMEM rows", s, atv(uint16_t(kAccRows - 4), uint16_t(kVmemRows - 4), 4),
       E::ERR_NONE},
      {"one ACC row past the end", s, atv(uint16_t(kAccRows - 3), 0, 4), E::ERR_ACC_RANGE},
      {"one VMEM row past the end", s, atv(0, uint16_t(kVmemRows - 3), 4), E::ERR_VMEM_RANGE},
      {"rows 2^24 - 1", s, atv(0, 0, (1u << 24) - 1), E::ERR_ACC_RANGE},
      {"both: ACC_RANGE first", s, atv(0xFFFF, 0xFFFF, 1), E::ERR_ACC_RANGE},
      {"rows 0 and both ranges: FIELD first", s, atv(0xFFFF, 0xFFFF, 0), E::ERR_FIELD},
  });
}

Transpose tr(uint16_t src, uint16_t dst, uint16_t blocks, uint16_t src_stride = 0,
             uint16_t dst_stride = 0, uint16_t src_row_stride = 1) {
  Transpose t;
  t.src = src;
  t.dst = dst;
  t.blocks = blocks;
  t.src_stride = src_stride;
  t.dst_stride = dst_stride;
  t.src_row_stride = src_row_stride;
  return t;
}

TEST_P(TrainErrors, Transpose) {
  const auto nn = uint16_t(n());
  const auto top = uint16_t(kVmemRows - nn);  // the last block that fits
  const std::vector<Instruction> s = {touch()};
  check_all({
      {"blocks = 0", s, tr(0, 0, 0), E::ERR_FIELD},
      {"last rows, in place", s, tr(top, top, 1), E::ERR_NONE},
      {"src one past", s, tr(uint16_t(top + 1), 0, 1), E::ERR_VMEM_RANGE},
      {"dst one past", s, tr(0, uint16_t(top + 1), 1), E::ERR_VMEM_RANGE},
      {"src through src_stride", s, tr(0, 0, 2, uint16_t(top + 1), 0), E::ERR_VMEM_RANGE},
      {"src last through src_stride", s, tr(0, 0, 2, top, 0), E::ERR_NONE},
      {"dst through dst_stride", s, tr(0, 0, 2, 0, uint16_t(top + 1)), E::ERR_VMEM_RANGE},
      {"src through src_row_stride", s,
       tr(0, 0, 1, 0, 0, uint16_t((kVmemRows + nn - 2) / (nn - 1))), E::ERR_VMEM_RANGE},
      {"src_row_stride 0 (one row N times)", s, tr(uint16_t(kVmemRows - 1), 0, 1, 0, 0, 0),
       E::ERR_NONE},
      {"blocks 0 and src range: FIELD first", s, tr(0xFFFF, 0, 0), E::ERR_FIELD},
  });
}

Vector vec(VecFunc f, uint16_t dst, uint16_t a, uint32_t b, BMode m = BMode::RowA,
           uint8_t inner = 1, uint16_t outer = 1) {
  Vector v;
  v.func = uint8_t(f);
  v.dst = dst;
  v.a = a;
  v.b = b;
  v.bmode = m;
  v.inner = inner;
  v.outer = outer;
  return v;
}

TEST_P(TrainErrors, VectorFields) {
  const std::vector<Instruction> s = {touch()};
  std::vector<Case> c = {
      {"inner = 0", s, vec(VecFunc::FAdd, 2, 3, 4, BMode::RowA, 0), E::ERR_FIELD},
      {"outer = 0", s, vec(VecFunc::FAdd, 2, 3, 4, BMode::RowA, 1, 0), E::ERR_FIELD},
      {"inner = 0 and the destination out of range: FIELD first", s,
       vec(VecFunc::FAdd, 0xFFFF, 3, 4, BMode::RowA, 0), E::ERR_FIELD},
      {"align with bmode a", s, vec(VecFunc::Align, 2, 3, 1, BMode::RowA), E::ERR_FIELD},
      {"align with bmode dst", s, vec(VecFunc::Align, 2, 3, 1, BMode::RowDst), E::ERR_FIELD},
      {"align with bmode fixed", s, vec(VecFunc::Align, 2, 3, 1, BMode::Fixed), E::ERR_FIELD},
      {"align by N", s, vec(VecFunc::Align, 2, 3, n(), BMode::Imm), E::ERR_FIELD},
      {"align by 2^32 - 1", s, vec(VecFunc::Align, 2, 3, 0xFFFFFFFFu, BMode::Imm), E::ERR_FIELD},
      {"align by N - 1", s, vec(VecFunc::Align, 2, 3, n() - 1, BMode::Imm), E::ERR_NONE},
  };
  for (uint8_t f = 0; f < 64; ++f) {  // every value that is not a func
    if (!is_vec_func(f))
      c.push_back({"func " + std::to_string(f), s, vec(VecFunc(f), 2, 3, 4), E::ERR_FIELD});
  }
  for (VecFunc f :
       {VecFunc::F2I, VecFunc::I2F, VecFunc::Bf16, VecFunc::LSum, VecFunc::LMax, VecFunc::LMin}) {
    const std::string name(vec_func_name(uint8_t(f)));
    c.push_back({name + " with b = 1", s, vec(f, 2, 3, 1), E::ERR_FIELD});
    c.push_back({name + " with bmode dst", s, vec(f, 2, 3, 0, BMode::RowDst), E::ERR_FIELD});
    c.push_back({name + " with bmode fixed", s, vec(f, 2, 3, 0, BMode::Fixed), E::ERR_FIELD});
    c.push_back({name + " with bmode imm 0", s, vec(f, 2, 3, 0, BMode::Imm), E::ERR_FIELD});
    c.push_back({name + " with bmode a, b 0", s, vec(f, 2, 3, 0), E::ERR_NONE});
  }
  check_all(c);
}

TEST_P(TrainErrors, VectorRanges) {
  const std::vector<Instruction> s = {touch()};
  const auto top = uint16_t(kVmemRows - 1);
  auto strided = [](Vector v, uint8_t ai, uint16_t ao, uint8_t di, uint16_t dso) {
    v.a_inner_stride = ai;
    v.a_outer_stride = ao;
    v.dst_inner_stride = di;
    v.dst_outer_stride = dso;
    return v;
  };
  // 3 x 2 element rows: last = base + 1 * outer_stride + 2 * inner_stride.
  const Vector base = vec(VecFunc::FMul, 0, 0, 0, BMode::RowA, 3, 2);
  auto with = [&](uint16_t dst, uint16_t a, uint32_t b, BMode m, uint8_t ai, uint16_t ao,
                  uint8_t di, uint16_t dso) {
    Vector v = strided(base, ai, ao, di, dso);
    v.dst = dst;
    v.a = a;
    v.b = b;
    v.bmode = m;
    return v;
  };
  const auto k = uint16_t(kVmemRows - 1 - 2 * 15);  // outer stride that ends on the last row
  check_all({
      {"dst last row", s, with(top, 0, 0, BMode::Imm, 1, 3, 0, 0), E::ERR_NONE},
      {"dst one past", s, with(uint16_t(top - 1), 0, 0, BMode::Imm, 1, 3, 1, 0), E::ERR_VMEM_RANGE},
      {"dst through dst_outer_stride", s, with(0, 0, 0, BMode::Imm, 1, 3, 15, uint16_t(k + 1)),
       E::ERR_VMEM_RANGE},
      {"dst last through dst_outer_stride", s, with(0, 0, 0, BMode::Imm, 1, 3, 15, k), E::ERR_NONE},
      {"a through a_inner_stride", s, with(0, uint16_t(top - 29), 0, BMode::Imm, 15, 0, 1, 3),
       E::ERR_VMEM_RANGE},
      {"a last through a_inner_stride", s, with(0, uint16_t(top - 30), 0, BMode::Imm, 15, 0, 1, 3),
       E::ERR_NONE},
      {"a through a_outer_stride", s, with(0, 0, 0, BMode::Imm, 0, 2047, 1, 3), E::ERR_VMEM_RANGE},
      {"b (bmode a) on A's pattern", s, with(0, 0, uint32_t(top - 6), BMode::RowA, 3, 1, 1, 3),
       E::ERR_VMEM_RANGE},
      {"b (bmode a) last row", s, with(0, 0, uint32_t(top - 7), BMode::RowA, 3, 1, 1, 3),
       E::ERR_NONE},
      {"b (bmode dst) on the destination's pattern", s,
       with(0, 0, uint32_t(top - 9), BMode::RowDst, 1, 3, 4, 2), E::ERR_VMEM_RANGE},
      {"b (bmode dst) last row", s, with(0, 0, uint32_t(top - 10), BMode::RowDst, 1, 3, 4, 2),
       E::ERR_NONE},
      {"b (bmode fixed) = VmemRows", s, with(0, 0, kVmemRows, BMode::Fixed, 1, 3, 1, 3),
       E::ERR_VMEM_RANGE},
      {"b (bmode fixed) last row", s, with(0, 0, top, BMode::Fixed, 1, 3, 1, 3), E::ERR_NONE},
      {"b = 2^16 (the 32-bit field)", s, with(0, 0, 0x10000, BMode::Fixed, 1, 3, 1, 3),
       E::ERR_VMEM_RANGE},
      {"b = 2^32 - 1", s, with(0, 0, 0xFFFFFFFFu, BMode::RowA, 1, 3, 1, 3), E::ERR_VMEM_RANGE},
      {"immediate 2^32 - 1 is no row", s, with(0, 0, 0xFFFFFFFFu, BMode::Imm, 1, 3, 1, 3),
       E::ERR_NONE},
      {"align reads A + 1", s, vec(VecFunc::Align, 0, top, 1, BMode::Imm), E::ERR_VMEM_RANGE},
      {"align by 0 reads A only", s, vec(VecFunc::Align, 0, top, 0, BMode::Imm), E::ERR_NONE},
      {"row reduction: the bounding row of every element row", s,
       with(uint16_t(top - 1), 0, 0, BMode::Imm, 1, 3, 1, 0), E::ERR_VMEM_RANGE},
  });
  Vector rs = with(uint16_t(top - 1), 0, 0, BMode::Imm, 1, 3, 1, 0);
  rs.func = uint8_t(VecFunc::RSum);
  check({"rsum: its destination rows are D(o,0), the check uses the bounding row", s, rs,
         E::ERR_VMEM_RANGE});
}

// Every reserved bit of every training opcode, in a program: ERR_RESERVED at its index,
// nothing written (isa_train_test.cpp checks decode() of the same words).
TEST_P(TrainErrors, EveryReservedBitInAProgram) {
  const auto nn = uint16_t(n());
  const std::vector<Instruction> valid = {ReadVmem{dma(0, 1, kHost)},
                                          WriteVmem{dma(0, 1, kHost)},
                                          lw(0, 1, nn),
                                          mb(0, 0, 1),
                                          atv(0, 0, 1),
                                          tr(0, 0, 1),
                                          vec(VecFunc::FAdd, 0, 1, 2)};
  std::vector<Case> c;
  for (const Instruction& in : valid) {
    const auto op = Opcode(opcode_byte(in));
    for (unsigned bit = 8; bit < 128; ++bit) {
      bool field = false;
      for (const FieldInfo& f : instruction_fields(op))
        field = field || (bit >= f.bits.lo && bit <= f.bits.hi());
      if (field) continue;
      RawInstruction raw{encode(in)};
      raw.bytes[bit / 8] |= uint8_t(1u << (bit % 8));
      c.push_back({std::string(mnemonic(op)) + " bit " + std::to_string(bit),
                   {touch()},
                   raw,
                   E::ERR_RESERVED});
    }
  }
  EXPECT_GT(c.size(), 200u);
  check_all(c);
}

INSTANTIATE_TEST_SUITE_P(N, TrainErrors, ::testing::Values(4u, 16u));

}  // namespace
}  // namespace tpu

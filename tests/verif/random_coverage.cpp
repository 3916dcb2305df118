// SPDX-License-Identifier: Apache-2.0
// Coverage of the training instructions by the random generator (random_program.h,
// cover_case): replays a case on a fresh golden model one instruction at a time and counts
// fields, operand classes and float events. The counts describe what the golden model
// computed; a test asserts the required ones are all hit (random_train_test.cpp).
#include <algorithm>
#include <string>
#include <variant>

#include "fp.h"
#include "random_program.h"
#include "vector_unit.h"

namespace tpu::verif {

namespace {

// The class of an fp32 lane as an operand: nan, inf, sub, negzero, big (|x| >= 2^31 finite),
// max (exponent field 254: rounding or sums can overflow), or "" for the others.
const char* lane_class(uint32_t x) {
  const uint32_t e = (x >> 23) & 0xFF;
  if (fp::is_nan(x)) return x == fp::kCanonicalNaN ? "canonical_nan" : "nan";
  if (fp::is_inf(x)) return "inf";
  if (fp::is_subnormal(x)) return "sub";
  if (x == fp::kNegZero) return "negzero";
  if (e == 254) return "max";
  if (e >= 127 + 31) return "big";
  return "";
}

bool is_fp_func(uint8_t f) { return f < 0x10 || f == 0x20 || f == 0x22 || f >= 0x28; }
bool normal_nonzero(uint32_t x) {
  return !fp::is_nan(x) && !fp::is_inf(x) && !fp::is_zero(fp::daz(x));
}
int exponent(uint32_t x) { return int((x >> 23) & 0xFF); }

class Replay {
 public:
  Replay(const TestCase& tc, Coverage& cov) : tc_(tc), cov_(cov), n_(tc.params.N) {
    mem_.add_region(kCmdBase, kCmdSize);
    mem_.add_region(kDataBase, kDataSize);
    mem_.add_region(kOutBase, kOutSize);
    mem_.add_region(kSpareBase, kSpareSize);
    mem_.add_region(kDumpBase, kDumpSize);
    if (tc.config.high_region) mem_.add_region(kHighBase, kHighSize);
    for (const auto& [addr, bytes] : tc.memory) mem_.load(addr, bytes);
    model_ = std::make_unique<GoldenModel>(mem_, tc.params);
    model_->set_dma_windows(tc.config.windows);
  }
  // Executes the first `count` instructions (those the run retired), counting as it goes.
  void run(size_t count) {
    for (size_t i = 0; i < count && i < tc_.program.size(); ++i) {
      const Instruction& in = tc_.program[i];
      std::visit([this](const auto& x) { before(x); }, in);
      if (model_->execute(in) != ErrorCode::ERR_NONE) return;
      std::visit([this](const auto& x) { after(x); }, in);
    }
  }

 private:
  void hit(const std::string& key) { ++cov_[key]; }
  std::vector<uint32_t> row(uint64_t r) const {
    return r < tc_.params.vmem_rows ? model_->vmem_rows(uint32_t(r), 1)
                                    : std::vector<uint32_t>(n_, 0);
  }
  void classes(const std::string& prefix, const std::vector<uint32_t>& lanes) {
    for (uint32_t x : lanes) {
      const char* c = lane_class(x);
      if (*c != 0) hit(prefix + c);
    }
  }

  template <class T>
  void before(const T&) {}
  template <class T>
  void after(const T&) {}

  void dma(const char* m, const VmemDma& d) {
    const std::string p = m;
    hit("op." + p);
    hit(p + (d.bf16 ? ".bf16" : ".fp32"));
    if (d.rows > 1) {
      const uint32_t r = d.row_bytes(n_);
      hit(p + (d.host_stride == 0   ? ".stride0"
               : d.host_stride < r  ? ".stride<row"
               : d.host_stride == r ? ".stride=row"
                                    : ".stride>row"));
    }
  }
  void before(const ReadVmem& d) {
    dma("read_vmem", d);
    for (uint32_t i = 0; i < d.rows; ++i) {
      std::vector<uint8_t> b(d.row_bytes(n_));
      if (!mem_.read(d.host_addr + i * d.step(n_), b.size(), b.data())) return;
      for (uint32_t j = 0; j < n_; ++j) {
        const uint32_t x = d.bf16 ? uint32_t(b[2 * j] | b[2 * j + 1] << 8) << 16
                                  : uint32_t(b[4 * j] | b[4 * j + 1] << 8 | b[4 * j + 2] << 16 |
                                             uint32_t(b[4 * j + 3]) << 24);
        const char* c = lane_class(x);
        if (*c != 0) hit(std::string("read_vmem.") + (d.bf16 ? "bf16." : "fp32.") + c);
      }
    }
  }
  void before(const WriteVmem& d) {
    dma("write_vmem", d);
    for (uint32_t i = 0; i < d.rows; ++i) {
      for (uint32_t x : row(uint64_t{d.vmem_addr} + i)) {
        if (!d.bf16) continue;
        const uint16_t h = fp::to_bf16(x);
        if (fp::is_nan(x) && x != fp::kCanonicalNaN) hit("write_vmem.bf16.nan_payload");
        if (!fp::is_inf(x) && !fp::is_nan(x) && (h & 0x7FFF) == 0x7F80) hit("event.bf16_overflow");
        if (fp::is_subnormal(x)) hit("write_vmem.bf16.sub");
      }
    }
  }
  void before(const LoadWeights& lw) {
    hit("op.load_weights");
    hit(lw.transpose ? "load_weights.transpose" : "load_weights.plain");
    hit(lw.rows < n_ ? "load_weights.rows<N" : "load_weights.rows=N");
    if (lw.rows > 1 && lw.row_stride == 0) hit("load_weights.row_stride0");
    if (lw.tiles > 1) hit("load_weights.tiles>1");
    for (uint32_t t = 0; t < lw.tiles; ++t) {
      for (uint32_t k = 0; k < lw.rows; ++k) {
        const std::vector<uint32_t> r = row(uint64_t{lw.vmem_addr} + uint64_t{t} * lw.tile_stride +
                                            uint64_t{k} * lw.row_stride);
        classes("val.load_weights.", r);
        for (uint32_t x : r) {
          if (!fp::is_inf(x) && !fp::is_nan(x) && (fp::to_bf16(x) & 0x7FFF) == 0x7F80)
            hit("event.bf16_overflow");
        }
      }
    }
  }
  void before(const MatmulBf16& mb) {
    hit("op.matmul_bf16");
    hit(mb.accumulate ? "matmul_bf16.acc" : "matmul_bf16.overwrite");
    hit(mb.switch_weights ? "matmul_bf16.switch" : "matmul_bf16.noswitch");
    if (mb.inner > 1 && mb.inner_stride == 0) hit("matmul_bf16.inner_stride0");
    if (mb.outer > 1) hit("matmul_bf16.outer>1");
    for (uint32_t o = 0; o < mb.outer; ++o) {
      for (uint32_t i = 0; i < mb.inner; ++i) {
        classes("val.matmul_bf16.", row(uint64_t{mb.vmem_addr} + uint64_t{o} * mb.outer_stride +
                                        uint64_t{i} * mb.inner_stride));
      }
    }
  }
  void after(const MatmulBf16& mb) {
    for (uint32_t r = 0; r < uint32_t(mb.inner) * mb.outer; ++r) {
      for (int32_t v : model_->acc_row(mb.acc_addr + r)) {
        const auto x = uint32_t(v);
        if (fp::is_nan(x)) hit("matmul_bf16.out.nan");
        if (fp::is_inf(x)) hit("matmul_bf16.out.inf");
        if (fp::is_zero(x)) hit("matmul_bf16.out.zero");
      }
    }
  }
  void before(const AccToVmem& av) {
    hit("op.acc_to_vmem");
    if (av.rows > 1) hit("acc_to_vmem.rows>1");
  }
  void before(const Transpose& t) {
    hit("op.transpose");
    if (t.src == t.dst) hit("transpose.in_place");
    if (t.blocks > 1) hit("transpose.blocks>1");
    if (t.src_row_stride == 0) hit("transpose.src_row_stride0");
    if (t.src_row_stride > 1) hit("transpose.src_row_stride>1");
  }
  void before(const Matmul&) { int8_ = true; }
  void before(const Activate&) { int8_ = true; }
  void before(const ReadWeights&) { int8_ = true; }
  void before(const Vector& v);
  void vector_events(const Vector& v, uint32_t a, uint32_t b);

  const TestCase& tc_;
  Coverage& cov_;
  uint32_t n_;
  RegionMemory mem_;
  std::unique_ptr<GoldenModel> model_;

 public:
  bool int8_ = false;
};

void Replay::before(const Vector& v) {
  const std::string name(vec_func_name(v.func));
  const std::string bm(bmode_name(v.bmode));
  hit("op.vector");
  hit("vector." + name);
  hit("vector.bmode." + bm);
  const bool unary = is_unary_vec_func(v.func);
  if (!unary && v.vec_func() != VecFunc::Align) hit("vector." + name + "." + bm);
  if (v.inner > 1 && v.a_inner_stride == 0) hit("vector.a_inner_stride0");
  if (v.inner > 1 && v.dst_inner_stride == 0) hit("vector.dst_inner_stride0");
  if (v.inner > 16) hit("vector.inner>16");
  if (v.outer > 4) hit("vector.outer>4");
  if (v.vec_func() == VecFunc::Align && v.b > 0) hit("vector.align.shift>0");
  if (is_row_reduction(v.func) && v.bmode == BMode::RowDst && v.b == v.dst)
    hit("vector.row_reduction.accumulate");
  // Bounding intervals: the destination against A and B.
  const uint64_t d0 = v.dst, d1 = v.dst_row(v.outer - 1u, v.inner - 1u);
  const uint64_t a0 = v.a, a1 = v.a_row(v.outer - 1u, v.inner - 1u) +
                                (v.vec_func() == VecFunc::Align && v.b > 0);
  bool overlap = d0 <= a1 && a0 <= d1;
  if (!unary && v.bmode != BMode::Imm) {
    const uint64_t b0 = v.b_row(0, 0), b1 = v.b_row(v.outer - 1u, v.inner - 1u);
    overlap = overlap || (d0 <= b1 && b0 <= d1);
  }
  if (overlap) {
    hit("vector.overlap");
    if (v.dst == v.a) hit("vector.dst=a");
    return;  // the operands change while it runs: no lane classes
  }
  if (!is_fp_func(v.func) && v.vec_func() != VecFunc::I2F) return;
  for (uint32_t o = 0; o < v.outer; ++o) {
    for (uint32_t i = 0; i < v.inner; ++i) {
      const std::vector<uint32_t> a = row(v.a_row(o, i));
      std::vector<uint32_t> b(n_, v.b);
      if (!unary && v.bmode != BMode::Imm) b = row(v.b_row(o, i));
      if (is_fp_func(v.func)) {
        classes("val." + name + ".", a);
        if (!unary) classes("val." + name + ".", b);
      }
      if (is_lane_reduction(v.func) || is_row_reduction(v.func) || v.vec_func() == VecFunc::Align)
        continue;
      for (uint32_t j = 0; j < n_; ++j) vector_events(v, a[j], b[j]);
    }
  }
}

void Replay::vector_events(const Vector& v, uint32_t a, uint32_t b) {
  const VecFunc f = v.vec_func();
  const uint32_t r = vector_lane(f, a, b);
  const bool finite_in = !fp::is_nan(a) && !fp::is_inf(a) && !fp::is_nan(b) && !fp::is_inf(b);
  const bool arith =
      f == VecFunc::FAdd || f == VecFunc::FSub || f == VecFunc::FSubR || f == VecFunc::FMul;
  if (arith && finite_in && fp::is_inf(r)) hit("event.overflow");
  if (arith && !fp::is_nan(a) && !fp::is_nan(b) && fp::is_nan(r)) hit("event.invalid");
  if (arith && normal_nonzero(a) && normal_nonzero(b) && fp::is_zero(r)) {
    hit(f == VecFunc::FMul ? "event.ftz" : "event.exact_cancel");
    if (f != VecFunc::FMul && r == fp::kNegZero) hit("event.negzero_sum");
  }
  if (f != VecFunc::FMul && arith && normal_nonzero(a) && normal_nonzero(b) && normal_nonzero(r) &&
      exponent(r) + 8 <= std::max(exponent(a), exponent(b)))
    hit("event.cancel");
  if (f == VecFunc::Bf16 && !fp::is_inf(a) && !fp::is_nan(a) && fp::is_inf(r))
    hit("event.bf16_overflow");
  if (f == VecFunc::F2I && !fp::is_nan(a) && (fp::is_inf(a) || exponent(a) >= 127 + 31))
    hit("event.f2i_saturate");
  if (f == VecFunc::I2F) {
    const auto iv = int32_t(a);
    if (iv > (1 << 24) || iv < -(1 << 24)) {
      if (double(fp::float_of(r)) != double(iv)) hit("event.i2f_round");
    }
  }
}

}  // namespace

void cover_case(const TestCase& tc, const Outcome& golden, Coverage& cov) {
  Replay r(tc, cov);
  r.run(golden.done ? tc.program.size() : std::min<size_t>(golden.err_pc, tc.program.size()));
  bool training = false;
  for (const Instruction& in : tc.program)
    training = training || is_training_opcode(opcode_byte(in));
  if (training && r.int8_) ++cov["mixed"];
  if (golden.done || golden.err_pc >= tc.program.size()) return;
  const uint8_t op = opcode_byte(tc.program[golden.err_pc]);
  const std::string m = is_training_opcode(op) ? std::string(mnemonic(Opcode(op))) : "int8";
  const auto code = ErrorCode(golden.err_code);
  if (code == ErrorCode::ERR_AXI_READ || code == ErrorCode::ERR_AXI_WRITE) {
    ++cov["axi." + m];
  } else if (tc.expect_error != ErrorCode::ERR_NONE) {
    ++cov["fault." + std::string(error_name(code)) + "." + m];
  }
}

std::vector<std::string> required_coverage(uint32_t n, bool faults) {
  std::vector<std::string> k = {"mixed"};
  for (const char* m : {"read_vmem", "write_vmem"}) {
    for (const char* f : {".bf16", ".fp32", ".stride0", ".stride>row"})
      k.push_back(std::string(m) + f);
    // (a stride is a multiple of 16: below the row size only for rows of 32 bytes or more)
    if (n >= 8) k.push_back(std::string(m) + ".stride<row");
  }
  for (const char* c : {"nan", "inf", "sub", "negzero", "max", "big"})
    k.push_back(std::string("read_vmem.fp32.") + c);
  for (const char* c : {"nan", "inf", "sub", "negzero", "max"})
    k.push_back(std::string("read_vmem.bf16.") + c);
  for (const char* s : {"load_weights.transpose",
                        "load_weights.plain",
                        "load_weights.rows<N",
                        "load_weights.rows=N",
                        "load_weights.row_stride0",
                        "load_weights.tiles>1",
                        "matmul_bf16.acc",
                        "matmul_bf16.overwrite",
                        "matmul_bf16.switch",
                        "matmul_bf16.noswitch",
                        "matmul_bf16.inner_stride0",
                        "matmul_bf16.outer>1",
                        "matmul_bf16.out.nan",
                        "matmul_bf16.out.inf",
                        "matmul_bf16.out.zero",
                        "op.acc_to_vmem",
                        "acc_to_vmem.rows>1",
                        "transpose.in_place",
                        "transpose.blocks>1",
                        "transpose.src_row_stride0",
                        "transpose.src_row_stride>1",
                        "write_vmem.bf16.nan_payload",
                        "write_vmem.bf16.sub",
                        "vector.a_inner_stride0",
                        "vector.dst_inner_stride0",
                        "vector.inner>16",
                        "vector.outer>4",
                        "vector.align.shift>0",
                        "vector.row_reduction.accumulate",
                        "vector.overlap",
                        "vector.dst=a",
                        "event.cancel",
                        "event.exact_cancel",
                        "event.overflow",
                        "event.ftz",
                        "event.invalid",
                        "event.bf16_overflow",
                        "event.f2i_saturate",
                        "event.i2f_round"}) {
    k.push_back(s);
  }
  for (const char* c : {"nan", "inf", "sub", "max"}) {
    k.push_back(std::string("val.load_weights.") + c);
    k.push_back(std::string("val.matmul_bf16.") + c);
  }
  for (VecFunc f : all_vec_funcs()) {
    const std::string name(vec_func_name(uint8_t(f)));
    k.push_back("vector." + name);
    if (!is_unary_vec_func(uint8_t(f)) && f != VecFunc::Align) {
      for (BMode b : {BMode::RowA, BMode::RowDst, BMode::Fixed, BMode::Imm})
        k.push_back("vector." + name + "." + std::string(bmode_name(b)));
    }
    if (is_fp_func(uint8_t(f)) && f != VecFunc::Align) {
      for (const char* c : {"nan", "inf", "sub", "negzero"}) k.push_back("val." + name + "." + c);
    }
  }
  if (!faults) return k;
  k.push_back("axi.read_vmem");
  k.push_back("axi.write_vmem");
  const std::vector<std::pair<ErrorCode, std::vector<const char*>>> codes = {
      // (vector has no reserved bit)
      {ErrorCode::ERR_RESERVED,
       {"read_vmem", "write_vmem", "load_weights", "matmul_bf16", "acc_to_vmem", "transpose"}},
      {ErrorCode::ERR_FIELD,
       {"read_vmem", "write_vmem", "load_weights", "matmul_bf16", "acc_to_vmem", "transpose",
        "vector"}},
      {ErrorCode::ERR_ALIGN, {"read_vmem", "write_vmem"}},
      {ErrorCode::ERR_HOST_RANGE, {"read_vmem", "write_vmem"}},
      {ErrorCode::ERR_ACC_RANGE, {"matmul_bf16", "acc_to_vmem"}},
      {ErrorCode::ERR_VMEM_RANGE,
       {"read_vmem", "write_vmem", "load_weights", "matmul_bf16", "acc_to_vmem", "transpose",
        "vector"}},
      {ErrorCode::ERR_WEIGHT_TYPE, {"int8", "matmul_bf16"}},
      {ErrorCode::ERR_WEIGHT_OVERFLOW, {"load_weights"}},
      {ErrorCode::ERR_NO_WEIGHTS, {"matmul_bf16"}},
  };
  for (const auto& [code, ops] : codes) {
    for (const char* op : ops) k.push_back("fault." + std::string(error_name(code)) + "." + op);
  }
  return k;
}

}  // namespace tpu::verif

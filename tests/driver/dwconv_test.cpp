// SPDX-License-Identifier: Apache-2.0
// dwconv (docs/isa.md "Depthwise configuration"): every field at its bits, decode on chips with
// and without the depthwise unit, every static fault in its order, the assembler and
// disassembler (round trips), ProgramBuilder's named errors, the golden model against an
// independent host depthwise convolution on random data (bit-exact), and the cycle formula.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "assembler.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"
#include "program.h"

namespace tpu {
namespace {

ChipParams dw_chip(uint32_t n, uint32_t width) {
  ChipParams p = ChipParams::with_n(n);
  p.dw_width = width;
  return p;
}

InstrBytes only_field(BitField f) {
  InstrBytes w{};
  w[0] = kDwOpcode;
  set_field(w, f, f.max());
  return w;
}

// A valid 3x3, pad-1, stride-1 dwconv of an 8x8 image at UB row 0, weights at row 100.
DwConv base() {
  DwConv d;
  d.kernel_h = d.kernel_w = 3;
  d.width = d.height = 8;
  d.ub_stride = 8;
  d.w_addr = 100;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  d.acc_addr = 10;
  return d;
}

TEST(DwConvIsa, FieldsAreTheIsaTable) {
  const auto& f = instruction_fields(Opcode::DwConv);
  ASSERT_EQ(f.size(), 16u);
  // Every bit 8..127 belongs to exactly one field: no reserved bits.
  std::vector<int> owner(128, 0);
  for (const FieldInfo& fi : f) {
    for (unsigned b = fi.bits.lo; b <= fi.bits.hi(); ++b) ++owner[b];
  }
  for (unsigned b = 8; b < 128; ++b) EXPECT_EQ(owner[b], 1) << "bit " << b;
  EXPECT_EQ(opcode_byte(DwConv{}), 0x11);
  EXPECT_EQ(mnemonic(Opcode::DwConv), "dwconv");
  EXPECT_TRUE(is_valid_opcode(0x11));
  EXPECT_TRUE(is_dw_opcode(0x11));
  EXPECT_FALSE(is_ici_opcode(0x11));
  EXPECT_FALSE(is_valid_opcode(0x12));
}

TEST(DwConvIsa, EveryFieldEncodesAtItsBits) {
  using namespace field;
  auto one = [](auto set) {
    DwConv d{};
    d.kernel_h = d.kernel_w = 0;
    d.width = d.height = 0;
    set(d);
    return encode(d);
  };
  EXPECT_EQ(one([](DwConv& d) { d.accumulate = true; }), only_field(kDwAcc));
  EXPECT_EQ(one([](DwConv& d) { d.a_unsigned = true; }), only_field(kDwAUnsigned));
  EXPECT_EQ(one([](DwConv& d) { d.w_unsigned = true; }), only_field(kDwWUnsigned));
  EXPECT_EQ(one([](DwConv& d) { d.stride2 = true; }), only_field(kDwStride2));
  EXPECT_EQ(one([](DwConv& d) { d.kernel_h = 3; }), only_field(kDwKernelH));
  EXPECT_EQ(one([](DwConv& d) { d.kernel_w = 3; }), only_field(kDwKernelW));
  EXPECT_EQ(one([](DwConv& d) { d.ub_addr = 0xFFFFFF; }), only_field(kDwUbAddr));
  EXPECT_EQ(one([](DwConv& d) { d.acc_addr = 0xFFFF; }), only_field(kDwAccAddr));
  EXPECT_EQ(one([](DwConv& d) { d.width = 0xFFF; }), only_field(kDwWidth));
  EXPECT_EQ(one([](DwConv& d) { d.height = 0xFFF; }), only_field(kDwHeight));
  EXPECT_EQ(one([](DwConv& d) { d.w_addr = 0xFFFFFF; }), only_field(kDwWAddr));
  EXPECT_EQ(one([](DwConv& d) { d.pad_top = 3; }), only_field(kDwPadTop));
  EXPECT_EQ(one([](DwConv& d) { d.pad_left = 3; }), only_field(kDwPadLeft));
  EXPECT_EQ(one([](DwConv& d) { d.pad_bottom = 3; }), only_field(kDwPadBottom));
  EXPECT_EQ(one([](DwConv& d) { d.pad_right = 3; }), only_field(kDwPadRight));
  EXPECT_EQ(one([](DwConv& d) { d.ub_stride = 0xFFFF; }), only_field(kDwUbStride));
  DwConv d;
  d.kernel_h = 4;
  EXPECT_THROW(encode(d), std::invalid_argument);
  d = DwConv{};
  d.width = 4096;
  EXPECT_THROW(encode(d), std::invalid_argument);
  d = DwConv{};
  d.pad_left = 4;
  EXPECT_THROW(encode(d), std::invalid_argument);
}

TEST(DwConvIsa, RandomWordsRoundTrip) {
  std::mt19937_64 rng(33);
  const ChipParams chip = dw_chip(16, 4);
  for (int i = 0; i < 2000; ++i) {
    InstrBytes w{};
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    w[0] = kDwOpcode;
    const DecodeResult d = decode(w);  // no reserved bits: every word decodes
    ASSERT_TRUE(d.ok()) << d.why;
    ASSERT_TRUE(std::holds_alternative<DwConv>(d.instr));
    EXPECT_EQ(encode(d.instr), w);
    EXPECT_TRUE(decode(w, chip).ok());
    // The disassembly assembles to the same word.
    const auto prog = assemble(disassemble(d.instr));
    ASSERT_EQ(prog.size(), 1u);
    EXPECT_EQ(encode(prog[0]), w) << disassemble(d.instr);
  }
}

TEST(DwConvIsa, OpcodeFaultsWithoutTheUnit) {
  InstrBytes w = encode(base());
  for (const ChipParams& p :
       {ChipParams::with_n(16), ChipParams::training(16), ChipParams::pod(16, 2)}) {
    const DecodeResult d = decode(w, p);
    EXPECT_EQ(d.error, ErrorCode::ERR_OPCODE);
    EXPECT_NE(d.why.find("DwWidth = 0"), std::string::npos) << d.why;
    EXPECT_EQ(check(base(), p), ErrorCode::ERR_OPCODE);
    // Before any other check: a dwconv that would fault ERR_FIELD is still ERR_OPCODE.
    DwConv bad = base();
    bad.width = 0;
    EXPECT_EQ(check(bad, p), ErrorCode::ERR_OPCODE);
    EXPECT_EQ(check(RawInstruction{w}, p), ErrorCode::ERR_OPCODE);
  }
  ChipParams train = ChipParams::training(16);
  train.dw_width = 2;
  EXPECT_TRUE(decode(w, train).ok());
  EXPECT_EQ(check(base(), train), ErrorCode::ERR_NONE);
}

TEST(DwConvIsa, StaticFaultsInOrder) {
  const ChipParams p = dw_chip(16, 4);  // UbRows 8192, AccRows 2048
  std::string why;
  EXPECT_EQ(check(base(), p, &why), ErrorCode::ERR_NONE) << why;
  auto expect = [&](DwConv d, ErrorCode code, const char* text) {
    std::string w;
    EXPECT_EQ(check(d, p, &w), code) << w;
    EXPECT_NE(w.find(text), std::string::npos) << w;
    EXPECT_EQ(check(RawInstruction{encode(d)}, p), code);
  };
  DwConv d = base();
  d.width = 0;
  expect(d, ErrorCode::ERR_FIELD, "width = 0");
  d = base();
  d.height = 0;
  d.ub_addr = 0xFFFFFF;  // also out of range: ERR_FIELD (3) wins over ERR_UB_RANGE (4)
  expect(d, ErrorCode::ERR_FIELD, "height = 0");
  d = base();
  d.kernel_h = 0;
  expect(d, ErrorCode::ERR_FIELD, "kernel_h = 0");
  d = base();
  d.kernel_w = 0;
  expect(d, ErrorCode::ERR_FIELD, "kernel_w = 0");
  d = base();
  d.kernel_h = 2;
  d.pad_bottom = 2;
  expect(d, ErrorCode::ERR_FIELD, "pad_bottom = 2");
  d = base();
  d.kernel_w = 1;
  d.pad_left = 0;
  d.pad_right = 1;
  expect(d, ErrorCode::ERR_FIELD, "pad_right = 1");
  d = base();
  d.height = 1;
  d.pad_top = d.pad_bottom = 0;  // Hp = 1 < kh = 3
  expect(d, ErrorCode::ERR_FIELD, "smaller than the 3 x 3 kernel");
  d = base();
  d.ub_addr = 8192 - 63;  // last input row 8192 - 63 + 7*8 + 7 = 8192
  expect(d, ErrorCode::ERR_UB_RANGE, "last input row");
  d.ub_addr = 8192 - 64;
  EXPECT_EQ(check(d, p), ErrorCode::ERR_NONE);
  d = base();
  d.w_addr = 8192 - 9;  // zero-point row 8192
  expect(d, ErrorCode::ERR_UB_RANGE, "zero-point row");
  d.w_addr = 8192 - 10;
  EXPECT_EQ(check(d, p), ErrorCode::ERR_NONE);
  d = base();
  d.acc_addr = 2048 - 63;  // 64 output pixels
  expect(d, ErrorCode::ERR_ACC_RANGE, "ACC rows");
  d.acc_addr = 2048 - 64;
  EXPECT_EQ(check(d, p), ErrorCode::ERR_NONE);
  d.ub_addr = 0xFFFFFF;  // ERR_UB_RANGE (4) before ERR_ACC_RANGE (5)
  d.acc_addr = 0xFFFF;
  EXPECT_EQ(check(d, p), ErrorCode::ERR_UB_RANGE);
}

TEST(DwConvIsa, OutputShape) {
  DwConv d = base();
  EXPECT_EQ(d.output_height(), 8u);
  EXPECT_EQ(d.output_width(), 8u);
  d.stride2 = true;  // (10 - 3)/2 + 1 = 4
  EXPECT_EQ(d.output_height(), 4u);
  EXPECT_EQ(d.output_width(), 4u);
  d.pad_bottom = d.pad_right = 0;  // (9 - 3)/2 + 1 = 4
  EXPECT_EQ(d.output_width(), 4u);
  d.kernel_w = 1;
  d.pad_left = 0;  // (8 - 1)/2 + 1 = 4
  EXPECT_EQ(d.output_width(), 4u);
}

TEST(DwConvIsa, Assembler) {
  const auto p = assemble(
      "dwconv ub=5 acc=7 width=9 height=4 w=300 kh=3 kw=2 ub_stride=12 pad_top=2 pad_left=1 "
      "pad_bottom=1 pad_right=0 acc a_unsigned w_unsigned stride2\n"
      "dwconv\n");
  ASSERT_EQ(p.size(), 2u);
  DwConv want;
  want.ub_addr = 5;
  want.acc_addr = 7;
  want.width = 9;
  want.height = 4;
  want.w_addr = 300;
  want.kernel_h = 3;
  want.kernel_w = 2;
  want.ub_stride = 12;
  want.pad_top = 2;
  want.pad_left = 1;
  want.pad_bottom = 1;
  want.accumulate = want.a_unsigned = want.w_unsigned = want.stride2 = true;
  EXPECT_EQ(std::get<DwConv>(p[0]), want);
  EXPECT_EQ(std::get<DwConv>(p[1]), DwConv{});  // defaults: 1x1 of a 1x1 image
  EXPECT_EQ(disassemble(want),
            "dwconv       ub=5 acc=7 width=9 height=4 w=300 kh=3 kw=2 ub_stride=12 pad_top=2 "
            "pad_left=1 pad_bottom=1 pad_right=0 acc a_unsigned w_unsigned stride2");
  EXPECT_THROW(assemble("dwconv kh=4\n"), AsmError);
}

TEST(DwConvProgram, NamedErrors) {
  auto expect_error = [](const std::function<void()>& f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no error, expected " << text;
    } catch (const ProgramError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  ProgramBuilder none(ChipParams::with_n(16));
  expect_error([&] { none.dwconv(base()); }, "DwWidth = 0");
  ProgramBuilder b(dw_chip(16, 4));
  b.dwconv(base());
  DwConv d = base();
  d.kernel_h = 0;
  expect_error([&] { b.dwconv(d); }, "kernel_h = 0");
  d = base();
  d.width = 0;
  expect_error([&] { b.dwconv(d); }, "width = 0");
  d = base();
  d.pad_top = 3;
  expect_error([&] { b.dwconv(d); }, "pad_top = 3");
  d = base();
  d.kernel_w = 2;
  d.pad_right = 2;
  expect_error([&] { b.dwconv(d); }, "pad_right = 2");
  d = base();
  d.width = 1;
  d.pad_left = d.pad_right = 0;
  expect_error([&] { b.dwconv(d); }, "smaller than the 3 x 3 kernel");
  d = base();
  d.ub_addr = 8150;
  expect_error([&] { b.dwconv(d); }, "last input row");
  d = base();
  d.w_addr = 8183;
  expect_error([&] { b.dwconv(d); }, "zero-point row");
  d = base();
  d.acc_addr = 2000;
  expect_error([&] { b.dwconv(d); }, "acc_addr + Ho*Wo - 1 = 2063");
  b.append(base());
  b.append(RawInstruction{encode(base())});
  EXPECT_EQ(b.finish().size(), 4u);
}

// ---- the golden model against an independent host depthwise convolution

struct Case {
  uint32_t n, h, w, kh, kw, s, pt, pl, pb, pr;
  bool a_unsigned, w_unsigned, accumulate;
};

int32_t as_value(uint8_t b, bool is_unsigned) {
  return is_unsigned ? static_cast<int32_t>(b) : static_cast<int32_t>(static_cast<int8_t>(b));
}

// The plain convolution: builds the padded image (value = the zero point, so x - z = 0 there)
// channel by channel, then slides the window with a stride over it.
std::vector<int32_t> host_dwconv(const Case& c, const std::vector<uint8_t>& img,
                                 const std::vector<uint8_t>& taps, const std::vector<uint8_t>& zp,
                                 uint32_t* ho_out, uint32_t* wo_out) {
  const uint32_t hp = c.h + c.pt + c.pb, wp = c.w + c.pl + c.pr;
  const uint32_t ho = (hp - c.kh) / c.s + 1, wo = (wp - c.kw) / c.s + 1;
  *ho_out = ho;
  *wo_out = wo;
  std::vector<int32_t> out(size_t{ho} * wo * c.n);
  for (uint32_t ch = 0; ch < c.n; ++ch) {
    const int32_t z = as_value(zp[ch], c.a_unsigned);
    std::vector<int32_t> padded(size_t{hp} * wp, 0);  // x - z, 0 in the padding
    for (uint32_t y = 0; y < c.h; ++y)
      for (uint32_t x = 0; x < c.w; ++x)
        padded[(y + c.pt) * wp + x + c.pl] =
            as_value(img[(size_t{y} * c.w + x) * c.n + ch], c.a_unsigned) - z;
    for (uint32_t oy = 0; oy < ho; ++oy)
      for (uint32_t ox = 0; ox < wo; ++ox) {
        int64_t acc = 0;
        for (uint32_t ky = 0; ky < c.kh; ++ky)
          for (uint32_t kx = 0; kx < c.kw; ++kx)
            acc += int64_t{padded[(oy * c.s + ky) * wp + ox * c.s + kx]} *
                   as_value(taps[(size_t{ky} * c.kw + kx) * c.n + ch], c.w_unsigned);
        out[(size_t{oy} * wo + ox) * c.n + ch] = static_cast<int32_t>(acc);
      }
  }
  return out;
}

void run_case(const Case& c, std::mt19937_64& rng) {
  ChipParams p = dw_chip(c.n, 1);
  RegionMemory mem;
  mem.add_region(0, 4096);
  GoldenModel g(mem, p);
  auto bytes = [&](size_t count) {
    std::vector<uint8_t> v(count);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    return v;
  };
  const std::vector<uint8_t> img = bytes(size_t{c.h} * c.w * c.n);
  const std::vector<uint8_t> taps = bytes(size_t{c.kh} * c.kw * c.n);
  const std::vector<uint8_t> zp = bytes(c.n);
  // The image with a line stride of w + 3 (the gap holds garbage), the weights after it.
  const uint32_t stride = c.w + 3, ub = 7;
  for (uint32_t y = 0; y < c.h; ++y) {
    g.set_ub_rows(ub + y * stride, std::vector<uint8_t>(img.begin() + y * c.w * c.n,
                                                        img.begin() + (y + 1) * c.w * c.n));
    g.set_ub_rows(ub + y * stride + c.w, bytes(3 * c.n));
  }
  const uint32_t w_addr = ub + c.h * stride + 5;
  g.set_ub_rows(w_addr, taps);
  g.set_ub_rows(w_addr + c.kh * c.kw, zp);
  uint32_t ho = 0, wo = 0;
  const std::vector<int32_t> want = host_dwconv(c, img, taps, zp, &ho, &wo);
  const uint32_t acc_addr = 3;
  std::vector<int32_t> before(size_t{ho} * wo * c.n);
  for (size_t r = 0; r < size_t{ho} * wo; ++r)
    for (uint32_t ch = 0; ch < c.n; ++ch) {
      const auto v = static_cast<int32_t>(rng());
      before[r * c.n + ch] = v;
      g.set_acc(acc_addr + static_cast<uint32_t>(r), ch, v);
    }
  DwConv d;
  d.accumulate = c.accumulate;
  d.a_unsigned = c.a_unsigned;
  d.w_unsigned = c.w_unsigned;
  d.stride2 = c.s == 2;
  d.kernel_h = static_cast<uint8_t>(c.kh);
  d.kernel_w = static_cast<uint8_t>(c.kw);
  d.ub_addr = ub;
  d.acc_addr = acc_addr;
  d.width = static_cast<uint16_t>(c.w);
  d.height = static_cast<uint16_t>(c.h);
  d.w_addr = w_addr;
  d.pad_top = static_cast<uint8_t>(c.pt);
  d.pad_left = static_cast<uint8_t>(c.pl);
  d.pad_bottom = static_cast<uint8_t>(c.pb);
  d.pad_right = static_cast<uint8_t>(c.pr);
  d.ub_stride = static_cast<uint16_t>(stride);
  ASSERT_EQ(d.output_height(), ho);
  ASSERT_EQ(d.output_width(), wo);
  std::string why;
  ASSERT_EQ(g.execute(d, &why), ErrorCode::ERR_NONE) << why;
  for (size_t r = 0; r < size_t{ho} * wo; ++r) {
    const std::vector<int32_t> row = g.acc_row(acc_addr + static_cast<uint32_t>(r));
    for (uint32_t ch = 0; ch < c.n; ++ch) {
      const uint32_t add = c.accumulate ? static_cast<uint32_t>(before[r * c.n + ch]) : 0u;
      const auto expect = static_cast<int32_t>(add + static_cast<uint32_t>(want[r * c.n + ch]));
      ASSERT_EQ(row[ch], expect) << "pixel " << r << " channel " << ch;
    }
  }
  // The row after the output is untouched.
  EXPECT_EQ(g.acc_row(acc_addr + ho * wo), std::vector<int32_t>(c.n, 0));
}

TEST(DwConvGolden, MatchesAHostConvolutionOnRandomData) {
  std::mt19937_64 rng(0xD33);
  int cases = 0;
  for (int i = 0; i < 400; ++i) {
    Case c{};
    c.n = (rng() & 1) ? 4u : 16u;
    c.kh = 1 + static_cast<uint32_t>(rng() % 3);
    c.kw = 1 + static_cast<uint32_t>(rng() % 3);
    c.s = 1 + static_cast<uint32_t>(rng() % 2);
    c.pt = static_cast<uint32_t>(rng() % c.kh);
    c.pb = static_cast<uint32_t>(rng() % c.kh);
    c.pl = static_cast<uint32_t>(rng() % c.kw);
    c.pr = static_cast<uint32_t>(rng() % c.kw);
    c.h = 1 + static_cast<uint32_t>(rng() % 9);
    c.w = 1 + static_cast<uint32_t>(rng() % 9);
    if (c.h + c.pt + c.pb < c.kh || c.w + c.pl + c.pr < c.kw) continue;
    c.a_unsigned = rng() & 1;
    c.w_unsigned = rng() & 1;
    c.accumulate = rng() & 1;
    SCOPED_TRACE(::testing::Message() << "case " << i << ": n " << c.n << " " << c.h << "x" << c.w
                                      << " k " << c.kh << "x" << c.kw << " s " << c.s);
    run_case(c, rng);
    ++cases;
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(cases, 300);
}

TEST(DwConvGolden, FaultsWriteNothing) {
  RegionMemory mem;
  mem.add_region(0, 4096);
  GoldenModel none(mem, ChipParams::with_n(4));
  EXPECT_EQ(none.execute(base()), ErrorCode::ERR_OPCODE);
  GoldenModel g(mem, dw_chip(4, 2));
  DwConv d = base();
  d.acc_addr = 2047;
  EXPECT_EQ(g.execute(d), ErrorCode::ERR_ACC_RANGE);
  EXPECT_EQ(g.acc_row(2047), std::vector<int32_t>(4, 0));
}

TEST(DwConvCycles, TheIsaFormula) {
  DwConv d = base();  // 8x8, 3x3, pad 1, stride 1: Ho = Wo = 8, Wc = 10
  // P = 1: 8 groups of R = 3 lines; P = 4: 2 groups of R = 6; P = 3: 3, 3, 2 lines.
  EXPECT_EQ(d.unit_cycles(1), 10u + 8 * 3 * 10);
  EXPECT_EQ(d.unit_cycles(4), 10u + 2 * 6 * 10);
  EXPECT_EQ(d.unit_cycles(3), 10u + (5 + 5 + 4) * 10);
  EXPECT_EQ(d.unit_cycles(8), 10u + 10 * 10);
  // Reads: 10 weight rows, then only positions inside the image.
  EXPECT_EQ(d.ub_reads(8), 10u + 8 * 8);
  EXPECT_EQ(d.ub_reads(4), 10u + (5 + 5) * 8);
  d.stride2 = true;  // Ho = Wo = 4, Wc = 9; P = 4: R = 9
  EXPECT_EQ(d.unit_cycles(4), 10u + 9 * 9);
  EXPECT_EQ(d.unit_cycles(2), 10u + 2 * 5 * 9);
}

}  // namespace
}  // namespace tpu

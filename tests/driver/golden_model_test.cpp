// SPDX-License-Identifier: Apache-2.0
// The golden model against small hand-computed programs, every error code, and the weight
// FIFO rules. Programs are written in assembly and fetched from host memory, as on the chip.
#include "golden_model.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <memory>

#include "assembler.h"

namespace tpu {
namespace {

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>(v >> (8 * b)));
}

// A quantization slot image (12 * N bytes): bias[N], mult[N], misc[N] as int32 LE.
std::vector<uint8_t> slot_image(uint32_t n, const std::function<int32_t(uint32_t)>& bias,
                                const std::function<int32_t(uint32_t)>& mult,
                                const std::function<uint32_t(uint32_t)>& misc) {
  std::vector<uint8_t> out;
  for (uint32_t c = 0; c < n; ++c) put_le32(out, static_cast<uint32_t>(bias(c)));
  for (uint32_t c = 0; c < n; ++c) put_le32(out, static_cast<uint32_t>(mult(c)));
  for (uint32_t c = 0; c < n; ++c) put_le32(out, misc(c));
  return out;
}

uint32_t misc_word(unsigned shift, int zp = 0, int lo = 0, int hi = 0) {
  return (shift & 63) | (uint32_t(zp) & 0xFF) << 8 | (uint32_t(lo) & 0xFF) << 16 |
         (uint32_t(hi) & 0xFF) << 24;
}

// A row-major N x N tile with w[k][n] = f(k, n).
std::vector<uint8_t> tile(uint32_t n, const std::function<int(uint32_t, uint32_t)>& f) {
  std::vector<uint8_t> t(n * n);
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t c = 0; c < n; ++c) t[k * n + c] = static_cast<uint8_t>(f(k, c));
  }
  return t;
}

std::vector<uint8_t> row(uint32_t n, const std::function<int(uint32_t)>& f) {
  std::vector<uint8_t> r(n);
  for (uint32_t c = 0; c < n; ++c) r[c] = static_cast<uint8_t>(f(c));
  return r;
}

class Golden : public ::testing::Test {
 protected:
  // Host memory map used by every test.
  static constexpr uint32_t kCmd = 0x0000;    // command buffer
  static constexpr uint32_t kIn = 0x1000;     // activations
  static constexpr uint32_t kW = 0x4000;      // weight tiles
  static constexpr uint32_t kParam = 0x8000;  // quantization slots / LUT
  static constexpr uint32_t kOut = 0xC000;    // results
  static constexpr uint32_t kRom = 0x20000;   // read-only region
  static constexpr uint32_t kEnd = 0x10000;   // end of the read-write region

  explicit Golden(ChipParams params = ChipParams{}) {
    mem.add_region(0, kEnd);
    mem.add_region(kRom, 0x1000, RegionMemory::Access::ReadOnly);
    model = std::make_unique<GoldenModel>(mem, params);
  }

  uint32_t n() const { return model->params().N; }

  RunResult run(const std::string& text) {
    std::vector<uint8_t> bytes = encode_program(assemble(text, "test.s"));
    mem.load(kCmd, bytes);
    return model->run(kCmd, static_cast<uint32_t>(bytes.size() / kInstrBytes));
  }

  // Runs `text` and expects it to halt.
  void run_ok(const std::string& text) {
    RunResult r = run(text);
    ASSERT_TRUE(r.done()) << r.message;
  }

  void expect_error(const RunResult& r, ErrorCode code, uint32_t pc, uint64_t retired) {
    EXPECT_EQ(r.status, RunStatus::Error);
    EXPECT_EQ(r.error, code) << error_name(r.error) << ": " << r.message;
    EXPECT_EQ(r.err_pc, pc) << r.message;
    EXPECT_EQ(r.retired, retired) << r.message;
    EXPECT_NE(r.message.find(std::string(error_name(code))), std::string::npos) << r.message;
  }

  RegionMemory mem;
  std::unique_ptr<GoldenModel> model;
};

TEST_F(Golden, EndToEndLayer) {
  // Row 0: a = 1..16, row 1: a = -1..-16 (int8).
  std::vector<uint8_t> in = row(16, [](uint32_t k) { return int(k) + 1; });
  std::vector<uint8_t> in1 = row(16, [](uint32_t k) { return -int(k) - 1; });
  in.insert(in.end(), in1.begin(), in1.end());
  mem.load(kIn, in);
  // out[n] = 2 a[n] for n < 15, out[15] = sum_k a[k].
  mem.load(kW, tile(16, [](uint32_t k, uint32_t c) { return c == 15 ? 1 : (k == c ? 2 : 0); }));
  // bias[n] = n, mult = 1, shift 1: y = round_half_away((out + n) / 2).
  mem.load(kParam, slot_image(
                       16, [](uint32_t c) { return int32_t(c); }, [](uint32_t) { return 1; },
                       [](uint32_t) { return misc_word(1); }));
  run_ok(R"(
    read_host    ub=10 rows=2 host=0x1000
    read_host    dest=param addr=12 rows=12 host=0x8000   ; slot 1
    read_weights tiles=1 host=0x4000
    matmul       ub=10 acc=3 inner=2 switch
    activate     acc=3 ub=40 width=2 height=1 slot=1 func=identity
    write_host   ub=40 rows=2 host=0xC000
    halt
  )");
  std::vector<uint8_t> out = mem.dump(kOut, 32);
  for (int c = 0; c < 15; ++c) {
    int pos = 2 * (c + 1) + c;   // row 0: 3c + 2 >= 0: (v + 1) / 2
    int neg = -2 * (c + 1) + c;  // row 1: -c - 2 < 0: -((-v + 1) / 2)
    EXPECT_EQ(static_cast<int8_t>(out[c]), (pos + 1) / 2) << c;
    EXPECT_EQ(static_cast<int8_t>(out[16 + c]), -((-neg + 1) / 2)) << c;
  }
  EXPECT_EQ(static_cast<int8_t>(out[15]), 76);   // (136 + 15) / 2 = 75.5
  EXPECT_EQ(static_cast<int8_t>(out[31]), -61);  // (-136 + 15) / 2 = -60.5
  EXPECT_EQ(model->acc(3, 15), 136);
  EXPECT_EQ(model->acc(4, 15), -136);
  EXPECT_EQ(model->acc(4, 0), -2);
}

TEST_F(Golden, MatmulInt8AndUint8Extremes) {
  model->set_ub_rows(0, row(16, [](uint32_t) { return 0x80; }));  // -128 or 128
  model->set_ub_rows(1, row(16, [](uint32_t) { return 0xFF; }));  // -1 or 255
  model->set_ub_rows(2, row(16, [](uint32_t) { return 0x7F; }));  // 127
  mem.load(kW, tile(16, [](uint32_t, uint32_t) { return 0x80; }));
  mem.load(kW + 256, tile(16, [](uint32_t, uint32_t) { return 0xFF; }));
  run_ok(R"(
    read_weights tiles=2 host=0x4000
    matmul ub=0 acc=0 inner=3 switch                    ; W = -128
    matmul ub=0 acc=3 inner=3 a_unsigned w_unsigned     ; W = 128 (same tile, unsigned)
    matmul ub=0 acc=6 inner=3 switch                    ; W = -1
    matmul ub=0 acc=9 inner=3 a_unsigned w_unsigned     ; W = 255
    matmul ub=0 acc=12 inner=3 a_unsigned               ; W = -1, a unsigned
    halt
  )");
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(model->acc(0, c), 16 * (-128 * -128));
    EXPECT_EQ(model->acc(1, c), 16 * (-1 * -128));
    EXPECT_EQ(model->acc(2, c), 16 * (127 * -128));
    EXPECT_EQ(model->acc(3, c), 16 * (128 * 128));
    EXPECT_EQ(model->acc(4, c), 16 * (255 * 128));
    EXPECT_EQ(model->acc(5, c), 16 * (127 * 128));
    EXPECT_EQ(model->acc(6, c), 16 * (-128 * -1));
    EXPECT_EQ(model->acc(7, c), 16 * (-1 * -1));
    EXPECT_EQ(model->acc(8, c), 16 * (127 * -1));
    EXPECT_EQ(model->acc(9, c), 16 * (128 * 255));
    EXPECT_EQ(model->acc(10, c), 16 * (255 * 255));
    EXPECT_EQ(model->acc(11, c), 16 * (127 * 255));
    EXPECT_EQ(model->acc(12, c), 16 * (128 * -1));
    EXPECT_EQ(model->acc(13, c), 16 * (255 * -1));
  }
}

TEST_F(Golden, AccumulateWrapsAroundAndOverwriteDoesNot) {
  model->set_ub_rows(0, row(16, [](uint32_t) { return 1; }));
  mem.load(kW, tile(16, [](uint32_t, uint32_t) { return 1; }));  // sum = 16
  for (uint32_t c = 0; c < 16; ++c) {
    model->set_acc(0, c, kMax32 - 10);
    model->set_acc(1, c, kMin32 + 3);
    model->set_acc(2, c, 12345);
  }
  model->set_ub_rows(1, row(16, [](uint32_t) { return -1; }));
  run_ok(R"(
    read_weights tiles=1 host=0x4000
    matmul ub=0 acc=0 switch acc
    matmul ub=1 acc=1 acc
    matmul ub=0 acc=2
    halt
  )");
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(model->acc(0, c), kMin32 + 5);   // MAX - 10 + 16 wraps
    EXPECT_EQ(model->acc(1, c), kMax32 - 12);  // MIN + 3 - 16 wraps
    EXPECT_EQ(model->acc(2, c), 16);           // overwritten
  }
}

TEST_F(Golden, TwoDimensionalStridedAddressing) {
  // UB row r holds r in column 0 (read as uint8), so ACC shows which row each step read.
  for (uint32_t r = 0; r < 200; ++r)
    model->set_ub_rows(r, row(16, [&](uint32_t c) { return c == 0 ? int(r) : 0; }));
  mem.load(kW, tile(16, [](uint32_t k, uint32_t c) { return k == 0 && c < 2 ? int(c) + 1 : 0; }));
  run_ok(R"(
    read_weights tiles=1 host=0x4000
    matmul ub=5 acc=10 inner=3 outer=2 inner_stride=2 outer_stride=20 a_unsigned switch
    matmul ub=7 acc=20 inner=4 outer=1 inner_stride=0 a_unsigned
    ; a 3x3 convolution tap (ky=1, kx=2) over a 5-wide image at row 100, stride 1:
    ; ub = base + ky*width + kx, inner = out_width, outer = out_height, outer_stride = width
    matmul ub=107 acc=30 inner=3 outer=3 inner_stride=1 outer_stride=5 a_unsigned
    halt
  )");
  for (uint32_t o = 0; o < 2; ++o) {
    for (uint32_t i = 0; i < 3; ++i) {
      int expect = int(5 + o * 20 + i * 2);
      EXPECT_EQ(model->acc(10 + o * 3 + i, 0), expect) << o << "," << i;
      EXPECT_EQ(model->acc(10 + o * 3 + i, 1), 2 * expect);
      EXPECT_EQ(model->acc(10 + o * 3 + i, 2), 0);
    }
  }
  for (uint32_t r = 20; r < 24; ++r) EXPECT_EQ(model->acc(r, 0), 7);
  for (uint32_t oy = 0; oy < 3; ++oy) {
    for (uint32_t ox = 0; ox < 3; ++ox) {
      EXPECT_EQ(model->acc(30 + oy * 3 + ox, 0), int(100 + (oy + 1) * 5 + ox + 2));
    }
  }
}

TEST_F(Golden, RequantizeTiesGoAwayFromZero) {
  const int32_t acc[] = {5, -5, 3, -3, 1, -1, 7, -7};  // / 2: 2.5 -2.5 1.5 -1.5 .5 -.5 3.5 -3.5
  const int expect[] = {3, -3, 2, -2, 1, -1, 4, -4};
  for (uint32_t c = 0; c < 8; ++c) {
    model->set_acc(0, c, acc[c]);
    model->set_quant(2, c, 0, 1, misc_word(1));
  }
  run_ok("activate acc=0 ub=50 width=1 height=1 slot=2\nhalt");
  for (uint32_t c = 0; c < 8; ++c) EXPECT_EQ(static_cast<int8_t>(model->ub_byte(50, c)), expect[c]);
}

TEST_F(Golden, ReluClampAndLutThroughActivate) {
  std::vector<uint8_t> lut(256);
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i ^ 0x5A);
  mem.load(kParam, lut);
  const int32_t acc[] = {-100, -3, 0, 4, 9, 100, 200, 300};
  for (uint32_t c = 0; c < 8; ++c) {
    model->set_acc(0, c, acc[c]);
    model->set_quant(0, c, 0, 1, misc_word(0, /*zp=*/0, /*lo=*/0, /*hi=*/6));
    model->set_quant(1, c, 0, 1, misc_word(0, /*zp=*/-2));
  }
  run_ok(R"(
    read_host dest=lut addr=0 rows=16 host=0x8000
    activate acc=0 ub=0 width=1 height=1 slot=0 func=relu
    activate acc=0 ub=1 width=1 height=1 slot=0 func=clamp
    activate acc=0 ub=2 width=1 height=1 slot=0 func=lut
    activate acc=0 ub=3 width=1 height=1 slot=0 func=lut out_unsigned
    activate acc=0 ub=4 width=1 height=1 slot=1 func=relu
    activate acc=0 ub=5 width=1 height=1 slot=0 func=clamp out_unsigned
    halt
  )");
  for (int i = 0; i < 256; ++i) ASSERT_EQ(model->lut()[i], lut[i]);
  const int relu[] = {0, 0, 0, 4, 9, 100, 127, 127};
  const int clamp6[] = {0, 0, 0, 4, 6, 6, 6, 6};
  const int relu_zp[] = {-2, -2, -2, 2, 7, 98, 127, 127};  // max(sat(acc + zp), zp), zp = -2
  const int sat_s[] = {-100, -3, 0, 4, 9, 100, 127, 127};
  const int sat_u[] = {0, 0, 0, 4, 9, 100, 200, 255};
  for (uint32_t c = 0; c < 8; ++c) {
    EXPECT_EQ(static_cast<int8_t>(model->ub_byte(0, c)), relu[c]) << c;
    EXPECT_EQ(static_cast<int8_t>(model->ub_byte(1, c)), clamp6[c]) << c;
    EXPECT_EQ(model->ub_byte(2, c), lut[sat_s[c] & 0xFF]) << c;
    EXPECT_EQ(model->ub_byte(3, c), lut[sat_u[c]]) << c;
    EXPECT_EQ(static_cast<int8_t>(model->ub_byte(4, c)), relu_zp[c]) << c;
    EXPECT_EQ(model->ub_byte(5, c), clamp6[c]) << c;
  }
}

TEST_F(Golden, MaxPool2x2Stride2) {
  // 4x4 image at ACC 100: column 0 = y*4 + x - 8, column 1 = -(y*4 + x).
  for (uint32_t y = 0; y < 4; ++y) {
    for (uint32_t x = 0; x < 4; ++x) {
      model->set_acc(100 + y * 4 + x, 0, int32_t(y * 4 + x) - 8);
      model->set_acc(100 + y * 4 + x, 1, -int32_t(y * 4 + x));
    }
  }
  for (uint32_t c = 0; c < 16; ++c) model->set_quant(3, c, 0, 1, 0);
  model->set_ub_rows(200, std::vector<uint8_t>(16 * 20, 0xEE));
  run_ok("activate acc=100 ub=200 width=4 height=4 pool_k=2 pool_s=2 ub_stride=10 slot=3\nhalt");
  // Output (oy, ox) at UB 200 + oy*10 + ox.
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(200, 0)), -3);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(201, 0)), -1);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(210, 0)), 5);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(211, 0)), 7);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(200, 1)), 0);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(201, 1)), -2);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(210, 1)), -8);
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(211, 1)), -10);
  EXPECT_EQ(model->ub_byte(202, 0), 0xEE);  // rows between output lines untouched
  EXPECT_EQ(model->ub_byte(209, 0), 0xEE);
}

TEST_F(Golden, MaxPoolComparesInTheOutputType) {
  // 200 beats 100 as uint8; as int8 the byte 200 would be -56 and lose.
  model->set_acc(0, 0, 100);
  model->set_acc(1, 0, 200);
  model->set_acc(0, 1, -5);
  model->set_acc(1, 1, -7);
  for (uint32_t c = 0; c < 16; ++c) model->set_quant(0, c, 0, 1, 0);
  run_ok(R"(
    activate acc=0 ub=0 width=2 height=2 pool_k=2 out_unsigned
    activate acc=0 ub=1 width=2 height=2 pool_k=2
    halt
  )");
  EXPECT_EQ(model->ub_byte(0, 0), 200);
  EXPECT_EQ(model->ub_byte(0, 1), 0);                         // unsigned: -5, -7 saturate to 0
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(1, 0)), 127);  // signed: 200 saturates to 127
  EXPECT_EQ(static_cast<int8_t>(model->ub_byte(1, 1)), 0);    // rows 2, 3 of ACC are 0
}

TEST_F(Golden, PoolWindow3Stride2AndShapeRounding) {
  // 5x5 image, k = 3, s = 2: Ho = Wo = 2; windows start at 0 and 2.
  for (uint32_t i = 0; i < 25; ++i) model->set_acc(i, 0, int32_t((i * 7) % 25) - 12);
  for (uint32_t c = 0; c < 16; ++c) model->set_quant(0, c, 0, 1, 0);
  run_ok("activate acc=0 ub=0 width=5 height=5 pool_k=3 pool_s=2 ub_stride=2\nhalt");
  for (uint32_t oy = 0; oy < 2; ++oy) {
    for (uint32_t ox = 0; ox < 2; ++ox) {
      int best = -1000;
      for (uint32_t dy = 0; dy < 3; ++dy) {
        for (uint32_t dx = 0; dx < 3; ++dx) {
          uint32_t i = (oy * 2 + dy) * 5 + ox * 2 + dx;
          best = std::max(best, int((i * 7) % 25) - 12);
        }
      }
      EXPECT_EQ(static_cast<int8_t>(model->ub_byte(oy * 2 + ox, 0)), best);
    }
  }
}

TEST_F(Golden, PaddedPoolSkipsTapsInThePadding) {
  // 4x3 image (W = 4, H = 3), all values negative so a padding read as 0 would win:
  // k = 3, s = 2, pads top 1, left 2, bottom 2, right 1 (ceil-mode style): Hp = 6, Wp = 7,
  // Ho = (6 - 3)/2 + 1 = 2, Wo = (7 - 3)/2 + 1 = 3.
  const int W = 4, H = 3, k = 3, s = 2, pt = 1, pl = 2;
  auto value = [](int y, int x) { return -1 - ((y * 5 + x * 3) % 7) * 10; };
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) model->set_acc(uint32_t(y * W + x), 0, value(y, x));
  for (uint32_t c = 0; c < 16; ++c) model->set_quant(0, c, 0, 1, 0);
  model->set_ub_rows(0, std::vector<uint8_t>(16 * 8, 0xEE));
  run_ok(
      "activate acc=0 ub=0 width=4 height=3 pool_k=3 pool_s=2 ub_stride=4 slot=0 pad_top=1 "
      "pad_left=2 pad_bottom=2 pad_right=1\nhalt");
  for (int oy = 0; oy < 2; ++oy) {
    for (int ox = 0; ox < 3; ++ox) {
      int best = -1000;  // a direct reading of ONNX MaxPool: the padding is -inf
      for (int y = oy * s - pt; y < oy * s - pt + k; ++y)
        for (int x = ox * s - pl; x < ox * s - pl + k; ++x)
          if (y >= 0 && y < H && x >= 0 && x < W) best = std::max(best, value(y, x));
      EXPECT_EQ(static_cast<int8_t>(model->ub_byte(uint32_t(oy * 4 + ox), 0)), best)
          << oy << "," << ox;
    }
  }
  EXPECT_EQ(model->ub_byte(3, 0), 0xEE);  // Wo = 3: the fourth row of each line is untouched
  EXPECT_EQ(model->ub_byte(7, 0), 0xEE);
}

TEST_F(Golden, PoolPaddingMustBeBelowTheWindow) {
  const RunResult r =
      run("activate acc=0 ub=0 width=4 height=4 pool_k=2 pool_s=2 pad_left=2\nhalt");
  expect_error(r, ErrorCode::ERR_FIELD, 0, 0);
  EXPECT_NE(r.message.find("pad_left = 2"), std::string::npos) << r.message;
}

TEST_F(Golden, ParamMemoryLayout) {
  auto image = slot_image(
      16, [](uint32_t c) { return int32_t(1000 + c); }, [](uint32_t c) { return -int32_t(c); },
      [](uint32_t c) { return 0x01020300u + c; });
  mem.load(kParam, image);
  run_ok("read_host dest=param addr=12 rows=12 host=0x8000\nhalt");  // slot 1
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(model->bias(1, c), int32_t(1000 + c));
    EXPECT_EQ(model->mult(1, c), -int32_t(c));
    EXPECT_EQ(model->misc(1, c), 0x01020300u + c);
    EXPECT_EQ(model->bias(0, c), 0);
    EXPECT_EQ(model->bias(2, c), 0);
  }
  // Rows 4..7 of a slot are mult: reloading only them changes nothing else.
  mem.load(kParam + 0x100, std::vector<uint8_t>(64, 0x11));
  run_ok("read_host dest=param addr=16 rows=4 host=0x8100\nhalt");
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(model->bias(1, c), int32_t(1000 + c));
    EXPECT_EQ(model->mult(1, c), 0x11111111);
    EXPECT_EQ(model->misc(1, c), 0x01020300u + c);
  }
  EXPECT_EQ(model->param_memory().size(), 16u * 12 * 16);
}

TEST_F(Golden, WeightTilesAreUsedInFifoOrder) {
  model->set_ub_rows(0, row(16, [](uint32_t) { return 1; }));
  for (int t = 0; t < 3; ++t) {
    mem.load(kW + 256 * t, tile(16, [&](uint32_t, uint32_t) { return t + 1; }));
  }
  RunResult r = run(R"(
    read_weights tiles=2 host=0x4000
    read_weights tiles=1 host=0x4200
    matmul acc=0 switch       ; tile 0
    matmul acc=1              ; still tile 0
    matmul acc=2 switch       ; tile 1
    matmul acc=3 switch       ; tile 2
    matmul acc=4              ; tile 2
    halt
  )");
  ASSERT_TRUE(r.done()) << r.message;
  EXPECT_EQ(r.retired, 8u);
  const int expect[] = {16, 16, 32, 48, 48};
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(model->acc(i, 0), expect[i]) << i;
  EXPECT_EQ(model->pending_weight_tiles(), 0u);
  EXPECT_TRUE(model->has_active_tile());
  EXPECT_EQ(model->active_tile(), tile(16, [](uint32_t, uint32_t) { return 3; }));
}

TEST_F(Golden, WeightCapacityIsWFifoTilesPlusTwo) {
  EXPECT_EQ(model->weight_capacity(), 6u);
  RunResult r = run("read_weights tiles=6 host=0x4000\nhalt");
  ASSERT_TRUE(r.done()) << r.message;
  EXPECT_EQ(model->pending_weight_tiles(), 6u);
  r = run("read_weights tiles=6 host=0x4000\nread_weights tiles=1 host=0x4000\nhalt");
  expect_error(r, ErrorCode::ERR_WEIGHT_OVERFLOW, 1, 1);
  EXPECT_EQ(model->pending_weight_tiles(), 6u);  // nothing pushed by the faulting one
  r = run(
      "read_weights tiles=6 host=0x4000\nmatmul switch\nread_weights tiles=1 host=0x4000\nhalt");
  ASSERT_TRUE(r.done()) << r.message;
  EXPECT_EQ(model->pending_weight_tiles(), 6u);
  expect_error(run("read_weights tiles=7 host=0x4000\nhalt"), ErrorCode::ERR_WEIGHT_OVERFLOW, 0, 0);
}

TEST_F(Golden, WeightOverflowIsDecidedBeforeAnyTileIsFetched) {
  // Tile 3 of these lies at 0x10000, outside mapped memory.
  expect_error(run("read_weights tiles=7 host=0xFD00\nhalt"), ErrorCode::ERR_WEIGHT_OVERFLOW, 0, 0);
  RunResult r = run("read_weights tiles=6 host=0xFD00\nhalt");
  expect_error(r, ErrorCode::ERR_AXI_READ, 0, 0);
  EXPECT_NE(r.message.find("tile 3 at 0x00010000..0x000100ff"), std::string::npos) << r.message;
  EXPECT_EQ(model->pending_weight_tiles(), 0u);  // not even the tiles that could be read
}

TEST_F(Golden, HaltRetiresAndStops) {
  model->set_ub_rows(0, row(16, [](uint32_t) { return 9; }));
  RunResult r = run("nop\nsync\nhalt\nwrite_host ub=0 rows=1 host=0xC000\n");
  ASSERT_TRUE(r.done());
  EXPECT_EQ(r.retired, 3u);
  EXPECT_EQ(r.error, ErrorCode::ERR_NONE);
  EXPECT_EQ(mem.dump(kOut, 16), std::vector<uint8_t>(16, 0));  // after halt: not executed
}

TEST_F(Golden, MemoriesPersistAcrossRunsButWeightsDoNot) {
  mem.load(kW, tile(16, [](uint32_t, uint32_t) { return 1; }));
  model->set_ub_rows(0, row(16, [](uint32_t) { return 1; }));
  run_ok(R"(
    read_weights tiles=2 host=0x4000
    read_host dest=lut rows=16 host=0x4000
    matmul acc=1 switch
    activate acc=1 ub=2 width=1 height=1
    halt
  )");
  EXPECT_EQ(model->pending_weight_tiles(), 1u);
  EXPECT_TRUE(model->has_active_tile());
  // START empties the weight FIFO and buffers: neither the active tile nor the pending one
  // is visible to the next program.
  expect_error(run("matmul acc=3\nhalt"), ErrorCode::ERR_NO_WEIGHTS, 0, 0);
  expect_error(run("matmul acc=3 switch\nhalt"), ErrorCode::ERR_NO_WEIGHTS, 0, 0);
  EXPECT_FALSE(model->has_active_tile());
  // UB, ACC, PARAM and LUT are kept.
  EXPECT_EQ(model->ub_byte(0, 0), 1);
  EXPECT_EQ(model->acc(1, 0), 16);
  EXPECT_EQ(model->lut()[0], 1);
  EXPECT_EQ(model->ub_byte(2, 0), 0);  // slot 0 is all zero: mult 0
}

TEST_F(Golden, SoftResetEmptiesWeightsOnly) {
  mem.load(kW, tile(16, [](uint32_t, uint32_t) { return 1; }));
  model->set_ub_rows(0, row(16, [](uint32_t) { return 1; }));
  ASSERT_EQ(model->execute(ReadWeights{2, kW}), ErrorCode::ERR_NONE);
  Matmul m;
  m.switch_weights = true;
  ASSERT_EQ(model->execute(m), ErrorCode::ERR_NONE);
  model->set_dma_window(0, 0, 0x1000);
  model->soft_reset();
  EXPECT_FALSE(model->has_active_tile());
  EXPECT_EQ(model->pending_weight_tiles(), 0u);
  EXPECT_EQ(model->acc(0, 0), 16);
  EXPECT_EQ(model->dma_windows()[0].size, 0x1000u);
}

TEST_F(Golden, DmaWindows) {
  model->set_dma_window(0, kCmd, 0x100);
  model->set_dma_window(3, kIn, 0x40);
  mem.load(kIn, std::vector<uint8_t>(0x40, 0x5A));
  run_ok("read_host ub=0 rows=4 host=0x1000\nhalt");  // exactly fills window 3
  EXPECT_EQ(model->ub_byte(3, 15), 0x5A);
  RunResult r = run("nop\nread_host ub=0 rows=5 host=0x1000\nhalt");  // one row too many
  expect_error(r, ErrorCode::ERR_HOST_RANGE, 1, 1);
  EXPECT_NE(r.message.find("0x00001000..0x0000104f are not inside any enabled DMA window"),
            std::string::npos)
      << r.message;
  // Ranges may not straddle two windows, even adjacent ones.
  model->set_dma_window(4, kIn + 0x40, 0x40);
  expect_error(run("write_host ub=0 rows=8 host=0x1000\nhalt"), ErrorCode::ERR_HOST_RANGE, 0, 0);
  // The command buffer must lie inside a window too: checked at START, pc 0, nothing runs.
  std::vector<uint8_t> prog = encode_program(assemble("read_host ub=9 host=0x1000\nhalt"));
  mem.load(0x200, prog);
  model->set_ub_rows(9, std::vector<uint8_t>(16, 0));
  expect_error(model->run(0x200, 2), ErrorCode::ERR_HOST_RANGE, 0, 0);
  EXPECT_EQ(model->ub_byte(9, 0), 0);
  // All windows disabled: anything goes.
  model->set_dma_windows(DmaWindows{});
  ASSERT_TRUE(model->run(0x200, 2).done());
  EXPECT_EQ(model->ub_byte(9, 0), 0x5A);
  EXPECT_THROW(model->set_dma_window(8, 0, 1), std::out_of_range);
}

TEST_F(Golden, CommandBufferWrappingPast4GiB) {
  expect_error(model->run(0xFFFFFFF0, 2), ErrorCode::ERR_HOST_RANGE, 0, 0);
  // Ending exactly at 2^32 is fine; the fetch then fails (nothing is mapped there).
  expect_error(model->run(0xFFFFFFF0, 1), ErrorCode::ERR_AXI_READ, 0, 0);
}

// ---- every error code through run(), with ERR_PC, retired count and no effect

TEST_F(Golden, StaticErrorsStopAtTheFaultingInstruction) {
  struct Case {
    const char* program;  // the fault is always the third instruction (pc 2)
    ErrorCode code;
  };
  const Case cases[] = {
      {"nop\nnop\n.inst 0x9\nhalt", ErrorCode::ERR_OPCODE},
      {"nop\nnop\n.inst 0x80000000000000000000000000000006\nhalt", ErrorCode::ERR_RESERVED},
      {"nop\nnop\nread_host ub=0 rows=0 host=0x1000\nhalt", ErrorCode::ERR_FIELD},
      {"nop\nnop\nread_host dest=3 host=0x1000\nhalt", ErrorCode::ERR_FIELD},
      {"nop\nnop\nactivate width=4 height=4 pool_k=5\nhalt", ErrorCode::ERR_FIELD},
      {"nop\nnop\nwrite_host ub=8192 host=0xC000\nhalt", ErrorCode::ERR_UB_RANGE},
      {"nop\nnop\nmatmul acc=2048 switch\nhalt", ErrorCode::ERR_ACC_RANGE},
      {"nop\nnop\nread_host dest=lut rows=17 host=0x8000\nhalt", ErrorCode::ERR_PARAM_RANGE},
      {"nop\nnop\nread_weights host=0x4008\nhalt", ErrorCode::ERR_ALIGN},
      {"nop\nnop\nwrite_host rows=2 host=0xfffffff0\nhalt", ErrorCode::ERR_HOST_RANGE},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.program);
    expect_error(run(c.program), c.code, 2, 2);
  }
}

TEST_F(Golden, FaultingInstructionsWriteNothing) {
  const std::vector<uint8_t> ub_before = row(16, [](uint32_t c) { return int(c) * 3; });
  model->set_ub_rows(8191, ub_before);
  model->set_ub_rows(0, ub_before);
  mem.load(kW, tile(16, [](uint32_t, uint32_t) { return 1; }));
  // A static fault in a matmul switch must not consume the tile.
  expect_error(run("read_weights tiles=1 host=0x4000\nmatmul acc=2047 inner=2 switch\nhalt"),
               ErrorCode::ERR_ACC_RANGE, 1, 1);
  EXPECT_EQ(model->pending_weight_tiles(), 1u);
  EXPECT_FALSE(model->has_active_tile());
  EXPECT_EQ(model->acc(2047, 0), 0);
  // read_host that overruns UB writes not even its in-range rows.
  expect_error(run("read_host ub=8191 rows=2 host=0x1000\nhalt"), ErrorCode::ERR_UB_RANGE, 0, 0);
  EXPECT_EQ(model->ub_rows(8191, 1), ub_before);
  // activate whose output overruns UB.
  for (uint32_t c = 0; c < 16; ++c) model->set_quant(0, c, 0, 1, 0);
  expect_error(run("activate ub=8191 width=2 height=1\nhalt"), ErrorCode::ERR_UB_RANGE, 0, 0);
  EXPECT_EQ(model->ub_rows(8191, 1), ub_before);
  // A read that host memory rejects lands nothing, even where its bytes were mapped.
  expect_error(run("read_host ub=0 rows=2 host=0xFFF0\nhalt"), ErrorCode::ERR_AXI_READ, 0, 0);
  EXPECT_EQ(model->ub_rows(0, 1), ub_before);
}

TEST_F(Golden, AxiReadError) {
  RunResult r = run("nop\nread_host ub=0 rows=1 host=0x100000\nhalt");
  expect_error(r, ErrorCode::ERR_AXI_READ, 1, 1);
  EXPECT_NE(r.message.find("0x00100000..0x0010000f"), std::string::npos) << r.message;
  expect_error(run("read_weights tiles=1 host=0x30000\nhalt"), ErrorCode::ERR_AXI_READ, 0, 0);
  expect_error(run("read_host dest=param rows=1 host=0x50000\nhalt"), ErrorCode::ERR_AXI_READ, 0,
               0);
}

TEST_F(Golden, AxiWriteErrorWritesNothing) {
  model->set_ub_rows(0, row(16, [](uint32_t) { return 0x77; }));
  model->set_ub_rows(1, row(16, [](uint32_t) { return 0x77; }));
  // Spans the end of RAM at 0x10000: first row mapped, second not.
  expect_error(run("write_host ub=0 rows=2 host=0xFFF0\nhalt"), ErrorCode::ERR_AXI_WRITE, 0, 0);
  EXPECT_EQ(mem.dump(0xFFF0, 16), std::vector<uint8_t>(16, 0));
  // Read-only memory.
  expect_error(run("write_host ub=0 rows=1 host=0x20000\nhalt"), ErrorCode::ERR_AXI_WRITE, 0, 0);
  EXPECT_EQ(mem.dump(kRom, 16), std::vector<uint8_t>(16, 0));
}

TEST_F(Golden, CommandOverrun) {
  RunResult r = run("nop\nsync\nnop");
  expect_error(r, ErrorCode::ERR_CMD_OVERRUN, 3, 3);
  r = model->run(kCmd, 0);
  expect_error(r, ErrorCode::ERR_CMD_OVERRUN, 0, 0);
}

TEST_F(Golden, InstructionFetchErrorIsAReadError) {
  std::vector<uint8_t> nops(32, 0);
  mem.load(kEnd - 32, nops);
  RunResult r = model->run(kEnd - 32, 3);  // the third instruction is past mapped memory
  expect_error(r, ErrorCode::ERR_AXI_READ, 2, 2);
  EXPECT_THROW(model->run(0x8, 1), std::invalid_argument);  // CMD_ADDR must be aligned
}

TEST_F(Golden, NoWeights) {
  RunResult r = run("nop\nmatmul\nhalt");  // no tile was ever active
  expect_error(r, ErrorCode::ERR_NO_WEIGHTS, 1, 1);
  r = run("matmul switch\nhalt");  // FIFO empty
  expect_error(r, ErrorCode::ERR_NO_WEIGHTS, 0, 0);
  mem.load(kW, tile(16, [](uint32_t, uint32_t) { return 1; }));
  r = run("read_weights host=0x4000\nmatmul switch\nmatmul switch\nhalt");  // only one tile
  expect_error(r, ErrorCode::ERR_NO_WEIGHTS, 2, 2);
}

TEST_F(Golden, ExecuteReportsWhy) {
  std::string why;
  Matmul m;
  m.switch_weights = true;
  EXPECT_EQ(model->execute(m, &why), ErrorCode::ERR_NO_WEIGHTS);
  EXPECT_NE(why.find("no weight tile"), std::string::npos) << why;
  WriteHost w;
  w.host_addr = 0x1001;
  EXPECT_EQ(model->execute(w, &why), ErrorCode::ERR_ALIGN);
  EXPECT_EQ(why, "write_host: host_addr 0x00001001 is not 16-byte aligned (expected low 4 bits 0)");
  EXPECT_EQ(model->execute(Nop{}, &why), ErrorCode::ERR_NONE);
  EXPECT_TRUE(why.empty());
}

TEST_F(Golden, ExecuteRunsRawWordsThatDecode) {
  model->set_ub_rows(0, row(16, [](uint32_t) { return 0x42; }));
  WriteHost w;
  w.host_addr = kOut;
  EXPECT_EQ(model->execute(RawInstruction{encode(w)}), ErrorCode::ERR_NONE);
  EXPECT_EQ(mem.dump(kOut, 16), std::vector<uint8_t>(16, 0x42));
  InstrBytes bad = encode(w);
  bad[1] = 0x01;  // write_host's dest bits are reserved
  std::string why;
  EXPECT_EQ(model->execute(RawInstruction{bad}, &why), ErrorCode::ERR_RESERVED);
  EXPECT_EQ(why, "write_host: reserved bits 15:8 must be zero, but bit 8 is set");
}

TEST_F(Golden, AccessorsRangeCheck) {
  EXPECT_THROW(model->ub_byte(8192, 0), std::out_of_range);
  EXPECT_THROW(model->ub_byte(0, 16), std::out_of_range);
  EXPECT_THROW(model->acc(2048, 0), std::out_of_range);
  EXPECT_THROW(model->bias(16, 0), std::out_of_range);
  EXPECT_THROW(model->set_ub_rows(8191, std::vector<uint8_t>(32)), std::out_of_range);
  EXPECT_THROW(model->set_ub_rows(0, std::vector<uint8_t>(15)), std::invalid_argument);
  EXPECT_THROW(model->active_tile(), std::logic_error);
  RegionMemory m;
  ChipParams bad;
  bad.N = 3;
  EXPECT_THROW({ GoldenModel g(m, bad); }, std::invalid_argument);
}

// ---- a small chip: everything scales with N

class GoldenN4 : public Golden {
 protected:
  static ChipParams small() {
    ChipParams p = ChipParams::with_n(4);
    p.ub_rows = 64;
    p.acc_rows = 32;
    p.qp_slots = 2;
    p.wfifo_tiles = 1;
    return p;
  }
  GoldenN4() : Golden(small()) {}
};

TEST_F(GoldenN4, SmallLayerEndToEnd) {
  mem.load(kIn, {1, 2, 3, 4, /**/ 0xFF, 0, 0, 0x80});  // rows (1 2 3 4) and (-1 0 0 -128)
  // W[k][n]: column n sums a[k] * (k + n).
  mem.load(kW, tile(4, [](uint32_t k, uint32_t c) { return int(k + c); }));
  // Slot 1 (rows 12..23, 4 bytes each): bias = 0, 1, 2, 3; mult = 1; shift 0; clamp to [-5, 50].
  mem.load(kParam, slot_image(
                       4, [](uint32_t c) { return int32_t(c); }, [](uint32_t) { return 1; },
                       [](uint32_t) { return misc_word(0, 0, -5, 50); }));
  RunResult r = run(R"(
    read_host ub=60 rows=2 host=0x1000
    read_host dest=param addr=12 rows=12 host=0x8000
    read_weights tiles=1 host=0x4000
    matmul ub=60 acc=30 inner=2 switch
    activate acc=30 ub=62 width=2 height=1 slot=1 func=clamp
    write_host ub=62 rows=2 host=0xC000
    halt
  )");
  ASSERT_TRUE(r.done()) << r.message;
  // Row 0: sum_k (k+1)(k+n) = 20 + 10n -> 20 30 40 50, + bias n -> 20 31 42 53 -> clamp 50.
  // Row 1: -1*(0+n) + -128*(3+n) = -384 - 129n, + n -> clamp -5.
  EXPECT_EQ(model->acc(30, 0), 20);
  EXPECT_EQ(model->acc(30, 3), 50);
  EXPECT_EQ(model->acc(31, 1), -384 - 129);
  EXPECT_EQ(mem.dump(kOut, 8), (std::vector<uint8_t>{20, 31, 42, 50, 0xFB, 0xFB, 0xFB, 0xFB}));
  EXPECT_EQ(model->bias(1, 3), 3);
  EXPECT_EQ(model->misc(1, 2), misc_word(0, 0, -5, 50));
}

TEST_F(GoldenN4, LimitsFollowTheParameters) {
  EXPECT_EQ(model->weight_capacity(), 3u);
  expect_error(run("read_weights tiles=4 host=0x4000\nhalt"), ErrorCode::ERR_WEIGHT_OVERFLOW, 0, 0);
  expect_error(run("read_host ub=63 rows=2 host=0x1000\nhalt"), ErrorCode::ERR_UB_RANGE, 0, 0);
  expect_error(run("read_host dest=param addr=23 rows=2 host=0x1000\nhalt"),
               ErrorCode::ERR_PARAM_RANGE, 0, 0);
  expect_error(run("read_host dest=lut addr=63 rows=2 host=0x1000\nhalt"),
               ErrorCode::ERR_PARAM_RANGE, 0, 0);
  expect_error(run("activate width=1 height=1 slot=2\nhalt"), ErrorCode::ERR_PARAM_RANGE, 0, 0);
  expect_error(run("matmul acc=31 inner=2 switch\nhalt"), ErrorCode::ERR_ACC_RANGE, 0, 0);
  run_ok("read_host dest=lut addr=0 rows=64 host=0x1000\nhalt");
}

// ---- RegionMemory

TEST(RegionMemory, MappedAdjacentReadOnlyAndUnmapped) {
  RegionMemory m;
  m.add_region(0x1000, 0x100);
  m.add_region(0x1100, 0x100, RegionMemory::Access::ReadOnly);
  EXPECT_THROW(m.add_region(0x10F0, 0x20), std::invalid_argument);      // overlaps
  EXPECT_THROW(m.add_region(0x0FF0, 0x20), std::invalid_argument);      // overlaps
  EXPECT_THROW(m.add_region(0xFFFFFFF0, 0x20), std::invalid_argument);  // past 2^32
  EXPECT_THROW(m.add_region(0x5000, 0), std::invalid_argument);

  std::vector<uint8_t> data(0x20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i + 1);
  m.load(0x10F0, data);  // spans both regions (load ignores read-only)
  std::vector<uint8_t> back(0x20);
  EXPECT_TRUE(m.read(0x10F0, back.size(), back.data()));
  EXPECT_EQ(back, data);
  // A write that touches read-only memory writes nothing, even in the writable part.
  std::vector<uint8_t> zeros(0x20, 0);
  EXPECT_FALSE(m.write(0x10F0, zeros.size(), zeros.data()));
  EXPECT_EQ(m.dump(0x10F0, 0x20), data);
  EXPECT_TRUE(m.write(0x10F0, 0x10, zeros.data()));
  EXPECT_EQ(m.dump(0x10F0, 0x10), std::vector<uint8_t>(0x10, 0));
  // Unmapped bytes.
  EXPECT_FALSE(m.read(0x0FFF, 2, back.data()));
  EXPECT_FALSE(m.read(0x11FF, 2, back.data()));
  EXPECT_FALSE(m.read(uint64_t{1} << 32, 1, back.data()));
  EXPECT_TRUE(m.read(0x2000, 0, back.data()));  // empty access
  try {
    m.dump(0x11F0, 0x20);
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()),
              "RegionMemory::dump: address 0x1200 is not mapped (dumping 32 bytes at 0x11f0)");
  }
}

}  // namespace
}  // namespace tpu

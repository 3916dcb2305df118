// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the whole core: raw instructions are placed in host memory, the
// doorbell is rung, and afterwards every byte of host memory, the status and the error code
// are compared with the golden ISA model (driver/golden_model) running the same program on
// the same memory image. Random operands, shapes and flags; run with and without AXI
// backpressure.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "chip.h"
#include "golden_model.h"
#include "host_memory.h"
#include "isa.h"

namespace {

constexpr uint32_t N = TPU_SIM_N;

// Host memory layout shared by every scenario: one region per purpose.
constexpr uint32_t kCmd = 0x0001'0000, kCmdSize = 0x1'0000;
constexpr uint32_t kIn = 0x0010'0000, kInSize = 0x10'0000;
constexpr uint32_t kOut = 0x0040'0000, kOutSize = 0x10'0000;

struct Image {
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> chunks;
  std::vector<tpu::Instruction> program;
  uint32_t in_used = 0;

  // Appends bytes to the input region (16-byte aligned) and returns their address.
  uint32_t put(const std::vector<uint8_t>& bytes) {
    uint32_t addr = kIn + in_used;
    chunks.push_back({addr, bytes});
    in_used += (uint32_t(bytes.size()) + 15) & ~15u;
    return addr;
  }
};

struct Outcome {
  bool done = false;
  uint32_t err_code = 0;
  uint32_t err_pc = 0;
  std::vector<uint8_t> out;
};

std::vector<uint8_t> program_bytes(const std::vector<tpu::Instruction>& program) {
  std::vector<uint8_t> bytes;
  for (const auto& i : program) {
    auto w = tpu::encode(i);
    bytes.insert(bytes.end(), w.begin(), w.end());
  }
  return bytes;
}

// The golden model lives as long as the chip (one per test process): UB, ACC and parameters
// persist across runs on both, so every program starts from the same state on both.
Outcome run_golden(const Image& img) {
  static tpu::RegionMemory* mem = [] {
    auto* m = new tpu::RegionMemory;
    m->add_region(kCmd, kCmdSize);
    m->add_region(kIn, kInSize);
    m->add_region(kOut, kOutSize);
    return m;
  }();
  static tpu::GoldenModel* model = new tpu::GoldenModel(*mem, tpu::ChipParams::with_n(N));
  mem->load(kOut, std::vector<uint8_t>(0x4000, 0));
  for (const auto& [addr, bytes] : img.chunks) mem->load(addr, bytes);
  mem->load(kCmd, program_bytes(img.program));
  auto r = model->run(kCmd, uint32_t(img.program.size()));
  Outcome o;
  o.done = r.done();
  o.err_code = uint32_t(r.error);
  o.err_pc = r.done() ? 0 : r.err_pc;
  o.out = mem->dump(kOut, 0x4000);
  return o;
}

class ChipFixture : public ::testing::Test {
 protected:
  static tpu::sim::Chip& chip() {
    static tpu::sim::Chip* c = [] {
      auto* ch = new tpu::sim::Chip(tpu::sim::ChipConfig{});
      ch->add_region(kCmd, kCmdSize, "cmd");
      ch->add_region(kIn, kInSize, "in");
      ch->add_region(kOut, kOutSize, "out");
      ch->reset();
      return ch;
    }();
    return *c;
  }

  Outcome run_chip(const Image& img, double backpressure = 0.0, uint64_t seed = 1) {
    auto& c = chip();
    c.set_backpressure(backpressure, seed);
    // Fresh memory contents for every program.
    std::vector<uint8_t> zeros(0x4000, 0);
    c.write_mem(kOut, zeros);
    for (const auto& [addr, bytes] : img.chunks) c.write_mem(addr, bytes);
    c.write_mem(kCmd, program_bytes(img.program));
    c.start(kCmd, uint32_t(img.program.size()));
    auto r = c.run(2'000'000);
    EXPECT_NE(r.reason, tpu::sim::StopReason::kCycleLimit) << "the chip hung";
    Outcome o;
    o.done = r.reason == tpu::sim::StopReason::kDone;
    o.err_code = r.err_code;
    o.err_pc = o.done ? 0 : r.err_pc;
    o.out = c.read_mem(kOut, 0x4000);
    last_counters = c.counters();
    return o;
  }

  static std::string listing(const Image& img) {
    std::string text;
    for (size_t i = 0; i < img.program.size(); ++i) {
      text += "  " + std::to_string(i) + ": " + tpu::disassemble(img.program[i]) + "\n";
    }
    return text;
  }

  // Compares chip and golden model; returns whether the program ran to its halt (so tests of
  // valid programs can insist on it: two identical faults would also compare equal).
  bool expect_same(const Image& img, double backpressure = 0.0, uint64_t seed = 1) {
    Outcome g = run_golden(img);
    Outcome r = run_chip(img, backpressure, seed);
    SCOPED_TRACE("program:\n" + listing(img));
    EXPECT_EQ(r.done, g.done) << "chip err " << r.err_code << " at " << r.err_pc << ", golden err "
                              << g.err_code << " at " << g.err_pc;
    EXPECT_EQ(r.err_code, g.err_code);
    EXPECT_EQ(r.err_pc, g.err_pc);
    if (r.done != g.done || r.err_code != g.err_code || r.err_pc != g.err_pc) return false;
    for (size_t i = 0; i < g.out.size(); ++i) {
      if (r.out[i] != g.out[i]) {
        ADD_FAILURE() << "host byte 0x" << std::hex << (kOut + i) << std::dec << " (row " << i / N
                      << ", column " << i % N << "): chip " << int(r.out[i]) << ", golden "
                      << int(g.out[i]);
        return false;
      }
    }
    return g.done;
  }

  tpu::sim::Counters last_counters;
};

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  std::uniform_int_distribution<int> d(0, 255);
  for (auto& b : v) b = uint8_t(d(rng));
  return v;
}

// A quantization slot: bias, mult, misc arrays of N int32 each.
std::vector<uint8_t> random_slot(std::mt19937& rng, bool out_unsigned) {
  std::vector<uint8_t> s(12 * N);
  auto put32 = [&](size_t word, uint32_t v) {
    for (int b = 0; b < 4; ++b) s[4 * word + b] = uint8_t(v >> (8 * b));
  };
  std::uniform_int_distribution<int32_t> bias(-40000, 40000);
  std::uniform_int_distribution<int32_t> mult(1, 1 << 30);
  std::uniform_int_distribution<int> shift(20, 40), byte(0, 255);
  for (uint32_t c = 0; c < N; ++c) {
    put32(c, uint32_t(bias(rng)));
    put32(N + c, uint32_t(mult(rng)));
    uint32_t zp = out_unsigned ? uint32_t(byte(rng)) & 0x3f : uint32_t(byte(rng) % 16);
    uint32_t lo = out_unsigned ? 10 : 0xf0, hi = 100;
    put32(2 * N + c, uint32_t(shift(rng)) | zp << 8 | lo << 16 | hi << 24);
  }
  return s;
}

// One dense layer: y = act(requant(x W + b)) for M rows, K = kt*N inputs, one output tile.
Image dense_layer(std::mt19937& rng, uint32_t m, uint32_t kt, tpu::ActFunc func, bool a_uns,
                  bool w_uns, bool out_uns) {
  Image img;
  const uint32_t x = img.put(random_bytes(rng, size_t(m) * N * kt));
  const uint32_t w = img.put(random_bytes(rng, size_t(N) * N * kt));
  const uint32_t q = img.put(random_slot(rng, out_uns));
  const uint32_t lut = img.put(random_bytes(rng, 256));
  using namespace tpu;
  img.program.push_back(ReadHost{HostDest::Ub, 0, m * kt, x});  // kt column blocks of m rows
  img.program.push_back(ReadWeights{kt, w});
  img.program.push_back(ReadHost{HostDest::Param, 12 * 3, 12, q});
  img.program.push_back(ReadHost{HostDest::Lut, 0, 256 / N, lut});
  for (uint32_t t = 0; t < kt; ++t) {
    Matmul mm;
    mm.accumulate = t > 0;
    mm.a_unsigned = a_uns;
    mm.w_unsigned = w_uns;
    mm.switch_weights = true;
    mm.ub_addr = t * m;
    mm.acc_addr = 5;
    mm.inner = uint16_t(m);
    img.program.push_back(mm);
  }
  Activate act;
  act.func = func;
  act.out_unsigned = out_uns;
  act.acc_addr = 5;
  act.ub_addr = 1000;
  act.width = uint16_t(m);
  act.height = 1;
  act.slot = 3;
  img.program.push_back(act);
  img.program.push_back(WriteHost{1000, m, kOut});
  img.program.push_back(Halt{});
  return img;
}

// Random valid programs that mix every instruction over small shared UB / ACC windows, so that
// instructions in different units depend on each other in every way (RAW, WAR, WAW through
// UB, ACC, parameters and host memory). Nothing in a valid program may fault; the chip's
// hazard tracking must make the concurrent units produce exactly the sequential result.
Image random_program(std::mt19937& rng, uint32_t length) {
  using namespace tpu;
  const ChipParams p = ChipParams::with_n(N);
  auto pick = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  Image img;
  const uint32_t data = img.put(random_bytes(rng, 64 * 1024));
  std::vector<uint8_t> slots;
  for (int s = 0; s < 4; ++s) {
    auto q = random_slot(rng, s % 2);
    slots.insert(slots.end(), q.begin(), q.end());
  }
  const uint32_t quant = img.put(slots);
  const uint32_t ub_window = 96, acc_window = 64;  // small: lots of overlap
  uint32_t credit = 0;
  bool active = false;
  // Host data: any 16-byte aligned place inside `data`; results go to kOut and may be read back.
  auto host_data = [&](uint32_t bytes) { return data + 16 * pick(0, (64 * 1024 - bytes) / 16); };
  auto host_out = [&](uint32_t bytes) { return kOut + 16 * pick(0, (0x4000 - bytes) / 16); };
  img.program.push_back(ReadHost{HostDest::Param, 0, 48, quant});
  for (uint32_t i = 0; i < length; ++i) {
    switch (pick(0, 9)) {
      case 0:
      case 1: {
        const uint32_t rows = pick(1, 24);
        img.program.push_back(ReadHost{HostDest::Ub, pick(0, ub_window - rows), rows,
                                       pick(0, 3) ? host_data(rows * N) : host_out(rows * N)});
        break;
      }
      case 2: {
        const uint32_t room = p.wfifo_tiles + 2 - credit;
        if (room == 0) break;
        const uint32_t tiles = pick(1, std::min(room, 3u));
        img.program.push_back(ReadWeights{tiles, host_data(tiles * N * N)});
        credit += tiles;
        break;
      }
      case 3:
      case 4:
      case 5: {
        Matmul mm;
        mm.switch_weights = credit > 0 && (!active || pick(0, 1));
        if (!mm.switch_weights && !active) break;
        if (mm.switch_weights) {
          --credit;
          active = true;
        }
        mm.accumulate = pick(0, 1);
        mm.a_unsigned = pick(0, 1);
        mm.w_unsigned = pick(0, 1);
        mm.inner = uint16_t(pick(1, 8));
        mm.outer = uint16_t(pick(1, 3));
        mm.inner_stride = uint8_t(pick(0, 2));
        mm.outer_stride = pick(0, 10);
        const uint32_t span = (mm.outer - 1u) * mm.outer_stride + (mm.inner - 1u) * mm.inner_stride;
        if (span >= ub_window || uint32_t(mm.inner) * mm.outer > acc_window) break;
        mm.ub_addr = pick(0, ub_window - 1 - span);
        mm.acc_addr = uint16_t(pick(0, acc_window - uint32_t(mm.inner) * mm.outer));
        img.program.push_back(mm);
        break;
      }
      case 6:
      case 7: {
        Activate a;
        a.func = ActFunc(pick(0, 3));
        a.out_unsigned = pick(0, 1);
        a.slot = uint8_t(pick(0, 3));
        a.pool_k = uint8_t(pick(1, 2));
        a.pool_s = uint8_t(pick(1, 2));
        a.width = uint16_t(pick(a.pool_k, 6));
        a.height = uint16_t(pick(a.pool_k, 4));
        const uint32_t ho = (a.height - a.pool_k) / a.pool_s + 1u,
                       wo = (a.width - a.pool_k) / a.pool_s + 1u;
        a.ub_stride = pick(wo, wo + 4);
        const uint32_t span = (ho - 1) * a.ub_stride + wo;
        a.acc_addr = uint16_t(pick(0, acc_window - uint32_t(a.width) * a.height));
        a.ub_addr = pick(0, ub_window - span);
        img.program.push_back(a);
        break;
      }
      case 8: {
        const uint32_t rows = pick(1, 24);
        img.program.push_back(WriteHost{pick(0, ub_window - rows), rows, host_out(rows * N)});
        break;
      }
      default:
        if (pick(0, 1))
          img.program.push_back(ReadHost{HostDest::Lut, 0, 256 / N, host_data(256)});
        else if (pick(0, 1))
          img.program.push_back(Sync{});
        else
          img.program.push_back(Nop{});
    }
  }
  // Make the end state visible: UB window and a requantized copy of the ACC window.
  for (uint32_t r = 0; r < acc_window; r += 8) {
    Activate a;
    a.acc_addr = uint16_t(r);
    a.ub_addr = 200 + r;
    a.width = 8;
    a.height = 1;
    a.slot = 0;
    img.program.push_back(a);
  }
  img.program.push_back(WriteHost{0, ub_window, kOut + 0x2000});
  img.program.push_back(WriteHost{200, acc_window, kOut + 0x2000 + ub_window * N});
  img.program.push_back(Halt{});
  return img;
}

TEST_F(ChipFixture, RandomProgramsMatchGolden) {
  std::mt19937 rng(21);
  for (int i = 0; i < 300; ++i) {
    auto img = random_program(rng, 30);
    SCOPED_TRACE("random program " + std::to_string(i) + " (seed 21)");
    EXPECT_TRUE(expect_same(img, (i % 3 == 2) ? 0.3 : 0.0, 1000 + i)) << "a valid program faulted";
    if (HasFailure()) return;
  }
}

TEST_F(ChipFixture, HaltOnly) {
  Image img;
  img.program = {tpu::Nop{}, tpu::Sync{}, tpu::Halt{}};
  EXPECT_TRUE(expect_same(img));
}

TEST_F(ChipFixture, RandomDenseLayers) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> coin(0, 1), funcs(0, 3), rows(1, 3 * N), kts(1, 3);
  for (int i = 0; i < 12; ++i) {
    auto img = dense_layer(rng, rows(rng), kts(rng), tpu::ActFunc(funcs(rng)), coin(rng), coin(rng),
                           coin(rng));
    SCOPED_TRACE("program " + std::to_string(i));
    EXPECT_TRUE(expect_same(img));
  }
}

TEST_F(ChipFixture, RandomDenseLayersUnderBackpressure) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> coin(0, 1), funcs(0, 3), rows(1, 2 * N), kts(1, 3);
  for (int i = 0; i < 6; ++i) {
    auto img = dense_layer(rng, rows(rng), kts(rng), tpu::ActFunc(funcs(rng)), coin(rng), coin(rng),
                           coin(rng));
    SCOPED_TRACE("program " + std::to_string(i));
    EXPECT_TRUE(expect_same(img, 0.4, 100 + i));
  }
}

// A 3x3 convolution (stride 1, no padding) over an 8x8 image of N channels with the 2-D
// strided matmul pattern, accumulating over the 9 kernel positions, then ReLU and 2x2 max
// pooling.
TEST_F(ChipFixture, ConvolutionWithPooling) {
  std::mt19937 rng(13);
  using namespace tpu;
  const uint32_t H = 8, W = 8, K = 3, Ho = H - K + 1, Wo = W - K + 1;
  Image img;
  const uint32_t x = img.put(random_bytes(rng, size_t(H) * W * N));
  const uint32_t w = img.put(random_bytes(rng, size_t(N) * N * K * K));
  const uint32_t q = img.put(random_slot(rng, false));
  img.program.push_back(ReadHost{HostDest::Ub, 0, H * W, x});
  img.program.push_back(ReadHost{HostDest::Param, 0, 12, q});
  for (uint32_t ky = 0; ky < K; ++ky) {
    // One kernel row of tiles at a time: at most WFifoTiles + 2 tiles may wait.
    img.program.push_back(ReadWeights{K, w + ky * K * N * N});
    for (uint32_t kx = 0; kx < K; ++kx) {
      Matmul mm;
      mm.accumulate = ky + kx > 0;
      mm.switch_weights = true;
      mm.ub_addr = ky * W + kx;
      mm.acc_addr = 0;
      mm.inner = uint16_t(Wo);
      mm.outer = uint16_t(Ho);
      mm.inner_stride = 1;
      mm.outer_stride = W;
      img.program.push_back(mm);
    }
  }
  Activate act;
  act.func = ActFunc::Relu;
  act.acc_addr = 0;
  act.ub_addr = 200;
  act.width = uint16_t(Wo);
  act.height = uint16_t(Ho);
  act.pool_k = 2;
  act.pool_s = 2;
  act.ub_stride = Wo / 2;
  img.program.push_back(act);
  img.program.push_back(WriteHost{200, (Ho / 2) * (Wo / 2), kOut});
  img.program.push_back(Halt{});
  EXPECT_TRUE(expect_same(img));
  EXPECT_TRUE(expect_same(img, 0.5, 7));
}

// Static faults stop the run at the right instruction with nothing written.
TEST_F(ChipFixture, StaticErrorsMatchGolden) {
  using namespace tpu;
  std::mt19937 rng(14);
  auto base = dense_layer(rng, 4, 1, ActFunc::Relu, false, false, false);
  auto with = [&](size_t pos, Instruction bad) {
    Image img = base;
    img.program.insert(img.program.begin() + long(pos), bad);
    return img;
  };
  RawInstruction illegal;
  illegal.bytes[0] = 0x2a;
  RawInstruction reserved = RawInstruction{encode(Halt{})};
  reserved.bytes[15] = 1;
  expect_same(with(2, illegal));
  expect_same(with(3, reserved));
  expect_same(with(1, ReadHost{HostDest::Ub, 0, 0, kIn}));  // ERR_FIELD
  expect_same(with(1, ReadHost{HostDest::Ub, ChipParams::with_n(N).ub_rows - 1, 2, kIn}));
  Matmul acc_range;
  acc_range.acc_addr = uint16_t(ChipParams::with_n(N).acc_rows - 1);
  acc_range.inner = 2;
  acc_range.switch_weights = true;
  expect_same(with(4, acc_range));
  expect_same(with(1, ReadHost{HostDest::Param, 12 * 16, 1, kIn}));  // PARAM range
  expect_same(with(1, ReadHost{HostDest::Ub, 0, 1, kIn + 8}));       // ALIGN
  expect_same(with(1, ReadHost{HostDest::Ub, 0, 2, 0xFFFF'FFF0u}));  // HOST range
  Matmul no_weights;
  no_weights.switch_weights = false;
  Image nw;
  nw.program = {no_weights, Halt{}};
  expect_same(nw);
  Image overflow;
  overflow.program = {ReadWeights{ChipParams::with_n(N).wfifo_tiles + 3, kIn}, Halt{}};
  expect_same(overflow);
  Image overrun;
  overrun.program = {Nop{}, Nop{}};
  expect_same(overrun);
}

// A DMA to unmapped host memory answers DECERR: ERR_AXI_READ / ERR_AXI_WRITE.
TEST_F(ChipFixture, AxiErrorsMatchGolden) {
  using namespace tpu;
  Image rd;
  rd.program = {ReadHost{HostDest::Ub, 0, 1, 0x0800'0000}, Halt{}};
  expect_same(rd);
  Image wr;
  wr.program = {WriteHost{0, 1, 0x0800'0000}, Halt{}};
  expect_same(wr);
}

// Back-to-back matmuls with loaded weights leave no bubble: rows fed = cycles busy.
TEST_F(ChipFixture, BackToBackMatmulsKeepTheArrayBusy) {
  std::mt19937 rng(15);
  using namespace tpu;
  Image img;
  const uint32_t x = img.put(random_bytes(rng, size_t(64) * N));
  const uint32_t w = img.put(random_bytes(rng, size_t(N) * N * 4));
  img.program.push_back(ReadHost{HostDest::Ub, 0, 64, x});
  img.program.push_back(ReadWeights{4, w});
  for (int t = 0; t < 4; ++t) {
    Matmul mm;
    mm.switch_weights = true;
    mm.ub_addr = 0;
    mm.acc_addr = uint16_t(64 * t);
    mm.inner = 64;
    img.program.push_back(mm);
  }
  img.program.push_back(Halt{});
  EXPECT_TRUE(expect_same(img));
  EXPECT_EQ(last_counters.mxu_busy, 4u * 64u);
  EXPECT_EQ(last_counters.mxu_macs, 4ull * 64 * N * N);
}

}  // namespace

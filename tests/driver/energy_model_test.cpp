// SPDX-License-Identifier: Apache-2.0
// driver/energy.h: action counts of single instructions (by hand, and max-pool taps against a
// brute-force walk of the windows), the energy table (built-in, parse errors, SRAM
// interpolation) and energy_of recomputed from the counts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "energy.h"

namespace {

using namespace tpu;

std::string error_of(const std::string& json) {
  try {
    EnergyTable::parse(json, "t.json");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

// Taps of the windows inside the image, walked one by one as isa.md's activate loop does.
uint64_t brute_taps(const Activate& a) {
  uint64_t taps = 0;
  for (uint64_t oy = 0; oy < a.output_height(); ++oy)
    for (uint64_t ox = 0; ox < a.output_width(); ++ox)
      for (int dy = 0; dy < a.pool_k; ++dy)
        for (int dx = 0; dx < a.pool_k; ++dx) {
          const int64_t y = int64_t(oy * a.pool_s) - a.pad_top + dy;
          const int64_t x = int64_t(ox * a.pool_s) - a.pad_left + dx;
          taps += y >= 0 && y < a.height && x >= 0 && x < a.width;
        }
  return taps;
}

TEST(EnergyCounts, PooledActivateReadsEveryTapInsideTheImage) {
  const ChipParams chip = ChipParams::with_n(8);
  std::mt19937 rng(3);
  for (int t = 0; t < 2000; ++t) {
    Activate a;
    a.width = uint16_t(1 + rng() % 20);
    a.height = uint16_t(1 + rng() % 20);
    a.pool_k = uint8_t(1 + rng() % 4);
    a.pool_s = uint8_t(1 + rng() % 3);
    a.pad_top = uint8_t(rng() % a.pool_k);
    a.pad_left = uint8_t(rng() % a.pool_k);
    a.pad_bottom = uint8_t(rng() % a.pool_k);
    a.pad_right = uint8_t(rng() % a.pool_k);
    if (a.pool_k > a.padded_width() || a.pool_k > a.padded_height()) continue;
    const ActionCounts c = count_actions(a, chip);
    const uint64_t taps = brute_taps(a);
    ASSERT_EQ(c.requant, taps * 8) << t;
    ASSERT_EQ(c.acc_read, taps * 8 * 4) << t;
    ASSERT_EQ(c.ub_write, a.output_height() * a.output_width() * 8) << t;
  }
}

TEST(EnergyCounts, TrainingInstructionsByHand) {
  const ChipParams chip = ChipParams::training(4);
  ReadVmem rv;
  rv.bf16 = true;
  rv.rows = 10;
  ActionCounts c = count_actions(rv, chip);
  EXPECT_EQ(c.host_read, 16u + 10 * 8);  // fetch + 10 bf16 rows of 4 lanes
  EXPECT_EQ(c.vmem_write, 10u * 16);
  LoadWeights lw;
  lw.tiles = 3;
  lw.rows = 2;
  c = count_actions(lw, chip);
  EXPECT_EQ(c.vmem_read, 3u * 2 * 16);
  EXPECT_EQ(c.weight_fifo, 2u * 3 * 16 * 2);
  MatmulBf16 mb;
  mb.inner = 5;
  mb.outer = 2;
  mb.accumulate = true;
  c = count_actions(mb, chip);
  EXPECT_EQ(c.mac_bf16, 10u * 16);
  EXPECT_EQ(c.acc_read, 10u * 16);
  EXPECT_EQ(c.acc_write, 10u * 16);
  Transpose tr;
  tr.blocks = 2;
  c = count_actions(tr, chip);
  EXPECT_EQ(c.vmem_read, 2u * 4 * 16);
  EXPECT_EQ(c.vmem_write, 2u * 4 * 16);
  Vector v;  // fmul, B on A's pattern: two reads and one write per element row
  v.func = uint8_t(VecFunc::FMul);
  v.inner = 3;
  v.outer = 2;
  c = count_actions(v, chip);
  EXPECT_EQ(c.vector_fp_mul, 6u * 4);
  EXPECT_EQ(c.vmem_read, 2u * 6 * 16);
  EXPECT_EQ(c.vmem_write, 6u * 16);
  v.func = uint8_t(VecFunc::RSum);  // row reduction: B seeds each line, one row written per line
  c = count_actions(v, chip);
  EXPECT_EQ(c.vector_fp_op, 6u * 4);
  EXPECT_EQ(c.vmem_read, (6u + 2) * 16);
  EXPECT_EQ(c.vmem_write, 2u * 16);
  v.func = uint8_t(VecFunc::LSum);  // lane tree: N - 1 adds per row, no B
  v.bmode = BMode::RowA;
  c = count_actions(v, chip);
  EXPECT_EQ(c.vector_fp_op, 6u * 3);
  EXPECT_EQ(c.vmem_read, 6u * 16);
  v.func = uint8_t(VecFunc::Align);  // a move: two A rows per element row, no arithmetic
  v.bmode = BMode::Imm;
  v.b = 1;
  c = count_actions(v, chip);
  EXPECT_EQ(c.vmem_read, 2u * 6 * 16);
  EXPECT_EQ(c.vector_fp_op + c.vector_int_op + c.vector_fp_mul, 0u);
  v.func = uint8_t(VecFunc::Xor);
  v.b = 7;
  c = count_actions(v, chip);
  EXPECT_EQ(c.vector_int_op, 6u * 4);
  EXPECT_EQ(c.vmem_read, 6u * 16);  // immediate B
}

TEST(EnergyTable, BuiltInTableAndInterpolation) {
  const EnergyTable& t = EnergyTable::horowitz_45nm();
  EXPECT_EQ(t.name, "horowitz_45nm");
  EXPECT_EQ(t.pj.at("mac_int8"), 0.3);
  EXPECT_DOUBLE_EQ(t.sram_pj_per_byte(32768), 20.0 / 8);
  EXPECT_DOUBLE_EQ(t.sram_pj_per_byte(1), 10.0 / 8);         // clamped below
  EXPECT_DOUBLE_EQ(t.sram_pj_per_byte(1 << 30), 100.0 / 8);  // and above
  // Log-log: halfway (in log size) between 32 KB and 1 MB is sqrt(20 * 100).
  EXPECT_NEAR(t.sram_pj_per_byte(std::sqrt(32768.0 * 1048576.0)), std::sqrt(2000.0) / 8, 1e-9);
  double last = 0;
  for (double s = 1024; s < 4e6; s *= 1.5) {
    EXPECT_GE(t.sram_pj_per_byte(s), last);
    last = t.sram_pj_per_byte(s);
  }
}

TEST(EnergyTable, BadTablesNameTheKey) {
  const std::string ok_pj =
      R"("pj": {"mac_int8": 1, "mac_bf16": 1, "requant": 1, "vector_fp_mul": 1,
         "vector_fp_op": 1, "vector_int_op": 1, "host_byte": 1})";
  const std::string sram = R"("sram_pj_per_64bit": [[1024, 5], [4096, 9]])";
  EXPECT_EQ(error_of("{\"clock_mhz\": 1, " + ok_pj + ", " + sram + "}"), "no error");
  EXPECT_NE(error_of("{nope").find("t.json: not JSON"), std::string::npos);
  EXPECT_NE(error_of("{" + ok_pj + ", " + sram + "}").find("missing key \"clock_mhz\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"clock_mhz": 1, "pj": {"mac_int8": -1}, )" + sram + "}")
                .find("\"mac_int8\" is -1 (expected a finite number >= 0)"),
            std::string::npos);
  std::string extra = ok_pj;
  extra.insert(extra.size() - 1, ", \"mac_int4\": 1");
  EXPECT_NE(error_of("{\"clock_mhz\": 1, " + extra + ", " + sram + "}")
                .find("unknown action \"mac_int4\""),
            std::string::npos);
  EXPECT_NE(
      error_of("{\"clock_mhz\": 1, " + ok_pj + R"(, "sram_pj_per_64bit": [[4096, 9], [1024, 5]]})")
          .find("sram_pj_per_64bit[1]: sizes must be ascending"),
      std::string::npos);
  EXPECT_NE(error_of("{\"clock_mhz\": 1, " + ok_pj + R"(, "sram_pj_per_64bit": [[4096]]})")
                .find("sram_pj_per_64bit[0] is [4096] (expected [bytes, pJ])"),
            std::string::npos);
}

TEST(Energy, ComponentsAreCountsTimesTheTable) {
  const ChipParams chip = ChipParams::training(16);
  ActionCounts a;
  a.mac_int8 = 1000;
  a.mac_bf16 = 10;
  a.requant = 7;
  a.vector_fp_mul = 3;
  a.vector_fp_op = 5;
  a.vector_int_op = 11;
  a.ub_read = 64;
  a.ub_write = 32;
  a.acc_read = 128;
  a.acc_write = 256;
  a.vmem_read = 512;
  a.vmem_write = 1024;
  a.weight_fifo = 48;
  a.param = 16;
  a.host_read = 100;
  a.host_write = 60;
  const EnergyTable& t = EnergyTable::horowitz_45nm();
  const Energy e = energy_of(a, chip, t);
  const MemorySizes m = memory_sizes(chip);
  EXPECT_EQ(m.ub, 8192.0 * 16);
  EXPECT_EQ(m.vmem, double{ChipParams::kTrainingVmemRows} * 64);
  double want = 1000 * 0.3 + 10 * 2.0 + 7 * 3.3 + 3 * 3.7 + 5 * 0.9 + 11 * 0.1 +
                96 * t.sram_pj_per_byte(m.ub) + 384 * t.sram_pj_per_byte(m.acc) +
                1536 * t.sram_pj_per_byte(m.vmem) + 48 * t.sram_pj_per_byte(m.weight_fifo) +
                16 * t.sram_pj_per_byte(m.param) + 160 * 243.75;
  EXPECT_NEAR(e.total_pj(), want, 1e-9 * want);
  EXPECT_NEAR(e.tops_per_watt(a), 2.0 * 1010 / want, 1e-12);
  ASSERT_EQ(e.components.size(), 10u);
  EXPECT_EQ(e.components[0].first, "mac_int8");
  EXPECT_EQ(e.components.back().first, "host");
}

}  // namespace

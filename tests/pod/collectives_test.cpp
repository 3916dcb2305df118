// SPDX-License-Identifier: Apache-2.0
// Collectives (driver/collectives.h) on the pod model against the host references: ring
// all-reduce P = 2..8, the 2-D torus algorithms, fp32 (bit-exact, the documented chain) and
// int32, reduce-scatter and all-gather on rings and tori (corner values), sizes that are not
// multiples of N*P (and smaller than P rows), and the error paths.
#include "collectives.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <random>

#include "fp.h"

namespace tpu {
namespace {

constexpr uint32_t kN = 16;
constexpr uint32_t kBase = 32;  // buffers do not start at row 0

// Chip r's input: `elements` values then zero padding to whole rows. fp32 values of mixed
// magnitude and sign (so that the order of the sum matters), a few specials.
std::vector<std::vector<uint32_t>> make_inputs(uint32_t chips, uint64_t elements, CollectiveDtype t,
                                               uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-20, 20);
  const uint64_t rows = (elements + kN - 1) / kN;
  std::vector<std::vector<uint32_t>> in(chips, std::vector<uint32_t>(rows * kN, 0));
  for (auto& v : in) {
    for (uint64_t e = 0; e < elements; ++e) {
      v[e] = t == CollectiveDtype::Int32 ? static_cast<uint32_t>(rng())
                                         : fp::bits_of(std::ldexp(mant(rng), ex(rng)));
    }
    if (t == CollectiveDtype::Fp32 && elements > 3) {
      v[0] = 0x80000000;  // -0 everywhere: the sum stays -0
      v[1] = 0x00000003;  // subnormals read as zero
    }
  }
  return in;
}

PodResult run_collective(PodModel& pod, CollectiveKind kind, uint32_t rows, CollectiveDtype t,
                         const std::vector<std::vector<uint32_t>>& in) {
  std::vector<std::vector<Instruction>> progs;
  for (uint32_t r = 0; r < pod.chips(); ++r) {
    pod.chip(r).set_vmem_rows(kBase, in[r]);
    switch (kind) {
      case CollectiveKind::AllReduce:
        progs.push_back(all_reduce_program(pod.topology(), pod.params(), r, kBase, rows, t));
        break;
      case CollectiveKind::ReduceScatter:
        progs.push_back(reduce_scatter_program(pod.topology(), pod.params(), r, kBase, rows, t));
        break;
      case CollectiveKind::AllGather:
        progs.push_back(all_gather_program(pod.topology(), pod.params(), r, kBase, rows));
        break;
    }
  }
  return pod.run(progs);
}

struct Case {
  PodTopology topo;
  uint64_t elements;
};

std::vector<Case> all_reduce_cases() {
  std::vector<Case> c;
  for (uint32_t p = 2; p <= 8; ++p) {
    for (uint64_t e :
         {uint64_t{1}, uint64_t{kN} * p - 3, uint64_t{1000}, uint64_t{kN} * p * 7 + 5}) {
      c.push_back({PodTopology::ring(p), e});
    }
  }
  for (auto [x, y] :
       {std::pair{2u, 2u}, {2u, 3u}, {3u, 2u}, {2u, 4u}, {4u, 2u}, {1u, 4u}, {3u, 1u}}) {
    for (uint64_t e : {uint64_t{5}, uint64_t{777}, uint64_t{kN} * x * y * 9 + 1}) {
      c.push_back({PodTopology::torus(x, y), e});
    }
  }
  return c;
}

TEST(Collectives, AllReduceMatchesTheHostChainBitExactOnEveryChip) {
  uint32_t seed = 0;
  for (const Case& c : all_reduce_cases()) {
    for (CollectiveDtype t : {CollectiveDtype::Fp32, CollectiveDtype::Int32}) {
      const uint32_t p = c.topo.chips();
      const auto rows = static_cast<uint32_t>((c.elements + kN - 1) / kN);
      PodModel pod(c.topo, ChipParams::pod(kN, c.topo.links_needed()), LinkTiming{16, 8});
      const auto in = make_inputs(p, c.elements, t, ++seed);
      const PodResult r = run_collective(pod, CollectiveKind::AllReduce, rows, t, in);
      const std::string what = c.topo.name() + " P=" + std::to_string(p) +
                               " elements=" + std::to_string(c.elements) + " " +
                               std::string(dtype_name(t));
      ASSERT_TRUE(r.ok()) << what << ": " << r.message;
      const auto want = reference_all_reduce(c.topo, kN, in, t);
      for (uint32_t chip = 0; chip < p; ++chip) {
        ASSERT_EQ(pod.chip(chip).vmem_rows(kBase, rows), want) << what << " chip " << chip;
      }
      // Rows outside the buffer are untouched.
      EXPECT_EQ(pod.chip(0).vmem_rows(kBase + rows, 1), std::vector<uint32_t>(kN, 0)) << what;
      if (t == CollectiveDtype::Fp32 && c.elements > 3) {
        EXPECT_EQ(want[0], 0x80000000u) << what;
        EXPECT_EQ(want[1], 0x00000000u) << what;
      }
    }
  }
}

// The reference's chain is what the documentation says, checked by hand for a ring of 3:
// chunk c's sum starts at chip c: x[c+2] + (x[c+1] + x[c]).
TEST(Collectives, RingOrderIsTheDocumentedChain) {
  const PodTopology ring = PodTopology::ring(3);
  std::vector<std::vector<uint32_t>> in(3, std::vector<uint32_t>(3 * kN));
  // Values where the order matters: 1, 2^-24, 2^-24 (1 + 2^-24 rounds to 1, 2^-24 + 2^-24 not).
  const uint32_t one = 0x3F800000, tiny = 0x33800000;
  for (uint32_t e = 0; e < 3 * kN; ++e) {
    in[0][e] = one;
    in[1][e] = tiny;
    in[2][e] = tiny;
  }
  const auto out = reference_all_reduce(ring, kN, in, CollectiveDtype::Fp32);
  // Chunk 0 (row 0) starts at chip 0: t + (t + 1) = 1 (each add ties to even).
  // Chunk 1 starts at chip 1: 1 + (t + t) = 1 + 2^-23. Chunk 2 starts at chip 2: t + (1 + t) = 1.
  EXPECT_EQ(out[0], one);
  EXPECT_EQ(out[kN], 0x3F800001u);
  EXPECT_EQ(out[2 * kN], one);
  PodModel pod(ring, ChipParams::pod(kN, 2));
  ASSERT_TRUE(run_collective(pod, CollectiveKind::AllReduce, 3, CollectiveDtype::Fp32, in).ok());
  for (uint32_t chip = 0; chip < 3; ++chip) EXPECT_EQ(pod.chip(chip).vmem_rows(kBase, 3), out);
}

TEST(Collectives, ReduceScatterAndAllGatherOnRings) {
  uint32_t seed = 100;
  for (uint32_t p = 2; p <= 8; ++p) {
    for (uint64_t e : {uint64_t{kN} * p * 3 + 7, uint64_t{kN} * 2}) {
      const auto rows = static_cast<uint32_t>((e + kN - 1) / kN);
      const PodTopology ring = PodTopology::ring(p);
      for (CollectiveDtype t : {CollectiveDtype::Fp32, CollectiveDtype::Int32}) {
        PodModel pod(ring, ChipParams::pod(kN, 2));
        const auto in = make_inputs(p, e, t, ++seed);
        ASSERT_TRUE(run_collective(pod, CollectiveKind::ReduceScatter, rows, t, in).ok());
        const auto want = reference_reduce_scatter(ring, kN, in, t);
        for (uint32_t c = 0; c < p; ++c) {
          const Chunk ch = chunk_of(rows, p, c);
          if (ch.count == 0) continue;
          const std::vector<uint32_t> part(want.begin() + ch.first * kN,
                                           want.begin() + (ch.first + ch.count) * kN);
          EXPECT_EQ(pod.chip(c).vmem_rows(kBase + ch.first, ch.count), part) << p << " " << c;
        }
      }
      PodModel pod(ring, ChipParams::pod(kN, 2));
      const auto in = make_inputs(p, e, CollectiveDtype::Int32, ++seed);
      ASSERT_TRUE(
          run_collective(pod, CollectiveKind::AllGather, rows, CollectiveDtype::Int32, in).ok());
      const auto want = reference_all_gather(ring, kN, in);
      for (uint32_t r = 0; r < p; ++r) EXPECT_EQ(pod.chip(r).vmem_rows(kBase, rows), want);
    }
  }
}

// Random values with corner values mixed in: fp32 zeros of both signs, subnormals, infinities
// (inf + -inf = NaN), NaNs, the largest finite (overflows to inf), 1; int32 0, +-1, INT32_MIN,
// INT32_MAX (wrapping).
std::vector<std::vector<uint32_t>> inputs_with_corners(uint32_t chips, uint64_t elements,
                                                       CollectiveDtype t, uint32_t seed) {
  static const uint32_t kFp32Corners[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                          0x7FC00001u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu,
                                          0xFF7FFFFFu, 0x3F800000u};
  static const uint32_t kInt32Corners[] = {0u, 1u, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu};
  auto in = make_inputs(chips, elements, t, seed);
  std::mt19937 rng(seed * 7919u);
  for (auto& v : in) {
    for (uint64_t e = 0; e < elements; ++e) {
      if (rng() % 6 != 0) continue;
      v[e] = t == CollectiveDtype::Fp32 ? kFp32Corners[rng() % std::size(kFp32Corners)]
                                        : kInt32Corners[rng() % std::size(kInt32Corners)];
    }
  }
  return in;
}

// The 2-D reduce-scatter and all-gather on tori (and the degenerate 1 x 4, 4 x 1) against the
// host references bit-exact, every chip; reduce-scatter: chip r's scatter_block; all-gather:
// the whole buffer on every chip; rows outside the buffer untouched.
TEST(Collectives, ReduceScatterAndAllGatherOnTori) {
  uint32_t seed = 500;
  for (auto [x, y] :
       {std::pair{2u, 2u}, {3u, 2u}, {2u, 3u}, {4u, 2u}, {2u, 4u}, {1u, 4u}, {4u, 1u}}) {
    const PodTopology topo = PodTopology::torus(x, y);
    const uint32_t p = topo.chips();
    for (uint64_t e :
         {uint64_t{5}, uint64_t{777}, uint64_t{kN} * p * 2, uint64_t{kN} * p * 9 + 1}) {
      const auto rows = static_cast<uint32_t>((e + kN - 1) / kN);
      for (CollectiveDtype t : {CollectiveDtype::Fp32, CollectiveDtype::Int32}) {
        const std::string what =
            topo.name() + " elements=" + std::to_string(e) + " " + std::string(dtype_name(t));
        const auto in = inputs_with_corners(p, e, t, ++seed);
        PodModel rs(topo, ChipParams::pod(kN, 4), LinkTiming{16, 8});
        const PodResult r1 = run_collective(rs, CollectiveKind::ReduceScatter, rows, t, in);
        ASSERT_TRUE(r1.ok()) << what << ": " << r1.message;
        const auto want = reference_reduce_scatter(topo, kN, in, t);
        for (uint32_t c = 0; c < p; ++c) {
          const Chunk blk = scatter_block(topo, rows, c);
          if (blk.count == 0) continue;
          const std::vector<uint32_t> part(want.begin() + blk.first * kN,
                                           want.begin() + (blk.first + blk.count) * kN);
          ASSERT_EQ(rs.chip(c).vmem_rows(kBase + blk.first, blk.count), part)
              << what << " reduce-scatter chip " << c;
        }
        PodModel ag(topo, ChipParams::pod(kN, 4), LinkTiming{16, 8});
        const PodResult r2 = run_collective(ag, CollectiveKind::AllGather, rows, t, in);
        ASSERT_TRUE(r2.ok()) << what << ": " << r2.message;
        const auto all = reference_all_gather(topo, kN, in);
        for (uint32_t c = 0; c < p; ++c) {
          ASSERT_EQ(ag.chip(c).vmem_rows(kBase, rows), all) << what << " all-gather chip " << c;
          EXPECT_EQ(ag.chip(c).vmem_rows(kBase + rows, 1), std::vector<uint32_t>(kN, 0)) << what;
          EXPECT_EQ(rs.chip(c).vmem_rows(kBase - 1, 1), std::vector<uint32_t>(kN, 0)) << what;
        }
        // Each chip sends (P-1)/P of the buffer (whole rows): the bandwidth-optimal amount.
        if (rows % p == 0 && (rows / x) % y == 0) {
          const uint64_t per_chip = uint64_t{rows} * kN * 4 * (p - 1) / p;
          EXPECT_EQ(r1.link_bytes, per_chip * p) << what;
          EXPECT_EQ(r2.link_bytes, per_chip * p) << what;
        }
      }
    }
  }
}

// The torus reduce-scatter's chain, checked by hand with values where the order matters:
// t = 2^-24, 1 + t rounds to 1 (ties to even), t + t = 2^-23 does not vanish.
TEST(Collectives, TorusReduceScatterOrderIsTheDocumentedChain) {
  const uint32_t one = 0x3F800000, tiny = 0x33800000, one_ulp = 0x3F800001;
  // Torus 3 x 2, 6 rows: x-chunk x = rows 2x, 2x+1; chip (x, y) owns row 2x + y. Line y = 0 holds
  // (1, t, t) at x = 0, 1, 2, line 1 zeros. The x-chain of chip x starts at x + 1: x = 0 adds
  // 1 + (t + t) = 1 + 2^-23, x = 1: t + (1 + t) = 1, x = 2: t + (t + 1) = 1.
  {
    const PodTopology topo = PodTopology::torus(3, 2);
    std::vector<std::vector<uint32_t>> in(6, std::vector<uint32_t>(6 * kN, 0));
    for (uint32_t e = 0; e < 6 * kN; ++e) {
      in[0][e] = one;
      in[1][e] = tiny;
      in[2][e] = tiny;
    }
    const auto out = reference_reduce_scatter(topo, kN, in, CollectiveDtype::Fp32);
    for (uint32_t row = 0; row < 6; ++row) {
      EXPECT_EQ(out[row * kN], row / 2 == 0 ? one_ulp : one) << "torus 3x2 row " << row;
    }
    for (uint32_t chip = 0; chip < 6; ++chip) {
      const Chunk blk = scatter_block(topo, 6, chip);
      EXPECT_EQ(blk.first, 2 * (chip % 3) + chip / 3);
      EXPECT_EQ(blk.count, 1u);
    }
    PodModel pod(topo, ChipParams::pod(kN, 4));
    ASSERT_TRUE(
        run_collective(pod, CollectiveKind::ReduceScatter, 6, CollectiveDtype::Fp32, in).ok());
    for (uint32_t chip = 0; chip < 6; ++chip) {
      const uint32_t row = scatter_block(topo, 6, chip).first;
      EXPECT_EQ(pod.chip(chip).vmem_rows(kBase + row, 1),
                std::vector<uint32_t>(out.begin() + row * kN, out.begin() + (row + 1) * kN));
    }
  }
  // Torus 2 x 3, 6 rows: chip (x, y) owns row 3x + y. x-partial sums (1, t, t) on lines
  // y = 0, 1, 2 (chip (0, y) holds them, chip (1, y) zeros). The y-chain of chip y starts at
  // y + 1: y = 0 gives 1 + 2^-23, y = 1 and 2 give 1.
  {
    const PodTopology topo = PodTopology::torus(2, 3);
    std::vector<std::vector<uint32_t>> in(6, std::vector<uint32_t>(6 * kN, 0));
    for (uint32_t e = 0; e < 6 * kN; ++e) {
      in[0][e] = one;
      in[2][e] = tiny;
      in[4][e] = tiny;
    }
    const auto out = reference_reduce_scatter(topo, kN, in, CollectiveDtype::Fp32);
    for (uint32_t row = 0; row < 6; ++row) {
      EXPECT_EQ(out[row * kN], row % 3 == 0 ? one_ulp : one) << "torus 2x3 row " << row;
    }
    PodModel pod(topo, ChipParams::pod(kN, 4));
    ASSERT_TRUE(
        run_collective(pod, CollectiveKind::ReduceScatter, 6, CollectiveDtype::Fp32, in).ok());
    for (uint32_t chip = 0; chip < 6; ++chip) {
      const uint32_t row = 3 * (chip % 2) + chip / 2;
      EXPECT_EQ(pod.chip(chip).vmem_rows(kBase + row, 1)[0], row % 3 == 0 ? one_ulp : one)
          << "chip " << chip;
    }
  }
}

// Every chip's block: the blocks tile the rows once (x-major), on rings they are chunk r.
TEST(Collectives, ScatterBlocksTileTheRows) {
  for (uint32_t rows : {1u, 3u, 7u, 64u, 1001u}) {
    for (auto [x, y] : {std::pair{1u, 1u}, {2u, 2u}, {3u, 2u}, {2u, 3u}, {4u, 2u}, {1u, 5u}}) {
      const PodTopology topo = PodTopology::torus(x, y);
      uint32_t next = 0;
      for (uint32_t cx = 0; cx < x; ++cx) {
        for (uint32_t cy = 0; cy < y; ++cy) {
          const Chunk blk = scatter_block(topo, rows, cy * x + cx);
          EXPECT_EQ(blk.first, next) << topo.name() << " rows " << rows;
          next += blk.count;
        }
      }
      EXPECT_EQ(next, rows) << topo.name();
    }
    for (uint32_t p = 1; p <= 8; ++p) {
      for (uint32_t c = 0; c < p; ++c) {
        EXPECT_EQ(scatter_block(PodTopology::ring(p), rows, c).first, chunk_of(rows, p, c).first);
        EXPECT_EQ(scatter_block(PodTopology::ring(p), rows, c).count, chunk_of(rows, p, c).count);
      }
    }
  }
  // Torus 2 x 2, 7 rows: x-chunks [0, 3) and [3, 7); chip (x, y) = y*2 + x.
  const PodTopology t = PodTopology::torus(2, 2);
  const std::pair<uint32_t, uint32_t> want[] = {{0, 1}, {3, 2}, {1, 2}, {5, 2}};
  for (uint32_t c = 0; c < 4; ++c) {
    EXPECT_EQ(scatter_block(t, 7, c).first, want[c].first) << c;
    EXPECT_EQ(scatter_block(t, 7, c).count, want[c].second) << c;
  }
}

TEST(Collectives, ChunksCoverTheRowsOnce) {
  for (uint32_t rows : {1u, 3u, 7u, 64u, 1001u}) {
    for (uint32_t parts = 1; parts <= 8; ++parts) {
      uint32_t next = 0;
      for (uint32_t c = 0; c < parts; ++c) {
        const Chunk ch = chunk_of(rows, parts, c);
        EXPECT_EQ(ch.first, next);
        EXPECT_LE(ch.count, rows / parts + 1);
        EXPECT_GE(ch.count, rows / parts);
        next += ch.count;
      }
      EXPECT_EQ(next, rows);
    }
  }
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveKind::AllGather, 4), 0.75);
}

TEST(Collectives, LargeMessagesApproachTheLinkPeak) {
  // Ring of 4, 4096 rows (256 KiB): 6 steps of latency + chunk / bandwidth.
  const uint32_t rows = 4096, p = 4;
  PodModel pod(PodTopology::ring(p), ChipParams::pod(kN, 2), LinkTiming{16, 64});
  const auto in = make_inputs(p, uint64_t{rows} * kN, CollectiveDtype::Int32, 7);
  const PodResult r =
      run_collective(pod, CollectiveKind::AllReduce, rows, CollectiveDtype::Int32, in);
  ASSERT_TRUE(r.ok()) << r.message;
  const double bytes = rows * kN * 4.0;
  const double busbw =
      bytes / static_cast<double>(r.cycles) * busbw_factor(CollectiveKind::AllReduce, p);
  EXPECT_GT(busbw, 0.9 * 16) << r.cycles;
  EXPECT_LE(busbw, 16.0) << r.cycles;
  // The estimate: 2(P-1) steps of (chunk bytes / 16 + latency) and a few issue cycles.
  const uint64_t step = rows / p * kN * 4 / 16 + 64;
  EXPECT_GE(r.cycles, 2 * (p - 1) * step);
  EXPECT_LE(r.cycles, 2 * (p - 1) * (step + 4));
}

TEST(Collectives, Errors) {
  const ChipParams pp = ChipParams::pod(kN, 4);
  const PodTopology t = PodTopology::torus(2, 2);
  EXPECT_THROW(reduce_scatter_program(t, pp, 4, 0, 8, CollectiveDtype::Fp32),
               std::invalid_argument);
  EXPECT_THROW(all_gather_program(t, pp, 0, pp.vmem_rows, 1), std::invalid_argument);
  EXPECT_THROW(all_gather_program(t, pp, 0, 0, 0), std::invalid_argument);
  EXPECT_THROW(scatter_block(t, 8, 4), std::invalid_argument);
  // The torus algorithms use links 2 / 3: a chip with 2 links cannot run them.
  EXPECT_THROW(reduce_scatter_program(t, ChipParams::pod(kN, 2), 0, 0, 8, CollectiveDtype::Int32),
               ProgramError);
  EXPECT_THROW(all_gather_program(t, ChipParams::pod(kN, 2), 0, 0, 8), ProgramError);
  EXPECT_THROW(reference_reduce_scatter(t, kN, {{1}, {2}, {3}}, CollectiveDtype::Int32),
               std::invalid_argument);
  EXPECT_THROW(reference_all_gather(t, kN, std::vector<std::vector<uint32_t>>(4, {1, 2})),
               std::invalid_argument);
  EXPECT_THROW(all_reduce_program(t, pp, 4, 0, 8, CollectiveDtype::Fp32), std::invalid_argument);
  // Rows VmemRows - 2 .. VmemRows: one past the end.
  EXPECT_THROW(all_reduce_program(t, pp, 0, pp.vmem_rows - 2, 3, CollectiveDtype::Fp32),
               std::invalid_argument);
  EXPECT_THROW(all_reduce_program(t, pp, 0, 0, 0, CollectiveDtype::Fp32), std::invalid_argument);
  // The builder refuses links the chip does not have.
  EXPECT_THROW(all_reduce_program(t, ChipParams::pod(kN, 2), 0, 0, 8, CollectiveDtype::Fp32),
               ProgramError);
  EXPECT_THROW(reference_all_reduce(t, kN, {{1}}, CollectiveDtype::Fp32), std::invalid_argument);
  // Chips that run different sizes: the pod reports mismatched sizes, nothing hangs.
  PodModel pod(PodTopology::ring(3), ChipParams::pod(kN, 2));
  std::vector<std::vector<Instruction>> progs;
  for (uint32_t r = 0; r < 3; ++r) {
    progs.push_back(all_reduce_program(pod.topology(), pod.params(), r, 0, r == 1 ? 30 : 33,
                                       CollectiveDtype::Fp32));
  }
  const PodResult res = pod.run(progs);
  EXPECT_FALSE(res.ok());
  bool size_error = false;
  for (const RunResult& c : res.chips) {
    EXPECT_TRUE(c.error == ErrorCode::ERR_ICI_SIZE || c.error == ErrorCode::ERR_ICI_DEADLOCK)
        << c.message;
    size_error = size_error || c.error == ErrorCode::ERR_ICI_SIZE;
  }
  EXPECT_TRUE(size_error);
  // A chip that runs nothing: the others end with ERR_ICI_DEADLOCK.
  for (uint32_t r = 0; r < 2; ++r) {
    progs[r] = all_reduce_program(pod.topology(), pod.params(), r, 0, 33, CollectiveDtype::Fp32);
  }
  progs[2] = {Halt{}};
  const PodResult dead = pod.run(progs);
  EXPECT_TRUE(dead.chips[2].done());
  EXPECT_EQ(dead.chips[0].error, ErrorCode::ERR_ICI_DEADLOCK);
}

}  // namespace
}  // namespace tpu

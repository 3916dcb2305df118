// SPDX-License-Identifier: Apache-2.0
// tpu::shard_range and tpu::parse_shard (driver/shard.h), against a direct count: every unit
// in exactly one shard, shards contiguous and in order, sizes differing by at most one, shard 0
// holding unit 0.
#include "shard.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

TEST(ShardRange, EveryUnitOnceContiguousBalanced) {
  for (uint64_t units : {0ull, 1ull, 2ull, 3ull, 7ull, 10ull, 64ull, 100ull, 1001ull}) {
    for (uint32_t k = 1; k <= 13; ++k) {
      std::vector<int> owner(units, -1);
      uint64_t next = 0, lo = units, hi = 0;
      for (uint32_t i = 0; i < k; ++i) {
        const tpu::ShardRange r = tpu::shard_range(units, tpu::ShardSpec{i, k});
        ASSERT_EQ(r.begin, next) << units << " units, shard " << i << "/" << k;
        ASSERT_LE(r.begin, r.end);
        for (uint64_t u = r.begin; u < r.end; ++u) {
          ASSERT_EQ(owner[u], -1);
          owner[u] = int(i);
        }
        next = r.end;
        lo = std::min(lo, r.size());
        hi = std::max(hi, r.size());
      }
      EXPECT_EQ(next, units) << units << " units, " << k << " shards";
      EXPECT_LE(hi - std::min(lo, hi), 1u) << units << " units, " << k << " shards";
      if (units > 0) {
        EXPECT_EQ(owner[0], 0) << "unit 0 belongs to shard 0";
      }
    }
  }
}

TEST(ShardRange, LargeCountsDoNotOverflow) {
  const uint64_t units = 1ull << 60;
  const tpu::ShardRange last = tpu::shard_range(units, tpu::ShardSpec{65535, 65536});
  EXPECT_EQ(last.end, units);
  EXPECT_EQ(last.size(), units / 65536);
}

TEST(ParseShard, AcceptsIOfK) {
  const tpu::ShardSpec s = tpu::parse_shard("3/8");
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 8u);
  EXPECT_EQ(s.str(), "3/8");
}

TEST(ParseShard, RejectsWithTheReason) {
  auto message = [](const std::string& text) {
    try {
      tpu::parse_shard(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("3").find("expected I/K"), std::string::npos);
  EXPECT_NE(message("8/8").find("0 <= I < K"), std::string::npos);
  EXPECT_NE(message("0/0").find("0 <= I < K"), std::string::npos);
  EXPECT_NE(message("a/2").find("'a' is not a number"), std::string::npos);
  EXPECT_NE(message("1/-2").find("is not a number"), std::string::npos);
  EXPECT_NE(message("0/70000").find("<= 65536"), std::string::npos);
}

}  // namespace

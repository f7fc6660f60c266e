// The chunk planner of sub-layer grants (cuhooks/chunker.h): pure, no driver.
#include "cuhooks/chunker.h"

#include <gtest/gtest.h>

#include <random>

namespace ripple::cuhook {
namespace {

// Tests that a unit is split into ceil(bytes / C) sub-units, and not at all when it fits
// or chunking is off.
TEST(Chunker, SubUnitCountIsTheCeiling) {
  EXPECT_EQ(sub_unit_count(10, 0), 1u);
  EXPECT_EQ(sub_unit_count(4, 4), 1u);
  EXPECT_EQ(sub_unit_count(3, 4), 1u);
  EXPECT_EQ(sub_unit_count(10, 4), 3u);
  EXPECT_EQ(sub_unit_count(12, 4), 3u);
  EXPECT_EQ(sub_unit_count(1410000000ull, 64ull << 20), 22u);
}

// Tests that sub-unit entries carry the unit's bytes and duration split in proportion,
// with names that fit the protocol's field.
TEST(Chunker, SplitUnitKeepsBytesAndDurationInProportion) {
  engine::UnitInfo u{"vision_tower.layers.12", 10'000, 1'000'000};
  auto s = split_unit(u, 4096);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].bytes, 4096u);
  EXPECT_EQ(s[1].bytes, 4096u);
  EXPECT_EQ(s[2].bytes, 10'000u - 8192);
  EXPECT_EQ(s[0].duration_ns, 409'600u);
  EXPECT_EQ(s[2].duration_ns, 180'800u);
  EXPECT_EQ(s[0].name, "vision_tower.layers.1/c");
  EXPECT_EQ(s[2].name, "vision_tower.layers.1/t");
  for (const auto& e : s) EXPECT_LT(e.name.size(), engine::kUnitNameBytes);
  auto exact = split_unit({"layers.3", 8192, 100}, 4096);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_EQ(exact[1].name, "layers.3/c") << "an exact multiple has no shorter tail";
  EXPECT_EQ(split_unit(u, 0).size(), 1u);
  EXPECT_EQ(split_unit(u, 0)[0].name, u.name);
}

// Tests the cuts of copies at sub-unit boundaries: a whole unit, a copy that begins
// inside a sub-unit, bytes beyond the unit's (the last sub-unit), chunking off.
TEST(Chunker, CopiesAreCutAtSubUnitBoundaries) {
  EXPECT_EQ(plan_chunks(0, 10, 10, 4), (std::vector<Chunk>{{0, 4, 0}, {4, 4, 1}, {8, 2, 2}}));
  EXPECT_EQ(plan_chunks(3, 6, 10, 4), (std::vector<Chunk>{{0, 1, 0}, {1, 4, 1}, {5, 1, 2}}));
  EXPECT_EQ(plan_chunks(8, 7, 10, 4), (std::vector<Chunk>{{0, 4, 2}, {4, 3, 2}}));
  EXPECT_EQ(plan_chunks(5, 7, 10, 0), (std::vector<Chunk>{{0, 7, 0}}));
  EXPECT_TRUE(plan_chunks(0, 0, 10, 4).empty());
  // A bare copy: a unit of its own bytes.
  EXPECT_EQ(plan_chunks(0, 9, 9, 4), (std::vector<Chunk>{{0, 4, 0}, {4, 4, 1}, {8, 1, 2}}));
}

// Tests that rows (granules) are never cut: cuts round down to whole rows, up when that
// would leave a chunk empty, and a chunk is gated at the sub-unit of its last byte.
TEST(Chunker, GranulesAreNeverCut) {
  EXPECT_EQ(plan_chunks(0, 12, 12, 4, 3), (std::vector<Chunk>{{0, 3, 0}, {3, 3, 1}, {6, 3, 2}, {9, 3, 2}}));
  EXPECT_EQ(plan_chunks(0, 20, 20, 4, 10), (std::vector<Chunk>{{0, 10, 2}, {10, 10, 4}}));
}

// Tests, over random copies, the invariants the interposer relies on: the chunks tile
// the copy in order, each is at most C (without granules) and lies in one sub-unit,
// sub-units never go back, and granule chunks are whole granules.
TEST(Chunker, ChunksTileTheCopyInOrder) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t c = 1 + rng() % 64, u = 1 + rng() % 400, at = rng() % 500, n = 1 + rng() % 600;
    const std::uint64_t g = (i % 3 == 0) ? 1 + rng() % 16 : 1;
    const std::uint64_t bytes = g > 1 ? (n / g + 1) * g : n;
    auto ch = plan_chunks(at, bytes, u, c, g);
    const std::uint32_t subs = sub_unit_count(u, c);
    std::uint64_t off = 0;
    std::uint32_t last = 0;
    for (const Chunk& k : ch) {
      ASSERT_EQ(k.offset, off);
      ASSERT_GT(k.bytes, 0u);
      ASSERT_GE(k.sub, last);
      ASSERT_LT(k.sub, subs);
      if (g == 1) {
        ASSERT_LE(k.bytes, c);
        ASSERT_EQ(std::min<std::uint64_t>((at + k.offset) / c, subs - 1), k.sub) << "one sub-unit per chunk";
      } else {
        ASSERT_EQ(k.bytes % g, 0u);
      }
      last = k.sub;
      off += k.bytes;
    }
    ASSERT_EQ(off, bytes);
  }
}

}  // namespace
}  // namespace ripple::cuhook

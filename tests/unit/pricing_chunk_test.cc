// The chunk size the agent suggests (agent/pricing/chunk.h): pure.
#include "agent/pricing/chunk.h"

#include <gtest/gtest.h>

#include <vector>

#include "agent/pricing/ledger.h"

namespace ripple::pricing {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

// Tests the rule: the largest power of two at most an eighth of the median positive
// allowance, clamped to [64 MiB, 256 MiB]; no allowance known: no suggestion.
TEST(SuggestChunk, PowerOfTwoBelowAnEighthOfTheMedianAllowance) {
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{}), 0);
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{0, 0}), 0) << "no task released yet";
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{kUnlimitedBytes}), 0) << "an unlimited allowance says nothing";
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{512 * kMiB}), 64 * kMiB);
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{1024 * kMiB}), 128 * kMiB);
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{1023 * kMiB}), 64 * kMiB) << "rounded down, never up";
  // H200, k = 1.1: allowances 0 .. 1.3 GB; the zeros are ignored, the median is 0.6 GB.
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{0, 1'300'000'000, 600'000'000, 200'000'000}), 64 * kMiB);
}

// Tests that a fixed pricing.chunk_bytes is what the agent tells the engines, before any
// task is priced too (the Welcome), instead of the suggestion from the allowances.
TEST(SuggestChunk, FixedChunkBytesWins) {
  Params p;
  EXPECT_EQ(suggest_chunk_bytes(Ledger(p)), 0) << "no task priced: no suggestion";
  p.chunk_bytes = 64 * kMiB;
  EXPECT_EQ(suggest_chunk_bytes(Ledger(p)), 64 * kMiB);
  p.chunk_bytes = 32 * kMiB;  // below the suggestion's floor: fixed means fixed
  EXPECT_EQ(suggest_chunk_bytes(Ledger(p)), 32 * kMiB);
}

// Tests the clamps: small allowances still get 64 MiB chunks (the size measured best on
// the GPU at k = 1.1: a grant costs ~0.7 ms, an 8 MiB chunk ~0.1 ms of copy), huge ones
// at most 256 MiB.
TEST(SuggestChunk, ClampedToSaneSizes) {
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{1}), 64 * kMiB);
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{500'000'000}), 64 * kMiB) << "0.5 GB / 8 = 62.5 MB";
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{10 * kMiB}), 64 * kMiB);
  EXPECT_EQ(suggest_chunk_bytes(std::vector<Bytes>{Bytes{100} << 30}), 256 * kMiB);
}

// Tests that the typical allowance is the median, so one task with a tiny or a huge
// allowance does not set the size for all.
TEST(SuggestChunk, MedianNotExtremes) {
  const std::vector<Bytes> a{16 * kMiB, 1024 * kMiB, 1024 * kMiB, Bytes{50} << 30};
  EXPECT_EQ(suggest_chunk_bytes(a), 128 * kMiB);
}

}  // namespace
}  // namespace ripple::pricing

// The chunk size the agent suggests to the engines for sub-layer grants (the Welcome's
// chunk_bytes; Documentation/cuhook.md, "Sub-layer grants"). Pure: no clock, no I/O.
//
// A grant covers whole chunks, so up to one chunk of a job's allowance goes unused;
// smaller chunks cost one more grant round trip per chunk. The rule keeps the unused part
// at most 1/kChunksPerAllowance of a typical allowance:
//
//   C = the largest power of two <= median(A) / 8, clamped to [64 MiB, 256 MiB],
//
// A: the base allowances (Eq. 2) of the tasks priced so far and not exempt, the positive
// ones (the upper median when their count is even). None (no task released yet, every allowance 0): no suggestion (0): the engine
// keeps its own default (RIPPLE_CHUNK_BYTES, else 64 MiB). On the H200 testbed at
// k = 1.1 (allowances 0-1.3 GB, median ~0.5 GB) this gives 64 MiB, the size measured
// there. The floor is that measured size, not smaller: a grant boundary costs the engine
// ~0.7 ms on that machine (results/sim.md, the h200-offload preset) while 8 MiB is ~0.1 ms
// of copy, and the sixth session's run with an 8 MiB floor at k = 1.1 (allowances of
// 3-40 MB) moved most of its scored time into chunk-gate waits. So the suggestion only
// grows chunks, where allowances are large (k >= 1.5): fewer gates, less overhead; 256 MiB
// keeps a gate every ~5 ms of copy.
#pragma once

#include <cstdint>
#include <span>

#include "agent/pricing/types.h"

namespace ripple::pricing {

inline constexpr std::uint64_t kChunksPerAllowance = 8;
inline constexpr Bytes kMinSuggestedChunk = Bytes{64} << 20;
inline constexpr Bytes kMaxSuggestedChunk = Bytes{256} << 20;

// The suggestion for these allowances (0: none), a power of two.
Bytes suggest_chunk_bytes(std::span<const Bytes> allowances);

class Ledger;
// The suggestion over the ledger's tasks: the base allowances of those priced so far and
// not exempt (what the agent's Welcome and every Grant carry); Params::chunk_bytes instead
// where it is set (pricing.chunk_bytes: a fixed size, for an A/B against the suggestion).
Bytes suggest_chunk_bytes(const Ledger& ledger);

}  // namespace ripple::pricing

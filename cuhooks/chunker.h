// The chunk planner of sub-layer grants (Documentation/cuhook.md, "Sub-layer grants"):
// pure arithmetic, no driver, no I/O, so it is unit-tested on its own
// (tests/unit/cuhook_chunker_test.cc).
//
// A unit of U bytes with chunk size C > 0 and U > C is announced as n = ceil(U / C)
// sub-units: n - 1 of C bytes and a last one of the rest (its bytes and duration are the
// unit's, split in proportion). Inside the unit the host<->device copies are laid end to
// end in "unit space" (the bytes copied so far in this occurrence, whatever the thread);
// a copy is cut at every multiple of C in that space, so each chunk lies in exactly one
// sub-unit, and a chunk whose sub-unit is past the one granted is a gate point. Bytes
// beyond U belong to the last sub-unit (still cut every C). A bare copy (outside any
// unit) is planned as a unit of its own bytes: chunks of C, the last one the rest.
// A granule (the row of a 2D copy, the slice of a 3D one) must not be cut: cuts are
// rounded down to whole granules (up, when that would leave a chunk empty), and such a
// chunk is gated at the sub-unit of its last byte.
#pragma once

#include <cstdint>
#include <vector>

#include "ripple/protocol.h"

namespace ripple::cuhook {

struct Chunk {
  std::uint64_t offset = 0;  // in the copy
  std::uint64_t bytes = 0;
  std::uint32_t sub = 0;     // the sub-unit of its last byte: gate on it
  bool operator==(const Chunk&) const = default;
};

// Sub-units of a unit of `unit_bytes` (1 when chunk is 0 or the unit fits in one).
std::uint32_t sub_unit_count(std::uint64_t unit_bytes, std::uint64_t chunk);

// The sub-unit catalog entries of `u` (size sub_unit_count): bytes C and the rest,
// durations in proportion (at least 1 ns each); names "<name>/c" and "<name>/t",
// cut to fit the protocol's unit-name field. `u` itself when it is not split.
std::vector<engine::UnitInfo> split_unit(const engine::UnitInfo& u, std::uint64_t chunk);

// The chunks of a copy of `bytes` bytes that begins `at` bytes into a unit of
// `unit_bytes` bytes (chunk 0: one chunk, the whole copy). granule >= 1.
std::vector<Chunk> plan_chunks(std::uint64_t at, std::uint64_t bytes, std::uint64_t unit_bytes, std::uint64_t chunk,
                               std::uint64_t granule = 1);

}  // namespace ripple::cuhook

// The engine protocol: versioned, length-checked messages between ripple-agent and
// the GPU engines (one session per inference process) over a local SOCK_SEQPACKET
// socket (default /run/ripple/engine.sock). Shared by the agent, the engine client
// library (client.h) and the LD_PRELOAD interposer (cuhooks/).
//
// Each datagram is one message: a 16-byte header, then a fixed body per type (Hello
// and Work end with a counted array). Fixed-width little-endian integers (the peers
// share a host), explicit padding, no bool; decode() checks everything (magic,
// version, declared length = datagram length = the type's exact size, counts within
// bounds, strings NUL-terminated, enums in range) and never trusts the peer.
//
//   engine -> agent   Hello     name, kind, period/deadline, grant overhead, GPU memory, unit catalog
//   agent  -> engine  Welcome   engine id, policy, lease, fail mode, suggested chunk size
//   engine -> agent   Work      work id, deadline (0: the engine's default), unit indices
//   agent  -> engine  Grant     grant id, work id, first unit, count, bytes, start_by, chunk size,
//                               successor flag (delivered ahead: check it at the boundary),
//                               not_before (delivered ahead for a CPU release: wait for it)
//   engine -> agent   Start     the grant began executing
//   engine -> agent   Done      the grant ended; measured GPU time
//   engine -> agent   Discard   a successor was stale (identity or start_by): unexecuted
//   either            Bye       the session ends; reason
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ripple/status.h"

namespace ripple::engine {

inline constexpr std::uint32_t kMagic = 0x454c5052;  // "RPLE" in memory order
// Version 2: Grant carries not_before (a successor delivered ahead for a CPU release
// waits until that release, paper §4.3); version-1 peers are refused by decode().
inline constexpr std::uint16_t kVersion = 2;
inline constexpr const char* kDefaultSocket = "/run/ripple/engine.sock";
inline constexpr std::size_t kNameBytes = 32;
inline constexpr std::size_t kUnitNameBytes = 24;
inline constexpr std::uint32_t kMaxUnits = 1024;      // catalog entries in a Hello
inline constexpr std::uint32_t kMaxWorkUnits = 4096;  // units in one Work
inline constexpr std::size_t kByeTextBytes = 96;
// The longest time a message may carry, a unit's duration (Hello) or a grant's measured
// GPU time (Done): an hour. decode() refuses more; an engine clamps what it measured.
inline constexpr std::uint64_t kMaxDurationNs = 3600ull * 1'000'000'000ull;

enum class Type : std::uint16_t {
  kHello = 1,
  kWelcome = 2,
  kWork = 3,
  kGrant = 4,
  kStart = 5,
  kDone = 6,
  kDiscard = 7,
  kBye = 8,
};

enum class Kind : std::uint8_t { kBestEffort = 0, kDeadlineBound = 1 };
// The engine's GPU memory as its driver reports it (CU_DEVICE_ATTRIBUTE_INTEGRATED):
// discrete (its host bytes cross a host link, PCIe or C2C) or integrated (unified memory,
// no link: Jetson, GB10). Optional: it travels in a byte that was padding, so an older
// engine sends unknown (0).
enum class Memory : std::uint8_t { kUnknown = 0, kDiscrete = 1, kIntegrated = 2 };
enum class FailMode : std::uint8_t { kOpen = 0, kClosed = 1 };

// Bye reasons.
enum class ByeReason : std::uint32_t {
  kNormal = 0,      // the peer is done
  kShutdown = 1,    // the agent is stopping (SIGTERM): fail-open engines run unmanaged
  kProtocol = 2,    // a malformed or unexpected message
  kRefused = 3,     // credentials or profile refused
};

// --- wire layout (what travels) ---------------------------------------------

struct WireHeader {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t type;
  std::uint32_t length;  // whole datagram, header included
  std::uint32_t reserved;
};
static_assert(sizeof(WireHeader) == 16);

struct WireUnit {
  std::uint64_t bytes;
  std::uint64_t duration_ns;
  char name[kUnitNameBytes];
};
static_assert(sizeof(WireUnit) == 40);

// --- decoded messages --------------------------------------------------------

struct UnitInfo {
  std::string name;
  std::uint64_t bytes = 0;
  std::uint64_t duration_ns = 0;
};

struct Hello {
  std::string name;
  Kind kind = Kind::kBestEffort;
  std::uint64_t period_ns = 0;
  std::uint64_t deadline_ns = 0;
  std::uint64_t grant_overhead_ns = 0;
  Memory memory = Memory::kUnknown;
  std::vector<UnitInfo> units;
};

// Chunk sizes a Welcome can suggest: powers of two, 2^kMinChunkShift .. 2^kMaxChunkShift.
inline constexpr unsigned kMinChunkShift = 12, kMaxChunkShift = 40;

struct Welcome {
  std::uint32_t engine_id = 0;
  std::string policy;
  std::uint64_t lease_ns = 0;
  FailMode fail_mode = FailMode::kOpen;
  // The chunk size the agent suggests for sub-layer grants (Documentation/cuhook.md), a
  // power of two in [4 KiB, 1 TiB]; 0: no suggestion. Optional in both directions: it
  // travels in a byte that was padding (its log2; 0: none), so an older engine ignores
  // it and an older agent sends none.
  std::uint64_t chunk_bytes = 0;
};

struct WorkMsg {
  std::uint64_t work_id = 0;
  std::uint64_t deadline_ns = 0;  // absolute CLOCK_MONOTONIC; 0: the engine's default
  std::vector<std::uint32_t> units;
};

struct GrantMsg {
  std::uint64_t grant_id = 0;
  std::uint64_t work_id = 0;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t start_by_ns = 0;  // CLOCK_MONOTONIC
  std::uint64_t sent_ns = 0;      // CLOCK_MONOTONIC at send (round-trip measurement)
  bool successor = false;
  // CLOCK_MONOTONIC; 0: start at once. A grant delivered ahead for a CPU release was
  // admitted against the budget that release opens: the engine may not start it earlier.
  std::uint64_t not_before_ns = 0;
  // The agent's current chunk-size suggestion, as Welcome::chunk_bytes (0: none), so an
  // engine follows it without a new session. In a former padding byte, as there.
  std::uint64_t chunk_bytes = 0;
};

struct StartMsg {
  std::uint64_t grant_id = 0;
};

struct DoneMsg {
  std::uint64_t grant_id = 0;
  std::uint64_t measured_ns = 0;
};

struct DiscardMsg {
  std::uint64_t grant_id = 0;
};

struct ByeMsg {
  ByeReason reason = ByeReason::kNormal;
  std::string text;
};

using Message = std::variant<Hello, Welcome, WorkMsg, GrantMsg, StartMsg, DoneMsg, DiscardMsg, ByeMsg>;

// Largest datagram: a Hello with kMaxUnits units.
inline constexpr std::size_t kMaxMessageBytes = sizeof(WireHeader) + 64 + kMaxUnits * sizeof(WireUnit);

// Serialises `m` into `out` (resized). Refuses values that cannot travel: names too
// long, too many units, an empty catalog or work.
Status encode(const Message& m, std::vector<std::uint8_t>& out);
// Parses and validates one datagram. The error names the field and the reason.
Result<Message> decode(std::span<const std::uint8_t> datagram);

const char* type_name(const Message& m);

}  // namespace ripple::engine

// The interposer's configuration: the environment, read once at init, never per call
// (Documentation/cuhook.md lists the variables), and its one-line messages (stderr only,
// never the application's stdout). Internal to libripple-cuhook.so.
#pragma once

#include <stdio.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "ripple/protocol.h"
#include "cuhooks/profile.h"

namespace ripple::cuhook {

// One line on stderr, prefixed "ripple-cuhook[PID]: ".
void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

enum class Fail { kUnset, kOpen, kClosed };

// The default RIPPLE_CHUNK_BYTES: a 64 MiB chunk is ~1.3 ms of copy at 50 GB/s (a few
// grant round trips), against CPU-job allowances of 0-1.3 GB and layers of ~1.4 GB.
inline constexpr std::uint64_t kDefaultChunkBytes = 64ull << 20;
// The chunk sizes the hook applies (RIPPLE_CHUNK_BYTES, the agent's suggestion): the
// protocol's range, 4 KiB to 1 TiB. A 1-byte chunk would make a 128 MiB copy 2^27 driver
// calls and a plan that exhausts memory.
inline constexpr std::uint64_t kMinChunkBytes = std::uint64_t{1} << engine::kMinChunkShift;
inline constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{1} << engine::kMaxChunkShift;
// RIPPLE_RECONNECT_MS's range: 0 (or a value that wraps an int) retried at every boundary.
inline constexpr std::uint64_t kMinReconnectMs = 1, kMaxReconnectMs = 3'600'000;

// The default RIPPLE_MIN_WORK_MS: a work of a learned bare pass spans at least this much
// of the engine's time (whole passes; cuhooks/pass_learner.h, passes_per_work), so one
// grant round trip (~45 us on an H200 host) is <= 1 % of it. Passes this long or longer
// keep one pass a work.
inline constexpr std::uint64_t kDefaultMinWorkMs = 10;

struct Config {
  bool off = false;
  std::string engine = "cuda";
  engine::Kind kind = engine::Kind::kBestEffort;
  std::uint64_t period_ns = 0, deadline_ns = 0;
  std::string socket = engine::kDefaultSocket;
  Fail fail = Fail::kUnset;
  std::string profile_path;
  std::string nvtx_pattern = kDefaultNvtxPattern;
  bool b_nvtx = true, b_profile = true, b_copy = true, b_graph = true, b_api = true;
  std::uint64_t copy_min_bytes = 1 << 20;
  std::uint64_t unit_bytes = 0, graph_bytes = 0;
  std::string comm_prefix = "nccl";
  std::string stats_path, record_path;
  int stats_ms = 0;  // RIPPLE_CUHOOK_STATS_MS: rewrite the stats file this often (0: at exit only)
  // RIPPLE_GRANT_TIMEOUT_MS; -1 unset: fail-open engines wait at most
  // kFailOpenGrantTimeoutMs (a hung agent must not hang them), fail-closed ones as long as
  // the agent says; 0: no bound.
  int grant_timeout_ms = -1;
  int reconnect_ms = 500;
  // Besides root, the uid the agent may run as (RIPPLE_AGENT_UID): a socket served by
  // anyone else is no agent.
  uid_t agent_uid = 0;
  bool learn = true;  // learn the pass of NVTX units or of bare copies (no profile sequence)
  std::uint64_t chunk_bytes = kDefaultChunkBytes;  // sub-layer grants; 0: off
  bool chunk_set = false;  // RIPPLE_CHUNK_BYTES given: it wins over the agent's suggestion
  // RIPPLE_CHUNK_HOLD_MS: a chunk size the agent suggested is kept at least this long
  // before another suggestion is applied (each change is a new session).
  int chunk_hold_ms = 60000;
  // RIPPLE_MIN_WORK_MS in ns (0: off, one pass a work).
  std::uint64_t min_work_ns = kDefaultMinWorkMs * 1'000'000ull;
  // RIPPLE_GRANT_AHEAD (on/off): a learned bare pass's next work is announced once the
  // current one is granted to its end, so its grant is in hand at the boundary.
  bool grant_ahead = true;
};

// A fail-open engine's default bound on one grant wait: far above any wait a working
// agent imposes (a job's budget, a period), so reaching it means the agent is hung
// (stopped, overloaded): the engine then runs unmanaged, as fail-open promises.
constexpr int kFailOpenGrantTimeoutMs = 10'000;


std::string env_str(const char* k, const std::string& def);
// A number (strtoull base 0); not one: said once and `def`.
std::uint64_t env_u64(const char* k, std::uint64_t def);
Config read_config();

// Opens a file the interposer writes (RIPPLE_CUHOOK_STATS, RIPPLE_RECORD) without
// following a symlink at its last component; a regular file only. Says why in one line
// when it refuses (nullptr).
FILE* open_output(const char* what, const std::string& path, bool append);

}  // namespace ripple::cuhook

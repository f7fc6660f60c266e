// What a protected task (PT) is to the tracer, and how a spec is checked before anything
// is loaded: the tracer's BPF-free half. The configuration (agent/config) and
// `ripplectl trace` build PtSpecs; validating one reads /proc and ELF files, never BPF,
// so neither needs libbpf for it (libripple_ptspec.a, agent/tracer/Build.mk).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ripple/bpf/tracer.h"
#include "ripple/status.h"

namespace ripple::tracer {

enum class Mode { kPeriodWait, kUprobe };
enum class MatchKind { kPid, kExe, kComm };

// Default period waits: the absolute- and relative-time sleeps.
inline constexpr uint32_t kDefaultWaitMask = RIPPLE_WAIT_CLOCK_NANOSLEEP | RIPPLE_WAIT_NANOSLEEP;

struct PtSpec {
  std::string name;  // label (defaults to the comm / exe basename / pid)
  MatchKind match = MatchKind::kPid;
  pid_t pid = 0;     // kPid
  std::string exe;   // kExe: path of the executable
  std::string comm;  // kComm: thread name (at most 15 characters)
  Mode mode = Mode::kPeriodWait;
  uint32_t wait_mask = kDefaultWaitMask;  // kPeriodWait: RIPPLE_WAIT_* bits
  // kUprobe: "SYM" (in the PT's executable) or "/path/to/lib.so:SYM".
  std::string release_symbol;
  std::string complete_symbol;  // empty: the release function's return
  uint64_t deadline_ns = 0;     // 0: none (no misses counted)
  // kExe / kComm: only threads running as this effective uid belong to the PT (a name or
  // a file alone can be forged by any user). nullopt: any user (ripplectl trace's default;
  // the agent's configuration defaults to root). kPid ignores it.
  std::optional<uid_t> uid;
};

// Checks a spec without loading anything: the pid exists, the exe is an ELF
// file, the comm fits, uprobe symbols exist in their binary. On success fills
// in the defaults (name, resolved uprobe binary).
Status validate_spec(PtSpec& spec);

// The period-wait names parse_wait_list() accepts, each with its RIPPLE_WAIT_* bit.
const std::map<std::string, uint32_t>& wait_names();
// The kinds alone (RIPPLE_WAIT_KINDS), in the order of their bits.
const std::vector<std::pair<std::string, uint32_t>>& wait_kinds();

// Parses "clock_nanosleep,nanosleep,epoll,poll,select,futex" into RIPPLE_WAIT_* bits.
Result<uint32_t> parse_wait_list(const std::string& list);

}  // namespace ripple::tracer

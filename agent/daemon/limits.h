// The daemon's resource guards that need no I/O: a log throttle (a repeated event is
// said once per interval, with how many were not said) and the bounded engine listing
// of the status reply. Pure, so tests/unit/agent_limits_test.cc drives them directly.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "agent/admission/types.h"

namespace ripple::daemon {

using admission::Nanos;

// Says an event at most once per `interval`: the first of an interval is said, the rest
// are counted and reported with the next one said. Totals are for status.
class Throttle {
 public:
  explicit Throttle(Nanos interval) : interval_(interval) {}
  // Counts one event at `now`. True: say it now, with suppressed() events not said
  // since the last one said.
  bool note(Nanos now);
  std::uint64_t suppressed() const { return suppressed_; }
  std::uint64_t total() const { return total_; }

 private:
  Nanos interval_;
  Nanos next_ = 0;
  bool said_ = false;
  std::uint64_t total_ = 0, pending_ = 0, suppressed_ = 0;
};

// Which engines the status reply lists: every connected one first (by id), then the
// most recently gone ones, at most `cap` in all; the rest are counted, not listed.
// `connected[i]` is engine i's state.
std::vector<std::size_t> listed_engines(const std::vector<bool>& connected, std::size_t cap);

// A process's start time (field 22 of /proc/PID/stat, clock ticks since boot): a pid
// that names a different start time is a different process. Empty when it is gone
// (or a zombie: exited, not yet reaped).
std::optional<std::uint64_t> process_start_time(pid_t pid);

}  // namespace ripple::daemon

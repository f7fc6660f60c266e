// The admission trace (ours): one record per event the admission sees — a CPU job's release
// and completion, a grant decided, started, done or discarded — with what was predicted and
// what happened, for offline analysis (tools/bench/ripple-bench/trace_report.py). The daemon
// writes it as JSON lines (agent.trace_file, agent/daemon/trace_file.h) and ripple-sim
// through the same sink (--trace DIR), so one analysis reads both. Off (no sink): nothing
// is built or called.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "agent/admission/types.h"

namespace ripple::admission {

enum class TraceKind : std::uint8_t { kRelease, kComplete, kGrant, kStart, kDone, kDiscard };

std::string_view trace_kind_name(TraceKind k);

struct TraceRecord {
  TraceKind kind = TraceKind::kRelease;
  Nanos t = 0;              // when the admission saw it (its clock)
  std::uint32_t who = 0;    // task id (release, complete) or engine id
  std::uint64_t id = 0;     // job sequence or grant id
  Bytes bytes = 0;          // release: allowance issued; complete: bytes charged; grant: its bytes
  Nanos from = 0, to = 0;   // grant: predicted start and end; done: the GPU's start and end as
                            // the Done shows them (to = t, from = the later of the Start and
                            // t - measured); start: when it was sent (-1: not known);
                            // complete: from = the bytes charged in the job's first
                            // instrument_window() ns (JobAccount::early, the slope's instrument)
  Nanos value = 0;          // complete: response time; grant: not_before (0: none); done: measured
  bool flag = false;        // complete: missed; grant: a successor; done: ran queued behind another
};

using TraceSink = std::function<void(const TraceRecord&)>;

// One JSON line (no newline) for `r`; `name` is the task's or engine's name:
//   {"k":"grant","t":T,"who":W,"name":"llm","id":I,"bytes":B,"from":F,"to":U,"value":V,"flag":0}
std::string trace_json_line(const TraceRecord& r, std::string_view name);

}  // namespace ripple::admission

// The agent's state in the Prometheus text exposition format (version 0.0.4), for a
// fleet's node_exporter: the agent rewrites a textfile-collector file
// (agent.metrics_file, every agent.metrics_interval_s), and `ripplectl metrics` prints
// the same text from a running agent. Documentation/deploy.md lists every metric.
//
// Rendered from Agent::status_json, so the metrics, `ripplectl status` and the JSON
// can never disagree. Units are Prometheus' base units (seconds, bytes; κ̂ in seconds
// per byte); counters end in _total; a value the agent does not know yet (null in the
// JSON, e.g. the margin before any job) is left out rather than written as 0.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "ripple/status.h"

namespace ripple::daemon::metrics {

// The exposition text of one status_json() object.
std::string render(const nlohmann::json& status);

// A label value escaped for the exposition format (\ " and newline).
std::string escape_label(std::string_view v);

// Replaces `path` with `text` atomically (a temporary file in the same directory, then
// rename), so node_exporter never reads half a file. Mode 0644.
Status write_textfile(const std::string& path, std::string_view text);

}  // namespace ripple::daemon::metrics

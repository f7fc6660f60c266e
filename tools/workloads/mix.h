// Workload mixes as data: a TOML file names the robot tasks that run together, each
// with its binary, period, deadline, relative core and extra arguments
// (tools/workloads/mixes/*.toml; Documentation/workloads.md describes the format).
#pragma once

#include <string>
#include <vector>

namespace ripple::workloads {

struct MixTask {
  std::string name;
  std::string binary;       // a program name looked up beside ripple-mix, or a path
  double period_ms = 0;
  double deadline_ms = 0;   // 0: the period (or k x co-run p99, set by a benchmark)
  int core = 0;             // relative to the launcher's --first-core
  std::vector<std::string> args;
};

struct Mix {
  std::string name;
  std::vector<MixTask> tasks;
};

// Parses and validates a mix file. On failure returns false and sets *err to one line
// naming the file, the place and the problem.
bool load_mix(const std::string& path, Mix* mix, std::string* err);

// The command line for one task: binary, --period-ms, --deadline-ms, --core, --duration-s,
// an optional --log, then the task's own args.
std::vector<std::string> task_argv(const MixTask& t, const std::string& bin_dir, int first_core,
                                   double duration_s, const std::string& log_dir);

}  // namespace ripple::workloads

// Workload mixes as data: a TOML file names the robot tasks that run together, each
// with its binary, period, deadline, relative core (or threads on relative cores) and
// extra arguments (tools/workloads/mixes/*.toml; Documentation/workloads.md describes the
// format).
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
  int threads = 1;          // threads per job (--threads), one per entry of cores
  std::vector<int> cores;   // relative, one per thread: cores[0] == core (load_mix fills it)
};

struct Mix {
  std::string name;
  std::vector<MixTask> tasks;
};

// Parses and validates a mix file. On failure returns false and sets *err to one line
// naming the file, the place and the problem.
bool load_mix(const std::string& path, Mix* mix, std::string* err);

// The command line for one task: binary, --period-ms, --core (one thread) or --threads
// and --cores, --duration-s, --deadline-ms, an optional --log, then the task's own args.
std::vector<std::string> task_argv(const MixTask& t, const std::string& bin_dir, int first_core,
                                   double duration_s, const std::string& log_dir);

// The absolute cores of every task at `first_core` that this process may not use, as one
// line naming the first such task (empty when all fit).
std::string mix_cores_problem(const Mix& mix, int first_core, const std::vector<int>& allowed);

}  // namespace ripple::workloads

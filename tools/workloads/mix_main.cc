// ripple-mix: starts the tasks of a workload mix (tools/workloads/mixes/*.toml) together,
// each pinned to its core (or its threads to their cores), waits for them, and exits
// non-zero if any failed. A mix whose cores this machine lacks is refused before anything
// starts (--dry-run only notes it): a smaller machine runs a smaller mix (robotic1-1t.toml),
// never a silently different one.
//   ripple-mix --mix tools/workloads/mixes/robotic1.toml --first-core 2 --duration-s 30
//     [--log-dir DIR] [--dry-run] [-- ARGS for every task, e.g. --plant NAME]
#include "tools/workloads/cores.h"
#include "tools/workloads/mix.h"

#include <CLI/CLI.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace ripple::workloads;
  CLI::App app("start the robot tasks of a workload mix together", "ripple-mix");
  std::string mix_path, log_dir;
  int first_core = 0;
  double duration_s = 10;
  bool dry_run = false;
  std::vector<std::string> extra;
  app.add_option("--mix", mix_path, "mix file (TOML)")->required();
  app.add_option("--first-core", first_core, "core of the task whose core is 0")->check(CLI::NonNegativeNumber);
  app.add_option("--duration-s", duration_s, "run time of every task")->check(CLI::PositiveNumber);
  app.add_option("--log-dir", log_dir, "write each task's ground-truth log to DIR/<task>.csv");
  app.add_flag("--dry-run", dry_run, "print the commands only");
  app.add_option("extra", extra, "arguments after -- go to every task");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ripple-mix: error: %s\n", e.what());
    return 2;
  }
  Mix mix;
  std::string err;
  if (!load_mix(mix_path, &mix, &err)) {
    std::fprintf(stderr, "ripple-mix: error: %s\n", err.c_str());
    return 2;
  }
  const std::string cores_problem = mix_cores_problem(mix, first_core, allowed_cpus());
  if (!cores_problem.empty()) {
    bool threaded = false;
    for (const auto& t : mix.tasks) threaded |= t.threads > 1;
    const std::string hint = threaded ? "; a mix with one thread per task (tools/workloads/mixes/robotic1-1t.toml) "
                                        "fits a smaller machine"
                                      : "";
    if (!dry_run) {
      std::fprintf(stderr, "ripple-mix: error: %s: %s%s\n", mix_path.c_str(), cores_problem.c_str(), hint.c_str());
      return 2;
    }
    std::fprintf(stderr, "ripple-mix: note: %s: %s%s\n", mix_path.c_str(), cores_problem.c_str(), hint.c_str());
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string bin_dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
  bin_dir = bin_dir.substr(0, bin_dir.rfind('/'));

  std::vector<pid_t> pids;
  for (const auto& t : mix.tasks) {
    auto args = task_argv(t, bin_dir, first_core, duration_s, log_dir);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string line;
    for (const auto& a : args) line += (line.empty() ? "" : " ") + a;
    std::printf("ripple-mix: %s: %s\n", mix.name.c_str(), line.c_str());
    std::fflush(stdout);
    if (dry_run) continue;
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<char*> cargv;
      for (auto& a : args) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      std::fprintf(stderr, "ripple-mix: error: cannot start %s: %s\n", cargv[0], std::strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  if (failed) std::fprintf(stderr, "ripple-mix: error: %d task(s) of %s failed\n", failed, mix.name.c_str());
  return failed ? 1 : 0;
}

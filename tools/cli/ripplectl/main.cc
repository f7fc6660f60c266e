// ripplectl: Ripple's command-line tool.
//
//   ripplectl trace ...   trace the jobs of a protected task (no agent needed)
//   ripplectl status | top | explain [--json]   ask a running ripple-agent
//   ripplectl metrics     the same state in the Prometheus text format
//   ripplectl doctor      can Ripple run on this machine? (exit 0 ok, 1 failures, 2 warnings)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>

#include <CLI/CLI.hpp>

#include "ripple/log.h"
#include "tools/cli/ripplectl/doctor.h"
#include "tools/cli/ripplectl/status.h"
#include "tools/cli/ripplectl/trace.h"

int main(int argc, char** argv) {
  // CLI11 would say "A subcommand is required" for a misspelt one.
  static constexpr const char* kCommands[] = {"trace", "status", "top", "explain", "metrics", "doctor"};
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(std::begin(kCommands), std::end(kCommands), [&](const char* c) { return std::strcmp(c, argv[1]) == 0; })) {
    std::fprintf(stderr, "ripplectl: unknown command '%.40s' (trace, status, top, explain, metrics, doctor; --help)\n", argv[1]);
    return 2;
  }
  ripple::log::init();
  CLI::App app{"ripplectl: inspect and drive Ripple, the CPU-GPU co-scheduler"};
  app.require_subcommand(1);
  int exit_code = 0;
  ripple::ctl::add_trace_command(app, &exit_code);
  ripple::ctl::add_agent_commands(app, &exit_code);
  ripple::ctl::add_doctor_command(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "ripplectl: %s\n", e.what());  // one line, no "Run with --help"
    return 2;
  }
  return exit_code;
}

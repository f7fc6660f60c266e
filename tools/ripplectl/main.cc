// ripplectl: Ripple's command-line tool.
//
//   ripplectl trace ...   trace the jobs of a protected task (no agent needed)
//   ripplectl status | top | explain [--json]   ask a running ripple-agent
//   ripplectl metrics     the same state in the Prometheus text format
//   ripplectl doctor      can Ripple run on this machine? (exit 0 ok, 1 failures, 2 warnings)
#include <CLI/CLI.hpp>

#include "agent/common/log.h"
#include "tools/ripplectl/doctor.h"
#include "tools/ripplectl/status.h"
#include "tools/ripplectl/trace.h"

int main(int argc, char** argv) {
  ripple::log::init();
  CLI::App app{"ripplectl: inspect and drive Ripple, the CPU-GPU co-scheduler"};
  app.require_subcommand(1);
  int exit_code = 0;
  ripple::ctl::add_trace_command(app, &exit_code);
  ripple::ctl::add_agent_commands(app, &exit_code);
  ripple::ctl::add_doctor_command(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}

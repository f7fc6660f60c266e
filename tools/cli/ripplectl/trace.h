// `ripplectl trace`: the job tracer on its own, like a bcc tool.
#pragma once

#include <CLI/CLI.hpp>

namespace ripple::ctl {

// Registers the subcommand; its callback runs the trace and sets *exit_code.
void add_trace_command(CLI::App& app, int* exit_code);

}  // namespace ripple::ctl

// `ripplectl status | top | explain [--json]`: ask a running ripple-agent over its
// control socket (agent.control_socket, default /run/ripple/control.sock).
#pragma once

#include <CLI/CLI.hpp>

namespace ripple::ctl {

// Registers the three subcommands; their callbacks set *exit_code.
void add_agent_commands(CLI::App& app, int* exit_code);

}  // namespace ripple::ctl

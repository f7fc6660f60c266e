// `ripplectl doctor`: can Ripple run on this board? Checks the kernel (version and the
// BPF features the tracer uses), BTF, tracefs, bpffs, lockdown, the caller's
// capabilities, the CUDA driver and the interposer, and the agent's sockets; prints one
// line per check and, for each problem, what to do.
//
// Exit status: 0 all checks passed, 1 at least one failure (Ripple cannot run as
// configured), 2 warnings only (it runs, with something missing: no GPU driver, uprobes,
// a caller that cannot load BPF itself).
#pragma once

#include <CLI/CLI.hpp>

namespace ripple::ctl {

void add_doctor_command(CLI::App& app, int* exit_code);

}  // namespace ripple::ctl

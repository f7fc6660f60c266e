// Kernel features the tracer needs, probed once before loading anything, so a
// missing one is one clear error line rather than a libbpf failure mid-load.
#pragma once

#include <string>

#include "ripple/status.h"

namespace ripple::tracer {

struct FeaturePaths {
  std::string btf = "/sys/kernel/btf/vmlinux";
  std::string tracefs = "/sys/kernel/tracing";
  std::string bpffs = "/sys/fs/bpf";
  std::string uprobe_pmu = "/sys/bus/event_source/devices/uprobe/type";
};

struct FeatureNeeds {
  bool uprobes = false;  // a PT uses uprobe mode
};

// Checks privileges (root or CAP_BPF+CAP_PERFMON), kernel BTF, tracefs with
// syscall tracepoints, uprobe support when needed, and bpffs (mounting it at
// `bpffs` when nothing is mounted there).
Status probe_features(const FeatureNeeds& needs, const FeaturePaths& paths = {});

// True if `path` is a mount of the filesystem whose statfs magic is `magic`.
bool fs_is(const std::string& path, long magic);
// The calling process's effective capability set (CapEff of /proc/self/status).
unsigned long long effective_caps();

// True if tracefs has the event syscalls/<name> (e.g. "sys_enter_poll").
bool has_syscall_tracepoint(const std::string& name, const FeaturePaths& paths = {});

}  // namespace ripple::tracer

#include "agent/tracer/features.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace ripple::tracer {
namespace {

constexpr long kTracefsMagic = 0x74726163;
constexpr long kBpffsMagic = 0xcafe4a11;
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

bool has_cap(unsigned long long caps, int cap) { return (caps >> cap) & 1ULL; }

}  // namespace

bool fs_is(const std::string& path, long magic) {
  struct statfs st {};
  return statfs(path.c_str(), &st) == 0 && static_cast<long>(st.f_type) == magic;
}

unsigned long long effective_caps() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

bool has_syscall_tracepoint(const std::string& name, const FeaturePaths& paths) {
  return access((paths.tracefs + "/events/syscalls/" + name).c_str(), F_OK) == 0;
}

Status probe_features(const FeatureNeeds& needs, const FeaturePaths& paths) {
  if (geteuid() != 0) {
    auto caps = effective_caps();
    bool ok = has_cap(caps, kCapSysAdmin) || (has_cap(caps, kCapBpf) && has_cap(caps, kCapPerfmon));
    if (!ok)
      return make_errno_error(-EPERM,
                              "missing privileges: loading BPF needs root or CAP_BPF+CAP_PERFMON");
  }
  if (access(paths.btf.c_str(), R_OK) != 0)
    return make_error("kernel lacks BTF: {} not readable (needs CONFIG_DEBUG_INFO_BTF=y)",
                      paths.btf);
  if (!fs_is(paths.tracefs, kTracefsMagic))
    return make_error("tracefs not mounted at {} (mount -t tracefs tracefs {})", paths.tracefs,
                      paths.tracefs);
  if (!has_syscall_tracepoint("sys_enter_clock_nanosleep", paths))
    return make_error("kernel lacks syscall tracepoints: {}/events/syscalls/"
                      "sys_enter_clock_nanosleep missing (needs CONFIG_FTRACE_SYSCALLS=y)",
                      paths.tracefs);
  if (needs.uprobes && access(paths.uprobe_pmu.c_str(), R_OK) != 0)
    return make_error("kernel lacks uprobes: {} missing (needs CONFIG_UPROBE_EVENTS=y)",
                      paths.uprobe_pmu);
  if (!fs_is(paths.bpffs, kBpffsMagic)) {
    if (mount("bpf", paths.bpffs.c_str(), "bpf", 0, "mode=0700") != 0)
      return make_errno_error(-errno, "bpffs not mounted at {} and mounting it failed: {}",
                              paths.bpffs, std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace ripple::tracer

// Resolving which threads of the running system belong to a protected task:
// the /proc side. The kernel side (new threads, execs, renames) is in
// bpf/tracer.bpf.c; this seeds it with what already runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ripple/status.h"

namespace ripple::tracer {

// A file's identity as the kernel sees it in bprm->file->f_inode: inode and
// the kernel-internal dev_t ((major << 20) | minor), not userspace's st_dev.
struct FileId {
  uint64_t ino = 0;
  uint32_t dev = 0;
  bool operator==(const FileId&) const = default;
};

// Identity of an executable given by path; errors name the path when it is
// missing, not a regular file or not ELF.
Result<FileId> executable_id(const std::string& path);

// The executable a process runs (via /proc/PID/exe), if it can be read.
std::optional<FileId> process_exe_id(pid_t pid);
std::optional<std::string> process_exe_path(pid_t pid);

bool process_exists(pid_t pid);

struct ThreadInfo {
  pid_t tid;
  pid_t tgid;
  std::string comm;
  std::optional<FileId> exe;
  uid_t euid = static_cast<uid_t>(-1);  // from /proc/TID/status; -1 if unreadable
};

// Calls fn for every thread of every process in /proc (threads of processes
// that exit mid-scan are skipped).
void for_each_thread(const std::function<void(const ThreadInfo&)>& fn);

}  // namespace ripple::tracer

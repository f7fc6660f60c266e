#include "agent/tracer/threads.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <memory>

#include "agent/tracer/elf_symbols.h"

namespace ripple::tracer {
namespace {

FileId to_file_id(const struct stat& st) {
  // userspace dev_t -> the kernel's internal encoding (MKDEV: 20 minor bits)
  return FileId{static_cast<uint64_t>(st.st_ino),
                static_cast<uint32_t>((major(st.st_dev) << 20) | minor(st.st_dev))};
}

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

bool numeric(const char* s) {
  if (!*s) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

std::string read_comm(pid_t tgid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tgid) + "/task/" + std::to_string(tid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

}  // namespace

Result<FileId> executable_id(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return make_errno_error(-errno, "executable {}: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("executable {}: not a regular file", path);
  if (!is_elf_file(path)) return make_error("executable {}: not an ELF file", path);
  return to_file_id(st);
}

std::optional<FileId> process_exe_id(pid_t pid) {
  struct stat st {};
  if (stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &st) != 0) return std::nullopt;
  return to_file_id(st);
}

// The effective uid of a thread: the second field of the Uid: line of its status.
static uid_t read_euid(pid_t tgid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tgid) + "/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    unsigned long real = 0, eff = 0;
    if (std::sscanf(line.c_str(), "Uid: %lu %lu", &real, &eff) == 2) return static_cast<uid_t>(eff);
    break;
  }
  return static_cast<uid_t>(-1);
}

std::optional<std::string> process_exe_path(pid_t pid) {
  char buf[4096];
  ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

bool process_exists(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

void for_each_thread(const std::function<void(const ThreadInfo&)>& fn) {
  std::unique_ptr<DIR, DirCloser> proc(opendir("/proc"));
  if (!proc) return;
  while (struct dirent* pe = readdir(proc.get())) {
    if (!numeric(pe->d_name)) continue;
    pid_t tgid = static_cast<pid_t>(std::atoi(pe->d_name));
    auto exe = process_exe_id(tgid);  // kernel threads have none
    std::unique_ptr<DIR, DirCloser> tasks(
        opendir(("/proc/" + std::string(pe->d_name) + "/task").c_str()));
    if (!tasks) continue;
    while (struct dirent* te = readdir(tasks.get())) {
      if (!numeric(te->d_name)) continue;
      pid_t tid = static_cast<pid_t>(std::atoi(te->d_name));
      fn(ThreadInfo{tid, tgid, read_comm(tgid, tid), exe, read_euid(tgid, tid)});
    }
  }
}

}  // namespace ripple::tracer

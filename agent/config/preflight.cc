// The preflight of a parsed configuration (agent/config/config.h): what a real start
// would find wrong on this machine, checked without starting (ripple-agent --check).
#include "agent/config/config.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <linux/magic.h>

#include <set>
#include <utility>

#include <fmt/format.h>

#include "agent/config/text.h"

namespace ripple::config {

namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
std::string parent_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}

}  // namespace

Status preflight(const Config& c) {
  const AgentSection& a = c.agent;
  if (a.core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0 && (a.core >= CPU_SETSIZE || !CPU_ISSET(a.core, &set)))
      return make_error("{}agent.core: CPU {} is not one this process may run on ({} CPU(s) allowed)",
                        c.at("agent.core"), a.core, CPU_COUNT(&set));
  }
  if (a.engine_socket == a.control_socket)
    return make_error("{}agent.control_socket: the same path as agent.engine_socket ({})", c.at("agent.control_socket"),
                      shown(a.engine_socket));
  for (const auto& [key, path] : {std::pair<std::string, std::string>{"agent.engine_socket", a.engine_socket},
                                  {"agent.control_socket", a.control_socket}}) {
    if (path.size() >= sizeof(sockaddr_un::sun_path))
      return make_error("{}{}: '{}' is {} bytes; a socket path holds at most {}", c.at(key), key, shown(path),
                        path.size(), sizeof(sockaddr_un::sun_path) - 1);
    // The agent makes the socket's directory, but not the ones above it.
    const std::string dir = parent_of(path);
    if (!is_dir(dir) && !is_dir(parent_of(dir)))
      return make_error("{}{}: directory '{}' does not exist", c.at(key), key, shown(parent_of(dir)));
  }
  // The trace is written from the event loop: a FIFO or a device there could block it.
  if (struct stat st {}; !a.trace_file.empty() && ::lstat(a.trace_file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return make_error("{}agent.trace_file: '{}' is not a regular file", c.at("agent.trace_file"), shown(a.trace_file));
  if (!c.tasks.empty() && !a.pin_dir.empty()) {
    struct statfs fs {};
    const std::string probe = is_dir(a.pin_dir) ? a.pin_dir : parent_of(a.pin_dir);
    if (::statfs(probe.c_str(), &fs) != 0 || fs.f_type != BPF_FS_MAGIC)
      return make_error("{}agent.pin_dir: '{}' is not on a bpf filesystem (mount one there, or pin_dir = \"\")",
                        c.at("agent.pin_dir"), shown(a.pin_dir));
  }
  std::set<std::pair<dev_t, ino_t>> exes;
  for (std::size_t k = 0; k < c.tasks.size(); ++k) {
    tracer::PtSpec pt = c.tasks[k].pt;
    const std::string key = fmt::format("task[{}]", k);
    if (Status s = tracer::validate_spec(pt); !s) return make_error("{}{}: {}", c.at(key), key, s.error().message);
    struct stat st {};
    if (pt.match == tracer::MatchKind::kExe && ::stat(pt.exe.c_str(), &st) == 0 &&
        !exes.insert({st.st_dev, st.st_ino}).second)
      return make_error("{}{}.exe: {} names two tasks", c.at(key), key, shown(pt.exe));
  }
  return Status::Ok();
}

}  // namespace ripple::config

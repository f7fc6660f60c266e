#include "agent/daemon/identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ripple::daemon {

namespace {

// Groups: of /proc/PID/status (the fallback where SO_PEERGROUPS is missing).
std::optional<std::vector<gid_t>> proc_groups(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Groups:", 0) != 0) continue;
    std::istringstream ss(line.substr(7));
    std::vector<gid_t> out;
    for (unsigned long g; ss >> g;) out.push_back(static_cast<gid_t>(g));
    return out;
  }
  return std::nullopt;
}

}  // namespace

Result<PeerIdentity> peer_identity(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return make_errno_error(-errno, "SO_PEERCRED failed: {}", std::strerror(errno));
  if (len != sizeof cred) return make_error("SO_PEERCRED returned {} bytes, not {}", len, sizeof cred);
  PeerIdentity p;
  p.pid = cred.pid, p.uid = cred.uid, p.gid = cred.gid;
  std::vector<gid_t> groups(64);
  for (;;) {
    socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) == 0) {
      groups.resize(glen / sizeof(gid_t));
      p.groups = std::move(groups);
      return p;
    }
    if (errno == ERANGE && groups.size() < 65536) {
      groups.resize(std::max<std::size_t>(groups.size() * 2, glen / sizeof(gid_t)));
      continue;
    }
    break;
  }
  if (errno != ENOPROTOOPT) return make_errno_error(-errno, "SO_PEERGROUPS failed: {}", std::strerror(errno));
  auto g = proc_groups(p.pid);
  if (!g) return make_error("no SO_PEERGROUPS, and /proc/{}/status has no Groups: line", p.pid);
  p.groups = std::move(*g);
  return p;
}

bool peer_allowed(const PeerIdentity& p, const config::AgentSection& a, uid_t agent_uid) {
  const auto& uids = a.allowed_uids;
  const auto& gids = a.allowed_gids;
  if (uids.empty() && gids.empty()) return p.uid == 0 || p.uid == agent_uid;
  auto in = [](const auto& v, auto x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  if (in(uids, p.uid) || in(gids, p.gid)) return true;
  return std::any_of(p.groups.begin(), p.groups.end(), [&](gid_t g) { return in(gids, g); });
}

std::optional<std::pair<dev_t, ino_t>> file_identity(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair{st.st_dev, st.st_ino};
}

std::optional<std::pair<dev_t, ino_t>> exe_identity(pid_t pid) {
  return file_identity("/proc/" + std::to_string(pid) + "/exe");
}

std::string engine_mismatch(const config::EngineSection& e, const PeerIdentity& p) {
  if (e.uid && p.uid != *e.uid) return fmt::format("engine {} must run as uid {}, not uid {}", e.name, *e.uid, p.uid);
  if (!e.exe.empty()) {
    const auto want = file_identity(e.exe);
    if (!want) return fmt::format("engine {}: its exe {} cannot be read", e.name, e.exe);
    if (!p.exe) return fmt::format("engine {}: the executable of pid {} cannot be read", e.name, p.pid);
    if (*p.exe != *want) return fmt::format("engine {} must run {}, pid {} runs another executable", e.name, e.exe, p.pid);
  }
  return {};
}

}  // namespace ripple::daemon

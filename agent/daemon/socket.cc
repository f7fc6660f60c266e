#include "agent/daemon/socket.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ripple::daemon {

void FdCloser::operator()(int* fd) const {
  if (*fd >= 0) ::close(*fd);
  delete fd;
}

Result<OwnedSocket> listen_seqpacket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return make_error("socket path '{}' is too long", path);
  if (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return make_errno_error(-errno, "failed to create {}: {}", dir, std::strerror(errno));
  }
  OwnedSocket out;
  // Owner-only: another user must not be able to hold it (and so keep the agent from
  // starting) through a read-only descriptor.
  const std::string lock_path = path + ".lock";
  out.lock = make_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (*out.lock < 0) return make_errno_error(-errno, "failed to open {}: {}", lock_path, std::strerror(errno));
  if (::flock(*out.lock, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    (void)::pread(*out.lock, pid, sizeof pid - 1, 0);
    return make_error("{} belongs to a running ripple-agent (pid {}, lock {}); stop it or use another path", path,
                      pid[0] ? std::string(pid, strcspn(pid, "\n")) : std::string("?"), lock_path);
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(*out.lock, 0) != 0 || ::pwrite(*out.lock, me.data(), me.size(), 0) < 0) {
    // The pid is for the message above only; the lock is what counts.
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // Something else still answering on the path (a process that does not take the lock)
  // is not ours to replace either. A killed agent's socket can accept for a moment after
  // its death (its io_uring is torn down asynchronously): look for up to a second.
  for (int tries = 0;; ++tries) {
    UniqueFd probe = make_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (*probe < 0 || ::connect(*probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) break;
    if (tries == 20) return make_error("{} is in use: another process accepts connections on it", path);
    ::usleep(50'000);
  }
  out.fd = make_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (*out.fd < 0) return make_errno_error(-errno, "failed to create socket: {}", std::strerror(errno));
  ::unlink(path.c_str());  // a stale socket from a previous run: we hold its lock
  if (::bind(*out.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return make_errno_error(-errno, "failed to bind {}: {}", path, std::strerror(errno));
  // Access is decided per connection from SO_PEERCRED, not by file mode.
  ::chmod(path.c_str(), 0666);
  if (::listen(*out.fd, 64) != 0)
    return make_errno_error(-errno, "failed to listen on {}: {}", path, std::strerror(errno));
  return out;
}

}  // namespace ripple::daemon

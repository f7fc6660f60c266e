#include "agent/daemon/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef RIPPLE_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace ripple::daemon::notify {

bool linked_with_libsystemd() {
#ifdef RIPPLE_HAVE_LIBSYSTEMD
  return true;
#else
  return false;
#endif
}

#ifdef RIPPLE_HAVE_LIBSYSTEMD

bool send(std::string_view state) { return sd_notify(0, std::string(state).c_str()) > 0; }

std::int64_t watchdog_interval_ns() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return 0;
  return static_cast<std::int64_t>(usec) * 1000 / 2;
}

#else

// sd_notify(3) without libsystemd: one datagram to the AF_UNIX socket named by
// $NOTIFY_SOCKET (a path, or an abstract name written with a leading '@').
bool send(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t len = std::strlen(path);
  if (len >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const bool ok = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
                           addr_len) == static_cast<ssize_t>(state.size());
  ::close(fd);
  return ok;
}

std::int64_t watchdog_interval_ns() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec == nullptr) return 0;
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid != nullptr && std::atol(pid) != ::getpid()) return 0;
  const long long v = std::atoll(usec);
  return v > 0 ? v * 1000 / 2 : 0;
}

#endif

}  // namespace ripple::daemon::notify

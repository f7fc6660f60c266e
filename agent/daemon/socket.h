// The agent's listening sockets (engine and control): SOCK_SEQPACKET on a path that
// one agent owns through a lock beside it. Who may talk on them is decided per
// connection (identity.h), not by file mode.
#pragma once

#include <memory>
#include <string>

#include "ripple/status.h"

namespace ripple::daemon {

// A descriptor closed with its owner.
struct FdCloser {
  void operator()(int* fd) const;
};
using UniqueFd = std::unique_ptr<int, FdCloser>;
inline UniqueFd make_fd(int fd) { return UniqueFd(new int(fd)); }

// A listening socket this agent owns: the socket, and the lock on `<path>.lock` that
// makes it ours. One agent per socket path: a second instance finds the lock held and
// refuses to start, and never unlinks a socket it does not own (it would leave the
// running agent alive but unreachable, and its engines unmanaged).
struct OwnedSocket {
  UniqueFd fd = make_fd(-1);
  UniqueFd lock = make_fd(-1);
};

// Creates the socket's directory, takes `<path>.lock`, refuses a path another process
// still answers on, then binds (mode 0666) and listens, non-blocking.
Result<OwnedSocket> listen_seqpacket(const std::string& path);

}  // namespace ripple::daemon

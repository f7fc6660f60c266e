// Who is on the other end of an engine or control connection, and whether that is who
// the configuration allows (Documentation/agent.md, "Engine identity and access").
// Credentials come from the kernel at connect time (SO_PEERCRED, SO_PEERGROUPS); the
// executable from /proc/PID/exe of the peer's pid. The decisions are pure functions of
// a PeerIdentity, so tests/unit/agent_identity_test.cc drives them without sockets.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "ripple/status.h"
#include "agent/config/config.h"

namespace ripple::daemon {

struct PeerIdentity {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (SO_PEERGROUPS)
  // The peer's executable (/proc/PID/exe), read when an engine section names `exe`.
  std::optional<std::pair<dev_t, ino_t>> exe;
};

// The peer's credentials; an error when the kernel cannot say (a peer that cannot be
// identified is refused, never taken for uid 0). Supplementary groups come from
// SO_PEERGROUPS (the groups at connect time, Linux >= 4.13) and, where that option is
// missing, from the Groups: line of /proc/PID/status.
Result<PeerIdentity> peer_identity(int fd);

// Whether the peer may connect: its uid in allowed_uids, or its primary or a
// supplementary group in allowed_gids; with both lists empty, root and `agent_uid`.
bool peer_allowed(const PeerIdentity& p, const config::AgentSection& a, uid_t agent_uid);

// The device and inode of a file (following links), or of /proc/PID/exe.
std::optional<std::pair<dev_t, ino_t>> file_identity(const std::string& path);
std::optional<std::pair<dev_t, ino_t>> exe_identity(pid_t pid);

// Why a peer does not match the configured engine `e` (its uid, its executable), or ""
// when it does. `p.exe` must have been read when e.exe is set.
std::string engine_mismatch(const config::EngineSection& e, const PeerIdentity& p);

}  // namespace ripple::daemon

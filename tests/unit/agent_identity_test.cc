// Tests of the agent's peer identity (agent/daemon/identity.h): credentials from the
// kernel, allowed uids and groups (supplementary ones included), and the match of a
// configured [[engine]] by uid and executable.
#include "agent/daemon/identity.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace ripple::daemon {
namespace {

// Tests that the peer of a socketpair is this process, with its supplementary groups.
TEST(PeerIdentity, ReadsCredentialsAndGroups) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  auto p = peer_identity(sv[0]);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->pid, ::getpid());
  EXPECT_EQ(p->uid, ::geteuid());
  EXPECT_EQ(p->gid, ::getegid());
  std::vector<gid_t> mine(static_cast<std::size_t>(::getgroups(0, nullptr)));
  mine.resize(static_cast<std::size_t>(::getgroups(static_cast<int>(mine.size()), mine.data())));
  std::sort(mine.begin(), mine.end());
  std::vector<gid_t> got = p->groups;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, mine);
  ::close(sv[0]), ::close(sv[1]);
}

// Tests that a descriptor the kernel cannot give credentials for is an error, not uid 0.
TEST(PeerIdentity, FailedLookupIsAnError) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  auto id = peer_identity(p[0]);
  EXPECT_FALSE(id.ok());
  if (!id.ok()) {
    EXPECT_NE(id.error().message.find("SO_PEERCRED failed"), std::string::npos) << id.error().message;
  }
  ::close(p[0]), ::close(p[1]);
}

// Tests that allowed_gids admits a peer by a supplementary group, and the defaults.
TEST(PeerIdentity, AllowedBySupplementaryGroup) {
  config::AgentSection a;
  PeerIdentity p;
  p.uid = 1000, p.gid = 1000, p.groups = {27, 4242};
  EXPECT_FALSE(peer_allowed(p, a, 0));    // default: root and the agent's uid only
  EXPECT_TRUE(peer_allowed(p, a, 1000));  // the agent's own uid
  a.allowed_gids = {4242};
  EXPECT_TRUE(peer_allowed(p, a, 0));
  p.groups = {27};
  EXPECT_FALSE(peer_allowed(p, a, 0));
  a.allowed_uids = {1000};
  EXPECT_TRUE(peer_allowed(p, a, 0));
}

// Tests that a configured engine is matched by uid and by executable (device + inode).
TEST(PeerIdentity, EngineMatchedByUidAndExe) {
  config::EngineSection e;
  e.name = "llm";
  PeerIdentity p;
  p.pid = ::getpid(), p.uid = 65534;
  EXPECT_EQ(engine_mismatch(e, p), "");  // nothing configured: any allowed peer
  e.uid = 65533;
  EXPECT_EQ(engine_mismatch(e, p), "engine llm must run as uid 65533, not uid 65534");
  p.uid = 65533;
  EXPECT_EQ(engine_mismatch(e, p), "");
  e.exe = "/proc/self/exe";  // resolves to this test binary
  p.exe = exe_identity(::getpid());
  ASSERT_TRUE(p.exe.has_value());
  EXPECT_EQ(engine_mismatch(e, p), "");
  e.exe = "/bin/sh";
  EXPECT_NE(engine_mismatch(e, p).find("must run /bin/sh"), std::string::npos);
  p.exe.reset();
  EXPECT_NE(engine_mismatch(e, p).find("cannot be read"), std::string::npos);
}

}  // namespace
}  // namespace ripple::daemon

// Tests of the sd_notify(3) datagram that agent/daemon/notify.cc writes itself where the
// build has no libsystemd (this file compiles notify.cc without RIPPLE_HAVE_LIBSYSTEMD;
// the libsystemd build is checked end to end by tests/deploy/systemd.sh).
#undef RIPPLE_HAVE_LIBSYSTEMD
#include "agent/daemon/notify.cc"  // NOLINT: the fallback, whatever the daemon library was built with

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace ripple::daemon::notify {
namespace {

// A datagram socket standing in for the service manager; `name` starting with '@' is abstract.
class Manager {
 public:
  explicit Manager(std::string name) : name_(std::move(name)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, name_.data(), name_.size());
    if (name_[0] == '@') a.sun_path[0] = '\0';
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a),
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size())) == 0;
    timeval tv{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setenv("NOTIFY_SOCKET", name_.c_str(), 1);
  }
  ~Manager() {
    ::close(fd_);
    if (name_[0] == '/') ::unlink(name_.c_str());
    ::unsetenv("NOTIFY_SOCKET");
  }
  bool bound() const { return bound_; }
  std::string receive() {
    char buf[256];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

// Tests that outside systemd (no $NOTIFY_SOCKET) nothing is sent and nothing fails.
TEST(NotifyTest, NothingOutsideSystemd) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(linked_with_libsystemd());
  EXPECT_FALSE(send("READY=1"));
  ::setenv("NOTIFY_SOCKET", "relative/path", 1);
  EXPECT_FALSE(send("READY=1"));
  ::unsetenv("NOTIFY_SOCKET");
}

// Tests that the state reaches a service manager listening on a path, whole.
TEST(NotifyTest, SendsToPathSocket) {
  Manager m("/tmp/ripple-notify-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(m.bound());
  EXPECT_TRUE(send("READY=1\nSTATUS=running"));
  EXPECT_EQ(m.receive(), "READY=1\nSTATUS=running");
  EXPECT_TRUE(send("WATCHDOG=1"));
  EXPECT_EQ(m.receive(), "WATCHDOG=1");
}

// Tests that an abstract socket ("@name", as systemd may pass it) is reached too.
TEST(NotifyTest, SendsToAbstractSocket) {
  Manager m("@ripple-notify-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(m.bound());
  EXPECT_TRUE(send("STOPPING=1"));
  EXPECT_EQ(m.receive(), "STOPPING=1");
}

// Tests the watchdog interval: half of WATCHDOG_USEC, and only for the process it names.
TEST(NotifyTest, WatchdogInterval) {
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  EXPECT_EQ(watchdog_interval_ns(), 0);
  ::setenv("WATCHDOG_USEC", "300000", 1);
  EXPECT_EQ(watchdog_interval_ns(), 150'000'000);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_EQ(watchdog_interval_ns(), 150'000'000);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  EXPECT_EQ(watchdog_interval_ns(), 0);  // meant for another process (e.g. our parent)
  ::unsetenv("WATCHDOG_PID");
  ::setenv("WATCHDOG_USEC", "0", 1);
  EXPECT_EQ(watchdog_interval_ns(), 0);
  ::unsetenv("WATCHDOG_USEC");
}

}  // namespace
}  // namespace ripple::daemon::notify

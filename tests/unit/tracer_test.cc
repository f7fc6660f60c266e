// Unit tests of the tracer's pieces that need no BPF: feature probing with
// injected paths, the wait-syscall list, ELF symbol lookup, file identities.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "agent/tracer/elf_symbols.h"
#include "agent/tracer/features.h"
#include "agent/tracer/threads.h"
#include "agent/tracer/tracer.h"

// Functions this test binary defines, to look up in its own ELF file.
extern "C" __attribute__((noinline, used)) int ripple_unit_c_symbol(int x) { return x + 1; }
namespace ripple_unit_ns {
__attribute__((noinline, used)) int cpp_symbol(double d) { return static_cast<int>(d); }
__attribute__((noinline, used)) int overloaded(int x) { return x; }
__attribute__((noinline, used)) int overloaded(double x) { return static_cast<int>(x); }
}  // namespace ripple_unit_ns

namespace ripple::tracer {
namespace {

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

bool is_root() { return geteuid() == 0; }

// Tests that a kernel without BTF is reported as such, naming the path.
TEST(TracerFeatures, MissingBtfIsNamed) {
  if (!is_root()) GTEST_SKIP() << "privileges are checked first";
  FeaturePaths p;
  p.btf = "/nonexistent/vmlinux";
  auto s = probe_features({}, p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ("kernel lacks BTF: /nonexistent/vmlinux not readable (needs CONFIG_DEBUG_INFO_BTF=y)",
            s.error().message);
}

// Tests that a directory that is not tracefs is reported as tracefs not mounted.
TEST(TracerFeatures, TracefsNotMountedIsNamed) {
  if (!is_root()) GTEST_SKIP() << "privileges are checked first";
  FeaturePaths p;
  p.tracefs = "/tmp";
  auto s = probe_features({}, p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ("tracefs not mounted at /tmp (mount -t tracefs tracefs /tmp)", s.error().message);
}

// Tests that uprobe support is only required when a PT uses uprobe mode.
TEST(TracerFeatures, UprobesRequiredOnlyWhenUsed) {
  if (!is_root()) GTEST_SKIP() << "privileges are checked first";
  FeaturePaths p;
  p.uprobe_pmu = "/nonexistent/uprobe/type";
  EXPECT_TRUE(probe_features({.uprobes = false}, p).ok());
  auto s = probe_features({.uprobes = true}, p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string::npos, s.error().message.find("kernel lacks uprobes"));
}

// Tests that a non-root user without capabilities is told what is missing. As
// root, the probe runs in a child that has dropped to nobody (and so lost every
// capability), so the check runs whoever runs the suite.
TEST(TracerFeatures, UnprivilegedIsNamed) {
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                           setresuid(65534, 65534, 65534) != 0))
      _exit(3);
    auto s = probe_features({});
    std::string msg = s.ok() ? "ok" : s.error().message;
    if (write(fds[1], msg.data(), msg.size()) < 0) _exit(4);
    _exit(0);
  }
  close(fds[1]);
  char buf[512] = {};
  ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  ASSERT_GT(n, 0);
  EXPECT_EQ("missing privileges: loading BPF needs root or CAP_BPF+CAP_PERFMON", std::string(buf));
}

// Tests that wait lists parse to the documented bits and unknown names are named.
TEST(TracerWaitList, ParsesAndRejects) {
  auto m = parse_wait_list("clock_nanosleep,epoll,futex");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(RIPPLE_WAIT_CLOCK_NANOSLEEP | RIPPLE_WAIT_EPOLL | RIPPLE_WAIT_FUTEX, *m);
  auto all = parse_wait_list("nanosleep,poll,ppoll,select,pselect");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(RIPPLE_WAIT_NANOSLEEP | RIPPLE_WAIT_POLL | RIPPLE_WAIT_SELECT, *all);
  auto bad = parse_wait_list("nanosleep,sleep");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string::npos, bad.error().message.find("unknown period-wait syscall 'sleep'"));
  EXPECT_FALSE(parse_wait_list(",").ok());
}

// Tests that functions are found by plain, mangled-free C++ and unique
// demangled names, and that missing or ambiguous names are errors.
TEST(TracerElf, FindsFunctionsByName) {
  auto c = find_function(self_exe(), "ripple_unit_c_symbol");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ("ripple_unit_c_symbol", c->symbol);

  auto cpp = find_function(self_exe(), "ripple_unit_ns::cpp_symbol");
  ASSERT_TRUE(cpp.ok()) << cpp.error().message;
  EXPECT_EQ("_ZN14ripple_unit_ns10cpp_symbolEd", cpp->symbol);

  auto amb = find_function(self_exe(), "ripple_unit_ns::overloaded");
  ASSERT_FALSE(amb.ok());
  EXPECT_NE(std::string::npos, amb.error().message.find("ambiguous"));

  auto none = find_function(self_exe(), "no_such_function");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ("symbol 'no_such_function' not found in " + self_exe(), none.error().message);
}

// Tests that a file that is not ELF, or is missing, is named as such.
TEST(TracerElf, RejectsNonElfAndMissingFiles) {
  std::string path = "/tmp/ripple-unit-notelf-" + std::to_string(getpid());
  std::ofstream(path) << "#!/bin/sh\n";
  auto r = find_function(path, "main");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(path + " is not an ELF file", r.error().message);
  auto id = executable_id(path);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ("executable " + path + ": not an ELF file", id.error().message);
  unlink(path.c_str());
  auto missing = executable_id(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ("executable " + path + ": No such file or directory", missing.error().message);
}

// Tests that file identities use the kernel's dev_t encoding, and that a
// process's exe resolves to the same identity as its path.
TEST(TracerThreads, FileIdentityMatchesKernelEncoding) {
  struct stat st {};
  ASSERT_EQ(0, stat(self_exe().c_str(), &st));
  auto id = executable_id(self_exe());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(static_cast<uint64_t>(st.st_ino), id->ino);
  EXPECT_EQ((major(st.st_dev) << 20) | minor(st.st_dev), id->dev);
  // Under user-mode emulation (make check's arm64 suites run under qemu-user) the kernel
  // runs this process as the emulator: qemu answers /proc/self/exe itself, not the task's link.
  char kernel_exe[4096] = {};
  if (readlink(("/proc/self/task/" + std::to_string(gettid()) + "/exe").c_str(), kernel_exe,
               sizeof(kernel_exe) - 1) > 0 && self_exe() != kernel_exe)
    GTEST_SKIP() << "the kernel runs this process as " << kernel_exe << " (user-mode emulation)";
  auto mine = process_exe_id(getpid());
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(*id, *mine);
  EXPECT_TRUE(process_exists(getpid()));
  EXPECT_FALSE(process_exists(0x3ffffff0));
}

// Tests that spec validation names the problem before anything loads.
TEST(TracerSpec, ValidationNamesTheProblem) {
  PtSpec s;
  s.match = MatchKind::kComm;
  s.comm = "exactly15chars_";
  EXPECT_TRUE(validate_spec(s).ok());
  EXPECT_EQ("exactly15chars_", s.name);
  s.comm = "sixteen_chars_ab";
  EXPECT_FALSE(validate_spec(s).ok());

  PtSpec u;
  u.match = MatchKind::kComm;
  u.comm = "x";
  u.mode = Mode::kUprobe;
  u.release_symbol = "job";
  auto r = validate_spec(u);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string::npos, r.error().message.find("needs /path/to/binary:job"));

  PtSpec p;
  p.match = MatchKind::kPid;
  p.pid = getpid();
  p.release_symbol = "ripple_unit_c_symbol";
  auto wrong_mode = validate_spec(p);
  ASSERT_FALSE(wrong_mode.ok());
  EXPECT_NE(std::string::npos, wrong_mode.error().message.find("need uprobe mode"));
  p.mode = Mode::kUprobe;
  ASSERT_TRUE(validate_spec(p).ok());
  EXPECT_EQ(self_exe() + ":ripple_unit_c_symbol", p.release_symbol);
}

}  // namespace
}  // namespace ripple::tracer

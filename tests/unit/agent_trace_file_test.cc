// Unit tests of agent.trace_file's writer (agent/daemon/trace_file.h): records land as JSON
// lines when flushed (every second, at exit), nothing before; a path that cannot be created
// is refused with its name; a failed write stops the trace and counts what it lost.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/daemon/trace_file.h"

namespace ripple::daemon {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(TraceFile, WritesJsonLinesWhenFlushedAndAtExit) {
  char dir[] = "/tmp/ripple-trace-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/t.jsonl";
  {
    auto tf = TraceFile::open(path);
    ASSERT_TRUE(tf) << tf.error().message;
    admission::TraceRecord r;
    r.kind = admission::TraceKind::kGrant;
    r.t = 5;
    r.id = 9;
    r.bytes = 100;
    tf->add(r, "llm");
    EXPECT_EQ(slurp(path), "") << "buffered until a flush";
    EXPECT_TRUE(tf->flush());
    EXPECT_EQ(slurp(path),
              R"({"k":"grant","t":5,"who":0,"name":"llm","id":9,"bytes":100,"from":0,"to":0,"value":0,"flag":0})"
              "\n");
    r.kind = admission::TraceKind::kDone;
    tf->add(r, "llm");
    EXPECT_EQ(tf->records(), 1u);
  }  // the destructor writes the rest
  const std::string all = slurp(path);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 2);
  EXPECT_NE(all.find(R"({"k":"done","t":5)"), std::string::npos) << all;
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(TraceFile, RefusesAPathItCannotCreate) {
  auto tf = TraceFile::open("/nonexistent-dir/t.jsonl");
  ASSERT_FALSE(tf);
  EXPECT_NE(tf.error().message.find("agent.trace_file: cannot create '/nonexistent-dir/t.jsonl'"), std::string::npos)
      << tf.error().message;
}

// Tests that a write that fails after a partial one stops the trace and counts as lost
// only the records not wholly written (RLIMIT_FSIZE cuts the second of two records; it
// counted every buffered record lost, those already in the file too).
TEST(TraceFile, AFailedWriteStopsTheTraceAndCountsTheLoss) {
  char dir[] = "/tmp/ripple-trace-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/t.jsonl";
  auto tf = TraceFile::open(path);
  ASSERT_TRUE(tf) << tf.error().message;
  admission::TraceRecord r;
  tf->add(r, "a");
  tf->add(r, "a");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 150;  // a record is ~95 bytes: the first fits, the second is cut
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const bool flushed = tf->flush();
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(flushed);
  tf->add(r, "a");
  EXPECT_EQ(tf->records(), 1u);
  EXPECT_EQ(tf->lost(), 2u) << "the cut record and the one after the failure";
  ::unlink(path.c_str());
  ::rmdir(dir);
}

// Tests that only a regular file is written: a FIFO (whose open or write could block the
// event loop, SIGTERM with it) and a symbolic link are refused by name.
TEST(TraceFile, RefusesWhatIsNoRegularFile) {
  char dir[] = "/tmp/ripple-trace-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo", link = std::string(dir) + "/link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::symlink("t.jsonl", link.c_str()), 0);
  for (const std::string& path : {fifo, link, std::string("/dev/null")}) {
    auto tf = TraceFile::open(path);
    ASSERT_FALSE(tf) << path;
    EXPECT_EQ(tf.error().message, "agent.trace_file: '" + path + "' is not a regular file");
  }
  ::unlink(fifo.c_str());
  ::unlink(link.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace ripple::daemon

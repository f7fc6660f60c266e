// Unit tests of agent.trace_file's writer (agent/daemon/trace_file.h): records land as JSON
// lines when flushed (every second, at exit), nothing before; a path that cannot be created
// is refused with its name; a failed write stops the trace and counts what it lost.
#include <gtest/gtest.h>
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

TEST(TraceFile, AFailedWriteStopsTheTraceAndCountsTheLoss) {
  auto tf = TraceFile::open("/dev/full");  // every write fails with ENOSPC
  ASSERT_TRUE(tf) << tf.error().message;
  admission::TraceRecord r;
  tf->add(r, "a");
  tf->add(r, "a");
  EXPECT_FALSE(tf->flush());
  tf->add(r, "a");
  EXPECT_EQ(tf->lost(), 3u);
  EXPECT_EQ(tf->records(), 0u);
}

}  // namespace
}  // namespace ripple::daemon

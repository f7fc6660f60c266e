// Unit tests of the engine protocol (include/ripple/protocol.h): every message round-trips;
// malformed datagrams are refused with a reason naming the field; the client's
// pipelining check hands a stale successor back (Discard) and takes the fresh one.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "ripple/client.h"
#include "ripple/protocol.h"

namespace ripple::engine {
namespace {

std::vector<std::uint8_t> bytes_of(const Message& m) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(encode(m, out).ok());
  return out;
}

Hello hello() {
  Hello h;
  h.name = "llm";
  h.kind = Kind::kDeadlineBound;
  h.period_ns = 5'000'000'000;
  h.deadline_ns = 4'000'000'000;
  h.grant_overhead_ns = 30'000;
  h.units = {{"layer", 385'978'880, 1'800'000}, {"head", 1'244'659'712, 5'000'000}};
  return h;
}

std::string decode_error(std::vector<std::uint8_t> d) {
  auto r = decode(d);
  return r.ok() ? std::string("(decoded)") : r.error().message;
}

// The agent's side of an engine socket for the client tests: a listening SOCK_SEQPACKET
// socket in a fresh folder, removed with it.
struct AgentSocket {
  AgentSocket() {
    char d[] = "/tmp/ripple-proto-XXXXXX";
    if (mkdtemp(d) == nullptr) return;
    dir = d;
    path = dir + "/engine.sock";
    fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 1) != 0) {
      close(fd);
      fd = -1;
    }
  }
  ~AgentSocket() {
    if (fd >= 0) close(fd);
    if (!path.empty()) unlink(path.c_str());
    if (!dir.empty()) rmdir(dir.c_str());
  }
  bool ok() const { return fd >= 0; }
  std::string dir, path;
  int fd = -1;
};

void send_msg(int c, const Message& m) {
  auto d = bytes_of(m);
  send(c, d.data(), d.size(), 0);
}

// The agent side of a session: accepts on `ls`, reads the engine's Hello into `buf`, sends
// the Welcome; returns the connection.
int accept_and_welcome(int ls, std::vector<std::uint8_t>& buf) {
  int c = accept(ls, nullptr, nullptr);
  recv(c, buf.data(), buf.size(), 0);  // hello
  send_msg(c, Welcome{0, "ripple", 20'000'000, FailMode::kOpen});
  return c;
}

// Tests that every message type survives encode/decode with every field intact and
// that the Hello's size is header + 64 + 40 per unit.
TEST(EngineProtocol, RoundTripsEveryMessage) {
  const auto d = bytes_of(hello());
  EXPECT_EQ(d.size(), 16u + 64u + 2u * 40u);
  auto h = decode(d);
  ASSERT_TRUE(h.ok()) << h.error().message;
  const Hello& got = std::get<Hello>(*h);
  EXPECT_EQ(got.name, "llm");
  EXPECT_EQ(got.kind, Kind::kDeadlineBound);
  EXPECT_EQ(got.deadline_ns, 4'000'000'000u);
  ASSERT_EQ(got.units.size(), 2u);
  EXPECT_EQ(got.units[1].name, "head");
  EXPECT_EQ(got.units[1].bytes, 1'244'659'712u);

  WorkMsg w{7, 123, {0, 0, 1}};
  auto wr = decode(bytes_of(w));
  ASSERT_TRUE(wr.ok());
  EXPECT_EQ(std::get<WorkMsg>(*wr).units, (std::vector<std::uint32_t>{0, 0, 1}));
  GrantMsg g{9, 7, 2, 3, 300, 4000, 5000, true};
  auto gr = decode(bytes_of(g));
  ASSERT_TRUE(gr.ok());
  const GrantMsg& gg = std::get<GrantMsg>(*gr);
  EXPECT_EQ(gg.first, 2u);
  EXPECT_EQ(gg.count, 3u);
  EXPECT_EQ(gg.start_by_ns, 4000u);
  EXPECT_TRUE(gg.successor);
  EXPECT_EQ(gg.not_before_ns, 0u);
  EXPECT_EQ(bytes_of(g).size(), 16u + 64u);  // version 2: not_before_ns added
  EXPECT_EQ(std::get<GrantMsg>(*decode(bytes_of(GrantMsg{9, 7, 2, 3, 300, 4000, 5000, true, 3500}))).not_before_ns,
            3500u);
  EXPECT_EQ(std::get<DoneMsg>(*decode(bytes_of(DoneMsg{9, 1234}))).measured_ns, 1234u);
  EXPECT_EQ(std::get<StartMsg>(*decode(bytes_of(StartMsg{9}))).grant_id, 9u);
  EXPECT_EQ(std::get<DiscardMsg>(*decode(bytes_of(DiscardMsg{9}))).grant_id, 9u);
  auto b = decode(bytes_of(ByeMsg{ByeReason::kShutdown, "agent stopping"}));
  EXPECT_EQ(std::get<ByeMsg>(*b).text, "agent stopping");
  auto wel = decode(bytes_of(Welcome{3, "ripple", 20'000'000, FailMode::kClosed}));
  EXPECT_EQ(std::get<Welcome>(*wel).policy, "ripple");
  EXPECT_EQ(std::get<Welcome>(*wel).fail_mode, FailMode::kClosed);
}

// Tests that a Welcome's (and a Grant's) suggested chunk size round-trips, travels in a byte the older
// format left as padding (the message size is unchanged: an older engine reads the rest
// as before and an older agent's zero means "none"), and that a size no power of two in
// range is refused on both sides with the field named.
TEST(EngineProtocol, WelcomeSuggestsAChunkSize) {
  Welcome w{3, "ripple", 20'000'000, FailMode::kOpen};
  const auto none = bytes_of(w);
  EXPECT_EQ(std::get<Welcome>(*decode(none)).chunk_bytes, 0u);
  w.chunk_bytes = 32ull << 20;
  const auto some = bytes_of(w);
  ASSERT_EQ(some.size(), none.size());
  EXPECT_EQ(std::get<Welcome>(*decode(some)).chunk_bytes, 32ull << 20);
  std::size_t diff = 0;
  for (std::size_t i = 0; i < some.size(); ++i) diff += some[i] != none[i];
  EXPECT_EQ(diff, 1u) << "one former padding byte carries it";
  std::vector<std::uint8_t> out;
  w.chunk_bytes = 3ull << 20;
  Status s = encode(w, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("welcome.chunk_bytes"), std::string::npos) << s.error().message;
  w.chunk_bytes = 1024;
  EXPECT_FALSE(encode(w, out).ok()) << "below 4 KiB";
  auto bad = some;
  for (std::size_t i = 0; i < bad.size(); ++i)
    if (bad[i] != none[i]) bad[i] = 63;
  EXPECT_NE(decode_error(bad).find("welcome.chunk_shift: 63 out of range"), std::string::npos) << decode_error(bad);
  // Every Grant carries the current suggestion the same way.
  GrantMsg g{9, 7, 2, 3, 300, 4000, 5000, true};
  const auto g_none = bytes_of(g);
  g.chunk_bytes = 128ull << 20;
  const auto g_some = bytes_of(g);
  ASSERT_EQ(g_some.size(), g_none.size());
  EXPECT_EQ(std::get<GrantMsg>(*decode(g_some)).chunk_bytes, 128ull << 20);
  EXPECT_EQ(std::get<GrantMsg>(*decode(g_none)).chunk_bytes, 0u);
  g.chunk_bytes = 5;
  Status gs = encode(g, out);
  ASSERT_FALSE(gs.ok());
  EXPECT_NE(gs.error().message.find("grant.chunk_bytes"), std::string::npos) << gs.error().message;
}

// Tests that a Hello carries the engine's GPU memory in a former padding byte: an older
// engine's hello (that byte 0) reads as unknown, and a value out of range is refused.
TEST(EngineProtocol, HelloCarriesTheGpuMemory) {
  Hello h = hello();
  const auto none = bytes_of(h);
  EXPECT_EQ(std::get<Hello>(*decode(none)).memory, Memory::kUnknown);
  for (Memory m : {Memory::kDiscrete, Memory::kIntegrated}) {
    h.memory = m;
    const auto some = bytes_of(h);
    ASSERT_EQ(some.size(), none.size());
    EXPECT_EQ(std::get<Hello>(*decode(some)).memory, m);
    std::size_t diff = 0;
    for (std::size_t i = 0; i < some.size(); ++i) diff += some[i] != none[i];
    EXPECT_EQ(diff, 1u) << "one former padding byte carries it";
  }
  auto bad = bytes_of(h);
  for (std::size_t i = 0; i < bad.size(); ++i)
    if (bad[i] != none[i]) bad[i] = 3;
  EXPECT_NE(decode_error(bad).find("hello.memory: 3 is not unknown (0), discrete (1) or integrated (2)"),
            std::string::npos)
      << decode_error(bad);
}

// Tests that malformed datagrams are refused with a message naming what is wrong:
// too short, bad magic, other version, length mismatch, truncation, unknown type,
// an unterminated name, a kind out of range, a zero-byte unit, a zero-unit grant.
TEST(EngineProtocol, RefusesMalformedDatagrams) {
  const auto good = bytes_of(hello());
  EXPECT_NE(decode_error({1, 2, 3}).find("shorter than the 16-byte header"), std::string::npos);
  auto d = good;
  d[0] ^= 0xff;
  EXPECT_NE(decode_error(d).find("bad magic"), std::string::npos);
  d = good;
  d[4] = 9;
  EXPECT_NE(decode_error(d).find("version 9"), std::string::npos);
  d = good;
  d.pop_back();
  EXPECT_NE(decode_error(d).find("header says"), std::string::npos);
  d = good;
  d.resize(good.size() - 40);  // one unit short, header length fixed up
  const std::uint32_t len = static_cast<std::uint32_t>(d.size());
  std::memcpy(d.data() + 8, &len, 4);
  EXPECT_NE(decode_error(d).find("hello: 120 bytes, expected 160"), std::string::npos);
  d = good;
  d[6] = 42;
  EXPECT_NE(decode_error(d).find("unknown type 42"), std::string::npos);
  d = good;
  std::memset(d.data() + 16, 'x', kNameBytes);
  EXPECT_NE(decode_error(d).find("hello.name: not NUL-terminated"), std::string::npos);
  d = good;
  d[16 + 32] = 5;
  EXPECT_NE(decode_error(d).find("hello.kind: 5"), std::string::npos);
  d = good;
  std::memset(d.data() + 16 + 64, 0, 8);  // unit 0: 0 bytes
  EXPECT_NE(decode_error(d).find("hello.unit[0].bytes: 0 out of range"), std::string::npos);
  d = bytes_of(GrantMsg{1, 1, 0, 1, 1, 1, 1, false});
  std::memset(d.data() + 16 + 20, 0, 4);  // count = 0
  EXPECT_NE(decode_error(d).find("grant: count is 0"), std::string::npos);
  EXPECT_NE(decode_error(bytes_of(GrantMsg{1, 1, 0, 1, 1, 100, 1, false, 101})).find("grant.not_before_ns: 101"),
            std::string::npos);
  d = bytes_of(GrantMsg{1, 1, 0, 1, 1, 1, 1, false});
  d[4] = 1;  // a version-1 peer
  EXPECT_NE(decode_error(d).find("version 1, this agent speaks 2"), std::string::npos);
  std::vector<std::uint8_t> out;
  Hello big = hello();
  big.name = std::string(40, 'n');
  EXPECT_FALSE(encode(big, out).ok());
  // Names that are not UTF-8 (an engine's name reaches JSON replies, metrics and traces;
  // a stray 0xff in one ended the agent at the next status): refused by name. UTF-8 is
  // accepted, overlong forms and surrogates are not.
  for (const std::string bad : {std::string("bad\xffname"), std::string("\xc0\xaf"), std::string("\xed\xa0\x80"),
                                std::string("cut\xc3")}) {
    Hello h = hello();
    h.name = bad;
    EXPECT_NE(decode_error(bytes_of(h)).find("hello.name: not UTF-8"), std::string::npos) << bad;
  }
  Hello utf = hello();
  utf.name = "\xe6\xa8\xa1\xe5\x9e\x8b-llm";  // "模型-llm"
  EXPECT_TRUE(decode(bytes_of(utf)).ok());
  utf.units[0].name = "layer\xff";
  EXPECT_NE(decode_error(bytes_of(utf)).find("hello.unit[0].name: not UTF-8"), std::string::npos);
  // A grant overhead above the hour a unit may last: the agent's predictions add it to
  // the units' durations, and a larger one wrapped them.
  Hello slow = hello();
  slow.grant_overhead_ns = kMaxDurationNs;
  EXPECT_TRUE(decode(bytes_of(slow)).ok());
  slow.grant_overhead_ns = kMaxDurationNs + 1;
  EXPECT_NE(decode_error(bytes_of(slow)).find("hello.grant_overhead_ns: 3600000000001 out of range (0 .. 1 h)"),
            std::string::npos);
}

// Tests the engine-side pipelining check: a successor whose work identity is not the
// engine's position is handed back with a Discard, and the matching grant is used.
TEST(EngineClient, DiscardsStaleSuccessor) {
  AgentSocket sock;
  ASSERT_TRUE(sock.ok());
  const std::string& path = sock.path;
  const int ls = sock.fd;
  std::vector<Message> seen;
  std::thread agent([&] {
    int c = accept(ls, nullptr, nullptr);
    std::vector<std::uint8_t> buf(kMaxMessageBytes);
    auto recv_one = [&] {
      ssize_t n = recv(c, buf.data(), buf.size(), 0);
      auto m = decode(std::span<const std::uint8_t>(buf.data(), n > 0 ? std::size_t(n) : 0));
      if (m) seen.push_back(*m);
    };
    recv_one();  // hello
    auto send_one = [&](const Message& m) { send_msg(c, m); };
    send_one(Welcome{0, "ripple", 20'000'000, FailMode::kOpen});
    const std::uint64_t far = monotonic_ns() + 10'000'000'000ull;
    send_one(GrantMsg{1, 5, 4, 2, 200, far, monotonic_ns(), true});   // wrong position
    send_one(GrantMsg{2, 5, 0, 4, 400, far, monotonic_ns(), false});  // the right one
    recv_one();  // discard of grant 1
    recv_one();  // bye
    close(c);
  });
  Hello h = hello();
  auto client = Client::connect(path, h, 2000);
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto g = (*client)->acquire(5, 0, 2000);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->grant_id, 2u);
  EXPECT_EQ((*client)->discarded(), 1u);
  client->reset();
  agent.join();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(std::get<DiscardMsg>(seen[1]).grant_id, 1u);
  EXPECT_TRUE(std::holds_alternative<ByeMsg>(seen[2]));
}

// Tests that a grant delivered ahead for a CPU release is held until its not_before:
// an acquire with a 5 ms timeout ends before the release (300 ms ahead) and keeps the
// grant; the next acquire returns the same grant no earlier than the release, with
// nothing discarded; hold_until_ns() says when, while it holds it.
TEST(EngineClient, HoldsGrantUntilItsCpuRelease) {
  AgentSocket sock;
  ASSERT_TRUE(sock.ok());
  const std::string& path = sock.path;
  const int ls = sock.fd;
  std::atomic<std::uint64_t> release{0};
  std::thread agent([&] {
    std::vector<std::uint8_t> buf(kMaxMessageBytes);
    const int c = accept_and_welcome(ls, buf);
    auto send_one = [&](const Message& m) { send_msg(c, m); };
    // 300 ms ahead, a 2 s lease after it: margins that hold under emulation and load.
    release = monotonic_ns() + 300'000'000;
    send_one(GrantMsg{1, 5, 0, 1, 100, release + 2'000'000'000, monotonic_ns(), false, release.load()});
    recv(c, buf.data(), buf.size(), 0);  // bye
    close(c);
  });
  auto client = Client::connect(path, hello(), 2000);
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto early = (*client)->acquire(5, 0, 5);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().code, kErrTimeout);
  EXPECT_EQ((*client)->held_for_release(), 1u);
  EXPECT_EQ((*client)->hold_until_ns(), release.load());  // a caller polling outside looks again then
  auto g = (*client)->acquire(5, 0, 2000);
  const std::uint64_t got = monotonic_ns();
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->grant_id, 1u);
  EXPECT_GE(got, release);
  EXPECT_EQ((*client)->discarded(), 0u);
  EXPECT_EQ((*client)->held_for_release(), 1u);
  EXPECT_EQ((*client)->hold_until_ns(), 0u);  // returned: nothing held
  client->reset();
  agent.join();
}

// Tests that an engine whose send finds the agent gone still learns why: the agent's Bye,
// queued before it closed, is read (the closed-loop test's SIGTERM check once saw "agent
// closed the session" instead of the agent's reason when an announce hit the closed socket
// before any receive).
TEST(EngineClient, SendToAClosedAgentReadsItsBye) {
  AgentSocket sock;
  ASSERT_TRUE(sock.ok());
  const std::string& path = sock.path;
  const int ls = sock.fd;
  std::thread agent([&] {
    std::vector<std::uint8_t> buf(kMaxMessageBytes);
    const int c = accept_and_welcome(ls, buf);
    auto send_one = [&](const Message& m) { send_msg(c, m); };
    send_one(ByeMsg{ByeReason::kShutdown, "ripple-agent is stopping"});
    close(c);
  });
  auto client = Client::connect(path, hello(), 2000);
  ASSERT_TRUE(client.ok()) << client.error().message;
  agent.join();  // the agent has said Bye and closed: nothing was read yet
  WorkMsg w{1, 0, {0}};
  Status s = (*client)->announce(w);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kErrAgentGone);
  EXPECT_EQ((*client)->agent_bye().text, "ripple-agent is stopping");
  EXPECT_EQ((*client)->agent_bye().reason, ByeReason::kShutdown);
  // The next receive finds the closed socket: the reason stays the agent's own.
  auto g = (*client)->acquire(1, 0, 100);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, kErrAgentGone);
  EXPECT_EQ((*client)->agent_bye().text, "ripple-agent is stopping");
  client->reset();
}

}  // namespace
}  // namespace ripple::engine

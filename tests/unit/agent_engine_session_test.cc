// Unit tests of the engine sessions (agent/daemon/engine_session.h): each protocol
// message turned into admission calls, and the identity and access rules on Hello,
// with a recording send and an injected executable lookup instead of a socket.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/engine_session.h"
#include "tests/unit/agent_daemon_fixture.h"

namespace ripple::daemon {
namespace {

using testing::DaemonFixture;
using testing::kMs;

engine::Hello hello(const std::string& name, engine::Kind kind = engine::Kind::kBestEffort) {
  engine::Hello h;
  h.name = name;
  h.kind = kind;
  h.period_ns = h.deadline_ns = 50 * kMs;
  h.units = {{"layer", 100'000'000, 1'000'000}};
  return h;
}

engine::WorkMsg work(std::uint64_t id, std::uint32_t units) {
  engine::WorkMsg w;
  w.work_id = id;
  w.units.assign(units, 0);
  return w;
}

struct Sessions : DaemonFixture {
  explicit Sessions(EngineSessions::ExeOf exe_of = exe_identity) : exe_of_(std::move(exe_of)) {}
  EngineSessions& es() {
    if (!es_)
      es_ = std::make_unique<EngineSessions>(cfg, *adm, exe_of_, [this](pid_t pid) -> std::optional<std::uint64_t> {
        const auto it = start_times.find(pid);
        return it == start_times.end() ? std::nullopt : std::optional<std::uint64_t>(it->second);
      });
    return *es_;
  }
  // One granted unit of session `s` run to its Done at `t` (1 ms of GPU time).
  void run_one_grant(EngineSession& s, admission::Nanos t) {
    ASSERT_TRUE(send(s, work(++work_id, 1), t).point);
    const admission::Decision d = adm->decide(t);
    ASSERT_EQ(d.grants.size(), 1u);
    ASSERT_TRUE(adm->on_sent(d.grants[0].engine, d.grants[0].id, t));
    ASSERT_TRUE(send(s, engine::StartMsg{d.grants[0].id}, t).point);
    ASSERT_TRUE(send(s, engine::DoneMsg{d.grants[0].id, 1'000'000}, t + 1 * kMs).point);
  }
  std::map<pid_t, std::uint64_t> start_times;  // the injected /proc/PID/stat start times
  std::uint64_t work_id = 0;
  EngineSessions::Outcome send(EngineSession& s, const engine::Message& m, admission::Nanos now = 0) {
    return es().handle(7, s, m, now, [this](const engine::Message& reply) {
      sent.push_back(reply);
      return true;
    });
  }
  EngineSessions::ExeOf exe_of_;
  std::unique_ptr<EngineSessions> es_;
  std::vector<engine::Message> sent;
};

// Tests that an unconfigured engine declaring deadline-bound is admitted as best-effort,
// welcomed with the policy, lease and fail mode, and counted as downgraded.
TEST(EngineSessions, UnconfiguredEngineAdmittedAsBestEffort) {
  Sessions f;
  f.cfg.agent.policy = "ripple";
  EngineSession s;
  const auto r = f.send(s, hello("llm", engine::Kind::kDeadlineBound));
  EXPECT_TRUE(r.close.empty()) << r.close;
  EXPECT_FALSE(r.point);
  ASSERT_TRUE(s.welcomed);
  EXPECT_EQ(s.name, "llm");
  const admission::EngineState* e = f.adm->engine(s.engine);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->spec.kind, admission::EngineKind::kBestEffort);
  EXPECT_EQ(e->spec.deadline, 0);
  ASSERT_EQ(f.sent.size(), 1u);
  const auto* w = std::get_if<engine::Welcome>(&f.sent[0]);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->engine_id, s.engine);
  EXPECT_EQ(w->policy, "ripple");
  EXPECT_EQ(w->lease_ns, static_cast<std::uint64_t>(f.cfg.agent.admission.lease));
  EXPECT_EQ(f.es().unconfigured_admitted(), 1u);
  EXPECT_EQ(f.es().deadline_claims_downgraded(), 1u);
}

// Tests that with agent.unconfigured_engines = "refuse" an unknown engine is told why
// (Bye kRefused naming the key), counted, and never reaches admission.
TEST(EngineSessions, UnconfiguredEngineRefusedWhenConfigured) {
  Sessions f;
  f.cfg.agent.refuse_unconfigured = true;
  EngineSession s;
  const auto r = f.send(s, hello("stranger"));
  EXPECT_NE(r.close.find("agent.unconfigured_engines"), std::string::npos) << r.close;
  EXPECT_TRUE(s.refused);
  EXPECT_FALSE(s.welcomed);
  EXPECT_TRUE(f.adm->engines().empty());
  ASSERT_EQ(f.sent.size(), 1u);
  const auto* bye = std::get_if<engine::ByeMsg>(&f.sent[0]);
  ASSERT_NE(bye, nullptr);
  EXPECT_EQ(bye->reason, engine::ByeReason::kRefused);
  EXPECT_EQ(f.es().hellos_refused(), 1u);
  EXPECT_EQ(f.es().unconfigured_refused().total(), 1u);
}

// Tests that a configured engine's kind, period and deadline come from its [[engine]]
// section, and that a peer of another uid cannot claim the name.
TEST(EngineSessions, ConfiguredEngineTakesItsSectionAndChecksUid) {
  Sessions f;
  config::EngineSection sec;
  sec.name = "planner";
  sec.kind = admission::EngineKind::kDeadlineBound;
  sec.period = 200 * kMs;
  sec.deadline = 150 * kMs;
  sec.uid = 1234;
  f.cfg.engines.push_back(sec);

  EngineSession impostor;
  impostor.peer.uid = impostor.cred.uid = 99;
  const auto bad = f.send(impostor, hello("planner"));
  EXPECT_NE(bad.close.find("must run as uid 1234"), std::string::npos) << bad.close;
  EXPECT_TRUE(impostor.refused);
  EXPECT_EQ(f.es().identity_refused().total(), 1u);

  EngineSession owner;
  owner.peer.uid = owner.cred.uid = 1234;
  const auto ok = f.send(owner, hello("planner", engine::Kind::kBestEffort));
  EXPECT_TRUE(ok.close.empty()) << ok.close;
  const admission::EngineState* e = f.adm->engine(owner.engine);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->spec.kind, admission::EngineKind::kDeadlineBound);
  EXPECT_EQ(e->spec.period, 200 * kMs);
  EXPECT_EQ(e->spec.deadline, 150 * kMs);
  EXPECT_EQ(f.es().unconfigured_admitted(), 0u);
}

// Tests that an [[engine]] exe is compared with the peer's executable as the injected
// lookup reports it: another executable is refused, the named one admitted.
TEST(EngineSessions, ConfiguredExeComparedWithPeerExecutable) {
  const auto sh = file_identity("/proc/self/exe");
  ASSERT_TRUE(sh.has_value());
  std::optional<std::pair<dev_t, ino_t>> reported = std::make_pair(sh->first, sh->second + 1);
  Sessions f([&](pid_t) { return reported; });
  config::EngineSection sec;
  sec.name = "vision";
  sec.exe = "/proc/self/exe";
  f.cfg.engines.push_back(sec);

  EngineSession other;
  const auto bad = f.send(other, hello("vision"));
  EXPECT_NE(bad.close.find("runs another executable"), std::string::npos) << bad.close;
  reported = sh;
  EngineSession same;
  EXPECT_TRUE(f.send(same, hello("vision")).close.empty());
  EXPECT_TRUE(same.welcomed);
}

// Tests that anything before Hello closes the session with the reason, and that a
// session's Bye closes it with the engine's own text.
TEST(EngineSessions, HelloFirstAndByeCloses) {
  Sessions f;
  EngineSession s;
  EXPECT_EQ(f.send(s, work(1, 2)).close, "expected hello, got work");
  ASSERT_TRUE(f.send(s, hello("llm")).close.empty());
  EXPECT_EQ(f.send(s, engine::ByeMsg{engine::ByeReason::kNormal, "done"}).close, "bye: done");
  EXPECT_EQ(f.send(s, engine::ByeMsg{engine::ByeReason::kNormal, ""}).close, "bye: no reason");
}

// Tests that Work, Start and Done reach admission as scheduling points, that a Done for
// an unknown grant is an error, and that agent.max_queued_works bounds the queue.
TEST(EngineSessions, WorkIsASchedulingPointAndQueueIsBounded) {
  Sessions f;
  f.cfg.agent.max_queued_works = 2;
  EngineSession s;
  ASSERT_TRUE(f.send(s, hello("llm")).close.empty());
  auto r = f.send(s, work(1, 4));
  EXPECT_TRUE(r.close.empty()) << r.close;
  EXPECT_TRUE(r.point);
  EXPECT_TRUE(f.send(s, work(2, 4)).point);
  r = f.send(s, work(3, 4));
  EXPECT_NE(r.close.find("2 works queued, at most 2 (agent.max_queued_works)"), std::string::npos) << r.close;
  EXPECT_EQ(f.es().works_refused().total(), 1u);

  const admission::Decision d = f.adm->decide(0);
  ASSERT_FALSE(d.grants.empty());
  const auto g = d.grants[0];
  ASSERT_TRUE(f.adm->on_sent(g.engine, g.id, 0));
  EXPECT_TRUE(f.send(s, engine::StartMsg{g.id}, 1 * kMs).point);
  EXPECT_TRUE(f.send(s, engine::DoneMsg{g.id, 1'000'000}, 2 * kMs).point);
  EXPECT_FALSE(f.send(s, engine::DoneMsg{g.id + 100, 1'000'000}, 3 * kMs).close.empty());
}

// Tests that a Work whose wire deadline_ns is past Nanos' range (>= 2^63, which the cast
// turned into a negative deadline, long past) ends the session with the field named, and
// announces nothing; the largest time is still accepted.
TEST(EngineSessions, WorkDeadlinePastTheLargestTimeIsRefused) {
  Sessions f;
  EngineSession s;
  ASSERT_TRUE(f.send(s, hello("llm")).close.empty());
  engine::WorkMsg w = work(1, 2);
  w.deadline_ns = std::uint64_t{1} << 63;
  const auto r = f.send(s, w);
  EXPECT_NE(r.close.find("deadline_ns 9223372036854775808"), std::string::npos) << r.close;
  EXPECT_FALSE(f.adm->engine(s.engine)->has_work());
  w.work_id = 2;
  w.deadline_ns = (std::uint64_t{1} << 63) - 1;
  EXPECT_TRUE(f.send(s, w).close.empty());
}

// Tests that closing a welcomed session removes its engine and counts it as gone with
// its grants, and that closing one that never said hello is no scheduling point.
TEST(EngineSessions, CloseCountsTheEngineGone) {
  Sessions f;
  EngineSession silent;
  EXPECT_FALSE(f.es().close(silent, 0));
  EngineSession s;
  ASSERT_TRUE(f.send(s, hello("llm")).close.empty());
  ASSERT_TRUE(f.send(s, work(1, 2)).point);
  const admission::Decision d = f.adm->decide(0);
  ASSERT_FALSE(d.grants.empty());
  EXPECT_TRUE(f.es().close(s, 1 * kMs));
  EXPECT_EQ(f.es().gone().count, 1u);
  EXPECT_EQ(f.es().gone().grants, d.grants.size());
  EXPECT_EQ(f.es().gone().bytes, 2u * 100'000'000u);
  EXPECT_FALSE(f.adm->engine(s.engine)->connected);
}

// Tests that when an engine process renews its session (a new catalog or chunk size: a
// new engine entry whose own counters start at zero) its totals go on from the closed
// session's, and that the gone entry keeps the totals it had when it closed.
TEST(EngineSessions, RenewedSessionKeepsTheProcessCounters) {
  Sessions f;
  f.start_times[42] = 1000;
  EngineSession first;
  first.cred.pid = 42;
  ASSERT_TRUE(f.send(first, hello("llm")).close.empty());
  f.run_one_grant(first, 10 * kMs);
  f.run_one_grant(first, 20 * kMs);
  ASSERT_TRUE(f.es().close(first, 30 * kMs));

  EngineSession second;
  second.cred.pid = 42;
  ASSERT_TRUE(f.send(second, hello("llm")).close.empty());
  ASSERT_NE(second.engine, first.engine);
  EXPECT_EQ(f.adm->engine(second.engine)->stats.grants, 0u);  // the session's own counters restart
  auto t = f.es().totals(second.engine);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pid, 42);
  EXPECT_EQ(t->session, 2u);
  EXPECT_EQ(t->stats.grants, 2u);
  EXPECT_EQ(t->stats.works_done, 2u);
  EXPECT_EQ(t->stats.bytes, 2 * 100'000'000);
  EXPECT_EQ(t->stats.busy, 2 * kMs);

  f.run_one_grant(second, 40 * kMs);
  t = f.es().totals(second.engine);
  EXPECT_EQ(t->stats.grants, 3u);
  EXPECT_EQ(t->stats.bytes, 3 * 100'000'000);
  EXPECT_EQ(t->stats.busy, 3 * kMs);
  const auto gone = f.es().totals(first.engine);
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->session, 1u);
  EXPECT_EQ(gone->stats.grants, 2u);
}

// Tests that another process under the same name, and a reused pid (another start
// time), start their counters afresh.
TEST(EngineSessions, AnotherProcessStartsAfresh) {
  Sessions f;
  f.start_times[42] = 1000;
  f.start_times[43] = 1000;
  EngineSession a;
  a.cred.pid = 42;
  ASSERT_TRUE(f.send(a, hello("llm")).close.empty());
  f.run_one_grant(a, 10 * kMs);
  ASSERT_TRUE(f.es().close(a, 20 * kMs));

  EngineSession other;
  other.cred.pid = 43;
  ASSERT_TRUE(f.send(other, hello("llm")).close.empty());
  EXPECT_EQ(f.es().totals(other.engine)->session, 1u);
  EXPECT_EQ(f.es().totals(other.engine)->stats.grants, 0u);

  f.start_times[42] = 2000;  // pid 42 exited and was given to a new process
  EngineSession reused;
  reused.cred.pid = 42;
  ASSERT_TRUE(f.send(reused, hello("llm")).close.empty());
  EXPECT_EQ(f.es().totals(reused.engine)->session, 1u);
  EXPECT_EQ(f.es().totals(reused.engine)->stats.grants, 0u);

  EngineSession vlm;  // and the same process under another name is another engine
  vlm.cred.pid = 43;
  ASSERT_TRUE(f.send(vlm, hello("vlm")).close.empty());
  EXPECT_EQ(f.es().totals(vlm.engine)->session, 1u);
}

// Tests that the processes remembered are bounded: once more than kProcessesKept have no
// session connected, the one gone longest is forgotten (its next session starts afresh)
// while a more recent one is still continued.
TEST(EngineSessions, RememberedProcessesAreBounded) {
  Sessions f;
  const pid_t n = static_cast<pid_t>(EngineSessions::kProcessesKept) + 1;
  for (pid_t pid = 1; pid <= n; ++pid) {
    f.start_times[pid] = 5;
    EngineSession s;
    s.cred.pid = pid;
    ASSERT_TRUE(f.send(s, hello("llm")).close.empty());
    ASSERT_TRUE(f.es().close(s, pid * kMs));
  }
  EngineSession oldest, newest;
  oldest.cred.pid = 1;
  newest.cred.pid = n;
  ASSERT_TRUE(f.send(oldest, hello("llm")).close.empty());
  ASSERT_TRUE(f.send(newest, hello("llm")).close.empty());
  EXPECT_EQ(f.es().totals(oldest.engine)->session, 1u);
  EXPECT_EQ(f.es().totals(newest.engine)->session, 2u);
}

}  // namespace
}  // namespace ripple::daemon

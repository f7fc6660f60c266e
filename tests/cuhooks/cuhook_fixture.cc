// The shared fixture of the interposer's tests (cuhook_fixture.h).
#include "tests/cuhooks/cuhook_fixture.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>
#include <utility>

namespace ripple::testing {
namespace {

std::string here() {
  char exe[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string s(exe, static_cast<std::size_t>(n > 0 ? n : 0));
  return s.substr(0, s.find_last_of('/'));
}

}  // namespace

const std::string kDir = here();                         // $O/tests/cuhooks
const std::string kHook = kDir + "/../../lib/libripple-cuhook.so";
const std::string kFakeDir = kDir + "/fake";

Outcome CuhookTest::run(std::vector<std::string> args, std::map<std::string, std::string> env, bool ptds,
                        std::function<void()> meanwhile) {
  std::map<std::string, std::string> e = {
      {"LD_PRELOAD", kHook},
      {"LD_LIBRARY_PATH", kFakeDir},
      {"NVTX_INJECTION64_PATH", kHook},
      {"FAKE_CUDA_LOG", tmp_ + "/fake"},
      {"FAKE_CUDA_GRAPH_BYTES", "65536"},
      {"RIPPLE_CUHOOK_STATS", tmp_ + "/stats.%p.json"},
      {"RIPPLE_SOCKET", sock_},
      {"RIPPLE_ENGINE", "driver-app"},
      {"RIPPLE_RECONNECT_MS", "50"},
  };
  // Under a sanitizer (tests/sanitize/run.sh) its runtime must load before the hook,
  // and its options reach the child.
  if (const char* pre = getenv("RIPPLE_TEST_PRELOAD")) e["LD_PRELOAD"] = std::string(pre) + ":" + kHook;
  for (const char* k : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"})
    if (const char* v = getenv(k)) e[k] = v;
  for (auto& [k, v] : env) e[k] = v;
  std::vector<std::string> envs;
  for (auto& [k, v] : e) envs.push_back(k + "=" + v);
  const std::string outp = tmp_ + "/out", errp = tmp_ + "/err";
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(outp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), r = open(errp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1), dup2(r, 2);
    std::vector<char*> av, ev;
    std::string prog = kDir + (ptds ? "/driver_app_ptds" : "/driver_app");
    av.push_back(prog.data());
    for (auto& a : args) av.push_back(a.data());
    av.push_back(nullptr);
    for (auto& s : envs) ev.push_back(s.data());
    ev.push_back(nullptr);
    execve(prog.c_str(), av.data(), ev.data());
    _exit(127);
  }
  if (meanwhile) meanwhile();
  Outcome r;
  // Bounded wait: a hang is a failure, not a stuck suite.
  for (int i = 0; i < 3000; ++i) {
    if (waitpid(pid, &r.status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (i == 2999) {
      kill(pid, SIGKILL);
      waitpid(pid, &r.status, 0);
      r.status = -2;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = slurp(outp);
  r.err = slurp(errp);
  for (auto& f : fs::directory_iterator(tmp_)) {
    const std::string n = f.path().filename().string();
    if (n.rfind("stats.", 0) == 0) r.stats_files.push_back(f.path().string());
    if (n.rfind("fake.", 0) == 0) r.fake_logs.push_back(f.path().string());
  }
  return r;
}

Outcome CuhookTest::run_across_restart(std::vector<std::string> args, GrantServer::Seen* seen,
                                       std::map<std::string, std::string> env, int down_ms,
                                       std::function<bool(const GrantServer::Seen&)> stop_when) {
  auto first = std::make_unique<GrantServer>(sock_);
  EXPECT_TRUE(first->start());
  GrantServer second(sock_);
  bool started = false;
  Outcome r = run(std::move(args), std::move(env), false, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));
    // The app must be running under the first agent before it goes (slow under
    // emulation or load: a fixed sleep could stop it before the first Hello).
    auto ready = [&] { return stop_when ? stop_when(first->seen()) : first->seen().works.size() >= 2; };
    bool was_ready = false;
    for (int i = 0; i < 2000 && !(was_ready = ready()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (stop_when) {
      EXPECT_TRUE(was_ready) << "the first agent never saw what the restart waits for";
    }
    first->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    started = second.start();
  });
  EXPECT_TRUE(started);
  *seen = second.seen();
  return r;
}

void CuhookTest::clear_outputs() {
  for (auto& f : fs::directory_iterator(tmp_)) {
    const std::string n = f.path().filename().string();
    if (n.rfind("stats.", 0) == 0 || n.rfind("fake.", 0) == 0) fs::remove(f.path());
  }
}

std::map<std::string, std::vector<unsigned long long>> CuhookTest::fake_counts(const Outcome& r, std::size_t i) {
  std::map<std::string, std::vector<unsigned long long>> m;
  if (i >= r.fake_logs.size()) return m;
  std::istringstream in(slurp(r.fake_logs[i]));
  std::string line, name;
  unsigned long long c, b, s, p;
  while (std::getline(in, line))
    if (std::istringstream l(line); line.rfind("query ", 0) != 0 && l >> name >> c >> b >> s >> p) m[name] = {c, b, s, p};
  return m;
}

std::map<std::string, unsigned long long> CuhookTest::fake_queries(const Outcome& r, std::size_t i) {
  std::map<std::string, unsigned long long> m;
  if (i >= r.fake_logs.size()) return m;
  std::istringstream in(slurp(r.fake_logs[i]));
  std::string q, name;
  unsigned long long c;
  for (std::string line; std::getline(in, line);)
    if (std::istringstream l(line); line.rfind("query ", 0) == 0 && l >> q >> name >> c) m[name] = c;
  return m;
}

void CuhookTest::write_profile() {
  json p = {{"format", "ripple-unit-catalog/1"}, {"model", "test"}, {"units", json::array()}};
  p["units"].push_back({{"name", "embed"}, {"bytes", 4096}, {"kernels", {"embed_k"}}});
  for (int l = 0; l < 4; ++l)
    p["units"].push_back({{"name", "layers." + std::to_string(l)}, {"bytes", 196608},
                          {"kernels", {"attn_k", "mlp_k", "norm_k"}}});
  p["units"].push_back({{"name", "head"}, {"bytes", 8192}, {"kernels", {"head_k"}}});
  std::ofstream(tmp_ + "/profile.json") << p.dump();
}

void CuhookTest::write_offload_catalog() {
  json cat = {{"format", "ripple-unit-catalog/1"}, {"model", "m"}, {"units", json::array()}};
  cat["units"].push_back({{"name", "embed"}, {"kind", "embed"}, {"bytes", 4096}});
  cat["units"].push_back({{"name", "layers.1"}, {"kind", "decoder"}, {"bytes", 777}});
  cat["units"].push_back({{"name", "head"}, {"kind", "head"}, {"bytes", 8192}});
  std::ofstream(tmp_ + "/cat.json") << cat.dump();
}

int CuhookTest::record(const std::string& out, const std::string& args, const std::string& catalog) {
  std::string cmd = "LD_LIBRARY_PATH=" + kFakeDir + " " + kDir + "/../../bin/ripple-profile record -o " + out +
                    (catalog.empty() ? "" : " --catalog " + catalog) + " -- " + kDir + "/driver_app direct " + args +
                    " >/dev/null 2>" + tmp_ + "/rec.err";
  return system(cmd.c_str());
}

std::map<std::string, ripple::engine::UnitInfo> by_name(const ripple::engine::Hello& h) {
  std::map<std::string, ripple::engine::UnitInfo> m;
  for (const auto& u : h.units) m[u.name] = u;
  return m;
}

std::size_t unrun_ahead(const json& st, const GrantServer::Seen& seen) {
  return st["works_ahead"].get<std::size_t>() > 0 && !seen.works.empty() ? seen.works.back().units.size() : 0;
}

}  // namespace ripple::testing

// agent_engine: a stand-in GPU engine — a TEST DOUBLE, not a model of a GPU — that
// speaks the real engine protocol through the engine client library
// (include/ripple/client.h) and "executes" each granted unit for unit_bytes / rate,
// sleeping in ticks and publishing the executed bytes to the emulated interference
// plant (tests/plant/plant.h), so plant-mode tasks slow down by kappa x bytes.
//
// Modes:
//   (default)   best-effort: announce a forward pass of --units units, run it grant by
//               grant, repeat until --duration-s; deadline-bound (--kind deadline-bound):
//               one forward pass every --period-ms, counting passes that end late.
//   --rtt N     benchmark: N one-unit passes of ~0 duration; prints the grant round
//               trip (announce -> grant received) p50/p99 in us.
//   --crash-after K   fault injection: _exit(3) in the middle of the K-th grant.
//   --garbage   fault injection: send one malformed datagram after the hello.
//   --churn N   fault injection: N sessions, one after another, that say hello and leave.
//   --flood-works N   fault injection: announce N works of --units units without
//               reading a grant; prints how the agent ended the session.
//   --copy-in F pipelined: each unit is a copy-in of F of its bytes then a copy-out of
//               the rest, and a unit granted in time overlaps the last one's copy-out
//               (tests/plant/pipe_gpu.h); 0 (default): one serial stream.
// Without an agent (connect fails, or it says bye) a fail-open engine runs unmanaged.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ripple/client.h"
#include "tests/plant/plant.h"
#include "tests/plant/pipe_gpu.h"

namespace {

using ripple::engine::monotonic_ns;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Opts {
  std::string socket = "/run/ripple/engine.sock", name = "llm", kind = "best-effort", plant, plant_create,
              memory = "unknown";
  double unit_mb = 2, rate_gbps = 1, period_ms = 0, deadline_ms = 0, duration_s = 10, tick_us = 200, spin_us = 0;
  double copy_in = 0, renew_s = 0;
  unsigned units = 8, rtt = 0, crash_after = 0, churn = 0, flood_works = 0;
  bool garbage = false, quiet = false;
  long agent_uid = -1;  // -1: this process's own uid (besides root)
};

void sleep_ns(std::uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  nanosleep(&ts, nullptr);
}

// Executes `units` units: bytes published as they are "streamed".
std::uint64_t execute(const Opts& o, ripple::PlantShm* shm, unsigned units, bool crash_midway) {
  const double bytes = o.unit_mb * 1e6 * units;
  const double ns_per_byte = 1.0 / o.rate_gbps;  // 1 GB/s = 1 byte/ns
  const std::uint64_t total_ns = static_cast<std::uint64_t>(bytes * ns_per_byte);
  const std::uint64_t t0 = monotonic_ns(), tick = static_cast<std::uint64_t>(o.tick_us * 1e3);
  std::uint64_t published = 0;
  for (;;) {
    const std::uint64_t el = monotonic_ns() - t0;
    const std::uint64_t done = el >= total_ns ? static_cast<std::uint64_t>(bytes)
                                              : static_cast<std::uint64_t>(static_cast<double>(el) / ns_per_byte);
    if (shm != nullptr && done > published) shm->bytes_executed.fetch_add(done - published, std::memory_order_acq_rel);
    published = done;
    if (crash_midway && el >= total_ns / 2) _exit(3);  // dies mid-grant, socket and all
    if (el >= total_ns) break;
    sleep_ns(std::min(tick, total_ns - el));
  }
  return monotonic_ns() - t0;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t r = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  CLI::App app{"stand-in engine for ripple-agent tests (TEST DOUBLE, not a GPU)", "agent_engine"};
  app.add_option("--socket", o.socket);
  app.add_option("--name", o.name);
  app.add_option("--kind", o.kind)->check(CLI::IsMember({"best-effort", "deadline-bound"}));
  app.add_option("--units", o.units, "units per forward pass")->check(CLI::Range(1u, 4096u));
  app.add_option("--unit-mb", o.unit_mb)->check(CLI::PositiveNumber);
  app.add_option("--rate-gbps", o.rate_gbps)->check(CLI::PositiveNumber);
  app.add_option("--period-ms", o.period_ms, "deadline-bound: one pass per period");
  app.add_option("--deadline-ms", o.deadline_ms, "deadline-bound: relative deadline (default: period)");
  app.add_option("--duration-s", o.duration_s);
  app.add_option("--tick-us", o.tick_us);
  app.add_option("--spin-us", o.spin_us, "busy-poll the agent socket this long before sleeping");
  app.add_option("--plant", o.plant, "attach to this plant shm and publish executed bytes");
  app.add_option("--plant-create", o.plant_create, "create this plant shm (rate = --rate-gbps) and publish to it");
  app.add_option("--rtt", o.rtt, "benchmark N grant round trips");
  app.add_option("--crash-after", o.crash_after, "exit abruptly in the middle of grant K");
  app.add_flag("--garbage", o.garbage, "send a malformed message after the hello");
  app.add_option("--churn", o.churn, "N sessions that say hello and leave at once");
  app.add_option("--flood-works", o.flood_works, "announce N works without reading a grant");
  app.add_option("--agent-uid", o.agent_uid, "the agent must run as root or this uid (default: this process's)");
  app.add_option("--copy-in", o.copy_in, "pipelined: copy-in share of each unit's bytes (0: serial)")
      ->check(CLI::Range(0.0, 0.95));
  app.add_option("--renew-s", o.renew_s,
                 "renew the session every S s, between passes: Bye, then a new Hello, as the interposer "
                 "does when its catalog or chunk size changes (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--memory", o.memory,
                 "the GPU memory its hello reports, as the interposer's does from the driver: discrete (host "
                 "bytes cross a link the engines share), integrated (unified memory, no link) or unknown "
                 "(an older engine's: treated as discrete)")
      ->check(CLI::IsMember({"unknown", "discrete", "integrated"}));
  app.add_flag("--quiet", o.quiet);
  CLI11_PARSE(app, argc, argv);
  if (o.copy_in > 0 && (o.rtt != 0 || o.crash_after != 0 || o.renew_s > 0)) {
    std::fprintf(stderr, "agent_engine: --copy-in does not combine with --rtt, --crash-after or --renew-s\n");
    return 2;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  ripple::PlantMap plant;
  std::string err;
  if (!o.plant_create.empty()) {
    plant = ripple::PlantMap::create(o.plant_create, &err);
    if (plant) {
      plant->version = ripple::kPlantVersion;
      plant->size = sizeof(ripple::PlantShm);
      plant->engine_pid = static_cast<std::uint32_t>(getpid());
      plant->rate_bytes_per_s = static_cast<std::uint64_t>(o.rate_gbps * 1e9);
      plant->unit_bytes = static_cast<std::uint64_t>(o.unit_mb * 1e6);
      std::snprintf(plant->label, sizeof plant->label, "%s", ripple::kPlantLabel);
      plant->magic.store(ripple::kPlantMagic, std::memory_order_release);
    }
  } else if (!o.plant.empty()) {
    plant = ripple::PlantMap::open(o.plant, &err);
  }
  if ((!o.plant.empty() || !o.plant_create.empty()) && !plant) {
    std::fprintf(stderr, "agent_engine: %s\n", err.c_str());
    return 1;
  }

  ripple::engine::Hello hello;
  hello.name = o.name;
  const bool bound = o.kind == "deadline-bound";
  hello.kind = bound ? ripple::engine::Kind::kDeadlineBound : ripple::engine::Kind::kBestEffort;
  hello.period_ns = static_cast<std::uint64_t>(o.period_ms * 1e6);
  hello.deadline_ns = static_cast<std::uint64_t>((o.deadline_ms > 0 ? o.deadline_ms : o.period_ms) * 1e6);
  hello.memory = o.memory == "integrated" ? ripple::engine::Memory::kIntegrated
                 : o.memory == "discrete" ? ripple::engine::Memory::kDiscrete
                                          : ripple::engine::Memory::kUnknown;
  const std::uint64_t unit_ns = static_cast<std::uint64_t>(o.unit_mb * 1e6 / o.rate_gbps);
  hello.units = {{"layer", static_cast<std::uint64_t>(o.unit_mb * 1e6), std::max<std::uint64_t>(1, unit_ns)}};
  // As the interposer does: a socket not served by root or the agent's uid is no agent.
  const ripple::engine::AgentCheck agent{true, o.agent_uid < 0 ? ::geteuid() : static_cast<uid_t>(o.agent_uid)};
  if (o.churn > 0) {
    unsigned ok = 0;
    std::string last;
    for (unsigned k = 0; k < o.churn && !g_stop; ++k) {
      auto c = ripple::engine::Client::connect(o.socket, hello, 2000, agent);
      if (c) ++ok;
      else last = c.error().message;
    }  // each leaves with a Bye (the client's destructor)
    std::printf("CHURN sessions=%u ok=%u last_error=\"%s\"\n", o.churn, ok, last.c_str());
    return ok == o.churn ? 0 : 1;
  }
  auto client = ripple::engine::Client::connect(o.socket, hello, 2000, agent);
  if (o.flood_works > 0) {
    if (!client) {
      std::fprintf(stderr, "agent_engine: %s\n", client.error().message.c_str());
      return 1;
    }
    unsigned sent = 0;
    for (std::uint64_t k = 1; k <= o.flood_works; ++k, ++sent)
      if (!(*client)->announce({k, 0, std::vector<std::uint32_t>(o.units, 0)})) break;
    // Read (grants, then a Bye or the end of the session) for at most 5 s.
    const std::uint64_t until = monotonic_ns() + 5'000'000'000ull;
    std::vector<std::uint8_t> buf(ripple::engine::kMaxMessageBytes);
    while ((*client)->agent_bye().text.empty() && monotonic_ns() < until) {
      pollfd p{(*client)->fd(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv((*client)->fd(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      auto m = ripple::engine::decode(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
      if (m)
        if (auto* b = std::get_if<ripple::engine::ByeMsg>(&*m)) {
          std::printf("FLOOD announced=%u bye=\"%s\"\n", sent, b->text.c_str());
          return 0;
        }
    }
    std::printf("FLOOD announced=%u bye=\"%s\"\n", sent, (*client)->agent_bye().text.c_str());
    return 0;
  }
  bool managed = client.ok();
  if (managed && o.spin_us > 0) (*client)->set_spin_ns(static_cast<std::uint64_t>(o.spin_us * 1e3));
  if (!managed) std::fprintf(stderr, "agent_engine %s: no agent (%s): running UNMANAGED (fail-open)\n",
                             o.name.c_str(), client.error().message.c_str());
  if (managed && o.garbage) {
    const char junk[] = "not a ripple message";
    ::send((*client)->fd(), junk, sizeof junk, MSG_NOSIGNAL);
  }

  std::vector<double> rtt_us;
  std::uint64_t passes = 0, late = 0, grants = 0, bytes = 0;
  const std::uint64_t t_end = monotonic_ns() + static_cast<std::uint64_t>(o.duration_s * 1e9);
  std::uint64_t next_release = monotonic_ns();
  const std::uint64_t renew_ns = static_cast<std::uint64_t>(o.renew_s * 1e9);
  std::uint64_t next_renew = monotonic_ns() + renew_ns, renewals = 0;
  std::string bye;
  // The agent left (whichever call noticed first): fail-open, loudly, with its reason.
  auto lose_agent = [&](const std::string& why) {
    managed = false;
    bye = (*client)->agent_bye().text.empty() ? why : (*client)->agent_bye().text;
    std::fprintf(stderr, "agent_engine %s: agent gone (%s): running UNMANAGED (fail-open)\n", o.name.c_str(),
                 bye.c_str());
  };
  const std::uint64_t unit_bytes = static_cast<std::uint64_t>(o.unit_mb * 1e6);
  std::optional<ripple::test::PipeGpu> gpu;
  if (o.copy_in > 0)
    gpu.emplace(o.rate_gbps, o.copy_in, o.tick_us, plant ? plant.get() : nullptr);
  // Pipelined: completions are reported by this thread, between its other calls.
  auto report_done = [&] {
    while (gpu) {
      auto c = gpu->take_completion();
      if (!c) break;
      if (managed) (void)(*client)->done(c->grant, c->span_ns);
    }
  };
  // Pipelined: one unit boundary after another; the thread passes a boundary once it
  // holds a grant covering the unit and the GPU has room, reporting completions meanwhile.
  auto run_pipelined = [&](std::uint64_t work, unsigned n) {
    ripple::engine::GrantMsg held;
    unsigned held_end = 0;
    for (unsigned u = 0; u < n && !g_stop;) {
      report_done();
      if (managed && u >= held_end) {
        auto r = (*client)->acquire(work, u, 0);
        if (!r) {
          if (r.error().code != ripple::engine::kErrTimeout) {
            lose_agent(r.error().message);
            continue;
          }
          pollfd p{(*client)->fd(), POLLIN, 0};
          const timespec ts{0, 200'000};
          (void)::ppoll(&p, 1, &ts, nullptr);
          continue;
        }
        held = *r;
        held_end = r->first + r->count;
        (void)(*client)->started(held);
        ++grants;
      }
      const bool first = managed && u == held.first, last = managed && u + 1 == held_end;
      if (!gpu->submit(unit_bytes, held, first, last, 200'000)) continue;
      bytes += unit_bytes;
      ++u;
    }
  };
  for (std::uint64_t work = 1; !g_stop && monotonic_ns() < t_end && (o.rtt == 0 || work <= o.rtt); ++work) {
    if (bound) {  // one pass per period
      while (!g_stop && monotonic_ns() < next_release) sleep_ns(std::min<std::uint64_t>(next_release - monotonic_ns(), 50'000'000));
      if (g_stop) break;
    }
    if (managed && renew_ns > 0 && monotonic_ns() >= next_renew) {
      client->reset();  // Bye first, then the new Hello: the interposer's order
      client = ripple::engine::Client::connect(o.socket, hello, 2000, agent);
      if (!client) {
        managed = false;
        bye = client.error().message;
        std::fprintf(stderr, "agent_engine %s: renewal failed (%s): running UNMANAGED (fail-open)\n",
                     o.name.c_str(), bye.c_str());
      }
      ++renewals;
      next_renew = monotonic_ns() + renew_ns;
    }
    const std::uint64_t release = monotonic_ns();
    const std::uint64_t deadline = bound ? release + hello.deadline_ns : 0;
    next_release = release + hello.period_ns;
    const unsigned n = o.rtt ? 1 : o.units;
    ripple::engine::WorkMsg w{work, deadline, std::vector<std::uint32_t>(n, 0)};
    if (managed) {
      if (auto s = (*client)->announce(w); !s) lose_agent(s.error().message);
    }
    if (gpu) run_pipelined(work, n);
    for (unsigned first = gpu ? n : 0; first < n && !g_stop;) {
      unsigned count = n - first;
      ripple::engine::GrantMsg g;
      if (managed) {
        const std::uint64_t asked = monotonic_ns();
        auto r = (*client)->acquire(work, first, 1000);
        if (!r) {
          if (r.error().code == ripple::engine::kErrTimeout) continue;
          lose_agent(r.error().message);
          continue;
        }
        if (o.rtt) rtt_us.push_back(static_cast<double>(monotonic_ns() - asked) / 1e3);
        g = *r;
        count = g.count;
        (void)(*client)->started(g);
      }
      ++grants;
      const bool crash = o.crash_after != 0 && grants == o.crash_after;
      const std::uint64_t took = o.rtt ? 1000 : execute(o, plant ? plant.get() : nullptr, count, crash);
      bytes += static_cast<std::uint64_t>(o.unit_mb * 1e6) * count;
      if (managed) (void)(*client)->done(g, took);
      first += count;
    }
    if (gpu && bound) {  // a deadline-bound pass ends when its last unit has
      while (!g_stop && !gpu->idle()) {
        report_done();
        sleep_ns(200'000);
      }
    }
    ++passes;
    if (bound && monotonic_ns() > deadline) ++late;
  }
  if (gpu) {
    gpu->drain();
    report_done();
  }
  if (o.rtt) {
    std::printf("RTT engine=%s n=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f\n", o.name.c_str(), rtt_us.size(),
                pct(rtt_us, 50), pct(rtt_us, 99), pct(rtt_us, 100));
  }
  if (!o.quiet)
    std::printf("RESULT engine=%s passes=%llu late=%llu grants=%llu gb=%.3f managed_at_end=%d renewals=%llu "
                "bye=\"%s\"\n",
                o.name.c_str(), static_cast<unsigned long long>(passes), static_cast<unsigned long long>(late),
                static_cast<unsigned long long>(grants), static_cast<double>(bytes) / 1e9, managed ? 1 : 0,
                static_cast<unsigned long long>(renewals), bye.c_str());
  if (plant && !o.plant_create.empty()) shm_unlink(plant.name().c_str());
  return 0;
}

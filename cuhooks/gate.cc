// The gate's agent session (cuhooks/runtime.h): works announced, grants acquired in
// order, connects and reconnects, the grant timeout, and the session renewed when the
// announced catalog changes (a learned pass, a new chunk size).
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "cuhooks/counters.h"
#include "cuhooks/runtime.h"

namespace ripple::cuhook {

using engine::monotonic_ns;

void Runtime::build_work_locked(const std::vector<std::uint32_t>& units, std::vector<std::uint32_t>& kept,
                                std::vector<std::uint32_t>& wire, std::vector<std::size_t>& pos0) const {
  // Each unit as its sub-units; a work holds at most kMaxWorkUnits of them (the units
  // that do not fit are the next work's, opened at their boundary).
  // No allocation per unit: a work of a short learned pass spans thousands of units and
  // is built twice (announced ahead, then compared at its boundary), per call ~2 mallocs
  // a unit were most of a gated graph launch's instructions (issue 18).
  kept.clear();
  wire.clear();
  pos0.clear();
  kept.reserve(units.size());
  pos0.reserve(units.size() + 1);
  wire.reserve(units.size());
  for (std::uint32_t u : units) {
    const bool split = u < subs_.size() && !subs_[u].empty();
    const std::size_t n = split ? subs_[u].size() : 1;
    if (!kept.empty() && wire.size() + n > engine::kMaxWorkUnits) break;
    kept.push_back(u);
    pos0.push_back(wire.size());
    if (split) wire.insert(wire.end(), subs_[u].begin(), subs_[u].end());
    else wire.push_back(u);
  }
  pos0.push_back(wire.size());
}

void Runtime::open_work_locked(const std::vector<std::uint32_t>& units) {
  apply_chunk_locked();  // between works: no unit is split under the old size
  // The work announced ahead, asked for as it was built (the same units, subs_ unchanged
  // since): building it again gives the same positions, so it is adopted as it is (per
  // unit of a work thousands of units long, the build and compare were ~150 instructions
  // a graph launch). Anything else takes the general path below, settle_ahead_locked.
  if (ahead_ && client_ && ahead_->id == work_id_ && ahead_->wire_gen == wire_gen_ && ahead_->units == units) {
    work_units_ = std::move(ahead_->units);
    work_wire_ = std::move(ahead_->wire);
    work_pos0_ = std::move(ahead_->pos0);
    ahead_.reset();
    pos_ = base_ = acq_next_ = 0;
    return;
  }
  std::vector<std::uint32_t> kept, wire;
  std::vector<std::size_t> pos0;
  build_work_locked(units, kept, wire, pos0);
  const bool adopted = settle_ahead_locked(kept, wire, pos0);
  work_units_ = std::move(kept);
  work_wire_ = std::move(wire);
  work_pos0_ = std::move(pos0);
  pos_ = base_ = acq_next_ = 0;
  if (!adopted && client_ && !announce_locked(0)) lose_agent_locked("failed to announce work");
}

// --- grants ahead ----------------------------------------------------------------------
// Each work costs one announce -> decide -> grant round trip at its first unit when it is
// announced there (~75 us on an H200 host: ~1 % of llama.cpp's decoding at ~11 tokens a
// work). The next work of a learned bare pass is known: the same pass from its start
// (a bare work ends at a pass end), the same span. So once the open work is granted to
// its end (no acquire of it is left), the next one is announced: the agent queues it
// behind the open one and may grant its first units as a successor while the open one
// runs, and at the boundary the grant is in hand. If the engine goes another way, the
// work announced ahead is drained (acquired in order and closed unrun: charged, as the
// rest of an abandoned work is) before the next work is announced; a session that ends
// (agent lost, grant timeout, renewal) takes it along, as it does cached successors. An
// engine that stops leaves the last work announced ahead unrun (the agent charged its
// grant, if it decided one: over-charged by one work, never under-charged).
void Runtime::announce_ahead_locked() {
  // Only once the pass is stable (matched kSpanAfterPasses times in a row, or
  // kSpanAfterCheapPasses for a pass whose drain charges next to nothing; as for works
  // of several passes): a pass dropped soon after it was learned (a layer pass before the
  // whole forward pass is) would drain a whole work announced ahead each time.
  // Not for a deadline-bound engine: the agent starts its period (and the work's
  // deadline) when a work is announced, so a work announced ahead would move them earlier.
  if (!cfg_.grant_ahead || cfg_.kind == engine::Kind::kDeadlineBound || ahead_ || !bare_work_ || !learned_ || !bare_stable_locked() || !client_ ||
      !grant_ || grant_end_ < work_wire_.size() || chunk_pending_ || pass_.empty())
    return;
  // Only when the open work ends at the pass end (a pass longer than a work does not).
  if ((bare_from_ + work_units_.size()) % pass_.size() != 0) return;
  std::vector<std::uint32_t> units;
  for (std::size_t n = bare_span_locked(0); n > 0; --n) units.insert(units.end(), pass_.begin(), pass_.end());
  Ahead a;
  build_work_locked(units, a.units, a.wire, a.pos0);
  a.wire_gen = wire_gen_;
  a.pass = pass_;
  engine::WorkMsg w;
  w.work_id = a.id = work_id_ + 1;
  w.units = a.wire;
  bool ok;
  {
    std::lock_guard<std::mutex> c(cm_);
    ok = client_ && client_->announce(w).ok();
  }
  if (!ok) return lose_agent_locked("failed to announce work");
  work_id_ = a.id;  // no acquire of the open work is left (granted to its end)
  g_c.works_ahead.fetch_add(1, std::memory_order_relaxed);
  if (a.units.size() > pass_.size()) g_c.multi_pass_works.fetch_add(1, std::memory_order_relaxed);
  ahead_ = std::move(a);
}

bool Runtime::settle_ahead_locked(const std::vector<std::uint32_t>& kept, const std::vector<std::uint32_t>& wire,
                                  const std::vector<std::size_t>& pos0) {
  if (!ahead_) return false;
  Ahead a = std::move(*ahead_);
  ahead_.reset();
  if (!client_ || a.id != work_id_) return false;  // not expected: a session end forgets it
  work_units_ = std::move(a.units);
  work_wire_ = std::move(a.wire);
  work_pos0_ = std::move(a.pos0);
  pos_ = base_ = acq_next_ = 0;
  if (work_units_ == kept && work_wire_ == wire && work_pos0_ == pos0) return true;
  // The engine went another way: every position of it acquired and closed unrun.
  g_c.ahead_drained.fetch_add(1, std::memory_order_relaxed);
  close_grant_locked();  // the last work's, if still in hand: it covers none of these
  const bool pass_work = pass_work_, bare_work = bare_work_;
  drain_locked();
  pass_work_ = pass_work;
  bare_work_ = bare_work;
  return false;
}

bool Runtime::announce_locked(std::size_t from) {
  engine::WorkMsg w;
  w.work_id = ++work_id_;
  w.units.assign(work_wire_.begin() + static_cast<std::ptrdiff_t>(from), work_wire_.end());
  base_ = acq_next_ = from;
  std::lock_guard<std::mutex> c(cm_);
  return client_ && client_->announce(w).ok();
}

// How long a connect waits for the agent's Welcome, under gm_ (every launching thread of
// the engine waits with it). A running agent answers a Hello from its event loop at once;
// a stopped or hung one never does. Fail-open: short, so such an agent costs the engine at
// most this once every RIPPLE_RECONNECT_MS (nothing once its listen backlog is full: the
// connect is refused at once), yet long enough for a loaded board's agent (one given up on
// leaves the engine unmanaged until the next attempt). Fail-closed: the engine waits for
// the agent anyway.
constexpr int kWelcomeWaitOpenMs = 250, kWelcomeWaitClosedMs = 1000;

bool Runtime::connect_locked(std::size_t from) {
  if (monotonic_ns() < next_connect_ns_) return false;
  engine::Hello hello;
  hello.name = cfg_.engine;
  hello.kind = cfg_.kind;
  hello.period_ns = cfg_.period_ns;
  hello.deadline_ns = cfg_.deadline_ns;
  hello.memory = device_memory_locked();
  hello.units = wire_cat_;
  auto c = engine::Client::connect(cfg_.socket, hello, fail_closed() ? kWelcomeWaitClosedMs : kWelcomeWaitOpenMs,
                                   engine::AgentCheck{true, cfg_.agent_uid});
  if (!c) {
    g_c.connect_failures.fetch_add(1, std::memory_order_relaxed);
    // Counted from the attempt's end: one that waited for a Welcome longer than
    // RIPPLE_RECONNECT_MS was otherwise retried (and waited for) at every boundary.
    next_connect_ns_ = monotonic_ns() + static_cast<std::uint64_t>(cfg_.reconnect_ms) * 1000000ull;
    if (!warned_unmanaged_) {
      warned_unmanaged_ = true;
      say("no agent at %s (%s): %s", cfg_.socket.c_str(), c.error().message.c_str(),
          fail_closed() ? "waiting for it (fail-closed)" : "running UNMANAGED (fail-open); will retry");
    }
    return false;
  }
  {
    std::lock_guard<std::mutex> cl(cm_);
    client_ = std::move(*c);
    agent_fail_ = client_->welcome().fail_mode;
  }
  g_c.agent_connects.fetch_add(1, std::memory_order_relaxed);
  note_suggestion_locked(client_->welcome().chunk_bytes);
  const bool quiet = std::exchange(quiet_renewal_, false);
  if (renewing_ && !warned_unmanaged_ && !quiet) say("new session with the learned units (%zu in the catalog)", catalog_.size());
  else if (warned_unmanaged_ || (ever_connected_ && !quiet)) say("connected to the agent at %s: managed again", cfg_.socket.c_str());
  renewing_ = false;
  session_catalog_ = wire_cat_;
  ever_connected_ = true;
  warned_unmanaged_ = false;
  // Announce what is left of the open work (from the unit being acquired) under a new id.
  if (from < work_wire_.size() && !announce_locked(from)) {
    lose_agent_locked("failed to announce work");
    return false;
  }
  return true;
}

engine::Memory Runtime::device_memory_locked() {
  if (memory_ != engine::Memory::kUnknown) return memory_;
  CUdevice dev = 0;
  int integrated = 0;
  if (drv_.ctx_get_device && drv_.device_attribute && drv_.ctx_get_device(&dev) == CUDA_SUCCESS &&
      drv_.device_attribute(&integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED, dev) == CUDA_SUCCESS)
    memory_ = integrated ? engine::Memory::kIntegrated : engine::Memory::kDiscrete;
  return memory_;
}

void Runtime::end_session_locked(std::uint64_t retry_ns) {
  {
    std::lock_guard<std::mutex> c(cm_);
    client_.reset();  // sends Bye if the socket still works; never blocks
  }
  gen_.fetch_add(1);
  drop_grant_locked();  // the session's: nothing to report it to
  // The agent dropped the engine's queue. Defensive: no path reaches here with an ahead
  // today (a work is announced ahead only once the open one is granted to its end, and no
  // acquire, so no session end, comes before the next work adopts or drops it; a reconnect
  // re-announces under a new work id). Kept so that an earlier end or a reconnect that
  // announces nothing cannot adopt a work the new session never heard of.
  ahead_.reset();
  next_connect_ns_ = retry_ns ? monotonic_ns() + retry_ns : 0;
}

void Runtime::lose_agent_locked(const std::string& why) {
  g_c.agent_losses.fetch_add(1, std::memory_order_relaxed);
  end_session_locked(fail_closed() ? 0 : static_cast<std::uint64_t>(cfg_.reconnect_ms) * 1000000ull);
  say("lost the agent (%s): %s", why.c_str(),
      fail_closed() ? "waiting for it (fail-closed)" : "running UNMANAGED (fail-open) until it is back");
  warned_unmanaged_ = true;
}

// A grant that did not come within RIPPLE_GRANT_TIMEOUT_MS. The unit runs unmanaged, so
// the engine's position moves past what the agent will grant next: a grant arriving
// later fails the client's (work, first) check, is discarded, and the agent grants the
// same units again, forever (probe defect H3: 100,000+ stale grants a second). So the
// agent counts as lost for this work: the session ends (Bye: the agent settles and drops
// the engine's queue), the engine runs unmanaged (also when fail-closed: the timeout is
// the bound the user asked for) and after RIPPLE_RECONNECT_MS the next boundary connects
// and announces the rest of the open work under a new id, the agent-restart path.
// Until then acquire_locked returns at once (unmanaged_until_ns_): a fail-closed engine
// that waited in its connect loop instead blocked each boundary until the reconnect.
void Runtime::grant_timeout_locked() {
  if (g_c.grant_timeouts.fetch_add(1, std::memory_order_relaxed) == 0)
    say("no grant within RIPPLE_GRANT_TIMEOUT_MS=%d ms: session ended, running UNMANAGED, a new session in %d ms "
        "(said once; counted as grant_timeouts)", grant_timeout_ms(), cfg_.reconnect_ms);
  end_session_locked(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(cfg_.reconnect_ms) * 1000000ull));
  unmanaged_until_ns_ = next_connect_ns_;
  // Not "lost the agent": the agent is there; a reconnect says nothing either.
  ever_connected_ = false;
}

bool Runtime::acquire_locked(std::size_t pos) {
  const std::uint64_t t0 = monotonic_ns();
  const int timeout_ms = grant_timeout_ms();
  // The grant wait's bound runs from the session's start: a fail-closed engine may have
  // waited for the agent first (bounded by nothing: it waits as long as the agent is
  // away), and a bound that had passed by then timed the new session out at its first look.
  std::uint64_t limit = 0;
  bool first_look = true;
  for (;;) {
    if (!client_) {
      // After a grant timeout: unmanaged until the reconnect, fail-closed too.
      if (t0 < unmanaged_until_ns_) return false;
      if (!connect_locked(pos)) {
        if (!fail_closed()) return false;
        // Fail-closed: this thread (and the engine) waits for the agent.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      limit = 0;
    }
    if (timeout_ms > 0 && limit == 0) limit = monotonic_ns() + std::uint64_t(timeout_ms) * 1000000ull;
    // Look for the grant without waiting, then wait on the socket with cm_ released:
    // the watcher needs cm_ to report Done, and the agent may grant again only after
    // that report (its grant slots are full). Waiting inside acquire() with cm_ held
    // starved the watcher and cost each unit up to the acquire timeout.
    Result<engine::GrantMsg> g = make_error("no client");
    int fd = -1;
    std::uint64_t hold_until = 0;  // a grant in hand held (not_before) until then
    {
      std::lock_guard<std::mutex> c(cm_);
      if (client_) {
        g = client_->acquire(work_id_, static_cast<std::uint32_t>(pos - base_), 0);
        fd = client_->fd();
        hold_until = client_->hold_until_ns();
      }
    }
    if (!g && g.error().code == engine::kErrTimeout && fd >= 0) {
      if (limit && monotonic_ns() > limit) {
        grant_timeout_locked();
        return false;
      }
      first_look = false;
      // Look again after 5 ms, or when a held grant may start (held for a CPU release or
      // the shared link: the agent predicted it to start then, so not up to 5 ms later).
      std::uint64_t wait_ns = 5'000'000;
      if (hold_until != 0) {
        const std::uint64_t now = monotonic_ns();
        wait_ns = hold_until > now ? std::min(wait_ns, hold_until - now) : 0;
      }
      const timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000ull), static_cast<long>(wait_ns % 1'000'000'000ull)};
      pollfd p{fd, POLLIN, 0};
      (void)::ppoll(&p, 1, &ts, nullptr);
      continue;  // read what came (or look again after 5 ms) under cm_
    }
    if (g) {
      grant_ = *g;
      grant_end_ = acq_next_ = base_ + g->first + g->count;
      if (g->chunk_bytes) note_suggestion_locked(g->chunk_bytes);
      {
        std::lock_guard<std::mutex> c(cm_);
        if (client_) (void)client_->started(*g);
      }
      pending_start_.store(true);
      g_c.grants.fetch_add(1, std::memory_order_relaxed);
      g_c.grant_waits.fetch_add(1, std::memory_order_relaxed);
      const std::uint64_t waited = monotonic_ns() - t0;
      g_c.wait_ns.fetch_add(waited, std::memory_order_relaxed);
      if (first_look) g_c.grants_in_hand.fetch_add(1, std::memory_order_relaxed);
      if (at_work_start_) {
        g_c.work_start_waits.fetch_add(1, std::memory_order_relaxed);
        if (first_look) g_c.work_starts_in_hand.fetch_add(1, std::memory_order_relaxed);
        g_c.work_start_wait_ns.fetch_add(waited, std::memory_order_relaxed);
      }
      if (at_chunk_gate_) {  // inside a unit: a sub-unit the grant in hand did not cover
        g_c.chunk_waits.fetch_add(1, std::memory_order_relaxed);
        g_c.chunk_wait_ns.fetch_add(waited, std::memory_order_relaxed);
      }
      return true;
    }
    first_look = false;
    if (g.error().code == engine::kErrTimeout) {
      if (limit && monotonic_ns() > limit) {
        grant_timeout_locked();
        return false;
      }
      continue;
    }
    lose_agent_locked(g.error().message);
  }
}

// The agent must know the learned units: a new session whose Hello holds them (the
// restart path: the next acquire connects and announces the open work). Unchanged names
// and bytes keep the session.
void Runtime::renew_session_locked() {
  rebuild_wire_locked();
  bool same = client_ && session_catalog_.size() == wire_cat_.size();
  for (std::size_t i = 0; same && i < wire_cat_.size(); ++i)
    same = session_catalog_[i].name == wire_cat_[i].name && session_catalog_[i].bytes == wire_cat_[i].bytes;
  if (!client_ || same) return;
  close_grant_locked();
  // Let the watcher report the closed grants' GPU time to the session they belong to.
  for (int i = 0; i < 50 && inflight_.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard<std::mutex> c(cm_);
    client_.reset();  // Bye
  }
  gen_.fetch_add(1);
  drop_grant_locked();  // what the close left (nothing, unless the grant never started)
  ahead_.reset();
  next_connect_ns_ = 0;
  renewing_ = true;
}

// The agent's suggested chunk size (agent/pricing/chunk.h): the Welcome carries it, and
// every Grant carries the current one, so an engine follows it without asking (an engine
// usually connects before the agent has priced a job, when there is none yet). The hook
// announced its sub-units in the Hello, so a suggestion other than the size in use is
// applied at the next work: the wire catalog is rebuilt and, when it changed, a new
// session announces it (the learned-pass path). A size applied is kept at least
// RIPPLE_CHUNK_HOLD_MS (no churn of sessions when the allowances sit at a power-of-two
// boundary). RIPPLE_CHUNK_BYTES, when set, wins; record mode never chunks.
void Runtime::note_suggestion_locked(std::uint64_t suggested) {
  chunk_suggested_ = suggested;
  if (!suggested || cfg_.chunk_set || !cfg_.record_path.empty()) return;
  chunk_pending_ = suggested != chunk_.load(std::memory_order_relaxed) ? suggested : 0;
}

void Runtime::apply_chunk_locked() {
  if (!chunk_pending_) return;
  const std::uint64_t now = monotonic_ns();
  if (now < chunk_hold_until_ns_) return;
  const std::uint64_t c = std::exchange(chunk_pending_, 0);
  const std::uint64_t was = chunk_.exchange(c);
  chunk_hold_until_ns_ = now + static_cast<std::uint64_t>(cfg_.chunk_hold_ms) * 1000000ull;
  const auto n = g_c.chunk_changes.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= 3)
    say("chunk size %llu bytes as the agent suggests (was %llu; RIPPLE_CHUNK_BYTES overrides)%s",
        static_cast<unsigned long long>(c), static_cast<unsigned long long>(was),
        n == 3 ? " (said 3 times; counted as chunk_changes)" : "");
  const bool had = client_ != nullptr;
  renew_session_locked();
  if (had && !client_) quiet_renewal_ = true;
}

}  // namespace ripple::cuhook

#include "tools/bench/ripple-sim/runner.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <deque>
#include <limits>
#include <map>
#include <memory>

#include "agent/policy/registry.h"
#include "tools/bench/ripple-sim/event_queue.h"
#include "tools/bench/ripple-sim/rng.h"

namespace ripple::sim {

using admission::EngineId;
using admission::kNever;
using pricing::JobSeq;

namespace {

enum Ev : std::uint32_t {
  kRelease,          // a = task
  kJobEnd,           // a = task, gen
  kTracerRelease,    // a = task, b = seq
  kTracerComplete,   // a = task, b = seq, gen = completion time
  kSchedule,
  kWake,             // gen
  kDeliver,          // a = engine, b = grant
  kEngineTry,        // a = engine
  kGpuStart,         // a = engine, gen
  kUnitEnd,          // a = engine, gen
  kFrameRelease,     // a = engine
  kMsgWork,          // a = engine, b = work id, gen = deadline (0: none)
  kMsgStart,         // a = engine, b = grant
  kMsgDone,          // a = engine, b = grant, gen = measured
  kMsgDiscard,       // a = engine, b = grant
  kScoreStart,
  kScoreEnd,
};

struct Job {
  JobSeq seq = 0;
  Nanos release = 0;
  double remaining = 0;  // solo work left, ns
  double m = 1;          // this job's slowdown exponent (TaskModel::slowdown_sigma)
};

struct TaskState {
  const RunTask* cfg = nullptr;
  Rng rng;
  Rng kappa_rng;  // its own stream: the solo draws do not depend on slowdown_sigma
  Nanos phase = 0;
  JobSeq next_seq = 0;
  std::deque<Job> queue;  // front runs (when running)
  bool running = false;
  double rate = 1.0;
  bool posted = false;  // an end is posted for the running job at `rate`
  std::uint64_t gen = 0;
  TaskResult result;
  Nanos release_of(JobSeq seq) const { return phase + static_cast<Nanos>(seq) * cfg->model.period; }
};

enum class Phase { kIdle, kWaiting, kHolding, kStarting, kRunning };

struct EngineRt {
  const EngineModel* m = nullptr;
  EngineId id = 0;
  GrantCache cache;
  Phase phase = Phase::kIdle;
  std::uint64_t work = 0;   // current work id
  std::uint32_t pos = 0;    // next unit of the pass to run
  GrantMsg g;               // the grant starting or running
  std::uint32_t in_grant = 0;  // units of g done
  double unit_left = 0;     // nominal ns left of the running unit
  double unit_rate = 0;     // its nominal bytes per ns
  double share = 1.0;       // bandwidth share it runs at
  Nanos grant_start = 0;
  std::optional<GrantMsg> ahead;  // issue_ahead: the next grant, started, queued behind g
  Nanos ahead_start = 0;
  Rng rng;                  // its grants' time factors (EngineModel::time_sigma)
  double grant_factor = 1;  // the running grant's
  std::uint64_t gen = 0;
  bool gen_posted = false;  // a unit end is posted at `share`
  Nanos frame_release = 0, next_frame = 0;
  std::vector<std::pair<Nanos, Nanos>> frames;  // (release, end)
  std::vector<Nanos> pass_ends;
  EngineResult result;
};

class Sim {
 public:
  explicit Sim(const RunConfig& cfg) : cfg_(cfg), ledger_(cfg.params) {}

  Result<RunResult> go() {
    auto pol = policy::make_policy(cfg_.policy);
    if (!pol) return pol.error();
    for (const RunTask& t : cfg_.tasks) {
      pricing::TaskSpec spec;
      spec.name = t.model.name;
      spec.period = t.model.period;
      spec.deadline = t.deadline;
      spec.miss_tolerance = t.miss_tolerance;
      spec.solo_profile = t.solo_profile;
      if (t.prior_slope_ms_per_gb) spec.prior_slope_ns_per_byte = *t.prior_slope_ms_per_gb * 1e-3;
      if (std::string e = pricing::validate(spec); !e.empty()) return make_error("task {}: {}", spec.name, e);
      ledger_.add_task(std::move(spec));
    }
    adm_ = std::make_unique<admission::Admission>(ledger_, std::move(*pol), cfg_.options);
    if (!cfg_.trace_path.empty()) {
      trace_.open(cfg_.trace_path, std::ios::trunc);
      if (!trace_) return make_error("--trace: cannot create '{}'", cfg_.trace_path);
      adm_->set_trace([this](const admission::TraceRecord& r) {
        std::string_view name;
        if (r.kind == admission::TraceKind::kRelease || r.kind == admission::TraceKind::kComplete) {
          if (r.who < cfg_.tasks.size()) name = cfg_.tasks[r.who].model.name;
        } else {
          for (const EngineRt& e : engines_)
            if (e.id == r.who) name = e.m->name;
        }
        trace_ << admission::trace_json_line(r, name) << '\n';
      });
    }

    bursts_ = BurstProcess(cfg_.bursts, Rng::stream(cfg_.seed, 400));
    tasks_.resize(cfg_.tasks.size());
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      TaskState& t = tasks_[i];
      t.cfg = &cfg_.tasks[i];
      t.rng = Rng::stream(cfg_.seed, 100 + i);
      t.kappa_rng = Rng::stream(cfg_.seed, 200 + i);
      // Tasks start independently: the first release at a seeded phase within a period,
      // 10 ms after the start as periodic.cc does.
      t.phase = 10 * pricing::kNsPerMs + static_cast<Nanos>(t.rng.uniform() * static_cast<double>(t.cfg->model.period));
      t.result.name = t.cfg->model.name;
      q_.post(t.phase, kRelease, static_cast<std::uint32_t>(i));
    }
    engines_.resize(cfg_.engines.size());
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      EngineRt& e = engines_[i];
      e.m = &cfg_.engines[i];
      e.rng = Rng::stream(cfg_.seed, 300 + i);
      auto id = adm_->add_engine(e.m->spec(), 0);  // its hello at the start
      if (!id) return make_error("engine {}: {}", e.m->name, id.error().message);
      e.id = *id;
      e.result.name = e.m->name;
      e.result.kind = e.m->kind;
      e.result.pass_bytes = e.m->pass_bytes();
      if (e.m->kind == admission::EngineKind::kDeadlineBound)
        q_.post(e.m->first_release, kFrameRelease, static_cast<std::uint32_t>(i));
      else
        start_pass(e, 0);
    }
    t0_ = cfg_.prep;
    t1_ = cfg_.prep + cfg_.score;
    Nanos max_period = 0;
    for (const RunTask& t : cfg_.tasks) max_period = std::max(max_period, t.model.period);
    end_ = t1_ + std::max<Nanos>(pricing::kNsPerSec, 4 * max_period);
    q_.post(t0_, kScoreStart);
    q_.post(t1_, kScoreEnd);

    while (!q_.empty() && q_.top().time <= end_) {
      const Event ev = q_.pop();
      now_ = ev.time;
      handle(ev);
    }
    return finish();
  }

 private:
  // --- the fluid state: CPU jobs' progress and GPU units' progress -------------------
  void advance() {
    const double dt = static_cast<double>(now_ - last_);
    if (dt <= 0) return;
    for (TaskState& t : tasks_)
      if (t.running) t.queue.front().remaining -= dt * t.rate;
    for (EngineRt& e : engines_)
      if (e.phase == Phase::kRunning) e.unit_left -= dt * e.share;
    last_ = now_;
  }
  // After any change of who runs: the engines' share and byte rate, each job's rate, and
  // the predicted ends that changed.
  void recompute() {
    std::vector<Platform::Demand> demand;
    for (const EngineRt& e : engines_)
      demand.push_back({e.phase == Phase::kRunning ? e.unit_rate : 0.0, e.m->h2d_fraction});
    const std::vector<double> shares = cfg_.platform.engine_shares(demand);
    double beta = 0, sum = 0;  // bytes per ns = GB/s
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      const EngineRt& e = engines_[i];
      if (e.phase != Phase::kRunning) continue;
      sum += e.unit_rate;
      beta += e.unit_rate * shares[i];
    }
    if (!cfg_.platform.directed()) beta = sum * cfg_.platform.engine_share(sum);  // one factor for all
    for (std::size_t i = 0; i < engines_.size(); ++i) {
      EngineRt& e = engines_[i];
      if (e.phase != Phase::kRunning) continue;
      if (e.share == shares[i] && e.gen_posted) continue;
      e.share = shares[i];
      post_unit_end(static_cast<std::uint32_t>(i));
    }
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      TaskState& t = tasks_[i];
      if (!t.running) continue;
      double r = cfg_.platform.progress_rate(t.cfg->model.kappa_ms_per_gb, beta);
      if (t.queue.front().m != 1) r = std::pow(r, t.queue.front().m);
      if (r == t.rate && t.posted) continue;
      t.rate = r;
      post_job_end(static_cast<std::uint32_t>(i));
    }
  }
  void post_job_end(std::uint32_t i) {
    TaskState& t = tasks_[i];
    ++t.gen;
    t.posted = true;
    const double left = std::max(0.0, t.queue.front().remaining);
    q_.post(now_ + static_cast<Nanos>(std::ceil(left / t.rate)), kJobEnd, i, 0, t.gen);
  }
  void post_unit_end(std::uint32_t i) {
    EngineRt& e = engines_[i];
    ++e.gen;
    e.gen_posted = true;
    const double left = std::max(0.0, e.unit_left);
    q_.post(now_ + static_cast<Nanos>(std::ceil(left / e.share)), kUnitEnd, i, 0, e.gen);
  }

  // --- the agent (agent/daemon/agent.cc) ---------------------------------------------
  void point() {
    if (schedule_pending_) return;
    schedule_pending_ = true;
    q_.post(now_ + cfg_.delays.decision, kSchedule);
  }
  void check(const Status& s) {
    if (s) return;
    ++res_.protocol_errors;
    if (res_.first_error.empty()) res_.first_error = s.error().message;
  }
  void schedule() {
    schedule_pending_ = false;
    admission::Decision d = adm_->decide(now_);
    ++res_.decides;
    for (const admission::GrantPlan& g : d.grants) {
      check(adm_->on_sent(g.engine, g.id, now_));
      ++res_.grants;
      in_flight_[g.id] = GrantMsg{g.id, g.work, g.first, g.count, g.start_by, g.not_before};
      q_.post(now_ + cfg_.delays.delivery, kDeliver, engine_index(g.engine), g.id);
    }
    ++wake_gen_;
    if (d.wake_at != kNever) q_.post(std::max(d.wake_at, now_ + 1000), kWake, 0, 0, wake_gen_);
  }
  std::uint32_t engine_index(EngineId id) const {
    for (std::size_t i = 0; i < engines_.size(); ++i)
      if (engines_[i].id == id) return static_cast<std::uint32_t>(i);
    return 0;
  }

  // --- the engines (agent/protocol/client.cc, tests/integration/agent_engine.cc) --------
  void to_agent(std::uint32_t type, std::uint32_t e, std::uint64_t b, std::uint64_t gen = 0) {
    q_.post(now_ + cfg_.delays.report, type, e, b, gen);
  }
  void start_pass(EngineRt& e, Nanos deadline) {
    ++e.work;
    e.pos = 0;
    to_agent(kMsgWork, engine_index(e.id), e.work, static_cast<std::uint64_t>(deadline));
    e.phase = Phase::kWaiting;
    engine_try(engine_index(e.id));
  }
  void engine_try(std::uint32_t i) {
    EngineRt& e = engines_[i];
    if (e.phase != Phase::kWaiting && e.phase != Phase::kHolding) return;
    GrantCache::Acquired a = e.cache.acquire(e.work, e.pos, now_);
    for (auto id : a.discarded) to_agent(kMsgDiscard, i, id);
    if (a.grant) {
      e.phase = Phase::kStarting;
      e.g = *a.grant;
      q_.post(now_ + cfg_.delays.start, kGpuStart, i, 0, ++e.gen);
    } else if (a.hold_until > 0) {
      e.phase = Phase::kHolding;
      q_.post(a.hold_until, kEngineTry, i);
    } else {
      e.phase = Phase::kWaiting;
    }
  }
  // issue_ahead: while g runs, the grant for the position after it is taken from the cache
  // and started (its Start sent) at once; it runs when g ends.
  void take_ahead(std::uint32_t i) {
    EngineRt& e = engines_[i];
    if (!e.m->issue_ahead || e.phase != Phase::kRunning || e.ahead) return;
    const std::uint32_t next = e.g.first + e.g.count;
    if (next >= e.m->pass.size()) return;  // the next pass is another work, not announced yet
    GrantCache::Acquired a = e.cache.acquire(e.work, next, now_);
    for (auto id : a.discarded) to_agent(kMsgDiscard, i, id);
    if (!a.grant) return;  // none yet, or held for a release (taken when the engine waits)
    e.ahead = *a.grant;
    e.ahead_start = now_;
    to_agent(kMsgStart, i, a.grant->id);
  }
  void start_unit(EngineRt& e, bool first) {
    const admission::UnitSpec& u = e.m->catalog[e.m->pass[e.pos]];
    if (first) {
      const double s = e.m->time_sigma;
      e.grant_factor = s > 0 ? std::exp(s * e.rng.normal() - s * s / 2) : 1.0;
    }
    double dur = e.grant_factor * static_cast<double>(u.duration) +
                 (first ? static_cast<double>(e.m->grant_overhead + e.m->hidden_overhead) : 0.0);
    dur = std::max(dur, 1.0);
    e.unit_left = dur;
    e.unit_rate = static_cast<double>(u.bytes) / dur;
    e.gen_posted = false;
  }
  void unit_end(std::uint32_t i) {
    EngineRt& e = engines_[i];
    ++e.pos;
    ++e.in_grant;
    if (e.in_grant < e.g.count && e.pos < e.m->pass.size()) {
      start_unit(e, false);
      return;
    }
    // The grant is done.
    to_agent(kMsgDone, i, e.g.id, static_cast<std::uint64_t>(now_ - e.grant_start));
    if (e.ahead) {  // started ahead: the GPU goes on with it
      e.g = *e.ahead;
      e.ahead.reset();
      e.grant_start = e.ahead_start;
      e.in_grant = 0;
      start_unit(e, true);
      take_ahead(i);
      return;
    }
    if (e.pos < e.m->pass.size()) {
      e.phase = Phase::kWaiting;
      engine_try(i);
      return;
    }
    e.pass_ends.push_back(now_);
    if (e.m->kind == admission::EngineKind::kDeadlineBound) {
      e.frames.emplace_back(e.frame_release, now_);
      e.phase = Phase::kIdle;
      if (e.next_frame <= now_) q_.post(now_, kFrameRelease, i);
      else q_.post(e.next_frame, kFrameRelease, i);
    } else {
      start_pass(e, 0);
    }
  }

  // --- the tasks ---------------------------------------------------------------------
  void start_job(std::uint32_t i) {
    TaskState& t = tasks_[i];
    t.running = true;
    t.posted = false;
    t.rate = -1;  // recompute() sets it and posts the end
    // The tracer sees a job when it starts: at its release, or, behind an overrun, when
    // its predecessor ends (a wait that returns without sleeping), with the lag the
    // daemon derives from the period (agent/daemon/release_lag.h).
    const Job& j = t.queue.front();
    q_.post(now_ + cfg_.delays.tracer, kTracerRelease, i, j.seq, static_cast<std::uint64_t>(now_ - j.release));
  }

  void handle(const Event& ev) {
    switch (ev.type) {
      case kRelease: {
        advance();
        TaskState& t = tasks_[ev.a];
        Job j;
        j.seq = t.next_seq++;
        j.release = now_;
        j.remaining = job_work(t.cfg->model, t.rng, &bursts_, now_);
        if (const double s = t.cfg->model.slowdown_sigma; s > 0) j.m = std::exp(s * t.kappa_rng.normal() - s * s / 2);
        t.queue.push_back(j);
        if (!t.running) start_job(ev.a);
        recompute();
        q_.post(t.release_of(t.next_seq), kRelease, ev.a);
        break;
      }
      case kJobEnd: {
        TaskState& t = tasks_[ev.a];
        if (ev.gen != t.gen || !t.running) break;
        advance();
        const Job j = t.queue.front();
        t.queue.pop_front();
        t.running = false;
        record_job(t, j.release, now_);
        q_.post(now_ + cfg_.delays.tracer, kTracerComplete, ev.a, j.seq, static_cast<std::uint64_t>(now_));
        if (!t.queue.empty()) start_job(ev.a);
        recompute();
        break;
      }
      case kTracerRelease: {
        const TaskState& t = tasks_[ev.a];
        const auto lag = static_cast<Nanos>(ev.gen);
        adm_->on_release(ev.a, ev.b, t.release_of(ev.b) + lag, std::nullopt, lag);
        point();
        break;
      }
      case kTracerComplete:
        adm_->on_complete(ev.a, ev.b, static_cast<Nanos>(ev.gen));
        point();
        break;
      case kSchedule: schedule(); break;
      case kWake:
        if (ev.gen == wake_gen_) point();
        break;
      case kDeliver: {
        auto it = in_flight_.find(ev.b);
        if (it == in_flight_.end()) break;
        engines_[ev.a].cache.deliver(it->second);
        in_flight_.erase(it);
        engine_try(ev.a);
        take_ahead(ev.a);
        break;
      }
      case kEngineTry: engine_try(ev.a); break;
      case kGpuStart: {
        EngineRt& e = engines_[ev.a];
        if (ev.gen != e.gen || e.phase != Phase::kStarting) break;
        advance();
        e.phase = Phase::kRunning;
        e.grant_start = now_;
        e.in_grant = 0;
        start_unit(e, true);
        to_agent(kMsgStart, ev.a, e.g.id);
        take_ahead(ev.a);
        recompute();
        break;
      }
      case kUnitEnd: {
        EngineRt& e = engines_[ev.a];
        if (ev.gen != e.gen || e.phase != Phase::kRunning) break;
        advance();
        unit_end(ev.a);
        recompute();
        break;
      }
      case kFrameRelease: {
        EngineRt& e = engines_[ev.a];
        if (e.phase != Phase::kIdle) break;
        e.frame_release = now_;
        e.next_frame = now_ + e.m->period;
        start_pass(e, now_ + e.m->deadline);
        break;
      }
      case kMsgWork: {
        const EngineRt& e = engines_[ev.a];
        admission::Work w;
        w.id = ev.b;
        w.units = e.m->pass;
        if (ev.gen != 0) w.deadline = static_cast<Nanos>(ev.gen);
        check(adm_->announce(e.id, std::move(w), now_));
        point();
        break;
      }
      case kMsgStart:
        check(adm_->on_start(engines_[ev.a].id, ev.b, now_));
        point();
        break;
      case kMsgDone:
        check(adm_->on_done(engines_[ev.a].id, ev.b, static_cast<Nanos>(ev.gen), now_));
        point();
        break;
      case kMsgDiscard:
        check(adm_->on_discard(engines_[ev.a].id, ev.b, now_));
        point();
        break;
      case kScoreStart:
        for (EngineRt& e : engines_) e.result.s0 = adm_->engine(e.id)->stats;
        for (std::size_t i = 0; i < tasks_.size(); ++i) tasks_[i].result.budget_wait0 = adm_->budget_wait_by_task(i);
        break;
      case kScoreEnd:
        for (EngineRt& e : engines_) e.result.s1 = adm_->engine(e.id)->stats;
        for (std::size_t i = 0; i < tasks_.size(); ++i) tasks_[i].result.budget_wait1 = adm_->budget_wait_by_task(i);
        break;
    }
    ++res_.events;
  }

  void record_job(TaskState& t, Nanos release, Nanos end) {
    const double resp = static_cast<double>(end - release) / 1e6;
    const bool miss = end - release > t.cfg->deadline;
    ++t.result.jobs_all;
    t.result.misses_all += miss;
    if (release >= t0_ && release < t1_) {
      ++t.result.jobs;
      t.result.misses += miss;
      t.result.responses_ms.push_back(resp);
      if (cfg_.keep_responses) t.result.responses.emplace_back(release, resp);
    }
  }

  Result<RunResult> finish() {
    res_.scored_s = static_cast<double>(t1_ - t0_) / 1e9;
    res_.burst_share = bursts_.share(t0_, t1_);
    // Scored jobs still unfinished at the end of the run missed.
    for (TaskState& t : tasks_) {
      for (const Job& j : t.queue) {
        if (j.release < t0_ || j.release >= t1_) continue;
        ++t.result.jobs;
        ++t.result.misses;
        t.result.responses_ms.push_back(std::numeric_limits<double>::infinity());
      }
      // Jobs released in the window but not yet released into the queue cannot exist:
      // the run goes on past t1 by more than a period.
      res_.tasks.push_back(std::move(t.result));
    }
    for (EngineRt& e : engines_) {
      EngineResult r = std::move(e.result);
      for (Nanos t : e.pass_ends) r.passes += t >= t0_ && t < t1_;
      if (e.m->kind == admission::EngineKind::kDeadlineBound) {
        // Frames whose deadline falls in the window (ripple-bench's frames_due); a frame
        // released but not ended by its deadline is late.
        auto judge = [&](Nanos rel, Nanos end) {
          const Nanos due = rel + e.m->deadline;
          if (due < t0_ || due >= t1_) return;
          ++r.frames_judged;
          r.frames_late += end > due;
        };
        for (auto [rel, end] : e.frames) judge(rel, end);
        if (e.phase != Phase::kIdle) judge(e.frame_release, kNever);
      }
      res_.engines.push_back(std::move(r));
    }
    return std::move(res_);
  }

  const RunConfig& cfg_;
  pricing::Ledger ledger_;
  std::unique_ptr<admission::Admission> adm_;
  std::ofstream trace_;  // RunConfig::trace_path
  BurstProcess bursts_;  // RunConfig::bursts
  std::vector<TaskState> tasks_;
  std::vector<EngineRt> engines_;
  std::map<admission::GrantId, GrantMsg> in_flight_;
  EventQueue q_;
  Nanos now_ = 0, last_ = 0, t0_ = 0, t1_ = 0, end_ = 0;
  bool schedule_pending_ = false;
  std::uint64_t wake_gen_ = 0;
  RunResult res_;
};

}  // namespace

Result<RunResult> run(const RunConfig& cfg) {
  if (Status s = validate(cfg.platform); !s) return s.error();
  if (Status s = validate(cfg.bursts); !s) return s.error();
  for (const RunTask& t : cfg.tasks)
    if (Status s = validate_burst_factor(t.model.burst_factor, "task " + t.model.name + ": burst_factor"); !s)
      return s.error();
  for (const EngineModel& m : cfg.engines)
    if (Status s = validate(m); !s) return s.error();
  if (cfg.prep < 0 || cfg.score <= 0) return make_error("run: prep must be >= 0 and score > 0");
  Sim sim(cfg);
  return sim.go();
}

}  // namespace ripple::sim

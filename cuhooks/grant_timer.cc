// Grant timing (cuhooks/runtime.h): a closed grant's event pair is handed to a watcher
// thread, which reads the elapsed GPU time once the GPU has passed the end event and
// reports it to the agent (Done), or to the record file in record mode.
#include <chrono>
#include <thread>
#include <utility>

#include "cuhooks/counters.h"
#include "cuhooks/runtime.h"

namespace ripple::cuhook {

namespace {
// A grant's GPU time as a Done carries it. The end event is recorded when the grant
// closes, so a grant kept in hand while the engine idled (units it never reached) spans
// the idle time too, hours perhaps: past the protocol's bound, a Done is malformed and the
// agent drops the session. Clamped in double (a float of any size converts).
std::uint64_t done_ns(float ms) {
  const double ns = static_cast<double>(ms) * 1e6;
  return ns >= static_cast<double>(engine::kMaxDurationNs) ? engine::kMaxDurationNs : static_cast<std::uint64_t>(ns);
}
}  // namespace

CUevent Runtime::take_event() {
  {
    std::lock_guard<std::mutex> l(wm_);
    if (!free_events_.empty()) {
      CUevent e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
  }
  CUevent e = nullptr;
  if (!drv_.event_create || drv_.event_create(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
  return e;
}

// An event the hook holds no longer (never recorded, or its grant dropped): the pool's
// again. Events are never destroyed (a context may be gone); one not given back is lost.
void Runtime::give_back_event(CUevent e) {
  if (!e) return;
  std::lock_guard<std::mutex> l(wm_);
  free_events_.push_back(e);
}

void Runtime::set_grant_label_locked(std::string label) {
  grant_label_ = std::move(label);
  grant_labelled_.store(!grant_label_.empty(), std::memory_order_relaxed);
}

void Runtime::drop_grant_locked() {
  give_back_event(std::exchange(start_ev_, nullptr));
  pending_start_.store(false);
  grant_.reset();
  grant_end_ = 0;
  set_grant_label_locked({});
  grant_single_ = false;
}

void Runtime::close_grant_locked() {
  if (!grant_) return;
  Timed t;
  t.grant = *grant_;
  t.gen = gen_.load();
  t.unit = grant_label_;
  t.single = grant_single_;
  if (!pending_start_.load() && start_ev_) {
    t.start = start_ev_;
    t.ctx = start_ctx_;
    t.end = take_event();
    if (t.end && drv_.event_record(t.end, last_stream_.load(std::memory_order_relaxed)) != CUDA_SUCCESS) give_back_event(std::exchange(t.end, nullptr));
  }
  start_ev_ = nullptr;
  pending_start_.store(false);
  grant_.reset();
  grant_end_ = 0;
  set_grant_label_locked({});
  grant_single_ = false;
  start_watcher_locked();
  inflight_.fetch_add(1);
  {
    std::lock_guard<std::mutex> l(wm_);
    wq_.push_back(std::move(t));
  }
  wcv_.notify_one();
}

void Runtime::start_watcher_locked() {
  std::lock_guard<std::mutex> l(wm_);
  if (watcher_started_) return;
  watcher_started_ = true;
  std::thread([this] { watcher_loop(); }).detach();
}

// Reads each closed grant's event pair once the GPU has passed its end and reports the
// elapsed time, in the order the grants were closed: the agent's accounting of a grant
// (queued behind the one before, or not) reads its Done against the previous one's, so a
// grant is never reported before an earlier one; the first not yet passed holds the rest.
// Polls cuEventQuery: it never synchronises the application's streams.
//
// Between two consecutive grants of one context it also reads the GPU time from the
// earlier one's end event to the later one's start event (boundary_gaps, boundary_gap_ns):
// where the engine's stream ran nothing of its own between them, what a grant boundary
// cost the GPU (a grant that arrived late, a host that was late). An unmanaged run's gaps
// are the engine's own; the difference is the gating's.
void Runtime::watcher_loop() {
  if (drv_.exchange_capture_mode) {
    // Relaxed, so this thread's event calls cannot invalidate another thread's capture.
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    drv_.exchange_capture_mode(&m);
  }
  CUevent prev_end = nullptr;  // the last reported grant's end event, kept for the next gap
  CUcontext prev_ctx = nullptr;
  for (;;) {
    std::deque<Timed> batch;
    {
      std::unique_lock<std::mutex> l(wm_);
      wcv_.wait(l, [&] { return !wq_.empty(); });
      batch.swap(wq_);
    }
    while (!batch.empty()) {
      Timed& t = batch.front();
      std::uint64_t ns = 0;
      if (t.start && t.end) {
        if (t.ctx && drv_.ctx_set) drv_.ctx_set(t.ctx);
        const CUresult q = drv_.event_query(t.end);
        if (q == CUDA_ERROR_NOT_READY) break;  // it and every later grant wait, in order
        float ms = 0;
        if (q == CUDA_SUCCESS && drv_.elapsed(&ms, t.start, t.end) == CUDA_SUCCESS && ms > 0) ns = done_ns(ms);
        float gap = 0;
        if (q == CUDA_SUCCESS && prev_end && prev_ctx == t.ctx && drv_.elapsed(&gap, prev_end, t.start) == CUDA_SUCCESS) {
          g_c.boundary_gaps.fetch_add(1, std::memory_order_relaxed);
          // Negative where the later grant's first work began on another stream first.
          if (gap > 0) g_c.boundary_gap_ns.fetch_add(done_ns(gap), std::memory_order_relaxed);
        }
      }
      if (rec_) {
        record_line("{\"g\":" + json_str(t.unit) + ",\"ns\":" + std::to_string(ns) + "}");
      } else {
        if (learn_ && t.single && ns > 0 && !t.unit.empty()) {
          std::lock_guard<std::mutex> l(learn_m_);
          auto& d = samples_[t.unit].ns;
          d.push_back(ns);
          if (d.size() > kSamples) d.pop_front();
        }
        std::lock_guard<std::mutex> c(cm_);
        if (client_ && t.gen == gen_.load() && client_->done(t.grant, ns).ok())
          g_c.done_reported.fetch_add(1, std::memory_order_relaxed);
      }
      {
        std::lock_guard<std::mutex> l(wm_);
        if (t.start) free_events_.push_back(t.start);
        // The end event stays until the next grant's gap is read (a grant without an event
        // pair breaks the chain: no gap is read across it).
        if (prev_end) free_events_.push_back(prev_end);
        prev_end = t.start ? t.end : nullptr;
        prev_ctx = t.ctx;
        if (!t.start && t.end) free_events_.push_back(t.end);
        inflight_.fetch_sub(1);
      }
      batch.pop_front();
    }
    if (!batch.empty()) {
      {
        std::lock_guard<std::mutex> l(wm_);
        // Back at the front, in order, ahead of what was closed meanwhile.
        for (auto it = batch.rbegin(); it != batch.rend(); ++it) wq_.push_front(std::move(*it));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

}  // namespace ripple::cuhook

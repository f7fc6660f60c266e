// Grant timing (cuhooks/runtime.h): a closed grant's event pair is handed to a watcher
// thread, which reads the elapsed GPU time once the GPU has passed the end event and
// reports it to the agent (Done), or to the record file in record mode.
#include <algorithm>
#include <array>
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

// --- timing events, pooled per context ----------------------------------------------
// An event belongs to the context it was created in, and the driver refuses to record it
// on another context's stream: in a process that drives two GPUs, one pool shared by
// every context handed the first GPU's events to the second's grants, which then
// reported no GPU time. So each context has its own pool, its events are created in it
// (made current for the call if it is not), and an event is recorded only on a stream of
// its context. A pool ends with its context (cuCtxDestroy, a primary context's reset or
// last release; runtime.cc hooks them): its events are the driver's to free then, and
// one still in a grant is dropped when given back (the pool's generation differs), never
// recorded or destroyed again. Bounded: kPoolEvents free events a context (more are
// destroyed), kPools contexts (past it the oldest pool is forgotten).
//
// The pool lock (wm_) is never held across a driver call: a call the driver takes long
// over (a query on a loaded machine) would stall every hook call that takes or gives back
// an event, so every grant's close and so every launching thread. A driver call the hook
// makes on an event on its own account (the watcher's queries and elapsed times, a record,
// a destroy past the kept) pins the event's pool under the lock first, and a context's end
// marks its pool ending (no new pin) and waits for the pins to go before the driver frees
// the events, at most kPinWaitMs: the watcher checked the pool and then queried without a
// pin, and a context destroyed in between had its freed events queried and timed.

bool Runtime::pin_event(const Event& e) {
  if (!e) return false;
  std::lock_guard<std::mutex> l(wm_);
  auto it = pools_.find(e.ctx);
  if (it == pools_.end() || it->second.gen != e.pool || it->second.ending) return false;
  ++it->second.pins;
  return true;
}

void Runtime::unpin_event(const Event& e) {
  {
    std::lock_guard<std::mutex> l(wm_);
    auto it = pools_.find(e.ctx);
    // Gone: its end gave up waiting (said), or it was forgotten past kPools.
    if (it == pools_.end() || it->second.gen != e.pool || it->second.pins == 0) return;
    if (--it->second.pins > 0) return;
  }
  pin_cv_.notify_all();
}

template <class Ends>
void Runtime::end_pools_wm_locked(std::unique_lock<std::mutex>& l, Ends ends) {
  bool any = false;
  for (auto& [c, p] : pools_)
    if (ends(c, p)) ++p.ending, any = true;
  if (!any) return;
  auto unpinned = [&] {
    for (auto& [c, p] : pools_)
      if (p.ending && ends(c, p) && p.pins > 0) return false;
    return true;
  };
  if (pin_cv_.wait_for(l, std::chrono::milliseconds(kPinWaitMs), unpinned)) return;
  // Said once a process (the count has every one).
  if (g_c.pin_waits_given_up.fetch_add(1, std::memory_order_relaxed) == 0)
    say("a context ended while a driver call on its timing events had run for %d ms: not waited for longer "
        "(pin_waits_given_up)",
        kPinWaitMs);
}

CUcontext Runtime::stream_context(CUstream s) {
  CUcontext c = nullptr;
  if (drv_.stream_ctx && drv_.stream_ctx(s, &c) == CUDA_SUCCESS && c) return c;
  // No cuStreamGetCtx (older than 9.2): the current context, right for default streams
  // and for an application that keeps its stream's context current.
  if (s != nullptr && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD && drv_.stream_ctx) return nullptr;
  if (drv_.ctx_get && drv_.ctx_get(&c) == CUDA_SUCCESS) return c;
  return nullptr;
}

Event Runtime::take_event(CUcontext ctx) {
  if (!ctx) return {};
  {
    std::lock_guard<std::mutex> l(wm_);
    auto it = pools_.find(ctx);
    if (it != pools_.end() && !it->second.free.empty()) {
      Event e{it->second.free.back(), ctx, it->second.gen};
      it->second.free.pop_back();
      return e;
    }
  }
  if (!drv_.event_create) return {};
  CUcontext cur = nullptr;
  const bool swap = drv_.ctx_get && drv_.ctx_set && drv_.ctx_get(&cur) == CUDA_SUCCESS && cur != ctx;
  if (swap && drv_.ctx_set(ctx) != CUDA_SUCCESS) return {};
  CUevent ev = nullptr;
  const bool made = drv_.event_create(&ev, CU_EVENT_DEFAULT) == CUDA_SUCCESS && ev;
  CUdevice dev = -1;
  if (made && drv_.ctx_get_device) drv_.ctx_get_device(&dev);
  if (swap) drv_.ctx_set(cur);
  if (!made) return {};
  std::lock_guard<std::mutex> l(wm_);
  auto [it, fresh] = pools_.try_emplace(ctx);
  if (fresh) {
    it->second.gen = ++pool_gen_;
    it->second.device = dev;
    if (pools_.size() > kPools) {
      // Contexts that ended where the hook did not see it (a path it does not wrap):
      // the oldest pool is forgotten (its events are not destroyed: they may be gone).
      auto oldest = pools_.begin();
      for (auto p = pools_.begin(); p != pools_.end(); ++p)
        if (p->second.gen < oldest->second.gen) oldest = p;
      drop_pool_wm_locked(oldest);
    }
    g_c.event_pools.store(pools_.size(), std::memory_order_relaxed);
  }
  return Event{ev, ctx, it->second.gen};
}

void Runtime::drop_pool_wm_locked(std::unordered_map<CUcontext, EventPool>::iterator it) {
  pools_.erase(it);
  g_c.event_pools.store(pools_.size(), std::memory_order_relaxed);
}

// An event the hook holds no longer (its grant reported or dropped, or never recorded):
// its pool's again, unless the pool ended since (then the event went with its context).
void Runtime::give_back_event(Event e) {
  if (!e) return;
  {
    std::lock_guard<std::mutex> l(wm_);
    auto it = pools_.find(e.ctx);
    if (it == pools_.end() || it->second.gen != e.pool) return;
    // Kept while its context is ending (a release under way: the driver may free it).
    if (it->second.free.size() < kPoolEvents || it->second.ending) {
      it->second.free.push_back(e.ev);
      return;
    }
    ++it->second.pins;  // its context lives, and does across the destroy
  }
  if (drv_.event_destroy) drv_.event_destroy(e.ev);
  unpin_event(e);
}

bool Runtime::record_event(Event& e, CUstream s) {
  if (!e || !drv_.event_record) return false;
  if (!pin_event(e)) {
    // Its context ended (the event went with it) or is ending (a release under way): not
    // recorded; back to its pool if that is still there.
    give_back_event(std::exchange(e, {}));
    return false;
  }
  // A default stream is the current context's; a created stream is its own context's
  // whatever is current, but the call is made in the event's context either way.
  CUcontext cur = nullptr;
  const bool swap = drv_.ctx_get && drv_.ctx_set && drv_.ctx_get(&cur) == CUDA_SUCCESS && cur != e.ctx &&
                    drv_.ctx_set(e.ctx) == CUDA_SUCCESS;
  const CUresult r = drv_.event_record(e.ev, s);
  if (swap) drv_.ctx_set(cur);
  unpin_event(e);
  if (r == CUDA_SUCCESS) return true;
  g_c.event_record_failures.fetch_add(1, std::memory_order_relaxed);
  if (r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
    // The event (or its context) is gone, e.g. a context that ended where the hook did
    // not see it, its handle a new context's since: that pool's events are all suspect.
    std::lock_guard<std::mutex> l(wm_);
    auto it = pools_.find(e.ctx);
    if (it != pools_.end() && it->second.gen == e.pool) drop_pool_wm_locked(it);
  } else {
    give_back_event(e);  // a refusal of this record only: the event is still good
  }
  e = {};
  return false;
}

bool Runtime::event_live(const Event& e) {
  if (!e) return false;
  std::lock_guard<std::mutex> l(wm_);
  auto it = pools_.find(e.ctx);
  return it != pools_.end() && it->second.gen == e.pool;
}

void Runtime::context_ends(CUcontext c) {
  std::unique_lock<std::mutex> l(wm_);
  end_pools_wm_locked(l, [c](CUcontext pc, const EventPool&) { return pc == c; });
  if (auto it = pools_.find(c); it != pools_.end()) drop_pool_wm_locked(it);
}

// Before a reset (it ends the primary context) or a release (it may: the hook learns it
// only after the call, device_release_ends).
void Runtime::device_contexts_end(CUdevice d, bool released) {
  std::unique_lock<std::mutex> l(wm_);
  end_pools_wm_locked(l, [d](CUcontext, const EventPool& p) { return p.device == d; });
  if (!released) drop_device_pools_wm_locked(d);
}

void Runtime::device_release_ends(CUdevice d, bool ok) {
  // Released: it ended only if it is no longer active (the last retain released).
  unsigned int flags = 0;
  int active = 1;
  load_driver();
  const bool ended = ok && drv_.primary_state && drv_.primary_state(d, &flags, &active) == CUDA_SUCCESS && !active;
  std::lock_guard<std::mutex> l(wm_);
  for (auto& [c, p] : pools_)
    if (p.device == d && p.ending > 0) --p.ending;
  if (ended) drop_device_pools_wm_locked(d);
}

// Which pool is the primary context's is not known: every pool of the device goes (a
// context of its own there keeps its events, lost to the hook: at most kPoolEvents).
void Runtime::drop_device_pools_wm_locked(CUdevice d) {
  for (auto it = pools_.begin(); it != pools_.end();) {
    auto next = std::next(it);
    if (it->second.device == d) drop_pool_wm_locked(it);
    it = next;
  }
}

// A stream is destroyed: a grant whose last covered work ran on it takes its end event
// there now (afterwards the handle is no stream, or another one); the start's stream is
// no longer one to fall back on.
void Runtime::stream_ends(CUstream s) {
  {
    std::lock_guard<std::mutex> l(comm_m_);
    if (comm_streams_.erase(s)) has_comm_.store(!comm_streams_.empty());
  }
  if (t_state.last_stream == s) t_state.last_stream = nullptr;
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return;
  // The common case takes no lock: a stream the open grant never ran on.
  if (last_stream_.load() != s && start_stream_.load() != s && !lanes_open_.load(std::memory_order_acquire)) return;
  load_driver();
  std::lock_guard<std::mutex> l(gm_);
  for (std::size_t i = 0; i < nlanes_; ++i) {
    Lane& ln = lanes_[i];
    if (ln.s != s) continue;
    // A lane's stream: its end now. The grant's last work ran there perhaps: then the
    // close ends the start's stream only (the lane ended here).
    end_lane_locked(ln);
    ln.s = no_stream();
    CUstream was = s;
    last_stream_.compare_exchange_strong(was, start_stream_.load());
    return;
  }
  CUstream expect = s;
  if (last_stream_.compare_exchange_strong(expect, no_stream())) {
    give_back_event(std::exchange(end_ev_, {}));
    end_thread_ = 0;
    if (grant_ && !pending_start_.load() && event_live(start_ev_) && stream_context(s) == start_ev_.ctx &&
        !capturing(s)) {
      end_ev_ = take_event(start_ev_.ctx);
      record_event(end_ev_, s);
    }
  }
  expect = s;
  start_stream_.compare_exchange_strong(expect, no_stream());
}

// Never on a stream that is capturing: the driver would not record the event but put a
// node recording it into the application's graph, run at each launch of that graph (the
// event the pool's again by then, another grant's). The last work of a grant is noted on
// such a stream too; its start's stream is the fallback (its start was recorded there,
// outside a capture), and with that one capturing now the grant reports no GPU time.
Event Runtime::end_event_locked(CUstream s) {
  if (s == no_stream() || stream_context(s) != start_ev_.ctx || capturing(s)) s = start_stream_.load();
  if (s == no_stream() || capturing(s)) return {};
  Event e = take_event(start_ev_.ctx);
  record_event(e, s);
  return e;
}

// With the per-thread default stream the handle CU_STREAM_PER_THREAD names the calling
// thread's stream, and no handle names another thread's: a grant closed on thread B
// whose last covered work ran on thread A's per-thread stream recorded its end on B's,
// which may have run nothing of the grant, and reported a short time or 0 (the agent then
// learns a wrong scale). The legacy stream is no way out: a record there waits for every
// blocking stream of the context, and orders their later work behind it. Only A can
// record on its stream, and it knows its work is submitted when one of its units ends:
// then, the grant still open, A records the end event on its own per-thread stream (the
// same event again at each of its units: one record a unit, none per launch), and a
// close on another thread takes that event (close_grant_locked). A close on A records
// afresh, as before. Left: work A submits there after its last unit ended (outside any
// unit of its own, inside another thread's) is not covered by that event, and a grant
// whose per-thread work ran on a thread that ends no unit is still ended on the closer's.
void Runtime::end_on_thread_stream_locked() {
  if (!grant_ || pending_start_.load() || !start_ev_) return;
  if (last_stream_.load(std::memory_order_relaxed) != CU_STREAM_PER_THREAD ||
      last_thread_.load(std::memory_order_relaxed) != t_state.id)
    return;  // the common case: a created stream, or another thread's work came last
  // The start's context ended inside the grant (its handle perhaps another context's now,
  // current here): the end event recorded at an earlier unit's end went with it, and the
  // driver freed it. Never recorded again; the grant reports no GPU time.
  if (!event_live(start_ev_)) {
    give_back_event(std::exchange(end_ev_, {}));
    end_thread_ = 0;
    return;
  }
  // Another context current here: the close ends the grant on its start's stream.
  if (stream_context(CU_STREAM_PER_THREAD) != start_ev_.ctx || capturing(CU_STREAM_PER_THREAD)) return;
  if (!end_ev_) end_ev_ = take_event(start_ev_.ctx);
  end_thread_ = record_event(end_ev_, CU_STREAM_PER_THREAD) ? t_state.id : 0;
}

// Lanes. One start event and one end event time a grant on one stream, and it read the
// pair across two when its work ran on several: an engine that copies on one stream and
// computes (or copies back) on others, each waiting for the others on the GPU, had a
// grant's start on one and its end on another, and the two are not ordered. A grant whose
// first work was the tail of one layer's copy back (a stream that waits for that layer's
// kernels) and whose last was the head of the next layer's copy in (a stream that waits
// only for a buffer freed long before) had its end reached first: its time negative,
// reported as none, its Done sent as the first half of the grant ended (ripple-llm's
// offloaded passes: a third of the grants that ended a layer timed under half their
// prediction, one in ten at 0: results/e2e.md). So each created stream of the start's
// context the grant reaches gets a start event before the grant's first operation there
// (a lane, at most kLanes beside the start's), every lane an end event at the close
// (or at its stream's destroy), and the watcher reports the grant once every end is
// reached, timed as the union of the streams' spans (overlap counted once). Found on a
// switch of stream (mark_start): an engine on one stream pays nothing. Default streams
// are no lanes (the per-thread one names the caller's; the legacy one is the last
// stream's case, as before): their work is timed as before, against the start.
void Runtime::note_lane(CUstream s) {
  std::lock_guard<std::mutex> l(gm_);
  if (!grant_ || pending_start_.load() || !start_ev_ || s == start_stream_.load()) return;
  if (is_lane_locked(s) || nlanes_ == kLanes) return;
  if (!event_live(start_ev_) || stream_context(s) != start_ev_.ctx || capturing(s)) return;
  Lane& ln = lanes_[nlanes_];
  ln = Lane{s, take_event(start_ev_.ctx), {}};
  if (!record_event(ln.start, s)) {
    ln = {};
    return;
  }
  ++nlanes_;
  lanes_open_.store(true, std::memory_order_release);
}

// A lane's end event, recorded once on its stream (none on a capturing stream, a destroyed
// one, or for an ended context).
void Runtime::end_lane_locked(Lane& ln) {
  if (ln.end || ln.s == no_stream() || capturing(ln.s) || !event_live(ln.start)) return;
  ln.end = take_event(ln.start.ctx);
  record_event(ln.end, ln.s);
}

bool Runtime::is_lane_locked(CUstream s) const {
  for (std::size_t i = 0; i < nlanes_; ++i)
    if (lanes_[i].s == s) return true;
  return false;
}

void Runtime::drop_lanes_locked() {
  for (std::size_t i = 0; i < nlanes_; ++i) {
    give_back_event(std::exchange(lanes_[i].start, {}));
    give_back_event(std::exchange(lanes_[i].end, {}));
  }
  lanes_ = {};
  nlanes_ = 0;
  lanes_open_.store(false, std::memory_order_release);
}

void Runtime::set_grant_label_locked(std::string label) {
  grant_label_ = std::move(label);
  grant_labelled_.store(!grant_label_.empty(), std::memory_order_relaxed);
}

void Runtime::drop_grant_locked() {
  give_back_event(std::exchange(start_ev_, {}));
  give_back_event(std::exchange(end_ev_, {}));
  drop_lanes_locked();
  end_thread_ = 0;
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
  // Recorded when its stream was destroyed, or on a thread's per-thread stream as a unit
  // of that thread ended (end_on_thread_stream_locked).
  Event early = std::exchange(end_ev_, {});
  const std::uint64_t early_thread = std::exchange(end_thread_, 0);
  if (!pending_start_.load() && start_ev_) {
    t.start = start_ev_;
    t.ctx = start_ev_.ctx;
    const CUstream last = last_stream_.load(std::memory_order_relaxed);
    if (!event_live(start_ev_)) {
      // Its context ended inside the grant: no end event is taken for it (its handle may
      // be nothing, or another context's); the watcher reports the grant without a time.
    } else if (nlanes_ > 0 && last != no_stream() && last != start_stream_.load() && is_lane_locked(last)) {
      // The last work ran on a lane: it ends there (below), the start's span on its own.
      t.end = end_event_locked(start_stream_.load());
    } else if (last == no_stream() && early) {
      t.end = std::exchange(early, {});
    } else if (last == CU_STREAM_PER_THREAD && early && early_thread != 0 &&
               early_thread == last_thread_.load(std::memory_order_relaxed) && early_thread != t_state.id) {
      // The last work ran on another thread's per-thread stream, which this thread's
      // CU_STREAM_PER_THREAD does not name: that thread's own record ends the grant.
      t.end = std::exchange(early, {});
    } else {
      t.end = end_event_locked(last);
    }
  }
  // Every lane ends now (one destroyed first ended then), each span beside the start's.
  for (std::size_t i = 0; t.start && i < nlanes_; ++i) {
    Lane& ln = lanes_[i];
    end_lane_locked(ln);
    if (ln.start && ln.end) t.lanes[t.nlanes++] = std::exchange(ln, {});
  }
  give_back_event(std::exchange(early, {}));
  drop_lanes_locked();  // what was not handed on
  // A start that was never timed goes back (a start left while pending_start_ is set).
  if (!t.start) give_back_event(start_ev_);
  start_ev_ = {};
  // No stream is the next grant's until its first operation: a stream destroyed between
  // grants takes no lock (stream_ends).
  start_stream_.store(no_stream());
  last_stream_.store(no_stream());
  last_thread_.store(0, std::memory_order_relaxed);
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
  Event prev_end;  // the last reported grant's end event, kept for the next gap
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
      // Its context has not ended (its pool is the one it came from) and cannot while the
      // pin holds; a context whose release is under way is looked at again, in order.
      bool live = false, ending = false;
      if (t.start && (t.end || t.nlanes)) {
        std::lock_guard<std::mutex> l(wm_);
        auto it = pools_.find(t.ctx);
        live = it != pools_.end() && it->second.gen == t.start.pool;
        ending = live && it->second.ending;
        if (live && !ending) ++it->second.pins;
      }
      if (ending) break;
      Event first_start, last_end;  // where its GPU work began and ended, for the gaps
      if (live) {
        struct Unpin {
          Runtime* r;
          const Event& e;
          ~Unpin() { r->unpin_event(e); }
        } unpin{this, t.start};
        if (t.ctx && drv_.ctx_set) drv_.ctx_set(t.ctx);
        // Reported once every stream it ran on passed its end (lanes).
        CUresult q = t.end ? drv_.event_query(t.end.ev) : CUDA_SUCCESS;
        for (std::size_t i = 0; q == CUDA_SUCCESS && i < t.nlanes; ++i) q = drv_.event_query(t.lanes[i].end.ev);
        if (q == CUDA_ERROR_NOT_READY) break;  // it and every later grant wait, in order
        if (q == CUDA_SUCCESS) {
          // Each stream's span, in ms from the start event; the time is their union.
          std::array<std::pair<float, float>, kLanes + 1> span;
          std::size_t n = 0;
          float lo = 0, hi = 0;
          first_start = t.start;
          float e = 0;
          if (t.end && drv_.elapsed(&e, t.start.ev, t.end.ev) == CUDA_SUCCESS) {
            span[n++] = {0.f, e};
            hi = e, last_end = t.end;
          }
          for (std::size_t i = 0; i < t.nlanes; ++i) {
            float a = 0, b = 0;
            if (drv_.elapsed(&a, t.start.ev, t.lanes[i].start.ev) != CUDA_SUCCESS ||
                drv_.elapsed(&b, t.start.ev, t.lanes[i].end.ev) != CUDA_SUCCESS)
              continue;
            span[n++] = {a, b};
            if (a < lo) lo = a, first_start = t.lanes[i].start;
            if (!last_end || b > hi) hi = b, last_end = t.lanes[i].end;
          }
          for (std::size_t i = 1; i < n; ++i)  // by start (at most kLanes + 1)
            for (std::size_t j = i; j > 0 && span[j].first < span[j - 1].first; --j) std::swap(span[j], span[j - 1]);
          double total = 0, cur_a = 0, cur_b = 0;
          bool open = false;
          for (std::size_t i = 0; i < n; ++i) {
            if (span[i].second <= span[i].first) continue;  // reached in the wrong order: nothing
            if (open && span[i].first <= cur_b) {
              cur_b = std::max<double>(cur_b, span[i].second);
            } else {
              if (open) total += cur_b - cur_a;
              cur_a = span[i].first, cur_b = span[i].second, open = true;
            }
          }
          if (open) total += cur_b - cur_a;
          if (total > 0) ns = done_ns(static_cast<float>(total));
          float gap = 0;
          if (prev_end && last_end && prev_end.ctx == t.ctx && prev_end.pool == t.start.pool &&
              drv_.elapsed(&gap, prev_end.ev, first_start.ev) == CUDA_SUCCESS) {
            g_c.boundary_gaps.fetch_add(1, std::memory_order_relaxed);
            // Negative where the later grant's first work began on another stream first.
            if (gap > 0) g_c.boundary_gap_ns.fetch_add(done_ns(gap), std::memory_order_relaxed);
          }
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
      // The event its work ended at stays until the next grant's gap is read (a grant
      // without a time breaks the chain: no gap is read across it).
      give_back_event(std::exchange(prev_end, {}));
      for (Event* e : {&t.start, &t.end}) {
        if (*e && e->ev == last_end.ev) prev_end = std::exchange(*e, {});
        give_back_event(std::exchange(*e, {}));
      }
      for (std::size_t i = 0; i < t.nlanes; ++i)
        for (Event* e : {&t.lanes[i].start, &t.lanes[i].end}) {
          if (*e && e->ev == last_end.ev) prev_end = std::exchange(*e, {});
          give_back_event(std::exchange(*e, {}));
        }
      inflight_.fetch_sub(1);
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

// The interposer's fork handlers (pthread_atfork, registered in runtime.cc's init_once):
// the locks held across a fork, and the child started afresh. Internal to
// libripple-cuhook.so.
#include <chrono>
#include <mutex>
#include <new>
#include <thread>

#include <unistd.h>

#include "cuhooks/counters.h"
#include "cuhooks/runtime.h"

namespace ripple::cuhook {

// --- fork -------------------------------------------------------------------------
// A multi-threaded process forks (a DataLoader's workers, a subprocess): the child is a
// copy of the parent's memory at that instant, with only the forking thread. A lock some
// other thread held stays held there, and a structure it was changing stays half changed,
// so the child must neither wait for a lock nor walk what one guards unless the fork held
// it. fork_prepare takes the locks whose state the child clears or keeps (the order, and
// those it only tries: runtime.h, at gm_), so that state is whole in the child.
Runtime::ForkLocks Runtime::fork_prepare() {
  // gm_ may be held for as long as a grant takes, or the agent, and func_m_ across a driver
  // call (runtime.h): bounded tries, gm_ before the others (it comes first in the order).
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kForkGateWaitMs);
  auto try_until = [&](std::mutex& m) {
    for (;;) {
      if (m.try_lock()) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  };
  ForkLocks held;
  held.gate = try_until(gm_);
  wm_.lock();
  learn_m_.lock();
  rec_m_.lock();
  comm_m_.lock();
  nvtx_m_.lock();
  matcher_m_.lock();
  stats_m_.lock();
  held.funcs = try_until(func_m_);
  return held;
}

void Runtime::fork_parent(ForkLocks held) {
  if (held.funcs) func_m_.unlock();
  stats_m_.unlock();
  matcher_m_.unlock();
  nvtx_m_.unlock();
  comm_m_.unlock();
  rec_m_.unlock();
  learn_m_.unlock();
  wm_.unlock();
  if (held.gate) gm_.unlock();
}

// In the child: new locks (those fork_prepare took are released so; cm_, and gm_ or
// func_m_ when not taken, may have been held by a thread that is gone), no session (the
// child connects as its own engine at its first boundary), no watcher, no open work.
// held.gate: fork_prepare held gm_, so the gate's state is whole and is started afresh;
// otherwise it is never touched again and the child runs unmanaged (RIPPLE_CUHOOK=off:
// its hooks only count).
void Runtime::fork_child(ForkLocks held) {
  new (&gm_) std::mutex();
  new (&cm_) std::mutex();
  new (&wm_) std::mutex();
  new (&wcv_) std::condition_variable();
  new (&pin_cv_) std::condition_variable();
  new (&matcher_m_) std::mutex();
  new (&func_m_) std::mutex();
  new (&comm_m_) std::mutex();
  new (&nvtx_m_) std::mutex();
  new (&rec_m_) std::mutex();
  new (&learn_m_) std::mutex();
  new (&stats_m_) std::mutex();
  // client_ is written under gm_ and cm_, and a reset nulls it before the delete: the
  // pointer read here is the session's or none, also when gm_ was not taken.
  if (client_) {
    ::close(client_->fd());
    (void)client_.release();  // the parent's session: neither Bye nor close again
  }
  gen_.fetch_add(1);
  // Left as it is, unwalked (the entries func_table_ points to stay valid).
  if (!held.funcs) new (&funcs_) decltype(funcs_)();
  // Under wm_ (held across the fork).
  wq_.clear();
  inflight_.store(0);
  watcher_started_ = false;
  // The parent's events are not the child's (its contexts are not).
  pools_.clear();
  g_c.event_pools.store(0, std::memory_order_relaxed);
  // What the hot path reads without gm_.
  pending_start_.store(false);
  lanes_open_.store(false);
  start_stream_.store(no_stream());
  last_stream_.store(no_stream());
  last_thread_.store(0);
  occ_open_.store(false);
  subunits_open_.store(false);
  t_state = ThreadState{};
  stats_seq_.store(0);
  if (!held.gate) {
    cfg_.off = true;  // the child has one thread: nothing reads cfg_ meanwhile
    say("forked while a unit boundary held the gate: this child runs unmanaged");
    return;
  }
  // Under gm_ (held across the fork).
  clear_work_locked();
  cur_pos_ = acq_next_ = 0;
  grant_.reset();
  grant_end_ = 0;
  ahead_.reset();  // the parent's session's
  start_ev_ = end_ev_ = {};
  end_thread_ = 0;
  lanes_ = {};
  nlanes_ = 0;
  open_unit_ = false;
  next_connect_ns_ = unmanaged_until_ns_ = 0;
  warned_unmanaged_ = false;
  ever_connected_ = false;
  // What was learned stays (the same engine code); the parent's occurrence and open pass
  // do not, and the child's first session sends the learned catalog.
  occ_label_.clear();
  pass_work_ = bare_work_ = false;
  renewing_ = false;
  chunk_pending_ = 0;
  quiet_renewal_ = false;
  chunk_hold_until_ns_ = 0;
  session_catalog_.clear();
  bperiod_.reset();  // the child's passes have their own period
  // The child's copies are its own stream: a learned pass stays, the history does not.
  if (bare_learn_) copy_learner_.restart();
  start_stats_thread();  // the parent's is not in the child
}

}  // namespace ripple::cuhook

// The interposer's runtime (Documentation/cuhook.md): configuration (cuhooks/config.h),
// counters (cuhooks/counters.h), unit boundaries (NVTX ranges, the kernel-sequence profile,
// bare host<->device copies, CUDA graph launches, the explicit C API), the gate (one engine
// session with the agent through the engine client library, include/ripple/client.h), grant
// timing (event pairs read by a watcher thread) and fork/exit handling. One class, its
// members defined by concern:
//   driver.h        the driver functions the runtime calls itself
//   runtime.cc      construction, the hot path, NVTX and the C API, exit
//   fork.cc         the fork handlers
//   boundaries.cc   unit boundaries, works and sub-layer grants (chunked copies)
//   learning.cc     the glue to the pure pass learners (cuhooks/pass_learner.h)
//   gate.cc         the agent session: connect, announce, acquire, timeouts
//   grant_timer.cc  grant closing and the watcher that reports each grant's GPU time
//
// Threading: `gate_` (gm_) serialises unit boundaries: the thread at a boundary holds it
// while it waits for a grant, so other launching threads of the engine wait too (they
// belong to the same forward pass). Socket I/O is under cm_ only, so the watcher can
// report Done while a boundary waits (the wait polls in short slices). The hot path of a
// launch inside a granted unit takes no lock. The lock order, and what a fork takes: at
// gm_'s declaration. Internal to libripple-cuhook.so.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ripple/client.h"
#include "cuhooks/config.h"
#include "cuhooks/driver.h"
#include "cuhooks/hooks.h"
#include "cuhooks/pass_learner.h"
#include "cuhooks/profile.h"

namespace ripple::cuhook {

// A timing event and the context it was created in (its pool's: an event is only ever
// recorded on a stream of that context; grant_timer.cc). `pool`: the generation of that
// pool when the event was taken, so one given back after its context ended is dropped.
struct Event {
  CUevent ev = nullptr;
  CUcontext ctx = nullptr;
  std::uint64_t pool = 0;
  explicit operator bool() const { return ev != nullptr; }
};

// One more created stream a grant ran on (beside its start's): an event recorded there
// before the grant's first operation on it, one after its last (grant_timer.cc, "Lanes").
struct Lane {
  CUstream s = nullptr;
  Event start, end;
};
// At most this many created streams beside the start's are timed a grant (more: their
// work is timed only where it falls inside the others').
inline constexpr std::size_t kLanes = 4;

// A grant handed to the watcher once closed.
struct Timed {
  engine::GrantMsg grant;
  std::uint64_t gen;
  Event start, end;  // one context's (the start's); end: on the start's stream (or the last's)
  std::array<Lane, kLanes> lanes{};  // the other created streams it ran on, that context's
  std::size_t nlanes = 0;
  CUcontext ctx = nullptr;
  std::string unit;  // the unit's label (record mode; a one-boundary grant when learning)
  bool single = false;  // the grant covered one boundary's units: its time is that label's
};

// A thread's own id in the hook (from 1, never reused in a process): CU_STREAM_PER_THREAD
// names the calling thread's default stream, so the hook keeps whose it was
// (Runtime::last_thread_, grant_timer.cc).
std::uint64_t new_thread_id();

struct ThreadState {
  std::uint64_t id = new_thread_id();
  std::vector<char> nvtx_stack;  // per pushed range: 1 when it began a unit
  CUstream last_stream = nullptr;
  int api_depth = 0;
  bool api_entered = false;  // the outermost ripple_cuhook_unit_begin opened a unit
};
extern thread_local ThreadState t_state;

enum class Source { kNvtx, kProfile, kCopy, kGraph, kApi };

// A JSON string literal (record mode).
std::string json_str(const std::string& s);

class Runtime {
 public:
  Runtime();
  void before(Op& op);
  void after(const Op& op, CUresult r);
  void range_push(const char* name);
  void range_pop();
  int api_begin(const char* name, std::uint64_t bytes);
  int api_end();
  // Marks a communication stream: nothing on it is gated (a collective that waits for a
  // grant can deadlock the ranks). The default streams are never marked: compute shares
  // them with a collective issued there, and marking one would leave the engine ungated.
  void set_comm_stream(CUstream s) {
    if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return;
    std::lock_guard<std::mutex> l(comm_m_);
    comm_streams_.insert(s);
    has_comm_.store(true);
  }
  // A stream is destroyed (before the driver frees its handle, which may be handed out
  // again at once): its communication mark goes, and a grant whose work ran last on it
  // takes its end event there now (grant_timer.cc).
  void stream_ends(CUstream s);
  // A context ends (cuCtxDestroy, before the call): its event pool goes with it. A
  // device's primary context: at a reset (before), or at a release after which the
  // driver says it is no longer active; every pool of that device goes (grant_timer.cc).
  void context_ends(CUcontext c);
  // A device's primary context is reset (before the call: every pool of the device goes)
  // or released (before the call, released = true: its pools are marked ending across the
  // call, no event of theirs used by the hook; device_release_ends after it).
  void device_contexts_end(CUdevice d, bool released);
  void device_release_ends(CUdevice d, bool ok);
  // pthread_atfork (fork.cc). fork_prepare takes the locks in the
  // order written at gm_'s declaration; the two it only tries are said in ForkLocks.
  // fork_parent releases them; fork_child re-constructs every lock (which stands for the
  // unlock) and starts the child afresh, touching what a tried lock guards only where
  // it was taken.
  struct ForkLocks {
    bool gate = false;   // gm_
    bool funcs = false;  // func_m_
  };
  ForkLocks fork_prepare();
  void fork_parent(ForkLocks held);
  void fork_child(ForkLocks held);
  // False when it could not (said in one line).
  // at_exit: the last write; the periodic writer writes nothing after it (a write it began
  // then would be cut by the exit and leave PATH.tmp behind).
  bool write_stats(bool at_exit = false);
  // RIPPLE_CUHOOK_STATS_MS > 0: a thread rewrites the stats file that often, so a bench can
  // take the counters at the start and the end of a window (engines outlive windows).
  void start_stats_thread();
  void flush();
  const Config& cfg() const { return cfg_; }
  // The driver functions the runtime uses, resolved at the first call (one load of a flag
  // after that: it runs on every intercepted call).
  void load_driver() {
    if (!drv_loaded_.load(std::memory_order_acquire)) load_driver_once();
  }

 private:
  void load_driver_once();
  std::once_flag drv_once_;
  std::atomic<bool> drv_loaded_{false};
  struct FuncInfo {
    std::string name;
    bool comm = false;
  };
  // Every kernel launch looks its function up: a fixed open-addressing table read without
  // a lock (a key is published after its value, release/acquire), filled under func_m_
  // from funcs_, which owns the entries (never erased: the pointers stay valid). Full
  // (3/4 of the slots): later functions are found in funcs_ under func_m_.
  class FuncTable {
   public:
    const FuncInfo* find(CUfunction f) const {
      if (f == nullptr) return nullptr;  // an empty slot's key: never in the table
      for (std::size_t i = slot(f), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
        const CUfunction k = keys_[i].load(std::memory_order_acquire);
        if (k == f) return vals_[i].load(std::memory_order_relaxed);
        if (k == nullptr) return nullptr;
      }
      return nullptr;
    }
    void insert(CUfunction f, const FuncInfo* info) {  // under func_m_, f not in the table
      if (f == nullptr || used_ >= kSlots / 4 * 3) return;
      std::size_t i = slot(f);
      while (keys_[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & (kSlots - 1);
      vals_[i].store(info, std::memory_order_relaxed);
      keys_[i].store(f, std::memory_order_release);
      ++used_;
    }

   private:
    static constexpr std::size_t kSlots = 4096;
    static std::size_t slot(CUfunction f) {
      return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(f) * 0x9E3779B97F4A7C15ull) >> 52);
    }
    std::atomic<CUfunction> keys_[kSlots]{};
    std::atomic<const FuncInfo*> vals_[kSlots]{};
    std::size_t used_ = 0;
  };
  static_assert(sizeof(void*) == 8, "FuncTable::slot takes the top 12 bits of a 64-bit product");
  const FuncInfo& func_info(CUfunction f);
  bool capturing(CUstream s);
  bool is_comm(CUstream s);
  // Boundaries.
  int enter(const std::vector<std::uint32_t>& units, CUstream s, Source src, const std::string& label, bool api = false);
  // A copy or graph launch outside any unit (and outside any work but a learned bare pass).
  int enter_bare(CUstream s, Source src, std::uint64_t bytes, int dir);
  // The boundary's units are bnd_units_ (the caller fills it under gm_).
  int enter_locked(Source src, const std::string& label, bool bare, std::uint64_t bytes);
  void count_unit(Source src);
  void exit_unit();
  // Under gm_.
  bool work_open() const { return pos_ < work_units_.size(); }
  // The rest of the open work is acquired and closed without running (the engine went
  // another way): the agent is charged for it, never less than what runs.
  void drain_locked();
  void clear_work_locked();
  void open_work_locked(const std::vector<std::uint32_t>& units);
  // A work's units as open_work_locked announces them: the units that fit a work, their
  // wire positions, and each unit's first one (one past the end at the back).
  void build_work_locked(const std::vector<std::uint32_t>& units, std::vector<std::uint32_t>& kept,
                         std::vector<std::uint32_t>& wire, std::vector<std::size_t>& pos0) const;
  // Grants ahead (gate.cc): the open learned bare-pass work is granted to its end, so the
  // next one (the same pass from its start, the same span) is announced now.
  void announce_ahead_locked();
  // A new work opens: the one announced ahead is adopted when it is this one, else drained.
  // True when adopted (nothing to announce).
  bool settle_ahead_locked(const std::vector<std::uint32_t>& kept, const std::vector<std::uint32_t>& wire,
                           const std::vector<std::size_t>& pos0);
  // Sub-layer grants. The wire catalog: catalog_, then the sub-unit entries of the units
  // larger than the chunk size; subs_[i]: the wire entries unit i is announced as.
  void rebuild_wire_locked();
  // The agent's suggested chunk size: noted at a Welcome or a grant, applied at the next work.
  void note_suggestion_locked(std::uint64_t suggested);
  void apply_chunk_locked();
  bool splittable(std::uint32_t unit) const;
  // The grant in hand covers wire position `wp` (acquired in order; positions before it
  // that were never reached are granted and closed at once: charged, never run).
  bool cover_locked(std::size_t wp, bool count_skipped = true);
  // A copy outside any unit, larger than the chunk size: each chunk a bare boundary.
  // Returns false when it is no bare boundary (inside a unit).
  bool chunk_bare(Op& op);
  // A host<->device copy inside a unit announced as sub-units: gate at each chunk that
  // crosses into the next sub-unit.
  void chunk_in_unit(Op& op);
  // The grant's start event on the first operation it covers.
  void mark_start(CUstream s);
  bool acquire_locked(std::size_t pos);
  bool connect_locked(std::size_t from);
  // The GPU's memory for the hello (CU_DEVICE_ATTRIBUTE_INTEGRATED of the calling
  // thread's context's device): asked until the driver answers, then kept.
  engine::Memory device_memory_locked();
  void lose_agent_locked(const std::string& why);
  // Ends the session without a message; the next connect is tried after `retry_ns`.
  void end_session_locked(std::uint64_t retry_ns);
  // A grant wait passed RIPPLE_GRANT_TIMEOUT_MS: the session ends (below).
  void grant_timeout_locked();
  bool announce_locked(std::size_t from);
  void close_grant_locked();
  // A grant a session's end takes along: no Done (the session is gone); its start event
  // back to the pool (left set, the next grant's start overwrote it: one event lost).
  void drop_grant_locked();
  void set_grant_label_locked(std::string label);
  // Timing events, pooled per context (grant_timer.cc): taken from the pool of `ctx` or
  // created in it; given back to it (at most kPoolEvents kept, the rest destroyed), or
  // dropped when the context ended since.
  Event take_event(CUcontext ctx);
  void give_back_event(Event e);
  // Records e on stream s (a stream of e's context; a default stream is the current
  // context's, so that context is made current for the call). A failure is counted, and
  // one that says the event or its context is gone drops that context's pool.
  bool record_event(Event& e, CUstream s);
  // Whether e's context has not ended since e was taken (its pool is the one it came
  // from): an event of an ended context is never recorded or queried again.
  bool event_live(const Event& e);
  // The context a stream belongs to (a default stream: the calling thread's current).
  CUcontext stream_context(CUstream s);
  // The grant's end event: on `s`, or on its start's stream when `s` is another
  // context's (an event pair times one context).
  Event end_event_locked(CUstream s);
  // A unit ends on this thread and the grant stays open: where its last covered work ran
  // on this thread's per-thread default stream, the end event is recorded there now, the
  // one thread that can name that stream (a close on another thread uses it).
  void end_on_thread_stream_locked();
  void start_watcher_locked();
  void watcher_loop();
  void record_line(const std::string& line);
  // Record mode: a unit line ({"u":...} opens, {"e":1} closes) and whether copies are
  // traced, both under rec_m_, so a copy line lies between its unit's lines.
  void record_unit_line(const std::string& line, bool open);
  // A host<->device copy: traced (record mode) or added to the open unit occurrence.
  void host_copy(const Op& op);
  // Pass learning (NVTX engines without a profile sequence; cuhooks/learning.cc). Under gm_.
  std::uint32_t learn_step_locked(const std::string& label, bool* whole_pass, std::size_t* from);
  bool learn_locked(const std::vector<std::string>& labels);
  void deviate_locked(const std::string& label);
  // A new session when the announced catalog changed.
  void renew_session_locked();
  // Bare-pass learning (copies and graph launches outside units, no NVTX/API units).
  // Replaces bnd_units_ (the fallback: the boundary's own units) by the pass unit it matched.
  void bare_step_locked(const std::string& label, std::uint64_t bytes, bool* whole_pass, std::size_t* from);
  bool bare_learn_locked(const std::vector<std::uint32_t>& ids, std::size_t cur);
  void deviate_bare_locked(const std::string& label);
  bool was_stable_locked(const std::vector<std::string>& labels) const;
  void remember_stable_locked();
  void stop_bare_learning_locked(const char* why);
  std::uint32_t bare_unit_of(const std::string& label) const;
  void begin_occurrence_locked(const std::string& label);
  void end_occurrence_locked();
  std::uint64_t duration_for(std::uint64_t bytes) const {
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(bytes) / gbps_));
  }
  std::vector<std::uint32_t> copy_units(std::uint64_t bytes) const;
  void copy_units(std::uint64_t bytes, std::vector<std::uint32_t>& u) const;
  // The grant wait's bound in ms (0: none), from RIPPLE_GRANT_TIMEOUT_MS or the fail mode.
  int grant_timeout_ms() const {
    if (cfg_.grant_timeout_ms >= 0) return cfg_.grant_timeout_ms;
    return fail_closed() ? 0 : kFailOpenGrantTimeoutMs;
  }
  bool fail_closed() const {
    return cfg_.fail == Fail::kClosed || (cfg_.fail == Fail::kUnset && agent_fail_ == engine::FailMode::kClosed);
  }

  Config cfg_;
  Driver drv_;
  Profile profile_;
  std::unique_ptr<SequenceMatcher> matcher_;
  std::mutex matcher_m_;
  std::vector<std::uint32_t> seq_;  // catalog indices of the profile's forward sequence
  std::vector<engine::UnitInfo> catalog_;
  std::uint32_t graph_unit_ = 0, generic_unit_ = 0, copy_base_ = 0;
  std::size_t base_catalog_ = 0;  // catalog_ before learned units
  double gbps_ = 200;
  static constexpr int kMinCopyShift = 12, kMaxCopyShift = 44;

  // Function names (cuFuncGetName), cached.
  std::mutex func_m_;
  std::unordered_map<CUfunction, std::unique_ptr<FuncInfo>> funcs_;
  FuncTable func_table_;
  std::mutex comm_m_;
  std::set<CUstream> comm_streams_;
  std::atomic<bool> has_comm_{false};

  // NVTX: the unit-range pattern (compiled once); names seen, mapped to catalog units
  // (-1: not a unit range).
  std::optional<NvtxPattern> nvtx_re_;
  std::mutex nvtx_m_;
  static constexpr std::size_t kMaxNvtxNames = 4096;
  std::unordered_map<std::string, std::pair<int, std::string>> nvtx_units_;
  std::atomic<bool> nvtx_seen_{false};

  // The gate.
  //
  // Lock order (what is ever acquired while another is held, cuhooks/*.cc): gm_ before
  // cm_, wm_, learn_m_ and rec_m_ (a boundary under gm_ announces and acquires under cm_,
  // takes and gives back events and queues a closed grant under wm_, adds samples under
  // learn_m_, writes record lines under rec_m_). Every other lock is a leaf: cm_, wm_,
  // learn_m_, rec_m_, func_m_, comm_m_, nvtx_m_, matcher_m_ and stats_m_ are never held
  // while another is acquired (stream_ends releases comm_m_ before it takes gm_; the
  // watcher takes wm_, learn_m_, cm_ and rec_m_ one at a time).
  //
  // fork_prepare follows that order: gm_ first, then wm_, learn_m_, rec_m_, comm_m_,
  // nvtx_m_, matcher_m_, stats_m_, func_m_ (leaves: any order among them is consistent).
  // wm_ to stats_m_ are held only over memory or a write to a regular file (rec_m_,
  // stats_m_), never across a driver call or a socket, so prepare waits for them. Three
  // locks it does not wait for:
  //   cm_: held across the client's sends on a blocking socket with no send timeout (an
  //     agent that stops reading blocks the send as long as it does). Not taken: the
  //     child only closes the session's socket, and client_ is written under gm_ too.
  //   gm_: held across the grant wait (bounded by RIPPLE_GRANT_TIMEOUT_MS, by nothing
  //     when fail-closed), the fail-closed wait for the agent, the connect's Welcome wait,
  //     the sends under cm_ and driver calls. Tried for at most kForkGateWaitMs; when it
  //     was not taken, the child never touches the gate's state (a boundary may have been
  //     changing it) and runs unmanaged. A boundary held gm_, so the parent had driven
  //     the GPU, and CUDA does not support a child using it after that.
  //   func_m_: held across cuFuncGetName, a driver call, and the driver may have fork
  //     handlers of its own that hold its locks while ours run (prepare handlers run in
  //     the reverse order of registration). Tried within the same bound; when it was not
  //     taken, the child starts funcs_ anew without walking it (the parent's entries are
  //     left, never freed: func_table_'s pointers into them stay valid).
  // Condition variables: wcv_ (the watcher) and pin_cv_ (a context's end waiting for its
  // pins) are waited on with wm_ alone, which the wait releases: prepare never waits for
  // a waiter, and one woken meanwhile takes wm_ again after fork_parent released it.
  std::mutex gm_;
  std::mutex cm_;  // client I/O
  static constexpr int kForkGateWaitMs = 10;
  std::unique_ptr<engine::Client> client_;
  std::atomic<std::uint64_t> gen_{1};
  engine::FailMode agent_fail_ = engine::FailMode::kOpen;
  std::uint64_t next_connect_ns_ = 0;
  // After a grant timeout, no session before this (the reconnect time): a boundary runs
  // unmanaged at once, also when fail-closed (the timeout is the bound the user asked for).
  std::uint64_t unmanaged_until_ns_ = 0;
  engine::Memory memory_ = engine::Memory::kUnknown;
  bool warned_unmanaged_ = false, ever_connected_ = false;
  std::uint64_t work_id_ = 0;
  // The open work: its units (positions pos_, cur_pos_ count these) and what is announced,
  // the "wire" positions: each unit as its sub-units (work_pos0_[i]: the wire position of
  // unit i; one past the end at the back).
  std::vector<std::uint32_t> work_units_;
  std::vector<std::uint32_t> work_wire_;
  std::vector<std::size_t> work_pos0_;
  std::size_t pos_ = 0;       // next position of the open work
  std::size_t base_ = 0;      // wire position of the announced work's first unit
  std::size_t cur_pos_ = 0;   // position of the unit in progress
  std::size_t acq_next_ = 0;  // wire position the agent grants next (this session)
  // The units of the boundary being entered (under gm_): one vector kept, so a boundary
  // allocates nothing (issue 18: a graph launch or bare copy allocated two vectors).
  std::vector<std::uint32_t> bnd_units_;
  std::optional<engine::GrantMsg> grant_;
  std::size_t grant_end_ = 0;  // wire
  // Sub-layer grants.
  // The chunk size in use (0: off): RIPPLE_CHUNK_BYTES, else the agent's suggestion (a
  // Welcome's or a Grant's chunk_bytes) once applied, else kDefaultChunkBytes. Read by the hot path
  // without gm_; written under gm_ between works.
  std::atomic<std::uint64_t> chunk_{0};
  std::atomic<std::uint64_t> chunk_suggested_{0};  // the agent's last suggestion (Welcome, Grant; 0: none)
  std::uint64_t chunk_pending_ = 0;    // a suggestion to apply at the next work
  std::uint64_t chunk_hold_until_ns_ = 0;  // no other change before (RIPPLE_CHUNK_HOLD_MS)
  bool quiet_renewal_ = false;         // a renewal for the chunk size: no "learned units" or
                                       // "managed again" line
  bool at_chunk_gate_ = false;         // under gm_: the acquire is a chunk gate's (stats)
  std::vector<engine::UnitInfo> wire_cat_;
  std::vector<std::vector<std::uint32_t>> subs_;
  std::uint64_t wire_gen_ = 0;  // rebuild_wire_locked calls: subs_ unchanged while equal
  bool warned_split_ = false;
  // The open unit's sub-units: wire positions [occ_w0_, occ_w1_), its bytes, the host
  // copy bytes issued inside it so far, the last position covered; occ_gen_ counts units.
  std::size_t occ_w0_ = 0, occ_w1_ = 0, occ_cover_ = 0;
  std::uint64_t occ_unit_bytes_ = 0, occ_copied_ = 0, occ_gen_ = 0;
  std::string occ_unit_label_;
  // A unit announced as sub-units is open (open_unit_, occ_w1_ > occ_w0_ + 1, a work):
  // written under gm_, read without it, so a host<->device copy outside such a unit
  // (llama.cpp's ~7 small copies a token) skips the gate lock in chunk_in_unit. A copy
  // ordered after the unit's entry (its thread, or one synchronised with it) sees it set
  // (release/acquire); one racing the entry on another thread was never ordered with it.
  std::atomic<bool> subunits_open_{false};
  std::atomic<bool> pending_start_{false};
  Event start_ev_;
  // No stream (0 is the legacy default stream): between grants, or one destroyed.
  static CUstream no_stream() { return reinterpret_cast<CUstream>(~std::uintptr_t{0}); }
  // The stream the start event went on (written under gm_; no_stream() between grants
  // and once destroyed).
  std::atomic<CUstream> start_stream_{no_stream()};
  // The stream of the grant's last covered operation, where its end event goes: written
  // without gm_ by any thread that runs covered work (the latest wins; any of the grant's
  // streams serves), read under gm_ when the grant closes. no_stream(): between grants,
  // or it was destroyed, and end_ev_ (if set) was recorded on it then.
  std::atomic<CUstream> last_stream_{no_stream()};
  // Whose per-thread default stream last_stream_ is when it is CU_STREAM_PER_THREAD (a
  // ThreadState::id): stored beside it by a thread submitting there. Two threads storing
  // at once may pair one's stream with the other's id only when both are per-thread
  // streams, both of them the grant's.
  std::atomic<std::uint64_t> last_thread_{0};
  Event end_ev_;  // under gm_
  // The created streams of the start's context the grant ran on besides the start's, in
  // the order it reached them (their start events recorded there; an end recorded when
  // one is destroyed first): the close ends each (grant_timer.cc, "Lanes"). Under gm_.
  std::array<Lane, kLanes> lanes_{};
  std::size_t nlanes_ = 0;
  // nlanes_ > 0, for stream_ends' look without gm_ (a destroyed lane's end goes on it first).
  std::atomic<bool> lanes_open_{false};
  // A created stream the open grant reaches for the first time (mark_start): a lane.
  void note_lane(CUstream s);
  bool is_lane_locked(CUstream s) const;
  void end_lane_locked(Lane& ln);
  void drop_lanes_locked();
  // The thread on whose per-thread default stream end_ev_ was recorded as a unit of it
  // ended (end_on_thread_stream_locked); 0: end_ev_ is a destroyed stream's (or none).
  // Under gm_.
  std::uint64_t end_thread_ = 0;
  std::string grant_label_;  // under gm_; set_grant_label_locked keeps grant_labelled_
  std::atomic<bool> grant_labelled_{false};  // !grant_label_.empty(), for readers without gm_
  bool grant_single_ = false;  // the grant in hand covers exactly one boundary's units
  bool open_unit_ = false;

  std::mutex stats_m_;                       // one writer of the stats file at a time
  std::atomic<std::uint64_t> stats_seq_{0};  // writes so far ("stats_seq")
  bool stats_closed_ = false;                // the exit's write is done (under stats_m_)

  // Watcher.
  std::mutex wm_;
  std::condition_variable wcv_;
  std::deque<Timed> wq_;
  // Timing events, one pool per context (under wm_; grant_timer.cc). A pool's generation
  // is new each time a context's pool is made, so an event of an ended context (its
  // handle perhaps a new context's since) never goes back into a pool.
  struct EventPool {
    std::vector<CUevent> free;
    std::uint64_t gen = 0;
    CUdevice device = -1;
    int pins = 0;    // driver calls on its events under way without wm_ (pin_event)
    int ending = 0;  // its context is ending (a release under way): no new pin
  };
  // Pins e's pool for a driver call on e made without wm_ (never held across a driver
  // call: one slow call would stall every hook call that takes or gives back an event):
  // false when its context ended or is ending. A context's end waits for its pool's pins
  // (at most kPinWaitMs) before the driver frees its events. unpin_event after the call.
  bool pin_event(const Event& e);
  void unpin_event(const Event& e);
  // Under wm_ (held by l): the pools `ends` selects are marked ending, and the call waits
  // until none of them is pinned, at most kPinWaitMs (said once if it gave up).
  template <class Ends>
  void end_pools_wm_locked(std::unique_lock<std::mutex>& l, Ends ends);
  static constexpr int kPinWaitMs = 1000;
  std::condition_variable pin_cv_;  // a pin went (with wm_)
  static constexpr std::size_t kPoolEvents = 64;  // kept per context; more are destroyed
  static constexpr std::size_t kPools = 64;       // contexts; past it the oldest pool goes
  std::unordered_map<CUcontext, EventPool> pools_;
  std::uint64_t pool_gen_ = 0;
  void drop_pool_wm_locked(std::unordered_map<CUcontext, EventPool>::iterator it);
  void drop_device_pools_wm_locked(CUdevice d);
  bool watcher_started_ = false;
  std::atomic<int> inflight_{0};  // grants closed but not yet reported

  // Record mode.
  std::mutex rec_m_;
  FILE* rec_ = nullptr;
  bool rec_open_ = false;  // under rec_m_: a unit is open (its copies are traced)

  // Pass learning. The per-label samples (copy bytes per occurrence, GPU time of one-unit
  // grants) are under learn_m_ (the watcher adds times); the rest under gm_.
  struct LabelSamples {
    std::deque<std::uint64_t> bytes, ns;
  };
  static constexpr std::size_t kSamples = 16;
  bool learn_ = false;
  std::mutex learn_m_;
  std::unordered_map<std::string, LabelSamples> samples_;
  std::atomic<bool> occ_open_{false};
  std::atomic<std::uint64_t> occ_bytes_{0};
  std::string occ_label_;
  LabelPassLearner nvtx_learner_{engine::kMaxWorkUnits};
  bool learned_ = false, pass_work_ = false, renewing_ = false, warned_catalog_ = false;
  std::vector<std::uint32_t> pass_;
  std::unordered_map<std::string, std::uint32_t> learned_units_;
  std::vector<engine::UnitInfo> session_catalog_;  // what the current session's Hello held

  // Bare-pass learning, under gm_ (cuhooks/learning.cc, "bare-pass learning").
  static constexpr std::size_t kStablePasses = 64;  // a pass lived this long: kMinWindow again
  bool bare_learn_ = false;  // bare boundaries are learned (no NVTX or API unit seen)
  bool bare_work_ = false;   // the open work is (the rest of) a learned bare pass
  std::size_t bpos_ = 0;     // position in pass_ of the next bare label
  std::uint64_t bpasses_ = 0;  // whole passes matched since learned
  CopyPassLearner copy_learner_{engine::kMaxWorkUnits};
  bool warned_bare_ = false;
  // The learned bare pass's period in wall time (its starts, matched), and how many
  // passes a work of it spans (RIPPLE_MIN_WORK_MS; cuhooks/pass_learner.h).
  PassPeriod bperiod_;
  // Matched this many times in a row before a work spans passes: a pass dropped soon (a
  // layer pass before the whole forward pass is learned) drains less; llama.cpp at ~1 ms
  // a token pays 16 round trips more.
  static constexpr std::size_t kSpanAfterPasses = 16;
  // ... or this many times, when a drain of the pass would charge next to nothing: a whole
  // work of it, at the most passes it may span, carries at most kCheapDrainBytes (a pass of
  // GPU-memory-only units and small copies: llama.cpp decoding, 0.13 MB a token). What the
  // 16 guard against is a drained work charged and never run; for such a pass that costs
  // the agent nothing, while the 14 round trips it saves are ~1 ms of llama.cpp's
  // decoding (~0.2 % of its tokens/s on an H200, results/engines.md).
  static constexpr std::size_t kSpanAfterCheapPasses = 2;
  static constexpr std::uint64_t kCheapDrainBytes = 16ull << 20;
  std::uint64_t pass_bytes_ = 0;  // the learned pass's bytes, every position's
  bool cheap_drain_locked() const;
  // Wire positions a unit takes in a work: its sub-units, or 1.
  std::size_t wire_positions(std::uint32_t u) const { return u < subs_.size() && !subs_[u].empty() ? subs_[u].size() : 1; }
  // Passes that were stable once (matched kSpanAfterPasses times in a row), as labels, the
  // last kRecalledPasses of them: one learned again (llama.cpp's decode pass after each
  // request or llama-bench rep: its first tokens go another way) is stable at once, so its
  // works span passes and are announced ahead from its first work, not after 16 more
  // round trips (Documentation/cuhook.md, "Recalled passes").
  static constexpr std::size_t kRecalledPasses = 4;
  std::vector<std::vector<std::string>> stable_passes_;
  std::vector<std::string> pass_labels_;  // the learned bare pass's labels
  bool recalled_ = false;                 // ... was stable before: stable from its start
  bool bare_stable_locked() const {
    return recalled_ || bpasses_ >= kSpanAfterPasses || (bpasses_ >= kSpanAfterCheapPasses && cheap_drain_locked());
  }
  std::size_t bare_passes_locked(std::size_t from);
  // The same count without applying a pending chunk size or counting (grants ahead).
  std::size_t bare_span_locked(std::size_t from) const;
  std::size_t bare_from_ = 0;  // the pass position the open bare work starts at
  // The work announced ahead (its id is work_id_, the last announced; only while a session
  // is open: a session that ends takes it along, the agent drops the engine's queue).
  struct Ahead {
    std::uint64_t id = 0;
    std::vector<std::uint32_t> units, wire;
    std::vector<std::size_t> pos0;
    std::vector<std::uint32_t> pass;  // the learned pass it repeats (a pass learned since: not it)
    std::uint64_t wire_gen = 0;       // wire_gen_ when built
  };
  std::optional<Ahead> ahead_;
  bool at_work_start_ = false;  // the acquire is a work's first unit's (stats)
};

}  // namespace ripple::cuhook

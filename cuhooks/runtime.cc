// The interposer's runtime: configuration (environment, read once), counters, unit
// boundaries (NVTX ranges, the kernel-sequence profile, bare host<->device copies, CUDA
// graph launches, the explicit C API), the gate (one engine session with the agent
// through the engine client library, agent/engine/client.h), grant timing (event pairs
// read by a watcher thread) and fork/exit handling. Documentation/cuhook.md.
//
// Threading: `gate_` (gm_) serialises unit boundaries: the thread at a boundary holds it
// while it waits for a grant, so other launching threads of the engine wait too (they
// belong to the same forward pass). Socket I/O is under cm_ only, so the watcher can
// report Done while a boundary waits (the wait polls in short slices). The hot path of a
// launch inside a granted unit takes no lock.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ripple/client.h"
#include "cuhooks/chunker.h"
#include "cuhooks/hooks.h"
#include "cuhooks/profile.h"
#include "include/ripple/cuhook.h"

namespace ripple::cuhook {
namespace {

using engine::monotonic_ns;

// --- messages: stderr only, never the application's stdout ------------------------
void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "ripple-cuhook[%d]: ", static_cast<int>(getpid()));
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - static_cast<std::size_t>(n) - 1, fmt, ap);
  va_end(ap);
  n = std::min<int>(n, static_cast<int>(sizeof buf) - 2);
  buf[n++] = '\n';
  ssize_t w = write(2, buf, static_cast<std::size_t>(n));
  (void)w;
}

// --- configuration -------------------------------------------------------------------
enum class Fail { kUnset, kOpen, kClosed };

// The default RIPPLE_CHUNK_BYTES: a 64 MiB chunk is ~1.3 ms of copy at 50 GB/s (a few
// grant round trips), against CPU-job allowances of 0-1.3 GB and layers of ~1.4 GB.
inline constexpr std::uint64_t kDefaultChunkBytes = 64ull << 20;

struct Config {
  bool off = false;
  std::string engine = "cuda";
  engine::Kind kind = engine::Kind::kBestEffort;
  std::uint64_t period_ns = 0, deadline_ns = 0;
  std::string socket = engine::kDefaultSocket;
  Fail fail = Fail::kUnset;
  std::string profile_path;
  std::string nvtx_pattern = kDefaultNvtxPattern;
  bool b_nvtx = true, b_profile = true, b_copy = true, b_graph = true, b_api = true;
  std::uint64_t copy_min_bytes = 1 << 20;
  std::uint64_t unit_bytes = 0, graph_bytes = 0;
  std::string comm_prefix = "nccl";
  std::string stats_path, record_path;
  // RIPPLE_GRANT_TIMEOUT_MS; -1 unset: fail-open engines wait at most
  // kFailOpenGrantTimeoutMs (a hung agent must not hang them), fail-closed ones as long as
  // the agent says; 0: no bound.
  int grant_timeout_ms = -1;
  int reconnect_ms = 500;
  // Besides root, the uid the agent may run as (RIPPLE_AGENT_UID): a socket served by
  // anyone else is no agent.
  uid_t agent_uid = 0;
  bool learn = true;  // learn the pass of NVTX units or of bare copies (no profile sequence)
  std::uint64_t chunk_bytes = kDefaultChunkBytes;  // sub-layer grants; 0: off
};

std::string env_str(const char* k, const std::string& def) {
  const char* v = getenv(k);
  return v && *v ? std::string(v) : def;
}
// A fail-open engine's default bound on one grant wait: far above any wait a working
// agent imposes (a job's budget, a period), so reaching it means the agent is hung
// (stopped, overloaded): the engine then runs unmanaged, as fail-open promises.
constexpr int kFailOpenGrantTimeoutMs = 10'000;

std::uint64_t env_u64(const char* k, std::uint64_t def) {
  const char* v = getenv(k);
  if (!v || !*v) return def;
  char* end = nullptr;
  unsigned long long x = strtoull(v, &end, 0);
  if (end == v || *end) {
    say("ignoring %s=%s: not a number", k, v);
    return def;
  }
  return x;
}

// Opens a file the interposer writes (RIPPLE_CUHOOK_STATS, RIPPLE_RECORD) without
// following a symlink at its last component (O_NOFOLLOW): a link planted there by
// another user would otherwise have the engine's process overwrite or append to the
// file it names. Only a regular file is written (a FIFO or a device is refused, opened
// O_NONBLOCK so a FIFO cannot block us); truncated after that check, not by O_TRUNC.
// Says why in one line when it refuses.
FILE* open_output(const char* what, const std::string& path, bool append) {
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (append ? O_APPEND : 0), 0644);
  if (fd < 0) {
    if (errno == ELOOP) say("not writing the %s file %s: it is a symlink", what, path.c_str());
    else say("cannot write the %s file %s: %s", what, path.c_str(), strerror(errno));
    return nullptr;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    say("not writing the %s file %s: not a regular file", what, path.c_str());
    ::close(fd);
    return nullptr;
  }
  if ((!append && ::ftruncate(fd, 0) != 0) || ::fcntl(fd, F_SETFL, append ? O_APPEND : 0) != 0) {
    say("cannot write the %s file %s: %s", what, path.c_str(), strerror(errno));
    ::close(fd);
    return nullptr;
  }
  FILE* f = ::fdopen(fd, append ? "a" : "w");
  if (f == nullptr) ::close(fd);
  return f;
}

std::string program_name() {
  char buf[64] = {};
  FILE* f = fopen("/proc/self/comm", "re");
  if (f) {
    if (fgets(buf, sizeof buf, f) == nullptr) buf[0] = 0;
    fclose(f);
  }
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "cuda" : s;
}

Config read_config() {
  Config c;
  c.off = env_str("RIPPLE_CUHOOK", "on") == "off";
  c.engine = env_str("RIPPLE_ENGINE", program_name()).substr(0, engine::kNameBytes - 1);
  const std::string kind = env_str("RIPPLE_KIND", "best-effort");
  if (kind == "deadline-bound") c.kind = engine::Kind::kDeadlineBound;
  else if (kind != "best-effort") say("RIPPLE_KIND=%s is neither best-effort nor deadline-bound: using best-effort", kind.c_str());
  c.period_ns = env_u64("RIPPLE_PERIOD_MS", 0) * 1000000ull;
  c.deadline_ns = env_u64("RIPPLE_DEADLINE_MS", 0) * 1000000ull;
  c.socket = env_str("RIPPLE_SOCKET", c.socket);
  const std::string fail = env_str("RIPPLE_FAIL", "");
  if (fail == "open") c.fail = Fail::kOpen;
  else if (fail == "closed") c.fail = Fail::kClosed;
  else if (!fail.empty()) say("RIPPLE_FAIL=%s is neither open nor closed: the agent decides", fail.c_str());
  c.profile_path = env_str("RIPPLE_PROFILE", "");
  c.nvtx_pattern = env_str("RIPPLE_NVTX_PATTERN", c.nvtx_pattern);
  const std::string b = env_str("RIPPLE_BOUNDARIES", "nvtx,profile,copy,graph,api");
  auto has = [&](const char* w) { return ("," + b + ",").find(std::string(",") + w + ",") != std::string::npos; };
  c.b_nvtx = has("nvtx"), c.b_profile = has("profile"), c.b_copy = has("copy"), c.b_graph = has("graph"), c.b_api = has("api");
  c.copy_min_bytes = env_u64("RIPPLE_COPY_MIN_BYTES", c.copy_min_bytes);
  c.unit_bytes = env_u64("RIPPLE_UNIT_BYTES", 0);
  c.graph_bytes = env_u64("RIPPLE_GRAPH_BYTES", 0);
  c.comm_prefix = env_str("RIPPLE_COMM_PREFIX", c.comm_prefix);
  c.stats_path = env_str("RIPPLE_CUHOOK_STATS", "");
  c.record_path = env_str("RIPPLE_RECORD", "");
  if (const char* t = getenv("RIPPLE_GRANT_TIMEOUT_MS"); t && *t)
    c.grant_timeout_ms = static_cast<int>(std::min<std::uint64_t>(env_u64("RIPPLE_GRANT_TIMEOUT_MS", 0), 86'400'000));
  c.reconnect_ms = static_cast<int>(env_u64("RIPPLE_RECONNECT_MS", 500));
  c.agent_uid = static_cast<uid_t>(std::min<std::uint64_t>(env_u64("RIPPLE_AGENT_UID", 0), 4294967294ull));
  c.learn = env_str("RIPPLE_LEARN", "on") != "off";
  c.chunk_bytes = env_u64("RIPPLE_CHUNK_BYTES", c.chunk_bytes);
  return c;
}

// --- counters --------------------------------------------------------------------
struct Counters {
  std::atomic<std::uint64_t> launches{0}, copies{0}, h2d_bytes{0}, d2h_bytes{0};
  std::atomic<std::uint64_t> units{0}, units_nvtx{0}, units_profile{0}, units_copy{0}, units_graph{0}, units_api{0};
  std::atomic<std::uint64_t> grants{0}, grant_waits{0}, wait_ns{0}, done_reported{0}, unmanaged_units{0};
  std::atomic<std::uint64_t> capture_skips{0}, comm_skips{0}, agent_connects{0}, agent_losses{0};
  std::atomic<std::uint64_t> passthrough{0}, via_procaddr{0}, unwrapped{0}, errors{0};
  std::atomic<std::uint64_t> profile_resyncs{0}, nvtx_pushes{0}, seq_mismatch{0};
  std::atomic<std::uint64_t> passes_learned{0}, relearns{0}, learned_pass_units{0}, unit_copy_bytes{0};
  std::atomic<std::uint64_t> copy_passes_learned{0}, units_drained{0};
  std::atomic<std::uint64_t> grant_timeouts{0};
  std::atomic<std::uint64_t> chunked_copies{0}, chunks{0}, chunk_gates{0}, subunits_skipped{0};
  std::atomic<std::uint64_t> calls[kHookCount]{}, bytes[kHookCount]{};
};
Counters g_c;

enum class Source { kNvtx, kProfile, kCopy, kGraph, kApi };

// --- driver functions the runtime itself uses ------------------------------------
struct Driver {
  CUresult(CUDAAPI* event_create)(CUevent*, unsigned int) = nullptr;
  CUresult(CUDAAPI* event_record)(CUevent, CUstream) = nullptr;
  CUresult(CUDAAPI* event_query)(CUevent) = nullptr;
  CUresult(CUDAAPI* elapsed)(float*, CUevent, CUevent) = nullptr;
  CUresult(CUDAAPI* is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult(CUDAAPI* func_name)(const char**, CUfunction) = nullptr;
  CUresult(CUDAAPI* ctx_get)(CUcontext*) = nullptr;
  CUresult(CUDAAPI* ctx_set)(CUcontext) = nullptr;
  CUresult(CUDAAPI* exchange_capture_mode)(CUstreamCaptureMode*) = nullptr;
  void load() {
    auto sym = [](const char* a, const char* b = nullptr) {
      void* p = driver_symbol(a);
      return p || !b ? p : driver_symbol(b);
    };
    event_create = reinterpret_cast<decltype(event_create)>(sym("cuEventCreate"));
    event_record = reinterpret_cast<decltype(event_record)>(sym("cuEventRecord"));
    event_query = reinterpret_cast<decltype(event_query)>(sym("cuEventQuery"));
    elapsed = reinterpret_cast<decltype(elapsed)>(sym("cuEventElapsedTime_v2", "cuEventElapsedTime"));
    is_capturing = reinterpret_cast<decltype(is_capturing)>(sym("cuStreamIsCapturing"));
    func_name = reinterpret_cast<decltype(func_name)>(sym("cuFuncGetName"));
    ctx_get = reinterpret_cast<decltype(ctx_get)>(sym("cuCtxGetCurrent"));
    ctx_set = reinterpret_cast<decltype(ctx_set)>(sym("cuCtxSetCurrent"));
    exchange_capture_mode = reinterpret_cast<decltype(exchange_capture_mode)>(sym("cuThreadExchangeStreamCaptureMode"));
  }
};

// A grant handed to the watcher once closed.
struct Timed {
  engine::GrantMsg grant;
  std::uint64_t gen;
  CUevent start = nullptr, end = nullptr;
  CUcontext ctx = nullptr;
  std::string unit;  // the unit's label (record mode; a one-boundary grant when learning)
  bool single = false;  // the grant covered one boundary's units: its time is that label's
};

struct ThreadState {
  std::vector<char> nvtx_stack;  // per pushed range: 1 when it began a unit
  CUstream last_stream = nullptr;
  int api_depth = 0;
};
thread_local ThreadState t_state;

class Runtime {
 public:
  Runtime();
  void before(Op& op);
  void after(const Op& op, CUresult r);
  void range_push(const char* name);
  void range_pop();
  int api_begin(const char* name, std::uint64_t bytes);
  int api_end();
  void set_comm_stream(CUstream s) {
    std::lock_guard<std::mutex> l(comm_m_);
    comm_streams_.insert(s);
    has_comm_.store(true);
  }
  void fork_child();
  void write_stats();
  void flush();
  const Config& cfg() const { return cfg_; }
  void load_driver();

 private:
  std::once_flag drv_once_;
  struct FuncInfo {
    std::string name;
    bool comm = false;
  };
  const FuncInfo& func_info(CUfunction f);
  bool capturing(CUstream s);
  bool is_comm(CUstream s);
  // Boundaries.
  int enter(const std::vector<std::uint32_t>& units, CUstream s, Source src, const std::string& label, bool api = false);
  // A copy or graph launch outside any unit (and outside any work but a learned bare pass).
  int enter_bare(CUstream s, Source src, std::uint64_t bytes, int dir);
  int enter_locked(std::vector<std::uint32_t> units, Source src, const std::string& label, bool bare, std::uint64_t bytes);
  void count_unit(Source src);
  void exit_unit();
  // Under gm_.
  bool work_open() const { return pos_ < work_units_.size(); }
  // The rest of the open work is acquired and closed without running (the engine went
  // another way): the agent is charged for it, never less than what runs.
  void drain_locked();
  void clear_work_locked();
  void open_work_locked(const std::vector<std::uint32_t>& units);
  // Sub-layer grants. The wire catalog: catalog_, then the sub-unit entries of the units
  // larger than the chunk size; subs_[i]: the wire entries unit i is announced as.
  void rebuild_wire_locked();
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
  void lose_agent_locked(const std::string& why);
  // Ends the session without a message; the next connect is tried after `retry_ns`.
  void end_session_locked(std::uint64_t retry_ns);
  // A grant wait passed RIPPLE_GRANT_TIMEOUT_MS: the session ends (below).
  void grant_timeout_locked();
  bool announce_locked(std::size_t from);
  void close_grant_locked();
  void start_watcher_locked();
  void watcher_loop();
  CUevent take_event();
  void record_line(const std::string& line);
  // Record mode: a unit line ({"u":...} opens, {"e":1} closes) and whether copies are
  // traced, both under rec_m_, so a copy line lies between its unit's lines.
  void record_unit_line(const std::string& line, bool open);
  // A host<->device copy: traced (record mode) or added to the open unit occurrence.
  void host_copy(const Op& op);
  // Pass learning (NVTX engines without a profile sequence). Under gm_.
  std::uint32_t learn_step_locked(const std::string& label, bool* whole_pass, std::size_t* from);
  void observe_locked(const std::string& label);
  void learn_locked(const std::vector<std::string>& labels);
  void deviate_locked(const std::string& label);
  void renew_session_locked();
  // Bare-pass learning (copies and graph launches outside units, no NVTX/API units).
  std::vector<std::uint32_t> bare_step_locked(const std::string& label, std::uint64_t bytes,
                                              std::vector<std::uint32_t> fallback, bool* whole_pass, std::size_t* from);
  void bare_record_locked(const std::string& label, std::uint64_t bytes, std::uint64_t gap);
  void bare_runs_update_locked();
  void bare_runs_rebuild_locked();
  bool bare_try_learn_locked();
  bool bare_learn_locked(const std::vector<std::uint32_t>& ids, std::size_t cur);
  std::size_t bare_threshold(std::size_t p) const;
  void bare_restart_locked();
  void deviate_bare_locked(const std::string& label);
  void stop_bare_learning_locked(const char* why);
  std::uint32_t bare_unit_of(const std::string& label) const;
  void begin_occurrence_locked(const std::string& label);
  void end_occurrence_locked();
  std::uint64_t duration_for(std::uint64_t bytes) const {
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(bytes) / gbps_));
  }
  std::vector<std::uint32_t> copy_units(std::uint64_t bytes) const;
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
  std::mutex comm_m_;
  std::set<CUstream> comm_streams_;
  std::atomic<bool> has_comm_{false};

  // NVTX: the unit-range pattern (compiled once); names seen, mapped to catalog units
  // (-1: not a unit range).
  std::optional<NvtxPattern> nvtx_re_;
  std::mutex nvtx_m_;
  std::unordered_map<std::string, std::pair<int, std::string>> nvtx_units_;
  std::atomic<bool> nvtx_seen_{false};

  // The gate.
  std::mutex gm_;
  std::mutex cm_;  // client I/O
  std::unique_ptr<engine::Client> client_;
  std::atomic<std::uint64_t> gen_{1};
  engine::FailMode agent_fail_ = engine::FailMode::kOpen;
  std::uint64_t next_connect_ns_ = 0;
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
  std::optional<engine::GrantMsg> grant_;
  std::size_t grant_end_ = 0;  // wire
  // Sub-layer grants.
  std::uint64_t chunk_ = 0;
  std::vector<engine::UnitInfo> wire_cat_;
  std::vector<std::vector<std::uint32_t>> subs_;
  bool warned_split_ = false;
  // The open unit's sub-units: wire positions [occ_w0_, occ_w1_), its bytes, the host
  // copy bytes issued inside it so far, the last position covered; occ_gen_ counts units.
  std::size_t occ_w0_ = 0, occ_w1_ = 0, occ_cover_ = 0;
  std::uint64_t occ_unit_bytes_ = 0, occ_copied_ = 0, occ_gen_ = 0;
  std::string occ_unit_label_;
  std::atomic<bool> pending_start_{false};
  CUevent start_ev_ = nullptr;
  CUcontext start_ctx_ = nullptr;
  CUstream last_stream_ = nullptr;
  std::string grant_label_;
  bool grant_single_ = false;  // the grant in hand covers exactly one boundary's units
  bool open_unit_ = false;

  // Watcher.
  std::mutex wm_;
  std::condition_variable wcv_;
  std::deque<Timed> wq_;
  std::vector<CUevent> free_events_;
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
  std::string first_label_;
  std::size_t skipped_ = 0;  // labels seen while waiting for first_label_
  std::vector<std::string> cand_, prev_cand_;
  bool learned_ = false, pass_work_ = false, renewing_ = false, warned_catalog_ = false;
  std::vector<std::uint32_t> pass_;
  std::unordered_map<std::string, std::uint32_t> learned_units_;
  std::vector<engine::UnitInfo> session_catalog_;  // what the current session's Hello held

  // Bare-pass learning, under gm_ (see "bare-pass learning" below). The labels
  // ("h2d-BYTES", "d2h-BYTES", "graph") are interned; the history is a ring of the last
  // kBareRing labels, each with the kernel launches since the last boundary that was no
  // device-to-host copy (where a learned pass's phase begins). brun_[p]: how many labels
  // in a row equal the label p before them (the stream is p-periodic there); kept up
  // while learning, rebuilt from the ring when a learned pass is dropped.
  static constexpr std::size_t kMaxPass = engine::kMaxWorkUnits;
  static constexpr std::size_t kBareRing = 2 * kMaxPass + 1;
  static constexpr std::size_t kMinWindow = 8;      // labels a pass must repeat over, at least
  static constexpr std::size_t kStablePasses = 64;  // a pass lived this long: kMinWindow again
  static constexpr std::size_t kMaxLabels = 16384;  // distinct labels interned, at most
  bool bare_learn_ = false;  // bare boundaries are learned (no NVTX or API unit seen)
  bool bare_work_ = false;   // the open work is (the rest of) a learned bare pass
  std::size_t bpos_ = 0;     // position in pass_ of the next bare label
  std::uint64_t bpasses_ = 0;  // whole passes matched since learned
  std::size_t bmin_window_ = kMinWindow;
  std::uint64_t bn_ = 0;     // labels in the history
  std::uint64_t last_bare_launches_ = 0;
  std::unordered_map<std::string, std::uint32_t> bids_;
  std::vector<std::string> bnames_;
  std::vector<std::uint64_t> bbytes_;
  std::vector<std::uint32_t> bhist_, brun_;
  std::vector<std::uint64_t> bgap_;
  bool warned_bare_ = false;
};

Runtime::Runtime() : cfg_(read_config()) {
  if (cfg_.off) return;
  if (auto re = NvtxPattern::compile(cfg_.nvtx_pattern)) {
    nvtx_re_ = std::move(*re);
  } else {
    // Never gate nothing silently: say it once and use the default.
    say("RIPPLE_NVTX_PATTERN='%s' is not a valid ECMAScript regular expression (%s): using the default pattern",
        cfg_.nvtx_pattern.c_str(), re.error().message.c_str());
    cfg_.nvtx_pattern = kDefaultNvtxPattern;
    nvtx_re_ = std::move(*NvtxPattern::compile(cfg_.nvtx_pattern));
  }
  if (!cfg_.profile_path.empty()) {
    auto p = load_profile(cfg_.profile_path);
    if (!p) say("profile not used: %s", p.error().message.c_str());
    else profile_ = std::move(*p);
  }
  // The catalog announced to the agent: the profile's units, then one unit for a whole
  // CUDA graph, one generic unit, and power-of-two copy units (a copy of B bytes is the
  // units of B's binary digits, so its bytes are exact to 4 KiB).
  // The forward sequence: a recorded profile's recorded units (those with kernels: units
  // only the model catalog has, such as an embedding outside any NVTX range, are never
  // entered), else every unit; a graph replays them all.
  std::uint64_t graph = 0;
  bool recorded = false;
  for (const auto& u : profile_.units) recorded |= !u.kernels.empty();
  for (std::size_t i = 0; i < profile_.units.size(); ++i) {
    const auto& u = profile_.units[i];
    catalog_.push_back({u.name, u.bytes, u.gpu_ns});
    if (u.kind != "graph") {
      if (!recorded || !u.kernels.empty()) seq_.push_back(static_cast<std::uint32_t>(i));
      graph += u.bytes;
    }
  }
  const int pg = profile_.find("graph");
  if (pg >= 0) {
    graph_unit_ = static_cast<std::uint32_t>(pg);
  } else {
    graph_unit_ = static_cast<std::uint32_t>(catalog_.size());
    catalog_.push_back({"graph", cfg_.graph_bytes ? cfg_.graph_bytes : graph, 0});
  }
  generic_unit_ = static_cast<std::uint32_t>(catalog_.size());
  catalog_.push_back({"unit", cfg_.unit_bytes, 0});
  copy_base_ = static_cast<std::uint32_t>(catalog_.size());
  for (int s = kMinCopyShift; s <= kMaxCopyShift; ++s)
    catalog_.push_back({"copy-2^" + std::to_string(s), 1ull << s, 0});
  // The protocol wants every unit to have bytes and a duration: unknown bytes count as
  // one, unknown durations are estimated at RIPPLE_GPU_GBPS (default 200 GB/s).
  gbps_ = static_cast<double>(std::max<std::uint64_t>(1, env_u64("RIPPLE_GPU_GBPS", 200)));
  for (auto& u : catalog_) {
    u.bytes = std::max<std::uint64_t>(u.bytes, 1);
    if (u.duration_ns == 0) u.duration_ns = duration_for(u.bytes);
  }
  base_catalog_ = catalog_.size();
  chunk_ = cfg_.chunk_bytes;
  // Without a profile sequence, NVTX engines get whole-pass works once the pass is learned.
  learn_ = cfg_.learn && seq_.empty() && cfg_.record_path.empty();
  // Without NVTX or API units, bare copies and graph launches are learned the same way.
  bare_learn_ = learn_ && (cfg_.b_copy || cfg_.b_graph);
  if (recorded && cfg_.b_profile) matcher_ = std::make_unique<SequenceMatcher>(profile_);
  if (!cfg_.record_path.empty()) chunk_ = 0;  // record mode sees whole copies
  rebuild_wire_locked();
}

// The driver is touched only once the process calls it (a preloaded shell never does).
void Runtime::load_driver() {
  std::call_once(drv_once_, [&] {
    drv_.load();
    if (!cfg_.record_path.empty()) {
      rec_ = open_output("record", cfg_.record_path, true);
    }
  });
}

std::vector<std::uint32_t> Runtime::copy_units(std::uint64_t bytes) const {
  std::vector<std::uint32_t> u;
  std::uint64_t b = (bytes + (1ull << kMinCopyShift) - 1) >> kMinCopyShift << kMinCopyShift;
  for (int s = kMaxCopyShift; s >= kMinCopyShift; --s) {
    const std::uint64_t v = 1ull << s;
    while (b >= v && u.size() < engine::kMaxWorkUnits) {  // beyond 2^44: repeated top units
      u.push_back(copy_base_ + static_cast<std::uint32_t>(s - kMinCopyShift));
      b -= v;
      if (s != kMaxCopyShift) break;
    }
  }
  return u;
}

// --- sub-layer grants ------------------------------------------------------------------
// A unit larger than the chunk size C is announced as its sub-units (cuhooks/chunker.h);
// the copies inside it are issued in chunks cut at the sub-unit boundaries, and a chunk
// that crosses into a sub-unit the grant in hand does not cover waits for its grant. A
// bare copy larger than C is issued in chunks of C, each its own bare boundary (the
// copy-pass learner sees chunk labels). Only the units whose bytes are host traffic are
// split: not a graph launch (nothing inside it can wait) nor a copy unit.
bool Runtime::splittable(std::uint32_t u) const {
  if (u == graph_unit_) return false;
  if (u >= copy_base_ && u < base_catalog_) return false;  // copy-2^k units
  if (u >= base_catalog_ && bare_learn_) return false;     // learned copy sizes
  return true;
}

void Runtime::rebuild_wire_locked() {
  wire_cat_ = catalog_;
  subs_.assign(catalog_.size(), {});
  if (!chunk_) return;
  // One pair of entries per split unit (C bytes, the rest), so each keeps its duration.
  for (std::uint32_t u = 0; u < catalog_.size(); ++u) {
    if (!splittable(u) || catalog_[u].bytes <= chunk_) continue;
    const std::uint32_t n = sub_unit_count(catalog_[u].bytes, chunk_);
    const std::size_t extra = 2;
    if (n > engine::kMaxWorkUnits / 4 || wire_cat_.size() + extra > engine::kMaxUnits) {
      if (!warned_split_)
        say("unit '%s' (%llu bytes) is not split into chunks of RIPPLE_CHUNK_BYTES=%llu: %s (said once)",
            catalog_[u].name.c_str(), static_cast<unsigned long long>(catalog_[u].bytes),
            static_cast<unsigned long long>(chunk_),
            n > engine::kMaxWorkUnits / 4 ? "too many sub-units for a work" : "the catalog is full");
      warned_split_ = true;
      continue;
    }
    const std::vector<engine::UnitInfo> parts = split_unit(catalog_[u], chunk_);
    const auto full = static_cast<std::uint32_t>(wire_cat_.size());
    wire_cat_.push_back(parts.front());
    std::uint32_t tail = full;
    if (parts.back().bytes != parts.front().bytes) {
      tail = static_cast<std::uint32_t>(wire_cat_.size());
      wire_cat_.push_back(parts.back());
    }
    subs_[u].assign(n - 1, full);
    subs_[u].push_back(tail);
  }
}

bool Runtime::chunk_bare(Op& op) {
  const std::vector<Chunk> plan = plan_chunks(0, op.bytes, op.bytes, chunk_, op.granule);
  bool any = false;
  for (const Chunk& c : plan) {
    const int rc = enter_bare(op.stream, Source::kCopy, c.bytes, op.dir);
    if (rc == -3) {
      if (!any) return false;  // inside a unit after all
    }
    if (rc == -2) {  // stream capture: never split, never gated
      if (!any) return true;
    }
    any = true;
    mark_start(op.stream);
    const CUresult r = op.issue(op, c.offset, c.bytes);
    g_c.chunks.fetch_add(1, std::memory_order_relaxed);
    if (rc >= -1) exit_unit();
    op.issued = true;
    op.result = r;
    if (r != CUDA_SUCCESS) break;
  }
  if (plan.size() > 1) g_c.chunked_copies.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Runtime::chunk_in_unit(Op& op) {
  std::vector<Chunk> plan;
  std::uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> l(gm_);
    if (!open_unit_ || occ_w1_ <= occ_w0_ + 1 || work_wire_.empty()) return;  // no sub-units
    if (capturing(op.stream)) return;
    plan = plan_chunks(occ_copied_, op.bytes, occ_unit_bytes_, chunk_, op.granule);
    occ_copied_ += op.bytes;  // reserved: a copy of another thread comes after it
    gen = occ_gen_;
  }
  if (plan.size() > 1) g_c.chunked_copies.fetch_add(1, std::memory_order_relaxed);
  for (const Chunk& c : plan) {
    {
      std::lock_guard<std::mutex> l(gm_);
      const std::size_t wp = std::min(occ_w0_ + c.sub, occ_w1_ - 1);
      if (gen == occ_gen_ && wp > occ_cover_) {  // a gate point
        g_c.chunk_gates.fetch_add(1, std::memory_order_relaxed);
        const bool fresh = !(grant_ && wp < grant_end_);
        if (!cover_locked(wp)) g_c.unmanaged_units.fetch_add(1, std::memory_order_relaxed);
        else if (fresh) grant_label_ = occ_unit_label_;
        occ_cover_ = wp;
      }
    }
    mark_start(op.stream);
    if (plan.size() == 1) return;  // not split: the hook issues the call as it is
    const CUresult r = op.issue(op, c.offset, c.bytes);
    g_c.chunks.fetch_add(1, std::memory_order_relaxed);
    op.issued = true;
    op.result = r;
    if (r != CUDA_SUCCESS) return;
  }
}

const Runtime::FuncInfo& Runtime::func_info(CUfunction f) {
  std::lock_guard<std::mutex> l(func_m_);
  auto it = funcs_.find(f);
  if (it != funcs_.end()) return *it->second;
  auto info = std::make_unique<FuncInfo>();
  const char* name = nullptr;
  if (drv_.func_name && drv_.func_name(&name, f) == CUDA_SUCCESS && name) info->name = name;
  else info->name = "?";
  info->comm = !cfg_.comm_prefix.empty() && info->name.compare(0, cfg_.comm_prefix.size(), cfg_.comm_prefix) == 0;
  return *funcs_.emplace(f, std::move(info)).first->second;
}

bool Runtime::capturing(CUstream s) {
  if (!drv_.is_capturing) return false;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (drv_.is_capturing(s, &st) != CUDA_SUCCESS) return false;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool Runtime::is_comm(CUstream s) {
  if (!has_comm_.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> l(comm_m_);
  return comm_streams_.count(s) != 0;
}

void Runtime::record_line(const std::string& line) {
  if (!rec_) return;
  std::lock_guard<std::mutex> l(rec_m_);
  fputs(line.c_str(), rec_);
  fputc('\n', rec_);
}

void Runtime::record_unit_line(const std::string& line, bool open) {
  if (!rec_) return;
  std::lock_guard<std::mutex> l(rec_m_);
  fputs(line.c_str(), rec_);
  fputc('\n', rec_);
  rec_open_ = open;
}

void Runtime::host_copy(const Op& op) {
  if (rec_) {
    {
      std::lock_guard<std::mutex> l(rec_m_);
      if (!rec_open_) return;
    }
    if (capturing(op.stream)) return;  // not executed now: part of a graph
    std::lock_guard<std::mutex> l(rec_m_);
    if (!rec_open_) return;
    fprintf(rec_, "{\"c\":%llu,\"d\":\"%s\"}\n", op.bytes, op.dir == RH_DIR_H2D ? "h2d" : "d2h");
    return;
  }
  if (!learn_ || !occ_open_.load(std::memory_order_relaxed) || capturing(op.stream)) return;
  occ_bytes_.fetch_add(op.bytes, std::memory_order_relaxed);
  g_c.unit_copy_bytes.fetch_add(op.bytes, std::memory_order_relaxed);
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if (static_cast<unsigned char>(ch) < 0x20) o += ' ';
    else o += ch;
  }
  return o + "\"";
}

// --- the hot path ---------------------------------------------------------------
void Runtime::before(Op& op) {
  const int h = static_cast<int>(op.hook);
  g_c.calls[h].fetch_add(1, std::memory_order_relaxed);
  g_c.bytes[h].fetch_add(op.bytes, std::memory_order_relaxed);
  if (op.slot > 0) g_c.via_procaddr.fetch_add(1, std::memory_order_relaxed);
  if (cfg_.off) return;
  load_driver();
  if (op.kind == RH_KERNEL || op.kind == RH_GRAPH) g_c.launches.fetch_add(1, std::memory_order_relaxed);
  else if (op.kind == RH_COPY || op.kind == RH_SET || op.kind == RH_PREFETCH) {
    g_c.copies.fetch_add(1, std::memory_order_relaxed);
    if (op.dir == RH_DIR_H2D) g_c.h2d_bytes.fetch_add(op.bytes, std::memory_order_relaxed);
    if (op.dir == RH_DIR_D2H) g_c.d2h_bytes.fetch_add(op.bytes, std::memory_order_relaxed);
    if (op.kind == RH_COPY && (op.dir == RH_DIR_H2D || op.dir == RH_DIR_D2H)) host_copy(op);
  }
  if (op.kind == RH_HOSTFN) return;
  if (op.kind == RH_KERNEL) {
    const FuncInfo& fi = func_info(op.func);
    if (fi.comm) {
      set_comm_stream(op.stream);
      g_c.comm_skips.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (is_comm(op.stream)) {
      g_c.comm_skips.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (rec_) record_line("{\"k\":" + json_str(fi.name) + "}");
    if (matcher_ && !nvtx_seen_.load(std::memory_order_relaxed) && t_state.api_depth == 0) {
      SequenceMatcher::Step st;
      {
        std::lock_guard<std::mutex> l(matcher_m_);
        const auto r0 = matcher_->resyncs();
        st = matcher_->on_kernel(fi.name);
        if (matcher_->resyncs() != r0) g_c.profile_resyncs.fetch_add(1, std::memory_order_relaxed);
      }
      if (st.begin_unit >= 0)
        enter({static_cast<std::uint32_t>(st.begin_unit)}, op.stream, Source::kProfile,
              profile_.units[static_cast<std::size_t>(st.begin_unit)].name);
      op.end_unit = st.end_unit;
    }
  } else if (op.kind == RH_GRAPH && cfg_.b_graph) {
    if (enter_bare(op.stream, Source::kGraph, 0, RH_DIR_NONE) >= -1) op.gated = true;
  } else if (op.kind == RH_COPY && (op.dir == RH_DIR_H2D || op.dir == RH_DIR_D2H)) {
    // A bare boundary (whole, or chunk by chunk), else perhaps a copy inside a unit
    // announced as sub-units.
    const bool chunkable = op.issue && chunk_ && !rec_ && op.bytes > chunk_;
    bool inside = true;
    if (cfg_.b_copy && op.bytes >= cfg_.copy_min_bytes) {
      if (chunkable) {
        inside = !chunk_bare(op);
      } else {
        const int rc = enter_bare(op.stream, Source::kCopy, op.bytes, op.dir);
        if (rc >= -1) op.gated = true;
        inside = rc == -3;
      }
    }
    if (inside && op.issue && chunk_ && !rec_) chunk_in_unit(op);
  }
  t_state.last_stream = op.stream;
  mark_start(op.stream);
}

void Runtime::mark_start(CUstream s) {
  // The grant's start event goes on the first operation it covers.
  const CUstream stream = s;
  if (pending_start_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> l(gm_);
    if (pending_start_.load() && drv_.event_record && !capturing(stream)) {
      start_ev_ = take_event();
      if (start_ev_ && drv_.event_record(start_ev_, stream) != CUDA_SUCCESS) start_ev_ = nullptr;
      if (drv_.ctx_get) drv_.ctx_get(&start_ctx_);
      pending_start_.store(false);
    }
    last_stream_ = stream;
  } else if (grant_label_.size()) {
    last_stream_ = stream;  // racy by design: only the stream of the grant's end event
  }
}

void Runtime::after(const Op& op, CUresult r) {
  if (r != CUDA_SUCCESS) g_c.errors.fetch_add(1, std::memory_order_relaxed);
  if (cfg_.off) return;
  if (op.end_unit >= 0 || op.gated) exit_unit();
}

// --- boundaries ----------------------------------------------------------------------
void Runtime::count_unit(Source src) {
  g_c.units.fetch_add(1, std::memory_order_relaxed);
  switch (src) {
    case Source::kNvtx: g_c.units_nvtx.fetch_add(1, std::memory_order_relaxed); break;
    case Source::kProfile: g_c.units_profile.fetch_add(1, std::memory_order_relaxed); break;
    case Source::kCopy: g_c.units_copy.fetch_add(1, std::memory_order_relaxed); break;
    case Source::kGraph: g_c.units_graph.fetch_add(1, std::memory_order_relaxed); break;
    case Source::kApi: g_c.units_api.fetch_add(1, std::memory_order_relaxed); break;
  }
}

// The calling thread blocks until a grant covers every unit in `units` (one unit, or the
// copy units of one copy). Returns 0 when granted, -1 when the units run unmanaged, -2
// when they were not entered at all (stream capture). `api`: an explicit unit (its
// bytes may make it a kCopy source).
int Runtime::enter(const std::vector<std::uint32_t>& units_in, CUstream s, Source src, const std::string& label, bool api) {
  if (capturing(s)) {
    g_c.capture_skips.fetch_add(1, std::memory_order_relaxed);
    return -2;
  }
  count_unit(src);
  if (rec_) {
    // Record mode: no agent; each unit is timed by its own event pair.
    std::lock_guard<std::mutex> l(gm_);
    close_grant_locked();
    record_unit_line("{\"u\":" + json_str(label) + "}", true);
    grant_ = engine::GrantMsg{};
    grant_label_ = label;
    open_unit_ = true;
    pending_start_.store(true);
    return 0;
  }
  std::lock_guard<std::mutex> l(gm_);
  // An engine that marks its units keeps them: bare copies are not learned from then on.
  if (src == Source::kNvtx || api) stop_bare_learning_locked(api ? "API" : "NVTX");
  if (bare_work_ && work_open()) drain_locked();  // never part of a learned bare pass
  return enter_locked(units_in, src, label, false, 0);
}

// A copy or graph launch outside any unit: a boundary unless a unit is open or a work
// other than a learned bare pass is (the copies of an NVTX unit or pass belong to it).
// Returns as enter(), or -3 when it is no boundary.
int Runtime::enter_bare(CUstream s, Source src, std::uint64_t bytes, int dir) {
  std::vector<std::uint32_t> units = src == Source::kCopy ? copy_units(bytes) : std::vector<std::uint32_t>{graph_unit_};
  const char* plain = src == Source::kCopy ? "copy" : "graph";
  if (rec_) {
    bool bare;
    {
      std::lock_guard<std::mutex> l(gm_);
      bare = !work_open() && !open_unit_;
    }
    return bare ? enter(units, s, src, plain) : -3;
  }
  std::lock_guard<std::mutex> l(gm_);
  if (open_unit_ || (work_open() && !bare_work_)) return -3;
  if (capturing(s)) {
    g_c.capture_skips.fetch_add(1, std::memory_order_relaxed);
    return -2;
  }
  count_unit(src);
  if (!bare_learn_) return enter_locked(std::move(units), src, plain, false, 0);
  // The learnable label: direction and exact bytes (fits the unit-name field up to
  // 10^19 bytes), or "graph".
  std::string label = src == Source::kGraph ? "graph" : std::string(dir == RH_DIR_H2D ? "h2d-" : "d2h-") + std::to_string(bytes);
  return enter_locked(std::move(units), src, label, true, bytes);
}

int Runtime::enter_locked(std::vector<std::uint32_t> units, Source src, const std::string& label, bool bare,
                          std::uint64_t bytes) {
  open_unit_ = true;
  bool whole_pass = false;
  std::size_t from = 0;
  if (src == Source::kNvtx && learn_) {
    begin_occurrence_locked(label);
    units = {learn_step_locked(label, &whole_pass, &from)};
  } else if (bare) {
    units = bare_step_locked(label, bytes, std::move(units), &whole_pass, &from);
  }
  if (!work_open()) {
    // A new work: the learned pass or the profile's forward sequence from this unit on,
    // or just these units.
    std::vector<std::uint32_t> w = units;
    if (whole_pass) {
      w.assign(pass_.begin() + static_cast<std::ptrdiff_t>(from), pass_.end());
    } else if (units.size() == 1 && src != Source::kCopy) {
      auto it = std::find(seq_.begin(), seq_.end(), units[0]);
      if (it != seq_.end()) w.assign(it, seq_.end());
    }
    pass_work_ = whole_pass && !bare;
    bare_work_ = whole_pass && bare;
    open_work_locked(w);
  } else if (units.size() == 1 && work_units_[pos_] != units[0]) {
    // The engine went another way than the profile: positions advance regardless.
    g_c.seq_mismatch.fetch_add(1, std::memory_order_relaxed);
  }
  const std::size_t first = pos_;
  const std::size_t last = std::min(work_units_.size(), pos_ + (src == Source::kCopy ? units.size() : 1)) - 1;
  pos_ = last + 1;
  cur_pos_ = last;
  int rc = 0;
  // Each unit's first sub-unit; the others are gated by the copies inside (chunk_in_unit).
  for (std::size_t p = first; p <= last; ++p) {
    const std::size_t wp = work_pos0_[p];
    const bool fresh = !(grant_ && wp < grant_end_);  // else covered by the grant in hand
    if (!cover_locked(wp)) {
      g_c.unmanaged_units.fetch_add(1, std::memory_order_relaxed);
      rc = -1;
      break;
    }
    if (!fresh) continue;
    grant_label_ = label;
    // Its GPU time is this boundary's alone (a learned unit's duration).
    grant_single_ = p == first && base_ + grant_->first == wp && grant_end_ == work_pos0_[last + 1];
  }
  ++occ_gen_;
  occ_w0_ = work_pos0_[last];
  occ_w1_ = work_pos0_[last + 1];
  occ_cover_ = occ_w0_;
  occ_copied_ = 0;
  occ_unit_bytes_ = work_units_[last] < catalog_.size() ? catalog_[work_units_[last]].bytes : 0;
  occ_unit_label_ = label;
  return rc;
}

bool Runtime::cover_locked(std::size_t wp, bool count_skipped) {
  bool first = true;
  while (!(grant_ && wp < grant_end_)) {
    close_grant_locked();
    // In order: the next position the agent grants, unless a new session announces the
    // work from `wp` on.
    const std::size_t ask = client_ ? std::clamp(acq_next_, base_, wp) : wp;
    if (first && count_skipped && ask < wp) g_c.subunits_skipped.fetch_add(wp - ask, std::memory_order_relaxed);
    first = false;
    if (!acquire_locked(ask)) return false;
  }
  return true;
}

void Runtime::drain_locked() {
  if (!work_open()) return;
  g_c.units_drained.fetch_add(work_units_.size() - pos_, std::memory_order_relaxed);
  // Every position to the work's end, in order (unmanaged: nothing to settle).
  if (cover_locked(work_wire_.size() - 1, false)) grant_label_.clear();
  close_grant_locked();
  clear_work_locked();
}

void Runtime::clear_work_locked() {
  work_units_.clear();
  work_wire_.clear();
  work_pos0_.clear();
  pos_ = base_ = 0;
  pass_work_ = bare_work_ = false;
  occ_w0_ = occ_w1_ = occ_cover_ = 0;
}

void Runtime::exit_unit() {
  std::lock_guard<std::mutex> l(gm_);
  open_unit_ = false;
  if (rec_) {
    close_grant_locked();
    record_unit_line("{\"e\":1}", false);
    return;
  }
  end_occurrence_locked();
  ++occ_gen_;  // copies issued from now on are not this unit's
  if (grant_ && (work_units_.empty() || grant_end_ <= occ_w1_)) close_grant_locked();
  occ_w0_ = occ_w1_ = occ_cover_ = 0;
  if (!work_open()) {
    // Sub-units never reached (fewer copy bytes than announced) are still the agent's
    // next positions: granted and closed now (charged, never run), so the next work's
    // grant is not stuck behind them.
    if (client_ && !work_wire_.empty() && acq_next_ < work_wire_.size() && acq_next_ >= base_) {
      g_c.subunits_skipped.fetch_add(work_wire_.size() - acq_next_, std::memory_order_relaxed);
      if (cover_locked(work_wire_.size() - 1, false)) grant_label_.clear();
      close_grant_locked();
    }
    clear_work_locked();
  }
}

// --- pass learning -------------------------------------------------------------------
// Without a profile sequence every NVTX unit would be its own work: one agent round trip
// per unit. The hook learns the pass instead: the labels from one occurrence of the first
// label to the next, learned once the same sequence is seen twice in a row. Then a new
// session announces the learned units (bytes: median copy bytes per occurrence, else
// RIPPLE_UNIT_BYTES, else 1; duration: median GPU time of one-unit grants, else the
// bytes at RIPPLE_GPU_GBPS) and every boundary without an open work announces the pass
// from its unit to the pass's end. A label off the learned pass drops it (counted as a
// relearn); labels are learned again from the first boundary after the open work ends.
static std::uint64_t median(std::deque<std::uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Runtime::begin_occurrence_locked(const std::string& label) {
  end_occurrence_locked();
  occ_label_ = label;
  occ_bytes_.store(0, std::memory_order_relaxed);
  occ_open_.store(true, std::memory_order_release);
}

void Runtime::end_occurrence_locked() {
  if (occ_label_.empty()) return;
  occ_open_.store(false, std::memory_order_release);
  const std::uint64_t b = occ_bytes_.exchange(0);
  std::lock_guard<std::mutex> l(learn_m_);
  auto& d = samples_[occ_label_].bytes;
  d.push_back(b);
  if (d.size() > kSamples) d.pop_front();
  occ_label_.clear();
}

std::uint32_t Runtime::learn_step_locked(const std::string& label, bool* whole_pass, std::size_t* from) {
  auto known = learned_units_.find(label);
  std::uint32_t unit = known != learned_units_.end() ? known->second : generic_unit_;
  if (learned_) {
    if (work_open()) {
      if (pass_work_ && work_units_[pos_] != unit) deviate_locked(label);
      return unit;
    }
    auto at = std::find(pass_.begin(), pass_.end(), unit);
    if (known != learned_units_.end() && at != pass_.end()) {
      *whole_pass = true;
      *from = static_cast<std::size_t>(at - pass_.begin());
      return unit;
    }
    deviate_locked(label);
  }
  if (work_open() && pass_work_) return unit;  // the rest of a dropped pass: not learned from
  observe_locked(label);
  if (learned_) {  // this label began the pass just learned
    unit = learned_units_.at(label);
    *whole_pass = true;
    *from = 0;
  }
  return unit;
}

void Runtime::observe_locked(const std::string& label) {
  if (first_label_.empty()) first_label_ = label;
  if (cand_.empty() && label != first_label_) {
    // Relearning: wait for the old pass's first label, unless it does not come back.
    if (++skipped_ <= engine::kMaxWorkUnits) return;
    first_label_ = label;
  }
  skipped_ = 0;
  if (label == first_label_ && !cand_.empty()) {
    if (cand_ == prev_cand_) {
      learn_locked(cand_);
      if (learned_) return;
    }
    prev_cand_ = std::move(cand_);
    cand_.clear();
  }
  cand_.push_back(label);
  if (cand_.size() > engine::kMaxWorkUnits) {
    // The first label did not come back within a work's length: start over from here.
    first_label_ = label;
    cand_.assign(1, label);
    prev_cand_.clear();
  }
}

void Runtime::learn_locked(const std::vector<std::string>& labels) {
  std::vector<engine::UnitInfo> cat(catalog_.begin(), catalog_.begin() + static_cast<std::ptrdiff_t>(base_catalog_));
  std::unordered_map<std::string, std::uint32_t> idx;
  std::vector<std::uint32_t> pass;
  std::uint64_t pass_bytes = 0;
  for (const auto& lb : labels) {
    auto it = idx.find(lb);
    if (it == idx.end()) {
      if (cat.size() >= engine::kMaxUnits) {
        if (!warned_catalog_) say("a pass of more than %zu distinct units does not fit a Hello: not learned", engine::kMaxUnits - base_catalog_);
        warned_catalog_ = true;
        prev_cand_.clear();
        return;
      }
      engine::UnitInfo u;
      u.name = lb;
      std::uint64_t copy_bytes = 0, ns = 0;
      {
        std::lock_guard<std::mutex> l(learn_m_);
        auto sm = samples_.find(lb);
        if (sm != samples_.end()) copy_bytes = median(sm->second.bytes), ns = median(sm->second.ns);
      }
      u.bytes = copy_bytes ? copy_bytes : cfg_.unit_bytes ? cfg_.unit_bytes : 1;
      u.duration_ns = ns ? ns : duration_for(u.bytes);
      it = idx.emplace(lb, static_cast<std::uint32_t>(cat.size())).first;
      cat.push_back(std::move(u));
    }
    pass.push_back(it->second);
    pass_bytes += cat[it->second].bytes;
  }
  catalog_ = std::move(cat);
  learned_units_ = std::move(idx);
  pass_ = std::move(pass);
  learned_ = true;
  cand_.clear();
  prev_cand_.clear();
  g_c.passes_learned.fetch_add(1, std::memory_order_relaxed);
  g_c.learned_pass_units.store(pass_.size(), std::memory_order_relaxed);
  say("learned the NVTX pass: %zu units (%zu distinct, %llu bytes) from '%s'", pass_.size(),
      catalog_.size() - base_catalog_, static_cast<unsigned long long>(pass_bytes), labels.front().c_str());
  renew_session_locked();
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
  grant_.reset();
  grant_end_ = 0;
  pending_start_.store(false);
  next_connect_ns_ = 0;
  renewing_ = true;
}

void Runtime::deviate_locked(const std::string& label) {
  learned_ = false;
  // Passes most likely still begin where they did (a VLM's image pass, a shorter pass).
  first_label_.clear();
  for (const auto& [name, idx] : learned_units_)
    if (!pass_.empty() && idx == pass_.front()) first_label_ = name;
  skipped_ = 0;
  cand_.clear();
  prev_cand_.clear();
  const auto n = g_c.relearns.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= 3) say("unit '%s' is off the learned pass: learning it again%s", label.c_str(), n == 3 ? " (said 3 times; counted from now on)" : "");
}

// --- bare-pass learning ----------------------------------------------------------------
// An engine without NVTX or API units (weights streamed by a forward pre-hook, as
// transformers offloading does) has only bare copies as boundaries: one work, one agent
// round trip per copy. Their labels (direction and exact bytes; "graph" for a graph
// launch) are learned like NVTX units, with these differences. Labels repeat inside a
// pass (a layer's q and o projections have one size), so a pass is not "from one
// occurrence of the first label to the next": it is the shortest period p such that the
// last max(2p, bmin_window_) labels repeat with period p (twice in a row for p >= 4;
// more repetitions for shorter passes, so three equal MLP copies in a row are no pass).
// The history runs on across learned passes and deviations, so a copy that comes once
// per forward pass (and drops the one-layer pass learned first) is explained by the
// whole forward pass at its second occurrence. The phase starts at the host-to-device
// copy (or graph launch) with the most kernel launches before it: a layer's first copy
// after the previous layer's kernels; a pass ends with its read-back, so the launches
// before a device-to-host copy count for the copy after it (the next pass's first).
// Only a stream of device-to-host copies alone starts at one; no launches at all: the
// phase starts where the repetition began. The learned units' bytes are the exact copy
// sizes, and learned units stay in the catalog (up to the Hello's limit), so passes
// relearned from known sizes keep the session. A label other than the one the pass
// expects drops it: the rest of the open work is drained (acquired, never run), the
// copy gets its own per-copy work, and learning goes on; a pass dropped within 4 passes
// of being learned doubles the window (no churn on a stream that only looks periodic),
// one that lived kStablePasses resets it.
std::uint32_t Runtime::bare_unit_of(const std::string& label) const {
  if (label == "graph") return graph_unit_;
  auto it = learned_units_.find(label);
  return it != learned_units_.end() ? it->second : UINT32_MAX;
}

std::size_t Runtime::bare_threshold(std::size_t p) const {
  return std::max(p, bmin_window_ > p ? bmin_window_ - p : 0);
}

std::vector<std::uint32_t> Runtime::bare_step_locked(const std::string& label, std::uint64_t bytes,
                                                     std::vector<std::uint32_t> fallback, bool* whole_pass,
                                                     std::size_t* from) {
  const std::uint64_t launches = g_c.launches.load(std::memory_order_relaxed);
  const std::uint64_t gap = launches - last_bare_launches_;
  if (label.compare(0, 4, "d2h-") != 0) last_bare_launches_ = launches;
  bare_record_locked(label, bytes, gap);
  if (learned_) {
    const std::uint32_t unit = bare_unit_of(label);
    if (unit == pass_[bpos_]) {
      if (!work_open()) *whole_pass = true, *from = bpos_;
      if (++bpos_ == pass_.size()) {
        bpos_ = 0;
        if (++bpasses_ == kStablePasses) bmin_window_ = kMinWindow;
      }
      return {unit};
    }
    // Off the learned pass: the rest of the open pass is granted but never runs (the
    // agent is over-charged for it, never under-charged), and this copy is gated by a
    // work of its own bytes.
    if (work_open()) {
      g_c.seq_mismatch.fetch_add(1, std::memory_order_relaxed);
      drain_locked();
    }
    deviate_bare_locked(label);
    bare_runs_rebuild_locked();
  } else {
    bare_runs_update_locked();
  }
  if (bare_try_learn_locked()) {
    if (work_open()) drain_locked();  // not expected: every work closes before learning
    *whole_pass = true;
    *from = bpos_;
    const std::uint32_t unit = pass_[bpos_];
    if (++bpos_ == pass_.size()) bpos_ = 0;
    return {unit};
  }
  return fallback;
}

void Runtime::bare_restart_locked() {
  bn_ = 0;
  std::fill(brun_.begin(), brun_.end(), 0);
}

void Runtime::bare_record_locked(const std::string& label, std::uint64_t bytes, std::uint64_t gap) {
  if (bhist_.empty()) {  // at the first bare boundary: ~115 KB no other process pays for
    bhist_.assign(kBareRing, 0);
    bgap_.assign(kBareRing, 0);
    brun_.assign(kMaxPass + 1, 0);
  }
  auto it = bids_.find(label);
  if (it == bids_.end()) {
    if (bnames_.size() >= kMaxLabels) {  // ever new sizes (a growing cache): start over
      bids_.clear();
      bnames_.clear();
      bbytes_.clear();
      bare_restart_locked();
    }
    it = bids_.emplace(label, static_cast<std::uint32_t>(bnames_.size())).first;
    bnames_.push_back(label);
    bbytes_.push_back(bytes);
  }
  const std::uint64_t n = bn_++;
  bhist_[n % kBareRing] = it->second;
  bgap_[n % kBareRing] = gap;
}

// brun_ for the label just recorded, from brun_ for the one before (while learning).
void Runtime::bare_runs_update_locked() {
  const std::uint64_t n = bn_ - 1;
  const std::uint32_t id = bhist_[n % kBareRing];
  const std::size_t pmax = static_cast<std::size_t>(std::min<std::uint64_t>(n, kMaxPass));
  for (std::size_t p = 1; p <= pmax; ++p) brun_[p] = bhist_[(n - p) % kBareRing] == id ? brun_[p] + 1 : 0;
}

// brun_ from the history (after a learned pass, when it was not kept up): zero unless
// the label just recorded equals the one p before; those runs are counted back (up to
// what learning needs).
void Runtime::bare_runs_rebuild_locked() {
  std::fill(brun_.begin(), brun_.end(), 0);
  const std::uint64_t n = bn_ - 1;
  const std::uint64_t oldest = bn_ > kBareRing ? bn_ - kBareRing : 0;
  const std::uint32_t id = bhist_[n % kBareRing];
  const std::size_t pmax = static_cast<std::size_t>(std::min<std::uint64_t>(n - oldest, kMaxPass));
  for (std::size_t p = 1; p <= pmax; ++p) {
    if (bhist_[(n - p) % kBareRing] != id) continue;
    const std::size_t cap = bare_threshold(p);
    std::size_t run = 0;
    for (std::uint64_t t = n; run < cap && t >= oldest + p && bhist_[t % kBareRing] == bhist_[(t - p) % kBareRing]; --t) ++run;
    brun_[p] = run;
  }
}

// Learns the shortest period the history ends with, if any (pass_, bpos_ = the position
// of the label just recorded in it).
bool Runtime::bare_try_learn_locked() {
  const std::uint64_t n = bn_ - 1;
  const std::size_t pmax = static_cast<std::size_t>(std::min<std::uint64_t>(n, kMaxPass));
  std::size_t p = 0;
  for (std::size_t q = 1; q <= pmax && !p; ++q)
    if (brun_[q] >= bare_threshold(q)) p = q;
  if (!p) return false;
  // The repetition began at a (the labels a .. n are p-periodic); the phase: the offset
  // with the most launches before it over the repetition (no device-to-host copy unless
  // all are), the first one on a tie.
  const std::uint64_t a = n + 1 - std::min(brun_[p], static_cast<std::uint32_t>(bare_threshold(p))) - p;
  auto d2h = [&](std::uint64_t j) { return bnames_[bhist_[j % kBareRing]].compare(0, 4, "d2h-") == 0; };
  bool any_start = false;
  for (std::size_t i = 0; i < p; ++i) any_start |= !d2h(a + i);
  std::vector<std::int64_t> sum(p, 0);
  for (std::uint64_t j = a; j <= n; ++j)
    sum[(j - a) % p] = any_start && d2h(j) ? -1 : sum[(j - a) % p] + static_cast<std::int64_t>(bgap_[j % kBareRing]);
  const std::size_t r = static_cast<std::size_t>(std::max_element(sum.begin(), sum.end()) - sum.begin());
  std::vector<std::uint32_t> ids(p);
  for (std::size_t i = 0; i < p; ++i) ids[i] = bhist_[(a + r + i) % kBareRing];
  return bare_learn_locked(ids, static_cast<std::size_t>((n - a - r) % p));
}

bool Runtime::bare_learn_locked(const std::vector<std::uint32_t>& ids, std::size_t cur) {
  // Learned units stay: the catalog is the base, the units learned before, then this
  // pass's new sizes; when it would not fit a Hello, the base and this pass's sizes.
  std::vector<engine::UnitInfo> cat = catalog_;
  std::unordered_map<std::string, std::uint32_t> idx = learned_units_;
  std::size_t fresh = 0;
  for (std::uint32_t id : ids) fresh += bnames_[id] != "graph" && !idx.count(bnames_[id]);
  if (cat.size() + fresh > engine::kMaxUnits) {
    cat.resize(base_catalog_);
    idx.clear();
  }
  std::vector<std::uint32_t> pass;
  std::uint64_t pass_bytes = 0;
  for (std::uint32_t id : ids) {
    const std::string& lb = bnames_[id];
    std::uint32_t u;
    if (lb == "graph") {
      u = graph_unit_;
    } else {
      auto it = idx.find(lb);
      if (it == idx.end()) {
        if (cat.size() >= engine::kMaxUnits || lb.size() >= engine::kUnitNameBytes) {
          if (!warned_bare_) say("a copy pass of more than %zu distinct sizes does not fit a Hello: not learned", engine::kMaxUnits - base_catalog_);
          warned_bare_ = true;
          bmin_window_ = std::min(2 * bmin_window_, 2 * kMaxPass);
          bare_restart_locked();
          return false;
        }
        engine::UnitInfo info;
        info.name = lb;
        info.bytes = std::max<std::uint64_t>(1, bbytes_[id]);  // exact: the agent charges what is copied
        std::uint64_t ns = 0;
        {
          std::lock_guard<std::mutex> l(learn_m_);
          auto sm = samples_.find(lb);
          if (sm != samples_.end()) ns = median(sm->second.ns);
        }
        info.duration_ns = ns ? ns : duration_for(info.bytes);
        it = idx.emplace(lb, static_cast<std::uint32_t>(cat.size())).first;
        cat.push_back(std::move(info));
      }
      u = it->second;
    }
    pass.push_back(u);
    pass_bytes += cat[u].bytes;
  }
  catalog_ = std::move(cat);
  learned_units_ = std::move(idx);
  pass_ = std::move(pass);
  learned_ = true;
  bpos_ = cur;
  bpasses_ = 0;
  std::set<std::uint32_t> distinct(pass_.begin(), pass_.end());
  g_c.passes_learned.fetch_add(1, std::memory_order_relaxed);
  g_c.copy_passes_learned.fetch_add(1, std::memory_order_relaxed);
  g_c.learned_pass_units.store(pass_.size(), std::memory_order_relaxed);
  say("learned the copy pass: %zu copies (%zu distinct sizes, %llu bytes) from '%s'", pass_.size(), distinct.size(),
      static_cast<unsigned long long>(pass_bytes), bnames_[ids.front()].c_str());
  renew_session_locked();
  return true;
}

void Runtime::deviate_bare_locked(const std::string& label) {
  learned_ = false;
  if (bpasses_ < 4) bmin_window_ = std::min(2 * bmin_window_, 2 * kMaxPass);
  const auto n = g_c.relearns.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= 3) say("copy '%s' is off the learned pass: learning it again%s", label.c_str(), n == 3 ? " (said 3 times; counted from now on)" : "");
}

void Runtime::stop_bare_learning_locked(const char* why) {
  if (!bare_learn_) return;
  bare_learn_ = false;
  if (bare_work_ && work_open()) drain_locked();
  if (learned_) {
    say("%s units: the learned copy pass is dropped; copies are not learned any more", why);
    learned_ = false;
    pass_.clear();
    learned_units_.clear();
    catalog_.resize(base_catalog_);
  }
  rebuild_wire_locked();
  // The history is not needed any more.
  std::vector<std::uint32_t>().swap(bhist_);
  std::vector<std::uint32_t>().swap(brun_);
  std::vector<std::uint64_t>().swap(bgap_);
  bids_.clear();
  bnames_.clear();
  bbytes_.clear();
}

void Runtime::open_work_locked(const std::vector<std::uint32_t>& units) {
  // Each unit as its sub-units; a work holds at most kMaxWorkUnits of them (the units
  // that do not fit are the next work's, opened at their boundary).
  work_units_.clear();
  work_wire_.clear();
  work_pos0_.clear();
  for (std::uint32_t u : units) {
    const std::vector<std::uint32_t>& sub = u < subs_.size() ? subs_[u] : std::vector<std::uint32_t>{u};
    const std::vector<std::uint32_t> one{u};
    const std::vector<std::uint32_t>& parts = sub.empty() ? one : sub;
    if (!work_units_.empty() && work_wire_.size() + parts.size() > engine::kMaxWorkUnits) break;
    work_units_.push_back(u);
    work_pos0_.push_back(work_wire_.size());
    work_wire_.insert(work_wire_.end(), parts.begin(), parts.end());
  }
  work_pos0_.push_back(work_wire_.size());
  pos_ = base_ = acq_next_ = 0;
  if (client_ && !announce_locked(0)) lose_agent_locked("failed to announce work");
}

bool Runtime::announce_locked(std::size_t from) {
  engine::WorkMsg w;
  w.work_id = ++work_id_;
  w.units.assign(work_wire_.begin() + static_cast<std::ptrdiff_t>(from), work_wire_.end());
  base_ = acq_next_ = from;
  std::lock_guard<std::mutex> c(cm_);
  return client_ && client_->announce(w).ok();
}

bool Runtime::connect_locked(std::size_t from) {
  const std::uint64_t now = monotonic_ns();
  if (now < next_connect_ns_) return false;
  engine::Hello hello;
  hello.name = cfg_.engine;
  hello.kind = cfg_.kind;
  hello.period_ns = cfg_.period_ns;
  hello.deadline_ns = cfg_.deadline_ns;
  hello.units = wire_cat_;
  auto c = engine::Client::connect(cfg_.socket, hello, 1000, engine::AgentCheck{true, cfg_.agent_uid});
  if (!c) {
    next_connect_ns_ = now + static_cast<std::uint64_t>(cfg_.reconnect_ms) * 1000000ull;
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
  if (renewing_ && !warned_unmanaged_) say("new session with the learned units (%zu in the catalog)", catalog_.size());
  else if (ever_connected_ || warned_unmanaged_) say("connected to the agent at %s: managed again", cfg_.socket.c_str());
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

void Runtime::end_session_locked(std::uint64_t retry_ns) {
  {
    std::lock_guard<std::mutex> c(cm_);
    client_.reset();  // sends Bye if the socket still works; never blocks
  }
  gen_.fetch_add(1);
  grant_.reset();
  grant_end_ = 0;
  pending_start_.store(false);
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
void Runtime::grant_timeout_locked() {
  if (g_c.grant_timeouts.fetch_add(1, std::memory_order_relaxed) == 0)
    say("no grant within RIPPLE_GRANT_TIMEOUT_MS=%d ms: session ended, running UNMANAGED, a new session in %d ms "
        "(said once; counted as grant_timeouts)", grant_timeout_ms(), cfg_.reconnect_ms);
  end_session_locked(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(cfg_.reconnect_ms) * 1000000ull));
  // Not "lost the agent": the agent is there; a reconnect says nothing either.
  ever_connected_ = false;
}

bool Runtime::acquire_locked(std::size_t pos) {
  const std::uint64_t t0 = monotonic_ns();
  const int timeout_ms = grant_timeout_ms();
  const std::uint64_t limit = timeout_ms > 0 ? t0 + std::uint64_t(timeout_ms) * 1000000ull : 0;
  for (;;) {
    if (!client_ && !connect_locked(pos)) {
      if (!fail_closed()) return false;
      // Fail-closed: this thread (and the engine) waits for the agent.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    // Look for the grant without waiting, then wait on the socket with cm_ released:
    // the watcher needs cm_ to report Done, and the agent may grant again only after
    // that report (its grant slots are full). Waiting inside acquire() with cm_ held
    // starved the watcher and cost each unit up to the acquire timeout.
    Result<engine::GrantMsg> g = make_error("no client");
    int fd = -1;
    {
      std::lock_guard<std::mutex> c(cm_);
      if (client_) {
        g = client_->acquire(work_id_, static_cast<std::uint32_t>(pos - base_), 0);
        fd = client_->fd();
      }
    }
    if (!g && g.error().code == engine::kErrTimeout && fd >= 0) {
      if (limit && monotonic_ns() > limit) {
        grant_timeout_locked();
        return false;
      }
      pollfd p{fd, POLLIN, 0};
      (void)::poll(&p, 1, 5);
      continue;  // read what came (or look again after 5 ms) under cm_
    }
    if (g) {
      grant_ = *g;
      grant_end_ = acq_next_ = base_ + g->first + g->count;
      {
        std::lock_guard<std::mutex> c(cm_);
        if (client_) (void)client_->started(*g);
      }
      pending_start_.store(true);
      g_c.grants.fetch_add(1, std::memory_order_relaxed);
      g_c.grant_waits.fetch_add(1, std::memory_order_relaxed);
      g_c.wait_ns.fetch_add(monotonic_ns() - t0, std::memory_order_relaxed);
      return true;
    }
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
    if (t.end && drv_.event_record(t.end, last_stream_) != CUDA_SUCCESS) t.end = nullptr;
  }
  start_ev_ = nullptr;
  pending_start_.store(false);
  grant_.reset();
  grant_end_ = 0;
  grant_label_.clear();
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
// elapsed time. Polls cuEventQuery: it never synchronises the application's streams.
void Runtime::watcher_loop() {
  if (drv_.exchange_capture_mode) {
    // Relaxed, so this thread's event calls cannot invalidate another thread's capture.
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    drv_.exchange_capture_mode(&m);
  }
  for (;;) {
    std::deque<Timed> batch;
    {
      std::unique_lock<std::mutex> l(wm_);
      wcv_.wait(l, [&] { return !wq_.empty(); });
      batch.swap(wq_);
    }
    std::deque<Timed> later;
    for (Timed& t : batch) {
      std::uint64_t ns = 0;
      if (t.start && t.end) {
        if (t.ctx && drv_.ctx_set) drv_.ctx_set(t.ctx);
        const CUresult q = drv_.event_query(t.end);
        if (q == CUDA_ERROR_NOT_READY) {
          later.push_back(std::move(t));
          continue;
        }
        float ms = 0;
        if (q == CUDA_SUCCESS && drv_.elapsed(&ms, t.start, t.end) == CUDA_SUCCESS && ms > 0)
          ns = static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
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
      std::lock_guard<std::mutex> l(wm_);
      if (t.start) free_events_.push_back(t.start);
      if (t.end) free_events_.push_back(t.end);
      inflight_.fetch_sub(1);
    }
    if (!later.empty()) {
      {
        std::lock_guard<std::mutex> l(wm_);
        for (auto& t : later) wq_.push_front(std::move(t));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

// --- NVTX and the explicit API ------------------------------------------------------
void Runtime::range_push(const char* name) {
  load_driver();
  g_c.nvtx_pushes.fetch_add(1, std::memory_order_relaxed);
  int unit = -1;
  std::string uname;
  if (!cfg_.off && cfg_.b_nvtx && name) {
    std::lock_guard<std::mutex> l(nvtx_m_);
    auto it = nvtx_units_.find(name);
    if (it == nvtx_units_.end()) {
      bool is_unit = false;
      std::string n = nvtx_re_->unit_name(name, &is_unit);
      int u = -1;
      if (is_unit) {
        u = profile_.find(n);
        if (u < 0) u = static_cast<int>(generic_unit_);  // a unit the catalog does not know
      }
      it = nvtx_units_.emplace(name, std::make_pair(u, n)).first;
    }
    unit = it->second.first;
    uname = it->second.second;
  }
  // A unit range inside a unit range (nested layer markers) is part of the outer unit.
  bool inside = false;
  for (char c : t_state.nvtx_stack) inside |= c != 0;
  if (unit >= 0 && !inside) {
    nvtx_seen_.store(true, std::memory_order_relaxed);
    enter({static_cast<std::uint32_t>(unit)}, t_state.last_stream, Source::kNvtx, uname);
    t_state.nvtx_stack.push_back(1);
  } else {
    t_state.nvtx_stack.push_back(0);
  }
}

void Runtime::range_pop() {
  if (t_state.nvtx_stack.empty()) return;
  const bool unit = t_state.nvtx_stack.back() != 0;
  t_state.nvtx_stack.pop_back();
  if (unit) exit_unit();
}

int Runtime::api_begin(const char* name, std::uint64_t bytes) {
  if (cfg_.off || !cfg_.b_api) return -1;
  load_driver();
  ++t_state.api_depth;
  const int u = name ? profile_.find(name) : -1;
  if (u >= 0) return enter({static_cast<std::uint32_t>(u)}, t_state.last_stream, Source::kApi, name, true);
  if (bytes > 0) return enter(copy_units(bytes), t_state.last_stream, Source::kCopy, name ? name : "unit", true);
  return enter({generic_unit_}, t_state.last_stream, Source::kApi, name ? name : "unit", true);
}

int Runtime::api_end() {
  if (cfg_.off || !cfg_.b_api) return -1;
  if (t_state.api_depth > 0) --t_state.api_depth;
  exit_unit();
  return 0;
}

// --- fork and exit -------------------------------------------------------------------
// In the child only the forking thread exists: every lock may be held by a thread that is
// gone, and the agent session is the parent's. Start afresh: new locks, no session (the
// child connects as its own engine at its first boundary), no watcher, no open work.
void Runtime::fork_child() {
  new (&gm_) std::mutex();
  new (&cm_) std::mutex();
  new (&wm_) std::mutex();
  new (&wcv_) std::condition_variable();
  new (&matcher_m_) std::mutex();
  new (&func_m_) std::mutex();
  new (&comm_m_) std::mutex();
  new (&nvtx_m_) std::mutex();
  new (&rec_m_) std::mutex();
  new (&learn_m_) std::mutex();
  if (client_) {
    ::close(client_->fd());
    (void)client_.release();  // the parent's session: neither Bye nor close again
  }
  gen_.fetch_add(1);
  wq_.clear();
  inflight_.store(0);
  watcher_started_ = false;
  clear_work_locked();
  cur_pos_ = acq_next_ = 0;
  grant_.reset();
  grant_end_ = 0;
  pending_start_.store(false);
  start_ev_ = nullptr;
  open_unit_ = false;
  next_connect_ns_ = 0;
  warned_unmanaged_ = false;
  ever_connected_ = false;
  // What was learned stays (the same engine code); the parent's occurrence and open pass
  // do not, and the child's first session sends the learned catalog.
  occ_label_.clear();
  occ_open_.store(false);
  pass_work_ = bare_work_ = false;
  renewing_ = false;
  session_catalog_.clear();
  // The child's copies are its own stream: a learned pass stays, the history does not.
  if (bare_learn_) bare_restart_locked();
  t_state = ThreadState{};
}

// At exit: give the watcher a moment (bounded) to report the last grants' GPU time.
void Runtime::flush() {
  for (int i = 0; i < 200 && inflight_.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (rec_) fflush(rec_);
}

void Runtime::write_stats() {
  if (cfg_.stats_path.empty()) return;
  std::string path = cfg_.stats_path;
  if (auto at = path.find("%p"); at != std::string::npos) path.replace(at, 2, std::to_string(getpid()));
  FILE* f = open_output("stats", path, false);
  if (!f) return;
  auto v = [](const std::atomic<std::uint64_t>& a) { return static_cast<unsigned long long>(a.load()); };
  fprintf(f, "{\"pid\":%d,\"launches\":%llu,\"copies\":%llu,\"h2d_bytes\":%llu,\"d2h_bytes\":%llu,", static_cast<int>(getpid()),
          v(g_c.launches), v(g_c.copies), v(g_c.h2d_bytes), v(g_c.d2h_bytes));
  fprintf(f, "\"units\":%llu,\"units_nvtx\":%llu,\"units_profile\":%llu,\"units_copy\":%llu,\"units_graph\":%llu,\"units_api\":%llu,",
          v(g_c.units), v(g_c.units_nvtx), v(g_c.units_profile), v(g_c.units_copy), v(g_c.units_graph), v(g_c.units_api));
  fprintf(f, "\"grants\":%llu,\"grant_waits\":%llu,\"wait_ns\":%llu,\"done_reported\":%llu,\"unmanaged_units\":%llu,",
          v(g_c.grants), v(g_c.grant_waits), v(g_c.wait_ns), v(g_c.done_reported), v(g_c.unmanaged_units));
  fprintf(f, "\"capture_skips\":%llu,\"comm_skips\":%llu,\"agent_connects\":%llu,\"agent_losses\":%llu,", v(g_c.capture_skips),
          v(g_c.comm_skips), v(g_c.agent_connects), v(g_c.agent_losses));
  fprintf(f, "\"passthrough\":%llu,\"via_procaddr\":%llu,\"unwrapped\":%llu,\"errors\":%llu,\"profile_resyncs\":%llu,",
          v(g_c.passthrough), v(g_c.via_procaddr), v(g_c.unwrapped), v(g_c.errors), v(g_c.profile_resyncs));
  fprintf(f, "\"nvtx_pushes\":%llu,\"seq_mismatch\":%llu,", v(g_c.nvtx_pushes), v(g_c.seq_mismatch));
  fprintf(f, "\"passes_learned\":%llu,\"relearns\":%llu,\"learned_pass_units\":%llu,\"unit_copy_bytes\":%llu,",
          v(g_c.passes_learned), v(g_c.relearns), v(g_c.learned_pass_units), v(g_c.unit_copy_bytes));
  fprintf(f, "\"copy_passes_learned\":%llu,\"units_drained\":%llu,\"grant_timeouts\":%llu,",
          v(g_c.copy_passes_learned), v(g_c.units_drained), v(g_c.grant_timeouts));
  fprintf(f, "\"chunk_bytes\":%llu,\"chunked_copies\":%llu,\"chunks\":%llu,\"chunk_gates\":%llu,\"subunits_skipped\":%llu,\"calls\":{",
          static_cast<unsigned long long>(chunk_), v(g_c.chunked_copies), v(g_c.chunks), v(g_c.chunk_gates),
          v(g_c.subunits_skipped));
  bool first = true;
  for (int i = 0; i < kHookCount; ++i) {
    if (!g_c.calls[i].load()) continue;
    fprintf(f, "%s\"%s\":[%llu,%llu]", first ? "" : ",", kHookNames[i], v(g_c.calls[i]), v(g_c.bytes[i]));
    first = false;
  }
  fprintf(f, "}}\n");
  fclose(f);
}

// --- the singleton -----------------------------------------------------------------
Runtime* g_rt = nullptr;
pthread_once_t g_once = PTHREAD_ONCE_INIT;

void on_fork_child() {
  if (g_rt) g_rt->fork_child();
}
void at_exit() {
  if (!g_rt) return;
  g_rt->flush();
  g_rt->write_stats();
}

void init_once() {
  // Never destroyed: hooks may run from other libraries' destructors after ours.
  g_rt = new Runtime();
  pthread_atfork(nullptr, nullptr, on_fork_child);
  atexit(at_exit);
}

Runtime& rt() {
  if (__builtin_expect(g_rt == nullptr, 0)) pthread_once(&g_once, init_once);
  return *g_rt;
}


}  // namespace

void before(Op& op) { rt().before(op); }
void after(const Op& op, CUresult r) { rt().after(op, r); }
void count_passthrough() { g_c.passthrough.fetch_add(1, std::memory_order_relaxed); }
void count_unwrapped(const char* symbol) {
  if (g_c.unwrapped.fetch_add(1) == 0)
    say("more distinct driver pointers for %s than wrapper slots: later ones are not intercepted", symbol);
}

// Called by the NVTX injection (cuhooks/nvtx.cc).
void nvtx_push(const char* name) { rt().range_push(name); }
void nvtx_pop() { rt().range_pop(); }

}  // namespace ripple::cuhook

// --- the explicit C API (include/ripple/cuhook.h) -------------------------------------
#define RH_API extern "C" __attribute__((visibility("default")))

RH_API int ripple_cuhook_unit_begin(const char* name, uint64_t bytes) {
  return ripple::cuhook::rt().api_begin(name, bytes);
}
RH_API int ripple_cuhook_unit_end(void) { return ripple::cuhook::rt().api_end(); }
RH_API int ripple_cuhook_set_comm_stream(void* stream) {
  ripple::cuhook::rt().set_comm_stream(static_cast<CUstream>(stream));
  return 0;
}
RH_API int ripple_cuhook_get_stats(struct ripple_cuhook_stats* out, size_t size) {
  using ripple::cuhook::g_c;
  ripple_cuhook_stats s{};
  s.launches = g_c.launches, s.copies = g_c.copies, s.h2d_bytes = g_c.h2d_bytes, s.d2h_bytes = g_c.d2h_bytes;
  s.units = g_c.units, s.units_nvtx = g_c.units_nvtx, s.units_profile = g_c.units_profile;
  s.units_copy = g_c.units_copy, s.units_graph = g_c.units_graph, s.units_api = g_c.units_api;
  s.grants = g_c.grants, s.grant_waits = g_c.grant_waits, s.wait_ns = g_c.wait_ns;
  s.done_reported = g_c.done_reported, s.unmanaged_units = g_c.unmanaged_units;
  s.capture_skips = g_c.capture_skips, s.comm_skips = g_c.comm_skips;
  s.agent_connects = g_c.agent_connects, s.agent_losses = g_c.agent_losses;
  s.passthrough = g_c.passthrough, s.via_procaddr = g_c.via_procaddr;
  s.passes_learned = g_c.passes_learned, s.relearns = g_c.relearns;
  s.grant_timeouts = g_c.grant_timeouts;
  s.chunked_copies = g_c.chunked_copies, s.chunks = g_c.chunks, s.chunk_gates = g_c.chunk_gates;
  if (out) memcpy(out, &s, std::min<std::size_t>(size, sizeof s));
  return 0;
}

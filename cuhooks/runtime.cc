// The interposer's runtime (cuhooks/runtime.h): construction, the hot path (before and
// after each intercepted call), NVTX ranges and the explicit C API, exit (fork: fork.cc), the
// stats file. Documentation/cuhook.md.
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "cuhooks/counters.h"
#include "cuhooks/runtime.h"
#include "include/ripple/cuhook.h"

namespace ripple::cuhook {

thread_local ThreadState t_state;

std::uint64_t new_thread_id() {
  static std::atomic<std::uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

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
void Runtime::load_driver_once() {
  std::call_once(drv_once_, [&] {
    drv_.load();
    if (!cfg_.record_path.empty()) {
      rec_ = open_output("record", cfg_.record_path, true);
    }
    drv_loaded_.store(true, std::memory_order_release);
  });
}

std::vector<std::uint32_t> Runtime::copy_units(std::uint64_t bytes) const {
  std::vector<std::uint32_t> u;
  copy_units(bytes, u);
  return u;
}

void Runtime::copy_units(std::uint64_t bytes, std::vector<std::uint32_t>& u) const {
  u.clear();
  std::uint64_t b = (bytes + (1ull << kMinCopyShift) - 1) >> kMinCopyShift << kMinCopyShift;
  for (int s = kMaxCopyShift; s >= kMinCopyShift; --s) {
    const std::uint64_t v = 1ull << s;
    while (b >= v && u.size() < engine::kMaxWorkUnits) {  // beyond 2^44: repeated top units
      u.push_back(copy_base_ + static_cast<std::uint32_t>(s - kMinCopyShift));
      b -= v;
      if (s != kMaxCopyShift) break;
    }
  }
}

const Runtime::FuncInfo& Runtime::func_info(CUfunction f) {
  if (const FuncInfo* hit = func_table_.find(f)) return *hit;  // no lock: every launch but a function's first
  std::lock_guard<std::mutex> l(func_m_);
  auto it = funcs_.find(f);
  if (it != funcs_.end()) return *it->second;
  auto info = std::make_unique<FuncInfo>();
  const char* name = nullptr;
  if (drv_.func_name && drv_.func_name(&name, f) == CUDA_SUCCESS && name) info->name = name;
  else info->name = "?";
  info->comm = !cfg_.comm_prefix.empty() && info->name.compare(0, cfg_.comm_prefix.size(), cfg_.comm_prefix) == 0;
  const FuncInfo& fi = *funcs_.emplace(f, std::move(info)).first->second;
  func_table_.insert(f, &fi);
  return fi;
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
  if (op.bytes) g_c.bytes[h].fetch_add(op.bytes, std::memory_order_relaxed);  // launches: 0, no locked add
  if (op.slot > 0) g_c.via_procaddr.fetch_add(1, std::memory_order_relaxed);
  if (cfg_.off) return;
  load_driver();
  if (op.kind == RH_KERNEL || op.kind == RH_GRAPH) g_c.launches.fetch_add(1, std::memory_order_relaxed);
  else if (op.kind == RH_COPY || op.kind == RH_SET || op.kind == RH_PREFETCH) {
    g_c.copies.fetch_add(1, std::memory_order_relaxed);
    op.resolve_dir();  // asks the driver for a generic copy: here, never with RIPPLE_CUHOOK=off
    if (op.dir == RH_DIR_H2D) g_c.h2d_bytes.fetch_add(op.bytes, std::memory_order_relaxed);
    if (op.dir == RH_DIR_D2H) g_c.d2h_bytes.fetch_add(op.bytes, std::memory_order_relaxed);
    if (op.kind == RH_COPY && (op.dir == RH_DIR_H2D || op.dir == RH_DIR_D2H)) host_copy(op);
  }
  if (op.kind == RH_HOSTFN) return;
  // Nothing on a communication stream is gated, copies and graph launches included.
  if ((op.kind == RH_COPY || op.kind == RH_GRAPH) && is_comm(op.stream)) {
    g_c.comm_skips.fetch_add(1, std::memory_order_relaxed);
    return;
  }
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
    const std::uint64_t chunk = chunk_.load(std::memory_order_relaxed);
    const bool chunkable = op.issue && chunk && !rec_ && op.bytes > chunk;
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
    if (inside && op.issue && chunk && !rec_) chunk_in_unit(op);
  }
  t_state.last_stream = op.stream;
  mark_start(op.stream);
}

void Runtime::mark_start(CUstream s) {
  // The grant's start event goes on the first operation it covers.
  const CUstream stream = s;
  // The handle CU_STREAM_PER_THREAD names the calling thread's stream: whose it is goes
  // beside it (a store, as last_stream_'s; nothing more per launch).
  const auto note_last = [&] {
    if (stream == CU_STREAM_PER_THREAD) last_thread_.store(t_state.id, std::memory_order_relaxed);
    last_stream_.store(stream, std::memory_order_relaxed);
  };
  if (pending_start_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> l(gm_);
    if (pending_start_.load() && drv_.event_record && !capturing(stream)) {
      // An event of the stream's own context (grant_timer.cc, "pooled per context").
      start_ev_ = take_event(stream_context(stream));
      record_event(start_ev_, stream);
      start_stream_.store(stream);
      pending_start_.store(false);
    }
    note_last();
  } else if (grant_labelled_.load(std::memory_order_relaxed)) {
    // A switch of stream (rare beside the launches on one: a copy stream, a compute
    // stream): one more lane if the grant has not run on it yet.
    if (stream != last_stream_.load(std::memory_order_relaxed) && stream != nullptr && stream != CU_STREAM_LEGACY &&
        stream != CU_STREAM_PER_THREAD)
      note_lane(stream);
    note_last();
  }
}

void Runtime::after(const Op& op, CUresult r) {
  if (r != CUDA_SUCCESS) g_c.errors.fetch_add(1, std::memory_order_relaxed);
  if (cfg_.off) return;
  if (op.end_unit >= 0 || op.gated) exit_unit();
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
    if (it != nvtx_units_.end()) {
      unit = it->second.first;
      uname = it->second.second;
    } else {
      bool is_unit = false;
      std::string n = nvtx_re_->unit_name(name, &is_unit);
      int u = -1;
      if (is_unit) {
        u = profile_.find(n);
        if (u < 0) u = static_cast<int>(generic_unit_);  // a unit the catalog does not know
      }
      unit = u;
      uname = n;
      // Bounded: a profiler's ranges can all differ ("aten::add, seq = N"), and a cache
      // of every name grew without end. Past the bound a new name is matched each time.
      if (nvtx_units_.size() < kMaxNvtxNames) nvtx_units_.emplace(name, std::make_pair(u, std::move(n)));
      else g_c.nvtx_uncached.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // A unit range inside a unit range (nested layer markers) is part of the outer unit.
  bool inside = false;
  for (char c : t_state.nvtx_stack) inside |= c != 0;
  if (unit >= 0 && !inside) {
    nvtx_seen_.store(true, std::memory_order_relaxed);
    // Only a range that opened a unit closes one at its pop: one skipped (its stream
    // capturing, -2) or no boundary (-3) would close another thread's unit.
    const int rc = enter({static_cast<std::uint32_t>(unit)}, t_state.last_stream, Source::kNvtx, uname);
    t_state.nvtx_stack.push_back(rc >= -1 ? 1 : 0);
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

// Explicit units do not nest: a begin inside a unit open on this thread opens nothing
// (its work is the outer unit's, under its grant, in its bytes) and its end closes nothing.
int Runtime::api_begin(const char* name, std::uint64_t bytes) {
  if (cfg_.off || !cfg_.b_api) return -1;
  load_driver();
  if (t_state.api_depth++ > 0) return 0;
  const int u = name ? profile_.find(name) : -1;
  const int rc = u >= 0    ? enter({static_cast<std::uint32_t>(u)}, t_state.last_stream, Source::kApi, name, true)
                 : bytes > 0 ? enter(copy_units(bytes), t_state.last_stream, Source::kCopy, name ? name : "unit", true)
                             : enter({generic_unit_}, t_state.last_stream, Source::kApi, name ? name : "unit", true);
  t_state.api_entered = rc >= -1;  // the matching end closes only a unit this begin opened
  return rc;
}

int Runtime::api_end() {
  if (cfg_.off || !cfg_.b_api) return -1;
  if (t_state.api_depth > 1) {
    --t_state.api_depth;
    return 0;
  }
  t_state.api_depth = 0;
  if (std::exchange(t_state.api_entered, false)) exit_unit();
  return 0;
}

// --- exit ----------------------------------------------------------------------------
// (fork: cuhooks/fork.cc)

// At exit: give the watcher a moment (bounded) to report the last grants' GPU time.
void Runtime::flush() {
  for (int i = 0; i < 200 && inflight_.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (rec_) fflush(rec_);
}

// Written to PATH.tmp, then renamed over PATH: a reader never sees half a file.
// (A race between the check below and the rename can only replace a link, never write
// through one.)
bool Runtime::write_stats(bool at_exit) {
  if (cfg_.stats_path.empty()) return true;
  std::string path = cfg_.stats_path;
  if (auto at = path.find("%p"); at != std::string::npos) path.replace(at, 2, std::to_string(getpid()));
  std::lock_guard<std::mutex> l(stats_m_);
  if (stats_closed_) return false;
  stats_closed_ = at_exit;
  // What is at PATH must be a regular file (or nothing): a link planted there is refused,
  // as open_output refuses one, rather than replaced.
  if (struct stat st{}; ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    say("not writing the stats file %s: %s", path.c_str(), S_ISLNK(st.st_mode) ? "it is a symlink" : "not a regular file");
    return false;
  }
  const std::string tmp = path + ".tmp";
  FILE* f = open_output("stats", tmp, false);
  if (!f) return false;
  const std::string extra = "\"chunk_bytes\":" + std::to_string(chunk_.load()) +
                            ",\"chunk_suggested\":" + std::to_string(chunk_suggested_.load()) +
                            ",\"stats_seq\":" + std::to_string(stats_seq_.fetch_add(1) + 1) +
                            ",\"mono_ns\":" + std::to_string(engine::monotonic_ns());
  fprintf(f, "%s\n", stats_json(g_c, static_cast<int>(getpid()), extra).c_str());
  if (fclose(f) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    say("cannot write the stats file %s: %s", path.c_str(), strerror(errno));
    return false;
  }
  return true;
}

void Runtime::start_stats_thread() {
  if (cfg_.off || cfg_.stats_path.empty() || cfg_.stats_ms <= 0) return;
  std::thread([this] {
    do std::this_thread::sleep_for(std::chrono::milliseconds(cfg_.stats_ms));
    while (write_stats());  // a file it cannot write: said once, then only at exit
  }).detach();
}

// --- the singleton -----------------------------------------------------------------
namespace {
// Published once with release order and read with acquire: a thread whose first hook call
// races the one that builds the runtime either sees it whole or waits in pthread_once
// (a plain pointer was a data race, and on aarch64 could show the runtime half built).
std::atomic<Runtime*> g_rt{nullptr};
pthread_once_t g_once = PTHREAD_ONCE_INIT;

Runtime* built() { return g_rt.load(std::memory_order_acquire); }

// What this thread's fork_prepare took (two threads may fork at once).
thread_local Runtime::ForkLocks t_fork_held;
void on_fork_prepare() {
  if (Runtime* r = built()) t_fork_held = r->fork_prepare();
}
void on_fork_parent() {
  if (Runtime* r = built()) r->fork_parent(t_fork_held);
}
void on_fork_child() {
  if (Runtime* r = built()) r->fork_child(t_fork_held);
}
void at_exit() {
  Runtime* r = built();
  if (!r) return;
  r->flush();
  r->write_stats(true);
}

void init_once() {
  // Never destroyed: hooks may run from other libraries' destructors after ours.
  auto* r = new Runtime();
  g_rt.store(r, std::memory_order_release);
  r->start_stats_thread();
  pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
  atexit(at_exit);
}

Runtime& rt() {
  Runtime* r = built();
  if (__builtin_expect(r == nullptr, 0)) {
    pthread_once(&g_once, init_once);
    r = built();
  }
  return *r;
}
}  // namespace

void before(Op& op) { rt().before(op); }
void after(const Op& op, CUresult r) { rt().after(op, r); }

// A stream or context ends (cuhooks/hooks.h). Counted as any call; before the runtime
// exists nothing is kept about any stream or context, so none is made for it (these
// run from cudart's teardown at exit too).
namespace {
void count_end(const Op& op) {
  g_c.calls[static_cast<int>(op.hook)].fetch_add(1, std::memory_order_relaxed);
  if (op.slot > 0) g_c.via_procaddr.fetch_add(1, std::memory_order_relaxed);
}
void count_end_result(CUresult r) {
  if (r != CUDA_SUCCESS) g_c.errors.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace
void ends_before(const Op& op, CUstream s) {
  count_end(op);
  if (Runtime* r = built()) r->stream_ends(s);
}
void ends_before(const Op& op, CUcontext c) {
  count_end(op);
  if (Runtime* r = built()) r->context_ends(c);
}
void ends_before(const Op& op, CUdevice d) {
  count_end(op);
  // A reset ends the primary context in the call; a release only perhaps (told after it,
  // its pools marked ending meanwhile).
  Runtime* rtp = built();
  if (!rtp) return;
  if (op.hook == Hook::cuDevicePrimaryCtxReset_v2) rtp->device_contexts_end(d, false);
  else if (op.hook == Hook::cuDevicePrimaryCtxRelease_v2) rtp->device_contexts_end(d, true);
}
void ends_after(const Op&, CUstream, CUresult r) { count_end_result(r); }
void ends_after(const Op&, CUcontext, CUresult r) { count_end_result(r); }
void ends_after(const Op& op, CUdevice d, CUresult r) {
  count_end_result(r);
  if (Runtime* rtp = built(); rtp && op.hook == Hook::cuDevicePrimaryCtxRelease_v2)
    rtp->device_release_ends(d, r == CUDA_SUCCESS);
}
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
  const ripple_cuhook_stats s = ripple::cuhook::snapshot(ripple::cuhook::g_c);
  if (out) memcpy(out, &s, std::min<std::size_t>(size, sizeof s));
  return 0;
}

// Unit boundaries and works (cuhooks/runtime.h): entering and leaving units, the open
// work's positions, and sub-layer grants (the copies inside a unit issued in chunks, each
// gated on its sub-unit).
#include <algorithm>

#include "cuhooks/counters.h"
#include "cuhooks/runtime.h"
#include "cuhooks/chunker.h"

namespace ripple::cuhook {

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
  const std::uint64_t chunk = chunk_.load(std::memory_order_relaxed);
  ++wire_gen_;
  wire_cat_ = catalog_;
  subs_.assign(catalog_.size(), {});
  if (!chunk) return;
  // One pair of entries per split unit (C bytes, the rest), so each keeps its duration.
  for (std::uint32_t u = 0; u < catalog_.size(); ++u) {
    if (!splittable(u) || catalog_[u].bytes <= chunk) continue;
    const std::uint32_t n = sub_unit_count(catalog_[u].bytes, chunk);
    const std::size_t extra = 2;
    if (n > engine::kMaxWorkUnits / 4 || wire_cat_.size() + extra > engine::kMaxUnits) {
      if (!warned_split_)
        say("unit '%s' (%llu bytes) is not split into chunks of %llu bytes: %s (said once)",
            catalog_[u].name.c_str(), static_cast<unsigned long long>(catalog_[u].bytes),
            static_cast<unsigned long long>(chunk),
            n > engine::kMaxWorkUnits / 4 ? "too many sub-units for a work" : "the catalog is full");
      warned_split_ = true;
      continue;
    }
    const std::vector<engine::UnitInfo> parts = split_unit(catalog_[u], chunk);
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
  const std::vector<Chunk> plan = plan_chunks(0, op.bytes, op.bytes, chunk_.load(std::memory_order_relaxed), op.granule);
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
  if (!subunits_open_.load(std::memory_order_acquire)) return;  // the common case: no lock
  std::vector<Chunk> plan;
  std::uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> l(gm_);
    if (!open_unit_ || occ_w1_ <= occ_w0_ + 1 || work_wire_.empty()) return;  // no sub-units
    if (capturing(op.stream)) return;
    plan = plan_chunks(occ_copied_, op.bytes, occ_unit_bytes_, chunk_.load(std::memory_order_relaxed), op.granule);
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
        at_chunk_gate_ = true;
        const bool covered = cover_locked(wp);
        at_chunk_gate_ = false;
        if (!covered) g_c.unmanaged_units.fetch_add(1, std::memory_order_relaxed);
        else if (fresh) set_grant_label_locked(occ_unit_label_);
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
// when they were not entered at all (stream capture), -3 when there were none (no
// boundary; enter_locked). `api`: an explicit unit (its bytes may make it a kCopy source).
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
    set_grant_label_locked(label);
    open_unit_ = true;
    pending_start_.store(true);
    return 0;
  }
  std::lock_guard<std::mutex> l(gm_);
  // An engine that marks its units keeps them: bare copies are not learned from then on.
  if (src == Source::kNvtx || api) stop_bare_learning_locked(api ? "API" : "NVTX");
  if (bare_work_ && work_open()) drain_locked();  // never part of a learned bare pass
  bnd_units_.assign(units_in.begin(), units_in.end());
  return enter_locked(src, label, false, 0);
}

// A copy or graph launch outside any unit: a boundary unless a unit is open or a work
// other than a learned bare pass is (the copies of an NVTX unit or pass belong to it).
// Returns as enter(), or -3 when it is no boundary (also a zero-byte copy).
int Runtime::enter_bare(CUstream s, Source src, std::uint64_t bytes, int dir) {
  // A zero-byte copy moves nothing and has no copy units (RIPPLE_COPY_MIN_BYTES=0 lets
  // it through): nothing to grant.
  if (src == Source::kCopy && bytes == 0) return -3;
  const char* plain = src == Source::kCopy ? "copy" : "graph";
  if (rec_) {
    bool bare;
    {
      std::lock_guard<std::mutex> l(gm_);
      bare = !work_open() && !open_unit_;
    }
    if (!bare) return -3;
    return enter(src == Source::kCopy ? copy_units(bytes) : std::vector<std::uint32_t>{graph_unit_}, s, src, plain);
  }
  std::lock_guard<std::mutex> l(gm_);
  if (open_unit_ || (work_open() && !bare_work_)) return -3;
  if (capturing(s)) {
    g_c.capture_skips.fetch_add(1, std::memory_order_relaxed);
    return -2;
  }
  count_unit(src);
  if (src == Source::kCopy) copy_units(bytes, bnd_units_);
  else bnd_units_.assign(1, graph_unit_);
  if (!bare_learn_) return enter_locked(src, plain, false, 0);
  // The learnable label: direction and exact bytes (fits the unit-name field up to
  // 10^19 bytes), or "graph".
  std::string label = src == Source::kGraph ? "graph" : std::string(dir == RH_DIR_H2D ? "h2d-" : "d2h-") + std::to_string(bytes);
  return enter_locked(src, label, true, bytes);
}

int Runtime::enter_locked(Source src, const std::string& label, bool bare, std::uint64_t bytes) {
  std::vector<std::uint32_t>& units = bnd_units_;
  // No units, no boundary: an empty work cannot be announced ("work: no units") and its
  // last position would be one before its first.
  if (units.empty()) return -3;
  open_unit_ = true;
  bool whole_pass = false;
  std::size_t from = 0;
  if (src == Source::kNvtx && learn_) {
    begin_occurrence_locked(label);
    const std::uint32_t u = learn_step_locked(label, &whole_pass, &from);
    units.assign(1, u);
  } else if (bare) {
    bare_step_locked(label, bytes, &whole_pass, &from);
  }
  if (!work_open()) {
    // A new work: the learned pass or the profile's forward sequence from this unit on,
    // or just these units.
    std::vector<std::uint32_t> w = units;
    if (whole_pass && bare && from == 0 && ahead_ && !ahead_->units.empty() && ahead_->pass == pass_) {
      // The pass from its start: the work announced ahead (gate.cc, "grants ahead"), as
      // announced (open_work_locked adopts it if nothing changed since; a pass learned
      // at this boundary, another one, drains it).
      w = ahead_->units;
      g_c.passes_per_work.store(w.size() / pass_.size(), std::memory_order_relaxed);
    } else if (whole_pass) {
      w.assign(pass_.begin() + static_cast<std::ptrdiff_t>(from), pass_.end());
      // A short bare pass: the work spans several passes (learning.cc, bare_passes_locked).
      if (bare)
        for (std::size_t n = bare_passes_locked(from); n > 1; --n) w.insert(w.end(), pass_.begin(), pass_.end());
    } else if (units.size() == 1 && src != Source::kCopy) {
      auto it = std::find(seq_.begin(), seq_.end(), units[0]);
      if (it != seq_.end()) w.assign(it, seq_.end());
    }
    pass_work_ = whole_pass && !bare;
    bare_work_ = whole_pass && bare;
    bare_from_ = from;
    open_work_locked(w);
    at_work_start_ = true;
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
    const bool covered = cover_locked(wp);
    at_work_start_ = false;
    if (!covered) {
      g_c.unmanaged_units.fetch_add(1, std::memory_order_relaxed);
      rc = -1;
      break;
    }
    if (!fresh) continue;
    set_grant_label_locked(label);
    // Its GPU time is this boundary's alone (a learned unit's duration).
    grant_single_ = p == first && base_ + grant_->first == wp && grant_end_ == work_pos0_[last + 1];
  }
  at_work_start_ = false;
  ++occ_gen_;
  occ_w0_ = work_pos0_[last];
  occ_w1_ = work_pos0_[last + 1];
  occ_cover_ = occ_w0_;
  occ_copied_ = 0;
  occ_unit_bytes_ = work_units_[last] < catalog_.size() ? catalog_[work_units_[last]].bytes : 0;
  occ_unit_label_ = label;
  subunits_open_.store(occ_w1_ > occ_w0_ + 1, std::memory_order_release);
  if (rc == 0) announce_ahead_locked();
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
  if (cover_locked(work_wire_.size() - 1, false)) set_grant_label_locked({});
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
  subunits_open_.store(false, std::memory_order_release);
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
  subunits_open_.store(false, std::memory_order_release);
  if (!work_open()) {
    // Sub-units never reached (fewer copy bytes than announced) are still the agent's
    // next positions: granted and closed now (charged, never run), so the next work's
    // grant is not stuck behind them.
    if (client_ && !work_wire_.empty() && acq_next_ < work_wire_.size() && acq_next_ >= base_) {
      g_c.subunits_skipped.fetch_add(work_wire_.size() - acq_next_, std::memory_order_relaxed);
      if (cover_locked(work_wire_.size() - 1, false)) set_grant_label_locked({});
      close_grant_locked();
    }
    clear_work_locked();
  }
  // Still open: its end goes on this thread's per-thread stream if that ran its last work.
  end_on_thread_stream_locked();
}

}  // namespace ripple::cuhook

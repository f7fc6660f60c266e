// The runtime's pass learning (cuhooks/runtime.h): the glue between the boundaries and
// the pure learners of cuhooks/pass_learner.h, which turns what they learn into catalog
// units and whole-pass works.
#include <algorithm>
#include <set>

#include "cuhooks/counters.h"
#include "cuhooks/runtime.h"

namespace ripple::cuhook {

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
  nvtx_learner_.observe(label, [&](const std::vector<std::string>& pass) { return learn_locked(pass); });
  if (learned_) {  // this label began the pass just learned
    unit = learned_units_.at(label);
    *whole_pass = true;
    *from = 0;
  }
  return unit;
}

bool Runtime::learn_locked(const std::vector<std::string>& labels) {
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
        return false;
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
  pass_bytes_ = pass_bytes;
  learned_ = true;
  g_c.passes_learned.fetch_add(1, std::memory_order_relaxed);
  g_c.learned_pass_units.store(pass_.size(), std::memory_order_relaxed);
  say("learned the NVTX pass: %zu units (%zu distinct, %llu bytes) from '%s'", pass_.size(),
      catalog_.size() - base_catalog_, static_cast<unsigned long long>(pass_bytes), labels.front().c_str());
  renew_session_locked();
  return true;
}

void Runtime::deviate_locked(const std::string& label) {
  learned_ = false;
  // Passes most likely still begin where they did (a VLM's image pass, a shorter pass).
  std::string first;
  for (const auto& [name, idx] : learned_units_)
    if (!pass_.empty() && idx == pass_.front()) first = name;
  nvtx_learner_.restart(first);
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
// last max(2p, the learner's window) labels repeat with period p (twice in a row for p >= 4;
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

void Runtime::bare_step_locked(const std::string& label, std::uint64_t bytes, bool* whole_pass, std::size_t* from) {
  // The learner's clock: the engine's kernel launches (a pass's phase begins after them).
  copy_learner_.record(label, bytes, g_c.launches.load(std::memory_order_relaxed), !learned_);
  if (learned_) {
    const std::uint32_t unit = bare_unit_of(label);
    if (unit == pass_[bpos_]) {
      if (bpos_ == 0) bperiod_.pass_started(engine::monotonic_ns());
      if (!work_open()) *whole_pass = true, *from = bpos_;
      if (++bpos_ == pass_.size()) {
        bpos_ = 0;
        ++bpasses_;
        if (bpasses_ == kSpanAfterPasses && !recalled_) remember_stable_locked();
        if (bpasses_ == kStablePasses) copy_learner_.reset_window();
      }
      bnd_units_.assign(1, unit);
      return;
    }
    // Off the learned pass: the rest of the open pass is granted but never runs (the
    // agent is over-charged for it, never under-charged), and this copy is gated by a
    // work of its own bytes.
    if (work_open()) {
      g_c.seq_mismatch.fetch_add(1, std::memory_order_relaxed);
      drain_locked();
    }
    deviate_bare_locked(label);
    copy_learner_.rebuild();
  }
  if (std::optional<CopyPassLearner::Learned> l = copy_learner_.try_learn(); l && bare_learn_locked(l->ids, l->cur)) {
    if (work_open()) drain_locked();  // not expected: every work closes before learning
    *whole_pass = true;
    *from = bpos_;
    const std::uint32_t unit = pass_[bpos_];
    if (++bpos_ == pass_.size()) bpos_ = 0;
    bnd_units_.assign(1, unit);
  }
}

bool Runtime::bare_learn_locked(const std::vector<std::uint32_t>& ids, std::size_t cur) {
  // Learned units stay: the catalog is the base, the units learned before, then this
  // pass's new sizes; when it would not fit a Hello, the base and this pass's sizes.
  std::vector<engine::UnitInfo> cat = catalog_;
  std::unordered_map<std::string, std::uint32_t> idx = learned_units_;
  std::size_t fresh = 0;
  for (std::uint32_t id : ids) fresh += copy_learner_.name(id) != "graph" && !idx.count(copy_learner_.name(id));
  if (cat.size() + fresh > engine::kMaxUnits) {
    cat.resize(base_catalog_);
    idx.clear();
  }
  std::vector<std::uint32_t> pass;
  std::uint64_t pass_bytes = 0;
  for (std::uint32_t id : ids) {
    const std::string& lb = copy_learner_.name(id);
    std::uint32_t u;
    if (lb == "graph") {
      u = graph_unit_;
    } else {
      auto it = idx.find(lb);
      if (it == idx.end()) {
        if (cat.size() >= engine::kMaxUnits || lb.size() >= engine::kUnitNameBytes) {
          if (!warned_bare_) say("a copy pass of more than %zu distinct sizes does not fit a Hello: not learned", engine::kMaxUnits - base_catalog_);
          warned_bare_ = true;
          copy_learner_.widen_window();
          copy_learner_.restart();
          return false;
        }
        engine::UnitInfo info;
        info.name = lb;
        info.bytes = std::max<std::uint64_t>(1, copy_learner_.bytes(id));  // exact: the agent charges what is copied
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
  pass_bytes_ = pass_bytes;
  learned_ = true;
  bpos_ = cur;
  bpasses_ = 0;
  bperiod_.reset();  // another pass: its own period
  pass_labels_.clear();
  for (std::uint32_t id : ids) pass_labels_.push_back(copy_learner_.name(id));
  recalled_ = was_stable_locked(pass_labels_);
  if (recalled_) g_c.passes_recalled.fetch_add(1, std::memory_order_relaxed);
  std::set<std::uint32_t> distinct(pass_.begin(), pass_.end());
  g_c.passes_learned.fetch_add(1, std::memory_order_relaxed);
  g_c.copy_passes_learned.fetch_add(1, std::memory_order_relaxed);
  g_c.learned_pass_units.store(pass_.size(), std::memory_order_relaxed);
  say("learned the copy pass: %zu copies (%zu distinct sizes, %llu bytes) from '%s'", pass_.size(), distinct.size(),
      static_cast<unsigned long long>(pass_bytes), copy_learner_.name(ids.front()).c_str());
  renew_session_locked();
  return true;
}

// Whether `labels` is, up to where it starts, a pass that was stable before.
bool Runtime::was_stable_locked(const std::vector<std::string>& labels) const {
  for (const auto& p : stable_passes_) {
    if (p.size() != labels.size()) continue;
    for (std::size_t r = 0; r < p.size(); ++r) {
      std::size_t i = 0;
      while (i < p.size() && p[(r + i) % p.size()] == labels[i]) ++i;
      if (i == p.size()) return true;
    }
  }
  return false;
}

void Runtime::remember_stable_locked() {
  if (was_stable_locked(pass_labels_)) return;
  if (stable_passes_.size() == kRecalledPasses) stable_passes_.erase(stable_passes_.begin());
  stable_passes_.push_back(pass_labels_);
}

void Runtime::deviate_bare_locked(const std::string& label) {
  learned_ = false;
  bperiod_.reset();
  if (bpasses_ < 4) copy_learner_.widen_window();
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
  copy_learner_.clear();  // the history is not needed any more
  stable_passes_.clear();
  pass_labels_.clear();
  recalled_ = false;
  bperiod_.reset();
}

// A work of the learned bare pass from position `from` spans this many passes: the rest
// of this pass and n - 1 whole ones, n = passes_per_work over the pass's measured period
// (RIPPLE_MIN_WORK_MS; 1 while the period is unknown and until the pass was matched
// kSpanAfterPasses times in a row), within kMaxWorkUnits wire positions. Why: each work
// costs one announce -> decide -> grant round trip at its first unit, and successor
// grants are delivered ahead only inside a work, so a ~1 ms pass (llama.cpp decoding a
// small model) paid a round trip every token (-5.7 % tokens/s on an H200 with an
// always-grant agent). The positions wrap across the pass end inside the work as bpos_
// does; a label off the pass drains the rest of the work, all its passes (the agent is
// over-charged by at most ~RIPPLE_MIN_WORK_MS of the engine's passes, never under-charged).
std::size_t Runtime::bare_passes_locked(std::size_t from) {
  apply_chunk_locked();  // the wire as open_work_locked will build it (idempotent)
  const std::size_t n = bare_span_locked(from);
  g_c.passes_per_work.store(n, std::memory_order_relaxed);
  if (n > 1) g_c.multi_pass_works.fetch_add(1, std::memory_order_relaxed);
  return n;
}

bool Runtime::cheap_drain_locked() const {
  const std::uint64_t period = bperiod_.period_ns();
  if (!period || pass_.empty()) return false;
  std::size_t whole = 0;
  for (std::uint32_t u : pass_) whole += wire_positions(u);
  const std::size_t most = passes_per_work(cfg_.min_work_ns, period, true, whole, whole, engine::kMaxWorkUnits);
  return pass_bytes_ <= kCheapDrainBytes / most;
}

std::size_t Runtime::bare_span_locked(std::size_t from) const {
  std::size_t first = 0, whole = 0;
  for (std::size_t i = 0; i < pass_.size(); ++i) (i >= from ? first : whole) += wire_positions(pass_[i]);
  whole += first;
  return passes_per_work(cfg_.min_work_ns, bperiod_.period_ns(), bare_stable_locked(), first, whole,
                         engine::kMaxWorkUnits);
}

}  // namespace ripple::cuhook

// Per protected task: the interference model, its margin and slope bound, and the
// allowance each released job is issued (paper §4.2 and App. C). Pure: no clock, no
// I/O; the ledger (ledger.h) calls price() at a release and complete() at a completion.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "agent/pricing/fit.h"
#include "agent/pricing/margin.h"
#include "agent/pricing/params.h"
#include "agent/pricing/sorted_window.h"
#include "agent/pricing/types.h"

namespace ripple::pricing {

// Everything that priced one job at its release. Saved with the job: its feedback
// error is scored against this line, not against later estimates (App. C, "Margin").
// A pricing line a_hat + q + s C saved at a release (App. C's own, or one at a fixed slope,
// Params::slope_candidates). `bounded`: q finite and below D, so a job above it is an err.
// With the lines on, `margin` is read at the lower of the line's two levels (the jobs it
// priced, and all jobs: ConformalMargin::margin_priced) and `margin_all` at the level over
// all jobs, which that level's err is scored against.
struct Line {
  double a_hat = 0, margin = 0, slope = 0;  // ns, ns, ns/byte
  bool bounded = false;
  double margin_all = 0;
  bool bounded_all = false;
  double at(Bytes charged) const { return a_hat + margin + slope * static_cast<double>(charged); }
  bool above_all(double ct, Bytes charged) const {
    return bounded_all && ct > a_hat + margin_all + slope * static_cast<double>(charged);
  }
};

struct Pricing {
  Phase phase = Phase::kRest;
  bool cold = false;            // no completed job and no profile: nothing to price
  double a_hat = 0;             // a_hat_ij, ns
  double margin = 0;            // q_ij, ns (= D_i when unbounded)
  bool margin_unbounded = true;
  double slope_held = 0;        // kappa_hat_ij, ns/byte
  bool slope_estimable = false; // a positive kappa^u_ij is available
  double slope_upper = 0;       // kappa^u_ij, ns/byte
  double slope_priced = 0;      // s_ij, ns/byte
  double beta = 1;              // kappa_hat_ij / s_ij
  bool high_uncertainty = true; // slope SE above 10 % or not estimable
  Bytes a_max = 0;              // A_i^max = rho D_i
  double raw = 0;               // max(0, D_i - a_bar_ij) / s_ij, before the cap
  Bytes nominal = 0;            // Eq. 2
  Bytes base = 0;               // after the +-25 % rate limit
  Bytes allowance = 0;          // issued A_ij
  bool reduced = false;         // one-in-eight 40 % smaller allowance
  bool probe = false;           // one-unit probe
  bool full_release = false;    // issued exactly A_max: whole allowance at entry
  bool guard = true;            // tight-deadline guard tripped: no probe, floor, crossing
  Bytes floor = 0;              // f, or 0 under the guard
  Nanos pacing_duration = 1;    // a_hat_ij floored at 1 ns (Eq. 6)
  bool certified = false;       // the task was exempt when this job was released
  double cert_intercept = 0;    // h_ij, ns
  double cert_slope = 0;        // kappa^u_ij of the saved exemption line h + kappa^u C
  // The job started this long after its release (an overrun: the task's wait for it
  // returned without sleeping), so only D_i - lag of its deadline was left (ours, not the
  // paper's, which sees releases as they happen). Its allowance is capped by Eq. 2 over
  // that remainder; its line and the fit take its time from its start (its execution
  // time), its miss its time from its release.
  Nanos lag = 0;

  // App. C's own line (a_hat + q + max(kappa_hat, kappa^u) C), whose level its err moves;
  // with Params::slope_candidates the lines at the fixed slopes too, each scoring its own
  // level, and the one the allowance came from (-1: App. C's). a_hat, margin and
  // slope_priced above are the line the job was priced on.
  Line own;
  std::array<Line, kSlopeCandidates> candidates{};
  int chosen = -1;

  // The saved release-time pricing line a_hat + q + s C (App. C, "Margin").
  double line(Bytes charged) const { return a_hat + margin + slope_priced * charged; }
};

// What a completed (or abandoned) job taught the estimator.
struct Outcome {
  bool missed = false;      // response (from the release) > D_i
  bool above_line = false;  // err_ij
  // No GPU byte reached the job (charged below fit_min_bytes), and with
  // Params::untouched_level false it left the conformal level where it was.
  bool level_skipped = false;
  // Some GPU byte was admitted while it ran (charged >= fit_min_bytes). A miss without it
  // is the host's own time, or a grant that ran past its predicted end (TaskStats).
  bool touched = false;
  std::optional<double> residual;  // e_ij, when the fit had data to predict it
};

// Nominal allowance A_ij = min(max(0, D_i - a_bar_ij) / s_ij, A_max) (Eq. 2), bytes.
// s <= 0 prices GPU volume as harmless: the cap alone applies.
Bytes nominal_allowance(double deadline_ns, double a_bar_ns, double slope, Bytes a_max);

// The +-25 % rate limit (App. C): the new base lies within
// [prev (1 - r), prev + r max(prev, unit)] and never above A_max.
Bytes rate_limited_base(Bytes nominal, Bytes previous_base, Bytes unit, double rate, Bytes a_max);

// Tight-deadline guard (App. C): ceil(kappa_hat f) > D_i - max(a_hat + q, p_i).
bool tight_deadline_guard(double slope_held, Bytes floor, double deadline_ns, double a_hat_ns,
                          double margin_ns, double solo_p99_ns);

// The model-based certification check (App. C, "Task exemptions"):
//   kappa^u rho < 1  and
//   (h + 2 kappa^u rho H) / (1 - kappa^u rho) <= min(D, a_hat + q + beta [D - a_hat - q]+),
//   h = a_hat + q + [kappa_hat - kappa^u]+ C_bar,  beta = kappa_hat / s.
// Times in ns, slopes in ns/byte, rho in bytes/ns, C_bar in bytes.
struct CertificationInputs {
  double a_hat = 0, margin = 0, deadline = 0;
  double slope_held = 0, slope_upper = 0, slope_priced = 0;
  double mean_charge = 0, peak_rate = 0, horizon = 0;
};
bool certification_passes(const CertificationInputs& in);

class Estimator {
 public:
  // `params` must outlive the estimator; both must have passed validate().
  Estimator(TaskSpec spec, const Params& params);

  // Prices the job that starts now. `smallest_other_base` is the smallest current base
  // allowance among the other uncertified tasks (kUnlimitedBytes if none): the
  // one-in-eight reduced allowance only goes to the task with the smallest allowance.
  // `lag` > 0: the job was released that long before it started (Pricing::lag); it is
  // issued at most max(0, D_i - lag - a_bar) / s, with the guard judged on D_i - lag, and
  // the task's running base allowance (the rate limit's state) is left as it was.
  Pricing price(Phase phase, Bytes smallest_other_base = kUnlimitedBytes, Nanos lag = 0);

  // A job priced by `pricing` completed `response` ns after its release (its lag
  // included) with `charged` bytes, `early` of them charged within instrument_window() of
  // its start (the instrument of Params::slope_instrument; nullopt: the whole charge).
  Outcome complete(const Pricing& pricing, Nanos response, Bytes charged,
                   std::optional<Bytes> early = std::nullopt);
  // A job that never completed: it exceeds any finite line and misses its deadline.
  Outcome unfinished(const Pricing& pricing);

  // A_bar_i: the most a job released next can be issued, whatever completes before it
  // (the 25 % growth rule and the one-unit probe, both capped at A_max).
  Bytes allowance_bound() const;
  // The crossing bound (App. C): modelled response time of the next job when a grant of
  // `bytes` ends `into_release` ns after its release; nullopt when no crossing is
  // allowed at all (no model, unbounded margin, or the tight-deadline guard).
  std::optional<double> crossing_response(Nanos into_release, Bytes bytes) const;
  bool crossing_allowed(Nanos into_release, Bytes bytes) const;
  // The longest time past the next release that a grant of `bytes` may end, so that
  // crossing_allowed holds (the response is linear in it: D - max(a_hat + q, p_i) - kappa_hat
  // max(0, A_bar - bytes), capped at T_i); nullopt when no crossing is allowed at all.
  std::optional<Nanos> max_into_release(Bytes bytes) const;

  const TaskSpec& spec() const { return spec_; }
  double window_target() const { return window_target_; }
  double z() const { return z_; }
  Nanos solo_p99() const { return solo_p99_; }
  const InterferenceFit& fit() const { return fit_; }
  // The slope the hold rule and kappa^u read: the least-squares fit's (App. C) or, with
  // Params::slope_instrument, the instrumented fit's.
  struct SlopeReading {
    bool estimable = false;
    double slope = 0, se = 0;  // ns/byte
    double effective_samples = 0;
  };
  SlopeReading slope_reading() const;
  // m: the bytes charged to a job within this many ns of its start are its instrument
  // (Params::slope_instrument): the shortest of the task's last kInstrumentJobs execution
  // times (its solo profile's before any completes), so nearly every job lives through
  // it and its own length cannot move them. 0 while nothing is known.
  Nanos instrument_window() const {
    return recent_.empty() ? 0 : static_cast<Nanos>(recent_.rank(1));
  }
  const ConformalMargin& margin() const { return margin_; }
  double held_slope() const { return held_slope_; }
  // kappa^u from the current fit; nullopt until estimable.
  std::optional<double> slope_upper() const;
  // The slope pricing uses now: max(kappa_hat, kappa^u), or kappa_hat / 0.85.
  double priced_slope() const;
  double intercept() const { return fit_.intercept(held_slope_); }
  Bytes base_allowance() const { return base_; }
  bool has_priced() const { return releases_ > 0; }
  std::int64_t releases() const { return releases_; }

  bool exempt() const { return exempt_; }
  bool exemption_disabled() const { return exemption_disabled_; }
  int certification_passes() const { return passes_; }

 private:
  struct Estimates {
    bool cold = true;
    double a_hat = 0;
    std::optional<double> margin;
    double held = 0;
    std::optional<double> upper;  // positive kappa^u
    double priced = 0;
    bool high_uncertainty = true;
  };
  Estimates current(std::optional<double> margin) const;
  // Params::slope_candidates: saves every fixed-slope line in `p`, moves the scores, and
  // prices `p` on the line with the best score among those whose slope is >= kappa^u.
  void choose_line(Pricing& p, Phase phase, const Estimates& e);
  // The margin of the line `p` was priced on (App. C's, or a fixed-slope line's).
  ConformalMargin& priced_margin(const Pricing& p) {
    return p.chosen < 0 ? margin_ : candidates_[static_cast<std::size_t>(p.chosen)].margin;
  }
  bool certification_check(const Estimates& e, double margin) const;
  void end_exemption() {
    exempt_ = false;
    passes_ = 0;
  }

  TaskSpec spec_;
  const Params& params_;
  double deadline_;
  double window_target_;
  double z_;
  Nanos solo_p99_ = 0;
  Bytes a_max_;
  InterferenceFit fit_;
  InstrumentedFit iv_fit_;
  SortedWindow recent_{kInstrumentJobs};  // execution times, for instrument_window()
  ConformalMargin margin_;
  // Params::slope_candidates: a line at a fixed slope, with its own residuals and level,
  // and the exponential average of the nominal allowance it gave (bytes; 0 while ineligible).
  struct Candidate {
    double slope;
    ConformalMargin margin;
    double score = 0;
  };
  std::vector<Candidate> candidates_;
  double own_score_ = 0;  // the same average for App. C's line
  double held_slope_;
  Bytes base_ = 0;
  std::int64_t releases_ = 0;
  bool probe_turn_ = false;
  bool exempt_ = false;
  bool exemption_disabled_ = false;
  int passes_ = 0;
  std::optional<double> certified_upper_;  // kappa^u of the last passing check
};

}  // namespace ripple::pricing

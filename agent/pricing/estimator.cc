#include "agent/pricing/estimator.h"
#include "agent/pricing/percentile.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ripple::pricing {

namespace {

Bytes to_bytes(double x) {
  if (!(x > 0)) return 0;
  if (x >= 9.0e18) return kUnlimitedBytes;
  return static_cast<Bytes>(x);  // floor: never round an allowance up
}

}  // namespace

Bytes nominal_allowance(double deadline_ns, double a_bar_ns, double slope, Bytes a_max) {
  const double slack = std::max(0.0, deadline_ns - a_bar_ns);
  if (!(slope > 0)) return slack > 0 ? a_max : 0;
  return std::min(to_bytes(slack / slope), a_max);
}

Bytes rate_limited_base(Bytes nominal, Bytes previous, Bytes unit, double rate, Bytes a_max) {
  const double reference = static_cast<double>(std::max(previous, unit));
  const Bytes up = to_bytes(static_cast<double>(previous) + rate * reference);
  const Bytes down = to_bytes(static_cast<double>(previous) * (1.0 - rate));
  return std::min(std::clamp(nominal, down, std::max(up, down)), a_max);
}

bool tight_deadline_guard(double slope_held, Bytes floor, double deadline_ns, double a_hat_ns,
                          double margin_ns, double solo_p99_ns) {
  const double delay = std::ceil(slope_held * static_cast<double>(floor));
  return delay > deadline_ns - std::max(a_hat_ns + margin_ns, solo_p99_ns);
}

Estimator::Estimator(TaskSpec spec, const Params& params)
    : spec_(std::move(spec)),
      params_(params),
      deadline_(static_cast<double>(spec_.deadline)),
      window_target_(pricing::window_target(spec_.miss_tolerance,
                                   contract_jobs(params.contract_window, spec_.period),
                                   params.min_window_target)),
      // z_eps from the lower tail: 1 - eps rounds to 1 for eps below ~5.6e-17 (a NaN z
      // would drop the pessimistic slope and price a stricter task with more bytes).
      z_(-inverse_normal_cdf(spec_.miss_tolerance)),
      a_max_(to_bytes(params.peak_rate_bytes_per_ns * static_cast<double>(spec_.deadline))),
      fit_(params.intercept_window, params.slope_window),
      iv_fit_(params.slope_window),
      margin_(params, window_target_),
      held_slope_(spec_.prior_slope_ns_per_byte.value_or(params.prior_slope_ns_per_byte)) {
  if (params.slope_candidates && held_slope_ > 0)
    for (double f : kSlopeCandidateFactors) candidates_.push_back({f * held_slope_, ConformalMargin(params, window_target_)});
  // Warm-up from a solo profile (App. C): the solo runs (C = 0) seed the fit, and
  // their scatter around the seeded intercept seeds the pooled warm-up margin.
  const auto& profile = spec_.solo_profile;
  for (Nanos d : profile) {
    fit_.add(static_cast<double>(d), 0.0);
    iv_fit_.add(static_cast<double>(d), 0.0, 0.0);
    recent_.push(static_cast<double>(d));
  }
  if (!profile.empty()) {
    const double a0 = fit_.intercept(held_slope_);
    const std::size_t first =
        profile.size() > static_cast<std::size_t>(params.warmup_window)
            ? profile.size() - static_cast<std::size_t>(params.warmup_window)
            : 0;
    for (std::size_t k = first; k < profile.size(); ++k) {
      margin_.seed(static_cast<double>(profile[k]) - a0);
      for (Candidate& c : candidates_) c.margin.seed(static_cast<double>(profile[k]) - fit_.intercept(c.slope));
    }
  }
  solo_p99_ = spec_.solo_p99;
  if (solo_p99_ == 0) solo_p99_ = percentile(profile, 99);  // the config's "K x p99" too
}

Estimator::SlopeReading Estimator::slope_reading() const {
  SlopeReading r;
  if (params_.slope_instrument) {
    r.estimable = iv_fit_.slope_estimable();
    r.slope = iv_fit_.slope();
    r.se = iv_fit_.slope_se();
    r.effective_samples = iv_fit_.effective_samples();
  } else {
    r.estimable = fit_.slope_estimable();
    r.slope = fit_.ls_slope();
    r.se = fit_.ls_slope_se();
    r.effective_samples = fit_.effective_samples();
  }
  return r;
}

std::optional<double> Estimator::slope_upper() const {
  const SlopeReading r = slope_reading();
  if (!r.estimable) return std::nullopt;
  // kappa^u = max(0, kappa_LS) + z_eps SE (App. C, "Pessimistic slope").
  return std::max(0.0, r.slope) + z_ * r.se;
}

Estimator::Estimates Estimator::current(std::optional<double> margin) const {
  Estimates e;
  e.cold = !fit_.has_data();
  e.held = held_slope_;
  // Floored at 0: a job takes no negative time. The intercept goes negative when jobs
  // that inherited many bytes ran short against the held slope; priced as it is, a_hat + q
  // fell below D even with the margin unbounded (q = D: "no bytes"), and the job got bytes.
  e.a_hat = e.cold ? 0.0 : std::max(0.0, fit_.intercept(held_slope_));
  e.margin = e.cold ? std::nullopt : margin;
  if (auto u = slope_upper(); u && *u > 0) e.upper = *u;
  // s = max(kappa_hat, kappa^u), or kappa_hat / 0.85 until a positive kappa^u exists.
  e.priced = e.upper ? std::max(e.held, *e.upper) : e.held / params_.unestimable_slope_share;
  const SlopeReading r = slope_reading();
  e.high_uncertainty = !r.estimable || !(r.slope > 0) || r.se > params_.high_uncertainty * r.slope;
  return e;
}

double Estimator::priced_slope() const { return current(std::nullopt).priced; }

bool certification_passes(const CertificationInputs& in) {
  const double load = in.slope_upper * in.peak_rate;
  if (!(load < 1.0)) return false;
  const double beta = in.slope_priced > 0 ? in.slope_held / in.slope_priced : 1.0;
  const double aq = in.a_hat + in.margin;
  const double h = aq + std::max(0.0, in.slope_held - in.slope_upper) * in.mean_charge;
  const double lhs = (h + 2.0 * load * in.horizon) / (1.0 - load);
  const double rhs = std::min(in.deadline, aq + beta * std::max(0.0, in.deadline - aq));
  return lhs <= rhs;
}

bool Estimator::certification_check(const Estimates& e, double q) const {
  if (!slope_reading().estimable) return false;
  CertificationInputs in;
  in.a_hat = e.a_hat;
  in.margin = q;
  in.deadline = deadline_;
  in.slope_held = e.held;
  in.slope_upper = *slope_upper();
  in.slope_priced = e.priced;
  in.mean_charge = fit_.mean_charge();
  in.peak_rate = params_.peak_rate_bytes_per_ns;
  in.horizon = static_cast<double>(params_.grant_horizon);
  return pricing::certification_passes(in);
}

Pricing Estimator::price(Phase phase, Bytes smallest_other_base, Nanos lag) {
  ++releases_;
  const Bytes unit = params_.probe_unit_bytes;
  // With the lines at fixed slopes, each line (App. C's too) is read at the lower of its
  // level and the level of the jobs it priced (ConformalMargin::margin_priced).
  const std::optional<double> q_all = margin_.margin(phase);
  const Estimates e = current(candidates_.empty() ? q_all : margin_.margin_priced(phase));

  Pricing p;
  p.phase = phase;
  p.lag = std::max<Nanos>(0, lag);
  p.cold = e.cold;
  p.a_hat = e.a_hat;
  p.margin_unbounded = !e.margin || *e.margin >= deadline_;
  p.margin = p.margin_unbounded ? deadline_ : *e.margin;
  p.slope_held = e.held;
  p.slope_estimable = e.upper.has_value();
  p.slope_upper = e.upper.value_or(0.0);
  p.slope_priced = e.priced;
  p.beta = e.priced > 0 ? e.held / e.priced : 1.0;
  p.high_uncertainty = e.high_uncertainty;
  p.a_max = a_max_;
  p.pacing_duration = std::max<Nanos>(params_.min_pacing_duration,
                                      static_cast<Nanos>(std::ceil(e.a_hat)));
  p.own = {p.a_hat, p.margin, p.slope_priced, !p.margin_unbounded, q_all.value_or(deadline_),
           !e.cold && q_all && *q_all < deadline_};
  if (e.cold) {
    // Cold start: no completed job and no profile. Nothing is known about the task's
    // own duration, so its first job gets no bytes, no probe, no floor, no crossing.
    p.guard = true;
    return p;
  }

  if (!candidates_.empty()) choose_line(p, phase, e);

  // Eq. 2: A = min(max(0, D - a_bar) / s, rho D), a_bar = a_hat + q.
  const double a_bar = p.a_hat + p.margin;
  p.raw = p.slope_priced > 0 ? std::max(0.0, deadline_ - a_bar) / p.slope_priced
                             : (deadline_ > a_bar ? 9.0e18 : 0.0);
  p.nominal = nominal_allowance(deadline_, a_bar, p.slope_priced, a_max_);
  p.base = rate_limited_base(p.nominal, base_, unit, params_.rate_limit, a_max_);
  // A late start says nothing about the task's steady state: the rate limit's state moves
  // only with jobs released on time.
  if (p.lag == 0) base_ = p.base;
  p.allowance = p.base;

  // One job in eight of the task with the smallest allowance gets 40 % fewer bytes
  // while slope uncertainty exceeds 10 % (or is not estimable).
  const bool smallest = p.base <= smallest_other_base;
  if (p.high_uncertainty && smallest && releases_ % params_.reduced_every == 0) {
    p.allowance = to_bytes(static_cast<double>(p.allowance) * (1.0 - params_.reduced_cut));
    p.reduced = true;
  }

  // What is left of the deadline: all of it, or D_i - lag after a late start.
  const double left = deadline_ - static_cast<double>(p.lag);
  if (p.lag > 0) {
    const Bytes cap = nominal_allowance(left, a_bar, p.slope_priced, a_max_);
    if (p.allowance > cap) {
      p.allowance = cap;
      p.reduced = false;
    }
  }
  // The guard, certification and the crossing bound stay on App. C's line.
  p.guard = tight_deadline_guard(p.slope_held, params_.pacing_floor(), left, p.own.a_hat,
                                 p.own.margin, static_cast<double>(solo_p99_));
  p.floor = p.guard ? 0 : params_.pacing_floor();
  // An allowance below one unit receives a one-unit probe on alternate releases; a late
  // job never does (its cap is what is left).
  if (p.allowance < unit && !p.guard && p.lag == 0) {
    probe_turn_ = !probe_turn_;
    if (probe_turn_) {
      p.allowance = std::min(unit, a_max_);
      p.probe = true;
    }
  }
  // Issued exactly A_max because the raw allowance exceeds it: released at entry.
  p.full_release = p.allowance == a_max_ && p.raw >= static_cast<double>(a_max_);

  if (params_.certification && !exemption_disabled_) {
    if (p.own.bounded && certification_check(e, p.own.margin)) {
      certified_upper_ = slope_upper();  // the kappa^u this certification relies on
      if (passes_ < params_.certify_passes) ++passes_;
      if (passes_ >= params_.certify_passes) exempt_ = true;
    } else {
      end_exemption();
    }
  }
  p.certified = exempt_;
  if (auto u = slope_upper()) {
    p.cert_slope = *u;
    p.cert_intercept = p.own.a_hat + p.own.margin + std::max(0.0, p.slope_held - *u) * fit_.mean_charge();
  }
  return p;
}

void Estimator::choose_line(Pricing& p, Phase phase, const Estimates& e) {
  const double weight = 2.0 / (params_.slope_candidate_jobs + 1);  // 1 release: the nominal now
  const auto nominal = [this](const Line& l) {
    return l.bounded ? static_cast<double>(nominal_allowance(deadline_, l.a_hat + l.margin, l.slope, a_max_)) : 0.0;
  };
  own_score_ += weight * (nominal(p.own) - own_score_);
  double best = own_score_;
  for (std::size_t k = 0; k < candidates_.size(); ++k) {
    Candidate& c = candidates_[k];
    Line& l = p.candidates[k];
    const auto q = c.margin.margin_priced(phase), qa = c.margin.margin(phase);
    l.a_hat = fit_.intercept(c.slope);
    l.slope = c.slope;
    l.margin = q.value_or(deadline_);
    l.bounded = q && *q < deadline_;
    l.margin_all = qa.value_or(deadline_);
    l.bounded_all = qa && *qa < deadline_;
    // A line prices a job only while its slope bounds the traffic's cost (>= kappa^u) and
    // its intercept is a duration (a negative one: the slope claims more than the jobs took).
    const bool eligible = l.bounded && l.a_hat >= 0 && e.upper && c.slope >= *e.upper;
    c.score += weight * ((eligible ? nominal(l) : 0.0) - c.score);
    if (eligible && c.score > best) {
      best = c.score;
      p.chosen = static_cast<int>(k);
    }
  }
  if (p.chosen < 0) return;
  const Line& l = p.candidates[static_cast<std::size_t>(p.chosen)];
  p.a_hat = l.a_hat;
  p.margin = l.margin;
  p.margin_unbounded = false;
  p.slope_priced = l.slope;
  p.beta = p.slope_held / l.slope;
}

Outcome Estimator::complete(const Pricing& p, Nanos response, Bytes charged, std::optional<Bytes> early) {
  Outcome out;
  out.missed = response > spec_.deadline;
  // The line and the fit model the job's own execution: from its start, not its release.
  const double ct = static_cast<double>(response - std::max<Nanos>(0, p.lag));
  // err = 1 above the saved line; a saved q >= D records err = 0 (App. C).
  out.above_line = !p.margin_unbounded && ct > p.line(charged);
  // A charge below fit_min_bytes is no GPU traffic (params.h says why): the fit sees it as
  // zero, and the job's time is the host's alone (Params::untouched_level).
  const bool touched = charged >= params_.fit_min_bytes;
  out.touched = touched;
  if (params_.untouched_level || touched) {
    // Each line's level moves on its own err (App. C's on its own line, whichever priced),
    // and the priced line's second level on the err against the line the job was priced on.
    margin_.update_level(candidates_.empty() ? out.above_line : p.own.above_all(ct, charged));
    for (std::size_t k = 0; k < candidates_.size(); ++k)
      candidates_[k].margin.update_level(p.candidates[k].above_all(ct, charged));
    if (!candidates_.empty()) priced_margin(p).update_priced_level(out.above_line);
  } else {
    out.level_skipped = true;
  }

  const double x = touched ? static_cast<double>(charged) : 0.0;
  // The residual is computed before the job enters the fit.
  if (fit_.has_data()) {
    const double r = ct - fit_.intercept(held_slope_) - held_slope_ * x;
    margin_.add_residual(r, p.phase);
    out.residual = r;
    for (Candidate& c : candidates_) c.margin.add_residual(ct - fit_.intercept(c.slope) - c.slope * x, p.phase);
  }

  if (p.certified) {
    if (out.missed) {
      exemption_disabled_ = true;  // a deadline miss while exempt: for the rest of the run
      end_exemption();
    } else if (ct > p.cert_intercept + p.cert_slope * static_cast<double>(charged)) {
      end_exemption();
    }
  }

  fit_.add(ct, x);
  if (params_.slope_instrument) {
    // The instrument is part of the charge; an untouched job has neither.
    const double z = touched ? static_cast<double>(std::clamp<Bytes>(early.value_or(charged), 0, charged)) : 0.0;
    iv_fit_.add(ct, x, z);
  }
  recent_.push(ct);
  if (const SlopeReading reading = slope_reading(); reading.estimable) {
    const double ls = reading.slope, se = reading.se;
    // The held slope moves only on a positive estimate >= 2 SE above zero.
    if (ls > 0 && ls >= params_.slope_hold_z * se) {
      held_slope_ = ls;
    } else if (params_.slope_release && reading.effective_samples >= kSlopeReleaseSamples) {
      // The data reject the held slope at the pessimistic level: it falls to kappa^u
      // (params.h, kDefaultSlopeRelease). Only to a positive kappa^u: never priced as free.
      const double upper = std::max(0.0, ls) + z_ * se;
      if (upper > 0 && held_slope_ > upper) held_slope_ = upper;
    }
    // Drift: a new lower slope estimate above the kappa^u a passing check relied on.
    if (params_.certification && certified_upper_ && ls - params_.drift_z * se > *certified_upper_) {
      exemption_disabled_ = true;
      end_exemption();
    }
  }
  return out;
}

Outcome Estimator::unfinished(const Pricing& p) {
  Outcome out;
  out.missed = true;
  out.above_line = !p.margin_unbounded;  // an unfinished job exceeds any finite line
  margin_.update_level(candidates_.empty() ? out.above_line : p.own.bounded_all);
  for (std::size_t k = 0; k < candidates_.size(); ++k) candidates_[k].margin.update_level(p.candidates[k].bounded_all);
  if (!candidates_.empty()) priced_margin(p).update_priced_level(out.above_line);
  if (p.certified) {
    exemption_disabled_ = true;
    end_exemption();
  }
  return out;
}

Bytes Estimator::allowance_bound() const {
  const Bytes unit = params_.probe_unit_bytes;
  const double reference = static_cast<double>(std::max(base_, unit));
  const Bytes grown = to_bytes(static_cast<double>(base_) + params_.rate_limit * reference);
  return std::min(a_max_, std::max(grown, unit));
}

std::optional<double> Estimator::crossing_response(Nanos into_release, Bytes bytes) const {
  const Estimates e = current(margin_.worst_margin());
  if (e.cold || !e.margin || *e.margin >= deadline_) return std::nullopt;
  const double p99 = static_cast<double>(solo_p99_);
  if (tight_deadline_guard(e.held, params_.pacing_floor(), deadline_, e.a_hat, *e.margin, p99))
    return std::nullopt;
  // (t_end - R) + max(a_hat + q, p_i) + kappa_hat max(0, A_bar - c)  (App. C)
  const double further = static_cast<double>(std::max<Bytes>(0, allowance_bound() - bytes));
  return static_cast<double>(into_release) + std::max(e.a_hat + *e.margin, p99) + e.held * further;
}

bool Estimator::crossing_allowed(Nanos into_release, Bytes bytes) const {
  if (into_release <= 0) return true;  // the grant ends before the release
  if (into_release > spec_.period) return false;  // capped at T_i: never reach the next one
  const auto r = crossing_response(into_release, bytes);
  return r && *r <= deadline_;
}

std::optional<Nanos> Estimator::max_into_release(Bytes bytes) const {
  const auto at_zero = crossing_response(0, bytes);  // the response with no time into it
  if (!at_zero || *at_zero > static_cast<double>(deadline_)) return std::nullopt;
  // Floored, so that crossing_allowed holds at the value returned.
  const Nanos into = static_cast<Nanos>(std::floor(static_cast<double>(deadline_) - *at_zero));
  return std::min(into, spec_.period);
}

}  // namespace ripple::pricing

// Every parameter of the pricing core, with the paper's value as its named default
// (App. C unless noted). config.h sets them from a TOML table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/pricing/types.h"

namespace ripple::pricing {

// Fit (App. C): recursive least squares with exponential forgetting.
inline constexpr int kDefaultInterceptWindow = 50;   // W
inline constexpr int kDefaultSlopeWindow = 200;      // W_kappa
inline constexpr double kDefaultSlopeHoldZ = 2.0;    // held slope moves at >= 2 SE
// The held slope's release (ours): once the fit is estimable and its pessimistic slope
// kappa^u = max(0, kappa_LS) + z_eps SE lies below the held slope, the held slope falls to
// kappa^u. App. C's hold rule alone moves the held slope only up to a significant positive
// estimate, so an early estimate from a few charged jobs (a baseline shift between the solo
// profile and the run, read as slope) can hold for the rest of a run: seen on the GPU
// (results/e2e-archive.md, twelfth session: sgm's held slope 13.5 ms/GB for 42 s against
// 0.5-0.7 in the other runs, its allowance ~0). Pricing still uses s >= kappa^u, the
// paper's own pessimistic slope; false is App. C's rule. Only on a fit of at least
// kSlopeReleaseSamples effective samples: a standard error from fewer (n_eff - 2 degrees
// of freedom) is itself too uncertain to reject anything (App. C starts the adaptive
// margin after as many residuals, margin_start). Off by default since the GPU A/B
// (estimator.md, "The held slope's release"): at k = 1.1 on the H200, 3 runs each in one
// call, sgm missed 19 of 901 jobs with it (2.1 %, above eps) and 6 of 900 without, at no
// gain in tokens/s.
inline constexpr bool kDefaultSlopeRelease = false;
inline constexpr double kSlopeReleaseSamples = 50;
// The slope read with an instrument (ours): the bytes charged in a job's first m ns (m: the
// shortest of the task's last kInstrumentJobs responses), against its whole charge
// (fit.h, InstrumentedFit). App. C's least-squares slope reads a task's own spread as
// slope, because a job that runs long collects more bytes (results/sim.md §20); the
// instrumented slope does not, at a wider standard error. On by default since the GPU A/B
// (estimator.md, "The instrumented slope"; results/e2e.md §0, fortieth session): on an H100,
// 3 runs a variant in each of three calls, it moved 1.24x, 1.08x and 1.02x the tokens of
// App. C's fit, every target kept wherever App. C's kept them. False: App. C's fit.
inline constexpr bool kDefaultSlopeInstrument = true;
inline constexpr int kInstrumentJobs = 50;
// Lines at fixed slopes beside App. C's (ours; estimator.md, "Lines at fixed slopes"): the
// task's prior slope times each factor, each line with its own intercept, residual window
// and conformal level. A job is priced on the line whose allowance has been the largest on
// average over the last ~kSlopeCandidateJobs releases (an exponential average), if that is
// not App. C's own, and only while its slope is at least kappa^u: every such slope bounds
// the traffic's cost from above, and the residuals a line keeps make its margin the task's
// own spread about that line. A slope above the truth credits the bytes a long job collects
// (results/sim.md §22). Each line is priced at the lower of its level and a second level
// moved only on the jobs it priced (ConformalMargin::margin_priced), so a selection keeps
// each line's coverage on its jobs. On by default since the GPU A/B of the forty-second session
// (results/e2e.md §0: 1.68x App. C's tokens/s with fewer misses); false prices every job on
// App. C's line.
inline constexpr bool kDefaultSlopeCandidates = true;
inline constexpr int kSlopeCandidates = 4;
inline constexpr double kSlopeCandidateFactors[kSlopeCandidates] = {0.25, 0.5, 2.0, 4.0};
inline constexpr int kSlopeCandidateJobs = 50;
// Slope assumed before any held estimate exists. The paper prices with kappa_hat/0.85
// "until a positive uncertainty estimate is available", which needs a positive
// kappa_hat before the first fit; it does not print the value. 5 ms per GB is the
// pessimistic end of the GB10 measurements (§2.2: 1.7-2.5x slowdown of ~50 ms jobs
// beside ~200 GB/s decode). Documentation/estimator.md explains the choice.
inline constexpr double kDefaultPriorSlopeNsPerByte = 5e-3;

// Margin (Eq. 5, App. C): adaptive conformal inference.
inline constexpr double kDefaultEta = 0.01;          // eta
inline constexpr int kDefaultMarginWindow = 200;     // W_q
inline constexpr int kDefaultMarginStart = 50;       // adaptive margin after 50 samples
inline constexpr int kDefaultWarmupWindow = 50;      // warm-up quantiles over <= 50
inline constexpr double kDefaultVlmHeadFraction = 0.10;
inline constexpr Nanos kDefaultContractWindow = 100 * kNsPerSec;  // L
inline constexpr double kDefaultMinWindowTarget = 1e-6;           // eps' floor
inline constexpr double kDefaultMissTolerance = 0.02;             // eps (§5.1)
// Rank endpoint beyond the retained residuals. App. C: an unbounded margin (q = D_i, the
// task's allowance decays to zero). Ours, the default since the GPU A/B runs
// (results/e2e-archive.md, sixth session: more tokens at k = 1.1 and 1.5, no miss): the
// largest retained residual.
// With eta = 0.01 and eps' ~ 1.1 %, one above-line job lowers the level by 0.0099, below
// 1/(W_q + 1); the margin stays unbounded for ~37 jobs (Documentation/estimator.md).
inline constexpr bool kDefaultMarginClip = true;
// Anti-windup of Eq. 5's level (ours): an above-line job lowers the level at most to where
// the rank reaches the largest retained residual (alpha = 1/(n + 1)). Below that the margin
// is the largest residual (margin_clip) or unbounded whatever the level, so App. C's
// integrator only stores debt there: after a burst of k above-line jobs the level climbs
// back ~k x 91 jobs (eta eps' = 0.000109 a job) before the margin leaves the largest
// residual; with the floor, ~46 whatever k (Documentation/estimator.md). A level already
// below the floor (a window still filling) is left where it is. On by default since the
// ninth session's GPU A/B (results/e2e-archive.md): as many tokens or more at every k, every
// target kept; false restores App. C's integrator.
inline constexpr bool kDefaultMarginAntiwindup = true;

// Late starts (ours): a job released behind an overrun started `lag` ns after its release
// (Ledger::on_release); it is priced on D_i - lag and its miss counted from its release
// (Documentation/estimator.md, "Late starts"). False takes every job as released at its
// start, as the agent did before.
inline constexpr bool kDefaultLateStarts = true;

// Untouched jobs and the conformal level (ours): a job that no GPU byte reached (charged
// below fit_min_bytes: no grant admitted while it ran, none in flight at its release)
// tells the level nothing about the line that prices traffic; its time is the host's alone.
// True (App. C): every job updates the level (Eq. 5). False (the default since the GPU A/B):
// an untouched job leaves the level where it was, whether it erred or not; its residual
// still enters the window (Documentation/estimator.md, "Untouched jobs").
inline constexpr bool kDefaultUntouchedLevel = false;

// Pessimistic slope and allowance (Eq. 2, App. C).
inline constexpr double kDefaultUnestimableSlopeShare = 0.85;  // s = kappa_hat / 0.85
inline constexpr double kDefaultPeakRateBytesPerNs = 273.0;    // rho: GB10's 273 GB/s
inline constexpr double kDefaultRateLimit = 0.25;              // +-25 % per release
inline constexpr double kDefaultHighUncertainty = 0.10;        // slope SE > 10 %
inline constexpr int kDefaultReducedEvery = 8;                 // one job in eight
inline constexpr double kDefaultReducedCut = 0.40;             // 40 % fewer bytes
inline constexpr Bytes kDefaultProbeUnitBytes = 385'978'880;   // one Qwen3-8B layer
// A job charged fewer bytes enters the slope fit as charged zero: a few bytes cannot move a
// response time, and GPU-memory-only units are announced as 1 byte each (the protocol wants
// bytes > 0), so their counts would otherwise fit as a slope of ms per byte (seen on the GPU:
// 2e7 ms/GB). Ours, not the paper's.
inline constexpr Bytes kDefaultFitMinBytes = 1 << 20;

// Budget (Eq. 3, 6). The floor f defaults to one probe unit U and follows U when the
// engines' announced units set it (Ledger::set_probe_unit): kFloorIsProbeUnit. A value
// >= 0 fixes f.
inline constexpr Bytes kFloorIsProbeUnit = -1;
inline constexpr Bytes kDefaultPacingFloorBytes = kFloorIsProbeUnit;  // f
inline constexpr Nanos kDefaultMinPacingDuration = 1;  // a_hat floored at 1 ns

// A task that has released nothing for this many periods past its expected next release,
// and has no active job, is idle: no release of it is predicted, so the crossing bound
// does not apply to it until it releases again. Without this, a task that exits or pauses
// makes every long grant "cross into a release" that never comes (its next release stays
// `now`), and engines wait forever. Ours, not the paper's (which assumes tasks that run).
inline constexpr double kDefaultIdlePeriods = 1.0;
// Its bound: the ledger converts idle_periods x period to integer ns (Ledger::idle_after),
// which a larger value could overflow. 10^4 periods of the longest configurable period
// (3.6e12 ns, an hour) are 3.6e16 ns, far inside int64; and a task silent for 10^4
// periods is long gone.
inline constexpr double kMaxIdlePeriods = 1e4;
// A task's longest period (the daemon's config caps period_ms at an hour): idle_periods x
// period, and the deadline sums, stay inside int64 ns.
inline constexpr Nanos kMaxPeriod = 3600 * kNsPerSec;
// The largest prior slope, 1000 ns a byte (10^6 ms per GB, over 10^3 x the plant's 750):
// a job's charge times it stays inside int64 ns (a slope of 10^13 ms/GB made a_hat -2e19
// ns after one charged job, a cast out of range).
inline constexpr double kMaxSlopeNsPerByte = 1000.0;

// Certification (App. C, "Task exemptions") and the grant horizon H (App. D).
inline constexpr int kDefaultCertifyPasses = 50;
inline constexpr Nanos kDefaultGrantHorizon = 18 * kNsPerMs;  // H
inline constexpr double kDefaultDriftZ = 2.0;                 // kappa_LS - 2 SE
inline constexpr Bytes kMinFixedChunk = Bytes{1} << 20;       // pricing.chunk_bytes's range
inline constexpr Bytes kMaxFixedChunk = Bytes{1} << 30;

struct Params {
  int intercept_window = kDefaultInterceptWindow;
  int slope_window = kDefaultSlopeWindow;
  double slope_hold_z = kDefaultSlopeHoldZ;
  bool slope_release = kDefaultSlopeRelease;
  bool slope_instrument = kDefaultSlopeInstrument;
  bool slope_candidates = kDefaultSlopeCandidates;
  int slope_candidate_jobs = kSlopeCandidateJobs;  // the lines' average, over ~this many releases
  double prior_slope_ns_per_byte = kDefaultPriorSlopeNsPerByte;

  double eta = kDefaultEta;
  int margin_window = kDefaultMarginWindow;
  int margin_start = kDefaultMarginStart;
  int warmup_window = kDefaultWarmupWindow;
  bool margin_clip = kDefaultMarginClip;
  bool margin_antiwindup = kDefaultMarginAntiwindup;
  bool late_starts = kDefaultLateStarts;
  bool untouched_level = kDefaultUntouchedLevel;
  double vlm_head_fraction = kDefaultVlmHeadFraction;
  Nanos contract_window = kDefaultContractWindow;
  double min_window_target = kDefaultMinWindowTarget;
  double default_miss_tolerance = kDefaultMissTolerance;

  double unestimable_slope_share = kDefaultUnestimableSlopeShare;
  double peak_rate_bytes_per_ns = kDefaultPeakRateBytesPerNs;
  double rate_limit = kDefaultRateLimit;
  double high_uncertainty = kDefaultHighUncertainty;
  int reduced_every = kDefaultReducedEvery;
  double reduced_cut = kDefaultReducedCut;
  Bytes probe_unit_bytes = kDefaultProbeUnitBytes;
  Bytes fit_min_bytes = kDefaultFitMinBytes;

  Bytes pacing_floor_bytes = kDefaultPacingFloorBytes;  // kFloorIsProbeUnit: f = U
  // f as used: the set value, or the probe unit U.
  Bytes pacing_floor() const {
    return pacing_floor_bytes == kFloorIsProbeUnit ? probe_unit_bytes : pacing_floor_bytes;
  }
  Nanos min_pacing_duration = kDefaultMinPacingDuration;
  double idle_periods = kDefaultIdlePeriods;

  bool certification = true;
  int certify_passes = kDefaultCertifyPasses;
  Nanos grant_horizon = kDefaultGrantHorizon;
  double drift_z = kDefaultDriftZ;
  // The chunk size the agent tells the engines (chunk.h): 0, the suggestion from the
  // allowances; else this fixed size (a power of two), e.g. for an A/B against it.
  Bytes chunk_bytes = 0;
};

// One protected task's contract (§3) and optional solo profile (App. C warm-up).
struct TaskSpec {
  std::string name;
  Nanos period = 0;    // T_i: the period, or a sporadic task's minimum inter-arrival
  Nanos deadline = 0;  // D_i <= T_i
  double miss_tolerance = kDefaultMissTolerance;  // eps_i
  std::vector<Nanos> solo_profile;  // solo job durations; empty = cold start
  Nanos solo_p99 = 0;  // p_i; 0 = take the profile's p99 (or 0 without a profile)
  std::optional<double> prior_slope_ns_per_byte;  // overrides Params for this task
};

// Empty when valid, else one line naming the offending field.
std::string validate(const Params& params);
std::string validate(const TaskSpec& spec);

// Phi^-1(p) for 0 < p < 1 (Acklam's rational approximation, one Halley step).
double inverse_normal_cdf(double p);

// n_i = max(1, floor(L / T_i)) (App. C, "Window target").
int contract_jobs(Nanos contract_window, Nanos period);

// eps'_i = max(1e-6, eps_i - z_eps sqrt(eps_i (1 - eps_i) / n_i)),
// z_eps = Phi^-1(1 - eps_i) (App. C, "Window target").
double window_target(double miss_tolerance, int contract_jobs, double min_target);

// Integer parts per million (App. C: "the updates use integer parts per million").
inline constexpr std::int64_t kPpm = 1'000'000;
std::int64_t to_ppm(double fraction);

// Phase of a release at time `release` against a deadline-bound engine whose periods
// start at `vlm_epoch` + k * `vlm_period` (App. C: first 10 % of a period = head).
Phase phase_of(Nanos release, Nanos vlm_epoch, Nanos vlm_period, double head_fraction);

}  // namespace ripple::pricing

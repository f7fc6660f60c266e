#include "tools/bench/ripple-sim/tasks.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "agent/pricing/percentile.h"
#include "ripple/toml.h"

namespace ripple::sim {

Nanos SoloModel::draw(Rng& rng) const {
  double ms;
  if (!samples_ms.empty()) {
    ms = samples_ms[static_cast<std::size_t>(rng.uniform() * static_cast<double>(samples_ms.size()))];
  } else {
    ms = sigma > 0 ? base_ms * rng.lognormal(0.0, sigma) : base_ms;
    if (noise_ms > 0) ms += rng.lomax(noise_ms, alpha);
  }
  return std::max<Nanos>(1, static_cast<Nanos>(std::llround(ms * 1e6)));
}

double SoloModel::cdf(double x) const {
  if (!samples_ms.empty()) {
    const auto n = std::count_if(samples_ms.begin(), samples_ms.end(), [&](double v) { return v <= x; });
    return static_cast<double>(n) / static_cast<double>(samples_ms.size());
  }
  if (sigma > 0) return -1;
  if (x < base_ms) return 0;
  if (noise_ms <= 0) return 1;
  return 1.0 - std::pow(1.0 + (x - base_ms) / noise_ms, -alpha);
}

Result<Mix> parse_mix(const std::string& text, const std::string& origin, double period_scale) {
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return make_error("{}: {}", origin, std::string(e.description()));
  }
  Mix m;
  m.name = doc["name"].value_or(std::string());
  const toml::array* arr = doc["task"].as_array();
  if (arr == nullptr || arr->empty()) return make_error("{}: no [[task]] tables", origin);
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    if (t == nullptr) return make_error("{}: task[{}] is not a table", origin, i);
    MixTask mt;
    auto name = (*t)["name"].value<std::string>();
    auto period = (*t)["period_ms"].value<double>();
    if (!name || !period) return make_error("{}: task[{}]: needs name and period_ms", origin, i);
    mt.name = *name;
    mt.period_ms = *period * period_scale;
    mt.deadline_ms = (*t)["deadline_ms"].value_or(0.0) * period_scale;
    if (!(mt.period_ms > 0)) return make_error("{}: task {}: period_ms must be > 0", origin, mt.name);
    m.tasks.push_back(mt);
  }
  if (m.name.empty()) m.name = origin;
  return m;
}

Result<Mix> load_mix(const std::string& path, double period_scale) {
  std::ifstream in(path);
  if (!in) return make_error("--mix: cannot read {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = parse_mix(ss.str(), path, period_scale);
  if (m && m->name == path) {
    const auto slash = path.rfind('/');
    std::string stem = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (const auto dot = stem.rfind('.'); dot != std::string::npos) stem.resize(dot);
    m->name = stem;
  }
  return m;
}

Result<std::vector<double>> load_samples(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read samples {}", path);
  std::vector<double> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (const auto h = line.find('#'); h != std::string::npos) line.resize(h);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const double v = std::stod(line);
      if (!(v > 0)) throw std::invalid_argument("not positive");
      out.push_back(v);
    } catch (const std::exception&) {
      return make_error("{}:{}: '{}' is not a positive duration in ms", path, n, line);
    }
  }
  if (out.empty()) return make_error("{} holds no durations", path);
  return out;
}

double percentile(std::vector<double> v, double p) { return pricing::percentile(std::move(v), p); }

Status validate(const HostBursts& b) {
  if (!(std::isfinite(b.every_s) && b.every_s >= 0)) return make_error("bursts.every_s must be a number >= 0 (s)");
  if (!(std::isfinite(b.burst_s) && b.burst_s >= 0)) return make_error("bursts.burst_s must be a number >= 0 (s)");
  if (b.burst_s > 0 && !(b.every_s > 0))
    return make_error("bursts.every_s must be > 0 where bursts.burst_s > 0 (the mean quiet gap between bursts)");
  return Status::Ok();
}

Status validate_burst_factor(double f, const std::string& where) {
  if (!(f >= 1 && f <= 10))
    return make_error("{} must be in [1, 10] (a burst multiplies a job's solo work; 1: this task is not slowed)", where);
  return Status::Ok();
}

BurstProcess::BurstProcess(const HostBursts& b, Rng rng) : b_(b), rng_(rng) {
  if (!b_.on()) return;
  // Stationary start: in a burst at 0 with probability duty().
  if (rng_.uniform() < b_.duty()) {
    bursts_.emplace_back(0, std::max<Nanos>(1, static_cast<Nanos>(std::llround(rng_.exponential(b_.burst_s) * 1e9))));
    next_start_ = bursts_.back().second;
  }
  next_start_ += static_cast<Nanos>(std::llround(rng_.exponential(b_.every_s) * 1e9));
}

void BurstProcess::extend(Nanos t) {
  if (!b_.on()) return;
  while (next_start_ <= t) {
    const Nanos len = std::max<Nanos>(1, static_cast<Nanos>(std::llround(rng_.exponential(b_.burst_s) * 1e9)));
    bursts_.emplace_back(next_start_, next_start_ + len);
    next_start_ += len + static_cast<Nanos>(std::llround(rng_.exponential(b_.every_s) * 1e9));
  }
}

const std::vector<std::pair<Nanos, Nanos>>& BurstProcess::bursts_until(Nanos t) {
  extend(t);
  return bursts_;
}

bool BurstProcess::in_burst(Nanos t) {
  if (!b_.on()) return false;
  extend(t);
  // The last burst starting at or before t.
  auto it = std::upper_bound(bursts_.begin(), bursts_.end(), t,
                             [](Nanos x, const std::pair<Nanos, Nanos>& b) { return x < b.first; });
  return it != bursts_.begin() && t < std::prev(it)->second;
}

double BurstProcess::share(Nanos t0, Nanos t1) {
  if (!b_.on() || t1 <= t0) return 0.0;
  extend(t1);
  Nanos in = 0;
  for (const auto& [s, e] : bursts_) in += std::max<Nanos>(0, std::min(e, t1) - std::max(s, t0));
  return static_cast<double>(in) / static_cast<double>(t1 - t0);
}

double job_work(const TaskModel& t, Rng& rng, BurstProcess* bursts, Nanos release) {
  const double w = static_cast<double>(t.solo.draw(rng));
  return bursts != nullptr && t.burst_factor != 1.0 && bursts->in_burst(release) ? w * t.burst_factor : w;
}

std::vector<double> profile_jobs(const TaskModel& t, int jobs, Rng& rng, BurstProcess* bursts) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(std::max(0, jobs)));
  for (int i = 0; i < jobs; ++i) out.push_back(job_work(t, rng, bursts, static_cast<Nanos>(i) * t.period) / 1e6);
  return out;
}

}  // namespace ripple::sim

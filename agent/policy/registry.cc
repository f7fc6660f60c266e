#include "agent/policy/registry.h"

#include <charconv>

#include "agent/policy/cap.h"
#include "agent/policy/pace.h"
#include "agent/policy/pause.h"
#include "agent/policy/ripple.h"
#include "agent/policy/sereno.h"
#include "agent/policy/sigamma.h"
#include "agent/policy/unmanaged.h"

namespace ripple::policy {

std::string policy_names() {
  return "ripple, unmanaged, pause, cap-1/8, cap-1/4, cap-1/2, sigamma, sereno, sereno-ui-first, "
         "pace-R (R GB/s, e.g. pace-2)";
}

namespace {

// "1/8" or "0.125" -> 0.125; nullopt if malformed.
std::optional<double> parse_fraction(std::string_view s) {
  auto num = [](std::string_view t) -> std::optional<double> {
    double v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
    return v;
  };
  if (auto slash = s.find('/'); slash != std::string_view::npos) {
    auto a = num(s.substr(0, slash)), b = num(s.substr(slash + 1));
    if (!a || !b || *b == 0) return std::nullopt;
    return *a / *b;
  }
  return num(s);
}

}  // namespace

Result<std::unique_ptr<admission::Policy>> make_policy(std::string_view name, const SerenoParams* sereno) {
  using P = std::unique_ptr<admission::Policy>;
  if (name == "ripple") return P(std::make_unique<RipplePolicy>());
  if (name == "unmanaged") return P(std::make_unique<UnmanagedPolicy>());
  if (name == "pause") return P(std::make_unique<PausePolicy>());
  if (name == "sigamma") return P(std::make_unique<SigammaPolicy>());
  if (name == "sereno" || name == "sereno-balanced" || name == "sereno-ui-first") {
    SerenoParams p = sereno != nullptr ? *sereno : SerenoParams{};
    if (sereno == nullptr && name == "sereno-ui-first") p.target = 0.07;  // App. D
    return P(std::make_unique<SerenoPolicy>(p, std::string(name)));
  }
  if (name.substr(0, 4) == "cap-") {
    auto x = parse_fraction(name.substr(4));
    if (!x || !(*x > 0) || *x > 1)
      return make_error("policy {}: the cap fraction must be in (0, 1], e.g. cap-1/4", name);
    return P(std::make_unique<CapPolicy>(*x, std::string(name)));
  }
  if (name.substr(0, 5) == "pace-") {
    auto r = parse_fraction(name.substr(5));
    if (!r || !(*r >= PacePolicy::kMinGbps) || *r > PacePolicy::kMaxGbps)
      return make_error("policy {}: the pace R must be a positive number of GB/s (from {:g} to {:g}), e.g. pace-2 or "
                        "pace-0.5",
                        name, PacePolicy::kMinGbps, PacePolicy::kMaxGbps);
    return P(std::make_unique<PacePolicy>(*r, std::string(name)));
  }
  return make_error("unknown policy '{}' (valid: {})", name, policy_names());
}

}  // namespace ripple::policy

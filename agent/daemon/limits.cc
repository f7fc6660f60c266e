#include "agent/daemon/limits.h"

#include <fstream>
#include <sstream>
#include <string>

namespace ripple::daemon {

bool Throttle::note(Nanos now) {
  ++total_;
  if (said_ && now < next_) {
    ++pending_;
    return false;
  }
  said_ = true;
  next_ = now + interval_;
  suppressed_ = pending_;
  pending_ = 0;
  return true;
}

std::vector<std::size_t> listed_engines(const std::vector<bool>& connected, std::size_t cap) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < connected.size() && out.size() < cap; ++i)
    if (connected[i]) out.push_back(i);
  for (std::size_t i = connected.size(); i-- > 0 && out.size() < cap;)
    if (!connected[i]) out.push_back(i);
  return out;
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  // The comm (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int k = 3; k <= 22; ++k) {
    if (!(rest >> field)) return std::nullopt;
    if (k == 3 && (field == "Z" || field == "X")) return std::nullopt;  // exited, not yet reaped
    if (k == 22) return std::stoull(field);
  }
  return std::nullopt;
}

}  // namespace ripple::daemon

// CPU lists. See cores.h.
#include "tools/workloads/cores.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace ripple::workloads {
namespace {

// A non-negative decimal below CPU_SETSIZE; false for anything else.
bool parse_cpu(const std::string& s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_core_list(const std::string& text, std::vector<int>* cores, std::string* err) {
  cores->clear();
  if (text.empty()) {
    *err = "empty CPU list";
    return false;
  }
  std::set<int> seen;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    const bool ok = dash == std::string::npos
                        ? parse_cpu(item, &lo) && (hi = lo, true)
                        : parse_cpu(item.substr(0, dash), &lo) && parse_cpu(item.substr(dash + 1), &hi);
    if (!ok) {
      *err = "'" + item + "' is not a CPU or a range A-B (a list looks like 4-7 or 4,5,6,7)";
      return false;
    }
    if (lo > hi) {
      *err = "range '" + item + "' runs backwards";
      return false;
    }
    if (hi >= CPU_SETSIZE) {
      *err = "CPU " + std::to_string(hi) + " is beyond the largest CPU number " + std::to_string(CPU_SETSIZE - 1);
      return false;
    }
    for (int c = lo; c <= hi; ++c) {
      if (!seen.insert(c).second) {
        *err = "CPU " + std::to_string(c) + " is listed twice";
        return false;
      }
      cores->push_back(c);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return true;
}

std::string format_core_list(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cores[i]);
    if (j > i) out += "-" + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> cores_not_in(const std::vector<int>& cores, const std::vector<int>& allowed) {
  std::vector<int> out;
  for (int c : cores)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end()) out.push_back(c);
  return out;
}

}  // namespace ripple::workloads

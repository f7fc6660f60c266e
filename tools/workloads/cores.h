// CPU lists for the robot tasks and ripple-mix: "4-7", "4,5,6,7", "0-3,8" (the kernel's
// cpulist format, as taskset -c and /sys/devices/system/cpu/online write it).
#pragma once

#include <string>
#include <vector>

namespace ripple::workloads {

// Parses a CPU list in the order written ("6,4-5" gives 6, 4, 5). On failure returns false
// and sets *err to the problem (no option name: the caller adds it). A CPU may appear once.
bool parse_core_list(const std::string& text, std::vector<int>* cores, std::string* err);

// Writes a list compactly: {4, 5, 6, 7} -> "4-7", {0, 1, 3} -> "0-1,3" (order kept).
std::string format_core_list(const std::vector<int>& cores);

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

// The cores of `cores` that are not in `allowed`, in order.
std::vector<int> cores_not_in(const std::vector<int>& cores, const std::vector<int>& allowed);

}  // namespace ripple::workloads

// ripple-sim report: the markdown table of ripple-bench (benchlib/report.py
// markdown_table), written from a results.json summary, and check_claim.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ripple::sim {

std::string markdown_table(const nlohmann::ordered_json& s);
// ripple-bench --check-claim: at every k ripple meets eps and unmanaged does not.
bool check_claim(const nlohmann::ordered_json& s, std::vector<std::string>* lines);

}  // namespace ripple::sim

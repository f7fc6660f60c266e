// Text helpers of the configuration loader (agent/config/config.cc, preflight.cc).
#pragma once

#include <string>
#include <string_view>

namespace ripple::config {

// A value as messages show it: at most 60 characters, control bytes as \xNN, and the
// length when cut (a 10 MB value must not become a 10 MB error line).
std::string shown(std::string_view v);

// Whether the UTF-8 sequence at t[i] is a code point toml++ 3.3 cannot classify safely.
bool toml_unsafe_code_point(std::string_view t, std::size_t i);

// The line of the first byte toml++ 3.3 must not see (below), or 0; *in_string says
// whether it was inside a string.
int non_ascii_outside_strings(std::string_view t, bool* in_string);

}  // namespace ripple::config

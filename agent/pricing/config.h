// Setting Params from configuration (a TOML table, e.g. the [pricing] table of
// /etc/ripple/ripple.toml; loading the file itself is the daemon's job).
#pragma once

#include <string>

#include "ripple/toml.h"

#include "agent/pricing/params.h"

namespace ripple::pricing {

// Applies every key of `table` to `params`. Returns an empty string on success, else
// one line naming the offending key (and its line in the file when known): an unknown
// key, a value of the wrong type, or a value out of range. `params` is left unchanged
// on error.
std::string apply_config(const toml::table& table, Params& params);

// The keys apply_config accepts, with their units, for documentation and --help.
std::string config_keys_help();

}  // namespace ripple::pricing

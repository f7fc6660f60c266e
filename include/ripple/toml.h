// toml++ for every Ripple file that parses TOML: include this, never <toml++/toml.h>.
//
// toml++ 3.3 (Debian 12) checks its parser's invariants with assert(), and some
// malformed input reaches one: "[`x]" aborts in parser::parse_key() (found by
// tests/fuzz/fuzz_config), so `ripple-agent -c FILE` died of SIGABRT on a one-line
// file. With NDEBUG the same checks become optimiser assumptions (undefined behaviour).
// Here a failed check throws instead (in the parser; inside a noexcept accessor it still
// terminates); config::parse turns it into an error that names the file. Every
// translation unit must see the same definition (one inline parser), so the define
// lives in this one header.
#pragma once

#include <stdexcept>
#include <string>

#ifdef NDEBUG
#error "toml++'s checks become assumptions under NDEBUG; see include/ripple/toml.h"
#endif

namespace ripple {
[[noreturn]] inline void toml_check_failed(const char* expr) {
  throw std::logic_error(std::string("toml++ internal check failed: ") + expr);
}
}  // namespace ripple

#define TOML_ASSERT(expr) ((expr) ? static_cast<void>(0) : ::ripple::toml_check_failed(#expr))
#include <toml++/toml.h>

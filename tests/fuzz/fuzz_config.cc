// libFuzzer harness: the agent's TOML configuration parser (config::parse, the pure
// part of config::load: load only adds the regular-file and size checks). Any text must
// be refused with a message or accepted, never crash, hang or leak. Relative profile
// paths resolve against a directory that does not exist, so no file is read.
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > ripple::config::kMaxFileBytes) return 0;  // load() refuses larger files
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = ripple::config::parse(text, "fuzz.toml", "/nonexistent/ripple-fuzz");
  if (c) {
    (void)c->at("agent.core");
    for (const auto& e : c->engines) (void)c->engine(e.name);
  } else if (c.error().message.empty()) {
    __builtin_trap();  // every refusal says why
  }
  return 0;
}

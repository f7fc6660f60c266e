// libFuzzer harness: the unit catalog / profile JSON reader (cuhook::parse_profile),
// which the interposer runs inside the host application on a file named by the user.
// Any text must be refused with a message or accepted, never crash, hang or leak;
// what it accepts must survive a round trip through profile_to_json, and the sequence
// matcher built from it must take kernels without crashing.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cuhooks/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ripple::cuhook;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = parse_profile(text, "fuzz.json");
  if (!p) return 0;
  const std::string json = profile_to_json(*p);
  auto again = parse_profile(json, "fuzz.json");
  if (!again) {
    std::fprintf(stderr, "round trip: profile_to_json output refused: %s\n", again.error().message.c_str());
    std::abort();
  }
  if (profile_to_json(*again) != json || again->units.size() != p->units.size()) {
    std::fprintf(stderr, "round trip: profile changed\n");
    std::abort();
  }
  SequenceMatcher m(*p);
  for (const auto& u : p->units) {
    for (const auto& k : u.kernels) (void)m.on_kernel(k);
    (void)p->find(u.name);
  }
  (void)m.on_kernel("not-a-kernel");
  return 0;
}

// libFuzzer harness: the engine-protocol decoder (include/ripple/protocol.h), which reads
// datagrams from any allowed peer. decode() must never crash, hang or leak, whatever
// the bytes; what it accepts must survive a round trip: encode(decoded) is accepted by
// decode() again, and encoding that gives the same bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "ripple/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ripple::engine;
  auto m = decode(std::span<const std::uint8_t>(data, size));
  if (!m) return 0;
  (void)type_name(*m);
  std::vector<std::uint8_t> once, twice;
  if (!encode(*m, once)) return 0;  // encode may refuse what cannot travel (e.g. an empty unit name)
  auto again = decode(once);
  if (!again) {
    std::fprintf(stderr, "round trip: decode(encode(m)) refused: %s\n", again.error().message.c_str());
    std::abort();
  }
  if (!encode(*again, twice) || once != twice) {
    std::fprintf(stderr, "round trip: encoding changed\n");
    std::abort();
  }
  return 0;
}

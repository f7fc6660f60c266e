// The admission trace's JSON line (agent/admission/trace.h).
#include "agent/admission/trace.h"

#include <fmt/format.h>

namespace ripple::admission {

namespace {

// Names come from configuration and engine hellos: escape what JSON requires.
std::string json_escaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string_view trace_kind_name(TraceKind k) {
  switch (k) {
    case TraceKind::kRelease: return "release";
    case TraceKind::kComplete: return "complete";
    case TraceKind::kGrant: return "grant";
    case TraceKind::kStart: return "start";
    case TraceKind::kDone: return "done";
    case TraceKind::kDiscard: return "discard";
  }
  return "?";
}

std::string trace_json_line(const TraceRecord& r, std::string_view name) {
  return fmt::format(R"({{"k":"{}","t":{},"who":{},"name":"{}","id":{},"bytes":{},"from":{},"to":{},"value":{},"flag":{}}})",
                     trace_kind_name(r.kind), r.t, r.who, json_escaped(name), r.id, r.bytes, r.from, r.to, r.value,
                     r.flag ? 1 : 0);
}

}  // namespace ripple::admission

#include "ripple/protocol.h"

#include <bit>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace ripple::engine {

namespace {

struct WireHello {
  char name[kNameBytes];
  std::uint8_t kind;
  std::uint8_t memory;  // Hello::memory (was padding: 0 = unknown)
  std::uint8_t pad[2];
  std::uint32_t unit_count;
  std::uint64_t period_ns;
  std::uint64_t deadline_ns;
  std::uint64_t grant_overhead_ns;
};
static_assert(sizeof(WireHello) == 64);

struct WireWelcome {
  std::uint32_t engine_id;
  std::uint8_t fail_mode;
  std::uint8_t chunk_shift;  // log2 of Welcome::chunk_bytes; 0: none (was padding)
  std::uint8_t pad[2];
  std::uint64_t lease_ns;
  char policy[kNameBytes];
};
static_assert(sizeof(WireWelcome) == 48);

struct WireWork {
  std::uint64_t work_id;
  std::uint64_t deadline_ns;
  std::uint32_t unit_count;
  std::uint32_t pad;
};
static_assert(sizeof(WireWork) == 24);

struct WireGrant {
  std::uint64_t grant_id;
  std::uint64_t work_id;
  std::uint32_t first;
  std::uint32_t count;
  std::uint64_t bytes;
  std::uint64_t start_by_ns;
  std::uint64_t sent_ns;
  std::uint8_t successor;
  std::uint8_t chunk_shift;  // log2 of GrantMsg::chunk_bytes; 0: none (was padding)
  std::uint8_t pad[6];
  std::uint64_t not_before_ns;  // version 2
};
static_assert(sizeof(WireGrant) == 64);

struct WireStart {
  std::uint64_t grant_id;
};
struct WireDone {
  std::uint64_t grant_id;
  std::uint64_t measured_ns;
};
struct WireDiscard {
  std::uint64_t grant_id;
};
struct WireBye {
  std::uint32_t reason;
  std::uint32_t pad;
  char text[kByeTextBytes];
};
static_assert(sizeof(WireBye) == 104);

template <std::size_t N>
Status put_string(char (&dst)[N], const std::string& s, const char* field) {
  if (s.size() >= N) return make_error("{}: '{}' is {} bytes, at most {}", field, s, s.size(), N - 1);
  std::memset(dst, 0, N);
  std::memcpy(dst, s.data(), s.size());
  return Status::Ok();
}

template <std::size_t N>
Result<std::string> get_string(const char (&src)[N], const char* field) {
  const void* nul = std::memchr(src, 0, N);
  if (nul == nullptr) return make_error("{}: not NUL-terminated within {} bytes", field, N);
  return std::string(src, static_cast<const char*>(nul) - src);
}

// Whether `s` is UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF). An engine's and its units' names reach JSON replies, metrics labels and trace
// lines, which must be UTF-8 (a reply with a stray 0xff ended the agent).
bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xc2 && c <= 0xdf) n = 1, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 2, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 3, cp = c & 0x07;
    else return false;
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

template <class Body>
void start(std::vector<std::uint8_t>& out, Type type, const Body& body, std::size_t extra) {
  const std::size_t len = sizeof(WireHeader) + sizeof(Body) + extra;
  out.assign(len, 0);
  WireHeader h{kMagic, kVersion, static_cast<std::uint16_t>(type), static_cast<std::uint32_t>(len), 0};
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, &body, sizeof body);
}

// A suggested chunk size (Welcome, Grant) travels as its log2 in one byte; 0: none.
Result<std::uint8_t> chunk_shift_of(std::uint64_t bytes, const char* field) {
  if (bytes == 0) return std::uint8_t{0};
  const auto shift = static_cast<unsigned>(std::countr_zero(bytes));
  if (!std::has_single_bit(bytes) || shift < kMinChunkShift || shift > kMaxChunkShift)
    return make_error("{}: {} is not a power of two in [2^{}, 2^{}]", field, bytes, kMinChunkShift, kMaxChunkShift);
  return static_cast<std::uint8_t>(shift);
}
Result<std::uint64_t> chunk_bytes_of(std::uint8_t shift, const char* field) {
  if (shift != 0 && (shift < kMinChunkShift || shift > kMaxChunkShift))
    return make_error("{}: {} out of range (0, or {} .. {})", field, shift, kMinChunkShift, kMaxChunkShift);
  return shift ? std::uint64_t{1} << shift : 0;
}

template <class Body>
Result<Body> body_of(std::span<const std::uint8_t> d, std::size_t extra, const char* what) {
  if (d.size() != sizeof(WireHeader) + sizeof(Body) + extra)
    return make_error("{}: {} bytes, expected {}", what, d.size(), sizeof(WireHeader) + sizeof(Body) + extra);
  Body b;
  std::memcpy(&b, d.data() + sizeof(WireHeader), sizeof b);
  return b;
}

}  // namespace

const char* type_name(const Message& m) {
  static constexpr const char* kNames[] = {"hello", "welcome", "work", "grant", "start", "done", "discard", "bye"};
  return kNames[m.index()];
}

Status encode(const Message& m, std::vector<std::uint8_t>& out) {
  if (const auto* h = std::get_if<Hello>(&m)) {
    if (h->units.empty()) return make_error("hello: unit catalog is empty");
    if (h->units.size() > kMaxUnits) return make_error("hello: {} units, at most {}", h->units.size(), kMaxUnits);
    WireHello w{};
    if (Status s = put_string(w.name, h->name, "hello.name"); !s) return s;
    w.kind = static_cast<std::uint8_t>(h->kind);
    w.memory = static_cast<std::uint8_t>(h->memory);
    w.unit_count = static_cast<std::uint32_t>(h->units.size());
    w.period_ns = h->period_ns;
    w.deadline_ns = h->deadline_ns;
    w.grant_overhead_ns = h->grant_overhead_ns;
    start(out, Type::kHello, w, h->units.size() * sizeof(WireUnit));
    std::uint8_t* p = out.data() + sizeof(WireHeader) + sizeof w;
    for (const UnitInfo& u : h->units) {
      WireUnit wu{};
      wu.bytes = u.bytes;
      wu.duration_ns = u.duration_ns;
      if (Status s = put_string(wu.name, u.name, "hello.unit.name"); !s) return s;
      std::memcpy(p, &wu, sizeof wu);
      p += sizeof wu;
    }
    return Status::Ok();
  }
  if (const auto* x = std::get_if<Welcome>(&m)) {
    WireWelcome w{};
    w.engine_id = x->engine_id;
    w.fail_mode = static_cast<std::uint8_t>(x->fail_mode);
    w.lease_ns = x->lease_ns;
    auto shift = chunk_shift_of(x->chunk_bytes, "welcome.chunk_bytes");
    if (!shift) return shift.error();
    w.chunk_shift = *shift;
    if (Status s = put_string(w.policy, x->policy, "welcome.policy"); !s) return s;
    start(out, Type::kWelcome, w, 0);
    return Status::Ok();
  }
  if (const auto* x = std::get_if<WorkMsg>(&m)) {
    if (x->units.empty()) return make_error("work: no units");
    if (x->units.size() > kMaxWorkUnits) return make_error("work: {} units, at most {}", x->units.size(), kMaxWorkUnits);
    WireWork w{x->work_id, x->deadline_ns, static_cast<std::uint32_t>(x->units.size()), 0};
    start(out, Type::kWork, w, x->units.size() * sizeof(std::uint32_t));
    std::memcpy(out.data() + sizeof(WireHeader) + sizeof w, x->units.data(), x->units.size() * sizeof(std::uint32_t));
    return Status::Ok();
  }
  if (const auto* x = std::get_if<GrantMsg>(&m)) {
    WireGrant w{};
    w.grant_id = x->grant_id;
    w.work_id = x->work_id;
    w.first = x->first;
    w.count = x->count;
    w.bytes = x->bytes;
    w.start_by_ns = x->start_by_ns;
    w.sent_ns = x->sent_ns;
    w.successor = x->successor ? 1 : 0;
    w.not_before_ns = x->not_before_ns;
    auto shift = chunk_shift_of(x->chunk_bytes, "grant.chunk_bytes");
    if (!shift) return shift.error();
    w.chunk_shift = *shift;
    start(out, Type::kGrant, w, 0);
    return Status::Ok();
  }
  if (const auto* x = std::get_if<StartMsg>(&m)) {
    start(out, Type::kStart, WireStart{x->grant_id}, 0);
    return Status::Ok();
  }
  if (const auto* x = std::get_if<DoneMsg>(&m)) {
    start(out, Type::kDone, WireDone{x->grant_id, x->measured_ns}, 0);
    return Status::Ok();
  }
  if (const auto* x = std::get_if<DiscardMsg>(&m)) {
    start(out, Type::kDiscard, WireDiscard{x->grant_id}, 0);
    return Status::Ok();
  }
  const auto& x = std::get<ByeMsg>(m);
  WireBye w{};
  w.reason = static_cast<std::uint32_t>(x.reason);
  std::string text = x.text.substr(0, kByeTextBytes - 1);
  if (Status s = put_string(w.text, text, "bye.text"); !s) return s;
  start(out, Type::kBye, w, 0);
  return Status::Ok();
}

Result<Message> decode(std::span<const std::uint8_t> d) {
  if (d.size() < sizeof(WireHeader)) return make_error("message: {} bytes, shorter than the 16-byte header", d.size());
  WireHeader h;
  std::memcpy(&h, d.data(), sizeof h);
  if (h.magic != kMagic) return make_error("message: bad magic {:#x}", h.magic);
  if (h.version != kVersion) return make_error("message: version {}, this agent speaks {}", h.version, kVersion);
  if (h.length != d.size()) return make_error("message: header says {} bytes, datagram has {}", h.length, d.size());
  if (h.reserved != 0) return make_error("message: reserved header field is {}", h.reserved);
  switch (static_cast<Type>(h.type)) {
    case Type::kHello: {
      if (d.size() < sizeof(WireHeader) + sizeof(WireHello)) return make_error("hello: {} bytes, too short", d.size());
      WireHello w;
      std::memcpy(&w, d.data() + sizeof(WireHeader), sizeof w);
      if (w.unit_count == 0) return make_error("hello: unit catalog is empty");
      if (w.unit_count > kMaxUnits) return make_error("hello: {} units, at most {}", w.unit_count, kMaxUnits);
      auto b = body_of<WireHello>(d, std::size_t{w.unit_count} * sizeof(WireUnit), "hello");
      if (!b) return b.error();
      Hello m;
      auto name = get_string(w.name, "hello.name");
      if (!name) return name.error();
      if (name->empty()) return make_error("hello.name: empty");
      if (!valid_utf8(*name)) return make_error("hello.name: not UTF-8");
      m.name = *name;
      if (w.kind > 1) return make_error("hello.kind: {} is neither best-effort (0) nor deadline-bound (1)", w.kind);
      m.kind = static_cast<Kind>(w.kind);
      if (w.memory > 2) return make_error("hello.memory: {} is not unknown (0), discrete (1) or integrated (2)", w.memory);
      m.memory = static_cast<Memory>(w.memory);
      m.period_ns = w.period_ns;
      m.deadline_ns = w.deadline_ns;
      if (w.grant_overhead_ns > kMaxDurationNs)
        return make_error("hello.grant_overhead_ns: {} out of range (0 .. 1 h)", w.grant_overhead_ns);
      m.grant_overhead_ns = w.grant_overhead_ns;
      const std::uint8_t* p = d.data() + sizeof(WireHeader) + sizeof w;
      for (std::uint32_t k = 0; k < w.unit_count; ++k, p += sizeof(WireUnit)) {
        WireUnit wu;
        std::memcpy(&wu, p, sizeof wu);
        auto un = get_string(wu.name, "hello.unit.name");
        if (!un) return un.error();
        if (!valid_utf8(*un)) return make_error("hello.unit[{}].name: not UTF-8", k);
        if (wu.bytes == 0 || wu.bytes > (1ull << 50))
          return make_error("hello.unit[{}].bytes: {} out of range (1 B .. 1 PiB)", k, wu.bytes);
        if (wu.duration_ns == 0 || wu.duration_ns > kMaxDurationNs)
          return make_error("hello.unit[{}].duration_ns: {} out of range (1 ns .. 1 h)", k, wu.duration_ns);
        m.units.push_back({*un, wu.bytes, wu.duration_ns});
      }
      return Message(std::move(m));
    }
    case Type::kWelcome: {
      auto b = body_of<WireWelcome>(d, 0, "welcome");
      if (!b) return b.error();
      Welcome m;
      m.engine_id = b->engine_id;
      if (b->fail_mode > 1) return make_error("welcome.fail_mode: {} out of range", b->fail_mode);
      m.fail_mode = static_cast<FailMode>(b->fail_mode);
      m.lease_ns = b->lease_ns;
      auto chunk = chunk_bytes_of(b->chunk_shift, "welcome.chunk_shift");
      if (!chunk) return chunk.error();
      m.chunk_bytes = *chunk;
      auto pol = get_string(b->policy, "welcome.policy");
      if (!pol) return pol.error();
      m.policy = *pol;
      return Message(std::move(m));
    }
    case Type::kWork: {
      if (d.size() < sizeof(WireHeader) + sizeof(WireWork)) return make_error("work: {} bytes, too short", d.size());
      WireWork w;
      std::memcpy(&w, d.data() + sizeof(WireHeader), sizeof w);
      if (w.unit_count == 0) return make_error("work: no units");
      if (w.unit_count > kMaxWorkUnits) return make_error("work: {} units, at most {}", w.unit_count, kMaxWorkUnits);
      auto b = body_of<WireWork>(d, std::size_t{w.unit_count} * sizeof(std::uint32_t), "work");
      if (!b) return b.error();
      WorkMsg m;
      m.work_id = w.work_id;
      m.deadline_ns = w.deadline_ns;
      m.units.resize(w.unit_count);
      std::memcpy(m.units.data(), d.data() + sizeof(WireHeader) + sizeof w, w.unit_count * sizeof(std::uint32_t));
      return Message(std::move(m));
    }
    case Type::kGrant: {
      auto b = body_of<WireGrant>(d, 0, "grant");
      if (!b) return b.error();
      if (b->count == 0) return make_error("grant: count is 0");
      if (b->successor > 1) return make_error("grant.successor: {} is not 0 or 1", b->successor);
      if (b->not_before_ns != 0 && b->not_before_ns > b->start_by_ns)
        return make_error("grant.not_before_ns: {} is after start_by_ns {}", b->not_before_ns, b->start_by_ns);
      GrantMsg m{b->grant_id, b->work_id, b->first,  b->count,       b->bytes,
                 b->start_by_ns, b->sent_ns, b->successor == 1, b->not_before_ns};
      auto chunk = chunk_bytes_of(b->chunk_shift, "grant.chunk_shift");
      if (!chunk) return chunk.error();
      m.chunk_bytes = *chunk;
      return Message(m);
    }
    case Type::kStart: {
      auto b = body_of<WireStart>(d, 0, "start");
      if (!b) return b.error();
      return Message(StartMsg{b->grant_id});
    }
    case Type::kDone: {
      auto b = body_of<WireDone>(d, 0, "done");
      if (!b) return b.error();
      if (b->measured_ns > kMaxDurationNs)
        return make_error("done.measured_ns: {} exceeds an hour", b->measured_ns);
      return Message(DoneMsg{b->grant_id, b->measured_ns});
    }
    case Type::kDiscard: {
      auto b = body_of<WireDiscard>(d, 0, "discard");
      if (!b) return b.error();
      return Message(DiscardMsg{b->grant_id});
    }
    case Type::kBye: {
      auto b = body_of<WireBye>(d, 0, "bye");
      if (!b) return b.error();
      if (b->reason > 3) return make_error("bye.reason: {} out of range", b->reason);
      auto text = get_string(b->text, "bye.text");
      if (!text) return text.error();
      return Message(ByeMsg{static_cast<ByeReason>(b->reason), *text});
    }
  }
  return make_error("message: unknown type {}", h.type);
}

}  // namespace ripple::engine

// The interposer's configuration and messages (cuhooks/config.h).
#include "cuhooks/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace ripple::cuhook {

void say(const char* fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "ripple-cuhook[%d]: ", static_cast<int>(getpid()));
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - static_cast<std::size_t>(n) - 1, fmt, ap);
  va_end(ap);
  n = std::min<int>(n, static_cast<int>(sizeof buf) - 2);
  buf[n++] = '\n';
  ssize_t w = write(2, buf, static_cast<std::size_t>(n));
  (void)w;
}

std::string env_str(const char* k, const std::string& def) {
  const char* v = getenv(k);
  return v && *v ? std::string(v) : def;
}
std::uint64_t env_u64(const char* k, std::uint64_t def) {
  const char* v = getenv(k);
  if (!v || !*v) return def;
  char* end = nullptr;
  unsigned long long x = strtoull(v, &end, 0);
  if (end == v || *end) {
    say("ignoring %s=%s: not a number", k, v);
    return def;
  }
  return x;
}

// Opens a file the interposer writes (RIPPLE_CUHOOK_STATS, RIPPLE_RECORD) without
// following a symlink at its last component (O_NOFOLLOW): a link planted there by
// another user would otherwise have the engine's process overwrite or append to the
// file it names. Only a regular file is written (a FIFO or a device is refused, opened
// O_NONBLOCK so a FIFO cannot block us); truncated after that check, not by O_TRUNC.
// Says why in one line when it refuses.
FILE* open_output(const char* what, const std::string& path, bool append) {
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (append ? O_APPEND : 0), 0644);
  if (fd < 0) {
    if (errno == ELOOP) say("not writing the %s file %s: it is a symlink", what, path.c_str());
    else say("cannot write the %s file %s: %s", what, path.c_str(), strerror(errno));
    return nullptr;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    say("not writing the %s file %s: not a regular file", what, path.c_str());
    ::close(fd);
    return nullptr;
  }
  if ((!append && ::ftruncate(fd, 0) != 0) || ::fcntl(fd, F_SETFL, append ? O_APPEND : 0) != 0) {
    say("cannot write the %s file %s: %s", what, path.c_str(), strerror(errno));
    ::close(fd);
    return nullptr;
  }
  FILE* f = ::fdopen(fd, append ? "a" : "w");
  if (f == nullptr) ::close(fd);
  return f;
}

static std::string program_name() {
  char buf[64] = {};
  FILE* f = fopen("/proc/self/comm", "re");
  if (f) {
    if (fgets(buf, sizeof buf, f) == nullptr) buf[0] = 0;
    fclose(f);
  }
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "cuda" : s;
}

Config read_config() {
  Config c;
  c.off = env_str("RIPPLE_CUHOOK", "on") == "off";
  c.engine = env_str("RIPPLE_ENGINE", program_name()).substr(0, engine::kNameBytes - 1);
  const std::string kind = env_str("RIPPLE_KIND", "best-effort");
  if (kind == "deadline-bound") c.kind = engine::Kind::kDeadlineBound;
  else if (kind != "best-effort") say("RIPPLE_KIND=%s is neither best-effort nor deadline-bound: using best-effort", kind.c_str());
  c.period_ns = env_u64("RIPPLE_PERIOD_MS", 0) * 1000000ull;
  c.deadline_ns = env_u64("RIPPLE_DEADLINE_MS", 0) * 1000000ull;
  c.socket = env_str("RIPPLE_SOCKET", c.socket);
  const std::string fail = env_str("RIPPLE_FAIL", "");
  if (fail == "open") c.fail = Fail::kOpen;
  else if (fail == "closed") c.fail = Fail::kClosed;
  else if (!fail.empty()) say("RIPPLE_FAIL=%s is neither open nor closed: the agent decides", fail.c_str());
  c.profile_path = env_str("RIPPLE_PROFILE", "");
  c.nvtx_pattern = env_str("RIPPLE_NVTX_PATTERN", c.nvtx_pattern);
  const std::string b = env_str("RIPPLE_BOUNDARIES", "nvtx,profile,copy,graph,api");
  auto has = [&](const char* w) { return ("," + b + ",").find(std::string(",") + w + ",") != std::string::npos; };
  c.b_nvtx = has("nvtx"), c.b_profile = has("profile"), c.b_copy = has("copy"), c.b_graph = has("graph"), c.b_api = has("api");
  c.copy_min_bytes = env_u64("RIPPLE_COPY_MIN_BYTES", c.copy_min_bytes);
  c.unit_bytes = env_u64("RIPPLE_UNIT_BYTES", 0);
  c.graph_bytes = env_u64("RIPPLE_GRAPH_BYTES", 0);
  c.comm_prefix = env_str("RIPPLE_COMM_PREFIX", c.comm_prefix);
  c.stats_path = env_str("RIPPLE_CUHOOK_STATS", "");
  c.record_path = env_str("RIPPLE_RECORD", "");
  c.stats_ms = static_cast<int>(std::min<std::uint64_t>(env_u64("RIPPLE_CUHOOK_STATS_MS", 0), 3'600'000));
  if (const char* t = getenv("RIPPLE_GRANT_TIMEOUT_MS"); t && *t)
    c.grant_timeout_ms = static_cast<int>(std::min<std::uint64_t>(env_u64("RIPPLE_GRANT_TIMEOUT_MS", 0), 86'400'000));
  const std::uint64_t reconnect = env_u64("RIPPLE_RECONNECT_MS", 500);
  c.reconnect_ms = static_cast<int>(std::clamp(reconnect, kMinReconnectMs, kMaxReconnectMs));
  if (static_cast<std::uint64_t>(c.reconnect_ms) != reconnect)
    say("RIPPLE_RECONNECT_MS=%llu is outside [%llu, %llu]: using %d", static_cast<unsigned long long>(reconnect),
        static_cast<unsigned long long>(kMinReconnectMs), static_cast<unsigned long long>(kMaxReconnectMs),
        c.reconnect_ms);
  c.agent_uid = static_cast<uid_t>(std::min<std::uint64_t>(env_u64("RIPPLE_AGENT_UID", 0), 4294967294ull));
  c.learn = env_str("RIPPLE_LEARN", "on") != "off";
  c.chunk_set = getenv("RIPPLE_CHUNK_BYTES") && *getenv("RIPPLE_CHUNK_BYTES");
  c.chunk_bytes = env_u64("RIPPLE_CHUNK_BYTES", c.chunk_bytes);
  if (c.chunk_bytes != 0 && (c.chunk_bytes < kMinChunkBytes || c.chunk_bytes > kMaxChunkBytes)) {
    const std::uint64_t given = std::exchange(c.chunk_bytes, std::clamp(c.chunk_bytes, kMinChunkBytes, kMaxChunkBytes));
    say("RIPPLE_CHUNK_BYTES=%llu is outside [%llu, %llu] (0: off): using %llu", static_cast<unsigned long long>(given),
        static_cast<unsigned long long>(kMinChunkBytes), static_cast<unsigned long long>(kMaxChunkBytes),
        static_cast<unsigned long long>(c.chunk_bytes));
  }
  c.chunk_hold_ms = static_cast<int>(std::min<std::uint64_t>(env_u64("RIPPLE_CHUNK_HOLD_MS", 60000), 86'400'000));
  // Capped at 1 s: a work spans at most ~1 s of the engine's passes (what is announced and
  // never run when the engine stops mid-work, at most kMaxWorkUnits positions anyway).
  c.min_work_ns = std::min<std::uint64_t>(env_u64("RIPPLE_MIN_WORK_MS", kDefaultMinWorkMs), 1000) * 1'000'000ull;
  const std::string ahead = env_str("RIPPLE_GRANT_AHEAD", "on");
  c.grant_ahead = ahead != "off";
  if (ahead != "on" && ahead != "off") say("RIPPLE_GRANT_AHEAD=%s is neither on nor off: using on", ahead.c_str());
  return c;
}

}  // namespace ripple::cuhook

#include "agent/tracer/spec.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "agent/tracer/elf_symbols.h"
#include "agent/tracer/threads.h"

namespace ripple::tracer {
namespace {

// The kinds a wait list names (RIPPLE_WAIT_KINDS), first in the order of the bits.
#define RIPPLE_WAIT_KIND_ENTRY(name, NAME, bit) {#name, RIPPLE_WAIT_##NAME},
const std::vector<std::pair<std::string, uint32_t>> kWaitKinds = {RIPPLE_WAIT_KINDS(RIPPLE_WAIT_KIND_ENTRY)};
#undef RIPPLE_WAIT_KIND_ENTRY

// The kinds, and the syscall names a wait list also accepts for them.
const std::map<std::string, uint32_t> kWaitNames = [] {
  std::map<std::string, uint32_t> m(kWaitKinds.begin(), kWaitKinds.end());
  m.insert({{"epoll_wait", RIPPLE_WAIT_EPOLL}, {"ppoll", RIPPLE_WAIT_POLL}, {"pselect", RIPPLE_WAIT_SELECT}});
  return m;
}();

std::string known_wait_kinds() {
  std::string s;
  for (const auto& [name, bit] : kWaitKinds) s += (s.empty() ? "" : ", ") + name;
  return s;
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

const std::map<std::string, uint32_t>& wait_names() { return kWaitNames; }
const std::vector<std::pair<std::string, uint32_t>>& wait_kinds() { return kWaitKinds; }

Result<uint32_t> parse_wait_list(const std::string& list) {
  uint32_t mask = 0;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto it = kWaitNames.find(item);
    if (it == kWaitNames.end())
      return make_error("unknown period-wait syscall '{}' (known: {})", item, known_wait_kinds());
    mask |= it->second;
  }
  if (mask == 0) return make_error("empty period-wait syscall list");
  return mask;
}

Status validate_spec(PtSpec& spec) {
  std::string who;
  switch (spec.match) {
    case MatchKind::kPid:
      if (spec.pid <= 0 || !process_exists(spec.pid))
        return make_error("no such process: pid {}", spec.pid);
      who = "pid " + std::to_string(spec.pid);
      if (spec.name.empty()) spec.name = "pid" + std::to_string(spec.pid);
      break;
    case MatchKind::kExe: {
      char real[PATH_MAX];
      if (!realpath(spec.exe.c_str(), real))
        return make_errno_error(-errno, "executable {}: {}", spec.exe, std::strerror(errno));
      auto id = executable_id(real);
      if (!id) return id.error();
      spec.exe = real;
      who = spec.exe;
      if (spec.name.empty()) spec.name = basename_of(spec.exe);
      break;
    }
    case MatchKind::kComm:
      if (spec.comm.empty()) return make_error("empty comm");
      if (spec.comm.size() >= RIPPLE_COMM_LEN)
        return make_error("comm '{}' is longer than {} characters (the kernel keeps {})",
                          spec.comm, RIPPLE_COMM_LEN - 1, RIPPLE_COMM_LEN - 1);
      who = "comm " + spec.comm;
      if (spec.name.empty()) spec.name = spec.comm;
      break;
  }
  if (spec.mode == Mode::kPeriodWait) {
    if (spec.wait_mask == 0) return make_error("{}: empty period-wait syscall list", who);
    if (!spec.release_symbol.empty() || !spec.complete_symbol.empty())
      return make_error("{}: release/complete symbols need uprobe mode", who);
    return Status::Ok();
  }
  // Uprobe mode: resolve "SYM" or "PATH:SYM" against a binary.
  if (spec.release_symbol.empty()) return make_error("{}: uprobe mode needs a release symbol", who);
  auto resolve = [&](std::string& sym) -> Status {
    std::string path, name = sym;
    auto colon = sym.rfind(':');
    if (colon != std::string::npos && sym.find('/') == 0) {
      path = sym.substr(0, colon);
      name = sym.substr(colon + 1);
    } else if (spec.match == MatchKind::kExe) {
      path = spec.exe;
    } else if (spec.match == MatchKind::kPid) {
      auto p = process_exe_path(spec.pid);
      if (!p) return make_error("pid {}: cannot read /proc/{}/exe", spec.pid, spec.pid);
      path = *p;
    } else {
      return make_error("{}: a uprobe for comm-matched threads needs /path/to/binary:{}", who,
                        sym);
    }
    auto fn = find_function(path, name);
    if (!fn) return fn.error();
    sym = fn->path + ":" + fn->symbol;
    return Status::Ok();
  };
  if (auto s = resolve(spec.release_symbol); !s) return s;
  if (!spec.complete_symbol.empty())
    if (auto s = resolve(spec.complete_symbol); !s) return s;
  return Status::Ok();
}

}  // namespace ripple::tracer

// ripple-profile: unit catalogs for libripple-cuhook.so.
//
//   ripple-profile model DIR [-o OUT.json]
//       per-unit bytes from a model directory (config.json + safetensors headers)
//   ripple-profile record [-o OUT.json] [--catalog MODEL.json] [--nvtx-pattern RE] -- CMD...
//       runs CMD once under the interposer in record mode and writes, per unit (found by
//       NVTX ranges or the explicit API), its kernel sequence and median GPU time, merged
//       into the model catalog when one is given. The result, passed to ripple-run
//       --profile, lets the hook find the same units by kernel sequence alone.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuhooks/profile.h"
#include "tools/ripple-profile/hook_path.h"
#include "tools/ripple-profile/model_catalog.h"

namespace {

using ripple::cuhook::Profile;
using ripple::cuhook::ProfileUnit;

int usage(const char* why) {
  if (why) std::fprintf(stderr, "ripple-profile: %s\n", why);
  std::fprintf(stderr,
               "usage: ripple-profile model DIR [-o OUT.json]\n"
               "       ripple-profile record [-o OUT.json] [--catalog MODEL.json] [--nvtx-pattern RE] -- CMD...\n");
  return 2;
}

int emit(const Profile& p, const std::string& out) {
  const std::string text = ripple::cuhook::profile_to_json(p);
  if (out.empty() || out == "-") {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::ofstream f(out);
  if (!(f << text)) {
    std::fprintf(stderr, "ripple-profile: cannot write %s\n", out.c_str());
    return 1;
  }
  return 0;
}

int record(int argc, char** argv, int i) {
  std::string out, catalog, pattern;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") { ++i; break; }
    if ((a == "-o" || a == "--catalog" || a == "--nvtx-pattern") && i + 1 < argc) {
      (a == "-o" ? out : a == "--catalog" ? catalog : pattern) = argv[++i];
    } else {
      return usage(("record: unknown option '" + a + "'").c_str());
    }
  }
  if (i >= argc) return usage("record: no command after --");
  Profile base;
  if (!catalog.empty()) {
    auto p = ripple::cuhook::load_profile(catalog);
    if (!p) return std::fprintf(stderr, "ripple-profile: --catalog: %s\n", p.error().message.c_str()), 2;
    base = std::move(*p);
  }
  const std::string hook = ripple::cuhook::hook_library_path();
  char trace[] = "/tmp/ripple-record-XXXXXX";
  int fd = mkstemp(trace);
  if (fd < 0) return std::fprintf(stderr, "ripple-profile: mkstemp: %s\n", std::strerror(errno)), 1;
  close(fd);
  pid_t pid = fork();
  if (pid == 0) {
    const char* old = getenv("LD_PRELOAD");
    std::string preload = hook + (old && *old ? ":" + std::string(old) : "");
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", hook.c_str(), 1);
    setenv("RIPPLE_RECORD", trace, 1);
    setenv("RIPPLE_BOUNDARIES", "nvtx,api", 1);
    if (!pattern.empty()) setenv("RIPPLE_NVTX_PATTERN", pattern.c_str(), 1);
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "ripple-profile: cannot run '%s': %s\n", argv[i], std::strerror(errno));
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "ripple-profile: '%s' failed (status %d); nothing written\n", argv[i], st);
    unlink(trace);
    return 1;
  }
  // The trace: {"u":unit} begins a unit, {"e":1} ends it, {"k":kernel} a launch, {"g":unit,"ns":N} a time.
  std::ifstream in(trace);
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> kernels;
  std::map<std::string, std::vector<std::uint64_t>> times;
  std::map<std::string, bool> complete;
  std::string cur, line;
  std::size_t outside = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("u")) {
      if (!cur.empty()) complete[cur] = true;
      cur = j["u"].get<std::string>();
      if (!kernels.count(cur)) order.push_back(cur), kernels[cur];
    } else if (j.contains("e")) {
      if (!cur.empty()) complete[cur] = true;
      cur.clear();
    } else if (j.contains("k")) {
      if (cur.empty()) ++outside;
      else if (!complete[cur]) kernels[cur].push_back(j["k"].get<std::string>());
    } else if (j.contains("g")) {
      times[j["g"].get<std::string>()].push_back(j.value("ns", std::uint64_t{0}));
    }
  }
  unlink(trace);
  if (order.empty()) {
    std::fprintf(stderr, "ripple-profile: no unit boundary seen (no NVTX range matched and no "
                         "ripple_cuhook_unit_begin); is NVTX enabled in the engine?\n");
    return 1;
  }
  Profile p = base;
  if (p.model.empty()) p.model = argv[i];
  for (const auto& name : order) {
    int u = p.find(name);
    if (u < 0) {
      p.units.push_back(ProfileUnit{name, "other", 0, 0, 0, {}});
      u = static_cast<int>(p.units.size()) - 1;
    }
    auto& pu = p.units[static_cast<std::size_t>(u)];
    pu.kernels = kernels[name];
    auto& t = times[name];
    if (!t.empty()) {
      std::sort(t.begin(), t.end());
      pu.gpu_ns = t[t.size() / 2];
    }
  }
  std::fprintf(stderr, "ripple-profile: recorded %zu unit(s); %zu launch(es) outside units\n", order.size(), outside);
  return emit(p, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(nullptr);
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") return usage(nullptr), 0;
  if (cmd == "model") {
    if (argc < 3) return usage("model: DIR is required");
    std::string out;
    for (int i = 3; i < argc; ++i) {
      if (std::string(argv[i]) == "-o" && i + 1 < argc) out = argv[++i];
      else return usage(("model: unknown argument '" + std::string(argv[i]) + "'").c_str());
    }
    auto p = ripple::cuhook::catalog_from_model_dir(argv[2]);
    if (!p) {
      std::fprintf(stderr, "ripple-profile: %s\n", p.error().message.c_str());
      return 1;
    }
    return emit(*p, out);
  }
  if (cmd == "record") return record(argc, argv, 2);
  return usage(("unknown command '" + cmd + "'").c_str());
}

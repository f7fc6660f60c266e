// ripple-profile: unit catalogs for libripple-cuhook.so.
//
//   ripple-profile model DIR|FILE.gguf [-o OUT.json]
//       per-unit bytes from a model directory (config.json + safetensors headers) or a
//       GGUF file (llama.cpp; its header: metadata and tensor infos)
//   ripple-profile record [-o OUT.json] [--catalog MODEL.json] [--nvtx-pattern RE] -- CMD...
//       runs CMD once under the interposer in record mode and writes, per unit (found by
//       NVTX ranges or the explicit API), its kernel sequence, median GPU time and, where
//       the catalog gives no bytes, its bytes: the median over the unit's occurrences of
//       the host<->device copy bytes issued while one occurrence was open (any thread,
//       any stream). Merged into the model catalog when one is given; a summary table
//       (unit, occurrences, bytes, source, median GPU time) goes to stderr. The result,
//       passed to ripple-run --profile, lets the hook find the same units by kernel
//       sequence alone and announce whole passes with those bytes.
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
#include "ripple/cli.h"
#include "tools/cli/ripple-profile/hook_path.h"
#include "tools/cli/ripple-profile/model_catalog.h"

namespace {

using ripple::cuhook::Profile;
using ripple::cuhook::ProfileUnit;

int usage(const char* why) {
  if (why) std::fprintf(stderr, "ripple-profile: %s\n", why);
  std::fprintf(stderr,
               "usage: ripple-profile model DIR|FILE.gguf [-o OUT.json]\n"
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

// Parses a subcommand's options (argv[first, end)): false, the usage said, when one is
// unknown or lacks its value (*rc: the exit status).
bool parse_options(CLI::App& app, const char* cmd, int first, int end, char** argv, int* rc) {
  auto bad = ripple::cli::parse(app, argv, first, end);
  if (!bad) return true;
  const std::string why = bad->needs_value.empty() ? bad->message : "option '" + bad->needs_value + "' needs a value";
  *rc = usage((std::string(cmd) + ": " + why).c_str());
  return false;
}

int record(int argc, char** argv, int i) {
  std::string out, catalog, pattern;
  int end = i;  // the options end at "--"; the command follows it
  while (end < argc && std::strcmp(argv[end], "--") != 0) ++end;
  CLI::App app{"ripple-profile record", "record"};
  ripple::cli::configure(app);
  app.add_option("-o", out);
  app.add_option("--catalog", catalog);
  app.add_option("--nvtx-pattern", pattern);
  if (int rc = 0; !parse_options(app, "record", i, end, argv, &rc)) return rc;
  if (!app.remaining().empty()) return usage(("record: unknown option '" + app.remaining().front() + "'").c_str());
  i = end < argc ? end + 1 : argc;
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
  // The trace: {"u":unit} begins an occurrence of a unit, {"e":1} ends it, {"k":kernel}
  // a launch, {"c":bytes,"d":"h2d"|"d2h"} a host<->device copy issued while a unit was
  // open (the hook writes none outside units), {"g":unit,"ns":N} a unit's GPU time.
  std::ifstream in(trace);
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> kernels;
  std::map<std::string, std::vector<std::uint64_t>> times, copy_bytes;  // per occurrence
  std::map<std::string, bool> complete;
  std::string cur, line;
  std::uint64_t occ_bytes = 0;
  std::size_t outside = 0;
  auto end_occurrence = [&] {
    if (cur.empty()) return;
    complete[cur] = true;
    copy_bytes[cur].push_back(occ_bytes);
    cur.clear();
  };
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("u")) {
      end_occurrence();
      cur = j["u"].get<std::string>();
      occ_bytes = 0;
      if (!kernels.count(cur)) order.push_back(cur), kernels[cur];
    } else if (j.contains("e")) {
      end_occurrence();
    } else if (j.contains("k")) {
      if (cur.empty()) ++outside;
      else if (!complete[cur]) kernels[cur].push_back(j["k"].get<std::string>());
    } else if (j.contains("c")) {
      if (!cur.empty() && j["c"].is_number_unsigned()) occ_bytes += j["c"].get<std::uint64_t>();
    } else if (j.contains("g")) {
      times[j["g"].get<std::string>()].push_back(j.value("ns", std::uint64_t{0}));
    }
  }
  end_occurrence();
  unlink(trace);
  if (order.empty()) {
    std::fprintf(stderr, "ripple-profile: no unit boundary seen (no NVTX range matched and no "
                         "ripple_cuhook_unit_begin); is NVTX enabled in the engine?\n");
    return 1;
  }
  auto median = [](std::vector<std::uint64_t> v) -> std::uint64_t {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Profile p = base;
  if (p.model.empty()) p.model = argv[i];
  std::fprintf(stderr, "ripple-profile: recorded %zu unit(s); %zu launch(es) outside units\n", order.size(), outside);
  std::fprintf(stderr, "%-23s %11s %14s  %-8s %14s\n", "unit", "occurrences", "bytes", "source", "median gpu_ns");
  std::size_t none = 0;
  int last = -1;  // where the previous recorded unit is in p.units
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::string& name = order[k];
    int u = p.find(name);
    // Catalog bytes win; a unit the catalog lacks (or gives 0 bytes) gets its copies'.
    const bool from_catalog = u >= 0 && p.units[static_cast<std::size_t>(u)].bytes > 0;
    if (u < 0) {
      // The profile's unit order is the forward sequence the hook announces: a unit the
      // catalog lacks goes after the previous recorded unit, or before the next recorded
      // unit the catalog has (a vision tower before the decoder), else at the end.
      int at = last + 1;
      if (last < 0) {
        at = static_cast<int>(p.units.size());
        for (std::size_t q = k + 1; q < order.size(); ++q)
          if (int c = p.find(order[q]); c >= 0) {
            at = c;
            break;
          }
      }
      p.units.insert(p.units.begin() + at, ProfileUnit{name, "other", 0, 0, 0, {}});
      u = at;
    }
    last = u;
    auto& pu = p.units[static_cast<std::size_t>(u)];
    pu.kernels = kernels[name];
    pu.gpu_ns = median(times[name]);
    const char* source = "catalog";
    if (!from_catalog) {
      pu.bytes = median(copy_bytes[name]);
      if (pu.total_bytes == 0) pu.total_bytes = pu.bytes;
      source = pu.bytes ? "copies" : "none";
      none += pu.bytes == 0;
    }
    std::fprintf(stderr, "%-23s %11zu %14llu  %-8s %14llu\n", name.c_str(), copy_bytes[name].size(),
                 static_cast<unsigned long long>(pu.bytes), source, static_cast<unsigned long long>(pu.gpu_ns));
  }
  if (none)
    std::fprintf(stderr, "ripple-profile: %zu unit(s) with source 'none' keep bytes 0: no catalog bytes and no "
                         "host<->device copy inside them (their traffic is in GPU memory; zero-copy reads of "
                         "host memory are not seen)\n", none);
  return emit(p, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(nullptr);
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") return usage(nullptr), 0;
  if (cmd == "model") {
    if (argc < 3) return usage("model: DIR or FILE.gguf is required");
    std::string out;
    CLI::App app{"ripple-profile model", "model"};
    ripple::cli::configure(app);
    app.add_option("-o", out);
    if (int rc = 0; !parse_options(app, "model", 3, argc, argv, &rc)) return rc;
    if (!app.remaining().empty()) return usage(("model: unknown argument '" + app.remaining().front() + "'").c_str());
    auto p = ripple::cuhook::catalog_from_model(argv[2]);
    if (!p) {
      std::fprintf(stderr, "ripple-profile: %s\n", p.error().message.c_str());
      return 1;
    }
    return emit(*p, out);
  }
  if (cmd == "record") return record(argc, argv, 2);
  return usage(("unknown command '" + cmd + "'").c_str());
}

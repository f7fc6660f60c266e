// ripple-run: runs an unmodified CUDA program under libripple-cuhook.so.
//
//   ripple-run --engine NAME [--kind best-effort|deadline-bound] [--socket PATH]
//              [--profile CATALOG.json] [--fail open|closed] [--nvtx-pattern RE] -- CMD...
//
// Sets LD_PRELOAD (prepended), NVTX_INJECTION64_PATH (layer ranges reach the hook),
// RIPPLE_ENGINE/KIND/SOCKET/PROFILE/FAIL, then execs CMD. Documentation/cuhook.md.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuhooks/profile.h"
#include "ripple/cli.h"
#include "tools/cli/ripple-profile/hook_path.h"

namespace {

int usage(const char* why) {
  if (why) std::fprintf(stderr, "ripple-run: %s\n", why);
  std::fprintf(stderr,
               "usage: ripple-run --engine NAME [--kind best-effort|deadline-bound] [--socket PATH]\n"
               "                  [--profile CATALOG.json] [--fail open|closed] [--nvtx-pattern RE]\n"
               "                  [--period-ms N --deadline-ms N] -- CMD [ARGS...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string engine, kind = "best-effort", socket, profile, fail, pattern, period, deadline;
  // The options end at "--"; the command follows it untouched (its own options included).
  int i = 1;
  while (i < argc && std::strcmp(argv[i], "--") != 0) ++i;
  const int options_end = i;
  if (i < argc) ++i;
  CLI::App app{"ripple-run", "ripple-run"};
  ripple::cli::configure(app);
  bool help = false;
  app.add_flag("-h,--help", help);
  app.add_option("--engine", engine);
  app.add_option("--kind", kind);
  app.add_option("--socket", socket);
  app.add_option("--profile", profile);
  app.add_option("--fail", fail);
  app.add_option("--nvtx-pattern", pattern);
  app.add_option("--period-ms", period);
  app.add_option("--deadline-ms", deadline);
  if (auto bad = ripple::cli::parse(app, argv, 1, options_end))
    return usage(bad->needs_value.empty() ? bad->message.c_str() : ("option '" + bad->needs_value + "' needs a value").c_str());
  if (help) return usage(nullptr), 0;
  if (!app.remaining().empty()) return usage(("unknown option '" + app.remaining().front() + "'").c_str());
  if (engine.empty()) return usage("--engine NAME is required");
  if (engine.size() >= 32) return usage("--engine: the name is longer than 31 bytes");
  if (kind != "best-effort" && kind != "deadline-bound")
    return usage(("--kind '" + kind + "': expected best-effort or deadline-bound").c_str());
  if (!fail.empty() && fail != "open" && fail != "closed")
    return usage(("--fail '" + fail + "': expected open or closed").c_str());
  if (!pattern.empty()) {
    auto re = ripple::cuhook::NvtxPattern::compile(pattern);
    if (!re) return usage(("--nvtx-pattern '" + pattern + "': not a valid regular expression (" + re.error().message + ")").c_str());
  }
  if (i >= argc) return usage("no command after --");
  if (!profile.empty()) {
    auto p = ripple::cuhook::load_profile(profile);
    if (!p) {
      std::fprintf(stderr, "ripple-run: --profile: %s\n", p.error().message.c_str());
      return 2;
    }
  }
  const std::string hook = ripple::cuhook::hook_library_path();
  if (access(hook.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "ripple-run: cannot read the interposer %s (set RIPPLE_CUHOOK_LIB)\n", hook.c_str());
    return 2;
  }
  const char* old = getenv("LD_PRELOAD");
  std::string preload = hook + (old && *old ? ":" + std::string(old) : "");
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", hook.c_str(), 1);
  setenv("RIPPLE_ENGINE", engine.c_str(), 1);
  setenv("RIPPLE_KIND", kind.c_str(), 1);
  if (!socket.empty()) setenv("RIPPLE_SOCKET", socket.c_str(), 1);
  if (!profile.empty()) setenv("RIPPLE_PROFILE", profile.c_str(), 1);
  if (!fail.empty()) setenv("RIPPLE_FAIL", fail.c_str(), 1);
  if (!pattern.empty()) setenv("RIPPLE_NVTX_PATTERN", pattern.c_str(), 1);
  if (!period.empty()) setenv("RIPPLE_PERIOD_MS", period.c_str(), 1);
  if (!deadline.empty()) setenv("RIPPLE_DEADLINE_MS", deadline.c_str(), 1);
  execvp(argv[i], argv + i);
  std::fprintf(stderr, "ripple-run: cannot run '%s': %s\n", argv[i], std::strerror(errno));
  return 127;
}

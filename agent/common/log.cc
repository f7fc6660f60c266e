#include "agent/common/log.h"

#include <bpf/libbpf.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ripple::log {
namespace {

std::shared_ptr<spdlog::logger>& instance() {
  static std::shared_ptr<spdlog::logger> l = [] {
    auto lg = std::make_shared<spdlog::logger>(
        "ripple", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    lg->set_pattern("%^%L%$ %H:%M:%S.%f %s:%# %v");
    lg->set_level(spdlog::level::info);
    return lg;
  }();
  return l;
}

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
  std::string_view line(buf, n > 0 ? std::min<size_t>(n, sizeof(buf) - 1) : 0);
  while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  auto lvl = level == LIBBPF_WARN ? spdlog::level::warn : spdlog::level::debug;
  instance()->log(lvl, "libbpf: {}", line);
  return n;
}

}  // namespace

void init(std::string_view level) {
  std::string lv(level);
  if (lv.empty()) {
    const char* env = std::getenv("RIPPLE_LOG_LEVEL");
    lv = env ? env : "info";
  }
  instance()->set_level(spdlog::level::from_str(lv));
}

void set_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  instance()->sinks().clear();
  instance()->sinks().push_back(std::move(sink));
}

spdlog::logger& logger() { return *instance(); }

void route_libbpf() { libbpf_set_print(libbpf_print); }

}  // namespace ripple::log

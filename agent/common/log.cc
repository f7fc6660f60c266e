#include "ripple/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

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

}  // namespace ripple::log

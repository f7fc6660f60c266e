// One logging header over spdlog (oomd Log.h style).
//
// RIPPLE_LOG_{DEBUG,INFO,WARN,ERROR}(fmt, args...) log with file:line through
// the "ripple" logger. init() reads the level once (config or RIPPLE_LOG_LEVEL);
// tests inject their own sink with set_sink(). libbpf's own messages are routed
// here by the tracer (tracer::route_libbpf_log(), agent/tracer/tracer.h).
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

namespace ripple::log {

// Creates the "ripple" logger writing to stderr at `level` ("debug", "info",
// "warn", "error", "off"); an empty level reads RIPPLE_LOG_LEVEL (default info).
void init(std::string_view level = {});
// Replaces the logger's sink (tests capture output this way).
void set_sink(std::shared_ptr<spdlog::sinks::sink> sink);
spdlog::logger& logger();

}  // namespace ripple::log

#define RIPPLE_LOG_AT(lvl, ...) \
  SPDLOG_LOGGER_CALL(&::ripple::log::logger(), lvl, __VA_ARGS__)
#define RIPPLE_LOG_DEBUG(...) RIPPLE_LOG_AT(spdlog::level::debug, __VA_ARGS__)
#define RIPPLE_LOG_INFO(...) RIPPLE_LOG_AT(spdlog::level::info, __VA_ARGS__)
#define RIPPLE_LOG_WARN(...) RIPPLE_LOG_AT(spdlog::level::warn, __VA_ARGS__)
#define RIPPLE_LOG_ERROR(...) RIPPLE_LOG_AT(spdlog::level::err, __VA_ARGS__)

// CLI11 set up the way Ripple's hand-documented tools need it (ripple-run, ripple-profile,
// ripple-llm): each prints its own usage and its own one-line errors, so CLI11 only reads
// the command line. No CLI11 help flag (the tool adds -h,--help and prints its usage); a
// repeated option takes its last value; an unknown argument is left in app.remaining()
// for the tool to name.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ripple::cli {

// Why a command line did not parse: the option whose value is missing, or CLI11's message.
struct ParseFailure {
  std::string needs_value;  // e.g. "--engine"; empty for any other failure
  std::string message;      // CLI11's text
};

inline void configure(CLI::App& app) {
  app.set_help_flag();
  app.allow_extras();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// Parses args (in command-line order) into an app set up by configure().
inline std::optional<ParseFailure> parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ArgumentMismatch& e) {  // "--engine: 1 required TEXT missing"
    const std::string what = e.what();
    return ParseFailure{what.substr(0, what.find(':')), what};
  } catch (const CLI::ParseError& e) {
    return ParseFailure{"", e.what()};
  }
  return std::nullopt;
}

// argv[first, end) of main's arguments.
inline std::optional<ParseFailure> parse(CLI::App& app, char** argv, int first, int end) {
  return parse(app, std::vector<std::string>(argv + first, argv + end));
}

}  // namespace ripple::cli

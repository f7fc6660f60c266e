// Workload mixes as data. See mix.h.
#include "tools/workloads/mix.h"

#include <toml++/toml.h>

#include <set>
#include <sstream>

namespace ripple::workloads {

bool load_mix(const std::string& path, Mix* mix, std::string* err) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << path << ":" << e.source().begin.line << ": " << e.description();
    *err = os.str();
    return false;
  }
  auto fail = [&](const std::string& where, const std::string& what) {
    *err = path + ": " + where + ": " + what;
    return false;
  };
  mix->name = doc["name"].value_or(std::string{});
  if (mix->name.empty()) return fail("name", "missing or not a string");
  const toml::array* tasks = doc["task"].as_array();
  if (tasks == nullptr || tasks->empty()) return fail("task", "no [[task]] entries");
  std::set<std::string> names;
  std::set<int> cores;
  mix->tasks.clear();
  for (size_t i = 0; i < tasks->size(); ++i) {
    const toml::table* t = (*tasks)[i].as_table();
    const std::string where = "task " + std::to_string(i + 1);
    if (t == nullptr) return fail(where, "not a table");
    MixTask mt;
    mt.name = (*t)["name"].value_or(std::string{});
    mt.binary = (*t)["binary"].value_or(std::string{});
    mt.period_ms = (*t)["period_ms"].value_or(0.0);
    mt.deadline_ms = (*t)["deadline_ms"].value_or(0.0);
    mt.core = (*t)["core"].value_or(-1);
    if (mt.name.empty()) return fail(where, "missing name");
    if (mt.binary.empty()) return fail(where + " (" + mt.name + ")", "missing binary");
    if (!(mt.period_ms > 0)) return fail(where + " (" + mt.name + ")", "period_ms must be > 0");
    if (mt.deadline_ms < 0 || mt.deadline_ms > mt.period_ms)
      return fail(where + " (" + mt.name + ")", "deadline_ms must be in [0, period_ms]");
    if (mt.core < 0) return fail(where + " (" + mt.name + ")", "core must be >= 0");
    if (!names.insert(mt.name).second) return fail(where, "duplicate task name '" + mt.name + "'");
    if (!cores.insert(mt.core).second)
      return fail(where + " (" + mt.name + ")", "core " + std::to_string(mt.core) + " used twice");
    if (const toml::array* a = (*t)["args"].as_array()) {
      for (const auto& v : *a) {
        auto s = v.value<std::string>();
        if (!s) return fail(where + " (" + mt.name + ")", "args must be strings");
        mt.args.push_back(*s);
      }
    }
    mix->tasks.push_back(std::move(mt));
  }
  return true;
}

std::vector<std::string> task_argv(const MixTask& t, const std::string& bin_dir, int first_core,
                                   double duration_s, const std::string& log_dir) {
  auto num = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  std::vector<std::string> argv;
  argv.push_back(t.binary.find('/') == std::string::npos && !bin_dir.empty() ? bin_dir + "/" + t.binary
                                                                             : t.binary);
  argv.insert(argv.end(), {"--period-ms", num(t.period_ms), "--core", std::to_string(first_core + t.core),
                           "--duration-s", num(duration_s)});
  if (t.deadline_ms > 0) argv.insert(argv.end(), {"--deadline-ms", num(t.deadline_ms)});
  if (!log_dir.empty()) argv.insert(argv.end(), {"--log", log_dir + "/" + t.name + ".csv"});
  argv.insert(argv.end(), t.args.begin(), t.args.end());
  return argv;
}

}  // namespace ripple::workloads

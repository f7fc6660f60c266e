// Workload mixes as data. See mix.h.
#include "tools/workloads/mix.h"

#include "tools/workloads/cores.h"

#include "ripple/toml.h"

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
    mt.threads = (*t)["threads"].value_or(0);
    if (mt.name.empty()) return fail(where, "missing name");
    if (mt.binary.empty()) return fail(where + " (" + mt.name + ")", "missing binary");
    if (!(mt.period_ms > 0)) return fail(where + " (" + mt.name + ")", "period_ms must be > 0");
    if (mt.deadline_ms < 0 || mt.deadline_ms > mt.period_ms)
      return fail(where + " (" + mt.name + ")", "deadline_ms must be in [0, period_ms]");
    const std::string named = where + " (" + mt.name + ")";
    if (const auto* c = (*t)["cores"].as_string()) {
      // "0-3": one relative core per thread; core, if given too, must be the first.
      std::string why;
      if (!parse_core_list(c->get(), &mt.cores, &why)) return fail(named, "cores '" + c->get() + "': " + why);
      if (mt.core >= 0 && mt.core != mt.cores[0])
        return fail(named, "core " + std::to_string(mt.core) + " is not the first of cores '" + c->get() + "'");
      if (mt.threads != 0 && static_cast<size_t>(mt.threads) != mt.cores.size())
        return fail(named, "threads = " + std::to_string(mt.threads) + " but cores '" + c->get() + "' names " +
                               std::to_string(mt.cores.size()) + " (one core per thread)");
      mt.core = mt.cores[0];
    } else if ((*t)["cores"]) {
      return fail(named, "cores must be a string like \"0-3\" or \"0,1,2,3\"");
    } else {
      if (mt.core < 0) return fail(named, "core must be >= 0");
      if (mt.threads > 1)
        return fail(named, "threads = " + std::to_string(mt.threads) + " needs cores (one per thread), e.g. cores = \"" +
                               std::to_string(mt.core) + "-" + std::to_string(mt.core + mt.threads - 1) + "\"");
      mt.cores = {mt.core};
    }
    if (mt.threads < 0 || mt.threads > 256) return fail(named, "threads must be in [1, 256]");
    mt.threads = static_cast<int>(mt.cores.size());
    if (!names.insert(mt.name).second) return fail(where, "duplicate task name '" + mt.name + "'");
    for (int c : mt.cores)
      if (!cores.insert(c).second) return fail(named, "core " + std::to_string(c) + " used twice");
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
  argv.insert(argv.end(), {"--period-ms", num(t.period_ms)});
  if (t.threads > 1) {
    std::vector<int> abs;
    for (int c : t.cores) abs.push_back(first_core + c);
    argv.insert(argv.end(), {"--threads", std::to_string(t.threads), "--cores", format_core_list(abs)});
  } else {
    argv.insert(argv.end(), {"--core", std::to_string(first_core + t.core)});
  }
  argv.insert(argv.end(), {"--duration-s", num(duration_s)});
  if (t.deadline_ms > 0) argv.insert(argv.end(), {"--deadline-ms", num(t.deadline_ms)});
  if (!log_dir.empty()) argv.insert(argv.end(), {"--log", log_dir + "/" + t.name + ".csv"});
  argv.insert(argv.end(), t.args.begin(), t.args.end());
  return argv;
}

std::string mix_cores_problem(const Mix& mix, int first_core, const std::vector<int>& allowed) {
  for (const auto& t : mix.tasks) {
    std::vector<int> abs;
    for (int c : t.cores.empty() ? std::vector<int>{t.core} : t.cores) abs.push_back(first_core + c);
    const std::vector<int> bad = cores_not_in(abs, allowed);
    if (bad.empty()) continue;
    return "task " + t.name + " needs CPU" + (abs.size() > 1 ? "s " : " ") + format_core_list(abs) + " (" +
           std::to_string(t.threads) + " thread" + (t.threads > 1 ? "s" : "") + " at --first-core " +
           std::to_string(first_core) + "), but this process may run on CPUs " + format_core_list(allowed) +
           " only";
  }
  return {};
}

}  // namespace ripple::workloads

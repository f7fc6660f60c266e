// Where libripple-cuhook.so is: $RIPPLE_CUHOOK_LIB, else ../lib/ beside this program
// (the build tree and the install layout agree on that).
#pragma once

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace ripple::cuhook {

inline std::string hook_library_path() {
  if (const char* v = getenv("RIPPLE_CUHOOK_LIB"); v && *v) return v;
  char exe[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string(".");
  dir = dir.substr(0, dir.find_last_of('/'));
  std::string p = dir + "/../lib/libripple-cuhook.so";
  char real[PATH_MAX];
  return realpath(p.c_str(), real) ? std::string(real) : p;
}

}  // namespace ripple::cuhook

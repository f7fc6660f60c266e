// agent.trace_file: the admission trace (agent/admission/trace.h) as JSON lines, buffered
// in memory and written every second and at exit, so the event loop never waits on the
// disk between. A failed write is said once, with the count of records it lost then and
// after; the agent goes on scheduling.
#pragma once

#include <cstdint>
#include <string>

#include "agent/admission/trace.h"
#include "ripple/status.h"

namespace ripple::daemon {

class TraceFile {
 public:
  // Creates (truncates) `path`, mode 0644. The error names the path.
  static Result<TraceFile> open(const std::string& path);
  TraceFile(TraceFile&&) noexcept;
  TraceFile& operator=(TraceFile&&) noexcept;
  ~TraceFile();  // writes what is buffered

  void add(const admission::TraceRecord& r, std::string_view name);
  // Writes the buffer; false once a write has failed (then logged once).
  bool flush();
  std::uint64_t records() const { return records_; }
  std::uint64_t lost() const { return lost_; }

 private:
  TraceFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::string buf_;
  std::uint64_t records_ = 0, lost_ = 0, buffered_ = 0;
  bool failed_ = false;
};

}  // namespace ripple::daemon

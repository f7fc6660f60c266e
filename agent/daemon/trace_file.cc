// agent.trace_file (agent/daemon/trace_file.h).
#include "agent/daemon/trace_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "ripple/log.h"

namespace ripple::daemon {

namespace {
// A second's records at a few thousand a second; past it the buffer is written at once.
constexpr std::size_t kFlushBytes = 1 << 20;
}  // namespace

Result<TraceFile> TraceFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_errno_error(-errno, "agent.trace_file: cannot create '{}': {}", path, std::strerror(errno));
  return TraceFile(fd, path);
}

TraceFile::TraceFile(TraceFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)), buf_(std::move(o.buf_)), records_(o.records_),
      lost_(o.lost_), buffered_(o.buffered_), failed_(o.failed_) {}

TraceFile& TraceFile::operator=(TraceFile&& o) noexcept {
  if (this != &o) {
    flush();
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    buf_ = std::move(o.buf_);
    records_ = o.records_;
    lost_ = o.lost_;
    buffered_ = o.buffered_;
    failed_ = o.failed_;
  }
  return *this;
}

TraceFile::~TraceFile() {
  if (fd_ < 0) return;
  flush();
  ::close(fd_);
}

void TraceFile::add(const admission::TraceRecord& r, std::string_view name) {
  if (failed_) {
    ++lost_;
    return;
  }
  buf_ += admission::trace_json_line(r, name);
  buf_ += '\n';
  ++buffered_;
  if (buf_.size() >= kFlushBytes) flush();
}

bool TraceFile::flush() {
  if (fd_ < 0 || failed_) return !failed_;
  std::size_t off = 0;
  while (off < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed_ = true;
      lost_ += buffered_;
      RIPPLE_LOG_WARN("agent.trace_file: writing '{}' failed ({}): the trace stops here, {} record(s) lost so far",
                      path_, n < 0 ? std::strerror(errno) : "no progress", lost_);
      buf_.clear();
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  records_ += buffered_;
  buffered_ = 0;
  buf_.clear();
  return true;
}

}  // namespace ripple::daemon

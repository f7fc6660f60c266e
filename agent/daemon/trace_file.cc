// agent.trace_file (agent/daemon/trace_file.h).
#include "agent/daemon/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "ripple/log.h"

namespace ripple::daemon {

namespace {
// A second's records at a few thousand a second; past it the buffer is written at once.
constexpr std::size_t kFlushBytes = 1 << 20;
}  // namespace

// A regular file only, opened without following a link and without waiting: the trace is
// written from the event loop, and a FIFO there blocked the open (no reader) or a write
// (a reader that does not read), SIGTERM and the control socket with it.
Result<TraceFile> TraceFile::open(const std::string& path) {
  if (struct stat st {}; ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return make_error("agent.trace_file: '{}' is not a regular file", path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) return make_errno_error(-errno, "agent.trace_file: cannot create '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("agent.trace_file: '{}' is not a regular file", path);
  }
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
      // The records wholly written before the failure are in the file; the rest are lost
      // (a record cut by a partial write counts as lost).
      const auto written = static_cast<std::size_t>(std::count(buf_.begin(), buf_.begin() + off, '\n'));
      records_ += written;
      lost_ += buffered_ - written;
      buffered_ = 0;
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

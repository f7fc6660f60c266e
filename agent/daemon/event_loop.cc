#include "agent/daemon/event_loop.h"

#include <liburing.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "ripple/clock.h"

namespace ripple::daemon {

using admission::kNever;

Nanos monotonic_now() { return static_cast<Nanos>(monotonic_ns()); }

Result<std::unique_ptr<EventLoop>> EventLoop::create(unsigned entries, Nanos spin) {
  std::unique_ptr<EventLoop> loop(new EventLoop(spin));
  if (int r = io_uring_queue_init(entries, loop->ring_.get(), 0); r < 0)
    return make_errno_error(r, "failed to set up io_uring: {}", std::strerror(-r));
  loop->ring_ok_ = true;
  return loop;
}

EventLoop::EventLoop(Nanos spin) : ring_(std::make_unique<io_uring>()), spin_(spin) {}

EventLoop::~EventLoop() {
  if (ring_ok_) io_uring_queue_exit(ring_.get());
}

io_uring_sqe* EventLoop::sqe() {
  io_uring_sqe* s = io_uring_get_sqe(ring_.get());
  if (s == nullptr) {  // the submission queue is full: hand it to the kernel first
    io_uring_submit(ring_.get());
    s = io_uring_get_sqe(ring_.get());
  }
  return s;
}

void EventLoop::arm(int fd, std::uint64_t ud) {
  io_uring_sqe* s = sqe();
  io_uring_prep_poll_add(s, fd, POLLIN);
  io_uring_sqe_set_data64(s, ud);
}

void EventLoop::cancel(std::uint64_t ud) {
  io_uring_sqe* s = sqe();
  io_uring_prep_poll_remove(s, ud);
  io_uring_sqe_set_data64(s, 0);  // the removal's own completion is dropped
}

const std::vector<EventLoop::Completion>& EventLoop::wait(Nanos until) {
  io_uring_cqe* cqe = nullptr;
  bool found = false;
  if (spin_until_ > monotonic_now()) {
    if (io_uring_sq_ready(ring_.get()) > 0) io_uring_submit(ring_.get());
    const Nanos end = std::min(spin_until_, until);
    for (;;) {
      if (io_uring_peek_cqe(ring_.get(), &cqe) == 0) {
        found = true;
        break;
      }
      if (monotonic_now() >= end) break;
    }
  }
  if (found) {
    if (io_uring_sq_ready(ring_.get()) > 0) io_uring_submit(ring_.get());
  } else if (until == kNever) {
    io_uring_submit_and_wait(ring_.get(), 1);
  } else {
    const Nanos wait = std::max<Nanos>(0, until - monotonic_now());
    __kernel_timespec ts{wait / 1'000'000'000, wait % 1'000'000'000};
    io_uring_submit_and_wait_timeout(ring_.get(), &cqe, 1, &ts, nullptr);
  }
  unsigned head = 0, seen = 0;
  ready_.clear();
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    if (cqe->user_data != 0) ready_.push_back({cqe->user_data, cqe->res});
  }
  io_uring_cq_advance(ring_.get(), seen);
  if (!ready_.empty() && spin_ > 0) spin_until_ = monotonic_now() + spin_;
  return ready_;
}

}  // namespace ripple::daemon

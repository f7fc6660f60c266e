// ripple-sim event queue: virtual-time events in (time, insertion) order. Events at the
// same time run in the order they were posted, so a run is deterministic. An event that
// may be superseded (a job's predicted completion when the GPU rate changes) carries a
// generation; its owner ignores it when the generation has moved on.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "agent/pricing/types.h"

namespace ripple::sim {

using pricing::Nanos;

struct Event {
  Nanos time = 0;
  std::uint64_t seq = 0;  // insertion order: the tie-break
  std::uint32_t type = 0;
  std::uint32_t a = 0;    // payload: owner index (task, engine)
  std::uint64_t b = 0;    // payload: sequence number, grant id
  std::uint64_t gen = 0;  // payload: generation
};

class EventQueue {
 public:
  void post(Nanos time, std::uint32_t type, std::uint32_t a = 0, std::uint64_t b = 0, std::uint64_t gen = 0) {
    heap_.push(Event{time, next_seq_++, type, a, b, gen});
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    ++popped_;
    return e;
  }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t popped() const { return popped_; }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time != y.time ? x.time > y.time : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_seq_ = 0, popped_ = 0;
};

}  // namespace ripple::sim

// The last `capacity` values in arrival order, also kept sorted so that any order
// statistic is O(1) and an insertion O(capacity) moves (a memmove of <= 200 doubles).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ripple::pricing {

class SortedWindow {
 public:
  explicit SortedWindow(std::size_t capacity) : capacity_(capacity) {
    ring_.reserve(capacity);
    sorted_.reserve(capacity);
  }

  void push(double x) {
    if (ring_.size() < capacity_) {
      ring_.push_back(x);
    } else {
      const double oldest = ring_[head_];
      sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), oldest));
      ring_[head_] = x;
      head_ = (head_ + 1) % capacity_;
    }
    sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), x), x);
  }

  std::size_t size() const { return sorted_.size(); }
  bool empty() const { return sorted_.empty(); }
  // The m-th smallest value, 1 <= m <= size().
  double rank(std::size_t m) const { return sorted_[m - 1]; }

 private:
  std::size_t capacity_;
  std::size_t head_ = 0;  // oldest element of ring_ once full
  std::vector<double> ring_;
  std::vector<double> sorted_;
};

}  // namespace ripple::pricing

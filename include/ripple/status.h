// Recoverable errors: a value or an Error with one human-readable line.
//
// Broken invariants abort (CHECK); failures a caller can act on (bad input,
// a missing kernel feature, a failed syscall) come back as Error, whose
// message names the offending field, file or symbol. gcc 12 has no
// std::expected; this is the small subset we need.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace ripple {

struct Error {
  std::string message;
  int code = 0;  // negative errno where one applies, else 0
};

template <typename... Args>
Error make_error(fmt::format_string<Args...> f, Args&&... args) {
  return Error{fmt::format(f, std::forward<Args>(args)...), 0};
}

template <typename... Args>
Error make_errno_error(int neg_errno, fmt::format_string<Args...> f, Args&&... args) {
  return Error{fmt::format(f, std::forward<Args>(args)...), neg_errno};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}    // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status Ok() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

#define RIPPLE_CHECK(cond)                                                        \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

#define RIPPLE_CHECK_OP(a, op, b)                                                 \
  do {                                                                            \
    const auto& va_ = (a);                                                        \
    const auto& vb_ = (b);                                                        \
    if (!(va_ op vb_)) {                                                          \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s %s %s (%s vs %s)\n", __FILE__, \
                   __LINE__, #a, #op, #b, fmt::to_string(va_).c_str(),          \
                   fmt::to_string(vb_).c_str());                                  \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

#define RIPPLE_CHECK_EQ(a, b) RIPPLE_CHECK_OP(a, ==, b)
#define RIPPLE_CHECK_LE(a, b) RIPPLE_CHECK_OP(a, <=, b)
#define RIPPLE_CHECK_LT(a, b) RIPPLE_CHECK_OP(a, <, b)
#define RIPPLE_CHECK_GE(a, b) RIPPLE_CHECK_OP(a, >=, b)

}  // namespace ripple

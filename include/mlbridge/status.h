// Status and StatusOr: errors as values (no exceptions cross the API).
// Modeled on gRPC's Status: a code and a human-readable message.
#ifndef MLBRIDGE_STATUS_H
#define MLBRIDGE_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace mlbridge {

// Numbering matches gRPC's status codes, so errors map 1:1 across runners.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,    // caller error: bad spec, wrong dtype/shape, bad value
  kDeadlineExceeded = 4,   // a timeout expired
  kNotFound = 5,           // no such feature / file
  kAlreadyExists = 6,
  kPermissionDenied = 7,   // e.g. channel folder not private
  kResourceExhausted = 8,  // frame over the size limit
  kFailedPrecondition = 9, // call in the wrong state (session ended, ...)
  kAborted = 10,           // the model reported an error for this request
  kOutOfRange = 11,
  kUnimplemented = 12,     // format cannot carry this dtype, ...
  kInternal = 13,
  kUnavailable = 14,       // peer gone: EOF, EPIPE, channel never appeared
  kDataLoss = 15,          // malformed or truncated message
};

const char* statusCodeName(StatusCode code);  // "DEADLINE_EXCEEDED", ...

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DEADLINE_EXCEEDED: no reply from the model within 1000 ms"
  std::string toString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status deadlineExceeded(std::string m) { return Status(StatusCode::kDeadlineExceeded, std::move(m)); }
inline Status unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
inline Status dataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status failedPrecondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
inline Status unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status internalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// Either a value or a non-OK Status. Reading the value of an error is a
// programming error; it never aborts: it yields a value-initialized T (types
// that have no default value are asserted on in debug builds).
template <class T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = internalError("StatusOr built from an OK Status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { return valueOrDefault(); }
  const T& value() const& { return valueOrDefault(); }
  T&& value() && { return std::move(valueOrDefault()); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T valueOr(T fallback) const { return ok() ? *value_ : std::move(fallback); }

 private:
  T& valueOrDefault() const {
    if constexpr (std::is_default_constructible<T>::value) {
      if (!value_) value_.emplace();
    } else {
      assert(value_.has_value());
    }
    return *value_;
  }

  Status status_;
  mutable std::optional<T> value_;
};

}  // namespace mlbridge

// Propagate a non-OK Status to the caller.
#define MLBRIDGE_RETURN_IF_ERROR(expr)              \
  do {                                              \
    ::mlbridge::Status mlbridge_status_ = (expr);   \
    if (!mlbridge_status_.ok()) return mlbridge_status_; \
  } while (0)

#endif  // MLBRIDGE_STATUS_H

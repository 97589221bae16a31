// Error values shared by every component: a machine-readable code plus detail.
// The mapping of codes to HTTP status lives in server/errors.cc, nowhere else.
// Plain value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sluice {

enum class ErrorCode {
  kBadRequest,            // malformed JSON or an invalid field
  kUnauthorized,          // no token or an unknown one
  kForbidden,             // token lacks the scope
  kNotFound,              // unknown queue, job, route, or someone else's job
  kMethodNotAllowed,      // known path, wrong verb
  kConflict,              // e.g. cancel of a job that is no longer queued
  kManagedByConfig,       // a change through the API to what the config file declares
  kLeaseLost,             // stale or unknown lease_id
  kPayloadTooLarge,       // body over the limit
  kQueueFull,             // rule 1: bucket capacity
  kDeadlineUnreachable,   // rule 2: estimated start after deadline
  kRateLimited,           // an intake-protection layer refused the request
  kCostExceedsCapacity,   // a job heavier than its bucket can ever hold
  kIdempotencyKeyReused,  // same Idempotency-Key, different body
  kDeadlineInvalid,       // a deadline that can never be met: past, <= 0, before not_before
  kUnsupportedMediaType,  // a Content-Encoding other than identity
  kStorageUnavailable,    // cannot make it durable: fail closed
  kTooManyConnections,    // over --max-connections, or out of file descriptors
  kInternal,              // a bug
};

inline constexpr ErrorCode kAllErrorCodes[] = {ErrorCode::kBadRequest,
                                               ErrorCode::kUnauthorized,
                                               ErrorCode::kForbidden,
                                               ErrorCode::kNotFound,
                                               ErrorCode::kMethodNotAllowed,
                                               ErrorCode::kConflict,
                                               ErrorCode::kManagedByConfig,
                                               ErrorCode::kLeaseLost,
                                               ErrorCode::kPayloadTooLarge,
                                               ErrorCode::kQueueFull,
                                               ErrorCode::kDeadlineUnreachable,
                                               ErrorCode::kRateLimited,
                                               ErrorCode::kCostExceedsCapacity,
                                               ErrorCode::kIdempotencyKeyReused,
                                               ErrorCode::kDeadlineInvalid,
                                               ErrorCode::kUnsupportedMediaType,
                                               ErrorCode::kStorageUnavailable,
                                               ErrorCode::kTooManyConnections,
                                               ErrorCode::kInternal};

// The stable wire name of a code, e.g. "queue_full", and back.
std::string_view ErrorCodeName(ErrorCode code);
std::optional<ErrorCode> ParseErrorCode(std::string_view name);

struct Error {
  ErrorCode code;
  std::string detail;
  std::optional<int64_t> retry_after_s;       // for 429 and 503
  std::optional<int64_t> estimated_start_us;  // for deadline_unreachable
  // Extra response headers, e.g. a limiter's RateLimit fields (rate_limited).
  std::vector<std::pair<std::string, std::string>> headers;
};

inline Error MakeError(ErrorCode code, std::string detail) {
  return Error{code, std::move(detail), {}, {}, {}};
}

// A value or an Error. Small on purpose: ok(), value(), error().
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;

}  // namespace sluice

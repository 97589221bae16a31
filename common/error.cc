#include "common/error.h"

namespace sluice {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest:
      return "bad_request";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kForbidden:
      return "forbidden";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kMethodNotAllowed:
      return "method_not_allowed";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kManagedByConfig:
      return "managed_by_config";
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kPayloadTooLarge:
      return "payload_too_large";
    case ErrorCode::kQueueFull:
      return "queue_full";
    case ErrorCode::kDeadlineUnreachable:
      return "deadline_unreachable";
    case ErrorCode::kRateLimited:
      return "rate_limited";
    case ErrorCode::kCostExceedsCapacity:
      return "cost_exceeds_capacity";
    case ErrorCode::kIdempotencyKeyReused:
      return "idempotency_key_reused";
    case ErrorCode::kDeadlineInvalid:
      return "deadline_invalid";
    case ErrorCode::kUnsupportedMediaType:
      return "unsupported_media_type";
    case ErrorCode::kStorageUnavailable:
      return "storage_unavailable";
    case ErrorCode::kTooManyConnections:
      return "too_many_connections";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

std::optional<ErrorCode> ParseErrorCode(std::string_view name) {
  for (ErrorCode c : kAllErrorCodes) {
    if (ErrorCodeName(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace sluice

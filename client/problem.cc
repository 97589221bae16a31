#include "client/problem.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/time.h"

namespace sluice {

namespace {

constexpr size_t kMaxPlainDetail = 500;

// The code a status means when the body names none sluice knows.
ErrorCode CodeForStatus(int status) {
  switch (status) {
    case 400:
      return ErrorCode::kBadRequest;
    case 401:
      return ErrorCode::kUnauthorized;
    case 403:
      return ErrorCode::kForbidden;
    case 404:
      return ErrorCode::kNotFound;
    case 405:
      return ErrorCode::kMethodNotAllowed;
    case 409:
      return ErrorCode::kConflict;
    case 413:
      return ErrorCode::kPayloadTooLarge;
    case 415:
      return ErrorCode::kUnsupportedMediaType;
    case 429:
      return ErrorCode::kRateLimited;
    case 503:
      return ErrorCode::kStorageUnavailable;
    default:
      return status >= 500 ? ErrorCode::kInternal : ErrorCode::kBadRequest;
  }
}

}  // namespace

std::optional<int64_t> ParseRetryAfter(std::string_view header) {
  // delta-seconds = 1*DIGIT: no sign, not even "-0".
  if (header.empty() || header.front() < '0' || header.front() > '9') return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), v);
  if (ec != std::errc() || end != header.data() + header.size()) return std::nullopt;
  return v;
}

Problem ParseProblem(int status, std::string_view body, std::string_view retry_after_header) {
  using nlohmann::json;
  Problem p;
  p.status = status;
  const json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    auto string_field = [&j](const char* key) {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    p.code = string_field("error");
    p.detail = string_field("detail");
    p.estimated_start = string_field("estimated_start");
    auto it = j.find("retry_after");
    if (it != j.end() && it->is_number_integer() && it->get<int64_t>() >= 0) {
      p.retry_after_s = it->get<int64_t>();
    }
  } else {
    p.detail = std::string(body.substr(0, kMaxPlainDetail));
  }
  if (!p.retry_after_s) p.retry_after_s = ParseRetryAfter(retry_after_header);
  return p;
}

Error ToError(const Problem& problem) {
  const ErrorCode code = ParseErrorCode(problem.code).value_or(CodeForStatus(problem.status));
  Error e = MakeError(code, "HTTP " + std::to_string(problem.status) + ": " + problem.detail);
  e.retry_after_s = problem.retry_after_s;
  e.estimated_start_us = ParseRfc3339(problem.estimated_start);
  return e;
}

bool IsTransient(const Error& e) {
  return e.code == ErrorCode::kStorageUnavailable || e.code == ErrorCode::kQueueFull ||
         e.code == ErrorCode::kRateLimited || e.code == ErrorCode::kTooManyConnections ||
         e.code == ErrorCode::kInternal;
}

}  // namespace sluice

#include "server/errors.h"

#include <nlohmann/json.hpp>

#include "common/utf8.h"

namespace sluice {
namespace {

const char* Title(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 503:
      return "Service Unavailable";
    default:
      return status >= 500 ? "Internal Server Error" : "Error";
  }
}

}  // namespace

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest:
      return 400;
    case ErrorCode::kCostExceedsCapacity:
      return 400;
    case ErrorCode::kIdempotencyKeyReused:
      return 422;
    case ErrorCode::kDeadlineInvalid:
      return 400;
    case ErrorCode::kUnsupportedMediaType:
      return 415;
    case ErrorCode::kUnauthorized:
      return 401;
    case ErrorCode::kForbidden:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kMethodNotAllowed:
      return 405;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kManagedByConfig:
      return 409;
    case ErrorCode::kLeaseLost:
      return 409;
    case ErrorCode::kPayloadTooLarge:
      return 413;
    case ErrorCode::kQueueFull:
      return 429;
    case ErrorCode::kDeadlineUnreachable:
      return 429;
    case ErrorCode::kRateLimited:
      return 429;
    case ErrorCode::kStorageUnavailable:
      return 503;
    case ErrorCode::kTooManyConnections:
      return 503;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

void RenderError(HttpResponse& res, const Error& e) {
  int status = HttpStatusFor(e.code);
  nlohmann::json body = {{"type", "about:blank"},
                         {"title", Title(status)},
                         {"status", status},
                         {"error", ErrorCodeName(e.code)},
                         {"detail", SanitizeUtf8(e.detail)}};
  if (e.retry_after_s) {
    body["retry_after"] = *e.retry_after_s;
    res.set_header("Retry-After", std::to_string(*e.retry_after_s));
  }
  if ((e.code == ErrorCode::kStorageUnavailable || e.code == ErrorCode::kTooManyConnections) &&
      !e.retry_after_s) {
    body["retry_after"] = 1;
    res.set_header("Retry-After", "1");
  }
  for (const auto& [name, value] : e.headers) res.set_header(name, value);
  if (e.code == ErrorCode::kUnauthorized) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"sluice\"");
  }
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/problem+json");
}

nlohmann::json ProblemItem(const Error& e) {
  nlohmann::json item = {
      {"status", HttpStatusFor(e.code)}, {"error", ErrorCodeName(e.code)}, {"detail", e.detail}};
  if (e.retry_after_s) item["retry_after"] = *e.retry_after_s;
  return item;
}

HttpResponse ErrorResponse(const Error& e) {
  HttpResponse res;
  RenderError(res, e);
  return res;
}

}  // namespace sluice

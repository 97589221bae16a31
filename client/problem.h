// How a client reads sluiced's refusals, the one place for it: the problem+json body
// (RFC 9457, with sluice's machine-readable "error" code, "retry_after" and
// "estimated_start"), the Retry-After header, the sluice::Error they mean, and whether
// that error is worth retrying. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace sluice {

// A non-2xx answer, as sluiced (or a proxy in front of it) sent it.
struct Problem {
  int status = 0;
  std::string code;    // problem+json "error", e.g. "queue_full" ("" when there is none)
  std::string detail;  // problem+json "detail"; a body that is not problem+json, cut short
  std::optional<int64_t> retry_after_s;  // body "retry_after", else the Retry-After header
  std::string estimated_start;           // deadline_unreachable: when the job would start
};

// Retry-After as delta-seconds (RFC 9110 10.2.3), the form sluiced sends; nullopt for
// anything else (an HTTP-date from some proxy included: the caller's backoff then rules).
std::optional<int64_t> ParseRetryAfter(std::string_view header);

// Any body at all: one that is not a problem+json object becomes the detail (at most
// 500 bytes of it).
Problem ParseProblem(int status, std::string_view body, std::string_view retry_after_header);

// The Error a refusal means: its code when sluice knows it, else the one its status
// means (503 → kStorageUnavailable, other 5xx → kInternal, 429 → kRateLimited, 404 →
// kNotFound, ...). The detail reads "HTTP <status>: <detail>".
Error ToError(const Problem& problem);

// True for errors worth retrying after a backoff (honouring retry_after_s): the server
// unreachable or unable to make the request durable (kStorageUnavailable), a full
// queue or an intake layer's limit (kQueueFull, kRateLimited), too many connections,
// or a server fault (kInternal). Everything else will fail the same way again.
bool IsTransient(const Error& e);

}  // namespace sluice

// The one place where error codes become HTTP: status, title, problem+json body
// (RFC 9457) with the machine-readable `error` code, and Retry-After / WWW-Authenticate.
// Stateless; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "server/http_types.h"

namespace sluice {

int HttpStatusFor(ErrorCode code);

// Writes `e` into `res` as application/problem+json.
void RenderError(HttpResponse& res, const Error& e);
HttpResponse ErrorResponse(const Error& e);

// `e` as one item's result inside a 200 answer (a batch submit, batch acks): {"status",
// "error", "detail", "retry_after"?}, the fields of its problem+json body that say what
// went wrong.
nlohmann::json ProblemItem(const Error& e);

}  // namespace sluice

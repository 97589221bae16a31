// The one place where error codes become HTTP: status, title, problem+json body
// (RFC 9457) with the machine-readable `error` code, and Retry-After / WWW-Authenticate.
// Stateless; thread-safe.
#pragma once

#include <httplib.h>

#include "common/error.h"

namespace sluice {

int HttpStatusFor(ErrorCode code);

// Writes `e` into `res` as application/problem+json.
void RenderError(httplib::Response& res, const Error& e);

// For responses httplib produced itself (unknown route, body too large) with no body.
void RenderStatusAsError(httplib::Response& res);

}  // namespace sluice

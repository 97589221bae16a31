// The bytes of an HTTP/1.1 response, written in one piece: status line, headers, body.
// The server sends them with one write, where Beast's serializer walks a chain of
// buffer views per response (4.6 µs of the 46 µs a submit cost sluiced, measured with
// perf on bench/intake.sh's load).
#pragma once

#include <string>

#include "server/http_types.h"

namespace sluice {

// Replaces `out` with `res` on the wire: "HTTP/1.1 <status> <reason>", Content-Type
// (when set), the headers in order, Content-Length (the body's, even for HEAD; none for
// 1xx, 204 and 304, which have no body), "Connection: close" when `close`, then the
// body unless `head`. A status outside 100-999 is sent as 500. A CR or LF in a header
// name or value (none is made by the server; a request's header values cannot hold one)
// becomes a space, so no header can split the response.
void WireResponse(const HttpResponse& res, bool close, bool head, std::string* out);

}  // namespace sluice

// Turns a request as Beast parsed it into what handlers see (HttpRequest), refusing
// what RFC 9110/9112 or sluice do not accept before any handler runs: an HTTP/1.1
// request without Host, a request target that is not printable ASCII or not in
// origin or absolute form, a query that does not decode to UTF-8, a Content-Encoding
// other than identity. Absolute-form targets ("http://host/path") are reduced to their
// path and query. Pure; thread-safe.
#pragma once

// clang-format off
#include <utility>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
// clang-format on
#include <optional>
#include <string>

#include "common/error.h"
#include "server/http_types.h"

namespace sluice {

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;

// Fills `out` from `msg`, moving its body, and checks it. `out.path` is always
// printable (ill-formed bytes are replaced), so that a refused request can still be
// logged; on error `out` holds the method, that path and the headers.
Status ReadRequest(BeastRequest& msg, HttpRequest& out);

// What the transport could not read becomes, if it is to be answered at all: nullopt
// when the peer went away or timed out (nothing to answer), else the error to answer
// (413 over `max_body_bytes`, 400 for headers too large or malformed framing).
std::optional<Error> TransportError(const boost::system::error_code& ec, size_t max_body_bytes);

// Fills `out` with what is known of a request the transport refused (method, printable
// path, X-Request-Id), for its answer and its access-log line. `msg` is the parser's
// message once its header was read.
void ReadRefusedRequest(const BeastRequest& msg, HttpRequest& out);

// A capture of the route (percent-decoded path segment) as handlers may use it:
// valid UTF-8 without NUL. Otherwise 400 naming the segment.
Status CheckCaptures(const std::vector<std::string>& captures);

// The method as a metrics label: one of the methods sluice knows, else "other", so
// that hostile methods cannot grow a label set without bound.
std::string_view MethodLabel(std::string_view method);

}  // namespace sluice

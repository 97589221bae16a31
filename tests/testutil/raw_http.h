// A raw HTTP/1.1 client for tests: sends exactly the given bytes to 127.0.0.1:port and
// reads one response (body by Content-Length, chunked, or until close) under a deadline.
// Stateless functions; thread-safe (each call opens its own connection).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::testing {

struct RawResponse {
  // 0 when no complete response arrived; `error` then says why.
  int status = 0;
  std::string status_line;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as sent
  std::string body;
  std::string error;  // empty on success: connect failed, timed out, malformed, ...

  // The first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// Connects, sends `request` as is, and reads one response. A request that starts with
// "HEAD " expects no body. Interim 1xx responses are skipped. Gives up after `timeout`
// (from connect to the end of the response), so a server that never answers fails the
// test instead of hanging it.
RawResponse RawExchange(int port, std::string_view request,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

// A well-formed request: the request line, `Host: 127.0.0.1`, `Connection: close`,
// the `headers` given (each "Name: value", no CRLF), and `Content-Length` when a body
// is given or the method is POST, PUT or PATCH.
std::string BuildRequest(std::string_view method, std::string_view target,
                         const std::vector<std::string>& headers = {}, std::string_view body = {});

}  // namespace sluice::testing

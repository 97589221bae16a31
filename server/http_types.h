// What a handler sees of an HTTP exchange: the request as parsed (headers, query
// parameters, body, the path segments its route captured) and the response it fills.
// The accessor names follow cpp-httplib's, so handlers read the same as its examples.
// Plain values; not thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/encoding.h"

namespace sluice {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string, not percent-decoded
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  std::multimap<std::string, std::string> params;            // query, percent-decoded
  std::string body;
  // [0] the path, then each segment the route captured, percent-decoded.
  std::vector<std::string> matches;
  std::string remote_addr;  // the socket peer
  // The client by address (server/client_ip.h): the peer, or what trusted proxies
  // forwarded; client_key is what per-IP limits key by (an IPv6 client's /64).
  std::string client_ip;
  std::string client_key;
  std::string request_id;  // the client's X-Request-Id if sane, else one of ours

  // Header names compare case-insensitively; the first value wins.
  bool has_header(std::string_view name) const;
  std::string get_header_value(std::string_view name) const;            // "" when absent
  std::string_view get_header_value_view(std::string_view name) const;  // valid while *this is
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  std::string get_param_value(const std::string& name) const;  // "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type;  // empty with an empty body
  std::vector<std::pair<std::string, std::string>> headers;

  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
  void set_content(std::string content, std::string type) {
    body = std::move(content);
    content_type = std::move(type);
  }
  std::string get_header_value(std::string_view name) const;  // "" when absent
};

// Splits "a=1&b=two" into decoded pairs.
std::multimap<std::string, std::string> ParseQuery(std::string_view query);

}  // namespace sluice

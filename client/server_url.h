// A sluice server's URL as clients accept it: "http://host[:port][/]" or "https://...",
// no path, query or credentials (a token travels in the Authorization header only).
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace sluice {

struct ServerUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // an IPv6 literal without its brackets
  int port = 0;
  std::string ToString() const;  // scheme://host:port
};

// nullopt (with `why` filled) when `text` is not such a URL.
std::optional<ServerUrl> ParseServerUrl(const std::string& text, std::string* why);

}  // namespace sluice

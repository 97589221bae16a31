#include "client/server_url.h"

#include <regex>

namespace sluice {

std::string ServerUrl::ToString() const {
  bool bracket = host.find(':') != std::string::npos;  // an IPv6 literal
  return scheme + "://" + (bracket ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<ServerUrl> ParseServerUrl(const std::string& text, std::string* why) {
  static const std::regex kUrl(
      R"(^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}))?/?$)");
  // The bound keeps std::regex, which recurses per character, off deep stacks.
  constexpr size_t kMaxUrl = 300;
  std::smatch m;
  if (text.size() > kMaxUrl || !std::regex_match(text, m, kUrl)) {
    *why = "the server URL must look like http://HOST[:PORT] (no path, no credentials)";
    return std::nullopt;
  }
  ServerUrl url;
  url.scheme = m[1];
  url.host = m[2];
  if (url.host.front() == '[') {
    url.host = url.host.substr(1, url.host.size() - 2);
    if (url.host.find(':') == std::string::npos) {
      *why = "the server URL's [host] must be an IPv6 address";
      return std::nullopt;
    }
  }
  // RFC 1035's bound; it also keeps ToString(), which adds the port, under kMaxUrl.
  if (url.host.size() > 253) {
    *why = "the server URL's host is longer than 253 bytes";
    return std::nullopt;
  }
  url.port = url.scheme == "https" ? 443 : 80;
  if (m[4].matched) url.port = std::stoi(m[4]);
  if (url.port < 1 || url.port > 65535) {
    *why = "the server URL's port must be 1-65535";
    return std::nullopt;
  }
  return url;
}

}  // namespace sluice

#include "server/router.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "common/encoding.h"

namespace sluice {
namespace {

const std::string kGet = "GET";

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.empty() || path[0] != '/') return out;
  size_t start = 1;
  for (;;) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Matches one path segment against one pattern segment; appends a capture.
bool MatchSegment(const std::string& pattern, std::string_view segment,
                  std::vector<std::string>* captures) {
  if (pattern.rfind("{}", 0) != 0) return pattern == segment;
  std::string_view suffix = std::string_view(pattern).substr(2);
  if (suffix.empty()) {
    if (segment.empty() || segment.find(':') != std::string_view::npos) return false;
    captures->push_back(PercentDecode(segment, false));
    return true;
  }
  if (segment.size() <= suffix.size() ||
      segment.compare(segment.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  std::string_view head = segment.substr(0, segment.size() - suffix.size());
  if (head.find(':') != std::string_view::npos) return false;
  captures->push_back(PercentDecode(head, false));
  return true;
}

}  // namespace

bool HttpRequest::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return EqualsNoCase(h.first, name); });
}

std::string HttpRequest::get_header_value(std::string_view name) const {
  return std::string(get_header_value_view(name));
}

std::string_view HttpRequest::get_header_value_view(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsNoCase(k, name)) return v;
  }
  return {};
}

std::string HttpResponse::get_header_value(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsNoCase(k, name)) return v;
  }
  return "";
}

std::string HttpRequest::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

std::multimap<std::string, std::string> ParseQuery(std::string_view query) {
  std::multimap<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    out.emplace(PercentDecode(key, true), PercentDecode(value, true));
  }
  return out;
}

void Router::AddRoute(Route route) {
  std::optional<RouteGroup> group = RouteGroupOf(route.method, route.pattern);
  if (!group) {
    throw std::logic_error("route " + route.method + " " + route.pattern +
                           " is in no route group (server/route_groups.cc)");
  }
  route.group = *group;
  for (std::string_view s : SplitPath(route.pattern)) route.segments.emplace_back(s);
  routes_.push_back(std::move(route));
}

void Router::Add(std::string method, const std::string& pattern, Handler handler) {
  AddRoute(Route{std::move(method), pattern, {}, std::move(handler), nullptr});
}

void Router::AddAsync(std::string method, const std::string& pattern, AsyncHandler handler) {
  AddRoute(Route{std::move(method), pattern, {}, nullptr, std::move(handler)});
}

void Router::AddLongPoll(std::string method, const std::string& pattern, AsyncHandler handler) {
  AddAsync(std::move(method), pattern, std::move(handler));
  routes_.back().long_poll = true;
}

Router::Found Router::Find(const std::string& method, const std::string& path, const Route** route,
                           std::vector<std::string>* captures,
                           std::vector<std::string>* allowed) const {
  const std::vector<std::string_view> segments = SplitPath(path);
  const std::string& wanted = method == "HEAD" ? kGet : method;
  bool path_known = false;
  if (allowed) allowed->clear();
  for (const Route& r : routes_) {
    if (r.segments.size() != segments.size()) continue;
    captures->clear();
    bool match = true;
    for (size_t i = 0; i < segments.size() && match; ++i) {
      match = MatchSegment(r.segments[i], segments[i], captures);
    }
    if (!match) continue;
    if (r.method != wanted) {
      path_known = true;
      if (allowed) {
        allowed->push_back(r.method);
        if (r.method == kGet) allowed->push_back("HEAD");
      }
      continue;
    }
    *route = &r;
    return Found::kRoute;
  }
  captures->clear();
  return path_known ? Found::kWrongMethod : Found::kNoPath;
}

}  // namespace sluice

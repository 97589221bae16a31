#include "server/request_reader.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "common/utf8.h"

namespace sluice {
namespace {

namespace http = boost::beast::http;

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Printable ASCII: what a request target may hold (RFC 3986; others are %-encoded).
bool PrintableAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// The target reduced to origin form ("/path?query"), or nullopt when it is in none of
// the forms sluice serves (authority form is for CONNECT, asterisk form for OPTIONS *).
std::optional<std::string_view> OriginForm(std::string_view target) {
  if (!target.empty() && target[0] == '/') return target;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() && EqualsNoCase(target.substr(0, scheme.size()), scheme)) {
      std::string_view rest = target.substr(scheme.size());
      size_t slash = rest.find_first_of("/?");
      if (slash == 0) return std::nullopt;  // no authority
      if (slash == std::string_view::npos) return std::string_view("/");
      if (rest[slash] == '?') return std::nullopt;  // "http://h?q": no path to serve
      return rest.substr(slash);
    }
  }
  return std::nullopt;
}

Status Bad(std::string detail) { return MakeError(ErrorCode::kBadRequest, std::move(detail)); }

}  // namespace

Status ReadRequest(BeastRequest& msg, HttpRequest& out) {
  out.method =
      SanitizeUtf8(std::string_view(msg.method_string().data(), msg.method_string().size()));
  const std::string_view target(msg.target().data(), msg.target().size());
  out.headers.clear();
  out.headers.reserve(8);
  for (const auto& field : msg) {
    out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  out.body = std::move(msg.body());
  out.params.clear();

  if (!PrintableAscii(target)) {
    out.path = SanitizeUtf8(target.substr(0, target.find('?')));
    return Bad("the request target must be printable ASCII: percent-encode other bytes");
  }
  auto origin = OriginForm(target);
  if (!origin) {
    out.path = std::string(target.substr(0, target.find('?')));
    return Bad("the request target must be a path (\"/v1/...\") or an absolute http URL");
  }
  const size_t q = origin->find('?');
  out.path = std::string(origin->substr(0, q));

  // RFC 9112 section 3.2: a client must send Host in every HTTP/1.1 request.
  if (msg.version() >= 11 && msg.find(http::field::host) == msg.end()) {
    return Bad("an HTTP/1.1 request needs a Host header");
  }
  for (const auto& field : msg) {
    if (field.name() != http::field::content_encoding) continue;
    std::string_view v(field.value().data(), field.value().size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    if (!v.empty() && !EqualsNoCase(v, "identity")) {
      return MakeError(
          ErrorCode::kUnsupportedMediaType,
          "Content-Encoding " + QuoteForMessage(v) + " is not supported: send the body unencoded");
    }
  }
  if (q != std::string_view::npos) {
    out.params = ParseQuery(origin->substr(q + 1));
    for (const auto& [k, v] : out.params) {
      if (!IsValidUtf8(k) || !IsValidUtf8(v)) {
        return Bad("the query string does not decode to UTF-8 text");
      }
    }
  }
  return Ok{};
}

std::optional<Error> TransportError(const boost::system::error_code& ec, size_t max_body_bytes) {
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec.category() != http::make_error_code(http::error::bad_target).category()) {
    return std::nullopt;  // the peer went away, timed out, or we are stopping
  }
  if (ec == http::error::body_limit) {
    return MakeError(ErrorCode::kPayloadTooLarge, "the request body is larger than " +
                                                      std::to_string(max_body_bytes) + " bytes");
  }
  if (ec == http::error::header_limit) {
    return MakeError(ErrorCode::kBadRequest, "the request headers are too large");
  }
  return MakeError(ErrorCode::kBadRequest, "malformed HTTP request: " + ec.message());
}

void ReadRefusedRequest(const BeastRequest& msg, HttpRequest& out) {
  out.method =
      SanitizeUtf8(std::string_view(msg.method_string().data(), msg.method_string().size()));
  std::string_view target(msg.target().data(), msg.target().size());
  out.path = SanitizeUtf8(target.substr(0, target.find('?')));
  auto id = msg.find("X-Request-Id");
  if (id != msg.end()) out.headers.emplace_back("X-Request-Id", std::string(id->value()));
}

Status CheckCaptures(const std::vector<std::string>& captures) {
  for (const std::string& c : captures) {
    if (!IsValidUtf8(c) || c.find('\0') != std::string::npos) {
      return Bad("the path segment " + QuoteForMessage(c) +
                 " does not decode to UTF-8 text without NUL");
    }
  }
  return Ok{};
}

std::string_view MethodLabel(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    if (method == m) return m;
  }
  return "other";
}

}  // namespace sluice

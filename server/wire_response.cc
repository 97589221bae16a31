#include "server/wire_response.h"

#include <boost/beast/http/status.hpp>
#include <charconv>
#include <ostream>  // before Beast: its status header prints to streams

namespace sluice {
namespace {

void AppendClean(std::string_view s, std::string* out) {
  const size_t at = out->size();
  out->append(s);
  for (size_t i = at; i < out->size(); ++i) {
    char& c = (*out)[i];
    if (c == '\r' || c == '\n') c = ' ';
  }
}

void AppendHeader(std::string_view name, std::string_view value, std::string* out) {
  AppendClean(name, out);
  out->append(": ");
  AppendClean(value, out);
  out->append("\r\n");
}

void AppendNumber(uint64_t n, std::string* out) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out->append(digits, end);
}

}  // namespace

void WireResponse(const HttpResponse& res, bool close, bool head, std::string* out) {
  out->clear();
  const unsigned status = res.status >= 100 && res.status <= 999 ? res.status : 500;
  out->append("HTTP/1.1 ");
  AppendNumber(status, out);
  out->push_back(' ');
  const auto reason =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  out->append(reason.data(), reason.size());
  out->append("\r\n");
  if (!res.content_type.empty()) AppendHeader("Content-Type", res.content_type, out);
  for (const auto& [name, value] : res.headers) AppendHeader(name, value, out);
  // 1xx, 204 and 304 have no body, hence no Content-Length (RFC 9110, 8.6).
  const bool bodiless = status < 200 || status == 204 || status == 304;
  if (!bodiless) {
    out->append("Content-Length: ");
    AppendNumber(res.body.size(), out);
    out->append("\r\n");
  }
  if (close) out->append("Connection: close\r\n");
  out->append("\r\n");
  if (!head && !bodiless) out->append(res.body);
}

}  // namespace sluice

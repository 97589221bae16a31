// Fuzzes the request router and path decoding (server/router.h, server/http_types.h)
// over the server's real route table. An input is "METHOD TARGET" (no space: a GET of
// the whole input). Properties: no crash or sanitizer report; a match has the method
// (HEAD finds GET) and one non-empty capture per "{}" of its pattern; a 405 lists the
// methods allowed, never the one asked; percent-decoding never grows a
// string, leaves a string without escapes alone and undoes percent-encoding; the
// query splits into one pair per non-empty piece; the 404/405 the server would answer
// renders as problem+json that the strict reader accepts, with a valid UTF-8 detail;
// what handlers quote of a capture is valid UTF-8.
#include <cstdint>
#include <string>
#include <vector>

#include "common/encoding.h"
#include "common/strict_json.h"
#include "common/utf8.h"
#include "server/errors.h"
#include "server/request_reader.h"
#include "server/router.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/route_table.h"

namespace sluice {
namespace {

void CheckDecoding(std::string_view s) {
  for (bool plus : {false, true}) {
    const std::string decoded = PercentDecode(s, plus);
    FUZZ_CHECK(decoded.size() <= s.size());
    if (s.find('%') == std::string_view::npos && (!plus || s.find('+') == std::string_view::npos)) {
      FUZZ_CHECK(decoded == s);
    }
    FUZZ_CHECK(PercentDecode(PercentEncode(s), plus) == s);
  }
}

void CheckQuery(std::string_view query) {
  size_t pieces = 0;
  size_t start = 0;
  for (;;) {
    size_t amp = query.find('&', start);
    size_t end = amp == std::string_view::npos ? query.size() : amp;
    if (end > start) ++pieces;
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  FUZZ_CHECK(ParseQuery(query).size() == pieces);
}

void CheckQuoted(const std::string& s) {
  FUZZ_CHECK(IsValidUtf8(SanitizeUtf8(s)));
  if (IsValidUtf8(s)) FUZZ_CHECK(SanitizeUtf8(s) == s);
  const std::string quoted = QuoteForMessage(s);
  FUZZ_CHECK(IsValidUtf8(quoted));
  for (unsigned char c : quoted) FUZZ_CHECK(c >= 0x20 && c != 0x7f);
}

void CheckRendered(const Error& e, int status) {
  HttpResponse res;
  RenderError(res, e);
  FUZZ_CHECK(res.status == status);
  FUZZ_CHECK(res.content_type == "application/problem+json");
  auto body = ParseStrictJson(res.body);
  FUZZ_CHECK(body.ok());
  FUZZ_CHECK(body.value().is_object());
  FUZZ_CHECK(body.value().value("status", 0) == status);
  FUZZ_CHECK(body.value().contains("detail") && body.value()["detail"].is_string());
  FUZZ_CHECK(IsValidUtf8(body.value()["detail"].get<std::string>()));
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string_view input = fuzz::AsText(data, size);
  const size_t space = input.find(' ');
  const std::string method(space == std::string_view::npos ? "GET" : input.substr(0, space));
  const std::string_view target = space == std::string_view::npos ? input : input.substr(space + 1);
  const size_t q = target.find('?');
  const std::string path(target.substr(0, q));
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : target.substr(q + 1);

  const Router::Route* route = nullptr;
  std::vector<std::string> captures;
  std::vector<std::string> allowed;
  switch (fuzz::RealRoutes().Find(method, path, &route, &captures, &allowed)) {
    case Router::Found::kRoute: {
      FUZZ_CHECK(route != nullptr);
      FUZZ_CHECK(route->method == method || (method == "HEAD" && route->method == "GET"));
      size_t holes = 0;
      for (const std::string& s : route->segments) holes += s.rfind("{}", 0) == 0 ? 1 : 0;
      FUZZ_CHECK(captures.size() == holes);
      for (const std::string& c : captures) {
        FUZZ_CHECK(!c.empty());
        CheckQuoted(c);
      }
      if (Status ok = CheckCaptures(captures); !ok.ok()) CheckRendered(ok.error(), 400);
      break;
    }
    case Router::Found::kNoPath:
      FUZZ_CHECK(captures.empty());
      CheckRendered(MakeError(ErrorCode::kNotFound, "no such resource"), 404);
      break;
    case Router::Found::kWrongMethod: {
      FUZZ_CHECK(captures.empty());
      FUZZ_CHECK(!allowed.empty());
      for (const std::string& m : allowed) FUZZ_CHECK(m != method);
      // Unquoted on purpose: the renderer itself must make any detail safe.
      CheckRendered(MakeError(ErrorCode::kMethodNotAllowed, method + " is not allowed on " + path),
                    405);
      break;
    }
  }
  CheckDecoding(path);
  CheckQuery(query);
  for (const auto& [k, v] : ParseQuery(query)) {
    CheckQuoted(k);
    CheckQuoted(v);
  }
  return 0;
}

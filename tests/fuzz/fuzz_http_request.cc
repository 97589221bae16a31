// Fuzzes a whole request as the server reads it (server/http_server.cc): the bytes go
// through Beast's request parser with the server's limits, a request read becomes an
// HttpRequest (server/request_reader.h), is routed over the real route table, its
// captures checked and its JSON body read as every JSON route reads it; then the
// answer the transport would give (400, 404, 405, 413, 415) is rendered, serialized
// and logged, in either log format. Pipelined requests on one
// connection are read one after the other while the connection stays open.
// Properties: no crash, exception or sanitizer report; no answer is a 5xx; every
// problem body is JSON with a valid UTF-8 detail; every log line passes checked_log.h;
// the path is printable even when refused; accepted queries and captures are UTF-8.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

// clang-format off
#include <utility>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

#include "common/strict_json.h"
#include "common/utf8.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/http_server.h"
#include "server/log.h"
#include "server/request_reader.h"
#include "server/router.h"
#include "tests/fuzz/checked_log.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/route_table.h"

namespace sluice {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using Parser = http::request_parser<http::string_body>;

constexpr int kMaxRequestsPerInput = 16;

// Session::RequestId: the client's X-Request-Id if it is short and plain, else ours.
std::string RequestId(const HttpRequest& req) {
  const std::string given = req.get_header_value("X-Request-Id");
  if (!given.empty() && given.size() <= 64 && std::all_of(given.begin(), given.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      })) {
    return given;
  }
  return "fuzz-1";
}

void CheckPrintable(std::string_view s) {
  FUZZ_CHECK(IsValidUtf8(s));
  for (unsigned char c : s) FUZZ_CHECK(c >= 0x20 && c != 0x7f);
}

void CheckProblem(const HttpResponse& res) {
  FUZZ_CHECK(res.status < 500);
  if (res.content_type != "application/problem+json") return;
  auto body = ParseStrictJson(res.body);
  FUZZ_CHECK(body.ok() && body.value().is_object());
  FUZZ_CHECK(body.value().value("status", 0) == res.status);
  FUZZ_CHECK(body.value().contains("detail") && body.value()["detail"].is_string());
  FUZZ_CHECK(IsValidUtf8(body.value()["detail"].get<std::string>()));
}

// Session::Write: the response as it goes on the wire, and its access-log line.
void Answer(HttpRequest& req, HttpResponse res, bool keep_alive) {
  CheckProblem(res);
  req.remote_addr = "127.0.0.1";
  req.request_id = RequestId(req);
  res.set_header("X-Request-Id", req.request_id);
  LogRequest(req.request_id, req.method, req.path, res.status, 0.25, req.remote_addr,
             req.client_ip);
  FUZZ_CHECK(MethodLabel(req.method) == req.method || MethodLabel(req.method) == "other");
  http::response<http::string_body> wire;
  wire.version(11);
  wire.result(static_cast<unsigned>(res.status));
  if (!res.content_type.empty()) wire.set(http::field::content_type, res.content_type);
  for (auto& [name, value] : res.headers) wire.insert(name, value);
  wire.body() = std::move(res.body);
  wire.keep_alive(keep_alive);
  wire.prepare_payload();
  std::ostringstream out;
  out << wire;
  FUZZ_CHECK(out.str().rfind("HTTP/1.1 ", 0) == 0);
}

// Session::Handle and Route, up to the handler: the conversion (server/request_reader.h),
// routing, the captures' check, then the JSON body every JSON route reads.
void Handle(BeastRequest& msg, bool keep_alive) {
  HttpRequest req;
  Status read = ReadRequest(msg, req);
  CheckPrintable(req.path);  // printable even when refused, so that it can be logged
  if (!read.ok()) return Answer(req, ErrorResponse(read.error()), keep_alive);
  for (const auto& [k, v] : req.params) FUZZ_CHECK(IsValidUtf8(k) && IsValidUtf8(v));

  const Router::Route* route = nullptr;
  std::vector<std::string> captures;
  std::vector<std::string> allowed;
  switch (fuzz::RealRoutes().Find(req.method, req.path, &route, &captures, &allowed)) {
    case Router::Found::kNoPath:
      return Answer(req, ErrorResponse(MakeError(ErrorCode::kNotFound, "no such resource")),
                    keep_alive);
    case Router::Found::kWrongMethod: {
      FUZZ_CHECK(!allowed.empty());
      std::string allow;
      for (const std::string& m : allowed) {
        FUZZ_CHECK(m != req.method);
        allow += (allow.empty() ? "" : ", ") + m;
      }
      HttpResponse res = ErrorResponse(MakeError(
          ErrorCode::kMethodNotAllowed, QuoteForMessage(req.method) + " is not allowed on " +
                                            QuoteForMessage(req.path) + "; allowed: " + allow));
      res.set_header("Allow", allow);
      return Answer(req, std::move(res), keep_alive);
    }
    case Router::Found::kRoute:
      break;
  }
  if (Status ok = CheckCaptures(captures); !ok.ok()) {
    return Answer(req, ErrorResponse(ok.error()), keep_alive);
  }
  for (const std::string& c : captures) {
    FUZZ_CHECK(IsValidUtf8(c) && c.find('\0') == std::string::npos);
  }
  req.matches.push_back(req.path);
  for (auto& c : captures) req.matches.push_back(std::move(c));
  auto body = ParseJsonObject(req);
  HttpResponse res;
  if (body.ok()) {
    FUZZ_CHECK(body.value().is_object());
    res.status = 204;
  } else {
    RenderError(res, body.error());
  }
  Answer(req, std::move(res), keep_alive);
}

// Session::ReadFailed and WriteError: the answer to a request that could not be read,
// if any (a peer that went away gets none), with what is known of the request.
void ReadFailed(beast::error_code ec, const Parser& parser, const HttpServerOptions& options) {
  std::optional<Error> e = TransportError(ec, options.max_body_bytes);
  if (!e) return;
  HttpRequest req;
  if (parser.is_header_done()) ReadRefusedRequest(parser.get(), req);
  Answer(req, ErrorResponse(*e), false);
}

// Reads requests from `bytes` as one connection would; returns when it would close.
void Serve(std::string_view bytes) {
  const HttpServerOptions options;  // the server's limits
  for (int n = 0; n < kMaxRequestsPerInput; ++n) {
    Parser parser;
    parser.body_limit(options.max_body_bytes);
    parser.header_limit(static_cast<uint32_t>(options.max_header_bytes));
    parser.eager(true);
    beast::error_code ec;
    while (!parser.is_done()) {
      // The peer closing (no bytes left, or none that complete a part) is an EOF.
      if (bytes.empty()) {
        // As Beast's read does: EOF before any byte is end_of_stream; put_eof requires
        // that the parser got some (an assertion, caught with asserts on).
        if (!parser.got_some()) return ReadFailed(http::error::end_of_stream, parser, options);
        parser.put_eof(ec);
        if (ec) return ReadFailed(ec, parser, options);
        break;
      }
      const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) {
        // Every byte the peer sent was in that call: Beast's read would now wait for
        // more, and none comes, so the next step is the EOF. (Calling put again with no
        // new bytes breaks Beast's contract: its chunk parser asserts n >= 5 when a
        // final chunk "0\r\n\r" was seen in an earlier call; a server never does it.)
        ec = {};
        bytes = {};
        continue;
      }
      if (ec) return ReadFailed(ec, parser, options);
    }
    if (!parser.is_done()) return;
    const bool keep_alive = parser.get().keep_alive();
    Handle(parser.get(), keep_alive);
    if (!keep_alive || bytes.empty()) return;
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  // The log format follows the parity of the input's bytes: deterministic, so a
  // finding replays, and about half the inputs in each (switching formats costs a
  // logger, so one input does not run in both).
  uint8_t parity = 0;
  for (size_t i = 0; i < size; ++i) parity ^= data[i];
  fuzz::UseCheckedLog(parity & 1 ? LogFormat::kJson : LogFormat::kText);
  Serve(fuzz::AsText(data, size));
  return 0;
}

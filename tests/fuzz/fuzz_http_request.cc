// Fuzzes a whole request as the server reads it (server/http_server.cc): the bytes go
// through Beast's request parser with the server's limits, a request read becomes an
// HttpRequest, is routed over the real route table, its JSON body read as every JSON
// route reads it; then the answer the transport would give (404, 405, 413, 400) is
// rendered, serialized, and logged, in either log format. Pipelined requests on one
// connection are read one after the other while the connection stays open.
// Properties: no crash, exception or sanitizer report; no answer is a 5xx; every
// problem body is JSON with a valid UTF-8 detail; every log line passes checked_log.h.
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

// The conversion of Session::Handle (server/http_server.cc).
HttpRequest ToHttpRequest(Parser& parser) {
  auto& msg = parser.get();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  std::string_view target(msg.target().data(), msg.target().size());
  size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.params = ParseQuery(target.substr(q + 1));
  for (const auto& field : msg) {
    req.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  req.body = std::move(msg.body());
  req.remote_addr = "127.0.0.1";
  req.request_id = "fuzz-1";
  return req;
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
void Answer(const HttpRequest* req, HttpResponse res, bool keep_alive) {
  CheckProblem(res);
  if (req) {
    res.set_header("X-Request-Id", req->request_id);
    LogRequest(req->request_id, req->method, req->path, res.status, 0.25, req->remote_addr);
  }
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

// Session::Handle, up to the handler: routing, then the JSON body every JSON route reads.
void Handle(HttpRequest& req, bool keep_alive) {
  const Router::Route* route = nullptr;
  std::vector<std::string> captures;
  switch (fuzz::RealRoutes().Find(req.method, req.path, &route, &captures)) {
    case Router::Found::kNoPath:
      return Answer(&req, ErrorResponse(MakeError(ErrorCode::kNotFound, "no such resource")),
                    keep_alive);
    case Router::Found::kWrongMethod:
      return Answer(&req,
                    ErrorResponse(MakeError(ErrorCode::kMethodNotAllowed,
                                            req.method + " is not allowed on " + req.path)),
                    keep_alive);
    case Router::Found::kRoute:
      break;
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
  Answer(&req, std::move(res), keep_alive);
}

// Session::ReadFailed: the answer to a request that could not be read, if any.
void ReadFailed(beast::error_code ec, const HttpServerOptions& options) {
  if (ec == http::error::body_limit) {
    return Answer(nullptr,
                  ErrorResponse(MakeError(ErrorCode::kPayloadTooLarge,
                                          "the request body is larger than " +
                                              std::to_string(options.max_body_bytes) + " bytes")),
                  false);
  }
  if (ec == http::error::header_limit) {
    return Answer(
        nullptr,
        ErrorResponse(MakeError(ErrorCode::kBadRequest, "the request headers are too large")),
        false);
  }
  if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    Answer(nullptr, ErrorResponse(MakeError(ErrorCode::kBadRequest, "malformed HTTP request")),
           false);
  }
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
        parser.put_eof(ec);
        if (ec) return ReadFailed(ec, options);
        break;
      }
      const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) {
        ec = {};
        if (used == 0) bytes = {};
        continue;
      }
      if (ec) return ReadFailed(ec, options);
    }
    if (!parser.is_done()) return;
    const bool keep_alive = parser.get().keep_alive();
    HttpRequest req = ToHttpRequest(parser);
    Handle(req, keep_alive);
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

// How the client library reads refusals (client/problem.h, client/connection.h): the
// problem+json fields, the Retry-After header, the Error each status and code means.
#include "client/problem.h"

#include <catch2/catch.hpp>

#include "client/connection.h"
#include "common/time.h"

namespace sluice {
namespace {

TEST_CASE("problem: code, detail, retry_after and estimated_start are kept") {
  Problem p = ParseProblem(
      429, R"({"type":"about:blank","status":429,"error":"queue_full","detail":"full"})", "7");
  CHECK(p.status == 429);
  CHECK(p.code == "queue_full");
  CHECK(p.detail == "full");
  CHECK(p.retry_after_s == 7);
  // The body's retry_after wins over the header.
  CHECK(ParseProblem(429, R"({"error":"queue_full","retry_after":3})", "9").retry_after_s == 3);
  Problem g = ParseProblem(
      429, R"({"error":"deadline_unreachable","estimated_start":"2026-01-01T00:00:00Z"})", "");
  CHECK(g.estimated_start == "2026-01-01T00:00:00Z");
  CHECK_FALSE(g.retry_after_s);
  const Error e = ToError(g);
  CHECK(e.code == ErrorCode::kDeadlineUnreachable);
  CHECK(e.estimated_start_us == ParseRfc3339("2026-01-01T00:00:00Z"));
}

TEST_CASE("problem: a body that is not problem+json becomes the detail, cut short") {
  Problem h = ParseProblem(502, "<html>bad gateway</html>", "");
  CHECK(h.code.empty());
  CHECK(h.detail == "<html>bad gateway</html>");
  CHECK(ParseProblem(500, std::string(2000, 'x'), "").detail.size() == 500);
  // Fields of the wrong type are ignored, not trusted.
  Problem w = ParseProblem(429, R"({"error":7,"detail":[],"retry_after":"soon"})", "");
  CHECK(w.code.empty());
  CHECK(w.detail.empty());
  CHECK_FALSE(w.retry_after_s);
  CHECK_FALSE(ParseProblem(429, R"({"retry_after":-4})", "").retry_after_s);
}

TEST_CASE("problem: Retry-After is read as delta-seconds only") {
  CHECK(ParseRetryAfter("0") == 0);
  CHECK(ParseRetryAfter("120") == 120);
  for (const char* bad : {"", "-1", "-0", "+3", "1.5", " 3", "3 ", "Wed, 21 Oct 2015 07:28:00 GMT",
                          "99999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseRetryAfter(bad));
  }
}

TEST_CASE("problem: the error a status means when the body names no code sluice knows") {
  const std::pair<int, ErrorCode> cases[] = {
      {400, ErrorCode::kBadRequest},       {401, ErrorCode::kUnauthorized},
      {403, ErrorCode::kForbidden},        {404, ErrorCode::kNotFound},
      {405, ErrorCode::kMethodNotAllowed}, {409, ErrorCode::kConflict},
      {413, ErrorCode::kPayloadTooLarge},  {415, ErrorCode::kUnsupportedMediaType},
      {429, ErrorCode::kRateLimited},      {503, ErrorCode::kStorageUnavailable},
      {502, ErrorCode::kInternal},         {418, ErrorCode::kBadRequest},
  };
  for (const auto& [status, code] : cases) {
    CAPTURE(status);
    CHECK(ToError(ParseProblem(status, "", "")).code == code);
    CHECK(ToError(ParseProblem(status, R"({"error":"no_such_code"})", "")).code == code);
  }
  // A code sluice knows wins over its status.
  CHECK(ToError(ParseProblem(409, R"({"error":"lease_lost"})", "")).code == ErrorCode::kLeaseLost);
  CHECK(ToError(ParseProblem(404, R"({"detail":"gone"})", "")).detail == "HTTP 404: gone");
}

TEST_CASE("problem: which errors are worth a retry") {
  CHECK(IsTransient(ToError(ParseProblem(503, "", "2"))));
  CHECK(IsTransient(ToError(ParseProblem(502, "bad gateway", ""))));
  CHECK(IsTransient(ToError(ParseProblem(503, R"({"error":"too_many_connections"})", ""))));
  CHECK_FALSE(IsTransient(ToError(ParseProblem(404, "", ""))));
  CHECK_FALSE(IsTransient(ToError(ParseProblem(422, R"({"error":"idempotency_key_reused"})", ""))));
}

TEST_CASE("connection failures: no answer is transient, a bad answer is not a refusal") {
  ApiFailure unreachable{ApiFailure::Kind::kUnreachable, {}};
  unreachable.problem.detail = "cannot reach http://127.0.0.1:1";
  const Error u = ToError(unreachable);
  CHECK(u.code == ErrorCode::kStorageUnavailable);
  CHECK(IsTransient(u));
  CHECK(u.detail == "cannot reach http://127.0.0.1:1");
  ApiFailure bad{ApiFailure::Kind::kBadAnswer, {}};
  bad.problem.status = 200;
  CHECK(ToError(bad).code == ErrorCode::kInternal);
  ApiFailure refused{ApiFailure::Kind::kRefused, ParseProblem(403, R"({"error":"forbidden"})", "")};
  CHECK(ToError(refused).code == ErrorCode::kForbidden);
}

// A real exchange with nothing listening: the connection reports kUnreachable, with the
// server named and no token in the message.
TEST_CASE("connection: nothing listening is kUnreachable") {
  std::string why;
  auto url = ParseServerUrl("http://127.0.0.1:1", &why);
  REQUIRE(url);
  Connection c(*url, "secret-token-value", ConnectionOptions{1, 1, 1});
  ApiResult r = c.Get("/healthz");
  REQUIRE_FALSE(r.ok());
  CHECK(r.failure().kind == ApiFailure::Kind::kUnreachable);
  CHECK(r.failure().problem.detail.find("127.0.0.1:1") != std::string::npos);
  CHECK(r.failure().problem.detail.find("secret-token-value") == std::string::npos);
}

}  // namespace
}  // namespace sluice

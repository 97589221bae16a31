// Which --server values the CLI accepts, and how refusals are read.
#include <catch2/catch.hpp>

#include "cli/api_client.h"

namespace sluice::cli {
namespace {

TEST_CASE("server url: http and https with host and optional port") {
  std::string why;
  auto a = ParseServerUrl("http://127.0.0.1:8080", &why);
  REQUIRE(a);
  CHECK(a->ToString() == "http://127.0.0.1:8080");
  auto b = ParseServerUrl("https://sluice.example.com/", &why);
  REQUIRE(b);
  CHECK(b->ToString() == "https://sluice.example.com:443");
  auto c = ParseServerUrl("http://[::1]:9000", &why);
  REQUIRE(c);
  CHECK(c->host == "::1");
  CHECK(c->ToString() == "http://[::1]:9000");
  CHECK(ParseServerUrl("http://localhost", &why)->port == 80);
}

TEST_CASE("server url: anything else is refused with a reason") {
  for (const char* bad : {"127.0.0.1:8080", "ftp://host", "http://host:99999", "http://host/v1",
                          "http://user:pw@host", "http://host:8080?x=1", ""}) {
    std::string why;
    CAPTURE(bad);
    CHECK_FALSE(ParseServerUrl(bad, &why));
    CHECK_FALSE(why.empty());
  }
}

TEST_CASE("refusals: problem+json code, detail and Retry-After are kept") {
  auto f = FailureFromResponse(
      429, R"({"type":"about:blank","status":429,"error":"queue_full","detail":"full"})", "7");
  CHECK(f.kind == ApiFailure::Kind::kRefused);
  CHECK(f.status == 429);
  CHECK(f.code == "queue_full");
  CHECK(f.detail == "full");
  CHECK(f.retry_after_s == 7);
  auto g = FailureFromResponse(
      429, R"({"error":"deadline_unreachable","estimated_start":"2026-01-01T00:00:00Z"})", "");
  CHECK(g.estimated_start == "2026-01-01T00:00:00Z");
  CHECK_FALSE(g.retry_after_s);
  auto h = FailureFromResponse(502, "<html>bad gateway</html>", "");
  CHECK(h.code.empty());
  CHECK(h.detail == "<html>bad gateway</html>");
}

}  // namespace
}  // namespace sluice::cli

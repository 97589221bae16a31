// Which --server values the clients (sluice, sluice-worker, the examples) accept.
#include "client/server_url.h"

#include <catch2/catch.hpp>

namespace sluice {
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

// The fuzzer found a 295-byte URL that parsed but printed (with ":80" added) past the
// length bound, so its own ToString() did not parse again.
TEST_CASE("server url: whatever parses prints as a URL that parses to itself") {
  std::string why;
  const std::string longest = "http://" + std::string(253, 'a');
  auto a = ParseServerUrl(longest, &why);
  REQUIRE(a);
  auto again = ParseServerUrl(a->ToString(), &why);
  REQUIRE(again);
  CHECK(again->ToString() == a->ToString());
  CHECK_FALSE(ParseServerUrl("http://" + std::string(254, 'a'), &why));
  CHECK_FALSE(ParseServerUrl("http://" + std::string(288, 'a') + "/", &why));
  CHECK_FALSE(ParseServerUrl("http://[1.2]", &why));  // brackets hold an IPv6 address
  CHECK(why.find("IPv6") != std::string::npos);
}

}  // namespace
}  // namespace sluice

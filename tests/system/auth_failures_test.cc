// The default intake layer through the real binary: failed authentications per client
// address, then 429 rate_limited for that address on every route, with honest
// Retry-After and RateLimit fields; other addresses (IPv4, and IPv6 by /64) are not
// touched; --auth-failure-limit 0 turns it off. Clients are told apart through
// X-Forwarded-For from a trusted loopback proxy.
#include <catch2/catch.hpp>
#include <string>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"

namespace sluice::testing {
namespace {

using std::chrono::seconds;

httplib::Headers From(const std::string& client, const std::string& token) {
  return Bearer(token, {{"X-Forwarded-For", client}});
}

// GET /v1/admin/queues as `client`, with `token`.
HttpResult Get(httplib::Client& http, const std::string& client, const std::string& token) {
  return Call(http, "GET", "/v1/admin/queues", nullptr, From(client, token));
}

TEST_CASE("failed authentications from one address block it, and only it", "[auth_failures]") {
  ServerOptions options;
  options.extra_args = {"--trusted-proxy",         "127.0.0.1", "--auth-failure-limit", "3",
                        "--auth-failure-window-s", "3600"};
  ServerProcess s(options);
  auto http = s.Client();
  const std::string attacker = "203.0.113.7", other = "203.0.113.8";
  REQUIRE(Get(*http, attacker, s.admin_token()).status == 200);
  for (int i = 0; i < 3; ++i) REQUIRE(Get(*http, attacker, "wrong-token").status == 401);
  // The third failure was the last: from then on every request from that address is
  // refused before any work, even with a valid token (counting runs in the background).
  HttpResult refused;
  REQUIRE(Eventually(
      [&] {
        refused = Get(*http, attacker, s.admin_token());
        return refused.status == 429;
      },
      std::chrono::seconds(10)));
  CHECK(refused.body["error"] == "rate_limited");
  CHECK(refused.header("Content-Type") == "application/problem+json");
  const int retry = std::stoi(refused.header("Retry-After"));
  CHECK(retry >= 1);
  CHECK(retry <= 3600);
  CHECK(refused.body["retry_after"] == retry);
  CHECK(refused.header("RateLimit-Policy") == "\"auth_failures\";q=3;w=3600");
  CHECK(refused.header("RateLimit") == "\"auth_failures\";r=0;t=" + std::to_string(retry));
  // Every route, an unknown one too (decided before routing).
  CHECK(Call(*http, "GET", "/healthz", nullptr, From(attacker, "")).status == 429);
  CHECK(Call(*http, "GET", "/no/such/route", nullptr, From(attacker, "")).status == 429);
  // Another address is untouched, and its own failures are its own.
  CHECK(Get(*http, other, s.admin_token()).status == 200);
  CHECK(Get(*http, other, "wrong-token").status == 401);
  CHECK(Get(*http, other, s.admin_token()).status == 200);
  // So is a direct client (the proxy itself).
  CHECK(Call(*http, "GET", "/v1/admin/queues", nullptr, Bearer(s.admin_token())).status == 200);
}

TEST_CASE("an IPv6 client is counted by its /64", "[auth_failures]") {
  ServerOptions options;
  options.extra_args = {"--trusted-proxy", "127.0.0.1", "--auth-failure-limit", "2"};
  ServerProcess s(options);
  auto http = s.Client();
  REQUIRE(Get(*http, "2001:db8:1:2::1", "wrong").status == 401);
  REQUIRE(Get(*http, "2001:db8:1:2::ffff", "wrong").status == 401);  // same /64
  REQUIRE(
      Eventually([&] { return Get(*http, "2001:db8:1:2::abcd", s.admin_token()).status == 429; },
                 std::chrono::seconds(10)));
  CHECK(Get(*http, "2001:db8:1:3::1", s.admin_token()).status == 200);  // another /64
}

TEST_CASE("an auth-failure limit of 0 turns the layer off", "[auth_failures]") {
  ServerOptions options;
  options.extra_args = {"--trusted-proxy", "127.0.0.1", "--auth-failure-limit", "0"};
  ServerProcess s(options);
  auto http = s.Client();
  for (int i = 0; i < 30; ++i) REQUIRE(Get(*http, "203.0.113.9", "wrong").status == 401);
  CHECK(Get(*http, "203.0.113.9", s.admin_token()).status == 200);
}

}  // namespace
}  // namespace sluice::testing

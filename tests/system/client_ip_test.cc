// The client address sluiced logs (and per-IP limits will key by), through the real
// binary on loopback: the peer unless --trusted-proxy names it; then the configured
// forwarding header, walked from the right; a bad --trusted-proxy is refused at start.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

// Sends GET /healthz with `header`, stops the server (which flushes its log) and
// returns the client_ip of the access line of that request (by its X-Request-Id).
std::string LoggedClientIp(std::vector<std::string> args, const httplib::Headers& header) {
  ServerOptions options;
  options.extra_args = std::move(args);
  ServerProcess server(options);
  auto http = server.Client();
  httplib::Headers h = header;
  h.emplace("X-Request-Id", "client-ip-probe");
  auto res = http->Get("/healthz", h);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  REQUIRE(server.Stop() == 0);
  std::istringstream log(server.ReadLog());
  for (std::string line; std::getline(log, line);) {
    if (line.find("request_id=client-ip-probe") == std::string::npos) continue;
    const size_t at = line.find(" client_ip=");
    REQUIRE(at != std::string::npos);
    const size_t start = at + 11;
    return line.substr(start, line.find(' ', start) - start);
  }
  FAIL("no access line for the probe in:\n" << server.ReadLog());
  return "";
}

TEST_CASE("the client is the peer unless the peer is a trusted proxy", "[client_ip]") {
  const httplib::Headers spoofed = {{"X-Forwarded-For", "6.6.6.6, 203.0.113.9"}};
  // No trusted proxy (the default): the header is ignored.
  CHECK(LoggedClientIp({}, spoofed) == "127.0.0.1");
  // A trusted block that does not hold the peer: still ignored.
  CHECK(LoggedClientIp({"--trusted-proxy", "10.0.0.0/8"}, spoofed) == "127.0.0.1");
  // Loopback trusted: the rightmost untrusted hop is the client, not the forged one.
  CHECK(LoggedClientIp({"--trusted-proxy", "127.0.0.0/8"}, spoofed) == "203.0.113.9");
  // Trusted hops are walked past; the flag repeats.
  CHECK(LoggedClientIp({"--trusted-proxy", "127.0.0.1", "--trusted-proxy", "192.0.2.0/24"},
                       {{"X-Forwarded-For", "198.51.100.4, 192.0.2.7"}}) == "198.51.100.4");
  // RFC 7239 Forwarded when configured (and then X-Forwarded-For is not read).
  CHECK(LoggedClientIp({"--trusted-proxy", "127.0.0.1", "--forwarded-header", "forwarded"},
                       {{"Forwarded", R"(for="[2001:db8::5]:443";proto=https)"},
                        {"X-Forwarded-For", "6.6.6.6"}}) == "2001:db8::5");
}

TEST_CASE("a bad --trusted-proxy stops sluiced at start, naming the value", "[client_ip]") {
  TempDir dir;
  Subprocess p({SLUICED_BINARY, "--listen", "127.0.0.1:0", "--db", dir.File("sluice.db"),
                "--trusted-proxy", "10.0.0.1/8"},
               {"SLUICE_ADMIN_TOKEN=test-admin-token"}, dir.File("sluiced.log"));
  const std::optional<int> status = p.Wait(std::chrono::seconds(20));
  REQUIRE(status);
  CHECK(*status != 0);
  CHECK(p.ReadLog().find("10.0.0.1/8") != std::string::npos);
}

}  // namespace
}  // namespace sluice::testing

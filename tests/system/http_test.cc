// The HTTP transport of the real sluiced: unknown routes and verbs, pipelined requests,
// oversized and malformed requests, idle and trickling connections, and long-polls whose
// client hangs up.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <string>

#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

// A raw connection, for what an HTTP client library would not send.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawConnection() { Close(); }
  void Send(const std::string& data) {
    REQUIRE(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(data.size()));
  }
  // Reads until the peer closes, `want` occurrences of `marker` arrived, or 5 s pass.
  std::string ReadUntil(const std::string& marker, int want) {
    std::string got;
    char buf[4096];
    for (;;) {
      size_t count = 0;
      for (size_t at = got.find(marker); at != std::string::npos; at = got.find(marker, at + 1))
        ++count;
      if (static_cast<int>(count) >= want) return got;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return got;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  // Waits up to `seconds` for the peer to close, discarding what it sends; whether it
  // closed (rather than the wait running out).
  bool ClosedByPeerWithin(int seconds) {
    timeval tv{seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct Fixture {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();
  std::string submit, work;

  Fixture() {
    REQUIRE(Admin("PUT", "/v1/admin/queues/q", {{"rate", 1000}, {"capacity", 100}}).status == 200);
    submit = Admin("POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}})
                 .body["token"];
    work = Admin("POST", "/v1/admin/tokens", {{"scopes", {"work"}}}).body["token"];
  }
  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return Call(*http, method, path, body, Bearer(server.admin_token()));
  }
};

TEST_CASE("http: unknown paths are 404 and other verbs 405, as problem+json") {
  Fixture f;
  auto missing = Call(*f.http, "GET", "/v1/nothing/here");
  CHECK(missing.status == 404);
  CHECK(missing.body["error"] == "not_found");
  auto verb = Call(*f.http, "DELETE", "/healthz");
  CHECK(verb.status == 405);
  CHECK(verb.body["error"] == "method_not_allowed");
}

TEST_CASE("http: pipelined requests are answered in order on one connection") {
  Fixture f;
  RawConnection c(f.server.port());
  c.Send(
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = c.ReadUntil("HTTP/1.1 ", 3);
  size_t a = got.find("HTTP/1.1 200"), b = got.find("HTTP/1.1 404"),
         d = got.find("HTTP/1.1 200", b == std::string::npos ? 0 : b);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  REQUIRE(d != std::string::npos);
  CHECK(a < b);
  CHECK(b < d);
}

TEST_CASE("http: a malformed request gets 400 problem+json and the connection closes") {
  Fixture f;
  RawConnection c(f.server.port());
  c.Send("NOT-HTTP\r\n\r\n");
  std::string got = c.ReadUntil("\"error\"", 1);
  CHECK(got.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(got.find("application/problem+json") != std::string::npos);
  CHECK(got.find("bad_request") != std::string::npos);
}

TEST_CASE("http: a body over the limit is refused with 413 before it is read") {
  Fixture f;
  RawConnection c(f.server.port());
  c.Send("POST /v1/queues/q/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.submit +
         "\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{");
  std::string got = c.ReadUntil("\"error\"", 1);
  CHECK(got.rfind("HTTP/1.1 413", 0) == 0);
  CHECK(got.find("payload_too_large") != std::string::npos);
}

// sluiced's keep-alive timeout is 5 s (server/http_server.h), enforced within 250 ms.
TEST_CASE("http: an idle keep-alive connection is closed after the keep-alive timeout") {
  Fixture f;
  RawConnection c(f.server.port());
  c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(c.ReadUntil("HTTP/1.1 200", 1).find("HTTP/1.1 200") != std::string::npos);
  const auto idle_from = std::chrono::steady_clock::now();
  REQUIRE(c.ClosedByPeerWithin(15));
  // Not before its time: closing a connection that is merely between requests early
  // would break keep-alive for every client.
  CHECK(std::chrono::steady_clock::now() - idle_from >= std::chrono::milliseconds(4500));
}

TEST_CASE("http: a request whose header never ends is closed, not held (slow loris)") {
  Fixture f;
  RawConnection c(f.server.port());
  c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  REQUIRE(c.ClosedByPeerWithin(15));
  // The server still serves others, on a new connection: the fixture's keep-alive
  // connection went idle when the slow one started, so the same sweep closes it too, and
  // a request sent on it as it closes would fail on the client's side (HTTP/1.1's
  // keep-alive race), which says nothing about the server.
  auto fresh = f.server.Client();
  CHECK(Call(*fresh, "GET", "/healthz").status == 200);
}

TEST_CASE("http: a long-poll whose client hung up is not handed a job") {
  Fixture f;
  {
    // A worker asks for work, waiting up to 30 s, and hangs up after 300 ms.
    RawConnection gone(f.server.port());
    std::string body = json{{"queues", {"q"}}, {"wait_ms", 30000}}.dump();
    gone.Send("POST /v1/leases HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.work +
              "\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (f.Admin("GET", "/v1/admin/queues").body["waiting_leases"] != 1) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
    }
  }
  // The server notices the hang-up: the poll no longer counts as a waiting worker.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (f.Admin("GET", "/v1/admin/queues").body["waiting_leases"] != 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
  // Submitted after the hang-up, the job must go to the next worker that asks.
  auto submitted = Call(*f.http, "POST", "/v1/queues/q/jobs", {{"payload", 1}}, Bearer(f.submit));
  REQUIRE(submitted.status == 202);
  auto leased =
      Call(*f.http, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 3000}}, Bearer(f.work));
  REQUIRE(leased.status == 200);
  REQUIRE(leased.body["jobs"].size() == 1);
  CHECK(leased.body["jobs"][0]["id"] == submitted.body["id"]);
}

}  // namespace
}  // namespace sluice::testing

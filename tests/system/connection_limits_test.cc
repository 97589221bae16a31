// Resource limits at the edge: the connection cap (--max-connections) and the
// process's file-descriptor limit. Past either, a new connection is answered 503
// too_many_connections and closed at once, and the connections already open keep
// being served.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "tests/testutil/raw_http.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

// Polls `ready` until it holds or `timeout` passes.
template <typename F>
bool Eventually(F ready, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ready();
}

void CheckRefusal(const RawResponse& r) {
  INFO(r.status_line << " " << r.error << " " << r.body);
  REQUIRE(r.status == 503);
  CHECK(r.Header("Content-Type") == "application/problem+json");
  CHECK(r.Header("Retry-After") == "1");
  CHECK(r.Header("Connection") == "close");
  auto body = nlohmann::json::parse(r.body, nullptr, false);
  REQUIRE(body.is_object());
  CHECK(body["error"] == "too_many_connections");
  CHECK(body["status"] == 503);
}

// Opens keep-alive connections, each proven open by one answered /healthz.
std::vector<std::unique_ptr<httplib::Client>> OpenConnections(const ServerProcess& server, int n,
                                                              int* answered) {
  std::vector<std::unique_ptr<httplib::Client>> clients;
  *answered = 0;
  for (int i = 0; i < n; ++i) {
    auto c = server.Client();
    c->set_read_timeout(5, 0);
    auto res = c->Get("/healthz");
    if (res && res->status == 200) {
      ++*answered;
      clients.push_back(std::move(c));
    }
  }
  return clients;
}

TEST_CASE("past --max-connections a new connection gets 503 at once and open ones are served",
          "[limits]") {
  ServerOptions options;
  options.extra_args = {"--max-connections", "8"};
  ServerProcess server(options);
  // The launcher's own health-check connection may still be closing: wait until all 8
  // fit.
  std::vector<std::unique_ptr<httplib::Client>> open;
  REQUIRE(Eventually([&] {
    open.clear();  // a round that fell short lets its connections go before the next
    int answered = 0;
    open = OpenConnections(server, 8, &answered);
    return answered == 8;
  }));

  for (int i = 0; i < 5; ++i)
    CheckRefusal(RawExchange(server.port(), BuildRequest("GET", "/healthz")));
  for (auto& c : open) {  // every open connection is still served
    auto res = c->Get("/healthz");
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  // One closes: a new connection is taken again.
  open.pop_back();
  CHECK(Eventually(
      [&] { return RawExchange(server.port(), BuildRequest("GET", "/healthz")).status == 200; }));
  // The start line says the cap (the log is written in batches: poll for it).
  CHECK(
      Eventually([&] { return server.ReadLog().find("max_connections=8") != std::string::npos; }));
}

TEST_CASE("at the file-descriptor limit new connections get 503 and open ones are served",
          "[limits]") {
  // 128 descriptors, and a cap set above what they allow: the accept loop meets EMFILE.
  ServerOptions options;
  options.extra_args = {"--max-connections", "1000"};
  options.command_prefix = {"prlimit", "--nofile=128:128", "--"};
  ServerProcess server(options);
  int answered = 0;
  auto open = OpenConnections(server, 160, &answered);
  INFO("connections served: " << answered);
  CHECK(answered > 50);   // the process got as many as its descriptors allow...
  CHECK(answered < 128);  // ...and no more
  for (int i = 0; i < 5; ++i)
    CheckRefusal(RawExchange(server.port(), BuildRequest("GET", "/healthz")));
  for (auto& c : open) {
    auto res = c->Get("/healthz");
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  open.clear();
  CHECK(Eventually(
      [&] { return RawExchange(server.port(), BuildRequest("GET", "/healthz")).status == 200; }));
  CHECK(Eventually([&] {
    return server.ReadLog().find("max_connections_above_fd_limit") != std::string::npos;
  }));
}

}  // namespace
}  // namespace sluice::testing

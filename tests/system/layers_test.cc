// Operator-declared intake-protection layers through the real binary (issue 17, the
// article's test plan): baseline under the limit with consistent RateLimit fields,
// exactly at the limit, token-bucket burst then recovery, cost per route group,
// concurrency on one key (long-polls held open), many threads racing on one key,
// identity separation (token, tenant, IP, route group), the limiter's store failing
// under each fail mode, versions through the admin API and the config file.
#include <sqlite3.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "tests/testutil/server_process.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

json Layer(const std::string& name, const std::string& algorithm, int64_t limit,
           std::vector<std::string> key, std::vector<std::string> groups, json extra = {}) {
  json l = {{"name", name}, {"algorithm", algorithm}, {"limit", limit}, {"key", key}};
  if (!groups.empty()) l["route_groups"] = groups;
  if (algorithm != "concurrency") l["window_s"] = 3600;
  for (auto& [k, v] : extra.items()) l[k] = v;
  return l;
}

struct Layers {
  ServerProcess server;
  std::unique_ptr<httplib::Client> http = server.Client();

  explicit Layers(ServerOptions options = {}) : server(std::move(options)) {
    REQUIRE(Admin("PUT", "/v1/admin/queues/q", {{"rate", 1000}, {"capacity", 1000}, {"burst", 10}})
                .status == 200);
  }
  HttpResult Admin(const std::string& m, const std::string& path, const json& body = nullptr) {
    return Call(*http, m, path, body, Bearer(server.admin_token()));
  }
  // Declares `layers`; the new policy version.
  int64_t Put(const std::vector<json>& layers) {
    auto r = Admin("PUT", "/v1/admin/limits", {{"layers", json(layers)}});
    INFO(r.body.dump());
    REQUIRE(r.status == 200);
    return r.body["version"];
  }
  std::string Token(const json& body) {
    auto r = Admin("POST", "/v1/admin/tokens", body);
    REQUIRE(r.status == 201);
    return r.body["token"];
  }
  // A read-group request (one queue) with `token`, from `client` when given.
  HttpResult Read(const std::string& token, const std::string& client = "") {
    httplib::Headers h;
    if (!client.empty()) h.emplace("X-Forwarded-For", client);
    return Call(*http, "GET", "/v1/admin/queues/q", nullptr, Bearer(token, h));
  }
  HttpResult Submit(const std::string& token) {
    return Call(*http, "POST", "/v1/queues/q/jobs", {{"payload", 1}}, Bearer(token));
  }
};

TEST_CASE("layers: under the limit with consistent fields, then exactly at it", "[layers]") {
  Layers f;
  auto before = f.Admin("GET", "/v1/admin/limits");
  REQUIRE(before.status == 200);
  CHECK(before.body["version"] == 0);
  CHECK(before.body["defaults"] == true);
  CHECK(f.Put({Layer("per_token", "fixed_window", 5, {"token"}, {"read"})}) == 1);
  for (int i = 0; i < 5; ++i) {
    auto r = f.Read(f.server.admin_token());
    REQUIRE(r.status == 200);
    CHECK(r.header("RateLimit-Policy") == "\"per_token\";q=5;w=3600");
    const std::string field = r.header("RateLimit");
    CHECK(field.rfind("\"per_token\";r=" + std::to_string(4 - i) + ";t=", 0) == 0);
  }
  auto refused = f.Read(f.server.admin_token());
  REQUIRE(refused.status == 429);
  CHECK(refused.header("Content-Type") == "application/problem+json");
  CHECK(refused.body["error"] == "rate_limited");
  const int retry = std::stoi(refused.header("Retry-After"));
  CHECK(retry >= 1);
  CHECK(retry <= 3600);
  CHECK(refused.header("RateLimit-Policy") == "\"per_token\";q=5;w=3600");
  CHECK(refused.header("RateLimit") == "\"per_token\";r=0;t=" + std::to_string(retry));
  // Another route group is not guarded by this layer.
  CHECK(f.Admin("GET", "/v1/admin/queues").status == 200);
  // Every refusal is logged with the hashed identity, never the token id.
  auto refusal_line = [&] {
    std::istringstream log(f.server.ReadLog());
    for (std::string line; std::getline(log, line);) {
      if (line.find(" rate_limited ") != std::string::npos) return line;
    }
    return std::string();
  };
  REQUIRE(Eventually([&] { return !refusal_line().empty(); }, seconds(10)));
  const std::string line = refusal_line();
  CAPTURE(line);
  CHECK(line.find("layer=per_token") != std::string::npos);
  CHECK(line.find("policy_version=1") != std::string::npos);
  CHECK(line.find("route_group=read") != std::string::npos);
  CHECK(line.find("algorithm=fixed_window") != std::string::npos);
  CHECK(line.find("identity=") != std::string::npos);
  CHECK(line.find("instance=") != std::string::npos);
  CHECK(line.find("admin") == std::string::npos);
  // A new version of a layer keeps its name's keys: what was spent stays spent.
  CHECK(f.Put({Layer("per_token", "fixed_window", 6, {"token"}, {"read"})}) == 2);
  CHECK(f.Read(f.server.admin_token()).status == 200);
  CHECK(f.Read(f.server.admin_token()).status == 429);
}

TEST_CASE("layers: metrics count decisions per layer and route group", "[layers]") {
  Layers f;
  f.Put({Layer("per_token", "fixed_window", 2, {"token"}, {"read"})});
  for (int i = 0; i < 3; ++i) f.Read(f.server.admin_token());
  auto res = f.http->Get("/metrics", Bearer(f.server.admin_token()));
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const std::string& text = res->body;
  CHECK(text.find("sluice_limiter_decisions_total{layer=\"per_token\",route_group=\"read\","
                  "outcome=\"allowed\"} 2") != std::string::npos);
  CHECK(text.find("sluice_limiter_decisions_total{layer=\"per_token\",route_group=\"read\","
                  "outcome=\"rejected\"} 1") != std::string::npos);
  CHECK(text.find("sluice_limiter_decision_seconds_count 3") != std::string::npos);
  CHECK(text.find("sluice_limiter_active_keys 1") != std::string::npos);
}

TEST_CASE("layers: a token bucket admits its burst, then recovers at its rate", "[layers]") {
  Layers f;
  f.Put({Layer("bucket", "token_bucket", 1, {"token"}, {"read"}, {{"window_s", 1}, {"burst", 3}})});
  for (int i = 0; i < 3; ++i) REQUIRE(f.Read(f.server.admin_token()).status == 200);
  auto refused = f.Read(f.server.admin_token());
  REQUIRE(refused.status == 429);
  CHECK(refused.header("Retry-After") == "1");
  CHECK(refused.header("RateLimit-Policy") == "\"bucket\";q=1;w=1");
  // Waiting admits one again (polled, never slept); the next is refused at once.
  REQUIRE(Eventually([&] { return f.Read(f.server.admin_token()).status == 200; }, seconds(10)));
  CHECK(f.Read(f.server.admin_token()).status == 429);
}

TEST_CASE("layers: a cost per route group weighs the expensive routes", "[layers]") {
  Layers f;
  f.Put({Layer("weighted", "fixed_window", 7, {"token"}, {"read", "list"},
               {{"cost", {{"list", 3}}}})});
  const std::string admin = f.server.admin_token();
  CHECK(f.Admin("GET", "/v1/admin/queues").status == 200);  // 3
  CHECK(f.Admin("GET", "/v1/admin/queues").status == 200);  // 6
  auto list = f.Admin("GET", "/v1/admin/queues");           // 3 more: refused
  CHECK(list.status == 429);
  CHECK(list.header("RateLimit").rfind("\"weighted\";r=1;", 0) == 0);
  CHECK(f.Read(admin).status == 200);  // 7: a read costs 1
  CHECK(f.Read(admin).status == 429);
}

TEST_CASE("layers: a concurrency layer counts requests in progress on one key", "[layers]") {
  Layers f;
  const std::string worker = f.Token({{"scopes", {"work"}}});
  const std::string submitter = f.Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
  f.Put({Layer("polls", "concurrency", 2, {"token"}, {"lease"})});
  // Two long-polls hold both slots while they wait for work.
  auto poll = [&] {
    auto c = f.server.Client();
    c->set_read_timeout(30, 0);
    return Call(*c, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 20000}}, Bearer(worker));
  };
  auto first = std::async(std::launch::async, poll);
  auto second = std::async(std::launch::async, poll);
  // Both are parked (the server says so) before a third asks.
  REQUIRE(Eventually(
      [&] { return f.Admin("GET", "/v1/admin/queues").body.value("waiting_leases", 0) == 2; },
      seconds(10)));
  const HttpResult third =
      Call(*f.http, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 0}}, Bearer(worker));
  REQUIRE(third.status == 429);
  CHECK(third.body["error"] == "rate_limited");
  CHECK(third.header("Retry-After").empty());  // no wait can be known
  CHECK(third.header("RateLimit-Policy") == "\"polls\";q=2");
  CHECK(third.header("RateLimit") == "\"polls\";r=0");
  // Work arrives: both polls answer, their slots come back, and a lease is admitted.
  REQUIRE(f.Submit(submitter).status == 202);
  REQUIRE(f.Submit(submitter).status == 202);
  CHECK(first.get().status == 200);
  CHECK(second.get().status == 200);
  REQUIRE(Eventually(
      [&] {
        return Call(*f.http, "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 0}},
                    Bearer(worker))
                   .status == 200;
      },
      seconds(10)));
}

TEST_CASE("layers: many threads on one key never over-admit", "[layers]") {
  Layers f;
  f.Put({Layer("race", "fixed_window", 50, {"token"}, {"read"})});
  std::atomic<int> admitted{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      auto c = f.server.Client();
      for (int i = 0; i < 20; ++i) {
        const int status =
            Call(*c, "GET", "/v1/admin/queues/q", nullptr, Bearer(f.server.admin_token())).status;
        (status == 200 ? admitted : status == 429 ? refused : other)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(admitted == 50);
  CHECK(refused == 110);
  CHECK(other == 0);
}

TEST_CASE("layers: keys separate tokens, tenants, addresses and route groups", "[layers]") {
  ServerOptions options;
  options.extra_args = {"--trusted-proxy", "127.0.0.1"};
  Layers f(options);
  const std::string acme1 = f.Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
  const std::string acme2 = f.Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
  const std::string beta = f.Token({{"scopes", {"submit"}}, {"tenant", "beta"}});
  SECTION("tenant: two tokens of one tenant share, another tenant has its own") {
    f.Put({Layer("per_tenant", "fixed_window", 2, {"tenant"}, {"submit"})});
    CHECK(f.Submit(acme1).status == 202);
    CHECK(f.Submit(acme2).status == 202);
    CHECK(f.Submit(acme1).status == 429);
    CHECK(f.Submit(acme2).status == 429);
    CHECK(f.Submit(beta).status == 202);
  }
  SECTION("token: each token its own") {
    f.Put({Layer("per_token", "fixed_window", 1, {"token"}, {"submit"})});
    CHECK(f.Submit(acme1).status == 202);
    CHECK(f.Submit(acme1).status == 429);
    CHECK(f.Submit(acme2).status == 202);
  }
  SECTION("ip: each client address its own, a spoofed header from a peer not trusted") {
    f.Put({Layer("per_ip", "fixed_window", 1, {"ip"}, {"read"})});
    CHECK(f.Read(f.server.admin_token(), "203.0.113.1").status == 200);
    CHECK(f.Read(f.server.admin_token(), "203.0.113.1").status == 429);
    CHECK(f.Read(f.server.admin_token(), "203.0.113.2").status == 200);
    CHECK(f.Read(f.server.admin_token()).status == 200);  // the proxy itself
  }
  SECTION("route group: one token's reads and lists counted apart") {
    f.Put({Layer("per_group", "fixed_window", 1, {"token", "route_group"}, {"read", "list"})});
    CHECK(f.Read(f.server.admin_token()).status == 200);
    CHECK(f.Read(f.server.admin_token()).status == 429);
    CHECK(f.Admin("GET", "/v1/admin/queues").status == 200);
    CHECK(f.Admin("GET", "/v1/admin/queues").status == 429);
  }
  SECTION("a request without a valid token is left to authentication") {
    f.Put({Layer("per_token", "fixed_window", 1, {"token"}, {"read"})});
    CHECK(f.Read("tok_nobody.secret").status == 401);
    CHECK(f.Read("tok_nobody.secret").status == 401);
    CHECK(f.Read(f.server.admin_token()).status == 200);
  }
}

// Renames the limiter's table of a live SQLite file away (or back): its state cannot
// be read or written, as when a store fails, and nothing else is touched.
void RenameTable(const std::string& db, const std::string& from, const std::string& to) {
  sqlite3* conn = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &conn) == SQLITE_OK);
  sqlite3_busy_timeout(conn, 10000);
  const std::string sql = "ALTER TABLE " + from + " RENAME TO " + to;
  char* err = nullptr;
  const int rc = sqlite3_exec(conn, sql.c_str(), nullptr, nullptr, &err);
  const std::string why = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(conn);
  REQUIRE(why == "");
  REQUIRE(rc == SQLITE_OK);
}

TEST_CASE("layers: when the limiter's state is out of reach, each layer fails as declared",
          "[layers]") {
  Layers f;
  f.Put({Layer("soft", "fixed_window", 100, {"token"}, {"read"}, {{"fail", "open"}})});
  REQUIRE(f.Read(f.server.admin_token()).status == 200);
  RenameTable(f.server.db_path(), "rate_limits", "rate_limits_away");
  // Fail open: admitted, and said so in the log.
  CHECK(f.Read(f.server.admin_token()).status == 200);
  REQUIRE(Eventually(
      [&] { return f.server.ReadLog().find("limiter_failed_open") != std::string::npos; },
      seconds(10)));
  // Fail closed: refused with 503, nothing run.
  f.Put({Layer("hard", "fixed_window", 100, {"token"}, {"read"}, {{"fail", "closed"}})});
  auto refused = f.Read(f.server.admin_token());
  CHECK(refused.status == 503);
  CHECK(refused.body["error"] == "storage_unavailable");
  CHECK(refused.header("Retry-After") == "1");
  // Routes no layer guards are served meanwhile.
  CHECK(f.Admin("GET", "/v1/admin/queues").status == 200);
  RenameTable(f.server.db_path(), "rate_limits_away", "rate_limits");
  CHECK(f.Read(f.server.admin_token()).status == 200);
}

TEST_CASE("layers: a bad declaration is refused and changes nothing", "[layers]") {
  Layers f;
  auto bad = f.Admin("PUT", "/v1/admin/limits",
                     {{"layers", json::array({Layer("x", "leaky", 1, {"token"}, {})})}});
  CHECK(bad.status == 400);
  CHECK(bad.body["error"] == "bad_request");
  CHECK(f.Admin("GET", "/v1/admin/limits").body["version"] == 0);
  auto submitter = f.Token({{"scopes", {"submit"}}, {"tenant", "acme"}});
  CHECK(Call(*f.http, "PUT", "/v1/admin/limits", {{"layers", json::array()}}, Bearer(submitter))
            .status == 403);
  CHECK(f.Admin("GET", "/v1/admin/limits").body["version"] == 0);
}

TEST_CASE("layers: the config file declares them once; restarts keep the version", "[layers]") {
  TempDir dir;
  const std::string config = dir.path() + "/sluice.json";
  std::ofstream(config)
      << json{{"limits",
               {{"layers", json::array({Layer("per_ip", "sliding_log", 1000, {"ip"}, {})})}}}}
             .dump();
  ServerOptions options;
  options.db_path = dir.path() + "/sluice.db";
  options.extra_args = {"--config", config};
  {
    ServerProcess s(options);
    auto r = Call(*s.Client(), "GET", "/v1/admin/limits", nullptr, Bearer(s.admin_token()));
    REQUIRE(r.status == 200);
    CHECK(r.body["version"] == 1);
    CHECK(r.body["layers"][0]["algorithm"] == "sliding_log");
  }
  ServerProcess again(options);
  auto r = Call(*again.Client(), "GET", "/v1/admin/limits", nullptr, Bearer(again.admin_token()));
  INFO(r.status << " " << again.ReadLog());
  CHECK(r.body["version"] == 1);
}

}  // namespace
}  // namespace sluice::testing

// Storage faults fail closed (issue 4): when the database cannot grow, intake answers
// 503 storage_unavailable with Retry-After, /readyz is not ready, nothing is
// half-written, and service resumes on its own once storage recovers. The fault is
// real: the running sluiced gets a file-size limit (prlimit RLIMIT_FSIZE) at the
// current size of its files, so SQLite's next write that grows a file fails with
// EFBIG, as on a full disk; lifting the limit is the disk getting space back.
#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// Sets the soft limit only (the hard one stays), so lifting it needs no privilege.
void LimitFileSize(pid_t pid, rlim_t bytes) {
  struct rlimit old {};
  REQUIRE(prlimit(pid, RLIMIT_FSIZE, nullptr, &old) == 0);
  struct rlimit lim {
    bytes, old.rlim_max
  };
  REQUIRE(prlimit(pid, RLIMIT_FSIZE, &lim, nullptr) == 0);
}

TEST_CASE("a storage fault answers 503, loses nothing, and recovers on its own") {
  ServerProcess server;
  auto admin = server.Client(server.admin_token());
  REQUIRE(
      Call(*admin, "PUT", "/v1/admin/queues/q", {{"rate", 1000}, {"capacity", 100000}}).status ==
      200);
  const std::string token =
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}})
          .body["token"];
  auto c = server.Client(token);
  const std::string big(64 * 1024, 'x');  // each job grows the WAL
  int accepted = 0;
  auto submit = [&] {
    auto r = Call(*c, "POST", "/v1/queues/q/jobs", {{"payload", big}});
    if (r.status == 202) ++accepted;
    return r;
  };
  REQUIRE(submit().status == 202);

  // The disk is "full": no file of sluiced may grow past its size now.
  const rlim_t cap = static_cast<rlim_t>(
      std::max({FileSize(server.db_path()), FileSize(server.db_path() + "-wal"), int64_t{4096}}));
  LimitFileSize(server.pid(), cap);
  HttpResult failed;
  for (int i = 0; i < 200; ++i) {  // the WAL's spare room fills within a few jobs
    failed = submit();
    if (failed.status != 202) break;
  }
  REQUIRE(failed.status == 503);
  CHECK(failed.body["error"] == "storage_unavailable");
  CHECK(failed.header("Retry-After") == "1");
  auto ready = Call(*admin, "GET", "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body["error"] == "storage_unavailable");
  CHECK(Call(*c, "GET", "/healthz").status == 200);  // alive, just not ready

  // Space comes back: service resumes without a restart.
  LimitFileSize(server.pid(), RLIM_INFINITY);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    status = submit().status;
    if (status == 202) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(status == 202);
  CHECK(Call(*admin, "GET", "/readyz").status == 200);

  // Nothing half-written: exactly the acknowledged jobs exist, before and after a restart.
  auto count = [&](httplib::Client& a) {
    return Call(a, "GET", "/v1/admin/queues/q").body["stats"]["queued"].get<int>();
  };
  CHECK(count(*admin) == accepted);
  ServerOptions again;
  again.db_path = server.db_path();
  server.Stop(SIGKILL);
  ServerProcess restarted(again);
  auto admin2 = restarted.Client(restarted.admin_token());
  CHECK(count(*admin2) == accepted);
  auto listed = Call(*admin2, "GET", "/v1/jobs?limit=1000");
  CHECK(listed.body["jobs"].size() == static_cast<size_t>(accepted));
  INFO("accepted " << accepted);
}

TEST_CASE("a storage fault under acks on a lease request answers 503: nothing acked or leased") {
  ServerProcess server;
  auto admin = server.Client(server.admin_token());
  REQUIRE(Call(*admin, "PUT", "/v1/admin/queues/q",
               {{"rate", 1000}, {"capacity", 100000}, {"burst", 100}})
              .status == 200);
  auto submitter = server.Client(
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}})
          .body["token"]);
  auto worker =
      server.Client(Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}).body["token"]);
  for (int i = 0; i < 60; ++i) {
    REQUIRE(Call(*submitter, "POST", "/v1/queues/q/jobs", {{"payload", i}}).status == 202);
  }
  auto leased = Call(*worker, "POST", "/v1/leases",
                     {{"queues", {"q"}}, {"max_jobs", 50}, {"lease_ms", 600000}});
  REQUIRE(leased.status == 200);
  const json jobs = leased.body["jobs"];
  REQUIRE(jobs.size() == 50);
  auto stats = [&] { return Call(*admin, "GET", "/v1/admin/queues/q").body["stats"]; };

  const rlim_t cap = static_cast<rlim_t>(
      std::max({FileSize(server.db_path()), FileSize(server.db_path() + "-wal"), int64_t{4096}}));
  LimitFileSize(server.pid(), cap);
  const std::string big(64 * 1024, 'x');  // each ack grows the WAL
  auto ack_of = [&](const json& job) {
    return json{{"id", job["id"]},
                {"lease_id", job["lease_id"]},
                {"outcome", "succeeded"},
                {"result", big}};
  };
  size_t refused = jobs.size();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const json before = stats();
    auto r = Call(*worker, "POST", "/v1/leases",
                  {{"queues", {"q"}}, {"wait_ms", 0}, {"acks", {ack_of(jobs[i])}}});
    if (r.status == 200) {  // the acks committed (the lease itself may not have)
      CHECK(r.body["acks"][0]["state"] == "succeeded");
      continue;
    }
    REQUIRE(r.status == 503);
    CHECK(r.body["error"] == "storage_unavailable");
    const json after = stats();
    CHECK(after["queued"] == before["queued"]);  // nothing leased
    CHECK(after["leased"] == before["leased"]);  // nothing acked
    refused = i;
    break;
  }
  REQUIRE(refused < jobs.size());
  const std::string id = jobs[refused]["id"];
  CHECK(Call(*admin, "GET", "/v1/jobs/" + id).body["state"] == "leased");

  LimitFileSize(server.pid(), RLIM_INFINITY);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  json result;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = Call(*worker, "POST", "/v1/acks", {{"acks", {ack_of(jobs[refused])}}});
    if (r.status == 200) {
      result = r.body["results"][0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(result["state"] == "succeeded");  // the refused ack was never applied
}

}  // namespace
}  // namespace sluice::testing

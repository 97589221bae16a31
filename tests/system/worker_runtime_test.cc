// System tests of the sluice-worker runtime (issue 5) with the real sluiced: jobs
// complete with the command's stdout; failures are retried, then fail; a command that
// outlives its lease is killed and the job re-leased; SIGTERM drains with nothing lost;
// a worker started before its server reconnects.
#include <signal.h>

#include <set>
#include <thread>

#include "tests/system/worker_fixture.h"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

const json kFast = {{"rate", 1000},
                    {"capacity", 1000},
                    {"max_attempts", 3},
                    {"retry_backoff_ms", 10},
                    {"retry_backoff_max_ms", 20}};

TEST_CASE("sluice-worker runs the command per job and completes it with its stdout") {
  WorkerRig rig(kFast);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(rig.Submit({{"n", i}}, {{"deadline_in_ms", 600000}}));
  auto worker = rig.Worker({"--concurrency", "3"},
                           {"sh", "-c",
                            "jq -c '{double: (.n * 2), id: env.SLUICE_JOB_ID, queue: "
                            "env.SLUICE_QUEUE, tenant: env.SLUICE_TENANT, attempt: "
                            "env.SLUICE_ATTEMPT, deadline: env.SLUICE_DEADLINE, token: "
                            "env.SLUICE_TOKEN}'"});
  REQUIRE(rig.AllInState(ids, "succeeded", seconds(30)));
  for (size_t i = 0; i < ids.size(); ++i) {
    json job = rig.Job(ids[i]);
    json result = job["result"];
    CHECK(result["double"] == 2 * static_cast<int>(i));
    CHECK(result["id"] == ids[i]);
    CHECK(result["queue"] == "q");
    CHECK(result["tenant"] == "acme");
    CHECK(result["attempt"] == "1");
    CHECK(result["deadline"] == job["deadline"]);
    CHECK(result["token"].is_null());  // the worker's secret is not handed on
  }
  worker->Signal(SIGTERM);
  REQUIRE(worker->Wait(seconds(20)) == 0);
  std::string log = worker->ReadLog();
  CHECK(Count(log, "outcome=succeeded state=succeeded") == ids.size());
  CHECK(Count(log, "queue=q tenant=acme attempt=1") == ids.size());
  CHECK(log.find(rig.work) == std::string::npos);
}

TEST_CASE("the command sees the traceparent given at submit, and none for a job without") {
  WorkerRig rig(kFast);
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto traced = Call(*rig.http, "POST", "/v1/queues/q/jobs", {{"payload", {{"n", 1}}}},
                     {{"Authorization", "Bearer " + rig.submit}, {"traceparent", tp}});
  REQUIRE(traced.status == 202);
  const std::string untraced = rig.Submit({{"n", 2}});
  // A TRACEPARENT in the worker's own environment must not leak into jobs without one.
  auto worker = rig.Worker({}, {"sh", "-c", "jq -c '{tp: env.TRACEPARENT}'"},
                           {"TRACEPARENT=00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"});
  REQUIRE(rig.AllInState({traced.body["id"], untraced}, "succeeded", seconds(30)));
  CHECK(rig.Job(traced.body["id"])["result"]["tp"] == tp);
  CHECK(rig.Job(untraced)["result"]["tp"].is_null());
}

TEST_CASE("a failing command is retried, then the job fails with its stderr") {
  WorkerRig rig(kFast);
  std::string id = rig.Submit({{"n", 1}});
  auto worker =
      rig.Worker({}, {"sh", "-c", "echo \"boom on attempt $SLUICE_ATTEMPT\" >&2; exit 3"});
  REQUIRE(rig.AllInState({id}, "failed", seconds(30)));
  json job = rig.Job(id);
  CHECK(job["attempt"] == 3);
  std::string errors = job["errors"].dump();
  CHECK(errors.find("exit 3: boom on attempt 1") != std::string::npos);
  CHECK(errors.find("exit 3: boom on attempt 3") != std::string::npos);
  // The worker logs its last line after the server has the job failed: wait for it.
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (Count(worker->ReadLog(), "outcome=failed state=failed") == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  CHECK(Count(worker->ReadLog(), "outcome=failed state=queued") == 2);
  CHECK(Count(worker->ReadLog(), "outcome=failed state=failed") == 1);
}

TEST_CASE("exit 75 retries after the retry_in_ms it printed; exit 65 is not retried") {
  WorkerRig rig(kFast);
  std::string later = rig.Submit({{"kind", "tempfail"}});
  std::string bad = rig.Submit({{"kind", "bad"}});
  auto started = std::chrono::steady_clock::now();
  auto worker = rig.Worker(
      {"--concurrency", "2"},
      {"sh", "-c",
       "kind=$(jq -r .kind); date +%s%3N >> " + rig.dir.File("tries-") +
           "$kind; "
           "if [ $kind = bad ]; then echo 'no such report' >&2; exit 65; fi; "
           "if [ $SLUICE_ATTEMPT = 1 ]; then echo '{\"retry_in_ms\": 1500}'; exit 75; fi; "
           "echo '{\"ok\": true}'"});
  REQUIRE(rig.AllInState({later}, "succeeded", seconds(30)));
  REQUIRE(rig.AllInState({bad}, "failed", seconds(30)));
  CHECK(std::chrono::steady_clock::now() - started >= milliseconds(1500));
  auto tries = rig.Lines("tries-tempfail");
  REQUIRE(tries.size() == 2);
  CHECK(std::stoll(tries[1]) - std::stoll(tries[0]) >= 1400);  // retry_in_ms was honored
  CHECK(rig.Job(later)["result"] == json{{"ok", true}});
  CHECK(rig.Job(bad)["attempt"] == 1);
  CHECK(rig.Lines("tries-bad").size() == 1);
  CHECK(rig.Job(bad)["errors"].dump().find("exit 65: no such report") != std::string::npos);
}

TEST_CASE("a command that outlives its lease is killed and the job is leased again") {
  WorkerRig rig({{"rate", 1000}, {"capacity", 1000}, {"max_attempts", 2}});
  std::string id = rig.Submit({{"n", 1}});
  // The command ignores SIGTERM, so only SIGKILL after the grace stops it.
  auto worker = rig.Worker({"--lease-ms", "600", "--timeout-ms", "1500", "--kill-grace-ms", "300"},
                           {"sh", "-c",
                            "trap '' TERM; echo \"$SLUICE_ATTEMPT $$\" >> " + rig.dir.File("runs") +
                                "; sleep 60; sleep 60"});
  REQUIRE(rig.AllInState({id}, "failed", seconds(40)));
  // The worker's clock ends the lease no later than the server's; SIGKILL follows.
  REQUIRE(Eventually([&] { return Count(worker->ReadLog(), "stopped=lease_expired") == 2; },
                     seconds(20)));
  auto runs = rig.Lines("runs");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].rfind("1 ", 0) == 0);
  CHECK(runs[1].rfind("2 ", 0) == 0);
  for (const std::string& run : runs) {  // both are gone, not left running
    pid_t pid = std::stoi(run.substr(2));
    CHECK((kill(pid, 0) != 0 && errno == ESRCH));
  }
  std::string log = worker->ReadLog();
  // Heartbeats kept the 600 ms lease alive until the 1.5 s timeout.
  CHECK(log.find("lease lost") == std::string::npos);
}

TEST_CASE("SIGTERM: running commands finish, the worker exits 0, nothing is lost") {
  WorkerRig rig(kFast);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(rig.Submit({{"n", i}}));
  const std::string cmd = "echo $SLUICE_JOB_ID >> " + rig.dir.File("started") +
                          "; sleep 1; echo $SLUICE_JOB_ID >> " + rig.dir.File("finished");
  auto first = rig.Worker({"--concurrency", "2"}, {"sh", "-c", cmd});
  REQUIRE(Eventually([&] { return rig.Lines("started").size() == 2; }, seconds(20)));
  first->Signal(SIGTERM);
  REQUIRE(first->Wait(seconds(20)) == 0);
  CHECK(rig.Lines("finished").size() == 2);  // both ran to the end
  int succeeded = 0, queued = 0;
  for (const auto& id : ids) {
    std::string state = rig.Job(id)["state"];
    succeeded += state == "succeeded";
    queued += state == "queued";
  }
  CHECK(succeeded == 2);
  CHECK(queued == 4);  // never leased: nothing held by a worker that is gone

  auto second = rig.Worker({"--concurrency", "2"}, {"sh", "-c", cmd});
  REQUIRE(rig.AllInState(ids, "succeeded", seconds(30)));
  auto started = rig.Lines("started");
  CHECK(started.size() == 6);
  CHECK(std::set<std::string>(started.begin(), started.end()).size() == 6);  // each once
}

TEST_CASE("SIGTERM past the drain grace fails running jobs back as retryable") {
  WorkerRig rig(kFast);
  std::vector<std::string> ids = {rig.Submit({{"n", 1}}), rig.Submit({{"n", 2}})};
  auto first = rig.Worker({"--concurrency", "2", "--drain-ms", "200", "--kill-grace-ms", "500"},
                          {"sh", "-c", "echo x >> " + rig.dir.File("started") + "; sleep 60"});
  REQUIRE(Eventually([&] { return rig.Lines("started").size() == 2; }, seconds(20)));
  auto t0 = std::chrono::steady_clock::now();
  first->Signal(SIGTERM);
  REQUIRE(first->Wait(seconds(20)) == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < seconds(10));
  for (const auto& id : ids) {
    json job = rig.Job(id);
    CHECK(job["state"] == "queued");  // back at once (retry_in_ms 0), not left leased
    CHECK(job["errors"].dump().find("stopped (shutdown)") != std::string::npos);
  }
  auto second = rig.Worker({"--concurrency", "2"}, {"sh", "-c", "echo '{\"done\":1}'"});
  REQUIRE(rig.AllInState(ids, "succeeded", seconds(30)));
  for (const auto& id : ids) CHECK(rig.Job(id)["attempt"] == 2);
}

TEST_CASE("a worker whose server is down backs off and keeps trying") {
  // A port nobody listens on.
  int port = 0;
  {
    ServerProcess probe;
    port = probe.port();
  }
  TempDir dir;
  Subprocess worker({SLUICE_WORKER_BINARY, "--server", "http://127.0.0.1:" + std::to_string(port),
                     "--queue", "q", "--wait-ms", "1000", "--", "sh", "-c", "echo '{}'"},
                    {"SLUICE_TOKEN=fixed-work-token"}, dir.File("worker.log"));
  REQUIRE(Eventually([&] { return Count(worker.ReadLog(), "cannot lease") >= 3; }, seconds(20)));
  std::string log = worker.ReadLog();
  CHECK(log.find("retrying in") != std::string::npos);
  worker.Signal(SIGTERM);
  REQUIRE(worker.Wait(seconds(20)) == 0);
  CHECK(log.find("fixed-work-token") == std::string::npos);
}

// A token bucket of one lease per hour for the work token: the worker's second lease is
// refused 429 rate_limited with Retry-After 3600. It is not fatal: the worker plans its
// next try no earlier than that (the log says when), and still stops at once on SIGTERM.
TEST_CASE("a worker refused by an intake layer waits its Retry-After, and still stops") {
  WorkerRig rig(kFast);
  const nlohmann::json layer = {{"name", "leases"}, {"algorithm", "token_bucket"},
                                {"limit", 1},       {"window_s", 3600},
                                {"key", {"token"}}, {"route_groups", {"lease"}}};
  REQUIRE(
      rig.Admin("PUT", "/v1/admin/limits", {{"layers", nlohmann::json::array({layer})}}).status ==
      200);
  auto worker = rig.Worker({}, {"true"});
  REQUIRE(Eventually([&] { return Count(worker->ReadLog(), "cannot lease") >= 1; }, seconds(20)));
  const std::string log = worker->ReadLog();
  INFO(log);
  CHECK(log.find("HTTP 429: layer leases") != std::string::npos);
  const size_t at = log.find("retrying in ");
  const size_t ra = log.find("(Retry-After ");
  REQUIRE(at != std::string::npos);
  REQUIRE(ra != std::string::npos);
  const int64_t retry_after_s = std::stoll(log.substr(ra + 13));
  CHECK(retry_after_s >= 3500);  // the bucket refills one lease an hour after the first
  CHECK(std::stoll(log.substr(at + 12)) >= retry_after_s * 1000);
  CHECK(Count(log, "cannot lease") == 1);
  worker->Signal(SIGTERM);
  CHECK(worker->Wait(seconds(20)) == 0);
}

TEST_CASE("a worker whose token is refused exits 1 instead of retrying forever") {
  WorkerRig rig(kFast);
  auto worker =
      rig.Launch({SLUICE_WORKER_BINARY, "--server", rig.server.url(), "--queue", "q", "--", "true"},
                 {"SLUICE_TOKEN=not-a-token"});
  REQUIRE(worker->Wait(seconds(20)) == 1);
  CHECK(worker->ReadLog().find("refused") != std::string::npos);
  CHECK(worker->ReadLog().find("not-a-token") == std::string::npos);
}

}  // namespace
}  // namespace sluice::testing

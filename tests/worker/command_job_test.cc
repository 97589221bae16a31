// The runtime's contract with a command (worker/command_job.h) and the child process
// runner under it: exit codes, stdout as the result, environment, termination.
#include "worker/command_job.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "worker/child_process.h"

namespace sluice {
namespace {

using nlohmann::json;

ChildResult Exited(int code, std::string out = "", std::string err = "") {
  ChildResult r;
  r.spawned = true;
  r.exited = true;
  r.exit_code = code;
  r.stdout_data = std::move(out);
  r.stderr_tail = std::move(err);
  return r;
}

TEST_CASE("exit 0 completes; stdout is the result when it is JSON") {
  JobOutcome o = OutcomeOf(Exited(0, " {\"rows\": 3}\n"), 1024);
  CHECK(o.succeeded);
  CHECK(o.result == json{{"rows", 3}});
  CHECK(OutcomeOf(Exited(0, ""), 1024).result.is_null());
  CHECK(OutcomeOf(Exited(0, "done, 3 rows\n"), 1024).result == "done, 3 rows");
  CHECK(OutcomeOf(Exited(0, std::string(2000, 'x')), 1024).result.is_null());  // too large
  ChildResult truncated = Exited(0, "[1,2");
  truncated.stdout_truncated = true;
  CHECK(OutcomeOf(truncated, 1024).result.is_null());
}

TEST_CASE("exit 75 is a retryable fail that may say when to retry") {
  JobOutcome o = OutcomeOf(Exited(75, "{\"retry_in_ms\": 1500}", "downstream said 429\n"), 1024);
  CHECK_FALSE(o.succeeded);
  CHECK(o.retryable);
  CHECK(o.retry_in_ms == 1500);
  CHECK(o.error == "exit 75: downstream said 429");
  CHECK(OutcomeOf(Exited(75, "not json"), 1024).retry_in_ms == std::nullopt);
  CHECK(OutcomeOf(Exited(75, "{\"retry_in_ms\": -5}"), 1024).retry_in_ms == std::nullopt);
}

TEST_CASE("exit 65 fails for good; other exits and signals are retryable with stderr's tail") {
  CHECK_FALSE(OutcomeOf(Exited(65, "", "bad payload"), 1024).retryable);
  JobOutcome o = OutcomeOf(Exited(3, "", "line 1\nboom\n"), 1024);
  CHECK(o.retryable);
  CHECK(o.error == "exit 3: line 1\nboom");
  ChildResult killed;
  killed.spawned = true;
  killed.term_signal = 9;
  CHECK(OutcomeOf(killed, 1024).error.rfind("killed by signal 9", 0) == 0);
  ChildResult missing;
  missing.spawn_error = "cannot run nope: No such file or directory";
  CHECK(OutcomeOf(missing, 1024).error == missing.spawn_error);
}

TEST_CASE("the command's environment names the job and hides the worker's token") {
  LeasedJob job;
  job.id = "job_1";
  job.queue = "q";
  job.tenant = "acme";
  job.attempt = 2;
  job.deadline = "2030-01-01T00:00:00.000Z";
  auto env = CommandEnvironment(job, {"PATH=/bin", "SLUICE_TOKEN=secret", "SLUICE_JOB_ID=old"});
  auto has = [&](const std::string& e) {
    return std::find(env.begin(), env.end(), e) != env.end();
  };
  CHECK(has("PATH=/bin"));
  CHECK(has("SLUICE_JOB_ID=job_1"));
  CHECK(has("SLUICE_QUEUE=q"));
  CHECK(has("SLUICE_TENANT=acme"));
  CHECK(has("SLUICE_ATTEMPT=2"));
  CHECK(has("SLUICE_DEADLINE=2030-01-01T00:00:00.000Z"));
  CHECK_FALSE(has("SLUICE_TOKEN=secret"));
  CHECK_FALSE(has("SLUICE_JOB_ID=old"));
  CHECK(
      std::none_of(env.begin(), env.end(), [](auto& e) { return e.rfind("TRACEPARENT", 0) == 0; }));
  job.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  CHECK(CommandEnvironment(job, {}).back() == "TRACEPARENT=" + *job.traceparent);
}

TEST_CASE("a child reads stdin and its stdout and stderr are collected") {
  ChildSpec spec;
  spec.argv = {"sh", "-c", "cat; echo err >&2; exit 4"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.stdin_data = std::string(300000, 'a');  // more than a pipe holds
  ChildResult r = RunChild(spec, -1);
  REQUIRE(r.spawned);
  CHECK(r.exited);
  CHECK(r.exit_code == 4);
  CHECK(r.stdout_data.size() == 300000);
  CHECK(r.stderr_tail == "err\n");
}

TEST_CASE("stdout is bounded and stderr keeps its tail") {
  ChildSpec spec;
  spec.argv = {"sh", "-c", "head -c 100000 /dev/zero; head -c 5000 /dev/zero >&2; echo end >&2"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.max_stdout_bytes = 1000;
  spec.stderr_tail_bytes = 10;
  ChildResult r = RunChild(spec, -1);
  CHECK(r.stdout_data.size() == 1000);
  CHECK(r.stdout_truncated);
  CHECK(r.stderr_tail.size() == 10);
  CHECK(r.stderr_tail.substr(6) == "end\n");
}

TEST_CASE("a cancelled child gets SIGTERM, then SIGKILL after the grace") {
  int efd = eventfd(0, EFD_CLOEXEC);
  uint64_t one = 1;
  REQUIRE(write(efd, &one, sizeof one) == sizeof one);
  ChildSpec spec;
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.kill_grace = std::chrono::milliseconds(200);
  SECTION("SIGTERM is enough") {
    spec.argv = {"sleep", "30"};
    ChildResult r = RunChild(spec, efd);
    CHECK(r.cancelled);
    CHECK(r.term_signal == SIGTERM);
  }
  SECTION("SIGTERM ignored: SIGKILL, also of what it started") {
    // Cancelled only once the trap is set (the command says so on a pipe).
    uint64_t drained = 0;
    REQUIRE(read(efd, &drained, sizeof drained) == sizeof drained);
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    std::thread canceller([&] {
      char c;
      if (read(ready[0], &c, 1) == 1) REQUIRE(write(efd, &one, sizeof one) == sizeof one);
    });
    spec.argv = {
        "sh", "-c",
        "trap '' TERM; echo >&" + std::to_string(ready[1]) + "; sleep 30 & wait; sleep 30"};
    auto start = std::chrono::steady_clock::now();
    ChildResult r = RunChild(spec, efd);
    close(ready[1]);
    canceller.join();
    close(ready[0]);
    CHECK(r.cancelled);
    CHECK(r.term_signal == SIGKILL);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  }
  close(efd);
}

TEST_CASE("what a command leaves running in its group does not outlive it") {
  ChildSpec spec;
  spec.argv = {"sh", "-c", "sleep 30 & echo started"};
  spec.env = {"PATH=/usr/bin:/bin"};
  auto start = std::chrono::steady_clock::now();
  ChildResult r = RunChild(spec, -1);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_data == "started\n");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("a command that cannot be run is reported") {
  ChildSpec spec;
  spec.argv = {"/nonexistent/command"};
  ChildResult r = RunChild(spec, -1);
  CHECK_FALSE(r.spawned);
  CHECK(r.spawn_error.find("/nonexistent/command") != std::string::npos);
}

}  // namespace
}  // namespace sluice

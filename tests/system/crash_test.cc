// Crash safety (issue 4): the real sluiced is killed with SIGKILL at random moments while
// submitters and workers keep running against it, and restarted on the same SQLite file.
// Afterwards every acknowledged job exists and has succeeded, no job was completed twice or
// under two leases, and no job was held by two live leases at once (DESIGN.md rule 7, intake).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/time.h"
#include "tests/system/load.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_db.h"

namespace sluice::testing {
namespace {

using namespace load;  // NOLINT(build/namespaces): the shared load (load.h)
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kQueue[] = "crash";
constexpr int64_t kLeaseMs = 2000;
constexpr int kKills = 12;
constexpr int kSubmitters = 3;
constexpr int kBatchSubmitters = 1;  // POST jobs:batch: each 202 item is acknowledged
constexpr int kMaxBatch = 40;
constexpr int kWorkers = 3;
// A bound on each submitter, far above what a run needs: the submitters hold back while
// kMaxBacklog acknowledged jobs wait for a completion, so on a fast machine they never
// run out of submits before the last kill (with a cap of 3000 and no backlog bound they
// did: no new 202 came, and the progress check failed).
constexpr int64_t kMaxSubmitsPerThread = 200000;
constexpr int64_t kMaxBacklog = 3000;
constexpr auto kProgressTimeout = std::chrono::seconds(15);
constexpr auto kDrainTimeout = std::chrono::seconds(45);

// Where the server listens now: the main thread publishes a new port after each restart,
// and 0 while the server is down. Thread-safe.
class CurrentServer {
 public:
  void Publish(int port) {
    std::lock_guard<std::mutex> lock(mu_);
    port_ = port;
    ++generation_;
  }
  // (port, generation); port 0 while the server is down.
  std::pair<int, int64_t> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {port_, generation_};
  }

 private:
  mutable std::mutex mu_;
  int port_ = 0;            // guarded by mu_
  int64_t generation_ = 0;  // guarded by mu_
};

// What the clients saw; acknowledged jobs map to the payload's seq.
using Ledger = load::Ledger<int64_t>;

// One thread's connection to whichever server is current. A transport error drops the
// client; the next request builds one for the port published then. Not thread-safe.
class Connection {
 public:
  Connection(const CurrentServer& current, Ledger& ledger, std::string token)
      : current_(current), ledger_(ledger), client_(std::move(token), 5) {}

  // nullopt when the server is down or the request did not get an answer.
  std::optional<HttpResult> Post(const std::string& path, const json& body) {
    return Send("POST", path, body);
  }
  std::optional<HttpResult> Get(const std::string& path) { return Send("GET", path, nullptr); }

 private:
  std::optional<HttpResult> Send(const std::string& method, const std::string& path,
                                 const json& body) {
    const auto endpoint = current_.Get();
    if (endpoint.first == 0) return std::nullopt;
    std::string raw;
    auto out = client_.Send(endpoint, method, path, body, &raw);
    if (!out) {
      ledger_.Count("transport error");
      return std::nullopt;
    }
    if (out->status >= 400 && (out->header("Content-Type") != "application/problem+json" ||
                               !out->body.is_object() || !out->body.contains("error"))) {
      ledger_.Anomaly(method + " " + path + " answered " + std::to_string(out->status) +
                      " without a problem+json body: " + raw);
    }
    return out;
  }

  const CurrentServer& current_;
  Ledger& ledger_;
  FollowingClient client_;
};

// Submitters and workers running against the current server. The destructor (the crews')
// stops and joins every thread, so a failed REQUIRE on the main thread never leaves one
// running.
class Load {
 public:
  Load(const CurrentServer& current, Ledger& ledger, uint64_t seed, std::string submit_token,
       std::string work_token)
      : current_(current),
        ledger_(ledger),
        submit_token_(std::move(submit_token)),
        work_token_(std::move(work_token)) {
    for (int i = 0; i < kSubmitters; ++i) {
      submitters_.Spawn([this, seed, i] { Submitter(seed * 31 + i); });
    }
    for (int i = 0; i < kBatchSubmitters; ++i) {
      submitters_.Spawn([this, seed, i] { BatchSubmitter(seed * 41 + i); });
    }
    for (int i = 0; i < kWorkers; ++i) {
      workers_.Spawn([this, seed, i] { Worker(seed * 37 + i, i); });
    }
  }

  void StopSubmitters() { submitters_.Stop(); }
  void StopWorkers() { workers_.Stop(); }

 private:
  void Submitter(uint64_t seed) {
    std::mt19937_64 rng(seed);
    Connection conn(current_, ledger_, submit_token_);
    const std::string path = std::string("/v1/queues/") + kQueue + "/jobs";
    for (int64_t n = 0; n < kMaxSubmitsPerThread && !submitters_.stopping(); ++n) {
      if (!AwaitRoom(rng)) break;
      const int64_t seq = next_seq_++;
      auto r = conn.Post(path, {{"payload", {{"seq", seq}}}});
      if (!r) {
        ledger_.Count("submit unanswered");
        Backoff(rng, 25);
        continue;
      }
      if (r->status == 202) {
        const std::string id = r->body.value("id", "");
        if (id.empty() || r->header("Location") != "/v1/jobs/" + id ||
            r->body.value("state", "") != "queued") {
          ledger_.Anomaly("a 202 without a proper job: " + r->body.dump());
          continue;
        }
        ledger_.Acknowledged(id, seq);
      } else if (r->status == 503) {
        ledger_.Count("submit 503");
        Backoff(rng, 25);
      } else {
        ledger_.Anomaly("submit answered " + std::to_string(r->status) + ": " + r->body.dump());
        Backoff(rng, 25);
      }
    }
  }

  // Backpressure: pauses while kMaxBacklog acknowledged jobs are not yet completed, so the
  // queue never fills and the submitters last the whole run; false once stopping.
  bool AwaitRoom(std::mt19937_64& rng) {
    while (!submitters_.stopping() &&
           static_cast<int64_t>(ledger_.acked_count()) - ledger_.complete_count() >= kMaxBacklog) {
      Backoff(rng, 10);
    }
    return !submitters_.stopping();
  }

  // Posts batches of 1 to kMaxBatch jobs: every item answered 202 is acknowledged, and
  // must survive the kills as a single submit's job does (the batch is one commit).
  void BatchSubmitter(uint64_t seed) {
    std::mt19937_64 rng(seed);
    Connection conn(current_, ledger_, submit_token_);
    const std::string path = std::string("/v1/queues/") + kQueue + "/jobs:batch";
    for (int64_t n = 0; n < kMaxSubmitsPerThread / 10 && !submitters_.stopping(); ++n) {
      if (!AwaitRoom(rng)) break;
      const int size = std::uniform_int_distribution<int>(1, kMaxBatch)(rng);
      std::vector<int64_t> seqs;
      json jobs = json::array();
      for (int k = 0; k < size; ++k) {
        seqs.push_back(next_seq_++);
        jobs.push_back({{"payload", {{"seq", seqs.back()}}}});
      }
      auto r = conn.Post(path, {{"jobs", jobs}});
      if (!r) {
        ledger_.Count("submit unanswered");
        Backoff(rng, 25);
        continue;
      }
      if (r->status == 503) {
        ledger_.Count("submit 503");
        Backoff(rng, 25);
        continue;
      }
      const json& results = r->body.contains("results") ? r->body["results"] : json();
      if (r->status != 200 || !results.is_array() || results.size() != seqs.size()) {
        ledger_.Anomaly("batch answered " + std::to_string(r->status) + ": " + r->body.dump());
        Backoff(rng, 25);
        continue;
      }
      for (size_t k = 0; k < seqs.size(); ++k) {
        const json& item = results[k];
        const std::string id = item.value("id", "");
        if (item.value("status", 0) != 202 || id.empty() || item.value("state", "") != "queued") {
          ledger_.Anomaly("a batch item not admitted: " + item.dump());
          continue;
        }
        ledger_.Acknowledged(id, seqs[k]);
        ledger_.Count("batch items acknowledged");
      }
    }
  }

  void Worker(uint64_t seed, int index) {
    std::mt19937_64 rng(seed);
    Connection conn(current_, ledger_, work_token_);
    const json lease_request = {{"queues", {kQueue}},
                                {"max_jobs", 5},
                                {"wait_ms", 200},
                                {"worker_id", "crash-worker-" + std::to_string(index)}};
    while (!workers_.stopping()) {
      const auto jobs = LeasedJobs(ledger_, conn.Post("/v1/leases", lease_request));
      if (!jobs) {
        Backoff(rng, 25);
        continue;
      }
      for (const json& job : *jobs) Complete(conn, rng, job["id"], job["lease_id"]);
    }
  }

  // Completes one job, retrying through a crash until its lease must have run out. Half the
  // time a crash makes the worker drop the job instead, as if it had died too: its lease
  // must run out and the job come back.
  void Complete(Connection& conn, std::mt19937_64& rng, const std::string& id,
                const std::string& lease_id) {
    const auto give_up = SteadyClock::now() + milliseconds(kLeaseMs + 500);
    const std::string path = "/v1/jobs/" + id + "/complete";
    while (!workers_.stopping()) {
      auto r = conn.Post(path, {{"lease_id", lease_id}, {"result", {{"ok", true}}}});
      if (r && r->status == 200) {
        if (r->body.value("state", "") != "succeeded") {
          ledger_.Anomaly("complete answered 200 but not succeeded: " + r->body.dump());
        }
        ledger_.Completed(id, lease_id);
        return;
      }
      if (r && r->status == 409 && r->body.value("error", "") == "lease_lost") {
        ledger_.Count("complete 409 lease_lost");
        return;
      }
      if (r && r->status != 503) {
        ledger_.Anomaly("complete answered " + std::to_string(r->status) + ": " + r->body.dump());
        return;
      }
      if (!r && std::bernoulli_distribution(0.5)(rng)) {
        ledger_.Count("complete dropped");
        return;
      }
      if (SteadyClock::now() > give_up) {
        ledger_.Count("complete abandoned");
        return;
      }
      Backoff(rng, 25);
    }
  }

  const CurrentServer& current_;
  Ledger& ledger_;
  const std::string submit_token_;
  const std::string work_token_;
  std::atomic<int64_t> next_seq_{0};
  // Last, so that they stop (submitters first) before the rest goes.
  Crew workers_;
  Crew submitters_;
};

TEST_CASE("crash: SIGKILL at random moments loses no acknowledged job", "[crash]") {
  const auto started = SteadyClock::now();
  const uint64_t seed = SeedFromEnvironmentOrRandom();
  std::printf("crash test seed %llu (rerun with SLUICE_CRASH_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);

  TempDir dir;
  ServerOptions options;
  options.db_path = TestDb(dir, "crash.db");
  auto server = std::make_unique<ServerProcess>(options);

  std::string submit_token, work_token;
  {
    auto admin = server->Client();
    const auto as_admin = Bearer(server->admin_token());
    auto q = Call(*admin, "PUT", std::string("/v1/admin/queues/") + kQueue,
                  {{"rate", 2000},
                   {"capacity", 100000},
                   {"burst", 100},
                   {"lease_ms", kLeaseMs},
                   {"max_attempts", 100}},
                  as_admin);
    REQUIRE(q.status == 200);
    auto s = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "crash"}},
                  as_admin);
    REQUIRE(s.status == 201);
    submit_token = s.body["token"];
    auto w = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}, as_admin);
    REQUIRE(w.status == 201);
    work_token = w.body["token"];
  }

  CurrentServer current;
  Ledger ledger(/*anomalies_kept=*/50);
  current.Publish(server->port());
  auto load = std::make_unique<Load>(current, ledger, seed, submit_token, work_token);

  // Both sides must have moved on the current server before it is killed again.
  auto await_progress = [&] {
    const size_t acked = ledger.acked_count();
    const int64_t completes = ledger.complete_count();
    return PollUntil(
        [&] { return ledger.acked_count() > acked && ledger.complete_count() > completes; },
        kProgressTimeout);
  };

  int kills = 0;
  int64_t slowest_restart_ms = 0;
  for (int i = 0; i < kKills; ++i) {
    INFO("kill " << i);
    REQUIRE(await_progress());
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(100, 400)(rng)));
    current.Publish(0);
    REQUIRE(server->Stop(SIGKILL) == -SIGKILL);
    ++kills;
    const auto restart = SteadyClock::now();
    server.reset();
    server = std::make_unique<ServerProcess>(options);
    slowest_restart_ms = std::max<int64_t>(
        slowest_restart_ms,
        std::chrono::duration_cast<milliseconds>(SteadyClock::now() - restart).count());
    current.Publish(server->port());
  }
  REQUIRE(await_progress());
  load->StopSubmitters();

  // Workers drain: jobs leased when the server died come back once their lease runs out.
  const std::map<std::string, int64_t> acked = ledger.acked();
  auto reader = server->Client(submit_token);
  std::set<std::string> lost, unfinished;
  for (const auto& [id, seq] : acked) unfinished.insert(id);
  const auto drain_deadline = SteadyClock::now() + kDrainTimeout;
  {
    auto admin = server->Client(server->admin_token());
    PollUntil(
        [&] {
          auto q = Call(*admin, "GET", std::string("/v1/admin/queues/") + kQueue);
          return q.status == 200 && q.body["stats"]["queued"] == 0 &&
                 q.body["stats"]["leased"] == 0;
        },
        kDrainTimeout);
  }
  while (!unfinished.empty() && SteadyClock::now() < drain_deadline) {
    for (auto it = unfinished.begin(); it != unfinished.end();) {
      auto r = Call(*reader, "GET", "/v1/jobs/" + *it);
      if (r.status == 404) {
        lost.insert(*it);
        it = unfinished.erase(it);
      } else if (r.status == 200 && r.body["state"] == "succeeded") {
        it = unfinished.erase(it);
      } else {
        ++it;
      }
    }
    if (!unfinished.empty()) std::this_thread::sleep_for(milliseconds(50));
  }
  load->StopWorkers();

  // Tally what the clients saw.
  std::vector<std::string> examples;
  const CompleteTally done = TallyCompletes(ledger.completed(), examples);
  const int64_t completes = done.completes, duplicates = done.completed_twice,
                two_lease_completes = done.two_lease_completes;
  const auto leases = ledger.leases();
  // Rule 7: a job is leased again only once its previous lease has run out.
  const LeaseTally leased = TallyLeases(leases);
  const auto overlaps = static_cast<int64_t>(leased.overlaps.size());
  for (const auto& [id, earlier, later] : leased.overlaps) {
    AddExample(examples, "two live leases on " + id + ": " + earlier.lease_id + " (attempt " +
                             std::to_string(earlier.attempt) + ", until " +
                             FormatRfc3339(earlier.expires_at) + ") and " + later.lease_id +
                             " (attempt " + std::to_string(later.attempt) + ", from " +
                             FormatRfc3339(later.leased_at) + ")");
  }
  int64_t later_attempts = 0, payload_mismatches = 0;
  for (const auto& [id, list] : leases) {
    auto a = acked.find(id);
    for (const ServerLease& g : list) {
      if (g.attempt > 1) ++later_attempts;
      if (a != acked.end() && g.seq != a->second) ++payload_mismatches;
    }
  }
  auto count = [&](const char* what) { return ledger.count(what); };
  const double wall_s = std::chrono::duration<double>(SteadyClock::now() - started).count();

  const std::vector<std::pair<const char*, int64_t>> report = {
      {"kills", kills},
      {"acknowledged (202)", static_cast<int64_t>(acked.size())},
      {"of them in batches", count("batch items acknowledged")},
      {"completed (200)", completes},
      {"lost", static_cast<int64_t>(lost.size())},
      {"unfinished", static_cast<int64_t>(unfinished.size())},
      {"duplicates", duplicates},
      {"completed under two leases", two_lease_completes},
      {"overlapping leases", overlaps},
      {"leases received", leased.grants},
      {"jobs leased twice", leased.leased_again},
      {"leases of attempt > 1", later_attempts},
      {"payload mismatches", payload_mismatches},
      {"complete 409 lease_lost", count("complete 409 lease_lost")},
      {"complete dropped by worker", count("complete dropped")},
      {"complete abandoned", count("complete abandoned")},
      {"submit unanswered", count("submit unanswered")},
      {"submit 503", count("submit 503")},
      {"transport errors", count("transport error")},
      {"anomalies", ledger.anomaly_count()},
      {"slowest restart (ms)", slowest_restart_ms},
  };
  std::printf("crash test, seed %llu:\n", static_cast<unsigned long long>(seed));
  for (const auto& [name, value] : report) {
    std::printf("  %-28s %lld\n", name, static_cast<long long>(value));
  }
  std::printf("  %-28s %.1f\n", "wall time (s)", wall_s);
  for (const auto& e : examples) std::printf("  %s\n", e.c_str());
  for (const auto& a : ledger.anomalies()) std::printf("  anomaly: %s\n", a.c_str());
  std::fflush(stdout);

  INFO("kills " << kills << ", acknowledged " << acked.size() << ", completed " << completes
                << ", lost " << lost.size() << ", unfinished " << unfinished.size()
                << ", duplicates " << duplicates);
  CHECK(kills >= 10);
  CHECK(acked.size() > 0);
  CHECK(count("batch items acknowledged") > 0);
  // 1 and 4: every job that got a 202 exists after the restarts.
  CHECK(lost.empty());
  // 2: every acknowledged job reaches succeeded once workers drain.
  CHECK(unfinished.empty());
  // 3: no job completed under two leases, at most one 200 complete per job, and no job was
  // held by two live leases.
  CHECK(two_lease_completes == 0);
  CHECK(duplicates == 0);
  CHECK(overlaps == 0);
  // The server spoke the protocol throughout: payloads intact, only expected answers.
  CHECK(payload_mismatches == 0);
  CHECK(ledger.anomaly_count() == 0);
  CHECK(wall_s < 90);
}

}  // namespace
}  // namespace sluice::testing

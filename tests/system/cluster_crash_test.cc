// Crash safety of a cluster (testutil/cluster.h): three sluiced on one PostgreSQL
// database under submitters and workers, (1) killed with SIGKILL one at a time at
// random moments and restarted, (2) the database stopped with `pg_ctl stop -m
// immediate` and started again. Afterwards every job that got a 202 is in the database
// and has succeeded exactly once, no job was completed under two leases or held by two
// live leases at once, and a worker whose lease was lost got 409 lease_lost. Leases held
// through a killed instance lapse (lease_ms 2 s) and the jobs come back.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/time.h"
#include "tests/system/cluster_load.h"
#include "tests/testutil/cluster.h"
#include "tests/testutil/pg_server.h"

namespace sluice::testing {
namespace {

using namespace cluster_load;  // NOLINT(build/namespaces)
using std::chrono::milliseconds;

constexpr char kQueue[] = "crash";
constexpr int64_t kLeaseMs = 2000;
constexpr int kSubmitters = 3;
constexpr int kWorkersPerInstance = 2;
constexpr int64_t kMaxSubmitsPerThread = 2000;

// The crash queue, submitters that move to the next instance when one does not answer,
// and workers bound to one instance each that complete through any instance. Stopped by
// the destructor.
class Load {
 public:
  Load(Cluster& cluster, Ledger& ledger, uint64_t seed) : cluster_(cluster), ledger_(ledger) {
    cluster.Admin(0, "PUT", std::string("/v1/admin/queues/") + kQueue,
                  {{"rate", 2000},
                   {"capacity", 100000},
                   {"burst", 100},
                   {"lease_ms", kLeaseMs},
                   {"max_attempts", 100}});
    submit_ = cluster.CreateToken({"submit"}, "crash");
    work_ = cluster.CreateToken({"work"});
    for (int i = 0; i < kSubmitters; ++i) {
      submitters_.Spawn([this, seed, i] { Submitter(seed * 31 + static_cast<uint64_t>(i), i); });
    }
    for (int i = 0; i < cluster.size() * kWorkersPerInstance; ++i) {
      workers_.Spawn([this, seed, i] { Worker(seed * 37 + static_cast<uint64_t>(i), i); });
    }
  }

  void StopSubmitters() { submitters_.Stop(); }
  void StopWorkers() { workers_.Stop(); }

 private:
  std::vector<std::unique_ptr<InstanceConn>> Conns(const std::string& token) {
    std::vector<std::unique_ptr<InstanceConn>> conns;
    for (int i = 0; i < cluster_.size(); ++i) {
      conns.push_back(std::make_unique<InstanceConn>(cluster_[i], token, 5));
    }
    return conns;
  }

  void Submitter(uint64_t seed, int index) {
    std::mt19937_64 rng(seed);
    auto conns = Conns(submit_);
    size_t at = static_cast<size_t>(index) % conns.size();
    const std::string path = std::string("/v1/queues/") + kQueue + "/jobs";
    for (int64_t n = 0; n < kMaxSubmitsPerThread && !submitters_.stopping();) {
      auto r = conns[at]->Post(path, {{"payload", {{"s", index}, {"n", n}}}});
      if (r && r->status == 202) {
        ledger_.Acknowledged(r->body.value("id", ""), "crash");
        ++n;
        at = (at + 1) % conns.size();  // spread over every instance
        continue;
      }
      if (!r) {
        ledger_.Count("submit retried (no answer)");
      } else if (r->status == 503) {
        ledger_.Count("submit retried (503)");
      } else {
        ledger_.Anomaly("submit answered " + std::to_string(r->status) + ": " + r->body.dump());
        ++n;
      }
      at = (at + 1) % conns.size();  // the retry goes to another instance
      Backoff(rng, 30);
    }
  }

  void Worker(uint64_t seed, int index) {
    std::mt19937_64 rng(seed);
    auto conns = Conns(work_);
    const size_t home = static_cast<size_t>(index) % conns.size();
    const json request = {{"queues", {kQueue}},
                          {"max_jobs", 4},
                          {"wait_ms", 300},
                          {"worker_id", "cw-" + std::to_string(index)}};
    std::vector<Zombie> zombies;
    while (!workers_.stopping()) {
      Stale(conns, home, zombies);
      const auto jobs = LeasedJobs(ledger_, conns[home]->Post("/v1/leases", request));
      if (!jobs) {
        Backoff(rng, 30);
        continue;
      }
      for (const json& job : *jobs) {
        const std::string id = job["id"], lease_id = job["lease_id"];
        // Now and then a worker dies holding a job: its lease must lapse and the job
        // come back; the old lease is tried once more later and must be refused.
        if (std::bernoulli_distribution(0.02)(rng)) {
          ledger_.Count("lease abandoned by worker");
          zombies.push_back({SteadyClock::now() + milliseconds(kLeaseMs + 1000), id, lease_id});
          continue;
        }
        if (!Complete(conns, home, rng, id, lease_id)) {
          zombies.push_back({SteadyClock::now() + milliseconds(kLeaseMs + 1000), id, lease_id});
        }
      }
    }
  }

  // A lease a worker walked away from, and when it has surely run out.
  struct Zombie {
    SteadyClock::time_point due;
    std::string id;
    std::string lease_id;
  };

  // Completes each zombie lease that is due: rule 7 says 409 lease_lost.
  void Stale(std::vector<std::unique_ptr<InstanceConn>>& conns, size_t at,
             std::vector<Zombie>& zombies) {
    const auto now = SteadyClock::now();
    for (auto it = zombies.begin(); it != zombies.end();) {
      if (it->due > now) {
        ++it;
        continue;
      }
      auto r = conns[at]->Post("/v1/jobs/" + it->id + "/complete", {{"lease_id", it->lease_id}});
      if (!r || r->status == 503) {
        ++it;  // try again later
        continue;
      }
      ledger_.Count("stale complete answered");
      if (r->status == 409 && r->body.value("error", "") == "lease_lost") {
        ledger_.Count("stale complete 409 lease_lost");
      } else {
        ledger_.Anomaly("complete on a lapsed lease answered " + std::to_string(r->status) + ": " +
                        r->body.dump());
        if (r->status == 200) ledger_.Completed(it->id, it->lease_id);
      }
      it = zombies.erase(it);
    }
  }

  // Completes through the worker's instance, or through the next one when that one does
  // not answer, until the lease must have run out. Half the time an unanswered complete
  // makes the worker drop the job, as if it had died too.
  // False when the worker dropped the job (its lease left to lapse).
  bool Complete(std::vector<std::unique_ptr<InstanceConn>>& conns, size_t at, std::mt19937_64& rng,
                const std::string& id, const std::string& lease_id) {
    const auto give_up = SteadyClock::now() + milliseconds(kLeaseMs + 500);
    const std::string path = "/v1/jobs/" + id + "/complete";
    while (!workers_.stopping()) {
      auto r = conns[at]->Post(path, {{"lease_id", lease_id}, {"result", {{"ok", true}}}});
      if (r && r->status == 200) {
        ledger_.Completed(id, lease_id);
        return true;
      }
      if (r && r->status == 409 && r->body.value("error", "") == "lease_lost") {
        ledger_.Count("complete 409 lease_lost");
        return true;
      }
      if (r && r->status != 503) {
        ledger_.Anomaly("complete answered " + std::to_string(r->status) + ": " + r->body.dump());
        return true;
      }
      if (!r && std::bernoulli_distribution(0.5)(rng)) {
        ledger_.Count("complete dropped by worker");
        return false;
      }
      if (SteadyClock::now() > give_up) {
        ledger_.Count("complete abandoned");
        return true;
      }
      ledger_.Count("complete retried");
      if (!r) at = (at + 1) % conns.size();
      Backoff(rng, 30);
    }
    return true;
  }

  Cluster& cluster_;
  Ledger& ledger_;
  std::string submit_;  // tokens, set before the threads start
  std::string work_;
  // Last, so that they stop (submitters first) before the rest goes.
  Crew workers_;
  Crew submitters_;
};

// Awaits progress on both sides: more 202s and more completes than now.
bool AwaitProgress(const Ledger& ledger, SteadyClock::duration timeout) {
  const size_t acked = ledger.acked_count();
  const int64_t completes = ledger.complete_count();
  return PollUntil(
      [&] { return ledger.acked_count() > acked && ledger.complete_count() > completes; }, timeout);
}

// Stops submitters, lets workers drain the queue (leases of dead instances lapse), stops
// them, and checks and prints everything. `extra` rows join the printed counts.
void DrainAndCheck(const char* title, Cluster& cluster, Ledger& ledger, Load& load,
                   const std::vector<std::pair<const char*, int64_t>>& extra,
                   SteadyClock::time_point started) {
  load.StopSubmitters();
  const bool drained = PollUntil(
      [&] {
        return cluster.QueryInt(std::string("SELECT count(*) FROM jobs WHERE queue = '") + kQueue +
                                "' AND state IN ('queued', 'leased')") == 0;
      },
      std::chrono::seconds(45));
  // Every lease a worker walked away from is tried once more, stale.
  const int64_t walked_away =
      ledger.count("lease abandoned by worker") + ledger.count("complete dropped by worker");
  const bool stale_tried =
      PollUntil([&] { return ledger.count("stale complete answered") >= walked_away; },
                std::chrono::seconds(10));
  load.StopWorkers();

  // The database's view of every job.
  std::map<std::string, std::pair<std::string, int64_t>> stored;  // id → state, attempt
  for (const auto& row : cluster.Query(
           std::string("SELECT id, state, attempt FROM jobs WHERE queue = '") + kQueue + "'")) {
    stored[*row[0]] = {*row[1], std::stoll(*row[2])};
  }
  const auto acked = ledger.acked();
  const auto completed = ledger.completed();
  int64_t lost = 0, not_succeeded = 0, acked_not_completed = 0;
  std::vector<std::string> examples;
  for (const auto& [id, tenant] : acked) {
    auto it = stored.find(id);
    if (it == stored.end()) {
      ++lost;
      if (examples.size() < 5) examples.push_back("lost: " + id);
    } else if (it->second.first != "succeeded") {
      ++not_succeeded;
      if (examples.size() < 5) examples.push_back(id + " is " + it->second.first);
    }
    if (!completed.count(id)) ++acked_not_completed;
  }
  const CompleteTally done = TallyCompletes(completed, examples);
  const int64_t completes = done.completes, completed_twice = done.completed_twice,
                two_lease_completes = done.two_lease_completes;
  // No job held by two live leases: each lease starts once the one before has run out.
  const LeaseTally leased = TallyLeases(ledger.leases());
  const auto overlaps = static_cast<int64_t>(leased.overlaps.size());
  for (const auto& [id, earlier, later] : leased.overlaps) {
    AddExample(examples,
               "two live leases on " + id + ": attempt " + std::to_string(earlier.attempt) +
                   " until " + FormatRfc3339(earlier.expires_at) + ", attempt " +
                   std::to_string(later.attempt) + " from " + FormatRfc3339(later.leased_at));
  }
  const int64_t stored_not_acked =
      static_cast<int64_t>(stored.size()) - static_cast<int64_t>(acked.size()) + lost;
  std::vector<std::pair<const char*, int64_t>> report = extra;
  const std::vector<std::pair<const char*, int64_t>> rows = {
      {"acknowledged (202)", static_cast<int64_t>(acked.size())},
      {"in the database", static_cast<int64_t>(stored.size())},
      {"stored without a 202 seen", stored_not_acked},
      {"completed (200)", completes},
      {"lost", lost},
      {"not succeeded", not_succeeded},
      {"acked, never completed", acked_not_completed},
      {"completed twice", completed_twice},
      {"completed under two leases", two_lease_completes},
      {"leases received", leased.grants},
      {"jobs leased again", leased.leased_again},
      {"overlapping leases", overlaps},
      {"complete 409 lease_lost", ledger.count("complete 409 lease_lost")},
      {"lease abandoned by worker", ledger.count("lease abandoned by worker")},
      {"stale complete 409 lease_lost", ledger.count("stale complete 409 lease_lost")},
      {"complete retried", ledger.count("complete retried")},
      {"complete dropped by worker", ledger.count("complete dropped by worker")},
      {"complete abandoned", ledger.count("complete abandoned")},
      {"submit retried (no answer)", ledger.count("submit retried (no answer)")},
      {"submit retried (503)", ledger.count("submit retried (503)")},
      {"anomalies", ledger.anomaly_count()},
  };
  report.insert(report.end(), rows.begin(), rows.end());
  std::printf("%s:\n", title);
  for (const auto& [name, value] : report) {
    std::printf("  %-30s %lld\n", name, static_cast<long long>(value));
  }
  std::printf("  %-30s %s\n", "drained", drained ? "yes" : "no");
  std::printf("  %-30s %.1f\n", "wall time (s)",
              std::chrono::duration<double>(SteadyClock::now() - started).count());
  for (const auto& e : examples) std::printf("  %s\n", e.c_str());
  for (const auto& a : ledger.anomalies()) std::printf("  anomaly: %s\n", a.c_str());
  std::fflush(stdout);

  CHECK(!acked.empty());
  CHECK(drained);
  CHECK(lost == 0);
  CHECK(not_succeeded == 0);
  CHECK(completed_twice == 0);
  CHECK(two_lease_completes == 0);
  // Leases are durable on PostgreSQL too, so even its own crash forgets none (a forgotten
  // lease shows here as one attempt handed out twice).
  CHECK(overlaps == 0);
  // Workers walked away from leases, and each stale lease was refused (else an anomaly).
  CHECK(stale_tried);
  CHECK(ledger.count("stale complete 409 lease_lost") == walked_away);
  // (An acked job with no 200 seen is fine: its complete may have committed just before
  // the instance died, the answer lost; the database says it succeeded, once.)
  CHECK(ledger.anomaly_count() == 0);
}

TEST_CASE("cluster crash: SIGKILL of random instances loses no acknowledged job",
          "[cluster][postgres][crash]") {
  const auto started = SteadyClock::now();
  const uint64_t seed = SeedFromEnvironmentOrRandom();
  std::printf("cluster crash test seed %llu (rerun with SLUICE_CRASH_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  ClusterOptions options;
  options.extra_args = {"--db-pool", "4"};
  Cluster cluster(options);
  Ledger ledger;
  Load load(cluster, ledger, seed);

  constexpr int kKills = 10;
  int kills = 0, same_port = 0;
  int64_t slowest_restart_ms = 0;
  for (int k = 0; k < kKills; ++k) {
    INFO("kill " << k);
    REQUIRE(AwaitProgress(ledger, std::chrono::seconds(15)));
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(50, 300)(rng)));
    const int victim = std::uniform_int_distribution<int>(0, cluster.size() - 1)(rng);
    REQUIRE(cluster[victim].Kill(SIGKILL) == -SIGKILL);
    ++kills;
    // Down for a moment while the others carry on.
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(0, 300)(rng)));
    const bool reuse = std::bernoulli_distribution(0.5)(rng);
    same_port += reuse ? 1 : 0;
    const auto restart = SteadyClock::now();
    cluster[victim].Restart(/*new_port=*/!reuse);
    slowest_restart_ms = std::max<int64_t>(
        slowest_restart_ms,
        std::chrono::duration_cast<milliseconds>(SteadyClock::now() - restart).count());
  }
  REQUIRE(AwaitProgress(ledger, std::chrono::seconds(15)));
  DrainAndCheck("cluster crash (SIGKILL)", cluster, ledger, load,
                {{"kills", kills},
                 {"restarts on the same port", same_port},
                 {"slowest restart (ms)", slowest_restart_ms}},
                started);
  CHECK(kills >= 10);
}

TEST_CASE("cluster crash: PostgreSQL stopped immediately under load loses no acknowledged job",
          "[cluster][postgres][crash]") {
  const auto started = SteadyClock::now();
  const uint64_t seed = SeedFromEnvironmentOrRandom();
  std::printf("cluster outage test seed %llu\n", static_cast<unsigned long long>(seed));
  PgServer pg;  // its own server: the shared one stays up
  ClusterOptions options;
  options.pg = &pg;
  options.extra_args = {"--db-pool", "4"};
  Cluster cluster(options);
  Ledger ledger;
  Load load(cluster, ledger, seed);

  // A good amount of work before, and after, the outage.
  REQUIRE(PollUntil([&] { return ledger.acked_count() >= 150 && ledger.complete_count() >= 100; },
                    std::chrono::seconds(30)));
  const int64_t unavailable_before = ledger.count("submit retried (503)");
  pg.Stop(/*immediate=*/true);
  const auto down = SteadyClock::now();
  CHECK(PollUntil([&] { return ledger.count("submit retried (503)") > unavailable_before; },
                  std::chrono::seconds(15)));
  std::this_thread::sleep_for(milliseconds(500));  // the outage lasts a little
  pg.Start();
  const int64_t outage_ms =
      std::chrono::duration_cast<milliseconds>(SteadyClock::now() - down).count();
  const size_t acked_before = ledger.acked_count();
  const int64_t completed_before = ledger.complete_count();
  CHECK(PollUntil(
      [&] {
        return ledger.acked_count() >= acked_before + 150 &&
               ledger.complete_count() >= completed_before + 100;
      },
      std::chrono::seconds(30)));
  // Every instance serves again without a restart.
  for (int i = 0; i < cluster.size(); ++i) {
    InstanceConn c(cluster[i], "");
    CHECK(PollUntil(
        [&] {
          auto r = c.Send("GET", "/readyz");
          return r && r->status == 200;
        },
        std::chrono::seconds(30)));
  }
  REQUIRE(AwaitProgress(ledger, std::chrono::seconds(15)));
  DrainAndCheck("cluster crash (PostgreSQL stop -m immediate)", cluster, ledger, load,
                {{"outage (ms)", outage_ms}}, started);
}

}  // namespace
}  // namespace sluice::testing

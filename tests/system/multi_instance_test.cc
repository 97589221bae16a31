// Several real sluiced on one PostgreSQL database behave as one: a change made through
// any instance wakes the long-polls parked on the others (LISTEN/NOTIFY, with the
// periodic re-check turned off so that only the notification can do it), token
// revocation and queue deletion reach every instance within a second, and maintenance
// runs on one instance at a time and fails over when that one is killed.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/cluster.h"
#include "tests/testutil/server_process.h"

namespace sluice::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

template <typename Pred>
bool Eventually(Pred pred, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

double MillisSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// `n` sluiced on one fresh database of the shared test server.
std::unique_ptr<Cluster> StartInstances(int n, std::vector<std::string> extra_args = {}) {
  ClusterOptions o;
  o.instances = n;
  o.extra_args = {"--db-pool", "3"};
  o.extra_args.insert(o.extra_args.end(), extra_args.begin(), extra_args.end());
  return std::make_unique<Cluster>(o);
}

struct Tokens {
  std::string submit, work;
};

Tokens MakeQueue(ClusterInstance& s, const std::string& queue, json policy) {
  auto admin = s.Client();
  REQUIRE(
      Call(*admin, "PUT", "/v1/admin/queues/" + queue, policy, Bearer(s.admin_token())).status ==
      200);
  Tokens t;
  t.submit = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}},
                  Bearer(s.admin_token()))
                 .body["token"];
  t.work = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}, Bearer(s.admin_token()))
               .body["token"];
  return t;
}

size_t WaitingLeases(ClusterInstance& s) {
  auto r = Call(*s.Client(), "GET", "/v1/admin/queues", nullptr, Bearer(s.admin_token()));
  return r.status == 200 ? r.body.value("waiting_leases", size_t{0}) : 0;
}

// A long-poll on `s` in the background: its answer, and when it came.
struct ParkedLease {
  std::future<HttpResult> answer;
};

ParkedLease Park(ClusterInstance& s, const std::string& token, const std::string& queue,
                 int wait_ms) {
  ParkedLease p;
  p.answer = std::async(std::launch::async, [&s, token, queue, wait_ms] {
    auto c = s.Client();
    c->set_read_timeout(60, 0);
    return Call(*c, "POST", "/v1/leases",
                {{"queues", {queue}}, {"max_jobs", 1}, {"wait_ms", wait_ms}}, Bearer(token));
  });
  REQUIRE(Eventually([&] { return WaitingLeases(s) == 1; }, std::chrono::seconds(10)));
  return p;
}

std::string Submit(ClusterInstance& s, const std::string& token, const std::string& queue,
                   json body = {{"payload", 1}}) {
  auto r = Call(*s.Client(), "POST", "/v1/queues/" + queue + "/jobs", body, Bearer(token));
  REQUIRE(r.status == 202);
  return r.body["id"];
}

// The job a parked lease got; fails the test if it was answered empty (its wait ran out:
// nothing woke it) or with an error.
json Got(ParkedLease& p) {
  REQUIRE(p.answer.wait_for(std::chrono::seconds(50)) == std::future_status::ready);
  HttpResult r = p.answer.get();
  REQUIRE(r.status == 200);
  REQUIRE(r.body["jobs"].size() == 1);
  return r.body["jobs"][0];
}

std::optional<double> Gauge(ClusterInstance& s, const std::string& name) {
  auto c = s.Client();
  c->set_connection_timeout(1, 0);
  auto r = c->Get("/metrics", Bearer(s.admin_token()));
  if (!r || r->status != 200) return std::nullopt;
  const std::string needle = "\n" + name + " ";
  const size_t at = r->body.find(needle);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(r->body.substr(at + needle.size()));
}

std::string JobState(ClusterInstance& s, const std::string& token, const std::string& id) {
  auto r = Call(*s.Client(), "GET", "/v1/jobs/" + id, nullptr, Bearer(token));
  return r.status == 200 ? r.body.value("state", "") : "";
}

}  // namespace

// The wait a woken long-poll would otherwise sit out: long enough that only a wake-up
// explains an answer well before it (and --recheck-ms 0 rules out the periodic look).
constexpr int kLongWaitMs = 25000;
constexpr double kWokenWellBefore = kLongWaitMs / 2.0;

TEST_CASE("many instances: a submit on one instance wakes a long-poll parked on another",
          "[cluster][postgres]") {
  auto cluster = StartInstances(2, {"--recheck-ms", "0"});
  Cluster& s = *cluster;
  Tokens t = MakeQueue(s[0], "q", {{"rate", 1000}, {"capacity", 1000}});
  std::vector<double> ms;
  for (int i = 0; i < 3; ++i) {
    ParkedLease p = Park(s[1], t.work, "q", kLongWaitMs);
    const auto t0 = Clock::now();
    const std::string id = Submit(s[0], t.submit, "q");
    json job = Got(p);
    ms.push_back(MillisSince(t0));
    CHECK(job["id"] == id);
    CHECK(ms.back() < kWokenWellBefore);
    REQUIRE(Call(*s[1].Client(), "POST", "/v1/jobs/" + id + "/complete",
                 {{"lease_id", job["lease_id"]}}, Bearer(t.work))
                .status == 200);
  }
  std::printf("cross-instance wake-up after submit: %.1f / %.1f / %.1f ms\n", ms[0], ms[1], ms[2]);
}

TEST_CASE(
    "many instances: a resume and a lease ending on one instance wake long-polls on "
    "another",
    "[cluster][postgres]") {
  auto cluster = StartInstances(3, {"--recheck-ms", "0"});
  Cluster& s = *cluster;
  Tokens t = MakeQueue(s[0], "q", {{"rate", 1000}, {"capacity", 1000}, {"max_inflight", 1}});
  auto admin = s[2].Client();

  SECTION("resume") {
    REQUIRE(Call(*admin, "POST", "/v1/admin/queues/q/pause", nullptr, Bearer(s[2].admin_token()))
                .status < 300);
    const std::string id = Submit(s[0], t.submit, "q");
    ParkedLease p = Park(s[1], t.work, "q", kLongWaitMs);
    const auto t0 = Clock::now();
    REQUIRE(Call(*admin, "POST", "/v1/admin/queues/q/resume", nullptr, Bearer(s[2].admin_token()))
                .status < 300);
    json job = Got(p);
    CHECK(job["id"] == id);
    CHECK(MillisSince(t0) < kWokenWellBefore);
  }
  SECTION("a lease ending frees the queue's cap") {
    const std::string first = Submit(s[0], t.submit, "q");
    auto lease = Call(*s[0].Client(), "POST", "/v1/leases", {{"queues", {"q"}}, {"max_jobs", 1}},
                      Bearer(t.work));
    REQUIRE(lease.body["jobs"].size() == 1);
    const std::string second = Submit(s[0], t.submit, "q");
    ParkedLease p = Park(s[1], t.work, "q", kLongWaitMs);  // held back by max_inflight 1
    const auto t0 = Clock::now();
    REQUIRE(Call(*s[2].Client(), "POST", "/v1/jobs/" + first + "/complete",
                 {{"lease_id", lease.body["jobs"][0]["lease_id"]}}, Bearer(t.work))
                .status == 200);
    json job = Got(p);
    CHECK(job["id"] == second);
    CHECK(MillisSince(t0) < kWokenWellBefore);
  }
  SECTION("a policy change") {
    // The queue's cap of one holds the second job back until the policy raises it.
    Submit(s[0], t.submit, "q");
    auto lease = Call(*s[0].Client(), "POST", "/v1/leases", {{"queues", {"q"}}, {"max_jobs", 1}},
                      Bearer(t.work));
    REQUIRE(lease.body["jobs"].size() == 1);
    const std::string second = Submit(s[0], t.submit, "q");
    ParkedLease p = Park(s[1], t.work, "q", kLongWaitMs);
    const auto t0 = Clock::now();
    REQUIRE(Call(*admin, "PUT", "/v1/admin/queues/q",
                 {{"rate", 1000}, {"capacity", 1000}, {"max_inflight", 2}},
                 Bearer(s[2].admin_token()))
                .status == 200);
    json job = Got(p);
    CHECK(job["id"] == second);
    CHECK(MillisSince(t0) < kWokenWellBefore);
  }
}

TEST_CASE(
    "many instances: a token revoked on one instance is refused by every instance within "
    "a second and never again accepted",
    "[cluster][postgres]") {
  auto cluster = StartInstances(3);
  Cluster& s = *cluster;
  Tokens t = MakeQueue(s[0], "q", {{"rate", 1000}, {"capacity", 100000}});
  // Created on one instance, accepted at once by the others (and now in their caches).
  auto created = Call(*s[0].Client(), "POST", "/v1/admin/tokens",
                      {{"scopes", {"submit"}}, {"tenant", "beta"}}, Bearer(s[0].admin_token()));
  REQUIRE(created.status == 201);
  const std::string token = created.body["token"], id = created.body["id"];
  for (int i = 0; i < s.size(); ++i) Submit(s[i], token, "q");

  REQUIRE(
      Call(*s[0].Client(), "DELETE", "/v1/admin/tokens/" + id, nullptr, Bearer(s[0].admin_token()))
          .status == 200);
  const auto t0 = Clock::now();
  std::vector<double> refused_after(static_cast<size_t>(s.size()), -1);
  int accepted_late = 0;
  // Every instance, round and round, until each has refused it; then 20 more rounds.
  for (int rounds_after = 0; rounds_after < 20 && MillisSince(t0) < 5000;) {
    bool all = true;
    for (int i = 0; i < s.size(); ++i) {
      auto r = Call(*s[i].Client(), "POST", "/v1/queues/q/jobs", {{"payload", 1}}, Bearer(token));
      if (r.status == 401) {
        if (refused_after[static_cast<size_t>(i)] < 0)
          refused_after[static_cast<size_t>(i)] = MillisSince(t0);
      } else if (r.status == 202 && refused_after[static_cast<size_t>(i)] >= 0) {
        ++accepted_late;  // accepted again after a refusal: never allowed
      }
      // (After 20 of those 401s from this address, the failed-authentication layer
      // answers 429 rate_limited instead: a refusal too.)
      all = all && refused_after[static_cast<size_t>(i)] >= 0;
    }
    if (all) ++rounds_after;
  }
  std::printf("revocation refused after %.1f / %.1f / %.1f ms on the three instances\n",
              refused_after[0], refused_after[1], refused_after[2]);
  for (double ms : refused_after) {
    CHECK(ms >= 0);
    CHECK(ms < 1000);
  }
  CHECK(accepted_late == 0);
}

TEST_CASE("many instances: a queue deleted on one instance is gone on every instance",
          "[cluster][postgres]") {
  auto cluster = StartInstances(3);
  Cluster& s = *cluster;
  Tokens t = MakeQueue(s[0], "q", {{"rate", 1000}, {"capacity", 1000}});
  for (int n = 0; n < s.size(); ++n) {
    ClusterInstance& i = s[n];
    auto r = Call(*i.Client(), "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 0}},
                  Bearer(t.work));
    REQUIRE(r.status == 200);
  }
  REQUIRE(Call(*s[1].Client(), "DELETE", "/v1/admin/queues/q", nullptr, Bearer(s[1].admin_token()))
              .status < 300);
  for (int n = 0; n < s.size(); ++n) {
    ClusterInstance& i = s[n];
    auto sub = Call(*i.Client(), "POST", "/v1/queues/q/jobs", {{"payload", 1}}, Bearer(t.submit));
    CHECK(sub.status == 404);
    auto lease = Call(*i.Client(), "POST", "/v1/leases", {{"queues", {"q"}}, {"wait_ms", 0}},
                      Bearer(t.work));
    CHECK(lease.status == 404);
  }
}

TEST_CASE(
    "many instances: maintenance runs on one instance at a time and another takes over "
    "when it is killed",
    "[cluster][postgres]") {
  auto cluster = StartInstances(3);
  Cluster& s = *cluster;
  Tokens t = MakeQueue(s[0], "lapse", {{"rate", 1000}, {"capacity", 1000}});
  auto admin = s[0].Client();
  REQUIRE(Call(*admin, "PUT", "/v1/admin/queues/held", {{"rate", 1000}, {"capacity", 1000}},
               Bearer(s[0].admin_token()))
              .status == 200);
  REQUIRE(Call(*admin, "POST", "/v1/admin/queues/held/pause", nullptr, Bearer(s[0].admin_token()))
              .status < 300);

  auto leaders = [&](std::vector<int>* who) {
    size_t n = 0;
    for (int i = 0; i < s.size(); ++i) {
      if (!s[i].running()) continue;
      if (Gauge(s[i], "sluice_maintenance_leader").value_or(0) == 1) {
        ++n;
        if (who) who->push_back(i);
      }
    }
    return n;
  };
  std::vector<int> who;
  REQUIRE(Eventually([&] { return leaders(nullptr) == 1; }, std::chrono::seconds(10)));
  // Stays one: sampled for a while.
  for (int i = 0; i < 20; ++i) REQUIRE(leaders(nullptr) == 1);
  REQUIRE(leaders(&who) == 1);
  const int leader = who[0];
  const int other = (leader + 1) % s.size();

  // A lease that will lapse, and a queued job whose deadline will pass, with nobody
  // leasing from either queue again: only maintenance can end them.
  const std::string lapsing = Submit(s[other], t.submit, "lapse", {{"lease_ms", 300}});
  auto lease = Call(*s[other].Client(), "POST", "/v1/leases",
                    {{"queues", {"lapse"}}, {"max_jobs", 1}}, Bearer(t.work));
  REQUIRE(lease.body["jobs"].size() == 1);
  const std::string expiring = Submit(s[other], t.submit, "held", {{"deadline_in_ms", 1500}});

  const auto killed_at = Clock::now();
  REQUIRE(s[leader].Kill(SIGKILL) == -SIGKILL);
  REQUIRE(Eventually([&] { return leaders(nullptr) == 1; }, std::chrono::seconds(15)));
  const double failover_ms = MillisSince(killed_at);
  REQUIRE(Eventually([&] { return JobState(s[other], t.submit, lapsing) == "queued"; },
                     std::chrono::seconds(15)));
  REQUIRE(Eventually([&] { return JobState(s[other], t.submit, expiring) == "expired"; },
                     std::chrono::seconds(15)));
  std::printf("maintenance failover: a new leader %.0f ms after kill -9 of the old one\n",
              failover_ms);
  for (int i = 0; i < 20; ++i) REQUIRE(leaders(nullptr) == 1);
}

TEST_CASE(
    "many instances: a lost channel between instances strands no long-poll and comes "
    "back",
    "[cluster][postgres]") {
  ClusterOptions options;
  options.instances = 2;
  options.extra_args = {"--db-pool", "3", "--recheck-ms", "0"};
  Cluster c(options);
  c.Admin(0, "PUT", "/v1/admin/queues/q", {{"rate", 1000}, {"capacity", 1000}});
  const std::string submit = c.CreateToken({"submit"}, "acme");
  const std::string work = c.CreateToken({"work"});
  auto park = [&](int i) {
    return std::async(std::launch::async, [&c, i, work] {
      auto client = c[i].Client();
      client->set_read_timeout(60, 0);
      return Call(*client, "POST", "/v1/leases",
                  {{"queues", {"q"}}, {"max_jobs", 1}, {"wait_ms", kLongWaitMs}}, Bearer(work));
    });
  };
  auto parked = [&](int i) {
    auto r = Call(*c[i].Client(), "GET", "/v1/admin/queues", nullptr, Bearer(c.admin_token()));
    return r.status == 200 && r.body.value("waiting_leases", 0) == 1;
  };
  auto terminate_channels = [&] {
    return c.QueryInt(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = 'sluice-channel'");
  };
  for (int round = 0; round < 2; ++round) {
    // Round 0: the channels are cut while a long-poll is parked and just before the
    // submit; round 1: they are back, and wake as before.
    auto answer = park(1);
    REQUIRE(Eventually([&] { return parked(1); }, std::chrono::seconds(10)));
    if (round == 0) REQUIRE(terminate_channels() == 2);
    const auto t0 = Clock::now();
    auto sub =
        Call(*c[0].Client(), "POST", "/v1/queues/q/jobs", {{"payload", round}}, Bearer(submit));
    REQUIRE(sub.status == 202);
    REQUIRE(answer.wait_for(std::chrono::seconds(50)) == std::future_status::ready);
    HttpResult got = answer.get();
    REQUIRE(got.status == 200);
    REQUIRE(got.body["jobs"].size() == 1);
    CHECK(got.body["jobs"][0]["id"] == sub.body["id"]);
    CHECK(MillisSince(t0) < kWokenWellBefore);
    REQUIRE(Call(*c[1].Client(), "POST",
                 "/v1/jobs/" + sub.body["id"].get<std::string>() + "/complete",
                 {{"lease_id", got.body["jobs"][0]["lease_id"]}}, Bearer(work))
                .status == 200);
    std::printf("channel %s: parked long-poll woken %.1f ms after the submit\n",
                round == 0 ? "cut" : "back", MillisSince(t0));
  }
  // Both channels are back, and one of them holds the maintenance lock again.
  REQUIRE(Eventually(
      [&] {
        // The maintenance lock's key, 0x736c756963650001, as pg_locks shows a bigint
        // key: its high and low 32 bits.
        return c.QueryInt(
                   "SELECT count(*) FROM pg_stat_activity "
                   "WHERE application_name = 'sluice-channel'") == 2 &&
               c.QueryInt(
                   "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                   "granted AND classid = 1936487785 AND objid = 1667563521") == 1;
      },
      std::chrono::seconds(10)));
}

}  // namespace sluice::testing

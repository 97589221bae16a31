// First-in first-out within a bucket across every way a job comes back or leaves early
// (rule 8: the releasable job admitted first goes first): a retry after a failure, with
// or without a backoff; a cancel or a deadline expiry in the middle of a bucket; an
// admin retry of a failed or expired job; a new job after the cleaner removed every
// finished one. Contract tests (tag [store]): they run on every driver, and hold a
// storage layout that finds a bucket's head some other way than by scanning its jobs.
#include <catch2/catch.hpp>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

using testing::Ids;
using testing::MakePolicy;
using testing::StoreFixture;

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kMs = kMicrosPerMilli;

// A queue whose rate, burst and capacity never hold anything back here.
QueuePolicy Open(int64_t max_attempts = 3) {
  QueuePolicy p = MakePolicy(1'000'000'000, 1000);
  p.bucket.burst = 1000;
  p.max_attempts = max_attempts;
  return p;
}

TEST_CASE("A job failed with a backoff goes before younger jobs of its bucket once due",
          "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  JobRecord a = f.Admit("q", "acme");
  JobRecord b = f.Admit("q", "acme");
  JobRecord c = f.Admit("q", "acme");
  JobRecord leased = f.Lease({"q"}).jobs.at(0);
  REQUIRE(leased.id == a.id);
  REQUIRE(f.store().Fail(a.id, *leased.lease_id, FailRequest{"busy", true, 1000}, f.now()).ok());

  // Not due yet: the younger jobs go meanwhile, in order.
  CHECK(Ids(f.Lease({"q"}).jobs) == std::vector<std::string>{b.id});
  f.clock().Advance(kSecond);
  JobRecord d = f.Admit("q", "acme");
  LeaseOutcome out = f.Lease({"q"}, 10);
  CHECK(Ids(out.jobs) == std::vector<std::string>{a.id, c.id, d.id});
  REQUIRE_FALSE(out.jobs.empty());
  CHECK(out.jobs[0].attempt == 2);
}

TEST_CASE("A job failed with no backoff is leased again before younger jobs", "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  JobRecord a = f.Admit("q", "acme");
  JobRecord b = f.Admit("q", "acme");
  LeaseOutcome first = f.Lease({"q"}, 2);
  REQUIRE(Ids(first.jobs) == std::vector<std::string>{a.id, b.id});
  JobRecord c = f.Admit("q", "acme");
  // The younger of the two fails first; both come back before c, oldest first.
  REQUIRE(f.store().Fail(b.id, *first.jobs[1].lease_id, FailRequest{"x", true, 0}, f.now()).ok());
  REQUIRE(f.store().Fail(a.id, *first.jobs[0].lease_id, FailRequest{"x", true, 0}, f.now()).ok());
  CHECK(Ids(f.Lease({"q"}, 10).jobs) == std::vector<std::string>{a.id, b.id, c.id});
}

TEST_CASE("A lease that runs out puts its job back ahead of younger jobs", "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  JobRecord a = f.Admit("q", "acme");
  REQUIRE(f.Lease({"q"}, 1, /*lease_ms=*/1000).jobs.size() == 1);
  JobRecord b = f.Admit("q", "acme");
  f.clock().Advance(kSecond);
  LeaseOutcome out = f.Lease({"q"}, 10);
  CHECK(Ids(out.jobs) == std::vector<std::string>{a.id, b.id});
}

TEST_CASE("Canceled jobs anywhere in a bucket leave the rest in order", "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  std::vector<JobRecord> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(f.Admit("q", "acme"));
  // The head, one in the middle, and the last.
  for (int i : {0, 3, 5}) REQUIRE(f.store().Cancel(jobs[i].id, f.now()).ok());
  CHECK(f.Bucket("q", "acme").queued == 3);
  CHECK(Ids(f.Lease({"q"}, 1).jobs) == std::vector<std::string>{jobs[1].id});
  JobRecord later = f.Admit("q", "acme");
  CHECK(Ids(f.Lease({"q"}, 10).jobs) == std::vector<std::string>{jobs[2].id, jobs[4].id, later.id});
  CHECK(f.Lease({"q"}, 10).jobs.empty());
}

TEST_CASE("A job expired in the middle of a bucket is skipped, the rest leave in order",
          "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  REQUIRE(f.store().SetPaused("q", true, f.now()).ok());
  JobRecord a = f.Admit("q", "acme");
  NewJob late = StoreFixture::Job("q", "acme");
  late.deadline = f.now() + kSecond;
  JobRecord doomed = f.Admit(late);
  JobRecord c = f.Admit("q", "acme");
  f.clock().Advance(kSecond);
  REQUIRE(f.store().SetPaused("q", false, f.now()).ok());
  CHECK(Ids(f.Lease({"q"}, 10).jobs) == std::vector<std::string>{a.id, c.id});
  CHECK(f.Get(doomed.id).state == JobState::kExpired);
}

TEST_CASE("An admin retry queues a failed or expired job again, ahead of younger jobs", "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open(/*max_attempts=*/1));
  std::string retried;
  SECTION("a job failed for good") {
    JobRecord a = f.Admit("q", "acme");
    JobRecord leased = f.Lease({"q"}).jobs.at(0);
    auto failed = f.store().Fail(a.id, *leased.lease_id, FailRequest{"no", false, 0}, f.now());
    REQUIRE(failed.ok());
    REQUIRE(failed.value().state == JobState::kFailed);
    retried = a.id;
  }
  SECTION("a job that expired without ever being leased") {
    REQUIRE(f.store().SetPaused("q", true, f.now()).ok());
    NewJob late = StoreFixture::Job("q", "acme");
    late.deadline = f.now() + kSecond;
    JobRecord a = f.Admit(late);
    f.clock().Advance(kSecond);
    REQUIRE(f.store().ExpireDeadlines(f.now()).ok());
    REQUIRE(f.Get(a.id).state == JobState::kExpired);
    REQUIRE(f.store().SetPaused("q", false, f.now()).ok());
    retried = a.id;
  }
  JobRecord younger = f.Admit("q", "acme");
  f.clock().Advance(kSecond);
  auto r = f.store().Retry(retried, f.now());
  REQUIRE(r.ok());
  CHECK(r.value().state == JobState::kQueued);
  CHECK(r.value().attempt == 0);
  CHECK(f.Bucket("q", "acme").queued == 2);
  LeaseOutcome out = f.Lease({"q"}, 10);
  CHECK(Ids(out.jobs) == std::vector<std::string>{retried, younger.id});
  REQUIRE_FALSE(out.jobs.empty());
  CHECK(out.jobs[0].attempt == 1);
}

TEST_CASE("A job retried by an admin at the instant of its admission is leased again", "[store]") {
  // No time passes: the retried job is available from its admission, as a new job is,
  // though a younger job of its bucket has been leased since.
  StoreFixture f;
  f.PutQueue("q", Open(/*max_attempts=*/1));
  JobRecord a = f.Admit("q", "acme");
  JobRecord b = f.Admit("q", "acme");
  JobRecord leased = f.Lease({"q"}).jobs.at(0);
  REQUIRE(leased.id == a.id);
  REQUIRE(f.store().Fail(a.id, *leased.lease_id, FailRequest{"no", false, 0}, f.now()).ok());
  REQUIRE(Ids(f.Lease({"q"}).jobs) == std::vector<std::string>{b.id});
  auto r = f.store().Retry(a.id, f.now());
  REQUIRE(r.ok());
  REQUIRE(r.value().available_at == r.value().created_at);
  CHECK(Ids(f.Lease({"q"}, 10).jobs) == std::vector<std::string>{a.id});
}

TEST_CASE("A job retried by an admin while the clock reads before its admission is leased",
          "[store]") {
  // The clock stepped back (SQLite runs on the caller's clock): the retried job is
  // available from before its own admission, and must not be lost between the driver's
  // ways of finding a bucket's head.
  StoreFixture f;
  f.PutQueue("q", Open(/*max_attempts=*/1));
  const Micros admitted_at = f.now();
  JobRecord a = f.Admit("q", "acme");
  JobRecord leased = f.Lease({"q"}).jobs.at(0);
  REQUIRE(leased.id == a.id);
  REQUIRE(f.store().Fail(a.id, *leased.lease_id, FailRequest{"no", false, 0}, f.now()).ok());
  f.clock().Set(admitted_at - kSecond);
  auto r = f.store().Retry(a.id, f.now());
  REQUIRE(r.ok());
  REQUIRE(r.value().available_at < r.value().created_at);
  f.clock().Set(admitted_at + kSecond);  // the clock is right again
  CHECK(Ids(f.Lease({"q"}).jobs) == std::vector<std::string>{a.id});
}

TEST_CASE("After the cleaner removes every finished job, new jobs are leased in order", "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  for (int i = 0; i < 3; ++i) f.Admit("q", "acme");
  LeaseOutcome out = f.Lease({"q"}, 10);
  REQUIRE(out.jobs.size() == 3);
  for (const JobRecord& j : out.jobs) {
    REQUIRE(f.store().Complete(j.id, *j.lease_id, std::nullopt, f.now()).ok());
  }
  f.clock().Advance(kSecond);
  auto cleaned = f.store().Clean(f.now(), 100);
  REQUIRE(cleaned.ok());
  // All but the last: on SQLite it keeps new jobs' seqs above every bucket's cursor.
  CHECK(cleaned.value().cleaned >= 2);
  CHECK(f.store().ListJobs(JobFilter{}).value().jobs.size() <= 1);
  JobRecord a = f.Admit("q", "acme");
  JobRecord b = f.Admit("q", "acme");
  CHECK(Ids(f.Lease({"q"}, 10).jobs) == std::vector<std::string>{a.id, b.id});
}

// A pass reads a bucket's jobs after its head a few at a time, more with each read
// (store/engine/release.cc); these hold whatever the sizes of those reads.
TEST_CASE("A burst from one bucket comes in order, skipping a delayed job, in one lease",
          "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  std::vector<std::string> expected;
  JobRecord delayed;
  for (int i = 0; i < 45; ++i) {
    if (i == 17) {
      NewJob later = StoreFixture::Job("q", "acme");
      later.not_before = f.now() + kSecond;
      delayed = f.Admit(later);
      continue;
    }
    expected.push_back(f.Admit("q", "acme").id);
  }
  LeaseOutcome out = f.Lease({"q"}, 100);
  CHECK(Ids(out.jobs) == expected);
  f.clock().Advance(kSecond);
  CHECK(Ids(f.Lease({"q"}, 100).jobs) == std::vector<std::string>{delayed.id});
}

TEST_CASE("One lease takes every job of many buckets, each bucket in order", "[store]") {
  StoreFixture f;
  f.PutQueue("q", Open());
  // Buckets of one job, and buckets of many, admitted interleaved.
  std::map<std::string, std::vector<std::string>> admitted;
  for (int round = 0; round < 12; ++round) {
    for (int t = 0; t < 10; ++t) {
      if (t % 2 == 1 && round > 0) continue;
      const std::string tenant = "t" + std::to_string(t);
      admitted[tenant].push_back(f.Admit("q", tenant).id);
    }
  }
  LeaseOutcome out = f.Lease({"q"}, 200);
  std::map<std::string, std::vector<std::string>> leased;
  for (const JobRecord& j : out.jobs) leased[j.tenant].push_back(j.id);
  CHECK(leased == admitted);
  CHECK(out.jobs.size() == 5 * 12 + 5);
  CHECK(f.Lease({"q"}, 10).jobs.empty());
}

// Random runs of everything that moves a bucket's head (admissions in runs and one at a
// time, delayed jobs, cancels, acks, failures with and without a backoff, admin
// retries, time passing): every lease takes from each bucket a prefix of its queued jobs
// available then, in admission order, and in the end every job not canceled is leased
// until it finishes. On SQLite this holds the cursor (buckets.head_seq), which a lease
// leaves on the next fresh job it read, and the job read after a head when it is the
// next by number (statements.sql, ready_buckets).
TEST_CASE("Random admissions, leases, acks, failures and retries keep every bucket in order",
          "[store]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u);
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  StoreFixture f;
  f.PutQueue("q", Open());
  const std::vector<std::string> tenants = {"a", "b", "c"};
  std::map<std::string, std::vector<std::string>> admitted;  // by tenant, admission order
  std::set<std::string> live;                                // not finished for good
  std::map<std::string, JobRecord> leased;                   // by id
  int leases = 0, taken = 0;

  // Each bucket's queued jobs available now, in admission order.
  auto available = [&] {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [tenant, ids] : admitted) {
      for (const std::string& id : ids) {
        if (!live.count(id)) continue;
        JobRecord j = f.Get(id);
        if (j.state == JobState::kQueued && j.available_at <= f.now()) out[tenant].push_back(id);
      }
    }
    return out;
  };
  auto lease = [&](int64_t max_jobs) {
    const std::map<std::string, std::vector<std::string>> due = available();
    LeaseOutcome out = f.Lease({"q"}, max_jobs, /*lease_ms=*/600'000);
    std::map<std::string, std::vector<std::string>> got;
    for (const JobRecord& j : out.jobs) {
      got[j.tenant].push_back(j.id);
      leased[j.id] = j;
    }
    for (const auto& [tenant, ids] : got) {
      INFO("lease " << leases << ", bucket " << tenant);
      auto it = due.find(tenant);
      REQUIRE(it != due.end());
      REQUIRE(ids.size() <= it->second.size());
      CHECK(ids == std::vector<std::string>(it->second.begin(),
                                            it->second.begin() + static_cast<long>(ids.size())));
    }
    // Nothing available is left behind by a lease that wanted more.
    if (static_cast<int64_t>(out.jobs.size()) < max_jobs) {
      for (const auto& [tenant, ids] : due) CHECK(got[tenant].size() == ids.size());
    }
    ++leases;
    taken += static_cast<int>(out.jobs.size());
    return out.jobs.size();
  };
  auto finish = [&](const std::string& id, const Result<JobRecord>& r) {
    REQUIRE(r.ok());
    leased.erase(id);
    if (r.value().state == JobState::kSucceeded || r.value().state == JobState::kCanceled) {
      live.erase(id);
    }
  };

  for (int step = 0; step < 400; ++step) {
    const size_t op = pick(20);
    if (op < 5) {  // a run of jobs of one bucket, some delayed
      const std::string& tenant = tenants[pick(tenants.size())];
      const size_t run = 1 + pick(5);
      for (size_t k = 0; k < run; ++k) {
        NewJob j = StoreFixture::Job("q", tenant);
        if (pick(6) == 0) j.not_before = f.now() + static_cast<Micros>(1 + pick(3)) * kMs;
        const std::string id = f.Admit(j).id;
        admitted[tenant].push_back(id);
        live.insert(id);
      }
    } else if (op < 7) {  // a cancel of a queued job
      std::vector<std::string> queued;
      for (const std::string& id : live) {
        if (!leased.count(id) && f.Get(id).state == JobState::kQueued) queued.push_back(id);
      }
      if (!queued.empty()) {
        const std::string id = queued[pick(queued.size())];
        finish(id, f.store().Cancel(id, f.now()));
      }
    } else if (op < 13) {
      lease(static_cast<int64_t>(1 + pick(4)));
    } else if (op < 17 && !leased.empty()) {  // a leased attempt ends
      auto it = leased.begin();
      std::advance(it, static_cast<long>(pick(leased.size())));
      const JobRecord j = it->second;
      const size_t how = pick(10);
      if (how < 5) {
        finish(j.id, f.store().Complete(j.id, *j.lease_id, std::nullopt, f.now()));
      } else {
        FailRequest fail{"x", how < 9, static_cast<int64_t>(how < 7 ? 0 : 1 + pick(2))};
        finish(j.id, f.store().Fail(j.id, *j.lease_id, fail, f.now()));
      }
    } else if (op < 18) {  // an admin retry of a job failed for good
      for (const std::string& id : live) {
        if (!leased.count(id) && f.Get(id).state == JobState::kFailed) {
          REQUIRE(f.store().Retry(id, f.now()).ok());
          break;
        }
      }
    } else {
      f.clock().Advance(static_cast<Micros>(pick(3)) * kMs);
    }
  }
  // Drain: every job not canceled is leased until it finishes.
  f.clock().Advance(10 * kMs);
  for (int round = 0; round < 1000 && (lease(10) > 0 || !leased.empty()); ++round) {
    while (!leased.empty()) {
      const JobRecord j = leased.begin()->second;
      finish(j.id, f.store().Complete(j.id, *j.lease_id, std::nullopt, f.now()));
    }
  }
  for (const std::string& id : live) {
    INFO(id);
    CHECK(f.Get(id).state == JobState::kFailed);  // the only way left to finish
  }
  for (const std::string& t : tenants) {
    if (admitted.count(t)) CHECK(f.Bucket("q", t).queued == 0);
  }
  CHECK(leases > 80);
  CHECK(taken > 150);
}

}  // namespace
}  // namespace sluice

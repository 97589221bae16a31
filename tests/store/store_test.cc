// SqliteStore (store/store.h) on a fresh SQLite file per test, with virtual time: queue
// policies, admission, leasing under rate / caps / pause / fairness / FIFO, completion,
// failure and retry, deadline expiry, lease expiry, and the admin statistics.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "store/sqlite/sqlite.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::Ids;
using testing::MakePolicy;
using testing::StoreFixture;

constexpr Micros kSecond = kMicrosPerSecond;

size_t ErrorCount(const JobRecord& j) {
  json a = json::parse(j.errors);
  REQUIRE(a.is_array());
  return a.size();
}

TEST_CASE("PutQueue creates a queue at version 1 and every put bumps the version", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(2000, 10);
  QueueInfo q = f.PutQueue("export", p);
  CHECK(q.name == "export");
  CHECK(q.version == 1);
  CHECK_FALSE(q.paused);
  CHECK(q.policy.bucket.rate_milli == 2000);

  p.bucket.capacity = 20;
  CHECK(f.PutQueue("export", p).version == 2);
  p.max_inflight = 4;
  CHECK(f.PutQueue("export", p).version == 3);
  CHECK(f.PutQueue("other", p).version == 1);  // versions are per queue

  auto got = f.store().GetQueue("export");
  REQUIRE(got.ok());
  CHECK(got.value().version == 3);
  CHECK(got.value().policy.bucket.capacity == 20);
  CHECK(got.value().policy.max_inflight == 4);

  auto missing = f.store().GetQueue("nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kNotFound);

  CHECK(f.store().CheckQueue("export").ok());
  auto unknown = f.store().CheckQueue("nope");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kNotFound);
}

TEST_CASE("Submit admits a job and it is durable across a reopen", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1000);
  p.lease_ms = 4500;
  p.max_attempts = 7;
  f.PutQueue("export", p);
  f.PutQueue("export", p);  // version 2

  NewJob nj;
  nj.queue = "export";
  nj.tenant = "acme";
  nj.payload = R"({"report":42})";
  nj.cost = 3;
  SubmitOutcome out = f.Submit(nj);
  REQUIRE(out.decision.outcome == AdmissionOutcome::kAdmitted);
  REQUIRE(out.job);
  const JobRecord& job = *out.job;
  CHECK_FALSE(job.id.empty());
  CHECK(job.queue == "export");
  CHECK(job.tenant == "acme");
  CHECK(job.state == JobState::kQueued);
  CHECK(job.payload == R"({"report":42})");
  CHECK(job.cost == 3);
  CHECK(job.attempt == 0);
  CHECK(job.max_attempts == 7);  // the queue's, since the job did not ask
  CHECK(job.lease_ms == 4500);
  CHECK(job.policy_version == 2);
  CHECK(job.created_at == f.now());
  CHECK(job.available_at == f.now());
  CHECK(job.estimated_start == f.now());  // an idle bucket releases at once
  CHECK_FALSE(job.deadline);
  CHECK_FALSE(job.lease_id);
  CHECK(out.policy.capacity == 100);
  CHECK(out.decision.remaining == 100 - 3);

  f.Close();
  f.Open();
  JobRecord again = f.Get(job.id);
  CHECK(again.state == JobState::kQueued);
  CHECK(again.payload == job.payload);
  CHECK(again.cost == 3);
  CHECK(again.created_at == job.created_at);
  CHECK(again.estimated_start == job.estimated_start);
  CHECK(f.Bucket("export", "acme").queued_cost == 3);
}

TEST_CASE("Submit to an unknown queue is not_found; GetJob of an unknown id too", "[store]") {
  StoreFixture f;
  NewJob nj;
  nj.queue = "nope";
  nj.tenant = "acme";
  auto r = f.store().Submit(nj, f.now());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kNotFound);
  auto g = f.store().GetJob("job_missing");
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().code == ErrorCode::kNotFound);
}

TEST_CASE("A full bucket answers queue_full and inserts nothing", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1000, 3));
  for (int i = 0; i < 3; ++i) f.Admit("export", "acme");
  SubmitOutcome full = f.Submit(StoreFixture::Job("export", "acme", 1));
  CHECK(full.decision.outcome == AdmissionOutcome::kQueueFull);
  CHECK(full.decision.retry_after_s >= 1);
  CHECK_FALSE(full.job);
  SubmitOutcome heavy = f.Submit(StoreFixture::Job("export", "acme", 4));
  CHECK(heavy.decision.outcome == AdmissionOutcome::kCostOverCapacity);
  CHECK_FALSE(heavy.job);

  BucketInfo b = f.Bucket("export", "acme");
  CHECK(b.queued == 3);
  CHECK(b.queued_cost == 3);
  auto queues = f.store().ListQueues();
  REQUIRE(queues.ok());
  REQUIRE(queues.value().size() == 1);
  CHECK(queues.value()[0].stats.queued == 3);

  // Another tenant has its own bucket.
  f.Admit("export", "globex");
  CHECK(f.Bucket("export", "globex").queued == 1);
}

TEST_CASE("LeaseMany hands out a bucket's jobs first-in first-out", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1000);  // 1/s
  p.lease_ms = 60'000;
  f.PutQueue("export", p);
  std::vector<std::string> submitted;
  for (int i = 0; i < 5; ++i) {
    submitted.push_back(f.Admit("export", "acme", 1, "{\"n\":" + std::to_string(i) + "}").id);
  }
  std::vector<std::string> leased;
  while (leased.size() < submitted.size()) {
    LeaseOutcome out = f.Lease({"export"});
    if (out.jobs.empty()) {
      REQUIRE(out.wake_at);
      REQUIRE(*out.wake_at > f.now());
      f.clock().Set(*out.wake_at);
      continue;
    }
    REQUIRE(out.jobs.size() == 1);
    const JobRecord& j = out.jobs[0];
    CHECK(j.state == JobState::kLeased);
    CHECK(j.attempt == 1);
    REQUIRE(j.lease_id);
    REQUIRE(j.lease_expires_at);
    CHECK(*j.lease_expires_at == f.now() + 60'000 * kMicrosPerMilli);
    leased.push_back(j.id);
  }
  CHECK(leased == submitted);

  // Several in one call (burst lets them all out at once): still in admission order.
  QueuePolicy bursty = MakePolicy(1000);
  bursty.bucket.burst = 5;
  f.PutQueue("bursty", bursty);
  submitted.clear();
  for (int i = 0; i < 5; ++i) submitted.push_back(f.Admit("bursty", "acme").id);
  LeaseOutcome all = f.Lease({"bursty"}, 5);
  CHECK(Ids(all.jobs) == submitted);
}

TEST_CASE("LeaseMany respects the bucket's rate", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(2000));  // 2/s: one release every 500 ms
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(f.Admit("export", "acme").id);
  const Micros t0 = f.now();

  LeaseOutcome first = f.Lease({"export"}, /*max_jobs=*/10);
  REQUIRE(first.jobs.size() == 1);  // burst 1: one now, however many are asked for
  CHECK(first.jobs[0].id == ids[0]);

  LeaseOutcome again = f.Lease({"export"}, 10);
  CHECK(again.jobs.empty());
  REQUIRE(again.wake_at);
  CHECK(*again.wake_at == t0 + 500'000);

  f.clock().Set(t0 + 499'999);
  CHECK(f.Lease({"export"}, 10).jobs.empty());
  f.clock().Set(t0 + 500'000);
  LeaseOutcome second = f.Lease({"export"}, 10);
  REQUIRE(second.jobs.size() == 1);
  CHECK(second.jobs[0].id == ids[1]);
  CHECK_FALSE(second.wake_at);
}

TEST_CASE("After idle a bucket lets `burst` jobs out at once", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1000);
  p.bucket.burst = 3;
  f.PutQueue("export", p);
  for (int i = 0; i < 5; ++i) f.Admit("export", "acme");
  CHECK(f.Lease({"export"}, 10).jobs.size() == 3);
  LeaseOutcome rest = f.Lease({"export"}, 10);
  CHECK(rest.jobs.empty());
  REQUIRE(rest.wake_at);
  // TAT = now + 3 s, tolerance 2 s: the next may leave at now + 1 s.
  CHECK(*rest.wake_at == f.now() + kSecond);
}

TEST_CASE("max_inflight_per_tenant holds a bucket until a lease ends", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);  // 1000/s, burst 10: rate is not what holds it
  p.bucket.burst = 10;
  p.bucket.max_inflight_per_tenant = 1;
  f.PutQueue("export", p);
  for (int i = 0; i < 3; ++i) f.Admit("export", "acme");
  f.Admit("export", "globex");

  LeaseOutcome first = f.Lease({"export"}, 10);
  // One per tenant: acme's head and globex's.
  REQUIRE(first.jobs.size() == 2);
  f.clock().Advance(10 * kSecond);
  LeaseOutcome blocked = f.Lease({"export"}, 10);
  CHECK(blocked.jobs.empty());
  CHECK_FALSE(blocked.wake_at);  // only an event (a lease ending) can help
  CHECK(f.Bucket("export", "acme").leased == 1);

  const JobRecord& acme_job = first.jobs[0].tenant == "acme" ? first.jobs[0] : first.jobs[1];
  f.Complete(acme_job);
  LeaseOutcome next = f.Lease({"export"}, 10);
  REQUIRE(next.jobs.size() == 1);
  CHECK(next.jobs[0].tenant == "acme");
}

TEST_CASE("max_inflight holds the whole queue until a lease ends", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.max_inflight = 2;
  f.PutQueue("export", p);
  for (const char* t : {"a", "b", "c"}) {
    f.Admit("export", t);
    f.Admit("export", t);
  }
  LeaseOutcome first = f.Lease({"export"}, 10);
  REQUIRE(first.jobs.size() == 2);
  f.clock().Advance(10 * kSecond);
  LeaseOutcome blocked = f.Lease({"export"}, 10);
  CHECK(blocked.jobs.empty());
  CHECK_FALSE(blocked.wake_at);

  f.Complete(first.jobs[0]);
  CHECK(f.Lease({"export"}, 10).jobs.size() == 1);
  CHECK(f.Lease({"export"}, 10).jobs.empty());
  auto q = f.store().GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.leased == 2);
}

TEST_CASE("A paused queue releases nothing; intake goes on", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1000));
  REQUIRE(f.store().SetPaused("export", true, f.now()).ok());
  JobRecord j = f.Admit("export", "acme");  // still admitted
  NewJob later;
  later.queue = "export";
  later.tenant = "globex";
  later.not_before = f.now() + kSecond;
  f.Admit(later);
  LeaseOutcome out = f.Lease({"export"}, 10);
  CHECK(out.jobs.empty());
  CHECK_FALSE(out.wake_at);  // not even for the not_before job: the clock cannot help
  auto q = f.store().GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().paused);

  REQUIRE(f.store().SetPaused("export", false, f.now()).ok());
  out = f.Lease({"export"}, 10);
  REQUIRE(out.jobs.size() == 1);
  CHECK(out.jobs[0].id == j.id);

  auto missing = f.store().SetPaused("nope", true, f.now());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kNotFound);
}

TEST_CASE("Complete is guarded by the lease id", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1000));
  JobRecord submitted = f.Admit("export", "acme");
  LeaseOutcome out = f.Lease({"export"});
  REQUIRE(out.jobs.size() == 1);
  JobRecord leased = out.jobs[0];
  REQUIRE(leased.id == submitted.id);

  SECTION("a wrong lease id is lease_lost and changes nothing") {
    auto r = f.store().Complete(leased.id, "lse_not_mine", std::nullopt, f.now());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kLeaseLost);
    CHECK(f.Get(leased.id).state == JobState::kLeased);
  }
  SECTION("an unknown job is not_found") {
    auto r = f.store().Complete("job_unknown", *leased.lease_id, std::nullopt, f.now());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kNotFound);
  }
  SECTION("the right lease succeeds once; a second complete is lease_lost") {
    f.clock().Advance(1234);
    JobRecord done = f.Complete(leased, std::string(R"({"rows":3})"));
    CHECK(done.state == JobState::kSucceeded);
    REQUIRE(done.result);
    CHECK(*done.result == R"({"rows":3})");
    REQUIRE(done.finished_at);
    CHECK(*done.finished_at == f.now());
    CHECK_FALSE(done.lease_id);
    CHECK(f.Bucket("export", "acme").leased == 0);

    auto twice = f.store().Complete(leased.id, *leased.lease_id, std::nullopt, f.now());
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.error().code == ErrorCode::kLeaseLost);
    CHECK(f.Get(leased.id).state == JobState::kSucceeded);
  }
}

TEST_CASE("Fail with retry_in_ms returns the job to queued until then", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.max_attempts = 3;
  f.PutQueue("export", p);
  JobRecord job = f.Admit("export", "acme");
  JobRecord leased = f.Lease({"export"}).jobs.at(0);
  const Micros failed_at = f.now();

  FailRequest fail{"downstream said 503", true, 2000};
  auto r = f.store().Fail(job.id, *leased.lease_id, fail, failed_at);
  REQUIRE(r.ok());
  CHECK(r.value().state == JobState::kQueued);
  CHECK(r.value().available_at == failed_at + 2000 * kMicrosPerMilli);
  CHECK_FALSE(r.value().lease_id);
  CHECK_FALSE(r.value().finished_at);
  json errors = json::parse(r.value().errors);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]["error"] == "downstream said 503");
  CHECK(errors[0]["attempt"] == 1);
  BucketInfo b = f.Bucket("export", "acme");
  CHECK(b.queued == 1);
  CHECK(b.leased == 0);

  f.clock().Set(failed_at + 2 * kSecond - 1);
  LeaseOutcome early = f.Lease({"export"});
  CHECK(early.jobs.empty());
  REQUIRE(early.wake_at);
  CHECK(*early.wake_at == failed_at + 2 * kSecond);

  f.clock().Set(failed_at + 2 * kSecond);
  LeaseOutcome retry = f.Lease({"export"});
  REQUIRE(retry.jobs.size() == 1);
  CHECK(retry.jobs[0].id == job.id);
  CHECK(retry.jobs[0].attempt == 2);
  CHECK(*retry.jobs[0].lease_id != *leased.lease_id);

  // The old lease is gone for good.
  auto stale = f.store().Fail(job.id, *leased.lease_id, fail, f.now());
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().code == ErrorCode::kLeaseLost);

  auto second =
      f.store().Fail(job.id, *retry.jobs[0].lease_id, FailRequest{"again", true, 0}, f.now());
  REQUIRE(second.ok());
  CHECK(second.value().state == JobState::kQueued);
  CHECK(ErrorCount(second.value()) == 2);
}

TEST_CASE("Fail after max_attempts, or not retryable, is failed for good", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.max_attempts = 2;
  f.PutQueue("export", p);

  SECTION("attempts exhausted") {
    JobRecord job = f.Admit("export", "acme");
    for (int attempt = 1; attempt <= 2; ++attempt) {
      f.clock().Advance(kSecond);
      LeaseOutcome out = f.Lease({"export"});
      REQUIRE(out.jobs.size() == 1);
      CHECK(out.jobs[0].attempt == attempt);
      auto r = f.store().Fail(job.id, *out.jobs[0].lease_id, FailRequest{"boom", true, 0}, f.now());
      REQUIRE(r.ok());
      CHECK(r.value().state == (attempt < 2 ? JobState::kQueued : JobState::kFailed));
    }
    JobRecord failed = f.Get(job.id);
    CHECK(failed.state == JobState::kFailed);
    REQUIRE(failed.finished_at);
    CHECK(*failed.finished_at == f.now());
    CHECK(ErrorCount(failed) == 2);
    f.clock().Advance(kSecond);
    CHECK(f.Lease({"export"}).jobs.empty());
    BucketInfo b = f.Bucket("export", "acme");
    CHECK(b.queued == 0);
    CHECK(b.leased == 0);
  }
  SECTION("not retryable") {
    JobRecord job = f.Admit("export", "acme");
    LeaseOutcome out = f.Lease({"export"});
    REQUIRE(out.jobs.size() == 1);
    auto r =
        f.store().Fail(job.id, *out.jobs[0].lease_id, FailRequest{"bad input", false, {}}, f.now());
    REQUIRE(r.ok());
    CHECK(r.value().state == JobState::kFailed);
    CHECK(ErrorCount(r.value()) == 1);
  }
}

TEST_CASE("Fail without retry_in_ms waits a full-jitter backoff", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.max_attempts = 5;
  p.retry_backoff_ms = 1000;
  p.retry_backoff_max_ms = 60000;
  f.PutQueue("export", p);
  JobRecord job = f.Admit("export", "acme");

  // The draw is injected: 0 -> no wait; just under 1 -> the whole ceiling,
  // min(60000, 1000 * 2^(attempt-1)) ms.
  f.set_unit_random(std::nextafter(1.0, 0.0));
  JobRecord leased = f.Lease({"export"}).jobs.at(0);
  auto r = f.store().Fail(job.id, *leased.lease_id, FailRequest{"x", true, {}}, f.now());
  REQUIRE(r.ok());
  CHECK(r.value().available_at == f.now() + 1000 * kMicrosPerMilli);  // attempt 1

  f.clock().Set(r.value().available_at);
  leased = f.Lease({"export"}).jobs.at(0);
  REQUIRE(leased.attempt == 2);
  r = f.store().Fail(job.id, *leased.lease_id, FailRequest{"x", true, {}}, f.now());
  REQUIRE(r.ok());
  CHECK(r.value().available_at == f.now() + 2000 * kMicrosPerMilli);  // attempt 2

  f.set_unit_random(0.0);
  f.clock().Set(r.value().available_at);
  leased = f.Lease({"export"}).jobs.at(0);
  r = f.store().Fail(job.id, *leased.lease_id, FailRequest{"x", true, {}}, f.now());
  REQUIRE(r.ok());
  CHECK(r.value().available_at == f.now());
}

TEST_CASE("A queued job past its deadline is expired by the next LeaseMany, never leased",
          "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));
  REQUIRE(f.store().SetPaused("export", true, f.now()).ok());
  JobRecord keep = f.Admit("export", "acme");
  NewJob late;
  late.queue = "export";
  late.tenant = "acme";
  late.deadline = f.now() + kSecond;
  JobRecord doomed = f.Admit(late);
  CHECK(f.Bucket("export", "acme").queued == 2);

  f.clock().Advance(kSecond);  // the deadline: it can no longer start before it
  REQUIRE(f.store().SetPaused("export", false, f.now()).ok());
  LeaseOutcome out = f.Lease({"export"}, 10);
  REQUIRE(out.jobs.size() == 1);
  CHECK(out.jobs[0].id == keep.id);

  JobRecord expired = f.Get(doomed.id);
  CHECK(expired.state == JobState::kExpired);
  REQUIRE(expired.finished_at);
  CHECK(*expired.finished_at == f.now());
  BucketInfo b = f.Bucket("export", "acme");
  CHECK(b.queued == 0);
  CHECK(b.queued_cost == 0);
  f.clock().Advance(10 * kSecond);
  CHECK(f.Lease({"export"}, 10).jobs.empty());
  CHECK(f.Get(doomed.id).state == JobState::kExpired);
}

TEST_CASE("The queue's default_deadline_ms applies when a job gives none", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1000);
  p.default_deadline_ms = 1500;
  f.PutQueue("export", p);
  JobRecord j = f.Admit("export", "acme");
  REQUIRE(j.deadline);
  CHECK(*j.deadline == f.now() + 1500 * kMicrosPerMilli);
  // 1/s: a second job would start 1 s from now, before its 1.5 s deadline; a third
  // at 2 s would not, and is refused as deadline_unreachable.
  f.Admit("export", "acme");
  SubmitOutcome third = f.Submit(StoreFixture::Job("export", "acme", 1));
  CHECK(third.decision.outcome == AdmissionOutcome::kDeadlineUnreachable);
  CHECK(third.decision.estimated_start == f.now() + 2 * kSecond);
  CHECK_FALSE(third.job);
  CHECK(f.Bucket("export", "acme").queued == 2);
}

// Rule 6: a job must start *before* its deadline, and LeaseMany expires a queued job
// once deadline_at <= now. A job whose estimated start equals its deadline is admitted
// today (Admit checks start > deadline) and can then only expire: dishonest by rule 2.
TEST_CASE("A job admitted with deadline == estimated start can actually be leased", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1000));
  NewJob nj;
  nj.queue = "export";
  nj.tenant = "acme";
  nj.deadline = f.now();  // idle bucket: estimated start is now
  SubmitOutcome out = f.Submit(nj);
  if (out.decision.outcome == AdmissionOutcome::kAdmitted) {
    REQUIRE(out.job);
    CHECK(out.job->estimated_start == f.now());
    LeaseOutcome leased = f.Lease({"export"});
    CHECK(leased.jobs.size() == 1);
    CHECK(f.Get(out.job->id).state == JobState::kLeased);
  } else {
    // A deadline at now can never be met: refused as such (400 deadline_invalid).
    CHECK(out.decision.outcome == AdmissionOutcome::kDeadlinePassed);
  }
}

TEST_CASE("An expired lease is re-queued by the next LeaseMany; the old lease is lost", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(10'000);  // 10/s
  p.max_attempts = 2;
  f.PutQueue("export", p);
  JobRecord job = f.Admit("export", "acme");
  LeaseOutcome first = f.Lease({"export"}, 1, /*lease_ms=*/1000);
  REQUIRE(first.jobs.size() == 1);
  JobRecord old = first.jobs[0];
  REQUIRE(old.lease_expires_at);
  CHECK(*old.lease_expires_at == f.now() + 1000 * kMicrosPerMilli);

  SECTION("just before expiry the lease still completes") {
    f.clock().Set(*old.lease_expires_at - 1);
    CHECK(f.Complete(old).state == JobState::kSucceeded);
  }
  SECTION("at expiry the lease is lost even before a LeaseMany re-queues the job") {
    f.clock().Set(*old.lease_expires_at);
    auto late = f.store().Complete(job.id, *old.lease_id, std::nullopt, f.now());
    REQUIRE_FALSE(late.ok());
    CHECK(late.error().code == ErrorCode::kLeaseLost);
    auto late_fail = f.store().Fail(job.id, *old.lease_id, FailRequest{"x", true, 0}, f.now());
    REQUIRE_FALSE(late_fail.ok());
    CHECK(late_fail.error().code == ErrorCode::kLeaseLost);
  }
  SECTION("at expiry the job goes back to queued and is leased again, attempt 2") {
    f.clock().Set(*old.lease_expires_at);
    LeaseOutcome again = f.Lease({"export"}, 1, 1000);
    REQUIRE(again.jobs.size() == 1);
    CHECK(again.jobs[0].id == job.id);
    CHECK(again.jobs[0].attempt == 2);
    REQUIRE(again.jobs[0].lease_id);
    CHECK(*again.jobs[0].lease_id != *old.lease_id);
    CHECK(ErrorCount(again.jobs[0]) == 1);  // "lease expired" is recorded

    auto stale = f.store().Complete(job.id, *old.lease_id, std::nullopt, f.now());
    REQUIRE_FALSE(stale.ok());
    CHECK(stale.error().code == ErrorCode::kLeaseLost);
    CHECK(f.Bucket("export", "acme").leased == 1);

    SECTION("and when attempts are exhausted, the next expiry fails it") {
      f.clock().Set(*again.jobs[0].lease_expires_at);
      CHECK(f.Lease({"export"}).jobs.empty());
      JobRecord failed = f.Get(job.id);
      CHECK(failed.state == JobState::kFailed);
      CHECK(ErrorCount(failed) == 2);
      BucketInfo b = f.Bucket("export", "acme");
      CHECK(b.leased == 0);
      CHECK(b.queued == 0);
    }
  }
  SECTION("a lease expiring after the job's deadline fails the job") {
    // Not this job (no deadline); a second one with a deadline before the expiry.
    NewJob nj;
    nj.queue = "export";
    nj.tenant = "globex";
    nj.deadline = f.now() + 500 * kMicrosPerMilli;
    JobRecord dl = f.Admit(nj);
    LeaseOutcome l = f.Lease({"export"}, 1, 1000);
    REQUIRE(l.jobs.size() == 1);
    REQUIRE(l.jobs[0].id == dl.id);
    f.clock().Set(*l.jobs[0].lease_expires_at);
    f.Lease({"export"}, 10);
    CHECK(f.Get(dl.id).state == JobState::kFailed);
  }
}

// One worker, one job at a time: lease one, complete it, lease the next. When nothing
// is releasable the worker waits for wake_at; `work_us` is how long each job takes.
std::string LeaseOrder(StoreFixture& f, size_t n, Micros work_us) {
  std::string order;
  while (order.size() < n) {
    LeaseOutcome out = f.Lease({"export"});
    if (out.jobs.empty()) {
      REQUIRE(out.wake_at);
      f.clock().Set(*out.wake_at);
      continue;
    }
    order += out.jobs[0].tenant.front();  // one letter per job
    f.clock().Advance(work_us);
    f.Complete(out.jobs[0]);
  }
  return order;
}

TEST_CASE("Two backlogged tenants leased one at a time alternate", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(10'000));  // 10/s per bucket: T = 100 ms
  // All of A's jobs were admitted before any of B's.
  for (int i = 0; i < 6; ++i) f.Admit("export", "A");
  for (int i = 0; i < 6; ++i) f.Admit("export", "B");
  SECTION("rate-bound: the worker is always ready") {
    CHECK(LeaseOrder(f, 12, 0) == "ABABABABABAB");
  }
  SECTION("worker-bound: each job takes 5 emission intervals") {
    CHECK(LeaseOrder(f, 12, 500'000) == "ABABABABABAB");
  }
}

TEST_CASE("A tenant with a long backlog does not delay a tenant with one job", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(10'000, 1000));
  for (int i = 0; i < 200; ++i) f.Admit("export", "big");
  // The big tenant has been draining for a while.
  CHECK(LeaseOrder(f, 20, 0) == std::string(20, 'b'));
  // The worker falls behind: big's next job is releasable too, and older by
  // admission order, but small's release time (it never released) is earlier.
  f.clock().Advance(kSecond);
  f.Admit("export", "small");
  LeaseOutcome out = f.Lease({"export"});
  REQUIRE(out.jobs.size() == 1);
  CHECK(out.jobs[0].tenant == "small");
}

TEST_CASE("not_before delays only its own job (FIFO among releasable jobs)", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));
  const Micros t0 = f.now();
  NewJob later;
  later.queue = "export";
  later.tenant = "acme";
  later.not_before = t0 + 5 * kSecond;
  SubmitOutcome held = f.Submit(later);
  REQUIRE(held.decision.outcome == AdmissionOutcome::kAdmitted);
  CHECK(held.job->estimated_start == t0 + 5 * kSecond);
  CHECK(held.job->available_at == t0 + 5 * kSecond);
  JobRecord behind = f.Admit("export", "acme");

  LeaseOutcome out = f.Lease({"export"}, 10);
  REQUIRE(out.jobs.size() == 1);
  CHECK(out.jobs[0].id == behind.id);

  f.clock().Advance(kSecond);
  LeaseOutcome waiting = f.Lease({"export"}, 10);
  CHECK(waiting.jobs.empty());
  REQUIRE(waiting.wake_at);
  CHECK(*waiting.wake_at == t0 + 5 * kSecond);

  f.clock().Set(t0 + 5 * kSecond);
  out = f.Lease({"export"}, 10);
  REQUIRE(out.jobs.size() == 1);
  CHECK(out.jobs[0].id == held.job->id);
}

TEST_CASE("ListBuckets and ListQueues agree with what was submitted and leased", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(2000, 10);  // 2/s
  p.tenants["a"].capacity = 8;
  f.PutQueue("export", p);
  f.PutQueue("empty", MakePolicy(1000));
  JobRecord a1 = f.Admit("export", "a", 2);
  f.clock().Advance(10);
  JobRecord a2 = f.Admit("export", "a", 2);
  f.clock().Advance(10);
  f.Admit("export", "a", 2);
  JobRecord b1 = f.Admit("export", "b", 1);

  LeaseOutcome out = f.Lease({"export"});
  REQUIRE(out.jobs.size() == 1);
  CHECK(out.jobs[0].id == a1.id);  // equal release times: the older head job
  const Micros leased_at = f.now();

  auto buckets = f.store().ListBuckets("export");
  REQUIRE(buckets.ok());
  REQUIRE(buckets.value().size() == 2);
  BucketInfo a = f.Bucket("export", "a");
  CHECK(a.queued == 2);
  CHECK(a.queued_cost == 4);
  CHECK(a.leased == 1);
  CHECK(a.policy.capacity == 8);
  CHECK(a.policy.rate_milli == 2000);
  REQUIRE(a.oldest_queued_at);
  CHECK(*a.oldest_queued_at == a2.created_at);
  REQUIRE(a.next_release_at);
  CHECK(*a.next_release_at == leased_at + kSecond);  // cost 2 at 2/s
  BucketInfo b = f.Bucket("export", "b");
  CHECK(b.queued == 1);
  CHECK(b.queued_cost == 1);
  CHECK(b.leased == 0);
  CHECK(b.policy.capacity == 10);
  REQUIRE(b.oldest_queued_at);
  CHECK(*b.oldest_queued_at == b1.created_at);
  REQUIRE(b.next_release_at);
  CHECK(*b.next_release_at <= f.now());  // never released: releasable now

  auto queues = f.store().ListQueues();
  REQUIRE(queues.ok());
  REQUIRE(queues.value().size() == 2);
  const QueueInfo& empty = queues.value()[0];
  const QueueInfo& exp = queues.value()[1];
  CHECK(empty.name == "empty");
  CHECK(empty.stats.queued == 0);
  CHECK(exp.name == "export");
  CHECK(exp.stats.queued == 3);
  CHECK(exp.stats.queued_cost == 5);
  CHECK(exp.stats.leased == 1);

  f.Complete(out.jobs[0]);
  auto after = f.store().GetQueue("export");
  REQUIRE(after.ok());
  CHECK(after.value().stats.leased == 0);
  CHECK(after.value().stats.queued == 3);

  auto unknown = f.store().ListBuckets("nope");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kNotFound);
}

TEST_CASE("LeaseMany serves several requests in order", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1000);
  p.bucket.burst = 2;
  f.PutQueue("export", p);
  f.PutQueue("render", MakePolicy(1000));
  JobRecord e1 = f.Admit("export", "acme");
  JobRecord e2 = f.Admit("export", "acme");
  JobRecord r1 = f.Admit("render", "acme");
  LeaseRequest both{{"export", "render"}, 2, {}, "w1"};
  LeaseRequest export_only{{"export"}, 5, {}, "w2"};
  auto results = f.store().LeaseMany({both, export_only}, f.now());
  REQUIRE(results.size() == 2);
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
  // The first request takes two; the second gets whatever is left of export.
  std::vector<std::string> got = Ids(results[0].value().jobs);
  for (const std::string& id : Ids(results[1].value().jobs)) got.push_back(id);
  std::sort(got.begin(), got.end());
  std::vector<std::string> all = {e1.id, e2.id, r1.id};
  std::sort(all.begin(), all.end());
  CHECK(results[0].value().jobs.size() == 2);
  CHECK(got == all);
  // No job handed out twice.
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
}

// On SQLite the passes of one LeaseMany are sized to a time budget, so many requests
// take several passes (store/engine/engine.cc): they still serve the requests first in,
// first out, and each bucket in admission order across them.
TEST_CASE("LeaseMany over many requests serves them in order, each bucket FIFO across them",
          "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000'000, 1000);
  p.bucket.burst = 1000;
  f.PutQueue("export", p);
  const std::vector<std::string> tenants = {"acme", "globex", "initech"};
  std::map<std::string, std::vector<std::string>> admitted;  // by tenant, in order
  for (int i = 0; i < 60; ++i) {
    for (const std::string& t : tenants) admitted[t].push_back(f.Admit("export", t).id);
  }
  std::vector<LeaseRequest> requests;
  for (int i = 0; i < 30; ++i) {
    requests.push_back(LeaseRequest{{"export"}, 8, {}, "w" + std::to_string(i)});
  }
  auto results = f.store().LeaseMany(requests, f.now());
  REQUIRE(results.size() == requests.size());
  std::map<std::string, std::vector<std::string>> leased;  // by tenant, in request order
  size_t total = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i);
    REQUIRE(results[i].ok());
    const auto& jobs = results[i].value().jobs;
    // 180 jobs for 30 requests of 8: the first 22 are full, the 23rd gets the last 4.
    CHECK(jobs.size() == (i < 22 ? 8u : i == 22 ? 4u : 0u));
    for (const JobRecord& j : jobs) leased[j.tenant].push_back(j.id);
    total += jobs.size();
  }
  CHECK(total == 180);
  for (const std::string& t : tenants) {
    CAPTURE(t);
    CHECK(leased[t] == admitted[t]);
  }
}

// Every field of a job, for comparing two records of it.
auto JobFields(const JobRecord& j) {
  return std::make_tuple(j.id, j.queue, j.tenant, j.state, j.payload, j.cost, j.attempt,
                         j.max_attempts, j.lease_ms, j.policy_version, j.created_at, j.not_before,
                         j.available_at, j.deadline, j.estimated_start, j.lease_id,
                         j.lease_expires_at, j.result, j.errors, j.finished_at, j.leased_at,
                         j.traceparent);
}

TEST_CASE("The job a submit returns is the job stored, field for field", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(2000, 1000);
  p.max_attempts = 4;
  p.lease_ms = 20'000;
  f.PutQueue("export", p);
  p.default_deadline_ms = 60'000;
  f.PutQueue("timed", p);

  std::vector<NewJob> jobs;
  NewJob plain;
  plain.queue = "export";
  plain.tenant = "acme";
  jobs.push_back(plain);
  NewJob full = plain;
  full.payload = R"({"report":"q3","rows":[1,2,3]})";
  full.cost = 3;
  full.deadline = f.now() + 90 * kSecond;
  full.not_before = f.now() + 2 * kSecond;
  full.lease_ms = 5000;
  full.max_attempts = 9;
  full.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  jobs.push_back(full);
  NewJob keyed = plain;
  keyed.idempotency_key = "k-1";
  keyed.body_hash = "h";
  jobs.push_back(keyed);
  NewJob timed = plain;
  timed.queue = "timed";
  jobs.push_back(timed);

  std::vector<JobRecord> stored;
  for (const NewJob& j : jobs) {
    f.clock().Advance(1234);
    JobRecord returned = f.Admit(j);
    auto found = f.store().GetJob(returned.id);
    REQUIRE(found.ok());
    CHECK(JobFields(returned) == JobFields(found.value()));
    stored.push_back(found.value());
  }
  // And the stored values are the submit's, or the queue's defaults.
  const JobRecord& a = stored[0];
  CHECK((a.max_attempts == 4 && a.lease_ms == 20'000 && a.payload == "null"));
  CHECK((a.available_at == a.created_at && !a.deadline && !a.not_before && !a.traceparent));
  CHECK((a.state == JobState::kQueued && a.attempt == 0 && a.errors == "[]"));
  const JobRecord& b = stored[1];
  CHECK((b.payload == full.payload && b.cost == 3 && b.deadline == full.deadline));
  CHECK((b.not_before == full.not_before && b.available_at == *full.not_before));
  CHECK((b.lease_ms == 5000 && b.max_attempts == 9 && b.traceparent == full.traceparent));
  const JobRecord& d = stored[3];
  CHECK(d.deadline == d.created_at + 60 * kSecond);
}

TEST_CASE("Two first submits with one Idempotency-Key racing make one job", "[store]") {
  StoreFixture f;
  f.PutQueue("a", MakePolicy(1000));
  f.PutQueue("b", MakePolicy(1000));
  // Two buckets, so that on PostgreSQL the two admissions do not take turns on a bucket
  // lock: the second insert of the key fails with unique_violation and runs again, to
  // replay the first.
  for (int round = 0; round < 10; ++round) {
    const std::string key = "k" + std::to_string(round);
    std::vector<Result<SubmitOutcome>> results(2, MakeError(ErrorCode::kInternal, "not run"));
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        NewJob nj;
        nj.queue = t == 0 ? "a" : "b";
        nj.tenant = "acme";
        nj.idempotency_key = key;
        nj.body_hash = "same";
        results[static_cast<size_t>(t)] = f.store().Submit(nj, f.now());
      });
    }
    for (auto& th : threads) th.join();
    REQUIRE(results[0].ok());
    REQUIRE(results[1].ok());
    REQUIRE(results[0].value().job);
    REQUIRE(results[1].value().job);
    CHECK(results[0].value().job->id == results[1].value().job->id);
    CHECK(results[0].value().replayed != results[1].value().replayed);
  }
  auto page = f.store().ListJobs(JobFilter{});
  REQUIRE(page.ok());
  CHECK(page.value().jobs.size() == 10);
}

}  // namespace
}  // namespace sluice

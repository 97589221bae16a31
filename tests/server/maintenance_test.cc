// Maintenance services run on virtual time: the test moves a ManualClock and calls
// RunOnce(now); nothing sleeps.
#include "server/maintenance.h"

#include <catch2/catch.hpp>

#include "tests/store/store_fixture.h"

namespace sluice::testing {
namespace {

TEST_CASE("LeaseReaper requeues a lapsed lease, then fails it when attempts are used up") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.max_attempts = 2;
  p.lease_ms = 1000;
  f.PutQueue("q", p);
  JobRecord job = f.Admit("q", "acme");
  LeaseReaper reaper(f.store());

  REQUIRE(f.Lease({"q"}).jobs.size() == 1);
  auto none = reaper.RunOnce(f.now());
  REQUIRE(none.ok());
  CHECK(none.value().leases_requeued == 0);  // the lease is still live

  f.clock().Advance(1000 * kMicrosPerMilli);
  auto first = reaper.RunOnce(f.now());
  REQUIRE(first.ok());
  CHECK(first.value().leases_requeued == 1);
  CHECK(f.store().GetJob(job.id).value().state == JobState::kQueued);

  REQUIRE(f.Lease({"q"}).jobs.size() == 1);  // attempt 2 of 2
  f.clock().Advance(1000 * kMicrosPerMilli);
  auto second = reaper.RunOnce(f.now());
  REQUIRE(second.ok());
  CHECK(second.value().leases_failed == 1);
  JobRecord failed = f.store().GetJob(job.id).value();
  CHECK(failed.state == JobState::kFailed);
  CHECK(failed.errors.find("lease expired") != std::string::npos);
}

TEST_CASE("DeadlineExpirer expires queued jobs at their deadline, not before") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1000));
  NewJob j;
  j.queue = "q";
  j.tenant = "acme";
  j.deadline = f.now() + 5 * kMicrosPerSecond;
  JobRecord job = f.Admit(j);
  DeadlineExpirer expirer(f.store());
  f.clock().Advance(5 * kMicrosPerSecond - 1);
  CHECK(expirer.RunOnce(f.now()).value().expired == 0);
  f.clock().Advance(1);
  CHECK(expirer.RunOnce(f.now()).value().expired == 1);
  CHECK(f.store().GetJob(job.id).value().state == JobState::kExpired);
  CHECK(f.store().ListBuckets("q").value()[0].queued == 0);
}

TEST_CASE("Cleaner deletes finished jobs past the retention, in batches, and nothing else") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1'000'000, 1000));
  std::vector<std::string> canceled;
  for (int i = 0; i < 25; ++i) {
    JobRecord j = f.Admit("q", "acme");
    REQUIRE(f.store().Cancel(j.id, f.now()).ok());
    canceled.push_back(j.id);
  }
  JobRecord still_queued = f.Admit("q", "acme");
  Cleaner cleaner(f.store(), /*retention=*/3600 * kMicrosPerSecond, /*batch=*/10);
  CHECK(cleaner.RunOnce(f.now()).value().cleaned == 0);  // not old enough
  f.clock().Advance(3600 * kMicrosPerSecond + 1);
  CHECK(cleaner.RunOnce(f.now()).value().cleaned == 25);  // three batches
  for (const auto& id : canceled) CHECK(f.store().GetJob(id).error().code == ErrorCode::kNotFound);
  CHECK(f.store().GetJob(still_queued.id).ok());
}

}  // namespace
}  // namespace sluice::testing

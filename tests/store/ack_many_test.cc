// Store::AckMany (batch acknowledgements) on every driver: each ack of a batch ends its
// attempt exactly as Complete or Fail would, in one transaction; an ack that fails
// (lease_lost, not_found) changes nothing and leaves the others be.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::MakePolicy;
using testing::StoreFixture;

AckItem Succeeded(const JobRecord& leased, std::optional<std::string> result = std::nullopt) {
  AckItem a;
  a.id = leased.id;
  a.lease_id = leased.lease_id.value_or("");
  a.succeeded = true;
  a.result = std::move(result);
  return a;
}

AckItem Failed(const JobRecord& leased, FailRequest fail) {
  AckItem a;
  a.id = leased.id;
  a.lease_id = leased.lease_id.value_or("");
  a.succeeded = false;
  a.fail = std::move(fail);
  return a;
}

std::vector<Result<JobRecord>> AckMany(StoreFixture& f, const std::vector<AckItem>& acks) {
  auto r = f.store().AckMany(acks, f.now());
  INFO((r.ok() ? std::string() : r.error().detail));
  REQUIRE(r.ok());
  REQUIRE(r.value().size() == acks.size());
  return std::move(r.value());
}

TEST_CASE("AckMany: a mixed batch gives each ack its own result; a lost one changes nothing",
          "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.bucket.burst = 4;  // all four out at once
  p.max_attempts = 3;
  f.PutQueue("export", p);
  for (int i = 0; i < 4; ++i) f.Admit("export", "acme");
  LeaseOutcome out = f.Lease({"export"}, 4);
  REQUIRE(out.jobs.size() == 4);
  const JobRecord& a = out.jobs[0];
  const JobRecord& b = out.jobs[1];
  const JobRecord& c = out.jobs[2];
  const JobRecord& d = out.jobs[3];
  f.clock().Advance(1000);

  AckItem lost = Succeeded(c);
  lost.lease_id = "lse_not_mine";
  AckItem unknown = Failed(d, FailRequest{"x", true, 0});
  unknown.id = "job_unknown";
  auto results = AckMany(f, {Succeeded(a, R"({"rows":3})"), Failed(b, {"503 upstream", true, 2000}),
                             lost, unknown, Failed(d, {"bad input", false, {}})});

  REQUIRE(results[0].ok());
  CHECK(results[0].value().id == a.id);
  CHECK(results[0].value().state == JobState::kSucceeded);
  CHECK(results[0].value().result == std::string(R"({"rows":3})"));
  CHECK(results[0].value().finished_at == f.now());
  REQUIRE(results[1].ok());
  CHECK(results[1].value().state == JobState::kQueued);  // a retry, after its delay
  CHECK(results[1].value().available_at == f.now() + 2000 * kMicrosPerMilli);
  REQUIRE_FALSE(results[2].ok());
  CHECK(results[2].error().code == ErrorCode::kLeaseLost);
  REQUIRE_FALSE(results[3].ok());
  CHECK(results[3].error().code == ErrorCode::kNotFound);
  REQUIRE(results[4].ok());
  CHECK(results[4].value().state == JobState::kFailed);  // not retryable: for good

  // What the batch committed is there; the lost ack left its job as it was.
  CHECK(f.Get(a.id).state == JobState::kSucceeded);
  CHECK(f.Get(b.id).state == JobState::kQueued);
  CHECK(json::parse(f.Get(b.id).errors).size() == 1);
  JobRecord still = f.Get(c.id);
  CHECK(still.state == JobState::kLeased);
  CHECK(still.lease_id == c.lease_id);
  CHECK(still.lease_expires_at == c.lease_expires_at);
  CHECK(json::parse(still.errors).empty());
  CHECK(f.Get(d.id).state == JobState::kFailed);

  BucketInfo bucket = f.Bucket("export", "acme");
  CHECK(bucket.leased == 1);  // c
  CHECK(bucket.queued == 1);  // b
  CHECK(bucket.queued_cost == 1);
  CHECK(bucket.totals.admitted == 4);
  CHECK(bucket.totals.released == 4);
  CHECK(bucket.totals.succeeded == 1);
  CHECK(bucket.totals.failed == 1);
  auto q = f.store().GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.leased == 1);
  CHECK(q.value().stats.queued == 1);
  CHECK(q.value().stats.totals.succeeded == 1);
  CHECK(q.value().stats.totals.failed == 1);

  // The lost ack's job is still c's lease to end; a second ack of a is lease_lost.
  auto again = AckMany(f, {Succeeded(c), Succeeded(a)});
  REQUIRE(again[0].ok());
  CHECK(again[0].value().state == JobState::kSucceeded);
  REQUIRE_FALSE(again[1].ok());
  CHECK(again[1].error().code == ErrorCode::kLeaseLost);
  bucket = f.Bucket("export", "acme");
  CHECK(bucket.leased == 0);
  CHECK(bucket.totals.succeeded == 2);
}

// A batch's successes are counted per bucket (one change per bucket, not per job, on
// SQLite): interleaved jobs of several buckets each end in their own bucket, and a lease
// lost in the middle of a run counts for none.
TEST_CASE("AckMany: successes of interleaved buckets each end their own bucket's leases",
          "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.bucket.burst = 8;
  f.PutQueue("export", p);
  for (const char* tenant : {"acme", "globex", "acme", "initech", "globex", "acme"}) {
    f.Admit("export", tenant);
  }
  LeaseOutcome out = f.Lease({"export"}, 6);
  REQUIRE(out.jobs.size() == 6);
  std::vector<AckItem> acks;
  for (const JobRecord& j : out.jobs) acks.push_back(Succeeded(j));
  acks[2].lease_id = "lse_not_mine";  // one lost in the middle of the run
  const std::string lost_tenant = out.jobs[2].tenant;
  auto results = AckMany(f, acks);
  for (size_t i = 0; i < results.size(); ++i) CHECK(results[i].ok() == (i != 2));

  for (const char* tenant : {"acme", "globex", "initech"}) {
    int64_t admitted = 0;
    for (const JobRecord& j : out.jobs) admitted += j.tenant == tenant;
    const int64_t still = lost_tenant == tenant ? 1 : 0;
    BucketInfo bucket = f.Bucket("export", tenant);
    INFO(tenant);
    CHECK(bucket.leased == still);
    CHECK(bucket.totals.released == admitted);
    CHECK(bucket.totals.succeeded == admitted - still);
  }
  auto q = f.store().GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.leased == 1);
  CHECK(q.value().stats.totals.succeeded == 5);
}

TEST_CASE("AckMany: a batch of lost acks commits nothing, and is no error as a whole", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));
  f.Admit("export", "acme");
  JobRecord leased = f.Lease({"export"}).jobs.at(0);
  AckItem wrong = Succeeded(leased);
  wrong.lease_id = "lse_not_mine";
  AckItem wrong_fail = Failed(leased, FailRequest{"x", true, 0});
  wrong_fail.lease_id = "lse_not_mine_either";
  auto results = AckMany(f, {wrong, wrong_fail});
  for (const auto& r : results) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kLeaseLost);
  }
  JobRecord still = f.Get(leased.id);
  CHECK(still.state == JobState::kLeased);
  CHECK(json::parse(still.errors).empty());
  BucketInfo bucket = f.Bucket("export", "acme");
  CHECK(bucket.leased == 1);
  CHECK(bucket.totals.succeeded == 0);
  CHECK(bucket.totals.failed == 0);
}

TEST_CASE("AckMany: a lapsed lease is lost; a fail without delay takes the queue's backoff",
          "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.max_attempts = 5;
  p.retry_backoff_ms = 1000;
  p.lease_ms = 1000;
  f.PutQueue("export", p);
  f.Admit("export", "acme");
  f.Admit("export", "acme");
  LeaseOutcome first = f.Lease({"export"}, 1);
  f.clock().Advance(600 * kMicrosPerMilli);
  LeaseOutcome second = f.Lease({"export"}, 1);
  REQUIRE(first.jobs.size() == 1);
  REQUIRE(second.jobs.size() == 1);
  f.clock().Advance(600 * kMicrosPerMilli);  // the first lease has run out, not the second

  f.set_unit_random(0.5);  // half the ceiling of attempt 1: 500 ms
  auto results = AckMany(f, {Succeeded(first.jobs[0]), Failed(second.jobs[0], {"x", true, {}})});
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].error().code == ErrorCode::kLeaseLost);
  REQUIRE(results[1].ok());
  CHECK(results[1].value().state == JobState::kQueued);
  CHECK(results[1].value().available_at == f.now() + 500 * kMicrosPerMilli);
}

TEST_CASE("AckMany: a job named twice in a batch is completed once by the ack holding its lease",
          "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  p.bucket.burst = 2;
  f.PutQueue("export", p);
  f.Admit("export", "acme");
  f.Admit("export", "acme");
  LeaseOutcome out = f.Lease({"export"}, 2);
  REQUIRE(out.jobs.size() == 2);
  const JobRecord& a = out.jobs[0];
  const JobRecord& b = out.jobs[1];
  AckItem stale = Succeeded(a, R"({"from":"stale"})");
  stale.lease_id = "lse_not_mine";
  auto results = AckMany(f, {stale, Succeeded(a, R"({"from":"first"})"), Succeeded(b),
                             Succeeded(a, R"({"from":"second"})"), Failed(b, {"x", true, {}})});
  REQUIRE_FALSE(results[0].ok());
  CHECK(results[0].error().code == ErrorCode::kLeaseLost);
  REQUIRE(results[1].ok());
  CHECK(results[1].value().result == std::string(R"({"from":"first"})"));
  REQUIRE(results[2].ok());
  CHECK(results[2].value().id == b.id);
  REQUIRE_FALSE(results[3].ok());
  CHECK(results[3].error().code == ErrorCode::kLeaseLost);
  REQUIRE_FALSE(results[4].ok());  // b was completed before its fail came
  CHECK(results[4].error().code == ErrorCode::kLeaseLost);
  CHECK(f.Get(a.id).result == std::string(R"({"from":"first"})"));
  BucketInfo bucket = f.Bucket("export", "acme");
  CHECK(bucket.leased == 0);
  CHECK(bucket.totals.succeeded == 2);
  CHECK(bucket.totals.failed == 0);
}

TEST_CASE("AckMany limited to some queues leaves another queue's job as it is", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  f.PutQueue("mine", p);
  f.PutQueue("theirs", p);
  f.Admit("mine", "acme");
  f.Admit("theirs", "acme");
  LeaseOutcome mine = f.Lease({"mine"}, 1);
  LeaseOutcome theirs = f.Lease({"theirs"}, 1);
  REQUIRE(mine.jobs.size() == 1);
  REQUIRE(theirs.jobs.size() == 1);
  auto r = f.store().AckMany({Succeeded(theirs.jobs[0]), Succeeded(mine.jobs[0])}, f.now(),
                             std::vector<std::string>{"mine"});
  REQUIRE(r.ok());
  REQUIRE(r.value().size() == 2);
  REQUIRE_FALSE(r.value()[0].ok());
  CHECK(r.value()[0].error().code == ErrorCode::kNotFound);
  REQUIRE(r.value()[1].ok());
  CHECK(r.value()[1].value().state == JobState::kSucceeded);
  auto untouched = f.store().GetJob(theirs.jobs[0].id);
  REQUIRE(untouched.ok());
  CHECK(untouched.value().state == JobState::kLeased);
}

TEST_CASE("AckMany limited to a queue leaves the job of a queue its name is a part of", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  f.PutQueue("export", p);
  f.Admit("export", "acme");
  LeaseOutcome leased = f.Lease({"export"}, 1);
  REQUIRE(leased.jobs.size() == 1);
  for (const std::vector<std::string>& queues :
       std::vector<std::vector<std::string>>{{"exp"}, {"export-old"}, {"xport"}, {"ex", "port"}}) {
    CAPTURE(queues);
    auto r = f.store().AckMany({Succeeded(leased.jobs[0])}, f.now(), queues);
    REQUIRE(r.ok());
    REQUIRE(r.value().size() == 1);
    REQUIRE_FALSE(r.value()[0].ok());
    CHECK(r.value()[0].error().code == ErrorCode::kNotFound);
  }
  CHECK(f.Get(leased.jobs[0].id).state == JobState::kLeased);
}

TEST_CASE("AckMany limited to several queues completes a job of any of them", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);
  f.PutQueue("mine", p);
  f.PutQueue("theirs", p);
  f.Admit("theirs", "acme");
  LeaseOutcome theirs = f.Lease({"theirs"}, 1);
  REQUIRE(theirs.jobs.size() == 1);
  auto r = f.store().AckMany({Succeeded(theirs.jobs[0])}, f.now(),
                             std::vector<std::string>{"mine", "theirs"});
  REQUIRE(r.ok());
  REQUIRE(r.value().size() == 1);
  REQUIRE(r.value()[0].ok());
  CHECK(r.value()[0].value().state == JobState::kSucceeded);
  CHECK(f.Bucket("theirs", "acme").totals.succeeded == 1);
}

}  // namespace
}  // namespace sluice

// Store::SubmitMany and concurrent submits (which a driver may gather into batches, as
// PostgreSQL does): each job is decided as if submitted alone after the ones before it,
// and a refused job writes nothing. Runs on every driver ([store]).
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

using testing::MakePolicy;
using testing::StoreFixture;

std::vector<Result<SubmitOutcome>> SubmitAll(StoreFixture& f, std::vector<NewJob> jobs) {
  auto out = f.store().SubmitMany(std::move(jobs), f.now());
  return out;
}

bool Admitted(const Result<SubmitOutcome>& r) {
  return r.ok() && r.value().decision.outcome == AdmissionOutcome::kAdmitted && r.value().job;
}

TEST_CASE("SubmitMany decides each job in order as if it came alone", "[store]") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1000, /*capacity=*/3));
  std::vector<NewJob> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back(StoreFixture::Job("q", "acme", 1, std::to_string(i)));
  jobs.push_back(StoreFixture::Job("nope", "acme"));
  jobs.push_back(StoreFixture::Job("q", "other", 2, "\"o\""));
  auto out = SubmitAll(f, jobs);
  REQUIRE(out.size() == jobs.size());
  for (int i = 0; i < 3; ++i) {
    INFO(i);
    REQUIRE(Admitted(out[static_cast<size_t>(i)]));
    CHECK(out[static_cast<size_t>(i)].value().decision.remaining == 2 - i);
  }
  for (int i = 3; i < 5; ++i) {
    REQUIRE(out[static_cast<size_t>(i)].ok());
    CHECK(out[static_cast<size_t>(i)].value().decision.outcome == AdmissionOutcome::kQueueFull);
    CHECK_FALSE(out[static_cast<size_t>(i)].value().job);
  }
  REQUIRE_FALSE(out[5].ok());
  CHECK(out[5].error().code == ErrorCode::kNotFound);
  REQUIRE(Admitted(out[6]));
  CHECK(out[6].value().job->payload == "\"o\"");

  // Stored: exactly the admitted ones, the counters in step, FIFO in submission order.
  auto page = f.store().ListJobs(JobFilter{});
  REQUIRE(page.ok());
  CHECK(page.value().jobs.size() == 4);
  auto buckets = f.store().ListBuckets("q");
  REQUIRE(buckets.ok());
  REQUIRE(buckets.value().size() == 2);
  CHECK(buckets.value()[0].tenant == "acme");
  CHECK(buckets.value()[0].queued == 3);
  CHECK(buckets.value()[0].queued_cost == 3);
  CHECK(buckets.value()[0].totals.admitted == 3);
  CHECK(buckets.value()[1].queued_cost == 2);
  std::vector<std::string> acme;
  for (int round = 0; round < 10 && acme.size() < 3; ++round) {
    LeaseRequest req;
    req.queues = {"q"};
    req.max_jobs = 4;
    req.worker_id = "w";
    auto leased = f.store().LeaseMany({req}, f.now());
    REQUIRE(leased[0].ok());
    for (const JobRecord& j : leased[0].value().jobs) {
      if (j.tenant == "acme") acme.push_back(j.id);
    }
    f.clock().Advance(kMicrosPerSecond);
  }
  REQUIRE(acme.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(acme[i] == out[i].value().job->id);
}

TEST_CASE("SubmitMany with one Idempotency-Key twice makes one job", "[store]") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1000));
  NewJob a = StoreFixture::Job("q", "acme");
  a.idempotency_key = "k";
  a.body_hash = "h1";
  NewJob same = a;
  NewJob other = a;
  other.body_hash = "h2";
  auto out = SubmitAll(f, {a, same, other});
  REQUIRE(Admitted(out[0]));
  CHECK_FALSE(out[0].value().replayed);
  REQUIRE(Admitted(out[1]));
  CHECK(out[1].value().replayed);
  CHECK(out[1].value().job->id == out[0].value().job->id);
  REQUIRE_FALSE(out[2].ok());
  CHECK(out[2].error().code == ErrorCode::kIdempotencyKeyReused);
  // And in a later batch, the key replays the stored job.
  auto again = SubmitAll(f, {same});
  REQUIRE(Admitted(again[0]));
  CHECK(again[0].value().replayed);
  CHECK(again[0].value().job->id == out[0].value().job->id);
  auto page = f.store().ListJobs(JobFilter{});
  REQUIRE(page.ok());
  CHECK(page.value().jobs.size() == 1);
}

TEST_CASE("Concurrent submits never overfill a bucket and lose nothing", "[store]") {
  StoreFixture f;
  constexpr int kCapacity = 40;
  f.PutQueue("q", MakePolicy(1000, kCapacity));
  constexpr int kThreads = 8, kEach = 15;
  std::atomic<int> admitted{0}, full{0}, other{0};
  std::vector<std::string> ids[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        // Two tenants: one fills up, the other never does.
        const std::string tenant = i % 2 == 0 ? "big" : "small" + std::to_string(t);
        auto r = f.store().Submit(StoreFixture::Job("q", tenant), f.now());
        if (!r.ok()) {
          ++other;
        } else if (r.value().decision.outcome == AdmissionOutcome::kAdmitted) {
          ++admitted;
          ids[t].push_back(r.value().job->id);
        } else if (r.value().decision.outcome == AdmissionOutcome::kQueueFull) {
          ++full;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(other == 0);
  const int big_submits = kThreads * ((kEach + 1) / 2);
  const int small_submits = kThreads * (kEach / 2);
  CHECK(admitted == kCapacity + small_submits);
  CHECK(full == big_submits - kCapacity);
  auto buckets = f.store().ListBuckets("q");
  REQUIRE(buckets.ok());
  int64_t queued = 0;
  for (const BucketInfo& b : buckets.value()) {
    if (b.tenant == "big") CHECK(b.queued == kCapacity);
    queued += b.queued;
  }
  CHECK(queued == admitted);
  for (const auto& mine : ids) {
    for (const std::string& id : mine) REQUIRE(f.store().GetJob(id).ok());
  }
}

// Where the driver gathers concurrent submits into one transaction (PostgreSQL, SQLite
// at NORMAL), each is still decided on its own: one for a queue that does not exist
// fails alone, and each thread's jobs keep their order in their bucket.
TEST_CASE("Concurrent submits to a queue and to no queue each get their own answer", "[store]") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1000, 1000));
  constexpr int kThreads = 6, kEach = 20;
  std::atomic<int> missing{0}, other{0};
  std::vector<std::string> ids[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const bool to_nowhere = (i + t) % 3 == 0;
        auto r = f.store().Submit(
            StoreFixture::Job(to_nowhere ? "nowhere" : "q", "tenant" + std::to_string(t)), f.now());
        if (to_nowhere) {
          (!r.ok() && r.error().code == ErrorCode::kNotFound ? missing : other)++;
        } else if (r.ok() && r.value().decision.outcome == AdmissionOutcome::kAdmitted) {
          ids[t].push_back(r.value().job->id);
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(other == 0);
  int expected_missing = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) expected_missing += (i + t) % 3 == 0;
  }
  CHECK(missing == expected_missing);
  // Each tenant's jobs leave in the order its thread submitted them.
  size_t total = 0;
  for (const auto& mine : ids) total += mine.size();
  std::map<std::string, std::vector<std::string>> leased;  // by tenant
  for (size_t n = 0; n < total;) {
    f.clock().Advance(kMicrosPerSecond);
    LeaseOutcome got = f.Lease({"q"}, 1000);
    REQUIRE_FALSE(got.jobs.empty());
    for (const JobRecord& j : got.jobs) leased[j.tenant].push_back(j.id);
    n += got.jobs.size();
  }
  for (int t = 0; t < kThreads; ++t) CHECK(leased["tenant" + std::to_string(t)] == ids[t]);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST_CASE("Lease requests over overlapping queues in one transaction share a bucket's rate",
          "[store]") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1000));  // 1 per second, burst 1
  f.PutQueue("r", MakePolicy(1000));
  for (int i = 0; i < 3; ++i) f.Admit("q", "acme");
  LeaseRequest only_q, both;
  only_q.queues = {"q"};
  both.queues = {"q", "r"};
  only_q.max_jobs = both.max_jobs = 5;
  only_q.worker_id = both.worker_id = "w";
  auto first = f.store().LeaseMany({only_q, both}, f.now());
  REQUIRE(first[0].ok());
  REQUIRE(first[1].ok());
  CHECK(first[0].value().jobs.size() + first[1].value().jobs.size() == 1);
  auto buckets = f.store().ListBuckets("q");
  REQUIRE(buckets.ok());
  CHECK(buckets.value().front().leased == 1);
  CHECK(buckets.value().front().queued == 2);
  f.clock().Advance(kMicrosPerSecond);
  auto second = f.store().LeaseMany({both, only_q}, f.now());
  REQUIRE(second[0].ok());
  REQUIRE(second[1].ok());
  CHECK(second[0].value().jobs.size() + second[1].value().jobs.size() == 1);
}

}  // namespace
}  // namespace sluice

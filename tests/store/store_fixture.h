// Test fixture for store/: a fresh SQLite file per test (TempDir), virtual time
// (ManualClock) and a deterministic retry-jitter draw. Used by tests/store/*_test.cc.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/manual_clock.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

inline QueuePolicy MakePolicy(int64_t rate_milli, int64_t capacity = 100) {
  QueuePolicy p;
  p.bucket.rate_milli = rate_milli;
  p.bucket.capacity = capacity;
  return p;
}

class StoreFixture {
 public:
  StoreFixture() { Open(); }

  // (Re)opens the store on the same file, closing the previous one first.
  void Open() {
    store_.reset();
    SqliteStoreOptions options;
    options.path = db_path();
    options.unit_random = [this] { return unit_random_; };
    auto opened = SqliteStore::Open(options);
    INFO((opened.ok() ? std::string() : opened.error().detail));
    REQUIRE(opened.ok());
    store_ = std::move(opened.value());
  }
  void Close() { store_.reset(); }

  SqliteStore& store() { return *store_; }
  ManualClock& clock() { return clock_; }
  Micros now() const { return clock_.Now(); }
  std::string db_path() const { return dir_.File("t.db"); }
  void set_unit_random(double u) { unit_random_ = u; }

  QueueInfo PutQueue(const std::string& name, const QueuePolicy& p) {
    auto r = store_->PutQueue(name, p, now());
    INFO((r.ok() ? std::string() : r.error().detail));
    REQUIRE(r.ok());
    return r.value();
  }

  SubmitOutcome Submit(const NewJob& job) {
    auto r = store_->Submit(job, now());
    INFO((r.ok() ? std::string() : r.error().detail));
    REQUIRE(r.ok());
    return r.value();
  }

  // Submits and requires admission; returns the stored job.
  JobRecord Admit(const std::string& queue, const std::string& tenant, int64_t cost = 1,
                  const std::string& payload = "null") {
    NewJob j;
    j.queue = queue;
    j.tenant = tenant;
    j.cost = cost;
    j.payload = payload;
    return Admit(j);
  }
  JobRecord Admit(const NewJob& j) {
    SubmitOutcome out = Submit(j);
    REQUIRE(out.decision.outcome == AdmissionOutcome::kAdmitted);
    REQUIRE(out.job);
    return *out.job;
  }

  LeaseOutcome Lease(const std::vector<std::string>& queues, int64_t max_jobs = 1,
                     std::optional<int64_t> lease_ms = std::nullopt) {
    LeaseRequest req;
    req.queues = queues;
    req.max_jobs = max_jobs;
    req.lease_ms = lease_ms;
    req.worker_id = "w1";
    auto results = store_->LeaseMany({req}, now());
    REQUIRE(results.size() == 1);
    INFO((results[0].ok() ? std::string() : results[0].error().detail));
    REQUIRE(results[0].ok());
    return results[0].value();
  }

  JobRecord Get(const std::string& id) {
    auto r = store_->GetJob(id);
    INFO((r.ok() ? std::string() : r.error().detail));
    REQUIRE(r.ok());
    return r.value();
  }

  JobRecord Complete(const JobRecord& leased, std::optional<std::string> result = std::nullopt) {
    REQUIRE(leased.lease_id);
    auto r = store_->Complete(leased.id, *leased.lease_id, result, now());
    INFO((r.ok() ? std::string() : r.error().detail));
    REQUIRE(r.ok());
    return r.value();
  }

  BucketInfo Bucket(const std::string& queue, const std::string& tenant) {
    auto r = store_->ListBuckets(queue);
    REQUIRE(r.ok());
    for (const BucketInfo& b : r.value()) {
      if (b.tenant == tenant) return b;
    }
    FAIL("no bucket " << queue << "/" << tenant);
    return {};
  }

 private:
  TempDir dir_;
  ManualClock clock_;
  double unit_random_ = 0.5;
  std::unique_ptr<SqliteStore> store_;
};

}  // namespace sluice::testing

// Test fixture for store/: a fresh store per test on the driver the environment names
// (SLUICE_TEST_DRIVER=sqlite, the default: a new file in a TempDir, at
// SLUICE_TEST_SQLITE_SYNC, FULL by default; =postgres: a new
// database on the shared test server, testutil/pg_server.h), virtual time (ManualClock:
// the PostgreSQL store is opened with the caller's clock) and a deterministic
// retry-jitter draw. The contract tests (tag [store]) use only the Store interface, so
// tests/CMakeLists.txt runs them on every driver: one conformance suite.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"
#if __has_include("store/postgres/pg_store.h")
#include "store/postgres/pg_store.h"
#include "tests/testutil/pg_server.h"
#define SLUICE_TEST_HAVE_PG 1
#endif
#include "tests/testutil/manual_clock.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::testing {

// The ids of jobs, in their order.
inline std::vector<std::string> Ids(const std::vector<JobRecord>& jobs) {
  std::vector<std::string> ids;
  for (const JobRecord& j : jobs) ids.push_back(j.id);
  return ids;
}

inline QueuePolicy MakePolicy(int64_t rate_milli, int64_t capacity = 100) {
  QueuePolicy p;
  p.bucket.rate_milli = rate_milli;
  p.bucket.capacity = capacity;
  return p;
}

// The driver the tests run on: SLUICE_TEST_DRIVER, "sqlite" by default.
inline std::string TestDriver() {
  const char* d = std::getenv("SLUICE_TEST_DRIVER");
  return d && *d ? d : "sqlite";
}

class StoreFixture {
 public:
  StoreFixture() : driver_(TestDriver()) { Open(); }

  // (Re)opens the store on the same file (or database), closing the previous one first.
  void Open() {
    store_.reset();
    sqlite_ = nullptr;
    if (driver_ == "postgres") {
#ifdef SLUICE_TEST_HAVE_PG
      if (pg_uri_.empty()) pg_uri_ = PgServer::Shared().CreateDatabase();
      PgStoreOptions options;
      options.uri = pg_uri_;
      options.clock = PgClock::kCaller;
      options.unit_random = [this] { return unit_random_; };
      auto opened = PgStore::Open(options);
      INFO((opened.ok() ? std::string() : opened.error().detail));
      REQUIRE(opened.ok());
      store_ = std::move(opened.value());
#else
      FAIL("this build has no PostgreSQL driver");
#endif
      return;
    }
    REQUIRE(driver_ == "sqlite");
    SqliteStoreOptions options;
    options.path = db_path();
    // SLUICE_TEST_SQLITE_SYNC=NORMAL: the suite once more as sluiced --synchronous NORMAL
    // runs it, with concurrent submits in batches (SqliteStoreOptions::intake_batches).
    if (const char* sync = std::getenv("SLUICE_TEST_SQLITE_SYNC"); sync && *sync) {
      options.synchronous = sync;
    }
    options.unit_random = [this] { return unit_random_; };
    auto opened = SqliteStore::Open(options);
    INFO((opened.ok() ? std::string() : opened.error().detail));
    REQUIRE(opened.ok());
    sqlite_ = opened.value().get();
    store_ = std::move(opened.value());
  }
  void Close() {
    store_.reset();
    sqlite_ = nullptr;
  }

  Store& store() { return *store_; }
  // The SQLite store, for the driver's own tests (they always run on SQLite).
  SqliteStore& sqlite() {
    REQUIRE(sqlite_ != nullptr);
    return *sqlite_;
  }
  const std::string& driver() const { return driver_; }
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

  // A job with nothing but these set.
  static NewJob Job(const std::string& queue, const std::string& tenant, int64_t cost = 1,
                    const std::string& payload = "null") {
    NewJob j;
    j.queue = queue;
    j.tenant = tenant;
    j.cost = cost;
    j.payload = payload;
    return j;
  }

  // Submits and requires admission; returns the stored job.
  JobRecord Admit(const std::string& queue, const std::string& tenant, int64_t cost = 1,
                  const std::string& payload = "null") {
    return Admit(Job(queue, tenant, cost, payload));
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
  std::string driver_;
  TempDir dir_;
  std::string pg_uri_;  // the test's database, on postgres
  ManualClock clock_;
  double unit_random_ = 0.5;
  std::unique_ptr<Store> store_;
  SqliteStore* sqlite_ = nullptr;  // store_, when on SQLite
};

}  // namespace sluice::testing

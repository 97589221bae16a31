// PgStore (store/postgres/) on a fresh PostgreSQL database per test (PgServer): the
// Store contract end to end on PostgreSQL, the database's clock, the statement file
// against its list, a second open, admissions to one bucket from many threads and two
// stores (two processes, as far as the database can tell), and an outage the store
// recovers from by itself.
#include "store/postgres/pg_store.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/engine/tx.h"
#include "store/migrations.h"
#include "store/postgres/pg.h"
#include "store/postgres/pg_tx.h"
#include "store/sql_files.h"
#include "store/statements.h"
#include "tests/store/store_fixture.h"
#include "tests/testutil/manual_clock.h"
#include "tests/testutil/pg_server.h"
#include "tests/testutil/subprocess.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::MakePolicy;
using testing::ManualClock;
using testing::PgServer;

constexpr Micros kSecond = kMicrosPerSecond;

std::unique_ptr<PgStore> OpenPg(const std::string& uri, PgClock clock = PgClock::kCaller,
                                int pool = 4) {
  PgStoreOptions options;
  options.uri = uri;
  options.pool = pool;
  options.clock = clock;
  options.unit_random = [] { return 0.5; };
  auto opened = PgStore::Open(options);
  INFO((opened.ok() ? std::string() : opened.error().detail));
  REQUIRE(opened.ok());
  return std::move(opened.value());
}

NewJob Job(const std::string& queue, const std::string& tenant, int64_t cost = 1) {
  NewJob j;
  j.queue = queue;
  j.tenant = tenant;
  j.cost = cost;
  return j;
}

TEST_CASE("PostgreSQL store: with the database's clock a caller's now is not used", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::unique_ptr<PgStore> store = OpenPg(uri, PgClock::kDatabase);
  auto wall = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const Micros year = 365LL * 24 * 3600 * kSecond;
  REQUIRE(store->PutQueue("export", MakePolicy(1000), wall() - year).ok());
  const Micros before = wall();
  auto out = store->Submit(Job("export", "acme"), before - year);
  REQUIRE(out.ok());
  REQUIRE(out.value().job);
  const Micros created = out.value().job->created_at;
  CHECK(created >= before - 5 * kSecond);
  CHECK(created <= wall() + 5 * kSecond);
  // The lease too runs on the database's clock, though the caller is a year ahead.
  LeaseRequest req;
  req.queues = {"export"};
  req.lease_ms = 60'000;
  auto leases = store->LeaseMany({req}, wall() + year);
  REQUIRE(leases[0].ok());
  REQUIRE(leases[0].value().jobs.size() == 1);
  CHECK(*leases[0].value().jobs[0].lease_expires_at <= wall() + 65 * kSecond);
}

// The quoted names in a SQL list such as "'queued', 'leased'".
std::set<std::string> QuotedNames(const std::string& list) {
  std::set<std::string> names;
  static const std::regex kQuoted("'([^']*)'");
  for (std::sregex_iterator it(list.begin(), list.end(), kQuoted), end; it != end; ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

std::set<std::string> StateNames(bool terminal_only) {
  std::set<std::string> names;
  for (JobState s : kAllJobStates) {
    if (!terminal_only || IsTerminal(s)) names.insert(std::string(JobStateName(s)));
  }
  return names;
}

TEST_CASE("The PostgreSQL schema's CHECKs on state list exactly the enum's names", "[postgres]") {
  auto text = FindSqlFile("store/sql/postgres/schema.sql");
  REQUIRE(text);
  const std::string schema(*text);
  static const std::regex kStateCheck(R"(CHECK\s*\(\s*state\s+IN\s*\(([^)]*)\)\s*\))",
                                      std::regex::icase);
  std::smatch m;
  REQUIRE(std::regex_search(schema, m, kStateCheck));
  CHECK(QuotedNames(m[1].str()) == StateNames(false));
  static const std::regex kTerminalCheck(
      R"(CHECK\s*\(\s*\(\s*state\s+IN\s*\(([^)]*)\)\s*\)\s*=\s*\(\s*finished_at\s+IS\s+NOT\s+NULL)",
      std::regex::icase);
  REQUIRE(std::regex_search(schema, m, kTerminalCheck));
  CHECK(QuotedNames(m[1].str()) == StateNames(true));
}

// Inserts one row straight into jobs, bypassing the store; the SQLSTATE, "" if it went in.
std::string InsertRaw(pg::Connection& conn, const std::string& state, bool with_lease,
                      bool finished) {
  const std::string sql =
      "INSERT INTO jobs (id, queue, tenant, state, payload, cost, max_attempts, lease_ms, "
      "policy_version, created_at, available_at, estimated_start, lease_id, lease_expires_at, "
      "finished_at) VALUES ($1, 'q', 't', $2, 'null', 1, 1, 1000, 1, 0, 0, 0, $3, $4, $5)";
  try {
    conn.ExecParams(
        sql, pg::Params(
                 "job_raw_" + state + std::to_string(with_lease) + std::to_string(finished), state,
                 with_lease ? std::optional<std::string>("lse_raw") : std::optional<std::string>(),
                 with_lease ? std::optional<int64_t>(1'000'000) : std::nullopt,
                 finished ? std::optional<int64_t>(1) : std::nullopt));
    return "";
  } catch (const pg::PgError& e) {
    return e.sqlstate();
  }
}

TEST_CASE("The PostgreSQL database refuses a state or a lease its CHECKs forbid", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  OpenPg(uri);  // the schema
  pg::Connection conn(uri);
  const std::string kCheckViolation = "23514";
  for (JobState s : kAllJobStates) {
    const std::string name(JobStateName(s));
    CAPTURE(name);
    CHECK(InsertRaw(conn, name, s == JobState::kLeased, IsTerminal(s)).empty());
    // Flip the lease, then finished_at, from what the state requires.
    CHECK(InsertRaw(conn, name, s != JobState::kLeased, IsTerminal(s)) == kCheckViolation);
    CHECK(InsertRaw(conn, name, s == JobState::kLeased, !IsTerminal(s)) == kCheckViolation);
  }
  for (const char* bogus : {"bogus", "Queued", "running", ""}) {
    CAPTURE(bogus);
    CHECK(InsertRaw(conn, bogus, false, false) == kCheckViolation);
    CHECK(InsertRaw(conn, bogus, false, true) == kCheckViolation);
  }
  CHECK(conn.Exec("SELECT count(*) FROM jobs").Int(0, 0) ==
        static_cast<int64_t>(kAllJobStates.size()));
}

TEST_CASE("A second PgStore opens on a database that has the schema", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::string id;
  {
    std::unique_ptr<PgStore> first = OpenPg(uri);
    REQUIRE(first->PutQueue("export", MakePolicy(1000), 1).ok());
    auto out = first->Submit(Job("export", "acme"), 2);
    REQUIRE(out.ok());
    id = out.value().job->id;
    std::unique_ptr<PgStore> beside = OpenPg(uri);  // while the first is open
    CHECK(beside->GetJob(id).ok());
  }
  std::unique_ptr<PgStore> again = OpenPg(uri);
  auto job = again->GetJob(id);
  REQUIRE(job.ok());
  CHECK(job.value().state == JobState::kQueued);

  pg::Connection conn(uri);
  pg::Rows versions = conn.Exec("SELECT version, name FROM schema_migrations ORDER BY version");
  REQUIRE(versions.size() == 1);
  CHECK(versions.Int(0, 0) == LatestVersion(MigrationsOf("postgres")));
  CHECK(versions.Text(0, 1) == "schema.sql");
  CHECK(LatestVersion(MigrationsOf("postgres")) == 6);
}

TEST_CASE("A version 1 database is upgraded to keep ended leases aside (bucket_deltas)",
          "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::string id, lease;
  {
    std::unique_ptr<PgStore> first = OpenPg(uri);
    REQUIRE(first->PutQueue("export", MakePolicy(1000), 1).ok());
    REQUIRE(first->Submit(Job("export", "acme"), 2).ok());
    auto leased = first->LeaseMany({LeaseRequest{{"export"}, 1, std::nullopt, "w"}}, 3);
    REQUIRE(leased[0].ok());
    REQUIRE(leased[0].value().jobs.size() == 1);
    id = leased[0].value().jobs[0].id;
    lease = *leased[0].value().jobs[0].lease_id;
  }
  {  // back to version 1: no bucket_deltas, no rate_limits
    pg::Connection conn(uri);
    conn.Exec(
        "DROP TABLE bucket_deltas; DROP TABLE rate_limits; DROP TABLE limit_layers; "
        "DROP TABLE config_sources; "
        "DROP INDEX buckets_ready; ALTER TABLE buckets DROP COLUMN ready_at; "
        "DELETE FROM schema_migrations WHERE version > 1");
  }
  std::unique_ptr<PgStore> upgraded = OpenPg(uri);
  pg::Connection conn(uri);
  CHECK(conn.Exec("SELECT max(version) FROM schema_migrations").Int(0, 0) == 6);
  CHECK(conn.Exec("SELECT count(*) FROM config_sources").Int(0, 0) == 0);  // made by 0006
  CHECK(conn.Exec("SELECT count(*) FROM rate_limits").Int(0, 0) == 0);     // made by 0003
  CHECK(conn.Exec("SELECT count(*) FROM limit_layers").Int(0, 0) == 0);    // made by 0004
  // Made by 0005: every bucket's release index entry to be checked again.
  CHECK(conn.Exec("SELECT count(*) FROM buckets WHERE ready_at = " + std::to_string(kReadyDirty))
            .Int(0, 0) == 1);
  REQUIRE(upgraded->Complete(id, lease, std::nullopt, 4).ok());
  CHECK(conn.Exec("SELECT count(*) FROM bucket_deltas").Int(0, 0) == 1);
  auto buckets = upgraded->ListBuckets("export");
  REQUIRE(buckets.ok());
  CHECK(buckets.value()[0].leased == 0);
  CHECK(buckets.value()[0].totals.succeeded == 1);
  // Folded by maintenance: the same counters, from the bucket row alone.
  REQUIRE(upgraded->ReapLeases(5).ok());
  CHECK(conn.Exec("SELECT count(*) FROM bucket_deltas").Int(0, 0) == 0);
  CHECK(conn.Exec("SELECT leased, succeeded_total FROM buckets").Int(0, 1) == 1);
  CHECK(conn.Exec("SELECT leased FROM buckets").Int(0, 0) == 0);
  buckets = upgraded->ListBuckets("export");
  REQUIRE(buckets.ok());
  CHECK(buckets.value()[0].leased == 0);
  CHECK(buckets.value()[0].totals.succeeded == 1);
}

TEST_CASE("PgStores opened at once on a new database apply its schema once", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      PgStoreOptions options;
      options.uri = uri;
      options.pool = 1;
      if (PgStore::Open(options).ok()) ++opened;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(opened == 4);
  pg::Connection conn(uri);
  CHECK(conn.Exec("SELECT count(*) FROM schema_migrations").Int(0, 0) == 1);
}

TEST_CASE("Admissions to one bucket from many threads and two stores never exceed its capacity",
          "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::unique_ptr<PgStore> a = OpenPg(uri, PgClock::kDatabase, 8);
  std::unique_ptr<PgStore> b = OpenPg(uri, PgClock::kDatabase, 8);
  constexpr int kCapacity = 10;
  constexpr int kThreads = 16;
  constexpr int kEach = 5;
  REQUIRE(a->PutQueue("export", MakePolicy(1, kCapacity), 0).ok());  // 1 job per 1000 s
  std::atomic<int> admitted{0}, full{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      PgStore& store = t % 2 == 0 ? *a : *b;
      for (int i = 0; i < kEach; ++i) {
        auto r = store.Submit(Job("export", "acme"), 0);
        if (!r.ok()) {
          ++failed;
        } else if (r.value().decision.outcome == AdmissionOutcome::kAdmitted) {
          ++admitted;
        } else {
          ++full;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failed == 0);
  CHECK(admitted == kCapacity);
  CHECK(full == kThreads * kEach - kCapacity);
  auto buckets = a->ListBuckets("export");
  REQUIRE(buckets.ok());
  REQUIRE(buckets.value().size() == 1);
  CHECK(buckets.value()[0].queued == kCapacity);
  CHECK(buckets.value()[0].totals.admitted == kCapacity);
  JobFilter all;
  all.limit = 1000;
  CHECK(a->ListJobs(all).value().jobs.size() == kCapacity);
}

TEST_CASE("Two PgStores leasing from one queue at once hand out each job once", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::unique_ptr<PgStore> a = OpenPg(uri, PgClock::kDatabase, 4);
  std::unique_ptr<PgStore> b = OpenPg(uri, PgClock::kDatabase, 4);
  constexpr int kJobs = 60;
  QueuePolicy p = MakePolicy(1'000'000, 1000);  // 1000/s, bursts of 1000
  p.bucket.burst = 1000;
  REQUIRE(a->PutQueue("export", p, 0).ok());
  for (int i = 0; i < kJobs; ++i) {
    REQUIRE(a->Submit(Job("export", "tenant" + std::to_string(i % 3)), 0).ok());
  }
  std::mutex mu;
  std::multiset<std::string> leased;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      PgStore& store = t % 2 == 0 ? *a : *b;
      LeaseRequest req;
      req.queues = {"export"};
      req.max_jobs = 3;
      req.worker_id = "w" + std::to_string(t);
      for (int empty = 0; empty < 3;) {
        auto r = store.LeaseMany({req}, 0);
        if (!r[0].ok()) {
          ++errors;
          return;
        }
        if (r[0].value().jobs.empty()) {
          ++empty;
          continue;
        }
        std::lock_guard lock(mu);
        for (const JobRecord& j : r[0].value().jobs) leased.insert(j.id);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors == 0);
  CHECK(leased.size() == kJobs);
  CHECK(std::set<std::string>(leased.begin(), leased.end()).size() == kJobs);
  auto q = a->GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.leased == kJobs);
  CHECK(q.value().stats.queued == 0);
}

TEST_CASE("Two PgStores submitting leasing failing and reaping at once keep the counts true",
          "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::unique_ptr<PgStore> a = OpenPg(uri, PgClock::kDatabase, 4);
  std::unique_ptr<PgStore> b = OpenPg(uri, PgClock::kDatabase, 4);
  constexpr int kJobs = 120;
  QueuePolicy p = MakePolicy(1'000'000, 1000);
  p.bucket.burst = 1000;
  p.max_attempts = 100;
  p.retry_backoff_ms = 1;
  p.retry_backoff_max_ms = 1;
  REQUIRE(a->PutQueue("export", p, 0).ok());
  std::atomic<int> submitted{0}, succeeded{0}, errors{0};
  std::string first_error;
  std::mutex mu;
  auto note = [&](const Error& e) {
    std::lock_guard lock(mu);
    if (errors++ == 0) first_error = std::string(ErrorCodeName(e.code)) + ": " + e.detail;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {  // producers, over four tenants
    threads.emplace_back([&, t] {
      PgStore& store = t % 2 == 0 ? *a : *b;
      for (int i = 0; i < kJobs / 4; ++i) {
        auto r = store.Submit(Job("export", "tenant" + std::to_string(t)), 0);
        if (!r.ok()) note(r.error());
        if (r.ok()) ++submitted;
      }
    });
  }
  for (int t = 0; t < 4; ++t) {  // workers: every other attempt fails, short leases lapse
    threads.emplace_back([&, t] {
      PgStore& store = t % 2 == 0 ? *a : *b;
      LeaseRequest req{{"export"}, 2, /*lease_ms=*/t == 0 ? 1 : 30'000, "w" + std::to_string(t)};
      int n = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (succeeded < kJobs && std::chrono::steady_clock::now() < deadline) {
        auto r = store.LeaseMany({req}, 0);
        if (!r[0].ok()) {
          note(r[0].error());
          continue;
        }
        for (const JobRecord& j : r[0].value().jobs) {
          if (t == 0) continue;  // lets its 1 ms leases lapse, for the reaper
          if (++n % 2 == 0) {
            auto f = store.Fail(j.id, *j.lease_id, FailRequest{"again", true, 0}, 0);
            if (!f.ok()) note(f.error());
          } else {
            auto c = store.Complete(j.id, *j.lease_id, std::nullopt, 0);
            if (c.ok()) ++succeeded;
            if (!c.ok()) note(c.error());
          }
        }
      }
    });
  }
  std::atomic<bool> stop{false};
  std::thread reaper([&] {  // a reaper beside the leases' own sweeps
    while (!stop) {
      auto r = b->ReapLeases(0);
      if (!r.ok()) note(r.error());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  reaper.join();
  INFO(first_error);
  CHECK(errors == 0);
  CHECK(submitted == kJobs);
  CHECK(succeeded == kJobs);
  auto q = a->GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.queued == 0);
  CHECK(q.value().stats.leased == 0);
  CHECK(q.value().stats.totals.admitted == kJobs);
  CHECK(q.value().stats.totals.succeeded == kJobs);
}

TEST_CASE("A PgStore fails fast while its database is down and recovers by itself", "[postgres]") {
  PgServer server;  // a private one: the shared server stays up for the other tests
  const std::string uri = server.CreateDatabase();
  std::unique_ptr<PgStore> store = OpenPg(uri, PgClock::kCaller, 4);
  REQUIRE(store->PutQueue("export", MakePolicy(1'000'000), 1).ok());
  REQUIRE(store->Submit(Job("export", "acme"), 2).ok());
  REQUIRE(store->Probe(3).ok());

  server.Stop();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {  // every worker, whatever its connection's state
    auto probe = store->Probe(4);
    REQUIRE_FALSE(probe.ok());
    CHECK(probe.error().code == ErrorCode::kStorageUnavailable);
    auto submit = store->Submit(Job("export", "acme"), 4);
    REQUIRE_FALSE(submit.ok());
    CHECK(submit.error().code == ErrorCode::kStorageUnavailable);
    auto read = store->GetQueue("export");
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().code == ErrorCode::kStorageUnavailable);
    auto lease = store->LeaseMany({LeaseRequest{{"export"}, 1, std::nullopt, "w"}}, 4);
    REQUIRE_FALSE(lease[0].ok());
    CHECK(lease[0].error().code == ErrorCode::kStorageUnavailable);
  }
  // 80 refusals in well under a second each: nothing waits for the dead server.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));

  server.Start();
  CHECK(testing::Eventually([&] { return store->Probe(5).ok(); }, std::chrono::seconds(30)));
  // Every worker reconnects: a run of operations all succeed.
  for (int i = 0; i < 20; ++i) {
    auto out = store->Submit(Job("export", "acme"), 6);
    INFO((out.ok() ? std::string() : out.error().detail));
    REQUIRE(out.ok());
  }
  auto q = store->GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.queued == 21);
}

TEST_CASE("A PgStore destroyed with writes queued finishes them first", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::unique_ptr<PgStore> store = OpenPg(uri, PgClock::kCaller, 2);
  QueuePolicy p = MakePolicy(1'000'000, 1000);
  p.max_attempts = 5;
  REQUIRE(store->PutQueue("export", p, 1).ok());
  REQUIRE(store->Submit(Job("export", "acme"), 1).ok());
  auto leased = store->LeaseMany({LeaseRequest{{"export"}, 1, std::nullopt, "w"}}, 1);
  REQUIRE(leased[0].ok());
  REQUIRE(leased[0].value().jobs.size() == 1);
  const JobRecord job = leased[0].value().jobs[0];

  constexpr int kSubmits = 200;
  std::atomic<int> ok{0}, done{0};
  for (int i = 0; i < kSubmits; ++i) {
    store->SubmitAsync(Job("export", "acme"), 2, [&](Result<SubmitOutcome> r) {
      if (r.ok()) ++ok;
      ++done;
    });
  }
  // A failure's backoff draws its jitter from the engine: it must still be there.
  std::atomic<bool> failed{false};
  store->FailAsync(job.id, *job.lease_id, FailRequest{"x", true, std::nullopt}, 2,
                   [&](Result<JobRecord> r) { failed = r.ok(); });
  store.reset();
  CHECK(done == kSubmits);
  CHECK(ok == kSubmits);
  CHECK(failed);
  std::unique_ptr<PgStore> again = OpenPg(uri);
  CHECK(again->GetQueue("export").value().stats.queued == kSubmits + 1);
}

TEST_CASE("PgStore::Open on a database that is not there is storage_unavailable", "[postgres]") {
  PgStoreOptions options;
  options.uri = PgServer::Shared().uri("no_such_database");
  auto opened = PgStore::Open(options);
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.error().code == ErrorCode::kStorageUnavailable);
  CHECK_THAT(opened.error().detail, Catch::StartsWith("cannot open database: "));
}

// The planner reads the release index through its index: a page of ready_buckets
// (store/engine/release.cc) on a queue of thousands of buckets is an index scan of
// buckets_ready, never a scan of every bucket. (On SQLite the statement names the index,
// INDEXED BY, and would not prepare without it.)
TEST_CASE("PostgreSQL reads a page of the release index through buckets_ready", "[postgres]") {
  const std::string uri = PgServer::Shared().CreateDatabase();
  std::unique_ptr<PgStore> store = OpenPg(uri);
  REQUIRE(store->PutQueue("q", MakePolicy(1'000'000), 1).ok());
  std::vector<NewJob> jobs;
  for (int i = 0; i < 3000; ++i) jobs.push_back(Job("q", "t" + std::to_string(i)));
  for (const auto& r : store->SubmitMany(std::move(jobs), 2)) REQUIRE(r.ok());
  pg::Connection conn(uri);
  conn.Exec("ANALYZE");
  const Statements sql(FindSqlFile("store/sql/postgres/statements.sql").value_or(""),
                       "statements.sql");
  pg::Rows plan =
      conn.ExecParams("EXPLAIN " + std::string(sql.Get("ready_buckets")),
                      pg::Params(std::string("q"), int64_t{3}, std::numeric_limits<int64_t>::min(),
                                 std::string(), int64_t{64}, int64_t{2}));
  std::string text;
  for (int r = 0; r < plan.size(); ++r) text += plan.Text(r, 0) + "\n";
  INFO(text);
  CHECK(text.find("Index Scan using buckets_ready") != std::string::npos);
  CHECK(text.find("Seq Scan on buckets") == std::string::npos);
}

}  // namespace
}  // namespace sluice

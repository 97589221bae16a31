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

#include "store/migrations.h"
#include "store/postgres/pg.h"
#include "store/postgres/pg_tx.h"
#include "store/sql_files.h"
#include "store/statements.h"
#include "tests/testutil/manual_clock.h"
#include "tests/testutil/pg_server.h"
#include "tests/testutil/subprocess.h"

namespace sluice {
namespace {

using nlohmann::json;
using testing::ManualClock;
using testing::PgServer;

constexpr Micros kSecond = kMicrosPerSecond;

QueuePolicy MakePolicy(int64_t rate_milli, int64_t capacity = 100) {
  QueuePolicy p;
  p.bucket.rate_milli = rate_milli;
  p.bucket.capacity = capacity;
  return p;
}

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

// A fresh database, a store on it with virtual time (the caller's clock).
class PgFixture {
 public:
  PgFixture() : uri_(PgServer::Shared().CreateDatabase()), store_(OpenPg(uri_)) {}

  PgStore& store() { return *store_; }
  ManualClock& clock() { return clock_; }
  Micros now() const { return clock_.Now(); }
  const std::string& uri() const { return uri_; }

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

  JobRecord Admit(const NewJob& j) {
    SubmitOutcome out = Submit(j);
    REQUIRE(out.decision.outcome == AdmissionOutcome::kAdmitted);
    REQUIRE(out.job);
    return *out.job;
  }
  JobRecord Admit(const std::string& queue, const std::string& tenant) {
    return Admit(Job(queue, tenant));
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
  std::string uri_;
  ManualClock clock_;
  std::unique_ptr<PgStore> store_;
};

TEST_CASE("PostgreSQL store: submit lease and complete", "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  NewJob nj = Job("export", "acme");
  nj.payload = R"({"report":42})";
  nj.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  JobRecord job = f.Admit(nj);
  CHECK(job.state == JobState::kQueued);
  CHECK(job.created_at == f.now());
  JobRecord stored = f.Get(job.id);
  CHECK(stored.payload == R"({"report":42})");
  CHECK(stored.traceparent == nj.traceparent);
  CHECK(stored.errors == "[]");

  LeaseOutcome lease = f.Lease({"export"}, 1, 30'000);
  REQUIRE(lease.jobs.size() == 1);
  const JobRecord& leased = lease.jobs[0];
  CHECK(leased.id == job.id);
  CHECK(leased.state == JobState::kLeased);
  CHECK(leased.attempt == 1);
  REQUIRE(leased.lease_id);
  CHECK(*leased.lease_expires_at == f.now() + 30'000 * kMicrosPerMilli);
  CHECK(f.Lease({"export"}).jobs.empty());
  CHECK(f.Bucket("export", "acme").leased == 1);

  auto wrong = f.store().Complete(job.id, "lse_not_it", std::nullopt, f.now());
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == ErrorCode::kLeaseLost);
  auto unknown = f.store().Complete("job_nope", *leased.lease_id, std::nullopt, f.now());
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kNotFound);

  f.clock().Advance(kSecond);
  auto done = f.store().Complete(job.id, *leased.lease_id, R"({"rows":7})", f.now());
  REQUIRE(done.ok());
  CHECK(done.value().state == JobState::kSucceeded);
  CHECK(done.value().result == R"({"rows":7})");
  CHECK(done.value().finished_at == f.now());
  CHECK_FALSE(done.value().lease_id);
  BucketInfo b = f.Bucket("export", "acme");
  CHECK(b.leased == 0);
  CHECK(b.queued == 0);
  CHECK(b.totals.admitted == 1);
  CHECK(b.totals.released == 1);
  CHECK(b.totals.succeeded == 1);
}

TEST_CASE("PostgreSQL store: a failed attempt is retried then fails for good", "[postgres]") {
  PgFixture f;
  QueuePolicy p = MakePolicy(100'000);
  p.max_attempts = 3;
  f.PutQueue("export", p);
  JobRecord job = f.Admit("export", "acme");
  LeaseOutcome first = f.Lease({"export"});
  REQUIRE(first.jobs.size() == 1);
  auto failed = f.store().Fail(job.id, *first.jobs[0].lease_id,
                               FailRequest{"downstream said 503", true, 2000}, f.now());
  REQUIRE(failed.ok());
  CHECK(failed.value().state == JobState::kQueued);
  CHECK(failed.value().available_at == f.now() + 2 * kSecond);
  json errors = json::parse(failed.value().errors);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]["error"] == "downstream said 503");
  CHECK(errors[0]["attempt"] == 1);
  CHECK(errors[0]["at"] == f.now());

  // Not before retry_in_ms; and the lease learns when to look again.
  LeaseOutcome early = f.Lease({"export"});
  CHECK(early.jobs.empty());
  CHECK(early.wake_at == f.now() + 2 * kSecond);
  f.clock().Advance(2 * kSecond);
  LeaseOutcome second = f.Lease({"export"});
  REQUIRE(second.jobs.size() == 1);
  CHECK(second.jobs[0].attempt == 2);

  auto gave_up = f.store().Fail(job.id, *second.jobs[0].lease_id,
                                FailRequest{"bad \"input\"\n", false, std::nullopt}, f.now());
  REQUIRE(gave_up.ok());
  CHECK(gave_up.value().state == JobState::kFailed);
  CHECK(gave_up.value().finished_at == f.now());
  errors = json::parse(gave_up.value().errors);
  REQUIRE(errors.size() == 2);
  CHECK(errors[1]["error"] == "bad \"input\"\n");
  CHECK(errors[1]["attempt"] == 2);
  CHECK(f.Bucket("export", "acme").totals.failed == 1);

  // An admin's retry puts it back, attempts reset.
  auto retried = f.store().Retry(job.id, f.now());
  REQUIRE(retried.ok());
  CHECK(retried.value().state == JobState::kQueued);
  CHECK(retried.value().attempt == 0);
  auto again = f.store().Retry(job.id, f.now());
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == ErrorCode::kConflict);
}

TEST_CASE("PostgreSQL store: an Idempotency-Key replays its job and refuses another body",
          "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  NewJob nj = Job("export", "acme");
  nj.idempotency_key = "k1";
  nj.body_hash = "hash-a";
  SubmitOutcome first = f.Submit(nj);
  REQUIRE(first.job);
  CHECK_FALSE(first.replayed);
  SubmitOutcome replay = f.Submit(nj);
  CHECK(replay.replayed);
  REQUIRE(replay.job);
  CHECK(replay.job->id == first.job->id);
  CHECK(f.Bucket("export", "acme").queued == 1);

  nj.body_hash = "hash-b";
  auto reused = f.store().Submit(nj, f.now());
  REQUIRE_FALSE(reused.ok());
  CHECK(reused.error().code == ErrorCode::kIdempotencyKeyReused);

  // Keys are per tenant.
  NewJob other = nj;
  other.tenant = "globex";
  SubmitOutcome theirs = f.Submit(other);
  CHECK_FALSE(theirs.replayed);
}

TEST_CASE("PostgreSQL store: two first submits with one key racing make one job", "[postgres]") {
  PgFixture f;
  f.PutQueue("a", MakePolicy(1000));
  f.PutQueue("b", MakePolicy(1000));
  // Two buckets, so the two admissions do not take turns on a bucket lock: the second
  // insert of the key fails with unique_violation and runs again, to replay the first.
  for (int round = 0; round < 10; ++round) {
    const std::string key = "k" + std::to_string(round);
    std::vector<Result<SubmitOutcome>> results(2, MakeError(ErrorCode::kInternal, "not run"));
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        NewJob nj = Job(t == 0 ? "a" : "b", "acme");
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

TEST_CASE("PostgreSQL store: cancel takes a queued job out and nothing else", "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  JobRecord a = f.Admit("export", "acme");
  JobRecord b = f.Admit("export", "acme");
  auto canceled = f.store().Cancel(a.id, f.now());
  REQUIRE(canceled.ok());
  CHECK(canceled.value().state == JobState::kCanceled);
  CHECK(canceled.value().finished_at == f.now());
  auto twice = f.store().Cancel(a.id, f.now());
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().code == ErrorCode::kConflict);
  auto unknown = f.store().Cancel("job_nope", f.now());
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kNotFound);
  CHECK(f.Bucket("export", "acme").queued == 1);

  LeaseOutcome l = f.Lease({"export"});
  REQUIRE(l.jobs.size() == 1);
  CHECK(l.jobs[0].id == b.id);
  auto leased = f.store().Cancel(b.id, f.now());
  REQUIRE_FALSE(leased.ok());
  CHECK(leased.error().code == ErrorCode::kConflict);
}

TEST_CASE("PostgreSQL store: ListJobs filters and pages with its cursor", "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  f.PutQueue("import", MakePolicy(1000));
  std::vector<std::string> acme_ids;
  for (int i = 0; i < 5; ++i) {
    acme_ids.push_back(f.Admit("export", "acme").id);
    f.Admit("import", "globex");
  }
  acme_ids.push_back(f.Admit("import", "acme").id);
  REQUIRE(f.store().Cancel(acme_ids[1], f.now()).ok());

  JobFilter all;
  auto everything = f.store().ListJobs(all);
  REQUIRE(everything.ok());
  CHECK(everything.value().jobs.size() == 11);
  CHECK_FALSE(everything.value().next_after_seq);

  JobFilter acme;
  acme.tenant = "acme";
  acme.limit = 4;
  std::vector<std::string> seen;
  while (true) {
    auto page = f.store().ListJobs(acme);
    REQUIRE(page.ok());
    for (const JobRecord& j : page.value().jobs) seen.push_back(j.id);
    if (!page.value().next_after_seq) break;
    acme.after_seq = *page.value().next_after_seq;
  }
  CHECK(seen == acme_ids);  // admission order, across pages

  JobFilter by_queue;
  by_queue.tenant = "acme";
  by_queue.queue = "import";
  auto imports = f.store().ListJobs(by_queue);
  REQUIRE(imports.ok());
  REQUIRE(imports.value().jobs.size() == 1);
  CHECK(imports.value().jobs[0].id == acme_ids.back());

  JobFilter by_state;
  by_state.state = JobState::kCanceled;
  auto canceled = f.store().ListJobs(by_state);
  REQUIRE(canceled.ok());
  REQUIRE(canceled.value().jobs.size() == 1);
  CHECK(canceled.value().jobs[0].id == acme_ids[1]);
}

TEST_CASE("PostgreSQL store: tokens are created found listed and revoked", "[postgres]") {
  PgFixture f;
  TokenRecord t;
  t.id = "tok_ci";
  t.secret_hash = std::string(64, 'a');
  t.tenant = "acme";
  t.scopes = {Scope::kSubmit, Scope::kWork};
  t.queues = std::vector<std::string>{"export"};
  t.created_at = f.now();
  REQUIRE(f.store().CreateToken(t).ok());
  TokenRecord admin;
  admin.id = "tok_admin";
  admin.secret_hash = std::string(64, 'b');
  admin.scopes = {Scope::kAdmin};
  admin.created_at = f.now() + 1;
  REQUIRE(f.store().CreateToken(admin).ok());
  auto dup = f.store().CreateToken(t);
  REQUIRE_FALSE(dup.ok());  // the id is taken (a constraint: a bug of the caller)

  auto found = f.store().FindToken("tok_ci");
  REQUIRE(found.ok());
  REQUIRE(found.value());
  CHECK(found.value()->secret_hash == t.secret_hash);
  CHECK(found.value()->tenant == "acme");
  CHECK(found.value()->scopes == t.scopes);
  CHECK(found.value()->queues == t.queues);
  CHECK_FALSE(found.value()->revoked);
  auto none = f.store().FindToken("tok_nope");
  REQUIRE(none.ok());
  CHECK_FALSE(none.value());

  auto list = f.store().ListTokens();
  REQUIRE(list.ok());
  REQUIRE(list.value().size() == 2);
  CHECK(list.value()[0].id == "tok_ci");
  CHECK_FALSE(list.value()[1].tenant);
  CHECK_FALSE(list.value()[1].queues);

  f.clock().Advance(kSecond);
  auto revoked = f.store().RevokeToken("tok_ci", f.now());
  REQUIRE(revoked.ok());
  CHECK(revoked.value().revoked);
  CHECK(revoked.value().revoked_at == f.now());
  f.clock().Advance(kSecond);
  auto again = f.store().RevokeToken("tok_ci", f.now());  // idempotent: the first time stays
  REQUIRE(again.ok());
  CHECK(again.value().revoked_at == f.now() - kSecond);
  auto after = f.store().FindToken("tok_ci");
  REQUIRE(after.ok());
  REQUIRE(after.value());
  CHECK(after.value()->revoked);
  auto unknown = f.store().RevokeToken("tok_nope", f.now());
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kNotFound);
}

TEST_CASE("PostgreSQL store: ReapLeases requeues a lapsed lease and the old one is lost",
          "[postgres]") {
  PgFixture f;
  QueuePolicy p = MakePolicy(100'000);
  p.max_attempts = 2;
  f.PutQueue("export", p);
  JobRecord job = f.Admit("export", "acme");
  LeaseOutcome l = f.Lease({"export"}, 1, 1000);
  REQUIRE(l.jobs.size() == 1);
  JobRecord old = l.jobs[0];

  f.clock().Set(*old.lease_expires_at - 1);
  auto early = f.store().ReapLeases(f.now());
  REQUIRE(early.ok());
  CHECK(early.value().leases_requeued == 0);

  f.clock().Set(*old.lease_expires_at);
  auto reaped = f.store().ReapLeases(f.now());
  REQUIRE(reaped.ok());
  CHECK(reaped.value().leases_requeued == 1);
  CHECK(reaped.value().leases_failed == 0);
  JobRecord requeued = f.Get(job.id);
  CHECK(requeued.state == JobState::kQueued);
  CHECK(json::parse(requeued.errors)[0]["error"] == "lease expired");
  BucketInfo b = f.Bucket("export", "acme");
  CHECK(b.leased == 0);
  CHECK(b.queued == 1);
  CHECK(b.totals.lease_timeouts == 1);
  auto stale = f.store().Complete(job.id, *old.lease_id, std::nullopt, f.now());
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().code == ErrorCode::kLeaseLost);

  // The second lease lapses too: no attempts left, failed.
  LeaseOutcome again = f.Lease({"export"}, 1, 1000);
  REQUIRE(again.jobs.size() == 1);
  f.clock().Set(*again.jobs[0].lease_expires_at);
  auto last = f.store().ReapLeases(f.now());
  REQUIRE(last.ok());
  CHECK(last.value().leases_failed == 1);
  CHECK(f.Get(job.id).state == JobState::kFailed);
}

TEST_CASE("PostgreSQL store: ExpireDeadlines expires queued jobs past their deadline",
          "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  NewJob soon = Job("export", "acme");
  soon.deadline = f.now() + 10 * kSecond;
  JobRecord a = f.Admit(soon);
  JobRecord b = f.Admit("export", "acme");  // no deadline
  f.clock().Advance(10 * kSecond);
  auto expired = f.store().ExpireDeadlines(f.now());
  REQUIRE(expired.ok());
  CHECK(expired.value().expired == 1);
  CHECK(f.Get(a.id).state == JobState::kExpired);
  CHECK(f.Get(b.id).state == JobState::kQueued);
  BucketInfo bucket = f.Bucket("export", "acme");
  CHECK(bucket.queued == 1);
  CHECK(bucket.totals.expired == 1);
  auto none = f.store().ExpireDeadlines(f.now());
  REQUIRE(none.ok());
  CHECK(none.value().expired == 0);
}

TEST_CASE("PostgreSQL store: Clean deletes finished jobs past retention in batches", "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  std::vector<std::string> canceled;
  for (int i = 0; i < 5; ++i) {
    JobRecord j = f.Admit("export", "acme");
    REQUIRE(f.store().Cancel(j.id, f.now()).ok());
    canceled.push_back(j.id);
  }
  JobRecord queued = f.Admit("export", "acme");
  const Micros cutoff = f.now() + 1;
  f.clock().Advance(kSecond);
  JobRecord late = f.Admit("export", "acme");
  REQUIRE(f.store().Cancel(late.id, f.now()).ok());  // finished after the cutoff

  auto first = f.store().Clean(cutoff, 3);
  REQUIRE(first.ok());
  CHECK(first.value().cleaned == 3);
  auto second = f.store().Clean(cutoff, 3);
  REQUIRE(second.ok());
  CHECK(second.value().cleaned == 2);
  auto third = f.store().Clean(cutoff, 3);
  REQUIRE(third.ok());
  CHECK(third.value().cleaned == 0);
  for (const std::string& id : canceled) {
    auto gone = f.store().GetJob(id);
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.error().code == ErrorCode::kNotFound);
  }
  CHECK(f.Get(queued.id).state == JobState::kQueued);
  CHECK(f.Get(late.id).state == JobState::kCanceled);
}

TEST_CASE("PostgreSQL store: Probe commits", "[postgres]") {
  PgFixture f;
  CHECK(f.store().Probe(f.now()).ok());
  CHECK(f.store().Probe(f.now() + 1).ok());  // the one row, written again
  pg::Connection conn(f.uri());
  CHECK(conn.Exec("SELECT at FROM readiness_probe").Int(0, 0) == f.now() + 1);
}

TEST_CASE("PostgreSQL store: PutQueue bumps versions per queue and pause holds releases",
          "[postgres]") {
  PgFixture f;
  QueuePolicy p = MakePolicy(2000, 10);
  QueueInfo q = f.PutQueue("export", p);
  CHECK(q.version == 1);
  CHECK_FALSE(q.paused);
  p.bucket.capacity = 20;
  CHECK(f.PutQueue("export", p).version == 2);
  CHECK(f.PutQueue("other", p).version == 1);
  auto got = f.store().GetQueue("export");
  REQUIRE(got.ok());
  CHECK(got.value().version == 2);
  CHECK(got.value().policy.bucket.capacity == 20);
  CHECK(f.store().CheckQueue("export").ok());
  CHECK(f.store().CheckQueue("nope").error().code == ErrorCode::kNotFound);
  auto all = f.store().ListQueues();
  REQUIRE(all.ok());
  REQUIRE(all.value().size() == 2);
  CHECK(all.value()[0].name == "export");

  JobRecord job = f.Admit("export", "acme");
  REQUIRE(f.store().SetPaused("export", true, f.now()).ok());
  CHECK(f.store().GetQueue("export").value().paused);
  CHECK(f.Lease({"export"}).jobs.empty());
  f.Admit("export", "acme");  // intake goes on
  REQUIRE(f.store().SetPaused("export", false, f.now()).ok());
  LeaseOutcome l = f.Lease({"export"});
  REQUIRE(l.jobs.size() == 1);
  CHECK(l.jobs[0].id == job.id);
  CHECK(f.store().SetPaused("nope", true, f.now()).error().code == ErrorCode::kNotFound);
}

TEST_CASE("PostgreSQL store: DeleteQueue refuses a queue with work and deletes an idle one",
          "[postgres]") {
  PgFixture f;
  f.PutQueue("export", MakePolicy(1000));
  JobRecord job = f.Admit("export", "acme");
  auto busy = f.store().DeleteQueue("export");
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error().code == ErrorCode::kConflict);
  REQUIRE(f.store().Cancel(job.id, f.now()).ok());
  CHECK(f.store().DeleteQueue("export").ok());
  CHECK(f.store().GetQueue("export").error().code == ErrorCode::kNotFound);
  CHECK(f.store().DeleteQueue("export").error().code == ErrorCode::kNotFound);
  CHECK(f.Get(job.id).state == JobState::kCanceled);  // finished jobs stay
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

TEST_CASE("The PostgreSQL driver runs every statement of its file and no other", "[postgres]") {
  const char* kFile = "store/sql/postgres/statements.sql";
  auto text = FindSqlFile(kFile);
  REQUIRE(text);
  Statements file(*text, kFile);
  std::set<std::string> in_file;
  for (const auto& [name, sql] : file.all()) in_file.insert(name);
  std::set<std::string> in_code;
#define SLUICE_NAME(name) in_code.insert(#name);
  SLUICE_PG_STATEMENTS(SLUICE_NAME)
#undef SLUICE_NAME
  CHECK(in_file == in_code);

  const std::string uri = PgServer::Shared().CreateDatabase();
  OpenPg(uri);  // the schema
  pg::Connection conn(uri);
  for (const auto& [name, sql] : file.all()) {
    INFO(name);
    CHECK_NOTHROW(conn.Prepare(name, sql));
  }
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
  CHECK(MigrationsOf("postgres").empty());
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

}  // namespace
}  // namespace sluice

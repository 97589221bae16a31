// `sluiced copy-db` (store/copy/sqlite_to_postgres.h): a SQLite database built through the
// Store API (queues paused and not, tenant overrides, jobs in every state, tokens, an
// idempotency key) is copied into a fresh PostgreSQL database, and a PgStore on it gives
// back the same jobs, buckets, queues and tokens, replays the idempotency key, completes
// the copied lease and leases the queued job. And the refusals: a target that holds data,
// a source a store holds, a source that is not there; a copy that fails leaves no row.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "store/copy/sqlite_to_postgres.h"
#include "store/postgres/pg.h"
#include "store/postgres/pg_store.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/pg_server.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::PgServer;
using testing::TempDir;

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kStart = 1'800'000'000'000'000;

std::unique_ptr<SqliteStore> OpenSqlite(const std::string& path) {
  SqliteStoreOptions options;
  options.path = path;
  options.unit_random = [] { return 0.5; };
  auto opened = SqliteStore::Open(options);
  INFO((opened.ok() ? std::string() : opened.error().detail));
  REQUIRE(opened.ok());
  return std::move(opened.value());
}

std::unique_ptr<PgStore> OpenPg(const std::string& uri) {
  PgStoreOptions options;
  options.uri = uri;
  options.pool = 2;
  options.clock = PgClock::kCaller;  // the SQLite store's virtual time goes on
  options.unit_random = [] { return 0.5; };
  auto opened = PgStore::Open(options);
  INFO((opened.ok() ? std::string() : opened.error().detail));
  REQUIRE(opened.ok());
  return std::move(opened.value());
}

Result<CopyDbReport> Copy(const std::string& from, const std::string& to) {
  CopyDbOptions options;
  options.sqlite_path = from;
  options.pg_uri = to;
  options.batch_rows = 3;  // several batches per table
  return CopySqliteToPostgres(options);
}

// Rows in each table the copy fills, read straight from PostgreSQL; -1 when the table
// does not exist.
constexpr const char* kLayers =
    R"({"layers":[{"name":"per_ip","algorithm":"fixed_window","limit":5,"window_s":60,"key":["ip"]}]})";

std::map<std::string, int64_t> PgRows(const std::string& uri) {
  pg::Connection conn(uri);
  std::map<std::string, int64_t> rows;
  for (const char* t :
       {"queues", "buckets", "jobs", "tokens", "idempotency_keys", "limit_layers"}) {
    if (conn.ExecParams("SELECT to_regclass($1) IS NULL", pg::Params(std::string(t))).Bool(0, 0)) {
      rows[t] = -1;
    } else {
      rows[t] = conn.Exec(std::string("SELECT count(*) FROM ") + t).Int(0, 0);
    }
  }
  return rows;
}

JobRecord MustGet(Store& store, const std::string& id) {
  auto r = store.GetJob(id);
  INFO(id << ": " << (r.ok() ? std::string() : r.error().detail));
  REQUIRE(r.ok());
  return r.value();
}

BucketInfo Bucket(Store& s, const std::string& queue, const std::string& tenant) {
  auto buckets = s.ListBuckets(queue);
  REQUIRE(buckets.ok());
  for (const BucketInfo& b : buckets.value()) {
    if (b.tenant == tenant) return b;
  }
  FAIL("no bucket " << queue << "/" << tenant);
  return {};
}

void CheckSameJob(const JobRecord& a, const JobRecord& b) {
  INFO("job " << a.id);
  CHECK(b.id == a.id);
  CHECK(b.queue == a.queue);
  CHECK(b.tenant == a.tenant);
  CHECK(b.state == a.state);
  CHECK(b.payload == a.payload);
  CHECK(b.cost == a.cost);
  CHECK(b.attempt == a.attempt);
  CHECK(b.max_attempts == a.max_attempts);
  CHECK(b.lease_ms == a.lease_ms);
  CHECK(b.policy_version == a.policy_version);
  CHECK(b.created_at == a.created_at);
  CHECK(b.not_before == a.not_before);
  CHECK(b.available_at == a.available_at);
  CHECK(b.deadline == a.deadline);
  CHECK(b.estimated_start == a.estimated_start);
  CHECK(b.lease_id == a.lease_id);
  CHECK(b.lease_expires_at == a.lease_expires_at);
  CHECK(b.result == a.result);
  CHECK(b.errors == a.errors);
  CHECK(b.finished_at == a.finished_at);
  CHECK(b.leased_at == a.leased_at);
  CHECK(b.traceparent == a.traceparent);
}

void CheckSameTotals(const Totals& a, const Totals& b) {
  CHECK(b.admitted == a.admitted);
  CHECK(b.released == a.released);
  CHECK(b.succeeded == a.succeeded);
  CHECK(b.failed == a.failed);
  CHECK(b.expired == a.expired);
  CHECK(b.lease_timeouts == a.lease_timeouts);
}

void CheckSameToken(const TokenRecord& a, const TokenRecord& b) {
  INFO("token " << a.id);
  CHECK(b.id == a.id);
  CHECK(b.secret_hash == a.secret_hash);
  CHECK(b.tenant == a.tenant);
  CHECK(b.scopes == a.scopes);
  CHECK(b.queues == a.queues);
  CHECK(b.created_at == a.created_at);
  CHECK(b.revoked == a.revoked);
  CHECK(b.revoked_at == a.revoked_at);
}

NewJob Job(const std::string& queue, const std::string& tenant, const std::string& payload) {
  NewJob j;
  j.queue = queue;
  j.tenant = tenant;
  j.payload = payload;
  return j;
}

// What the SQLite store held, read through the Store API, and the ids of its jobs.
struct Built {
  Micros now = kStart;
  std::map<std::string, std::string> ids;  // role -> job id
  std::map<std::string, std::string> lease_ids;
  NewJob keyed;  // the submit with an Idempotency-Key
};

JobRecord Admit(Store& s, const NewJob& j, Micros now) {
  auto r = s.Submit(j, now);
  INFO((r.ok() ? std::string() : r.error().detail));
  REQUIRE(r.ok());
  REQUIRE(r.value().decision.outcome == AdmissionOutcome::kAdmitted);
  REQUIRE(r.value().job);
  return *r.value().job;
}

// Leases the one job of `queue` that is releasable at `now`, requiring it to be `id`.
JobRecord LeaseOne(Store& s, const std::string& queue, const std::string& id, Micros now,
                   std::optional<int64_t> lease_ms = std::nullopt) {
  LeaseRequest req;
  req.queues = {queue};
  req.lease_ms = lease_ms;
  req.worker_id = "w-1";
  auto out = s.LeaseMany({req}, now);
  REQUIRE(out[0].ok());
  REQUIRE(out[0].value().jobs.size() == 1);
  REQUIRE(out[0].value().jobs[0].id == id);
  return out[0].value().jobs[0];
}

// Queues (one paused, with tenant overrides), a job in every state, two tokens (one
// revoked) and an idempotency key, on the SQLite store `s`.
Built Build(Store& s) {
  Built b;
  QueuePolicy exports;
  exports.bucket.rate_milli = 10'000;
  exports.bucket.capacity = 100;
  exports.max_attempts = 3;
  exports.lease_ms = 60'000;
  exports.tenants["big"].capacity = 50;
  exports.tenants["big"].rate_milli = 20'000;
  REQUIRE(s.PutQueue("export", exports, b.now).ok());
  exports.retry_backoff_ms = 2000;
  REQUIRE(s.PutQueue("export", exports, b.now).ok());  // version 2
  QueuePolicy held;
  held.tenants["acme"].capacity = 5;
  held.tenants["acme"].max_inflight_per_tenant = 1;
  REQUIRE(s.PutQueue("held", held, b.now).ok());
  REQUIRE(s.SetPaused("held", true, b.now).ok());

  auto step = [&b] { b.now += kSecond; };

  // succeeded, with a result and a trace context
  NewJob done = Job("export", "acme", R"({"n":1,"text":"grüße \"quoted\""})");
  done.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  b.ids["succeeded"] = Admit(s, done, b.now).id;
  step();
  JobRecord l = LeaseOne(s, "export", b.ids["succeeded"], b.now);
  REQUIRE(s.Complete(l.id, *l.lease_id, std::string(R"({"rows":3})"), b.now).ok());

  // failed for good: not retryable
  NewJob failed = Job("export", "acme", "2");
  failed.max_attempts = 1;
  b.ids["failed"] = Admit(s, failed, b.now).id;
  step();
  l = LeaseOne(s, "export", b.ids["failed"], b.now);
  REQUIRE(s.Fail(l.id, *l.lease_id, FailRequest{"bad input", false, std::nullopt}, b.now).ok());

  // queued again, in a retry backoff
  b.ids["backoff"] = Admit(s, Job("export", "big", "3"), b.now).id;
  step();
  l = LeaseOne(s, "export", b.ids["backoff"], b.now);
  auto again = s.Fail(l.id, *l.lease_id, FailRequest{"downstream 429", true, 600'000}, b.now);
  REQUIRE(again.ok());
  REQUIRE(again.value().state == JobState::kQueued);

  // leased (its lease outlives the copy)
  b.ids["leased"] = Admit(s, Job("export", "big", "4"), b.now).id;
  step();
  l = LeaseOne(s, "export", b.ids["leased"], b.now, 300'000);
  b.lease_ids["leased"] = *l.lease_id;

  // canceled
  b.ids["canceled"] = Admit(s, Job("export", "acme", "5"), b.now).id;
  REQUIRE(s.Cancel(b.ids["canceled"], b.now).ok());

  // expired: its deadline passed while queued (a bucket of its own, so nothing else
  // is released meanwhile)
  NewJob late = Job("export", "late", "6");
  late.deadline = b.now + 2 * kSecond;
  b.ids["expired"] = Admit(s, late, b.now).id;
  b.now += 3 * kSecond;
  auto expired = s.ExpireDeadlines(b.now);
  REQUIRE(expired.ok());
  REQUIRE(expired.value().expired == 1);

  // queued, with an Idempotency-Key; queued until an hour from now; queued in the paused
  // queue
  b.keyed = Job("export", "acme", R"({"k":1})");
  b.keyed.idempotency_key = "order-17";
  b.keyed.body_hash = "hash-of-the-body";
  b.ids["queued"] = Admit(s, b.keyed, b.now).id;
  NewJob later = Job("export", "acme", "8");
  later.not_before = b.now + 3600 * kSecond;
  b.ids["not_before"] = Admit(s, later, b.now).id;
  b.ids["paused"] = Admit(s, Job("held", "acme", "9"), b.now).id;

  TokenRecord submit;
  submit.id = "tok_acme";
  submit.secret_hash = std::string(64, 'a');
  submit.tenant = "acme";
  submit.scopes = {Scope::kSubmit};
  submit.created_at = kStart;
  REQUIRE(s.CreateToken(submit).ok());
  TokenRecord work;
  work.id = "tok_work";
  work.secret_hash = std::string(64, 'b');
  work.scopes = {Scope::kWork, Scope::kAdmin};
  work.queues = std::vector<std::string>{"export", "held"};
  work.created_at = kStart + 1;
  REQUIRE(s.CreateToken(work).ok());
  REQUIRE(s.RevokeToken("tok_work", b.now).ok());
  // Declared intake layers, twice: version 2 travels.
  REQUIRE(s.PutLimitLayers(R"({"layers":[]})", b.now).ok());
  REQUIRE(s.PutLimitLayers(kLayers, b.now).ok());
  return b;
}

struct Snapshot {
  std::map<std::string, JobRecord> jobs;
  std::vector<std::string> listed;  // every job id in admission order
  std::vector<QueueInfo> queues;
  std::map<std::string, std::vector<BucketInfo>> buckets;
  std::vector<TokenRecord> tokens;
};

Snapshot Take(Store& s, const Built& b) {
  Snapshot snap;
  for (const auto& [role, id] : b.ids) snap.jobs[id] = MustGet(s, id);
  JobFilter all;
  all.limit = 1000;
  auto page = s.ListJobs(all);
  REQUIRE(page.ok());
  for (const JobRecord& j : page.value().jobs) snap.listed.push_back(j.id);
  auto queues = s.ListQueues();
  REQUIRE(queues.ok());
  snap.queues = queues.value();
  for (const QueueInfo& q : snap.queues) {
    auto buckets = s.ListBuckets(q.name);
    REQUIRE(buckets.ok());
    snap.buckets[q.name] = buckets.value();
  }
  auto tokens = s.ListTokens();
  REQUIRE(tokens.ok());
  snap.tokens = tokens.value();
  std::sort(snap.tokens.begin(), snap.tokens.end(),
            [](const TokenRecord& x, const TokenRecord& y) { return x.id < y.id; });
  return snap;
}

void CheckSame(const Snapshot& a, const Snapshot& b) {
  REQUIRE(b.jobs.size() == a.jobs.size());
  for (const auto& [id, job] : a.jobs) CheckSameJob(job, b.jobs.at(id));
  CHECK(b.listed == a.listed);
  REQUIRE(b.queues.size() == a.queues.size());
  for (size_t i = 0; i < a.queues.size(); ++i) {
    INFO("queue " << a.queues[i].name);
    CHECK(b.queues[i].name == a.queues[i].name);
    CHECK(b.queues[i].version == a.queues[i].version);
    CHECK(b.queues[i].paused == a.queues[i].paused);
    CHECK(PolicyToJson(b.queues[i].policy) == PolicyToJson(a.queues[i].policy));
    CHECK(b.queues[i].stats.queued == a.queues[i].stats.queued);
    CHECK(b.queues[i].stats.queued_cost == a.queues[i].stats.queued_cost);
    CHECK(b.queues[i].stats.leased == a.queues[i].stats.leased);
    CheckSameTotals(a.queues[i].stats.totals, b.queues[i].stats.totals);
  }
  REQUIRE(b.buckets.size() == a.buckets.size());
  for (const auto& [queue, buckets] : a.buckets) {
    const std::vector<BucketInfo>& other = b.buckets.at(queue);
    REQUIRE(other.size() == buckets.size());
    for (size_t i = 0; i < buckets.size(); ++i) {
      INFO("bucket " << queue << "/" << buckets[i].tenant);
      CHECK(other[i].tenant == buckets[i].tenant);
      CHECK(other[i].queued == buckets[i].queued);
      CHECK(other[i].queued_cost == buckets[i].queued_cost);
      CHECK(other[i].leased == buckets[i].leased);
      CHECK(other[i].next_release_at == buckets[i].next_release_at);
      CHECK(other[i].oldest_queued_at == buckets[i].oldest_queued_at);
      CHECK(other[i].policy.rate_milli == buckets[i].policy.rate_milli);
      CHECK(other[i].policy.capacity == buckets[i].policy.capacity);
      CHECK(other[i].policy.max_inflight_per_tenant == buckets[i].policy.max_inflight_per_tenant);
      CheckSameTotals(buckets[i].totals, other[i].totals);
    }
  }
  REQUIRE(b.tokens.size() == a.tokens.size());
  for (size_t i = 0; i < a.tokens.size(); ++i) CheckSameToken(a.tokens[i], b.tokens[i]);
}

TEST_CASE("copy-db moves every table of a SQLite database to PostgreSQL", "[postgres][copy_db]") {
  TempDir dir;
  const std::string path = dir.File("sluice.db");
  Built built;
  Snapshot before;
  {
    auto sqlite = OpenSqlite(path);
    built = Build(*sqlite);
    before = Take(*sqlite, built);
  }
  // Every state is there.
  std::map<JobState, int> states;
  for (const auto& [id, job] : before.jobs) ++states[job.state];
  CHECK(states[JobState::kQueued] == 4);  // backoff, idempotent, not_before, paused
  CHECK(states[JobState::kLeased] == 1);
  CHECK(states[JobState::kSucceeded] == 1);
  CHECK(states[JobState::kFailed] == 1);
  CHECK(states[JobState::kCanceled] == 1);
  CHECK(states[JobState::kExpired] == 1);
  CHECK(before.jobs.at(built.ids["backoff"]).available_at > built.now);

  const std::string uri = PgServer::Shared().CreateDatabase();
  auto copied = Copy(path, uri);
  INFO((copied.ok() ? std::string() : copied.error().detail));
  REQUIRE(copied.ok());
  std::map<std::string, int64_t> counts;
  for (const CopiedTable& t : copied.value().tables) counts[t.table] = t.rows;
  CHECK(counts == std::map<std::string, int64_t>{{"queues", 2},
                                                 {"buckets", 4},
                                                 {"jobs", 9},
                                                 {"tokens", 2},
                                                 {"idempotency_keys", 1},
                                                 {"limit_layers", 1}});
  CHECK(copied.value().sqlite_version >= 2);
  CHECK(copied.value().postgres_version >= 1);
  CHECK(PgRows(uri) == counts);

  auto pg = OpenPg(uri);
  CheckSame(before, Take(*pg, built));
  auto layers = pg->GetLimitLayers();
  REQUIRE(layers.ok());
  REQUIRE(layers.value());
  CHECK(layers.value()->version == 2);
  CHECK(layers.value()->body == kLayers);
  // The source can be opened again: the copy let go of its lock.
  CheckSame(before, Take(*OpenSqlite(path), built));

  // Tokens are found as they were: one live, one revoked.
  auto live = pg->FindToken("tok_acme");
  REQUIRE(live.ok());
  REQUIRE(live.value());
  CHECK_FALSE(live.value()->revoked);
  auto revoked = pg->FindToken("tok_work");
  REQUIRE(revoked.ok());
  REQUIRE(revoked.value());
  CHECK(revoked.value()->revoked);

  Micros now = built.now;
  // The Idempotency-Key replays the copied job; the same key with another body is refused.
  auto replay = pg->Submit(built.keyed, now);
  REQUIRE(replay.ok());
  CHECK(replay.value().replayed);
  REQUIRE(replay.value().job);
  CHECK(replay.value().job->id == built.ids["queued"]);
  NewJob reused = built.keyed;
  reused.body_hash = "another body";
  auto refused = pg->Submit(reused, now);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kIdempotencyKeyReused);

  // A lease on PostgreSQL releases the queued job (the backoff, the not_before and the
  // paused queue's jobs wait, as they did).
  JobRecord leased = LeaseOne(*pg, "export", built.ids["queued"], now);
  CHECK(leased.attempt == 1);
  LeaseRequest paused;
  paused.queues = {"held"};
  paused.worker_id = "w-2";
  auto none = pg->LeaseMany({paused}, now);
  REQUIRE(none[0].ok());
  CHECK(none[0].value().jobs.empty());

  // The copied lease is still the job's: its worker completes it on PostgreSQL.
  auto completed = pg->Complete(built.ids["leased"], built.lease_ids["leased"],
                                std::string(R"({"ok":true})"), now);
  INFO((completed.ok() ? std::string() : completed.error().detail));
  REQUIRE(completed.ok());
  CHECK(completed.value().state == JobState::kSucceeded);

  // A new job comes after every copied one, in admission order.
  now += kSecond;
  JobRecord fresh = Admit(*pg, Job("export", "acme", "10"), now);
  JobFilter all;
  all.limit = 1000;
  auto page = pg->ListJobs(all);
  REQUIRE(page.ok());
  REQUIRE(page.value().jobs.size() == 10);
  CHECK(page.value().jobs.back().id == fresh.id);
  Micros admitted_before = 0;
  for (const BucketInfo& b : before.buckets.at("export")) {
    if (b.tenant == "acme") admitted_before = b.totals.admitted;
  }
  CHECK(Bucket(*pg, "export", "acme").totals.admitted == admitted_before + 1);
}

TEST_CASE("copy-db refuses a PostgreSQL database that holds data, and writes nothing",
          "[postgres][copy_db]") {
  TempDir dir;
  const std::string path = dir.File("sluice.db");
  {
    auto sqlite = OpenSqlite(path);
    Build(*sqlite);
  }
  SECTION("a queue") {
    const std::string uri = PgServer::Shared().CreateDatabase();
    REQUIRE(OpenPg(uri)->PutQueue("mine", QueuePolicy{}, kStart).ok());
    auto copied = Copy(path, uri);
    REQUIRE_FALSE(copied.ok());
    INFO(copied.error().detail);
    CHECK(copied.error().code == ErrorCode::kConflict);
    CHECK(copied.error().detail.find("already holds sluice data (1 queues)") != std::string::npos);
    CHECK(copied.error().detail.find("nothing was written") != std::string::npos);
    CHECK(PgRows(uri) == std::map<std::string, int64_t>{{"queues", 1},
                                                        {"buckets", 0},
                                                        {"jobs", 0},
                                                        {"tokens", 0},
                                                        {"idempotency_keys", 0},
                                                        {"limit_layers", 0}});
  }
  SECTION("a token only") {
    const std::string uri = PgServer::Shared().CreateDatabase();
    TokenRecord t;
    t.id = "tok_x";
    t.secret_hash = std::string(64, 'c');
    t.scopes = {Scope::kAdmin};
    REQUIRE(OpenPg(uri)->CreateToken(t).ok());
    auto copied = Copy(path, uri);
    REQUIRE_FALSE(copied.ok());
    CHECK(copied.error().code == ErrorCode::kConflict);
    CHECK(PgRows(uri).at("tokens") == 1);
    CHECK(PgRows(uri).at("queues") == 0);
  }
  SECTION("an earlier copy") {
    const std::string uri = PgServer::Shared().CreateDatabase();
    REQUIRE(Copy(path, uri).ok());
    const auto rows = PgRows(uri);
    auto twice = Copy(path, uri);
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.error().code == ErrorCode::kConflict);
    CHECK(twice.error().detail.find("2 queues, 4 buckets, 9 jobs, 2 tokens, 1 idempotency_keys") !=
          std::string::npos);
    CHECK(PgRows(uri) == rows);
  }
}

TEST_CASE("copy-db refuses a SQLite file a store holds, or that is not there, touching neither",
          "[postgres][copy_db]") {
  TempDir dir;
  const std::string path = dir.File("sluice.db");
  const std::string uri = PgServer::Shared().CreateDatabase();
  const std::map<std::string, int64_t> no_schema = {
      {"queues", -1}, {"buckets", -1},          {"jobs", -1},
      {"tokens", -1}, {"idempotency_keys", -1}, {"limit_layers", -1}};
  {
    auto running = OpenSqlite(path);
    Build(*running);
    auto copied = Copy(path, uri);
    REQUIRE_FALSE(copied.ok());
    INFO(copied.error().detail);
    CHECK(copied.error().code == ErrorCode::kConflict);
    CHECK(copied.error().detail.find("is in use by another sluiced (pid " +
                                     std::to_string(getpid())) != std::string::npos);
    CHECK(PgRows(uri) == no_schema);  // the target was not even connected to
  }
  const std::string missing = dir.File("nope.db");
  auto copied = Copy(missing, uri);
  REQUIRE_FALSE(copied.ok());
  CHECK(copied.error().code == ErrorCode::kNotFound);
  CHECK(copied.error().detail.find("no SQLite database at " + missing) != std::string::npos);
  struct stat st {};
  CHECK(stat(missing.c_str(), &st) != 0);  // not created, nor a lock file for it
  CHECK(stat((missing + ".lock").c_str(), &st) != 0);
  CHECK(PgRows(uri) == no_schema);

  // Once the store is gone, the copy runs.
  REQUIRE(Copy(path, uri).ok());
  CHECK(PgRows(uri).at("jobs") == 9);
}

TEST_CASE("a copy-db that fails midway leaves the PostgreSQL database without a row",
          "[postgres][copy_db]") {
  TempDir dir;
  const std::string path = dir.File("sluice.db");
  {
    auto sqlite = OpenSqlite(path);
    Build(*sqlite);
  }
  // A bucket of a queue that is not there: SQLite (without foreign_keys on this
  // connection) keeps it, PostgreSQL's foreign key refuses it, after the queues, half
  // the buckets and nothing else went in.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "INSERT INTO buckets (queue, tenant) VALUES ('ghost', 'acme')", nullptr,
                       nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);

  const std::string uri = PgServer::Shared().CreateDatabase();
  auto copied = Copy(path, uri);
  REQUIRE_FALSE(copied.ok());
  INFO(copied.error().detail);
  CHECK(copied.error().detail.find("rolled back") != std::string::npos);
  CHECK(PgRows(uri) == std::map<std::string, int64_t>{{"queues", 0},
                                                      {"buckets", 0},
                                                      {"jobs", 0},
                                                      {"tokens", 0},
                                                      {"idempotency_keys", 0},
                                                      {"limit_layers", 0}});
}

}  // namespace
}  // namespace sluice
